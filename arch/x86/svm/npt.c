/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The AMD NPT entry format: the host format with U/S forced on in every
 * leaf (x86_pte_mk_table already sets it in every table entry).  See npt.h.
 */
#include <errno.h>
#include "arch/x86/svm/npt.h"

static int npt_check(unsigned attr)
{
	if (attr & PT_GLOBAL)
		return -EINVAL;
	return x86_pte_check(attr);
}

static uint64_t npt_mk_leaf(uint64_t pa, unsigned attr, unsigned level)
{
	return x86_pte_mk_leaf(pa, attr | PT_USER, level);
}

static uint64_t npt_set_attr(uint64_t e, unsigned attr, unsigned level)
{
	return x86_pte_set_attr(e, attr | PT_USER, level);
}

const struct pt_format npt_format = {
	.name = "npt",
	.levels = pt_x86_levels,
	.canonical = false,	/* guest-physical: 0 .. 2^48 - 1 */
	.check = npt_check,
	.present = x86_pte_present,
	.is_leaf = x86_pte_is_leaf,
	.mk_leaf = npt_mk_leaf,
	.mk_table = x86_pte_mk_table,
	.addr = x86_pte_addr,
	.attr = x86_pte_attr,
	.set_attr = npt_set_attr,
	.split = x86_pte_split,
};

uint64_t npt_ncr3(const struct page_table *pt)
{
	return pt->root_pa & X86_PTE_ADDR;
}
