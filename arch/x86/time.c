/* SPDX-License-Identifier: BSD-2-Clause */
/* The TSC's rate, measured once at boot against the PIT (hv/lib/time.c
 * turns TSC readings into time since boot). */
#include "hv/lib/time.h"
#include "arch/x86/time.h"
#include "arch/x86/cpu.h"

/* PIT channel 2, gated by port 0x61, counts at 1193182 Hz. */
static void pit_oneshot(unsigned int ms)
{
	uint32_t count = 1193182u * ms / 1000;

	outb(0x61, (inb(0x61) & ~0x02) | 0x01);	/* gate on, speaker off */
	outb(0x43, 0xb0);			/* channel 2, lo/hi, mode 0 */
	outb(0x42, count & 0xff);
	outb(0x42, count >> 8);
	outb(0x61, inb(0x61) & ~0x01);		/* restart the count */
	outb(0x61, inb(0x61) | 0x01);
}

/* Time 0 is now; the TSC's rate is measured against 50 ms of the PIT. */
void time_init(void)
{
	const unsigned int ms = 50;
	uint64_t boot = rdtsc(), t0;

	pit_oneshot(ms);
	t0 = rdtsc();
	while (!(inb(0x61) & 0x20))		/* OUT2 goes high at 0 */
		cpu_relax();
	time_set_tsc(boot, (rdtsc() - t0) * 1000 / ms);
}
