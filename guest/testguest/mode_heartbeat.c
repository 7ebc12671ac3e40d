/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * testguest mode "heartbeat": sleeps on the 100 Hz timer and prints
 *   TG hb tick=T tsc=0x...
 * every 10 ticks (100 ms; every=N changes it), forever.  A harness reads
 * the gaps between lines (downtime) and the TSC (monotonic, rate).
 *   heartbeat [every=TICKS] [count=N]
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
