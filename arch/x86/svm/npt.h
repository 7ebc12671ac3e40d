/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * AMD nested page tables (APM Vol 2 15.25 "Nested Paging"): the x86-64
 * long-mode format of arch/x86/paging.h, walked by the engine there, with
 * the U/S bit set in every entry.  The nested walk treats every guest
 * access as a user access (APM Vol 2 15.25.5 "Nested Table Walk"), so an
 * entry without U would fault.  Two more things to know:
 *  - the CPU's own accesses to guest page tables count as writes (APM Vol 2
 *    15.25.6 "Nested versus Guest Page Faults, Fault Ordering"), so write-protecting guest RAM that holds guest page tables
 *    (dirty logging) makes those updates fault too: the dirty-log handler
 *    must restore write access for them like for any other write;
 *  - NX (bit 63) is honoured only with EFER.NXE = 1, which ferry sets.
 * PT_GLOBAL is refused: G means nothing for guest-physical translations.
 */
#ifndef FERRY_ARCH_X86_SVM_NPT_H
#define FERRY_ARCH_X86_SVM_NPT_H

#include <stdint.h>
#include "arch/x86/paging.h"

extern const struct pt_format npt_format;

/* The VMCB nCR3 value (control area offset 0B0h) for pt: the PML4's
 * physical address with PWT/PCD clear, so the walk itself uses WB. */
uint64_t npt_ncr3(const struct page_table *pt);

#endif
