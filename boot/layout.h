/* SPDX-License-Identifier: BSD-2-Clause */
/* Virtual memory layout of ferry, shared by C, assembly and the linker script. */
#ifndef FERRY_BOOT_LAYOUT_H
#define FERRY_BOOT_LAYOUT_H

#define KERNEL_PHYS	0x200000		/* where GRUB loads the image */
#define KERNEL_BASE	0xffffffff80000000	/* image virtual = phys + this */
#define DIRECT_MAP_BASE	0xffff800000000000	/* all RAM, phys + this */
#define EARLY_MAP_LIMIT	0x100000000		/* early tables map 4 GiB */

#define BOOT_STACK_SIZE	0x4000			/* per-CPU stack */

#endif
