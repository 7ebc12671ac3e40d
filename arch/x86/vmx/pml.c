/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Page-Modification Logging: draining a vCPU's log into the dirty log, and
 * the tracker (struct dirty_hw) that cleans EPT dirty flags.  The hardware
 * facts are in pml.h; the switching on and off is vmx.c's.
 */
#include "arch/x86/vmx/ept.h"
#include "arch/x86/vmx/pml.h"

const struct dirty_hw vmx_pml_tracker = {
	.name = "pml",
	.clean = ept_clean_dirty,
};

uint16_t vmx_pml_top(void)
{
	unsigned n = dirty_hw_entries();

	return n && n < PML_ENTRIES ? (uint16_t)(n - 1) : PML_INDEX_FIRST;
}

unsigned vmx_pml_drain(struct dirty_log *log, const uint64_t *buf, uint64_t index,
		       uint16_t top, bool full)
{
	bool bad = top >= PML_ENTRIES || (index > top && index != PML_INDEX_FULL);
	unsigned first = index <= top ? (unsigned)index + 1 : 0;
	unsigned end = bad ? PML_ENTRIES : (unsigned)top + 1;

	if (bad)
		first = 0;
	dirty_log_hw_drained(log, buf + first, end - first, full, bad);
	return end - first;
}
