/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Multiboot1 guest loader: header search, ELF32 / a.out-kludge validation
 * into a load plan, plan execution, and the guest's boot information.
 * See hv/loader/mb1elf.h for the contract and the decisions taken.
 *
 * All image-derived arithmetic is done in 64 bits on 32-bit fields, so sums
 * like offset + size cannot wrap.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>	/* vsnprintf only */
#include <string.h>

#include "hv/loader/mb1elf.h"
#include "hv/lib/guest_layout.h"

/* ELF32 layout (System V ABI, "ELF Header" and "Program Header"). */
#define EHDR_SIZE	52u
#define PHDR_SIZE	32u
#define EI_CLASS	4
#define EI_DATA		5
#define EI_VERSION	6
#define ELFCLASS32	1
#define ELFDATA2LSB	1
#define ET_EXEC		2
#define EM_386		3
#define PT_LOAD		1
#define PF_X		1

#define MB1_HDR_LEN	12u	/* magic, flags, checksum */
#define MB1_AOUT_LEN	32u	/* + header/load/load_end/bss_end/entry addr */
#define MB1_HONOURED	(MB1_HF_PAGE_ALIGN | MB1_HF_MEMINFO)
#define FOUR_GIB	(1ull << 32)

#define CR0_PE		(1u << 0)
#define CR0_ET		(1u << 4)
#define EFLAGS_FIXED	(1u << 1)

_Static_assert(sizeof(struct mb1_info) == 116, "multiboot1 info is 116 bytes");
_Static_assert(sizeof(struct mb1_mmap_entry) == 24, "mmap entry is 24 bytes");
_Static_assert(MB1_CMDLINE_GPA + MB1_CMDLINE_MAX <= MB1_MMAP_GPA, "cmdline fits");

__attribute__((format(printf, 3, 4)))
static int fail(struct mb1_plan *plan, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(plan->errmsg, sizeof(plan->errmsg), fmt, ap);
	va_end(ap);
	return err;
}

static uint32_t rd32(const struct mb1_plan *plan, uint64_t off)
{
	uint32_t v;

	memcpy(&v, plan->image + off, sizeof(v));
	return v;
}

static uint16_t rd16(const struct mb1_plan *plan, uint64_t off)
{
	uint16_t v;

	memcpy(&v, plan->image + off, sizeof(v));
	return v;
}

/* ---- multiboot header (spec 3.1) ---- */

static uint64_t search_limit(const struct mb1_plan *plan)
{
	return plan->image_len < MB1_HEADER_SEARCH ? plan->image_len : MB1_HEADER_SEARCH;
}

/* First 4-aligned magic with a valid checksum, wholly in the first 8 KiB. */
static int find_header(struct mb1_plan *plan)
{
	uint64_t off, limit = search_limit(plan);
	int64_t bad = -1;

	for (off = 0; off + MB1_HDR_LEN <= limit; off += 4) {
		if (rd32(plan, off) != MB1_HEADER_MAGIC)
			continue;
		if ((uint32_t)(MB1_HEADER_MAGIC + rd32(plan, off + 4) + rd32(plan, off + 8)) == 0) {
			plan->header_off = (uint32_t)off;
			plan->header_flags = rd32(plan, off + 4);
			return 0;
		}
		if (bad < 0)
			bad = (int64_t)off;
	}
	if (bad >= 0)
		return fail(plan, -EINVAL, "multiboot header at 0x%llx: bad checksum",
			    (unsigned long long)bad);
	return fail(plan, -ENOEXEC, "no multiboot header in the first %u bytes",
		    MB1_HEADER_SEARCH);
}

bool mb1_aout_kludge(const void *image, size_t len)
{
	struct mb1_plan plan = { .image = image, .image_len = image ? len : 0 };

	return !find_header(&plan) && (plan.header_flags & MB1_HF_AOUT_KLUDGE);
}

static int check_flags(struct mb1_plan *plan)
{
	uint32_t unsupported = plan->header_flags & 0xffffu & ~MB1_HONOURED;

	if (unsupported)
		return fail(plan, -ENOTSUP, "multiboot flags 0x%x: required bits 0x%x not supported",
			    plan->header_flags, unsupported);
	plan->aout_kludge = plan->header_flags & MB1_HF_AOUT_KLUDGE;
	return 0;
}

/* ---- segments, shared by the ELF and a.out paths ---- */

static int check_range(struct mb1_plan *plan, const struct mb1_segment *s)
{
	uint64_t top, above;

	guest_ram_split(plan->guest_mem, &top, &above);	/* RAM below the hole */
	if (s->offset > plan->image_len || s->filesz > plan->image_len - s->offset)
		return fail(plan, -EINVAL, "segment %u: file bytes 0x%llx+0x%llx past the end (%zu)",
			    s->index, (unsigned long long)s->offset,
			    (unsigned long long)s->filesz, plan->image_len);
	if (s->filesz > s->memsz)
		return fail(plan, -EINVAL, "segment %u: filesz 0x%llx > memsz 0x%llx", s->index,
			    (unsigned long long)s->filesz, (unsigned long long)s->memsz);
	if (s->gpa < MB1_LOAD_MIN)
		return fail(plan, -ERANGE, "segment %u: address 0x%llx below 1 MiB",
			    s->index, (unsigned long long)s->gpa);
	if (s->gpa >= top || s->memsz > top - s->gpa)
		return fail(plan, -ERANGE, "segment %u: 0x%llx+0x%llx past guest RAM (0x%llx)",
			    s->index, (unsigned long long)s->gpa,
			    (unsigned long long)s->memsz, (unsigned long long)top);
	return 0;
}

static int add_segment(struct mb1_plan *plan, const struct mb1_segment *s)
{
	const struct mb1_segment *o;
	uint32_t i;
	int ret = check_range(plan, s);

	if (ret)
		return ret;
	for (i = 0; i < plan->nr_segs; i++) {
		o = &plan->segs[i];
		if (s->gpa < o->gpa + o->memsz && o->gpa < s->gpa + s->memsz)
			return fail(plan, -EINVAL, "segment %u overlaps segment %u",
				    s->index, o->index);
	}
	if (plan->nr_segs == MB1_MAX_SEGS)
		return fail(plan, -E2BIG, "more than %u loadable segments", MB1_MAX_SEGS);
	plan->segs[plan->nr_segs++] = *s;
	return 0;
}

/* The entry (a virtual address) must be file-backed code of some segment. */
static int find_entry(struct mb1_plan *plan, uint32_t entry)
{
	const struct mb1_segment *s;
	uint32_t i;

	for (i = 0; i < plan->nr_segs; i++) {
		s = &plan->segs[i];
		if (s->exec && entry >= s->vaddr && entry - s->vaddr < s->filesz) {
			plan->entry = (uint32_t)(s->gpa + (entry - s->vaddr));
			return 0;
		}
	}
	return fail(plan, -EINVAL, "entry point 0x%x not inside a loaded executable segment",
		    entry);
}

/* ---- ELF32 ---- */

static int elf_ident(struct mb1_plan *plan)
{
	const uint8_t *id = plan->image;

	if (plan->image_len < EHDR_SIZE)
		return fail(plan, -ENOEXEC, "truncated ELF header (%zu bytes, need %u)",
			    plan->image_len, EHDR_SIZE);
	if (memcmp(id, "\177ELF", 4))
		return fail(plan, -ENOEXEC, "not an ELF file and no a.out kludge flag");
	if (id[EI_CLASS] != ELFCLASS32)
		return fail(plan, -ENOEXEC, "ELF class %u, need ELFCLASS32", id[EI_CLASS]);
	if (id[EI_DATA] != ELFDATA2LSB)
		return fail(plan, -ENOEXEC, "ELF data encoding %u, need little-endian", id[EI_DATA]);
	if (id[EI_VERSION] != 1 || rd32(plan, 20) != 1)
		return fail(plan, -ENOEXEC, "ELF version %u, need 1", id[EI_VERSION]);
	if (rd16(plan, 16) != ET_EXEC)
		return fail(plan, -ENOEXEC, "ELF type %u, need ET_EXEC", rd16(plan, 16));
	if (rd16(plan, 18) != EM_386)
		return fail(plan, -ENOEXEC, "ELF machine %u, need EM_386", rd16(plan, 18));
	return 0;
}

static int elf_phdrs(struct mb1_plan *plan, uint64_t *phoff, uint32_t *phnum)
{
	uint32_t phentsize = rd16(plan, 42);

	*phoff = rd32(plan, 28);
	*phnum = rd16(plan, 44);
	if (phentsize != PHDR_SIZE)
		return fail(plan, -EINVAL, "e_phentsize %u, need %u", phentsize, PHDR_SIZE);
	if (*phnum == 0 || *phnum > MB1_MAX_PHNUM)
		return fail(plan, -EINVAL, "e_phnum %u out of range 1..%u", *phnum, MB1_MAX_PHNUM);
	if (*phoff > plan->image_len || *phnum * PHDR_SIZE > plan->image_len - *phoff)
		return fail(plan, -EINVAL, "program headers at 0x%llx run past the end (%zu)",
			    (unsigned long long)*phoff, plan->image_len);
	return 0;
}

static int elf_segment(struct mb1_plan *plan, uint32_t index, uint64_t ph)
{
	struct mb1_segment s = {
		.index = index,
		.offset = rd32(plan, ph + 4),
		.vaddr = rd32(plan, ph + 8),
		.gpa = rd32(plan, ph + 12),
		.filesz = rd32(plan, ph + 16),
		.memsz = rd32(plan, ph + 20),
		.exec = rd32(plan, ph + 24) & PF_X,
	};

	if (rd32(plan, ph) != PT_LOAD || (s.memsz == 0 && s.filesz == 0))
		return 0;
	return add_segment(plan, &s);
}

static int plan_elf(struct mb1_plan *plan)
{
	uint64_t phoff;
	uint32_t phnum, i;
	int ret = elf_ident(plan);

	if (!ret)
		ret = elf_phdrs(plan, &phoff, &phnum);
	for (i = 0; !ret && i < phnum; i++)
		ret = elf_segment(plan, i, phoff + (uint64_t)i * PHDR_SIZE);
	if (ret)
		return ret;
	if (plan->nr_segs == 0)
		return fail(plan, -EINVAL, "no loadable segments");
	return find_entry(plan, rd32(plan, 24));
}

/* ---- a.out kludge (spec 3.1.3, address fields) ---- */

/* load_end_addr and bss_end_addr give filesz and memsz (0 = defaults). */
static int aout_sizes(struct mb1_plan *plan, struct mb1_segment *s,
		      uint32_t load_end, uint32_t bss_end)
{
	if (load_end && load_end < s->gpa)
		return fail(plan, -EINVAL, "a.out kludge: load_end_addr 0x%x below load_addr", load_end);
	s->filesz = load_end ? load_end - s->gpa : plan->image_len - s->offset;
	if (bss_end && bss_end < s->gpa + s->filesz)
		return fail(plan, -EINVAL, "a.out kludge: bss_end_addr 0x%x below the loaded end",
			    bss_end);
	s->memsz = bss_end ? bss_end - s->gpa : s->filesz;
	if (s->memsz == 0)
		return fail(plan, -EINVAL, "a.out kludge: nothing to load");
	return 0;
}

static int plan_aout(struct mb1_plan *plan)
{
	uint64_t off = plan->header_off;
	uint32_t header_addr, load_addr;
	struct mb1_segment s = { .index = 0, .exec = true };
	int ret;

	if (off + MB1_AOUT_LEN > search_limit(plan))
		return fail(plan, -EINVAL, "multiboot header at 0x%llx: address fields cut off",
			    (unsigned long long)off);
	header_addr = rd32(plan, off + 12);
	load_addr = rd32(plan, off + 16);
	if (load_addr > header_addr || header_addr - load_addr > off)
		return fail(plan, -EINVAL, "a.out kludge: load_addr 0x%x, header_addr 0x%x do not fit header offset 0x%llx",
			    load_addr, header_addr, (unsigned long long)off);
	s.gpa = s.vaddr = load_addr;
	s.offset = off - (header_addr - load_addr);
	ret = aout_sizes(plan, &s, rd32(plan, off + 20), rd32(plan, off + 24));
	if (!ret)
		ret = add_segment(plan, &s);
	if (!ret)
		ret = find_entry(plan, rd32(plan, off + 28));
	return ret;
}

int mb1_prepare(const void *image, size_t len, uint64_t guest_mem,
		struct mb1_plan *plan)
{
	int ret;

	memset(plan, 0, sizeof(*plan));
	plan->image = image;
	plan->image_len = image ? len : 0;
	plan->guest_mem = guest_mem;
	if (guest_mem <= MB1_LOAD_MIN)
		return fail(plan, -ERANGE, "guest RAM 0x%llx: need more than 1 MiB",
			    (unsigned long long)guest_mem);
	ret = find_header(plan);
	if (!ret)
		ret = check_flags(plan);
	if (!ret)
		ret = plan->aout_kludge ? plan_aout(plan) : plan_elf(plan);
	if (ret)
		plan->nr_segs = 0;	/* a failed plan cannot be loaded */
	return ret;
}

/* ---- executing the plan ---- */

static int cb_result(struct mb1_plan *plan, int ret, const char *what, uint64_t gpa)
{
	if (ret == 0)
		return 0;
	if (ret > 0)
		ret = -EIO;
	return fail(plan, ret, "%s at 0x%llx failed (%d)", what, (unsigned long long)gpa, ret);
}

/* ---- modules ---- */

#define MB1_PAGE 4096u

static uint64_t page_up(uint64_t a)
{
	return (a + MB1_PAGE - 1) & ~(uint64_t)(MB1_PAGE - 1);
}

int mb1_add_modules(struct mb1_plan *plan, const struct mb1_mod_src *mods, unsigned int n)
{
	uint64_t at = MB1_LOAD_MIN, limit, strings = 0;

	plan->nr_mods = 0;
	plan->mods = NULL;
	if (plan->nr_segs == 0)
		return fail(plan, -EINVAL, "no valid load plan");
	if (n > MB1_MAX_MODS)
		return fail(plan, -E2BIG, "%u modules (at most %u)", n, MB1_MAX_MODS);
	limit = plan->guest_mem < GUEST_HOLE_START ? plan->guest_mem : GUEST_HOLE_START;
	for (uint32_t i = 0; i < plan->nr_segs; i++)
		if (plan->segs[i].gpa + plan->segs[i].memsz > at)
			at = plan->segs[i].gpa + plan->segs[i].memsz;
	for (unsigned int i = 0; i < n; i++) {
		strings += strnlen(mods[i].string, MB1_MOD_STRINGS_MAX) + 1;
		if (strings > MB1_MOD_STRINGS_MAX)
			return fail(plan, -E2BIG, "module strings over %u bytes", MB1_MOD_STRINGS_MAX);
		at = page_up(at);
		if (mods[i].len > limit || at > limit - mods[i].len)
			return fail(plan, -ERANGE, "module %u (%zu bytes) does not fit in the "
				    "guest's RAM below 3 GiB after the image", i + 1, mods[i].len);
		plan->mod_gpa[i] = (uint32_t)at;
		at += mods[i].len;
	}
	plan->nr_mods = n;
	plan->mods = n ? mods : NULL;
	return 0;
}

int mb1_load(struct mb1_plan *plan, const struct loader_mem_ops *ops)
{
	const struct mb1_segment *s;
	uint32_t i;
	int ret = 0;

	if (plan->nr_segs == 0)
		return fail(plan, -EINVAL, "no valid load plan");
	for (i = 0; i < plan->nr_segs && !ret; i++) {
		s = &plan->segs[i];
		if (s->filesz)
			ret = cb_result(plan, ops->copy(ops->ctx, s->gpa, plan->image + s->offset,
							(size_t)s->filesz), "copy", s->gpa);
		if (!ret && s->memsz > s->filesz)
			ret = cb_result(plan, ops->zero(ops->ctx, s->gpa + s->filesz,
							(size_t)(s->memsz - s->filesz)),
					"zero", s->gpa + s->filesz);
	}
	for (i = 0; i < plan->nr_mods && !ret; i++)
		if (plan->mods[i].len)
			ret = cb_result(plan, ops->copy(ops->ctx, plan->mod_gpa[i], plan->mods[i].data,
							plan->mods[i].len), "copy", plan->mod_gpa[i]);
	return ret;
}

/* ---- boot information (spec 3.3) ---- */

/* usable [0, 640K), reserved [640K, 1M), usable [1M, below the hole at
 * 3 GiB), and usable from 4 GiB when RAM goes on there (hv/mm/gpmap.h).
 * Returns the number of entries. */
static unsigned build_mmap(uint64_t guest_mem, struct mb1_mmap_entry *m)
{
	uint64_t below, above;

	guest_ram_split(guest_mem, &below, &above);
	m[0] = (struct mb1_mmap_entry){ 20, 0, MB1_LOW_RAM_END, MB1_MEM_AVAILABLE };
	m[1] = (struct mb1_mmap_entry){ 20, MB1_LOW_RAM_END, MB1_LOAD_MIN - MB1_LOW_RAM_END,
					MB1_MEM_RESERVED };
	m[2] = (struct mb1_mmap_entry){ 20, MB1_LOAD_MIN, below - MB1_LOAD_MIN,
					MB1_MEM_AVAILABLE };
	if (!above)
		return 3;
	m[3] = (struct mb1_mmap_entry){ 20, GUEST_HOLE_END, above, MB1_MEM_AVAILABLE };
	return 4;
}

/* mem_upper: KiB from 1 MiB to the first hole (spec 3.3). */
static void build_info(uint64_t guest_mem, bool has_cmdline, struct mb1_info *info)
{
	uint64_t below, above, upper_kb;

	guest_ram_split(guest_mem, &below, &above);
	upper_kb = (below - MB1_LOAD_MIN) / 1024;

	memset(info, 0, sizeof(*info));
	info->flags = MB1_INFO_MEMORY | MB1_INFO_MMAP | MB1_INFO_LOADER_NAME;
	info->mem_lower = MB1_LOW_RAM_END / 1024;
	info->mem_upper = upper_kb > UINT32_MAX ? UINT32_MAX : (uint32_t)upper_kb;
	if (has_cmdline) {
		info->flags |= MB1_INFO_CMDLINE;
		info->cmdline = MB1_CMDLINE_GPA;
	}
	info->mmap_length = (above ? 4 : 3) * sizeof(struct mb1_mmap_entry);
	info->mmap_addr = MB1_MMAP_GPA;
	info->boot_loader_name = MB1_LOADER_NAME_GPA;
}

static struct mb1_seg_reg flat_segment(uint16_t selector, uint8_t type)
{
	return (struct mb1_seg_reg){
		.selector = selector, .base = 0, .limit = 0xffffffffu, .type = type,
		.dpl = 0, .s = true, .present = true, .db = true, .g = true,
	};
}

/* Spec 3.2 "Machine state"; selectors 0x08/0x10 are a conventional GDT. */
static void entry_state(const struct mb1_plan *plan, struct mb1_entry_state *st)
{
	memset(st, 0, sizeof(*st));
	st->eax = MB1_BOOT_MAGIC;
	st->ebx = MB1_INFO_GPA;
	st->eip = plan->entry;
	st->eflags = EFLAGS_FIXED;
	st->cr0 = CR0_PE | CR0_ET;
	st->cs = flat_segment(0x08, 0xb);
	st->ds = st->es = st->fs = st->gs = st->ss = flat_segment(0x10, 0x3);
}

static int put(struct mb1_plan *plan, const struct loader_mem_ops *ops,
	       uint64_t gpa, const void *src, size_t len)
{
	return cb_result(plan, ops->copy(ops->ctx, gpa, src, len), "copy", gpa);
}

/* The module list and its strings (sizes checked by mb1_add_modules). */
static int put_modules(struct mb1_plan *plan, const struct loader_mem_ops *ops,
		       struct mb1_info *info)
{
	struct mb1_module list[MB1_MAX_MODS];
	uint32_t str = MB1_MOD_STRINGS_GPA;
	int ret = 0;

	if (!plan->nr_mods)
		return 0;
	for (uint32_t i = 0; i < plan->nr_mods && !ret; i++) {
		size_t n = strnlen(plan->mods[i].string, MB1_MOD_STRINGS_MAX - 1);

		list[i] = (struct mb1_module){ plan->mod_gpa[i],
					       plan->mod_gpa[i] + (uint32_t)plan->mods[i].len, str, 0 };
		ret = put(plan, ops, str, plan->mods[i].string, n);
		if (!ret)
			ret = put(plan, ops, str + n, "", 1);
		str += (uint32_t)n + 1;
	}
	if (!ret)
		ret = put(plan, ops, MB1_MODS_GPA, list, plan->nr_mods * sizeof(list[0]));
	info->flags |= MB1_INFO_MODS;
	info->mods_count = plan->nr_mods;
	info->mods_addr = MB1_MODS_GPA;
	return ret;
}

int mb1_write_info(struct mb1_plan *plan, const char *cmdline,
		   const struct loader_mem_ops *ops, struct mb1_entry_state *st)
{
	struct mb1_mmap_entry mmap[MB1_MMAP_ENTRIES];
	struct mb1_info info;
	size_t n = cmdline ? strnlen(cmdline, MB1_CMDLINE_MAX) : 0;
	int ret;

	if (plan->nr_segs == 0)
		return fail(plan, -EINVAL, "no valid load plan");
	if (n == MB1_CMDLINE_MAX)
		return fail(plan, -E2BIG, "command line of %u bytes or more (max %u)",
			    MB1_CMDLINE_MAX, MB1_CMDLINE_MAX - 1);
	unsigned nmap = build_mmap(plan->guest_mem, mmap);
	build_info(plan->guest_mem, cmdline != NULL, &info);
	ret = put(plan, ops, MB1_MMAP_GPA, mmap, nmap * sizeof(mmap[0]));
	if (!ret && cmdline)
		ret = put(plan, ops, MB1_CMDLINE_GPA, cmdline, n + 1);
	if (!ret)
		ret = put(plan, ops, MB1_LOADER_NAME_GPA, "ferry", sizeof("ferry"));
	if (!ret)
		ret = put_modules(plan, ops, &info);
	if (!ret)
		ret = put(plan, ops, MB1_INFO_GPA, &info, sizeof(info));
	if (!ret)
		entry_state(plan, st);
	return ret;
}
