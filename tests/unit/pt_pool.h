/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Table pages for unit tests that build EPT/NPT tables with the real engine
 * (arch/x86/paging.c): malloc'd pages at made-up physical addresses, handed
 * out full of garbage because the engine must zero them, and a cap that
 * makes allocations fail on purpose.  Header only; include cmocka.h first.
 */
#ifndef FERRY_TESTS_UNIT_PT_POOL_H
#define FERRY_TESTS_UNIT_PT_POOL_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "arch/x86/paging.h"

#define PT_POOL_SLOTS	1200
#define PT_POOL_PA	0x3c000000000ull	/* unlike any pointer or RAM PA */

struct pt_pool {
	void *slot[PT_POOL_SLOTS];
	unsigned live, cap;	/* cap: refuse allocations beyond it; 0: none */
};

static inline int pt_pool_alloc(void *ctx, uint64_t *pa)
{
	struct pt_pool *p = ctx;

	if (p->cap && p->live >= p->cap)
		return -ENOMEM;
	for (unsigned i = 0; i < PT_POOL_SLOTS; i++) {
		if (p->slot[i])
			continue;
		p->slot[i] = aligned_alloc(PT_SIZE_4K, PT_SIZE_4K);
		if (!p->slot[i])
			return -ENOMEM;
		memset(p->slot[i], 0xa5, PT_SIZE_4K);
		p->live++;
		*pa = PT_POOL_PA + i * PT_SIZE_4K;
		return 0;
	}
	return -ENOMEM;
}

static inline void *pt_pool_virt(void *ctx, uint64_t pa)
{
	struct pt_pool *p = ctx;
	uint64_t i = (pa - PT_POOL_PA) / PT_SIZE_4K;

	assert_true(pa >= PT_POOL_PA && i < PT_POOL_SLOTS && !(pa % PT_SIZE_4K));
	assert_non_null(p->slot[i]);	/* never a freed page */
	return p->slot[i];
}

static inline void pt_pool_free(void *ctx, uint64_t pa)
{
	struct pt_pool *p = ctx;

	free(pt_pool_virt(ctx, pa));
	p->slot[(pa - PT_POOL_PA) / PT_SIZE_4K] = NULL;
	p->live--;
}

static inline struct pt_ops pt_pool_ops(struct pt_pool *p)
{
	return (struct pt_ops){ pt_pool_alloc, pt_pool_free, pt_pool_virt, p };
}

#endif
