/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CMOS RTC: calendar arithmetic, register encoding (BCD/binary,
 * 12/24 hour), the SET protocol, the interrupt flags, CMOS RAM and its
 * memory-size bytes.  See rtc.h for the model.
 */
#include <errno.h>
#include <string.h>
#include "hv/vdev/portio.h"
#include "hv/vdev/rtc.h"

#define RTC_SNAP_VERSION 2	/* 2: interrupt flags and their timing */
#define NS_PER_S 1000000000ull
#define SECS_PER_DAY 86400u
#define KIB 1024ull
#define MIB (1024ull * KIB)
#define REG_A_RESET 0x26	/* 32.768 kHz time base, 1024 Hz rate */
#define REG_A_UIP 0x80
#define REG_A_DV 0x70		/* divider: 0x20 runs the 32.768 kHz base */
#define REG_A_DV_RUN 0x20
#define REG_A_RS 0x0f		/* periodic rate select */
#define REG_B_SQWE 0x08
/* Periodic flags missed for longer than this restart their phase (keeps
 * the catch-up arithmetic inside 64 bits; the flags merge anyway). */
#define PF_CATCHUP_MAX_NS (1ull << 56)

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
	r->seen_s = epoch_s;	/* a clock set is not a tick */
	r->stats.clock_sets++;
}

/* ---- interrupt flags -------------------------------------------------- */

/* The periodic rate: RS with the divider running, RS 1 and 2 as 8 and 9
 * (MC146818A table 5 at 32.768 kHz); 0 when off. */
static uint8_t pf_rate(const struct rtc *r)
{
	uint8_t a = r->ram[RTC_REG_A], rs = a & REG_A_RS;

	if (!rs || (a & REG_A_DV) != REG_A_DV_RUN)
		return 0;
	return rs < 3 ? (uint8_t)(rs + 7) : rs;
}

/* Its period in 1/16 ns: 2^(rate-1) / 32768 s, exact (10^9 = 2^9 * 1953125). */
static uint64_t pf_period16(uint8_t rate)
{
	return 1953125ull << (rate - 3);
}

/* A new rate (or the periodic flag turned on or off): the first flag one
 * period from now. */
static void pf_restart(struct rtc *r, uint64_t now)
{
	uint64_t p;

	r->pf_rate = pf_rate(r);
	r->pf_next_ns = 0;
	r->pf_sub = 0;
	if (!r->pf_rate)
		return;
	p = pf_period16(r->pf_rate);
	r->pf_next_ns = now + (p >> 4);
	r->pf_sub = (uint8_t)(p & 15);
}

/* When the next periodic flag is due, in whole ns (rounded up). */
static uint64_t pf_due_ns(const struct rtc *r)
{
	return r->pf_next_ns + (r->pf_sub ? 1 : 0);
}

static void pf_update(struct rtc *r, uint64_t now)
{
	uint64_t p, n, step;

	if (pf_rate(r) != r->pf_rate)
		pf_restart(r, now);
	if (!r->pf_rate || now < pf_due_ns(r))
		return;
	r->ram[RTC_REG_C] |= RTC_C_PF;
	if (now - r->pf_next_ns >= PF_CATCHUP_MAX_NS) {
		pf_restart(r, now);
		return;
	}
	/* every edge up to now merges into this one flag */
	p = pf_period16(r->pf_rate);
	n = ((now - r->pf_next_ns) * 16 - r->pf_sub) / p + 1;
	step = r->pf_sub + n * p;
	r->pf_next_ns += step >> 4;
	r->pf_sub = (uint8_t)(step & 15);
}

/*
 * An alarm register as the number it matches, -1 for any (0xC0-0xFF), or
 * -2 if no time ever reads as that byte (the chip compares the bytes: a
 * value that is not a valid encoding in the current mode never matches).
 */
static uint8_t encode(const struct rtc *r, uint8_t v);
static uint8_t decode(const struct rtc *r, uint8_t v);
static uint8_t encode_hour(const struct rtc *r, uint8_t h);
static uint8_t decode_hour(const struct rtc *r, uint8_t v);

static int alarm_value(const struct rtc *r, uint8_t idx, uint8_t limit)
{
	uint8_t v = r->ram[idx], x;

	if ((v & 0xc0) == 0xc0)
		return -1;
	x = idx == 5 ? decode_hour(r, v) : decode(r, v);
	if (x >= limit || (idx == 5 ? encode_hour(r, x) : encode(r, x)) != v)
		return -2;
	return x;
}

/* The first second after `after` whose time matches the alarm, or
 * RTC_NO_EVENT.  Each step fixes the hour, minute or second by jumping
 * straight to it; eight steps reach a match from anywhere. */
static uint64_t next_alarm(const struct rtc *r, uint64_t after)
{
	int as = alarm_value(r, 1, 60), am = alarm_value(r, 3, 60), ah = alarm_value(r, 5, 24);
	uint64_t t = after + 1;

	if (as == -2 || am == -2 || ah == -2)
		return RTC_NO_EVENT;
	for (int i = 0; i < 8 && t <= RTC_MAX_EPOCH; i++) {
		uint64_t day = t - t % SECS_PER_DAY, hour = t - t % 3600, min = t - t % 60;
		int h = (int)(t % SECS_PER_DAY / 3600), m = (int)(t / 60 % 60), sec = (int)(t % 60);

		if (ah >= 0 && h != ah)
			t = day + (uint64_t)ah * 3600 + (ah < h ? SECS_PER_DAY : 0);
		else if (am >= 0 && m != am)
			t = am > m ? hour + (uint64_t)am * 60 : hour + 3600;
		else if (as >= 0 && sec != as)
			t = as > sec ? min + (uint64_t)as : min + 60;
		else
			return t;
	}
	return RTC_NO_EVENT;
}

/* Guest time at which the clock reaches second x (now if it has). */
static uint64_t second_ns(const struct rtc *r, uint64_t x, uint64_t now)
{
	uint64_t d;

	if (x > RTC_MAX_EPOCH)
		return RTC_NO_EVENT;
	if (x <= r->base_s)
		return now;
	d = x - r->base_s;
	if (d > (UINT64_MAX - r->base_ns) / NS_PER_S)
		return RTC_NO_EVENT;
	return r->base_ns + d * NS_PER_S;
}

static bool irqf(const struct rtc *r)
{
	return r->ram[RTC_REG_C] & r->ram[RTC_REG_B] & RTC_IRQ_BITS;
}

static void sync_irq(struct rtc *r)
{
	bool level = irqf(r);

	if (level == r->irq_level)
		return;
	r->irq_level = level;
	if (level)
		r->stats.irqs++;
	if (r->irq)
		r->irq(r->irq_ctx, level);
}

void rtc_connect(struct rtc *r, void (*irq)(void *ctx, int level), void *ctx)
{
	r->irq = irq;
	r->irq_ctx = ctx;
}

void rtc_update(struct rtc *r, uint64_t now)
{
	uint64_t s = running_time(r, now);

	/* the update cycle: not while SET holds the registers */
	if (!set_mode(r) && s > r->seen_s) {
		r->ram[RTC_REG_C] |= RTC_C_UF;
		if (next_alarm(r, r->seen_s) <= s)
			r->ram[RTC_REG_C] |= RTC_C_AF;
		r->seen_s = s;
	}
	pf_update(r, now);
	sync_irq(r);
}

uint64_t rtc_next_event_ns(const struct rtc *r, uint64_t now)
{
	uint8_t en = r->ram[RTC_REG_B] & RTC_IRQ_BITS;
	uint64_t t = RTC_NO_EVENT, x;

	if (r->irq_level || !en)
		return RTC_NO_EVENT;	/* high until C is read, or nothing enabled */
	if (irqf(r))
		return now;
	if ((en & RTC_C_PF) && r->pf_rate)
		t = pf_due_ns(r);
	if (!set_mode(r) && (en & RTC_C_UF) && (x = second_ns(r, r->seen_s + 1, now)) < t)
		t = x;
	if (!set_mode(r) && (en & RTC_C_AF)) {
		x = next_alarm(r, r->seen_s);
		if (x != RTC_NO_EVENT && (x = second_ns(r, x, now)) < t)
			t = x;
	}
	return t < now ? now : t;
}

void rtc_reset_irqs(struct rtc *r)
{
	r->ram[RTC_REG_B] &= (uint8_t)~(RTC_B_PIE | RTC_B_AIE | RTC_B_UIE | REG_B_SQWE);
	r->ram[RTC_REG_C] = 0;
	r->irq_level = false;
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
		v = (uint8_t)(r->ram[idx] | (irqf(r) ? RTC_C_IRQF : 0));
		r->ram[idx] = 0;	/* IRQF falls: rtc_io syncs the line */
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
	else if (idx == RTC_REG_A) {
		r->ram[idx] = val & (uint8_t)~REG_A_UIP;
		if (pf_rate(r) != r->pf_rate)
			pf_restart(r, now);
	}
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
	int rc;

	rtc_update(r, now_ns);	/* the flags a read of C returns are current */
	rc = portio_split(&a, rtc_byte, port, size, in, val);
	sync_irq(r);		/* C read, an enable set, UIE cleared by SET */
	return rc;
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
	r->seen_s = r->base_s;
	pf_restart(r, now_ns);
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

/* The interrupt timing, relative to now: seconds not yet ticked, the
 * periodic rate and the time to its next flag. */
static void irq_fields(struct rtc *t, struct snap *s, uint64_t now)
{
	uint64_t secs = running_time(t, now);
	uint64_t unseen = secs > t->seen_s ? secs - t->seen_s : 0;
	uint64_t pf_left = t->pf_next_ns > now ? t->pf_next_ns - now : 0;

	snap_u64(s, &unseen);
	snap_u8(s, &t->pf_rate);
	snap_u64(s, &pf_left);
	snap_u8(s, &t->pf_sub);
	if (!s->restore || s->err)
		return;
	secs = running_time(t, now);	/* as time_fields restored it */
	if (unseen > secs || t->pf_rate != pf_rate(t) || t->pf_sub > 15 ||
	    (t->pf_rate && pf_left > pf_period16(t->pf_rate) >> 4) ||
	    (!t->pf_rate && (pf_left || t->pf_sub))) {
		snap_invalid(s);
		return;
	}
	t->seen_s = secs - unseen;
	t->pf_next_ns = t->pf_rate ? now + pf_left : 0;
	t->irq_level = irqf(t);
}

bool rtc_valid(const struct rtc *r)
{
	static const uint8_t unused[] = { 0, 2, 4, 6, 7, 8, 9, RTC_REG_D, RTC_CENTURY };
	uint8_t b = r->ram[RTC_REG_B];

	for (unsigned int i = 0; i < sizeof(unused); i++)
		if (r->ram[unused[i]])
			return false;
	return r->index < RTC_CMOS_SIZE && !(r->ram[RTC_REG_A] & REG_A_UIP) &&
	       !(r->ram[RTC_REG_C] & (uint8_t)~RTC_IRQ_BITS) &&
	       !((b & RTC_B_SET) && (b & RTC_B_UIE)) && r->base_s <= RTC_MAX_EPOCH &&
	       r->pf_rate == pf_rate(r) && r->irq_level == irqf(r);
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
	irq_fields(&t, s, now_ns);
	if (!s->restore || s->err)
		return s->err;
	if (!rtc_valid(&t))
		return snap_invalid(s);
	*r = t;
	return 0;
}
