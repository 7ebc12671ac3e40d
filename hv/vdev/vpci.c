/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The guest's PCI bus: see vpci.h.  Configuration space is a byte array
 * per function with a mask of guest-writable bits; BAR sizing falls out
 * of the mask (the address bits below the size are read-only zero).
 */
#include <errno.h>
#include <string.h>
#include "hv/lib/bytes.h"
#include "hv/vdev/vpci.h"

#define VPCI_SNAP_VERSION	1
#define ADDR_ENABLE		0x80000000u
#define ADDR_MASK		0x80FFFFFCu	/* enable, bus, dev, fn, reg */
#define HOST_VENDOR		0x1B36		/* Red Hat: a generic host bridge */
#define HOST_DEVICE		0x0008
#define CLASS_HOST_BRIDGE	0x060000u
#define CAP_MAX			(VPCI_CFG_SIZE - 4)

static void put_mask(uint8_t *m, unsigned int off, uint8_t size, uint32_t bits)
{
	for (unsigned int i = 0; i < size; i++)
		m[off + i] = (uint8_t)(bits >> (8 * i));
}

uint32_t vpci_cfg_read(const struct vpci_fn *fn, unsigned int off, uint8_t size)
{
	uint32_t v = 0;

	for (unsigned int i = 0; i < size && off + i < VPCI_CFG_SIZE; i++)
		v |= (uint32_t)fn->cfg[off + i] << (8 * i);
	return v;
}

void vpci_cfg_write(struct vpci_fn *fn, unsigned int off, uint8_t size, uint32_t val)
{
	for (unsigned int i = 0; i < size && off + i < VPCI_CFG_SIZE; i++) {
		uint8_t m = fn->wmask[off + i];

		fn->cfg[off + i] = (uint8_t)((fn->cfg[off + i] & ~m) | ((val >> (8 * i)) & m));
	}
}

void vpci_fn_init(struct vpci_fn *fn, const struct vpci_id *id, uint8_t irq,
		  vpci_bar_fn bar_rw, void *dev)
{
	memset(fn, 0, sizeof(*fn));
	put_le16(fn->cfg + PCI_VENDOR_ID, id->vendor);
	put_le16(fn->cfg + PCI_DEVICE_ID, id->device);
	fn->cfg[PCI_REVISION] = id->revision;
	put_le16(fn->cfg + PCI_CLASS_PROG, (uint16_t)id->class_code);
	fn->cfg[PCI_CLASS_PROG + 2] = (uint8_t)(id->class_code >> 16);
	put_le16(fn->cfg + PCI_SUBSYS_VENDOR, id->subsys_vendor);
	put_le16(fn->cfg + PCI_SUBSYS_ID, id->subsys_id);
	put_mask(fn->wmask, PCI_COMMAND, 2,
		 PCI_CMD_IO | PCI_CMD_MEM | PCI_CMD_MASTER | PCI_CMD_INTX_DISABLE);
	fn->wmask[0x0C] = 0xFF;			/* cache line size */
	fn->wmask[0x0D] = 0xFF;			/* latency timer */
	fn->irq = irq;
	if (irq != 0xFF) {
		fn->cfg[PCI_INT_LINE] = irq;
		fn->cfg[PCI_INT_PIN] = 1;	/* INTA# */
		fn->wmask[PCI_INT_LINE] = 0xFF;
	}
	fn->cap_end = PCI_CAPS_START;
	fn->bar_rw = bar_rw;
	fn->dev = dev;
	memcpy(fn->rom, fn->cfg, sizeof(fn->rom));
}

int vpci_fn_add_bar(struct vpci_fn *fn, unsigned int bar, uint32_t size)
{
	if (bar >= VPCI_BARS || fn->bar_size[bar] || size < 16 || size > (1u << 30) ||
	    (size & (size - 1)))
		return -EINVAL;
	fn->bar_size[bar] = size;
	put_mask(fn->wmask, PCI_BAR0 + 4 * bar, 4, ~(size - 1));
	return 0;
}

int vpci_fn_add_cap(struct vpci_fn *fn, const uint8_t *data, uint8_t len, uint8_t wmask_off,
		    uint8_t wlen)
{
	unsigned int off = fn->cap_end, link = PCI_CAP_PTR;

	if (len < 2 || off + len > CAP_MAX || wmask_off + wlen > len)
		return -ENOSPC;
	while (fn->cfg[link])			/* the last capability's next */
		link = fn->cfg[link] + 1u;
	memcpy(fn->cfg + off, data, len);
	fn->cfg[off + 1] = 0;
	fn->cfg[link] = (uint8_t)off;
	memset(fn->wmask + off + wmask_off, 0xFF, wlen);
	fn->cfg[PCI_STATUS] |= PCI_STATUS_CAPS;
	fn->cap_end = (uint8_t)((off + len + 3) & ~3u);
	memcpy(fn->rom, fn->cfg, sizeof(fn->rom));
	return (int)off;
}

void vpci_bus_init(struct vpci_bus *bus, void (*irq)(void *ctx, unsigned int line, int level),
		   void *ctx)
{
	static const struct vpci_id host = {
		.vendor = HOST_VENDOR, .device = HOST_DEVICE,
		.subsys_vendor = HOST_VENDOR, .subsys_id = HOST_DEVICE,
		.class_code = CLASS_HOST_BRIDGE,
	};

	memset(bus, 0, sizeof(*bus));
	vpci_fn_init(&bus->host, &host, 0xFF, NULL, NULL);
	bus->host.bus = bus;
	bus->slot[0] = &bus->host;
	bus->irq = irq;
	bus->ctx = ctx;
}

void vpci_bus_set_msi(struct vpci_bus *bus, void (*msi)(void *ctx, uint64_t addr, uint32_t data))
{
	bus->msi = msi;
}

bool vpci_fn_master(const struct vpci_fn *fn)
{
	return fn->cfg[PCI_COMMAND] & PCI_CMD_MASTER;
}

bool vpci_fn_msi(struct vpci_fn *fn, uint64_t addr, uint32_t data)
{
	if (!fn->bus || !fn->bus->msi || !vpci_fn_master(fn))
		return false;
	fn->bus->msi(fn->bus->ctx, addr, data);
	return true;
}

int vpci_attach(struct vpci_bus *bus, struct vpci_fn *fn, unsigned int slot)
{
	if (slot == 0 || slot >= VPCI_SLOTS)
		return -EINVAL;
	if (bus->slot[slot])
		return -EBUSY;
	bus->slot[slot] = fn;
	fn->bus = bus;
	return 0;
}

/* ---- BARs ------------------------------------------------------------ */

/* The address the guest programmed, whether or not it is decoded. */
static uint64_t bar_addr(const struct vpci_fn *fn, unsigned int bar)
{
	return vpci_cfg_read(fn, PCI_BAR0 + 4 * bar, 4) & ~(uint64_t)(fn->bar_size[bar] - 1);
}

uint64_t vpci_bar_base(const struct vpci_fn *fn, unsigned int bar)
{
	uint64_t base;

	if (bar >= VPCI_BARS || !fn->bar_size[bar])
		return 0;
	if (!(vpci_cfg_read(fn, PCI_COMMAND, 2) & PCI_CMD_MEM))
		return 0;
	base = bar_addr(fn, bar);
	if (base < VPCI_HOLE_BASE || base + fn->bar_size[bar] > VPCI_HOLE_END)
		return 0;
	return base;
}

void vpci_place_bars(struct vpci_bus *bus)
{
	uint64_t next = VPCI_HOLE_BASE;

	for (unsigned int s = 1; s < VPCI_SLOTS; s++) {
		struct vpci_fn *fn = bus->slot[s];

		if (!fn)
			continue;
		for (unsigned int b = 0; b < VPCI_BARS; b++) {
			uint32_t size = fn->bar_size[b];

			if (!size)
				continue;
			next = (next + size - 1) & ~(uint64_t)(size - 1);
			if (next + size > VPCI_HOLE_END)
				return;		/* the hole is full: left unplaced */
			vpci_cfg_write(fn, PCI_BAR0 + 4 * b, 4, (uint32_t)next);
			next += size;
		}
		vpci_cfg_write(fn, PCI_COMMAND, 2, vpci_cfg_read(fn, PCI_COMMAND, 2) | PCI_CMD_MEM);
	}
}

int vpci_mmio(struct vpci_bus *bus, uint64_t gpa, uint8_t size, bool write, uint64_t *val)
{
	for (unsigned int s = 1; s < VPCI_SLOTS; s++) {
		struct vpci_fn *fn = bus->slot[s];

		for (unsigned int b = 0; fn && b < VPCI_BARS; b++) {
			uint64_t base = vpci_bar_base(fn, b);

			if (!base || gpa < base || gpa - base >= fn->bar_size[b])
				continue;
			if ((size != 1 && size != 2 && size != 4 && size != 8) ||
			    gpa - base + size > fn->bar_size[b])
				return -EINVAL;
			if (!write)
				*val = 0;
			bus->stats.mmio++;
			fn->bar_rw(fn->dev, b, gpa - base, size, write, val);
			return 0;
		}
	}
	bus->stats.mmio_unclaimed++;
	return -ENOENT;
}

/* ---- INTx ------------------------------------------------------------- */

static void update_intx(struct vpci_fn *fn, bool old_line)
{
	bool disabled = vpci_cfg_read(fn, PCI_COMMAND, 2) & PCI_CMD_INTX_DISABLE;
	bool line = fn->intx && !disabled;

	fn->cfg[PCI_STATUS] = (uint8_t)((fn->cfg[PCI_STATUS] & ~PCI_STATUS_INTX) |
					(fn->intx ? PCI_STATUS_INTX : 0));
	if (line != old_line && fn->irq != 0xFF && fn->bus && fn->bus->irq)
		fn->bus->irq(fn->bus->ctx, fn->irq, line);
}

bool vpci_fn_intx_line(const struct vpci_fn *fn)
{
	return fn->intx && !(vpci_cfg_read(fn, PCI_COMMAND, 2) & PCI_CMD_INTX_DISABLE);
}

void vpci_fn_set_intx(struct vpci_fn *fn, int level)
{
	bool old = vpci_fn_intx_line(fn);

	fn->intx = level != 0;
	update_intx(fn, old);
}

/* ---- configuration mechanism #1 -------------------------------------- */

static struct vpci_fn *addressed(struct vpci_bus *bus)
{
	uint32_t a = bus->addr;

	if (!(a & ADDR_ENABLE) || ((a >> 16) & 0xFF) || ((a >> 8) & 7))
		return NULL;			/* bus 0, function 0 only */
	return bus->slot[(a >> 11) & 0x1F];
}

static void cfg_data(struct vpci_bus *bus, unsigned int off, uint8_t size, bool in,
		     uint32_t *val)
{
	struct vpci_fn *fn = addressed(bus);
	bool old;

	if (!fn) {
		bus->stats.cfg_absent++;
		if (in)
			*val = size == 4 ? 0xFFFFFFFFu : (1u << (8 * size)) - 1;
		return;
	}
	off += bus->addr & 0xFC;
	if (in) {
		bus->stats.cfg_reads++;
		*val = vpci_cfg_read(fn, off, size);
		return;
	}
	bus->stats.cfg_writes++;
	old = vpci_fn_intx_line(fn);
	for (unsigned int b = 0; b < VPCI_BARS; b++)
		if (off < PCI_BAR0 + 4 * b + 4 && off + size > PCI_BAR0 + 4 * b)
			fn->stats.bar_writes++;
	vpci_cfg_write(fn, off, size, *val);
	update_intx(fn, old);			/* the interrupt-disable bit */
	if (fn->cfg_written)
		fn->cfg_written(fn->dev);
}

int vpci_io(struct vpci_bus *bus, uint16_t port, uint8_t size, bool in, uint32_t *val)
{
	if (port < VPCI_ADDR_PORT || port > VPCI_DATA_PORT + 3)
		return -ENOENT;
	if (size != 1 && size != 2 && size != 4)
		return -EINVAL;
	if (port >= VPCI_DATA_PORT) {
		if (port - VPCI_DATA_PORT + size > 4)
			size = (uint8_t)(VPCI_DATA_PORT + 4 - port);
		cfg_data(bus, port - VPCI_DATA_PORT, size, in, val);
	} else if (port == VPCI_ADDR_PORT && size == 4) {
		if (in)
			*val = bus->addr;
		else
			bus->addr = *val & ADDR_MASK;
	} else if (in) {
		*val = size == 4 ? 0xFFFFFFFFu : (1u << (8 * size)) - 1;
	}
	return 0;
}

/* ---- snapshot ---------------------------------------------------------- */

int vpci_fn_snapshot(struct vpci_fn *fn, struct snap *s)
{
	uint8_t cfg[VPCI_CFG_SIZE];

	memcpy(cfg, fn->cfg, sizeof(cfg));
	if (snap_version(s, VPCI_SNAP_VERSION))
		return s->err;
	snap_bytes(s, cfg, sizeof(cfg));
	if (!s->restore || s->err)
		return s->err;
	for (unsigned int i = 0; i < VPCI_CFG_SIZE; i++) {
		uint8_t ro = (uint8_t)~fn->wmask[i];

		if (i == PCI_STATUS)		/* interrupt status follows the device */
			ro &= (uint8_t)~PCI_STATUS_INTX;
		if ((cfg[i] ^ fn->rom[i]) & ro)
			return snap_invalid(s);
	}
	memcpy(fn->cfg, cfg, sizeof(cfg));
	return 0;
}

int vpci_bus_snapshot(struct vpci_bus *bus, struct snap *s)
{
	uint32_t addr = bus->addr;

	if (snap_version(s, VPCI_SNAP_VERSION))
		return s->err;
	snap_u32(s, &addr);
	if (s->restore && !s->err && (addr & ~ADDR_MASK))
		return snap_invalid(s);
	if (s->err)
		return s->err;
	/* The host bridge's writable bits: save its whole space. */
	if (vpci_fn_snapshot(&bus->host, s))
		return s->err;
	bus->addr = addr;
	return 0;
}
