/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for hv/loader/mb1elf.c: ELF32 multiboot1 images built here
 * byte by byte, each malformation refused with the right errno and message,
 * the a.out kludge, plan execution into a fake guest memory, the info
 * structure checked field by field, and a fixed-seed mutation fuzz.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hv/loader/mb1elf.h"

#define GMEM		(4u << 20)
#define IMG_MAX		0x4000
#define PT_GNU_STACK	0x6474e551u

/* ---- image builder ---- */

struct seg_spec {
	uint32_t type, offset, vaddr, paddr, filesz, memsz, flags;
};

static uint8_t img[IMG_MAX];
static size_t img_len;

static void put16(size_t off, uint16_t v) { memcpy(img + off, &v, 2); }
static void put32(size_t off, uint32_t v) { memcpy(img + off, &v, 4); }

static void fill_pattern(size_t len)
{
	size_t i;

	for (i = 0; i < IMG_MAX; i++)
		img[i] = (uint8_t)(i * 7 + 3);
	img_len = len;
}

static void put_mb_header(size_t off, uint32_t flags)
{
	put32(off, MB1_HEADER_MAGIC);
	put32(off + 4, flags);
	put32(off + 8, (uint32_t)-(MB1_HEADER_MAGIC + flags));
}

static void put_phdr(int i, const struct seg_spec *s)
{
	size_t ph = 52 + (size_t)i * 32;

	put32(ph, s->type);
	put32(ph + 4, s->offset);
	put32(ph + 8, s->vaddr);
	put32(ph + 12, s->paddr);
	put32(ph + 16, s->filesz);
	put32(ph + 20, s->memsz);
	put32(ph + 24, s->flags);
	put32(ph + 28, 0x1000);
}

static void build_elf(const struct seg_spec *segs, int n, uint32_t entry, size_t len)
{
	int i;

	fill_pattern(len);
	memset(img, 0, 52 + (size_t)n * 32);
	memcpy(img, "\177ELF\1\1\1", 7);
	put16(16, 2);		/* ET_EXEC */
	put16(18, 3);		/* EM_386 */
	put32(20, 1);
	put32(24, entry);
	put32(28, 52);		/* e_phoff */
	put16(40, 52);		/* e_ehsize */
	put16(42, 32);		/* e_phentsize */
	put16(44, (uint16_t)n);
	for (i = 0; i < n; i++)
		put_phdr(i, &segs[i]);
}

/*
 * The standard guest: text at 1 MiB (file 0x1000, 8 KiB, R+X) holding the
 * multiboot header, data+bss at 0x103000 (file 0x3000, 2 KiB of 12 KiB),
 * and a GNU_STACK header that must be ignored.
 */
static struct seg_spec std_segs[3];

static void std_image(void)
{
	const struct seg_spec s[3] = {
		{ 1, 0x1000, 0x100000, 0x100000, 0x2000, 0x2000, 5 },
		{ 1, 0x3000, 0x103000, 0x103000, 0x800, 0x3000, 6 },
		{ PT_GNU_STACK, 0, 0, 0, 0, 0, 6 },
	};

	memcpy(std_segs, s, sizeof(s));
	build_elf(std_segs, 3, 0x100010, 0x3800);
	put_mb_header(0x1000, MB1_HF_PAGE_ALIGN | MB1_HF_MEMINFO);
}

/* Rebuild the standard image with one segment changed. */
static void std_with(int i, struct seg_spec s, uint32_t entry)
{
	std_image();
	std_segs[i] = s;
	build_elf(std_segs, 3, entry, 0x3800);
	put_mb_header(0x1000, MB1_HF_PAGE_ALIGN | MB1_HF_MEMINFO);
}

/* ---- fake guest memory ---- */

static uint8_t *gmem;
static int copy_calls, fail_copy_at, copy_ret;

static int fake_copy(void *ctx, uint64_t gpa, const void *src, size_t len)
{
	(void)ctx;
	if (++copy_calls == fail_copy_at)
		return copy_ret;
	assert_true(gpa <= GMEM && len <= GMEM - gpa);
	memcpy(gmem + gpa, src, len);
	return 0;
}

static int zero_ret;

static int fake_zero(void *ctx, uint64_t gpa, size_t len)
{
	(void)ctx;
	if (zero_ret)
		return zero_ret;
	assert_true(gpa <= GMEM && len <= GMEM - gpa);
	memset(gmem + gpa, 0, len);
	return 0;
}

static const struct loader_mem_ops ops = { fake_copy, fake_zero, NULL };

static int setup(void **state)
{
	(void)state;
	gmem = malloc(GMEM);
	memset(gmem, 0xaa, GMEM);
	copy_calls = fail_copy_at = copy_ret = zero_ret = 0;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(gmem);
	return 0;
}

static struct mb1_plan plan;

/* Prepare from an exactly-sized heap copy so ASan sees any overread. */
static int prepare_copy(size_t len, uint64_t guest_mem)
{
	static uint8_t *copy;

	free(copy);
	copy = malloc(len ? len : 1);
	memcpy(copy, img, len);
	return mb1_prepare(copy, len, guest_mem, &plan);
}

static void expect(int err, const char *msg)
{
	int ret = prepare_copy(img_len, GMEM);

	if (ret != err)
		fail_msg("got %d (%s), want %d", ret, plan.errmsg, err);
	if (!strstr(plan.errmsg, msg))
		fail_msg("errmsg '%s' lacks '%s'", plan.errmsg, msg);
	assert_int_equal(plan.nr_segs, 0);
}

/* ---- modules ---- */

/* Modules as GRUB's `module FILE ARGS` gives them: page-aligned, one after
 * the other from the first page above the image (its bss included), their
 * bytes copied, their strings beside the list, flag 3 set. */
static void test_modules(void **state)
{
	static uint8_t a[5000], b[1];
	const struct mb1_mod_src mods[3] = {
		{ a, sizeof(a), "initrd root=/dev/ram0" }, { b, 0, "empty" }, { b, 1, "b" },
	};
	struct mb1_entry_state st;
	struct mb1_module list[3];
	struct mb1_info info;

	(void)state;
	for (size_t i = 0; i < sizeof(a); i++)
		a[i] = (uint8_t)(i * 7);
	b[0] = 0x42;
	std_image();				/* the image ends at 0x106000 (bss) */
	assert_int_equal(prepare_copy(img_len, GMEM), 0);
	assert_int_equal(mb1_add_modules(&plan, mods, 3), 0);
	assert_int_equal(mb1_load(&plan, &ops), 0);
	assert_int_equal(mb1_write_info(&plan, "x", &ops, &st), 0);
	memcpy(&info, gmem + MB1_INFO_GPA, sizeof(info));
	assert_true(info.flags & MB1_INFO_MODS);
	assert_int_equal(info.mods_count, 3);
	assert_int_equal(info.mods_addr, MB1_MODS_GPA);
	memcpy(list, gmem + MB1_MODS_GPA, sizeof(list));
	assert_int_equal(list[0].mod_start, 0x106000);
	assert_int_equal(list[0].mod_end, 0x106000 + sizeof(a));
	assert_memory_equal(gmem + 0x106000, a, sizeof(a));
	assert_int_equal(list[1].mod_start, 0x108000);	/* page-aligned */
	assert_int_equal(list[1].mod_end, 0x108000);	/* empty */
	assert_int_equal(list[2].mod_start, 0x108000);
	assert_int_equal(gmem[0x108000], 0x42);
	assert_string_equal((char *)gmem + list[0].string, "initrd root=/dev/ram0");
	assert_string_equal((char *)gmem + list[1].string, "empty");
	assert_string_equal((char *)gmem + list[2].string, "b");
	assert_true(list[2].string + 2 <= MB1_MOD_STRINGS_GPA + MB1_MOD_STRINGS_MAX);
	for (int i = 0; i < 3; i++)
		assert_int_equal(list[i].reserved, 0);
	/* none: no flag, as before */
	assert_int_equal(prepare_copy(img_len, GMEM), 0);
	assert_int_equal(mb1_add_modules(&plan, mods, 0), 0);
	assert_int_equal(mb1_write_info(&plan, NULL, &ops, &st), 0);
	memcpy(&info, gmem + MB1_INFO_GPA, sizeof(info));
	assert_false(info.flags & MB1_INFO_MODS);
	assert_int_equal(info.mods_count, 0);
}

/* Too many, strings too long, or more than the RAM holds: refused with a
 * reason, and the plan keeps no modules. */
static void test_modules_refused(void **state)
{
	static char big[MB1_MOD_STRINGS_MAX + 8];
	static uint8_t a[16];
	struct mb1_mod_src mods[MB1_MAX_MODS + 1];

	(void)state;
	for (int i = 0; i <= MB1_MAX_MODS; i++)
		mods[i] = (struct mb1_mod_src){ a, sizeof(a), "m" };
	std_image();
	assert_int_equal(prepare_copy(img_len, GMEM), 0);
	assert_int_equal(mb1_add_modules(&plan, mods, MB1_MAX_MODS), 0);
	assert_int_equal(mb1_add_modules(&plan, mods, MB1_MAX_MODS + 1), -E2BIG);
	assert_int_equal(plan.nr_mods, 0);
	memset(big, 'x', sizeof(big) - 1);
	mods[0].string = big;
	assert_int_equal(mb1_add_modules(&plan, mods, 1), -E2BIG);
	assert_non_null(strstr(plan.errmsg, "strings"));
	mods[0].string = big + 9;			/* exactly the room left for one */
	assert_int_equal(mb1_add_modules(&plan, mods, 1), 0);
	mods[0] = (struct mb1_mod_src){ a, GMEM - 0x106000 + 1, "huge" };
	assert_int_equal(mb1_add_modules(&plan, mods, 1), -ERANGE);
	assert_non_null(strstr(plan.errmsg, "does not fit"));
	assert_int_equal(plan.nr_mods, 0);
	mods[0].len = GMEM - 0x106000;			/* to the last byte */
	assert_int_equal(mb1_add_modules(&plan, mods, 1), 0);
	mods[0].len = SIZE_MAX;
	assert_int_equal(mb1_add_modules(&plan, mods, 1), -ERANGE);
}

/* ---- the valid image ---- */

static void test_valid_plan_and_load(void **state)
{
	size_t i;

	(void)state;
	std_image();
	assert_int_equal(prepare_copy(img_len, GMEM), 0);
	assert_int_equal(plan.header_off, 0x1000);
	assert_false(plan.aout_kludge);
	assert_int_equal(plan.nr_segs, 2);
	assert_int_equal(plan.segs[0].gpa, 0x100000);
	assert_int_equal(plan.segs[0].offset, 0x1000);
	assert_int_equal(plan.segs[0].filesz, 0x2000);
	assert_true(plan.segs[0].exec);
	assert_int_equal(plan.segs[1].index, 1);
	assert_int_equal(plan.segs[1].memsz, 0x3000);
	assert_false(plan.segs[1].exec);
	assert_int_equal(plan.entry, 0x100010);

	assert_int_equal(mb1_load(&plan, &ops), 0);
	assert_memory_equal(gmem + 0x100000, img + 0x1000, 0x2000);
	assert_memory_equal(gmem + 0x103000, img + 0x3000, 0x800);
	for (i = 0x103800; i < 0x106000; i++)
		assert_int_equal(gmem[i], 0);
	assert_int_equal(gmem[0x106000], 0xaa);		/* past memsz: untouched */
	assert_int_equal(gmem[0xfffff], 0xaa);		/* below: untouched */
}

/* 6 GiB of guest RAM: 3 GiB below the hole, mem_upper up to it, and the
 * rest as a fourth map entry from 4 GiB (hv/lib/guest_layout.h). */
static void test_info_ram_above_4g(void **state)
{
	const uint64_t gib = 1ull << 30;
	struct mb1_entry_state st;
	struct mb1_mmap_entry m[4];
	struct mb1_info info;

	(void)state;
	std_image();
	assert_int_equal(prepare_copy(img_len, 6 * gib), 0);
	assert_int_equal(mb1_write_info(&plan, NULL, &ops, &st), 0);
	memcpy(&info, gmem + MB1_INFO_GPA, sizeof(info));
	assert_int_equal(info.mem_upper, (3 * gib - 0x100000) / 1024);
	assert_int_equal(info.mmap_length, 96);
	memcpy(m, gmem + MB1_MMAP_GPA, sizeof(m));
	assert_int_equal(m[2].addr, 0x100000);
	assert_int_equal(m[2].len, 3 * gib - 0x100000);
	assert_int_equal(m[3].size, 20);
	assert_int_equal(m[3].addr, 4 * gib);
	assert_int_equal(m[3].len, 3 * gib);
	assert_int_equal(m[3].type, 1);
	/* exactly 3 GiB: three entries, as before there was RAM above */
	assert_int_equal(prepare_copy(img_len, 3 * gib), 0);
	assert_int_equal(mb1_write_info(&plan, NULL, &ops, &st), 0);
	memcpy(&info, gmem + MB1_INFO_GPA, sizeof(info));
	assert_int_equal(info.mmap_length, 72);
}

static void test_info_and_entry_state(void **state)
{
	const char *cmd = "heartbeat=1 pattern=0x5a";
	struct mb1_entry_state st;
	struct mb1_mmap_entry m[3];
	struct mb1_info info;
	const struct mb1_seg_reg *segs[5];
	int i;

	(void)state;
	std_image();
	assert_int_equal(prepare_copy(img_len, GMEM), 0);
	assert_int_equal(mb1_write_info(&plan, cmd, &ops, &st), 0);

	memcpy(&info, gmem + MB1_INFO_GPA, sizeof(info));
	assert_int_equal(info.flags, MB1_INFO_MEMORY | MB1_INFO_CMDLINE |
			 MB1_INFO_MMAP | MB1_INFO_LOADER_NAME);
	assert_int_equal(info.flags, 0x245);
	assert_int_equal(info.mem_lower, 640);
	assert_int_equal(info.mem_upper, 3072);
	assert_int_equal(info.boot_device, 0);
	assert_int_equal(info.cmdline, 0xA000);
	assert_int_equal(info.mods_count, 0);
	assert_int_equal(info.mods_addr, 0);
	assert_int_equal(info.mmap_length, 72);
	assert_int_equal(info.mmap_addr, 0xB000);
	assert_int_equal(info.drives_length, 0);
	assert_int_equal(info.config_table, 0);
	assert_int_equal(info.boot_loader_name, 0x9800);
	assert_int_equal(info.apm_table, 0);
	assert_int_equal(info.vbe_mode, 0);
	assert_int_equal(info.framebuffer_addr, 0);
	/* Bytes at the spec's offsets, independently of the struct. */
	assert_int_equal(gmem[0x9000 + 16], 0x00);
	assert_int_equal(gmem[0x9000 + 17], 0xA0);
	assert_int_equal(gmem[0x9000 + 48 + 1], 0xB0);
	assert_int_equal(gmem[0x9000 + 64 + 1], 0x98);
	assert_int_equal(gmem[0x9000 + 116], 0xaa);	/* nothing past 116 bytes */

	assert_string_equal((char *)gmem + 0xA000, cmd);
	assert_string_equal((char *)gmem + 0x9800, "ferry");

	memcpy(m, gmem + MB1_MMAP_GPA, sizeof(m));
	for (i = 0; i < 3; i++)
		assert_int_equal(m[i].size, 20);
	assert_int_equal(m[0].addr, 0);
	assert_int_equal(m[0].len, 0xA0000);
	assert_int_equal(m[0].type, 1);
	assert_int_equal(m[1].addr, 0xA0000);
	assert_int_equal(m[1].len, 0x60000);
	assert_int_equal(m[1].type, 2);
	assert_int_equal(m[2].addr, 0x100000);
	assert_int_equal(m[2].len, GMEM - 0x100000);
	assert_int_equal(m[2].type, 1);

	assert_int_equal(st.eax, 0x2BADB002);
	assert_int_equal(st.ebx, 0x9000);
	assert_int_equal(st.eip, 0x100010);
	assert_int_equal(st.eflags, 0x2);
	assert_int_equal(st.cr0, 0x11);
	assert_int_equal(st.cs.selector, 0x08);
	assert_int_equal(st.cs.type, 0xb);
	segs[0] = &st.ds; segs[1] = &st.es; segs[2] = &st.fs; segs[3] = &st.gs; segs[4] = &st.ss;
	for (i = 0; i < 5; i++) {
		assert_int_equal(segs[i]->selector, 0x10);
		assert_int_equal(segs[i]->type, 0x3);
	}
	for (i = 0; i < 5; i++) {
		const struct mb1_seg_reg *r = i ? segs[i] : &st.cs;

		assert_int_equal(r->base, 0);
		assert_int_equal(r->limit, 0xffffffff);
		assert_true(r->s && r->present && r->db && r->g);
		assert_int_equal(r->dpl, 0);
	}
}

static void test_info_cmdline_limits(void **state)
{
	struct mb1_entry_state st;
	struct mb1_info info;
	char *longcmd = malloc(MB1_CMDLINE_MAX + 1);

	(void)state;
	std_image();
	assert_int_equal(prepare_copy(img_len, GMEM), 0);
	assert_int_equal(mb1_write_info(&plan, NULL, &ops, &st), 0);
	memcpy(&info, gmem + MB1_INFO_GPA, sizeof(info));
	assert_int_equal(info.flags, 0x241);
	assert_int_equal(info.cmdline, 0);
	assert_int_equal(gmem[0xA000], 0xaa);

	memset(longcmd, 'x', MB1_CMDLINE_MAX);
	longcmd[MB1_CMDLINE_MAX] = '\0';
	assert_int_equal(mb1_write_info(&plan, longcmd, &ops, &st), -E2BIG);
	assert_non_null(strstr(plan.errmsg, "command line"));
	longcmd[MB1_CMDLINE_MAX - 1] = '\0';		/* 4095 characters: fits */
	assert_int_equal(mb1_write_info(&plan, longcmd, &ops, &st), 0);
	assert_int_equal(strlen((char *)gmem + 0xA000), MB1_CMDLINE_MAX - 1);
	assert_int_equal(gmem[0xB000 - 1], 0);
	free(longcmd);

	/* Bigger guest: mem_upper follows. */
	assert_int_equal(prepare_copy(img_len, 64u << 20), 0);
	fail_copy_at = 0;
	assert_int_equal(mb1_write_info(&plan, "", &ops, &st), 0);
	memcpy(&info, gmem + MB1_INFO_GPA, sizeof(info));
	assert_int_equal(info.mem_upper, 63 * 1024);
	assert_int_equal(gmem[0xA000], 0);
}

static void test_higher_half_entry(void **state)
{
	(void)state;
	std_with(0, (struct seg_spec){ 1, 0x1000, 0xC0100000, 0x100000, 0x2000, 0x2000, 5 },
		 0xC0100010);
	assert_int_equal(prepare_copy(img_len, GMEM), 0);
	assert_int_equal(plan.entry, 0x100010);
	assert_int_equal(plan.segs[0].gpa, 0x100000);
}

static void test_callback_errors(void **state)
{
	struct mb1_entry_state st;

	(void)state;
	std_image();
	assert_int_equal(prepare_copy(img_len, GMEM), 0);
	fail_copy_at = 2;
	copy_ret = -EFAULT;
	assert_int_equal(mb1_load(&plan, &ops), -EFAULT);
	assert_string_equal(plan.errmsg, "copy at 0x103000 failed (-14)");
	copy_calls = 0;
	copy_ret = 1;					/* positive: becomes -EIO */
	assert_int_equal(mb1_load(&plan, &ops), -EIO);
	copy_calls = 0;
	fail_copy_at = 0;
	zero_ret = -ENOMEM;
	assert_int_equal(mb1_load(&plan, &ops), -ENOMEM);
	assert_string_equal(plan.errmsg, "zero at 0x103800 failed (-12)");
	zero_ret = 0;
	copy_calls = 0;
	fail_copy_at = 4;				/* the info structure itself */
	copy_ret = -EFAULT;
	assert_int_equal(mb1_write_info(&plan, "x", &ops, &st), -EFAULT);
	assert_non_null(strstr(plan.errmsg, "0x9000"));

	/* A failed plan cannot be executed. */
	put32(0x1008, 0);
	assert_int_equal(prepare_copy(img_len, GMEM), -EINVAL);
	assert_int_equal(mb1_load(&plan, &ops), -EINVAL);
	assert_int_equal(mb1_write_info(&plan, NULL, &ops, &st), -EINVAL);
}

/* ---- malformed ELF ---- */

static void test_elf_header_errors(void **state)
{
	(void)state;
	std_image(); img[4] = 2;	expect(-ENOEXEC, "ELF class 2, need ELFCLASS32");
	std_image(); img[5] = 2;	expect(-ENOEXEC, "need little-endian");
	std_image(); img[6] = 0;	expect(-ENOEXEC, "ELF version");
	std_image(); put32(20, 2);	expect(-ENOEXEC, "ELF version");
	std_image(); put16(16, 3);	expect(-ENOEXEC, "ELF type 3, need ET_EXEC");
	std_image(); put16(18, 62);	expect(-ENOEXEC, "ELF machine 62, need EM_386");
	std_image(); img[1] = 'X';	expect(-ENOEXEC, "not an ELF file");
	std_image(); put16(42, 56);	expect(-EINVAL, "e_phentsize 56, need 32");
	std_image(); put16(44, 0);	expect(-EINVAL, "e_phnum 0 out of range");
	std_image(); put16(44, 65);	expect(-EINVAL, "e_phnum 65 out of range");
	std_image(); put32(28, 0x3800 - 10);
	expect(-EINVAL, "program headers at 0x37f6 run past the end (14336)");
	std_image(); put32(28, 0xFFFFFFF0);
	expect(-EINVAL, "program headers at 0xfffffff0 run past the end");
	std_image(); put16(44, 3); put32(28, 0x3800 - 95);	/* one byte short */
	expect(-EINVAL, "run past the end");
}

static void test_truncated_header(void **state)
{
	size_t cut;
	int ret;

	(void)state;
	fill_pattern(48);
	memcpy(img, "\177ELF\1\1\1", 7);
	put_mb_header(20, 0);
	expect(-ENOEXEC, "truncated ELF header (48 bytes, need 52)");
	/* Every proper prefix of the valid image is refused. */
	std_image();
	for (cut = 0; cut < img_len; cut++) {
		ret = prepare_copy(cut, GMEM);
		assert_true(ret == -ENOEXEC || ret == -EINVAL);
	}
}

static void test_segment_errors(void **state)
{
	(void)state;
	std_with(1, (struct seg_spec){ 1, 0x3000, 0x103000, 0x103000, 0x800, 0x400, 6 }, 0x100010);
	expect(-EINVAL, "segment 1: filesz 0x800 > memsz 0x400");
	std_with(1, (struct seg_spec){ 1, 0x3000, 0x103000, 0x103000, 0x800, 0, 6 }, 0x100010);
	expect(-EINVAL, "segment 1: filesz 0x800 > memsz 0x0");
	std_with(1, (struct seg_spec){ 1, 0x3000, 0x3ff000, 0x3ff000, 0x800, 0x3000, 6 }, 0x100010);
	expect(-ERANGE, "segment 1: 0x3ff000+0x3000 past guest RAM (0x400000)");
	std_with(1, (struct seg_spec){ 1, 0x3000, 0x8000, 0x8000, 0x800, 0x800, 6 }, 0x100010);
	expect(-ERANGE, "segment 1: address 0x8000 below 1 MiB");
	std_with(1, (struct seg_spec){ 1, 0x3000, 0xFFFFF000, 0xFFFFF000, 0x800, 0x2000, 6 },
		 0x100010);
	expect(-ERANGE, "segment 1: 0xfffff000+0x2000 past guest RAM");
	std_with(1, (struct seg_spec){ 1, 0x3000, 0x101000, 0x101000, 0x800, 0x3000, 6 }, 0x100010);
	expect(-EINVAL, "segment 1 overlaps segment 0");
	std_with(1, (struct seg_spec){ 1, 0x3000, 0xF0000, 0xFF000, 0x800, 0x2000, 6 }, 0x100010);
	expect(-ERANGE, "below 1 MiB");
	std_with(1, (struct seg_spec){ 1, 0x3000, 0x100000, 0x100000, 0x800, 0x800, 6 }, 0x100010);
	expect(-EINVAL, "segment 1 overlaps segment 0");
	/* Touching is not overlapping. */
	std_with(1, (struct seg_spec){ 1, 0x3000, 0x102000, 0x102000, 0x800, 0x800, 6 }, 0x100010);
	assert_int_equal(prepare_copy(img_len, GMEM), 0);
	/* Ends exactly at the end of guest RAM. */
	std_with(1, (struct seg_spec){ 1, 0x3000, 0x3ff000, 0x3ff000, 0x800, 0x1000, 6 }, 0x100010);
	assert_int_equal(prepare_copy(img_len, GMEM), 0);
	/* An empty PT_LOAD is skipped. */
	std_with(2, (struct seg_spec){ 1, 0, 0, 0, 0, 0, 6 }, 0x100010);
	assert_int_equal(prepare_copy(img_len, GMEM), 0);
	assert_int_equal(plan.nr_segs, 2);
}

static void test_overflow_offsets(void **state)
{
	(void)state;
	std_with(1, (struct seg_spec){ 1, 0xFFFFFFF0, 0x103000, 0x103000, 0x20, 0x3000, 6 },
		 0x100010);
	expect(-EINVAL, "segment 1: file bytes 0xfffffff0+0x20 past the end (14336)");
	std_with(1, (struct seg_spec){ 1, 0x10, 0x103000, 0x103000, 0xFFFFFFFF, 0xFFFFFFFF, 6 },
		 0x100010);
	expect(-EINVAL, "segment 1: file bytes 0x10+0xffffffff past the end");
	std_with(1, (struct seg_spec){ 1, 0x3000, 0x103000, 0x103000, 0x801, 0x3000, 6 },
		 0x100010);
	expect(-EINVAL, "file bytes 0x3000+0x801 past the end");
	/* memsz that wraps 32-bit address space back into RAM. */
	std_with(1, (struct seg_spec){ 1, 0x3000, 0x200000, 0x200000, 0x800, 0xFFF00000, 6 },
		 0x100010);
	expect(-ERANGE, "past guest RAM");
	/* vaddr + filesz wraps: an entry at 0x10 is not inside. */
	std_with(0, (struct seg_spec){ 1, 0x1000, 0xFFFFF000, 0x100000, 0x2000, 0x2000, 5 }, 0x10);
	expect(-EINVAL, "entry point 0x10 not inside a loaded executable segment");
}

static void test_entry_errors(void **state)
{
	(void)state;
	std_with(2, (struct seg_spec){ PT_GNU_STACK, 0, 0, 0, 0, 0, 6 }, 0x200000);
	expect(-EINVAL, "entry point 0x200000 not inside");
	std_with(2, (struct seg_spec){ PT_GNU_STACK, 0, 0, 0, 0, 0, 6 }, 0x103010);
	expect(-EINVAL, "entry point 0x103010");		/* data, not executable */
	std_with(2, (struct seg_spec){ PT_GNU_STACK, 0, 0, 0, 0, 0, 6 }, 0x102000);
	expect(-EINVAL, "entry point 0x102000");		/* one past text */
	std_with(2, (struct seg_spec){ PT_GNU_STACK, 0, 0, 0, 0, 0, 6 }, 0x101fff);
	assert_int_equal(prepare_copy(img_len, GMEM), 0);
	/* In the bss part of an executable segment. */
	std_with(0, (struct seg_spec){ 1, 0x1000, 0x100000, 0x100000, 0x2000, 0x3000, 5 },
		 0x102010);
	expect(-EINVAL, "entry point 0x102010");
}

static void test_segment_counts(void **state)
{
	struct seg_spec s[17];
	int i;

	(void)state;
	for (i = 0; i < 17; i++)
		s[i] = (struct seg_spec){ 1, 0x1000 + i * 0x10, 0x100000 + i * 0x1000,
					  0x100000 + i * 0x1000, 0x10, 0x10, 5 };
	build_elf(s, 17, 0x100000, 0x3800);
	put_mb_header(0x1400, 0);
	expect(-E2BIG, "more than 16 loadable segments");
	build_elf(s, 16, 0x100000, 0x3800);
	put_mb_header(0x1400, 0);
	assert_int_equal(prepare_copy(img_len, GMEM), 0);
	assert_int_equal(plan.nr_segs, 16);

	s[0] = (struct seg_spec){ PT_GNU_STACK, 0, 0, 0, 0, 0, 6 };
	build_elf(s, 1, 0x100000, 0x3800);
	put_mb_header(0x1400, 0);
	expect(-EINVAL, "no loadable segments");

	std_image();
	assert_int_equal(prepare_copy(img_len, MB1_LOAD_MIN), -ERANGE);
	assert_non_null(strstr(plan.errmsg, "need more than 1 MiB"));
}

/* ---- the multiboot header ---- */

static void test_mb_header(void **state)
{
	(void)state;
	std_image(); put32(0x1008, 0x12345678);
	expect(-EINVAL, "multiboot header at 0x1000: bad checksum");
	std_image(); put32(0x1000, 0);
	expect(-ENOEXEC, "no multiboot header in the first 8192 bytes");

	/* A bad header before a good one: the good one is used (as GRUB does). */
	std_image(); put_mb_header(0x800, 0); put32(0x808, 1);
	assert_int_equal(prepare_copy(img_len, GMEM), 0);
	assert_int_equal(plan.header_off, 0x1000);

	/* Must end within 8 KiB and be 4-aligned. */
	std_image(); put32(0x1000, 0); put_mb_header(0x2000, 0);
	expect(-ENOEXEC, "no multiboot header");
	std_image(); put32(0x1000, 0); put_mb_header(0x1ff8, 0);
	expect(-ENOEXEC, "no multiboot header");
	std_image(); put32(0x1000, 0); put_mb_header(0x1002, 0);
	expect(-ENOEXEC, "no multiboot header");
	std_image(); put32(0x1000, 0); put_mb_header(0x1ff4, 0);
	assert_int_equal(prepare_copy(img_len, GMEM), 0);
	assert_int_equal(plan.header_off, 0x1ff4);
}

static void test_mb_flags(void **state)
{
	(void)state;
	std_image(); put_mb_header(0x1000, MB1_HF_VIDEO | MB1_HF_MEMINFO);
	expect(-ENOTSUP, "multiboot flags 0x6: required bits 0x4 not supported");
	std_image(); put_mb_header(0x1000, 1u << 15);
	expect(-ENOTSUP, "required bits 0x8000");
	std_image(); put_mb_header(0x1000, (1u << 17) | (1u << 31) | 3);
	assert_int_equal(prepare_copy(img_len, GMEM), 0);	/* optional bits ignored */
	assert_int_equal(plan.header_flags, (1u << 17) | (1u << 31) | 3);
}

/* ---- a.out kludge ---- */

static void aout_image(uint32_t header_addr, uint32_t load, uint32_t load_end,
		       uint32_t bss_end, uint32_t entry)
{
	fill_pattern(0x2000);
	put_mb_header(0x40, MB1_HF_AOUT_KLUDGE | MB1_HF_MEMINFO);
	put32(0x4c, header_addr);
	put32(0x50, load);
	put32(0x54, load_end);
	put32(0x58, bss_end);
	put32(0x5c, entry);
}

static void test_aout_kludge(void **state)
{
	size_t i;

	(void)state;
	aout_image(0x100040, 0x100000, 0, 0x103000, 0x100080);
	assert_int_equal(prepare_copy(img_len, GMEM), 0);
	assert_true(plan.aout_kludge);
	assert_int_equal(plan.nr_segs, 1);
	assert_int_equal(plan.segs[0].gpa, 0x100000);
	assert_int_equal(plan.segs[0].offset, 0);
	assert_int_equal(plan.segs[0].filesz, 0x2000);
	assert_int_equal(plan.segs[0].memsz, 0x3000);
	assert_int_equal(plan.entry, 0x100080);
	assert_int_equal(mb1_load(&plan, &ops), 0);
	assert_memory_equal(gmem + 0x100000, img, 0x2000);
	for (i = 0x102000; i < 0x103000; i++)
		assert_int_equal(gmem[i], 0);
	assert_int_equal(gmem[0x103000], 0xaa);

	/* Load from file offset 0x20, 0xfe0 bytes, no bss. */
	aout_image(0x100040, 0x100020, 0x101000, 0, 0x100020);
	assert_int_equal(prepare_copy(img_len, GMEM), 0);
	assert_int_equal(plan.segs[0].offset, 0x20);
	assert_int_equal(plan.segs[0].filesz, 0xfe0);
	assert_int_equal(plan.segs[0].memsz, 0xfe0);

	/* An ELF file with flag 16: the address fields win. */
	std_image();
	put_mb_header(0x1000, MB1_HF_AOUT_KLUDGE);
	put32(0x100c, 0x200000);
	put32(0x1010, 0x200000 - 0x1000);
	put32(0x1014, 0);
	put32(0x1018, 0);
	put32(0x101c, 0x200000);
	assert_int_equal(prepare_copy(img_len, GMEM), 0);
	assert_int_equal(plan.nr_segs, 1);
	assert_int_equal(plan.segs[0].gpa, 0x1ff000);
	assert_int_equal(plan.segs[0].filesz, 0x3800);
}

static void test_aout_errors(void **state)
{
	(void)state;
	aout_image(0x100040, 0x100050, 0, 0, 0x100080);
	expect(-EINVAL, "load_addr 0x100050, header_addr 0x100040 do not fit header offset 0x40");
	aout_image(0x100040, 0xF0000, 0, 0, 0x100080);
	expect(-EINVAL, "do not fit header offset");
	aout_image(0x100040, 0x100000, 0xFFFFF, 0, 0x100080);
	expect(-EINVAL, "load_end_addr 0xfffff below load_addr");
	aout_image(0x100040, 0x100000, 0x102001, 0, 0x100080);
	expect(-EINVAL, "segment 0: file bytes 0x0+0x2001 past the end (8192)");
	aout_image(0x100040, 0x100000, 0, 0x101fff, 0x100080);
	expect(-EINVAL, "bss_end_addr 0x101fff below the loaded end");
	aout_image(0x100040, 0x100000, 0, 0, 0x102000);
	expect(-EINVAL, "entry point 0x102000");
	aout_image(0x8040, 0x8000, 0, 0, 0x8080);
	expect(-ERANGE, "address 0x8000 below 1 MiB");
	aout_image(0x100040, 0x100000, 0x100000, 0, 0x100000);
	expect(-EINVAL, "nothing to load");
	aout_image(0x3ff040, 0x3ff000, 0, 0, 0x3ff080);
	expect(-ERANGE, "past guest RAM");
	/* The address fields must be in the file and within 8 KiB. */
	aout_image(0x100040, 0x100000, 0, 0, 0x100080);
	img_len = 0x50;
	expect(-EINVAL, "multiboot header at 0x40: address fields cut off");
	fill_pattern(0x2100);
	put_mb_header(0x1ff0, MB1_HF_AOUT_KLUDGE);
	expect(-EINVAL, "multiboot header at 0x1ff0: address fields cut off");
}

/* ---- fuzz ---- */

static uint64_t rng = 0x243f6a8885a308d3ull;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 17);
}

static void check_plan(size_t len)
{
	uint32_t i, j;
	bool entry_ok = false;

	assert_true(plan.nr_segs >= 1 && plan.nr_segs <= MB1_MAX_SEGS);
	for (i = 0; i < plan.nr_segs; i++) {
		const struct mb1_segment *s = &plan.segs[i];

		assert_true(s->offset + s->filesz <= len);
		assert_true(s->filesz <= s->memsz);
		assert_true(s->gpa >= MB1_LOAD_MIN && s->gpa + s->memsz <= GMEM);
		for (j = 0; j < i; j++)
			assert_true(s->gpa >= plan.segs[j].gpa + plan.segs[j].memsz ||
				    plan.segs[j].gpa >= s->gpa + s->memsz);
		entry_ok |= s->exec && plan.entry >= s->gpa && plan.entry < s->gpa + s->filesz;
	}
	assert_true(entry_ok);
}

/* Returns whether the mutated image was accepted (and then loaded). */
static bool fuzz_one(uint8_t *base, size_t len)
{
	size_t n, pos;
	int ret;

	memcpy(img, base, len);
	for (n = 1 + rnd() % 4; n > 0; n--) {
		pos = rnd() % 3 ? rnd() % 0x120 : rnd() % len;	/* mostly headers */
		if (rnd() % 4 == 0 && pos + 4 <= len)
			put32(pos, rnd() % 2 ? rnd() : 0xFFFFFFFF - rnd() % 64);
		else
			img[pos] = (uint8_t)rnd();
	}
	if (rnd() % 8 == 0)
		len = rnd() % len;
	ret = prepare_copy(len, GMEM);
	if (ret) {
		assert_true(ret < 0 && plan.errmsg[0]);
		return false;
	}
	check_plan(len);
	assert_int_equal(mb1_load(&plan, &ops), 0);	/* callbacks assert bounds */
	return true;
}

static void test_fuzz(void **state)
{
	static uint8_t elf[IMG_MAX], aout[IMG_MAX];
	size_t elf_len, aout_len;
	int i, ok = 0;

	(void)state;
	std_image();
	memcpy(elf, img, IMG_MAX);
	elf_len = img_len;
	aout_image(0x100040, 0x100000, 0, 0x103000, 0x100080);
	memcpy(aout, img, IMG_MAX);
	aout_len = img_len;
	for (i = 0; i < 20000; i++)
		ok += fuzz_one(i % 2 ? elf : aout, i % 2 ? elf_len : aout_len);
	print_message("fuzz: %d of 20000 mutated images accepted and loaded\n", ok);
	assert_true(ok > 1000);		/* the accepting path is exercised too */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_valid_plan_and_load, setup, teardown),
		cmocka_unit_test_setup_teardown(test_modules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_modules_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_info_and_entry_state, setup, teardown),
		cmocka_unit_test_setup_teardown(test_info_ram_above_4g, setup, teardown),
		cmocka_unit_test_setup_teardown(test_info_cmdline_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_higher_half_entry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_callback_errors, setup, teardown),
		cmocka_unit_test(test_elf_header_errors),
		cmocka_unit_test(test_truncated_header),
		cmocka_unit_test(test_segment_errors),
		cmocka_unit_test(test_overflow_offsets),
		cmocka_unit_test(test_entry_errors),
		cmocka_unit_test(test_segment_counts),
		cmocka_unit_test(test_mb_header),
		cmocka_unit_test(test_mb_flags),
		cmocka_unit_test_setup_teardown(test_aout_kludge, setup, teardown),
		cmocka_unit_test(test_aout_errors),
		cmocka_unit_test_setup_teardown(test_fuzz, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
