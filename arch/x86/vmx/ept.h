/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Intel EPT (SDM Vol 3C 29.3 "The Extended Page Table Mechanism (EPT)";
 * chapter 28.2 in editions before 2023, same section titles): the
 * entry format for the engine in arch/x86/paging.h, the EPTP value, and
 * the dirty-flag helper of PML dirty logging (ept_clean_dirty).
 *
 * Entry bits (SDM Vol 3C 29.3.2, Tables 29-1 to 29-6):
 *   2:0   read, write, execute; all clear = not present.  Write without
 *         read is an EPT misconfiguration (29.3.3.1 "EPT Misconfigurations")
 *         and is refused; execute-only needs IA32_VMX_EPT_VPID_CAP bit 0
 *         (the caller's business: the format accepts it).
 *   5:3   leaf memory type: WB (6) for RAM, UC (0) for device memory
 *         ("EPT and Memory Typing"); reserved in table entries.
 *   6     leaf: ignore PAT.  Always set, so the type is exactly the EPT
 *         one: guest PAT cannot make RAM uncached behind ferry's back,
 *         and no WB/UC alias of the same frame can arise.
 *   7     PDPTE/PDE: maps a 1 GiB / 2 MiB page.
 *   8, 9  accessed, dirty ("Accessed and Dirty Flags for EPT"), set by
 *         the CPU only when EPTP bit 6 enables them; dirty in leaves only.
 *   51:12 frame or next table.
 * Neither PT_USER nor PT_GLOBAL exists in EPT: both are refused.
 */
#ifndef FERRY_ARCH_X86_VMX_EPT_H
#define FERRY_ARCH_X86_VMX_EPT_H

#include <stdbool.h>
#include <stdint.h>
#include "arch/x86/paging.h"

#define EPT_R		(1ull << 0)
#define EPT_W		(1ull << 1)
#define EPT_X		(1ull << 2)
#define EPT_MT_SHIFT	3
#define EPT_MT_MASK	(7ull << EPT_MT_SHIFT)
#define EPT_MT_UC	0ull
#define EPT_MT_WB	6ull
#define EPT_IPAT	(1ull << 6)
#define EPT_PS		(1ull << 7)
#define EPT_A		(1ull << 8)
#define EPT_D		(1ull << 9)
#define EPT_ADDR	0x000ffffffffff000ull

/* EPTP (SDM Vol 3C 25.6.11 "Extended-Page-Table Pointer (EPTP)", 24.6.11
 * in older editions). */
#define EPTP_MT_WB	6ull		/* bits 2:0: type of the walk's accesses */
#define EPTP_WALK_4	(3ull << 3)	/* bits 5:3: page-walk length - 1 */
#define EPTP_AD		(1ull << 6)	/* bit 6: enable accessed/dirty flags */

extern const struct pt_format ept_format;

/*
 * Clear the dirty flag (bit 9) of every leaf mapping a 4 KiB page of
 * [gpa, gpa + size) (holes skipped; a large leaf is cleaned whole), with
 * an atomic AND, as the CPU sets flags concurrently; if one was set, the
 * table asks for a flush (pt_needs_flush): a cached translation may still
 * say dirty, and the next write through it would not be logged.  For the
 * dirty log (hv/mm/dirty.h struct dirty_hw); 0 always.
 */
int ept_clean_dirty(struct page_table *pt, uint64_t gpa, uint64_t size);

/* The EPTP VM-execution control for pt: WB walks, 4 levels, A/D flags if
 * ad (only when IA32_VMX_EPT_VPID_CAP bit 21 says the CPU has them). */
uint64_t ept_eptp(const struct page_table *pt, bool ad);

#endif
