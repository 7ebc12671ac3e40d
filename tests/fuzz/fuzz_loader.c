/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target: a guest kernel module as the operator's `create` hands
 * it to the loaders (hv/loader: probe.c, bzimage.c, mb1elf.c, pvh.c,
 * e820.c): loader_probe, then bz_prepare + bz_load, mb1_prepare + mb1_load
 * + mb1_write_info, or pvh_prepare + pvh_load, into a guest whose memory
 * is only bounds-checked.
 *
 * Input: byte 0 = configuration (bits 0-2: guest RAM, 2 MiB to 64 GiB;
 * bits 3-4: initrd length, none to 3 GiB; bits 5-7: command line length,
 * 0 to 64 KiB), then the module's bytes.
 *
 * Invariants (abort on violation):
 *   - a refusal is a negative errno with a NUL-terminated, non-empty
 *     reason; an acceptance loads without a callback refusing anything;
 *   - every write lies in one RAM range of the guest's e820 map (so never
 *     in the hole below 4 GiB), and none above 1 MiB lies outside the
 *     kernel's or the initrd's place; those two do not overlap, and the
 *     kernel's place covers what it asks for (init_size) at its alignment;
 *   - the entry point is inside what was loaded (bzImage: the 64-bit
 *     entry at kernel + 0x200; multiboot1 and PVH: an executable segment);
 *
 * FERRY_FUZZ_MKSEEDS=dir: write seed inputs (a bzImage header as Linux
 * 6.1 has it, a multiboot1 ELF, an ELF64 with a PVH note) and exit.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hv/lib/bytes.h"
#include "hv/loader/bzimage.h"
#include "hv/loader/e820.h"
#include "hv/loader/loader.h"
#include "hv/loader/mb1elf.h"
#include "hv/loader/pvh.h"
#include "tests/fuzz/fuzz.h"

#define KIB (1024ull)
#define MIB (1024ull * KIB)
#define GIB (1024ull * MIB)

static const uint64_t mem_sizes[8] = {
	2 * MIB, 16 * MIB, 64 * MIB, 256 * MIB, 1 * GIB, 3 * GIB + 512 * MIB, 8 * GIB, 64 * GIB,
};
static const size_t initrd_lens[4] = { 0, 4 * KIB, 5 * MIB + 17, 3 * GIB };
static const size_t cmdline_lens[8] = { 0, 1, 20, 2047, 2048, 4095, 0xffff, 0x10000 };

/* The guest: its size, the places objects may be written above 1 MiB. */
static struct {
	uint64_t mem;
	/* [lo, hi): kernel and initrd, or segments (and the initrd) */
	uint64_t lo[PVH_MAX_SEGS + 1], hi[PVH_MAX_SEGS + 1];
	int nr_places;
	uint64_t written;	/* bytes the loader wrote */
	struct e820_entry map[E820_MAX_ENTRIES];
	int nr_map;
} g;

/* [gpa, gpa + len) inside one RAM range of the guest's e820 map. */
static bool in_ram(uint64_t gpa, uint64_t len)
{
	for (int i = 0; i < g.nr_map; i++)
		if (g.map[i].type == E820_RAM && gpa >= g.map[i].addr &&
		    len <= g.map[i].size && gpa - g.map[i].addr <= g.map[i].size - len)
			return true;
	return false;
}

static void check_write(uint64_t gpa, size_t len)
{
	CHECK(in_ram(gpa, len));
	if (gpa + len > BZ_LOW_END) {
		bool inside = false;

		for (int i = 0; i < g.nr_places; i++)
			inside |= gpa >= g.lo[i] && gpa + len <= g.hi[i];
		CHECK(inside);
	}
	g.written += len;
}

static volatile uint8_t sink;

static int fake_copy(void *ctx, uint64_t gpa, const void *src, size_t len)
{
	(void)ctx;
	check_write(gpa, len);
	if (len) {		/* the source must be readable: ASan sees these */
		sink ^= ((const uint8_t *)src)[0];
		sink ^= ((const uint8_t *)src)[len - 1];
	}
	return 0;
}

static int fake_zero(void *ctx, uint64_t gpa, size_t len)
{
	(void)ctx;
	check_write(gpa, len);
	return 0;
}

static const struct loader_mem_ops ops = { fake_copy, fake_zero, NULL };

static void check_reason(int rc, const char *msg, size_t cap)
{
	CHECK(rc < 0);
	CHECK(memchr(msg, 0, cap) != NULL);
	CHECK(msg[0] != 0);
}

static bool overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
	return a0 < b1 && b0 < a1;
}

static void run_bzimage(const uint8_t *img, size_t len, size_t initrd_len, size_t cl_len)
{
	static struct bz_plan p;
	static char cmdline[0x10001];
	struct cpu_state st;
	int rc;
	uint64_t kend;
	const uint8_t *initrd = (const uint8_t *)"";

	memset(&p, 0x5a, sizeof(p));
	rc = bz_prepare(img, len, g.mem, initrd_len, cl_len, &p);
	if (rc) {
		check_reason(rc, p.errmsg, sizeof(p.errmsg));
		return;
	}
	/* the plan */
	CHECK(p.kernel_gpa >= BZ_LOW_END);
	CHECK(p.kernel_off <= len && p.kernel_len <= len - p.kernel_off);
	CHECK(p.init_size >= p.kernel_len);
	CHECK(p.kernel_gpa % (get_le32(img + 0x230) ? get_le32(img + 0x230) : 1) == 0);
	kend = p.kernel_gpa + p.init_size;
	CHECK(kend > p.kernel_gpa && in_ram(p.kernel_gpa, p.init_size));
	CHECK(cl_len < BZ_CMDLINE_MAX && cl_len < p.cmdline_size + 1ull);
	g.lo[0] = p.kernel_gpa;
	g.hi[0] = kend;
	g.nr_places = 1;
	if (initrd_len) {
		CHECK(p.initrd_gpa >= BZ_LOW_END && p.initrd_len == initrd_len);
		CHECK(p.initrd_gpa % 4096 == 0);
		CHECK(in_ram(p.initrd_gpa, initrd_len));
		CHECK(!overlap(p.initrd_gpa, p.initrd_gpa + initrd_len, g.lo[0], g.hi[0]));
		g.lo[1] = p.initrd_gpa;
		g.hi[1] = p.initrd_gpa + initrd_len;
		g.nr_places = 2;
	} else {
		CHECK(p.initrd_gpa == 0);
	}

	/* the load: an initrd this large is not in memory, so stop short of
	 * copying it (the plan was checked above) */
	if (initrd_len > 5 * MIB + 17)
		return;
	if (initrd_len)
		initrd = calloc(1, initrd_len);
	memset(cmdline, 'a', cl_len);
	cmdline[cl_len] = 0;
	memset(&st, 0, sizeof(st));
	rc = bz_load(&p, &ops, initrd, cmdline, g.map, (unsigned int)g.nr_map, &st);
	CHECK(rc == 0);
	CHECK(g.written >= p.kernel_len + initrd_len + cl_len);
	CHECK(st.rip == p.kernel_gpa + 0x200);
	CHECK(st.gpr[GPR_RSI] == BZ_ZERO_PAGE_GPA);
	if (initrd_len)
		free((void *)initrd);
}

/* Segment i of a plan: inside the file and the guest's RAM from `min`,
 * clear of segments 0..i-1, recorded as place i; true if its executable,
 * file-backed part holds the entry point. */
static bool check_segment(int i, uint64_t gpa, uint64_t off, uint64_t filesz, uint64_t memsz,
			  bool exec, uint64_t min, size_t len, uint64_t entry)
{
	CHECK(filesz <= memsz);
	CHECK(off <= len && filesz <= len - off);
	CHECK(gpa >= min && in_ram(gpa, memsz));
	for (int j = 0; j < i; j++)
		CHECK(!overlap(gpa, gpa + memsz, g.lo[j], g.hi[j]));
	g.lo[i] = gpa;
	g.hi[i] = gpa + memsz;
	return exec && entry >= gpa && entry < gpa + filesz;
}

static void run_mb1(const uint8_t *img, size_t len, size_t cl_len)
{
	static struct mb1_plan p;
	static char cmdline[0x10001];
	struct mb1_entry_state st;
	bool entry_ok = false;
	int rc;

	memset(&p, 0x5a, sizeof(p));
	rc = mb1_prepare(img, len, g.mem, &p);
	if (rc) {
		check_reason(rc, p.errmsg, sizeof(p.errmsg));
		return;
	}
	CHECK(p.nr_segs <= MB1_MAX_SEGS);
	for (uint32_t i = 0; i < p.nr_segs; i++) {
		const struct mb1_segment *s = &p.segs[i];

		entry_ok |= check_segment((int)i, s->gpa, s->offset, s->filesz, s->memsz, s->exec,
					  MB1_LOAD_MIN, len, p.entry);
	}
	CHECK(entry_ok);
	g.nr_places = (int)p.nr_segs;
	CHECK(mb1_load(&p, &ops) == 0);
	memset(cmdline, 'a', cl_len);
	cmdline[cl_len] = 0;
	rc = mb1_write_info(&p, cmdline, &ops, &st);
	if (cl_len + 1 > MB1_CMDLINE_MAX)
		check_reason(rc, p.errmsg, sizeof(p.errmsg));
	else
		CHECK(rc == 0 && st.eip == p.entry && st.eax == MB1_BOOT_MAGIC);
}

static void run_pvh(const uint8_t *img, size_t len, size_t initrd_len, size_t cl_len)
{
	static struct pvh_plan p;
	static char cmdline[0x10001];
	struct cpu_state st;
	bool entry_ok = false;
	const uint8_t *initrd = (const uint8_t *)"";
	int rc;

	memset(&p, 0x5a, sizeof(p));
	rc = pvh_prepare(img, len, g.mem, initrd_len, cl_len, &p);
	if (rc) {
		check_reason(rc, p.errmsg, sizeof(p.errmsg));
		return;
	}
	CHECK(p.nr_segs >= 1 && p.nr_segs <= PVH_MAX_SEGS && cl_len < PVH_CMDLINE_MAX);
	for (unsigned int i = 0; i < p.nr_segs; i++) {
		const struct pvh_segment *s = &p.segs[i];

		CHECK(s->gpa + s->memsz <= p.kernel_end);
		entry_ok |= check_segment((int)i, s->gpa, s->offset, s->filesz, s->memsz, s->exec,
					  PVH_LOAD_MIN, len, p.entry);
	}
	CHECK(entry_ok);
	g.nr_places = (int)p.nr_segs;
	if (initrd_len) {
		CHECK(p.initrd_gpa >= p.kernel_end && p.initrd_gpa % 4096 == 0);
		CHECK(p.initrd_gpa + initrd_len <= 0x100000000ull && in_ram(p.initrd_gpa, initrd_len));
		CHECK(g.nr_places < PVH_MAX_SEGS + 1);
		g.lo[g.nr_places] = p.initrd_gpa;
		g.hi[g.nr_places++] = p.initrd_gpa + initrd_len;
	} else {
		CHECK(p.initrd_gpa == 0);
	}
	if (initrd_len > 5 * MIB + 17)
		return;
	if (initrd_len)
		initrd = calloc(1, initrd_len);
	memset(cmdline, 'a', cl_len);
	cmdline[cl_len] = 0;
	rc = pvh_load(&p, &ops, initrd, cmdline, g.map, (unsigned int)g.nr_map, &st);
	CHECK(rc == 0 && st.rip == p.entry && st.gpr[GPR_RBX] == PVH_START_INFO_GPA);
	if (initrd_len)
		free((void *)initrd);
}

/* ---- seeds -------------------------------------------------------------- */

static void seed(const char *dir, const char *name, uint8_t conf, const uint8_t *b, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f)
		return;
	fputc(conf, f);
	fwrite(b, 1, len, f);
	fclose(f);
}

/* A bzImage as Linux 6.1's header has it (protocol 2.15, 64-bit entry,
 * relocatable, 2 MiB alignment, preferred at 16 MiB), 4 setup sectors
 * and 16 KiB of kernel. */
static size_t bz_seed(uint8_t *b)
{
	size_t kernel = 16 * 1024, len = 5 * 512 + kernel;

	memset(b, 0, len);
	b[0x1f1] = 4;
	put_le32(b + 0x1f4, (uint32_t)(kernel / 16));
	put_le16(b + 0x1fe, 0xaa55);
	b[0x200] = 0xeb;
	b[0x201] = 0x6a;
	memcpy(b + 0x202, "HdrS", 4);
	put_le16(b + 0x206, 0x020f);
	b[0x211] = 1;
	put_le32(b + 0x22c, 0x7fffffff);
	put_le32(b + 0x230, 0x200000);
	b[0x234] = 1;
	put_le16(b + 0x236, BZ_XLF_KERNEL_64 | BZ_XLF_CAN_BE_LOADED_ABOVE_4G);
	put_le32(b + 0x238, 2047);
	put_le64(b + 0x258, 0x1000000);
	put_le32(b + 0x260, 4 * MIB);
	return len;
}

/* A multiboot1 ELF32: text at 1 MiB with the header, data + bss after. */
static size_t mb1_seed(uint8_t *b)
{
	static const uint32_t ph[2][8] = {
		{ 1, 0x1000, 0x100000, 0x100000, 0x2000, 0x2000, 5, 0x1000 },
		{ 1, 0x3000, 0x103000, 0x103000, 0x800, 0x3000, 6, 0x1000 },
	};
	size_t len = 0x3800;

	memset(b, 0, len);
	memcpy(b, "\177ELF\1\1\1", 7);
	put_le16(b + 16, 2);
	put_le16(b + 18, 3);
	put_le32(b + 20, 1);
	put_le32(b + 24, 0x100010);
	put_le32(b + 28, 52);
	put_le16(b + 40, 52);
	put_le16(b + 42, 32);
	put_le16(b + 44, 2);
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 8; j++)
			put_le32(b + 52 + i * 32 + j * 4, ph[i][j]);
	put_le32(b + 0x1000, MB1_HEADER_MAGIC);
	put_le32(b + 0x1004, MB1_HF_PAGE_ALIGN | MB1_HF_MEMINFO);
	put_le32(b + 0x1008, (uint32_t)-(MB1_HEADER_MAGIC + (MB1_HF_PAGE_ALIGN | MB1_HF_MEMINFO)));
	return len;
}

/* An ELF64 as Linux's vmlinux is laid out, small: text at 16 MiB with
 * the PVH note in it, data + bss after. */
static size_t pvh_seed(uint8_t *b)
{
	static const uint64_t ph[3][6] = {	/* type|flags, offset, paddr, filesz, memsz */
		{ 1 | 5ull << 32, 0x1000, 0x1000000, 0x2000, 0x2000 },
		{ 1 | 6ull << 32, 0x3000, 0x1200000, 0x800, 0x5000 },
		{ 4 | 4ull << 32, 0x1100, 0x1000100, 24, 24 },
	};
	size_t len = 0x3800;

	memset(b, 0, len);
	memcpy(b, "\177ELF\2\1\1", 7);
	put_le16(b + 16, 2);
	put_le16(b + 18, 62);
	put_le64(b + 32, 64);
	put_le16(b + 54, 56);
	put_le16(b + 56, 3);
	for (int i = 0; i < 3; i++) {
		put_le64(b + 64 + 56 * i, ph[i][0]);
		put_le64(b + 64 + 56 * i + 8, ph[i][1]);
		put_le64(b + 64 + 56 * i + 16, ph[i][2]);
		put_le64(b + 64 + 56 * i + 24, ph[i][2]);
		put_le64(b + 64 + 56 * i + 32, ph[i][3]);
		put_le64(b + 64 + 56 * i + 40, ph[i][4]);
	}
	put_le32(b + 0x1100, 4);		/* "Xen", 8 bytes, PHYS32_ENTRY */
	put_le32(b + 0x1104, 8);
	put_le32(b + 0x1108, PVH_ELFNOTE_PHYS32_ENTRY);
	memcpy(b + 0x110c, "Xen", 4);
	put_le64(b + 0x1110, 0x1000010);
	return len;
}

static void mkseeds(const char *dir)
{
	static uint8_t b[64 * 1024];
	size_t n;

	n = bz_seed(b);
	seed(dir, "bzimage-64m", 2 | 2 << 3 | 2 << 5, b, n);
	seed(dir, "bzimage-256m-noinitrd", 3, b, n);
	seed(dir, "bzimage-8g-bigcmdline", 6 | 1 << 3 | 6 << 5, b, n);
	n = mb1_seed(b);
	seed(dir, "mb1-16m", 1 | 2 << 5, b, n);
	seed(dir, "mb1-2m-longcmdline", 0 | 5 << 5, b, n);
	n = pvh_seed(b);
	seed(dir, "pvh-64m", 2 | 1 << 3 | 2 << 5, b, n);
	seed(dir, "pvh-256m-longcmdline", 3 | 4 << 5, b, n);
	exit(0);
}

FUZZ_SEEDS_FROM(mkseeds)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *why = NULL;
	uint8_t conf;
	const uint8_t *img;
	size_t len;

	if (size < 1)
		return 0;
	conf = data[0];
	/* a copy of exactly the module's length: ASan catches a read past it */
	len = size - 1;
	img = malloc(len ? len : 1);
	memcpy((void *)img, data + 1, len);
	memset(&g, 0, sizeof(g));
	g.mem = mem_sizes[conf & 7];
	g.nr_map = e820_build(g.mem, g.map);
	CHECK(g.nr_map > 0 && g.nr_map <= E820_MAX_ENTRIES);
	switch (loader_probe(img, len, &why)) {
	case LOADER_BZIMAGE:
		run_bzimage(img, len, initrd_lens[(conf >> 3) & 3], cmdline_lens[conf >> 5]);
		break;
	case LOADER_MB1:
		run_mb1(img, len, cmdline_lens[conf >> 5]);
		break;
	case LOADER_PVH:
		run_pvh(img, len, initrd_lens[(conf >> 3) & 3], cmdline_lens[conf >> 5]);
		break;
	default:
		CHECK(why != NULL && why[0] != 0);
		break;
	}
	free((void *)img);
	return 0;
}
