/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The local APIC: see lapic.h.
 *
 * Registers are handled by index, offset >> 4 in the xAPIC page, which is
 * also the x2APIC MSR minus 0x800 (SDM Table 10-6), with one read and one
 * write function that take the mode; the x2APIC rules (#GP for reserved
 * registers and bits, reads of write-only and writes of read-only ones)
 * live there beside the xAPIC ones (ignore, or set ESR bit 7).
 *
 * The timer keeps the device-clock time at which it next expires
 * (timer_expiry_ns): the count reaches 0 there in one-shot and periodic
 * modes, and the guest TSC reaches the deadline there in TSC-deadline
 * mode.  The current count follows from the time left (one count per
 * divider value of 1 ns bus clocks).  Expiries are taken lazily, by
 * timer_update() at every entry point, as the PIT does; periods nobody
 * saw are merged into one interrupt (stats.coalesced).
 */
#include <errno.h>
#include <string.h>
#include "hv/vdev/lapic.h"

#define LAPIC_SNAP_VERSION 1
#define NS_PER_S	1000000000ull
#define NS_PER_BUS	(NS_PER_S / LAPIC_BUS_HZ)
#define LAPIC_VERSION	0x00050014u	/* max LVT entry 5, version 0x14 */
#define REG_RESERVED	2		/* internal: no such register */

/* Register indexes (xAPIC offset >> 4, x2APIC MSR - 0x800). */
enum {
	R_ID = 0x02, R_VER = 0x03, R_TPR = 0x08, R_APR = 0x09, R_PPR = 0x0A,
	R_EOI = 0x0B, R_RRD = 0x0C, R_LDR = 0x0D, R_DFR = 0x0E, R_SVR = 0x0F,
	R_ISR = 0x10, R_TMR = 0x18, R_IRR = 0x20, R_ESR = 0x28, R_ICR = 0x30,
	R_ICR2 = 0x31, R_LVT = 0x32, R_TICR = 0x38, R_TCCR = 0x39,
	R_TDCR = 0x3E, R_SELF = 0x3F,
};

#define LVT_MASKED	(1u << 16)
#define LVT_STATUS	(1u << 12)	/* delivery status, read-only */
#define LVT_REMOTE_IRR	(1u << 14)	/* LINT0/1, read-only */
#define SVR_ENABLE	(1u << 8)
#define SVR_WRITABLE	0x3FFu		/* vector, enable, focus checking */
#define ICR_LO_WRITABLE	0x000CCFFFu	/* vector .. dest mode, level,
					 * trigger, shorthand (10.6.1) */
#define TDCR_WRITABLE	0xBu
#define ESR_SEND_ILLEGAL 0x20u		/* 10.5.3 */
#define ESR_RECV_ILLEGAL 0x40u
#define ESR_ILLEGAL_REG	0x80u
#define ESR_BITS	(ESR_SEND_ILLEGAL | ESR_RECV_ILLEGAL | ESR_ILLEGAL_REG)


/* Writable bits of each LVT (10.5.1, Figure 10-8). */
static const uint32_t lvt_writable[LAPIC_LVT_COUNT] = {
	[LAPIC_LVT_TIMER] = 0x700FFu,	/* vector, mask, mode */
	[LAPIC_LVT_THERMAL] = 0x107FFu,	/* vector, delivery mode, mask */
	[LAPIC_LVT_PERF] = 0x107FFu,
	[LAPIC_LVT_LINT0] = 0x1A7FFu,	/* + polarity, trigger */
	[LAPIC_LVT_LINT1] = 0x1A7FFu,
	[LAPIC_LVT_ERROR] = 0x100FFu,	/* vector, mask */
};

/* Read-only LVT bits, which an x2APIC write may carry without #GP. */
static uint32_t lvt_readonly(int i)
{
	return LVT_STATUS | (i == LAPIC_LVT_LINT0 || i == LAPIC_LVT_LINT1 ? LVT_REMOTE_IRR : 0);
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* ---- 256-bit vector sets ---------------------------------------------- */

static void vset(uint32_t *r, uint8_t v)
{
	r[v / 32] |= 1u << (v % 32);
}

static void vclear(uint32_t *r, uint8_t v)
{
	r[v / 32] &= ~(1u << (v % 32));
}

static bool vtest(const uint32_t *r, uint8_t v)
{
	return r[v / 32] & (1u << (v % 32));
}

static int vhighest(const uint32_t *r)
{
	for (int i = 7; i >= 0; i--)
		if (r[i])
			return i * 32 + 31 - __builtin_clz(r[i]);
	return -1;
}

/* ---- modes and priorities --------------------------------------------- */

bool lapic_hw_enabled(const struct lapic *a)
{
	return a->apic_base & APIC_BASE_EN;
}

bool lapic_x2apic(const struct lapic *a)
{
	return (a->apic_base & APIC_BASE_EXTD) && lapic_hw_enabled(a);
}

static bool xapic_mode(const struct lapic *a)
{
	return lapic_hw_enabled(a) && !(a->apic_base & APIC_BASE_EXTD);
}

bool lapic_sw_enabled(const struct lapic *a)
{
	return a->svr & SVR_ENABLE;
}

uint64_t lapic_mmio_base(const struct lapic *a)
{
	return xapic_mode(a) ? a->apic_base & ~0xFFFull : LAPIC_NO_EVENT;
}

/* x2APIC logical id (10.12.10.2): cluster id << 16 | 1 << (id & 15). */
static uint32_t x2apic_ldr(const struct lapic *a)
{
	return (a->cfg.apic_id >> 4) << 16 | 1u << (a->cfg.apic_id & 15);
}

/* 10.8.3.1: PPR is TPR, or ISRV's class if that is higher. */
uint8_t lapic_ppr(const struct lapic *a)
{
	int isrv = vhighest(a->isr);
	uint8_t isr_class = isrv < 0 ? 0 : (uint8_t)(isrv & 0xF0);

	return (a->tpr >> 4) >= (isr_class >> 4) ? a->tpr : isr_class;
}

/* 10.6.2.4 (xAPIC only): the TPR, or the highest class requested or in
 * service if that is higher. */
static uint8_t apr(const struct lapic *a)
{
	int irrv = vhighest(a->irr), isrv = vhighest(a->isr);
	int top = irrv > isrv ? irrv : isrv;

	if (top < 0 || (a->tpr >> 4) >= (top >> 4))
		return a->tpr;
	return (uint8_t)(top & 0xF0);
}

uint8_t lapic_get_cr8(const struct lapic *a)
{
	return a->tpr >> 4;
}

int lapic_set_cr8(struct lapic *a, uint64_t cr8)
{
	if (cr8 > 15)
		return LAPIC_GP;
	a->tpr = (uint8_t)(cr8 << 4);
	return 0;
}

/* ---- reset ------------------------------------------------------------ */

/* The register state shared by power-up and INIT (10.4.7.1): ID and
 * APIC_BASE are the caller's business. */
static void regs_reset(struct lapic *a)
{
	a->tpr = 0;
	a->ldr = 0;
	a->dfr = 0xFFFFFFFFu;
	a->svr = 0xFF;
	a->esr = a->esr_pending = 0;
	a->icr_lo = a->icr_hi = 0;
	for (int i = 0; i < LAPIC_LVT_COUNT; i++)
		a->lvt[i] = LVT_MASKED;
	a->timer_initial = a->timer_dcr = 0;
	a->timer_expiry_ns = LAPIC_NO_EVENT;
	a->deadline_tsc = 0;
	memset(a->irr, 0, sizeof(a->irr));
	memset(a->isr, 0, sizeof(a->isr));
	memset(a->tmr, 0, sizeof(a->tmr));
}

void lapic_init(struct lapic *a, const struct lapic_config *cfg)
{
	struct lapic_config c = *cfg;	/* cfg may be &a->cfg */

	memset(a, 0, sizeof(*a));
	a->cfg = c;
	a->apic_base = LAPIC_DEFAULT_BASE | APIC_BASE_EN | (c.bsp ? APIC_BASE_BSP : 0);
	a->xapic_id = (uint8_t)c.apic_id;
	regs_reset(a);	/* no events: memset */
	/* What firmware leaves (see lapic.h): virtual wire on the BSP. */
	a->svr = SVR_ENABLE | 0xFF;
	a->lvt[LAPIC_LVT_LINT0] = LAPIC_DM_EXTINT << 8 | (c.bsp ? 0 : LVT_MASKED);
	a->lvt[LAPIC_LVT_LINT1] = LAPIC_DM_NMI << 8;
}

/* ---- accepting interrupts --------------------------------------------- */

static void raise_error(struct lapic *a, uint32_t bit)
{
	uint32_t lvt = a->lvt[LAPIC_LVT_ERROR];

	a->esr_pending |= bit;
	if (!(lvt & LVT_MASKED) && (lvt & 0xFF) >= 16) {
		vset(a->irr, (uint8_t)lvt);
		vclear(a->tmr, (uint8_t)lvt);
	}
}

static int accept_fixed(struct lapic *a, uint8_t vector, bool level_trig)
{
	if (vector < 16) {
		raise_error(a, ESR_RECV_ILLEGAL);
		return -EINVAL;
	}
	if (!lapic_sw_enabled(a))
		return -EINVAL;
	vset(a->irr, vector);
	if (level_trig)
		vset(a->tmr, vector);
	else
		vclear(a->tmr, vector);
	return 0;
}

static int accept(struct lapic *a, uint8_t mode, uint8_t vector, bool level_trig)
{
	switch (mode) {
	case LAPIC_DM_FIXED:
	case LAPIC_DM_LOWEST:
		return accept_fixed(a, vector, level_trig);
	case LAPIC_DM_NMI:
		a->events |= LAPIC_EVB_NMI;
		return 0;
	case LAPIC_DM_INIT:		/* a SIPI before it is void */
		a->events = (uint8_t)((a->events | LAPIC_EVB_INIT) & ~LAPIC_EVB_SIPI);
		return 0;
	case LAPIC_DM_SIPI:
		a->events |= LAPIC_EVB_SIPI;
		a->sipi_vector = vector;
		return 0;
	case LAPIC_DM_EXTINT:
		a->events |= LAPIC_EVB_EXTINT;
		return 0;
	default:			/* SMI, reserved encodings */
		return -EINVAL;
	}
}

int lapic_deliver(struct lapic *a, uint8_t mode, uint8_t vector, bool level_trig)
{
	int rc = lapic_hw_enabled(a) ? accept(a, mode, vector, level_trig) : -EINVAL;

	if (rc)
		a->stats.dropped++;
	return rc;
}

int lapic_set_irq(struct lapic *a, uint8_t vector, bool level_trig)
{
	return lapic_deliver(a, LAPIC_DM_FIXED, vector, level_trig);
}

/* 10.8.5: the highest vector in service is done; a level-triggered one
 * is broadcast to the I/O APIC. */
static void eoi(struct lapic *a)
{
	int v = vhighest(a->isr);

	if (v < 0)
		return;
	vclear(a->isr, (uint8_t)v);
	if (vtest(a->tmr, (uint8_t)v) && a->cfg.eoi)
		a->cfg.eoi(a->cfg.ctx, (uint8_t)v);
}

bool lapic_in_service(const struct lapic *a)
{
	return vhighest(a->isr) >= 0;
}

bool lapic_pv_eoi_ok(const struct lapic *a)
{
	int v = vhighest(a->isr);

	return v >= 0 && !vtest(a->tmr, (uint8_t)v) && vhighest(a->irr) < 0;
}

void lapic_pv_eoi(struct lapic *a)
{
	eoi(a);
}

/* ---- timer (10.5.4) ---------------------------------------------------- */

static unsigned int timer_mode(const struct lapic *a)
{
	return (a->lvt[LAPIC_LVT_TIMER] >> 17) & 3;
}

/* Divide configuration (Figure 10-10): bits 3,1:0 = n gives 2^(n+1),
 * 111b gives 1. */
static uint32_t timer_div(uint32_t dcr)
{
	uint32_t n = (dcr & 3) | ((dcr >> 1) & 4);

	return n == 7 ? 1 : 2u << n;
}

static uint64_t timer_period_ns(const struct lapic *a)
{
	return (uint64_t)a->timer_initial * timer_div(a->timer_dcr) * NS_PER_BUS;
}

static bool counting_mode(const struct lapic *a)
{
	return timer_mode(a) == LAPIC_TIMER_ONESHOT || timer_mode(a) == LAPIC_TIMER_PERIODIC;
}

static void timer_start(struct lapic *a, uint64_t now)
{
	a->timer_expiry_ns = a->timer_initial ? add_sat(now, timer_period_ns(a)) : LAPIC_NO_EVENT;
}

/* Nanoseconds until the count next reaches 0 (0: expired, one-shot). */
static uint64_t timer_left_ns(const struct lapic *a, uint64_t now)
{
	uint64_t p = timer_period_ns(a);

	if (a->timer_expiry_ns == LAPIC_NO_EVENT)
		return 0;
	if (now < a->timer_expiry_ns)
		return a->timer_expiry_ns - now;
	if (timer_mode(a) == LAPIC_TIMER_PERIODIC && p)
		return p - (now - a->timer_expiry_ns) % p;
	return 0;
}

static uint32_t timer_current(const struct lapic *a, uint64_t now)
{
	uint64_t step = (uint64_t)timer_div(a->timer_dcr) * NS_PER_BUS;

	if (!counting_mode(a))
		return 0;
	return (uint32_t)((timer_left_ns(a, now) + step - 1) / step);
}

/* Take an expiry that is due: interrupt (unless masked), re-arm or stop. */
static void timer_update(struct lapic *a, uint64_t now)
{
	uint32_t lvt = a->lvt[LAPIC_LVT_TIMER];
	uint64_t p = timer_period_ns(a), missed;

	if (a->timer_expiry_ns == LAPIC_NO_EVENT || now < a->timer_expiry_ns)
		return;
	a->stats.timer_fires++;
	if (timer_mode(a) == LAPIC_TIMER_PERIODIC && p) {
		missed = (now - a->timer_expiry_ns) / p;
		a->timer_expiry_ns = add_sat(a->timer_expiry_ns, (missed + 1) * p);
		a->stats.coalesced += missed;
	} else {
		a->timer_expiry_ns = LAPIC_NO_EVENT;
		a->deadline_tsc = 0;
	}
	if (!(lvt & LVT_MASKED))
		lapic_deliver(a, LAPIC_DM_FIXED, (uint8_t)lvt, false);
}

/* A new divider: the count goes on from where it is, at the new rate. */
static void timer_set_divider(struct lapic *a, uint32_t dcr, uint64_t now)
{
	uint32_t left = timer_current(a, now);

	a->timer_dcr = dcr;
	if (a->timer_expiry_ns == LAPIC_NO_EVENT || !counting_mode(a))
		return;
	a->timer_expiry_ns = add_sat(now, (uint64_t)left * timer_div(dcr) * NS_PER_BUS);
}

/* Guest TSC ticks to nanoseconds, rounded up, saturating. */
static uint64_t tsc_to_ns(uint64_t ticks, uint64_t hz)
{
	uint64_t secs = ticks / hz;

	if (secs > UINT64_MAX / NS_PER_S - 1)
		return UINT64_MAX;
	return secs * NS_PER_S + (ticks % hz * NS_PER_S + hz - 1) / hz;
}

/* 10.5.4.1: arm (or with 0 disarm) the deadline; a deadline already
 * passed expires at once.  Ignored outside TSC-deadline mode. */
static void timer_set_deadline(struct lapic *a, uint64_t deadline, uint64_t tsc, uint64_t now)
{
	if (timer_mode(a) != LAPIC_TIMER_DEADLINE)
		return;
	a->deadline_tsc = deadline;
	if (!deadline)
		a->timer_expiry_ns = LAPIC_NO_EVENT;
	else if (deadline <= tsc || !a->cfg.tsc_hz)
		a->timer_expiry_ns = now;
	else
		a->timer_expiry_ns = add_sat(now, tsc_to_ns(deadline - tsc, a->cfg.tsc_hz));
}

/* ---- LVT, SVR, IPIs ----------------------------------------------------- */

static int write_lvt(struct lapic *a, int i, uint64_t val, bool x2)
{
	uint32_t v = (uint32_t)val & lvt_writable[i];
	unsigned int old_mode = timer_mode(a);

	if (x2 && (val & ~(uint64_t)(lvt_writable[i] | lvt_readonly(i))))
		return LAPIC_GP;
	if (i == LAPIC_LVT_TIMER && ((v >> 17) & 3) == 3) {
		if (x2)
			return LAPIC_GP;
		v &= ~(3u << 17);	/* reserved mode: taken as one-shot */
	}
	if (!lapic_sw_enabled(a))
		v |= LVT_MASKED;	/* 10.4.7.2: masks cannot be cleared */
	a->lvt[i] = v;
	if (i == LAPIC_LVT_TIMER && timer_mode(a) != old_mode) {
		a->timer_expiry_ns = LAPIC_NO_EVENT;	/* a mode change disarms */
		a->deadline_tsc = 0;
	}
	return 0;
}

static int write_svr(struct lapic *a, uint64_t val, bool x2)
{
	if (x2 && (val & ~(uint64_t)SVR_WRITABLE))
		return LAPIC_GP;
	a->svr = (uint32_t)val & SVR_WRITABLE;
	if (!lapic_sw_enabled(a))
		for (int i = 0; i < LAPIC_LVT_COUNT; i++)
			a->lvt[i] |= LVT_MASKED;
	return 0;
}

/* Decode the ICR just written (10.6.1) into *ipi; LAPIC_IPI if there is
 * something to send. */
static int send_ipi(struct lapic *a, struct lapic_ipi *ipi)
{
	uint32_t lo = a->icr_lo;

	ipi->vector = (uint8_t)lo;
	ipi->mode = (lo >> 8) & 7;
	ipi->logical = lo & (1u << 11);
	ipi->level_trig = lo & (1u << 15);
	ipi->shorthand = (lo >> 18) & 3;
	ipi->x2apic = lapic_x2apic(a);
	ipi->dest = ipi->x2apic ? a->icr_hi : a->icr_hi >> 24;
	if (ipi->mode == LAPIC_DM_INIT && !(lo & (1u << 14)) && ipi->level_trig)
		return 0;	/* INIT level de-assert: no-op since the P4 */
	if (ipi->mode == 3 || ipi->mode == 7 ||
	    (ipi->shorthand == LAPIC_SH_SELF && ipi->mode != LAPIC_DM_FIXED)) {
		a->stats.dropped++;	/* reserved mode, or self but not fixed */
		return 0;
	}
	if ((ipi->mode == LAPIC_DM_FIXED || ipi->mode == LAPIC_DM_LOWEST) && ipi->vector < 16) {
		raise_error(a, ESR_SEND_ILLEGAL);
		return 0;
	}
	return LAPIC_IPI;
}

static int write_icr(struct lapic *a, uint64_t val, bool x2, struct lapic_ipi *ipi)
{
	/* x2APIC: reserved bits are #GP, except the busy bit (12), which
	 * Intel ignores. */
	if (x2 && (val & 0xFFFFFFFFull & ~(uint64_t)(ICR_LO_WRITABLE | LVT_STATUS)))
		return LAPIC_GP;
	if (x2)
		a->icr_hi = (uint32_t)(val >> 32);
	a->icr_lo = (uint32_t)val & ICR_LO_WRITABLE;
	return send_ipi(a, ipi);
}

static int self_ipi(struct lapic *a, uint64_t val, struct lapic_ipi *ipi)
{
	if (val & ~0xFFull)
		return LAPIC_GP;
	*ipi = (struct lapic_ipi){ .vector = (uint8_t)val, .mode = LAPIC_DM_FIXED,
				   .shorthand = LAPIC_SH_SELF, .x2apic = true };
	if (ipi->vector < 16) {
		raise_error(a, ESR_SEND_ILLEGAL);
		return 0;
	}
	return LAPIC_IPI;
}

/* ---- registers ---------------------------------------------------------- */

/* Registers that exist only in xAPIC mode (x2APIC: #GP). */
static bool xapic_only(unsigned int r)
{
	return r == R_APR || r == R_RRD || r == R_DFR || r == R_ICR2;
}

static bool read_only(unsigned int r)
{
	return r == R_ID || r == R_VER || r == R_PPR || r == R_APR || r == R_RRD ||
	       r == R_LDR || (r >= R_ISR && r < R_ESR) || r == R_TCCR;
}

static int reg_read(struct lapic *a, unsigned int r, bool x2, uint64_t *val, uint64_t now)
{
	if (x2 && (xapic_only(r) || r == R_EOI || r == R_SELF))
		return REG_RESERVED;	/* not there, or write-only */
	if (r >= R_ISR && r < R_ESR) {
		const uint32_t *set = r < R_TMR ? a->isr : r < R_IRR ? a->tmr : a->irr;

		*val = set[r & 7];
		return 0;
	}
	if (r >= R_LVT && r < R_LVT + LAPIC_LVT_COUNT) {
		*val = a->lvt[r - R_LVT];
		return 0;
	}
	switch (r) {
	case R_ID:   *val = x2 ? a->cfg.apic_id : (uint32_t)a->xapic_id << 24; return 0;
	case R_VER:  *val = LAPIC_VERSION; return 0;
	case R_TPR:  *val = a->tpr; return 0;
	case R_APR:  *val = apr(a); return 0;
	case R_PPR:  *val = lapic_ppr(a); return 0;
	case R_EOI:
	case R_RRD:  *val = 0; return 0;
	case R_LDR:  *val = x2 ? x2apic_ldr(a) : a->ldr; return 0;
	case R_DFR:  *val = a->dfr; return 0;
	case R_SVR:  *val = a->svr; return 0;
	case R_ESR:  *val = a->esr; return 0;
	case R_ICR:  *val = x2 ? (uint64_t)a->icr_hi << 32 | a->icr_lo : a->icr_lo; return 0;
	case R_ICR2: *val = a->icr_hi; return 0;
	case R_TICR: *val = a->timer_initial; return 0;
	case R_TCCR: *val = timer_current(a, now); return 0;
	case R_TDCR: *val = a->timer_dcr; return 0;
	default:     return REG_RESERVED;
	}
}

/* Registers whose x2APIC write must be 0 (10.12.1.2). */
static int write_zero_only(struct lapic *a, unsigned int r, uint64_t val, bool x2)
{
	if (x2 && val)
		return LAPIC_GP;
	if (r == R_EOI) {
		eoi(a);
	} else {			/* ESR: latch the errors seen */
		a->esr = a->esr_pending;
		a->esr_pending = 0;
	}
	return 0;
}

static int write_timer_reg(struct lapic *a, unsigned int r, uint64_t val, bool x2,
			   uint64_t now)
{
	if (r == R_TDCR) {
		if (x2 && (val & ~(uint64_t)TDCR_WRITABLE))
			return LAPIC_GP;
		timer_set_divider(a, (uint32_t)val & TDCR_WRITABLE, now);
	} else if (counting_mode(a)) {	/* initial count; ignored in
					 * TSC-deadline mode */
		a->timer_initial = (uint32_t)val;
		timer_start(a, now);
	}
	return 0;
}

static int reg_write(struct lapic *a, unsigned int r, bool x2, uint64_t val, uint64_t now,
		     struct lapic_ipi *ipi)
{
	if (x2 && (xapic_only(r) || (r != R_ICR && val >> 32)))
		return xapic_only(r) || read_only(r) ? REG_RESERVED : LAPIC_GP;
	if (read_only(r))
		return x2 ? REG_RESERVED : 0;
	if (r >= R_LVT && r < R_LVT + LAPIC_LVT_COUNT)
		return write_lvt(a, (int)(r - R_LVT), val, x2);
	switch (r) {
	case R_TPR:
		if (x2 && (val & ~0xFFull))
			return LAPIC_GP;
		a->tpr = (uint8_t)val;
		return 0;
	case R_EOI:
	case R_ESR:
		return write_zero_only(a, r, val, x2);
	case R_DFR:
		a->dfr = ((uint32_t)val & 0xF0000000u) | 0x0FFFFFFFu;
		return 0;
	case R_SVR:  return write_svr(a, val, x2);
	case R_ICR:  return write_icr(a, val, x2, ipi);
	case R_ICR2: a->icr_hi = (uint32_t)val & 0xFF000000u; return 0;
	case R_TICR:
	case R_TDCR: return write_timer_reg(a, r, val, x2, now);
	case R_SELF: return x2 ? self_ipi(a, val, ipi) : REG_RESERVED;
	default:     return REG_RESERVED;
	}
}

/* ---- the xAPIC page ------------------------------------------------------ */

static int mmio_write(struct lapic *a, uint32_t offset, uint8_t size, uint32_t val,
		      uint64_t now, struct lapic_ipi *ipi)
{
	int rc;

	if (size != 4 || (offset & 15)) {
		a->stats.bad_access++;
		return 0;
	}
	if ((offset >> 4) == R_LDR) {	/* xAPIC only: writable bits 31:24 */
		a->ldr = val & 0xFF000000u;
		return 0;
	}
	if ((offset >> 4) == R_ID) {
		a->xapic_id = (uint8_t)(val >> 24);
		return 0;
	}
	rc = reg_write(a, offset >> 4, false, val, now, ipi);
	if (rc == REG_RESERVED) {
		raise_error(a, ESR_ILLEGAL_REG);
		a->stats.bad_access++;
		return 0;
	}
	return rc;
}

int lapic_mmio(struct lapic *a, uint32_t offset, uint8_t size, bool write, uint32_t *val,
	       uint64_t now_ns, struct lapic_ipi *ipi)
{
	uint32_t sub = offset & 15;
	uint64_t v = 0;

	if (offset >= LAPIC_MMIO_SIZE || !xapic_mode(a))
		return -ENOENT;
	timer_update(a, now_ns);
	if (write)
		return mmio_write(a, offset, size, *val, now_ns, ipi);
	if ((size != 1 && size != 2 && size != 4) || sub + size > 4) {
		a->stats.bad_access++;
		*val = 0;
		return 0;
	}
	if (reg_read(a, offset >> 4, false, &v, now_ns) == REG_RESERVED) {
		raise_error(a, ESR_ILLEGAL_REG);
		a->stats.bad_access++;
	}
	v >>= sub * 8;
	*val = size == 4 ? (uint32_t)v : (uint32_t)v & ((1u << (size * 8)) - 1);
	return 0;
}

/* ---- MSRs ----------------------------------------------------------------- */

enum apic_state { ST_DISABLED, ST_INVALID, ST_XAPIC, ST_X2APIC };

static enum apic_state base_state(uint64_t base)
{
	return (enum apic_state)((base & APIC_BASE_EN ? 2 : 0) | (base & APIC_BASE_EXTD ? 1 : 0));
}

static uint64_t base_reserved(const struct lapic *a)
{
	uint8_t bits = a->cfg.phys_bits ? a->cfg.phys_bits : LAPIC_PHYS_BITS_DEFAULT;

	return 0xFFull | 1ull << 9 | (bits < 64 ? ~0ull << bits : 0);
}

/* 10.12.5 (Figure 10-27): disabled <-> xAPIC <-> ... -> x2APIC -> disabled;
 * EXTD without EN, disabled -> x2APIC and x2APIC -> xAPIC are #GP.  The
 * BSP flag is the platform's and not changed by writes. */
static int write_apic_base(struct lapic *a, uint64_t val)
{
	enum apic_state from = base_state(a->apic_base), to = base_state(val);

	if ((val & base_reserved(a)) || to == ST_INVALID ||
	    (from == ST_DISABLED && to == ST_X2APIC) ||
	    (from == ST_X2APIC && to == ST_XAPIC))
		return LAPIC_GP;
	a->apic_base = (val & ~APIC_BASE_BSP) | (a->apic_base & APIC_BASE_BSP);
	if (to == ST_DISABLED && from != ST_DISABLED) {
		regs_reset(a);		/* 10.4.3: re-enabled in power-up state */
		a->xapic_id = (uint8_t)a->cfg.apic_id;
		a->events = a->sipi_vector = 0;
	}
	return 0;
}

int lapic_rdmsr(struct lapic *a, uint32_t msr, uint64_t *val, uint64_t now_ns)
{
	if (msr == MSR_IA32_APIC_BASE) {
		*val = a->apic_base;
		return 0;
	}
	if (msr != MSR_IA32_TSC_DEADLINE && (msr < MSR_X2APIC_FIRST || msr > MSR_X2APIC_LAST))
		return -ENOENT;
	timer_update(a, now_ns);
	if (msr == MSR_IA32_TSC_DEADLINE) {
		*val = timer_mode(a) == LAPIC_TIMER_DEADLINE ? a->deadline_tsc : 0;
		return 0;
	}
	if (!lapic_x2apic(a))
		return LAPIC_GP;
	return reg_read(a, msr - MSR_X2APIC_FIRST, true, val, now_ns) ? LAPIC_GP : 0;
}

int lapic_wrmsr(struct lapic *a, uint32_t msr, uint64_t val, uint64_t guest_tsc,
		uint64_t now_ns, struct lapic_ipi *ipi)
{
	int rc;

	if (msr == MSR_IA32_APIC_BASE)
		return write_apic_base(a, val);
	if (msr != MSR_IA32_TSC_DEADLINE && (msr < MSR_X2APIC_FIRST || msr > MSR_X2APIC_LAST))
		return -ENOENT;
	timer_update(a, now_ns);
	if (msr == MSR_IA32_TSC_DEADLINE) {
		timer_set_deadline(a, val, guest_tsc, now_ns);
		return 0;
	}
	if (!lapic_x2apic(a))
		return LAPIC_GP;
	rc = reg_write(a, msr - MSR_X2APIC_FIRST, true, val, now_ns, ipi);
	return rc == REG_RESERVED ? LAPIC_GP : rc;
}

/* ---- destinations ----------------------------------------------------------- */

bool lapic_match_dest(const struct lapic *a, uint32_t dest, bool logical, bool narrow)
{
	uint32_t ldr;
	uint8_t l, d = (uint8_t)dest;

	if (!lapic_hw_enabled(a))
		return false;
	if (dest == (narrow ? 0xFFu : 0xFFFFFFFFu))
		return true;		/* broadcast, physical or logical */
	if (lapic_x2apic(a)) {
		ldr = x2apic_ldr(a);
		if (!logical)
			return dest == a->cfg.apic_id;
		return dest >> 16 == ldr >> 16 && (dest & ldr & 0xFFFF);
	}
	if (!logical)
		return dest == a->xapic_id;
	l = (uint8_t)(a->ldr >> 24);
	if (a->dfr >> 28 == 0xF)	/* flat: a bit per APIC */
		return l & d;
	return l >> 4 == d >> 4 && (l & d & 0xF);	/* cluster */
}

bool lapic_ipi_targets(const struct lapic_ipi *ipi, const struct lapic *from,
		       const struct lapic *b)
{
	switch (ipi->shorthand) {
	case LAPIC_SH_SELF:   return b == from;
	case LAPIC_SH_ALL:    return lapic_hw_enabled(b);
	case LAPIC_SH_OTHERS: return b != from && lapic_hw_enabled(b);
	default:	      return lapic_match_dest(b, ipi->dest, ipi->logical, !ipi->x2apic);
	}
}

/* ---- what the vCPU takes ------------------------------------------------------ */

int lapic_pending_vector(struct lapic *a, uint64_t now_ns)
{
	int v;

	timer_update(a, now_ns);
	v = vhighest(a->irr);
	if (v < 0 || (v >> 4) <= (lapic_ppr(a) >> 4))
		return -1;
	return v;
}

int lapic_ack(struct lapic *a, uint8_t vector)
{
	if (!vtest(a->irr, vector))
		return -EINVAL;
	vclear(a->irr, vector);
	vset(a->isr, vector);
	return 0;
}

enum lapic_event lapic_take_event(struct lapic *a, uint8_t *sipi_vector)
{
	if (a->events & LAPIC_EVB_INIT) {	/* 10.4.7.3: INIT resets the APIC */
		a->events &= (uint8_t)~LAPIC_EVB_INIT;
		regs_reset(a);		/* later events stay */
		return LAPIC_EV_INIT;
	}
	if (a->events & LAPIC_EVB_SIPI) {
		a->events &= (uint8_t)~LAPIC_EVB_SIPI;
		*sipi_vector = a->sipi_vector;
		return LAPIC_EV_SIPI;
	}
	if (a->events & LAPIC_EVB_NMI) {
		a->events &= (uint8_t)~LAPIC_EVB_NMI;
		return LAPIC_EV_NMI;
	}
	if (a->events & LAPIC_EVB_EXTINT) {
		a->events &= (uint8_t)~LAPIC_EVB_EXTINT;
		return LAPIC_EV_EXTINT;
	}
	return LAPIC_EV_NONE;
}

bool lapic_accepts_pic(const struct lapic *a)
{
	uint32_t lvt0 = a->lvt[LAPIC_LVT_LINT0];

	return !lapic_hw_enabled(a) ||
	       (!(lvt0 & LVT_MASKED) && ((lvt0 >> 8) & 7) == LAPIC_DM_EXTINT);
}

uint64_t lapic_next_event_ns(struct lapic *a, uint64_t now_ns)
{
	if (a->events || lapic_pending_vector(a, now_ns) >= 0)
		return now_ns;
	if (a->lvt[LAPIC_LVT_TIMER] & LVT_MASKED)
		return LAPIC_NO_EVENT;
	return a->timer_expiry_ns;
}

/* ---- snapshot ------------------------------------------------------------------ */

static bool timer_valid(const struct lapic *a)
{
	if (timer_mode(a) == 3 || (a->timer_dcr & ~TDCR_WRITABLE))
		return false;
	if (timer_mode(a) != LAPIC_TIMER_DEADLINE && a->deadline_tsc)
		return false;
	if (a->timer_expiry_ns == LAPIC_NO_EVENT)
		return true;
	return counting_mode(a) ? a->timer_initial != 0 : a->deadline_tsc != 0;
}

static bool lvts_valid(const struct lapic *a)
{
	for (int i = 0; i < LAPIC_LVT_COUNT; i++) {
		if (a->lvt[i] & ~lvt_writable[i])
			return false;
		if (!lapic_sw_enabled(a) && !(a->lvt[i] & LVT_MASKED))
			return false;
	}
	return true;
}

static bool low_vectors_clear(const struct lapic *a)
{
	return !(a->irr[0] & 0xFFFF) && !(a->isr[0] & 0xFFFF);
}

static bool idle(const struct lapic *a)
{
	return vhighest(a->irr) < 0 && vhighest(a->isr) < 0 && !a->events &&
	       a->timer_expiry_ns == LAPIC_NO_EVENT;
}

bool lapic_valid(const struct lapic *a)
{
	uint64_t base = a->apic_base;

	if ((base & base_reserved(a)) || base_state(base) == ST_INVALID ||
	    !(base & APIC_BASE_BSP) != !a->cfg.bsp)
		return false;
	if ((a->ldr & 0x00FFFFFFu) || (a->dfr & 0x0FFFFFFFu) != 0x0FFFFFFFu ||
	    (a->svr & ~SVR_WRITABLE) || (a->esr | a->esr_pending) & ~ESR_BITS ||
	    (a->icr_lo & ~ICR_LO_WRITABLE) || (a->events & ~LAPIC_EVB_ALL))
		return false;
	if (!lapic_x2apic(a) && (a->icr_hi & 0x00FFFFFFu))
		return false;
	if (a->cfg.tsc_hz < LAPIC_TSC_HZ_MIN || a->cfg.tsc_hz > LAPIC_TSC_HZ_MAX)
		return false;
	return lvts_valid(a) && timer_valid(a) && low_vectors_clear(a) &&
	       (lapic_hw_enabled(a) || idle(a));
}

/* The armed timer as time left after now (a periodic timer's at most one
 * period, a one-shot's at most its whole count). */
static void timer_fields(struct lapic *a, struct snap *s, uint64_t now)
{
	bool armed = a->timer_expiry_ns != LAPIC_NO_EVENT;
	uint64_t left = armed && a->timer_expiry_ns > now ? a->timer_expiry_ns - now : 0;

	snap_bool(s, &armed);
	snap_u64(s, &left);
	snap_u64(s, &a->deadline_tsc);
	if (!s->restore || s->err)
		return;
	if ((!armed && left) || (armed && counting_mode(a) && left > timer_period_ns(a))) {
		snap_invalid(s);
		return;
	}
	a->timer_expiry_ns = armed ? add_sat(now, left) : LAPIC_NO_EVENT;
}

static void vector_sets(struct lapic *a, struct snap *s)
{
	for (int i = 0; i < 8; i++) {
		snap_u32(s, &a->irr[i]);
		snap_u32(s, &a->isr[i]);
		snap_u32(s, &a->tmr[i]);
	}
}

int lapic_snapshot(struct lapic *a, struct snap *s, uint64_t now_ns)
{
	struct lapic t = *a;

	if (snap_version(s, LAPIC_SNAP_VERSION))
		return s->err;
	if (!s->restore)
		timer_update(&t, now_ns);	/* save what is due, on the copy */
	snap_u64(s, &t.cfg.tsc_hz);
	snap_u64(s, &t.apic_base);
	snap_u8(s, &t.xapic_id);
	snap_u8(s, &t.tpr);
	snap_u32(s, &t.ldr);
	snap_u32(s, &t.dfr);
	snap_u32(s, &t.svr);
	snap_u32(s, &t.esr);
	snap_u32(s, &t.esr_pending);
	snap_u32(s, &t.icr_lo);
	snap_u32(s, &t.icr_hi);
	for (int i = 0; i < LAPIC_LVT_COUNT; i++)
		snap_u32(s, &t.lvt[i]);
	snap_u32(s, &t.timer_initial);
	snap_u32(s, &t.timer_dcr);
	timer_fields(&t, s, now_ns);
	vector_sets(&t, s);
	snap_u8(s, &t.events);
	snap_u8(s, &t.sipi_vector);
	if (!s->restore || s->err)
		return s->err;
	if (!lapic_valid(&t))
		return snap_invalid(s);
	*a = t;
	return 0;
}
