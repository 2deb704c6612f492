/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_OUT_H
#define CUDNNVM_OUT_H

#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compat.h"

/* Process-wide output settings, set once by main() before any command runs. */
struct cvm_out {
	int verbosity;		/* -1 quiet, 0 normal, 1+ verbose */
	bool json;		/* --json: stdout holds one JSON document */
};
extern struct cvm_out cvm_out;

/*
 * Prints "cudnnvm: error: <message>" on stderr and returns code unchanged
 * (a negative cvm code or -errno), so that callers can write
 * "return cvm_err(-ENOENT, ...)". The first message is kept for --json.
 */
int cvm_err(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * A usage error of command cmd: "cmd: message (see 'cudnnvm cmd --help')",
 * -CVM_E_USAGE (exit 2). For what the engine can only tell once it has
 * looked (main.c's cvm_usage says the same for the command line).
 */
int cvm_err_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * The same from a va_list, pointing at the help that fits: cmd NULL, "msg
 * (see 'cudnnvm --help')"; global (an option before the command, or no
 * command), "cmd: msg (see 'cudnnvm --help')"; else cvm_err_usage's form.
 */
int cvm_err_usagev(const char *cmd, bool global, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
void cvm_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Normal output: stdout, or stderr under --json; nothing under -q. */
void cvm_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * What the user asked for (list's rows, current's, history's): stdout, also
 * under -q (which silences only what cvm_info says); nothing under --json,
 * whose document holds it.
 */
void cvm_print(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Only with -v, on stderr. */
void cvm_verbose(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* What a person waiting should know (waiting for the lock): on stderr when it is a terminal, or -v. */
void cvm_notice(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Ctrl-C, SIGTERM, SIGHUP: with cvm_interrupts_catch(true) they only set
 * cvm_interrupted (the signal number) and end a sleep or poll early (reads
 * and writes are restarted); the long operation looks at it between steps
 * and cleans up.
 * cvm_interrupts_catch(false) puts the default actions back.
 */
extern volatile sig_atomic_t cvm_interrupted;
void cvm_interrupts_catch(bool catch);

/*
 * cvm_err_mute(true) ... (false): errors in between print nothing and are
 * not kept (a first attempt whose failure is retried, not reported). Nests.
 */
void cvm_err_mute(bool mute);

/* The first error message printed, or NULL. */
const char *cvm_err_first(void);

/*
 * Returns s with control characters and non-UTF-8 bytes escaped as \xNN,
 * and C1 and bidirectional controls (U+0080-U+009F, U+202E...) as \uNNNN,
 * for printing untrusted text (entry names, manifest fields). The result
 * lives in one of 8 rotating static buffers: use it before 8 more calls.
 */
const char *cvm_safe(const char *s);

/* Length of the valid UTF-8 sequence at s (1 for ASCII, NUL included), or 0 when invalid. */
size_t cvm_utf8_len(const unsigned char *s);

/* Whether the string s is valid UTF-8 throughout. */
bool cvm_utf8_valid(const char *s);

/* A progress bar on stderr, drawn only on a terminal and never with -q/--json. */
struct cvm_progress {
	const char *label;
	uint64_t total, done;
	int64_t last_ms;
	bool on;
};
void cvm_progress_start(struct cvm_progress *p, const char *label, uint64_t total);
void cvm_progress_add(struct cvm_progress *p, uint64_t n);
void cvm_progress_end(struct cvm_progress *p);
/* Ends the line where the bar stopped (a failure: no final 100%). */
void cvm_progress_stop(struct cvm_progress *p);

#endif
