/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The Linux boot pieces of hv/loader: the bzImage loader against a
 * synthetic image with a correct header and corrupted copies of it (and
 * Debian's real vmlinuz when build/bench/linux holds one), the e820 map,
 * the MP table (checksums, every entry parsed back) and loader_probe.
 */
#include <dirent.h>
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
#include "hv/loader/bzimage.h"
#include "hv/loader/e820.h"
#include "hv/loader/loader.h"
#include "hv/loader/mptable.h"
#include "tests/unit/loader_fake.h"

#define SETUP_SECTS	4
#define KERNEL_LEN	(300 * 1024)
#define IMAGE_LEN	((SETUP_SECTS + 1) * 512 + KERNEL_LEN)

/* A bzImage as a 6.1 kernel's header has it: protocol 2.15, 64-bit entry,
 * relocatable, 2 MiB alignment, preferred at 16 MiB. */
static uint8_t *make_image(void)
{
	uint8_t *b = calloc(1, IMAGE_LEN);

	b[0x1f1] = SETUP_SECTS;
	put_le32(b + 0x1f4, KERNEL_LEN / 16);	/* syssize */
	put_le16(b + 0x1fe, 0xaa55);
	b[0x200] = 0xeb;
	b[0x201] = 0x6a;			/* header ends at 0x26c */
	memcpy(b + 0x202, "HdrS", 4);
	put_le16(b + 0x206, 0x020f);
	b[0x211] = 1;				/* LOADED_HIGH */
	put_le32(b + 0x22c, 0x7fffffff);	/* initrd_addr_max */
	put_le32(b + 0x230, 0x200000);		/* kernel_alignment */
	b[0x234] = 1;				/* relocatable */
	put_le16(b + 0x236, BZ_XLF_KERNEL_64 | BZ_XLF_CAN_BE_LOADED_ABOVE_4G);
	put_le32(b + 0x238, 2047);		/* cmdline_size */
	put_le64(b + 0x258, 0x1000000);		/* pref_address */
	put_le32(b + 0x260, 4 * MIB);		/* init_size */
	for (size_t i = (SETUP_SECTS + 1) * 512; i < IMAGE_LEN; i++)
		b[i] = (uint8_t)(i * 7);
	return b;
}

static void test_prepare_places_kernel_and_initrd(void **state)
{
	uint8_t *img = make_image();
	struct bz_plan p;

	(void)state;
	assert_int_equal(bz_prepare(img, IMAGE_LEN, GMEM, 1 * MIB, 20, &p), 0);
	assert_int_equal(p.version, 0x020f);
	assert_int_equal(p.kernel_off, (SETUP_SECTS + 1) * 512);
	assert_int_equal(p.kernel_len, KERNEL_LEN);
	assert_int_equal(p.kernel_gpa, 0x1000000);	/* preferred address fits */
	assert_int_equal(p.initrd_gpa, GMEM - MIB);	/* as high as RAM allows */
	/* RAM too small for 16 MiB + init_size: refused, even relocatable (a
	 * 64-bit kernel loaded lower still decompresses at 16 MiB) */
	assert_int_equal(bz_prepare(img, IMAGE_LEN, 18 * MIB, 0, 0, &p), -E2BIG);
	assert_non_null(strstr(p.errmsg, "runs at 16 MiB"));
	/* a preferred address off the alignment: aligned up if relocatable */
	put_le64(img + 0x258, 0x1100000);
	assert_int_equal(bz_prepare(img, IMAGE_LEN, GMEM, 0, 0, &p), 0);
	assert_int_equal(p.kernel_gpa, 0x1200000);
	img[0x234] = 0;
	assert_int_equal(bz_prepare(img, IMAGE_LEN, GMEM, 0, 0, &p), -EINVAL);
	img[0x234] = 1;
	put_le64(img + 0x258, 0x1000000);
	/* initrd_addr_max caps the initrd unless it may go above 4 GiB */
	put_le16(img + 0x236, BZ_XLF_KERNEL_64);
	put_le32(img + 0x22c, 32 * MIB - 1);
	assert_int_equal(bz_prepare(img, IMAGE_LEN, GMEM, MIB, 0, &p), 0);
	assert_int_equal(p.initrd_gpa, 31 * MIB);
	free(img);
}

static void test_load_writes_zero_page_and_entry(void **state)
{
	uint8_t *img = make_image();
	uint8_t initrd[5000];
	struct e820_entry map[E820_MAX_ENTRIES];
	struct cpu_state st;
	struct bz_plan p;
	const char *cl = "console=ttyS0 quiet";
	int n = e820_build(GMEM, map);
	uint8_t *zp = gmem + BZ_ZERO_PAGE_GPA;

	(void)state;
	memset(initrd, 0x5c, sizeof(initrd));
	assert_int_equal(bz_prepare(img, IMAGE_LEN, GMEM, sizeof(initrd), strlen(cl), &p), 0);
	assert_int_equal(bz_load(&p, &ops, initrd, cl, map, (unsigned)n, &st), 0);
	/* the kernel, the initrd, the command line */
	assert_memory_equal(gmem + p.kernel_gpa, img + p.kernel_off, KERNEL_LEN);
	assert_memory_equal(gmem + p.initrd_gpa, initrd, sizeof(initrd));
	assert_string_equal((char *)gmem + BZ_CMDLINE_GPA, cl);
	/* the zero page: our header copy and answers */
	assert_memory_equal(zp + 0x202, "HdrS", 4);
	assert_int_equal(zp[0x210], 0xff);
	assert_int_equal(get_le32(zp + 0x228), BZ_CMDLINE_GPA);
	assert_int_equal(get_le32(zp + 0x218), p.initrd_gpa);
	assert_int_equal(get_le32(zp + 0x21c), sizeof(initrd));
	assert_int_equal(zp[0x26c], 0);			/* past the header: zero */
	assert_int_equal(zp[0x1e8], n);
	assert_int_equal(get_le64(zp + 0x2d0), 0);
	assert_int_equal(get_le64(zp + 0x2d0 + 8), E820_LOW_RAM_END);
	assert_int_equal(get_le32(zp + 0x2d0 + 16), E820_RAM);
	assert_int_equal(get_le64(zp + 0x2d0 + 40), E820_HIGH_RAM);
	/* identity map: 2 MiB pages, and 3 GiB + 2 MiB maps to itself */
	assert_int_equal(get_le64(gmem + BZ_PML4_GPA) & ~0xfffull, BZ_PDPT_GPA);
	assert_int_equal(get_le64(gmem + BZ_PD_GPA + 3 * 4096 + 8), 0xc0200083ull);
	/* GDT: 64-bit code at 0x10 */
	assert_int_equal(get_le64(gmem + BZ_GDT_GPA + 0x10), 0x00af9b000000ffffull);
	/* the 64-bit entry state */
	assert_int_equal(st.rip, p.kernel_gpa + 0x200);
	assert_int_equal(st.gpr[GPR_RSI], BZ_ZERO_PAGE_GPA);
	assert_int_equal(st.cr3, BZ_PML4_GPA);
	assert_int_equal(st.efer & 0x500, 0x500);
	assert_int_equal(st.cs.sel, 0x10);
	assert_true(st.cs.attr & SEG_ATTR_L);
	assert_int_equal(st.ds.sel, 0x18);
	assert_int_equal(st.rflags, 2);
	free(img);
}

/* Each corruption is refused with its errno and nothing is written. */
static void test_corrupt_headers_refused(void **state)
{
	static const struct { size_t off; unsigned int bytes; uint64_t val; int err; } bad[] = {
		{ 0x1fe, 2, 0x55aa, -ENOEXEC },		/* boot flag */
		{ 0x202, 4, 0x48647253, -ENOEXEC },	/* "SrdH" */
		{ 0x206, 2, 0x020b, -ENOTSUP },		/* protocol 2.11 */
		{ 0x236, 2, 0, -ENOTSUP },		/* no 64-bit entry */
		{ 0x211, 1, 0, -ENOTSUP },		/* not loaded high */
		{ 0x201, 1, 0x02, -EINVAL },		/* header too short */
		{ 0x201, 1, 0xa0, -EINVAL },		/* header past its room */
		{ 0x230, 4, 0x3000, -EINVAL },		/* alignment not a power of 2 */
		{ 0x260, 4, 1000, -EINVAL },		/* init_size < kernel */
		{ 0x260, 4, 0x7f000000, -E2BIG },	/* needs 2 GiB */
	};
	struct bz_plan p;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint8_t *img = make_image();

		for (unsigned int k = 0; k < bad[i].bytes; k++)
			img[bad[i].off + k] = (uint8_t)(bad[i].val >> (8 * k));
		assert_int_equal(bz_prepare(img, IMAGE_LEN, GMEM, 0, 0, &p), bad[i].err);
		assert_true(p.errmsg[0] != 0);
		free(img);
	}
}

static void test_sizes_refused(void **state)
{
	uint8_t *img = make_image();
	struct bz_plan p;

	(void)state;
	/* shorter than setup_sects' byte: nothing read past the end (ASan) */
	{
		uint8_t *tiny = malloc(16);

		memcpy(tiny, img, 16);
		assert_int_equal(bz_prepare(tiny, 16, GMEM, 0, 0, &p), -ENOEXEC);
		free(tiny);
	}
	assert_int_equal(bz_prepare(img, 0x250, GMEM, 0, 0, &p), -EINVAL);	/* truncated */
	assert_string_equal(p.errmsg, "truncated: 592 bytes, the header alone needs 612");
	assert_int_equal(bz_prepare(img, (SETUP_SECTS + 1) * 512, GMEM, 0, 0, &p), -EINVAL);
	assert_int_equal(bz_prepare(img, IMAGE_LEN - 16, GMEM, 0, 0, &p), -EINVAL);
	assert_string_equal(p.errmsg, "truncated: the kernel is 307200 bytes, the module holds "
			    "307184");
	assert_int_equal(bz_prepare(img, IMAGE_LEN, GMEM, GMEM - 8 * MIB, 0, &p), -E2BIG);
	assert_string_equal(p.errmsg, "the initrd (57344 KiB) does not fit in the guest's RAM "
			    "beside the kernel");
	assert_int_equal(bz_prepare(img, IMAGE_LEN, GMEM, 0, 2047, &p), -E2BIG);
	assert_int_equal(bz_prepare(img, IMAGE_LEN, GMEM, 0, 2046, &p), 0);
	assert_int_equal(bz_prepare(img, IMAGE_LEN, MIB, 0, 0, &p), -E2BIG);
	/* not relocatable and the preferred address does not fit */
	img[0x234] = 0;
	assert_int_equal(bz_prepare(img, IMAGE_LEN, 18 * MIB, 0, 0, &p), -E2BIG);
	free(img);
}

static void test_load_passes_write_errors(void **state)
{
	uint8_t *img = make_image();
	struct e820_entry map[E820_MAX_ENTRIES];
	struct cpu_state st;
	struct bz_plan p;

	(void)state;
	assert_int_equal(bz_prepare(img, IMAGE_LEN, GMEM, 0, 0, &p), 0);
	copy_ret = -EFAULT;
	assert_int_equal(bz_load(&p, &ops, NULL, "", map, (unsigned)e820_build(GMEM, map), &st),
			 -EFAULT);
	free(img);
}

static void test_probe(void **state)
{
	uint8_t *img = make_image();
	uint8_t elf[64] = { 0x7f, 'E', 'L', 'F', 1 };
	const char *why;

	(void)state;
	assert_int_equal(loader_probe(img, IMAGE_LEN, &why), LOADER_BZIMAGE);
	put_le16(elf + 18, 3);
	assert_int_equal(loader_probe(elf, sizeof(elf), &why), LOADER_MB1);
	elf[4] = 2;
	put_le16(elf + 18, 62);
	assert_int_equal(loader_probe(elf, sizeof(elf), &why), LOADER_UNKNOWN);
	assert_non_null(strstr(why, "64-bit ELF"));
	put_le16(elf + 18, 183);			/* AArch64 */
	assert_int_equal(loader_probe(elf, sizeof(elf), &why), LOADER_UNKNOWN);
	assert_string_equal(why, "an ELF file for another architecture");
	assert_int_equal(loader_probe("hello", 5, &why), LOADER_UNKNOWN);
	/* a flat binary (or an ELF64) with the a.out kludge: multiboot1, as
	 * GRUB would load it; without the flag, or with a bad checksum, not */
	uint32_t flat[64] = { 0 };
	flat[4] = 0x1BADB002u;
	flat[5] = 1u << 16;
	flat[6] = -(flat[4] + flat[5]);
	assert_int_equal(loader_probe(flat, sizeof(flat), &why), LOADER_MB1);
	memcpy(flat, "\177ELF\2", 5);
	assert_int_equal(loader_probe(flat, sizeof(flat), &why), LOADER_MB1);
	flat[6]++;
	assert_int_equal(loader_probe(flat, sizeof(flat), &why), LOADER_UNKNOWN);
	flat[0] = 0;
	flat[5] = 0;
	flat[6] = -flat[4];
	assert_int_equal(loader_probe(flat, sizeof(flat), &why), LOADER_UNKNOWN);
	assert_string_equal(why, "neither a multiboot1 kernel, a Linux bzImage nor a PVH kernel");
	free(img);
}

/* Debian's kernel, when tools/fetch-linux.sh (the Linux tests) or the
 * network bench fetched it. */
static FILE *debian_kernel(void)
{
	static const char *const dirs[] = { "build/linux/root/boot", "build/bench/linux/boot" };
	char path[512];
	struct dirent *d;

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		DIR *dp = opendir(dirs[i]);

		path[0] = 0;
		while (dp && (d = readdir(dp)))
			if (!strncmp(d->d_name, "vmlinuz-", 8))
				snprintf(path, sizeof(path), "%s/%s", dirs[i], d->d_name);
		if (dp)
			closedir(dp);
		if (path[0])
			return fopen(path, "rb");
	}
	return NULL;
}

static void test_real_debian_kernel(void **state)
{
	FILE *f = debian_kernel();
	size_t len;

	(void)state;
	if (!f)
		skip();
	uint8_t *img = read_whole(f, &len);
	struct bz_plan p;
	assert_int_equal(bz_prepare(img, (size_t)len, 256 * MIB, 8 * MIB, 64, &p), 0);
	assert_true(p.version >= 0x020c);
	assert_true(p.xloadflags & BZ_XLF_KERNEL_64);
	assert_int_equal(p.kernel_gpa % 0x200000, 0);
	assert_true(p.initrd_gpa >= p.kernel_gpa + p.init_size);
	/* cut short: refused, not read past the end */
	assert_int_equal(bz_prepare(img, 4096, 256 * MIB, 0, 0, &p), -EINVAL);
	free(img);
}

static void test_e820(void **state)
{
	struct e820_entry m[E820_MAX_ENTRIES];

	(void)state;
	assert_int_equal(e820_build(MIB, m), -EINVAL);
	assert_int_equal(e820_build(256 * MIB, m), 3);
	assert_true(m[0].addr == 0 && m[0].size == E820_LOW_RAM_END && m[0].type == E820_RAM);
	assert_true(m[1].addr == E820_LOW_RAM_END && m[1].type == E820_RESERVED);
	assert_int_equal(m[1].addr + m[1].size, MIB);
	assert_true(m[2].addr == MIB && m[2].size == 255 * MIB && m[2].type == E820_RAM);
	/* exactly 3 GiB: all of it below the hole, nothing above */
	assert_int_equal(e820_build(3072 * MIB, m), 3);
	assert_int_equal(m[2].addr + m[2].size, 3072 * MIB);
	assert_int_equal(e820_ram_top(3072 * MIB), 3072 * MIB);
	/* 6 GiB: cut at 3 GiB, the APIC pages reserved, 3 GiB from 4 GiB up */
	assert_int_equal(e820_build(6144 * MIB, m), 5);
	assert_int_equal(m[2].addr + m[2].size, 3072 * MIB);
	assert_true(m[3].addr == E820_APIC_START && m[3].type == E820_RESERVED);
	assert_int_equal(m[3].addr + m[3].size, 4096 * MIB);
	assert_true(m[4].addr == 4096 * MIB && m[4].size == 3072 * MIB && m[4].type == E820_RAM);
	assert_int_equal(e820_ram_top(6144 * MIB), 3072 * MIB);
	/* 3 GiB + 2 MiB: the smallest guest with RAM above the hole */
	assert_int_equal(e820_build(3074 * MIB, m), 5);
	assert_true(m[4].addr == 4096 * MIB && m[4].size == 2 * MIB);
}

static uint8_t sum(const uint8_t *p, size_t n)
{
	uint8_t s = 0;

	while (n--)
		s += *p++;
	return s;
}

/* Parse the tables back as a guest would (MP spec 4). */
static void test_mptable(void **state)
{
	uint8_t buf[1024];
	unsigned int cpus = 3, ioints = 0, lints = 0, seen_cpus = 0, buses = 0, pci_ints = 0;

	(void)state;
	long n = mptable_build(buf, sizeof(buf), MPTABLE_GPA, cpus);
	assert_int_equal(n, (long)mptable_size(cpus));
	assert_memory_equal(buf, "_MP_", 4);
	assert_int_equal(sum(buf, 16), 0);
	assert_int_equal(get_le32(buf + 4), MPTABLE_GPA + 16);
	const uint8_t *h = buf + 16, *e = h + 44;
	uint16_t len = get_le16(h + 4), count = get_le16(h + 34);
	assert_memory_equal(h, "PCMP", 4);
	assert_int_equal(sum(h, len), 0);
	assert_int_equal(16 + len, n);
	assert_int_equal(get_le32(h + 36), MPTABLE_LAPIC_PA);
	for (unsigned int i = 0; i < count; i++) {
		switch (e[0]) {
		case MP_ENT_CPU:
			assert_int_equal(e[1], seen_cpus);
			assert_int_equal(e[3], seen_cpus ? 1 : 3);
			seen_cpus++;
			e += 20;
			continue;
		case MP_ENT_BUS:
			assert_int_equal(e[1], buses);
			assert_memory_equal(e + 2, buses ? "ISA   " : "PCI   ", 6);
			buses++;
			break;
		case MP_ENT_IOAPIC:
			assert_int_equal(e[1], cpus);
			assert_int_equal(get_le32(e + 4), MPTABLE_IOAPIC_PA);
			break;
		case MP_ENT_IOINT:
			assert_int_equal(e[6], cpus);
			if (e[4] == MPTABLE_PCI_BUS) {	/* 00:01.0 INTA#, level, low */
				assert_int_equal(e[5], 1 << 2);
				assert_int_equal(e[7], MPTABLE_PCI_PIN);
				assert_int_equal(get_le16(e + 2), 0x0f);
				pci_ints++;
				break;
			}
			assert_int_equal(e[4], MPTABLE_ISA_BUS);
			assert_int_equal(e[7], e[5] == 0 ? 2 : e[5]);
			assert_int_not_equal(e[5], 2);
			ioints++;
			break;
		case MP_ENT_LINT:
			assert_int_equal(e[1], lints == 0 ? MP_INT_EXTINT : MP_INT_NMI);
			assert_int_equal(e[7], lints);
			lints++;
			break;
		default:
			fail_msg("entry type %u", e[0]);
		}
		e += 8;
	}
	assert_int_equal(e - buf, n);
	assert_int_equal(seen_cpus, cpus);
	assert_int_equal(ioints, 15);
	assert_int_equal(pci_ints, 1);
	assert_int_equal(buses, 2);
	assert_int_equal(lints, 2);
	assert_int_equal(mptable_build(buf, sizeof(buf), MPTABLE_GPA, 0), -EINVAL);
	assert_int_equal(mptable_build(buf, sizeof(buf), MPTABLE_GPA, MPTABLE_MAX_CPUS + 1),
			 -EINVAL);
	assert_int_equal(mptable_build(buf, 100, MPTABLE_GPA, 2), -E2BIG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_prepare_places_kernel_and_initrd, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_load_writes_zero_page_and_entry, setup,
						teardown),
		cmocka_unit_test(test_corrupt_headers_refused),
		cmocka_unit_test(test_sizes_refused),
		cmocka_unit_test_setup_teardown(test_load_passes_write_errors, setup, teardown),
		cmocka_unit_test(test_probe),
		cmocka_unit_test(test_real_debian_kernel),
		cmocka_unit_test(test_e820),
		cmocka_unit_test(test_mptable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
