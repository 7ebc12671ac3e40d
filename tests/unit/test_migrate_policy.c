/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Migration decisions (hv/migrate/policy.c) against a simulated guest and
 * link: a quiet guest converges and stops when the rest fits; a guest
 * dirtying faster than the link is throttled step by step and converges;
 * converge=off stops anyway and says so; downtime-max gives up; every run
 * ends.  Also pacing, admission of a HELLO, and the TSC rule.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hv/cpuid.h"
#include "hv/migrate/policy.h"

static uint64_t rng;

static uint32_t rnd(void)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rng >> 33);
}

/* ---- a simulated migration ---- */

struct sim {
	uint64_t mem_pages;		/* guest size */
	uint64_t link_Bps;		/* what the wire carries */
	uint64_t dirty_pps;		/* unthrottled dirty rate */
	uint64_t wss;			/* pages the guest keeps rewriting */
	uint32_t zero_pct;		/* share of round-0 pages that are zero */
	bool throttle_works;		/* false: a dirtier the throttle cannot slow */
	/* results */
	int rounds;
	uint32_t steps[16];
	int nsteps;
	struct mig_decision last;
};

static void sim_round(const struct sim *s, uint64_t set, uint32_t round, uint32_t throttle,
		      struct mig_round *r)
{
	uint64_t zero = round == 0 ? set * s->zero_pct / 100 : 0;
	uint64_t pps = s->throttle_works ? s->dirty_pps * (100 - throttle) / 100 : s->dirty_pps;
	uint64_t dirtied;

	r->pages_sent = set;
	r->zero_pages = zero;
	r->bytes_sent = (set - zero) * MIG_PAGE_WIRE + zero * 9;
	r->elapsed_us = mig_transfer_us(r->bytes_sent, s->link_Bps);
	dirtied = (uint64_t)((unsigned __int128)pps * r->elapsed_us / 1000000);
	r->dirtied = dirtied < s->wss ? dirtied : s->wss;
	if (r->elapsed_us > MIG_EARLY_US) {	/* the sender's sample */
		dirtied = pps * MIG_EARLY_US / 1000000;
		r->early_dirtied = dirtied < s->wss ? dirtied : s->wss;
		r->early_us = MIG_EARLY_US;
	}
}

/* Run rounds until STOP or GIVE_UP; fails if it does not end. */
static void sim_run(struct sim *s, const struct mig_policy_cfg *cfg)
{
	struct mig_policy p;
	struct mig_round r;
	uint64_t set = s->mem_pages;

	mig_policy_init(&p, cfg);
	s->nsteps = 0;
	for (s->rounds = 0; s->rounds <= (int)p.cfg.max_rounds; s->rounds++) {
		sim_round(s, set, (uint32_t)s->rounds, p.throttle_pct, &r);
		mig_policy_round(&p, &r, &s->last);
		assert_true(s->last.why[0] != 0);
		if (s->last.action == MIG_ACT_THROTTLE) {
			assert_true(s->nsteps < 16);
			s->steps[s->nsteps++] = s->last.throttle_pct;
			assert_non_null(strstr(s->last.why, "throttling"));
		}
		if (s->last.action == MIG_ACT_STOP || s->last.action == MIG_ACT_GIVE_UP) {
			s->rounds++;
			return;
		}
		set = r.dirtied;
	}
	fail_msg("migration did not end after %d rounds", s->rounds);
}

static const struct mig_policy_cfg cfg_auto = {
	.downtime_ms = 300, .state_bytes = 16384, .handover_us = 2000,
};

/* The silence that ends a migration grows with the round trip and the
 * guest's size, from 10 s, and stops at 10 min. */
static void test_silence_scales_with_rtt_and_size(void **st)
{
	(void)st;
	assert_int_equal(mig_silence_us(0, 0), 10000000);
	assert_int_equal(mig_silence_us(16ull << 20, 0), 10000000 + 16777);
	assert_int_equal(mig_silence_us(0, 50000), 10000000 + 64 * 50000);
	assert_int_equal(mig_silence_us(4608ull << 20, 2000), 10000000 + 4831838 + 128000);
	assert_int_equal(mig_silence_us(1ull << 40, 0), MIG_SILENCE_MAX_US);
	assert_int_equal(mig_silence_us(0, UINT64_MAX / 2), MIG_SILENCE_MAX_US);
}

static void test_quiet_guest_converges(void **st)
{
	struct sim s = { .mem_pages = 262144, .link_Bps = 125000000, .dirty_pps = 2000,
			 .wss = 20000, .zero_pct = 50, .throttle_works = true };

	(void)st;
	sim_run(&s, &cfg_auto);
	assert_int_equal(s.last.action, MIG_ACT_STOP);
	assert_false(s.last.forced);
	assert_true(s.rounds <= 3);
	assert_int_equal(s.nsteps, 0);
	assert_true(s.last.downtime_us <= 300000);
	assert_non_null(strstr(s.last.why, "fit"));
}

/* A guest whose rest fits right after round 0 stops at once. */
static void test_idle_guest_stops_after_round0(void **st)
{
	struct sim s = { .mem_pages = 256, .link_Bps = 10000000, .dirty_pps = 10,
			 .wss = 10, .throttle_works = true };

	(void)st;
	sim_run(&s, &cfg_auto);
	assert_int_equal(s.rounds, 1);
	assert_int_equal(s.last.action, MIG_ACT_STOP);
}

static void test_fast_dirtier_is_throttled(void **st)
{
	struct sim s = { .mem_pages = 262144, .link_Bps = 125000000, .dirty_pps = 100000,
			 .wss = 200000, .zero_pct = 10, .throttle_works = true };

	(void)st;
	sim_run(&s, &cfg_auto);
	assert_int_equal(s.last.action, MIG_ACT_STOP);
	assert_false(s.last.forced);
	assert_true(s.last.downtime_us <= 300000);
	/* its 200000 pages are all dirtied again in a round, whose first
	 * 100 ms show 410 MB/s against the link's 125: straight to the 90%
	 * that brings it under half the link (mig_throttle_for) */
	assert_true(s.nsteps >= 1);
	assert_int_equal(s.steps[0], 90);
	for (int i = 1; i < s.nsteps; i++)
		assert_true(s.steps[i] > s.steps[i - 1]);
	assert_int_equal(s.last.throttle_pct, s.steps[s.nsteps - 1]);
	assert_true(s.rounds < MIG_MAX_ROUNDS_DEFAULT);
}

/* A dirtier the throttle cannot slow, whose rounds are all dirtied again
 * (saturated), at 3.3x the link: 90% at once, then two steps, 99%, then
 * stop anyway. */
static void test_throttle_exhausted_stops_anyway(void **st)
{
	static const uint32_t want[] = { 90, 99 };
	struct sim s = { .mem_pages = 65536, .link_Bps = 50000000, .dirty_pps = 40000,
			 .wss = 65536, .throttle_works = false };

	(void)st;
	sim_run(&s, &cfg_auto);
	assert_int_equal(s.nsteps, 2);
	assert_memory_equal(s.steps, want, sizeof(want));
	assert_int_equal(s.last.action, MIG_ACT_STOP);
	assert_true(s.last.forced);
	assert_true(s.last.downtime_us > 300000);
	assert_non_null(strstr(s.last.why, "99%"));
	assert_non_null(strstr(s.last.why, "stopping anyway"));
}

/* A whole-memory dirtier the throttle cannot slow, with the guest's size
 * known: once the throttle is at its top and three times the memory has
 * gone, pre-copy stops (without waiting for rounds to prove it stuck);
 * with a downtime maximum that the stop would break, it gives up instead.
 * A dirtier of an eighth of memory, under the bound, waits as before. */
static void test_three_times_memory_stops(void **st)
{
	struct mig_policy_cfg cfg = cfg_auto;
	struct sim s = { .mem_pages = 65536, .link_Bps = 50000000, .dirty_pps = 40000,
			 .wss = 65536, .throttle_works = false };

	(void)st;
	cfg.mem_bytes = s.mem_pages * 4096;
	sim_run(&s, &cfg);
	assert_int_equal(s.nsteps, 2);		/* 90, 99 after rounds 0 and 1 */
	assert_int_equal(s.rounds, 3);		/* the round at 99% is the last */
	assert_int_equal(s.last.action, MIG_ACT_STOP);
	assert_true(s.last.forced);
	if (!strstr(s.last.why, "769 MiB sent, 3x the guest's memory"))
		fail_msg("%s", s.last.why);
	cfg.downtime_max_ms = 1000;
	sim_run(&s, &cfg);
	assert_int_equal(s.last.action, MIG_ACT_GIVE_UP);
	assert_non_null(strstr(s.last.why, "3x the guest's memory"));
	/* an eighth of memory rewritten: 90% once round 1 saturates, 99%,
	 * then stuck at 99% */
	cfg.downtime_max_ms = 0;
	s.wss = s.mem_pages / 8;
	sim_run(&s, &cfg);
	assert_int_equal(s.nsteps, 2);
	assert_non_null(strstr(s.last.why, "99%"));
	assert_null(strstr(s.last.why, "3x"));
}

/* The early sample counts only in a saturated round: a guest that writes
 * its 1000 pages in the round's first 100 ms and then rests dirties 4 MB/s
 * over the round, not 41; saturated, the same sample is its real rate. */
static void test_early_sample_only_when_saturated(void **st)
{
	struct mig_policy_cfg cfg = cfg_auto;
	struct mig_round r = { .pages_sent = 10000, .bytes_sent = 10000 * MIG_PAGE_WIRE,
			       .elapsed_us = 1000000, .dirtied = 1000, .early_dirtied = 1000,
			       .early_us = 100000 };
	struct mig_policy p;
	struct mig_decision d;

	(void)st;
	cfg.downtime_ms = 10;
	mig_policy_init(&p, &cfg);
	mig_policy_round(&p, &r, &d);
	assert_int_equal(d.action, MIG_ACT_NEXT_ROUND);
	assert_int_equal(p.dirty_pps, 1000);
	r.pages_sent = r.dirtied = 1000;		/* all of it again: saturated */
	r.bytes_sent = 1000 * MIG_PAGE_WIRE;
	r.elapsed_us = 100000;
	r.early_dirtied = 500;
	r.early_us = 10000;
	mig_policy_round(&p, &r, &d);
	assert_int_equal(p.dirty_pps, 50000);
	assert_int_equal(d.action, MIG_ACT_THROTTLE);
	assert_true(d.throttle_pct >= 90);
}

/* A round after the sender waited for ROUND_ACK: its set was dirtied over
 * the wait and the round (dirty_us), the link carried it over the round
 * alone.  A guest dirtying 1000 pages/s over a 1 s wait and a 0.1 s round
 * left 1100 pages: 1000 pages/s, not 11000, and the link rate still the
 * round's. */
static void test_dirty_rate_over_a_wait(void **st)
{
	struct mig_round r = { .pages_sent = 2000, .bytes_sent = 2000 * MIG_PAGE_WIRE,
			       .elapsed_us = 100000, .dirtied = 1100, .dirty_us = 1100000 };
	struct mig_policy p;
	struct mig_decision d;

	(void)st;
	mig_policy_init(&p, &cfg_auto);
	mig_policy_round(&p, &r, &d);
	assert_int_equal(p.dirty_pps, 1000);
	assert_int_equal(p.link_Bps, mig_rate(2000 * MIG_PAGE_WIRE, 100000));
	r.dirty_us = 0;					/* no wait: the round's time */
	mig_policy_init(&p, &cfg_auto);
	mig_policy_round(&p, &r, &d);
	assert_int_equal(p.dirty_pps, 11000);
}

/* Rounds that cut the pages left by a quarter or more go on below the
 * target, to a fifth of it: a writer at 30% of the link stops near 60 ms,
 * not at the first round under 300.  One at 80%, whose rounds shrink
 * slowly, gets a step of the throttle for it, and none with
 * converge=off, which stops at the first fit. */
static void test_rounds_that_shrink_go_on(void **st)
{
	struct mig_policy_cfg cfg = cfg_auto;
	int rounds_off;
	struct sim s = { .mem_pages = 65536, .link_Bps = 50000000, .dirty_pps = 3654,
			 .wss = 65536, .throttle_works = true };

	(void)st;
	sim_run(&s, &cfg_auto);
	assert_int_equal(s.last.action, MIG_ACT_STOP);
	assert_false(s.last.forced);
	assert_int_equal(s.nsteps, 0);
	if (s.last.downtime_us > 65000 || s.rounds > 8)
		fail_msg("%d rounds, downtime %lu us", s.rounds,
			 (unsigned long)s.last.downtime_us);
	s.dirty_pps = 7309;			/* 60%: more rounds, as low */
	sim_run(&s, &cfg_auto);
	assert_int_equal(s.last.action, MIG_ACT_STOP);
	if (s.last.downtime_us > 65000 || s.rounds > 12)
		fail_msg("%d rounds, downtime %lu us", s.rounds,
			 (unsigned long)s.last.downtime_us);
	s.dirty_pps = 9745;
	cfg.converge = MIG_CONVERGE_OFF;
	sim_run(&s, &cfg);
	assert_int_equal(s.last.action, MIG_ACT_STOP);
	assert_int_equal(s.nsteps, 0);
	if (s.last.downtime_us <= 65000 || s.last.downtime_us > 300000)
		fail_msg("%d rounds, downtime %lu us", s.rounds,
			 (unsigned long)s.last.downtime_us);
	rounds_off = s.rounds;
	sim_run(&s, &cfg_auto);
	assert_int_equal(s.last.action, MIG_ACT_STOP);
	assert_int_equal(s.nsteps, 1);
	assert_int_equal(s.steps[0], 20);
	if (s.last.downtime_us > 65000 || s.rounds > rounds_off + 5)
		fail_msg("%d rounds (%d without), downtime %lu us", s.rounds, rounds_off,
			 (unsigned long)s.last.downtime_us);
}

static void test_converge_off_stops_anyway(void **st)
{
	struct mig_policy_cfg cfg = cfg_auto;
	struct sim s = { .mem_pages = 262144, .link_Bps = 125000000, .dirty_pps = 100000,
			 .wss = 200000, .throttle_works = true };

	(void)st;
	cfg.converge = MIG_CONVERGE_OFF;
	sim_run(&s, &cfg);
	assert_int_equal(s.nsteps, 0);
	assert_int_equal(s.last.action, MIG_ACT_STOP);
	assert_true(s.last.forced);
	assert_int_equal(s.last.throttle_pct, 0);
	assert_true(s.rounds <= 1 + MIG_STALL_ROUNDS + 1);
	assert_true(s.last.downtime_us > 300000);
	assert_non_null(strstr(s.last.why, "stopped shrinking"));
}

static void test_downtime_max_gives_up(void **st)
{
	struct mig_policy_cfg cfg = cfg_auto;
	struct sim s = { .mem_pages = 262144, .link_Bps = 125000000, .dirty_pps = 100000,
			 .wss = 200000, .throttle_works = true };

	(void)st;
	cfg.converge = MIG_CONVERGE_OFF;
	cfg.downtime_max_ms = 1000;
	sim_run(&s, &cfg);
	assert_int_equal(s.last.action, MIG_ACT_GIVE_UP);
	assert_non_null(strstr(s.last.why, "giving up"));
	/* with a roomy maximum it stops anyway instead */
	cfg.downtime_max_ms = 100000;
	sim_run(&s, &cfg);
	assert_int_equal(s.last.action, MIG_ACT_STOP);
	assert_true(s.last.forced);
}

static void test_max_rounds(void **st)
{
	struct mig_policy_cfg cfg = cfg_auto;
	struct sim s = { .mem_pages = 65536, .link_Bps = 50000000, .dirty_pps = 40000,
			 .wss = 65536, .throttle_works = false };

	(void)st;
	cfg.max_rounds = 3;
	sim_run(&s, &cfg);
	assert_int_equal(s.rounds, 3);
	assert_int_equal(s.last.action, MIG_ACT_STOP);
	assert_true(s.last.forced);
	assert_non_null(strstr(s.last.why, "3 rounds"));
}

/* Whatever the guest and link do, the migration ends within max_rounds,
 * and an unforced stop always meets the target. */
static void test_always_ends(void **st)
{
	(void)st;
	rng = 2024;
	for (int i = 0; i < 3000; i++) {
		struct mig_policy_cfg cfg = cfg_auto;
		struct sim s = {
			.mem_pages = 256 + rnd() % 1000000,
			.link_Bps = 100000 + (uint64_t)rnd() * 10,
			.dirty_pps = rnd() % 2000000,
			.zero_pct = rnd() % 100,
			.throttle_works = rnd() & 1,
		};

		s.wss = 1 + rnd() % s.mem_pages;
		cfg.converge = rnd() & 1 ? MIG_CONVERGE_OFF : MIG_CONVERGE_AUTO;
		cfg.downtime_ms = 1 + rnd() % 2000;
		cfg.downtime_max_ms = rnd() & 1 ? 0 : 1 + rnd() % (cfg.downtime_ms + 5000);
		cfg.max_rounds = rnd() % 40;
		cfg.state_bytes = rnd() % 1000000;
		cfg.handover_us = rnd() % 500000;
		sim_run(&s, &cfg);
		assert_true(s.rounds <= (int)(cfg.max_rounds ? cfg.max_rounds : MIG_MAX_ROUNDS_DEFAULT));
		if (s.last.action == MIG_ACT_STOP && !s.last.forced)
			assert_true(s.last.downtime_us <= (uint64_t)cfg.downtime_ms * 1000);
		/* no stop, forced or not, expects more than downtime-max (a
		 * maximum below the target lowers the target) */
		if (s.last.action == MIG_ACT_STOP && cfg.downtime_max_ms &&
		    s.last.downtime_us > (uint64_t)cfg.downtime_max_ms * 1000)
			fail_msg("case %d: stop expecting %llu us over downtime-max %u ms (target %u)",
				 i, (unsigned long long)s.last.downtime_us, cfg.downtime_max_ms,
				 cfg.downtime_ms);
		if (s.last.action == MIG_ACT_GIVE_UP)
			assert_true(cfg.downtime_max_ms &&
				    s.last.downtime_us > (uint64_t)cfg.downtime_max_ms * 1000);
		if (cfg.converge == MIG_CONVERGE_OFF)
			assert_int_equal(s.nsteps, 0);
	}
}

/* ---- the rules ---- */

static void test_downtime_counts_fixed_costs(void **st)
{
	(void)st;
	/* 1 MB of state at 1 MB/s plus a 5 ms hand-over */
	assert_int_equal(mig_downtime_us(0, MIG_PAGE_WIRE, 1000000, 1000000, 5000), 1005000);
	/* plus 100 pages of 4105 bytes */
	assert_int_equal(mig_downtime_us(100, MIG_PAGE_WIRE, 1000000, 1000000, 5000),
			 1005000 + 410500);
	/* unmeasured link: never fits */
	assert_int_equal(mig_downtime_us(1, 1, 0, 0, 0), UINT64_MAX);
	assert_int_equal(mig_downtime_us(UINT64_MAX, MIG_PAGE_WIRE, 1, 1, 1), UINT64_MAX);

	/* the same costs make the policy keep going where pages alone would fit */
	{
		struct mig_policy_cfg cfg = { .downtime_ms = 100, .state_bytes = 0 };
		struct mig_round r = { .pages_sent = 1000, .bytes_sent = 1000 * MIG_PAGE_WIRE,
				       .elapsed_us = 1000000, .dirtied = 20 };
		struct mig_policy p;
		struct mig_decision d;

		mig_policy_init(&p, &cfg);
		mig_policy_round(&p, &r, &d);
		assert_int_equal(d.action, MIG_ACT_STOP);	/* 20 pages: 20 ms */
		cfg.handover_us = 90000;
		mig_policy_init(&p, &cfg);
		mig_policy_round(&p, &r, &d);
		assert_int_equal(d.action, MIG_ACT_NEXT_ROUND);	/* 20 + 90 > 100 */
		assert_int_equal(d.downtime_us, 20000 + 90000);
	}
}

/* Pages that cost little next to fixed costs over the target: more rounds
 * or a throttle cannot help, so the policy stops (saying so). */
static void test_fixed_costs_alone_over_target_stop(void **st)
{
	struct mig_policy_cfg cfg = { .downtime_ms = 10, .state_bytes = 0, .handover_us = 20000 };
	struct mig_round r = { .pages_sent = 1000, .bytes_sent = 1000 * MIG_PAGE_WIRE,
			       .elapsed_us = 100000, .dirtied = 2 };
	struct mig_policy p;
	struct mig_decision d;

	(void)st;
	mig_policy_init(&p, &cfg);
	mig_policy_round(&p, &r, &d);
	/* 2 pages at ~41 MB/s: 0.2 ms, under a tenth of 10 ms; 20 ms fixed */
	assert_int_equal(d.action, MIG_ACT_STOP);
	assert_true(d.forced);
	assert_true(d.downtime_us > 20000 && d.downtime_us < 21000);
	assert_non_null(strstr(d.why, "fixed costs"));
	assert_non_null(strstr(d.why, "stopping anyway"));
	assert_int_equal(p.throttle_pct, 0);
	/* with 100 pages (10 ms) left there is something to gain: go on */
	r.dirtied = 100;
	mig_policy_init(&p, &cfg);
	mig_policy_round(&p, &r, &d);
	assert_int_equal(d.action, MIG_ACT_NEXT_ROUND);
	/* downtime-max still rules: give up rather than exceed it */
	cfg.downtime_max_ms = 15;
	r.dirtied = 2;
	mig_policy_init(&p, &cfg);
	mig_policy_round(&p, &r, &d);
	assert_int_equal(d.action, MIG_ACT_GIVE_UP);
}

/*
 * An idle 256 MiB guest: round 0 scans all memory to send 11 pages, so its
 * rate (68 KB in 1.2 s) says nothing of the link.  Short rounds only raise
 * the estimate, which starts at MIG_LINK_PRIOR_BPS, and never passes the
 * bandwidth cap; a long round measures it for real.
 */
static void test_short_rounds_bound_the_link(void **st)
{
	struct mig_policy_cfg cfg = { .state_bytes = 10000, .handover_us = 3000 };
	struct mig_round idle = { .pages_sent = 65536, .zero_pages = 65525,
				  .bytes_sent = 68000, .elapsed_us = 1200000, .dirtied = 2 };
	struct mig_round quick = { .pages_sent = 10, .bytes_sent = 41000,
				   .elapsed_us = 10000, .dirtied = 2000 };
	struct mig_round big = { .pages_sent = 1000, .bytes_sent = 1000 * MIG_PAGE_WIRE,
				 .elapsed_us = 2000000, .dirtied = 2000 };
	struct mig_policy p;
	struct mig_decision d;

	(void)st;
	mig_policy_init(&p, &cfg);
	mig_policy_round(&p, &idle, &d);
	assert_int_equal(p.link_Bps, MIG_LINK_PRIOR_BPS);
	/* 2 pages + 10 KB state at 1 MB/s + 3 ms: fits 300 ms, stop now */
	assert_int_equal(d.action, MIG_ACT_STOP);
	assert_false(d.forced);
	assert_true(d.downtime_us < 25000);

	mig_policy_init(&p, &cfg);
	mig_policy_round(&p, &quick, &d);		/* 4.1 MB/s: raises */
	assert_int_equal(p.link_Bps, 4100000);
	mig_policy_round(&p, &idle, &d);		/* slow and short: keeps */
	assert_int_equal(p.link_Bps, 4100000);
	mig_policy_round(&p, &big, &d);			/* long: measures (2.05 MB/s) */
	assert_int_equal(p.link_Bps, 1000 * MIG_PAGE_WIRE / 2);
	mig_policy_round(&p, &idle, &d);		/* short again: no prior now */
	assert_int_equal(p.link_Bps, 1000 * MIG_PAGE_WIRE / 2);

	cfg.cap_Bps = 500000;				/* bandwidth=0.5 */
	mig_policy_init(&p, &cfg);
	mig_policy_round(&p, &quick, &d);
	assert_int_equal(p.link_Bps, 500000);
	mig_policy_round(&p, &idle, &d);
	assert_int_equal(p.link_Bps, 500000);
}

/* A few pages rewritten every round (timer, stack) on a slow link: the
 * set cannot shrink, so the policy stops instead of throttling. */
static void test_hot_set_stops_without_throttle(void **st)
{
	struct mig_policy_cfg cfg = { .downtime_ms = 40, .state_bytes = 16384,
				      .handover_us = 5000 };
	struct mig_round r0 = { .pages_sent = 4096, .zero_pages = 4000,
				.bytes_sent = 96 * MIG_PAGE_WIRE + 4000 * 9,
				.elapsed_us = 800000, .dirtied = 2 };
	struct mig_round r1 = { .pages_sent = 2, .bytes_sent = 2 * MIG_PAGE_WIRE,
				.elapsed_us = 400000, .dirtied = 2 };
	struct mig_policy p;
	struct mig_decision d;

	(void)st;
	mig_policy_init(&p, &cfg);
	mig_policy_round(&p, &r0, &d);
	/* 0.54 MB/s: 2 pages are 15 ms, fixed costs 35 ms: over 40, worth a round */
	assert_int_equal(d.action, MIG_ACT_NEXT_ROUND);
	mig_policy_round(&p, &r1, &d);
	assert_int_equal(d.action, MIG_ACT_STOP);
	assert_true(d.forced);
	assert_non_null(strstr(d.why, "hot set"));
	assert_int_equal(p.throttle_pct, 0);
}

static void test_rules(void **st)
{
	struct mig_round r = { .pages_sent = 100, .bytes_sent = 50 * MIG_PAGE_WIRE + 50 * 9 };

	(void)st;
	assert_int_equal(mig_rate(1000, 500000), 2000);
	assert_int_equal(mig_rate(1000, 0), 1000000000);
	assert_int_equal(mig_rate(UINT64_MAX / 10, 1000000), UINT64_MAX / 10);
	assert_int_equal(mig_ewma(0, 500), 500);
	assert_int_equal(mig_ewma(1000, 500), 750);
	assert_int_equal(mig_ewma(3, 3), 3);
	assert_int_equal(mig_transfer_us(1000, 1000), 1000000);
	assert_int_equal(mig_transfer_us(1, 3), 333334);
	assert_int_equal(mig_transfer_us(5, 0), UINT64_MAX);
	assert_int_equal(mig_page_bytes(&r, 0), MIG_PAGE_WIRE);
	assert_int_equal(mig_page_bytes(&r, 1), (50 * MIG_PAGE_WIRE + 450) / 100);
	r.dirtied = 89;
	assert_true(mig_round_shrank(&r));
	r.dirtied = 90;
	assert_false(mig_round_shrank(&r));
	assert_true(mig_outpaced(1000, 1000, 1000000));
	assert_false(mig_outpaced(999, 1000, 1000000));
	assert_false(mig_outpaced(1000, 1000, 0));
	assert_true(mig_outpaced(UINT64_MAX / 2, 4096, 1));
	assert_int_equal(mig_throttle_next(0), 20);
	assert_int_equal(mig_throttle_next(20), 40);
	assert_int_equal(mig_throttle_next(80), 90);
	assert_int_equal(mig_throttle_next(95), 99);
	assert_int_equal(mig_throttle_next(99), 99);
	/* the lowest step that slows the writer to half the link */
	assert_int_equal(mig_throttle_for(8000000, 16000000), 0);
	assert_int_equal(mig_throttle_for(8000001, 16000000), 20);
	assert_int_equal(mig_throttle_for(20000000, 16000000), 60);
	assert_int_equal(mig_throttle_for(160000000, 16000000), 95);
	assert_int_equal(mig_throttle_for(UINT64_MAX, 1), 99);
	assert_int_equal(mig_throttle_for(1, 0), 99);
	/* a CPU-bound vCPU (or one not measured yet): a share of the period */
	assert_int_equal(throttle_budget_ns(0, 10000, 0), 10000);
	assert_int_equal(throttle_budget_ns(40, 10000, 0), 6000);
	assert_int_equal(throttle_budget_ns(40, 10000, 10000), 6000);
	assert_int_equal(throttle_budget_ns(40, 10000, 25000), 6000);	/* capped demand */
	assert_int_equal(throttle_budget_ns(99, 10000, 0), 100);
	assert_int_equal(throttle_budget_ns(100, 10000, 0), 100);
	assert_int_equal(throttle_budget_ns(50, 199, 0), 99);
	/* a timer-paced one busy a tenth of the time: 20% bites at once */
	assert_int_equal(throttle_budget_ns(20, 10000, 1000), 800);
	assert_int_equal(throttle_budget_ns(90, 10000, 1000), 100);
	assert_int_equal(throttle_budget_ns(95, 10000, 1000), 100);	/* 1% floor */
	/* demand: per period, averaged; long halts count as idle periods */
	assert_int_equal(throttle_base_next(0, 3000, 10000, 10000), 3000);
	assert_int_equal(throttle_base_next(3000, 1000, 10000, 10000), 2000);
	assert_int_equal(throttle_base_next(0, 3000, 30000, 10000), 1000);
	assert_int_equal(throttle_base_next(0, 30000, 10000, 10000), 10000);	/* capped */
}

/* ---- pacing ---- */

static void test_pacing_holds_the_cap(void **st)
{
	struct mig_pace p;
	uint64_t sent = 0, Bps = 1000000;

	(void)st;
	mig_pace_init(&p, Bps, 0);
	assert_int_equal(p.burst, 20000);		/* 20 ms worth */
	for (uint64_t t = 0; t <= 10000000; t += 1000) {	/* 10 s in 1 ms steps */
		size_t n = mig_pace_allow(&p, t, 65536);

		mig_pace_take(&p, n);
		sent += n;
		assert_true(sent <= Bps * t / 1000000 + p.burst);
	}
	assert_true(sent >= 10 * Bps);
	assert_true(sent <= 10 * Bps + p.burst);
	/* drained: 1000 bytes need 1 ms */
	assert_int_equal(mig_pace_allow(&p, 10000000, 65536), 0);
	assert_int_equal(mig_pace_allow(&p, 10001000, 65536), 1000);
	mig_pace_take(&p, 1000);
	/* the clock going back gives nothing; a long idle gives one burst */
	assert_int_equal(mig_pace_allow(&p, 5000000, 100), 0);
	assert_int_equal(mig_pace_allow(&p, 3600000000ull, 1 << 30), p.burst);
}

/* Fractions of a byte per microsecond add up exactly. */
static void test_pacing_fractions(void **st)
{
	struct mig_pace p;
	uint64_t sent = 0;

	(void)st;
	mig_pace_init(&p, 3, 0);			/* 3 bytes per second */
	mig_pace_take(&p, mig_pace_allow(&p, 0, 1 << 20));
	for (uint64_t t = 1; t <= 100000000; t += 7777) {
		size_t n = mig_pace_allow(&p, t, 1);

		mig_pace_take(&p, n);
		sent += n;
	}
	assert_true(sent >= 299 && sent <= 300);
}

static void test_pacing_unlimited(void **st)
{
	struct mig_pace p;

	(void)st;
	mig_pace_init(&p, 0, 0);
	assert_int_equal(mig_pace_allow(&p, 0, 1u << 30), 1u << 30);
	mig_pace_take(&p, 1u << 30);
	assert_int_equal(mig_pace_allow(&p, 0, 1u << 30), 1u << 30);
	mig_pace_init(&p, UINT64_MAX, 0);		/* clamped, no overflow */
	assert_true(mig_pace_allow(&p, 10000000000ull, 1u << 30) > 0);
}

/* ---- admission ---- */

static const char *taken = "db";

static bool name_taken(void *ctx, const char *name)
{
	assert_ptr_equal(ctx, &taken);
	return !strcmp(name, taken);
}

static void host_init(struct mig_host *h)
{
	memset(h, 0, sizeof(*h));
	h->peer_allowed = true;
	h->cpu_baseline = mig_cpu_baseline(cpuid_guest);
	h->dev_version = 1;
	h->max_vcpus = 1;
	h->max_mem = 64ull << 30;
	h->free_bytes = 1ull << 30;
	h->tsc_hz = 2000000000;
	h->name_taken = name_taken;
	h->ctx = &taken;
}

static void hello_init(struct mig_hello *h)
{
	memset(h, 0, sizeof(*h));
	h->proto_version = MIG_PROTO_VERSION;
	h->cpu_state_version = MIG_CPU_STATE_VERSION;
	h->dev_version = 1;
	h->vcpus = 1;
	h->mem_size = 256ull << 20;
	h->cpu_baseline = mig_cpu_baseline(cpuid_guest);
	h->tsc_hz = 2001000000;
	h->weight = 256;
	strcpy(h->name, "web");
}

static void admit_case(void (*mut)(struct mig_hello *, struct mig_host *), uint32_t code,
		       const char *words)
{
	struct mig_hello h;
	struct mig_host host;
	struct mig_error e;

	hello_init(&h);
	host_init(&host);
	mut(&h, &host);
	assert_int_equal(mig_admit(&h, &host, &e), -EPERM);
	if (e.code != code || !strstr(e.msg, words))
		fail_msg("code %u '%s', wanted %u '%s'", e.code, e.msg, code, words);
}

static void m_peer(struct mig_hello *h, struct mig_host *x) { (void)h; x->peer_allowed = false; }
static void m_busy(struct mig_hello *h, struct mig_host *x) { (void)h; x->busy = true; }
static void m_proto(struct mig_hello *h, struct mig_host *x) { (void)x; h->proto_version = MIG_PROTO_VERSION + 1; }
static void m_cpuv(struct mig_hello *h, struct mig_host *x) { (void)x; h->cpu_state_version = 9; }
static void m_devv(struct mig_hello *h, struct mig_host *x) { (void)h; x->dev_version = 2; }
static void m_base(struct mig_hello *h, struct mig_host *x) { (void)x; h->cpu_baseline ^= 1; }
static void m_vcpus(struct mig_hello *h, struct mig_host *x) { (void)x; h->vcpus = 2; }
static void m_mem(struct mig_hello *h, struct mig_host *x) { h->mem_size = 2ull << 30; x->max_mem = 1ull << 30; }
static void m_name(struct mig_hello *h, struct mig_host *x) { (void)x; strcpy(h->name, "db"); }
static void m_free(struct mig_hello *h, struct mig_host *x) { (void)h; x->free_bytes = 256ull << 20; }
static void m_rdcl(struct mig_hello *h, struct mig_host *x) { h->arch_caps = ARCH_CAP_RDCL_NO; x->arch_caps = 0; }

static void test_admission(void **st)
{
	struct mig_hello h;
	struct mig_host host;
	struct mig_error e;

	(void)st;
	admit_case(m_peer, MIG_E_NOT_ALLOWED, "does not accept");
	admit_case(m_busy, MIG_E_BUSY, "already");
	admit_case(m_proto, MIG_E_VERSION, "this host v10");
	admit_case(m_cpuv, MIG_E_VERSION, "cpu v9");
	admit_case(m_devv, MIG_E_VERSION, "device v1");
	admit_case(m_base, MIG_E_BASELINE, "baseline");
	admit_case(m_vcpus, MIG_E_LIMIT, "2 vCPUs");
	admit_case(m_mem, MIG_E_LIMIT, "2048 MiB");
	admit_case(m_name, MIG_E_NAME_TAKEN, "'db'");
	admit_case(m_free, MIG_E_NO_MEMORY, "free");
	admit_case(m_rdcl, MIG_E_BASELINE, "RDCL_NO (not affected by Meltdown); this host's CPU "
		   "is affected");

	hello_init(&h);
	host_init(&host);
	assert_int_equal(mig_admit(&h, &host, &e), 0);
	assert_int_equal(e.code, MIG_OK);
	assert_string_equal(e.msg, "");			/* 500 ppm: no warning */
	host.tsc_hz = 2100000000;
	assert_int_equal(mig_admit(&h, &host, &e), 0);
	assert_non_null(strstr(e.msg, "TSC will be scaled"));
	/* memory: the guest and its overheads */
	assert_true(mig_mem_needed(256ull << 20) > (256ull << 20));
	host.free_bytes = mig_mem_needed(h.mem_size);
	assert_int_equal(mig_admit(&h, &host, &e), 0);
	host.free_bytes--;
	assert_int_equal(mig_admit(&h, &host, &e), -EPERM);
	/* a guest told it is not affected goes to a host that is not either;
	 * one that was told nothing goes anywhere */
	host_init(&host);
	host.arch_caps = ARCH_CAP_RDCL_NO;
	h.arch_caps = ARCH_CAP_RDCL_NO;
	assert_int_equal(mig_admit(&h, &host, &e), 0);
	h.arch_caps = 0;
	assert_int_equal(mig_admit(&h, &host, &e), 0);
	host.arch_caps = 0;
	assert_int_equal(mig_admit(&h, &host, &e), 0);
}

/* ---- TSC ---- */

static void test_tsc_rule(void **st)
{
	(void)st;
	assert_int_equal(mig_tsc_advance(1000, 2000000000, 1500000000), 1000 + 3000000000ull);
	assert_int_equal(mig_tsc_advance(0, 3000000000ull, 1), 3);
	assert_int_equal(mig_tsc_advance(0, MIG_TSC_HZ_MAX, 999999999), 9999999990ull);
	assert_int_equal(mig_tsc_advance(0, MIG_TSC_HZ_MAX, MIG_PAUSED_NS_MAX),
			 86400ull * MIG_TSC_HZ_MAX);
	assert_int_equal(mig_tsc_advance(5, 2000000000, 0), 5);
	/* paused 42 ms at the source, 3 ms more here after COMMIT came */
	assert_int_equal(mig_tsc_resume(1ull << 40, 2000000000, 42000000, 3000000),
			 (1ull << 40) + 90000000);
	/* the device clock follows the same rule at 1 GHz */
	assert_int_equal(mig_tsc_resume(777, 1000000000, 42000000, 3000000), 777 + 45000000);
	assert_int_equal(mig_ppm_diff(2000000000, 2001000000), 500);
	assert_int_equal(mig_ppm_diff(2001000000, 2000000000), 499);
	assert_int_equal(mig_ppm_diff(0, 0), 0);
	assert_int_equal(mig_ppm_diff(0, 1), UINT64_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_silence_scales_with_rtt_and_size),
		cmocka_unit_test(test_quiet_guest_converges),
		cmocka_unit_test(test_idle_guest_stops_after_round0),
		cmocka_unit_test(test_fast_dirtier_is_throttled),
		cmocka_unit_test(test_throttle_exhausted_stops_anyway),
		cmocka_unit_test(test_three_times_memory_stops),
		cmocka_unit_test(test_early_sample_only_when_saturated),
		cmocka_unit_test(test_dirty_rate_over_a_wait),
		cmocka_unit_test(test_rounds_that_shrink_go_on),
		cmocka_unit_test(test_converge_off_stops_anyway),
		cmocka_unit_test(test_downtime_max_gives_up),
		cmocka_unit_test(test_max_rounds),
		cmocka_unit_test(test_always_ends),
		cmocka_unit_test(test_downtime_counts_fixed_costs),
		cmocka_unit_test(test_fixed_costs_alone_over_target_stop),
		cmocka_unit_test(test_hot_set_stops_without_throttle),
		cmocka_unit_test(test_short_rounds_bound_the_link),
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_pacing_holds_the_cap),
		cmocka_unit_test(test_pacing_fractions),
		cmocka_unit_test(test_pacing_unlimited),
		cmocka_unit_test(test_admission),
		cmocka_unit_test(test_tsc_rule),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
