/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The virtio 1.x PCI transport, "modern" only (virtio 1.1, 4.1): the
 * vendor-specific capabilities that say where, in which BAR, the common
 * configuration, the notification area, the ISR status byte and the
 * device configuration live.  Parsing and checking them is plain logic
 * over a copy of the configuration space (unit-tested in
 * tests/unit/test_virtio_pci.c); the driver maps what they name.
 */
#ifndef FERRY_DRIVERS_VIRTIO_PCI_H
#define FERRY_DRIVERS_VIRTIO_PCI_H

#include <stdbool.h>
#include <stdint.h>

#define VIRTIO_PCI_VENDOR	0x1af4
#define VIRTIO_PCI_CAP_VNDR	0x09	/* capability id: vendor-specific */

enum {					/* cfg_type, 4.1.4 */
	VIRTIO_PCI_CAP_COMMON = 1,
	VIRTIO_PCI_CAP_NOTIFY = 2,
	VIRTIO_PCI_CAP_ISR = 3,
	VIRTIO_PCI_CAP_DEVICE = 4,
};

/* Common configuration (struct virtio_pci_common_cfg, 4.1.4.3). */
enum {
	VCC_DEVICE_FEATURE_SELECT = 0, VCC_DEVICE_FEATURE = 4,
	VCC_DRIVER_FEATURE_SELECT = 8, VCC_DRIVER_FEATURE = 12,
	VCC_MSIX_CONFIG = 16, VCC_NUM_QUEUES = 18, VCC_DEVICE_STATUS = 20,
	VCC_CONFIG_GENERATION = 21, VCC_QUEUE_SELECT = 22, VCC_QUEUE_SIZE = 24,
	VCC_QUEUE_MSIX_VECTOR = 26, VCC_QUEUE_ENABLE = 28, VCC_QUEUE_NOTIFY_OFF = 30,
	VCC_QUEUE_DESC = 32, VCC_QUEUE_DRIVER = 40, VCC_QUEUE_DEVICE = 48,
	VCC_SIZE = 56,
};

/* Device status bits (2.1). */
#define VIRTIO_STATUS_ACKNOWLEDGE	1
#define VIRTIO_STATUS_DRIVER		2
#define VIRTIO_STATUS_DRIVER_OK		4
#define VIRTIO_STATUS_FEATURES_OK	8
#define VIRTIO_STATUS_NEEDS_RESET	64
#define VIRTIO_STATUS_FAILED		128

#define VIRTIO_F_VERSION_1		32	/* feature bit (6) */

struct virtio_pci_region {
	uint8_t bar;
	uint32_t off, len;
	bool found;
};

struct virtio_pci_layout {
	struct virtio_pci_region common, notify, isr, device;
	uint32_t notify_mult;		/* notify_off_multiplier */
};

/*
 * Walk the capability list of cfg (the 256-byte configuration space) and
 * record the first usable capability of each type.  -ENOENT when common,
 * notify or ISR is missing; a list that loops, leaves the space or has
 * short capabilities ends the walk (what was found so far counts).
 */
int virtio_pci_parse_caps(const uint8_t cfg[256], struct virtio_pci_layout *l);
/* Does every region found fit in its BAR (bar_size[n]: 0 when BAR n is
 * absent or an I/O BAR), and is each big enough?  0 or -EINVAL. */
int virtio_pci_check(const struct virtio_pci_layout *l, const uint64_t bar_size[6]);
/* Offset in the notify BAR of queue notify_off's doorbell (2 bytes wide,
 * 4.1.4.4); -EINVAL when it lies outside the notify region. */
int virtio_pci_notify_at(const struct virtio_pci_layout *l, uint16_t notify_off,
			 uint64_t *off);

#endif
