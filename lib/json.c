/* SPDX-License-Identifier: MIT */
/*
 * The one wrapper of jansson: nothing else includes jansson.h, so that the
 * JSON library can be swapped by rewriting this file alone. A cvm_json is a
 * json_t in disguise; reference counting follows jansson's rules.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "error.h"
#include "json.h"
#include "out.h"

#define J(v) ((json_t *)(v))
#define C(v) ((cvm_json *)(v))

int cvm_json_parse(const char *buf, size_t len, const char *name, cvm_json **out)
{
	json_error_t err;
	json_t *v;

	/*
	 * Duplicate keys are refused: jansson would silently keep the last one,
	 * and a manifest that says two things about one archive is not to be
	 * trusted with either.
	 */
	v = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &err);
	if (!v && !name)
		return -CVM_E_MANIFEST;
	if (!v)
		return cvm_err(-CVM_E_MANIFEST, "cannot parse '%s': %s at line %d, column %d",
			       cvm_safe(name), cvm_safe(err.text), err.line, err.column);
	*out = C(v);
	return 0;
}

void cvm_json_free(cvm_json *v)
{
	json_decref(J(v));
}

bool cvm_json_is_object(const cvm_json *v)
{
	return v && json_is_object(J(v));
}

bool cvm_json_is_array(const cvm_json *v)
{
	return v && json_is_array(J(v));
}

cvm_json *cvm_json_get(const cvm_json *v, const char *key)
{
	if (!v || !key || !json_is_object(J(v)))
		return NULL;
	return C(json_object_get(J(v), key));
}

const char *cvm_json_str(const cvm_json *v)
{
	if (!v || !json_is_string(J(v)))
		return NULL;
	return json_string_value(J(v));
}

int cvm_json_int(const cvm_json *v, int64_t *out)
{
	if (!v || !json_is_integer(J(v)))
		return -1;
	*out = (int64_t)json_integer_value(J(v));
	return 0;
}

size_t cvm_json_len(const cvm_json *v)
{
	if (!v || !json_is_array(J(v)))
		return 0;
	return json_array_size(J(v));
}

cvm_json *cvm_json_at(const cvm_json *v, size_t i)
{
	if (!v || !json_is_array(J(v)))
		return NULL;
	return C(json_array_get(J(v), i));
}

void *cvm_json_iter(const cvm_json *obj)
{
	if (!obj)
		return NULL;
	return json_object_iter(J(obj));
}

void *cvm_json_iter_next(const cvm_json *obj, void *it)
{
	if (!obj || !it)
		return NULL;
	return json_object_iter_next(J(obj), it);
}

const char *cvm_json_iter_key(void *it)
{
	return it ? json_object_iter_key(it) : NULL;
}

cvm_json *cvm_json_iter_value(void *it)
{
	return it ? C(json_object_iter_value(it)) : NULL;
}

cvm_json *cvm_json_object(void)
{
	return C(json_object());
}

cvm_json *cvm_json_array(void)
{
	return C(json_array());
}

static bool utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n;

	while (*p) {
		n = cvm_utf8_len(p);
		if (!n)
			return false;
		p += n;
	}
	return true;
}

/*
 * jansson refuses strings that are not UTF-8, but the strings we print come
 * from archives and file systems. A byte that is not UTF-8 is written as
 * the escape \udcXX (XX the byte: a lone surrogate, Python's surrogateescape
 * rule, so that os.fsencode gives the bytes back; readers that refuse lone
 * surrogates show U+FFFD), never as text that a real backslash could also
 * make. Here it is kept as a NUL and two hex digits (no C string holds a
 * NUL), which dump() turns into that escape.
 */
static json_t *escaped_string(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	char *buf, *o;
	json_t *v;
	size_t n;

	buf = malloc(strlen(s) * 3 + 1);
	if (!buf)
		return NULL;
	o = buf;
	while (*p) {
		n = cvm_utf8_len(p);
		if (n) {
			memcpy(o, p, n);
			o += n;
			p += n;
		} else {
			*o++ = '\0';
			o += sprintf(o, "%02x", *p++);
		}
	}
	v = json_stringn_nocheck(buf, (size_t)(o - buf));
	free(buf);
	return v;
}

/*
 * The document's text, with escaped_string's marks ("\u0000XX") as \udcXX
 * on stdout (out); in files cudnnvm reads back (record.json, smoke logs) as
 * the text \xXX, as before, since jansson reads no lone surrogate.
 */
static char *dump(const json_t *v, bool out)
{
	char *text = json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
	size_t i = 0, o = 0;

	while (text && text[i]) {
		/* An escape is read whole: "\\u0000" is a backslash and the text "u0000". */
		if (text[i] == '\\' && !strncmp(text + i, "\\u0000", 6) && text[i + 6] && text[i + 7]) {
			memcpy(text + o, out ? "\\udc" : "\\\\x", out ? 4 : 3);
			o += out ? 4 : 3;
			text[o++] = text[i + 6];
			text[o++] = text[i + 7];
			i += 8;
		} else if (text[i] == '\\' && text[i + 1]) {
			text[o++] = text[i++];
			text[o++] = text[i++];
		} else {
			text[o++] = text[i++];
		}
	}
	if (text)
		text[o] = '\0';
	return text;
}

cvm_json *cvm_json_string(const char *s)
{
	if (!s)
		return C(json_null());
	if (!utf8_valid(s))
		return C(escaped_string(s));
	return C(json_string(s));
}

cvm_json *cvm_json_integer(int64_t n)
{
	return C(json_integer((json_int_t)n));
}

cvm_json *cvm_json_real(double d)
{
	/* jansson has no representation for NaN and infinities; null says "no value". */
	json_t *v = json_real(d);

	return C(v ? v : json_null());
}

cvm_json *cvm_json_bool(bool b)
{
	return C(json_boolean(b));
}

int cvm_json_set(cvm_json *obj, const char *key, cvm_json *val)
{
	if (!val)
		return -ENOMEM;	/* the constructor that made val failed */
	if (!obj || !key || !json_is_object(J(obj)) || !utf8_valid(key)) {
		json_decref(J(val));
		return -EINVAL;
	}
	/* json_object_set_new drops val on failure too: ownership always passes. */
	if (json_object_set_new(J(obj), key, J(val)) < 0)
		return -ENOMEM;
	return 0;
}

int cvm_json_append(cvm_json *arr, cvm_json *val)
{
	if (!val)
		return -ENOMEM;
	if (!arr || !json_is_array(J(arr))) {
		json_decref(J(val));
		return -EINVAL;
	}
	if (json_array_append_new(J(arr), J(val)) < 0)
		return -ENOMEM;
	return 0;
}

char *cvm_json_dump(const cvm_json *v)
{
	/* JSON_ENCODE_ANY: a bare string or number is a valid document too. */
	if (!v)
		return NULL;
	return dump(J(v), false);
}

/* The document of this run: kept until cvm_json_finish(), which may add "error". */
static json_t *pending;

int cvm_json_print(const cvm_json *v)
{
	json_decref(pending);
	pending = json_incref(J(v));
	return pending ? 0 : -ENOMEM;
}

cvm_json *cvm_json_document(void)
{
	if (!pending || !json_is_object(pending)) {
		json_decref(pending);
		pending = json_object();
	}
	return (cvm_json *)pending;
}

cvm_json *cvm_json_take(void)
{
	json_t *doc = pending;

	pending = NULL;
	return (cvm_json *)doc;
}

int cvm_json_finish(int exit_code, const char *message)
{
	json_t *doc = pending, *err;
	char *text;
	int r = 0;

	pending = NULL;
	/* A command that had nothing to say still prints one document: {}. */
	if (!doc || !json_is_object(doc)) {
		json_decref(doc);
		doc = json_object();
	}
	if (exit_code && exit_code != 77) {
		err = json_pack("{s:i,s:s}", "code", exit_code, "message", message ? message : "");
		if (err)
			json_object_set_new(doc, "error", err);
	}
	text = dump(doc, true);
	if (!text || fputs(text, stdout) == EOF || fputc('\n', stdout) == EOF || fflush(stdout) == EOF)
		r = -EIO;
	free(text);
	json_decref(doc);
	return r;
}
