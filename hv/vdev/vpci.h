/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A guest's PCI bus: configuration mechanism #1 and bus 0 with a host
 * bridge at 00:00.0 and up to 31 single-function devices (00:01.0 ..
 * 00:1f.0), each with a type 0 header, 32-bit memory BARs, a capability
 * list and one INTx pin.
 *
 * References: PCI Local Bus Specification 3.0, 3.2.2.3.2 (configuration
 * mechanism #1: CONFIG_ADDRESS at 0xCF8, 32-bit accesses only, bit 31
 * enable, bus 23:16, device 15:11, function 10:8, register 7:2;
 * CONFIG_DATA at 0xCFC-0xCFF, 1/2/4-byte accesses), 6.1 (type 0 header),
 * 6.2.2 (command: I/O space 0, memory space 1, bus master 2, interrupt
 * disable 10; status: interrupt status 3, capabilities list 4), 6.2.5.1
 * (BAR sizing: write all ones, read back, the low bits that stay zero give
 * the size), 6.7 (capability list at 0x34).
 *
 * Linux (arch/x86/pci/direct.c) takes mechanism #1 when, with bit 31 set
 * in CONFIG_ADDRESS, a 32-bit read gives back exactly what was written,
 * and bus 0 holds a host bridge (class 0x0600) or a VGA device: hence the
 * host bridge.  Narrow accesses to 0xCF8-0xCFB are not CONFIG_ADDRESS:
 * writes are ignored and reads give all ones (what a board without
 * mechanism #2 gives).
 *
 * Where BARs may go: the 32-bit MMIO hole VPCI_HOLE_BASE..VPCI_HOLE_END
 * (3 GiB up to just below the I/O APIC page at 0xFEC00000).  A BAR is
 * decoded only while its function's memory-space bit is set and the whole
 * BAR lies inside the hole, so a guest cannot lay a BAR over its RAM, the
 * I/O APIC or the local APIC.  The core assigns the initial addresses
 * (vpci_place_bars, since there is no BIOS) and the guest may move them.
 *
 * Interrupts: a device drives its INTx line with vpci_fn_set_intx(); the
 * bus calls irq(ctx, line, level) with the function's interrupt line
 * register as the core set it at creation (the I/O APIC pin), honouring
 * the command register's interrupt-disable bit.  The guest may rewrite
 * the interrupt line register (it is only a note for the driver); the
 * pin the device drives is the one fixed at creation.
 *
 * Not thread-safe: the owner serializes calls (vm->dev_lock).
 */
#ifndef FERRY_HV_VDEV_VPCI_H
#define FERRY_HV_VDEV_VPCI_H

#include <stdbool.h>
#include <stdint.h>
#include "hv/vdev/snap.h"

#define VPCI_ADDR_PORT	0xCF8
#define VPCI_DATA_PORT	0xCFC
#define VPCI_SLOTS	32		/* devices on bus 0; slot 0 = host bridge */
#define VPCI_CFG_SIZE	256
#define VPCI_BARS	6
#define VPCI_HOLE_BASE	0xC0000000ull
#define VPCI_HOLE_END	0xFEC00000ull	/* exclusive: the I/O APIC */

/* Configuration header offsets and bits (PCI 3.0 section 6). */
#define PCI_VENDOR_ID		0x00
#define PCI_DEVICE_ID		0x02
#define PCI_COMMAND		0x04
#define PCI_STATUS		0x06
#define PCI_REVISION		0x08
#define PCI_CLASS_PROG		0x09
#define PCI_HEADER_TYPE		0x0E
#define PCI_BAR0		0x10
#define PCI_SUBSYS_VENDOR	0x2C
#define PCI_SUBSYS_ID		0x2E
#define PCI_CAP_PTR		0x34
#define PCI_INT_LINE		0x3C
#define PCI_INT_PIN		0x3D
#define PCI_CMD_IO		0x0001
#define PCI_CMD_MEM		0x0002
#define PCI_CMD_MASTER		0x0004
#define PCI_CMD_INTX_DISABLE	0x0400
#define PCI_STATUS_INTX		0x0008
#define PCI_STATUS_CAPS		0x0010
#define PCI_CAPS_START		0x40	/* first byte after the header */

struct vpci_fn;

/* An access of size 1, 2, 4 or 8 at offset (inside the BAR, the access
 * does not cross its end) of BAR bar.  Reads store *val; writes take it. */
typedef void (*vpci_bar_fn)(void *dev, unsigned int bar, uint64_t offset, uint8_t size,
			    bool write, uint64_t *val);

/* What a device gives vpci_fn_init; the rest of its header is zero. */
struct vpci_id {
	uint16_t vendor, device, subsys_vendor, subsys_id;
	uint8_t revision;
	uint32_t class_code;	/* class << 16 | subclass << 8 | prog-if */
};

struct vpci_fn_stats {
	uint64_t bar_writes;	/* config writes that touched a BAR register */
};

/*
 * One device function.  (c): set by vpci_fn_init/vpci_fn_add_*, never
 * changed and not saved (the peer builds the same device).  cfg holds
 * the guest-visible configuration space; wmask the bits the guest may
 * write (read-only bits are those of the device as built).
 */
struct vpci_fn {
	uint8_t cfg[VPCI_CFG_SIZE];
	uint8_t wmask[VPCI_CFG_SIZE];		/* (c) */
	uint8_t rom[VPCI_CFG_SIZE];		/* (c) cfg as built: read-only bits */
	uint32_t bar_size[VPCI_BARS];		/* (c) 0 = no BAR */
	uint8_t cap_end;			/* (c) next free capability byte */
	uint8_t irq;				/* (c) line the device drives */
	bool intx;				/* the device's INTx level */
	vpci_bar_fn bar_rw;			/* (c) */
	void (*cfg_written)(void *dev);		/* (c) optional: after a guest's
						 * configuration write */
	void *dev;				/* (c) */
	struct vpci_bus *bus;			/* (c) set by vpci_attach */
	struct vpci_fn_stats stats;		/* host-side, not saved */
};

struct vpci_bus_stats {
	uint64_t cfg_reads, cfg_writes;	/* through 0xCFC-0xCFF */
	uint64_t cfg_absent;		/* accesses to no function */
	uint64_t mmio;			/* accesses dispatched to a BAR */
	uint64_t mmio_unclaimed;	/* vpci_mmio calls no BAR claimed */
};

struct vpci_bus {
	uint32_t addr;				/* CONFIG_ADDRESS */
	struct vpci_fn host;			/* 00:00.0 */
	struct vpci_fn *slot[VPCI_SLOTS];	/* (c) slot[0] = &host */
	void (*irq)(void *ctx, unsigned int line, int level);	/* (c) */
	void (*msi)(void *ctx, uint64_t addr, uint32_t data);	/* (c) NULL: none */
	void *ctx;				/* (c) */
	struct vpci_bus_stats stats;		/* host-side, not saved */
};

/* An empty bus 0 with its host bridge; irq may be NULL (no INTx). */
void vpci_bus_init(struct vpci_bus *bus, void (*irq)(void *ctx, unsigned int line, int level),
		   void *ctx);

/*
 * Build a function: identity, INTx pin A on line irq (0xFF: no INTx), and
 * the BAR handler.  Then add BARs and capabilities, then vpci_attach.
 */
void vpci_fn_init(struct vpci_fn *fn, const struct vpci_id *id, uint8_t irq,
		  vpci_bar_fn bar_rw, void *dev);
/* A 32-bit non-prefetchable memory BAR of size (a power of two, 16 bytes
 * to 1 GiB).  Returns 0 or -EINVAL. */
int vpci_fn_add_bar(struct vpci_fn *fn, unsigned int bar, uint32_t size);
/* Append a capability of len bytes (data[0] is its ID; the next pointer
 * at data[1] is filled in); bytes at wmask_off.. of it writable when
 * wlen > 0.  Returns the capability's offset in config space, or -ENOSPC. */
int vpci_fn_add_cap(struct vpci_fn *fn, const uint8_t *data, uint8_t len, uint8_t wmask_off,
		    uint8_t wlen);
/* Message-signalled interrupts: a function's MSI write (address, data)
 * goes to msi(ctx, addr, data), the core's route to the local APICs. */
void vpci_bus_set_msi(struct vpci_bus *bus, void (*msi)(void *ctx, uint64_t addr, uint32_t data));
/* Bus mastering on (PCI command bit 2): the function may use memory. */
bool vpci_fn_master(const struct vpci_fn *fn);
/* fn writes an MSI message: false (nothing sent) when the bus has no MSI
 * route or fn's bus-master bit is clear (it may not write memory). */
bool vpci_fn_msi(struct vpci_fn *fn, uint64_t addr, uint32_t data);
/* Whether the function drives its INTx line now (asserted, not disabled). */
bool vpci_fn_intx_line(const struct vpci_fn *fn);

/* Put fn at 00:slot.0 (1..31).  Returns 0, -EINVAL or -EBUSY. */
int vpci_attach(struct vpci_bus *bus, struct vpci_fn *fn, unsigned int slot);

/* Give every BAR of every function an address in the hole, aligned to its
 * size, and enable memory decoding: what firmware would do. */
void vpci_place_bars(struct vpci_bus *bus);

/* Guest port access to 0xCF8-0xCFF, size 1, 2 or 4.  Returns 0, or
 * -ENOENT if the port is not the bus's. */
int vpci_io(struct vpci_bus *bus, uint16_t port, uint8_t size, bool in, uint32_t *val);

/* A guest MMIO access (size 1, 2, 4, 8) at gpa: dispatched to the BAR
 * that decodes it.  Returns 0, -ENOENT if none does, -EINVAL for a bad
 * size or an access that crosses the end of the BAR. */
int vpci_mmio(struct vpci_bus *bus, uint64_t gpa, uint8_t size, bool write, uint64_t *val);

/* The guest-physical base of fn's BAR bar, or 0 when it is not decoded. */
uint64_t vpci_bar_base(const struct vpci_fn *fn, unsigned int bar);

/* The device's INTx level (0/1): the bus drives line irq accordingly. */
void vpci_fn_set_intx(struct vpci_fn *fn, int level);

/* Config space accessors for devices and tests (little-endian). */
uint32_t vpci_cfg_read(const struct vpci_fn *fn, unsigned int off, uint8_t size);
void vpci_cfg_write(struct vpci_fn *fn, unsigned int off, uint8_t size, uint32_t val);

/* Save or restore the bus's own state (CONFIG_ADDRESS, host bridge). */
int vpci_bus_snapshot(struct vpci_bus *bus, struct snap *s);
/* Save or restore a function's config space (its device calls it); a
 * restore may change only the guest-writable bits.  Refused restores
 * leave fn unchanged. */
int vpci_fn_snapshot(struct vpci_fn *fn, struct snap *s);

#endif
