/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A guest's PCI bus with its NIC and pvpanic device: see vnic.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "hv/vdev/vnic.h"

#define FN_NET		0x01	/* which functions: saved, and checked on restore */
#define FN_PVPANIC	0x02

static void panic_event(void *ctx, uint8_t event)
{
	struct vnic *n = ctx;

	if (n->cfg.panic)
		n->cfg.panic(n->cfg.ctx, event);
}

static int build(struct vnic *n, const struct vnic_config *cfg)
{
	struct vnet_config nc = {
		.irq = cfg->irq, .mem = cfg->mem, .tx = cfg->tx, .ctx = cfg->ctx,
	};
	int rc;

	memcpy(nc.mac, cfg->mac, sizeof(nc.mac));
	n->cfg = *cfg;
	vpci_bus_init(&n->bus, cfg->irq_fn, cfg->ctx);
	if (cfg->msi_fn)
		vpci_bus_set_msi(&n->bus, cfg->msi_fn);
	rc = cfg->net ? vnet_init(&n->net, &nc) : 0;
	if (!rc && cfg->net)
		rc = vpci_attach(&n->bus, &n->net.vp.fn, VNIC_SLOT);
	if (!rc && cfg->pvpanic) {
		pvpanic_init(&n->pvpanic, panic_event, n);
		rc = vpci_attach(&n->bus, &n->pvpanic.fn, VNIC_PVPANIC_SLOT);
	}
	if (!rc)
		vpci_place_bars(&n->bus);
	return rc;
}

int vnic_create(const struct vnic_config *cfg, struct vnic **out)
{
	struct vnic *n;
	int rc;

	*out = NULL;
	if (!cfg->irq_fn || cfg->irq >= 24)
		return -EINVAL;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	rc = build(n, cfg);
	if (rc) {
		free(n);
		return rc;
	}
	*out = n;
	return 0;
}

void vnic_destroy(struct vnic *n)
{
	free(n);
}

int vnic_io(struct vnic *n, uint16_t port, uint8_t size, bool in, uint32_t *val)
{
	return vpci_io(&n->bus, port, size, in, val);
}

int vnic_mmio(struct vnic *n, uint64_t gpa, uint8_t size, bool write, uint32_t *val)
{
	uint64_t v = *val;
	int rc = vpci_mmio(&n->bus, gpa, size, write, &v);

	if (!rc && !write)
		*val = (uint32_t)v;
	return rc;
}

int vnic_rx_frame(struct vnic *n, const struct vnet_rx_frame *f)
{
	return n->cfg.net ? vnet_rx_frame(&n->net, f) : -ENODEV;
}

bool vnic_rx_gso(const struct vnic *n)
{
	return n->cfg.net && vnet_rx_gso(&n->net);
}

bool vnic_rx_take_kick(struct vnic *n)
{
	return n->cfg.net && vnet_rx_take_kick(&n->net);
}

int vnic_set_link(struct vnic *n, bool up)
{
	if (!n->cfg.net)
		return -ENODEV;
	vnet_set_link(&n->net, up);
	return 0;
}

bool vnic_tx_stalled(const struct vnic *n)
{
	return n->cfg.net && vnet_tx_stalled(&n->net);
}

void vnic_tx_resume(struct vnic *n)
{
	if (n->cfg.net)
		vnet_tx_resume(&n->net);
}

static int walk(struct vnic *n, struct snap *s)
{
	uint8_t fns = (n->cfg.net ? FN_NET : 0) | (n->cfg.pvpanic ? FN_PVPANIC : 0);
	uint8_t have = fns;

	snap_u8(s, &fns);
	if (!s->err && fns != have)
		return snap_invalid(s);	/* the peer built the same functions */
	if (vpci_bus_snapshot(&n->bus, s))
		return s->err;
	if (n->cfg.net && vnet_snapshot(&n->net, s))
		return s->err;
	if (n->cfg.pvpanic)
		pvpanic_snapshot(&n->pvpanic, s);
	return s->err;
}

/* Interrupts of the trial copy go nowhere (and it has no MSI route). */
static void no_irq(void *ctx, unsigned int line, int level)
{
	(void)ctx, (void)line, (void)level;
}

/* Restore into a trial NIC built the same way; only if every part is
 * accepted does the real one take the same bytes (which then pass). */
/* The level the NIC drives on its INTx pin (low without a NIC). */
static bool intx_line(const struct vnic *n)
{
	return n->cfg.net && vpci_fn_intx_line(&n->net.vp.fn);
}

/* pin: the level the interrupt controllers hold for the NIC's line, which
 * the restored NIC must drive; -1: not checked. */
static int snapshot(struct vnic *n, struct snap *s, int pin)
{
	struct vnic_config cfg = n->cfg;
	struct snap trial = *s;
	struct vnic *t;
	int rc;

	if (!s->restore)
		return walk(n, s);
	cfg.irq_fn = no_irq;
	cfg.msi_fn = NULL;
	cfg.panic = NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return s->err = -ENOMEM;
	rc = build(t, &cfg) ? -EINVAL : walk(t, &trial);
	if (!rc && pin >= 0 && intx_line(t) != (pin != 0))
		rc = -EINVAL;		/* a line stuck, or an interrupt lost */
	free(t);
	if (rc) {
		*s = trial;
		return s->err ? s->err : snap_invalid(s);
	}
	return walk(n, s);
}

int vnic_snapshot(struct vnic *n, struct snap *s)
{
	return snapshot(n, s, -1);
}

int vnic_snapshot_on_pin(struct vnic *n, struct snap *s, bool pin)
{
	return snapshot(n, s, pin);
}

int vnic_check_mem(const struct vnic *n, char *why, size_t len)
{
	return n->cfg.net ? virtio_pci_check_mem(&n->net.vp, why, len) : 0;
}
