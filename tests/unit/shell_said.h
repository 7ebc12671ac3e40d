/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the shell said, for the tests of its commands: after
 * shell_set_output(said_out, NULL), said holds the output since it was
 * last emptied (said[0] = 0).  One copy per test binary.
 */
#ifndef FERRY_TESTS_UNIT_SHELL_SAID_H
#define FERRY_TESTS_UNIT_SHELL_SAID_H

#include <stddef.h>
#include <string.h>

static char said[2048];

static void said_out(void *ctx, const char *s, size_t n)
{
	size_t have = strlen(said);

	(void)ctx;
	if (have + n < sizeof(said)) {
		memcpy(said + have, s, n);
		said[have + n] = 0;
	}
}

#endif
