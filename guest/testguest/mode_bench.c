/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * testguest modes "exits" and "work": the two measurements that compare
 * a run under ferry with one directly on QEMU.
 *   exits [n=N]       N CPUIDs, N OUTs and N INs to port 0x80, each timed
 *   work [n=N | secs=S]  deterministic integer work timed by the PIT
 */
#include "guest/testguest/arch.h"
#include "guest/testguest/tg.h"

#define POST_PORT 0x80
#define WORK_UNIT_ITERS 4096

static void op_cpuid(uint32_t i)
{
	(void)cpuid(i & 1, 0);
}

static void op_out(uint32_t i)
{
	outb(POST_PORT, (uint8_t)i);
}

static void op_in(uint32_t i)
{
	(void)i;
	(void)inb(POST_PORT);
}

/* Exits per second from the PIT when the run was long enough to count
 * ticks well, else from the TSC calibrated against the PIT. */
static void print_rate(const char *name, uint32_t n, uint32_t ticks,
		       uint64_t cycles, uint64_t tsc_per_tick)
{
	uint64_t per_sec = 0;
	const char *src = "pit";

	if (ticks >= TG_HZ / 2) {
		per_sec = (uint64_t)n * TG_HZ / ticks;
	} else if (cycles && tsc_per_tick) {
		per_sec = (uint64_t)n * tsc_per_tick * TG_HZ / cycles;
		src = "tsc";
	}
	tg_printf("TG exits %s per_sec=%llu src=%s\n", name, per_sec, src);
}

static void measure(const char *name, void (*op)(uint32_t), uint32_t n,
		    uint64_t tsc_per_tick)
{
	uint32_t t0, ticks;
	uint64_t c0, cycles;

	tg_wait_tick_edge();
	t0 = tg_ticks;
	c0 = rdtsc();
	for (uint32_t i = 0; i < n; i++)
		op(i);
	cycles = rdtsc() - c0;
	ticks = tg_ticks - t0;
	tg_printf("TG exits %s n=%u cycles_per=%llu ticks=%u\n", name, n,
		  n ? cycles / n : 0, ticks);
	print_rate(name, n, ticks, cycles, tsc_per_tick);
}

void mode_exits(void)
{
	uint32_t n = tg_opt_u32("n", 10000);
	uint64_t tpt = tg_tsc_per_tick();

	tg_printf("TG exits start n=%u tsc_per_tick=%llu\n", n, tpt);
	measure("cpuid", op_cpuid, n, tpt);
	measure("io", op_out, n, tpt);
	measure("io_in", op_in, n, tpt);
	tg_printf("TG exits done\n");
	tg_poweroff();
}

/* One unit of work: xorshift and multiply, no memory traffic. */
static uint32_t work_unit(uint32_t *state)
{
	uint32_t acc = 0;

	for (int i = 0; i < WORK_UNIT_ITERS; i++) {
		uint32_t x = tg_xorshift32(state);

		acc = acc * 31 + (x ^ (x >> 7)) * 0x9E3779B1u;
	}
	return acc;
}

void mode_work(void)
{
	uint32_t n = tg_opt_u32("n", 10000), secs = tg_opt_u32("secs", 0);
	uint32_t state = 0x12345678, sum = 0, units = 0, t0, ticks;

	tg_printf("TG work start n=%u secs=%u iters_per_unit=%u\n",
		  secs ? 0 : n, secs, WORK_UNIT_ITERS);
	tg_wait_tick_edge();
	t0 = tg_ticks;
	while (secs ? tg_ticks - t0 < secs * TG_HZ : units < n) {
		sum ^= work_unit(&state) + units;
		units++;
	}
	ticks = tg_ticks - t0;
	tg_printf("TG work units=%u ticks=%u rate=%llu sum=0x%08x\n", units,
		  ticks, ticks ? (uint64_t)units * TG_HZ / ticks : 0, sum);
	tg_poweroff();
}
