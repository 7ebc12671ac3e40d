/* SPDX-License-Identifier: BSD-2-Clause */
/* The virtual 8254 and port 0x61 (hv/vdev/pit.c): modes, latches,
 * read-back, OUT2 calibration as Linux and ferry do it, IRQ 0 timing,
 * and the phase kept across a snapshot. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>
#include "hv/vdev/pit.h"

#define MS 1000000ull
#define SEC 1000000000ull
#define HZ100_DIV 11932u	/* (1193182 + 50) / 100, as the test guest */

static void outb(struct pit *p, uint16_t port, uint8_t v, uint64_t now)
{
	uint32_t x = v;

	assert_int_equal(pit_io(p, port, 1, false, &x, now), 0);
	assert_true(pit_valid(p));
}

static uint8_t inb(struct pit *p, uint16_t port, uint64_t now)
{
	uint32_t x = 0xdeadbeef;

	assert_int_equal(pit_io(p, port, 1, true, &x, now), 0);
	assert_true(x <= 0xff);
	return (uint8_t)x;
}

/* An independent computation of the clocks in ns nanoseconds. */
static uint64_t ticks(uint64_t ns)
{
	return (uint64_t)((unsigned __int128)ns * PIT_HZ / SEC);
}

/* First nanosecond at which `n` clocks have passed. */
static uint64_t ns_for(uint64_t n)
{
	return (uint64_t)(((unsigned __int128)n * SEC + PIT_HZ - 1) / PIT_HZ);
}

/* Counter latch command and two reads (LSB, MSB). */
static uint16_t latch_read(struct pit *p, int ch, uint64_t now)
{
	uint8_t lo, hi;

	outb(p, 0x43, (uint8_t)(ch << 6), now);
	lo = inb(p, (uint16_t)(0x40 + ch), now + 777);
	hi = inb(p, (uint16_t)(0x40 + ch), now + 999);
	return (uint16_t)(lo | hi << 8);
}

static uint8_t status(struct pit *p, int ch, uint64_t now)
{
	outb(p, 0x43, (uint8_t)(0xE0 | 2 << ch), now);
	return inb(p, (uint16_t)(0x40 + ch), now);
}

/* guest/testguest/timer.c tg_timer_start(). */
static void start_100hz(struct pit *p, uint8_t ctl, uint64_t now)
{
	outb(p, 0x43, ctl, now);
	outb(p, 0x40, HZ100_DIV & 0xff, now);
	outb(p, 0x40, HZ100_DIV >> 8, now);
}

static void test_power_on(void **state)
{
	struct pit p;
	uint32_t v;

	(void)state;
	pit_init(&p);
	assert_true(pit_valid(&p));
	assert_int_equal(pit_update(&p, 10 * SEC), 0);
	assert_true(pit_next_event_ns(&p, 0) == PIT_NO_EVENT);
	assert_int_equal(inb(&p, 0x43, 0), 0xff);
	assert_int_equal(inb(&p, 0x61, 0) & 0x0f, 0);
	assert_int_equal(pit_io(&p, 0x44, 1, true, &v, 0), -ENOENT);
	assert_int_equal(pit_io(&p, 0x60, 1, true, &v, 0), -ENOENT);
	assert_int_equal(pit_io(&p, 0x40, 3, true, &v, 0), -EINVAL);
}

static void test_mode2_100hz_irq(void **state)
{
	const uint64_t t0 = 3 * SEC + 12345;
	uint64_t next, t;
	struct pit p;
	int edges = 0;

	(void)state;
	pit_init(&p);
	start_100hz(&p, 0x34, t0);
	assert_int_equal(latch_read(&p, 0, t0), HZ100_DIV);
	assert_int_equal(latch_read(&p, 0, t0 + 5 * MS), HZ100_DIV - ticks(5 * MS));
	assert_int_equal(pit_update(&p, t0 + 9 * MS), 0);
	next = pit_next_event_ns(&p, t0 + 9 * MS);
	assert_true(next == t0 + ns_for(HZ100_DIV));
	assert_int_equal(pit_update(&p, next - 1), 0);
	assert_int_equal(pit_update(&p, next), 1);
	assert_int_equal(pit_update(&p, next), 0);
	assert_true(pit_next_event_ns(&p, next) == t0 + ns_for(2 * HZ100_DIV));
	/* Mode 2 reads 1 just before the reload, never 0. */
	assert_int_equal(latch_read(&p, 0, t0 + ns_for(2 * HZ100_DIV - 1)), 1);
	assert_int_equal(latch_read(&p, 0, t0 + ns_for(2 * HZ100_DIV)), HZ100_DIV);

	/* Ten seconds polled every millisecond: one edge per period. */
	for (t = next + MS; t <= t0 + 10 * SEC; t += MS)
		edges += pit_update(&p, t);
	assert_int_equal(edges + 1, ticks(10 * SEC) / HZ100_DIV);
	assert_int_equal(p.stats.coalesced, 0);
	assert_int_equal(p.stats.irq_edges, edges + 1);

	/* A stall of a second: one edge, the rest counted as coalesced. */
	t = t0 + 11 * SEC + 5 * MS;
	assert_int_equal(pit_update(&p, t), 1);
	assert_int_equal(pit_update(&p, t), 0);
	assert_int_equal(p.stats.irq_edges + p.stats.coalesced,
			 ticks(t - t0) / HZ100_DIV);
	assert_true(pit_next_event_ns(&p, t) > t);
	assert_true(pit_next_event_ns(&p, t) <= t + 10 * MS + 1000);
	/* An overdue edge is reported as due now. */
	assert_true(pit_next_event_ns(&p, t + 50 * MS) == t + 50 * MS);
}

static void test_mode3_square_wave(void **state)
{
	const uint64_t t0 = 1 * SEC;
	const uint64_t half = ns_for(HZ100_DIV / 2);
	struct pit p;

	(void)state;
	pit_init(&p);
	start_100hz(&p, 0x36, t0);
	assert_int_equal(status(&p, 0, t0 + 1000) & 0x80, 0x80);
	assert_int_equal(status(&p, 0, t0 + half - 1) & 0x80, 0x80);
	assert_int_equal(status(&p, 0, t0 + half) & 0x80, 0x00);
	assert_int_equal(status(&p, 0, t0 + ns_for(HZ100_DIV) - 1) & 0x80, 0x00);
	assert_int_equal(status(&p, 0, t0 + ns_for(HZ100_DIV)) & 0x80, 0x80);
	/* Counts down by two, twice per period. */
	assert_int_equal(latch_read(&p, 0, t0 + ns_for(100)), HZ100_DIV - 200);
	assert_int_equal(latch_read(&p, 0, t0 + ns_for(HZ100_DIV / 2 + 100)),
			 HZ100_DIV - 200);
	assert_int_equal(pit_update(&p, t0 + half), 0);
	assert_int_equal(pit_update(&p, t0 + ns_for(HZ100_DIV)), 1);
	/* Status: OUT, null count 0, lohi, mode 3, binary. */
	assert_int_equal(status(&p, 0, t0 + 5), 0x80 | 0x30 | 3 << 1);
}

static void test_mode0_one_shot(void **state)
{
	const uint64_t t0 = 2 * SEC;
	struct pit p;

	(void)state;
	pit_init(&p);
	outb(&p, 0x43, 0x30, t0);
	assert_int_equal(status(&p, 0, t0) & 0xc0, 0x40);	/* OUT low, null */
	assert_true(pit_next_event_ns(&p, t0) == PIT_NO_EVENT);
	outb(&p, 0x40, 1000 & 0xff, t0);
	assert_int_equal(status(&p, 0, t0) & 0x80, 0);		/* first byte */
	outb(&p, 0x40, 1000 >> 8, t0);
	assert_true(pit_next_event_ns(&p, t0) == t0 + ns_for(1000));
	assert_int_equal(status(&p, 0, t0 + ns_for(1000) - 1) & 0x80, 0);
	assert_int_equal(pit_update(&p, t0 + ns_for(999)), 0);
	assert_int_equal(pit_update(&p, t0 + ns_for(1000)), 1);
	assert_int_equal(status(&p, 0, t0 + ns_for(1000)) & 0x80, 0x80);
	assert_true(pit_next_event_ns(&p, t0 + SEC) == PIT_NO_EVENT);
	assert_int_equal(pit_update(&p, t0 + SEC), 0);		/* one shot */
	/* The counter wraps and keeps going; OUT stays high. */
	assert_int_equal(latch_read(&p, 0, t0 + ns_for(1500)), 65536 - 500);
	assert_int_equal(status(&p, 0, t0 + ns_for(70000)) & 0x80, 0x80);
	/* A new count re-arms it. */
	outb(&p, 0x40, 10, t0 + SEC);
	outb(&p, 0x40, 0, t0 + SEC);
	assert_int_equal(pit_update(&p, t0 + SEC + ns_for(10)), 1);
}

static void test_latch_and_lohi_flip_flop(void **state)
{
	const uint64_t t0 = 7 * SEC;
	struct pit p;
	uint8_t lo, hi;
	uint32_t w;

	(void)state;
	pit_init(&p);
	start_100hz(&p, 0x34, t0);
	outb(&p, 0x43, 0x00, t0 + ns_for(10));		/* latch at 10 */
	outb(&p, 0x43, 0x00, t0 + ns_for(500));		/* ignored: held */
	lo = inb(&p, 0x40, t0 + ns_for(1000));
	hi = inb(&p, 0x40, t0 + ns_for(2000));
	assert_int_equal(lo | hi << 8, HZ100_DIV - 10);
	/* Unlatched reads are live, alternating LSB and MSB. */
	lo = inb(&p, 0x40, t0 + ns_for(3000));
	hi = inb(&p, 0x40, t0 + ns_for(3000));
	assert_int_equal(lo | hi << 8, HZ100_DIV - 3000);
	lo = inb(&p, 0x40, t0 + ns_for(3100));
	assert_int_equal(lo, (HZ100_DIV - 3100) & 0xff);
	hi = inb(&p, 0x40, t0 + ns_for(3400));
	assert_int_equal(hi, (HZ100_DIV - 3400) >> 8);
	/* A 16-bit read of port 0x40 reads 0x40 then 0x41 (channel 1,
	 * never programmed: 0). */
	outb(&p, 0x43, 0x00, t0 + ns_for(4000));
	assert_int_equal(pit_io(&p, 0x40, 2, true, &w, t0 + ns_for(5000)), 0);
	assert_int_equal(w, (HZ100_DIV - 4000) & 0xff);
	assert_int_equal(inb(&p, 0x40, t0 + ns_for(5000)), (HZ100_DIV - 4000) >> 8);
	/* A new control word drops a latch that was not read out. */
	outb(&p, 0x43, 0x00, t0 + ns_for(6000));
	start_100hz(&p, 0x34, t0 + ns_for(7000));
	assert_int_equal(latch_read(&p, 0, t0 + ns_for(7000) + ns_for(3)), HZ100_DIV - 3);
}

static void test_read_back(void **state)
{
	const uint64_t t0 = 1 * SEC;
	struct pit p;

	(void)state;
	pit_init(&p);
	outb(&p, 0x43, 0x34, t0);
	outb(&p, 0x43, 0xE2, t0);		/* status of channel 0 */
	assert_int_equal(inb(&p, 0x40, t0), 0x80 | 0x40 | 0x30 | 0x04);
	outb(&p, 0x40, HZ100_DIV & 0xff, t0);
	outb(&p, 0x40, HZ100_DIV >> 8, t0);
	outb(&p, 0x43, 0xB0, t0);		/* channel 2 mode 0, no count */
	/* Count and status of channels 0 and 2 at once: status first. */
	outb(&p, 0x43, 0xC0 | 0x08 | 0x02, t0 + ns_for(20));
	assert_int_equal(inb(&p, 0x40, t0 + MS), 0x80 | 0x30 | 0x04);
	assert_int_equal(inb(&p, 0x40, t0 + MS), (HZ100_DIV - 20) & 0xff);
	assert_int_equal(inb(&p, 0x40, t0 + MS), (HZ100_DIV - 20) >> 8);
	assert_int_equal(inb(&p, 0x42, t0 + MS), 0x40 | 0x30);	/* OUT low */
	/* Count only: no status byte in front. */
	outb(&p, 0x43, 0xD2, t0 + ns_for(30));
	assert_int_equal(inb(&p, 0x40, t0 + MS), (HZ100_DIV - 30) & 0xff);
	assert_int_equal(inb(&p, 0x40, t0 + MS), (HZ100_DIV - 30) >> 8);
}

/* Linux pit_calibrate_tsc(): channel 2 mode 0 for 50 ms, polling OUT2 in
 * port 0x61 bit 5; quick_pit_calibrate(): MSB reads of a live count. */
static void test_port61_linux_calibration(void **state)
{
	const uint64_t t0 = 4 * SEC;
	const uint16_t latch = PIT_HZ / 20;
	struct pit p;

	(void)state;
	pit_init(&p);
	outb(&p, 0x61, (inb(&p, 0x61, t0) & ~0x02) | 0x01, t0);
	outb(&p, 0x43, 0xb0, t0);
	outb(&p, 0x42, latch & 0xff, t0);
	outb(&p, 0x42, latch >> 8, t0);
	assert_int_equal(inb(&p, 0x61, t0 + 49 * MS) & 0x20, 0);
	assert_int_equal(inb(&p, 0x61, t0 + ns_for(latch) - 1) & 0x23, 0x01);
	assert_int_equal(inb(&p, 0x61, t0 + ns_for(latch)) & 0x23, 0x21);
	assert_int_equal(p.stats.irq_edges, 0);		/* not IRQ 0 */

	outb(&p, 0x43, 0xb0, t0 + SEC);
	outb(&p, 0x42, 0xff, t0 + SEC);
	outb(&p, 0x42, 0xff, t0 + SEC);
	for (uint64_t n = 0; n < 0xff00; n += 0x300) {
		uint64_t t = t0 + SEC + ns_for(n) + 1;

		(void)inb(&p, 0x42, t);
		assert_int_equal(inb(&p, 0x42, t), (0xffff - n) >> 8);
	}
	/* Gate low: counting stops; high again: it goes on. */
	outb(&p, 0x61, 0x00, t0 + SEC + ns_for(100));
	assert_int_equal(latch_read(&p, 2, t0 + 2 * SEC), 0xffff - 100);
	outb(&p, 0x61, 0x01, t0 + 3 * SEC);
	assert_int_equal(latch_read(&p, 2, t0 + 3 * SEC + ns_for(50)), 0xffff - 150);
	/* The refresh bit toggles with time. */
	assert_true((inb(&p, 0x61, 15085 * 1000000ull) & 0x10) !=
		    (inb(&p, 0x61, 15085 * 1000001ull) & 0x10));
}

/* arch/x86/time.c pit_oneshot() and its wait for OUT2: 100 ns a port
 * access. */
static void test_port61_ferry_calibration(void **state)
{
	const uint32_t count = 1193182u * 50 / 1000;
	uint64_t t = 9 * SEC;
	struct pit p;
	uint8_t b;

	(void)state;
	pit_init(&p);
	b = inb(&p, 0x61, t += 100);
	outb(&p, 0x61, (b & ~0x02) | 0x01, t += 100);
	outb(&p, 0x43, 0xb0, t += 100);
	outb(&p, 0x42, count & 0xff, t += 100);
	outb(&p, 0x42, count >> 8, t += 100);
	b = inb(&p, 0x61, t += 100);
	outb(&p, 0x61, b & ~0x01, t += 100);
	b = inb(&p, 0x61, t += 100);
	outb(&p, 0x61, b | 0x01, t += 100);
	while (!(inb(&p, 0x61, t) & 0x20))
		t += 1000;
	assert_true(t >= 9 * SEC + 50 * MS);
	assert_true(t <= 9 * SEC + 50 * MS + 2000);
}

static void test_lo_hi_only_and_bcd(void **state)
{
	const uint64_t t0 = SEC;
	struct pit p;

	(void)state;
	pit_init(&p);
	outb(&p, 0x43, 0x10, t0);		/* ch0 LSB only, mode 0 */
	outb(&p, 0x40, 0x50, t0);
	assert_int_equal(inb(&p, 0x40, t0 + ns_for(0x10)), 0x40);
	assert_int_equal(inb(&p, 0x40, t0 + ns_for(0x11)), 0x3f);
	outb(&p, 0x43, 0x20, t0);		/* MSB only */
	outb(&p, 0x40, 0x12, t0);
	assert_int_equal(inb(&p, 0x40, t0 + ns_for(0x100)), 0x11);
	assert_int_equal(status(&p, 0, t0) & 0x3f, 0x20);

	outb(&p, 0x43, 0x35, t0);		/* ch0 lohi mode 2 BCD */
	outb(&p, 0x40, 0x00, t0);
	outb(&p, 0x40, 0x10, t0);		/* 1000 decimal */
	assert_int_equal(latch_read(&p, 0, t0 + ns_for(1)), 0x0999);
	assert_int_equal(latch_read(&p, 0, t0 + ns_for(567)), 0x0433);
	assert_int_equal(pit_update(&p, t0 + ns_for(999)), 0);
	assert_int_equal(pit_update(&p, t0 + ns_for(1000)), 1);
	assert_int_equal(status(&p, 0, t0) & 0x01, 1);
	outb(&p, 0x43, 0x31, t0);		/* BCD mode 0, count 0 = 10000 */
	outb(&p, 0x40, 0, t0);
	outb(&p, 0x40, 0, t0);
	assert_int_equal(latch_read(&p, 0, t0 + ns_for(1)), 0x9999);
	assert_int_equal(pit_update(&p, t0 + ns_for(9999)), 0);
	assert_int_equal(pit_update(&p, t0 + ns_for(10000)), 1);
}

static void test_gate_triggered_modes(void **state)
{
	const uint64_t t0 = SEC;
	struct pit p;

	(void)state;
	pit_init(&p);
	outb(&p, 0x61, 0x01, t0);
	outb(&p, 0x43, 0xB2, t0);		/* ch2 mode 1 */
	outb(&p, 0x42, 100, t0);
	outb(&p, 0x42, 0, t0);
	assert_true(pit_out(&p, 2, t0 + MS));	/* gate already high: waits */
	assert_int_equal(latch_read(&p, 2, t0 + MS), 100);
	outb(&p, 0x61, 0x00, t0 + MS);
	outb(&p, 0x61, 0x01, t0 + 2 * MS);	/* trigger */
	assert_false(pit_out(&p, 2, t0 + 2 * MS + ns_for(99)));
	assert_true(pit_out(&p, 2, t0 + 2 * MS + ns_for(100)));
	assert_int_equal(latch_read(&p, 2, t0 + 2 * MS + ns_for(40)), 60);

	outb(&p, 0x43, 0xBA, t0);		/* ch2 mode 5 */
	outb(&p, 0x42, 50, t0);
	outb(&p, 0x42, 0, t0);
	outb(&p, 0x61, 0x00, t0 + MS);
	outb(&p, 0x61, 0x01, t0 + 2 * MS);
	assert_true(pit_out(&p, 2, t0 + 2 * MS + ns_for(49)));
	assert_false(pit_out(&p, 2, t0 + 2 * MS + ns_for(50)));
	assert_true(pit_out(&p, 2, t0 + 2 * MS + ns_for(51)));

	outb(&p, 0x43, 0x38, t0);		/* ch0 mode 4: strobe at n+1 */
	outb(&p, 0x40, 20, t0);
	outb(&p, 0x40, 0, t0);
	assert_false(pit_out(&p, 0, t0 + ns_for(20)));
	assert_int_equal(pit_update(&p, t0 + ns_for(20)), 0);
	assert_int_equal(pit_update(&p, t0 + ns_for(21)), 1);

	outb(&p, 0x43, 0xB4, t0);		/* ch2 mode 2, gate low: OUT high */
	outb(&p, 0x61, 0x00, t0);
	outb(&p, 0x42, 10, t0);
	outb(&p, 0x42, 0, t0);
	assert_true(pit_out(&p, 2, t0 + ns_for(9)));
	assert_int_equal(latch_read(&p, 2, t0 + MS), 10);
	outb(&p, 0x61, 0x01, t0 + MS);		/* starts the count */
	assert_false(pit_out(&p, 2, t0 + MS + ns_for(9)));
	assert_true(pit_out(&p, 2, t0 + MS + ns_for(10)));
}

/* The phase survives a save at one time base and a restore at another. */
static void test_snapshot_keeps_phase(void **state)
{
	const uint64_t t0 = 5 * SEC + 4321, save_at = t0 + 3 * SEC + 3300 * 1000 + 17;
	const uint64_t restore_at = 77 * SEC + 999;
	uint8_t buf[512];
	struct pit a, b;
	struct snap s;

	(void)state;
	pit_init(&a);
	start_100hz(&a, 0x34, t0);
	outb(&a, 0x61, 0x01, t0);
	outb(&a, 0x43, 0xb0, t0 + MS);		/* ch2 mode 0, 60000 */
	outb(&a, 0x42, 0x60, t0 + MS);
	outb(&a, 0x42, 0xea, t0 + MS);
	outb(&a, 0x43, 0x70, t0);		/* ch1 mode 0, half written */
	outb(&a, 0x41, 0x34, t0);
	(void)pit_update(&a, save_at);
	assert_int_equal(pit_update(&a, save_at), 0);
	snap_save_init(&s, buf, sizeof(buf));
	assert_int_equal(pit_snapshot(&a, &s, save_at), 0);

	pit_init(&b);
	snap_restore_init(&s, buf, s.pos);
	assert_int_equal(pit_snapshot(&b, &s, restore_at), 0);
	assert_int_equal(s.pos, s.cap);
	assert_true(pit_valid(&b));
	for (uint64_t d = 0; d < 40 * MS; d += 333333) {
		assert_int_equal(latch_read(&a, 0, save_at + d), latch_read(&b, 0, restore_at + d));
		assert_int_equal(latch_read(&a, 2, save_at + d), latch_read(&b, 2, restore_at + d));
		assert_int_equal(pit_update(&a, save_at + d), pit_update(&b, restore_at + d));
		assert_int_equal(pit_out(&a, 2, save_at + d), pit_out(&b, 2, restore_at + d));
	}
	assert_int_equal(pit_next_event_ns(&a, save_at) - save_at,
			 pit_next_event_ns(&b, restore_at) - restore_at);
	/* The half-written count of channel 1 completes the same way. */
	outb(&a, 0x41, 0x12, save_at);
	outb(&b, 0x41, 0x12, restore_at);
	assert_int_equal(latch_read(&a, 1, save_at + MS), latch_read(&b, 1, restore_at + MS));
	assert_int_equal(latch_read(&b, 1, restore_at), 0x1234);
	/* a peer's channel 0 whose next edge lies ages ahead: its timer
	 * would stop for good; refused, b unchanged */
	a.ch[0].next_edge = a.ch[0].done_ticks + (1ull << 60);
	snap_save_init(&s, buf, sizeof(buf));
	assert_int_equal(pit_snapshot(&a, &s, save_at), 0);
	snap_restore_init(&s, buf, s.pos);
	assert_int_equal(pit_snapshot(&b, &s, restore_at), -EINVAL);
	assert_true(pit_next_event_ns(&b, restore_at + 40 * MS) < restore_at + 60 * MS);
}

/* Random writes and reads with time moving forward: never invalid, IRQ
 * reports stay 0/1 and the next event is never in the past. */
static void test_fuzz(void **state)
{
	static const uint16_t ports[] = { 0x40, 0x41, 0x42, 0x43, 0x43, 0x61 };
	uint64_t now = 0, ev;
	struct pit p;
	uint32_t v;
	int r;

	(void)state;
	srand(8254);
	pit_init(&p);
	for (int i = 0; i < 300000; i++) {
		uint16_t port = ports[rand() % 6];

		now += (uint64_t)(rand() % 4) * (uint64_t)(rand() % 100000);
		v = (uint32_t)rand();
		assert_int_equal(pit_io(&p, port, (uint8_t)(1u << (rand() % 3)),
					rand() & 1, &v, now), 0);
		r = pit_update(&p, now);
		assert_true(r == 0 || r == 1);
		assert_true(pit_valid(&p));
		ev = pit_next_event_ns(&p, now);
		assert_true(ev == PIT_NO_EVENT || ev >= now);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_power_on),
		cmocka_unit_test(test_mode2_100hz_irq),
		cmocka_unit_test(test_mode3_square_wave),
		cmocka_unit_test(test_mode0_one_shot),
		cmocka_unit_test(test_latch_and_lohi_flip_flop),
		cmocka_unit_test(test_read_back),
		cmocka_unit_test(test_port61_linux_calibration),
		cmocka_unit_test(test_port61_ferry_calibration),
		cmocka_unit_test(test_lo_hi_only_and_bcd),
		cmocka_unit_test(test_gate_triggered_modes),
		cmocka_unit_test(test_snapshot_keeps_phase),
		cmocka_unit_test(test_fuzz),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
