/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hv/loader/pvh.c against a synthetic ELF64 kernel with a PVH entry note
 * and corrupted copies of it (and the vmlinux tools/fetch-linux.sh makes
 * from Debian's kernel, when build/linux holds one): where everything
 * goes, what the start info, module list, memory map and GDT say, the
 * 32-bit entry state, and a clear refusal of every broken file.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hv/lib/bytes.h"
#include "hv/loader/e820.h"
#include "hv/loader/loader.h"
#include "hv/loader/pvh.h"
#include "tests/unit/loader_fake.h"

#define IMG_LEN		0x4000
#define TEXT_OFF	0x1000		/* file offsets */
#define TEXT_LEN	0x2000
#define DATA_OFF	0x3000
#define DATA_FILE	0x800
#define DATA_MEM	0x5000
#define NOTE_OFF	0x1100		/* inside the text, as Linux has it */
#define TEXT_GPA	0x1000000ull
#define DATA_GPA	0x1200000ull
#define ENTRY		(TEXT_GPA + 0x10)
#define PH(i)		(64 + 56 * (i))
#define XEN_NOTE	(NOTE_OFF + 36)	/* after the GNU build id's note */

static void phdr(uint8_t *b, int i, uint32_t type, uint32_t flags, uint64_t off, uint64_t gpa,
		 uint64_t filesz, uint64_t memsz)
{
	uint8_t *p = b + PH(i);

	put_le32(p, type);
	put_le32(p + 4, flags);
	put_le64(p + 8, off);
	put_le64(p + 16, 0xffffffff80000000ull + gpa);	/* the kernel's virtual view */
	put_le64(p + 24, gpa);
	put_le64(p + 32, filesz);
	put_le64(p + 40, memsz);
	put_le64(p + 48, 0x200000);
}

/* A note: namesz, descsz, type, name (padded to 4), desc (padded to 4). */
static size_t note(uint8_t *p, const char *name, uint32_t type, const void *desc, uint32_t len)
{
	uint32_t nl = (uint32_t)strlen(name) + 1;

	put_le32(p, nl);
	put_le32(p + 4, len);
	put_le32(p + 8, type);
	memcpy(p + 12, name, nl);
	memcpy(p + 12 + ((nl + 3) & ~3u), desc, len);
	return 12 + ((nl + 3) & ~3u) + ((len + 3) & ~3u);
}

/* As Linux 6.1's vmlinux is laid out, small: text with the notes in it,
 * data with a .bss after its file bytes, a PT_NOTE: a GNU build id, then
 * Xen's PHYS32_ENTRY (8 bytes, as _ASM_PTR gives it on x86-64). */
static uint8_t *make_elf(void)
{
	uint8_t *b = calloc(1, IMG_LEN), id[20], entry[8];
	size_t n;

	memcpy(b, "\177ELF\2\1\1", 7);
	put_le16(b + 16, 2);			/* ET_EXEC */
	put_le16(b + 18, 62);			/* EM_X86_64 */
	put_le32(b + 20, 1);
	put_le64(b + 24, TEXT_GPA);		/* e_entry: startup_64, not PVH's */
	put_le64(b + 32, 64);			/* e_phoff */
	put_le16(b + 52, 64);
	put_le16(b + 54, 56);
	put_le16(b + 56, 3);
	for (size_t i = TEXT_OFF; i < IMG_LEN; i++)
		b[i] = (uint8_t)(i * 13 + 1);
	memset(id, 0x5a, sizeof(id));
	put_le64(entry, ENTRY);
	n = note(b + NOTE_OFF, "GNU", 3, id, sizeof(id));
	n += note(b + NOTE_OFF + n, "Xen", PVH_ELFNOTE_PHYS32_ENTRY, entry, 8);
	phdr(b, 0, 1, 5, TEXT_OFF, TEXT_GPA, TEXT_LEN, TEXT_LEN);
	phdr(b, 1, 1, 6, DATA_OFF, DATA_GPA, DATA_FILE, DATA_MEM);
	phdr(b, 2, 4, 4, NOTE_OFF, TEXT_GPA + NOTE_OFF - TEXT_OFF, n, n);
	return b;
}

static void test_load_writes_everything(void **state)
{
	uint8_t *img = make_elf(), initrd[5000];
	struct e820_entry map[E820_MAX_ENTRIES];
	int n = e820_build(GMEM, map);
	const char *cl = "console=ttyS0 quiet";
	struct pvh_plan p;
	struct cpu_state st;
	uint8_t *si = gmem + PVH_START_INFO_GPA, *mod = gmem + PVH_MODLIST_GPA;

	(void)state;
	memset(initrd, 0x3c, sizeof(initrd));
	assert_int_equal(pvh_prepare(img, IMG_LEN, GMEM, sizeof(initrd), strlen(cl), &p), 0);
	assert_int_equal(p.nr_segs, 2);
	assert_int_equal(p.entry, ENTRY);
	assert_int_equal(p.kernel_end, DATA_GPA + DATA_MEM);
	assert_int_equal(p.initrd_gpa, (GMEM - sizeof(initrd)) & ~0xfffull);
	assert_int_equal(pvh_load(&p, &ops, initrd, cl, map, (unsigned)n, &st), 0);
	/* segments at p_paddr, the .bss zeroed, nothing after it touched */
	assert_memory_equal(gmem + TEXT_GPA, img + TEXT_OFF, TEXT_LEN);
	assert_memory_equal(gmem + DATA_GPA, img + DATA_OFF, DATA_FILE);
	for (uint64_t a = DATA_GPA + DATA_FILE; a < DATA_GPA + DATA_MEM; a++)
		assert_int_equal(gmem[a], 0);
	assert_int_equal(gmem[DATA_GPA + DATA_MEM], 0xaa);
	assert_memory_equal(gmem + p.initrd_gpa, initrd, sizeof(initrd));
	assert_string_equal((char *)gmem + PVH_CMDLINE_GPA, cl);
	/* struct hvm_start_info, version 1 */
	assert_int_equal(get_le32(si), 0x336ec578);
	assert_int_equal(get_le32(si + 4), 1);
	assert_int_equal(get_le32(si + 8), 0);			/* flags */
	assert_int_equal(get_le32(si + 12), 1);			/* nr_modules */
	assert_int_equal(get_le64(si + 16), PVH_MODLIST_GPA);
	assert_int_equal(get_le64(si + 24), PVH_CMDLINE_GPA);
	assert_int_equal(get_le64(si + 32), 0);			/* rsdp: none */
	assert_int_equal(get_le64(si + 40), PVH_MEMMAP_GPA);
	assert_int_equal(get_le32(si + 48), (uint32_t)n);
	assert_int_equal(get_le64(mod), p.initrd_gpa);
	assert_int_equal(get_le64(mod + 8), sizeof(initrd));
	assert_int_equal(get_le64(mod + 16), 0);		/* no module string */
	for (int i = 0; i < n; i++) {
		const uint8_t *e = gmem + PVH_MEMMAP_GPA + 24 * i;

		assert_int_equal(get_le64(e), map[i].addr);
		assert_int_equal(get_le64(e + 8), map[i].size);
		assert_int_equal(get_le32(e + 16), map[i].type);
		assert_int_equal(get_le32(e + 20), 0);
	}
	/* the 32-bit entry of pvh.pandoc, its GDT matching the segments */
	assert_int_equal(st.rip, ENTRY);
	assert_int_equal(st.gpr[GPR_RBX], PVH_START_INFO_GPA);
	assert_int_equal(st.cr0, 0x11);
	assert_int_equal(st.cr4, 0);
	assert_int_equal(st.efer, 0);
	assert_int_equal(st.rflags, 2);
	assert_int_equal(st.cs.attr, 0x9b | SEG_ATTR_DB | SEG_ATTR_G);
	assert_int_equal(st.cs.limit, 0xffffffff);
	assert_int_equal(st.ss.attr, 0x93 | SEG_ATTR_DB | SEG_ATTR_G);
	assert_int_equal(st.tr.attr, 0x8b);
	assert_int_equal(st.gdtr.base, PVH_GDT_GPA);
	assert_int_equal(get_le64(gmem + PVH_GDT_GPA + st.cs.sel), 0x00cf9b000000ffffull);
	assert_int_equal(get_le64(gmem + PVH_GDT_GPA + st.ss.sel), 0x00cf93000000ffffull);
	assert_int_equal(get_le64(gmem + PVH_GDT_GPA + st.tr.sel), 0x00008b0000000067ull);
	assert_true(st.gdtr.limit >= st.tr.sel + 7);
	free(img);
}

/* img prepared for GMEM with no initrd and no command line (which must
 * pass), then loaded: pvh_load's return. */
static int load_plain(const uint8_t *img, struct pvh_plan *p)
{
	struct e820_entry map[E820_MAX_ENTRIES];
	int n = e820_build(GMEM, map);
	struct cpu_state st;

	assert_int_equal(pvh_prepare(img, IMG_LEN, GMEM, 0, 0, p), 0);
	return pvh_load(p, &ops, NULL, "", map, (unsigned)n, &st);
}

static void test_no_initrd_no_modules(void **state)
{
	uint8_t *img = make_elf();
	struct pvh_plan p;

	(void)state;
	assert_int_equal(load_plain(img, &p), 0);
	assert_int_equal(get_le32(gmem + PVH_START_INFO_GPA + 12), 0);
	assert_int_equal(get_le64(gmem + PVH_START_INFO_GPA + 16), 0);
	assert_int_equal(gmem[PVH_CMDLINE_GPA], 0);
	free(img);
}

/* One corruption of a fresh image, and the refusal it must get. */
static void refused(void (*spoil)(uint8_t *b), size_t len, uint64_t mem, int err,
		    const char *words)
{
	uint8_t *img = make_elf();
	struct pvh_plan p;

	if (spoil)
		spoil(img);
	assert_int_equal(pvh_prepare(img, len, mem, 0, 0, &p), err);
	if (!strstr(p.errmsg, words))
		fail_msg("'%s' lacks '%s'", p.errmsg, words);
	free(img);
}

static void elf32(uint8_t *b) { b[4] = 1; }
static void arm64(uint8_t *b) { put_le16(b + 18, 183); }
static void no_note(uint8_t *b) { put_le32(b + PH(2), 6); }	/* PT_PHDR */
static void other_note(uint8_t *b) { put_le32(b + XEN_NOTE + 8, 17); }
static void note_desc_2(uint8_t *b) { put_le32(b + XEN_NOTE + 4, 2); }
static void note_past(uint8_t *b) { put_le64(b + PH(2) + 32, 30); }
static void note_off_file(uint8_t *b) { put_le64(b + PH(2) + 8, IMG_LEN - 8); }
static void entry_in_data(uint8_t *b) { put_le64(b + XEN_NOTE + 16, DATA_GPA); }
static void entry_past_text(uint8_t *b) { put_le64(b + XEN_NOTE + 16, TEXT_GPA + TEXT_LEN); }
static void filesz_big(uint8_t *b) { put_le64(b + PH(1) + 32, DATA_MEM + 1); }
static void memsz_0(uint8_t *b) { put_le64(b + PH(1) + 40, 0); }
static void past_file(uint8_t *b) { put_le64(b + PH(1) + 8, IMG_LEN - 0x100); }
static void huge_off(uint8_t *b) { put_le64(b + PH(1) + 8, ~0ull - 4); }
static void low(uint8_t *b) { put_le64(b + PH(1) + 24, 0xff000); }
static void wraps(uint8_t *b) { put_le64(b + PH(1) + 24, ~0ull - 0x1000); }
static void overlap(uint8_t *b) { put_le64(b + PH(1) + 24, TEXT_GPA + 0x1000); }
static void phentsize(uint8_t *b) { put_le16(b + 54, 32); }
static void phoff_out(uint8_t *b) { put_le64(b + 32, IMG_LEN - 100); }
static void no_load(uint8_t *b) { put_le32(b + PH(0), 6); put_le32(b + PH(1), 6); }

static void test_broken_files_refused(void **state)
{
	(void)state;
	refused(elf32, IMG_LEN, GMEM, -ENOEXEC, "ELF64 x86-64");
	refused(arm64, IMG_LEN, GMEM, -ENOEXEC, "ELF64 x86-64");
	refused(NULL, 40, GMEM, -ENOEXEC, "ELF64");
	refused(no_note, IMG_LEN, GMEM, -ENOTSUP, "CONFIG_PVH");
	refused(other_note, IMG_LEN, GMEM, -ENOTSUP, "no PVH entry note");
	refused(note_desc_2, IMG_LEN, GMEM, -EINVAL, "wrong size");
	refused(note_past, IMG_LEN, GMEM, -EINVAL, "note runs past");
	refused(note_off_file, IMG_LEN, GMEM, -EINVAL, "note runs past");
	refused(entry_in_data, IMG_LEN, GMEM, -EINVAL, "not in the loaded code");
	refused(entry_past_text, IMG_LEN, GMEM, -EINVAL, "not in the loaded code");
	refused(filesz_big, IMG_LEN, GMEM, -EINVAL, "segment 1: ");
	refused(memsz_0, IMG_LEN, GMEM, -EINVAL, "segment 1: 2048 bytes in the file, 0 in");
	refused(past_file, IMG_LEN, GMEM, -EINVAL, "past the end of the file");
	refused(huge_off, IMG_LEN, GMEM, -EINVAL, "past the end of the file");
	refused(low, IMG_LEN, GMEM, -ERANGE, "outside the guest's RAM");
	refused(wraps, IMG_LEN, GMEM, -ERANGE, "outside the guest's RAM");
	refused(NULL, IMG_LEN, 18 * MIB, -ERANGE, "segment 1 at 0x1200000-0x1205000");
	refused(overlap, IMG_LEN, GMEM, -EINVAL, "overlaps");
	refused(phentsize, IMG_LEN, GMEM, -EINVAL, "no program headers");
	refused(phoff_out, IMG_LEN, GMEM, -EINVAL, "no program headers");
	refused(no_load, IMG_LEN, GMEM, -EINVAL, "no loadable segment");
	/* every file cut before its last segment's end: refused, never read
	 * past its end (ASan) */
	for (size_t len = 0; len < DATA_OFF + DATA_FILE; len += 7) {
		uint8_t *img = make_elf(), *cut = malloc(len ? len : 1);
		struct pvh_plan p;

		memcpy(cut, img, len);
		assert_true(pvh_prepare(cut, len, GMEM, 0, 0, &p) < 0);
		assert_true(p.errmsg[0]);
		free(cut);
		free(img);
	}
}

static void test_sizes_refused(void **state)
{
	uint8_t *img = make_elf();
	struct pvh_plan p;

	(void)state;
	assert_int_equal(pvh_prepare(img, IMG_LEN, GMEM, 0, PVH_CMDLINE_MAX - 1, &p), 0);
	assert_int_equal(pvh_prepare(img, IMG_LEN, GMEM, 0, PVH_CMDLINE_MAX, &p), -E2BIG);
	assert_non_null(strstr(p.errmsg, "command line"));
	/* the initrd fits exactly above the kernel, or not at all */
	assert_int_equal(pvh_prepare(img, IMG_LEN, GMEM, GMEM - DATA_GPA - DATA_MEM, 0, &p), 0);
	assert_int_equal(p.initrd_gpa, DATA_GPA + DATA_MEM);
	assert_int_equal(pvh_prepare(img, IMG_LEN, GMEM, GMEM - DATA_GPA - DATA_MEM + 1, 0, &p),
			 -E2BIG);
	assert_non_null(strstr(p.errmsg, "initrd"));
	free(img);
}

static void test_too_many_segments(void **state)
{
	size_t len = 0x2000;
	uint8_t *b = calloc(1, len), entry[8];
	struct pvh_plan p;

	(void)state;
	memcpy(b, "\177ELF\2\1\1", 7);
	put_le16(b + 16, 2);
	put_le16(b + 18, 62);
	put_le64(b + 32, 64);
	put_le16(b + 54, 56);
	put_le16(b + 56, PVH_MAX_SEGS + 2);
	put_le64(entry, TEXT_GPA);
	size_t n = note(b + 0x1800, "Xen", PVH_ELFNOTE_PHYS32_ENTRY, entry, 8);
	phdr(b, 0, 4, 4, 0x1800, 0, n, n);
	for (int i = 1; i <= PVH_MAX_SEGS; i++)
		phdr(b, i, 1, 5, 0x1000, TEXT_GPA + 0x1000 * (uint64_t)(i - 1), 0x10, 0x10);
	assert_int_equal(pvh_prepare(b, len, GMEM, 0, 0, &p), 0);	/* 16: fine */
	phdr(b, PVH_MAX_SEGS + 1, 1, 5, 0x1000, TEXT_GPA + 0x100000, 0x10, 0x10);
	assert_int_equal(pvh_prepare(b, len, GMEM, 0, 0, &p), -E2BIG);
	assert_non_null(strstr(p.errmsg, "more than 16"));
	free(b);
}

static void test_load_passes_write_errors(void **state)
{
	uint8_t *img = make_elf();
	struct pvh_plan p;

	(void)state;
	copy_ret = -EFAULT;		/* pvh_prepare writes nothing */
	assert_int_equal(load_plain(img, &p), -EFAULT);
	assert_non_null(strstr(p.errmsg, "segment at 0x1000000"));
	free(img);
}

static void test_probe(void **state)
{
	uint8_t *img = make_elf();
	const char *why;

	(void)state;
	assert_true(pvh_has_entry(img, IMG_LEN));
	assert_int_equal(loader_probe(img, IMG_LEN, &why), LOADER_PVH);
	no_note(img);
	assert_false(pvh_has_entry(img, IMG_LEN));
	assert_int_equal(loader_probe(img, IMG_LEN, &why), LOADER_UNKNOWN);
	assert_non_null(strstr(why, "no PVH entry note"));
	free(img);
}

/* The vmlinux tools/fetch-linux.sh made from Debian's kernel, if there. */
static void test_real_vmlinux(void **state)
{
	FILE *f = fopen("build/linux/vmlinux", "rb");
	struct pvh_plan p;
	size_t len;

	(void)state;
	if (!f)
		skip();
	uint8_t *img = read_whole(f, &len);
	assert_int_equal(loader_probe(img, (size_t)len, &(const char *){ NULL }), LOADER_PVH);
	assert_int_equal(pvh_prepare(img, (size_t)len, 128 * MIB, 2 * MIB, 64, &p), 0);
	assert_int_equal(p.segs[0].gpa, 0x1000000);	/* LOAD_PHYSICAL_ADDR */
	assert_true(p.entry > 0x1000000 && p.entry < 0x2000000);
	assert_true(p.initrd_gpa >= p.kernel_end);
	free(img);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_load_writes_everything, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_initrd_no_modules, setup, teardown),
		cmocka_unit_test(test_broken_files_refused),
		cmocka_unit_test(test_sizes_refused),
		cmocka_unit_test(test_too_many_segments),
		cmocka_unit_test_setup_teardown(test_load_passes_write_errors, setup, teardown),
		cmocka_unit_test(test_probe),
		cmocka_unit_test(test_real_vmlinux),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
