/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The virtio 1.x PCI transport, modern only (Virtio 1.1, 4.1): vendor
 * 0x1AF4, device 0x1040 + the virtio device type, revision 1, and one
 * 16 KiB memory BAR (BAR 0) found through vendor-specific capabilities
 * (ID 0x09: cap_vndr, cap_next, cap_len, cfg_type, bar, id, pad[2], le32
 * offset, le32 length; the notify capability adds a le32 multiplier):
 *
 *   BAR 0 offset  cfg_type  region
 *   0x0000        1 COMMON  common configuration (4.1.4.3), 0x3C bytes
 *   0x1000        3 ISR     ISR status: bit 0 queue, bit 1 config change;
 *                           a read returns it and clears it (4.1.4.5)
 *   0x2000        4 DEVICE  the device's own configuration
 *   0x3000        2 NOTIFY  queue n's doorbell at 0x3000 + 4 n
 *                           (queue_notify_off = n, multiplier 4)
 *   0x3800          -       MSI-X table, one 16-byte entry per vector
 *   0x3C00          -       MSI-X pending bits (PBA)
 *
 * The VIRTIO_PCI_CAP_PCI_CFG window (type 5) is not offered: Linux does
 * not use it.
 *
 * Interrupts.  Without MSI-X they go through INTx (pin A, the line fixed
 * at creation), asserted while the ISR is non-zero.  With MSI-X (the PCI
 * capability, ID 0x11, PCI 3.0 6.8.2: num_queues + 1 vectors in BAR 0;
 * the guest sets enable and function mask in its message control) each
 * queue's used buffers and the configuration changes send the message of
 * the vector the driver gave them (queue_msix_vector, msix_config; a
 * vector past the table reads back NO_VECTOR, 4.1.5.1.2, and NO_VECTOR
 * sends nothing); the queue bit of the ISR and INTx stay clear.  A message
 * whose entry or function is masked, or that the bus cannot carry (bus
 * master off), sets its pending bit and goes when unmasked.
 *
 * Features: the device's own, VIRTIO_F_RING_INDIRECT_DESC (bit 28: the
 * rings are the transport's, virtqueue.h) and VIRTIO_F_VERSION_1 (bit 32),
 * which the driver must accept: FEATURES_OK stays clear when the driver asks for a
 * feature not offered or leaves VERSION_1 out (3.1.1, 2.2.1).  Driver
 * features are writable only before FEATURES_OK.
 *
 * Device status (2.1): the driver adds bits (ACKNOWLEDGE 1, DRIVER 2,
 * FEATURES_OK 8, DRIVER_OK 4, FAILED 0x80) and writing 0 resets the
 * device: status, features, ISR, every queue, and the device's state via
 * its reset callback.  Queue fields are writable while the queue is not
 * enabled; enabling checks it (vq_enable).  When a queue breaks (hostile
 * descriptors, see virtqueue.h) the device sets DEVICE_NEEDS_RESET (0x40),
 * counts the reason and, once DRIVER_OK, raises a configuration change
 * interrupt (2.1.2); the other queues go on.  Nothing touches guest
 * memory while the function's bus mastering (PCI command bit 2) is off.
 *
 * Not thread-safe: the owner serializes calls.
 */
#ifndef FERRY_HV_VDEV_VIRTIO_PCI_H
#define FERRY_HV_VDEV_VIRTIO_PCI_H

#include <stdbool.h>
#include <stdint.h>
#include "hv/vdev/snap.h"
#include "hv/vdev/virtqueue.h"
#include "hv/vdev/vpci.h"

#define VIRTIO_PCI_VENDOR	0x1AF4
#define VIRTIO_PCI_DEVICE_BASE	0x1040
#define VIRTIO_PCI_BAR_SIZE	0x4000u
#define VIRTIO_PCI_COMMON	0x0000u
#define VIRTIO_PCI_ISR		0x1000u
#define VIRTIO_PCI_DEVCFG	0x2000u
#define VIRTIO_PCI_NOTIFY	0x3000u
#define VIRTIO_PCI_NOTIFY_MULT	4u
#define VIRTIO_PCI_MSIX_TABLE	0x3800u
#define VIRTIO_PCI_MSIX_PBA	0x3C00u
#define VIRTIO_MSIX_VECTORS	(VIRTIO_MAX_QUEUES + 1)
#define VIRTIO_PCI_COMMON_LEN	0x3Cu
#define VIRTIO_MAX_QUEUES	4
#define VIRTIO_NO_VECTOR	0xFFFF

/* Device status bits (Virtio 1.1, 2.1). */
#define VIRTIO_S_ACKNOWLEDGE	0x01
#define VIRTIO_S_DRIVER		0x02
#define VIRTIO_S_DRIVER_OK	0x04
#define VIRTIO_S_FEATURES_OK	0x08
#define VIRTIO_S_NEEDS_RESET	0x40
#define VIRTIO_S_FAILED		0x80
#define VIRTIO_F_RING_INDIRECT_DESC (1ull << 28)
#define VIRTIO_F_VERSION_1	(1ull << 32)
#define VIRTIO_ISR_QUEUE	0x01
#define VIRTIO_ISR_CONFIG	0x02

/* What a device type provides. */
struct virtio_dev_ops {
	void (*reset)(void *dev);
	/* Device configuration access at off (< cfg_len, size 1/2/4/8,
	 * not crossing cfg_len); reads store *val. */
	void (*cfg_rw)(void *dev, uint32_t off, uint8_t size, bool write, uint64_t *val);
	/* The driver rang queue's doorbell (DRIVER_OK, queue enabled). */
	void (*notify)(void *dev, unsigned int queue);
};

struct virtio_pci_config {
	uint16_t type;			/* virtio device type (1 = network) */
	uint32_t class_code;		/* PCI class, e.g. 0x020000 */
	uint16_t num_queues;		/* <= VIRTIO_MAX_QUEUES */
	uint64_t features;		/* the device's; VERSION_1 is added */
	uint32_t cfg_len;		/* bytes of device configuration */
	uint8_t irq;			/* INTx line (I/O APIC pin) */
	const struct virtio_dev_ops *ops;
	void *dev;
	struct vq_mem mem;		/* guest RAM */
};

struct virtio_pci_stats {
	uint64_t resets;		/* device resets by the driver */
	uint64_t features_refused;	/* FEATURES_OK attempts refused */
	uint64_t notifies;		/* doorbells rung */
	uint64_t notifies_ignored;	/* doorbells of no working queue */
	uint64_t irqs;			/* ISR bits raised from zero */
	uint64_t msis;			/* MSI-X messages sent */
	uint64_t msi_pending;		/* held: masked, or no bus master */
	uint64_t queue_errors[VQ_NR_ERR];	/* queues broken, by reason */
	struct {				/* the last queue broken */
		uint16_t queue, avail, last_avail, used_idx;
		uint8_t err;			/* VQ_OK: none yet */
	} last_error;
};

/*
 * (c): set at creation, not saved.  The rest is guest-visible state,
 * saved by virtio_pci_snapshot.
 */
struct virtio_pci {
	struct vpci_fn fn;
	struct virtio_pci_config c;		/* (c) */
	uint32_t dev_feat_sel, drv_feat_sel;
	uint64_t driver_features;
	uint8_t status;
	uint8_t isr;
	uint8_t cfg_gen;
	uint16_t queue_sel;
	struct vq vq[VIRTIO_MAX_QUEUES];
	uint16_t msix_config;			/* vector or VIRTIO_NO_VECTOR */
	uint16_t queue_vector[VIRTIO_MAX_QUEUES];
	struct virtio_msix {
		uint32_t addr_lo, addr_hi, data, ctrl;	/* ctrl bit 0: masked */
	} msix[VIRTIO_MSIX_VECTORS];
	uint32_t msix_pending;			/* PBA: one bit per vector */
	uint8_t msix_cap;			/* (c) its offset in config space */
	struct virtio_pci_stats stats;		/* host-side, not saved */
};

/* Build the PCI function (attach it with vpci_attach).  -EINVAL for a
 * bad configuration. */
int virtio_pci_init(struct virtio_pci *vp, const struct virtio_pci_config *c);

/* The device's doings. */
/* DRIVER_OK, not FAILED, bus master on: the device may use its queues. */
bool virtio_pci_driver_ok(const struct virtio_pci *vp);
/* Used buffers were added to queue: interrupt unless the driver said no. */
void virtio_pci_used(struct virtio_pci *vp, unsigned int queue);
/* The device configuration changed (config_generation moves). */
void virtio_pci_config_changed(struct virtio_pci *vp);
/* A queue broke (its err is set): DEVICE_NEEDS_RESET, counted. */
void virtio_pci_queue_failed(struct virtio_pci *vp, unsigned int queue);
/* Whether the negotiated features include all of mask. */
bool virtio_pci_has(const struct virtio_pci *vp, uint64_t mask);

/* Whether guest memory agrees with every working queue (vq_check_mem):
 * 0, or -EINVAL with the first queue that does not in why. */
int virtio_pci_check_mem(const struct virtio_pci *vp, char *why, size_t len);

/* Save or restore the transport (config space, features, status, ISR,
 * queues); restore checks every field and re-drives INTx from the ISR.
 * Refused: -EINVAL and vp unchanged. */
int virtio_pci_snapshot(struct virtio_pci *vp, struct snap *s);

#endif
