/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * testguest mode "memtest": fills a memory range with a pattern derived
 * from each word's address and the pass number; every later pass checks
 * the previous pass's pattern and writes its own in one sweep, so every
 * word is both verified and rewritten (dirtied) on each pass.
 *   memtest [mb=N] [passes=K] [inject=1]
 * Without mb= all RAM between the guest image and the end of upper memory
 * is tested; without passes= it runs until stopped.  inject=1 flips a bit
 * in the middle of the range after the first fill, a self-test of the
 * checker (pass 1 must then report one mismatch).
 */
#include "guest/testguest/tg.h"

#define MAX_MISMATCH_LINES 8

struct memtest {
	uint32_t *start, *end;
	uint32_t errors;
	uint32_t reported;
};

static inline uint32_t pattern(const uint32_t *p, uint32_t pass)
{
	uint32_t a = (uint32_t)p;

	return (a ^ 0x5A5A5A5Au) + pass * 0x9E3779B9u;
}

static void mismatch(struct memtest *t, const uint32_t *p, uint32_t want)
{
	t->errors++;
	if (t->reported++ >= MAX_MISMATCH_LINES)
		return;
	tg_printf("TG memtest mismatch addr=0x%08x want=0x%08x got=0x%08x\n",
		  (uint32_t)p, want, *p);
}

static void fill(struct memtest *t, uint32_t pass)
{
	for (uint32_t *p = t->start; p < t->end; p++)
		*p = pattern(p, pass);
}

/* Checks pass-1's pattern and writes pass's; write=false only checks. */
static void sweep(struct memtest *t, uint32_t pass, bool write)
{
	for (uint32_t *p = t->start; p < t->end; p++) {
		uint32_t want = pattern(p, pass - 1);

		if (*p != want)
			mismatch(t, p, want);
		if (write)
			*p = pattern(p, pass);
	}
}

static bool setup(struct memtest *t)
{
	uint32_t avail, bytes, mb = tg_opt_u32("mb", 0);

	if (tg_boot.ram_end <= tg_boot.free_start) {
		tg_printf("TG FAIL memtest no memory information\n");
		return false;
	}
	avail = tg_boot.ram_end - tg_boot.free_start;
	bytes = mb * TG_MIB;
	if (!tg_opt_has("mb")) {
		bytes = avail & ~(TG_PAGE - 1);
	} else if (mb == 0 || mb > avail / TG_MIB) {
		tg_printf("TG FAIL memtest mb=%u does not fit, %u KiB free\n",
			  mb, avail / 1024);
		return false;
	}
	t->start = (uint32_t *)tg_boot.free_start;
	t->end = (uint32_t *)(tg_boot.free_start + bytes);
	return true;
}

void mode_memtest(void)
{
	struct memtest t = { 0 };
	uint32_t passes = tg_opt_u32("passes", 0);

	if (!setup(&t))
		tg_poweroff();
	tg_printf("TG memtest start=0x%08x end=0x%08x kib=%u passes=%u\n",
		  (uint32_t)t.start, (uint32_t)t.end,
		  (uint32_t)(t.end - t.start) / 256, passes);
	fill(&t, 0);
	if (tg_opt_u32("inject", 0))
		t.start[(t.end - t.start) / 2] ^= 1;
	for (uint32_t k = 1; !passes || k <= passes; k++) {
		sweep(&t, k, true);
		tg_printf("TG memtest pass=%u errors=%u\n", k, t.errors);
	}
	sweep(&t, passes + 1, false);
	tg_printf("TG memtest done passes=%u errors=%u\n", passes, t.errors);
	if (t.errors)
		tg_printf("TG FAIL memtest errors=%u\n", t.errors);
	else
		tg_printf("TG PASS memtest\n");
	tg_poweroff();
}
