/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * #VMEXIT decoding: the VMCB's exit code and exit information (APM Vol. 2
 * 15.6, Appendix C) into the normalized struct vm_exit of hv/vmm.h, the
 * instruction length of the exits that have one, and the exits the back
 * end settles without the core.  Pure: guest memory is read through
 * svm_exit_env.read_gpa.
 *
 * Instruction length: with NRIP-save the VMCB's next_rip gives it (APM
 * 15.7.1).  Without (QEMU's TCG), the instruction at CS:RIP is fetched
 * through the guest's own paging and decoded, and its opcode must be the
 * one the exit reports; IOIO exits give the next RIP in EXITINFO2 always.
 */
#include <errno.h>
#include <string.h>
#include "arch/x86/cpu.h"
#include "arch/x86/desc.h"
#include "arch/x86/emulate/debug.h"
#include "arch/x86/emulate/fetch.h"
#include "arch/x86/svm/svm.h"

#define CR4_PSE		(1ull << 4)
#define CR4_TLB_BITS	(CR4_PSE | CR4_PAE | CR4_PGE)	/* the ones a guest may change */
#define ANY_MODRM	(-1)
#define RFLAGS_TF	(1ull << 8)
#define RFLAGS_RF	(1ull << 16)
#define RFLAGS_VM	(1ull << 17)
#define SEG_CODE64	0xa9b	/* G L P S, type 11: execute/read, accessed */
#define SEG_DATA32	0xc93	/* G B P S, type 3: read/write, accessed */

/* The instruction an exit is about: map, opcode and (if fixed) ModRM. */
struct insn_sig {
	uint8_t map;		/* enum x86_map */
	uint8_t opcode;
	int16_t modrm;		/* ANY_MODRM or the byte */
};

static const struct insn_sig sig_cpuid = { X86_MAP_0F, 0xa2, ANY_MODRM };
static const struct insn_sig sig_hlt = { X86_MAP_ONE, 0xf4, ANY_MODRM };
static const struct insn_sig sig_rdmsr = { X86_MAP_0F, 0x32, ANY_MODRM };
static const struct insn_sig sig_wrmsr = { X86_MAP_0F, 0x30, ANY_MODRM };
static const struct insn_sig sig_vmmcall = { X86_MAP_0F, 0x01, 0xd9 };
static const struct insn_sig sig_xsetbv = { X86_MAP_0F, 0x01, 0xd1 };
static const struct insn_sig sig_invd = { X86_MAP_0F, 0x08, ANY_MODRM };
static const struct insn_sig sig_wbinvd = { X86_MAP_0F, 0x09, ANY_MODRM };
static const struct insn_sig sig_icebp = { X86_MAP_ONE, 0xf1, ANY_MODRM };
static const struct insn_sig sig_rdtsc = { X86_MAP_0F, 0x31, ANY_MODRM };
static const struct insn_sig sig_pause = { X86_MAP_ONE, 0x90, ANY_MODRM };	/* F3 90 */
static const struct insn_sig sig_mov_to_cr = { X86_MAP_0F, 0x22, ANY_MODRM };
static const struct insn_sig sig_mov_from_cr = { X86_MAP_0F, 0x20, ANY_MODRM };

/* ---- instruction length --------------------------------------------------------- */

static bool long_mode_code(const struct vmcb *vmcb)
{
	return (vmcb->save.efer & EFER_LMA) && (vmcb->save.cs.attrib & SEG_ATTR_L);
}

/* next - rip as the CPU counts it: modulo 2^32 outside 64-bit code. */
static uint64_t rip_delta(const struct vmcb *vmcb, uint64_t next)
{
	uint64_t d = next - vmcb->save.rip;

	return long_mode_code(vmcb) ? d : (uint32_t)d;
}

/* Where the guest's CS:RIP is, and how to walk its paging, from the VMCB. */
static void guest_at_rip(const struct vmcb *vmcb, const struct svm_exit_env *env,
			 struct gwalk_env *g, struct x86_guest_rip *r)
{
	const struct vmcb_save *s = &vmcb->save;

	*g = (struct gwalk_env){
		.cr0 = s->cr0, .cr3 = s->cr3, .cr4 = s->cr4, .efer = s->efer,
		.rflags = s->rflags, .maxphyaddr = env->maxphyaddr,
		.gbpages = env->gbpages, .read_gpa = env->read_gpa, .ctx = env->ctx,
	};
	*r = (struct x86_guest_rip){
		.rip = s->rip, .cs_base = s->cs.base, .cs_l = s->cs.attrib & SEG_ATTR_L,
		.cs_db = s->cs.attrib & SEG_ATTR_DB, .user = s->cpl == 3,
	};
}

static int decode_at_rip(const struct vmcb *vmcb, const struct svm_exit_env *env,
			 struct x86_insn *insn)
{
	struct gwalk_env g;
	struct x86_guest_rip r;
	struct gwalk_result res;

	guest_at_rip(vmcb, env, &g, &r);
	return x86_fetch_at_rip(&g, &r, X86_DF_AMD, insn, &res);
}

static bool sig_matches(const struct insn_sig *sig, const struct x86_insn *insn)
{
	if (insn->map != sig->map || insn->opcode != sig->opcode)
		return false;
	return sig->modrm == ANY_MODRM || (insn->has_modrm && insn->modrm == sig->modrm);
}

/* Length of the exiting instruction, checked against sig when decoded:
 * 1..15, or -errno (decode errors, -EPROTO for another instruction). */
static int insn_len(struct vmm_vcpu *v, const struct svm_exit_env *env, const struct insn_sig *sig)
{
	const struct vmcb *vmcb = svm_vcpu_of(v)->vmcb;
	struct x86_insn insn;
	int len;

	if (env->nrips) {
		uint64_t d = rip_delta(vmcb, vmcb->ctl.next_rip);
		if (d >= 1 && d <= X86_MAX_INSN_LEN)
			return (int)d;
	}
	len = decode_at_rip(vmcb, env, &insn);
	if (len < 0)
		return len;
	if (sig && !sig_matches(sig, &insn))
		return -EPROTO;
	return len;
}

/* ---- results ------------------------------------------------------------------------ */

static void set_vendor(struct vm_exit *exit, enum exit_code ec, const struct vmcb *vmcb,
		       const char *what)
{
	exit->code = ec;
	exit->u.vendor.reason = (uint32_t)vmcb->ctl.exit_code;
	exit->u.vendor.info1 = vmcb->ctl.exit_info1;
	exit->u.vendor.info2 = vmcb->ctl.exit_info2;
	exit->u.vendor.what = what;
}

static void unhandled(struct vm_exit *exit, const struct vmcb *vmcb, const char *what)
{
	set_vendor(exit, EXIT_UNHANDLED, vmcb, what);
}

/* An exit whose instruction the core completes: code plus length. */
static void with_len(struct vmm_vcpu *v, const struct svm_exit_env *env, struct vm_exit *exit,
		     enum exit_code ec, const struct insn_sig *sig)
{
	int len = insn_len(v, env, sig);

	if (len < 0) {
		unhandled(exit, svm_vcpu_of(v)->vmcb,
			  "cannot decode the exiting instruction at CS:RIP");
		return;
	}
	exit->code = ec;
	exit->inst_len = (uint8_t)len;
}

static void inject_exc(struct vmcb *vmcb, uint8_t vector, bool has_error, uint32_t error)
{
	struct event e = {
		.valid = true, .type = EVENT_EXCEPTION, .vector = vector,
		.has_error = has_error, .error = error,
	};

	vmcb->ctl.event_inj = svm_event_encode(&e, vmcb->save.cr0 & CR0_PE);
}

/*
 * An event whose delivery the exit interrupted (EXITINTINFO, APM 15.7.2)
 * is delivered again at the next VMRUN, unless the core injects another.
 * INT n, INT3 and INTO are not re-injected: RIP still points at the
 * instruction, which raises them again when it re-executes (as KVM does
 * without NRIP-save; re-injecting would need RIP past the instruction).
 */
static void rearm_event(struct vmcb *vmcb)
{
	uint64_t f = vmcb->ctl.exit_int_info;
	unsigned type = (f & VMCB_EVT_TYPE_MASK) >> VMCB_EVT_TYPE_SHIFT;
	unsigned vector = f & VMCB_EVT_VECTOR_MASK;
	uint64_t keep;

	vmcb->ctl.event_inj = 0;
	if (!(f & VMCB_EVT_V))
		return;
	if (type == VMCB_EVT_EXC && (vector == 3 || vector == 4))
		return;
	if (type != VMCB_EVT_INTR && type != VMCB_EVT_NMI && type != VMCB_EVT_EXC)
		return;		/* INT n (VMCB_EVT_SOFT) re-executes; reserved types */
	keep = VMCB_EVT_VECTOR_MASK | VMCB_EVT_TYPE_MASK | VMCB_EVT_V;
	if (f & VMCB_EVT_EV)
		keep |= VMCB_EVT_EV | 0xffffffffull << VMCB_EVT_ERR_SHIFT;
	vmcb->ctl.event_inj = f & keep;
}

/* ---- exit handlers -------------------------------------------------------------------- */

typedef void exit_fn(struct vmm_vcpu *v, const struct svm_exit_env *env, struct vm_exit *exit);

static void ex_external(struct vmm_vcpu *v, const struct svm_exit_env *env, struct vm_exit *exit)
{
	(void)v, (void)env;
	exit->code = EXIT_EXTERNAL;
}

static void ex_window(struct vmm_vcpu *v, const struct svm_exit_env *env, struct vm_exit *exit)
{
	(void)v, (void)env;
	exit->code = EXIT_INTR_WINDOW;
}

static void ex_cpuid(struct vmm_vcpu *v, const struct svm_exit_env *env, struct vm_exit *exit)
{
	with_len(v, env, exit, EXIT_CPUID, &sig_cpuid);
}

static void ex_rdtsc(struct vmm_vcpu *v, const struct svm_exit_env *env, struct vm_exit *exit)
{
	with_len(v, env, exit, EXIT_RDTSC, &sig_rdtsc);
}

static void ex_rdpmc(struct vmm_vcpu *v, const struct svm_exit_env *env, struct vm_exit *exit)
{
	(void)v, (void)env;
	exit->code = EXIT_RDPMC;	/* a fault: RIP stays */
}

/* Intercepted only with the pause filter (svm.c). */
static void ex_pause(struct vmm_vcpu *v, const struct svm_exit_env *env, struct vm_exit *exit)
{
	with_len(v, env, exit, EXIT_PAUSE, &sig_pause);
}

static void ex_hlt(struct vmm_vcpu *v, const struct svm_exit_env *env, struct vm_exit *exit)
{
	with_len(v, env, exit, EXIT_HLT, &sig_hlt);
}

static void ex_vmmcall(struct vmm_vcpu *v, const struct svm_exit_env *env, struct vm_exit *exit)
{
	with_len(v, env, exit, EXIT_HYPERCALL, &sig_vmmcall);
}

static void ex_xsetbv(struct vmm_vcpu *v, const struct svm_exit_env *env, struct vm_exit *exit)
{
	with_len(v, env, exit, EXIT_XSETBV, &sig_xsetbv);
}

/* EXITINFO1: 0 RDMSR, 1 WRMSR (APM 15.11); index in ECX, value in EDX:EAX. */
static void ex_msr(struct vmm_vcpu *v, const struct svm_exit_env *env, struct vm_exit *exit)
{
	const struct vmcb *vmcb = svm_vcpu_of(v)->vmcb;
	uint64_t dir = vmcb->ctl.exit_info1;

	if (dir > 1) {
		unhandled(exit, vmcb, "SVM exit 07Ch: MSR exit with EXITINFO1 neither 0 nor 1");
		return;
	}
	with_len(v, env, exit, dir ? EXIT_MSR_WRITE : EXIT_MSR_READ,
		 dir ? &sig_wrmsr : &sig_rdmsr);
	exit->u.msr.index = (uint32_t)v->gpr[GPR_RCX];
	if (dir)
		exit->u.msr.value = (v->gpr[GPR_RDX] << 32) | (uint32_t)v->gpr[GPR_RAX];
}

static unsigned io_size(uint64_t info)
{
	switch (info & (VMCB_IO_SZ8 | VMCB_IO_SZ16 | VMCB_IO_SZ32)) {
	case VMCB_IO_SZ8:  return 1;
	case VMCB_IO_SZ16: return 2;
	case VMCB_IO_SZ32: return 4;
	}
	return 0;	/* none or several: not a real exit */
}

/* EXITINFO1 (APM 15.10.2): port, size, IN, STR, REP; EXITINFO2: next RIP. */
static void ex_ioio(struct vmm_vcpu *v, const struct svm_exit_env *env, struct vm_exit *exit)
{
	const struct vmcb *vmcb = svm_vcpu_of(v)->vmcb;
	uint64_t info = vmcb->ctl.exit_info1;
	uint64_t len = rip_delta(vmcb, vmcb->ctl.exit_info2);
	unsigned size = io_size(info);

	if (!size) {
		unhandled(exit, vmcb, "SVM exit 07Bh: I/O exit without a valid operand size");
		return;
	}
	if (len < 1 || len > X86_MAX_INSN_LEN) {
		with_len(v, env, exit, EXIT_IO, NULL);	/* EXITINFO2 makes no sense */
		if (exit->code != EXIT_IO)
			return;
	} else {
		exit->code = EXIT_IO;
		exit->inst_len = (uint8_t)len;
	}
	exit->u.io.port = (uint16_t)(info >> VMCB_IO_PORT_SHIFT);
	exit->u.io.size = (uint8_t)size;
	exit->u.io.in = info & VMCB_IO_IN;
	exit->u.io.string = info & VMCB_IO_STR;
	exit->u.io.rep = info & VMCB_IO_REP;
}

/* EXITINFO1: #PF-style error code (APM 15.25.6); EXITINFO2: the GPA. */
static void ex_npf(struct vmm_vcpu *v, const struct svm_exit_env *env, struct vm_exit *exit)
{
	const struct vmcb *vmcb = svm_vcpu_of(v)->vmcb;
	uint64_t err = vmcb->ctl.exit_info1;

	(void)env;
	exit->code = EXIT_GPA_FAULT;
	exit->u.gpa_fault.gpa = vmcb->ctl.exit_info2;
	exit->u.gpa_fault.present = err & VMCB_NPF_P;
	exit->u.gpa_fault.write = err & VMCB_NPF_W;
	exit->u.gpa_fault.exec = err & VMCB_NPF_ID;
	exit->u.gpa_fault.read = !(err & (VMCB_NPF_W | VMCB_NPF_ID));
	exit->u.gpa_fault.vectoring = vmcb->ctl.exit_int_info & VMCB_EVT_V;
	exit->u.gpa_fault.walk = err & VMCB_NPF_TABLE;
}

static void ex_virt(struct vmm_vcpu *v, const struct svm_exit_env *env, struct vm_exit *exit)
{
	(void)v, (void)env;
	exit->code = EXIT_VIRT_INSN;
}

static void ex_shutdown(struct vmm_vcpu *v, const struct svm_exit_env *env, struct vm_exit *exit)
{
	(void)v, (void)env;
	exit->code = EXIT_SHUTDOWN;
}

/* INVD and WBINVD: nothing to do with NPT and write-back guest RAM. */
static void ex_nop(struct vmm_vcpu *v, const struct svm_exit_env *env, struct vm_exit *exit)
{
	const struct vmcb *vmcb = svm_vcpu_of(v)->vmcb;
	uint32_t code = (uint32_t)vmcb->ctl.exit_code;
	int len = insn_len(v, env, code == SVM_EXIT_INVD ? &sig_invd : &sig_wbinvd);

	if (len < 0) {
		unhandled(exit, vmcb, "cannot decode the exiting instruction at CS:RIP");
		return;
	}
	svm_skip_insn(v, (uint8_t)len);
	exit->code = EXIT_NONE;
}

/* ICEBP (INT1, F1h): the #DB trap it raises, after the instruction. */
static void ex_icebp(struct vmm_vcpu *v, const struct svm_exit_env *env, struct vm_exit *exit)
{
	struct vmcb *vmcb = svm_vcpu_of(v)->vmcb;
	int len = insn_len(v, env, &sig_icebp);

	if (len < 0) {
		unhandled(exit, vmcb, "cannot decode the exiting instruction at CS:RIP");
		return;
	}
	svm_skip_insn(v, (uint8_t)len);
	inject_exc(vmcb, X86_VEC_DB, false, 0);
	exit->code = EXIT_NONE;
}

/* MONITOR/MWAIT: #UD, as on a CPU without them (the baseline CPUID hides
 * them); a guest must not park the physical CPU. */
static void ex_ud(struct vmm_vcpu *v, const struct svm_exit_env *env, struct vm_exit *exit)
{
	(void)env;
	inject_exc(svm_vcpu_of(v)->vmcb, X86_VEC_UD, false, 0);
	exit->code = EXIT_NONE;
}

/*
 * SYSENTER in long mode, which AMD CPUs refuse with #UD and Intel's carry
 * out (SDM Vol. 2B "SYSENTER"): the guest's CPUID says GenuineIntel, so a
 * 64-bit Linux enters its kernel from 32-bit programs with it.  Done as
 * Intel's CPU does in IA-32e mode: #GP(0) for a null SYSENTER_CS; else
 * VM, IF and RF clear, RSP and RIP from the whole SYSENTER_ESP/EIP, CS a
 * flat 64-bit ring-0 code segment at SYSENTER_CS & ~3 and SS flat data
 * at CS + 8.  TF stays, so a single-stepped SYSENTER traps (#DB, DR6.BS)
 * at the first instruction of the entry, as on Intel.  (SYSEXIT, which
 * Linux does not use in long mode, stays #UD.)
 */
static void sysenter(struct vmm_vcpu *v)
{
	struct svm_vcpu *sv = svm_vcpu_of(v);
	struct vmcb *vmcb = sv->vmcb;
	uint16_t cs = (uint16_t)(vmcb->save.sysenter_cs & 0xfffc);

	if (!cs) {
		inject_exc(vmcb, X86_VEC_GP, true, 0);
		return;
	}
	vmcb->save.rflags &= ~(RFLAGS_VM | RFLAGS_IF | RFLAGS_RF);
	v->gpr[GPR_RSP] = sv->sysenter_esp;
	vmcb->save.rip = sv->sysenter_eip;
	vmcb->save.cs = (struct vmcb_seg){ cs, SEG_CODE64, 0xffffffff, 0 };
	vmcb->save.ss = (struct vmcb_seg){ (uint16_t)(cs + 8), SEG_DATA32, 0xffffffff, 0 };
	vmcb->save.cpl = 0;
	vmcb->ctl.int_state &= ~VMCB_INT_SHADOW;
	if (vmcb->save.rflags & RFLAGS_TF) {
		vmcb->save.dr6 = x86_dr6_after_db(vmcb->save.dr6, X86_DB_BS);
		inject_exc(vmcb, X86_VEC_DB, false, 0);
	}
}

/* #UD: VMCALL, Intel's hypercall, is ferry's hypercall here too (the core
 * steps over it as over VMMCALL); SYSENTER in long mode is carried out as
 * on Intel (above); any other #UD, or one whose instruction cannot be read
 * back, goes to the guest unchanged. */
static void ex_ud_intercept(struct vmm_vcpu *v, const struct svm_exit_env *env,
			    struct vm_exit *exit)
{
	const struct vmcb *vmcb = svm_vcpu_of(v)->vmcb;
	struct x86_insn insn;
	int len = decode_at_rip(vmcb, env, &insn);

	if (len > 0 && x86_insn_hypercall(&insn) != X86_HC_NONE) {
		exit->code = EXIT_HYPERCALL;
		exit->inst_len = (uint8_t)len;
		return;
	}
	if (len > 0 && insn.map == X86_MAP_0F && insn.opcode == 0x34 &&
	    insn.vex_kind == X86_VEX_NONE && (vmcb->save.efer & EFER_LMA)) {
		sysenter(v);
		exit->code = EXIT_NONE;
		return;
	}
	ex_ud(v, env, exit);
}

/*
 * MOV to CR4, the only CR write intercepted, carried out as the CPU would
 * with the guest's CPUID view deciding the reserved bits: #GP for one of
 * them or for clearing PAE in long mode, else the write, and a fresh ASID
 * (no stale translations) when paging bits change.  Without decode
 * assists (QEMU has none) the source register comes from the instruction.
 */
static void ex_cr4_write(struct vmm_vcpu *v, const struct svm_exit_env *env, struct vm_exit *exit)
{
	struct svm_vcpu *sv = svm_vcpu_of(v);
	struct vmcb *vmcb = sv->vmcb;
	uint64_t val, old = vmcb->save.cr4;
	struct x86_insn insn;
	int len = decode_at_rip(vmcb, env, &insn);

	if (len < 0 || !sig_matches(&sig_mov_to_cr, &insn) || insn.reg != 4) {
		unhandled(exit, vmcb, "cannot decode the MOV to CR4 at CS:RIP");
		return;
	}
	val = v->gpr[insn.rm];
	if (!long_mode_code(vmcb))
		val = (uint32_t)val;
	exit->code = EXIT_NONE;
	if ((val & ~VMM_GUEST_CR4_BITS) || ((vmcb->save.efer & EFER_LMA) && !(val & CR4_PAE))) {
		inject_exc(vmcb, X86_VEC_GP, true, 0);
		return;
	}
	vmcb->save.cr4 = val;
	if ((old ^ val) & CR4_TLB_BITS)
		svm_asid_flush(&sv->asid);
	svm_skip_insn(v, (uint8_t)len);
}

/* Intercepted #DB/#AC: deliver them to the guest as they were (DR6 is
 * already updated, APM 15.12.2; #AC's error code is in EXITINFO1).  The
 * reflected exception replaces an event whose delivery raised it.  A #DB
 * clears DR7.GD, as delivering one does and as VMX does (vmx_db_exit): an
 * injected one does not, and with GD left set the handler's first MOV DR
 * would raise #DB again, over and over. */
static void ex_reflect(struct vmm_vcpu *v, const struct svm_exit_env *env, struct vm_exit *exit)
{
	struct vmcb *vmcb = svm_vcpu_of(v)->vmcb;
	uint8_t vector = (uint8_t)(vmcb->ctl.exit_code - SVM_EXIT_EXC_BASE);

	(void)env;
	if (vector == X86_VEC_DB)
		vmcb->save.dr7 &= ~X86_DR7_GD;
	inject_exc(vmcb, vector, vector == X86_VEC_AC, (uint32_t)vmcb->ctl.exit_info1);
	exit->code = EXIT_NONE;
}

/* A machine check while the guest ran: the intercept took it from the CPU,
 * which calls no handler of ours after it (APM 15.12); ferry reports it
 * and stops. */
static void ex_machine_check(struct vmm_vcpu *v, const struct svm_exit_env *env,
			     struct vm_exit *exit)
{
	(void)v, (void)env, (void)exit;
	trap_guest_machine_check();
}

/* The guest's IRET, about to run, ends its NMI handler (svm_nmi_block):
 * noted, and it runs without the intercept. */
static void ex_iret(struct vmm_vcpu *v, const struct svm_exit_env *env, struct vm_exit *exit)
{
	struct svm_vcpu *sv = svm_vcpu_of(v);

	(void)env;
	sv->vmcb->ctl.intercept1 &= ~VMCB_I1_IRET;
	sv->iret_seen = true;
	sv->iret_rip = sv->vmcb->save.rip;
	exit->code = EXIT_NONE;
}

/* MOV to/from CR8 (REX.R MOV CRn): the core's, which keeps CR8 in the
 * local APIC's TPR.  The register comes from the instruction.  AMD's
 * other way to reach CR8, LOCK MOV CR0 (AltMovCr8), is #UD here, as on
 * the Intel CPU the guest is told it has. */
static void ex_cr8(struct vmm_vcpu *v, const struct svm_exit_env *env, struct vm_exit *exit)
{
	struct vmcb *vmcb = svm_vcpu_of(v)->vmcb;
	bool write = vmcb->ctl.exit_code == SVM_EXIT_WRITE_CR8;
	const struct insn_sig *sig = write ? &sig_mov_to_cr : &sig_mov_from_cr;
	struct x86_insn insn;
	int len = decode_at_rip(vmcb, env, &insn);

	if (len > 0 && sig_matches(sig, &insn) && insn.reg == 0 &&
	    (insn.prefixes & X86_PFX_LOCK)) {
		inject_exc(vmcb, X86_VEC_UD, false, 0);
		exit->code = EXIT_NONE;
		return;
	}
	if (len < 0 || !sig_matches(sig, &insn) || insn.reg != 8) {
		unhandled(exit, vmcb, "cannot decode the MOV CR8 at CS:RIP");
		return;
	}
	exit->code = EXIT_CR8;
	exit->inst_len = (uint8_t)len;
	exit->u.cr8.write = write;
	exit->u.cr8.gpr = insn.rm;
}

static void ex_invalid(struct vmm_vcpu *v, const struct svm_exit_env *env, struct vm_exit *exit)
{
	const struct vmcb *vmcb = svm_vcpu_of(v)->vmcb;

	(void)env;
	set_vendor(exit, EXIT_INVALID, vmcb, svm_exit_name(SVM_EXIT_INVALID));
}

/*
 * Every exit code ferry knows (APM Appendix C): its name, and the handler
 * that turns it into a struct vm_exit or settles it in the back end.  A
 * code without a handler (or outside the table) stops the guest, named.
 */
struct svm_exit_kind {
	exit_fn *fn;
	const char *name;
};

static const struct svm_exit_kind kinds[SVM_EXIT_NPF + 1] = {
	[SVM_EXIT_READ_CR8] = { ex_cr8, "SVM exit 008h: MOV from CR8" },
	[SVM_EXIT_WRITE_CR4] = { ex_cr4_write, "SVM exit 014h: MOV to CR4" },
	[SVM_EXIT_WRITE_CR8] = { ex_cr8, "SVM exit 018h: MOV to CR8" },
	[SVM_EXIT_EXC_BASE + X86_VEC_DB] = { ex_reflect, "SVM exit 041h: #DB intercept" },
	[SVM_EXIT_EXC_BASE + X86_VEC_UD] = { ex_ud_intercept, "SVM exit 046h: #UD intercept" },
	[SVM_EXIT_EXC_BASE + X86_VEC_AC] = { ex_reflect, "SVM exit 051h: #AC intercept" },
	[SVM_EXIT_EXC_BASE + X86_VEC_MC] = { ex_machine_check, "SVM exit 052h: #MC intercept" },
	[SVM_EXIT_INTR] = { ex_external, "SVM exit 060h: physical interrupt" },
	[SVM_EXIT_NMI] = { ex_external, "SVM exit 061h: NMI" },
	[SVM_EXIT_SMI] = { ex_external, "SVM exit 062h: SMI" },
	[SVM_EXIT_INIT] = { ex_external, "SVM exit 063h: INIT" },
	[SVM_EXIT_VINTR] = { ex_window, "SVM exit 064h: virtual interrupt" },
	[SVM_EXIT_RDTSC] = { ex_rdtsc, "SVM exit 06Eh: RDTSC" },
	[SVM_EXIT_RDPMC] = { ex_rdpmc, "SVM exit 06Fh: RDPMC" },
	[SVM_EXIT_CPUID] = { ex_cpuid, "SVM exit 072h: CPUID" },
	[SVM_EXIT_IRET] = { ex_iret, "SVM exit 074h: IRET" },
	[SVM_EXIT_INVD] = { ex_nop, "SVM exit 076h: INVD" },
	[SVM_EXIT_PAUSE] = { ex_pause, "SVM exit 077h: PAUSE" },
	[SVM_EXIT_HLT] = { ex_hlt, "SVM exit 078h: HLT" },
	[SVM_EXIT_INVLPG] = { NULL, "SVM exit 079h: INVLPG" },
	[SVM_EXIT_INVLPGA] = { ex_virt, "SVM exit 07Ah: INVLPGA" },
	[SVM_EXIT_IOIO] = { ex_ioio, "SVM exit 07Bh: I/O instruction" },
	[SVM_EXIT_MSR] = { ex_msr, "SVM exit 07Ch: RDMSR/WRMSR" },
	[SVM_EXIT_TASK_SWITCH] = { NULL, "SVM exit 07Dh: task switch (not emulated)" },
	[SVM_EXIT_FERR_FREEZE] = { NULL,
		"SVM exit 07Eh: FERR freeze (legacy x87 error reporting)" },
	[SVM_EXIT_SHUTDOWN] = { ex_shutdown, "SVM exit 07Fh: shutdown (triple fault)" },
	[SVM_EXIT_VMRUN] = { ex_virt, "SVM exit 080h: VMRUN" },
	[SVM_EXIT_VMMCALL] = { ex_vmmcall, "SVM exit 081h: VMMCALL" },
	[SVM_EXIT_VMLOAD] = { ex_virt, "SVM exit 082h: VMLOAD" },
	[SVM_EXIT_VMSAVE] = { ex_virt, "SVM exit 083h: VMSAVE" },
	[SVM_EXIT_STGI] = { ex_virt, "SVM exit 084h: STGI" },
	[SVM_EXIT_CLGI] = { ex_virt, "SVM exit 085h: CLGI" },
	[SVM_EXIT_SKINIT] = { ex_virt, "SVM exit 086h: SKINIT" },
	[SVM_EXIT_RDTSCP] = { ex_ud, "SVM exit 087h: RDTSCP" },
	[SVM_EXIT_ICEBP] = { ex_icebp, "SVM exit 088h: ICEBP" },
	[SVM_EXIT_WBINVD] = { ex_nop, "SVM exit 089h: WBINVD" },
	[SVM_EXIT_MONITOR] = { ex_ud, "SVM exit 08Ah: MONITOR" },
	[SVM_EXIT_MWAIT] = { ex_ud, "SVM exit 08Bh: MWAIT" },
	[SVM_EXIT_MWAIT_COND] = { ex_ud, "SVM exit 08Ch: MWAIT (armed)" },
	[SVM_EXIT_XSETBV] = { ex_xsetbv, "SVM exit 08Dh: XSETBV" },
	[SVM_EXIT_NPF] = { ex_npf, "SVM exit 400h: nested page fault" },
};

static const struct svm_exit_kind invalid_kind = {
	.fn = ex_invalid,
	.name = "VMEXIT_INVALID (exit code -1): the CPU found the guest state "
		"in the VMCB invalid (APM 15.5.1)",
};

/* The kind of exit code `code`; NULL outside the table. */
static const struct svm_exit_kind *exit_kind(uint64_t code)
{
	if (code == ~0ull || code == SVM_EXIT_INVALID)
		return &invalid_kind;	/* only -1 (and -2 for SEV) use the upper half */
	return code < sizeof(kinds) / sizeof(kinds[0]) ? &kinds[code] : NULL;
}

const char *svm_exit_name(uint64_t code)
{
	const struct svm_exit_kind *k = exit_kind(code);

	return k && k->name ? k->name : "SVM exit code unknown to ferry";
}

void svm_handle_exit(struct vmm_vcpu *v, const struct svm_exit_env *env, struct vm_exit *exit)
{
	struct svm_vcpu *sv = svm_vcpu_of(v);
	struct vmcb *vmcb = sv->vmcb;
	const struct svm_exit_kind *k = exit_kind(vmcb->ctl.exit_code);

	memset(exit, 0, sizeof(*exit));
	exit->rip = vmcb->save.rip;
	if (sv->iret_seen && vmcb->save.rip != sv->iret_rip)
		svm_nmi_block(sv, false);	/* the NMI handler's IRET retired */
	rearm_event(vmcb);
	if (k && k->fn)
		k->fn(v, env, exit);
	else
		unhandled(exit, vmcb, svm_exit_name(vmcb->ctl.exit_code));
}
