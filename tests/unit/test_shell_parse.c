/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for the shell's argument parsing (hv/shell/parse.c): the
 * tokenizer's quoting and limits, key=value lists, numbers and sizes,
 * IPv4 addresses, prefixes, HOST[:PORT] and guest names, including
 * malformed and hostile input.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hv/shell/parse.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- tokenizer ---- */

static char buf[4096];
static char *av[PARSE_MAX_ARGS];

static int split(const char *s)
{
	snprintf(buf, sizeof(buf), "%s", s);
	return parse_split(buf, av, PARSE_MAX_ARGS);
}

static void test_split_plain(void **state)
{
	(void)state;
	assert_int_equal(split("vm  list\tall "), 3);
	assert_string_equal(av[0], "vm");
	assert_string_equal(av[1], "list");
	assert_string_equal(av[2], "all");
	assert_int_equal(split("  \t x"), 1);
	assert_string_equal(av[0], "x");
	assert_int_equal(split(""), 0);
	assert_int_equal(split(" \t  \t"), 0);
}

static void test_split_quotes(void **state)
{
	(void)state;
	assert_int_equal(split("vm boot g1 cmdline=\"console=ttyS0 quiet\""), 4);
	assert_string_equal(av[3], "cmdline=console=ttyS0 quiet");
	assert_int_equal(split("\"a b\" c"), 2);
	assert_string_equal(av[0], "a b");
	assert_string_equal(av[1], "c");
	assert_int_equal(split("x \"\" y"), 3);
	assert_string_equal(av[1], "");
	assert_int_equal(split("a\"\"b\"c d\"e"), 1);
	assert_string_equal(av[0], "abc de");
	assert_int_equal(split("\"  \""), 1);
	assert_string_equal(av[0], "  ");
}

static void test_split_escapes(void **state)
{
	(void)state;
	assert_int_equal(split("say \"he said \\\"hi\\\"\""), 2);
	assert_string_equal(av[1], "he said \"hi\"");
	assert_int_equal(split("\"back\\\\slash\""), 1);
	assert_string_equal(av[0], "back\\slash");
	/* Other backslashes inside quotes, and all outside, are kept. */
	assert_int_equal(split("\"a\\nb\" c\\d"), 2);
	assert_string_equal(av[0], "a\\nb");
	assert_string_equal(av[1], "c\\d");
	/* A backslash outside quotes does not protect a quote. */
	assert_int_equal(split("a\\\"b"), -EINVAL);
}

static void test_split_unterminated(void **state)
{
	(void)state;
	assert_int_equal(split("echo \"abc"), -EINVAL);
	assert_int_equal(split("echo \"abc\\\""), -EINVAL);
	assert_int_equal(split("\""), -EINVAL);
	assert_int_equal(split("a=\"x\" b=\"y"), -EINVAL);
	assert_int_equal(split("\"abc\\\\\""), 1);
}

static void test_split_limit(void **state)
{
	char line[256] = "";
	int i;

	(void)state;
	for (i = 0; i < PARSE_MAX_ARGS; i++)
		strcat(line, "a ");
	assert_int_equal(split(line), PARSE_MAX_ARGS);
	strcat(line, "  \t ");
	assert_int_equal(split(line), PARSE_MAX_ARGS);
	strcat(line, "b");
	assert_int_equal(split(line), -E2BIG);
	snprintf(buf, sizeof(buf), "a b");
	assert_int_equal(parse_split(buf, av, 1), -E2BIG);
	snprintf(buf, sizeof(buf), "  ");
	assert_int_equal(parse_split(buf, av, 0), 0);
}

/* Random lines: arguments stay inside the line and hold no separator. */
static void test_split_fuzz(void **state)
{
	static const char alpha[] = "ab \t\"\\=x\xff";
	uint32_t seed = 12345;
	size_t len, j;
	int i, k, argc;
	char *line;

	(void)state;
	for (i = 0; i < 20000; i++) {
		seed = seed * 1103515245u + 12345u;
		len = (seed >> 16) % 80;
		line = malloc(len + 1);
		assert_non_null(line);
		for (j = 0; j < len; j++) {
			seed = seed * 1103515245u + 12345u;
			line[j] = alpha[(seed >> 16) % (sizeof(alpha) - 1)];
		}
		line[len] = '\0';
		argc = parse_split(line, av, 8);
		assert_true(argc == -EINVAL || argc == -E2BIG ||
			    (argc >= 0 && argc <= 8));
		for (k = 0; k < argc; k++) {
			assert_true(av[k] >= line && av[k] <= line + len);
			assert_true(av[k] + strlen(av[k]) <= line + len);
		}
		free(line);
	}
}

/* ---- key=value ---- */

static const char *const vm_keys[] = { "mem", "cpus", "cmdline", NULL };

static int kv(const char *s, const char **vals, int *bad)
{
	int argc = split(s);

	assert_true(argc >= 0);
	return kv_parse(argc, av, vm_keys, vals, bad);
}

static void test_kv_ok(void **state)
{
	const char *vals[3] = { "junk", "junk", "junk" };
	int bad = -1;

	(void)state;
	assert_int_equal(kv("cpus=2 mem=512M cmdline=\"a=b c\"", vals, &bad), 0);
	assert_string_equal(vals[0], "512M");
	assert_string_equal(vals[1], "2");
	assert_string_equal(vals[2], "a=b c");
	assert_int_equal(bad, -1);
	assert_int_equal(kv("mem=", vals, &bad), 0);
	assert_string_equal(vals[0], "");
	assert_null(vals[1]);
	assert_null(vals[2]);
	assert_int_equal(kv("", vals, NULL), 0);
	assert_null(vals[0]);
}

static void test_kv_errors(void **state)
{
	const char *vals[3];
	int bad = -1;

	(void)state;
	assert_int_equal(kv("mem=1 disk=2", vals, &bad), -ENOENT);
	assert_int_equal(bad, 1);
	assert_int_equal(kv("mem=1 cpus=2 mem=3", vals, &bad), -EEXIST);
	assert_int_equal(bad, 2);
	assert_int_equal(kv("cpus=1 verbose", vals, &bad), -EINVAL);
	assert_int_equal(bad, 1);
	assert_int_equal(kv("=5", vals, &bad), -EINVAL);
	assert_int_equal(bad, 0);
	/* Keys match whole, not by prefix. */
	assert_int_equal(kv("me=1", vals, &bad), -ENOENT);
	assert_int_equal(kv("memory=1", vals, &bad), -ENOENT);
	assert_int_equal(kv("MEM=1", vals, &bad), -ENOENT);
	assert_int_equal(kv("mem=1", vals, NULL), 0);
	assert_string_equal(kv_strerror(-EINVAL), "expected key=value");
	assert_string_equal(kv_strerror(-ENOENT), "unknown key");
	assert_string_equal(kv_strerror(-EEXIST), "duplicate key");
	assert_string_equal(kv_strerror(-EIO), "bad argument");
}

/* ---- numbers ---- */

static void test_u64_ok(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(parse_u64("0", 0, 10, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(parse_u64("42", 0, 100, &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(parse_u64("0x10", 0, 100, &v), 0);
	assert_int_equal(v, 16);
	assert_int_equal(parse_u64("0XfF", 0, 1000, &v), 0);
	assert_int_equal(v, 255);
	assert_int_equal(parse_u64("010", 0, 100, &v), 0);	/* not octal */
	assert_int_equal(v, 10);
	assert_int_equal(parse_u64("18446744073709551615", 0, UINT64_MAX, &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(parse_u64("0xffffffffffffffff", 0, UINT64_MAX, &v), 0);
	assert_true(v == UINT64_MAX);
}

static void test_u64_errors(void **state)
{
	static const char *const junk[] = {
		"", "-1", "+1", " 1", "1 ", "12abc", "0x", "0xg", "1.5",
		"0x-1", "0x 1", "0x0x5", "1e3", "\xff", "1\t", "--",
	};
	uint64_t v = 777;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(junk); i++)
		assert_int_equal(parse_u64(junk[i], 0, UINT64_MAX, &v), -EINVAL);
	assert_int_equal(parse_u64(NULL, 0, 1, &v), -EINVAL);
	assert_int_equal(parse_u64("18446744073709551616", 0, UINT64_MAX, &v),
			 -ERANGE);
	assert_int_equal(parse_u64("99999999999999999999999999", 0, UINT64_MAX,
				   &v), -ERANGE);
	assert_int_equal(parse_u64("0x10000000000000000", 0, UINT64_MAX, &v),
			 -ERANGE);
	assert_int_equal(parse_u64("5", 1, 4, &v), -ERANGE);
	assert_int_equal(parse_u64("0", 1, 4, &v), -ERANGE);
	assert_int_equal(v, 777);	/* untouched on error */
	assert_int_equal(parse_u64("4", 1, 4, &v), 0);
	assert_int_equal(v, 4);
}

static void test_size(void **state)
{
	uint64_t v = 0;

	(void)state;
	assert_int_equal(parse_size("512M", 0, UINT64_MAX, &v), 0);
	assert_true(v == 512ull << 20);
	assert_int_equal(parse_size("4k", 0, UINT64_MAX, &v), 0);
	assert_true(v == 4096);
	assert_int_equal(parse_size("1G", 0, UINT64_MAX, &v), 0);
	assert_true(v == 1ull << 30);
	assert_int_equal(parse_size("2t", 0, UINT64_MAX, &v), 0);
	assert_true(v == 2ull << 40);
	assert_int_equal(parse_size("0x10K", 0, UINT64_MAX, &v), 0);
	assert_true(v == 16384);
	assert_int_equal(parse_size("123", 0, UINT64_MAX, &v), 0);
	assert_true(v == 123);
	assert_int_equal(parse_size("16777215T", 0, UINT64_MAX, &v), 0);
	assert_true(v == 16777215ull << 40);
	assert_int_equal(parse_size("16777216T", 0, UINT64_MAX, &v), -ERANGE);
	assert_int_equal(parse_size("18446744073709551615K", 0, UINT64_MAX, &v),
			 -ERANGE);
	assert_int_equal(parse_size("2G", 0, 1ull << 30, &v), -ERANGE);
	assert_int_equal(parse_size("1K", 2048, 4096, &v), -ERANGE);
	assert_int_equal(parse_size("1P", 0, UINT64_MAX, &v), -EINVAL);
	assert_int_equal(parse_size("1KB", 0, UINT64_MAX, &v), -EINVAL);
	assert_int_equal(parse_size("1 M", 0, UINT64_MAX, &v), -EINVAL);
	assert_int_equal(parse_size("M", 0, UINT64_MAX, &v), -EINVAL);
	assert_int_equal(parse_size("1 ", 0, UINT64_MAX, &v), -EINVAL);
	assert_int_equal(parse_size("1@", 0, UINT64_MAX, &v), -EINVAL);
	assert_int_equal(parse_size("-1M", 0, UINT64_MAX, &v), -EINVAL);
	assert_true(v == 16777215ull << 40);
}

/* ---- addresses ---- */

static void test_ipv4_ok(void **state)
{
	uint32_t ip;

	(void)state;
	assert_int_equal(parse_ipv4("10.0.0.1", &ip), 0);
	assert_int_equal(ip, 0x0a000001);
	assert_int_equal(parse_ipv4("255.255.255.255", &ip), 0);
	assert_int_equal(ip, 0xffffffff);
	assert_int_equal(parse_ipv4("0.0.0.0", &ip), 0);
	assert_int_equal(ip, 0);
	assert_int_equal(parse_ipv4("192.168.100.200", &ip), 0);
	assert_int_equal(ip, 0xc0a864c8);
}

static void test_ipv4_errors(void **state)
{
	static const char *const bad[] = {
		"256.1.1.1", "1.1.1.256", "1.2.3", "1.2.3.4.5", "1..2.3",
		".1.2.3", "1.2.3.", "1.2.3.4 ", " 1.2.3.4", "01.2.3.4",
		"1.2.3.-4", "1.2.3.+4", "1.2.3.4/24", "1.2.3.4:80", "",
		"a.b.c.d", "0x1.2.3.4", "1.2.3.99999999999999999999999",
		"1.2.3.0004", "1000.2.3.4", "1,2,3,4", "4294967295",
	};
	uint32_t ip = 0x12345678;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(parse_ipv4(bad[i], &ip), -EINVAL);
	assert_int_equal(parse_ipv4(NULL, &ip), -EINVAL);
	assert_int_equal(ip, 0x12345678);
}

static void test_prefix(void **state)
{
	static const char *const bad[] = {
		"10.0.0.2/33", "10.0.0.2/", "10.0.0.2", "10.0.0.2/024",
		"10.0.0.2/24x", "10.0.0.2/-1", "10.0.0.2/ 24", "10.0.0.2//24",
		"256.0.0.2/24", "10.0.0.2/99999999999999999999", "/24",
		"10.0.0.2/0x18",
	};
	uint32_t ip = 0;
	unsigned int len = 99;
	size_t i;

	(void)state;
	assert_int_equal(parse_ipv4_prefix("10.0.0.2/24", &ip, &len), 0);
	assert_int_equal(ip, 0x0a000002);
	assert_int_equal(len, 24);
	assert_int_equal(parse_ipv4_prefix("0.0.0.0/0", &ip, &len), 0);
	assert_int_equal(len, 0);
	assert_int_equal(parse_ipv4_prefix("1.2.3.4/32", &ip, &len), 0);
	assert_int_equal(len, 32);
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(parse_ipv4_prefix(bad[i], &ip, &len), -EINVAL);
	assert_int_equal(ip, 0x01020304);
	assert_int_equal(len, 32);
}

static void test_host_port(void **state)
{
	static const char *const bad[] = {
		"10.0.0.1:0", "10.0.0.1:65536", "10.0.0.1:", "10.0.0.1:80x",
		"host:80", "10.0.0.1:80:90", "10.0.0.1:-80", "10.0.0.1: 80",
		"10.0.0.1:080", ":80", "10.0.0.1 :80", "10.0.0.1:0x50",
		"10.0.0.1:99999999999999999999",
	};
	uint32_t ip = 0;
	uint16_t port = 0;
	size_t i;

	(void)state;
	assert_int_equal(parse_host_port("10.0.0.1", 4444, &ip, &port), 0);
	assert_int_equal(ip, 0x0a000001);
	assert_int_equal(port, 4444);
	assert_int_equal(parse_host_port("10.0.0.9:80", 4444, &ip, &port), 0);
	assert_int_equal(ip, 0x0a000009);
	assert_int_equal(port, 80);
	assert_int_equal(parse_host_port("1.1.1.1:65535", 1, &ip, &port), 0);
	assert_int_equal(port, 65535);
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(parse_host_port(bad[i], 1, &ip, &port), -EINVAL);
	assert_int_equal(port, 65535);
}

/* ---- names ---- */

static void test_names(void **state)
{
	static const char *const good[] = {
		"g1", "a", "9lives", "web-01.prod_x", "A.B-C_D",
		"abcdefghijklmnopqrstuvwxyz01234",	/* 31 */
	};
	static const char *const bad[] = {
		"", "-x", ".x", "_x", "a b", "a/b", "a:b", "caf\xc3\xa9",
		"abcdefghijklmnopqrstuvwxyz012345",	/* 32 */
		"a\tb", "x\"", "a=b",
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(good); i++)
		assert_true(name_valid(good[i]));
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		assert_false(name_valid(bad[i]));
	assert_false(name_valid(NULL));
}

static void test_lists(void **state)
{
	static const struct { const char *s; bool ok; } cases[] = {
		{ "1", true }, { "1,3", true }, { "a,b,c", true }, { "10.0.0.1,10.0.0.2", true },
		{ "", false }, { ",", false }, { ",,", false }, { ",1", false }, { "1,", false },
		{ "1,,3", false }, { "a,b,", false }, { ",a,b", false },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		assert_int_equal(list_valid(cases[i].s), cases[i].ok);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_plain),
		cmocka_unit_test(test_split_quotes),
		cmocka_unit_test(test_split_escapes),
		cmocka_unit_test(test_split_unterminated),
		cmocka_unit_test(test_split_limit),
		cmocka_unit_test(test_split_fuzz),
		cmocka_unit_test(test_kv_ok),
		cmocka_unit_test(test_kv_errors),
		cmocka_unit_test(test_u64_ok),
		cmocka_unit_test(test_u64_errors),
		cmocka_unit_test(test_size),
		cmocka_unit_test(test_ipv4_ok),
		cmocka_unit_test(test_ipv4_errors),
		cmocka_unit_test(test_prefix),
		cmocka_unit_test(test_host_port),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_lists),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
