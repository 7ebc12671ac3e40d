/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * PCI configuration mechanism 1 (PCI Local Bus spec 3.0, 3.2.2.3.2): a
 * brute-force scan of buses 0-255 is avoided; ferry follows bridges only
 * as far as bus numbers that answer, which suffices for emulated machines
 * and typical NICs on bus 0.
 */
#include "drivers/pci.h"
#include "arch/x86/cpu.h"
#include "hv/lib/spinlock.h"

static spinlock_t cfg_lock = SPINLOCK_INIT;

static uint32_t addr(const struct pci_dev *d, uint8_t off)
{
	return 0x80000000u | (uint32_t)d->bus << 16 | (uint32_t)d->dev << 11 |
	       (uint32_t)d->fn << 8 | (off & 0xfc);
}

uint32_t pci_read32(const struct pci_dev *d, uint8_t off)
{
	uint32_t v;

	spin_lock(&cfg_lock);
	outl(0xcf8, addr(d, off));
	v = inl(0xcfc);
	spin_unlock(&cfg_lock);
	return v;
}

void pci_write32(const struct pci_dev *d, uint8_t off, uint32_t v)
{
	spin_lock(&cfg_lock);
	outl(0xcf8, addr(d, off));
	outl(0xcfc, v);
	spin_unlock(&cfg_lock);
}

uint16_t pci_read16(const struct pci_dev *d, uint8_t off)
{
	return pci_read32(d, off & ~3) >> ((off & 2) * 8);
}

uint8_t pci_read8(const struct pci_dev *d, uint8_t off)
{
	return pci_read32(d, off & ~3) >> ((off & 3) * 8);
}

/* A word written alone (the data port's byte lanes): the other half of
 * the dword is not written back.  Beside the command register is the
 * status register, whose error bits a 1 clears (PCI Local Bus 3.0,
 * 6.2.3): a read-modify-write of the dword cleared them all at every
 * command write. */
void pci_write16(const struct pci_dev *d, uint8_t off, uint16_t v)
{
	spin_lock(&cfg_lock);
	outl(0xcf8, addr(d, off));
	outw(0xcfc + (off & 2), v);
	spin_unlock(&cfg_lock);
}

static bool probe(struct pci_dev *d)
{
	uint32_t id = pci_read32(d, 0);

	if ((id & 0xffff) == 0xffff)
		return false;
	d->vendor = id & 0xffff;
	d->device = id >> 16;
	uint32_t cls = pci_read32(d, 8);
	d->class = cls >> 24;
	d->subclass = cls >> 16;
	d->irq_line = pci_read32(d, 0x3c) & 0xff;
	return true;
}

void pci_foreach(bool (*fn)(const struct pci_dev *d, void *arg), void *arg)
{
	for (unsigned int bus = 0; bus < 256; bus++)
		for (unsigned int dev = 0; dev < 32; dev++)
			for (unsigned int f = 0; f < 8; f++) {
				struct pci_dev d = { .bus = bus, .dev = dev, .fn = f };
				if (!probe(&d)) {
					if (f == 0)
						break;	/* no device: skip its functions */
					continue;
				}
				if (fn(&d, arg))
					return;
				if (f == 0 && !(pci_read32(&d, 0xc) & 0x800000))
					break;	/* single-function device */
			}
}

struct find_arg {
	uint16_t vendor, device;
	struct pci_dev *out;
	bool found;
};

static bool find_one(const struct pci_dev *d, void *arg)
{
	struct find_arg *a = arg;

	if (d->vendor != a->vendor || d->device != a->device)
		return false;
	*a->out = *d;
	a->found = true;
	return true;
}

bool pci_find(uint16_t vendor, uint16_t device, struct pci_dev *out)
{
	struct find_arg a = { vendor, device, out, false };

	pci_foreach(find_one, &a);
	return a.found;
}

uint64_t pci_bar_mem(const struct pci_dev *d, int n, uint64_t *size)
{
	uint8_t off = 0x10 + n * 4;
	uint32_t lo = pci_read32(d, off), hi = 0, mask;
	bool is64 = ((lo >> 1) & 3) == 2;
	uint16_t cmd;

	if (lo & 1) {
		*size = 0;
		return 0;
	}
	/* the size probe, with memory decode off meanwhile: the BAR briefly
	 * says 0xfff...: it must not claim that range (firmware flash) */
	cmd = pci_read16(d, 4);
	if (cmd & 0x2)
		pci_write16(d, 4, cmd & ~0x2);
	pci_write32(d, off, 0xffffffff);
	mask = pci_read32(d, off);
	pci_write32(d, off, lo);
	if (cmd & 0x2)
		pci_write16(d, 4, cmd);
	if (is64)
		hi = pci_read32(d, off + 4);
	*size = (~(uint64_t)(mask & ~0xfu) + 1) & 0xffffffffull;
	return ((uint64_t)hi << 32) | (lo & ~0xfu);
}

void pci_enable_mem(const struct pci_dev *d)
{
	pci_write16(d, 4, pci_read16(d, 4) | 0x2);	/* memory space */
}

void pci_enable_bus_master(const struct pci_dev *d)
{
	pci_write16(d, 4, pci_read16(d, 4) | 0x6);	/* memory space, bus master */
}

/* Command register bit 10, Interrupt Disable (PCI Local Bus 3.0, 6.2.2):
 * the function keeps its INTx line deasserted while it is set. */
void pci_intx(const struct pci_dev *d, bool on)
{
	uint16_t cmd = pci_read16(d, 4);

	pci_write16(d, 4, on ? cmd & ~0x400 : cmd | 0x400);
}
