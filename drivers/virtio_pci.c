/* SPDX-License-Identifier: BSD-2-Clause */
/* virtio 1.x PCI capabilities (drivers/virtio_pci.h; virtio 1.1, 4.1.4). */
#include <errno.h>
#include <string.h>
#include "drivers/virtio_pci.h"
#include "hv/lib/bytes.h"

#define PCI_STATUS		0x06
#define PCI_STATUS_CAPS		(1u << 4)
#define PCI_CAP_PTR		0x34
#define MAX_CAPS		48	/* (256 - 64) / 4: more means a loop */

/* struct virtio_pci_cap: vndr, next, len, cfg_type, bar, id, pad[2],
 * offset, length; the notify capability adds notify_off_multiplier. */
enum { CAP_LEN = 2, CAP_TYPE = 3, CAP_BAR = 4, CAP_OFF = 8, CAP_LENGTH = 12, CAP_MULT = 16 };

static struct virtio_pci_region *slot(struct virtio_pci_layout *l, uint8_t type)
{
	switch (type) {
	case VIRTIO_PCI_CAP_COMMON: return &l->common;
	case VIRTIO_PCI_CAP_NOTIFY: return &l->notify;
	case VIRTIO_PCI_CAP_ISR: return &l->isr;
	case VIRTIO_PCI_CAP_DEVICE: return &l->device;
	default: return NULL;
	}
}

/* One vendor capability at p; ignored unless well-formed and the first
 * of its type (4.1.4: the driver uses the first one it can). */
static void take_cap(const uint8_t *cfg, unsigned int p, struct virtio_pci_layout *l)
{
	uint8_t type = cfg[p + CAP_TYPE], clen = cfg[p + CAP_LEN];
	struct virtio_pci_region *r = slot(l, type);
	unsigned int need = type == VIRTIO_PCI_CAP_NOTIFY ? 20 : 16;

	if (!r || r->found || clen < need || p + need > 256 || cfg[p + CAP_BAR] > 5)
		return;
	r->bar = cfg[p + CAP_BAR];
	r->off = get_le32(cfg + p + CAP_OFF);
	r->len = get_le32(cfg + p + CAP_LENGTH);
	r->found = true;
	if (type == VIRTIO_PCI_CAP_NOTIFY)
		l->notify_mult = get_le32(cfg + p + CAP_MULT);
}

int virtio_pci_parse_caps(const uint8_t cfg[256], struct virtio_pci_layout *l)
{
	unsigned int p = cfg[PCI_CAP_PTR] & 0xfc;

	memset(l, 0, sizeof(*l));
	if (!(get_le16(cfg + PCI_STATUS) & PCI_STATUS_CAPS))
		return -ENOENT;
	for (int n = 0; n < MAX_CAPS && p >= 0x40 && p <= 256 - 4; n++) {
		if (cfg[p] == VIRTIO_PCI_CAP_VNDR)
			take_cap(cfg, p, l);
		p = cfg[p + 1] & 0xfc;
	}
	return l->common.found && l->notify.found && l->isr.found ? 0 : -ENOENT;
}

static bool fits(const struct virtio_pci_region *r, const uint64_t bar_size[6], uint32_t min)
{
	return r->len >= min && bar_size[r->bar] &&
	       (uint64_t)r->off + r->len <= bar_size[r->bar];
}

int virtio_pci_check(const struct virtio_pci_layout *l, const uint64_t bar_size[6])
{
	if (!fits(&l->common, bar_size, VCC_SIZE) || !fits(&l->notify, bar_size, 2) ||
	    !fits(&l->isr, bar_size, 1))
		return -EINVAL;
	if (l->device.found && !fits(&l->device, bar_size, 1))
		return -EINVAL;
	return 0;
}

int virtio_pci_notify_at(const struct virtio_pci_layout *l, uint16_t notify_off, uint64_t *off)
{
	uint64_t rel = (uint64_t)notify_off * l->notify_mult;

	if (rel + 2 > l->notify.len)
		return -EINVAL;
	*off = l->notify.off + rel;
	return 0;
}
