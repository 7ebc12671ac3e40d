/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The I/O APIC: see ioapic.h.  Every change that may make a pin deliver
 * (a rising edge, an asserted level line, unmasking, an EOI) ends in
 * service(), which sends that pin's message if it should go now.
 */
#include <errno.h>
#include <string.h>
#include "hv/vdev/ioapic.h"

#define IOAPIC_SNAP_VERSION 1
#define REG_ID		0x00
#define REG_VER		0x01
#define REG_ARB		0x02
#define REG_RTE		0x10
#define ALL_PINS	((1u << IOAPIC_PINS) - 1)
/* Guest-writable entry bits: vector, delivery mode, destination mode,
 * polarity, trigger, mask, destination. */
#define RTE_WRITABLE	(0xFF00000000000000ull | 0x1AFFFull)

void ioapic_init(struct ioapic *io, ioapic_deliver_fn deliver, void *ctx)
{
	memset(io, 0, sizeof(*io));
	io->deliver = deliver;
	io->ctx = ctx;
	for (int i = 0; i < IOAPIC_PINS; i++)
		io->rte[i] = IOAPIC_RTE_MASKED;
}

static bool is_level(uint64_t rte)
{
	return rte & IOAPIC_RTE_LEVEL;
}

static bool send(struct ioapic *io, uint64_t rte)
{
	bool ok = io->deliver(io->ctx, (uint32_t)(rte >> 56), rte & IOAPIC_RTE_LOGICAL,
			      (rte >> 8) & 7, (uint8_t)rte, is_level(rte));

	if (ok)
		io->stats.delivered++;
	else
		io->stats.refused++;
	return ok;
}

/* A level pin that is asserted, unmasked and not waiting for an EOI. */
static void service_level(struct ioapic *io, unsigned int pin)
{
	uint64_t *rte = &io->rte[pin];

	if (!(io->lines & (1u << pin)) || (*rte & (IOAPIC_RTE_MASKED | IOAPIC_RTE_REMOTE_IRR)))
		return;
	if (send(io, *rte))
		*rte |= IOAPIC_RTE_REMOTE_IRR;
}

int ioapic_set_irq(struct ioapic *io, unsigned int pin, int level)
{
	uint32_t bit = 1u << pin;
	bool rising;

	if (pin >= IOAPIC_PINS)
		return -EINVAL;
	rising = level && !(io->lines & bit);
	io->lines = level ? io->lines | bit : io->lines & ~bit;
	if (is_level(io->rte[pin]))
		service_level(io, pin);
	else if (rising && (io->rte[pin] & IOAPIC_RTE_MASKED))
		io->stats.masked_edges++;
	else if (rising)
		send(io, io->rte[pin]);
	return 0;
}

void ioapic_eoi(struct ioapic *io, uint8_t vector)
{
	for (unsigned int pin = 0; pin < IOAPIC_PINS; pin++) {
		uint64_t *rte = &io->rte[pin];

		if ((uint8_t)*rte != vector || !(*rte & IOAPIC_RTE_REMOTE_IRR))
			continue;
		*rte &= ~IOAPIC_RTE_REMOTE_IRR;
		service_level(io, pin);
	}
}

void ioapic_resample(struct ioapic *io)
{
	for (unsigned int pin = 0; pin < IOAPIC_PINS; pin++)
		if (is_level(io->rte[pin]))
			service_level(io, pin);
}

/* ---- registers ---------------------------------------------------------- */

static uint32_t reg_read(const struct ioapic *io, uint8_t reg)
{
	unsigned int pin = (reg - REG_RTE) / 2;

	switch (reg) {
	case REG_ID:  return (uint32_t)io->id << 24;
	case REG_VER: return IOAPIC_VERSION;
	case REG_ARB: return (uint32_t)io->id << 24;
	}
	if (reg < REG_RTE || pin >= IOAPIC_PINS)
		return 0;
	return (uint32_t)(io->rte[pin] >> ((reg & 1) * 32));
}

static void write_rte(struct ioapic *io, unsigned int pin, bool high, uint32_t val)
{
	uint64_t *rte = &io->rte[pin];
	uint64_t keep = high ? 0xFFFFFFFFull : 0xFFFFFFFF00000000ull;
	uint64_t v = high ? (uint64_t)val << 32 : val;

	*rte = (*rte & (keep | IOAPIC_RTE_REMOTE_IRR)) | (v & ~keep & RTE_WRITABLE);
	if (!is_level(*rte))
		*rte &= ~IOAPIC_RTE_REMOTE_IRR;	/* undefined for edge: cleared */
	else
		service_level(io, pin);		/* unmasked while asserted */
}

static void reg_write(struct ioapic *io, uint8_t reg, uint32_t val)
{
	unsigned int pin = (reg - REG_RTE) / 2;

	if (reg == REG_ID)
		io->id = (val >> 24) & 0xF;
	else if (reg >= REG_RTE && pin < IOAPIC_PINS)
		write_rte(io, pin, reg & 1, val);
}

int ioapic_mmio(struct ioapic *io, uint32_t offset, uint8_t size, bool write, uint32_t *val)
{
	if (offset >= IOAPIC_MMIO_SIZE)
		return -ENOENT;
	if (offset == IOAPIC_REGSEL && (size == 4 || size == 1)) {
		if (write)
			io->regsel = (uint8_t)*val;
		else
			*val = io->regsel;
	} else if (offset == IOAPIC_WINDOW && size == 4) {
		if (write)
			reg_write(io, io->regsel, *val);
		else
			*val = reg_read(io, io->regsel);
	} else if (!write) {
		*val = 0;
	}
	return 0;
}

/* ---- snapshot --------------------------------------------------------------- */

static bool rte_valid(uint64_t rte)
{
	if (rte & ~(RTE_WRITABLE | IOAPIC_RTE_REMOTE_IRR))
		return false;
	return is_level(rte) || !(rte & IOAPIC_RTE_REMOTE_IRR);
}

bool ioapic_valid(const struct ioapic *io)
{
	if (io->id > 15 || (io->lines & ~ALL_PINS))
		return false;
	for (int i = 0; i < IOAPIC_PINS; i++)
		if (!rte_valid(io->rte[i]))
			return false;
	return true;
}

int ioapic_snapshot(struct ioapic *io, struct snap *s)
{
	struct ioapic t = *io;
	uint8_t pins = IOAPIC_PINS;

	if (snap_version(s, IOAPIC_SNAP_VERSION))
		return s->err;
	snap_u8(s, &pins);
	if (s->restore && !s->err && pins != IOAPIC_PINS)
		return snap_invalid(s);
	snap_u8(s, &t.id);
	snap_u8(s, &t.regsel);
	snap_u32(s, &t.lines);
	for (int i = 0; i < IOAPIC_PINS; i++)
		snap_u64(s, &t.rte[i]);
	if (!s->restore || s->err)
		return s->err;
	if (!ioapic_valid(&t))
		return snap_invalid(s);
	*io = t;
	return 0;
}
