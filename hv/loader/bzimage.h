/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Linux bzImage loader: the x86 boot protocol's 64-bit entry
 * (Documentation/arch/x86/boot.rst, "64-bit Boot Protocol"), the way the
 * minimal VMMs boot Linux without firmware.  It validates the setup header
 * of an image (protocol 2.12 or later with a 64-bit entry point), places
 * the protected-mode kernel, the initrd and the command line in guest RAM,
 * writes the zero page (struct boot_params) with the e820 map, a GDT and
 * identity page tables, and gives the vCPU state to start with.
 *
 * Use: bz_prepare() -> bz_load().  Both return 0 or a negative errno with
 * a one-line reason in plan->errmsg:
 *   -ENOEXEC  not a bzImage (no 0xAA55 boot flag or "HdrS" magic)
 *   -ENOTSUP  protocol older than 2.12, or no 64-bit entry (XLF_KERNEL_64)
 *   -EINVAL   inconsistent header (setup size, alignment, lengths)
 *   -E2BIG    kernel, initrd or command line that does not fit
 *   callback errors are passed on.
 *
 * Guest-physical layout (all below 1 MiB except kernel and initrd):
 *   0x0500   GDT: null, null, __BOOT_CS 0x10, __BOOT_DS 0x18, TSS 0x20
 *   0x7000   zero page (4 KiB)
 *   0x8ff0   initial stack pointer
 *   0x9000   page tables: PML4, PDPT, 4 page directories (0xb000-0xefff)
 *            mapping the first 4 GiB with 2 MiB pages
 *   0x20000  command line
 *   kernel   pref_address if it fits, else the lowest kernel_alignment
 *            boundary at or above 1 MiB (relocatable kernels only)
 *   initrd   as high as RAM and initrd_addr_max allow, 4 KiB aligned,
 *            above the kernel's init_size
 * 0x9fc00-0xfffff is left to the e820 map's reserved range (the MP table
 * lives there: hv/loader/mptable.h).
 */
#ifndef FERRY_HV_LOADER_BZIMAGE_H
#define FERRY_HV_LOADER_BZIMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "hv/cpu_state.h"
#include "hv/loader/e820.h"
#include "hv/loader/loader.h"

#define BZ_GDT_GPA		0x500u
#define BZ_ZERO_PAGE_GPA	0x7000u
#define BZ_STACK_TOP		0x8ff0u
#define BZ_PML4_GPA		0x9000u
#define BZ_PDPT_GPA		0xa000u
#define BZ_PD_GPA		0xb000u		/* 4 pages */
#define BZ_CMDLINE_GPA		0x20000u
#define BZ_CMDLINE_MAX		0x10000u	/* room at BZ_CMDLINE_GPA */
#define BZ_LOW_END		0x100000u	/* kernel and initrd at or above */
#define BZ_ERRMSG_LEN		96

/* boot_params offsets (arch/x86/include/uapi/asm/bootparam.h). */
#define BZ_HDR_OFF		0x1f1u		/* struct setup_header */
#define BZ_HDR_END_MAX		0x290u		/* the header's room in boot_params */
#define BZ_E820_ENTRIES_OFF	0x1e8u
#define BZ_E820_TABLE_OFF	0x2d0u
#define BZ_E820_MAX		128u

#define BZ_MIN_VERSION		0x020c		/* 2.12: xloadflags, 64-bit entry */
#define BZ_XLF_KERNEL_64	(1u << 0)
#define BZ_XLF_CAN_BE_LOADED_ABOVE_4G (1u << 1)

/* A validated load plan; `image` is borrowed until bz_load() returns. */
struct bz_plan {
	const uint8_t *image;
	size_t image_len;
	uint64_t guest_mem;		/* bytes of RAM from GPA 0 */
	uint16_t version;		/* boot protocol, e.g. 0x020f */
	uint16_t xloadflags;
	size_t hdr_end;			/* setup header: [0x1f1, hdr_end) */
	size_t kernel_off;		/* protected-mode kernel in the image */
	size_t kernel_len;
	uint32_t init_size;		/* memory the kernel needs from its start */
	uint32_t cmdline_size;		/* longest command line it takes */
	uint64_t kernel_gpa;
	uint64_t initrd_gpa;		/* 0: no initrd */
	size_t initrd_len;
	char errmsg[BZ_ERRMSG_LEN];
};

/* True if image carries a Linux boot-protocol header (any version). */
bool bz_is_bzimage(const void *image, size_t len);

/*
 * Validate `image` for a guest with guest_mem bytes of RAM, an initrd of
 * initrd_len bytes (0: none) and a command line of cmdline_len bytes
 * (without the NUL); decide where everything goes.
 */
int bz_prepare(const void *image, size_t len, uint64_t guest_mem, size_t initrd_len,
	       size_t cmdline_len, struct bz_plan *plan);

/*
 * Write kernel, initrd, command line, zero page (with the e820 map), GDT
 * and page tables into guest memory and fill *st with the 64-bit entry
 * state.  Pre: bz_prepare() succeeded with the same lengths.
 */
int bz_load(struct bz_plan *plan, const struct loader_mem_ops *ops, const void *initrd,
	    const char *cmdline, const struct e820_entry *map, unsigned int nr_map,
	    struct cpu_state *st);

#endif
