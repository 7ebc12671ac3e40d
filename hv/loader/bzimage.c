/* SPDX-License-Identifier: BSD-2-Clause */
/* Linux bzImage loader, 64-bit boot protocol (see bzimage.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hv/lib/bytes.h"
#include "hv/loader/bzimage.h"

/* Setup header fields, as offsets into the image and the zero page. */
#define H_SETUP_SECTS		0x1f1
#define H_SYSSIZE		0x1f4		/* protected-mode code, 16-byte units */
#define H_BOOT_FLAG		0x1fe		/* 0xaa55 */
#define H_JUMP			0x200		/* 2-byte jump; its offset ends the header */
#define H_MAGIC			0x202		/* "HdrS" */
#define H_VERSION		0x206
#define H_TYPE_OF_LOADER	0x210
#define H_LOADFLAGS		0x211
#define H_RAMDISK_IMAGE		0x218
#define H_RAMDISK_SIZE		0x21c
#define H_CMD_LINE_PTR		0x228
#define H_INITRD_ADDR_MAX	0x22c
#define H_KERNEL_ALIGNMENT	0x230
#define H_RELOCATABLE		0x234
#define H_XLOADFLAGS		0x236
#define H_CMDLINE_SIZE		0x238
#define H_PREF_ADDRESS		0x258
#define H_INIT_SIZE		0x260
#define H_MIN_LEN		(H_INIT_SIZE + 4)	/* every field we read */
#define BP_EXT_RAMDISK_IMAGE	0x0c0
#define BP_EXT_RAMDISK_SIZE	0x0c4
#define BP_EXT_CMD_LINE_PTR	0x0c8

#define LOADED_HIGH		(1u << 0)	/* protected-mode code at 1 MiB+ */
#define LOADER_UNDEFINED	0xff		/* type_of_loader: no assigned id */
#define PAGE_4K			0x1000ull
#define PAGE_2M			0x200000ull
#define ZERO_PAGE_LEN		0x1000u

static int fail(struct bz_plan *p, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct bz_plan *p, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->errmsg, sizeof(p->errmsg), fmt, ap);
	va_end(ap);
	return err;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

bool bz_is_bzimage(const void *image, size_t len)
{
	const uint8_t *b = image;

	return len >= H_MAGIC + 4 && get_le16(b + H_BOOT_FLAG) == 0xaa55 &&
	       !memcmp(b + H_MAGIC, "HdrS", 4);
}

/* The header's own consistency: version, entry, sizes inside the image. */
static int check_header(struct bz_plan *p)
{
	const uint8_t *b = p->image;
	unsigned int sects;

	if (!bz_is_bzimage(b, p->image_len))	/* also: long enough for setup_sects */
		return fail(p, -ENOEXEC, "not a Linux kernel (no boot protocol header)");
	sects = b[H_SETUP_SECTS] ? b[H_SETUP_SECTS] : 4;
	if (p->image_len < H_MIN_LEN)
		return fail(p, -EINVAL, "truncated: %zu bytes, the header alone needs %u",
			    p->image_len, H_MIN_LEN);
	p->version = get_le16(b + H_VERSION);
	if (p->version < BZ_MIN_VERSION)
		return fail(p, -ENOTSUP, "boot protocol %u.%02u is older than 2.12",
			    p->version >> 8, p->version & 0xff);
	p->xloadflags = get_le16(b + H_XLOADFLAGS);
	if (!(p->xloadflags & BZ_XLF_KERNEL_64) || !(b[H_LOADFLAGS] & LOADED_HIGH))
		return fail(p, -ENOTSUP, "no 64-bit entry point (not an x86-64 bzImage)");
	p->hdr_end = H_MAGIC + b[H_JUMP + 1];
	if (b[H_JUMP] != 0xeb || p->hdr_end < H_MIN_LEN || p->hdr_end > BZ_HDR_END_MAX)
		return fail(p, -EINVAL, "setup header of %zu bytes", p->hdr_end - BZ_HDR_OFF);
	p->kernel_off = (size_t)(sects + 1) * 512;
	if (p->kernel_off >= p->image_len)
		return fail(p, -EINVAL, "truncated: %u setup sectors and no kernel after them",
			    sects);
	p->kernel_len = p->image_len - p->kernel_off;
	if ((uint64_t)get_le32(b + H_SYSSIZE) * 16 > p->kernel_len)
		return fail(p, -EINVAL, "truncated: the kernel is %lu bytes, the module holds %zu",
			    (unsigned long)get_le32(b + H_SYSSIZE) * 16, p->kernel_len);
	p->init_size = get_le32(b + H_INIT_SIZE);
	p->cmdline_size = get_le32(b + H_CMDLINE_SIZE);
	if (p->init_size < p->kernel_len)
		return fail(p, -EINVAL, "init_size %u is smaller than the %zu-byte kernel",
			    p->init_size, p->kernel_len);
	return 0;
}

/*
 * Where the kernel goes: its preferred address (aligned up, if it is
 * relocatable and that is not aligned).  Never lower: a 64-bit kernel
 * loaded below pref_address (LOAD_PHYSICAL_ADDR) still decompresses itself
 * at pref_address (startup_64 takes the larger of the two), so the RAM it
 * needs, and the room the initrd must leave, start there either way.
 */
static int place_kernel(struct bz_plan *p, uint64_t top)
{
	const uint8_t *b = p->image;
	uint32_t align = get_le32(b + H_KERNEL_ALIGNMENT);
	uint64_t pref = get_le64(b + H_PREF_ADDRESS), at = pref < BZ_LOW_END ? BZ_LOW_END : pref;

	if (align < PAGE_4K || (align & (align - 1)))
		return fail(p, -EINVAL, "kernel_alignment %#x is not a power of two >= 4 KiB",
			    align);
	if (at >> 48)
		return fail(p, -EINVAL, "pref_address %#lx is no guest address",
			    (unsigned long)pref);
	if (at & (align - 1)) {
		if (!b[H_RELOCATABLE])
			return fail(p, -EINVAL, "pref_address %#lx is not aligned to %#x and the "
				    "kernel is not relocatable", (unsigned long)pref, align);
		at = align_up(at, align);
	}
	if (at > top || top - at < p->init_size)
		return fail(p, -E2BIG, "the kernel runs at %lu MiB and needs %u MiB there: "
			    "more RAM than the guest has", (unsigned long)(at >> 20),
			    (p->init_size + (1u << 20) - 1) >> 20);
	p->kernel_gpa = at;
	return 0;
}

/* The initrd goes as high as it may, above what the kernel will use. */
static int place_initrd(struct bz_plan *p, uint64_t top, size_t len)
{
	uint64_t limit = top, low = p->kernel_gpa + align_up(p->init_size, PAGE_4K);
	uint64_t addr_max = (uint64_t)get_le32(p->image + H_INITRD_ADDR_MAX) + 1;

	p->initrd_gpa = 0;
	p->initrd_len = len;
	if (!len)
		return 0;
	if (!(p->xloadflags & BZ_XLF_CAN_BE_LOADED_ABOVE_4G) && limit > addr_max)
		limit = addr_max;
	if (limit < low || limit - low < len)
		return fail(p, -E2BIG, "the initrd (%zu KiB) does not fit in the guest's RAM "
			    "beside the kernel", len >> 10);
	p->initrd_gpa = (limit - len) & ~(PAGE_4K - 1);
	return 0;
}

int bz_prepare(const void *image, size_t len, uint64_t guest_mem, size_t initrd_len,
	       size_t cmdline_len, struct bz_plan *plan)
{
	uint64_t top = e820_ram_top(guest_mem);
	int rc;

	memset(plan, 0, sizeof(*plan));
	plan->image = image;
	plan->image_len = len;
	plan->guest_mem = guest_mem;
	if ((rc = check_header(plan)))
		return rc;
	if (cmdline_len >= plan->cmdline_size || cmdline_len >= BZ_CMDLINE_MAX)
		return fail(plan, -E2BIG, "command line of %zu bytes: the kernel takes %u at most",
			    cmdline_len, plan->cmdline_size ? plan->cmdline_size - 1 : 0);
	if (guest_mem < 2 * BZ_LOW_END)
		return fail(plan, -E2BIG, "%lu KiB of RAM is too little for Linux",
			    (unsigned long)(guest_mem >> 10));
	if ((rc = place_kernel(plan, top)))
		return rc;
	return place_initrd(plan, top, initrd_len);
}

/* ---- what bz_load writes ---- */

/* The zero page: the image's setup header, our answers, the e820 map. */
static void zero_page(const struct bz_plan *p, uint8_t *zp, const struct e820_entry *map,
		      unsigned int n)
{
	memset(zp, 0, ZERO_PAGE_LEN);
	memcpy(zp + BZ_HDR_OFF, p->image + BZ_HDR_OFF, p->hdr_end - BZ_HDR_OFF);
	zp[H_TYPE_OF_LOADER] = LOADER_UNDEFINED;
	put_le32(zp + H_CMD_LINE_PTR, BZ_CMDLINE_GPA);
	put_le32(zp + H_RAMDISK_IMAGE, (uint32_t)p->initrd_gpa);
	put_le32(zp + H_RAMDISK_SIZE, (uint32_t)p->initrd_len);
	put_le32(zp + BP_EXT_RAMDISK_IMAGE, (uint32_t)(p->initrd_gpa >> 32));
	put_le32(zp + BP_EXT_RAMDISK_SIZE, (uint32_t)((uint64_t)p->initrd_len >> 32));
	put_le32(zp + BP_EXT_CMD_LINE_PTR, 0);
	n = n < BZ_E820_MAX ? n : BZ_E820_MAX;
	zp[BZ_E820_ENTRIES_OFF] = (uint8_t)n;
	for (unsigned int i = 0; i < n; i++) {
		uint8_t *e = zp + BZ_E820_TABLE_OFF + 20 * i;

		put_le64(e, map[i].addr);
		put_le64(e + 8, map[i].size);
		put_le32(e + 16, map[i].type);
	}
}

/* GDT (SDM Vol. 3A 3.4.5): flat 64-bit code, flat data, a 64-bit TSS. */
static void gdt(uint8_t *g)
{
	static const uint64_t desc[6] = {
		0, 0,
		0x00af9b000000ffffull,	/* 0x10: code, L, P, DPL 0 */
		0x00cf93000000ffffull,	/* 0x18: data, D/B, G, P */
		0x00008b0000000067ull,	/* 0x20: busy 64-bit TSS at 0, limit 0x67 */
		0,			/* its upper half */
	};

	for (unsigned int i = 0; i < 6; i++)
		put_le64(g + 8 * i, desc[i]);
}

/* PML4 -> PDPT -> 4 directories of 2 MiB pages: 0-4 GiB identity. */
static void page_tables(uint8_t *pt)
{
	const uint64_t rw = 0x3, large = 0x80;

	memset(pt, 0, 6 * PAGE_4K);
	put_le64(pt, BZ_PDPT_GPA | rw);
	for (unsigned int i = 0; i < 4; i++) {
		put_le64(pt + PAGE_4K + 8 * i, (BZ_PD_GPA + i * PAGE_4K) | rw);
		for (unsigned int j = 0; j < 512; j++)
			put_le64(pt + (2 + i) * PAGE_4K + 8 * j,
				 ((uint64_t)(i * 512 + j) * PAGE_2M) | rw | large);
	}
}

static struct seg flat(uint16_t sel, uint16_t attr)
{
	return (struct seg){ .sel = sel, .attr = attr, .limit = 0xffffffff, .base = 0 };
}

/* The 64-bit entry state (boot.rst, "64-bit Boot Protocol"). */
static void entry_state(const struct bz_plan *p, struct cpu_state *s)
{
	memset(s, 0, sizeof(*s));
	s->rip = p->kernel_gpa + 0x200;
	s->gpr[GPR_RSI] = BZ_ZERO_PAGE_GPA;
	s->gpr[GPR_RSP] = BZ_STACK_TOP;
	s->rflags = 0x2;
	s->cr0 = 0x80000031;			/* PG, NE, ET, PE */
	s->cr3 = BZ_PML4_GPA;
	s->cr4 = 0x20;				/* PAE */
	s->efer = 0x500;			/* LME, LMA */
	s->xcr0 = 1;
	s->cs = flat(0x10, 0x9b | SEG_ATTR_L | SEG_ATTR_G);
	s->ds = s->es = s->fs = s->gs = s->ss = flat(0x18, 0x93 | SEG_ATTR_DB | SEG_ATTR_G);
	s->tr = (struct seg){ .sel = 0x20, .attr = 0x8b, .limit = 0x67 };
	s->ldtr = (struct seg){ .attr = 0x82, .limit = 0xffff };	/* present, empty */
	s->gdtr = (struct dtable){ .base = BZ_GDT_GPA, .limit = 6 * 8 - 1 };
	s->idtr = (struct dtable){ .base = 0, .limit = 0 };
	s->pat = 0x0007040600070406ull;		/* the power-on PAT */
	s->mtrr_def_type = 0xc06;		/* MTRRs on, default write-back */
	s->misc_enable = 1;			/* fast strings */
}

/* The kernel, initrd, command line and boot pages into the guest, in buf. */
static int write_boot(struct bz_plan *p, const struct loader_mem_ops *ops, const void *initrd,
		      const char *cmdline, size_t cl, const struct e820_entry *map,
		      unsigned int nr_map, struct cpu_state *st, uint8_t *buf)
{
	int rc;

	if ((rc = ops->copy(ops->ctx, p->kernel_gpa, p->image + p->kernel_off, p->kernel_len)) ||
	    (p->initrd_len && (rc = ops->copy(ops->ctx, p->initrd_gpa, initrd, p->initrd_len))) ||
	    (rc = ops->zero(ops->ctx, BZ_CMDLINE_GPA, cl + 1)) ||
	    (cl && (rc = ops->copy(ops->ctx, BZ_CMDLINE_GPA, cmdline, cl))))
		return fail(p, rc, "writing the kernel, initrd or command line failed (%d)", rc);
	zero_page(p, buf, map, nr_map);
	if ((rc = ops->copy(ops->ctx, BZ_ZERO_PAGE_GPA, buf, ZERO_PAGE_LEN)))
		return fail(p, rc, "writing the zero page failed (%d)", rc);
	gdt(buf);
	if ((rc = ops->copy(ops->ctx, BZ_GDT_GPA, buf, 6 * 8)))
		return fail(p, rc, "writing the GDT failed (%d)", rc);
	page_tables(buf);
	if ((rc = ops->copy(ops->ctx, BZ_PML4_GPA, buf, 6 * PAGE_4K)))
		return fail(p, rc, "writing the page tables failed (%d)", rc);
	entry_state(p, st);
	return 0;
}

int bz_load(struct bz_plan *p, const struct loader_mem_ops *ops, const void *initrd,
	    const char *cmdline, const struct e820_entry *map, unsigned int nr_map,
	    struct cpu_state *st)
{
	size_t cl = strlen(cmdline ? cmdline : "");
	uint8_t *buf;
	int rc;

	if (cl >= p->cmdline_size || cl >= BZ_CMDLINE_MAX)
		return fail(p, -E2BIG, "command line of %zu bytes", cl);
	/* its own: a guest's reboot loads on the CPU that ran it, beside the
	 * shell's `create` or another guest's reboot */
	buf = malloc(6 * PAGE_4K);
	if (!buf)
		return fail(p, -ENOMEM, "no memory for the boot pages");
	rc = write_boot(p, ops, initrd, cmdline, cl, map, nr_map, st, buf);
	free(buf);
	return rc;
}
