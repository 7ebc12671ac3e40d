/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pvpanic on PCI: the paravirtual device through which a guest kernel
 * tells the hypervisor it panicked (QEMU's docs/specs/pvpanic.rst; Linux
 * drivers/misc/pvpanic, CONFIG_PVPANIC_PCI).
 *
 * The function: vendor 0x1B36, device 0x0011, revision 1, class 0x0880
 * (system peripheral, other), no interrupt, BAR0 a 16-byte memory BAR
 * whose byte 0 is the register.  Reading it gives the events the device
 * knows: bit 0 PANICKED (the guest panicked; the host should act), bit 1
 * CRASH_LOADED (a kdump kernel is about to take over; the host should
 * note it and let the guest run).  The guest writes an event there.
 *
 * What ferry does with a write (its low byte; any size the bus lets
 * through, 1/2/4/8 bytes inside the BAR):
 *   PANICKED	  the first one calls event(ctx, PVPANIC_PANICKED): the core
 *		  stops the guest with the reason "panic"; later ones are
 *		  only counted (a guest that writes it in a loop stops once)
 *   CRASH_LOADED event(ctx, PVPANIC_CRASH_LOADED), counted: noted only
 *   other bits	  ignored and counted, as the spec says
 * Accesses that do not start at byte 0 read 0 and are ignored (counted).
 *
 * Not thread-safe: the owner serializes calls (vm->dev_lock).
 */
#ifndef FERRY_HV_VDEV_PVPANIC_H
#define FERRY_HV_VDEV_PVPANIC_H

#include <stdbool.h>
#include <stdint.h>
#include "hv/vdev/snap.h"
#include "hv/vdev/vpci.h"

#define PVPANIC_VENDOR		0x1B36	/* Red Hat, Inc. (QEMU's devices) */
#define PVPANIC_DEVICE		0x0011
#define PVPANIC_REVISION	1
#define PVPANIC_CLASS		0x088000u	/* system peripheral, other */
#define PVPANIC_BAR_SIZE	16		/* the register and 15 bytes of nothing */
#define PVPANIC_PANICKED	0x01
#define PVPANIC_CRASH_LOADED	0x02
#define PVPANIC_EVENTS		(PVPANIC_PANICKED | PVPANIC_CRASH_LOADED)

struct pvpanic_stats {
	uint64_t panics;	/* PANICKED writes (the first one acted) */
	uint64_t crash_loaded;	/* CRASH_LOADED writes */
	uint64_t ignored;	/* unknown bits, accesses off the register */
};

/* Fields (c): set by pvpanic_init, not saved. */
struct pvpanic {
	struct vpci_fn fn;
	bool panicked;					/* PANICKED was acted on */
	void (*event)(void *ctx, uint8_t event);	/* (c) may be NULL */
	void *ctx;					/* (c) */
	struct pvpanic_stats stats;			/* host-side, not saved */
};

/* Build the function (not yet on a bus: vpci_attach it). */
void pvpanic_init(struct pvpanic *p, void (*event)(void *ctx, uint8_t event), void *ctx);

/* Save or restore the config space and whether it panicked; a refused
 * restore (-EINVAL) leaves p unchanged. */
int pvpanic_snapshot(struct pvpanic *p, struct snap *s);

#endif
