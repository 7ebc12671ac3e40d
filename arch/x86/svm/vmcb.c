/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * VMCB set-up, the I/O and MSR permission maps, and the event operations
 * of svm_ops (inject, interrupt window, skip, TSC offset).  Pure: only the
 * VMCB and the maps in memory are touched.
 */
#include <string.h>
#include "arch/x86/cpu.h"
#include "arch/x86/msr_pass.h"
#include "arch/x86/emulate/debug.h"
#include "arch/x86/svm/svm.h"
#include "hv/lib/log.h"
#include "hv/lib/time.h"

#define GUEST_PAT_RESET	0x0007040600070406ull	/* WB WT UC- UC, twice (APM 7.8.1) */
#define RFLAGS_TF	(1ull << 8)

/*
 * What every guest exits on (APM 15.9-15.13).  VMRUN must be intercepted or
 * VMRUN fails (APM 15.5.1).  Not intercepted: CR/DR accesses (the guest
 * owns its paging with NPT), RDTSC (TSC offset; intercepted only while the
 * guest's TSC is scaled: svm_set_tsc), PAUSE (svm.c adds it where the CPU
 * has a pause filter), INVLPG.  RDTSCP is intercepted
 * to raise #UD, as on VMX: the guest's CPUID has no RDTSCP.  RDPMC goes to
 * the core (#GP: the guest has no PMU).  VINTR is added
 * only while an interrupt window is wanted.
 */
#define SVM_I1_ALWAYS (VMCB_I1_INTR | VMCB_I1_NMI | VMCB_I1_SMI | VMCB_I1_INIT |	\
		       VMCB_I1_CPUID | VMCB_I1_INVD | VMCB_I1_HLT | VMCB_I1_INVLPGA |	\
		       VMCB_I1_RDPMC |							\
		       VMCB_I1_IOIO_PROT | VMCB_I1_MSR_PROT | VMCB_I1_TASK_SWITCH |	\
		       VMCB_I1_FERR_FREEZE | VMCB_I1_SHUTDOWN)
#define SVM_I2_ALWAYS (VMCB_I2_VMRUN | VMCB_I2_VMMCALL | VMCB_I2_VMLOAD |		\
		       VMCB_I2_VMSAVE | VMCB_I2_STGI | VMCB_I2_CLGI | VMCB_I2_SKINIT |	\
		       VMCB_I2_RDTSCP |							\
		       VMCB_I2_ICEBP | VMCB_I2_WBINVD | VMCB_I2_MONITOR |		\
		       VMCB_I2_MWAIT | VMCB_I2_MWAIT_COND | VMCB_I2_XSETBV)
/*
 * #DB and #AC are intercepted (and reflected back, exit.c) so that a
 * guest cannot hang the physical CPU in an endless chain of them: the
 * delivery of one raising the next never reaches an instruction boundary
 * where an interrupt could end the run (CVE-2015-5307, CVE-2015-8104).
 * #UD is intercepted so that VMCALL, Intel's hypercall, is ferry's
 * hypercall here as VMMCALL is; any other #UD goes back unchanged.
 * #MC is intercepted so that a machine check while the guest runs is
 * ferry's to report (trap_guest_machine_check), not the guest's.
 */
#define SVM_EXC_ALWAYS (VMCB_EXC(X86_VEC_DB) | VMCB_EXC(X86_VEC_UD) | VMCB_EXC(X86_VEC_AC) | \
			VMCB_EXC(X86_VEC_MC))
/*
 * MOV to CR4 is emulated (exit.c) so that the bits the guest's CPUID
 * hides are #GP whatever the host supports, as on VMX (and QEMU's TCG
 * would end the run with VMEXIT_INVALID for a reserved bit instead).
 * MOV to and from CR8 go to the core, which keeps CR8 in the local APIC's
 * TPR (V_TPR, which only masks virtual interrupts, is not used).
 */
#define SVM_CR_ALWAYS (VMCB_CR_WRITE(4) | VMCB_CR_READ(8) | VMCB_CR_WRITE(8))

/* @pre vmcb is a 4 KiB page; the maps and ncr3 are physical addresses. */
void svm_vmcb_init(struct vmcb *vmcb, uint64_t iopm_pa, uint64_t msrpm_pa, uint64_t ncr3)
{
	struct vmcb_control *c = &vmcb->ctl;

	memset(vmcb, 0, sizeof(*vmcb));
	c->intercept_cr = SVM_CR_ALWAYS;
	c->intercept_exc = SVM_EXC_ALWAYS;
	c->intercept1 = SVM_I1_ALWAYS;
	c->intercept2 = SVM_I2_ALWAYS;
	c->iopm_base_pa = iopm_pa;
	c->msrpm_base_pa = msrpm_pa;
	/* Guest RFLAGS.IF and CR8 act on virtual interrupts only; the host's
	 * IF, saved at VMRUN, masks physical ones (APM 15.21.1). */
	c->int_ctl = VMCB_V_INTR_MASKING;
	c->np_ctl = VMCB_NP_ENABLE;
	c->ncr3 = ncr3;
	vmcb->save.g_pat = GUEST_PAT_RESET;
	vmcb->save.efer = EFER_SVME;	/* VMRUN requires it (APM 15.5.1) */
}

/* ---- permission maps ------------------------------------------------------- */

void svm_iopm_fill(uint8_t *iopm)
{
	memset(iopm, 0xff, SVM_IOPM_SIZE);	/* every port, every size */
}

bool svm_iopm_intercepted(const uint8_t *iopm, uint16_t port)
{
	return iopm[port / 8] & (1u << (port % 8));
}

/*
 * MSRPM (APM 15.11 "MSR Intercepts"): three 2 KiB vectors, two
 * bits per MSR (even: read, odd: write), for MSRs 0000_0000h-0000_1FFFh,
 * C000_0000h-C000_1FFFh and C001_0000h-C001_1FFFh.  MSRs outside them
 * always exit.  Returns the bit number of msr's read bit, or -1.
 */
static long msrpm_bit(uint32_t msr)
{
	static const uint32_t base[3] = { 0x00000000, 0xc0000000, 0xc0010000 };

	for (int i = 0; i < 3; i++)
		if (msr - base[i] < 0x2000)
			return (long)i * 0x800 * 8 + (long)(msr - base[i]) * 2;
	return -1;
}

/* Open the MSRs of the shared pass-through list marked for SVM. */
void svm_msrpm_fill(uint8_t *msrpm)
{
	memset(msrpm, 0xff, SVM_MSRPM_SIZE);
	for (size_t i = 0; i < msr_pass_count; i++) {
		long bit = msrpm_bit(msr_pass_list[i].msr);

		if ((msr_pass_list[i].vendors & MSR_PASS_SVM) && bit >= 0)
			msrpm[bit / 8] &= ~(3u << (bit % 8));	/* read and write bits */
	}
}

bool svm_msrpm_intercepted(const uint8_t *msrpm, uint32_t msr, bool write)
{
	long bit = msrpm_bit(msr);

	if (bit < 0)
		return true;
	bit += write;
	return msrpm[bit / 8] & (1u << (bit % 8));
}

/* ---- events (APM 15.20) ------------------------------------------------------- */

/* Exceptions that push an error code (#DF #TS #NP #SS #GP #PF #AC). */
static bool exception_has_error(unsigned vector)
{
	return vector == 8 || (vector >= 10 && vector <= 14) || vector == 17;
}

/*
 * Read the way the VMX back end reads struct event, so that both deliver
 * the same thing: an exception pushes an error code exactly when the CPU
 * would (a vector that has one, in protected mode), whatever has_error
 * says; vector 2 is the NMI.  0 for what cannot be injected (an exception
 * vector >= 32, an unknown type) and for INT n (EVENT_SOFTINT): RIP points
 * at the INT n, which raises it again when it re-executes.
 */
uint64_t svm_event_encode(const struct event *e, bool protected_mode)
{
	uint64_t type, vector = e->vector, f;

	if (!e->valid)
		return 0;
	switch (e->type) {
	case EVENT_EXTINT:
		type = VMCB_EVT_INTR;
		break;
	case EVENT_NMI:
		type = VMCB_EVT_NMI;
		vector = 2;
		break;
	case EVENT_EXCEPTION:
		if (vector >= 32)
			return 0;
		type = vector == 2 ? VMCB_EVT_NMI : VMCB_EVT_EXC;
		break;
	default:
		return 0;
	}
	f = vector | type << VMCB_EVT_TYPE_SHIFT | VMCB_EVT_V;
	if (type == VMCB_EVT_EXC && protected_mode && exception_has_error(vector))
		f |= VMCB_EVT_EV | (uint64_t)(e->has_error ? e->error : 0) << VMCB_EVT_ERR_SHIFT;
	return f;
}

void svm_event_decode(uint64_t f, struct event *e)
{
	memset(e, 0, sizeof(*e));
	if (!(f & VMCB_EVT_V))
		return;
	e->valid = true;
	e->vector = f & VMCB_EVT_VECTOR_MASK;
	e->type = (f & VMCB_EVT_TYPE_MASK) >> VMCB_EVT_TYPE_SHIFT;
	e->has_error = f & VMCB_EVT_EV;
	e->error = e->has_error ? (uint32_t)(f >> VMCB_EVT_ERR_SHIFT) : 0;
}

/*
 * Replaces whatever EVENTINJ held (an event re-armed from EXITINTINFO
 * included: the core overrides).  INT n is not injected (see above).
 */
void svm_inject(struct vmm_vcpu *v, const struct event *e)
{
	struct vmcb *vmcb = svm_vcpu_of(v)->vmcb;
	uint64_t f = svm_event_encode(e, vmcb->save.cr0 & CR0_PE);

	if (e->valid && e->type == EVENT_SOFTINT)
		return;
	if (!f) {
		pr_warn("svm: vcpu %u: refusing to inject invalid event type %u vector %u",
			v->id, e->type, e->vector);
		return;
	}
	vmcb->ctl.event_inj = f;
	if (e->type == EVENT_NMI)
		svm_nmi_block(svm_vcpu_of(v), true);
}

void svm_nmi_block(struct svm_vcpu *sv, bool on)
{
	sv->nmi_blocked = on;
	sv->iret_seen = false;
	if (on)
		sv->vmcb->ctl.intercept1 |= VMCB_I1_IRET;
	else
		sv->vmcb->ctl.intercept1 &= ~VMCB_I1_IRET;
}

bool svm_intr_allowed(struct vmm_vcpu *v)
{
	struct vmcb *vmcb = svm_vcpu_of(v)->vmcb;

	return (vmcb->save.rflags & RFLAGS_IF) &&
	       !(vmcb->ctl.int_state & VMCB_INT_SHADOW) &&
	       !(vmcb->ctl.event_inj & VMCB_EVT_V);
}

/*
 * The interrupt window, KVM's way (APM 15.21.4): post a dummy virtual
 * interrupt (V_IRQ, vector 0, highest priority, TPR ignored) and intercept
 * VINTR.  The CPU takes a virtual interrupt exactly when the guest can take
 * an interrupt (IF set, no shadow), and the intercept fires before the
 * dummy is delivered.  Level-triggered like VMX's interrupt-window
 * exiting: it stays armed until turned off.
 */
#define WINDOW_BITS (VMCB_V_IRQ | VMCB_V_IGN_TPR | VMCB_V_INTR_PRIO_MASK | \
		     VMCB_V_INTR_VECTOR_MASK)

void svm_want_intr_window(struct vmm_vcpu *v, bool on)
{
	struct svm_vcpu *sv = svm_vcpu_of(v);
	struct vmcb_control *c = &sv->vmcb->ctl;

	c->int_ctl &= ~WINDOW_BITS;
	c->intercept1 &= ~VMCB_I1_VINTR;
	if (on) {
		c->int_ctl |= VMCB_V_IRQ | VMCB_V_IGN_TPR | VMCB_V_INTR_PRIO_MASK;
		c->intercept1 |= VMCB_I1_VINTR;
	}
	sv->want_window = on;
}

static bool long_mode_code(const struct vmcb *vmcb)
{
	return (vmcb->save.efer & EFER_LMA) && (vmcb->save.cs.attrib & SEG_ATTR_L);
}

/* Outside 64-bit code the instruction pointer is EIP (or IP: it wraps at
 * the segment limit, which a 16-bit guest exiting there hits never).
 * With RFLAGS.TF the instruction ends in the single-step trap the CPU
 * would have raised had it run it. */
void svm_skip_insn(struct vmm_vcpu *v, uint8_t len)
{
	struct vmcb *vmcb = svm_vcpu_of(v)->vmcb;
	struct event db = { .valid = true, .type = EVENT_EXCEPTION, .vector = X86_VEC_DB };

	vmcb->save.rip += len;
	if (!long_mode_code(vmcb))
		vmcb->save.rip &= 0xffffffffull;
	vmcb->ctl.int_state &= ~VMCB_INT_SHADOW;
	if (vmcb->save.rflags & RFLAGS_TF) {
		vmcb->save.dr6 = x86_dr6_after_db(vmcb->save.dr6, X86_DB_BS);
		vmcb->ctl.event_inj = svm_event_encode(&db, vmcb->save.cr0 & CR0_PE);
	}
}

/* A scaled guest TSC is answered on RDTSC exits (the TSC ratio MSR, APM
 * 15.30.5, is not used: the emulators here lack it). */
void svm_set_tsc(struct vmm_vcpu *v, uint64_t offset, uint64_t mult)
{
	struct vmcb_control *c = &svm_vcpu_of(v)->vmcb->ctl;

	c->tsc_offset = offset;
	if (mult == TSC_MULT_ONE)
		c->intercept1 &= ~VMCB_I1_RDTSC;
	else
		c->intercept1 |= VMCB_I1_RDTSC;
}
