/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The Intel EPT entry format and the EPTP value.
 * Bit meanings and SDM references are in ept.h.
 */
#include <errno.h>
#include "arch/x86/vmx/ept.h"

#define EPT_RWX		(EPT_R | EPT_W | EPT_X)
#define EPT_ATTR_BITS	(EPT_RWX | EPT_MT_MASK | EPT_IPAT)

static int ept_check(unsigned attr)
{
	if (attr & ~(PT_RWX | PT_MT_UC))
		return -EINVAL;		/* no U/S, no G */
	if (!(attr & PT_RWX))
		return -EINVAL;		/* would read as not present */
	if ((attr & PT_W) && !(attr & PT_R))
		return -EINVAL;		/* EPT misconfiguration */
	return 0;
}

static bool ept_present(uint64_t e)
{
	return e & EPT_RWX;
}

static bool ept_is_leaf(uint64_t e, unsigned level)
{
	return level == 0 || (e & EPT_PS);
}

static uint64_t ept_attr_bits(unsigned attr)
{
	uint64_t mt = (attr & PT_MT_UC) ? EPT_MT_UC : EPT_MT_WB;
	uint64_t e = EPT_IPAT | mt << EPT_MT_SHIFT;

	if (attr & PT_R)
		e |= EPT_R;
	if (attr & PT_W)
		e |= EPT_W;
	if (attr & PT_X)
		e |= EPT_X;
	return e;
}

static uint64_t ept_mk_leaf(uint64_t pa, unsigned attr, unsigned level)
{
	return pa | ept_attr_bits(attr) | (level ? EPT_PS : 0);
}

/* Tables grant everything (rights are ANDed over the walk); bits 7:3 are
 * reserved in table entries and stay clear. */
static uint64_t ept_mk_table(uint64_t table_pa)
{
	return table_pa | EPT_RWX;
}

static uint64_t ept_addr(uint64_t e, unsigned level)
{
	uint64_t low = (1ull << pt_x86_levels[level].shift) - 1;

	if (ept_is_leaf(e, level))
		return e & EPT_ADDR & ~low;
	return e & EPT_ADDR;
}

/* Anything but WB (ferry writes only WB and UC) reads as PT_MT_UC. */
static unsigned ept_attr(uint64_t e, unsigned level)
{
	unsigned attr = 0;

	(void)level;
	if (e & EPT_R)
		attr |= PT_R;
	if (e & EPT_W)
		attr |= PT_W;
	if (e & EPT_X)
		attr |= PT_X;
	if (((e & EPT_MT_MASK) >> EPT_MT_SHIFT) != EPT_MT_WB)
		attr |= PT_MT_UC;
	return attr;
}

static uint64_t ept_set_attr(uint64_t e, unsigned attr, unsigned level)
{
	(void)level;
	return (e & ~EPT_ATTR_BITS) | ept_attr_bits(attr);
}

/* 2 MiB -> 4 KiB drops the size bit; everything else (A/D too) is kept. */
static uint64_t ept_split(uint64_t e, unsigned level)
{
	return level == 1 ? e & ~EPT_PS : e;
}

const struct pt_format ept_format = {
	.name = "ept",
	.levels = pt_x86_levels,
	.canonical = false,	/* guest-physical: 0 .. 2^48 - 1 */
	.check = ept_check,
	.present = ept_present,
	.is_leaf = ept_is_leaf,
	.mk_leaf = ept_mk_leaf,
	.mk_table = ept_mk_table,
	.addr = ept_addr,
	.attr = ept_attr,
	.set_attr = ept_set_attr,
	.split = ept_split,
};

uint64_t ept_eptp(const struct page_table *pt, bool ad)
{
	return (pt->root_pa & EPT_ADDR) | EPTP_MT_WB | EPTP_WALK_4 |
	       (ad ? EPTP_AD : 0);
}

int ept_clean_dirty(struct page_table *pt, uint64_t gpa, uint64_t size)
{
	bool was_dirty = false;

	for (uint64_t a = gpa; a - gpa < size; a += PT_SIZE_4K) {
		uint64_t *e = pt_find_leaf(pt, a, NULL);

		if (e && (__atomic_fetch_and(e, ~EPT_D, __ATOMIC_ACQ_REL) & EPT_D))
			was_dirty = true;
	}
	if (was_dirty)
		pt->flush_pending = true;
	return 0;
}
