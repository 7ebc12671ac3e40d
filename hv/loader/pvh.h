/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * PVH loader: an uncompressed kernel (Linux's vmlinux) entered at the
 * 32-bit entry point its XEN_ELFNOTE_PHYS32_ENTRY note gives, with a
 * struct hvm_start_info in EBX (Xen's docs/misc/pvh.pandoc and
 * xen/include/public/arch-x86/hvm/start_info.h, version 1), the way QEMU,
 * Firecracker and Cloud Hypervisor boot a vmlinux.  Linux's decompressor
 * never runs: on an emulated CPU (Bochs) that is most of a boot.
 * tools/vmlinux-from-bzimage.py makes such a file from a stock bzImage.
 *
 * Use: pvh_prepare() -> pvh_load().  Both return 0 or a negative errno with
 * a one-line reason in plan->errmsg:
 *   -ENOEXEC  not a little-endian ELF64 x86-64 executable
 *   -ENOTSUP  no PVH entry note (a kernel built without CONFIG_PVH)
 *   -EINVAL   inconsistent file: program headers or segments outside it,
 *             filesz > memsz, overlapping segments, an entry point outside
 *             the loaded code
 *   -ERANGE   a segment below 1 MiB or past the guest's RAM below 3 GiB
 *   -E2BIG    more than PVH_MAX_SEGS segments, an initrd that does not fit,
 *             a command line of PVH_CMDLINE_MAX bytes or more
 *   callback errors are passed on.
 *
 * Guest-physical layout (all below 1 MiB except kernel and initrd):
 *   0x0500   GDT: null, null, code 0x10, data 0x18, 32-bit TSS 0x20
 *   0x6000   struct hvm_start_info (56 bytes)
 *   0x6040   the module list: one entry, the initrd
 *   0x6080   the memory map (the e820 map of hv/loader/e820.h)
 *   0x20000  command line
 *   kernel   each PT_LOAD segment at its p_paddr (Linux's PVH entry does
 *            not relocate itself)
 *   initrd   as high as the RAM below 3 GiB allows, 4 KiB aligned, above
 *            the kernel's last byte
 */
#ifndef FERRY_HV_LOADER_PVH_H
#define FERRY_HV_LOADER_PVH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "hv/cpu_state.h"
#include "hv/loader/e820.h"
#include "hv/loader/loader.h"

#define PVH_GDT_GPA		0x500u
#define PVH_START_INFO_GPA	0x6000u
#define PVH_MODLIST_GPA		0x6040u
#define PVH_MEMMAP_GPA		0x6080u
#define PVH_CMDLINE_GPA		0x20000u
#define PVH_CMDLINE_MAX		2048u		/* x86 Linux's COMMAND_LINE_SIZE, NUL included */
#define PVH_LOAD_MIN		0x100000u
#define PVH_MAX_SEGS		16
#define PVH_MAX_PHNUM		64
#define PVH_ERRMSG_LEN		96

#define PVH_START_MAGIC		0x336ec578u	/* "xEn3" with 0x80 in the E */
#define PVH_START_VERSION	1		/* with the memory map */
#define PVH_START_INFO_LEN	56
#define PVH_MODLIST_ENTRY_LEN	32
#define PVH_MEMMAP_ENTRY_LEN	24
#define PVH_ELFNOTE_PHYS32_ENTRY 18		/* XEN_ELFNOTE_PHYS32_ENTRY */

struct pvh_segment {
	uint64_t gpa, offset, filesz, memsz;
	bool exec;
};

/* A validated load plan; `image` is borrowed until pvh_load() returns. */
struct pvh_plan {
	const uint8_t *image;
	size_t image_len;
	uint64_t guest_mem;
	unsigned int nr_segs;
	struct pvh_segment segs[PVH_MAX_SEGS];
	uint32_t entry;			/* guest-physical, 32-bit */
	uint64_t kernel_end;		/* one past the highest segment byte */
	uint64_t initrd_gpa;		/* 0: no initrd */
	size_t initrd_len;
	char errmsg[PVH_ERRMSG_LEN];
};

/* True if image is an ELF64 x86-64 file with a PVH entry note. */
bool pvh_has_entry(const void *image, size_t len);

/* Validate `image` for a guest with guest_mem bytes of RAM, an initrd of
 * initrd_len bytes (0: none) and a command line of cmdline_len bytes
 * (without the NUL); decide where everything goes. */
int pvh_prepare(const void *image, size_t len, uint64_t guest_mem, size_t initrd_len,
		size_t cmdline_len, struct pvh_plan *plan);

/* Write the segments (zeroing each one's tail), the initrd, the command
 * line, the start info with its module list and memory map, and the GDT;
 * fill *st with the PVH entry state.  Pre: pvh_prepare() succeeded with
 * the same lengths. */
int pvh_load(struct pvh_plan *plan, const struct loader_mem_ops *ops, const void *initrd,
	     const char *cmdline, const struct e820_entry *map, unsigned int nr_map,
	     struct cpu_state *st);

#endif
