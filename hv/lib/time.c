/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Time since boot from the TSC.  The platform measures the TSC's rate once
 * (arch/x86/time.c, against the PIT) and hands it here with time_set_tsc().
 */
#include "hv/lib/time.h"

static uint64_t tsc_boot, tsc_freq;

static inline uint64_t read_tsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

void time_set_tsc(uint64_t boot_tsc, uint64_t hz)
{
	tsc_boot = boot_tsc;
	tsc_freq = hz;
}

uint64_t tsc_hz(void)
{
	return tsc_freq;
}

uint64_t time_ns_at(uint64_t tsc)
{
	if (!tsc_freq)
		return 0;
	unsigned __int128 t = (unsigned __int128)(tsc - tsc_boot) * 1000000000u;
	return (uint64_t)(t / tsc_freq);
}

uint64_t time_now_ns(void)
{
	return time_ns_at(read_tsc());
}

uint64_t time_now_us(void)
{
	return time_now_ns() / 1000;
}

void udelay(uint64_t us)
{
	uint64_t end = read_tsc() + tsc_freq / 1000000 * us;

	while ((int64_t)(read_tsc() - end) < 0)
		__builtin_ia32_pause();
}
