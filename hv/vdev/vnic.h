/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A guest's PCI bus with its functions, as one object the device set
 * (devices.c) can hold: the virtio-net NIC at 00:01.0 (VNIC_SLOT) when
 * cfg.net, the pvpanic device (pvpanic.h) at 00:02.0 (VNIC_PVPANIC_SLOT)
 * when cfg.pvpanic; the slots do not depend on which others are there.
 * What the core needs to give a guest a network card or a panic device,
 * in five calls.
 *
 *	create:	 cfg = { net, pvpanic, mac, irq = VNIC_IRQ, mem = guest RAM
 *		 (gpmap_read/gpmap_write), tx = into the switch, irq_fn =
 *		 apicbus_set_irq, panic = what a pvpanic event does };
 *		 vnic_create(&cfg, &n)  (BARs placed in the hole, link up)
 *	I/O:	 vnic_io(n, port, ...)        ports 0xCF8-0xCFF
 *	MMIO:	 vnic_mmio(n, gpa, ...)       BARs in 0xC0000000-0xFEBFFFFF
 *	frames:	 vnic_rx_frame(n, f)          from the switch to the guest
 *				      (-ENODEV without the NIC)
 *	migrate: vnic_snapshot(n, s)          all or nothing
 *
 * Interrupts: INTx of 00:01.0 is pin A on line cfg.irq (VNIC_IRQ = 16, an
 * I/O APIC pin no ISA IRQ uses: Linux sets a pin it also knows as an ISA
 * IRQ up edge-triggered); the guest needs it in its MP table as an I/O
 * interrupt entry from the PCI bus, which must be MP bus 0 (Linux
 * compares the PCI bus number with the source bus ID), source bus IRQ
 * (1 << 2) | 0 (device 1, INTA#), level-triggered active-low, to I/O APIC
 * pin cfg.irq (hv/loader/mptable.c does so).  The level reaches irq_fn as
 * a logical 1/0.  A guest booted with `noapic` gets no NIC interrupts.
 *
 * Guest RAM must not overlap the hole: a guest with a NIC has at most
 * 3 GiB below 4 GiB (the rest above 4 GiB).
 *
 * Not thread-safe: the owner serializes every call (vm->dev_lock); the
 * callbacks run inside vnic_io/vnic_mmio/vnic_rx_frame under it.
 */
#ifndef FERRY_HV_VDEV_VNIC_H
#define FERRY_HV_VDEV_VNIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "hv/vdev/pvpanic.h"
#include "hv/vdev/snap.h"
#include "hv/vdev/virtio_net.h"
#include "hv/vdev/vpci.h"

#define VNIC_SLOT	1
#define VNIC_IRQ	16	/* I/O APIC pin of INTA#: 16-23 are no ISA IRQ's */
#define VNIC_PVPANIC_SLOT 2

struct vnic_config {
	bool net;			/* the virtio-net NIC at VNIC_SLOT */
	bool pvpanic;			/* the pvpanic device at VNIC_PVPANIC_SLOT */
	uint8_t mac[6];
	uint8_t irq;
	struct vq_mem mem;
	int (*tx)(void *ctx, const uint8_t *frame, size_t len, const struct vnet_offload *off);
	void (*irq_fn)(void *ctx, unsigned int line, int level);
	void (*msi_fn)(void *ctx, uint64_t addr, uint32_t data);	/* NULL: no MSI */
	void (*panic)(void *ctx, uint8_t event);	/* pvpanic events, may be NULL */
	void *ctx;			/* for tx, irq_fn, msi_fn and panic */
};

/* Never copied: the devices' callbacks point into it. */
struct vnic {
	struct vnic_config cfg;
	struct vpci_bus bus;
	struct vnet net;		/* valid when cfg.net */
	struct pvpanic pvpanic;		/* valid when cfg.pvpanic */
};

/* Allocate and power on.  0, -EINVAL or -ENOMEM; *out NULL on error. */
int vnic_create(const struct vnic_config *cfg, struct vnic **out);
void vnic_destroy(struct vnic *n);		/* NULL is fine */

/* Port access (size 1/2/4): 0, or -ENOENT when not 0xCF8-0xCFF. */
int vnic_io(struct vnic *n, uint16_t port, uint8_t size, bool in, uint32_t *val);
/* MMIO access (size 1/2/4): 0, or -ENOENT when no BAR decodes gpa. */
int vnic_mmio(struct vnic *n, uint64_t gpa, uint8_t size, bool write, uint32_t *val);
/* A frame for the guest, in pieces, or a super-frame (see vnet_rx_frame):
 * 0, -EAGAIN when dropped (counted), -EMSGSIZE or -ENOBUFS (nothing taken). */
int vnic_rx_frame(struct vnic *n, const struct vnet_rx_frame *f);
bool vnic_rx_gso(const struct vnic *n);		/* see vnet_rx_gso */
bool vnic_rx_take_kick(struct vnic *n);		/* see vnet_rx_take_kick */
/* The NIC's link as the guest sees it (vnet_set_link): 0, -ENODEV. */
int vnic_set_link(struct vnic *n, bool up);
/* The NIC's transmit queue waits for room (virtio_net.h); resume it. */
bool vnic_tx_stalled(const struct vnic *n);
void vnic_tx_resume(struct vnic *n);

/* Save or restore which functions there are (a restore refuses another
 * set), the bus, the NIC and pvpanic.  A refused restore (-EINVAL, or -ENOMEM
 * for the trial copy) leaves n exactly as it was. */
int vnic_snapshot(struct vnic *n, struct snap *s);
/* The same, and a restore also refuses a NIC whose INTx level is not pin,
 * the level the interrupt controller's copy (restored first) holds. */
int vnic_snapshot_on_pin(struct vnic *n, struct snap *s, bool pin);
/* Whether guest memory agrees with the NIC's queues (virtio_pci_check_mem). */
int vnic_check_mem(const struct vnic *n, char *why, size_t len);

#endif
