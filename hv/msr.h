/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The guests' MSRs: an explicit allow-list over the portable CPU state.
 * Anything not listed raises #GP in the guest, as on a CPU without it.
 */
#ifndef FERRY_HV_MSR_H
#define FERRY_HV_MSR_H

#include <stdbool.h>
#include <stdint.h>
#include "hv/cpu_state.h"

#define MSR_IA32_TSC		0x10
#define MSR_IA32_FEATURE_CONTROL 0x3a
#define MSR_IA32_UCODE_REV	0x8b
#define MSR_IA32_MTRRCAP	0xfe
#define MSR_IA32_SYSENTER_CS	0x174
#define MSR_IA32_SYSENTER_ESP	0x175
#define MSR_IA32_SYSENTER_EIP	0x176
#define MSR_IA32_MISC_ENABLE	0x1a0
#define MSR_IA32_PAT		0x277
#define MSR_IA32_MTRR_DEF_TYPE	0x2ff
#define MSR_EFER_		0xc0000080
#define MSR_STAR		0xc0000081
#define MSR_LSTAR		0xc0000082
#define MSR_CSTAR		0xc0000083
#define MSR_SFMASK		0xc0000084
#define MSR_FSBASE		0xc0000100
#define MSR_GSBASE		0xc0000101
#define MSR_KERNELGSBASE	0xc0000102

/* What an MSR access did: done, or #GP for the guest. */
enum msr_status { MSR_DONE, MSR_GP };

/*
 * Whether index lives in struct cpu_state.  For the others msr_read and
 * msr_write never touch s, so an exit handler need not fetch the state.
 */
bool msr_in_state(uint32_t index);
/*
 * s is the vCPU's state (FS/GS base included); guest_tsc its TSC now.
 * A write may change s (the caller then writes it back) or ask for a new
 * guest TSC value (*new_tsc, *tsc_written = true).
 */
enum msr_status msr_read(const struct cpu_state *s, uint32_t index, uint64_t guest_tsc,
			 uint64_t *value);
enum msr_status msr_write(struct cpu_state *s, uint32_t index, uint64_t value,
			  bool *tsc_written, uint64_t *new_tsc);
/* Reset values of the core-emulated MSRs. */
void msr_reset(struct cpu_state *s);

#endif
