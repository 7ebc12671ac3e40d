/* SPDX-License-Identifier: BSD-2-Clause */
/* PVH loader: an ELF64 kernel entered at its 32-bit PVH entry (see pvh.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hv/lib/bytes.h"
#include "hv/loader/pvh.h"

/* ELF64 (System V gABI; x86-64 psABI). */
#define EH_LEN			64
#define EH_TYPE			16
#define EH_MACHINE		18
#define EH_PHOFF		32
#define EH_PHENTSIZE		54
#define EH_PHNUM		56
#define PH_LEN			56
#define ET_EXEC			2
#define EM_X86_64		62
#define PT_LOAD			1
#define PT_NOTE			4
#define PF_X			1

#define PAGE_4K			0x1000ull
#define LOW_GDT_ENTRIES		5

static int fail(struct pvh_plan *p, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct pvh_plan *p, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->errmsg, sizeof(p->errmsg), fmt, ap);
	va_end(ap);
	return err;
}

static bool is_elf64_x86(const uint8_t *b, size_t len)
{
	return len >= EH_LEN && !memcmp(b, "\177ELF", 4) && b[4] == 2 && b[5] == 1 &&
	       get_le16(b + EH_TYPE) == ET_EXEC && get_le16(b + EH_MACHINE) == EM_X86_64;
}

/* Program header i, or NULL when the table is not inside the file. */
static const uint8_t *phdr(const uint8_t *b, size_t len, unsigned int i)
{
	uint64_t off = get_le64(b + EH_PHOFF);
	unsigned int n = get_le16(b + EH_PHNUM);

	if (get_le16(b + EH_PHENTSIZE) != PH_LEN || n > PVH_MAX_PHNUM || i >= n ||
	    off > len || len - off < (uint64_t)n * PH_LEN)
		return NULL;
	return b + off + (uint64_t)i * PH_LEN;
}

/* The PVH entry from the notes in [off, off + size), if one is there:
 * 1 found, 0 none, -1 a note cut short or an entry of the wrong size. */
static int find_note(const uint8_t *b, uint64_t off, uint64_t size, uint64_t *entry)
{
	while (size >= 12) {
		uint32_t namesz = get_le32(b + off), descsz = get_le32(b + off + 4);
		uint32_t type = get_le32(b + off + 8);
		uint64_t name_len = ((uint64_t)namesz + 3) & ~3ull;
		uint64_t desc_len = ((uint64_t)descsz + 3) & ~3ull;

		if (size - 12 < name_len || size - 12 - name_len < desc_len)
			return -1;
		if (type == PVH_ELFNOTE_PHYS32_ENTRY && namesz == 4 &&
		    !memcmp(b + off + 12, "Xen", 4)) {
			const uint8_t *d = b + off + 12 + name_len;

			if (descsz == 4)
				*entry = get_le32(d);
			else if (descsz == 8)
				*entry = get_le64(d);
			else
				return -1;
			return 1;
		}
		off += 12 + name_len + desc_len;
		size -= 12 + name_len + desc_len;
	}
	return 0;
}

/* 1 and *entry: the file's PVH entry; 0: none; -1: a broken note. */
static int pvh_entry(const uint8_t *b, size_t len, uint64_t *entry)
{
	unsigned int n = get_le16(b + EH_PHNUM);

	for (unsigned int i = 0; i < n; i++) {
		const uint8_t *ph = phdr(b, len, i);
		uint64_t off, size;
		int rc;

		if (!ph)
			return 0;
		if (get_le32(ph) != PT_NOTE)
			continue;
		off = get_le64(ph + 8);
		size = get_le64(ph + 32);
		if (off > len || len - off < size)
			return -1;
		if ((rc = find_note(b, off, size, entry)))
			return rc;
	}
	return 0;
}

bool pvh_has_entry(const void *image, size_t len)
{
	uint64_t entry;

	return is_elf64_x86(image, len) && pvh_entry(image, len, &entry) == 1;
}

/* One PT_LOAD: inside the file, inside the guest's RAM. */
static int add_segment(struct pvh_plan *p, const uint8_t *ph, unsigned int i, uint64_t top)
{
	uint64_t off = get_le64(ph + 8), gpa = get_le64(ph + 24);
	uint64_t filesz = get_le64(ph + 32), memsz = get_le64(ph + 40);
	struct pvh_segment *s;

	if (filesz > memsz)
		return fail(p, -EINVAL, "segment %u: %lu bytes in the file, %lu in memory", i,
			    (unsigned long)filesz, (unsigned long)memsz);
	if (!memsz)
		return 0;	/* nothing to place */
	if (off > p->image_len || p->image_len - off < filesz)
		return fail(p, -EINVAL, "segment %u runs past the end of the file", i);
	if (gpa < PVH_LOAD_MIN || gpa > top || top - gpa < memsz)
		return fail(p, -ERANGE, "segment %u at %#lx-%#lx is outside the guest's RAM "
			    "from 1 MiB to %lu MiB", i, (unsigned long)gpa,
			    (unsigned long)(gpa + memsz), (unsigned long)(top >> 20));
	if (p->nr_segs == PVH_MAX_SEGS)
		return fail(p, -E2BIG, "more than %u loadable segments", PVH_MAX_SEGS);
	for (unsigned int j = 0; j < p->nr_segs; j++)
		if (gpa < p->segs[j].gpa + p->segs[j].memsz && p->segs[j].gpa < gpa + memsz)
			return fail(p, -EINVAL, "segment %u overlaps another", i);
	s = &p->segs[p->nr_segs++];
	*s = (struct pvh_segment){ gpa, off, filesz, memsz, get_le32(ph + 4) & PF_X };
	if (gpa + memsz > p->kernel_end)
		p->kernel_end = gpa + memsz;
	return 0;
}

static int check_entry(struct pvh_plan *p, uint64_t entry)
{
	for (unsigned int i = 0; i < p->nr_segs; i++) {
		const struct pvh_segment *s = &p->segs[i];

		if (s->exec && entry >= s->gpa && entry - s->gpa < s->filesz) {
			p->entry = (uint32_t)entry;	/* segments end below 3 GiB */
			return 0;
		}
	}
	return fail(p, -EINVAL, "the PVH entry %#lx is not in the loaded code",
		    (unsigned long)entry);
}

int pvh_prepare(const void *image, size_t len, uint64_t guest_mem, size_t initrd_len,
		size_t cmdline_len, struct pvh_plan *plan)
{
	uint64_t top = e820_ram_top(guest_mem), entry = 0, low;
	const uint8_t *b = image;
	int rc;

	memset(plan, 0, sizeof(*plan));
	plan->image = image;
	plan->image_len = len;
	plan->guest_mem = guest_mem;
	if (!is_elf64_x86(b, len))
		return fail(plan, -ENOEXEC, "not an ELF64 x86-64 executable");
	if (!phdr(b, len, 0))
		return fail(plan, -EINVAL, "no program headers inside the file");
	rc = pvh_entry(b, len, &entry);
	if (rc < 0)
		return fail(plan, -EINVAL, "a note runs past its segment, or a PVH entry note "
			    "of the wrong size");
	if (!rc)
		return fail(plan, -ENOTSUP, "no PVH entry note (XEN_ELFNOTE_PHYS32_ENTRY): "
			    "a kernel built without CONFIG_PVH");
	if (cmdline_len >= PVH_CMDLINE_MAX)
		return fail(plan, -E2BIG, "command line of %zu bytes: the kernel takes %u at most",
			    cmdline_len, PVH_CMDLINE_MAX - 1);
	for (unsigned int i = 0; i < get_le16(b + EH_PHNUM); i++) {
		const uint8_t *ph = phdr(b, len, i);

		if (get_le32(ph) == PT_LOAD && (rc = add_segment(plan, ph, i, top)))
			return rc;
	}
	if (!plan->nr_segs)
		return fail(plan, -EINVAL, "no loadable segment");
	if ((rc = check_entry(plan, entry)))
		return rc;
	plan->initrd_len = initrd_len;
	if (!initrd_len)
		return 0;
	low = (plan->kernel_end + PAGE_4K - 1) & ~(PAGE_4K - 1);
	if (top < low || top - low < initrd_len)
		return fail(plan, -E2BIG, "the initrd (%zu KiB) does not fit in the guest's RAM "
			    "beside the kernel", initrd_len >> 10);
	plan->initrd_gpa = (top - initrd_len) & ~(PAGE_4K - 1);
	return 0;
}

/* ---- what pvh_load writes ---- */

/* struct hvm_start_info (version 1), its module list and memory map. */
static size_t start_info(const struct pvh_plan *p, uint8_t *buf, const struct e820_entry *map,
			 unsigned int n)
{
	uint8_t *mod = buf + (PVH_MODLIST_GPA - PVH_START_INFO_GPA);
	uint8_t *mm = buf + (PVH_MEMMAP_GPA - PVH_START_INFO_GPA);

	n = n < E820_MAX_ENTRIES ? n : E820_MAX_ENTRIES;
	memset(buf, 0, PVH_MEMMAP_GPA - PVH_START_INFO_GPA + n * PVH_MEMMAP_ENTRY_LEN);
	put_le32(buf, PVH_START_MAGIC);
	put_le32(buf + 4, PVH_START_VERSION);
	put_le32(buf + 12, p->initrd_len ? 1 : 0);		/* nr_modules */
	put_le64(buf + 16, p->initrd_len ? PVH_MODLIST_GPA : 0);
	put_le64(buf + 24, PVH_CMDLINE_GPA);
	put_le64(buf + 32, 0);					/* no ACPI: MP table */
	put_le64(buf + 40, PVH_MEMMAP_GPA);
	put_le32(buf + 48, n);
	put_le64(mod, p->initrd_gpa);
	put_le64(mod + 8, p->initrd_len);
	for (unsigned int i = 0; i < n; i++) {
		put_le64(mm + PVH_MEMMAP_ENTRY_LEN * i, map[i].addr);
		put_le64(mm + PVH_MEMMAP_ENTRY_LEN * i + 8, map[i].size);
		put_le32(mm + PVH_MEMMAP_ENTRY_LEN * i + 16, map[i].type);
	}
	return PVH_MEMMAP_GPA - PVH_START_INFO_GPA + n * PVH_MEMMAP_ENTRY_LEN;
}

/* GDT (SDM Vol. 3A 3.4.5): flat 32-bit code and data, a 32-bit TSS. */
static void gdt(uint8_t *g)
{
	static const uint64_t desc[LOW_GDT_ENTRIES] = {
		0, 0,
		0x00cf9b000000ffffull,	/* 0x10: code, D/B, G, P, DPL 0 */
		0x00cf93000000ffffull,	/* 0x18: data, D/B, G, P */
		0x00008b0000000067ull,	/* 0x20: busy 32-bit TSS at 0, limit 0x67 */
	};

	for (unsigned int i = 0; i < LOW_GDT_ENTRIES; i++)
		put_le64(g + 8 * i, desc[i]);
}

static struct seg flat(uint16_t sel, uint16_t attr)
{
	return (struct seg){ .sel = sel, .attr = attr | SEG_ATTR_DB | SEG_ATTR_G,
			     .limit = 0xffffffff, .base = 0 };
}

/* The entry state pvh.pandoc gives: protected mode, paging off, flat
 * 32-bit segments, a 32-bit TSS, EBX the start info, IF clear. */
static void entry_state(const struct pvh_plan *p, struct cpu_state *s)
{
	memset(s, 0, sizeof(*s));
	s->rip = p->entry;
	s->gpr[GPR_RBX] = PVH_START_INFO_GPA;
	s->rflags = 0x2;
	s->cr0 = 0x11;				/* PE, ET */
	s->xcr0 = 1;
	s->cs = flat(0x10, 0x9b);
	s->ds = s->es = s->fs = s->gs = s->ss = flat(0x18, 0x93);
	s->tr = (struct seg){ .sel = 0x20, .attr = 0x8b, .limit = 0x67 };
	s->ldtr = (struct seg){ .attr = 0x82, .limit = 0xffff };	/* present, empty */
	s->gdtr = (struct dtable){ .base = PVH_GDT_GPA, .limit = LOW_GDT_ENTRIES * 8 - 1 };
	s->idtr = (struct dtable){ .base = 0, .limit = 0 };
	s->pat = 0x0007040600070406ull;		/* the power-on PAT */
	s->mtrr_def_type = 0xc06;		/* MTRRs on, default write-back */
	s->misc_enable = 1;			/* fast strings */
}

static int write_segments(struct pvh_plan *p, const struct loader_mem_ops *ops)
{
	for (unsigned int i = 0; i < p->nr_segs; i++) {
		const struct pvh_segment *s = &p->segs[i];
		int rc = s->filesz ? ops->copy(ops->ctx, s->gpa, p->image + s->offset, s->filesz) : 0;

		if (!rc && s->memsz > s->filesz)
			rc = ops->zero(ops->ctx, s->gpa + s->filesz, s->memsz - s->filesz);
		if (rc)
			return fail(p, rc, "writing the segment at %#lx failed (%d)",
				    (unsigned long)s->gpa, rc);
	}
	return 0;
}

int pvh_load(struct pvh_plan *p, const struct loader_mem_ops *ops, const void *initrd,
	     const char *cmdline, const struct e820_entry *map, unsigned int nr_map,
	     struct cpu_state *st)
{
	size_t cl = strlen(cmdline ? cmdline : "");
	uint8_t buf[PVH_MEMMAP_GPA - PVH_START_INFO_GPA + E820_MAX_ENTRIES * PVH_MEMMAP_ENTRY_LEN];
	size_t n;
	int rc;

	if (cl >= PVH_CMDLINE_MAX)
		return fail(p, -E2BIG, "command line of %zu bytes", cl);
	if ((rc = write_segments(p, ops)))
		return rc;
	if ((p->initrd_len && (rc = ops->copy(ops->ctx, p->initrd_gpa, initrd, p->initrd_len))) ||
	    (rc = ops->zero(ops->ctx, PVH_CMDLINE_GPA, cl + 1)) ||
	    (cl && (rc = ops->copy(ops->ctx, PVH_CMDLINE_GPA, cmdline, cl))))
		return fail(p, rc, "writing the initrd or command line failed (%d)", rc);
	n = start_info(p, buf, map, nr_map);
	if ((rc = ops->copy(ops->ctx, PVH_START_INFO_GPA, buf, n)))
		return fail(p, rc, "writing the start info failed (%d)", rc);
	gdt(buf);
	if ((rc = ops->copy(ops->ctx, PVH_GDT_GPA, buf, LOW_GDT_ENTRIES * 8)))
		return fail(p, rc, "writing the GDT failed (%d)", rc);
	entry_state(p, st);
	return 0;
}
