/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Guest page walker: one generic walk over a per-mode description of the
 * levels (Intel SDM vol. 3A 4.3-4.5, AMD APM vol. 2 5.2-5.4), reserved-bit
 * rules per level, then the access-rights check of SDM 4.6.
 */
#include <errno.h>

#include "arch/x86/emulate/gwalk.h"

#define CR0_WP		(1ull << 16)
#define CR0_PG		(1ull << 31)
#define CR4_PSE		(1ull << 4)
#define CR4_PAE		(1ull << 5)
#define CR4_LA57	(1ull << 12)
#define CR4_SMEP	(1ull << 20)
#define CR4_SMAP	(1ull << 21)
#define EFER_LMA	(1ull << 10)
#define EFER_NXE	(1ull << 11)
#define RFLAGS_AC	(1ull << 18)

#define PTE_P		(1ull << 0)
#define PTE_RW		(1ull << 1)
#define PTE_US		(1ull << 2)
#define PTE_PS		(1ull << 7)
#define PTE_XD		(1ull << 63)

#define PAGE_SIZE	4096ull

enum pmode { PM_OFF, PM_32, PM_PAE, PM_4L, PM_5L };

/* Walk state: the request, the rights accumulated so far, the result. */
struct walk {
	const struct gwalk_env *env;
	enum pmode mode;
	uint64_t la;
	unsigned access;	/* GW_* */
	bool writable;		/* R/W = 1 at every level so far */
	bool user;		/* U/S = 1 at every level so far */
	bool nx;		/* XD = 1 at some level (with EFER.NXE) */
	struct gwalk_result *res;
};

/* Mask of bits hi..lo inclusive; 0 when hi < lo. */
static uint64_t bits(unsigned hi, unsigned lo)
{
	if (hi < lo)
		return 0;
	return (~0ull >> (63 - hi)) & ~((1ull << lo) - 1);
}

static enum pmode paging_mode(const struct gwalk_env *env)
{
	if (!(env->cr0 & CR0_PG))
		return PM_OFF;
	if (!(env->cr4 & CR4_PAE))
		return PM_32;
	if (!(env->efer & EFER_LMA))
		return PM_PAE;
	return (env->cr4 & CR4_LA57) ? PM_5L : PM_4L;
}

static unsigned top_level(enum pmode mode)
{
	switch (mode) {
	case PM_32:  return 2;
	case PM_PAE: return 3;
	case PM_4L:  return 4;
	default:     return 5;
	}
}

/* Linear-address bit where the index of `level` starts (level 1 = PTE). */
static unsigned level_shift(enum pmode mode, unsigned level)
{
	if (mode == PM_32)
		return level == 2 ? 22 : 12;
	return 12 + 9 * (level - 1);
}

static unsigned index_bits(enum pmode mode, unsigned level)
{
	if (mode == PM_32)
		return 10;
	return (mode == PM_PAE && level == 3) ? 2 : 9;
}

/* Physical address of the top-level table, from CR3 (SDM 4.3, 4.4.1, 4.5). */
static uint64_t root_table(const struct walk *w)
{
	uint64_t cr3 = w->env->cr3;

	switch (w->mode) {
	case PM_32:  return cr3 & bits(31, 12);
	case PM_PAE: return cr3 & bits(31, 5);
	default:     return cr3 & bits(w->env->maxphyaddr - 1, 12);
	}
}

/*
 * Bits that must be 0 in a present entry at `level` (SDM tables 4-4 to
 * 4-20; APM 5.3.5): above MAXPHYADDR, XD without EFER.NXE, PS where no
 * page can be mapped, the low address bits of large pages.
 */
static uint64_t rsvd_bits(const struct walk *w, unsigned level, uint64_t e)
{
	const struct gwalk_env *env = w->env;
	unsigned m = env->maxphyaddr;
	uint64_t xd = (env->efer & EFER_NXE) ? 0 : PTE_XD;
	bool ps = e & PTE_PS;

	switch (w->mode) {
	case PM_32:	/* only 4 MiB PDEs have any: PSE-36 up to 40 bits */
		if (level == 2 && ps && (env->cr4 & CR4_PSE))
			return bits(21, 13 + (m < 40 ? m : 40) - 32);
		return 0;
	case PM_PAE:
		/* PDPTE bits 8:5 are reserved on Intel, but AMD CPUs (and QEMU
		 * emulating one) set the accessed bit 5 there: a walk for an
		 * instruction the CPU has just run must not be stricter. */
		if (level == 3)
			return bits(63, m) | bits(2, 1);
		return bits(62, m) | xd | (level == 2 && ps ? bits(20, 13) : 0);
	default:
		if (level >= 4)
			return bits(51, m) | xd | PTE_PS;
		if (level == 3 && ps)
			return bits(51, m) | xd |
			       (env->gbpages ? bits(29, 13) : PTE_PS);
		return bits(51, m) | xd | (level == 2 && ps ? bits(20, 13) : 0);
	}
}

static bool is_leaf(const struct walk *w, unsigned level, uint64_t e)
{
	if (level == 1)
		return true;
	if (!(e & PTE_PS))
		return false;
	/* 32-bit paging ignores PS without CR4.PSE (SDM 4.3). */
	return w->mode != PM_32 || (w->env->cr4 & CR4_PSE);
}

/* Combine the access rights of each level (SDM 4.6: all must allow). */
static void accumulate(struct walk *w, unsigned level, uint64_t e)
{
	if (w->mode == PM_PAE && level == 3)
		return;		/* PAE PDPTEs carry no access rights */
	w->writable = w->writable && (e & PTE_RW);
	w->user = w->user && (e & PTE_US);
	if (w->mode != PM_32 && (w->env->efer & EFER_NXE) && (e & PTE_XD))
		w->nx = true;
}

/* Report #PF; I/D only with SMEP or PAE-type paging with NXE (SDM 4.7). */
static int fault(struct walk *w, uint32_t bits_set)
{
	const struct gwalk_env *env = w->env;
	uint32_t ec = bits_set | (w->access & (GW_WRITE | GW_USER));
	bool id = (env->cr4 & CR4_SMEP) ||
		  (w->mode != PM_32 && (env->efer & EFER_NXE));

	if ((w->access & GW_FETCH) && id)
		ec |= PF_ERR_ID;
	w->res->err = -EFAULT;
	w->res->error_code = ec;
	w->res->fault_addr = w->la;
	return -EFAULT;
}

/* SDM 4.6.1: may this access use the page the walk ended on? */
static bool access_allowed(const struct walk *w)
{
	const struct gwalk_env *env = w->env;
	bool write = w->access & GW_WRITE;
	bool fetch = w->access & GW_FETCH;

	if (w->access & GW_USER)
		return w->user && !(write && !w->writable) && !(fetch && w->nx);
	if (fetch)
		return !w->nx && !(w->user && (env->cr4 & CR4_SMEP));
	if (w->user && (env->cr4 & CR4_SMAP) && !(env->rflags & RFLAGS_AC))
		return false;
	return !(write && !w->writable && (env->cr0 & CR0_WP));
}

static int read_entry(struct walk *w, uint64_t gpa, uint64_t *e)
{
	uint8_t b[8] = { 0 };
	size_t n = w->mode == PM_32 ? 4 : 8;

	if (w->env->read_gpa(w->env->ctx, gpa, b, n)) {
		w->res->err = -EIO;
		w->res->bad_gpa = gpa;
		return -EIO;
	}
	*e = 0;
	while (n--)
		*e = (*e << 8) | b[n];	/* entries are little-endian */
	return 0;
}

/* The page a leaf entry maps: 4 MiB PDEs keep PA[39:32] in bits 20:13. */
static uint64_t page_base(const struct walk *w, unsigned level, uint64_t e)
{
	unsigned shift = level_shift(w->mode, level);

	if (w->mode != PM_32)
		return e & bits(w->env->maxphyaddr - 1, shift);
	if (level == 1)
		return e & bits(31, 12);
	return (e & bits(31, 22)) | ((e >> 13) & 0xFF) << 32;
}

static int finish(struct walk *w, unsigned level, uint64_t e)
{
	uint64_t size = 1ull << level_shift(w->mode, level);

	if (!access_allowed(w))
		return fault(w, PF_ERR_P);
	w->res->gpa = page_base(w, level, e) | (w->la & (size - 1));
	w->res->page_size = size;
	return 0;
}

static int walk(struct walk *w)
{
	uint64_t table = root_table(w);
	uint64_t esize = w->mode == PM_32 ? 4 : 8;

	for (unsigned level = top_level(w->mode); level >= 1; level--) {
		unsigned shift = level_shift(w->mode, level);
		uint64_t idx = (w->la >> shift) & bits(index_bits(w->mode, level) - 1, 0);
		uint64_t e;
		int r = read_entry(w, table + idx * esize, &e);

		if (r)
			return r;
		if (!(e & PTE_P))
			return fault(w, 0);
		if (e & rsvd_bits(w, level, e))
			return fault(w, PF_ERR_P | PF_ERR_RSVD);
		accumulate(w, level, e);
		if (is_leaf(w, level, e))
			return finish(w, level, e);
		table = e & (w->mode == PM_32 ? bits(31, 12)
					      : bits(w->env->maxphyaddr - 1, 12));
	}
	return -EINVAL;		/* not reached: level 1 is always a leaf */
}

static bool canonical(uint64_t la, enum pmode mode)
{
	unsigned top = mode == PM_5L ? 56 : 47;
	int64_t s = (int64_t)(la << (63 - top)) >> (63 - top);

	return (uint64_t)s == la;
}

int gwalk_translate(const struct gwalk_env *env, uint64_t la,
		    unsigned access, struct gwalk_result *res)
{
	struct walk w = {
		.env = env, .mode = paging_mode(env), .la = la, .access = access,
		.writable = true, .user = true, .res = res,
	};

	*res = (struct gwalk_result){ 0 };
	if (env->maxphyaddr < 32 || env->maxphyaddr > 52 || !env->read_gpa)
		return res->err = -EINVAL;
	if (w.mode == PM_4L || w.mode == PM_5L) {
		if (!canonical(la, w.mode))
			return res->err = -EINVAL;
	} else {
		w.la = la & 0xFFFFFFFFull;	/* 32-bit linear addresses */
	}
	if (w.mode == PM_OFF) {
		res->gpa = w.la;
		return 0;
	}
	return walk(&w);
}

int guest_fetch_insn(const struct gwalk_env *env, uint64_t la, bool user,
		     uint8_t *buf, size_t len, struct gwalk_result *res)
{
	unsigned access = GW_FETCH | (user ? GW_USER : 0);
	size_t got = 0;

	*res = (struct gwalk_result){ 0 };
	if (len == 0 || len > 15)
		return res->err = -EINVAL;
	while (got < len) {
		uint64_t cur = la + got;	/* gwalk_translate() wraps it outside long mode */
		size_t chunk = PAGE_SIZE - (cur & (PAGE_SIZE - 1));
		int r = gwalk_translate(env, cur, access, res);

		if (chunk > len - got)
			chunk = len - got;
		if (!r && env->read_gpa(env->ctx, res->gpa, buf + got, chunk)) {
			res->bad_gpa = res->gpa;
			r = res->err = -EIO;
		}
		if (r)
			return got ? (int)got : r;
		got += chunk;
	}
	return (int)got;
}
