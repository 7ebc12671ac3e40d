/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * testguest mode "memtest": fills a memory range with a pattern derived
 * from each word's address and the pass number; every later pass checks
 * the previous pass's pattern and writes its own in one sweep, so every
 * word is both verified and rewritten (dirtied) on each pass.
 *   memtest [mb=N] [passes=K] [inject=1] [sparse=1] [hold=1]
 * Without mb= all RAM between the guest image and the end of upper memory
 * is tested, and RAM from 4 GiB up when the memory map has some (reached
 * through a PAE window, 1 GiB at a time); without passes= it runs until
 * stopped.  inject=1 flips a bit
 * in the middle of the range after the first fill, a self-test of the
 * checker (pass 1 must then report one mismatch; one more in the middle
 * of the RAM from 4 GiB up, if tested; twice as many with sparse=1).
 * sparse=1 puts the pattern in the first word of each 4 KiB page only and
 * checks that every other word is zero (the fill zeroes those that are
 * not), so that a fill writes about one word a page and the memory stays
 * mostly zero: a big guest that migrates cheaply, still checked word by
 * word.
 * hold=1 waits after the fill for the console line "check", halted (no
 * memory written meanwhile), and then does the passes: without passes=
 * just the last check, for a guest checked after it has been moved.
 */
#include "guest/testguest/arch.h"
#include "guest/testguest/tg.h"

#define MAX_MISMATCH_LINES 8
#define HIGH_BASE 0x100000000ull
#define WINDOW_VA 0xC0000000u		/* PDPT slot 3: the window */
#define WINDOW_BYTES 0x40000000u
#define LARGE_PAGE (2u * TG_MIB)
#define PDE_P 0x1ull
#define PDE_RW 0x2ull
#define PDE_PS 0x80ull

enum how { FILL, CHECK_WRITE, CHECK };

struct memtest {
	uint32_t *start, *end;
	uint64_t high_end;		/* RAM [4 GiB, high_end); 0: none */
	bool sparse;			/* pattern in each page's first word only */
	uint32_t errors;
	uint32_t reported;
	uint64_t checked, checked_high;	/* bytes checked (from 4 GiB up) */
};

/* PAE tables (SDM Vol. 3A 4.4.1): 0-3 GiB identity in 2 MiB pages, and
 * the 3-4 GiB of virtual addresses a window onto guest-physical memory. */
static uint64_t pdpt[4] __attribute__((aligned(32)));
static uint64_t pd[4][512] __attribute__((aligned(TG_PAGE)));

/* The pattern of the word at guest-physical pa: below 4 GiB the same as
 * before there was high memory. */
static inline uint32_t pattern(uint64_t pa, uint32_t pass)
{
	uint32_t a = (uint32_t)pa ^ (uint32_t)(pa >> 32) * 0x01000193u;

	return (a ^ 0x5A5A5A5Au) + pass * 0x9E3779B9u;
}

static void mismatch(struct memtest *t, uint64_t pa, uint32_t want, uint32_t got)
{
	t->errors++;
	if (t->reported++ >= MAX_MISMATCH_LINES)
		return;
	if (pa >> 32)
		tg_printf("TG memtest mismatch addr=0x%x%08x want=0x%08x got=0x%08x\n",
			  (uint32_t)(pa >> 32), (uint32_t)pa, want, got);
	else
		tg_printf("TG memtest mismatch addr=0x%08x want=0x%08x got=0x%08x\n",
			  (uint32_t)pa, want, got);
}

/* One word at guest-physical pa: FILL writes pass's pattern; CHECK_WRITE
 * checks pass-1's and writes pass's; CHECK only checks pass-1's. */
static inline void sweep_word(struct memtest *t, uint32_t *p, uint64_t pa, uint32_t pass,
			      enum how how)
{
	uint32_t want = pattern(pa, pass - 1);

	if (how != FILL && *p != want)
		mismatch(t, pa, want, *p);
	if (how != CHECK)
		*p = pattern(pa, pass);
}

/* sparse=1: the first word of each page as sweep_word, every other word
 * checked to be zero; a fill writes only the words that are not zero yet
 * (a guest's RAM mostly is), so it dirties one word a page. */
static void sweep_sparse(struct memtest *t, uint32_t *p, uint32_t words, uint64_t pa,
			 uint32_t pass, enum how how)
{
	while (words) {
		uint32_t in_page = (uint32_t)pa & (TG_PAGE - 1);
		uint32_t n = (TG_PAGE - in_page) / 4, i = 0;

		if (n > words)
			n = words;
		if (!in_page) {
			sweep_word(t, p, pa, pass, how);
			i = 1;
		}
		for (; i < n; i++) {
			if (!p[i])
				continue;
			if (how == FILL)
				p[i] = 0;	/* e.g. the loader's boot information */
			else
				mismatch(t, pa + i * 4, 0, p[i]);
		}
		p += n;
		pa += n * 4;
		words -= n;
	}
}

/* One range: words words from p in virtual addresses, pa the
 * guest-physical address of p.  A count, not an end pointer: the window's
 * end is 4 GiB, which a 32-bit pointer cannot hold. */
static void sweep_range(struct memtest *t, uint32_t *p, uint32_t words, uint64_t pa,
			uint32_t pass, enum how how)
{
	if (how != FILL) {
		t->checked += (uint64_t)words * 4;
		if (pa >> 32)
			t->checked_high += (uint64_t)words * 4;
	}
	if (t->sparse) {
		sweep_sparse(t, p, words, pa, pass, how);
		return;
	}
	for (; words; words--, p++, pa += 4)
		sweep_word(t, p, pa, pass, how);
}

/* Point the window at the 1 GiB from base, paging on (first call) or the
 * TLB reloaded (CR3 write). */
static void window_map(uint64_t base)
{
	for (uint32_t d = 0; d < 4; d++) {
		for (uint32_t i = 0; i < 512; i++) {
			uint64_t pa = (d < 3 ? (uint64_t)d << 30 : base) + (uint64_t)i * LARGE_PAGE;

			pd[d][i] = pa | PDE_PS | PDE_RW | PDE_P;
		}
		pdpt[d] = (uint32_t)pd[d] | PDE_P;
	}
	write_cr4(read_cr4() | CR4_PAE);
	write_cr3((uint32_t)pdpt);
	write_cr0(read_cr0() | CR0_PG);
}

/* Back to the flat, unpaged view the rest of the guest runs in. */
static void window_unmap(void)
{
	write_cr0(read_cr0() & ~CR0_PG);
	write_cr4(read_cr4() & ~CR4_PAE);
}

static void sweep_high(struct memtest *t, uint32_t pass, enum how how)
{
	for (uint64_t base = HIGH_BASE; base < t->high_end; base += WINDOW_BYTES) {
		uint64_t left = t->high_end - base;
		uint32_t n = left < WINDOW_BYTES ? (uint32_t)left : WINDOW_BYTES;

		window_map(base);
		sweep_range(t, (uint32_t *)WINDOW_VA, n / 4, base, pass, how);
	}
	if (t->high_end)
		window_unmap();
}

static void sweep(struct memtest *t, uint32_t pass, enum how how)
{
	t->checked = t->checked_high = 0;
	sweep_range(t, t->start, ((uint32_t)t->end - (uint32_t)t->start) / 4,
		    (uint32_t)t->start, pass, how);
	sweep_high(t, pass, how);
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
	t->high_end = tg_opt_has("mb") ? 0 : tg_boot.high_end;
	t->sparse = tg_opt_u32("sparse", 0);
	return true;
}

/* Flip bit 0 of the word at guest-physical pa (from 4 GiB up through the
 * window). */
static void flip(uint64_t pa)
{
	if (!(pa >> 32)) {
		*(volatile uint32_t *)(uint32_t)pa ^= 1;
		return;
	}
	window_map(pa & ~(uint64_t)(WINDOW_BYTES - 1));
	*(volatile uint32_t *)(WINDOW_VA + ((uint32_t)pa & (WINDOW_BYTES - 1))) ^= 1;
	window_unmap();
}

/* inject=1: a bit flipped behind the checker's back in the middle of the
 * range (at a page's start), and of the range from 4 GiB up if there is
 * one; with sparse=1 also in the word after each, one that must stay zero. */
static void inject(const struct memtest *t)
{
	uint32_t half = ((uint32_t)t->end - (uint32_t)t->start) / 2 & ~(TG_PAGE - 1);
	uint64_t at[2] = { (uint32_t)t->start + half, 0 };

	if (t->high_end)
		at[1] = HIGH_BASE + ((t->high_end - HIGH_BASE) / 2 & ~(uint64_t)(TG_PAGE - 1));
	for (int i = 0; i < 2 && at[i]; i++) {
		flip(at[i]);
		if (t->sparse)
			flip(at[i] + 4);
	}
}

/* hold=1: halted until the console says "check". */
static void hold(const struct memtest *t)
{
	char line[16];

	tg_printf("TG memtest filled kib=%u high_mib=%u sparse=%u, waiting for \"check\"\n",
		  ((uint32_t)t->end - (uint32_t)t->start) / 1024,
		  t->high_end ? (uint32_t)((t->high_end - HIGH_BASE) >> 20) : 0, t->sparse);
	tg_uart_enable_rx_irq();
	sti();
	while (tg_read_line(line, sizeof(line)), strcmp(line, "check"))
		tg_printf("TG memtest waiting for \"check\", got \"%s\"\n", line);
	cli();
}

void mode_memtest(void)
{
	struct memtest t = { 0 };
	uint32_t passes = tg_opt_u32("passes", 0);
	bool held = tg_opt_u32("hold", 0);
	bool forever = !passes && !held;

	if (!setup(&t))
		tg_poweroff();
	tg_printf("TG memtest start=0x%08x end=0x%08x kib=%u passes=%u\n",
		  (uint32_t)t.start, (uint32_t)t.end,
		  ((uint32_t)t.end - (uint32_t)t.start) / 1024, passes);	/* no ptrdiff_t: > 2 GiB */
	if (t.high_end)
		tg_printf("TG memtest high start=0x100000000 end=0x%x%08x mib=%u\n",
			  (uint32_t)(t.high_end >> 32), (uint32_t)t.high_end,
			  (uint32_t)((t.high_end - HIGH_BASE) >> 20));
	sweep(&t, 0, FILL);
	if (tg_opt_u32("inject", 0))
		inject(&t);
	if (held)
		hold(&t);
	for (uint32_t k = 1; forever || k <= passes; k++) {
		sweep(&t, k, CHECK_WRITE);
		tg_printf("TG memtest pass=%u errors=%u\n", k, t.errors);
	}
	sweep(&t, passes + 1, CHECK);
	if (held || t.sparse)
		tg_printf("TG memtest checked kib=%u high_kib=%u\n",
			  (uint32_t)(t.checked >> 10), (uint32_t)(t.checked_high >> 10));
	tg_printf("TG memtest done passes=%u errors=%u\n", passes, t.errors);
	if (t.errors)
		tg_printf("TG FAIL memtest errors=%u\n", t.errors);
	else
		tg_printf("TG PASS memtest\n");
	tg_poweroff();
}
