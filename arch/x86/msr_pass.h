/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The MSRs a guest reads and writes without an exit, for both back ends'
 * permission maps (VMX MSR bitmap, SVM MSRPM).  Everything else exits to
 * the core's allow-list (hv/msr.c).
 */
#ifndef FERRY_ARCH_X86_MSR_PASS_H
#define FERRY_ARCH_X86_MSR_PASS_H

#include <stddef.h>
#include <stdint.h>

#define MSR_PASS_VMX	(1u << 0)
#define MSR_PASS_SVM	(1u << 1)

struct msr_pass {
	uint32_t msr;
	uint8_t vendors;	/* MSR_PASS_*: the back ends that open it */
};

extern const struct msr_pass msr_pass_list[];
extern const size_t msr_pass_count;

#endif
