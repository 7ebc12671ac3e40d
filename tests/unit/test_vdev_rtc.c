/* SPDX-License-Identifier: BSD-2-Clause */
/* The virtual CMOS RTC (hv/vdev/rtc.c): BCD/binary and 12/24-hour time,
 * setting the clock as Linux does, registers A-D, CMOS RAM and the
 * memory-size bytes.  Reference epochs computed with Python's calendar. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>
#include "hv/vdev/rtc.h"

#define SEC 1000000000ull
#define MIB (1024ull * 1024)
#define GIB (1024ull * MIB)
#define T_2024_02_29_134556 1709214356ull	/* a Thursday */
#define T_2000_02_29 951782400ull		/* Tuesday */
#define T_2100_03_01 4107542400ull		/* Monday */
#define T_2099_12_31_235959 4102444799ull	/* Thursday */

static uint8_t cmos_read(struct rtc *r, uint8_t idx, uint64_t now)
{
	uint32_t v = idx;

	assert_int_equal(rtc_io(r, 0x70, 1, false, &v, now), 0);
	assert_int_equal(rtc_io(r, 0x71, 1, true, &v, now), 0);
	assert_true(v <= 0xff);
	assert_true(rtc_valid(r));
	return (uint8_t)v;
}

static void cmos_write(struct rtc *r, uint8_t idx, uint8_t val, uint64_t now)
{
	uint32_t v = idx;

	assert_int_equal(rtc_io(r, 0x70, 1, false, &v, now), 0);
	v = val;
	assert_int_equal(rtc_io(r, 0x71, 1, false, &v, now), 0);
	assert_true(rtc_valid(r));
}

/* All eight time registers: sec min hour wday mday mon year century. */
static void read_time(struct rtc *r, uint64_t now, uint8_t out[8])
{
	static const uint8_t idx[8] = { 0, 2, 4, 6, 7, 8, 9, 0x32 };

	for (int i = 0; i < 8; i++)
		out[i] = cmos_read(r, idx[i], now);
}

static uint8_t from_bcd(uint8_t b, bool binary)
{
	return binary ? b : (uint8_t)((b >> 4) * 10 + (b & 0xf));
}

/* The time as a guest reads it (registers in the current B mode), in
 * seconds since 1970. */
static uint64_t guest_epoch(struct rtc *r, uint64_t now)
{
	uint8_t b = cmos_read(r, 0x0B, now), t[8];
	bool bin = b & 0x04, h24 = b & 0x02;
	uint8_t hour;
	struct rtc_tm tm;

	read_time(r, now, t);
	hour = from_bcd(t[2] & 0x7f, bin);
	if (!h24)
		hour = hour % 12 + (t[2] & 0x80 ? 12 : 0);
	tm = (struct rtc_tm){ .sec = from_bcd(t[0], bin), .min = from_bcd(t[1], bin),
			      .hour = hour, .mday = from_bcd(t[4], bin),
			      .mon = from_bcd(t[5], bin), .year = from_bcd(t[6], bin),
			      .century = from_bcd(t[7], bin) };
	return rtc_tm_to_epoch(&tm);
}

static void test_bcd_24h_and_running(void **state)
{
	struct rtc r;
	uint8_t t[8];
	const uint64_t t0 = 10 * SEC;

	(void)state;
	rtc_init(&r, T_2024_02_29_134556, t0, 128 * MIB, 0);
	assert_true(rtc_valid(&r));
	read_time(&r, t0, t);
	assert_memory_equal(t, ((uint8_t[]){ 0x56, 0x45, 0x13, 0x05, 0x29, 0x02, 0x24, 0x20 }), 8);
	assert_int_equal(cmos_read(&r, 0x0A, t0), 0x26);	/* UIP 0 */
	assert_int_equal(cmos_read(&r, 0x0B, t0), 0x02);
	assert_int_equal(cmos_read(&r, 0x0D, t0), 0x80);
	read_time(&r, t0 + 3 * SEC + SEC - 1, t);
	assert_int_equal(t[0], 0x59);
	read_time(&r, t0 + 4 * SEC, t);
	assert_memory_equal(t, ((uint8_t[]){ 0x00, 0x46, 0x13, 0x05, 0x29, 0x02, 0x24, 0x20 }), 8);
	/* 10:14:04 later it is midnight, Friday 1 March. */
	read_time(&r, t0 + (10 * 3600 + 14 * 60 + 4) * SEC, t);
	assert_memory_equal(t, ((uint8_t[]){ 0x00, 0x00, 0x00, 0x06, 0x01, 0x03, 0x24, 0x20 }), 8);
	assert_true(guest_epoch(&r, t0 + 5 * SEC) == T_2024_02_29_134556 + 5);
}

static void test_binary_and_12_hour(void **state)
{
	struct rtc r;
	uint8_t t[8];

	(void)state;
	rtc_init(&r, T_2024_02_29_134556, 0, 0, 0);
	cmos_write(&r, 0x0B, 0x06, 0);		/* binary, 24 h */
	read_time(&r, 0, t);
	assert_memory_equal(t, ((uint8_t[]){ 56, 45, 13, 5, 29, 2, 24, 20 }), 8);
	cmos_write(&r, 0x0B, 0x04, 0);		/* binary, 12 h */
	assert_int_equal(cmos_read(&r, 4, 0), 0x80 | 1);
	cmos_write(&r, 0x0B, 0x00, 0);		/* BCD, 12 h */
	assert_int_equal(cmos_read(&r, 4, 0), 0x81);
	/* Midnight is 12 AM, noon 12 PM. */
	rtc_init(&r, T_2000_02_29, 0, 0, 0);
	cmos_write(&r, 0x0B, 0x00, 0);
	assert_int_equal(cmos_read(&r, 4, 0), 0x12);
	assert_int_equal(cmos_read(&r, 4, 12 * 3600 * SEC), 0x92);
	assert_int_equal(cmos_read(&r, 4, 23 * 3600 * SEC), 0x91);
	assert_int_equal(cmos_read(&r, 6, 0), 0x03);		/* Tuesday */
	/* Writing hours in 12 h form: 11 PM. */
	cmos_write(&r, 4, 0x91, 0);
	cmos_write(&r, 0x0B, 0x02, 0);
	assert_int_equal(cmos_read(&r, 4, 0), 0x23);
}

/* drivers/rtc/rtc-mc146818-lib.c mc146818_set_time(): SET, the fields,
 * SET off. */
static void test_linux_set_time(void **state)
{
	struct rtc r;
	uint8_t t[8];
	const uint64_t t0 = 100 * SEC;

	(void)state;
	rtc_init(&r, 0, 0, 0, 0);
	cmos_write(&r, 0x0B, 0x02 | 0x80 | 0x10, t0);	/* SET (UIE dropped) */
	assert_int_equal(cmos_read(&r, 0x0B, t0), 0x82);
	/* The registers hold the time SET was entered: 00:01:40. */
	assert_int_equal(cmos_read(&r, 0, t0 + 5 * SEC), 0x40);
	assert_int_equal(cmos_read(&r, 2, t0 + 5 * SEC), 0x01);
	cmos_write(&r, 9, 0x99, t0);
	cmos_write(&r, 8, 0x12, t0);
	cmos_write(&r, 7, 0x31, t0);
	cmos_write(&r, 4, 0x23, t0);
	cmos_write(&r, 2, 0x59, t0);
	cmos_write(&r, 0, 0x59, t0);
	cmos_write(&r, 0x32, 0x20, t0);
	read_time(&r, t0 + 7 * SEC, t);			/* held while SET */
	assert_memory_equal(t, ((uint8_t[]){ 0x59, 0x59, 0x23, 0x05, 0x31, 0x12, 0x99, 0x20 }), 8);
	cmos_write(&r, 0x0B, 0x02, t0 + 8 * SEC);
	assert_true(guest_epoch(&r, t0 + 8 * SEC) == T_2099_12_31_235959);
	read_time(&r, t0 + 9 * SEC, t);			/* into the next century */
	assert_memory_equal(t, ((uint8_t[]){ 0x00, 0x00, 0x00, 0x06, 0x01, 0x01, 0x00, 0x21 }), 8);
	assert_int_equal(r.stats.clock_sets, 1);
	/* A field written without SET moves the clock at once. */
	cmos_write(&r, 9, 0x00, t0 + 10 * SEC);		/* year 2100 -> 2100 */
	cmos_write(&r, 8, 0x03, t0 + 10 * SEC);
	assert_true(guest_epoch(&r, t0 + 10 * SEC) == T_2100_03_01 + 1);
	assert_int_equal(cmos_read(&r, 6, t0 + 10 * SEC), 0x02);	/* Monday */
	/* Day of week writes do not stick; garbage does not break it. */
	cmos_write(&r, 6, 0x07, t0 + 10 * SEC);
	assert_int_equal(cmos_read(&r, 6, t0 + 10 * SEC), 0x02);
	cmos_write(&r, 0x0B, 0x82, t0);
	cmos_write(&r, 8, 0xff, t0);
	cmos_write(&r, 7, 0x00, t0);
	cmos_write(&r, 0x32, 0xff, t0);
	cmos_write(&r, 0x0B, 0x02, t0);
	assert_true(guest_epoch(&r, t0) <= RTC_MAX_EPOCH);
}

static void test_registers_and_ram(void **state)
{
	struct rtc r;
	uint32_t v;

	(void)state;
	rtc_init(&r, T_2000_02_29, 0, 64 * MIB, 0);
	cmos_write(&r, 0x0A, 0xff, 0);
	assert_int_equal(cmos_read(&r, 0x0A, 0), 0x7f);	/* UIP reads 0 */
	cmos_write(&r, 0x0D, 0x00, 0);
	assert_int_equal(cmos_read(&r, 0x0D, 0), 0x80);
	cmos_write(&r, 0x0A, 0x2f, 0);		/* periodic at 2 Hz */
	cmos_write(&r, 0x0B, 0x42, 0);		/* PIE */
	cmos_write(&r, 0x0C, 0x00, SEC);	/* read-only */
	assert_int_equal(cmos_read(&r, 0x0C, SEC), 0xD0);	/* IRQF PF UF */
	assert_int_equal(cmos_read(&r, 0x0C, SEC), 0x00);	/* read clears */
	cmos_write(&r, 0x0B, 0x02, SEC);
	cmos_write(&r, 0x0A, 0x26, SEC);
	for (int i = 0x0E; i < 0x80; i++)
		if (i != 0x32)
			cmos_write(&r, (uint8_t)i, (uint8_t)(i ^ 0x5a), 0);
	for (int i = 0x0E; i < 0x80; i++)
		if (i != 0x32)
			assert_int_equal(cmos_read(&r, (uint8_t)i, 0), i ^ 0x5a);
	cmos_write(&r, 1, 0x30, 0);		/* alarm seconds: plain RAM */
	assert_int_equal(cmos_read(&r, 1, 0), 0x30);
	/* Index: bit 7 masks NMI, the port reads 0xff. */
	v = 0x80 | 0x0D;
	assert_int_equal(rtc_io(&r, 0x70, 1, false, &v, 0), 0);
	assert_true(r.nmi_masked);
	assert_int_equal(r.index, 0x0D);
	assert_int_equal(rtc_io(&r, 0x70, 1, true, &v, 0), 0);
	assert_int_equal(v, 0xff);
	assert_int_equal(rtc_io(&r, 0x71, 1, true, &v, 0), 0);
	assert_int_equal(v, 0x80);
	v = 0x0D;
	assert_int_equal(rtc_io(&r, 0x70, 1, false, &v, 0), 0);
	assert_false(r.nmi_masked);
	assert_int_equal(rtc_io(&r, 0x72, 1, true, &v, 0), -ENOENT);
	assert_int_equal(rtc_io(&r, 0x6f, 1, true, &v, 0), -ENOENT);
	v = 0x0B;				/* outw: index then data */
	v |= 0x06 << 8;
	assert_int_equal(rtc_io(&r, 0x70, 2, false, &v, 0), 0);
	assert_int_equal(cmos_read(&r, 0x0B, 0), 0x06);
}

/* ---- interrupts ------------------------------------------------------- */

struct irq_log {
	int level, rises, falls;
};

static void log_irq(void *ctx, int level)
{
	struct irq_log *l = ctx;

	assert_true(level != l->level);		/* only changes are reported */
	l->level = level;
	if (level)
		l->rises++;
	else
		l->falls++;
}

static void alarm_bcd(struct rtc *r, uint8_t h, uint8_t m, uint8_t sec, uint64_t now)
{
	cmos_write(r, 5, h, now);
	cmos_write(r, 3, m, now);
	cmos_write(r, 1, sec, now);
}

/* Update-ended and alarm interrupts, as rtc-cmos uses them (Linux's UIE
 * is an alarm at the next second; hwclock waits for it). */
static void test_update_and_alarm_irqs(void **state)
{
	struct rtc r;
	struct irq_log l = { 0 };
	const uint64_t t0 = 3 * SEC + SEC / 2;	/* 13:45:56 and a half */

	(void)state;
	rtc_init(&r, T_2024_02_29_134556 - 3, 0, 0, 0);
	rtc_connect(&r, log_irq, &l);
	assert_true(rtc_next_event_ns(&r, t0) == RTC_NO_EVENT);	/* nothing enabled */
	assert_int_equal(cmos_read(&r, 0x0C, t0), 0x50);	/* PF UF, no IRQF */
	cmos_write(&r, 0x0A, 0x20, t0);		/* no periodic flag from here */
	cmos_write(&r, 0x0B, 0x12, t0);		/* UIE */
	assert_true(rtc_next_event_ns(&r, t0) == t0 + SEC / 2);
	rtc_update(&r, t0 + SEC / 2 - 1);
	assert_int_equal(l.rises, 0);
	rtc_update(&r, t0 + SEC / 2);
	assert_int_equal(l.rises, 1);
	assert_int_equal(l.level, 1);
	assert_true(rtc_next_event_ns(&r, t0 + SEC / 2) == RTC_NO_EVENT);	/* high */
	rtc_update(&r, t0 + 3 * SEC);		/* no new edge while high */
	assert_int_equal(l.rises, 1);
	assert_int_equal(cmos_read(&r, 0x0C, t0 + 3 * SEC), 0x90);	/* IRQF UF */
	assert_int_equal(l.level, 0);
	/* Seconds that pass unseen merge into one flag and one edge. */
	rtc_update(&r, t0 + 10 * SEC);
	assert_int_equal(l.rises, 2);
	assert_int_equal(cmos_read(&r, 0x0C, t0 + 10 * SEC), 0x90);
	assert_int_equal(r.stats.irqs, 2);
	/* UIE off: the flag still rises each second, without an interrupt. */
	cmos_write(&r, 0x0B, 0x02, t0 + 10 * SEC);
	assert_int_equal(cmos_read(&r, 0x0C, t0 + 12 * SEC), 0x10);
	assert_int_equal(l.rises, 2);
	/* Enabling UIE over a set flag raises IRQF at once. */
	rtc_update(&r, t0 + 13 * SEC);
	cmos_write(&r, 0x0B, 0x12, t0 + 13 * SEC);
	assert_int_equal(l.level, 1);
	assert_int_equal(cmos_read(&r, 0x0C, t0 + 13 * SEC), 0x90);
	cmos_write(&r, 0x0B, 0x02, t0 + 13 * SEC);
	/* Now 13:46:09.5: an alarm at 13:47:00 (BCD, 24 h) with AIE. */
	alarm_bcd(&r, 0x13, 0x47, 0x00, t0 + 13 * SEC);
	cmos_write(&r, 0x0B, 0x22, t0 + 13 * SEC);
	assert_true(rtc_next_event_ns(&r, t0 + 13 * SEC) == t0 + 64 * SEC - SEC / 2);
	assert_int_equal(cmos_read(&r, 0x0C, t0 + 63 * SEC) & 0xE0, 0x00);	/* 13:46:59.5 */
	rtc_update(&r, t0 + 64 * SEC - SEC / 2);
	assert_int_equal(l.level, 1);
	assert_int_equal(cmos_read(&r, 0x0C, t0 + 64 * SEC), 0xB0);	/* IRQF AF UF */
	/* Seconds skipped over the alarm still find it. */
	alarm_bcd(&r, 0x14, 0x00, 0x00, t0 + 64 * SEC);
	rtc_update(&r, t0 + 3600 * SEC);
	assert_int_equal(cmos_read(&r, 0x0C, t0 + 3600 * SEC), 0xB0);
	/* Don't-care bytes: every second, every minute at :30. */
	alarm_bcd(&r, 0xC0, 0xFF, 0xC5, t0 + 3600 * SEC);
	assert_true(rtc_next_event_ns(&r, t0 + 3600 * SEC) == t0 + 3601 * SEC - SEC / 2);
	alarm_bcd(&r, 0xC0, 0xFF, 0x30, t0 + 3600 * SEC);
	/* 14:45:56 (+ half): the next :30 is 34 s on */
	assert_true(rtc_next_event_ns(&r, t0 + 3600 * SEC) == t0 + 3634 * SEC - SEC / 2);
	/* An alarm byte no time reads as never fires: BCD 0x5A, 12 h 0x00. */
	alarm_bcd(&r, 0xC0, 0xFF, 0x5A, t0 + 3600 * SEC);
	assert_true(rtc_next_event_ns(&r, t0 + 3600 * SEC) == RTC_NO_EVENT);
	cmos_write(&r, 0x0B, 0x20, t0 + 3600 * SEC);	/* 12 hour */
	alarm_bcd(&r, 0x00, 0xFF, 0xFF, t0 + 3600 * SEC);
	assert_true(rtc_next_event_ns(&r, t0 + 3600 * SEC) == RTC_NO_EVENT);
	rtc_update(&r, t0 + 3 * 86400 * SEC);
	assert_int_equal(cmos_read(&r, 0x0C, t0 + 3 * 86400 * SEC), 0x10);
	/* SET holds the clock still: no update flags, none for leaving it. */
	cmos_write(&r, 0x0B, 0x82, t0 + 3 * 86400 * SEC);
	rtc_update(&r, t0 + (3 * 86400 + 5) * SEC);
	cmos_write(&r, 0x0B, 0x02, t0 + (3 * 86400 + 5) * SEC);
	assert_int_equal(cmos_read(&r, 0x0C, t0 + (3 * 86400 + 5) * SEC), 0x00);
	/* The machine's reset clears enables and flags, without a callback. */
	cmos_write(&r, 0x0B, 0x72, t0 + (3 * 86400 + 5) * SEC);
	rtc_update(&r, t0 + (3 * 86400 + 7) * SEC);
	assert_int_equal(l.level, 1);
	rtc_reset_irqs(&r);
	assert_true(rtc_valid(&r));
	assert_int_equal(cmos_read(&r, 0x0B, t0 + (3 * 86400 + 7) * SEC), 0x02);
	assert_int_equal(cmos_read(&r, 0x0C, t0 + (3 * 86400 + 7) * SEC), 0x00);
	assert_int_equal(l.level, 1);		/* the controllers forget it themselves */
}

/* The periodic flag at exact rates: 1024 Hz (976562.5 ns) and 8192 Hz
 * (122070.3125 ns) land on whole seconds after 1024 and 8192 periods. */
static void test_periodic_irq(void **state)
{
	static const struct { uint8_t a; uint32_t hz; } rates[] = {
		{ 0x26, 1024 }, { 0x23, 8192 }, { 0x2f, 2 }, { 0x21, 256 }, { 0x22, 128 },
	};
	struct rtc r;
	struct irq_log l = { 0 };
	uint64_t now, t0 = 5 * SEC + 123;

	(void)state;
	for (unsigned int i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
		rtc_init(&r, T_2000_02_29, 0, 0, 0);
		l = (struct irq_log){ 0 };
		rtc_connect(&r, log_irq, &l);
		cmos_write(&r, 0x0A, 0x20, t0);		/* off, then ... */
		cmos_write(&r, 0x0A, rates[i].a, t0);	/* the phase starts here */
		cmos_write(&r, 0x0B, 0x42, t0);		/* PIE */
		assert_int_equal(cmos_read(&r, 0x0C, t0), 0xD0);	/* since 0 */
		l.rises = 0;
		now = t0;
		for (uint32_t k = 1; k <= rates[i].hz; k++) {
			now = rtc_next_event_ns(&r, now);
			rtc_update(&r, now - 1);
			assert_int_equal(l.rises, k - 1);
			rtc_update(&r, now);
			assert_int_equal(l.rises, k);
			assert_int_equal(cmos_read(&r, 0x0C, now) & 0xC0, 0xC0);
		}
		assert_true(now == t0 + SEC);
	}
	/* Missed periods merge; PIE off leaves the flag without interrupts;
	 * a stopped divider or RS 0 stops the flag. */
	rtc_init(&r, T_2000_02_29, 0, 0, 0);
	l = (struct irq_log){ 0 };
	rtc_connect(&r, log_irq, &l);
	cmos_write(&r, 0x0B, 0x42, 0);
	rtc_update(&r, 10 * SEC);
	assert_int_equal(l.rises, 1);
	assert_int_equal(cmos_read(&r, 0x0C, 10 * SEC), 0xD0);
	assert_true(rtc_next_event_ns(&r, 10 * SEC) < 10 * SEC + SEC / 1000);
	cmos_write(&r, 0x0B, 0x02, 10 * SEC);
	assert_int_equal(cmos_read(&r, 0x0C, 11 * SEC), 0x50);
	assert_int_equal(l.rises, 1);
	cmos_write(&r, 0x0A, 0x76, 11 * SEC);	/* divider in reset */
	cmos_write(&r, 0x0B, 0x42, 11 * SEC);
	assert_true(rtc_next_event_ns(&r, 11 * SEC) == RTC_NO_EVENT);
	assert_int_equal(cmos_read(&r, 0x0C, 12 * SEC), 0x10);
	cmos_write(&r, 0x0A, 0x20, 12 * SEC);	/* RS 0 */
	assert_int_equal(cmos_read(&r, 0x0C, 12 * SEC + SEC / 2), 0x00);
	/* Years without a look restart the phase instead of overflowing. */
	cmos_write(&r, 0x0A, 0x23, 12 * SEC);
	rtc_update(&r, 1ull << 61);
	assert_true(rtc_valid(&r));
	assert_true(rtc_next_event_ns(&r, 1ull << 61) == RTC_NO_EVENT);	/* high */
	assert_int_equal(cmos_read(&r, 0x0C, 1ull << 61) & 0xC0, 0xC0);
	now = rtc_next_event_ns(&r, 1ull << 61);
	assert_true(now > 1ull << 61 && now <= (1ull << 61) + 122071);
}

/* The alarm search against a second-by-second scan, in every mode, with
 * any bytes in the alarm registers. */
static uint8_t enc(uint8_t v, bool bin)
{
	return bin ? v : (uint8_t)((v / 10) << 4 | v % 10);
}

static bool alarm_matches(const uint8_t al[3], uint64_t t, uint8_t b)
{
	bool bin = b & 0x04, h24 = b & 0x02;
	struct rtc_tm tm;
	uint8_t now[3], h12;

	rtc_epoch_to_tm(t, &tm);
	h12 = tm.hour % 12 ? tm.hour % 12 : 12;
	now[0] = enc(tm.sec, bin);
	now[1] = enc(tm.min, bin);
	now[2] = h24 ? enc(tm.hour, bin) : (uint8_t)(enc(h12, bin) | (tm.hour >= 12 ? 0x80 : 0));
	for (int i = 0; i < 3; i++)
		if ((al[i] & 0xc0) != 0xc0 && al[i] != now[i])
			return false;
	return true;
}

static void test_alarm_search(void **state)
{
	static const uint8_t modes[] = { 0x02, 0x06, 0x00, 0x04 };
	struct rtc r;
	uint64_t base, expect, got;
	uint8_t al[3], b;

	(void)state;
	srand(8);
	for (int i = 0; i < 48; i++) {
		base = T_2024_02_29_134556 + (uint64_t)(rand() % 200000);
		b = modes[i % 4];
		for (int k = 0; k < 3; k++) {
			int pick = rand() % 4;
			uint8_t lim = k == 2 ? 24 : 60, v = (uint8_t)(rand() % lim);

			if (pick == 0)
				al[k] = (uint8_t)(0xc0 | rand());	/* any */
			else if (pick == 1)
				al[k] = (uint8_t)rand();		/* garbage */
			else if (k == 2 && !(b & 0x02))
				al[k] = (uint8_t)(enc(v % 12 ? v % 12 : 12, b & 4) | (v >= 12 ? 0x80 : 0));
			else
				al[k] = enc(v, b & 4);
		}
		rtc_init(&r, base, 0, 0, 0);
		cmos_write(&r, 0x0B, (uint8_t)(b | 0x20), 0);
		alarm_bcd(&r, al[2], al[1], al[0], 0);
		expect = RTC_NO_EVENT;
		for (uint64_t t = base + 1; t <= base + 2 * 86400; t++)
			if (alarm_matches(al, t, b)) {
				expect = (t - base) * SEC;
				break;
			}
		got = rtc_next_event_ns(&r, 0);
		if (got != expect)
			print_error("alarm %02x %02x %02x mode %02x base %llu: %llu vs %llu\n",
				    al[2], al[1], al[0], b, (unsigned long long)base,
				    (unsigned long long)got, (unsigned long long)expect);
		assert_true(got == expect);
	}
}

/* A snapshot carries the flags, the periodic phase and the seconds not yet
 * ticked; a restore at another time base continues them, and a peer's
 * inconsistent fields are refused with nothing changed. */
static void test_irq_snapshot(void **state)
{
	struct rtc r, q, before;
	struct irq_log l = { 0 };
	uint8_t buf[512];
	struct snap s;
	size_t len;
	const uint64_t now = 7 * SEC + 300000, there = 900 * SEC;

	(void)state;
	rtc_init(&r, T_2000_02_29, 0, 0, 0);
	cmos_write(&r, 0x0A, 0x26, 7 * SEC);		/* 1024 Hz from 7 s */
	cmos_write(&r, 0x0B, 0x52, 7 * SEC);		/* PIE UIE */
	assert_int_equal(cmos_read(&r, 0x0C, 7 * SEC), 0xD0);
	snap_save_init(&s, buf, sizeof(buf));
	assert_int_equal(rtc_snapshot(&r, &s, now), 0);
	len = s.pos;
	rtc_init(&q, 0, 0, 0, 0);
	rtc_connect(&q, log_irq, &l);
	snap_restore_init(&s, buf, len);
	assert_int_equal(rtc_snapshot(&q, &s, there), 0);
	assert_true(rtc_valid(&q));
	assert_int_equal(l.rises, 0);
	/* the next periodic flag as far ahead as it was: 976563 - 300000 */
	assert_true(rtc_next_event_ns(&q, there) == there + 676563);
	rtc_update(&q, there + 676563);
	assert_int_equal(l.rises, 1);
	assert_int_equal(cmos_read(&q, 0x0C, there + 676563), 0xC0);
	/* Flags raised and not yet read travel, and IRQF with them. */
	rtc_update(&r, 9 * SEC);
	assert_true(r.irq_level);
	snap_save_init(&s, buf, sizeof(buf));
	assert_int_equal(rtc_snapshot(&r, &s, 9 * SEC), 0);
	len = s.pos;
	rtc_init(&q, 0, 0, 0, 0);
	snap_restore_init(&s, buf, len);
	assert_int_equal(rtc_snapshot(&q, &s, there), 0);
	assert_true(q.irq_level);
	assert_int_equal(cmos_read(&q, 0x0C, there) & 0xD0, 0xD0);
	/* Lies: a rate that A does not select, a periodic flag further than
	 * one period away, more unseen seconds than the clock has. */
	for (int lie = 0; lie < 3; lie++) {
		snap_save_init(&s, buf, sizeof(buf));
		assert_int_equal(rtc_snapshot(&r, &s, 9 * SEC), 0);
		len = s.pos;
		/* the tail: unseen u64, rate u8, pf_left u64, sub u8 */
		if (lie == 0)
			buf[len - 10] = 7;
		else if (lie == 1)
			memset(&buf[len - 9], 0x7f, 8);
		else
			memset(&buf[len - 18], 0xff, 8);
		rtc_init(&q, 0, 0, 0, 0);
		before = q;
		snap_restore_init(&s, buf, len);
		assert_int_equal(rtc_snapshot(&q, &s, there), -EINVAL);
		assert_memory_equal(&q, &before, sizeof(q));
	}
}

static uint32_t le(const struct rtc *r, int idx, int n)
{
	uint32_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | r->ram[idx + i];
	return v;
}

static void test_memory_size_bytes(void **state)
{
	struct rtc r;

	(void)state;
	rtc_init(&r, 0, 0, 128 * MIB, 0);
	assert_int_equal(le(&r, 0x15, 2), 640);
	assert_int_equal(le(&r, 0x17, 2), 0xffff);	/* 127 MiB: capped */
	assert_int_equal(le(&r, 0x30, 2), 0xffff);
	assert_int_equal(le(&r, 0x34, 2), (128 - 16) * 16);
	assert_int_equal(le(&r, 0x5b, 3), 0);
	rtc_init(&r, 0, 0, 32 * MIB, 0);
	assert_int_equal(le(&r, 0x17, 2), 31 * 1024);
	assert_int_equal(le(&r, 0x30, 2), 31 * 1024);
	assert_int_equal(le(&r, 0x34, 2), 256);
	rtc_init(&r, 0, 0, 3 * GIB, 2 * GIB);
	assert_int_equal(le(&r, 0x34, 2), (3072 - 16) * 16);
	assert_int_equal(le(&r, 0x5b, 3), 32768);
	rtc_init(&r, 0, 0, 512 * 1024, 0);
	assert_int_equal(le(&r, 0x15, 2), 512);
	assert_int_equal(le(&r, 0x17, 2), 0);
	assert_int_equal(le(&r, 0x34, 2), 0);
	rtc_init(&r, 0, 0, 4 * GIB, 1ull << 44);
	assert_int_equal(le(&r, 0x34, 2), (4096 - 16) * 16);
	assert_int_equal(le(&r, 0x5b, 3), 0xffffff);
	rtc_init(&r, 0, 0, 8 * GIB, 0);		/* nonsense: capped */
	/* Read through the ports too: CMOS 0x30/0x31 as a BIOS reads them. */
	rtc_init(&r, 0, 0, 16 * MIB, 0);
	assert_int_equal(cmos_read(&r, 0x30, 0) | cmos_read(&r, 0x31, 0) << 8, 15 * 1024);
	assert_true(rtc_valid(&r));
}

static void test_calendar(void **state)
{
	struct rtc_tm tm;
	uint64_t e;

	(void)state;
	rtc_epoch_to_tm(0, &tm);
	assert_int_equal(tm.year + tm.century * 100, 1970);
	assert_int_equal(tm.mon, 1);
	assert_int_equal(tm.mday, 1);
	rtc_epoch_to_tm(T_2000_02_29, &tm);
	assert_int_equal(tm.century, 20);
	assert_int_equal(tm.year, 0);
	assert_int_equal(tm.mon, 2);
	assert_int_equal(tm.mday, 29);
	rtc_epoch_to_tm(T_2100_03_01 - 1, &tm);		/* 2100 is no leap year */
	assert_int_equal(tm.mon, 2);
	assert_int_equal(tm.mday, 28);
	rtc_epoch_to_tm(RTC_MAX_EPOCH, &tm);
	assert_int_equal(tm.century, 99);
	assert_int_equal(tm.year, 99);
	assert_int_equal(tm.mon, 12);
	assert_int_equal(tm.mday, 31);
	assert_int_equal(tm.sec, 59);
	assert_true(rtc_tm_to_epoch(&tm) == RTC_MAX_EPOCH);
	rtc_epoch_to_tm(UINT64_MAX, &tm);		/* clamped */
	assert_true(rtc_tm_to_epoch(&tm) == RTC_MAX_EPOCH);
	srand(146818);
	for (int i = 0; i < 200000; i++) {
		e = ((uint64_t)rand() << 31 | (uint64_t)rand()) % (RTC_MAX_EPOCH + 1);
		rtc_epoch_to_tm(e, &tm);
		assert_true(tm.mon >= 1 && tm.mon <= 12 && tm.mday >= 1 && tm.mday <= 31);
		assert_true(tm.hour < 24 && tm.min < 60 && tm.sec < 60);
		assert_true(rtc_tm_to_epoch(&tm) == e);
	}
	/* Any bytes at all convert without trouble. */
	for (int i = 0; i < 200000; i++) {
		tm = (struct rtc_tm){ (uint8_t)rand(), (uint8_t)rand(), (uint8_t)rand(),
				      (uint8_t)rand(), (uint8_t)rand(), (uint8_t)rand(),
				      (uint8_t)rand() };
		assert_true(rtc_tm_to_epoch(&tm) <= RTC_MAX_EPOCH);
	}
	tm = (struct rtc_tm){ 0, 0, 0, 1, 1, 0, 19 };	/* 1900: before 1970 */
	assert_true(rtc_tm_to_epoch(&tm) == 0);
}

static void test_fuzz(void **state)
{
	struct rtc r;
	uint64_t now = 0;
	uint32_t v;

	(void)state;
	srand(70);
	rtc_init(&r, T_2024_02_29_134556, 0, 256 * MIB, 0);
	for (int i = 0; i < 300000; i++) {
		now += (uint64_t)(rand() % 1000) * 1000000;
		v = (uint32_t)rand();
		assert_int_equal(rtc_io(&r, (uint16_t)(0x70 + (rand() & 1)),
					(uint8_t)(1u << (rand() % 3)), rand() & 1, &v, now), 0);
		assert_true(rtc_valid(&r));
		assert_true(guest_epoch(&r, now) <= RTC_MAX_EPOCH);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bcd_24h_and_running),
		cmocka_unit_test(test_binary_and_12_hour),
		cmocka_unit_test(test_linux_set_time),
		cmocka_unit_test(test_registers_and_ram),
		cmocka_unit_test(test_update_and_alarm_irqs),
		cmocka_unit_test(test_periodic_irq),
		cmocka_unit_test(test_alarm_search),
		cmocka_unit_test(test_irq_snapshot),
		cmocka_unit_test(test_memory_size_bytes),
		cmocka_unit_test(test_calendar),
		cmocka_unit_test(test_fuzz),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
