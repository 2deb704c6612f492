/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_JSON_H
#define CUDNNVM_JSON_H

/*
 * The only interface to the JSON library (jansson, wrapped by json.c alone).
 * Values are reference counted: a "new" value is owned by the caller and
 * freed with cvm_json_free(); values returned by getters are borrowed from
 * their container; setters and appends take ownership of the value passed.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cvm_json cvm_json;

/*
 * Parses buf (len bytes). On error prints "cannot parse 'name': <why> at
 * line L, column C" (nothing when name is NULL) and returns -CVM_E_MANIFEST;
 * *out is set only on success.
 */
int cvm_json_parse(const char *buf, size_t len, const char *name, cvm_json **out);
void cvm_json_free(cvm_json *v);

bool cvm_json_is_object(const cvm_json *v);
bool cvm_json_is_array(const cvm_json *v);
/* Member key of object v, or NULL when v is no object or has no such key. */
cvm_json *cvm_json_get(const cvm_json *v, const char *key);
/* The string value, or NULL when v is not a string. */
const char *cvm_json_str(const cvm_json *v);
/* Integer value: 0 and *out set, or -1 when v is not an integer. */
int cvm_json_int(const cvm_json *v, int64_t *out);
size_t cvm_json_len(const cvm_json *v);		/* array length, 0 otherwise */
cvm_json *cvm_json_at(const cvm_json *v, size_t i);

/* Iterates over an object's members in document order. */
void *cvm_json_iter(const cvm_json *obj);
void *cvm_json_iter_next(const cvm_json *obj, void *it);
const char *cvm_json_iter_key(void *it);
cvm_json *cvm_json_iter_value(void *it);

cvm_json *cvm_json_object(void);
cvm_json *cvm_json_array(void);
cvm_json *cvm_json_string(const char *s);	/* s copied; NULL s gives null */
cvm_json *cvm_json_integer(int64_t n);
cvm_json *cvm_json_real(double d);
cvm_json *cvm_json_bool(bool b);
/* Set or append, taking ownership of val. 0 or -ENOMEM. */
int cvm_json_set(cvm_json *obj, const char *key, cvm_json *val);
int cvm_json_append(cvm_json *arr, cvm_json *val);

/*
 * Serialised text for a file cudnnvm reads back, indented, malloc'd (caller
 * frees), or NULL on ENOMEM. A byte of a string that is not UTF-8 is the
 * text \xNN there; in the document printed on stdout (cvm_json_finish) it
 * is the escape \udcNN (docs/cli.md).
 */
char *cvm_json_dump(const cvm_json *v);
/*
 * Makes v (a reference is taken) the document this run prints on stdout;
 * cvm_json_finish() prints it once at exit, with "error": {code, message}
 * added when the run failed, so that stdout always holds one document.
 */
int cvm_json_print(const cvm_json *v);
int cvm_json_finish(int exit_code, const char *message);
/* The document cvm_json_finish() will print (an empty object made when none), borrowed. */
cvm_json *cvm_json_document(void);
/* That document taken back (the caller frees it; NULL when none): a step's, for a larger one. */
cvm_json *cvm_json_take(void);

#endif
