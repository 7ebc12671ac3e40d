/* SPDX-License-Identifier: BSD-2-Clause */
/* The guest's E820 memory map (see e820.h for the layout). */
#include <errno.h>
#include "hv/loader/e820.h"
#include "hv/lib/guest_layout.h"

uint64_t e820_ram_top(uint64_t mem)
{
	uint64_t below, above;

	guest_ram_split(mem, &below, &above);
	return below;
}

int e820_build(uint64_t mem, struct e820_entry *map)
{
	int n = 0;

	if (mem < 2 * E820_HIGH_RAM)
		return -EINVAL;
	map[n++] = (struct e820_entry){ 0, E820_LOW_RAM_END, E820_RAM };
	map[n++] = (struct e820_entry){ E820_LOW_RAM_END, E820_HIGH_RAM - E820_LOW_RAM_END,
					E820_RESERVED };
	map[n++] = (struct e820_entry){ E820_HIGH_RAM, e820_ram_top(mem) - E820_HIGH_RAM,
					E820_RAM };
	if (mem <= GUEST_HOLE_START)
		return n;
	map[n++] = (struct e820_entry){ E820_APIC_START, E820_HOLE_END - E820_APIC_START,
					E820_RESERVED };
	map[n++] = (struct e820_entry){ E820_HOLE_END, mem - GUEST_HOLE_START, E820_RAM };
	return n;
}
