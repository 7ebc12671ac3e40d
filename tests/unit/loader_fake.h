/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A guest's memory for the loader tests (test_linux_boot.c, test_pvh.c):
 * GMEM bytes filled with 0xaa by setup(), written through `ops`, whose
 * copy fails with copy_ret when that is set.  Include after cmocka.h.
 */
#ifndef FERRY_TESTS_UNIT_LOADER_FAKE_H
#define FERRY_TESTS_UNIT_LOADER_FAKE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hv/loader/loader.h"

#define MIB		(1024ull * 1024)
#define GMEM		(64 * MIB)

static uint8_t *gmem;
static int copy_ret;

static int fake_copy(void *ctx, uint64_t gpa, const void *src, size_t len)
{
	(void)ctx;
	if (copy_ret)
		return copy_ret;
	assert_true(gpa <= GMEM && len <= GMEM - gpa);
	memcpy(gmem + gpa, src, len);
	return 0;
}

static int fake_zero(void *ctx, uint64_t gpa, size_t len)
{
	(void)ctx;
	assert_true(gpa <= GMEM && len <= GMEM - gpa);
	memset(gmem + gpa, 0, len);
	return 0;
}

static const struct loader_mem_ops ops = { fake_copy, fake_zero, NULL };

static int setup(void **state)
{
	(void)state;
	gmem = malloc(GMEM);
	memset(gmem, 0xaa, GMEM);
	copy_ret = 0;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(gmem);
	return 0;
}

/* All of f (closed here), in memory the caller frees; its length in *len. */
static uint8_t *read_whole(FILE *f, size_t *len)
{
	uint8_t *b;

	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc(*len);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, *len, f), *len);
	fclose(f);
	return b;
}

#endif
