/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * VM exits: read the exit-information fields (Intel SDM Vol. 3C "VM-Exit
 * Information Fields", 24.9/25.9), turn them into the neutral struct
 * vm_exit with the same meaning the SVM back end gives, decide what the
 * back end does itself, and re-queue an event whose delivery the exit cut
 * short ("Information for VM Exits That Occur During Event Delivery").
 * Exit reasons: appendix C; qualifications: "Exit Qualification for ..."
 * (27.2.1/28.2.1).  Pure logic.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "arch/x86/cpu.h"
#include "arch/x86/emulate/debug.h"
#include "arch/x86/emulate/fetch.h"
#include "arch/x86/vmx/vmcs.h"
#include "arch/x86/vmx/vmx.h"

#define MAX_INSN_LEN 15
#define RFLAGS_TF	(1ull << 8)
#define AR_L		(1u << 13)
#define AR_DB		(1u << 14)
#define AR_DPL_SHIFT	5
#define VEC_DB		1
#define VEC_UD		6
#define VEC_AC		17
#define VEC_MC		18

/* How one basic exit reason is handled; absent reasons are unhandled. */
struct exit_rule {
	bool known;
	uint8_t code;		/* enum exit_code given to the core */
	uint8_t action;		/* enum vmx_action */
	bool insn;		/* caused by an instruction: the length is valid */
};

#define RULE(c, a, i)	{ .known = true, .code = (c), .action = (a), .insn = (i) }
#define TO_CORE(c, i)	RULE(c, VMX_ACT_CORE, i)
#define VIRT_INSN	TO_CORE(EXIT_VIRT_INSN, true)

static const struct exit_rule rules[VMX_EXIT_REASON_COUNT] = {
	[VMX_EXIT_EXT_INTR] = TO_CORE(EXIT_EXTERNAL, false),
	/* the backstop (vmx.h vmx_config): to the core, a run an interrupt ended */
	[VMX_EXIT_PREEMPTION_TIMER] = TO_CORE(EXIT_EXTERNAL, false),
	[VMX_EXIT_TRIPLE_FAULT] = TO_CORE(EXIT_SHUTDOWN, false),
	[VMX_EXIT_INTR_WINDOW] = TO_CORE(EXIT_INTR_WINDOW, false),
	[VMX_EXIT_CPUID] = TO_CORE(EXIT_CPUID, true),
	[VMX_EXIT_HLT] = TO_CORE(EXIT_HLT, true),
	[VMX_EXIT_INVD] = RULE(EXIT_NONE, VMX_ACT_SKIP, true),
	[VMX_EXIT_VMCALL] = TO_CORE(EXIT_HYPERCALL, true),
	[VMX_EXIT_RDTSC] = TO_CORE(EXIT_RDTSC, true),	/* only while scaled (vmx.c) */
	[VMX_EXIT_RDPMC] = TO_CORE(EXIT_RDPMC, true),
	[VMX_EXIT_PAUSE] = TO_CORE(EXIT_PAUSE, true),	/* PAUSE-loop exiting */
	[VMX_EXIT_VMCLEAR] = VIRT_INSN, [VMX_EXIT_VMLAUNCH] = VIRT_INSN,
	[VMX_EXIT_VMPTRLD] = VIRT_INSN, [VMX_EXIT_VMPTRST] = VIRT_INSN,
	[VMX_EXIT_VMREAD] = VIRT_INSN, [VMX_EXIT_VMRESUME] = VIRT_INSN,
	[VMX_EXIT_VMWRITE] = VIRT_INSN, [VMX_EXIT_VMXOFF] = VIRT_INSN,
	[VMX_EXIT_VMXON] = VIRT_INSN, [VMX_EXIT_INVEPT] = VIRT_INSN,
	[VMX_EXIT_INVVPID] = VIRT_INSN, [VMX_EXIT_VMFUNC] = VIRT_INSN,
	[VMX_EXIT_CR_ACCESS] = RULE(EXIT_NONE, VMX_ACT_CR, true),
	[VMX_EXIT_IO] = TO_CORE(EXIT_IO, true),
	[VMX_EXIT_RDMSR] = TO_CORE(EXIT_MSR_READ, true),
	[VMX_EXIT_WRMSR] = TO_CORE(EXIT_MSR_WRITE, true),
	[VMX_EXIT_MWAIT] = RULE(EXIT_NONE, VMX_ACT_UD, true),
	[VMX_EXIT_MONITOR] = RULE(EXIT_NONE, VMX_ACT_UD, true),
	[VMX_EXIT_EPT_VIOLATION] = TO_CORE(EXIT_GPA_FAULT, false),
	[VMX_EXIT_WBINVD] = RULE(EXIT_NONE, VMX_ACT_SKIP, true),
	[VMX_EXIT_XSETBV] = TO_CORE(EXIT_XSETBV, true),
	/* The log was drained on the way out (vmx.c): just run again; the
	 * write that found it full was not done and is retried. */
	[VMX_EXIT_PML_FULL] = TO_CORE(EXIT_NONE, false),
};

/* Only the fields this exit defines are read. */
void vmx_exit_info_read(const struct vmcs_io *io, struct vmx_exit_info *x)
{
	uint32_t basic;

	memset(x, 0, sizeof(*x));
	x->reason = vmcs_rd(io, VMCS_EXIT_REASON);
	x->qual = vmcs_rd(io, VMCS_EXIT_QUALIFICATION);
	x->rip = vmcs_rd(io, VMCS_GUEST_RIP);
	if (x->reason & EXIT_REASON_ENTRY_FAILURE)
		return;
	basic = x->reason & EXIT_REASON_BASIC_MASK;
	x->insn_len = vmcs_rd(io, VMCS_EXIT_INSN_LEN);
	x->idt_info = vmcs_rd(io, VMCS_IDT_VECTORING_INFO);
	if ((x->idt_info & INTR_INFO_VALID) && (x->idt_info & INTR_INFO_ERROR_VALID))
		x->idt_error = vmcs_rd(io, VMCS_IDT_VECTORING_ERROR);
	if (basic == VMX_EXIT_EXCEPTION_NMI) {
		x->intr_info = vmcs_rd(io, VMCS_EXIT_INTR_INFO);
		if ((x->intr_info & INTR_INFO_VALID) && (x->intr_info & INTR_INFO_ERROR_VALID))
			x->intr_error = vmcs_rd(io, VMCS_EXIT_INTR_ERROR);
	}
	if (basic == VMX_EXIT_EPT_VIOLATION || basic == VMX_EXIT_EPT_MISCONFIG)
		x->gpa = vmcs_rd(io, VMCS_GUEST_PHYS_ADDR);
}

/* An exit the core cannot act on: stop the guest with the reason in words. */
static enum vmx_action unhandled(const struct vmx_exit_info *x, struct vm_exit *e,
				 char *what, size_t len, const char *detail)
{
	uint32_t basic = x->reason & EXIT_REASON_BASIC_MASK;

	e->code = EXIT_UNHANDLED;
	e->u.vendor.reason = basic;
	e->u.vendor.info1 = x->qual;
	e->u.vendor.info2 = x->gpa ? x->gpa : x->intr_info;
	snprintf(what, len, "%s%s%s, qualification %#llx", vmx_exit_reason_name(basic),
		 detail ? ": " : "", detail ? detail : "", (unsigned long long)x->qual);
	e->u.vendor.what = what;
	return VMX_ACT_CORE;
}

/* MOV to/from CR8 (CR8-load and -store exiting): the core's, since CR8 is
 * the local APIC's TPR[7:4].  The qualification names the register. */
static enum vmx_action decode_cr8(const struct vmx_exit_info *x, struct vm_exit *e,
				  char *what, size_t len)
{
	unsigned int type = (x->qual >> CR_QUAL_TYPE_SHIFT) & 3;

	if (type != CR_TYPE_MOV_TO && type != CR_TYPE_MOV_FROM)
		return unhandled(x, e, what, len, "CLTS or LMSW on CR8");
	e->code = EXIT_CR8;
	e->u.cr8.write = type == CR_TYPE_MOV_TO;
	e->u.cr8.gpr = (uint8_t)((x->qual >> CR_QUAL_GPR_SHIFT) & 0xf);
	return VMX_ACT_CORE;
}

/* Short: the stop reason `list` shows holds 127 characters in all. */
static const char *entry_failure_detail(uint32_t basic, uint64_t qual)
{
	if (basic == VMX_EXIT_BAD_GUEST_STATE) {
		switch (qual) {
		case 2: return "PDPTE loading failed";
		case 3: return "NMI injection blocked";
		case 4: return "invalid VMCS link pointer";
		default: return "no check named";	/* Bochs logs the one that failed */
		}
	}
	if (basic == VMX_EXIT_MSR_LOADING)
		return "the failing MSR-load entry";
	return "no detail";
}

/* Exit reason bit 31: the CPU refused the guest state; never enter again. */
static enum vmx_action entry_failed(const struct vmx_exit_info *x, struct vm_exit *e,
				    char *what, size_t len)
{
	uint32_t basic = x->reason & EXIT_REASON_BASIC_MASK;

	e->code = EXIT_INVALID;
	e->u.vendor.reason = x->reason;
	e->u.vendor.info1 = x->qual;
	snprintf(what, len, "exit reason %u (%s), qualification %llu (%s)",
		 basic, vmx_exit_reason_name(basic), (unsigned long long)x->qual,
		 entry_failure_detail(basic, x->qual));
	e->u.vendor.what = what;
	return VMX_ACT_FAILED;
}

/*
 * Exit reason 0: the host's NMIs, and the exceptions of the bitmap
 * (vmx.c): #DB and #AC, reflected back so that a chain of them cannot keep
 * the CPU in the guest for ever (CVE-2015-8104, CVE-2015-5307, as on
 * SVM); ICEBP, which exits through #DB's bit; #UD, where AMD's
 * VMMCALL is the hypercall; and #MC, a machine check that is the host's
 * to report.  The back end settles all but the NMI.
 */
static enum vmx_action exception_or_nmi(const struct vmx_exit_info *x, struct vm_exit *e,
					char *what, size_t len)
{
	uint32_t type = (x->intr_info & INTR_INFO_TYPE_MASK) >> INTR_INFO_TYPE_SHIFT;
	uint32_t vector = x->intr_info & INTR_INFO_VECTOR_MASK;
	char detail[48];

	if (x->intr_info & INTR_INFO_VALID) {
		if (type == INTR_TYPE_NMI) {
			e->code = EXIT_EXTERNAL;
			return VMX_ACT_NMI;
		}
		if (type == INTR_TYPE_HW_EXCEPTION && vector == VEC_DB)
			return VMX_ACT_DB;
		if (type == INTR_TYPE_HW_EXCEPTION && vector == VEC_AC)
			return VMX_ACT_REFLECT;
		if (type == INTR_TYPE_HW_EXCEPTION && vector == VEC_UD)
			return VMX_ACT_UD_CHECK;
		if (type == INTR_TYPE_HW_EXCEPTION && vector == VEC_MC)
			return VMX_ACT_MCE;
		if (type == INTR_TYPE_PRIV_SOFT_EXC && vector == VEC_DB &&
		    x->insn_len >= 1 && x->insn_len <= MAX_INSN_LEN) {
			e->inst_len = x->insn_len;
			return VMX_ACT_ICEBP;
		}
	}
	snprintf(detail, sizeof(detail), "vector %u type %u", vector, type);
	return unhandled(x, e, what, len, detail);
}

/* Qualification: size-1 in 2:0 (0, 1 or 3), IN in 3, string 4, REP 5, port 31:16. */
static enum vmx_action decode_io(const struct vmx_exit_info *x, struct vm_exit *e,
				 char *what, size_t len)
{
	unsigned size = (x->qual & IO_QUAL_SIZE_MASK) + 1;

	if (size != 1 && size != 2 && size != 4)
		return unhandled(x, e, what, len, "invalid access size");
	e->u.io.port = (x->qual >> IO_QUAL_PORT_SHIFT) & 0xffff;
	e->u.io.size = size;
	e->u.io.in = x->qual & IO_QUAL_IN;
	e->u.io.string = x->qual & IO_QUAL_STRING;
	e->u.io.rep = x->qual & IO_QUAL_REP;
	return VMX_ACT_CORE;
}

static void decode_msr(const uint64_t *gpr, struct vm_exit *e)
{
	e->u.msr.index = (uint32_t)gpr[GPR_RCX];
	if (e->code == EXIT_MSR_WRITE)
		e->u.msr.value = gpr[GPR_RDX] << 32 | (uint32_t)gpr[GPR_RAX];
}

/* Qualification: the access (R/W/X in 2:0) and what the EPT allowed (5:3);
 * any allowed bit means the page was mapped: a permission fault.  An EPT
 * misconfiguration has no qualification: an access of unknown kind to a
 * guest-physical address without a (well-formed) mapping, outside the
 * guest's memory as far as the core is concerned. */
static void decode_ept_violation(const struct vmx_exit_info *x, struct vm_exit *e)
{
	e->code = EXIT_GPA_FAULT;
	e->u.gpa_fault.gpa = x->gpa;
	e->u.gpa_fault.vectoring = x->idt_info & INTR_INFO_VALID;
	if ((x->reason & EXIT_REASON_BASIC_MASK) == VMX_EXIT_EPT_MISCONFIG)
		return;
	e->u.gpa_fault.read = x->qual & EPT_QUAL_READ;
	e->u.gpa_fault.write = x->qual & EPT_QUAL_WRITE;
	e->u.gpa_fault.exec = x->qual & EPT_QUAL_FETCH;
	e->u.gpa_fault.present = x->qual & EPT_QUAL_PERM_MASK;
	e->u.gpa_fault.walk = (x->qual & EPT_QUAL_GLA_VALID) && !(x->qual & EPT_QUAL_GLA_XLAT);
}

/*
 * Fill *e from x (and the guest's RCX/RDX/RAX for MSR exits); what is a
 * buffer for the words of an unhandled or failed exit, which e then points
 * to.  Returns what the back end must do besides.
 */
enum vmx_action vmx_exit_decode(const struct vmx_exit_info *x, const uint64_t *gpr,
				struct vm_exit *e, char *what, size_t len)
{
	uint32_t basic = x->reason & EXIT_REASON_BASIC_MASK;
	const struct exit_rule *r = basic < VMX_EXIT_REASON_COUNT ? &rules[basic] : NULL;

	memset(e, 0, sizeof(*e));
	e->rip = x->rip;
	if (basic == VMX_EXIT_MACHINE_CHECK)
		return VMX_ACT_MCE;	/* during VM entry: the host's, not the guest's */
	if (x->reason & EXIT_REASON_ENTRY_FAILURE)
		return entry_failed(x, e, what, len);
	if (basic == VMX_EXIT_EXCEPTION_NMI)
		return exception_or_nmi(x, e, what, len);
	if (basic == VMX_EXIT_EPT_MISCONFIG) {
		decode_ept_violation(x, e);
		return VMX_ACT_CORE;
	}
	if (!r || !r->known)
		return unhandled(x, e, what, len, NULL);
	if (r->insn && (x->insn_len == 0 || x->insn_len > MAX_INSN_LEN))
		return unhandled(x, e, what, len, "impossible instruction length");
	e->code = r->code;
	e->inst_len = r->insn ? x->insn_len : 0;
	if (basic == VMX_EXIT_IO)
		return decode_io(x, e, what, len);
	if (basic == VMX_EXIT_RDMSR || basic == VMX_EXIT_WRMSR)
		decode_msr(gpr, e);
	if (basic == VMX_EXIT_EPT_VIOLATION)
		decode_ept_violation(x, e);
	if (basic == VMX_EXIT_CR_ACCESS && (x->qual & CR_QUAL_CR_MASK) == 8)
		return decode_cr8(x, e, what, len);
	return r->action;
}

/*
 * A #DB that exited (VMX_ACT_DB): its causes, for the caller to put into
 * DR6, which the exit left alone; the caller then injects it.  Delivering
 * a #DB clears DR7.GD (the handler may use MOV DR).  With TF and an STI
 * or MOV SS shadow the entry needs BS pending, which the CPU does not set
 * at this exit (Vol. 3C "Checks on Guest Non-Register State"; KVM does
 * the same).
 */
uint64_t vmx_db_exit(const struct vmcs_io *io, const struct vmx_exit_info *x)
{
	uint64_t intr = vmcs_rd(io, VMCS_GUEST_INTERRUPTIBILITY);

	if ((vmcs_rd(io, VMCS_GUEST_RFLAGS) & RFLAGS_TF) &&
	    (intr & (GUEST_INTR_STI | GUEST_INTR_MOV_SS)))
		vmcs_wr(io, VMCS_GUEST_PENDING_DBG,
			vmcs_rd(io, VMCS_GUEST_PENDING_DBG) | PENDING_DBG_BS);
	vmcs_wr(io, VMCS_GUEST_DR7, vmcs_rd(io, VMCS_GUEST_DR7) & ~X86_DR7_GD);
	return x->qual & X86_DB_CAUSES;
}

/* Where the guest's CS:RIP is, and its paging (g: the caller's maxphyaddr,
 * gbpages and reader; the rest is filled here from the VMCS). */
static void guest_at_rip(const struct vmcs_io *io, const struct vmx_config *cfg,
			 struct gwalk_env *g, struct x86_guest_rip *r)
{
	uint32_t cs_ar = vmcs_rd(io, VMCS_GUEST_CS_AR);
	uint32_t ss_ar = vmcs_rd(io, VMCS_GUEST_SS_AR);

	g->cr0 = vmx_cr_view(vmcs_rd(io, VMCS_GUEST_CR0), vmcs_rd(io, VMCS_CR0_SHADOW),
			     cfg->cr0_mask);
	g->cr4 = vmx_cr_view(vmcs_rd(io, VMCS_GUEST_CR4), vmcs_rd(io, VMCS_CR4_SHADOW),
			     cfg->cr4_mask);
	g->cr3 = vmcs_rd(io, VMCS_GUEST_CR3);
	g->efer = vmcs_rd(io, VMCS_GUEST_EFER);
	g->rflags = vmcs_rd(io, VMCS_GUEST_RFLAGS);
	*r = (struct x86_guest_rip){
		.rip = vmcs_rd(io, VMCS_GUEST_RIP), .cs_base = vmcs_rd(io, VMCS_GUEST_CS_BASE),
		.cs_l = cs_ar & AR_L, .cs_db = cs_ar & AR_DB,
		.user = ((ss_ar >> AR_DPL_SHIFT) & 3) == 3,
	};
}

/*
 * Fetch and decode the guest's instruction at CS:RIP through its own
 * paging (g as for guest_at_rip).  The length, or a negative errno as
 * x86_fetch_decode() gives it.
 */
int vmx_fetch_insn(const struct vmcs_io *io, const struct vmx_config *cfg, struct gwalk_env *g,
		   struct x86_insn *insn)
{
	struct x86_guest_rip r;
	struct gwalk_result res;

	guest_at_rip(io, cfg, g, &r);
	return x86_fetch_at_rip(g, &r, 0, insn, &res);
}

/* After a #UD: x86_ud_hypercall() of the guest's instruction at CS:RIP. */
int vmx_ud_hypercall(const struct vmcs_io *io, const struct vmx_config *cfg,
		     struct gwalk_env *g)
{
	struct x86_guest_rip r;

	guest_at_rip(io, cfg, g, &r);
	return x86_ud_hypercall(g, &r, 0);
}

/* An event cut short by the exit is delivered again at the next entry
 * (the core may replace it with inject()). */
static void requeue_event(const struct vmcs_io *io, const struct vmx_exit_info *x)
{
	uint32_t info = x->idt_info & (INTR_INFO_VALID | INTR_INFO_ERROR_VALID |
				       INTR_INFO_TYPE_MASK | INTR_INFO_VECTOR_MASK);
	uint32_t type = (info & INTR_INFO_TYPE_MASK) >> INTR_INFO_TYPE_SHIFT;

	vmcs_wr(io, VMCS_ENTRY_INTR_INFO, info);
	if (info & INTR_INFO_ERROR_VALID)
		vmcs_wr(io, VMCS_ENTRY_EXCEPTION_ERROR, x->idt_error);
	if (type == INTR_TYPE_SOFT_INT || type == INTR_TYPE_PRIV_SOFT_EXC ||
	    type == INTR_TYPE_SOFT_EXC)
		vmcs_wr(io, VMCS_ENTRY_INSN_LEN, x->insn_len);
	/* An NMI cut short left blocking by NMI set; an entry that injects an
	 * NMI must find it clear (SDM "Checks on Guest Non-Register State"),
	 * and the delivery sets it again. */
	if (type == INTR_TYPE_NMI)
		vmcs_wr(io, VMCS_GUEST_INTERRUPTIBILITY,
			vmcs_rd(io, VMCS_GUEST_INTERRUPTIBILITY) & ~GUEST_INTR_NMI);
}

/* A fault in an IRET that had unblocked NMIs: the IRET runs again, so NMI
 * blocking is restored ("Information for VM Exits Due to Vectored Events",
 * bit 12, and bit 12 of the EPT-violation and PML-full qualifications). */
static bool iret_unblocked_nmi(const struct vmx_exit_info *x)
{
	uint32_t basic = x->reason & EXIT_REASON_BASIC_MASK;

	if (basic == VMX_EXIT_EPT_VIOLATION || basic == VMX_EXIT_PML_FULL)
		return x->qual & EPT_QUAL_NMI_UNBLOCKED;
	return basic == VMX_EXIT_EXCEPTION_NMI && (x->intr_info & INTR_INFO_VALID) &&
	       (x->intr_info & INTR_INFO_NMI_UNBLOCKED) &&
	       (x->intr_info & INTR_INFO_VECTOR_MASK) != 8;
}

/* After every exit, before anything else touches the VMCS. */
void vmx_exit_fixup(const struct vmcs_io *io, const struct vmx_exit_info *x)
{
	if (x->reason & EXIT_REASON_ENTRY_FAILURE)
		return;
	if (x->idt_info & INTR_INFO_VALID) {
		requeue_event(io, x);
		return;
	}
	if (iret_unblocked_nmi(x))
		vmcs_wr(io, VMCS_GUEST_INTERRUPTIBILITY,
			vmcs_rd(io, VMCS_GUEST_INTERRUPTIBILITY) | GUEST_INTR_NMI);
}
