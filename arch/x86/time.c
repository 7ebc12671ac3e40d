/* SPDX-License-Identifier: BSD-2-Clause */
/* The TSC's rate, measured once at boot against the PIT (hv/lib/time.c
 * turns TSC readings into time since boot). */
#include <stdbool.h>
#include "hv/lib/log.h"
#include "hv/lib/time.h"
#include "arch/x86/time.h"
#include "arch/x86/cpu.h"

#define CAL_MS		50	/* one measurement's length */
#define CAL_TRIES	20	/* measurements at most (1 s, on a host held up at each) */
#define CAL_PPM		20	/* the uncertainty that ends the search */

/* PIT channel 2, gated by port 0x61, counts at 1193182 Hz: load ms of it in
 * mode 0 with its gate off (measure() opens the gate to start it). */
static void pit_oneshot(unsigned int ms)
{
	uint32_t count = 1193182u * ms / 1000;

	outb(0x61, inb(0x61) & ~0x03);		/* gate off, speaker off */
	outb(0x43, 0xb0);			/* channel 2, lo/hi, mode 0 */
	outb(0x42, count & 0xff);
	outb(0x42, count >> 8);
}

/*
 * TSC ticks in ms of the PIT.  The count starts between two TSC readings
 * and its end (OUT2 high) is seen between two others; a CPU held up there
 * (an emulator's thread preempted, an SMI) widens them.  *slack is how many
 * ticks the answer may be off by.
 */
static uint64_t measure(unsigned int ms, uint64_t *slack)
{
	uint64_t a, b, lo, hi;

	pit_oneshot(ms);
	a = rdtsc();
	outb(0x61, inb(0x61) | 0x01);		/* gate on: the count starts */
	b = lo = rdtsc();
	for (;;) {
		uint64_t t = rdtsc();

		if (inb(0x61) & 0x20) {		/* OUT2 goes high at 0 */
			hi = rdtsc();
			break;
		}
		lo = t;
	}
	*slack = (hi - lo) + (b - a);
	return ((lo + hi) - (a + b)) / 2;
}

static bool precise(uint64_t ticks, uint64_t slack)
{
	return slack <= ticks / (1000000 / CAL_PPM);
}

/*
 * Time 0 is now.  The TSC's rate is the measurement with the least slack,
 * of up to CAL_TRIES, stopping at one within CAL_PPM: two hosts on the
 * same clock must agree within the 250 ppm that decides whether a migrated
 * guest's TSC needs scaling (hv/tsc.c).
 */
void time_init(void)
{
	uint64_t boot = rdtsc(), best = 0, best_slack = UINT64_MAX;

	for (int i = 0; i < CAL_TRIES && !precise(best, best_slack); i++) {
		uint64_t slack, ticks = measure(CAL_MS, &slack);

		if (slack < best_slack) {
			best = ticks;
			best_slack = slack;
		}
	}
	time_set_tsc(boot, best * 1000 / CAL_MS);
	if (!precise(best, best_slack))
		pr_warn("timer: the TSC's rate is uncertain by %lu ppm (this CPU was held up "
			"while it was measured)",
			(uint64_t)((unsigned __int128)best_slack * 1000000 / (best ? best : 1)));
}
