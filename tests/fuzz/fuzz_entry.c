/* SPDX-License-Identifier: MIT */
/*
 * The entry rules over a sequence of fake archive entries, one state for the
 * whole sequence, as extract.c uses them. Input:
 *
 *   byte 0        bit 7 set: the rel buffer is (bits 0-6) + 1 bytes, else 4096
 *   then records  TYPE PATH \0 LINK \0   (TYPE % 5 is an enum cvm_entry_type)
 *
 * Each call is compared with an independent model of the rules
 * (fuzz_rules.h), and whatever it accepts must meet the invariants: a
 * relative, normalised name without ".." or control characters, outside
 * .cudnnvm, and a symlink that, resolved by hand, stays inside the version.
 */
#include "fuzz_rules.h"

#define MAX_ENTRIES 256

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_quiet();
	return 0;
}

/* The next NUL-terminated field of [*p, end), copied; NULL when the input is used up. */
static char *field(const uint8_t **p, const uint8_t *end)
{
	const uint8_t *z;
	char *s;

	if (*p >= end)
		return NULL;
	z = memchr(*p, '\0', (size_t)(end - *p));
	if (!z)
		z = end;
	s = fuzz_strndup(*p, (size_t)(z - *p));
	*p = z < end ? z + 1 : end;
	return s;
}

/* No empty and no "." parts: what cvm_entry_check makes of a name, and link_problem expects. */
static bool normalised(const char *s)
{
	for (;;) {
		size_t n = strcspn(s, "/");

		if (!n || (n == 1 && *s == '.'))
			return false;
		if (!s[n])
			return true;
		s += n + 1;
	}
}

static void check_pure_rules(const char *path, const char *link)
{
	const char *why = cvm_entry_name_problem(path);

	FUZZ_ASSERT(!why == fuzz_name_ok(path), "name '%s': entry.c says %s", path,
		    why ? why : "fine");
	/* The symlink rule on the name itself, taken as a normalised rel when it is one. */
	if (fuzz_name_ok(path) && normalised(path)) {
		why = cvm_entry_link_problem(path, link);
		FUZZ_ASSERT(!why == fuzz_link_ok(path, link), "link '%s' -> '%s': entry.c says %s",
			    path, link, why ? why : "fine");
		if (!why)
			FUZZ_ASSERT(fuzz_link_stays_inside(path, link), "'%s' -> '%s' escapes", path,
				    link);
	}
}

static void check_top(const char *s, size_t vlen, size_t plen)
{
	char *ver = malloc(vlen), *plat = malloc(plen), prefix[600];
	int major = -1;

	if (!ver || !plat)
		abort();
	if (cvm_entry_top_version(s, ver, vlen, &major, plat, plen) == 0) {
		FUZZ_ASSERT(strlen(ver) < vlen && strlen(plat) < plen, "top '%s' overflowed", s);
		FUZZ_ASSERT(major >= 1 && major <= 99, "top '%s': CUDA %d", s, major);
		FUZZ_ASSERT(ver[0] && plat[0], "top '%s': empty part", s);
		/*
		 * Only the parts are compared: the major is read with strtol, which
		 * also takes "_cuda012", "_cuda+12" and "_cuda 12" (see the report).
		 */
		snprintf(prefix, sizeof(prefix), "cudnn-%s-%s_cuda", plat, ver);
		FUZZ_ASSERT(!strncmp(s, prefix, strlen(prefix)), "top '%s' read as '%s'", s,
			    prefix);
		FUZZ_ASSERT(strlen(s) >= 8 && !strcmp(s + strlen(s) - 8, "-archive"),
			    "top '%s' has no -archive", s);
	}
	free(ver);
	free(plat);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	struct cvm_entry_state st;
	struct fuzz_model *m;
	size_t rel_len;
	char *rel;
	int i;

	if (!size)
		return 0;
	rel_len = (data[0] & 0x80) ? (size_t)(data[0] & 0x7f) + 1 : 4096;
	p++;
	memset(&st, 0, sizeof(st));
	m = malloc(sizeof(*m));
	/* Exactly rel_len bytes, so that writing one more is an ASan report. */
	rel = malloc(rel_len);
	if (!m || !rel)
		abort();
	for (i = 0; i < MAX_ENTRIES && p < end; i++) {
		struct cvm_entry e;
		enum cvm_entry_type type = (enum cvm_entry_type)(*p++ % 5);
		char *path = field(&p, end), *link = field(&p, end);
		int r;

		if (!path)
			path = fuzz_strndup((const uint8_t *)"", 0);
		if (!link)
			link = fuzz_strndup((const uint8_t *)"", 0);
		memset(&e, 0, sizeof(e));
		e.path = path;
		e.type = type;
		e.mode = 0644;
		e.size = -1;
		if (type == CVM_ENTRY_SYMLINK || type == CVM_ENTRY_HARDLINK)
			e.link = link;

		check_pure_rules(path, link);
		fuzz_model_entry(m, &st, &e, rel_len);
		memset(rel, 'X', rel_len);
		r = cvm_entry_check(&st, "fuzz.tar.xz", &e, rel, rel_len);
		FUZZ_ASSERT(r == 0 || r == 1 || r == -CVM_E_UNSAFE, "'%s': returned %d", path, r);
		if (r == 0) {
			FUZZ_ASSERT(memchr(rel, '\0', rel_len), "'%s': rel not terminated", path);
			fuzz_assert_accepted(&e, rel);
		}
		/* A Windows archive's earlier names (twins in case) can refuse what the rules take. */
		if (m->exact && !(st.windows && m->r == 0 && r == -CVM_E_UNSAFE)) {
			FUZZ_ASSERT(r == m->r, "'%s' (type %d, link '%s'): returned %d, rules say %d",
				    path, (int)type, link, r, m->r);
			if (r == 0)
				FUZZ_ASSERT(!strcmp(rel, m->rel), "'%s': rel '%s', rules say '%s'",
					    path, rel, m->rel);
			FUZZ_ASSERT(st.have_top == m->st.have_top &&
				    (!st.have_top || (!strcmp(st.top, m->st.top) &&
						      st.layout == m->st.layout)),
				    "'%s': top '%s', rules say '%s'", path, st.top, m->st.top);
		}
		if (st.have_top)
			check_top(st.top, (size_t)(data[0] & 0x3f) + 1, (size_t)(data[0] >> 2 & 0x1f) + 1);
		check_top(path, 64, 64);
		free(path);
		free(link);
	}
	cvm_entry_state_free(&st);
	free(rel);
	free(m);
	return 0;
}
