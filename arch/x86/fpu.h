/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Guest x87/SSE/AVX state, switched between vCPUs sharing a CPU.  ferry's
 * own code never uses these registers (built with -mgeneral-regs-only and
 * checked by tools/check-fpu.sh), so a vCPU's state simply stays in the
 * registers across its exits and only moves when another vCPU runs.
 */
#ifndef FERRY_ARCH_X86_FPU_H
#define FERRY_ARCH_X86_FPU_H

#include <stdint.h>

/* Standard-format XSAVE area (legacy region + header + components). */
void fpu_area_init(void *area);		/* the state after reset (FCW 0x37f, MXCSR 0x1f80) */
void fpu_save(void *area);		/* 64-byte aligned, 4 KiB */
void fpu_restore(const void *area);
uint64_t fpu_host_xcr0(void);		/* 0 without XSAVE */
void fpu_set_xcr0(uint64_t xcr0);	/* load a guest's XCR0 (no-op without XSAVE) */

#endif
