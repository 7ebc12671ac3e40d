/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The 8254 PIT and port 0x61, computed from the guest clock: see pit.h.
 *
 * A loaded counter's state is the number of PIT clocks n it has counted;
 * its value and OUT follow from n, the mode and the period P (the count
 * written, 0 meaning 65536 or 10000 in BCD), as in the mode descriptions
 * of the 8254 data sheet:
 *   mode 0  count P - n (wrapping), OUT rises at n = P
 *   mode 1  like 0, started by a gate rising edge, OUT high before it
 *   mode 2  count P - n mod P, OUT low for the clock before each reload
 *   mode 3  count P - 2n mod P, OUT high for the first half period
 *   mode 4  count P - n, OUT low for one clock at n = P
 *   mode 5  like 4, started by a gate rising edge
 */
#include <errno.h>
#include <string.h>
#include "hv/vdev/pit.h"
#include "hv/vdev/portio.h"

#define PIT_SNAP_VERSION 1
#define NS_PER_S 1000000000ull
#define NO_EDGE UINT64_MAX
#define REFRESH_NS 15085ull	/* port 0x61 bit 4 toggles this often */
#define PORT_B_RW 0x0f		/* gate 2, speaker, parity/IOCHK enables */

/* ---- time ------------------------------------------------------------- */

/* PIT clocks in ns nanoseconds (exact floor, no overflow). */
static uint64_t ns_to_ticks(uint64_t ns)
{
	return ns / NS_PER_S * PIT_HZ + ns % NS_PER_S * PIT_HZ / NS_PER_S;
}

/* The first nanosecond at which ns_to_ticks() reaches t (saturating). */
static uint64_t ticks_to_ns(uint64_t t)
{
	uint64_t secs = t / PIT_HZ;

	if (secs > UINT64_MAX / NS_PER_S - 1)
		return UINT64_MAX;
	return secs * NS_PER_S + (t % PIT_HZ * NS_PER_S + PIT_HZ - 1) / PIT_HZ;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* ---- one counter ------------------------------------------------------ */

static int eff_mode(const struct pit_channel *c)
{
	return c->mode >= 6 ? c->mode & 3 : c->mode;
}

static bool periodic(const struct pit_channel *c)
{
	return eff_mode(c) == 2 || eff_mode(c) == 3;
}

static uint32_t domain(const struct pit_channel *c)
{
	return c->bcd ? 10000 : 65536;
}

/* Four BCD digits (nibbles above 9 taken at face value) to binary. */
static uint32_t from_bcd(uint16_t v)
{
	return ((v >> 12) & 15) * 1000u + ((v >> 8) & 15) * 100u +
	       ((v >> 4) & 15) * 10u + (v & 15);
}

static uint16_t to_bcd(uint32_t v)
{
	return (uint16_t)((v / 1000 % 10) << 12 | (v / 100 % 10) << 8 |
			  (v / 10 % 10) << 4 | v % 10);
}

static uint32_t period(const struct pit_channel *c)
{
	uint32_t v = c->bcd ? from_bcd(c->reload) % 10000 : c->reload;

	return v ? v : domain(c);
}

static uint64_t ticks_now(const struct pit_channel *c, uint64_t now)
{
	uint64_t n = c->done_ticks;

	if (c->running && now > c->start_ns)
		n += ns_to_ticks(now - c->start_ns);
	return n;
}

/* The counting element after n clocks, in binary (0 .. domain-1). */
static uint32_t count_at(const struct pit_channel *c, uint64_t n)
{
	uint32_t p = period(c), d = domain(c);

	switch (eff_mode(c)) {
	case 2:
		return (uint32_t)(p - n % p) % d;
	case 3:
		return (uint32_t)(p - 2 * (n % p) % p) % d;
	default:
		return (uint32_t)((p + d - n % d) % d);
	}
}

static bool out_at(const struct pit_channel *c, uint64_t n)
{
	uint32_t p = period(c);

	if (!c->loaded)
		return eff_mode(c) != 0;
	switch (eff_mode(c)) {
	case 0: return n >= p;
	case 1: return !c->running || n >= p;
	case 2: return !c->gate || n % p != p - 1;
	case 3: return !c->gate || n % p < (p + 1) / 2;
	case 4: return n != p;
	default: return !c->running || n != p;
	}
}

/* What a read of the counter returns now (before byte selection). */
static uint16_t current_value(const struct pit_channel *c, uint64_t now)
{
	uint32_t v;

	if (!c->loaded)
		return c->reload;
	v = count_at(c, ticks_now(c, now));
	return c->bcd ? to_bcd(v) : (uint16_t)v;
}

static uint64_t first_edge(const struct pit_channel *c)
{
	int m = eff_mode(c);

	return period(c) + (m == 4 || m == 5 ? 1 : 0);
}

static void start_counting(struct pit_channel *c, uint64_t now)
{
	c->done_ticks = 0;
	c->start_ns = now;
	c->running = true;
	c->null_count = false;
	c->next_edge = first_edge(c);
}

static void stop_counting(struct pit_channel *c, uint64_t now)
{
	c->done_ticks = ticks_now(c, now);
	c->running = false;
}

/* A complete count was written (modes 2 and 3: restart at once). */
static void load_count(struct pit_channel *c, uint16_t value, uint64_t now)
{
	int m = eff_mode(c);

	c->reload = value;
	c->loaded = true;
	c->null_count = true;
	c->running = false;
	c->done_ticks = 0;
	c->next_edge = NO_EDGE;
	if (m == 1 || m == 5)
		return;			/* waits for a gate rising edge */
	if (c->gate)
		start_counting(c, now);
	else
		c->next_edge = first_edge(c);
}

static void set_gate(struct pit_channel *c, bool level, uint64_t now)
{
	int m = eff_mode(c);

	if (level == c->gate)
		return;
	c->gate = level;
	if (!c->loaded)
		return;
	if (!level) {
		if (m != 1 && m != 5)
			stop_counting(c, now);
	} else if (m == 0 || m == 4) {
		c->start_ns = now;	/* resume */
		c->running = true;
	} else {
		start_counting(c, now);	/* 2, 3 reload; 1, 5 trigger */
	}
}

/* ---- control word, latches, counter ports ----------------------------- */

static void latch_count(struct pit_channel *c, uint64_t now)
{
	if (c->count_latched)
		return;
	c->latch = current_value(c, now);
	c->count_latched = true;
	c->rd_msb = false;
}

/* Status byte, 8254 data sheet Figure 12. */
static void latch_status(struct pit_channel *c, uint64_t now)
{
	if (c->status_latched)
		return;
	c->status = (uint8_t)(out_at(c, ticks_now(c, now)) << 7 | c->null_count << 6 |
			      c->access << 4 | c->mode << 1 | c->bcd);
	c->status_latched = true;
}

static void read_back(struct pit *p, uint8_t val, uint64_t now)
{
	for (int i = 0; i < 3; i++) {
		if (!(val & (2u << i)))
			continue;
		if (!(val & 0x20))
			latch_count(&p->ch[i], now);
		if (!(val & 0x10))
			latch_status(&p->ch[i], now);
	}
}

static void write_control(struct pit *p, uint8_t val, uint64_t now)
{
	struct pit_channel *c;

	if ((val >> 6) == 3) {
		read_back(p, val, now);
		return;
	}
	c = &p->ch[val >> 6];
	if (((val >> 4) & 3) == PIT_ACCESS_LATCH) {
		latch_count(c, now);
		return;
	}
	c->access = (val >> 4) & 3;
	c->mode = (val >> 1) & 7;
	c->bcd = val & 1;
	c->loaded = c->running = false;
	c->done_ticks = 0;
	c->next_edge = NO_EDGE;
	c->null_count = true;
	c->wr_msb = c->rd_msb = false;
	c->count_latched = c->status_latched = false;
}

static void write_counter(struct pit_channel *c, uint8_t val, uint64_t now)
{
	if (c->access == PIT_ACCESS_LO) {
		load_count(c, val, now);
	} else if (c->access == PIT_ACCESS_HI) {
		load_count(c, (uint16_t)(val << 8), now);
	} else if (!c->wr_msb) {
		c->wr_lsb = val;
		c->wr_msb = true;
		if (eff_mode(c) == 0) {	/* mode 0: the first byte stops it */
			c->loaded = c->running = false;
			c->next_edge = NO_EDGE;
		}
	} else {
		c->wr_msb = false;
		load_count(c, (uint16_t)(c->wr_lsb | val << 8), now);
	}
}

/* The byte of v selected by the access mode; *last: the read is done. */
static uint8_t select_byte(struct pit_channel *c, uint16_t v, bool *last)
{
	*last = true;
	if (c->access == PIT_ACCESS_LO)
		return (uint8_t)v;
	if (c->access == PIT_ACCESS_HI)
		return (uint8_t)(v >> 8);
	c->rd_msb = !c->rd_msb;
	*last = !c->rd_msb;
	return c->rd_msb ? (uint8_t)v : (uint8_t)(v >> 8);
}

static uint8_t read_counter(struct pit_channel *c, uint64_t now)
{
	bool last;
	uint8_t b;

	if (c->status_latched) {
		c->status_latched = false;
		return c->status;
	}
	if (!c->count_latched)
		return select_byte(c, current_value(c, now), &last);
	b = select_byte(c, c->latch, &last);
	if (last)
		c->count_latched = false;
	return b;
}

/* ---- ports ------------------------------------------------------------ */

bool pit_out(const struct pit *p, unsigned int ch, uint64_t now_ns)
{
	const struct pit_channel *c = &p->ch[ch % 3];

	return out_at(c, ticks_now(c, now_ns));
}

static uint8_t read_port_b(const struct pit *p, uint64_t now)
{
	uint8_t v = p->port_b & PORT_B_RW;

	if ((now / REFRESH_NS) & 1)
		v |= 0x10;
	if (pit_out(p, 2, now))
		v |= 0x20;
	return v;
}

/* Context for the byte handler: the device and the time. */
struct pit_access {
	struct pit *pit;
	uint64_t now;
};

static bool pit_byte(void *arg, uint16_t port, bool in, uint8_t *val)
{
	struct pit_access *a = arg;
	struct pit *p = a->pit;

	if (port == PIT_PORT_B) {
		if (in) {
			*val = read_port_b(p, a->now);
		} else {
			p->port_b = *val & PORT_B_RW;
			set_gate(&p->ch[2], *val & 1, a->now);
		}
	} else if (port == PIT_CMD_PORT) {
		if (in)
			*val = 0xff;	/* the control register is write-only */
		else
			write_control(p, *val, a->now);
	} else if (port >= PIT_CH0_PORT && port < PIT_CMD_PORT) {
		if (in)
			*val = read_counter(&p->ch[port - PIT_CH0_PORT], a->now);
		else
			write_counter(&p->ch[port - PIT_CH0_PORT], *val, a->now);
	} else {
		return false;
	}
	return true;
}

int pit_io(struct pit *p, uint16_t port, uint8_t size, bool in, uint32_t *val,
	   uint64_t now_ns)
{
	struct pit_access a = { p, now_ns };

	return portio_split(&a, pit_byte, port, size, in, val);
}

/* ---- IRQ 0 ------------------------------------------------------------ */

int pit_update(struct pit *p, uint64_t now_ns)
{
	struct pit_channel *c = &p->ch[0];
	uint64_t n, missed;

	if (c->next_edge == NO_EDGE || !c->running)
		return 0;
	n = ticks_now(c, now_ns);
	if (n < c->next_edge)
		return 0;
	if (periodic(c)) {
		missed = (n - c->next_edge) / period(c);
		c->next_edge += (missed + 1) * period(c);
		p->stats.coalesced += missed;
	} else {
		c->next_edge = NO_EDGE;
	}
	p->stats.irq_edges++;
	return 1;
}

uint64_t pit_next_event_ns(const struct pit *p, uint64_t now_ns)
{
	const struct pit_channel *c = &p->ch[0];
	uint64_t t;

	if (c->next_edge == NO_EDGE || !c->running)
		return PIT_NO_EVENT;
	if (c->next_edge <= c->done_ticks)
		return now_ns;
	t = add_sat(c->start_ns, ticks_to_ns(c->next_edge - c->done_ticks));
	return t < now_ns ? now_ns : t;
}

void pit_init(struct pit *p)
{
	memset(p, 0, sizeof(*p));
	for (int i = 0; i < 3; i++) {
		p->ch[i].access = PIT_ACCESS_LOHI;
		p->ch[i].gate = i < 2;
		p->ch[i].next_edge = NO_EDGE;
	}
}

/* ---- snapshot --------------------------------------------------------- */

/*
 * The time fields, relative to now: ticks counted, and the nanoseconds
 * of counting after the last whole second (whole seconds are exactly
 * PIT_HZ clocks, so folding them into ticks loses nothing).
 */
static void time_fields(struct pit_channel *c, struct snap *s, uint64_t now)
{
	uint64_t run = c->running && now > c->start_ns ? now - c->start_ns : 0;
	uint64_t ticks = c->done_ticks + run / NS_PER_S * PIT_HZ;
	uint64_t rem = run % NS_PER_S;

	snap_u64(s, &ticks);
	snap_u64(s, &rem);
	if (!s->restore || s->err)
		return;
	if (rem >= NS_PER_S || (rem && !c->running)) {
		snap_invalid(s);
		return;
	}
	if (now < rem) {		/* a guest clock under one second */
		ticks += ns_to_ticks(rem);
		rem = 0;
	}
	c->done_ticks = ticks;
	c->start_ns = now - rem;
}

static void channel_fields(struct pit_channel *c, struct snap *s, uint64_t now)
{
	snap_u16(s, &c->reload);
	snap_u8(s, &c->mode);
	snap_u8(s, &c->access);
	snap_bool(s, &c->bcd);
	snap_bool(s, &c->gate);
	snap_bool(s, &c->loaded);
	snap_bool(s, &c->running);
	snap_bool(s, &c->null_count);
	time_fields(c, s, now);
	snap_u64(s, &c->next_edge);
	snap_bool(s, &c->wr_msb);
	snap_u8(s, &c->wr_lsb);
	snap_bool(s, &c->rd_msb);
	snap_bool(s, &c->count_latched);
	snap_u16(s, &c->latch);
	snap_bool(s, &c->status_latched);
	snap_u8(s, &c->status);
}

/* Restored: channel 0's next edge is at most a period (and the second
 * time_fields leaves out of done_ticks) ahead of the count, which
 * done_ticks holds then: never an IRQ 0 put off for ever. */
static bool edge_valid(const struct pit_channel *c)
{
	return c->next_edge == NO_EDGE || c->next_edge <= c->done_ticks ||
	       c->next_edge - c->done_ticks <= first_edge(c) + PIT_HZ;
}

static bool channel_valid(const struct pit_channel *c, int idx)
{
	return c->mode <= 7 && c->access >= PIT_ACCESS_LO && c->access <= PIT_ACCESS_LOHI &&
	       (idx == 2 || c->gate) && (c->loaded || !c->running);
}

bool pit_valid(const struct pit *p)
{
	for (int i = 0; i < 3; i++)
		if (!channel_valid(&p->ch[i], i))
			return false;
	return !(p->port_b & ~PORT_B_RW) && p->ch[2].gate == (p->port_b & 1);
}

int pit_snapshot(struct pit *p, struct snap *s, uint64_t now_ns)
{
	struct pit t = *p;

	if (snap_version(s, PIT_SNAP_VERSION))
		return s->err;
	for (int i = 0; i < 3; i++)
		channel_fields(&t.ch[i], s, now_ns);
	snap_u8(s, &t.port_b);
	if (!s->restore || s->err)
		return s->err;
	if (!pit_valid(&t) || !edge_valid(&t.ch[0]))
		return snap_invalid(s);
	*p = t;
	return 0;
}
