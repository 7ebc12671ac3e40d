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

unsigned vmx_pml_drain(struct dirty_log *log, const uint64_t *buf, uint64_t index,
		       bool full)
{
	bool bad = index >= PML_ENTRIES && index != PML_INDEX_FULL;
	unsigned first = index < PML_ENTRIES ? (unsigned)index + 1 : 0;

	dirty_log_hw_drained(log, buf + first, PML_ENTRIES - first, full, bad);
	return PML_ENTRIES - first;
}
