/* SPDX-License-Identifier: MIT */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compat.h"
#include "error.h"
#include "out.h"

struct cvm_out cvm_out;
volatile sig_atomic_t cvm_interrupted;
static char first_error[1024];
/* A progress line is on the terminal without its newline: the next message ends it first. */
static bool line_open;

static void vprint(FILE *f, const char *prefix, const char *fmt, va_list ap)
{
	if (line_open) {
		fputc('\n', stderr);
		line_open = false;
	}
	fputs(prefix, f);
	vfprintf(f, fmt, ap);
	fputc('\n', f);
	fflush(f);
}

static int err_muted;

void cvm_err_mute(bool mute)
{
	err_muted += mute ? 1 : -1;
}

int cvm_err(int code, const char *fmt, ...)
{
	va_list ap;

	if (err_muted > 0)
		return code;
	if (!first_error[0]) {
		va_start(ap, fmt);
		vsnprintf(first_error, sizeof(first_error), fmt, ap);
		va_end(ap);
	}
	va_start(ap, fmt);
	vprint(stderr, "cudnnvm: error: ", fmt, ap);
	va_end(ap);
	return code;
}

int cvm_err_usagev(const char *cmd, bool global, const char *fmt, va_list ap)
{
	char msg[512];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (!cmd)
		return cvm_err(-CVM_E_USAGE, "%s (see 'cudnnvm --help')", msg);
	if (global)
		return cvm_err(-CVM_E_USAGE, "%s: %s (see 'cudnnvm --help')", cmd, msg);
	return cvm_err(-CVM_E_USAGE, "%s: %s (see 'cudnnvm %s --help')", cmd, msg, cmd);
}

int cvm_err_usage(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = cvm_err_usagev(cmd, false, fmt, ap);
	va_end(ap);
	return r;
}

const char *cvm_err_first(void)
{
	return first_error[0] ? first_error : NULL;
}

void cvm_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprint(stderr, "cudnnvm: warning: ", fmt, ap);
	va_end(ap);
}

void cvm_info(const char *fmt, ...)
{
	va_list ap;

	if (cvm_out.verbosity < 0)
		return;
	va_start(ap, fmt);
	vprint(cvm_out.json ? stderr : stdout, "", fmt, ap);
	va_end(ap);
}

void cvm_print(const char *fmt, ...)
{
	va_list ap;

	if (cvm_out.json)
		return;
	va_start(ap, fmt);
	vprint(stdout, "", fmt, ap);
	va_end(ap);
}

void cvm_notice(const char *fmt, ...)
{
	va_list ap;

	if (cvm_out.verbosity < 1 && (cvm_out.verbosity < 0 || !isatty(STDERR_FILENO)))
		return;
	va_start(ap, fmt);
	vprint(stderr, "cudnnvm: ", fmt, ap);
	va_end(ap);
}

static void on_signal(int sig)
{
	cvm_interrupted = sig;
}

#ifdef _WIN32
/* Ctrl-C and Ctrl-Break arrive as SIGINT and SIGBREAK (the C runtime's console handler). */
void cvm_interrupts_catch(bool catch)
{
	signal(SIGINT, catch ? on_signal : SIG_DFL);
	signal(SIGTERM, catch ? on_signal : SIG_DFL);
	signal(SIGBREAK, catch ? on_signal : SIG_DFL);
}
#else
void cvm_interrupts_catch(bool catch)
{
	struct sigaction sa = { .sa_handler = catch ? on_signal : SIG_DFL, .sa_flags = SA_RESTART };
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };

	/*
	 * SA_RESTART: a read or write in the middle of a step is not failed by
	 * it; sleeps and poll (curl's wait) are never restarted: they return at
	 * once, and the step looks at the flag.
	 */
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}
#endif

void cvm_verbose(const char *fmt, ...)
{
	va_list ap;

	if (cvm_out.verbosity < 1)
		return;
	va_start(ap, fmt);
	vprint(stderr, "cudnnvm: ", fmt, ap);
	va_end(ap);
}

size_t cvm_utf8_len(const unsigned char *s)
{
	size_t n, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	for (i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	/* Overlong forms, surrogates and code points past U+10FFFF. */
	if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) ||
	    (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
		return 0;
	return n;
}

bool cvm_utf8_valid(const char *s)
{
	size_t n;

	for (; *s; s += n)
		if (!(n = cvm_utf8_len((const unsigned char *)s)))
			return false;
	return true;
}

/*
 * The code point of the n-byte UTF-8 sequence at p (n from cvm_utf8_len)
 * when it is one a terminal acts on instead of showing: a C1 control
 * (U+0080-U+009F: some terminals take U+009B as CSI) or a bidirectional
 * control (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069: U+202E
 * shows "gpj.exe" as "exe.jpg"); else 0.
 */
static unsigned acting(const unsigned char *p, size_t n)
{
	unsigned c = n == 2 ? (unsigned)(p[0] & 0x1f) << 6 | (p[1] & 0x3f)
		   : n == 3 ? (unsigned)(p[0] & 0x0f) << 12 | (unsigned)(p[1] & 0x3f) << 6 | (p[2] & 0x3f)
		   : 0;

	if ((c >= 0x80 && c <= 0x9f) || c == 0x61c || c == 0x200e || c == 0x200f ||
	    (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069))
		return c;
	return 0;
}

const char *cvm_safe(const char *s)
{
	static char bufs[8][1024];
	static unsigned next;
	char *out = bufs[next++ % 8];
	const unsigned char *p = (const unsigned char *)(s ? s : "(null)");
	size_t o = 0, n;

	while (*p && o + 8 < sizeof(bufs[0])) {
		n = cvm_utf8_len(p);
		/* A backslash is shown as \x5c, so that escapes read one way; on Windows it is the separator. */
		if (n == 1 && *p >= 0x20 && *p != 0x7f && (*p != '\\' || CVM_WINDOWS)) {
			out[o++] = (char)*p++;
		} else if (n > 1 && acting(p, n)) {
			/* Shown as \u202e, as the other controls are as \xNN: seen, not obeyed. */
			o += (size_t)snprintf(out + o, 8, "\\u%04x", acting(p, n));
			p += n;
		} else if (n > 1) {
			memcpy(out + o, p, n);
			o += n;
			p += n;
		} else {
			o += (size_t)snprintf(out + o, 8, "\\x%02x", *p++);
		}
	}
	if (*p)
		memcpy(out + o, "...", 4);
	else
		out[o] = '\0';
	return out;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void draw(struct cvm_progress *p, int final)
{
	double frac = p->total ? (double)p->done / (double)p->total : 0;
	int width = 30, fill, i;
	char bar[40];

	if (frac > 1)
		frac = 1;
	fill = (int)(frac * width);
	for (i = 0; i < width; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[width] = '\0';
	fprintf(stderr, "\r%-10s [%s] %3d%% %7.1f MiB%s", p->label, bar,
		(int)(frac * 100), (double)p->done / 1048576.0, final ? "\n" : "");
	fflush(stderr);
	line_open = !final;
}

void cvm_progress_start(struct cvm_progress *p, const char *label, uint64_t total)
{
	memset(p, 0, sizeof(*p));
	p->label = label;
	p->total = total;
	p->on = !cvm_out.json && cvm_out.verbosity >= 0 && isatty(STDERR_FILENO) &&
		!getenv("CUDNNVM_NO_PROGRESS");
	p->last_ms = now_ms();
}

void cvm_progress_add(struct cvm_progress *p, uint64_t n)
{
	long long t;

	p->done += n;
	if (!p->on)
		return;
	t = now_ms();
	if (t - p->last_ms < 100)
		return;
	p->last_ms = t;
	draw(p, 0);
}

void cvm_progress_end(struct cvm_progress *p)
{
	if (!p->on)
		return;
	p->done = p->total ? p->total : p->done;
	draw(p, 1);
	p->on = false;
}

void cvm_progress_stop(struct cvm_progress *p)
{
	if (p->on && line_open) {
		fputc('\n', stderr);
		fflush(stderr);
		line_open = false;
	}
	p->on = false;
}
