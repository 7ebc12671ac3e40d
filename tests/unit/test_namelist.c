/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hv/lib/namelist.c, the walker of `module=a,b,c` lists that `create` and
 * a migration's destination both use: every name in order, then the end;
 * an empty entry or a name too long for the caller's buffer is refused
 * where it stands, having moved nothing.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "hv/lib/namelist.h"

/* Walks list with a name buffer of size; the names joined by '|' into out,
 * and the walker's last result. */
static int walk(const char *list, size_t size, char *out, size_t outlen, const char **stop)
{
	char name[64];
	int rc, n = 0;

	assert_true(size <= sizeof(name));
	out[0] = 0;
	while ((rc = namelist_next(&list, name, size)) > 0) {
		assert_true(strlen(name) < size);
		if (n++)
			strncat(out, "|", outlen - strlen(out) - 1);
		strncat(out, name, outlen - strlen(out) - 1);
	}
	*stop = list;
	return rc;
}

static void test_names_in_order(void **state)
{
	char out[128];
	const char *stop;

	(void)state;
	assert_int_equal(walk("", 8, out, sizeof(out), &stop), 0);
	assert_string_equal(out, "");
	assert_int_equal(walk("one", 8, out, sizeof(out), &stop), 0);
	assert_string_equal(out, "one");
	assert_string_equal(stop, "");
	assert_int_equal(walk("a,bb,ccc", 8, out, sizeof(out), &stop), 0);
	assert_string_equal(out, "a|bb|ccc");
	/* a name of size - 1 characters is the longest that fits */
	assert_int_equal(walk("1234567,x", 8, out, sizeof(out), &stop), 0);
	assert_string_equal(out, "1234567|x");
}

static void test_malformed_lists_stop_where_they_are(void **state)
{
	static const struct {
		const char *list, *rest, *before;
	} bad[] = {
		{ ",a", ",a", "" },		/* leading comma */
		{ "a,,b", ",b", "a" },		/* empty entry */
		{ "a,", "a,", "" },		/* trailing comma: refused on its name */
		{ "a,b,", "b,", "a" },
		{ ",", ",", "" },
		{ "ok,12345678", "12345678", "ok" },	/* 8 characters in a buffer of 8 */
		{ "12345678", "12345678", "" },
	};
	char out[128];
	const char *stop;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(walk(bad[i].list, 8, out, sizeof(out), &stop), -EINVAL);
		assert_string_equal(stop, bad[i].rest);
		assert_string_equal(out, bad[i].before);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_in_order),
		cmocka_unit_test(test_malformed_lists_stop_where_they_are),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
