/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for the guest page walker (arch/x86/emulate/gwalk.c) and the
 * fetch-and-decode helper (fetch.c): hand-built page tables for every
 * paging mode in a fake guest memory, faults and their error codes, large
 * pages, NX, WP, U/S, SMEP/SMAP, tables outside RAM, instruction fetches
 * across page ends, and random page-table contents.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "arch/x86/emulate/fetch.h"
#include "arch/x86/emulate/gwalk.h"

#define MEM_SIZE	(2u << 20)	/* guest RAM: GPA 0 .. 2 MiB */

#define P	(1ull << 0)
#define RW	(1ull << 1)
#define US	(1ull << 2)
#define PS	(1ull << 7)
#define XD	(1ull << 63)

#define CR0_PE	(1ull << 0)
#define CR0_WP	(1ull << 16)
#define CR0_PG	(1ull << 31)
#define CR4_PSE	(1ull << 4)
#define CR4_PAE	(1ull << 5)
#define CR4_LA57 (1ull << 12)
#define CR4_PCIDE (1ull << 17)
#define CR4_SMEP (1ull << 20)
#define CR4_SMAP (1ull << 21)
#define EFER_LME (1ull << 8)
#define EFER_LMA (1ull << 10)
#define EFER_NXE (1ull << 11)
#define RFLAGS_AC (1ull << 18)

enum mode { M32, MPAE, M4L, M5L };

/* The fake guest: RAM, a bump allocator for tables, and the env. */
static struct guest {
	uint8_t *mem;
	uint64_t next_free;	/* next free page for tables */
	int reads;
	enum mode mode;
	struct gwalk_env env;
} g;

static int fake_read(void *ctx, uint64_t gpa, void *buf, size_t len)
{
	struct guest *gg = ctx;

	gg->reads++;
	if (gpa >= MEM_SIZE || len > MEM_SIZE - gpa)
		return -EFAULT;
	memcpy(buf, gg->mem + gpa, len);
	return 0;
}

static uint64_t alloc_page(void)
{
	uint64_t pa = g.next_free;

	g.next_free += 4096;
	assert_true(g.next_free <= MEM_SIZE / 2);	/* upper half: data pages */
	memset(g.mem + pa, 0, 4096);
	return pa;
}

static void put(uint64_t gpa, uint64_t val, unsigned size)
{
	for (unsigned i = 0; i < size; i++)
		g.mem[gpa + i] = (uint8_t)(val >> (8 * i));
}

static uint64_t get(uint64_t gpa, unsigned size)
{
	uint64_t v = 0;

	for (unsigned i = size; i--; )
		v = (v << 8) | g.mem[gpa + i];
	return v;
}

static unsigned esize(void) { return g.mode == M32 ? 4 : 8; }
static unsigned top(void) { return g.mode == M32 ? 2 : g.mode == MPAE ? 3 : g.mode == M4L ? 4 : 5; }

static unsigned shift_of(unsigned level)
{
	if (g.mode == M32)
		return level == 2 ? 22 : 12;
	return 12 + 9 * (level - 1);
}

static uint64_t index_of(uint64_t la, unsigned level)
{
	unsigned bitsn = g.mode == M32 ? 10 : (g.mode == MPAE && level == 3) ? 2 : 9;

	return (la >> shift_of(level)) & ((1ull << bitsn) - 1);
}

static uint64_t root(void)
{
	return g.env.cr3 & (g.mode == MPAE ? 0xffffffe0ull : 0xffffffffff000ull);
}

/* Set up a fresh guest in `mode` with an empty top-level table. */
static void setup_mode(enum mode mode)
{
	memset(&g.env, 0, sizeof(g.env));
	g.mode = mode;
	g.next_free = 0x1000;
	g.reads = 0;
	g.env.read_gpa = fake_read;
	g.env.ctx = &g;
	g.env.maxphyaddr = 40;
	g.env.gbpages = true;
	g.env.cr0 = CR0_PE | CR0_PG | CR0_WP;
	g.env.cr3 = alloc_page();
	if (mode == MPAE)
		g.env.cr3 += 0x20;	/* PDPT: 32-byte aligned is enough */
	if (mode != M32)
		g.env.cr4 = CR4_PAE;
	if (mode == M4L || mode == M5L)
		g.env.efer = EFER_LME | EFER_LMA | EFER_NXE;
	if (mode == M5L)
		g.env.cr4 |= CR4_LA57;
}

/* Address of the entry for la at `level`, creating tables above it. */
static uint64_t entry_addr(uint64_t la, unsigned level, uint64_t mid_flags)
{
	uint64_t table = root();

	for (unsigned l = top(); l > level; l--) {
		uint64_t ea = table + index_of(la, l) * esize();
		uint64_t e = get(ea, esize());

		if (!(e & P)) {
			e = alloc_page() | (g.mode == MPAE && l == 3 ? P : mid_flags);
			put(ea, e, esize());
		}
		table = e & 0xffffffffff000ull;
	}
	return table + index_of(la, level) * esize();
}

/* Map la -> pa with a leaf at `level` (1 = 4 KiB). */
static void map(uint64_t la, uint64_t pa, unsigned level, uint64_t flags)
{
	put(entry_addr(la, level, P | RW | US), pa | flags | (level > 1 ? PS : 0),
	    esize());
}

static void set_bits(uint64_t la, unsigned level, uint64_t set, uint64_t clear)
{
	uint64_t ea = entry_addr(la, level, P | RW | US);

	put(ea, (get(ea, esize()) | set) & ~clear, esize());
}

static int xlate(uint64_t la, unsigned access, struct gwalk_result *res)
{
	return gwalk_translate(&g.env, la, access, res);
}

static void expect_gpa(uint64_t la, unsigned access, uint64_t gpa, uint64_t size)
{
	struct gwalk_result res;

	assert_int_equal(xlate(la, access, &res), 0);
	assert_int_equal(res.err, 0);
	assert_int_equal(res.gpa, gpa);
	assert_int_equal(res.page_size, size);
}

static void expect_pf(uint64_t la, unsigned access, uint32_t ec)
{
	struct gwalk_result res;

	assert_int_equal(xlate(la, access, &res), -EFAULT);
	assert_int_equal(res.err, -EFAULT);
	assert_int_equal(res.fault_addr, la);
	if (res.error_code != ec)
		fail_msg("la %#llx access %#x: error code %#x, want %#x",
			 (unsigned long long)la, access, res.error_code, ec);
}

static int group_setup(void **state)
{
	(void)state;
	g.mem = calloc(1, MEM_SIZE);
	return g.mem ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	free(g.mem);
	return 0;
}

#define R	0u
#define W	GW_WRITE
#define U	GW_USER
#define X	GW_FETCH
#define EP	PF_ERR_P
#define EW	PF_ERR_W
#define EU	PF_ERR_U
#define ER	PF_ERR_RSVD
#define EI	PF_ERR_ID

static void test_paging_off(void **state)
{
	(void)state;
	setup_mode(M32);
	g.env.cr0 = CR0_PE;
	expect_gpa(0x12345678, W | U | X, 0x12345678, 0);
	expect_gpa(0x100001234ull, R, 0x1234, 0);	/* 32-bit linear addresses */
	assert_int_equal(g.reads, 0);
}

static void test_32bit_4k(void **state)
{
	(void)state;
	setup_mode(M32);
	map(0x00401000, 0x00123000, 1, P | RW | US);
	map(0xc0000000, 0x00200000, 1, P);
	expect_gpa(0x00401234, W | U, 0x00123234, 4096);
	expect_gpa(0xc0000fff, R, 0x00200fff, 4096);
	expect_gpa(0x1c0000010ull, R, 0x00200010, 4096);	/* bits 63:32 dropped */
	/* not present: PTE, then PDE */
	expect_pf(0x00402000, R, 0);
	expect_pf(0x00402000, W | U, EW | EU);
	expect_pf(0x00800000, X, 0);		/* no I/D without PAE+NXE or SMEP */
	g.env.cr4 |= CR4_SMEP;
	expect_pf(0x00800000, X, EI);
	/* protection: supervisor page, read-only page */
	expect_pf(0xc0000000, U, EP | EU);
	expect_pf(0xc0000000, W, EP | EW);
	g.env.cr0 &= ~CR0_WP;
	expect_gpa(0xc0000000, W, 0x00200000, 4096);
	/* 32-bit paging has no reserved bits in 4 KiB entries (bit 7 is PAT) */
	set_bits(0x00401000, 1, 0xe80, 0);
	expect_gpa(0x00401000, X | U, 0x00123000, 4096);
}

static void test_32bit_4m(void **state)
{
	(void)state;
	setup_mode(M32);
	g.env.cr4 = CR4_PSE;
	map(0x00800000, 0x01c00000, 2, P | RW);
	expect_gpa(0x00b23456, W, 0x01f23456, 4u << 20);
	/* PSE-36: PA[39:32] in PDE bits 20:13 */
	put(entry_addr(0x01000000, 2, 0), 0x00400000 | (0x12ull << 13) | P | PS, 4);
	expect_gpa(0x01012345, R, 0x1200412345ull, 4u << 20);
	/* bit 21 is reserved; so are PA bits above MAXPHYADDR */
	put(entry_addr(0x01400000, 2, 0), 0x00400000 | (1u << 21) | P | PS, 4);
	expect_pf(0x01400000, R, EP | ER);
	g.env.maxphyaddr = 36;		/* PA bit 36 is PDE bit 17 */
	expect_pf(0x01012345, W, EP | ER | EW);
	g.env.maxphyaddr = 32;
	expect_pf(0x01012345, R, EP | ER);
	/* without CR4.PSE the PS bit is ignored: the PDE points to a table */
	g.env.cr4 = 0;
	g.env.maxphyaddr = 40;
	put(entry_addr(0x00800000, 2, 0), 0x00100000 | P | RW | PS, 4);
	put(0x00100000 + 0x123 * 4, 0x00055000 | P, 4);
	expect_gpa(0x00923abc, R, 0x00055abc, 4096);
}

static void test_pae(void **state)
{
	(void)state;
	setup_mode(MPAE);
	map(0x00401000, 0x00123000, 1, P | RW | US);
	map(0xc0200000, 0x40000000, 2, P | RW);
	expect_gpa(0x00401010, W | U, 0x00123010, 4096);
	expect_gpa(0xc03fffff, W, 0x401fffff, 2u << 20);
	/* PDPTE: R/W and U/S are reserved bits there */
	set_bits(0x00401000, 3, RW, 0);
	expect_pf(0x00401000, R, EP | ER);
	set_bits(0x00401000, 3, 0, RW);
	/* XD without NXE is reserved; with NXE it forbids fetches */
	set_bits(0x00401000, 1, XD, 0);
	expect_pf(0x00401000, R, EP | ER);
	expect_pf(0x00401000, X, EP | ER);	/* no I/D without NXE */
	g.env.efer |= EFER_NXE;
	expect_gpa(0x00401000, R, 0x00123000, 4096);
	expect_pf(0x00401000, X | U, EP | EU | EI);
	expect_pf(0x00402000, X, EI);		/* not present, fetch */
	/* PAE: bits 62:MAXPHYADDR are reserved, 52 included */
	set_bits(0x00401000, 1, 1ull << 52, XD);
	expect_pf(0x00401000, R, EP | ER);
	/* 2 MiB page with bit 13 set */
	set_bits(0xc0200000, 2, 1ull << 13, 0);
	expect_pf(0xc0200000, R, EP | ER);
	/* non-present PDPTE */
	expect_pf(0x40000000, R, 0);
}

static void test_long4_pages(void **state)
{
	(void)state;
	setup_mode(M4L);
	map(0x00007f0000001000ull, 0x00123000, 1, P | RW | US);
	map(0xffff800000200000ull, 0x7fe00000, 2, P | RW);
	map(0xffffffff80000000ull, 0x80000000, 3, P);
	expect_gpa(0x00007f0000001abcull, W | U, 0x00123abc, 4096);
	expect_gpa(0xffff8000003fffffull, W, 0x7fffffff, 2u << 20);
	expect_gpa(0xffffffffbfffffffull, R, 0xbfffffff, 1u << 30);
	/* CR3 PCID and no-flush bits are not address bits */
	g.env.cr4 |= CR4_PCIDE;
	g.env.cr3 |= 0x8000000000000123ull;
	expect_gpa(0x00007f0000001abcull, R, 0x00123abc, 4096);
	/* non-canonical: the caller's #GP */
	struct gwalk_result res;
	assert_int_equal(xlate(0x0000800000000000ull, R, &res), -EINVAL);
	assert_int_equal(res.err, -EINVAL);
	assert_int_equal(xlate(0xfff0800000000000ull, R, &res), -EINVAL);
}

static void test_long4_reserved(void **state)
{
	(void)state;
	setup_mode(M4L);
	map(0x1000, 0x5000, 1, P | RW);
	map(0x40000000, 0x40000000, 3, P | RW);
	/* bits 62:52 are ignored in 4-level paging, 51:M reserved */
	set_bits(0x1000, 1, 0x7ffull << 52, 0);
	expect_gpa(0x1000, R, 0x5000, 4096);
	set_bits(0x1000, 1, 1ull << 40, 0);
	expect_pf(0x1000, R, EP | ER);
	g.env.maxphyaddr = 48;
	expect_gpa(0x1000, R, 0x10000005000ull, 4096);
	g.env.maxphyaddr = 40;
	set_bits(0x1000, 1, 0, 1ull << 40);
	/* PS in a PML4E */
	set_bits(0x1000, 4, PS, 0);
	expect_pf(0x1000, W, EP | ER | EW);
	set_bits(0x1000, 4, 0, PS);
	/* 1 GiB page: bits 29:13 reserved; no 1 GiB pages without the CPUID bit */
	expect_gpa(0x40000000, R, 0x40000000, 1u << 30);
	g.env.gbpages = false;
	expect_pf(0x40000000, R, EP | ER);
	g.env.gbpages = true;
	set_bits(0x40000000, 3, 1ull << 29, 0);
	expect_pf(0x40000000, R, EP | ER);
	/* XD with NXE clear is reserved at every level */
	g.env.efer &= ~EFER_NXE;
	set_bits(0x1000, 3, XD, 0);
	expect_pf(0x1000, R, EP | ER);
	expect_pf(0x1000, X, EP | ER);		/* no I/D: NXE = 0, no SMEP */
}

static void test_long4_rights(void **state)
{
	(void)state;
	setup_mode(M4L);
	map(0x1000, 0x5000, 1, P | RW | US);		/* user, writable */
	map(0x2000, 0x6000, 1, P | US);			/* user, read-only */
	map(0x3000, 0x7000, 1, P | RW);			/* supervisor */
	/* U/S must be set at every level: clear it in the PDE */
	map(0x40201000, 0x8000, 1, P | RW | US);
	set_bits(0x40201000, 2, 0, US);
	expect_pf(0x40201000, U, EP | EU);
	expect_gpa(0x40201000, W, 0x8000, 4096);
	/* user */
	expect_gpa(0x1000, W | U, 0x5000, 4096);
	expect_pf(0x2000, W | U, EP | EW | EU);
	expect_pf(0x3000, U, EP | EU);
	expect_pf(0x3000, X | U, EP | EU | EI);
	/* supervisor writes: WP decides for read-only pages */
	expect_pf(0x2000, W, EP | EW);
	g.env.cr0 &= ~CR0_WP;
	expect_gpa(0x2000, W, 0x6000, 4096);
	expect_pf(0x2000, W | U, EP | EW | EU);	/* WP never helps CPL 3 */
	g.env.cr0 |= CR0_WP;
	/* R/W clear in an upper level */
	set_bits(0x1000, 4, 0, RW);
	expect_pf(0x1000, W | U, EP | EW | EU);
	expect_gpa(0x1000, U, 0x5000, 4096);
}

static void test_long4_nx_smep_smap(void **state)
{
	(void)state;
	setup_mode(M4L);
	map(0x1000, 0x5000, 1, P | RW | US);
	map(0x3000, 0x7000, 1, P | RW);
	/* XD in the PML4E covers everything below */
	set_bits(0x1000, 4, XD, 0);
	expect_pf(0x1000, X, EP | EI);
	expect_pf(0x1000, X | U, EP | EU | EI);
	expect_gpa(0x1000, W | U, 0x5000, 4096);
	set_bits(0x1000, 4, 0, XD);
	/* SMEP: no supervisor fetch from user pages */
	expect_gpa(0x1000, X, 0x5000, 4096);
	g.env.cr4 |= CR4_SMEP;
	expect_pf(0x1000, X, EP | EI);
	expect_gpa(0x1000, X | U, 0x5000, 4096);
	expect_gpa(0x3000, X, 0x7000, 4096);
	/* SMAP: no supervisor data access to user pages unless RFLAGS.AC */
	expect_gpa(0x1000, W, 0x5000, 4096);
	g.env.cr4 |= CR4_SMAP;
	expect_pf(0x1000, R, EP);
	expect_pf(0x1000, W, EP | EW);
	expect_gpa(0x1000, U, 0x5000, 4096);
	g.env.rflags = RFLAGS_AC;
	expect_gpa(0x1000, W, 0x5000, 4096);
	expect_pf(0x1000, X, EP | EI);		/* AC does not lift SMEP */
}

static void test_long5(void **state)
{
	struct gwalk_result res;

	(void)state;
	setup_mode(M5L);
	map(0x00ff000000001000ull, 0x9000, 1, P | RW);
	map(0xff00000000200000ull, 0x00200000, 2, P);
	expect_gpa(0x00ff000000001234ull, W, 0x9234, 4096);
	expect_gpa(0xff00000000300000ull, R, 0x00300000, 2u << 20);
	expect_pf(0x00fe000000001000ull, R, 0);
	assert_int_equal(xlate(0x0100000000000000ull, R, &res), -EINVAL);
	/* PS in a PML5E is reserved */
	set_bits(0x00ff000000001000ull, 5, PS, 0);
	expect_pf(0x00ff000000001000ull, R, EP | ER);
}

static void test_tables_outside_ram(void **state)
{
	struct gwalk_result res;

	(void)state;
	setup_mode(M4L);
	map(0x1000, 0x5000, 1, P | RW);
	/* a PDE pointing at a page table beyond guest RAM */
	put(entry_addr(0x200000, 2, P | RW), 0x80000000 | P | RW, 8);
	assert_int_equal(xlate(0x200000 + 0x3000, R, &res), -EIO);
	assert_int_equal(res.err, -EIO);
	assert_int_equal(res.bad_gpa, 0x80000000 + 3 * 8);
	/* CR3 itself outside RAM */
	g.env.cr3 = 0x40000000;
	assert_int_equal(xlate(0x1000, R, &res), -EIO);
	assert_int_equal(res.bad_gpa, 0x40000000);
	/* a bad environment */
	g.env.maxphyaddr = 0;
	assert_int_equal(xlate(0x1000, R, &res), -EINVAL);
	g.env.maxphyaddr = 53;
	assert_int_equal(xlate(0x1000, R, &res), -EINVAL);
}

/* The walker never writes guest memory: no A/D bits. */
static void test_no_accessed_dirty(void **state)
{
	uint8_t *copy = malloc(MEM_SIZE);

	(void)state;
	assert_non_null(copy);
	setup_mode(M4L);
	map(0x1000, 0x5000, 1, P | RW);
	map(0x200000, 0x200000, 2, P | RW);
	memcpy(copy, g.mem, MEM_SIZE);
	expect_gpa(0x1000, W, 0x5000, 4096);
	expect_gpa(0x200000, W, 0x200000, 2u << 20);
	assert_memory_equal(copy, g.mem, MEM_SIZE);
	free(copy);
}

#define CODE_A	0x180000	/* data pages, upper half of the fake RAM */
#define CODE_B	0x1a0000

static void test_fetch_within_and_across(void **state)
{
	struct gwalk_result res;
	uint8_t buf[15];

	(void)state;
	setup_mode(M4L);
	/* two linear pages backed by non-adjacent frames, B before A */
	map(0x400000, CODE_B, 1, P | US);
	map(0x401000, CODE_A, 1, P | US);
	for (int i = 0; i < 4096; i++) {
		g.mem[CODE_B + i] = (uint8_t)i;
		g.mem[CODE_A + i] = (uint8_t)(0x80 + i);
	}
	assert_int_equal(guest_fetch_insn(&g.env, 0x400100, true, buf, 15, &res), 15);
	for (int i = 0; i < 15; i++)
		assert_int_equal(buf[i], (uint8_t)(0x100 + i));
	assert_int_equal(guest_fetch_insn(&g.env, 0x400ffa, false, buf, 15, &res), 15);
	for (int i = 0; i < 6; i++)
		assert_int_equal(buf[i], (uint8_t)(0xffa + i));
	for (int i = 6; i < 15; i++)
		assert_int_equal(buf[i], (uint8_t)(0x80 + i - 6));
	assert_int_equal(res.err, 0);
	/* the second page missing: a short fetch and the deferred #PF */
	set_bits(0x401000, 1, 0, P);
	assert_int_equal(guest_fetch_insn(&g.env, 0x400ffa, true, buf, 15, &res), 6);
	assert_int_equal(res.err, -EFAULT);
	assert_int_equal(res.fault_addr, 0x401000);
	assert_int_equal(res.error_code, PF_ERR_U | PF_ERR_ID);
	/* the first page missing: nothing */
	assert_int_equal(guest_fetch_insn(&g.env, 0x401000, true, buf, 15, &res), -EFAULT);
	/* not executable */
	set_bits(0x400000, 1, XD, 0);
	assert_int_equal(guest_fetch_insn(&g.env, 0x400000, false, buf, 4, &res), -EFAULT);
	assert_int_equal(res.error_code, PF_ERR_P | PF_ERR_ID);
	/* bad lengths */
	assert_int_equal(guest_fetch_insn(&g.env, 0x400000, false, buf, 0, &res), -EINVAL);
	assert_int_equal(guest_fetch_insn(&g.env, 0x400000, false, buf, 16, &res), -EINVAL);
}

static void test_fetch_outside_ram(void **state)
{
	struct gwalk_result res;
	uint8_t buf[15];

	(void)state;
	setup_mode(M4L);
	map(0x400000, CODE_A, 1, P);
	map(0x401000, 0xfee00000, 1, P);		/* code "in" the local APIC */
	assert_int_equal(guest_fetch_insn(&g.env, 0x401000, false, buf, 15, &res), -EIO);
	assert_int_equal(res.bad_gpa, 0xfee00000);
	assert_int_equal(guest_fetch_insn(&g.env, 0x400ff8, false, buf, 15, &res), 8);
	assert_int_equal(res.err, -EIO);
	/* paging off, 32-bit: the linear address wraps at 4 GiB */
	setup_mode(M32);
	g.env.cr0 = CR0_PE;
	memcpy(g.mem, "\x0f\xa2\x90", 3);
	assert_int_equal(guest_fetch_insn(&g.env, 0x100000000ull, false, buf, 3, &res), 3);
	assert_memory_equal(buf, "\x0f\xa2\x90", 3);
}

static void test_fetch_wraps_4g(void **state)
{
	struct gwalk_result res;
	uint8_t buf[15];

	(void)state;
	setup_mode(M32);
	map(0xfffff000, CODE_A, 1, P);
	map(0x00000000, CODE_B, 1, P);
	memcpy(g.mem + CODE_A + 0xffd, "\x48\xb8\x01", 3);
	memcpy(g.mem + CODE_B, "\x02\x03\x04\x05", 4);
	assert_int_equal(guest_fetch_insn(&g.env, 0xfffffffd, false, buf, 7, &res), 7);
	assert_memory_equal(buf, "\x48\xb8\x01\x02\x03\x04\x05", 7);
}

static void test_fetch_decode(void **state)
{
	struct gwalk_result res;
	struct x86_insn in;

	(void)state;
	setup_mode(M4L);
	map(0x400000, CODE_A, 1, P | RW);
	/* cpuid in the last two bytes; the next page is not mapped: fine */
	memcpy(g.mem + CODE_A + 0xffe, "\x0f\xa2", 2);
	assert_int_equal(x86_fetch_decode(&g.env, 0x400ffe, false, CPU_MODE_LONG64,
					  0, &in, &res), 2);
	assert_int_equal(in.opcode, 0xa2);
	/* movabs that runs into the missing page: #PF on that page */
	memcpy(g.mem + CODE_A + 0xffc, "\x48\xb8\x01\x02", 4);
	assert_int_equal(x86_fetch_decode(&g.env, 0x400ffc, false, CPU_MODE_LONG64,
					  0, &in, &res), -EFAULT);
	assert_int_equal(res.fault_addr, 0x401000);
	assert_int_equal(res.error_code, PF_ERR_ID);
	/* ... and once it is mapped, the whole 10 bytes */
	map(0x401000, CODE_B, 1, P | RW);
	memcpy(g.mem + CODE_B, "\x03\x04\x05\x06\x07\x08", 6);
	assert_int_equal(x86_fetch_decode(&g.env, 0x400ffc, false, CPU_MODE_LONG64,
					  0, &in, &res), 10);
	assert_int_equal(in.imm, 0x0807060504030201ull);
	/* user code on a supervisor page */
	assert_int_equal(x86_fetch_decode(&g.env, 0x400ffe, true, CPU_MODE_LONG64,
					  0, &in, &res), -EFAULT);
	assert_int_equal(res.error_code, PF_ERR_P | PF_ERR_U | PF_ERR_ID);
	/* 16 prefix bytes: #GP whatever the next page holds */
	memset(g.mem + CODE_A + 0xff8, 0x66, 8);
	memset(g.mem + CODE_B, 0x66, 8);
	assert_int_equal(x86_fetch_decode(&g.env, 0x400ff8, false, CPU_MODE_LONG64,
					  0, &in, &res), -E2BIG);
	/* decode errors pass through */
	memcpy(g.mem + CODE_A, "\x06", 1);
	assert_int_equal(x86_fetch_decode(&g.env, 0x400000, false, CPU_MODE_LONG64,
					  0, &in, &res), -EILSEQ);
	assert_int_equal(x86_fetch_decode(&g.env, 0x8000000000000000ull, false,
					  CPU_MODE_LONG64, 0, &in, &res), -EINVAL);
}

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Entries that are mostly present and point back into the fake RAM. */
static uint64_t random_entry(void)
{
	uint64_t x = xorshift();
	uint64_t e = (xorshift() % (MEM_SIZE / 4096)) << 12;

	e |= x & 0xfff;
	if (x & (1ull << 20))
		e |= P;
	if ((x & (7ull << 21)) == 0)
		e |= x & 0xfff0000000000000ull;		/* high junk */
	if ((x & (7ull << 24)) == 0)
		e |= 0x80000000ull << (x >> 60);	/* beyond RAM */
	return e;
}

/* Random page tables: whatever they hold, no crash and a sane answer. */
static void test_random_tables(void **state)
{
	(void)state;
	for (int round = 0; round < 200; round++) {
		setup_mode((enum mode)(round % 4));
		for (uint64_t a = 0; a < MEM_SIZE; a += 8)
			put(a, random_entry(), 8);
		g.env.cr4 |= xorshift() & (CR4_PSE | CR4_SMEP | CR4_SMAP);
		g.env.efer ^= xorshift() & EFER_NXE;
		g.env.gbpages = xorshift() & 1;
		g.env.maxphyaddr = 32 + (unsigned)(xorshift() % 21);
		for (int i = 0; i < 2000; i++) {
			struct gwalk_result res;
			uint64_t la = xorshift();
			unsigned acc = (unsigned)xorshift() & (GW_WRITE | GW_USER | GW_FETCH);
			int r;

			if (xorshift() & 1)
				la = (uint64_t)((int64_t)(la << 16) >> 16);	/* canonical */
			r = xlate(la, acc, &res);
			assert_int_equal(r, res.err);
			if (r == 0)
				assert_true(res.gpa < (1ull << g.env.maxphyaddr));
			else if (r == -EFAULT)
				assert_true((res.error_code & ~0x1fu) == 0);
			else
				assert_true(r == -EIO || r == -EINVAL);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paging_off),
		cmocka_unit_test(test_32bit_4k),
		cmocka_unit_test(test_32bit_4m),
		cmocka_unit_test(test_pae),
		cmocka_unit_test(test_long4_pages),
		cmocka_unit_test(test_long4_reserved),
		cmocka_unit_test(test_long4_rights),
		cmocka_unit_test(test_long4_nx_smep_smap),
		cmocka_unit_test(test_long5),
		cmocka_unit_test(test_tables_outside_ram),
		cmocka_unit_test(test_no_accessed_dirty),
		cmocka_unit_test(test_fetch_within_and_across),
		cmocka_unit_test(test_fetch_outside_ram),
		cmocka_unit_test(test_fetch_wraps_4g),
		cmocka_unit_test(test_fetch_decode),
		cmocka_unit_test(test_random_tables),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
