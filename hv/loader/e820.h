/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A guest's memory map as a PC BIOS reports it (INT 15h E820; ACPI 6.5
 * 15.1 "Address Range Types"), built from the guest's RAM size and the
 * layout of hv/mm/gpmap.h (RAM below 3 GiB, a hole, the rest from 4 GiB):
 *   [0, 0x9fc00)              RAM (Linux needs usable RAM below 640 KiB
 *                             for its real-mode trampoline)
 *   [0x9fc00, 0x100000)       reserved: EBDA, VGA hole, BIOS area with
 *                             the MP table (hv/loader/mptable.h)
 *   [1 MiB, top)              RAM, top = min(RAM, 3 GiB)
 *   [E820_APIC_START, 4 GiB)  reserved, when RAM goes on above the hole:
 *                             the I/O APIC and local APIC pages; the rest
 *                             of the hole is left out, for PCI BARs
 *   [4 GiB, 4 GiB + RAM - 3 GiB)  RAM, when there is more than 3 GiB
 */
#ifndef FERRY_HV_LOADER_E820_H
#define FERRY_HV_LOADER_E820_H

#include <stdint.h>

#define E820_RAM		1
#define E820_RESERVED		2

#define E820_LOW_RAM_END	0x9fc00ull
#define E820_HIGH_RAM		0x100000ull
#define E820_APIC_START		0xfec00000ull	/* I/O APIC, then the local APIC */
#define E820_HOLE_END		0x100000000ull
#define E820_MAX_ENTRIES	5

struct e820_entry {
	uint64_t addr;
	uint64_t size;
	uint32_t type;
};

/* Fill map (room for E820_MAX_ENTRIES) for mem bytes of guest RAM; returns the number of entries, or -EINVAL for less than 2 MiB. */
int e820_build(uint64_t mem, struct e820_entry *map);

/* The end of RAM below the hole: the loader's room is [1 MiB, this). */
uint64_t e820_ram_top(uint64_t mem);

#endif
