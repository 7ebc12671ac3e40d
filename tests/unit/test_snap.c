/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Device snapshots (hv/vdev/snap.c and every X_snapshot): the field
 * primitives, round trips of every device in several states (also at
 * another time base), and hostile input: truncated, bit-flipped and random
 * buffers are refused with the device untouched, or give a valid device.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>
#include "hv/vdev/devices.h"
#include "hv/vdev/snap.h"

#define SEC 1000000000ull
#define MS 1000000ull
#define T_SAVE (50 * SEC + 123457)	/* states are saved at this time */
#define T_OTHER (9000 * SEC + 77)	/* ... and restored at this one */
#define BUF 8192

/* ---- primitives ------------------------------------------------------- */

static void test_primitives_round_trip(void **state)
{
	uint8_t buf[64], a8 = 0xab, b8 = 0;
	uint16_t a16 = 0x1234, b16 = 0;
	uint32_t a32 = 0x11223344, b32 = 0;
	uint64_t a64 = 0x0102030405060708ull, b64 = 0;
	bool at = true, bt = false;
	char as[5] = "ferr", bs[5] = { 0 };
	struct snap s;

	(void)state;
	snap_save_init(&s, buf, sizeof(buf));
	assert_int_equal(snap_version(&s, 7), 0);
	snap_u8(&s, &a8);
	snap_u16(&s, &a16);
	snap_u32(&s, &a32);
	snap_u64(&s, &a64);
	snap_bool(&s, &at);
	snap_bytes(&s, as, 4);
	assert_int_equal(s.err, 0);
	assert_int_equal(s.pos, 1 + 1 + 2 + 4 + 8 + 1 + 4);
	/* Fixed little-endian layout. */
	assert_memory_equal(buf, "\x07\xab\x34\x12\x44\x33\x22\x11"
				 "\x08\x07\x06\x05\x04\x03\x02\x01\x01" "ferr", 21);
	snap_restore_init(&s, buf, 21);
	assert_int_equal(snap_version(&s, 7), 0);
	snap_u8(&s, &b8);
	snap_u16(&s, &b16);
	snap_u32(&s, &b32);
	snap_u64(&s, &b64);
	snap_bool(&s, &bt);
	snap_bytes(&s, bs, 4);
	assert_int_equal(s.err, 0);
	assert_int_equal(s.pos, 21);
	assert_int_equal(b8, a8);
	assert_int_equal(b16, a16);
	assert_int_equal(b32, a32);
	assert_true(b64 == a64);
	assert_true(bt);
	assert_string_equal(bs, "ferr");
	/* Measuring: no buffer, only the size. */
	snap_save_init(&s, NULL, 0);
	snap_u64(&s, &a64);
	snap_bytes(&s, as, 4);
	assert_int_equal(s.err, 0);
	assert_int_equal(s.pos, 12);
}

static void test_primitives_errors(void **state)
{
	uint8_t buf[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, out[8];
	uint32_t v32 = 0xdeadbeef;
	uint64_t v64 = 42;
	bool b = false;
	struct snap s;

	(void)state;
	snap_save_init(&s, out, 5);
	snap_u32(&s, &v32);
	snap_u32(&s, &v32);			/* does not fit */
	assert_int_equal(s.err, -EOVERFLOW);
	assert_int_equal(s.pos, 4);
	snap_u8(&s, buf);			/* sticky: no-op */
	assert_int_equal(s.pos, 4);
	assert_int_equal(snap_invalid(&s), -EOVERFLOW);	/* first error kept */

	snap_restore_init(&s, buf, 7);
	snap_u64(&s, &v64);			/* truncated */
	assert_int_equal(s.err, -EINVAL);
	assert_true(v64 == 42);			/* untouched */
	snap_u8(&s, &buf[0]);
	assert_int_equal(s.pos, 0);

	snap_restore_init(&s, buf, 8);
	snap_bool(&s, &b);			/* 1: fine */
	assert_true(b);
	snap_bool(&s, &b);			/* 2: not a bool */
	assert_int_equal(s.err, -EINVAL);
	assert_true(b);

	snap_restore_init(&s, buf, 8);
	assert_int_equal(snap_version(&s, 2), -EINVAL);	/* found 1 */
	snap_restore_init(&s, NULL, 100);
	snap_u8(&s, &buf[0]);
	assert_int_equal(s.err, -EINVAL);
	snap_restore_init(&s, buf, 8);
	snap_bytes(&s, out, 0);			/* zero length: fine */
	assert_int_equal(s.err, 0);
	assert_int_equal(snap_invalid(&s), -EINVAL);
}

/* ---- the devices, behind one interface ------------------------------- */

struct devtype {
	const char *name;
	size_t size;
	void (*init)(void *dev);
	int (*snapshot)(void *dev, struct snap *s, uint64_t now);
	bool (*valid)(const void *dev);
	int (*io)(void *dev, uint16_t port, uint8_t size, bool in, uint32_t *val, uint64_t now);
	uint16_t ports[8];
	int nports;
	void (*states[6])(void *dev);	/* build interesting states */
	uint16_t free_port;		/* reads of it vary with absolute time */
	uint8_t free_bits;		/* (the PIT's refresh toggle) */
};

static void wr(const struct devtype *t, void *dev, uint16_t port, uint8_t v, uint64_t now)
{
	uint32_t x = v;

	assert_int_equal(t->io(dev, port, 1, false, &x, now), 0);
}

static uint8_t rd(const struct devtype *t, void *dev, uint16_t port, uint64_t now)
{
	uint32_t x = 0;

	assert_int_equal(t->io(dev, port, 1, true, &x, now), 0);
	return (uint8_t)x;
}

/* PIC */
static void pic_init_(void *d) { pic_init(d); }
static int pic_snap_(void *d, struct snap *s, uint64_t now) { (void)now; return pic_snapshot(d, s); }
static bool pic_valid_(const void *d) { return pic_valid(d); }
static int pic_io_(void *d, uint16_t port, uint8_t size, bool in, uint32_t *v, uint64_t now)
{
	(void)now;
	return pic_io(d, port, size, in, v);
}

static const struct devtype pic_type;

static void pic_program(void *d, uint8_t icw4)
{
	static const uint8_t seq[][2] = {
		{ 0x20, 0x11 }, { 0x21, 0x30 }, { 0x21, 0x04 }, { 0x21, 0 },
		{ 0xA0, 0x11 }, { 0xA1, 0x38 }, { 0xA1, 0x02 }, { 0xA1, 0x01 },
		{ 0x21, 0x00 }, { 0xA1, 0x00 },
	};

	for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++)
		wr(&pic_type, d, seq[i][0], i == 3 ? icw4 : seq[i][1], 0);
}

static void pic_st_nested(void *d)
{
	pic_program(d, 0x01);
	wr(&pic_type, d, 0x4D1, 0x06, 0);
	pic_set_irq(d, 9, 1);
	pic_set_irq(d, 3, 1);
	pic_set_irq(d, 3, 0);
	pic_set_irq(d, 1, 1);
	pic_set_irq(d, 1, 0);
	(void)pic_ack(d);
	(void)pic_ack(d);
	pic_set_irq(d, 14, 1);
	wr(&pic_type, d, 0x21, 0x10, 0);
}

static void pic_st_midinit(void *d)
{
	pic_set_irq(d, 5, 1);
	wr(&pic_type, d, 0x20, 0x11, 0);
	wr(&pic_type, d, 0x21, 0x48, 0);
}

static void pic_st_modes(void *d)
{
	pic_program(d, 0x13);			/* AEOI + SFNM */
	wr(&pic_type, d, 0x20, 0x80, 0);	/* rotate in AEOI */
	wr(&pic_type, d, 0x20, 0xC5, 0);
	wr(&pic_type, d, 0x20, 0x6B, 0);	/* SMM, read ISR */
	wr(&pic_type, d, 0xA0, 0x0C, 0);	/* poll pending */
	pic_set_irq(d, 11, 1);
	pic_set_irq(d, 11, 0);
}

static const struct devtype pic_type = {
	"pic", sizeof(struct pic), pic_init_, pic_snap_, pic_valid_, pic_io_,
	{ 0x20, 0x21, 0xA0, 0xA1, 0x4D0, 0x4D1 }, 6,
	{ NULL, pic_st_nested, pic_st_midinit, pic_st_modes },
	0, 0,
};

/* PIT */
static void pit_init_(void *d) { pit_init(d); }
static int pit_snap_(void *d, struct snap *s, uint64_t now) { return pit_snapshot(d, s, now); }
static bool pit_valid_(const void *d) { return pit_valid(d); }
static int pit_io_(void *d, uint16_t port, uint8_t size, bool in, uint32_t *v, uint64_t now)
{
	return pit_io(d, port, size, in, v, now);
}

static const struct devtype pit_type;

static void pit_load(void *d, int ch, uint8_t ctl, uint16_t count, uint64_t now)
{
	wr(&pit_type, d, 0x43, ctl, now);
	wr(&pit_type, d, (uint16_t)(0x40 + ch), (uint8_t)count, now);
	wr(&pit_type, d, (uint16_t)(0x40 + ch), (uint8_t)(count >> 8), now);
}

static void pit_st_periodic(void *d)
{
	pit_load(d, 0, 0x34, 11932, T_SAVE - 7 * SEC - 12345);
	while (pit_update(d, T_SAVE - SEC))
		;
	wr(&pit_type, d, 0x61, 0x03, T_SAVE - 20 * MS);
	pit_load(d, 2, 0xB6, 1234, T_SAVE - 15 * MS);
}

static void pit_st_latched(void *d)
{
	pit_load(d, 0, 0x30, 60000, T_SAVE - 3 * MS);	/* mode 0, running */
	wr(&pit_type, d, 0x43, 0x00, T_SAVE - 2 * MS);	/* latch */
	(void)rd(&pit_type, d, 0x40, T_SAVE - MS);	/* half read */
	wr(&pit_type, d, 0x43, 0x79, T_SAVE - MS);	/* ch1 mode 4 BCD */
	wr(&pit_type, d, 0x41, 0x99, T_SAVE - MS);	/* LSB only so far */
	wr(&pit_type, d, 0x43, 0xE4, T_SAVE);		/* status of ch1 */
	wr(&pit_type, d, 0x61, 0x01, T_SAVE - 9 * MS);
	pit_load(d, 2, 0xB2, 500, T_SAVE - 9 * MS);	/* mode 1, waiting */
}

static void pit_st_gated(void *d)
{
	wr(&pit_type, d, 0x61, 0x01, T_SAVE - SEC);
	pit_load(d, 2, 0xB0, 0xffff, T_SAVE - SEC);
	wr(&pit_type, d, 0x61, 0x00, T_SAVE - SEC / 2);	/* paused */
	pit_load(d, 0, 0x3A, 100, T_SAVE - SEC);	/* mode 5 on ch0: never */
}

static const struct devtype pit_type = {
	"pit", sizeof(struct pit), pit_init_, pit_snap_, pit_valid_, pit_io_,
	{ 0x40, 0x41, 0x42, 0x43, 0x61 }, 5,
	{ NULL, pit_st_periodic, pit_st_latched, pit_st_gated },
	0x61, 0x10,
};

/* UART */
static void uart_init_(void *d) { uart_init(d, 0x3F8, NULL, NULL, NULL); }
static int uart_snap_(void *d, struct snap *s, uint64_t now) { (void)now; return uart_snapshot(d, s); }
static bool uart_valid_(const void *d) { return uart_valid(d); }
static int uart_io_(void *d, uint16_t port, uint8_t size, bool in, uint32_t *v, uint64_t now)
{
	(void)now;
	return uart_io(d, port, size, in, v);
}

static const struct devtype uart_type;

static void uart_st_wrapped_fifo(void *d)
{
	wr(&uart_type, d, 0x3FA, 0x87, 0);
	wr(&uart_type, d, 0x3FC, 0x0B, 0);
	wr(&uart_type, d, 0x3F9, 0x07, 0);
	for (int i = 0; i < 12; i++)
		assert_true(uart_rx_push(d, (uint8_t)i));
	for (int i = 0; i < 10; i++)
		(void)rd(&uart_type, d, 0x3F8, 0);
	for (int i = 0; i < 9; i++)
		assert_true(uart_rx_push(d, (uint8_t)(100 + i)));	/* wraps */
	wr(&uart_type, d, 0x3FF, 0x5a, 0);
}

static void uart_st_loopback(void *d)
{
	wr(&uart_type, d, 0x3FA, 0x01, 0);
	wr(&uart_type, d, 0x3FC, 0x1F, 0);
	wr(&uart_type, d, 0x3F9, 0x0F, 0);
	for (int i = 0; i < 18; i++)
		wr(&uart_type, d, 0x3F8, (uint8_t)i, 0);	/* overrun */
	wr(&uart_type, d, 0x3FB, 0x9B, 0);		/* DLAB */
	wr(&uart_type, d, 0x3F8, 0x30, 0);
	wr(&uart_type, d, 0x3F9, 0x02, 0);
}

static void uart_st_thre(void *d)
{
	wr(&uart_type, d, 0x3FC, 0x08, 0);
	wr(&uart_type, d, 0x3F9, 0x02, 0);		/* THRE pending, line up */
	assert_true(uart_rx_push(d, 'k'));		/* non-FIFO: one byte */
}

static const struct devtype uart_type = {
	"uart", sizeof(struct uart), uart_init_, uart_snap_, uart_valid_, uart_io_,
	{ 0x3F8, 0x3F9, 0x3FA, 0x3FB, 0x3FC, 0x3FD, 0x3FE, 0x3FF }, 8,
	{ NULL, uart_st_wrapped_fifo, uart_st_loopback, uart_st_thre },
	0, 0,
};

/* RTC */
static void rtc_init_(void *d) { rtc_init(d, 1709214356, 0, 256ull << 20, 1ull << 32); }
static int rtc_snap_(void *d, struct snap *s, uint64_t now) { return rtc_snapshot(d, s, now); }
static bool rtc_valid_(const void *d) { return rtc_valid(d); }
static int rtc_io_(void *d, uint16_t port, uint8_t size, bool in, uint32_t *v, uint64_t now)
{
	return rtc_io(d, port, size, in, v, now);
}

static const struct devtype rtc_type;

static void rtc_set(void *d, uint8_t idx, uint8_t v, uint64_t now)
{
	wr(&rtc_type, d, 0x70, idx, now);
	wr(&rtc_type, d, 0x71, v, now);
}

static void rtc_st_ram(void *d)
{
	rtc_set(d, 0x0B, 0x04, T_SAVE - SEC / 3);	/* binary 12 h */
	for (int i = 0x0E; i < 0x80; i += 7)
		rtc_set(d, (uint8_t)i, (uint8_t)(i * 3), T_SAVE - SEC);
	wr(&rtc_type, d, 0x70, 0x85, T_SAVE);		/* NMI masked, index 5 */
}

static void rtc_st_held(void *d)
{
	rtc_set(d, 0x0B, 0x82, T_SAVE - 2 * SEC);
	rtc_set(d, 0x09, 0x42, T_SAVE - SEC);
	rtc_set(d, 0x08, 0x1f, T_SAVE - SEC);		/* nonsense month */
}

static void rtc_st_reset_time(void *d)
{
	rtc_set(d, 0x00, 0x07, T_SAVE - 1234567);	/* sets the clock */
	rtc_set(d, 0x0A, 0x2f, T_SAVE);
}

static const struct devtype rtc_type = {
	"rtc", sizeof(struct rtc), rtc_init_, rtc_snap_, rtc_valid_, rtc_io_,
	{ 0x70, 0x71 }, 2,
	{ NULL, rtc_st_ram, rtc_st_held, rtc_st_reset_time },
	0, 0,
};

static const struct devtype *const types[] = { &pic_type, &pit_type, &uart_type, &rtc_type };

/* ---- helpers ---------------------------------------------------------- */

static size_t save(const struct devtype *t, void *dev, uint8_t *buf, uint64_t now)
{
	struct snap s;

	snap_save_init(&s, buf, BUF);
	assert_int_equal(t->snapshot(dev, &s, now), 0);
	return s.pos;
}

static void *build(const struct devtype *t, int st)
{
	void *dev = calloc(1, t->size);

	assert_non_null(dev);
	t->init(dev);
	if (t->states[st])
		t->states[st](dev);
	assert_true(t->valid(dev));
	return dev;
}

/* Random port traffic on a restored device: it must keep working. */
static void exercise(const struct devtype *t, void *dev, uint64_t now, unsigned int seed)
{
	uint32_t v;

	srand(seed);
	for (int i = 0; i < 200; i++) {
		v = (uint32_t)rand();
		now += (uint64_t)(rand() % 1000) * 1000;
		assert_int_equal(t->io(dev, t->ports[rand() % t->nports],
				       (uint8_t)(1u << (rand() % 3)), rand() & 1, &v, now), 0);
		assert_true(t->valid(dev));
	}
}

static int nstates(const struct devtype *t)
{
	int n = 1;

	while (n < 6 && t->states[n])
		n++;
	return n;
}

/* ---- round trips ------------------------------------------------------ */

static void test_round_trip_every_device(void **state)
{
	uint8_t a[BUF], b[BUF], c[BUF];

	(void)state;
	for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
		const struct devtype *t = types[ti];

		for (int st = 0; st < nstates(t); st++) {
			void *src = build(t, st), *dst = build(t, 0), *dst2 = build(t, 0);
			size_t n = save(t, src, a, T_SAVE);
			struct snap s;

			/* Same time base, then another one: identical state. */
			snap_restore_init(&s, a, n);
			assert_int_equal(t->snapshot(dst, &s, T_SAVE), 0);
			assert_int_equal(s.pos, n);
			assert_int_equal(save(t, dst, b, T_SAVE), n);
			assert_memory_equal(a, b, n);
			snap_restore_init(&s, a, n);
			assert_int_equal(t->snapshot(dst2, &s, T_OTHER), 0);
			assert_int_equal(save(t, dst2, c, T_OTHER), n);
			assert_memory_equal(a, c, n);
			/* And they behave the same from there on. */
			for (int i = 0; i < t->nports; i++) {
				uint8_t mask = t->ports[i] == t->free_port ? ~t->free_bits : 0xff;

				for (uint64_t dt = 0; dt < 3 * MS; dt += MS)
					assert_int_equal(rd(t, src, t->ports[i], T_SAVE + dt) & mask,
							 rd(t, dst2, t->ports[i], T_OTHER + dt) & mask);
			}
			free(src);
			free(dst);
			free(dst2);
		}
	}
}

static void test_overflow_on_save(void **state)
{
	uint8_t buf[BUF];
	struct snap s;

	(void)state;
	for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
		const struct devtype *t = types[ti];
		void *dev = build(t, 1);
		size_t n = save(t, dev, buf, T_SAVE);

		snap_save_init(&s, NULL, 0);		/* measuring agrees */
		assert_int_equal(t->snapshot(dev, &s, T_SAVE), 0);
		assert_int_equal(s.pos, n);
		snap_save_init(&s, buf, n - 1);
		assert_int_equal(t->snapshot(dev, &s, T_SAVE), -EOVERFLOW);
		free(dev);
	}
}

/* ---- hostile input ---------------------------------------------------- */

/* Restore from buf: either refused with dev unchanged, or a valid device
 * that keeps working.  Returns whether it was accepted. */
static bool try_restore(const struct devtype *t, void *dev, const uint8_t *buf, size_t len,
			unsigned int seed)
{
	uint8_t before[BUF], after[BUF];
	size_t n = save(t, dev, before, T_OTHER);
	struct snap s;
	int rc;

	snap_restore_init(&s, buf, len);
	rc = t->snapshot(dev, &s, T_OTHER);
	assert_int_equal(rc, s.err);
	if (rc) {
		assert_int_equal(rc, -EINVAL);
		assert_int_equal(save(t, dev, after, T_OTHER), n);
		assert_memory_equal(before, after, n);
		return false;
	}
	assert_true(t->valid(dev));
	exercise(t, dev, T_OTHER, seed);
	return true;
}

static void test_truncated_input(void **state)
{
	uint8_t buf[BUF];

	(void)state;
	for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
		const struct devtype *t = types[ti];

		for (int st = 0; st < nstates(t); st++) {
			void *src = build(t, st), *dst = build(t, (st + 1) % nstates(t));
			size_t n = save(t, src, buf, T_SAVE);

			for (size_t len = 0; len < n; len++)
				assert_false(try_restore(t, dst, buf, len, (unsigned int)len));
			assert_true(try_restore(t, dst, buf, n, 1));
			free(src);
			free(dst);
		}
	}
}

/* Every byte of every state's snapshot replaced by a few values. */
static void test_corrupted_bytes(void **state)
{
	static const uint8_t vals[] = { 0x00, 0x01, 0x02, 0x07, 0x80, 0xff };
	uint8_t good[BUF], bad[BUF];
	int accepted = 0, refused = 0;

	(void)state;
	for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
		const struct devtype *t = types[ti];

		for (int st = 0; st < nstates(t); st++) {
			void *src = build(t, st), *dst = build(t, 0);
			size_t n = save(t, src, good, T_SAVE);

			for (size_t i = 0; i < n; i++) {
				for (size_t v = 0; v < sizeof(vals); v++) {
					memcpy(bad, good, n);
					bad[i] = vals[v];
					if (try_restore(t, dst, bad, n, (unsigned int)(i * 7 + v)))
						accepted++;
					else
						refused++;
				}
			}
			free(src);
			free(dst);
		}
	}
	assert_true(accepted > 0);
	assert_true(refused > 0);
}

/* Random buffers: with the right version byte (to get past it) or not. */
static void test_random_buffers(void **state)
{
	uint8_t buf[BUF];

	(void)state;
	for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
		const struct devtype *t = types[ti];
		void *dst = build(t, 1);
		size_t n = save(t, dst, buf, T_SAVE);
		int accepted = 0;

		srand(31337 + (unsigned int)ti);
		for (int round = 0; round < 4000; round++) {
			size_t len = (size_t)rand() % (n + 8);

			for (size_t i = 0; i < len; i++)
				buf[i] = (uint8_t)(rand() % 3 ? rand() % 3 : rand());
			if (round % 2 && len)
				buf[0] = 1;		/* the version of every device */
			accepted += try_restore(t, dst, buf, len, (unsigned int)round);
		}
		(void)accepted;		/* random data is mostly refused */
		free(dst);
	}
}

/* Fields a single corrupted byte may leave plausible, checked on purpose. */
static void test_specific_refusals(void **state)
{
	uint8_t buf[BUF];
	struct uart com1, com2;
	struct pit pit;
	struct snap s;
	size_t n;

	(void)state;
	/* A COM1 state does not restore into a UART at another base. */
	uart_init(&com1, 0x3F8, NULL, NULL, NULL);
	uart_init(&com2, 0x2F8, NULL, NULL, NULL);
	snap_save_init(&s, buf, BUF);
	assert_int_equal(uart_snapshot(&com1, &s), 0);
	n = s.pos;
	snap_restore_init(&s, buf, n);
	assert_int_equal(uart_snapshot(&com2, &s), -EINVAL);
	assert_int_equal(com2.base, 0x2F8);
	/* The PIT's sub-second remainder (channel 0 at offset 18: after the
	 * version, reload, mode, access, five flags and the tick count) must
	 * be below a second, and zero for a stopped counter. */
	pit_init(&pit);
	snap_save_init(&s, buf, BUF);
	assert_int_equal(pit_snapshot(&pit, &s, T_SAVE), 0);
	n = s.pos;
	buf[18 + 4] = 0x40;			/* 2^30 ns > 1 s */
	snap_restore_init(&s, buf, n);
	assert_int_equal(pit_snapshot(&pit, &s, T_SAVE), -EINVAL);
	buf[18 + 4] = 0;
	buf[18] = 1;				/* stopped, yet 1 ns into a tick */
	snap_restore_init(&s, buf, n);
	assert_int_equal(pit_snapshot(&pit, &s, T_SAVE), -EINVAL);
	buf[18] = 0;
	snap_restore_init(&s, buf, n);
	assert_int_equal(pit_snapshot(&pit, &s, T_SAVE), 0);
}

/* ---- the aggregate ---------------------------------------------------- */

static void noop_tx(void *ctx, uint8_t b)
{
	(void)ctx;
	(void)b;
}

static struct vm_devices *make_devices(void)
{
	struct vdev_config cfg = {
		.ram_below_4g = 128ull << 20, .epoch_s = 1709214356, .now_ns = 0,
		.tx = noop_tx, .nr_cpus = 2, .tsc_hz = 2000000000ull,
	};
	struct vm_devices *d;

	assert_int_equal(vdev_create(&cfg, &d), 0);
	return d;
}

static void dio(struct vm_devices *d, uint16_t port, uint8_t size, bool in, uint32_t v, uint64_t now)
{
	assert_int_equal(vdev_io(d, port, size, in, &v, now), 0);
}

static size_t dsave(struct vm_devices *d, uint8_t *buf, uint64_t now)
{
	struct snap s;

	snap_save_init(&s, buf, BUF);
	assert_int_equal(vdev_snapshot(d, &s, now), 0);
	return s.pos;
}

static void test_devices_round_trip_and_hostile(void **state)
{
	uint8_t a[BUF], b[BUF], bad[BUF];
	struct vm_devices *src = make_devices(), *dst = make_devices();
	struct snap s;
	size_t n;

	(void)state;
	/* A guest mid-flight: timer running, a byte in COM1, IRQ 4 high. */
	dio(src, 0x20, 1, false, 0x11, 0);
	dio(src, 0x21, 1, false, 0x20, 0);
	dio(src, 0x21, 1, false, 0x04, 0);
	dio(src, 0x21, 1, false, 0x01, 0);
	dio(src, 0x21, 1, false, 0xEE, 0);
	dio(src, 0x43, 1, false, 0x34, 0);
	dio(src, 0x40, 1, false, 11932 & 0xff, 0);
	dio(src, 0x40, 1, false, 11932 >> 8, 0);
	dio(src, 0x3FC, 1, false, 0x0B, 0);
	dio(src, 0x3F9, 1, false, 0x01, 0);
	assert_true(vdev_console_input(src, 'x'));
	/* vCPU 1's APIC timer armed mid-count, an I/O APIC pin programmed */
	uint32_t v = 0x31;
	assert_int_equal(vdev_mmio(src, 1, 0xFEE00320, 4, true, &v, 0), 0);	/* LVT timer */
	v = 5000000;
	assert_int_equal(vdev_mmio(src, 1, 0xFEE00380, 4, true, &v, 0), 0);	/* initial count */
	v = 0x10 + 2 * 9;
	assert_int_equal(vdev_mmio(src, 0, 0xFEC00000, 4, true, &v, 0), 0);	/* pin 9 low */
	v = 0x8041;
	assert_int_equal(vdev_mmio(src, 0, 0xFEC00010, 4, true, &v, 0), 0);
	assert_int_equal(vdev_wrmsr(src, 1, MSR_KVM_SYSTEM_TIME_NEW, 0x5001, 0, 0),
			 VDEV_MSR_PVCLOCK);
	assert_int_equal(vdev_pending_vector(src, 0, T_SAVE), 0x20);
	n = dsave(src, a, T_SAVE);
	assert_true(n > 100);

	snap_restore_init(&s, a, n);
	assert_int_equal(vdev_snapshot(dst, &s, T_OTHER), 0);
	assert_int_equal(dsave(dst, b, T_OTHER), n);
	assert_memory_equal(a, b, n);
	assert_int_equal(vdev_next_event_ns(dst, 0, T_OTHER) - T_OTHER,
			 vdev_next_event_ns(src, 0, T_SAVE) - T_SAVE);
	uint64_t msr = 0;
	assert_int_equal(vdev_rdmsr(dst, 1, MSR_KVM_SYSTEM_TIME_NEW, &msr, T_OTHER), 0);
	assert_int_equal(msr, 0x5001);
	assert_int_equal(dst->ioapic.rte[9] & 0x1ffff, 0x8041);
	assert_int_equal(vdev_ack(dst, 0, T_OTHER), 0x20);
	assert_int_equal(vdev_pending_vector(dst, 0, T_OTHER), -1);	/* 0 in service */
	dio(dst, 0x20, 1, false, 0x20, T_OTHER);
	assert_int_equal(vdev_pending_vector(dst, 0, T_OTHER), 0x24);
	/* vCPU 1's timer fired long ago on both sides: vector 0x31 waits */
	assert_int_equal(vdev_pending_vector(dst, 1, T_OTHER), 0x31);

	/* Truncations and corruptions: refused as a whole, dst unchanged. */
	n = dsave(src, a, T_SAVE);
	dsave(dst, b, T_OTHER);
	for (size_t len = 0; len < n; len++) {
		snap_restore_init(&s, a, len);
		assert_int_equal(vdev_snapshot(dst, &s, T_OTHER), -EINVAL);
	}
	for (size_t i = 0; i < n; i++) {
		memcpy(bad, a, n);
		bad[i] ^= 0xff;
		snap_restore_init(&s, bad, n);
		if (vdev_snapshot(dst, &s, T_OTHER) == 0) {
			assert_true(pic_valid(&dst->pic) && pit_valid(&dst->pit) &&
				    uart_valid(&dst->com1) && rtc_valid(&dst->rtc) &&
				    ioapic_valid(&dst->ioapic) && lapic_valid(&dst->lapic[0]) &&
				    lapic_valid(&dst->lapic[1]));
			snap_restore_init(&s, b, n);	/* back to the reference */
			assert_int_equal(vdev_snapshot(dst, &s, T_OTHER), 0);
		}
		assert_int_equal(dsave(dst, bad, T_OTHER), n);
		assert_memory_equal(bad, b, n);
	}
	/* A snapshot whose PIC or I/O APIC does not see COM1's line is refused. */
	src->pic.lines ^= 1u << 4;
	n = dsave(src, a, T_SAVE);
	snap_restore_init(&s, a, n);
	assert_int_equal(vdev_snapshot(dst, &s, T_OTHER), -EINVAL);
	assert_int_equal(dsave(dst, bad, T_OTHER), n);
	assert_memory_equal(bad, b, n);
	src->pic.lines ^= 1u << 4;
	src->ioapic.lines ^= 1u << 4;
	n = dsave(src, a, T_SAVE);
	snap_restore_init(&s, a, n);
	assert_int_equal(vdev_snapshot(dst, &s, T_OTHER), -EINVAL);
	src->ioapic.lines ^= 1u << 4;
	/* ... and so is one made for another number of vCPUs */
	struct vdev_config one = src->cfg;
	struct vm_devices *uni;
	one.nr_cpus = 1;
	assert_int_equal(vdev_create(&one, &uni), 0);
	n = dsave(uni, a, T_SAVE);
	snap_restore_init(&s, a, n);
	assert_int_equal(vdev_snapshot(dst, &s, T_OTHER), -EINVAL);
	assert_int_equal(dsave(dst, bad, T_OTHER), dsave(dst, b, T_OTHER));
	vdev_destroy(uni);
	vdev_destroy(src);
	vdev_destroy(dst);
}

static int no_ram(void *ctx, uint64_t gpa, void *buf, size_t len)
{
	(void)ctx, (void)gpa, (void)buf, (void)len;
	return -EFAULT;
}

static int no_ram_write(void *ctx, uint64_t gpa, const void *buf, size_t len)
{
	(void)ctx, (void)gpa, (void)buf, (void)len;
	return -EFAULT;
}

static int no_tx(void *ctx, const uint8_t *frame, size_t len, const struct vnet_offload *off)
{
	(void)ctx, (void)frame, (void)len, (void)off;
	return 0;
}

/* A line level that no device drives, or the NIC's INTx and its I/O APIC
 * pin at odds: a peer's lie (found by tests/fuzz), refused whole.  Taken,
 * it would leave a pin high for ever or the NIC's interrupt lost. */
static void test_lines_follow_their_devices(void **state)
{
	struct vdev_config cfg = {
		.ram_below_4g = 128ull << 20, .epoch_s = 1709214356, .tx = noop_tx,
		.nr_cpus = 1, .tsc_hz = 2000000000ull, .nic_on = true,
		.nic_mac = { 0x52, 0x54, 0, 1, 2, 3 }, .nic_mem = { NULL, no_ram, no_ram_write },
		.nic_tx = no_tx,
	};
	uint8_t a[BUF], ref[BUF], now[BUF];
	struct vm_devices *src, *dst;
	struct snap s;
	size_t n, m;

	(void)state;
	assert_int_equal(vdev_create(&cfg, &src), 0);
	assert_int_equal(vdev_create(&cfg, &dst), 0);
	m = dsave(dst, ref, T_OTHER);
	/* the NIC raises INTx (an ISR bit, MSI-X off): pin VNIC_IRQ goes
	 * high with it */
	src->pci->net.vp.isr = VIRTIO_ISR_QUEUE;
	vpci_fn_set_intx(&src->pci->net.vp.fn, 1);
	assert_true(src->ioapic.lines & (1u << VNIC_IRQ));
	n = dsave(src, a, T_SAVE);
	snap_restore_init(&s, a, n);
	assert_int_equal(vdev_snapshot(dst, &s, T_OTHER), 0);
	assert_true(dst->ioapic.lines & (1u << VNIC_IRQ));
	assert_true(vpci_fn_intx_line(&dst->pci->net.vp.fn));
	snap_restore_init(&s, ref, m);		/* back to the reference */
	assert_int_equal(vdev_snapshot(dst, &s, T_OTHER), 0);
	/* the lies: the pin low under a raised INTx, the pin high with INTx
	 * low, a pin and a PIC line with no device at all */
	static const struct { uint32_t ioapic_flip; uint16_t pic_flip; bool intx; } lies[] = {
		{ 1u << VNIC_IRQ, 0, true }, { 1u << VNIC_IRQ, 0, false },
		{ 1u << 17, 0, false }, { 0, 1u << 5, false },
	};
	for (unsigned int i = 0; i < sizeof(lies) / sizeof(lies[0]); i++) {
		src->pci->net.vp.isr = lies[i].intx ? VIRTIO_ISR_QUEUE : 0;
		vpci_fn_set_intx(&src->pci->net.vp.fn, lies[i].intx);
		src->ioapic.lines ^= lies[i].ioapic_flip;
		src->pic.lines ^= lies[i].pic_flip;
		n = dsave(src, a, T_SAVE);
		src->ioapic.lines ^= lies[i].ioapic_flip;
		src->pic.lines ^= lies[i].pic_flip;
		snap_restore_init(&s, a, n);
		assert_int_equal(vdev_snapshot(dst, &s, T_OTHER), -EINVAL);
		assert_int_equal(dsave(dst, now, T_OTHER), m);	/* untouched */
		assert_memory_equal(now, ref, m);
	}
	vdev_destroy(src);
	vdev_destroy(dst);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_primitives_round_trip),
		cmocka_unit_test(test_primitives_errors),
		cmocka_unit_test(test_round_trip_every_device),
		cmocka_unit_test(test_lines_follow_their_devices),
		cmocka_unit_test(test_overflow_on_save),
		cmocka_unit_test(test_truncated_input),
		cmocka_unit_test(test_corrupted_bytes),
		cmocka_unit_test(test_random_buffers),
		cmocka_unit_test(test_specific_refusals),
		cmocka_unit_test(test_devices_round_trip_and_hostile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
