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
	r.ram[0x0C] = 0xC0;			/* as a future interrupt would */
	cmos_write(&r, 0x0C, 0x00, 0);		/* read-only */
	assert_int_equal(cmos_read(&r, 0x0C, 0), 0xC0);
	assert_int_equal(cmos_read(&r, 0x0C, 0), 0x00);	/* read clears */
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
		cmocka_unit_test(test_memory_size_bytes),
		cmocka_unit_test(test_calendar),
		cmocka_unit_test(test_fuzz),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
