/* SPDX-License-Identifier: MIT */
#include <errno.h>

#include "error.h"
#include "version.h"
#include "unit.h"

static struct cvm_version V(const char *s)
{
	struct cvm_version v = { { 0 }, 0 };

	if (cvm_version_parse(s, &v) < 0)
		printf("# cannot parse '%s'\n", s);
	return v;
}

static void test_parse_good(void)
{
	static const struct {
		const char *s;
		int n;
		unsigned p[4];
	} t[] = {
		{ "9", 1, { 9, 0, 0, 0 } },
		{ "8.9", 2, { 8, 9, 0, 0 } },
		{ "8.9.7", 3, { 8, 9, 7, 0 } },
		{ "8.9.7.29", 4, { 8, 9, 7, 29 } },
		{ "9.15.0.58", 4, { 9, 15, 0, 58 } },
		{ "0", 1, { 0, 0, 0, 0 } },
		{ "123456.0.1", 3, { 123456, 0, 1, 0 } },
		{ "9.0.0.312", 4, { 9, 0, 0, 312 } },
	};
	struct cvm_version v;
	size_t i;
	int j;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		CHECK_INT(cvm_version_parse(t[i].s, &v), 0, "parse '%s'", t[i].s);
		CHECK_INT(v.n, t[i].n, "parse '%s': %d parts", t[i].s, t[i].n);
		for (j = 0; j < 4; j++)
			CHECK_INT(v.part[j], t[i].p[j], "parse '%s': part %d", t[i].s, j);
	}
}

static void test_parse_bad(void)
{
	static const char *const bad[] = {
		"", "8.", ".8", "8..9", "-1", "+1", "8.9.7.29.1", "1234567", "8 ", " 8",
		"a", "8.a", "0x8", "8.9-1", "8,9", "8.9.7.", "..", ".",
	};
	struct cvm_version v = { { 1, 2, 3, 4 }, 4 };
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_INT(cvm_version_parse(bad[i], &v), -CVM_E_VERSION, "reject '%s'", bad[i]);
	CHECK_INT(cvm_version_parse("9.1.0\n", &v), -CVM_E_VERSION, "reject a trailing newline");
	CHECK_INT(cvm_version_parse(NULL, &v), -CVM_E_VERSION, "reject NULL");
	CHECK(v.n == 4 && v.part[0] == 1 && v.part[3] == 4, "a failed parse leaves v alone");
}

static void test_order(void)
{
	struct cvm_version a, b;

	a = V("8.9.7");
	b = V("8.9.7.29");
	CHECK(cvm_version_cmp(&a, &b) < 0, "8.9.7 < 8.9.7.29");
	CHECK(cvm_version_cmp(&b, &a) > 0, "8.9.7.29 > 8.9.7");
	a = V("9.10.0");
	b = V("9.9.0");
	CHECK(cvm_version_cmp(&a, &b) > 0, "9.10.0 > 9.9.0 (numeric, not text)");
	a = V("9");
	b = V("9.0.0.0");
	CHECK_INT(cvm_version_cmp(&a, &b), 0, "9 == 9.0.0.0 (absent parts are 0)");
	a = V("8.9.7.29");
	b = V("9.0.0.312");
	CHECK(cvm_version_cmp(&a, &b) < 0, "8.9.7.29 < 9.0.0.312");
	a = V("9.15.0.57");
	b = V("9.15.0.58");
	CHECK(cvm_version_cmp(&a, &b) < 0, "9.15.0.57 < 9.15.0.58");
	CHECK_INT(cvm_version_cmp(&b, &b), 0, "equal to itself");
}

static void test_matches(void)
{
	struct cvm_version p, v = V("8.9.7.29");

	p = V("8");
	CHECK(cvm_version_matches(&p, &v), "8 matches 8.9.7.29");
	p = V("8.9");
	CHECK(cvm_version_matches(&p, &v), "8.9 matches 8.9.7.29");
	p = V("8.9.7");
	CHECK(cvm_version_matches(&p, &v), "8.9.7 matches 8.9.7.29");
	p = V("8.9.7.29");
	CHECK(cvm_version_matches(&p, &v), "8.9.7.29 matches itself");
	p = V("8.9.7.28");
	CHECK(!cvm_version_matches(&p, &v), "8.9.7.28 does not match 8.9.7.29");
	p = V("8.9.6");
	CHECK(!cvm_version_matches(&p, &v), "8.9.6 does not match 8.9.7.29");
	p = V("9");
	CHECK(!cvm_version_matches(&p, &v), "9 does not match 8.9.7.29");
	p = V("8.9");
	v = V("8.90.0");
	CHECK(!cvm_version_matches(&p, &v), "8.9 does not match 8.90.0 (parts, not text)");
	p = V("9.1");
	v = V("9.10.0");
	CHECK(!cvm_version_matches(&p, &v), "9.1 does not match 9.10.0");
}

static void test_encode(void)
{
	struct cvm_version v;

	v = V("8.9.7");
	CHECK_INT(cvm_version_encode(&v), 8907, "encode 8.9.7");
	v = V("8.9.7.29");
	CHECK_INT(cvm_version_encode(&v), 8907, "encode 8.9.7.29 ignores the build");
	v = V("9.1.0");
	CHECK_INT(cvm_version_encode(&v), 90100, "encode 9.1.0");
	v = V("9.19.0");
	CHECK_INT(cvm_version_encode(&v), 91900, "encode 9.19.0");
	v = V("8.0.5");
	CHECK_INT(cvm_version_encode(&v), 8005, "encode 8.0.5");
	v = V("7.6.5");
	CHECK_INT(cvm_version_encode(&v), 7605, "encode 7.6.5");

	cvm_version_decode(8907, &v);
	CHECK(v.n == 3 && v.part[0] == 8 && v.part[1] == 9 && v.part[2] == 7, "decode 8907 -> 8.9.7");
	cvm_version_decode(90100, &v);
	CHECK(v.n == 3 && v.part[0] == 9 && v.part[1] == 1 && v.part[2] == 0, "decode 90100 -> 9.1.0");
	cvm_version_decode(91900, &v);
	CHECK(v.n == 3 && v.part[0] == 9 && v.part[1] == 19 && v.part[2] == 0, "decode 91900 -> 9.19.0");
	cvm_version_decode(92701, &v);
	CHECK(v.part[0] == 9 && v.part[1] == 27 && v.part[2] == 1, "decode 92701 -> 9.27.1");
	cvm_version_decode(7605, &v);
	CHECK(v.part[0] == 7 && v.part[1] == 6 && v.part[2] == 5 && v.part[3] == 0, "decode 7605 -> 7.6.5");
	v = V("9.27.0");
	cvm_version_decode(cvm_version_encode(&v), &v);
	CHECK(v.part[0] == 9 && v.part[1] == 27 && v.part[2] == 0, "9.27.0 round-trips");
}

static void test_format(void)
{
	struct cvm_version v;
	char buf[32], small[6];

	v = V("8.9.7.29");
	CHECK_INT(cvm_version_format(&v, buf, sizeof(buf)), 0, "format 8.9.7.29");
	CHECK_STR(buf, "8.9.7.29", "format gives 8.9.7.29");
	v = V("9");
	CHECK_INT(cvm_version_format(&v, buf, sizeof(buf)), 0, "format 9");
	CHECK_STR(buf, "9", "format gives 9");
	v = V("9.15.0");
	CHECK_INT(cvm_version_format(&v, small, sizeof(small)), -ENAMETOOLONG,
		  "format into a buffer too small");
	CHECK_INT(cvm_version_format(&v, buf, 7), 0, "format 9.15.0 into exactly 7 bytes");
	CHECK_STR(buf, "9.15.0", "format gives 9.15.0");
}

static void test_cuda(void)
{
	int ma = 0, mi = 0;
	static const char *const bad[] = {
		"", "12.", ".4", "12.4.1", "12 ", "x", "-12", "12.x1", "12.X", "12.xx", "0", "1234", "12..4",
	};
	size_t i;

	CHECK_INT(cvm_cuda_parse("12.4", &ma, &mi), 0, "cuda 12.4");
	CHECK(ma == 12 && mi == 4, "cuda 12.4 -> 12, 4");
	CHECK_INT(cvm_cuda_parse("11.8", &ma, &mi), 0, "cuda 11.8");
	CHECK(ma == 11 && mi == 8, "cuda 11.8 -> 11, 8");
	CHECK_INT(cvm_cuda_parse("12.0", &ma, &mi), 0, "cuda 12.0");
	CHECK(ma == 12 && mi == 0, "cuda 12.0 -> 12, 0");
	CHECK_INT(cvm_cuda_parse("13", &ma, &mi), 0, "cuda 13");
	CHECK(ma == 13 && mi == -1, "cuda 13 -> 13, minor -1 (any)");
	CHECK_INT(cvm_cuda_parse("12.x", &ma, &mi), 0, "cuda 12.x");
	CHECK(ma == 12 && mi == -1, "cuda 12.x -> 12, minor -1 (any), as 12");
	CHECK_INT(cvm_cuda_parse("11.x", &ma, &mi), 0, "cuda 11.x");
	CHECK(ma == 11 && mi == -1, "cuda 11.x -> 11, minor -1");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_INT(cvm_cuda_parse(bad[i], &ma, &mi), -CVM_E_VERSION, "reject cuda '%s'", bad[i]);
	CHECK_INT(cvm_cuda_parse(NULL, &ma, &mi), -CVM_E_VERSION, "reject cuda NULL");
}

int main(void)
{
	test_parse_good();
	test_parse_bad();
	test_order();
	test_matches();
	test_encode();
	test_format();
	test_cuda();
	return unit_done();
}
