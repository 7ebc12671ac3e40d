/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Multiboot1 guest loader: validates a 32-bit multiboot1 kernel image (the
 * test guests), turns it into a load plan, executes the plan into a VM's
 * guest-physical memory through callbacks, writes the multiboot1
 * information structure and says which registers the guest starts with.
 * (Multiboot Specification 0.6.96: 3.1 header, 3.2 machine state,
 * 3.3 boot information; ELF32 as in the System V ABI, i386 supplement.)
 *
 * Use: mb1_prepare() [-> mb1_add_modules()] -> mb1_load() ->
 * mb1_write_info() -> set the vCPU state from struct mb1_entry_state.  Every step returns 0 or a negative
 * errno with a one-line reason in plan->errmsg:
 *   -ENOEXEC  not a multiboot1 image, or not an ELF32/i386/ET_EXEC file
 *   -EINVAL   inconsistent image (checksum, header fields, file ranges,
 *             filesz > memsz, overlapping segments, entry point)
 *   -ENOTSUP  the header requires a feature ferry does not provide
 *   -ERANGE   a segment outside [MB1_LOAD_MIN, min(guest RAM, 3 GiB)),
 *             or guest RAM not larger than MB1_LOAD_MIN
 *   -E2BIG    more than MB1_MAX_SEGS loadable segments, command line of
 *             MB1_CMDLINE_MAX bytes or more, more than MB1_MAX_MODS
 *             modules or their strings over MB1_MOD_STRINGS_MAX bytes
 *   callback errors are passed on (a positive return becomes -EIO).
 *
 * Decisions:
 * - Modules (spec 3.3 mods_*), as GRUB's `module FILE ARGS` gives them:
 *   each page-aligned (so header flag 0 is always honoured), one after
 *   the other from the first page above the image's highest byte, each
 *   with its string (ARGS: ferry passes a host module's own command line,
 *   its name first); all of them within the RAM below 3 GiB.
 * - Header flags 0 (page-align modules) and 1 (memory info: always
 *   given) are accepted; any other
 *   required bit (2..15; 2 is video mode) is refused.  Bits 17..31 are
 *   ignored as the spec allows.
 * - Flag 16 (a.out kludge) is honoured, as GRUB does, even for ELF files:
 *   the header's address fields are then used instead of the ELF headers,
 *   all of them validated (load_end_addr 0 = to end of file,
 *   bss_end_addr 0 = no bss).
 * - Segments must lie at or above MB1_LOAD_MIN (1 MiB), so they can never
 *   cover the low-memory structures below, and below 4 GiB (paging is off
 *   at entry).  Empty PT_LOAD entries (p_filesz = p_memsz = 0) are
 *   skipped.  Segments are placed at p_paddr.  "segment N" in messages is
 *   the program header index.
 * - The entry point must lie in the file-backed part of an executable
 *   (PF_X) segment; it is given as a virtual address and translated with
 *   that segment's p_paddr - p_vaddr (for higher-half kernels).
 * - Only the segments are written: other guest memory keeps whatever the
 *   caller put there (normally zeroes).
 */
#ifndef FERRY_HV_LOADER_MB1ELF_H
#define FERRY_HV_LOADER_MB1ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "hv/loader/loader.h"

/* Guest-physical layout of what mb1_write_info() writes (all below 1 MiB). */
#define MB1_INFO_GPA		0x9000u		/* struct mb1_info */
#define MB1_LOADER_NAME_GPA	0x9800u		/* "ferry" */
#define MB1_CMDLINE_GPA		0xA000u		/* NUL-terminated command line */
#define MB1_CMDLINE_MAX		4096u		/* bytes including the NUL */
#define MB1_MMAP_GPA		0xB000u		/* MB1_MMAP_ENTRIES entries */
#define MB1_MMAP_ENTRIES	4		/* at most; 3 without RAM above 4 GiB */
#define MB1_MODS_GPA		0xC000u		/* struct mb1_module[MB1_MAX_MODS] */
#define MB1_MOD_STRINGS_GPA	0xC100u		/* their strings, back to back */
#define MB1_MOD_STRINGS_MAX	0x0F00u		/* bytes, NULs included */
#define MB1_MAX_MODS		16
#define MB1_MAX_MODS_TEXT	"16"
#define MB1_LOW_RAM_END		0xA0000u	/* usable [0, 640 KiB) */
#define MB1_LOAD_MIN		0x100000u	/* segments start at >= 1 MiB */

#define MB1_HEADER_SEARCH	8192u		/* header within these bytes */
#define MB1_MAX_SEGS		16
#define MB1_MAX_PHNUM		64
#define MB1_ERRMSG_LEN		96

#define MB1_HEADER_MAGIC	0x1BADB002u
#define MB1_BOOT_MAGIC		0x2BADB002u	/* EAX at entry */

/* Header flags (spec 3.1.2). */
#define MB1_HF_PAGE_ALIGN	(1u << 0)
#define MB1_HF_MEMINFO		(1u << 1)
#define MB1_HF_VIDEO		(1u << 2)
#define MB1_HF_AOUT_KLUDGE	(1u << 16)

/* Information structure flags (spec 3.3). */
#define MB1_INFO_MEMORY		(1u << 0)
#define MB1_INFO_CMDLINE	(1u << 2)
#define MB1_INFO_MODS		(1u << 3)
#define MB1_INFO_MMAP		(1u << 6)
#define MB1_INFO_LOADER_NAME	(1u << 9)

/* Memory map types (spec 3.3). */
#define MB1_MEM_AVAILABLE	1
#define MB1_MEM_RESERVED	2

/* The multiboot1 information structure as the guest sees it (spec 3.3). */
struct mb1_info {
	uint32_t flags;
	uint32_t mem_lower;		/* KiB from 0 */
	uint32_t mem_upper;		/* KiB from 1 MiB */
	uint32_t boot_device;
	uint32_t cmdline;		/* guest-physical address */
	uint32_t mods_count;
	uint32_t mods_addr;
	uint32_t syms[4];
	uint32_t mmap_length;		/* bytes */
	uint32_t mmap_addr;
	uint32_t drives_length;
	uint32_t drives_addr;
	uint32_t config_table;
	uint32_t boot_loader_name;
	uint32_t apm_table;
	uint32_t vbe_control_info;
	uint32_t vbe_mode_info;
	uint16_t vbe_mode;
	uint16_t vbe_interface_seg;
	uint16_t vbe_interface_off;
	uint16_t vbe_interface_len;
	uint64_t framebuffer_addr;
	uint32_t framebuffer_pitch;
	uint32_t framebuffer_width;
	uint32_t framebuffer_height;
	uint8_t framebuffer_bpp;
	uint8_t framebuffer_type;
	uint8_t color_info[6];
} __attribute__((packed));

/* One memory map entry; `size` excludes itself (20). */
struct mb1_mmap_entry {
	uint32_t size;
	uint64_t addr;
	uint64_t len;
	uint32_t type;
} __attribute__((packed));

/* One module entry (spec 3.3): [mod_start, mod_end) and its string. */
struct mb1_module {
	uint32_t mod_start;
	uint32_t mod_end;
	uint32_t string;		/* guest-physical address of a C string */
	uint32_t reserved;
} __attribute__((packed));

/* A module to give the guest: its bytes (borrowed until mb1_load
 * returns) and its string. */
struct mb1_mod_src {
	const void *data;
	size_t len;
	const char *string;
};

/* One piece of the image to place in guest memory. */
struct mb1_segment {
	uint32_t index;		/* program header index (0 for a.out kludge) */
	uint64_t gpa;		/* where it goes */
	uint64_t vaddr;		/* where the kernel believes it is */
	uint64_t offset;	/* file offset of the first byte */
	uint64_t filesz;	/* bytes copied from the file */
	uint64_t memsz;		/* filesz + bytes zeroed after them */
	bool exec;
};

/*
 * A validated load plan.  Owned by the caller (one per load, not shared);
 * `image` is borrowed and must stay valid until mb1_load() returns.
 */
struct mb1_plan {
	const uint8_t *image;
	size_t image_len;
	uint64_t guest_mem;		/* bytes of guest RAM from GPA 0 */
	uint32_t header_off;		/* file offset of the multiboot header */
	uint32_t header_flags;
	bool aout_kludge;		/* loaded from the header's address fields */
	uint32_t nr_segs;		/* sorted as in the file */
	struct mb1_segment segs[MB1_MAX_SEGS];
	uint32_t entry;			/* guest-physical EIP */
	uint32_t nr_mods;		/* mb1_add_modules */
	const struct mb1_mod_src *mods;	/* borrowed until mb1_write_info */
	uint32_t mod_gpa[MB1_MAX_MODS];
	char errmsg[MB1_ERRMSG_LEN];
};

/* A segment register's visible and hidden parts (SDM Vol. 3A 3.4.2, 3.4.5). */
struct mb1_seg_reg {
	uint16_t selector;
	uint32_t base;
	uint32_t limit;		/* in bytes: 0xffffffff */
	uint8_t type;		/* SDM 3.4.5.1: 0xb code e/r accessed, 0x3 data r/w accessed */
	uint8_t dpl;
	bool s;			/* code or data (not system) */
	bool present;
	bool db;		/* 32-bit */
	bool g;			/* 4 KiB granularity */
};

/*
 * Register state at guest entry (spec 3.2): protected mode, paging off,
 * flat 32-bit segments, interrupts off.  Registers not listed (ESP, the
 * other general registers, GDTR/IDTR, TR, LDTR) are undefined for the
 * guest; the caller sets them to something its back end can enter with.
 */
struct mb1_entry_state {
	uint32_t eax;		/* MB1_BOOT_MAGIC */
	uint32_t ebx;		/* MB1_INFO_GPA */
	uint32_t eip;
	uint32_t eflags;	/* 0x2: IF and VM clear */
	uint32_t cr0;		/* PE | ET, PG clear */
	struct mb1_seg_reg cs, ds, es, fs, gs, ss;
};

/* Whether image has a valid multiboot1 header with the a.out kludge flag
 * (then it loads whatever its file format: a flat binary, an ELF64). */
bool mb1_aout_kludge(const void *image, size_t len);

/* Validate `image` for a guest with guest_mem bytes of RAM; fill `plan`. */
int mb1_prepare(const void *image, size_t len, uint64_t guest_mem,
		struct mb1_plan *plan);

/* Place n modules (n <= MB1_MAX_MODS) above the image; mods is borrowed
 * until mb1_write_info returns.  On error the plan has no modules. */
int mb1_add_modules(struct mb1_plan *plan, const struct mb1_mod_src *mods, unsigned int n);

/* Copy every segment and zero its tail, then the modules.
 * Pre: mb1_prepare() succeeded. */
int mb1_load(struct mb1_plan *plan, const struct loader_mem_ops *ops);

/*
 * Write the mmap, command line (NULL: none), boot loader name, module list
 * and info structure at the MB1_*_GPA addresses and fill *st.
 * Pre: mb1_prepare() succeeded.
 */
int mb1_write_info(struct mb1_plan *plan, const char *cmdline,
		   const struct loader_mem_ops *ops, struct mb1_entry_state *st);

#endif
