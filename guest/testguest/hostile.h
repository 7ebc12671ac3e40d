/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * testguest: what mode_hostile.c and hostile_mem.c share: the description
 * of one escape attempt and the values it reports.
 */
#ifndef TG_HOSTILE_H
#define TG_HOSTILE_H

#include "guest/testguest/tg.h"

#define HOSTILE_MAX_VALUES 2

/* Values an attempt reports next to its outcome (owned by the runner,
 * filled in by the attempt). */
struct attempt_ctx {
	const char *label[HOSTILE_MAX_VALUES];
	uint64_t value[HOSTILE_MAX_VALUES];
	int n;
};

struct attempt {
	const char *name;
	const char *group;
	void (*run)(void *ctx); /* runs under tg_catch, ctx is attempt_ctx */
	void (*after)(void);    /* cleanup, runs either way; may be NULL */
};

/* mode_hostile.c */
void hostile_report(struct attempt_ctx *c, const char *label, uint64_t v);

/* hostile_mem.c: the memory escapes, run after all the others. */
extern const struct attempt hostile_mem_attempts[];
extern const size_t hostile_mem_count;

#endif
