/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The hardware side of the VMX back end: per-CPU state, per-vCPU state,
 * and where each VMCS lives (hw.c), shared by hw.c and vmx.c.
 *
 * Where a VMCS is.  A VMCS is "active" on at most one CPU, whose cache may
 * hold parts of it (Intel SDM Vol. 3C "VMCS Status" / "Software Use of
 * Virtual-Machine Control Structures"): it must be VMCLEARed *on that CPU*
 * before another CPU may VMPTRLD it.  ferry keeps a VMCS active on the CPU
 * that last ran the vCPU (so VMRESUME works between exits).  A vmm_ops call
 * made elsewhere (creation on the shell CPU, destruction, state for
 * migration) first has the owning CPU VMCLEAR it, with an IPI (VMX_VEC_
 * RELEASE) if need be, then borrows it: VMPTRLD, the work, VMCLEAR.  A run
 * on a new CPU takes it over the same way and flushes the vCPU's EPT and
 * VPID translations there.  Two vmm_ops calls for one vCPU never run at
 * once (the core's rule).
 *
 * Guest registers outside the VMCS (CR2, DR0-3, DR6, STAR, LSTAR, CSTAR,
 * SFMASK, KERNEL_GS_BASE) stay in the CPU registers after an exit: ferry
 * uses none of them (no SYSCALL, no SWAPGS, no debug registers, and a page
 * fault in ferry is fatal anyway).  Each CPU records whose values it holds
 * and saves them only when another vCPU needs the registers or the VMCS
 * leaves the CPU.  Invariant: regs_cpu is -1 or equal to active_cpu.
 */
#ifndef FERRY_ARCH_X86_VMX_HW_H
#define FERRY_ARCH_X86_VMX_HW_H

#include <stdbool.h>
#include <stdint.h>
#include "arch/x86/apic.h"
#include "arch/x86/vmx/vmx.h"
#include "hv/lib/spinlock.h"

/* IPI asking a CPU to VMCLEAR a VMCS it holds.  Next to ferry's own
 * vectors (arch/x86/apic.h: 0xf0-0xf2, 0xff); to be listed there. */
#define VMX_VEC_RELEASE	VEC_VMX_RELEASE	/* reserved in arch/x86/apic.h */

struct vmm_vcpu;

/* Per vCPU (vcpu->arch).  Legend: (c) set by vcpu_init; (o) written by
 * the CPU in active_cpu/regs_cpu, or by the vmm_ops caller while the VMCS
 * is clear (active_cpu == -1); (v) the CPU running the vCPU. */
struct vmx_vcpu {
	struct vmm_vcpu *v;			/* (c) */
	uint64_t vmcs_pa;		/* (c) 4 KiB VMCS region */
	uint16_t vpid;			/* (c) 0 without VPIDs */
	int active_cpu;			/* (o) CPU the VMCS is active on, -1: clear */
	int regs_cpu;			/* (o) CPU holding soft.hw in its registers, -1 */
	bool launched;			/* (o) VMRESUME next (with active_cpu) */
	int last_cpu;			/* (v) CPU of the last entry, -1 never */
	uint64_t gen_seen;		/* (v) vm->gpa_gen last flushed for there */
	bool failed;			/* (v) an entry failed: never enter again */
	uint64_t pml_pa;		/* (c) its page-modification log, 0: no PML */
	bool pml_on;			/* (v) PML and EPT A/D on in the VMCS */
	uint16_t pml_top;		/* (v) the PML index it started from */
	struct vmx_soft soft;		/* (o) */
	char what[192];			/* (v) an unhandled/failed exit in words */
};

/* Per physical CPU (percpu.virt), set up by vmx_cpu_enable, never freed.
 * Everything belongs to that CPU except req (any CPU, under req_lock). */
struct vmx_cpu {
	unsigned int index;
	uint64_t vmxon_pa;
	struct vmx_vcpu *current;	/* VMCS loaded by VMPTRLD here, or NULL */
	struct vmx_vcpu *regs_owner;	/* whose guest registers are loaded */
	spinlock_t req_lock;		/* one remote release request at a time */
	struct vmx_vcpu *req;		/* (atomic) release this VMCS, then NULL */
	int req_rc;			/* its VMCLEAR's result, before req is NULL */
	uint64_t vmcs_errors;		/* failed VMREAD/VMWRITE/VMCLEAR (ferry bugs) */
};

/* Per VM (vm->arch). */
struct vmx_vm {
	uint64_t eptp;			/* (c) */
};

extern struct vmx_config vmx_cfg;	/* the boot CPU's; constant once set */
extern uint64_t vmx_msr_bitmap_pa;	/* shared by every VMCS, read-only */
extern const struct vmcs_io vmx_hw_io;	/* VMREAD/VMWRITE on the current VMCS */

int vmx_cpu_enable(void);
struct vmx_cpu *vmx_this_cpu(void);
uint64_t vmx_region_alloc(void);	/* VMXON/VMCS region: 0 if none */

/* Interrupts off for all of these. */
int vmx_vmcs_load(struct vmx_vcpu *vx);	/* 0: was active here, 1: newly, <0 */
void vmx_vmcs_release_local(struct vmx_vcpu *vx);
int vmx_vmcs_release(struct vmx_vcpu *vx);	/* wherever it is */
void vmx_regs_load(struct vmx_vcpu *vx);	/* before entry */
void vmx_regs_sync(struct vmx_vcpu *vx);	/* registers -> soft.hw */
void vmx_regs_drop(struct vmx_vcpu *vx);	/* soft.hw is newer than them */
void vmx_flush_ept(uint64_t eptp);
void vmx_flush_vpid(uint16_t vpid);

/* entry.S: load v->gpr, VMLAUNCH (launched == 0) or VMRESUME, save them
 * back on exit.  0 after an exit, 1 VMfailInvalid, 2 VMfailValid. */
int vmx_enter(uint64_t *gpr, int launched);
extern char vmx_exit_point[];

#endif
