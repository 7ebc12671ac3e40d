/* SPDX-License-Identifier: BSD-2-Clause */
/* Time since boot from the TSC, calibrated once by apic_calibrate(). */
#include "hv/time.h"
#include "arch/x86/cpu.h"

static uint64_t tsc_boot, tsc_freq;


void time_init(void)
{
	tsc_boot = rdtsc();
}

void time_set_tsc_hz(uint64_t hz)
{
	tsc_freq = hz;
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
