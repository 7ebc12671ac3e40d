/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Intel Page-Modification Logging (SDM Vol 3C "Page-Modification Logging",
 * in the EPT chapter; "Accessed and Dirty Flags for EPT" beside it): with
 * EPTP bit 6 (A/D flags) and secondary control bit 17, every guest write
 * that sets an EPT leaf's dirty flag from 0 to 1 also stores the written
 * page's GPA (bits 11:0 clear on hardware; Bochs keeps them, so they are
 * masked) at entry `index` of a 4 KiB log of 512 entries (VMCS PML
 * address 0x200e) and decrements the 16-bit index (VMCS 0x0812), which
 * software sets to 511.  Entries index+1 .. 511 are thus the valid ones;
 * after entry 0 the index wraps to 0xffff, and the next write that would
 * log exits instead (reason 62, "page-modification log full") without
 * being done.  A page is logged again only once software has cleared its
 * dirty flag and flushed cached translations (INVEPT).
 *
 * ferry uses it for the dirty log (hv/mm/dirty.h, "Hardware dirty
 * tracking"): vmx.c turns it on and off per vCPU at entry and drains at
 * every exit.
 */
#ifndef FERRY_ARCH_X86_VMX_PML_H
#define FERRY_ARCH_X86_VMX_PML_H

#include <stdbool.h>
#include <stdint.h>
#include "hv/mm/dirty.h"

#define PML_ENTRIES	512
#define PML_INDEX_FIRST	(PML_ENTRIES - 1)	/* the value to start from */
#define PML_INDEX_FULL	0xffffu			/* after entry 0 was written */

/* The tracker the VMX back end registers when the CPU has PML and EPT A/D. */
extern const struct dirty_hw vmx_pml_tracker;

/* The index to start a log from: 511, or lower for `debug dirtylog pml N`
 * (dirty_hw_entries: only the first N entries, log-full exits sooner). */
uint16_t vmx_pml_top(void);

/*
 * Hand the valid entries of one log (buf, 512 entries), started at index
 * top (vmx_pml_top) and whose index field now reads `index`, to the dirty
 * log: entries index+1 .. top, or 0 .. top after a wrap (0xffff).  full:
 * the drain is for a log-full exit.  An index that can be neither (above
 * top, but not 0xffff: the CPU never writes one) counts as bad and all
 * 512 entries are taken: a page marked too many is sent twice, one missed
 * would be lost.  Returns the entries handed over; the caller starts the
 * log again.
 */
unsigned vmx_pml_drain(struct dirty_log *log, const uint64_t *buf, uint64_t index,
		       uint16_t top, bool full);

#endif
