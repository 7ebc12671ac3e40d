/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A guest's I/O APIC (82093AA style, version 0x11) with 24 pins: IOREGSEL
 * at base + 0x00 and IOWIN at base + 0x10 (base 0xFEC00000), registers
 * 0x00 ID, 0x01 version (0x00170011: 24 entries), 0x02 arbitration id,
 * 0x10 + 2n / 0x11 + 2n the low / high half of pin n's redirection entry.
 *
 * Reference: Intel 82093AA I/O APIC data sheet (order 290566), 3.0
 * registers and 3.2.4 redirection table: vector 7:0, delivery mode 10:8,
 * destination mode 11, delivery status 12 (read-only, always 0 here:
 * delivery is immediate), polarity 13, remote IRR 14 (read-only), trigger
 * 15 (1 = level), mask 16, destination 63:56.
 *
 * Lines: ioapic_set_irq(pin, level) gives a pin's logical state (1 =
 * asserted); the polarity bit is kept for the guest to read back but the
 * callers' levels are already logical (ferry's devices and MP table agree
 * on it).  Edge pins deliver on a rising edge while unmasked (an edge on a
 * masked pin is lost, as on the chip).  Level pins deliver while asserted,
 * unmasked and remote IRR clear, and set remote IRR when a local APIC took
 * the message; the local APIC's EOI of that vector (ioapic_eoi, called by
 * lapic's eoi callback) clears it, and a line still asserted delivers
 * again.  Unmasking an asserted level pin delivers; switching an entry to
 * edge clears its remote IRR (what Linux does to unstick one).
 *
 * Delivery goes through a callback so this file knows nothing of vCPUs:
 * deliver(ctx, dest, logical, mode, vector, level_trig) returns whether
 * any local APIC accepted it; dest is the 8-bit destination field (0xFF:
 * broadcast), matched with lapic_match_dest(..., narrow = true).
 *
 * State before the guest programs it: id 0, every entry masked with the
 * other bits 0, all lines low.
 *
 * Not thread-safe: the owner serializes calls.  The deliver callback runs
 * inside ioapic_set_irq/ioapic_eoi/ioapic_mmio and must not call back
 * into this ioapic (lapic_deliver is fine).
 */
#ifndef FERRY_HV_VDEV_IOAPIC_H
#define FERRY_HV_VDEV_IOAPIC_H

#include <stdbool.h>
#include <stdint.h>
#include "hv/vdev/snap.h"

#define IOAPIC_PINS		24
#define IOAPIC_DEFAULT_BASE	0xFEC00000ull
#define IOAPIC_MMIO_SIZE	0x1000u
#define IOAPIC_REGSEL		0x00u
#define IOAPIC_WINDOW		0x10u
#define IOAPIC_VERSION		0x00170011u

/* Redirection entry bits. */
#define IOAPIC_RTE_LOGICAL	(1ull << 11)
#define IOAPIC_RTE_POLARITY	(1ull << 13)
#define IOAPIC_RTE_REMOTE_IRR	(1ull << 14)
#define IOAPIC_RTE_LEVEL	(1ull << 15)
#define IOAPIC_RTE_MASKED	(1ull << 16)

typedef bool (*ioapic_deliver_fn)(void *ctx, uint32_t dest, bool logical, uint8_t mode,
				  uint8_t vector, bool level_trig);

struct ioapic_stats {
	uint64_t delivered;	/* messages sent and accepted */
	uint64_t refused;	/* messages no local APIC took */
	uint64_t masked_edges;	/* rising edges on masked pins, lost */
};

/* (c): set at init, not saved.  Everything else is guest-visible. */
struct ioapic {
	ioapic_deliver_fn deliver;	/* (c) */
	void *ctx;			/* (c) */
	uint8_t id;			/* ID register bits 27:24 */
	uint8_t regsel;			/* IOREGSEL */
	uint32_t lines;			/* pin levels, bit n = pin n */
	uint64_t rte[IOAPIC_PINS];	/* redirection entries */
	struct ioapic_stats stats;	/* host-side counters, not saved */
};

void ioapic_init(struct ioapic *io, ioapic_deliver_fn deliver, void *ctx);

/* Drive pin (0..23) to level.  Returns 0, or -EINVAL for a bad pin. */
int ioapic_set_irq(struct ioapic *io, unsigned int pin, int level);

/* A local APIC's EOI of a level-triggered vector (broadcast to all). */
void ioapic_eoi(struct ioapic *io, uint8_t vector);

/* Deliver what the level pins call for now (asserted, unmasked, no remote
 * IRR), as the I/O APIC would have: after a restore, whose state may hold
 * such a pin that nothing else would serve. */
void ioapic_resample(struct ioapic *io);

/*
 * An access at offset (0..0xFFF) of the I/O APIC page.  IOREGSEL and
 * IOWIN take 32-bit accesses (IOREGSEL a byte too); anything else reads 0
 * and drops writes.  Returns 0, or -ENOENT for an offset outside the page.
 */
int ioapic_mmio(struct ioapic *io, uint32_t offset, uint8_t size, bool write, uint32_t *val);

/* Save or restore; a refused restore (-EINVAL) leaves io unchanged. */
int ioapic_snapshot(struct ioapic *io, struct snap *s);

/* Internal consistency (used by restore, and by tests). */
bool ioapic_valid(const struct ioapic *io);

#endif
