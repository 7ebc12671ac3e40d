/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CMOS RTC: calendar arithmetic, register encoding (BCD/binary,
 * 12/24 hour), the SET protocol, CMOS RAM and its memory-size bytes.
 * See rtc.h for the model.
 */
#include <errno.h>
#include <string.h>
#include "hv/vdev/portio.h"
#include "hv/vdev/rtc.h"

#define RTC_SNAP_VERSION 1
#define NS_PER_S 1000000000ull
#define SECS_PER_DAY 86400u
#define KIB 1024ull
#define MIB (1024ull * KIB)
#define REG_A_RESET 0x26	/* 32.768 kHz time base, 1024 Hz rate */
#define REG_A_UIP 0x80

/* ---- calendar (days since 1970-01-01, proleptic Gregorian) ------------ */

static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* days >= 0 only. */
static void civil_from_days(uint64_t days, uint32_t *y, uint32_t *m, uint32_t *d)
{
	uint64_t z = days + 719468, era = z / 146097, doe = z - era * 146097;
	uint64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	uint64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	uint64_t mp = (5 * doy + 2) / 153;

	*d = (uint32_t)(doy - (153 * mp + 2) / 5 + 1);
	*m = (uint32_t)(mp < 10 ? mp + 3 : mp - 9);
	*y = (uint32_t)(yoe + era * 400 + (*m <= 2));
}

void rtc_epoch_to_tm(uint64_t epoch_s, struct rtc_tm *tm)
{
	uint64_t s = epoch_s > RTC_MAX_EPOCH ? RTC_MAX_EPOCH : epoch_s;
	uint64_t secs = s % SECS_PER_DAY;
	uint32_t y, m, d;

	civil_from_days(s / SECS_PER_DAY, &y, &m, &d);
	tm->sec = (uint8_t)(secs % 60);
	tm->min = (uint8_t)(secs / 60 % 60);
	tm->hour = (uint8_t)(secs / 3600);
	tm->mday = (uint8_t)d;
	tm->mon = (uint8_t)m;
	tm->year = (uint8_t)(y % 100);
	tm->century = (uint8_t)(y / 100);
}

/* Any field values (a guest may write garbage): out-of-range days, hours,
 * ... carry over arithmetically, the month is clamped to 1-12, and the
 * result to [0, RTC_MAX_EPOCH]. */
uint64_t rtc_tm_to_epoch(const struct rtc_tm *tm)
{
	int64_t mon = tm->mon < 1 ? 1 : tm->mon > 12 ? 12 : tm->mon;
	int64_t days = days_from_civil(tm->century * 100 + tm->year, mon, tm->mday);
	int64_t t = days * SECS_PER_DAY + tm->hour * 3600 + tm->min * 60 + tm->sec;

	if (t < 0)
		return 0;
	return (uint64_t)t > RTC_MAX_EPOCH ? RTC_MAX_EPOCH : (uint64_t)t;
}

/* Day of week as register 6 counts it: 1 = Sunday (1970-01-01 was a
 * Thursday). */
static uint8_t weekday(uint64_t epoch_s)
{
	return (uint8_t)((epoch_s / SECS_PER_DAY + 4) % 7 + 1);
}

/* ---- the clock -------------------------------------------------------- */

static bool set_mode(const struct rtc *r)
{
	return r->ram[RTC_REG_B] & RTC_B_SET;
}

static uint64_t running_time(const struct rtc *r, uint64_t now)
{
	uint64_t t = r->base_s + (now > r->base_ns ? (now - r->base_ns) / NS_PER_S : 0);

	return t > RTC_MAX_EPOCH ? RTC_MAX_EPOCH : t;
}

static void current_tm(const struct rtc *r, uint64_t now, struct rtc_tm *tm)
{
	if (set_mode(r))
		*tm = r->held;
	else
		rtc_epoch_to_tm(running_time(r, now), tm);
}

static void set_clock(struct rtc *r, uint64_t epoch_s, uint64_t now)
{
	r->base_s = epoch_s;
	r->base_ns = now;
	r->stats.clock_sets++;
}

/* ---- register encoding ------------------------------------------------ */

static bool binary_mode(const struct rtc *r)
{
	return r->ram[RTC_REG_B] & RTC_B_BINARY;
}

static uint8_t encode(const struct rtc *r, uint8_t v)
{
	if (binary_mode(r))
		return v;
	return (uint8_t)((v / 10 % 10) << 4 | v % 10);
}

static uint8_t decode(const struct rtc *r, uint8_t v)
{
	return binary_mode(r) ? v : (uint8_t)((v >> 4) * 10 + (v & 15));
}

/* Hours: in 12-hour mode 1-12 with bit 7 = PM. */
static uint8_t encode_hour(const struct rtc *r, uint8_t h)
{
	uint8_t h12 = h % 12 ? h % 12 : 12;

	if (r->ram[RTC_REG_B] & RTC_B_24H)
		return encode(r, h);
	return (uint8_t)(encode(r, h12) | (h >= 12 ? 0x80 : 0));
}

static uint8_t decode_hour(const struct rtc *r, uint8_t v)
{
	if (r->ram[RTC_REG_B] & RTC_B_24H)
		return decode(r, v);
	return (uint8_t)(decode(r, v & 0x7f) % 12 + (v & 0x80 ? 12 : 0));
}

static bool is_time_reg(uint8_t idx)
{
	switch (idx) {
	case RTC_SECONDS: case RTC_MINUTES: case RTC_HOURS: case RTC_WEEKDAY:
	case RTC_MDAY: case RTC_MONTH: case RTC_YEAR: case RTC_CENTURY:
		return true;
	default:
		return false;
	}
}

/* The tm field behind a time register (NULL: day of week). */
static uint8_t *tm_field(struct rtc_tm *tm, uint8_t idx)
{
	switch (idx) {
	case RTC_SECONDS: return &tm->sec;
	case RTC_MINUTES: return &tm->min;
	case RTC_HOURS: return &tm->hour;
	case RTC_MDAY: return &tm->mday;
	case RTC_MONTH: return &tm->mon;
	case RTC_YEAR: return &tm->year;
	case RTC_CENTURY: return &tm->century;
	default: return NULL;
	}
}

static uint8_t read_time_reg(const struct rtc *r, uint8_t idx, uint64_t now)
{
	struct rtc_tm tm;
	uint8_t *f;

	current_tm(r, now, &tm);
	if (idx == RTC_HOURS)
		return encode_hour(r, tm.hour);
	f = tm_field(&tm, idx);
	return encode(r, f ? *f : weekday(rtc_tm_to_epoch(&tm)));
}

static void write_time_reg(struct rtc *r, uint8_t idx, uint8_t val, uint64_t now)
{
	struct rtc_tm tm;
	uint8_t *f;

	current_tm(r, now, &tm);
	f = tm_field(&tm, idx);
	if (!f)
		return;			/* day of week: derived */
	*f = idx == RTC_HOURS ? decode_hour(r, val) : decode(r, val);
	if (set_mode(r))
		r->held = tm;
	else
		set_clock(r, rtc_tm_to_epoch(&tm), now);
}

/* Register B: entering SET freezes the registers, leaving it sets the
 * clock from them (MC146818A: SET also clears UIE). */
static void write_reg_b(struct rtc *r, uint8_t val, uint64_t now)
{
	bool was_set = set_mode(r), set = val & RTC_B_SET;

	if (set && !was_set)
		rtc_epoch_to_tm(running_time(r, now), &r->held);
	if (!set && was_set)
		set_clock(r, rtc_tm_to_epoch(&r->held), now);
	r->ram[RTC_REG_B] = set ? (uint8_t)(val & ~RTC_B_UIE) : val;
}

static uint8_t read_data(struct rtc *r, uint64_t now)
{
	uint8_t idx = r->index, v;

	if (is_time_reg(idx))
		return read_time_reg(r, idx, now);
	switch (idx) {
	case RTC_REG_A:
		return r->ram[idx] & (uint8_t)~REG_A_UIP;
	case RTC_REG_C:
		v = r->ram[idx];
		r->ram[idx] = 0;
		return v;
	case RTC_REG_D:
		return RTC_D_VRT;
	default:
		return r->ram[idx];
	}
}

static void write_data(struct rtc *r, uint8_t val, uint64_t now)
{
	uint8_t idx = r->index;

	if (is_time_reg(idx))
		write_time_reg(r, idx, val, now);
	else if (idx == RTC_REG_A)
		r->ram[idx] = val & (uint8_t)~REG_A_UIP;
	else if (idx == RTC_REG_B)
		write_reg_b(r, val, now);
	else if (idx != RTC_REG_C && idx != RTC_REG_D)
		r->ram[idx] = val;
}

/* ---- ports ------------------------------------------------------------ */

struct rtc_access {
	struct rtc *rtc;
	uint64_t now;
};

static bool rtc_byte(void *arg, uint16_t port, bool in, uint8_t *val)
{
	struct rtc_access *a = arg;
	struct rtc *r = a->rtc;

	if (port == RTC_INDEX_PORT) {
		if (in) {
			*val = 0xff;	/* write-only */
		} else {
			r->index = *val & 0x7f;
			r->nmi_masked = *val & 0x80;
		}
	} else if (port == RTC_DATA_PORT) {
		if (in)
			*val = read_data(r, a->now);
		else
			write_data(r, *val, a->now);
	} else {
		return false;
	}
	return true;
}

int rtc_io(struct rtc *r, uint16_t port, uint8_t size, bool in, uint32_t *val,
	   uint64_t now_ns)
{
	struct rtc_access a = { r, now_ns };

	return portio_split(&a, rtc_byte, port, size, in, val);
}

/* ---- initial state ---------------------------------------------------- */

/* A little-endian number of n bytes at idx, capped at max. */
static void put_le(struct rtc *r, uint8_t idx, uint64_t v, uint64_t max, int n)
{
	if (v > max)
		v = max;
	for (int i = 0; i < n; i++)
		r->ram[idx + i] = (uint8_t)(v >> (8 * i));
}

static void set_memory_size(struct rtc *r, uint64_t below, uint64_t above)
{
	uint64_t ext = below > MIB ? (below - MIB) / KIB : 0;
	uint64_t above16 = below > 16 * MIB ? (below - 16 * MIB) / (64 * KIB) : 0;

	put_le(r, 0x15, below / KIB, 640, 2);
	put_le(r, 0x17, ext, 0xffff, 2);
	put_le(r, 0x30, ext, 0xffff, 2);
	put_le(r, 0x34, above16, 0xffff, 2);
	put_le(r, 0x5b, above / (64 * KIB), 0xffffff, 3);
}

void rtc_init(struct rtc *r, uint64_t epoch_s, uint64_t now_ns,
	      uint64_t ram_below_4g, uint64_t ram_above_4g)
{
	memset(r, 0, sizeof(*r));
	r->ram[RTC_REG_A] = REG_A_RESET;
	r->ram[RTC_REG_B] = RTC_B_24H;
	r->base_s = epoch_s > RTC_MAX_EPOCH ? RTC_MAX_EPOCH : epoch_s;
	r->base_ns = now_ns;
	set_memory_size(r, ram_below_4g, ram_above_4g);
}

/* ---- snapshot --------------------------------------------------------- */

static void time_fields(struct rtc *t, struct snap *s, uint64_t now)
{
	uint64_t run = now > t->base_ns ? now - t->base_ns : 0;
	uint64_t secs = running_time(t, now), frac = run % NS_PER_S;

	snap_u64(s, &secs);
	snap_u64(s, &frac);
	snap_u8(s, &t->held.sec);
	snap_u8(s, &t->held.min);
	snap_u8(s, &t->held.hour);
	snap_u8(s, &t->held.mday);
	snap_u8(s, &t->held.mon);
	snap_u8(s, &t->held.year);
	snap_u8(s, &t->held.century);
	if (!s->restore || s->err)
		return;
	if (secs > RTC_MAX_EPOCH || frac >= NS_PER_S) {
		snap_invalid(s);
		return;
	}
	t->base_s = secs;
	t->base_ns = now >= frac ? now - frac : now;
}

bool rtc_valid(const struct rtc *r)
{
	static const uint8_t unused[] = { 0, 2, 4, 6, 7, 8, 9, RTC_REG_D, RTC_CENTURY };
	uint8_t b = r->ram[RTC_REG_B];

	for (unsigned int i = 0; i < sizeof(unused); i++)
		if (r->ram[unused[i]])
			return false;
	return r->index < RTC_CMOS_SIZE && !(r->ram[RTC_REG_A] & REG_A_UIP) &&
	       !(r->ram[RTC_REG_C] & 0x0f) && !((b & RTC_B_SET) && (b & RTC_B_UIE)) &&
	       r->base_s <= RTC_MAX_EPOCH;
}

int rtc_snapshot(struct rtc *r, struct snap *s, uint64_t now_ns)
{
	struct rtc t = *r;

	if (snap_version(s, RTC_SNAP_VERSION))
		return s->err;
	snap_u8(s, &t.index);
	snap_bool(s, &t.nmi_masked);
	snap_bytes(s, t.ram, sizeof(t.ram));
	time_fields(&t, s, now_ns);
	if (!s->restore || s->err)
		return s->err;
	if (!rtc_valid(&t))
		return snap_invalid(s);
	*r = t;
	return 0;
}
