/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * testguest modes "exits" and "work": the two measurements that compare
 * a run under ferry with one directly on QEMU.
 *   exits [n=N]       N CPUIDs, N OUTs and N INs to port 0x80, each timed
 *   work [n=N | secs=S]  deterministic integer work timed by the PIT
 *   share [secs=S]    the same work in short chunks, each timed by the
 *                     TSC, to see how much of the CPU the guest got
 */
#include "guest/testguest/arch.h"
#include "guest/testguest/tg.h"

#define POST_PORT 0x80
#define WORK_UNIT_ITERS 4096
#define SHARE_CHUNK_ITERS 64	/* a chunk takes well under SHARE_RUN_US */
#define SHARE_RUN_US 8		/* a longer gap between chunks left the guest */
#define SHARE_AWAY_US 1000	/* one this long was another vCPU's turn */

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
uint32_t tg_work_unit(uint32_t *state)
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
		sum ^= tg_work_unit(&state) + units;
		units++;
	}
	ticks = tg_ticks - t0;
	tg_printf("TG work units=%u ticks=%u rate=%llu sum=0x%08x\n", units,
		  ticks, ticks ? (uint64_t)units * TG_HZ / ticks : 0, sum);
	tg_poweroff();
}

/* Where the guest's time went, in TSC cycles since the start. */
struct share {
	uint64_t run, exit, away;	/* in chunks; in short gaps; in long ones */
	uint32_t chunks, exits, aways;
};

static void share_count(struct share *sh, uint64_t d, uint64_t per_us)
{
	if (d < SHARE_RUN_US * per_us) {
		sh->run += d;
		sh->chunks++;
	} else if (d < SHARE_AWAY_US * per_us) {
		sh->exit += d;
		sh->exits++;
	} else {
		sh->away += d;
		sh->aways++;
	}
}

/*
 * Chunks of tg_work_unit's loop between TSC reads.  A gap between two reads
 * longer than a chunk is time the guest did not run: short ones are its
 * exits (timer interrupts), long ones another vCPU's turn on the CPU.
 * Once a second (by the TSC), cumulative since the start:
 *   TG share sec=K tsc=C chunks=N run=C exit=C exits=N away=C aways=N
 * The time to print a line counts as exit time.
 */
void mode_share(void)
{
	uint32_t secs = tg_opt_u32("secs", 0), state = 0x12345678, sum = 0;
	uint64_t tpt = tg_tsc_per_tick(), per_us = tpt * TG_HZ / 1000000;
	uint64_t t0, prev, now, next;
	struct share sh = { 0 };

	per_us = per_us ? per_us : 1;
	tg_printf("TG share start tsc_per_tick=%llu chunk_iters=%u\n", tpt,
		  SHARE_CHUNK_ITERS);
	t0 = prev = rdtsc();
	next = t0 + tpt * TG_HZ;
	for (uint32_t sec = 1; !secs || sec <= secs;) {
		for (int i = 0; i < SHARE_CHUNK_ITERS; i++) {
			uint32_t x = tg_xorshift32(&state);

			sum = sum * 31 + (x ^ (x >> 7)) * 0x9E3779B1u;
		}
		now = rdtsc();
		share_count(&sh, now - prev, per_us);
		prev = now;
		if (now < next)
			continue;
		tg_printf("TG share sec=%u tsc=%llu chunks=%u run=%llu exit=%llu exits=%u "
			  "away=%llu aways=%u\n", sec, now - t0, sh.chunks, sh.run, sh.exit,
			  sh.exits, sh.away, sh.aways);
		prev = rdtsc();
		sh.exit += prev - now;
		next += tpt * TG_HZ;
		sec++;
	}
	tg_printf("TG share done sum=0x%08x\n", sum);
	tg_poweroff();
}
