/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Inside the Intel VMX back end: the pieces that are pure logic (host unit
 * tested) and the small interface they reach the VMCS through.
 *
 *   ctl.c    capability MSRs -> every control value, CR masks, MSR bitmap
 *   names.c  VM-instruction errors and exit reasons in words
 *   state.c  struct cpu_state <-> VMCS, segment access rights, events
 *   exit.c   VM-exit information -> struct vm_exit, exit fix-ups
 *   cr.c     guest MOV to/from CR0/CR3/CR4/CR8, CLTS, LMSW
 *
 * Hardware lives in insn.h (VMX instructions), hw.c (VMXON, where each
 * VMCS is active), vmx.c (struct vmm_ops vmx_ops) and entry.S.
 */
#ifndef FERRY_ARCH_X86_VMX_VMX_H
#define FERRY_ARCH_X86_VMX_VMX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "arch/x86/emulate/decode.h"
#include "arch/x86/emulate/gwalk.h"
#include "hv/cpu_state.h"
#include "hv/vmm.h"

/*
 * How the pure code reads and writes VMCS fields: VMREAD/VMWRITE on the
 * current VMCS in the hypervisor, an array in unit tests.
 */
struct vmcs_io {
	uint64_t (*read)(void *ctx, uint32_t field);
	void (*write)(void *ctx, uint32_t field, uint64_t value);
	void *ctx;
};

static inline uint64_t vmcs_rd(const struct vmcs_io *io, uint32_t field)
{
	return io->read(io->ctx, field);
}

static inline void vmcs_wr(const struct vmcs_io *io, uint32_t field, uint64_t value)
{
	io->write(io->ctx, field, value);
}

/* The capability MSRs as read (appendix A); true_* are 0 without
 * IA32_VMX_BASIC bit 55, proc2 is 0 without secondary controls. */
struct vmx_caps {
	uint64_t basic, misc, ept_vpid;
	uint64_t pin, proc, proc2, exit, entry;
	uint64_t true_pin, true_proc, true_exit, true_entry;
	uint64_t cr0_fixed0, cr0_fixed1, cr4_fixed0, cr4_fixed1;
};

/*
 * Everything derived from the capabilities, once per CPU at bring-up; the
 * boot CPU's copy is used for every VMCS (other CPUs must match it).
 * Constant afterwards.
 */
/* PAUSE-loop exiting: KVM's defaults (a gap of 128 TSC ticks between
 * PAUSEs still counts as one loop; a loop of 4096 ticks exits). */
#define VMX_PLE_GAP	128
#define VMX_PLE_WINDOW	4096
#define VMX_BACKSTOP_HZ	100	/* the preemption timer's rate (vmx_config) */

struct vmx_config {
	uint32_t revision;		/* VMCS/VMXON region revision id */
	bool pa32;			/* regions must lie below 4 GiB */
	uint32_t pin, proc, proc2;	/* execution controls (no interrupt window) */
	uint32_t exit, entry;		/* exit/entry controls (no IA-32e mode) */
	bool vpid;			/* VPIDs in use (with INVVPID) */
	bool vnmi;			/* virtual NMIs */
	bool invept_single, invvpid_single;	/* else the global/all type */
	bool ept_ad, pml;		/* available; both on while PML logs (pml.h) */
	bool tsc_scaling;		/* available; on while the guest's TSC is scaled */
	/* The VMX-preemption timer, a backstop that ends every run within
	 * VMX_BACKSTOP_HZ^-1 s: Bochs (2.7 to 3.0) keeps external interrupts
	 * masked for a whole run entered with the guest's IF clear, even with
	 * external-interrupt exiting (its VM entry re-evaluates the mask before
	 * it counts as in the guest), so a guest spinning with interrupts off
	 * (Linux's decompressor: 90 s) could be neither kicked nor preempted.
	 * Bochs counts this timer down all the same.  On hardware it ends a run
	 * that a host interrupt would have ended anyway. */
	bool preempt_timer;
	uint8_t preempt_shift;		/* the timer counts TSC >> this (IA32_VMX_MISC) */
	uint64_t ept_max_page;		/* PT_SIZE_2M or PT_SIZE_4K */
	/* CR0/CR4: bits the CPU forces to 1 / to 0 in VMX operation (the
	 * fixed MSRs; PE and PG are free with unrestricted guest), and the
	 * guest/host masks: exactly those bits, so a guest write that touches
	 * them exits and the guest reads its own value from the shadow. */
	uint64_t cr0_must1, cr0_must0, cr4_must1, cr4_must0;
	uint64_t cr0_mask, cr4_mask;
};

/* Guest registers that VMX leaves in the CPU rather than the VMCS.  While
 * a vCPU owns a CPU they live there (see hw.c); otherwise here. */
struct vmx_guest_regs {
	uint64_t cr2, dr0, dr1, dr2, dr3, dr6;
	uint64_t star, lstar, cstar, sfmask, kernel_gs_base;
};

/* Per-vCPU state the VMCS does not hold.  Owned by the CPU running the
 * vCPU (v); changed only inside vmm_ops calls. */
struct vmx_soft {
	struct vmx_guest_regs hw;	/* valid when not loaded in a CPU */
	uint64_t mtrr_def_type, misc_enable;	/* the core's, kept as given */
	uint32_t proc;			/* primary controls as in the VMCS */
	uint32_t proc2_tsc;		/* PROC2_TSC_SCALING or 0, with vmx_cfg.proc2 */
	bool flush_vpid;		/* an emulated CR write needs INVVPID */
};

/* The VM-exit information fields of one exit, read once. */
struct vmx_exit_info {
	uint32_t reason;		/* with bit 31 (entry failure) */
	uint64_t qual;
	uint64_t rip;
	uint64_t gpa;			/* EPT violation/misconfiguration only */
	uint32_t insn_len;
	uint32_t intr_info, intr_error;	/* exception or NMI exits only */
	uint32_t idt_info, idt_error;	/* an event whose delivery was cut */
};

/* What the back end does with an exit besides reporting it. */
enum vmx_action {
	VMX_ACT_CORE,		/* give *exit to the core */
	VMX_ACT_NMI,		/* host NMI: run the host's handler, then EXTERNAL */
	VMX_ACT_SKIP,		/* INVD/WBINVD: a no-op, step over it */
	VMX_ACT_UD,		/* MONITOR/MWAIT: inject #UD */
	VMX_ACT_CR,		/* control-register access: emulate (cr.c) */
	VMX_ACT_DB,		/* #DB: DR6 from vmx_db_exit(), inject it back */
	VMX_ACT_ICEBP,		/* ICEBP: step over it, inject #DB */
	VMX_ACT_REFLECT,	/* #AC: inject it back as it came */
	VMX_ACT_UD_CHECK,	/* #UD: VMMCALL is the hypercall, else inject it back */
	VMX_ACT_FAILED,		/* VM entry failed: the vCPU never runs again */
	VMX_ACT_MCE,		/* a machine check (exception 18, or exit 41): report, stop */
	VMX_ACT_COUNT
};

/* ctl.c */
int vmx_adjust_ctl(uint32_t want, uint32_t optional, uint64_t cap_msr, uint32_t *out);
int vmx_config_derive(const struct vmx_caps *caps, struct vmx_config *cfg,
		      char *why, size_t whylen);
void vmx_msr_bitmap_init(uint8_t *bitmap);		/* 4 KiB */
bool vmx_msr_bitmap_exits(const uint8_t *bitmap, uint32_t msr, bool write);

/* names.c */
const char *vmx_insn_error_name(uint32_t error);
const char *vmx_exit_reason_name(uint32_t reason);	/* basic reason */

/* state.c */
uint32_t vmx_attr_to_ar(uint16_t attr);
uint16_t vmx_ar_to_attr(uint32_t ar);
uint64_t vmx_cr_view(uint64_t real, uint64_t shadow, uint64_t mask);
void vmx_state_read(const struct vmcs_io *io, const struct vmx_config *cfg,
		    const struct vmx_soft *soft, struct cpu_state *s);
void vmx_state_write(const struct vmcs_io *io, const struct vmx_config *cfg,
		     struct vmx_soft *soft, const struct cpu_state *s);
int vmx_event_encode(const struct event *e, bool protected_mode, uint32_t *info,
		     uint32_t *error, uint32_t *insn_len);
int vmx_event_write(const struct vmcs_io *io, const struct event *e);
bool vmx_intr_allowed(const struct vmcs_io *io);
bool vmx_skip_insn(const struct vmcs_io *io, uint8_t len);

/* exit.c */
void vmx_exit_info_read(const struct vmcs_io *io, struct vmx_exit_info *x);
enum vmx_action vmx_exit_decode(const struct vmx_exit_info *x, const uint64_t *gpr,
				struct vm_exit *e, char *what, size_t whylen);
void vmx_exit_fixup(const struct vmcs_io *io, const struct vmx_exit_info *x);
uint64_t vmx_db_exit(const struct vmcs_io *io, const struct vmx_exit_info *x);
int vmx_fetch_insn(const struct vmcs_io *io, const struct vmx_config *cfg, struct gwalk_env *g,
		   struct x86_insn *insn);
int vmx_ud_hypercall(const struct vmcs_io *io, const struct vmx_config *cfg,
		     struct gwalk_env *g);

/* cr.c: emulate a control-register access exit. */
struct vmx_cr_env {
	const struct vmcs_io *io;
	const struct vmx_config *cfg;
	struct vmx_soft *soft;
	uint64_t *gpr;			/* the vCPU's 16 registers */
	/* Guest-physical read for PDPTE loads: 0 or negative errno. */
	int (*read_gpa)(void *ctx, uint64_t gpa, void *buf, size_t len);
	void *gpa_ctx;
};
enum vmx_cr_result { VMX_CR_DONE, VMX_CR_GP, VMX_CR_UNHANDLED };
enum vmx_cr_result vmx_cr_access(const struct vmx_cr_env *env, uint64_t qual);
/* After the whole state was written (a restore, an arrival): in PAE paging
 * outside long mode the entry takes the PDPTEs from the VMCS (with EPT),
 * so they are read from CR3 as MOV CR3 would read them; unreadable or
 * with reserved bits set, none is present (the guest's own doing). */
void vmx_cr_load_pdptes(const struct vmx_cr_env *env);

/* caps.c: read this CPU's capability MSRs. */
void vmx_caps_read(struct vmx_caps *caps);

#endif
