/* SPDX-License-Identifier: BSD-2-Clause */
/* Time since boot from the TSC, calibrated once by apic_calibrate(). */
#include "hv/time.h"
#include "arch/x86/cpu.h"

static uint64_t tsc_boot, tsc_freq;


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
	uint64_t t0;

	tsc_boot = rdtsc();
	pit_oneshot(ms);
	t0 = rdtsc();
	while (!(inb(0x61) & 0x20))		/* OUT2 goes high at 0 */
		cpu_relax();
	tsc_freq = (rdtsc() - t0) * 1000 / ms;
}

uint64_t tsc_hz(void)
{
	return tsc_freq;
}

uint64_t time_now_ns(void)
{
	if (!tsc_freq)
		return 0;
	unsigned __int128 t = (unsigned __int128)(rdtsc() - tsc_boot) * 1000000000u;
	return (uint64_t)(t / tsc_freq);
}

uint64_t time_now_us(void)
{
	return time_now_ns() / 1000;
}

void udelay(uint64_t us)
{
	uint64_t end = rdtsc() + tsc_freq / 1000000 * us;

	while ((int64_t)(rdtsc() - end) < 0)
		cpu_relax();
}
