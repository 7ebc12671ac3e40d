/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The PC's pair of 8259A interrupt controllers: master at 0x20/0x21, slave
 * at 0xA0/0xA1 cascaded on the master's IR2, and the edge/level control
 * registers (ELCR) at 0x4D0/0x4D1 as on PIIX/ICH chipsets.
 *
 * Reference: Intel 8259A data sheet (order 231468): ICW1-ICW4 (Figure 7),
 * OCW1-OCW3 (Figure 8), priority and EOI modes, poll command; Intel PIIX4
 * data sheet 4.1.10 for ELCR.
 *
 * Supported: the initialization sequence, IMR/IRR/ISR, fully nested
 * priority with automatic or specific rotation, specific and non-specific
 * EOI, automatic EOI (with rotation), OCW3 read IRR/ISR and poll, special
 * mask mode, special fully nested mode, edge or level triggering per line
 * through ELCR, spurious IRQ 7 / IRQ 15.  Not modelled: 8080/8085 mode
 * (ICW4 bit 0 is kept but ignored), buffered mode, ICW1.LTIM (as on PIIX,
 * ELCR alone selects the trigger mode).
 *
 * Edge-triggered requests stay latched in IRR after the line falls until
 * they are acknowledged (a pulse is enough, as in QEMU; the 8259A would
 * turn a request that is gone at INTA time into a default IR7).
 *
 * Cascade: the master's IR2 latches rising edges of the slave's INT
 * output.  A slave request that goes away after that (masked, or a level
 * line dropped) is acknowledged as the slave's spurious IR7 (IRQ 15) with
 * the master's IR2 in service, so the guest EOIs the master only.
 *
 * State before the guest programs it (there is no BIOS): both chips
 * initialised for 8086 mode with vector bases 0x08 and 0x70, the slave on
 * IR2, every line masked (IMR = 0xff), all lines edge-triggered.
 *
 * Not thread-safe: the owner serializes calls (hv/vdev/devices.h).
 */
#ifndef FERRY_HV_VDEV_PIC_H
#define FERRY_HV_VDEV_PIC_H

#include <stdbool.h>
#include <stdint.h>
#include "hv/vdev/snap.h"

#define PIC_MASTER_CMD	0x20
#define PIC_MASTER_DATA	0x21
#define PIC_SLAVE_CMD	0xA0
#define PIC_SLAVE_DATA	0xA1
#define PIC_ELCR1	0x4D0
#define PIC_ELCR2	0x4D1
#define PIC_CASCADE_IRQ	2
#define PIC_IRQS	16

/* One 8259A.  Everything here is guest-visible state. */
struct pic_chip {
	uint8_t irr, isr, imr;	/* request, in-service, mask registers */
	uint8_t edge_sense;	/* edge-triggered lines: last level seen */
	uint8_t elcr;		/* 1 = level-triggered (ELCR) */
	uint8_t base;		/* ICW2 & 0xf8: vector of IR0 */
	uint8_t icw3;		/* master: IRs with a slave; slave: its id */
	uint8_t lowest;		/* IR with the lowest priority (rotation) */
	uint8_t init_step;	/* 0 ready; 1, 2, 3: expecting ICW2, 3, 4 */
	bool icw4_needed;	/* ICW1.IC4 */
	bool single;		/* ICW1.SNGL: no cascade */
	bool auto_eoi;		/* ICW4.AEOI */
	bool rotate_aeoi;	/* OCW2 "rotate in automatic EOI mode" */
	bool sfnm;		/* ICW4.SFNM: special fully nested mode */
	bool upm;		/* ICW4.uPM (8086 mode), kept for read-back */
	bool special_mask;	/* OCW3.SMM */
	bool read_isr;		/* OCW3 RR/RIS: reads of the command port */
	bool poll;		/* OCW3.P: the next read is a poll */
};

struct pic_stats {
	uint64_t spurious;	/* INTA cycles that found nothing: IRQ 7/15 */
	uint64_t acks;		/* INTA cycles (and polls) that took a vector */
};

struct pic {
	struct pic_chip chip[2];	/* [0] master, [1] slave */
	uint16_t lines;			/* input level of each IRQ line */
	struct pic_stats stats;		/* host-side counters, not saved */
};

/* Power-on state (see above). */
void pic_init(struct pic *p);

/*
 * Drive IRQ line irq (0-15) to level (0 or not).  Edge-triggered lines
 * latch a request on a rising edge (raise then lower for a pulse);
 * level-triggered ones request while high.  IRQ 2 is the cascade and is
 * ignored.  Returns 0, or -EINVAL for an irq out of range.
 */
int pic_set_irq(struct pic *p, unsigned int irq, int level);

/* The vector the CPU would receive if it took an interrupt now, or -1. */
int pic_pending_vector(const struct pic *p);

/*
 * The interrupt acknowledge cycle: move the highest request from IRR to
 * ISR (unless automatic EOI) and return its vector.  If the request went
 * away since pic_pending_vector() this is the spurious IR7 vector of the
 * master (nothing in service) or of the slave (master IR2 in service), as
 * the hardware does.  Returns -1 only while the master is being
 * initialised.
 */
int pic_ack(struct pic *p);

/*
 * Guest port access: PIC_MASTER_*, PIC_SLAVE_*, PIC_ELCR1/2.  size 1, 2
 * or 4 (wider accesses are split into bytes).  Returns 0, or -ENOENT if
 * port is not the PIC's.
 */
int pic_io(struct pic *p, uint16_t port, uint8_t size, bool in, uint32_t *val);

/* Save or restore (see snap.h).  A refused restore leaves p unchanged. */
int pic_snapshot(struct pic *p, struct snap *s);

/* Internal consistency (used by restore, and by tests). */
bool pic_valid(const struct pic *p);

#endif
