/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * arch/x86/tickwake.h on simulated time: a CPU's one-shot timer serving
 * its tick and a guest's timer.  The simulation fires the timer where
 * tickwake_next says, and a guest timer of a given period asks for its
 * next wake after each one it got, as vcpu_run does at its next entry.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "arch/x86/tickwake.h"

#define PERIOD 4000000ull	/* TSC cycles per tick: 250 Hz at 1 GHz */

struct sim {
	struct tickwake t;
	uint64_t now;
	unsigned int fires, ticks, wakes;
	uint64_t max_tick_gap, last_tick;
	uint64_t max_wake_late;
};

/* Run for `len` cycles; the guest's timer is due every `gp` cycles from
 * `phase` (gp 0: no guest timer). */
static void run(struct sim *s, uint64_t len, uint64_t gp, uint64_t phase)
{
	uint64_t due = gp ? phase : 0, end = s->now + len;

	s->t = (struct tickwake){ .tick_due = s->now + PERIOD };
	s->last_tick = s->now;
	if (gp)
		tickwake_ask(&s->t, due, PERIOD);
	while (s->now < end) {
		uint64_t at = tickwake_next(&s->t, PERIOD);

		assert_true(at >= s->now);
		s->now = at;
		s->fires++;
		if (tickwake_fired(&s->t, s->now, PERIOD)) {
			s->ticks++;
			if (s->now - s->last_tick > s->max_tick_gap)
				s->max_tick_gap = s->now - s->last_tick;
			s->last_tick = s->now;
		}
		if (gp && s->now >= due) {	/* served: the guest's next */
			s->wakes++;
			if (s->now - due > s->max_wake_late)
				s->max_wake_late = s->now - due;
			due += gp;
			if (due <= s->now)	/* missed periods merge, as the PIT's */
				due += (s->now - due) / gp * gp + gp;
			tickwake_ask(&s->t, due, PERIOD);
		}
	}
}

/* No guest timer: one interrupt a tick, every tick on time. */
static void test_ticks_alone(void **state)
{
	struct sim s = { .now = 1000 };

	(void)state;
	run(&s, 250 * PERIOD, 0, 0);
	assert_int_equal(s.fires, 250);
	assert_int_equal(s.ticks, 250);
	assert_true(s.max_tick_gap == PERIOD);
}

/* A guest timer at the tick's rate, at any phase: after the first period
 * the two fall in step, one interrupt a period; the guest's timer is
 * never late, and a tick waits at most the slack. */
static void test_guest_at_the_tick_rate_costs_one_interrupt(void **state)
{
	(void)state;
	for (uint64_t phase = 1; phase < 2 * PERIOD; phase += PERIOD / 7) {
		struct sim s = { .now = 0 };

		run(&s, 250 * PERIOD, PERIOD, phase);
		assert_true(s.fires <= 252);
		assert_true(s.wakes >= 249);
		assert_true(s.ticks >= 245 && s.ticks <= 252);
		assert_true(s.max_wake_late == 0);
		assert_true(s.max_tick_gap <= PERIOD + TICKWAKE_SLACK(PERIOD));
	}
}

/* A guest timer four times as fast: every one of its wakes on time, the
 * ticks ride on some of them, at most twice as often as alone. */
static void test_fast_guest_timer(void **state)
{
	struct sim s = { .now = 0 };

	(void)state;
	run(&s, 250 * PERIOD, PERIOD / 4, 12345);
	assert_true(s.wakes >= 999);
	assert_true(s.fires <= s.wakes + 2);
	assert_true(s.max_wake_late == 0);
	assert_true(s.ticks >= 200 && s.ticks <= 501);
	assert_true(s.max_tick_gap <= PERIOD + TICKWAKE_SLACK(PERIOD));
}

/* A slow guest timer (every 2.5 ticks): ticks on their own in between,
 * some waiting for a wake, none more than the slack. */
static void test_slow_guest_timer(void **state)
{
	struct sim s = { .now = 0 };

	(void)state;
	run(&s, 250 * PERIOD, PERIOD * 5 / 2, 777);
	assert_true(s.wakes >= 99);
	assert_true(s.max_wake_late == 0);
	assert_true(s.ticks >= 250 * 2 / 3 && s.ticks <= 252);
	assert_true(s.fires < s.ticks + s.wakes);
	assert_true(s.max_tick_gap <= PERIOD + TICKWAKE_SLACK(PERIOD));
}

/* A wake no longer wanted fires once and is gone; a later ask for an
 * earlier time wins, a later one does not. */
static void test_ask_keeps_the_earliest(void **state)
{
	struct tickwake t = { .tick_due = 10 * PERIOD };

	(void)state;
	tickwake_ask(&t, 9 * PERIOD, PERIOD);
	tickwake_ask(&t, 9 * PERIOD + 5, PERIOD);
	assert_true(t.wake == 9 * PERIOD);
	tickwake_ask(&t, 8 * PERIOD, PERIOD);
	assert_true(tickwake_next(&t, PERIOD) == 8 * PERIOD);
	assert_false(tickwake_fired(&t, 8 * PERIOD, PERIOD));	/* no tick yet */
	assert_true(t.wake == 0);
	assert_true(tickwake_next(&t, PERIOD) == 10 * PERIOD);
	/* just after the tick, within the slack: the tick waits for it */
	tickwake_ask(&t, 10 * PERIOD + TICKWAKE_SLACK(PERIOD), PERIOD);
	assert_true(tickwake_next(&t, PERIOD) == 10 * PERIOD + TICKWAKE_SLACK(PERIOD));
	assert_true(tickwake_fired(&t, 10 * PERIOD + TICKWAKE_SLACK(PERIOD), PERIOD));
	assert_true(t.wake == 0);
	/* past the slack: the tick first, the wake kept for its time */
	tickwake_ask(&t, t.tick_due + TICKWAKE_SLACK(PERIOD) + 1, PERIOD);
	assert_true(tickwake_next(&t, PERIOD) == t.tick_due);
}

/* A guest timer asking every 10 us: the CPU is woken at most every
 * minimum gap, each wake late by less than it. */
static void test_wakes_have_a_minimum_gap(void **state)
{
	struct sim s = { .now = 0 };

	(void)state;
	run(&s, 250 * PERIOD, PERIOD / 400, 5);
	assert_true(s.fires <= 250 * 40 + 2);
	assert_true(s.max_wake_late < TICKWAKE_MIN_GAP(PERIOD));
	assert_true(s.ticks >= 250 * 2 / 3 && s.ticks <= 501);
	assert_true(s.max_tick_gap <= PERIOD + TICKWAKE_SLACK(PERIOD));
}

/* A tick taken with a wake half a period early is the next grid's start
 * (the next a period later); without a wake a tick is not taken early. */
static void test_tick_rephases_and_is_early_only_with_a_wake(void **state)
{
	struct tickwake t = { .tick_due = 10 * PERIOD };

	(void)state;
	assert_false(tickwake_fired(&t, 10 * PERIOD - PERIOD / 4, PERIOD));	/* no wake */
	assert_true(t.tick_due == 10 * PERIOD);
	tickwake_ask(&t, 10 * PERIOD - PERIOD / 4, PERIOD);
	assert_true(tickwake_fired(&t, 10 * PERIOD - PERIOD / 4, PERIOD));
	assert_true(t.tick_due == 11 * PERIOD - PERIOD / 4);
	assert_true(t.wake == 0 && t.woke == 10 * PERIOD - PERIOD / 4);
	/* late: the next is a period after this one, not on the old grid */
	assert_true(tickwake_fired(&t, 11 * PERIOD, PERIOD));
	assert_true(t.tick_due == 12 * PERIOD);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ticks_alone),
		cmocka_unit_test(test_guest_at_the_tick_rate_costs_one_interrupt),
		cmocka_unit_test(test_fast_guest_timer),
		cmocka_unit_test(test_slow_guest_timer),
		cmocka_unit_test(test_ask_keeps_the_earliest),
		cmocka_unit_test(test_wakes_have_a_minimum_gap),
		cmocka_unit_test(test_tick_rephases_and_is_early_only_with_a_wake),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
