/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Inside the AMD SVM back end: its per-CPU, per-VM and per-vCPU data and
 * the pure functions behind svm_ops (hv/vmm.h), split from the code that
 * touches the CPU so that they run in host unit tests too.
 *
 *   svm.c    svm_ops, cpu_enable, memory, run()              hardware
 *   entry.S  the world switch (CLGI ... VMRUN ... STGI)      hardware
 *   vmcb.c   VMCB set-up, permission maps, events            pure
 *   state.c  struct cpu_state <-> VMCB                       pure
 *   exit.c   #VMEXIT -> struct vm_exit, instruction length   pure
 *   asid.c   ASID allocation and TLB flush decisions         pure
 *
 * Ownership legend: (c) set at creation, then read-only; (p) owned by the
 * physical CPU it belongs to; (v) owned by the CPU running the vCPU.
 */
#ifndef FERRY_ARCH_X86_SVM_SVM_H
#define FERRY_ARCH_X86_SVM_SVM_H

#include <stdbool.h>
#include <stdint.h>
#include "arch/x86/emulate/gwalk.h"
#include "arch/x86/svm/vmcb.h"
#include "hv/cpu_state.h"
#include "hv/vmm.h"

/* ---- ASIDs (asid.c) -------------------------------------------------- */

/*
 * Per physical CPU, as in KVM: ASIDs 1..max are handed out in order; when
 * they run out the generation is bumped, the whole TLB is flushed and
 * numbering starts again, so a vCPU whose generation is old must take a
 * new ASID.  ASID 0 is the host's.
 */
struct svm_asid_cpu {
	uint64_t generation;	/* (p) >= 1; bumped at every roll-over */
	uint32_t next;		/* (p) next ASID to hand out; > max: roll over */
	uint32_t max;		/* (c) highest ASID (CPUID 8000_000Ah EBX - 1) */
	bool flush_by_asid;	/* (c) TLB_CONTROL 3 (CPUID 8000_000Ah EDX[6]) */
};

/* Per vCPU: which ASID it has and what its TLB entries may still hold. */
struct svm_asid_vcpu {
	uint32_t asid;		/* (v) valid on `cpu` while generation matches */
	int cpu;		/* (v) CPU index the ASID came from, -1 none */
	uint64_t generation;	/* (v) that CPU's generation at the time; 0 none */
	uint64_t gpa_gen;	/* (v) vm->gpa_gen its translations reflect */
	uint64_t flushes;	/* (v) statistics: TLB flushes asked for */
	uint64_t new_asids;	/* (v) statistics: ASIDs taken */
};

void svm_asid_cpu_init(struct svm_asid_cpu *c, uint32_t nr_asids, bool flush_by_asid);
void svm_asid_vcpu_init(struct svm_asid_vcpu *v);
/*
 * Before a VMRUN of vCPU v on CPU `cpu` whose VM is at gpa_gen: choose
 * v->asid and return the TLB_CONTROL value (VMCB_TLB_*) the run needs.
 */
uint8_t svm_asid_prepare(struct svm_asid_cpu *c, int cpu, struct svm_asid_vcpu *v,
			 uint64_t gpa_gen);
/* Drop v's ASID: its next run starts with an empty TLB. */
void svm_asid_flush(struct svm_asid_vcpu *v);

/* ---- per-object data ------------------------------------------------------- */

/* One per physical CPU, in this_cpu()->virt; never freed. */
/* PAUSEs in a row before the intercept fires (KVM's default). */
#define SVM_PAUSE_FILTER_COUNT	3000

struct svm_cpu {
	uint64_t hsave_pa;	/* (c) VM_HSAVE_PA area, 4 KiB */
	uint64_t host_vmcb_pa;	/* (c) host FS/GS/TR/LDTR/..., saved once for VMLOAD */
	struct svm_asid_cpu asid;	/* (p) */
	uint64_t hw_dr[4];	/* (p) DR0-3 as they are in this CPU now */
	bool nrips;		/* (c) NRIP-save: VMCB next_rip is filled */
	bool gbpages;		/* (c) 1 GiB pages (walker reserved-bit checks) */
	unsigned maxphyaddr;	/* (c) host MAXPHYADDR, what the hardware walked with */
};

/* One per VM, in vm->arch. */
struct svm_vm {
	uint64_t iopm_pa;	/* (c) 3 frames, all ones: every port exits */
	uint64_t msrpm_pa;	/* (c) 2 frames: see svm_msrpm_fill() */
};

/* One per vCPU, in vcpu->arch. */
struct svm_vcpu {
	struct vmcb *vmcb;	/* (c) the VMCB page (direct map) */
	uint64_t vmcb_pa;	/* (c) */
	struct svm_asid_vcpu asid;	/* (v) */
	uint64_t dr[4];		/* (v) guest DR0-3 between runs */
	uint64_t mtrr_def_type;	/* (v) core-emulated MSRs, kept for get_state */
	uint64_t misc_enable;	/* (v) */
	bool want_window;	/* (v) interrupt-window request (V_IRQ trick) */
	bool nmi_blocked;	/* (v) in the guest's NMI handler (svm_nmi_block) */
	bool iret_seen;		/* (v) its IRET was intercepted, at iret_rip */
	uint64_t iret_rip;	/* (v) */
	uint64_t sysenter_esp;	/* (v) the guest's whole SYSENTER_ESP/EIP: the */
	uint64_t sysenter_eip;	/* CPU keeps 32 bits of each (they always exit) */
};

static inline struct svm_vcpu *svm_vcpu_of(const struct vmm_vcpu *v)
{
	return v->arch;
}

/*
 * The world switch (entry.S), called with interrupts disabled: CLGI,
 * VMLOAD guest, the guest's GPRs from gpr[] (all but RAX and
 * RSP, which VMRUN takes from the VMCB), VMRUN, the guest's GPRs back into
 * gpr[], VMSAVE guest, VMLOAD host, STGI.  IF is set between CLGI and STGI
 * so that VMRUN saves IF = 1 as the host's: with V_INTR_MASKING physical
 * interrupts then end the run (APM 15.21.1) and stay pending, taken when
 * the caller enables interrupts.  gpr[] is indexed by enum gpr.
 */
void svm_vmrun(uint64_t guest_vmcb_pa, uint64_t host_vmcb_pa, uint64_t *gpr);

/* ---- VMCB set-up and events (vmcb.c) ----------------------------------- */

/* A fresh VMCB: intercepts, permission maps, nested paging, V_INTR_MASKING. */
void svm_vmcb_init(struct vmcb *vmcb, uint64_t iopm_pa, uint64_t msrpm_pa, uint64_t ncr3);
/* Fill the permission maps (SVM_IOPM_SIZE / SVM_MSRPM_SIZE bytes). */
void svm_iopm_fill(uint8_t *iopm);
void svm_msrpm_fill(uint8_t *msrpm);
/* Does the map make this MSR access exit?  (MSRs outside the map: yes.) */
bool svm_msrpm_intercepted(const uint8_t *msrpm, uint32_t msr, bool write);
bool svm_iopm_intercepted(const uint8_t *iopm, uint16_t port);

/* EVENTINJ encoding of e (see vmcb.c); 0 if nothing is to be injected. */
uint64_t svm_event_encode(const struct event *e, bool protected_mode);
/* The event in EVENTINJ/EXITINTINFO format f (invalid if V is clear). */
void svm_event_decode(uint64_t f, struct event *e);

/* vmm_ops entries that only touch the VMCB. */
void svm_inject(struct vmm_vcpu *v, const struct event *e);
bool svm_intr_allowed(struct vmm_vcpu *v);
void svm_want_intr_window(struct vmm_vcpu *v, bool on);
/*
 * NMI blocking, which the VMCB has no bit for without vNMI (KVM's way):
 * from the injection of an NMI the guest blocks NMIs until its IRET
 * retires.  The IRET intercept fires before the IRET runs; blocking ends
 * at the first exit after RIP has moved off it (svm_handle_exit), so an
 * IRET that faults keeps it.  On: the IRET intercept is set.
 */
void svm_nmi_block(struct svm_vcpu *sv, bool on);
void svm_skip_insn(struct vmm_vcpu *v, uint8_t len);
void svm_set_tsc(struct vmm_vcpu *v, uint64_t offset, uint64_t mult);

/* ---- CPU state (state.c) ------------------------------------------------ */

void svm_get_state(struct vmm_vcpu *v, struct cpu_state *s);
void svm_set_state(struct vmm_vcpu *v, const struct cpu_state *s);
/* The architectural state after RESET (APM Vol. 2 14.1.3). */
void svm_reset_state(struct cpu_state *s);

/* ---- exits (exit.c) ------------------------------------------------------ */

/* What exit decoding needs besides the VMCB. */
struct svm_exit_env {
	bool nrips;		/* trust VMCB next_rip */
	unsigned maxphyaddr;	/* for the guest page walk (32..52) */
	bool gbpages;
	gwalk_read_fn read_gpa;	/* guest-physical reads (vm_read_gpa) */
	void *ctx;
};

/*
 * After a #VMEXIT: re-arm EXITINTINFO as EVENTINJ, then turn the exit into
 * *exit; exits the back end settles itself (INVD, WBINVD, ICEBP, MONITOR,
 * MWAIT, #DB/#AC reflection, #UD other than VMCALL, MOV to CR4) become
 * EXIT_NONE.
 */
void svm_handle_exit(struct vmm_vcpu *v, const struct svm_exit_env *env, struct vm_exit *exit);
/* Name of an SVM exit code (APM Appendix C), "unknown" if none. */
const char *svm_exit_name(uint64_t code);

#endif
