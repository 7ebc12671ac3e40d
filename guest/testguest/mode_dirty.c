/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * testguest mode "dirty": rewrites pages at a set rate (paced by the PIT)
 * and spends the rest of its time re-reading them, so that a migration
 * that loses a dirtied page is caught.  Each 4 KiB page holds
 *   word 0: its own address      word 1: generation
 *   words 2-1021: derived from (address, generation)
 *   word 1022: generation again  word 1023: sum of words 0-1022
 * The generation of a page goes up by one each time the writer wraps.
 *   dirty [mb=N] [rate=MB_PER_S] [secs=S] [inject=1] [hb=TICKS]
 * Prints every second
 *   TG dirty gen=G pages=P rate=KIB_PER_S verified=V errors=E
 * and on a bad page
 *   TG FAIL dirty page=0x... gen=G expected>=E       (stale generation)
 *   TG FAIL dirty page=0x... corrupt word=I got=0x... want=0x...
 * hb=TICKS also prints "TG hb tick=T tsc=0x..." every TICKS timer ticks, as
 * the heartbeat mode does, so that a harness can see the guest's downtime.
 * inject=1 puts the previous generation back into the last page written
 * after the first second, as a migration that lost that write would: a
 * self-test of the checker.
 */
#include "guest/testguest/arch.h"
#include "guest/testguest/tg.h"

#define WORDS (TG_PAGE / 4)
#define MAX_PAGES 65536u /* 256 MiB */
#define MAX_FAIL_LINES 20
#define BUDGET_CAP_TICKS 10 /* catch up at most 100 ms after a stall */

struct dirty {
	uint32_t *base;
	uint32_t pages;
	uint32_t pages_per_sec;
	uint32_t gen;          /* generation being written */
	uint32_t wpos, vpos;   /* next page to write, to verify */
	uint32_t budget, frac; /* pages allowed now, hundredths carried */
	uint32_t errors, reported;
	uint32_t written, verified; /* since the last report */
};

/* Generation last written to each page; 0: not to be checked. */
static uint32_t expect_gen[MAX_PAGES];

static uint32_t body_seed(uint32_t addr, uint32_t gen)
{
	return tg_mix32(addr ^ (gen * 0x9E3779B9u));
}

static void write_page(struct dirty *d, uint32_t idx)
{
	uint32_t *w = d->base + idx * WORDS;
	uint32_t seed = body_seed((uint32_t)w, d->gen), sum;

	w[0] = (uint32_t)w;
	w[1] = d->gen;
	sum = w[0] + w[1];
	for (uint32_t i = 2; i < WORDS - 2; i++) {
		w[i] = seed + i * 0x01000193u;
		sum += w[i];
	}
	w[WORDS - 2] = d->gen;
	w[WORDS - 1] = sum + d->gen;
	expect_gen[idx] = d->gen;
}

static void fail_line(struct dirty *d, uint32_t idx)
{
	d->errors++;
	expect_gen[idx] = 0; /* report once, check again once rewritten */
}

static bool check_word(struct dirty *d, uint32_t idx, uint32_t i,
		       uint32_t want)
{
	uint32_t *w = d->base + idx * WORDS;

	if (w[i] == want)
		return true;
	if (d->reported++ < MAX_FAIL_LINES)
		tg_printf("TG FAIL dirty page=0x%08x corrupt word=%u got=0x%08x "
			  "want=0x%08x gen=%u\n",
			  (uint32_t)w, i, w[i], want, expect_gen[idx]);
	fail_line(d, idx);
	return false;
}

static void verify_page(struct dirty *d, uint32_t idx)
{
	uint32_t *w = d->base + idx * WORDS, gen = expect_gen[idx];
	uint32_t seed = body_seed((uint32_t)w, gen), sum;

	if (!gen || !check_word(d, idx, 0, (uint32_t)w))
		return;
	if (w[1] != gen) {
		if (d->reported++ < MAX_FAIL_LINES)
			tg_printf("TG FAIL dirty page=0x%08x gen=%u expected>=%u\n",
				  (uint32_t)w, w[1], gen);
		fail_line(d, idx);
		return;
	}
	sum = w[0] + w[1];
	for (uint32_t i = 2; i < WORDS - 2; i++) {
		if (!check_word(d, idx, i, seed + i * 0x01000193u))
			return;
		sum += w[i];
	}
	if (check_word(d, idx, WORDS - 2, gen))
		check_word(d, idx, WORDS - 1, sum + gen);
}

static bool setup(struct dirty *d)
{
	uint32_t avail = tg_boot.ram_end > tg_boot.free_start
				 ? tg_boot.ram_end - tg_boot.free_start
				 : 0;
	uint32_t mb = tg_opt_u32("mb", 16), rate = tg_opt_u32("rate", 4);

	if (mb == 0 || mb > avail / TG_MIB || mb * 256 > MAX_PAGES) {
		tg_printf("TG FAIL dirty mb=%u does not fit (%u KiB free, max %u MiB)\n",
			  mb, avail / 1024, MAX_PAGES / 256);
		return false;
	}
	if (rate > 1024)
		rate = 1024;
	d->base = (uint32_t *)tg_boot.free_start;
	d->pages = mb * 256;
	d->pages_per_sec = rate * 256;
	return true;
}

/* Adds the write budget of the ticks that passed. */
static void add_budget(struct dirty *d, uint32_t ticks)
{
	uint32_t cap = d->pages_per_sec * BUDGET_CAP_TICKS / TG_HZ + 1;

	if (ticks > BUDGET_CAP_TICKS)
		ticks = BUDGET_CAP_TICKS;
	d->frac += d->pages_per_sec * ticks;
	d->budget += d->frac / TG_HZ;
	d->frac %= TG_HZ;
	if (d->budget > cap)
		d->budget = cap;
}

static void step(struct dirty *d)
{
	if (d->budget) {
		write_page(d, d->wpos);
		d->budget--;
		d->written++;
		if (++d->wpos == d->pages) {
			d->wpos = 0;
			d->gen++;
		}
		return;
	}
	verify_page(d, d->vpos);
	d->verified++;
	if (++d->vpos == d->pages)
		d->vpos = 0;
}

/* Rewrites the page written last with its previous generation, keeping
 * the expected one: what a lost dirty page looks like after migration. */
static void inject_stale(struct dirty *d)
{
	uint32_t idx = (d->wpos + d->pages - 1) % d->pages;
	uint32_t want = expect_gen[idx], gen = d->gen;

	if (want < 2)
		return;
	d->gen = want - 1;
	write_page(d, idx);
	d->gen = gen;
	expect_gen[idx] = want;
	tg_printf("TG dirty injected page=0x%08x gen=%u\n",
		  (uint32_t)(d->base + idx * WORDS), want - 1);
}

static void report(struct dirty *d, uint32_t ticks)
{
	tg_printf("TG dirty gen=%u pages=%u rate=%u verified=%u errors=%u\n",
		  d->gen, d->written, ticks ? d->written * 4 * TG_HZ / ticks : 0,
		  d->verified, d->errors);
	d->written = 0;
	d->verified = 0;
}

void mode_dirty(void)
{
	static struct dirty d;
	uint32_t secs = tg_opt_u32("secs", 0), hb = tg_opt_u32("hb", 0);
	uint32_t start, last, last_report, last_hb;
	bool inject = tg_opt_u32("inject", 0);

	if (!setup(&d))
		tg_poweroff();
	tg_printf("TG dirty start base=0x%08x pages=%u rate_kib=%u secs=%u\n",
		  (uint32_t)d.base, d.pages, d.pages_per_sec * 4, secs);
	d.gen = 1;
	for (uint32_t i = 0; i < d.pages; i++)
		write_page(&d, i);
	d.gen = 2;
	start = last = last_report = last_hb = tg_ticks;
	while (!secs || tg_ticks - start < secs * TG_HZ) {
		uint32_t now = tg_ticks;

		add_budget(&d, now - last);
		last = now;
		if (hb && now - last_hb >= hb) {
			tg_printf("TG hb tick=%u tsc=0x%llx\n", now - start, rdtsc());
			last_hb = now;
		}
		if (now - last_report >= TG_HZ) {
			report(&d, now - last_report);
			last_report = now;
			if (inject)
				inject_stale(&d);
			inject = false;
		}
		step(&d);
	}
	for (uint32_t i = 0; i < d.pages; i++)
		verify_page(&d, i);
	tg_printf("TG dirty done gen=%u errors=%u\n", d.gen, d.errors);
	tg_printf(d.errors ? "TG FAIL dirty\n" : "TG PASS dirty\n");
	tg_poweroff();
}
