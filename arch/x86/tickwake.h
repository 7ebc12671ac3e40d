/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * When a CPU's one-shot APIC timer fires next (arch/x86/apic.c), as pure
 * arithmetic on TSC values so that it is unit-tested
 * (tests/unit/test_tickwake.c).  Two things want the timer: the CPU's own
 * tick (TIMER_HZ, for the scheduler's slices) and a wake that the core
 * asks for (a guest's timer falling due).  A tick may ride on a wake that
 * comes up to half its period before it, or wait as long for one that
 * comes after it, and the next tick is a period after the one taken: a
 * guest whose timer runs at the tick's rate (Linux's 250 Hz) costs one
 * interrupt a period, not two, as the tick falls in step with it.  Ticks
 * are then half a period to one and a half apart: a guest timer between
 * two thirds of the tick's rate and twice it pulls the ticks to its own
 * rate, a faster one to at most twice the tick's, each tick on one of its
 * wakes.  A wake is late only by the minimum gap below.
 */
#ifndef FERRY_ARCH_X86_TICKWAKE_H
#define FERRY_ARCH_X86_TICKWAKE_H

#include <stdbool.h>
#include <stdint.h>

struct tickwake {
	uint64_t tick_due;	/* the next tick */
	uint64_t wake;		/* the wake asked for; 0: none */
	uint64_t woke;		/* when the last wake was served */
};

#define TICKWAKE_SLACK(period)	((period) / 2)	/* how long a tick waits, or comes early */
#define TICKWAKE_NEAR(period)	((period) / 64)	/* this close is now */
/* Wakes come at least this far apart (100 us at 250 Hz): a guest's timer
 * set to fire every few microseconds, its interrupt masked, must not keep
 * an idle CPU waking at that rate.  One that is served wants it anyway,
 * and pays for it in its own exits. */
#define TICKWAKE_MIN_GAP(period) ((period) / 40)

/* When to fire: the wake when it comes first or within the slack after the
 * tick (the tick then waits for it), else the tick. */
static inline uint64_t tickwake_next(const struct tickwake *t, uint64_t period)
{
	if (t->wake && t->wake <= t->tick_due + TICKWAKE_SLACK(period))
		return t->wake;
	return t->tick_due;
}

/* The timer fired at now: true if a tick is taken, the next then a period
 * from now.  A tick is taken when it is due (or nearly: the TSC and the
 * APIC timer may differ by a little), or with a wake that is due when the
 * tick would come within the slack; the wake is then served and
 * forgotten. */
static inline bool tickwake_fired(struct tickwake *t, uint64_t now, uint64_t period)
{
	bool woke = t->wake && t->wake <= now + TICKWAKE_NEAR(period);
	bool tick = now + (woke ? TICKWAKE_SLACK(period) : TICKWAKE_NEAR(period)) >= t->tick_due;

	if (tick)
		t->tick_due = now + period;
	if (woke) {
		t->wake = 0;
		t->woke = now;
	}
	return tick;
}

/* A wake at `at` (no sooner than the minimum gap after the last one): the
 * earlier of it and the one held is kept.  One that is no longer wanted
 * costs one interrupt at most, after which it is gone. */
static inline void tickwake_ask(struct tickwake *t, uint64_t at, uint64_t period)
{
	if (t->woke && at < t->woke + TICKWAKE_MIN_GAP(period))
		at = t->woke + TICKWAKE_MIN_GAP(period);
	if (!t->wake || at < t->wake)
		t->wake = at;
}

#endif
