/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * testguest mode "heartbeat": sleeps on the 100 Hz timer and prints
 *   TG hb tick=T tsc=0x...
 * every 10 ticks (100 ms; every=N changes it), forever.  A harness reads
 * the gaps between lines (downtime) and the TSC (monotonic, rate).
 *   heartbeat [every=TICKS] [count=N]
 *
 * testguest mode "tickrate": how closely the PIT's interrupts follow its
 * rate when it runs fast.  It measures the TSC against 10 ticks at 100
 * Hz, sets the PIT to hz= (1000), takes count= (500) ticks, halting
 * between them, and prints the TSC time between consecutive ones:
 *   TG tickrate hz=H ticks=N median_us=M p90_us=P rate_hz=R
 * (R: ticks taken per second of TSC).  A hypervisor that serves a halted
 * guest's timer only at its own coarser tick shows that tick as M.
 *   tickrate [hz=HZ] [count=N]
 */
#include "guest/testguest/arch.h"
#include "guest/testguest/tg.h"

void mode_heartbeat(void)
{
	uint32_t every = tg_opt_u32("every", 10);
	uint32_t count = tg_opt_u32("count", 0);
	uint32_t start, next, now;

	if (every == 0)
		every = 1;
	tg_wait_tick_edge();
	start = tg_ticks;
	next = every;
	for (uint32_t n = 1; !count || n <= count; n++) {
		while (tg_ticks - start < next)
			tg_wait_tick_edge();
		now = tg_ticks - start;
		tg_printf("TG hb tick=%u tsc=0x%llx\n", now, rdtsc());
		/* After a stall, resume on the grid instead of catching up. */
		next = now - now % every + every;
	}
	tg_poweroff();
}

#define TICKRATE_MAX 2000

static uint32_t intervals[TICKRATE_MAX];

static uint32_t percentile(uint32_t *v, uint32_t n, uint32_t pct)
{
	for (uint32_t i = 1; i < n; i++) /* insertion sort: n is small */
		for (uint32_t j = i; j && v[j - 1] > v[j]; j--) {
			uint32_t t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return v[(n - 1) * pct / 100];
}

void mode_tickrate(void)
{
	uint32_t hz = tg_opt_u32("hz", 1000), count = tg_opt_u32("count", 500);
	uint64_t per_tick = tg_tsc_per_tick(), per_us = per_tick * TG_HZ / 1000000, t0, last;

	if (hz < 20 || hz > 10000 || count < 2 || count > TICKRATE_MAX || !per_us) {
		tg_printf("TG FAIL tickrate: hz 20..10000, count 2..%u\n", TICKRATE_MAX);
		tg_poweroff();
	}
	tg_timer_hz(hz);
	tg_wait_tick_edge();
	t0 = last = rdtsc();
	for (uint32_t i = 0; i < count; i++) {
		uint64_t now;

		tg_wait_tick_edge();
		now = rdtsc();
		intervals[i] = (uint32_t)((now - last) / per_us);
		last = now;
	}
	tg_timer_hz(TG_HZ);
	tg_printf("TG tickrate hz=%u ticks=%u median_us=%u p90_us=%u rate_hz=%u\n", hz, count,
		  percentile(intervals, count, 50), percentile(intervals, count, 90),
		  (uint32_t)((uint64_t)count * 1000000 / ((last - t0) / per_us)));
	tg_poweroff();
}
