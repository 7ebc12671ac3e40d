/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The portable CPU state of one vCPU: the same struct on Intel and AMD, so
 * that moving a guest between them is a copy.  Back ends convert it to and
 * from their VMCS/VMCB (vmm_ops.get_state / set_state); migration sends it
 * as plain data.  x87/SSE/AVX state is not here: the core keeps it in the
 * standard XSAVE layout (struct vcpu.fpu), the same on both vendors.
 */
#ifndef FERRY_HV_CPU_STATE_H
#define FERRY_HV_CPU_STATE_H

#include <stdbool.h>
#include <stdint.h>

/* General registers in x86 encoding order (ModRM register numbers). */
enum gpr {
	GPR_RAX, GPR_RCX, GPR_RDX, GPR_RBX, GPR_RSP, GPR_RBP, GPR_RSI, GPR_RDI,
	GPR_R8, GPR_R9, GPR_R10, GPR_R11, GPR_R12, GPR_R13, GPR_R14, GPR_R15,
	GPR_COUNT
};

/*
 * A segment register.  attr holds the descriptor's access byte in bits 0-7
 * (type, S, DPL, P) and its flags in bits 8-11 (AVL, L, D/B, G): the AMD
 * VMCB encoding.  A segment with P clear is "unusable" in VMX terms.
 */
struct seg {
	uint16_t sel;
	uint16_t attr;
	uint32_t limit;		/* expanded byte limit (granularity applied) */
	uint64_t base;
};

#define SEG_ATTR_P	(1u << 7)
#define SEG_ATTR_L	(1u << 9)
#define SEG_ATTR_DB	(1u << 10)
#define SEG_ATTR_G	(1u << 11)

struct dtable {
	uint64_t base;
	uint16_t limit;
};

/* An event being delivered to the guest (Intel SDM 24.8.3, APM 15.20). */
enum event_type {
	EVENT_EXTINT = 0,	/* external interrupt */
	EVENT_NMI = 2,
	EVENT_EXCEPTION = 3,
	EVENT_SOFTINT = 4,	/* INT n */
};

struct event {
	bool valid;
	uint8_t type;		/* enum event_type */
	uint8_t vector;
	bool has_error;
	uint32_t error;
};

/* Interrupt shadow and NMI blocking. */
#define INTR_SHADOW_STI		(1u << 0)
#define INTR_SHADOW_MOV_SS	(1u << 1)
#define INTR_NMI_BLOCKED	(1u << 3)

struct cpu_state {
	uint64_t gpr[GPR_COUNT];
	uint64_t rip, rflags;
	uint64_t cr0, cr2, cr3, cr4, cr8;
	uint64_t efer, xcr0;
	uint64_t dr0, dr1, dr2, dr3, dr6, dr7;
	struct seg es, cs, ss, ds, fs, gs, ldtr, tr;
	struct dtable gdtr, idtr;
	/* MSRs a guest owns (the ones the MSR policy lets it write) */
	uint64_t star, lstar, cstar, sfmask, kernel_gs_base;
	uint64_t sysenter_cs, sysenter_esp, sysenter_eip;
	uint64_t pat;
	/* MSRs the core emulates (back ends ignore these) */
	uint64_t mtrr_def_type, misc_enable;
	uint32_t interruptibility;	/* INTR_* */
	struct event pending;		/* event whose delivery an exit interrupted */
};

#endif
