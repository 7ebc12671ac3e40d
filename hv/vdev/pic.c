/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The 8259A pair (master, slave on IR2) with ELCR: see pic.h.
 *
 * Priorities are kept as in the data sheet: `lowest` is the IR with the
 * lowest priority (7 after ICW1), so the highest is lowest + 1 (mod 8).
 * The master's IRR bit 2 latches rising edges of the slave's INT output;
 * pic_update_cascade() re-evaluates it after every change.
 */
#include <errno.h>
#include <string.h>
#include "hv/vdev/pic.h"
#include "hv/vdev/portio.h"

#define PIC_SNAP_VERSION 1
#define NO_PRIO 8
#define CASCADE_BIT (1u << PIC_CASCADE_IRQ)

/* ELCR bits that exist: IRQ 0, 1, 2, 8 and 13 are always edge (PIIX4). */
static const uint8_t elcr_writable[2] = { 0xf8, 0xde };

static void chip_reset(struct pic_chip *c, uint8_t base, uint8_t icw3)
{
	memset(c, 0, sizeof(*c));
	c->base = base;
	c->icw3 = icw3;
	c->imr = 0xff;
	c->lowest = 7;
	c->icw4_needed = true;
	c->upm = true;
}

void pic_init(struct pic *p)
{
	memset(p, 0, sizeof(*p));
	chip_reset(&p->chip[0], 0x08, CASCADE_BIT);
	chip_reset(&p->chip[1], 0x70, PIC_CASCADE_IRQ);
}

/* Priority level (0 = highest) of the best bit in mask, NO_PRIO if none. */
static int prio_of(uint8_t mask, uint8_t lowest)
{
	for (int pr = 0; pr < 8; pr++)
		if (mask & (1u << ((lowest + 1 + pr) & 7)))
			return pr;
	return NO_PRIO;
}

static int ir_at(int prio, uint8_t lowest)
{
	return (lowest + 1 + prio) & 7;
}

static bool cascaded(const struct pic *p)
{
	const struct pic_chip *m = &p->chip[0];

	return !m->single && (m->icw3 & CASCADE_BIT);
}

/* The IR chip idx would signal on INT now, or -1. */
static int chip_pending(const struct pic *p, int idx)
{
	const struct pic_chip *c = &p->chip[idx];
	uint8_t blocking = c->isr;
	int pr, ir;

	if (c->init_step)
		return -1;
	pr = prio_of(c->irr & ~c->imr, c->lowest);
	if (pr == NO_PRIO)
		return -1;
	ir = ir_at(pr, c->lowest);
	if (c->special_mask)
		blocking &= ~c->imr;
	if (idx == 0 && c->sfnm && ir == PIC_CASCADE_IRQ)
		blocking &= ~CASCADE_BIT;
	return pr < prio_of(blocking, c->lowest) ? ir : -1;
}

/* Feed the slave's INT output into the master's IR2 (edge-latched). */
static void pic_update_cascade(struct pic *p)
{
	struct pic_chip *m = &p->chip[0];
	bool level = cascaded(p) && chip_pending(p, 1) >= 0;

	if (level && !(m->edge_sense & CASCADE_BIT))
		m->irr |= CASCADE_BIT;
	if (level)
		m->edge_sense |= CASCADE_BIT;
	else
		m->edge_sense &= ~CASCADE_BIT;
}

int pic_set_irq(struct pic *p, unsigned int irq, int level)
{
	struct pic_chip *c;
	uint8_t bit;

	if (irq >= PIC_IRQS)
		return -EINVAL;
	if (irq == PIC_CASCADE_IRQ)
		return 0;
	c = &p->chip[irq >> 3];
	bit = (uint8_t)(1u << (irq & 7));
	if (level)
		p->lines |= (uint16_t)(1u << irq);
	else
		p->lines &= (uint16_t)~(1u << irq);
	if (c->elcr & bit) {
		c->irr = level ? (c->irr | bit) : (c->irr & ~bit);
	} else {
		if (level && !(c->edge_sense & bit))
			c->irr |= bit;
		c->edge_sense = level ? (c->edge_sense | bit) : (c->edge_sense & ~bit);
	}
	pic_update_cascade(p);
	return 0;
}

int pic_pending_vector(const struct pic *p)
{
	int ir = chip_pending(p, 0), ir2;

	if (ir < 0)
		return -1;
	if (ir != PIC_CASCADE_IRQ || !cascaded(p))
		return p->chip[0].base | ir;
	ir2 = chip_pending(p, 1);
	return p->chip[1].base | (ir2 < 0 ? 7 : ir2);
}

/* INTA on one chip: IRR -> ISR (or automatic EOI). */
static void chip_ack(struct pic_chip *c, int ir)
{
	uint8_t bit = (uint8_t)(1u << ir);

	if (!c->auto_eoi)
		c->isr |= bit;
	else if (c->rotate_aeoi)
		c->lowest = (uint8_t)ir;
	if (!(c->elcr & bit))
		c->irr &= ~bit;		/* level requests follow the line */
}

/* The slave's half of a cascaded INTA.  Its INT output is taken to drop
 * during the cycle, so a request still pending afterwards (automatic EOI)
 * latches IR2 again. */
static int slave_ack(struct pic *p)
{
	struct pic_chip *s = &p->chip[1];
	int ir = chip_pending(p, 1);

	p->chip[0].edge_sense &= ~CASCADE_BIT;
	if (ir < 0) {
		p->stats.spurious++;
		return s->base | 7;
	}
	chip_ack(s, ir);
	p->stats.acks++;
	return s->base | ir;
}

int pic_ack(struct pic *p)
{
	struct pic_chip *m = &p->chip[0];
	int ir, vector;

	if (m->init_step)
		return -1;
	ir = chip_pending(p, 0);
	if (ir < 0) {
		p->stats.spurious++;	/* IR7 of the master, ISR untouched */
		return m->base | 7;
	}
	chip_ack(m, ir);
	if (ir == PIC_CASCADE_IRQ && cascaded(p)) {
		vector = slave_ack(p);
	} else {
		p->stats.acks++;
		vector = m->base | ir;
	}
	pic_update_cascade(p);
	return vector;
}

/* ---- command and data ports ------------------------------------------ */

/* ICW1 (8259A data sheet, "Initialization Command Words"). */
static void write_icw1(struct pic_chip *c, uint8_t val)
{
	c->init_step = 1;
	c->icw4_needed = val & 0x01;
	c->single = val & 0x02;
	c->imr = 0;
	c->isr = 0;
	c->irr &= c->elcr;
	c->edge_sense = 0;
	c->lowest = 7;
	c->special_mask = false;
	c->read_isr = false;
	c->poll = false;
	c->auto_eoi = false;
	c->rotate_aeoi = false;
	c->sfnm = false;
	c->upm = false;
}

static void write_icw(struct pic_chip *c, uint8_t val)
{
	switch (c->init_step) {
	case 1:		/* ICW2: vector base */
		c->base = val & 0xf8;
		c->init_step = !c->single ? 2 : c->icw4_needed ? 3 : 0;
		break;
	case 2:		/* ICW3: cascade wiring */
		c->icw3 = val;
		c->init_step = c->icw4_needed ? 3 : 0;
		break;
	default:	/* ICW4 */
		c->upm = val & 0x01;
		c->auto_eoi = val & 0x02;
		c->sfnm = val & 0x10;
		c->init_step = 0;
		break;
	}
}

static void eoi_nonspecific(struct pic_chip *c, bool rotate)
{
	int pr = prio_of(c->isr, c->lowest), ir;

	if (pr == NO_PRIO)
		return;
	ir = ir_at(pr, c->lowest);
	c->isr &= (uint8_t)~(1u << ir);
	if (rotate)
		c->lowest = (uint8_t)ir;
}

/* OCW2: bits 7-5 are R, SL, EOI; bits 2-0 the level (Figure 8). */
static void write_ocw2(struct pic_chip *c, uint8_t val)
{
	uint8_t ir = val & 7;

	switch (val >> 5) {
	case 0: c->rotate_aeoi = false; break;
	case 4: c->rotate_aeoi = true; break;
	case 1: eoi_nonspecific(c, false); break;
	case 5: eoi_nonspecific(c, true); break;
	case 3: c->isr &= (uint8_t)~(1u << ir); break;
	case 7: c->isr &= (uint8_t)~(1u << ir); c->lowest = ir; break;
	case 6: c->lowest = ir; break;
	default: break;	/* 2: no operation */
	}
}

/* OCW3: ESMM/SMM bits 6-5, P bit 2, RR/RIS bits 1-0. */
static void write_ocw3(struct pic_chip *c, uint8_t val)
{
	if (val & 0x04)
		c->poll = true;
	if (val & 0x02)
		c->read_isr = val & 0x01;
	if (val & 0x40)
		c->special_mask = val & 0x20;
}

static void write_cmd(struct pic_chip *c, uint8_t val)
{
	if (val & 0x10)
		write_icw1(c, val);
	else if (val & 0x08)
		write_ocw3(c, val);
	else
		write_ocw2(c, val);
}

/* Poll command: acknowledge like INTA, answer 0x80 | IR, or 0. */
static uint8_t poll_read(struct pic *p, int idx)
{
	int ir = chip_pending(p, idx);

	p->chip[idx].poll = false;
	if (ir < 0)
		return 0;
	chip_ack(&p->chip[idx], ir);
	p->stats.acks++;
	return (uint8_t)(0x80 | ir);
}

static void write_elcr(struct pic *p, int idx, uint8_t val)
{
	struct pic_chip *c = &p->chip[idx];
	uint8_t line = (uint8_t)(p->lines >> (8 * idx));
	uint8_t now_level = (uint8_t)(val & elcr_writable[idx] & ~c->elcr);
	uint8_t now_edge = (uint8_t)(c->elcr & ~val);

	c->elcr = val & elcr_writable[idx];
	c->irr = (uint8_t)((c->irr & ~now_level) | (line & now_level));
	c->edge_sense = (uint8_t)((c->edge_sense & ~now_edge) | (line & now_edge));
}

static int port_chip(uint16_t port)
{
	switch (port) {
	case PIC_MASTER_CMD: case PIC_MASTER_DATA: case PIC_ELCR1:
		return 0;
	case PIC_SLAVE_CMD: case PIC_SLAVE_DATA: case PIC_ELCR2:
		return 1;
	default:
		return -1;
	}
}

static uint8_t chip_read(struct pic *p, int idx, bool cmd)
{
	struct pic_chip *c = &p->chip[idx];

	if (c->poll)
		return poll_read(p, idx);
	if (!cmd)
		return c->imr;
	return c->read_isr ? c->isr : c->irr;
}

static void chip_write(struct pic_chip *c, bool cmd, uint8_t val)
{
	if (cmd)
		write_cmd(c, val);
	else if (c->init_step)
		write_icw(c, val);
	else
		c->imr = val;		/* OCW1 */
}

static bool pic_byte(void *dev, uint16_t port, bool in, uint8_t *val)
{
	struct pic *p = dev;
	int idx = port_chip(port);
	bool elcr = port == PIC_ELCR1 || port == PIC_ELCR2, cmd = !(port & 1);

	if (idx < 0)
		return false;
	if (elcr && in)
		*val = p->chip[idx].elcr;
	else if (elcr)
		write_elcr(p, idx, *val);
	else if (in)
		*val = chip_read(p, idx, cmd);
	else
		chip_write(&p->chip[idx], cmd, *val);
	pic_update_cascade(p);
	return true;
}

int pic_io(struct pic *p, uint16_t port, uint8_t size, bool in, uint32_t *val)
{
	return portio_split(p, pic_byte, port, size, in, val);
}

/* ---- snapshot --------------------------------------------------------- */

static void chip_fields(struct pic_chip *c, struct snap *s)
{
	snap_u8(s, &c->irr);
	snap_u8(s, &c->isr);
	snap_u8(s, &c->imr);
	snap_u8(s, &c->edge_sense);
	snap_u8(s, &c->elcr);
	snap_u8(s, &c->base);
	snap_u8(s, &c->icw3);
	snap_u8(s, &c->lowest);
	snap_u8(s, &c->init_step);
	snap_bool(s, &c->icw4_needed);
	snap_bool(s, &c->single);
	snap_bool(s, &c->auto_eoi);
	snap_bool(s, &c->rotate_aeoi);
	snap_bool(s, &c->sfnm);
	snap_bool(s, &c->upm);
	snap_bool(s, &c->special_mask);
	snap_bool(s, &c->read_isr);
	snap_bool(s, &c->poll);
}

static bool chip_valid(const struct pic_chip *c, int idx, uint8_t line)
{
	return c->init_step <= 3 && !(c->base & 7) && c->lowest <= 7 &&
	       !(c->elcr & ~elcr_writable[idx]) &&
	       (c->irr & c->elcr) == (line & c->elcr);
}

bool pic_valid(const struct pic *p)
{
	return !(p->lines & CASCADE_BIT) &&
	       chip_valid(&p->chip[0], 0, (uint8_t)p->lines) &&
	       chip_valid(&p->chip[1], 1, (uint8_t)(p->lines >> 8));
}

int pic_snapshot(struct pic *p, struct snap *s)
{
	struct pic t = *p;

	if (snap_version(s, PIC_SNAP_VERSION))
		return s->err;
	chip_fields(&t.chip[0], s);
	chip_fields(&t.chip[1], s);
	snap_u16(s, &t.lines);
	if (!s->restore || s->err)
		return s->err;
	if (!pic_valid(&t))
		return snap_invalid(s);
	*p = t;
	return 0;
}
