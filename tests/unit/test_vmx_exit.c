/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for VM-exit handling in the VMX back end: decoding synthetic
 * (reason, qualification, ...) values into struct vm_exit (exit.c), the
 * event re-queue and NMI fix-ups after an exit, reading only the fields an
 * exit defines, hostile values, and the control-register emulation (cr.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>
#include "arch/x86/cpu.h"
#include "arch/x86/emulate/debug.h"
#include "tests/unit/test_vmx_fake.h"

static struct fake_vmcs vmcs;
static struct vmcs_io io;
static struct vmx_config cfg;
static struct vmx_soft soft;
static uint64_t gpr[GPR_COUNT];
static char what[192];

static int setup(void **state)
{
	struct vmx_caps c;
	char why[128];

	(void)state;
	fake_io(&vmcs, &io);
	fake_caps(&c);
	memset(&soft, 0, sizeof(soft));
	memset(gpr, 0, sizeof(gpr));
	memset(what, 0, sizeof(what));
	return vmx_config_derive(&c, &cfg, why, sizeof(why));
}

static struct vmx_exit_info mkexit(uint32_t reason, uint64_t qual, uint32_t len)
{
	return (struct vmx_exit_info){ .reason = reason, .qual = qual, .insn_len = len,
				       .rip = 0x401000 };
}

static enum vmx_action decode(const struct vmx_exit_info *x, struct vm_exit *e)
{
	memset(e, 0x77, sizeof(*e));		/* the decoder must clear it */
	return vmx_exit_decode(x, gpr, e, what, sizeof(what));
}

/* ---- decoding ----------------------------------------------------------- */

static void test_simple_exits(void **state)
{
	static const struct { uint32_t reason; enum exit_code code; bool insn; } cases[] = {
		{ VMX_EXIT_CPUID, EXIT_CPUID, true }, { VMX_EXIT_HLT, EXIT_HLT, true },
		{ VMX_EXIT_EXT_INTR, EXIT_EXTERNAL, false },
		{ VMX_EXIT_PREEMPTION_TIMER, EXIT_EXTERNAL, false },
		{ VMX_EXIT_INTR_WINDOW, EXIT_INTR_WINDOW, false },
		{ VMX_EXIT_TRIPLE_FAULT, EXIT_SHUTDOWN, false },
		{ VMX_EXIT_VMCALL, EXIT_HYPERCALL, true }, { VMX_EXIT_XSETBV, EXIT_XSETBV, true },
		{ VMX_EXIT_RDTSC, EXIT_RDTSC, true }, { VMX_EXIT_PAUSE, EXIT_PAUSE, true },
		{ VMX_EXIT_RDPMC, EXIT_RDPMC, true },
	};
	struct vm_exit e;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vmx_exit_info x = mkexit(cases[i].reason, 0, 3);
		assert_int_equal(decode(&x, &e), VMX_ACT_CORE);
		assert_int_equal(e.code, cases[i].code);
		assert_int_equal(e.rip, 0x401000);
		assert_int_equal(e.inst_len, cases[i].insn ? 3 : 0);
	}
}

static void test_virt_insns(void **state)
{
	static const uint32_t reasons[] = { 19, 20, 21, 22, 23, 24, 25, 26, 27, 50, 53, 59 };
	struct vm_exit e;

	(void)state;
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++) {
		struct vmx_exit_info x = mkexit(reasons[i], 0, 3);
		assert_int_equal(decode(&x, &e), VMX_ACT_CORE);
		assert_int_equal(e.code, EXIT_VIRT_INSN);
		assert_int_equal(e.inst_len, 3);
	}
}

static void test_backend_exits(void **state)
{
	static const struct { uint32_t reason; enum vmx_action act; } cases[] = {
		{ VMX_EXIT_INVD, VMX_ACT_SKIP }, { VMX_EXIT_WBINVD, VMX_ACT_SKIP },
		{ VMX_EXIT_MONITOR, VMX_ACT_UD }, { VMX_EXIT_MWAIT, VMX_ACT_UD },
		{ VMX_EXIT_CR_ACCESS, VMX_ACT_CR },
	};
	struct vm_exit e;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vmx_exit_info x = mkexit(cases[i].reason, 0, 2);
		assert_int_equal(decode(&x, &e), cases[i].act);
		assert_int_equal(e.code, EXIT_NONE);
		assert_int_equal(e.inst_len, 2);
	}
}

static void test_io(void **state)
{
	struct vm_exit e;
	struct vmx_exit_info x;

	(void)state;
	x = mkexit(VMX_EXIT_IO, 0x80ull << 16 | 1 << 6 | 0, 2);	/* out %al, $0x80 */
	assert_int_equal(decode(&x, &e), VMX_ACT_CORE);
	assert_int_equal(e.code, EXIT_IO);
	assert_int_equal(e.u.io.port, 0x80);
	assert_int_equal(e.u.io.size, 1);
	assert_false(e.u.io.in);
	assert_false(e.u.io.string || e.u.io.rep);
	x = mkexit(VMX_EXIT_IO, 0x3f8ull << 16 | IO_QUAL_IN | 3, 1);	/* in %dx, %eax */
	decode(&x, &e);
	assert_int_equal(e.u.io.port, 0x3f8);
	assert_int_equal(e.u.io.size, 4);
	assert_true(e.u.io.in);
	x = mkexit(VMX_EXIT_IO, 0xffffull << 16 | IO_QUAL_STRING | IO_QUAL_REP | 1, 2);	/* rep outsw */
	decode(&x, &e);
	assert_int_equal(e.u.io.port, 0xffff);
	assert_int_equal(e.u.io.size, 2);
	assert_true(e.u.io.string && e.u.io.rep);
	/* sizes 3, 5..8 do not exist */
	for (uint64_t s = 2; s < 8; s++) {
		if (s == 3)
			continue;
		x = mkexit(VMX_EXIT_IO, 0x60ull << 16 | s, 1);
		decode(&x, &e);
		assert_int_equal(e.code, EXIT_UNHANDLED);
		assert_int_equal(e.u.vendor.reason, VMX_EXIT_IO);
		assert_non_null(strstr(e.u.vendor.what, "invalid access size"));
	}
}

static void test_msr(void **state)
{
	struct vm_exit e;
	struct vmx_exit_info x = mkexit(VMX_EXIT_WRMSR, 0, 2);

	(void)state;
	gpr[GPR_RCX] = 0xdead0000c0000080;	/* upper half ignored */
	gpr[GPR_RAX] = 0xffffffff00000d01;
	gpr[GPR_RDX] = 0x1234;
	assert_int_equal(decode(&x, &e), VMX_ACT_CORE);
	assert_int_equal(e.code, EXIT_MSR_WRITE);
	assert_int_equal(e.u.msr.index, 0xc0000080);
	assert_int_equal(e.u.msr.value, 0x0000123400000d01);
	x = mkexit(VMX_EXIT_RDMSR, 0, 2);
	decode(&x, &e);
	assert_int_equal(e.code, EXIT_MSR_READ);
	assert_int_equal(e.u.msr.index, 0xc0000080);
	assert_int_equal(e.u.msr.value, 0);
}

static void test_ept_violation(void **state)
{
	struct vm_exit e;
	struct vmx_exit_info x = mkexit(VMX_EXIT_EPT_VIOLATION, 0x1aa, 0);

	(void)state;
	x.gpa = 0x12345678;	/* a write to a read-only, executable page */
	assert_int_equal(decode(&x, &e), VMX_ACT_CORE);
	assert_int_equal(e.code, EXIT_GPA_FAULT);
	assert_int_equal(e.u.gpa_fault.gpa, 0x12345678);
	assert_true(e.u.gpa_fault.write && e.u.gpa_fault.present);
	assert_false(e.u.gpa_fault.read || e.u.gpa_fault.exec);
	assert_int_equal(e.inst_len, 0);
	assert_false(e.u.gpa_fault.walk);	/* 0x1aa: linear address, translated */
	x.qual = 0x181;		/* read of an unmapped page */
	decode(&x, &e);
	assert_true(e.u.gpa_fault.read);
	assert_false(e.u.gpa_fault.present || e.u.gpa_fault.write || e.u.gpa_fault.exec);
	assert_false(e.u.gpa_fault.walk);
	x.qual = 0x81;		/* a read by the walk of the guest's tables */
	decode(&x, &e);
	assert_true(e.u.gpa_fault.walk);
	x.qual = 0x1;		/* no linear address at all: not known to be one */
	decode(&x, &e);
	assert_false(e.u.gpa_fault.walk);
	x.qual = 0x22;		/* write to an execute-only page: mapped */
	decode(&x, &e);
	assert_true(e.u.gpa_fault.present && e.u.gpa_fault.write);
	x.qual = 0x184;		/* fetch */
	decode(&x, &e);
	assert_true(e.u.gpa_fault.exec);
	assert_false(e.u.gpa_fault.present);
	assert_false(e.u.gpa_fault.vectoring);
	/* during an event's delivery (IDT-vectoring information valid) */
	x.idt_info = INTR_INFO_VALID | 0x20;
	decode(&x, &e);
	assert_true(e.u.gpa_fault.vectoring);
}

static void test_misconfig_and_unknown(void **state)
{
	static const uint32_t unknown[] = { 3, 9, 11, 14, 29, 35, 37, 63, 75, 76, 1000, 0xffff };
	struct vm_exit e;
	struct vmx_exit_info x = mkexit(VMX_EXIT_EPT_MISCONFIG, 0x7, 0);

	(void)state;
	/* like a violation outside memory: the address, no access kind */
	x.gpa = 0x4fee00030ull;
	assert_int_equal(decode(&x, &e), VMX_ACT_CORE);
	assert_int_equal(e.code, EXIT_GPA_FAULT);
	assert_int_equal(e.rip, 0x401000);
	assert_int_equal(e.u.gpa_fault.gpa, 0x4fee00030ull);
	assert_false(e.u.gpa_fault.read || e.u.gpa_fault.write || e.u.gpa_fault.exec);
	assert_false(e.u.gpa_fault.present);	/* never taken for a dirty-log fault */
	assert_int_equal(e.inst_len, 0);
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		x = mkexit(unknown[i], 0x42, 2);
		assert_int_equal(decode(&x, &e), VMX_ACT_CORE);
		assert_int_equal(e.code, EXIT_UNHANDLED);
		assert_int_equal(e.u.vendor.reason, unknown[i]);
		assert_int_equal(e.u.vendor.info1, 0x42);
		assert_ptr_equal(e.u.vendor.what, what);
		assert_non_null(strstr(what, vmx_exit_reason_name(unknown[i])));
		assert_non_null(strstr(what, "0x42"));
	}
}

#define EXC(type, vec)	(INTR_INFO_VALID | INTR_TYPE_##type << 8 | (vec))

/* The host's NMIs, and the exception bitmap's #DB, #UD, #AC and ICEBP,
 * which the back end settles; nothing else can exit here. */
static void test_exception_or_nmi(void **state)
{
	static const struct {
		uint32_t intr_info, insn_len;
		enum vmx_action act;
		enum exit_code code;
	} cases[] = {
		{ EXC(NMI, 2), 0, VMX_ACT_NMI, EXIT_EXTERNAL },
		{ EXC(HW_EXCEPTION, 14) | INTR_INFO_ERROR_VALID, 0, VMX_ACT_CORE, EXIT_UNHANDLED },
		{ EXC(HW_EXCEPTION, 1), 0, VMX_ACT_DB, EXIT_NONE },
		{ EXC(HW_EXCEPTION, 17) | INTR_INFO_ERROR_VALID, 0, VMX_ACT_REFLECT, EXIT_NONE },
		{ EXC(HW_EXCEPTION, 6), 0, VMX_ACT_UD_CHECK, EXIT_NONE },
		{ EXC(HW_EXCEPTION, 18), 0, VMX_ACT_MCE, EXIT_NONE },	/* the host's */
		{ EXC(PRIV_SOFT_EXC, 1), 1, VMX_ACT_ICEBP, EXIT_NONE },	/* with its length */
		{ EXC(PRIV_SOFT_EXC, 1), 0, VMX_ACT_CORE, EXIT_UNHANDLED },
		{ EXC(SOFT_EXC, 3), 1, VMX_ACT_CORE, EXIT_UNHANDLED },	/* INT3: not in the bitmap */
		{ INTR_TYPE_HW_EXCEPTION << 8 | 1, 0, VMX_ACT_CORE, EXIT_UNHANDLED },	/* not valid */
	};
	struct vm_exit e;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vmx_exit_info x = mkexit(VMX_EXIT_EXCEPTION_NMI, 0, cases[i].insn_len);

		x.intr_info = cases[i].intr_info;
		assert_int_equal(decode(&x, &e), cases[i].act);
		assert_int_equal(e.code, cases[i].code);
		if (cases[i].act == VMX_ACT_ICEBP)
			assert_int_equal(e.inst_len, 1);
	}
	decode(&(struct vmx_exit_info){ .intr_info = EXC(HW_EXCEPTION, 14) }, &e);
	assert_non_null(strstr(e.u.vendor.what, "vector 14"));
}

/* A #DB that exited: its causes for DR6 come from the qualification; the
 * delivery clears DR7.GD; TF with an STI shadow needs BS pending. */
static void test_db_exit(void **state)
{
	struct vmx_exit_info x = mkexit(VMX_EXIT_EXCEPTION_NMI, 0, 0);

	(void)state;
	x.intr_info = INTR_INFO_VALID | INTR_TYPE_HW_EXCEPTION << 8 | 1;
	x.qual = 0x1 | 1ull << 14 | 1ull << 40;		/* B0, BS, junk above */
	vmcs.val[VMCS_GUEST_RFLAGS] = 0x302;
	vmcs.val[VMCS_GUEST_DR7] = 0x2401;		/* GD L0 */
	assert_int_equal(vmx_db_exit(&io, &x), 0x4001);
	assert_int_equal(vmcs.val[VMCS_GUEST_DR7], 0x401);
	assert_int_equal(vmcs.val[VMCS_GUEST_PENDING_DBG], 0);	/* no shadow */
	vmcs.val[VMCS_GUEST_INTERRUPTIBILITY] = GUEST_INTR_STI;
	x.qual = 1ull << 13;				/* BD */
	assert_int_equal(vmx_db_exit(&io, &x), 1ull << 13);
	assert_int_equal(vmcs.val[VMCS_GUEST_PENDING_DBG], PENDING_DBG_BS);
	vmcs.val[VMCS_GUEST_PENDING_DBG] = 0;
	vmcs.val[VMCS_GUEST_RFLAGS] = 0x202;		/* no TF: nothing pending */
	vmx_db_exit(&io, &x);
	assert_int_equal(vmcs.val[VMCS_GUEST_PENDING_DBG], 0);
	assert_int_equal(vmcs.bad, 0);
	/* what DR6 becomes: B0-B3 replaced, BD/BS kept, RTM active low */
	assert_int_equal(x86_dr6_after_db(0xffff0ff0 | 0x6, 0x1), 0xffff0ff1);
	assert_int_equal(x86_dr6_after_db(0xffff0ff0 | 1u << 13 | 0x2, 1u << 14),
			 0xffff0ff0 | 1u << 13 | 1u << 14);
	assert_int_equal(x86_dr6_after_db(0, 1u << 16 | 1u << 12), 0xfffe0ff0);
	assert_int_equal(x86_dr6_after_db(~0ull, 0), 0xffffeff0);
}

/* #UD: the instruction at CS:RIP fetched through the guest's mode and
 * paging, for the VMMCALL check (vmx.c). */
static uint8_t code_mem[0x4000];

static int code_read(void *ctx, uint64_t gpa, void *buf, size_t len)
{
	(void)ctx;
	if (gpa + len > sizeof(code_mem))
		return -EFAULT;
	memcpy(buf, code_mem + gpa, len);
	return 0;
}

static void test_fetch_insn(void **state)
{
	struct gwalk_env g = { .maxphyaddr = 39, .gbpages = true, .read_gpa = code_read };
	struct x86_insn insn;

	(void)state;
	/* 32-bit protected mode, paging off, CS base 0x1000 */
	vmcs.val[VMCS_GUEST_CR0] = CR0_PE | CR0_NE;
	vmcs.val[VMCS_CR0_SHADOW] = CR0_PE;
	vmcs.val[VMCS_GUEST_CR4] = CR4_VMXE;
	vmcs.val[VMCS_GUEST_CS_AR] = 0xc09b;
	vmcs.val[VMCS_GUEST_CS_BASE] = 0x1000;
	vmcs.val[VMCS_GUEST_RIP] = 0x200;
	memcpy(code_mem + 0x1200, "\x0f\x01\xd9", 3);
	assert_int_equal(vmx_fetch_insn(&io, &cfg, &g, &insn), 3);
	assert_int_equal(x86_insn_hypercall(&insn), X86_HC_VMMCALL);
	assert_int_equal(g.cr0, CR0_PE);			/* the guest's view */
	assert_int_equal(g.cr4, 0);
	/* 16-bit code: a prefix counts */
	vmcs.val[VMCS_GUEST_CS_AR] = 0x009b;
	memcpy(code_mem + 0x1200, "\x66\x0f\x01\xd9", 4);
	assert_int_equal(vmx_fetch_insn(&io, &cfg, &g, &insn), 4);
	assert_int_equal(x86_insn_hypercall(&insn), X86_HC_VMMCALL);
	/* 64-bit mode: CS base ignored */
	vmcs.val[VMCS_GUEST_EFER] = EFER_LMA | EFER_LME;
	vmcs.val[VMCS_GUEST_CR0] = CR0_PE | CR0_NE | CR0_PG;
	vmcs.val[VMCS_CR0_SHADOW] = CR0_PE | CR0_PG;
	vmcs.val[VMCS_GUEST_CR4] = CR4_VMXE | CR4_PAE;
	vmcs.val[VMCS_CR4_SHADOW] = CR4_PAE;
	vmcs.val[VMCS_GUEST_CR3] = 0x2000;
	vmcs.val[VMCS_GUEST_CS_AR] = 0xa09b;
	vmcs.val[VMCS_GUEST_RIP] = 0x3800;
	/* PML4[0] -> PDPT at 0x3000 -> a supervisor 1 GiB page at 0 */
	memcpy(code_mem + 0x2000, "\x03\x30\x00\x00\x00\x00\x00\x00", 8);
	memcpy(code_mem + 0x3000, "\x83\x00\x00\x00\x00\x00\x00\x00", 8);
	memcpy(code_mem + 0x3800, "\x0f\x0b", 2);
	assert_int_equal(vmx_fetch_insn(&io, &cfg, &g, &insn), 2);
	assert_int_equal(x86_insn_hypercall(&insn), X86_HC_NONE);
	assert_int_equal(vmx_ud_hypercall(&io, &cfg, &g), 0);	/* UD2: not ours */
	memcpy(code_mem + 0x3800, "\x2e\x0f\x01\xd9", 4);		/* CS: VMMCALL */
	assert_int_equal(vmx_ud_hypercall(&io, &cfg, &g), 4);
	memcpy(code_mem + 0x3800, "\xf0\x0f\x01\xd9", 4);		/* LOCK: #UD anyway */
	assert_int_equal(vmx_ud_hypercall(&io, &cfg, &g), 0);
	memcpy(code_mem + 0x3800, "\x0f\x0b", 2);
	/* CPL 3 (SS.DPL): the supervisor-only page faults */
	vmcs.val[VMCS_GUEST_SS_AR] = 0x60f3;
	assert_int_equal(vmx_fetch_insn(&io, &cfg, &g, &insn), -EFAULT);
	/* code outside guest memory */
	vmcs.val[VMCS_GUEST_SS_AR] = 0xc093;
	vmcs.val[VMCS_GUEST_RIP] = 0x7ffff000;
	assert_true(vmx_fetch_insn(&io, &cfg, &g, &insn) < 0);
	g.read_gpa = NULL;
	assert_int_equal(vmx_fetch_insn(&io, &cfg, &g, &insn), -EINVAL);
	assert_int_equal(vmcs.bad, 0);
}

static void test_entry_failure(void **state)
{
	struct vm_exit e;
	struct vmx_exit_info x = mkexit(EXIT_REASON_ENTRY_FAILURE | VMX_EXIT_BAD_GUEST_STATE, 0, 0);

	(void)state;
	assert_int_equal(decode(&x, &e), VMX_ACT_FAILED);
	assert_int_equal(e.code, EXIT_INVALID);
	assert_non_null(strstr(e.u.vendor.what, "invalid guest state"));
	x = mkexit(EXIT_REASON_ENTRY_FAILURE | VMX_EXIT_BAD_GUEST_STATE, 4, 0);
	decode(&x, &e);
	assert_non_null(strstr(e.u.vendor.what, "link pointer"));
	x = mkexit(EXIT_REASON_ENTRY_FAILURE | VMX_EXIT_MSR_LOADING, 3, 0);
	assert_int_equal(decode(&x, &e), VMX_ACT_FAILED);
	assert_non_null(strstr(e.u.vendor.what, "MSR loading"));
	/* a machine check during entry is the host's: reported, not the
	 * guest's failure */
	x = mkexit(EXIT_REASON_ENTRY_FAILURE | VMX_EXIT_MACHINE_CHECK, 0, 0);
	assert_int_equal(decode(&x, &e), VMX_ACT_MCE);
}

/* Hostile values: impossible lengths, every reason; never a crash. */
static void test_hostile(void **state)
{
	struct vm_exit e;
	struct vmx_exit_info x;

	(void)state;
	x = mkexit(VMX_EXIT_CPUID, 0, 0);
	decode(&x, &e);
	assert_int_equal(e.code, EXIT_UNHANDLED);
	x = mkexit(VMX_EXIT_HLT, 0, 16);
	decode(&x, &e);
	assert_int_equal(e.code, EXIT_UNHANDLED);
	assert_non_null(strstr(what, "instruction length"));
	for (uint32_t r = 0; r < 0x10000; r += 1) {
		x = mkexit(r | (r & 0x100 ? EXIT_REASON_ENTRY_FAILURE : 0), ~0ull, r & 0xff);
		x.intr_info = r * 0x01010101u;
		enum vmx_action a = decode(&x, &e);
		assert_true(e.code < EXIT_COUNT);
		assert_true(a < VMX_ACT_COUNT);
		assert_true(a != VMX_ACT_MCE || r == VMX_EXIT_MACHINE_CHECK);	/* r's intr_info is not #MC */
		if (e.code == EXIT_UNHANDLED || e.code == EXIT_INVALID)
			assert_true(strlen(e.u.vendor.what) < sizeof(what));
	}
}

/* ---- reading the exit fields ----------------------------------------------- */

static void test_info_read_only_defined_fields(void **state)
{
	struct vmx_exit_info x;

	(void)state;
	vmcs.val[VMCS_EXIT_REASON] = VMX_EXIT_CPUID;
	vmcs.val[VMCS_EXIT_INSN_LEN] = 2;
	vmcs.val[VMCS_GUEST_RIP] = 0x1000;
	vmx_exit_info_read(&io, &x);
	assert_int_equal(x.reason, VMX_EXIT_CPUID);
	assert_int_equal(x.insn_len, 2);
	assert_int_equal(x.rip, 0x1000);
	assert_int_equal(vmcs.reads[VMCS_GUEST_PHYS_ADDR], 0);
	assert_int_equal(vmcs.reads[VMCS_EXIT_INTR_INFO], 0);
	assert_int_equal(vmcs.reads[VMCS_IDT_VECTORING_ERROR], 0);

	vmcs.val[VMCS_EXIT_REASON] = VMX_EXIT_EPT_VIOLATION;
	vmcs.val[VMCS_GUEST_PHYS_ADDR] = 0xabc000;
	vmcs.val[VMCS_IDT_VECTORING_INFO] = INTR_INFO_VALID | INTR_INFO_ERROR_VALID | 3 << 8 | 14;
	vmcs.val[VMCS_IDT_VECTORING_ERROR] = 2;
	vmx_exit_info_read(&io, &x);
	assert_int_equal(x.gpa, 0xabc000);
	assert_int_equal(x.idt_error, 2);

	vmcs.val[VMCS_EXIT_REASON] = EXIT_REASON_ENTRY_FAILURE | VMX_EXIT_BAD_GUEST_STATE;
	memset(vmcs.reads, 0, sizeof(vmcs.reads));
	vmx_exit_info_read(&io, &x);
	assert_int_equal(vmcs.reads[VMCS_IDT_VECTORING_INFO], 0);
	assert_int_equal(x.idt_info, 0);
	assert_int_equal(vmcs.bad, 0);
}

/* ---- fix-ups after an exit ---------------------------------------------------- */

static void test_fixup_requeue(void **state)
{
	struct vmx_exit_info x = mkexit(VMX_EXIT_EPT_VIOLATION, 0, 0);

	(void)state;
	x.idt_info = INTR_INFO_VALID | INTR_TYPE_EXT_INT << 8 | 0x30;
	vmx_exit_fixup(&io, &x);
	assert_int_equal(vmcs.val[VMCS_ENTRY_INTR_INFO], 0x80000030);
	assert_int_equal(vmcs.writes[VMCS_ENTRY_EXCEPTION_ERROR], 0);

	x.idt_info = INTR_INFO_VALID | INTR_INFO_ERROR_VALID | INTR_TYPE_HW_EXCEPTION << 8 | 14
		     | 0x7000;	/* reserved bits 30:12 are not copied */
	x.idt_error = 0x6;
	vmx_exit_fixup(&io, &x);
	assert_int_equal(vmcs.val[VMCS_ENTRY_INTR_INFO], 0x80000b0e);
	assert_int_equal(vmcs.val[VMCS_ENTRY_EXCEPTION_ERROR], 6);

	x = mkexit(VMX_EXIT_EPT_VIOLATION, 0, 2);
	x.idt_info = INTR_INFO_VALID | INTR_TYPE_SOFT_INT << 8 | 0x80;	/* INT 0x80 */
	vmx_exit_fixup(&io, &x);
	assert_int_equal(vmcs.val[VMCS_ENTRY_INSN_LEN], 2);
	assert_int_equal(vmcs.bad, 0);

	/* an NMI cut short: re-injected with blocking by NMI cleared, or the
	 * entry fails; the shadow bits stay */
	vmcs.val[VMCS_GUEST_INTERRUPTIBILITY] = GUEST_INTR_NMI | GUEST_INTR_STI;
	x = mkexit(VMX_EXIT_EPT_VIOLATION, 0, 0);
	x.idt_info = INTR_INFO_VALID | INTR_TYPE_NMI << 8 | 2;
	vmx_exit_fixup(&io, &x);
	assert_int_equal(vmcs.val[VMCS_ENTRY_INTR_INFO], 0x80000202);
	assert_int_equal(vmcs.val[VMCS_GUEST_INTERRUPTIBILITY], GUEST_INTR_STI);
	/* any other event leaves NMI blocking as it was */
	vmcs.val[VMCS_GUEST_INTERRUPTIBILITY] = GUEST_INTR_NMI;
	x.idt_info = INTR_INFO_VALID | INTR_TYPE_EXT_INT << 8 | 0x30;
	vmx_exit_fixup(&io, &x);
	assert_int_equal(vmcs.val[VMCS_GUEST_INTERRUPTIBILITY], GUEST_INTR_NMI);
}

/* PML full: the log was drained on the way out; the core just resumes,
 * RIP untouched (the write that found the log full is retried). */
static void test_pml_full(void **state)
{
	struct vmx_exit_info x = mkexit(VMX_EXIT_PML_FULL, 0, 0);
	struct vm_exit e;

	(void)state;
	assert_int_equal(decode(&x, &e), VMX_ACT_CORE);
	assert_int_equal(e.code, EXIT_NONE);
	assert_int_equal(e.inst_len, 0);
}

static void test_fixup_nmi_unblocking(void **state)
{
	struct vmx_exit_info x = mkexit(VMX_EXIT_PML_FULL, EPT_QUAL_NMI_UNBLOCKED, 0);

	(void)state;
	vmx_exit_fixup(&io, &x);	/* the PML-full qualification's bit 12 too */
	assert_int_equal(vmcs.val[VMCS_GUEST_INTERRUPTIBILITY], GUEST_INTR_NMI);
	vmcs.val[VMCS_GUEST_INTERRUPTIBILITY] = 0;
	x = mkexit(VMX_EXIT_EPT_VIOLATION, EPT_QUAL_NMI_UNBLOCKED | 2, 0);
	vmx_exit_fixup(&io, &x);
	assert_int_equal(vmcs.val[VMCS_GUEST_INTERRUPTIBILITY], GUEST_INTR_NMI);
	/* not when an event delivery was cut: that one is re-injected instead */
	vmcs.val[VMCS_GUEST_INTERRUPTIBILITY] = 0;
	x.idt_info = INTR_INFO_VALID | 0x31;
	vmx_exit_fixup(&io, &x);
	assert_int_equal(vmcs.val[VMCS_GUEST_INTERRUPTIBILITY], 0);
	/* nor after a failed entry */
	x = mkexit(EXIT_REASON_ENTRY_FAILURE | 33, EPT_QUAL_NMI_UNBLOCKED, 0);
	vmcs.val[VMCS_ENTRY_INTR_INFO] = 0x12;
	vmx_exit_fixup(&io, &x);
	assert_int_equal(vmcs.val[VMCS_GUEST_INTERRUPTIBILITY], 0);
	assert_int_equal(vmcs.val[VMCS_ENTRY_INTR_INFO], 0x12);
}

/* ---- control registers ---------------------------------------------------- */

static uint8_t guest_mem[0x10000];
static int mem_fail;

static int fake_read_gpa(void *ctx, uint64_t gpa, void *buf, size_t len)
{
	(void)ctx;
	if (mem_fail || gpa + len > sizeof(guest_mem))
		return -EFAULT;
	memcpy(buf, guest_mem + gpa, len);
	return 0;
}

static const struct vmx_cr_env env = {
	.io = &io, .cfg = &cfg, .soft = &soft, .gpr = gpr,
	.read_gpa = fake_read_gpa, .gpa_ctx = NULL,
};

static uint64_t qual_mov_to(unsigned cr, unsigned reg)
{
	return cr | CR_TYPE_MOV_TO << CR_QUAL_TYPE_SHIFT | reg << CR_QUAL_GPR_SHIFT;
}

static uint64_t qual_mov_from(unsigned cr, unsigned reg)
{
	return cr | CR_TYPE_MOV_FROM << CR_QUAL_TYPE_SHIFT | reg << CR_QUAL_GPR_SHIFT;
}

/* A 32-bit protected-mode guest with paging off, as multiboot leaves it. */
static void guest_32bit(uint64_t cr0, uint64_t cr4, uint64_t efer)
{
	vmcs.val[VMCS_GUEST_CR0] = (cr0 | cfg.cr0_must1) & ~cfg.cr0_must0;
	vmcs.val[VMCS_CR0_SHADOW] = cr0;
	vmcs.val[VMCS_GUEST_CR4] = (cr4 | cfg.cr4_must1) & ~cfg.cr4_must0;
	vmcs.val[VMCS_CR4_SHADOW] = cr4;
	vmcs.val[VMCS_GUEST_EFER] = efer;
	vmcs.val[VMCS_ENTRY_CTLS] = cfg.entry | ((efer & EFER_LMA) ? ENTRYCTL_IA32E_GUEST : 0);
	vmcs.val[VMCS_GUEST_CS_AR] = (efer & EFER_LMA) ? 0xa09b : 0xc09b;
	vmcs.val[VMCS_GUEST_CR3] = 0x2000;
	mem_fail = 0;
}

static uint64_t view_cr0(void)
{
	return vmx_cr_view(vmcs.val[VMCS_GUEST_CR0], vmcs.val[VMCS_CR0_SHADOW], cfg.cr0_mask);
}

/* Switching to long mode with one MOV to CR0 that also sets NE. */
static void test_cr0_enter_long_mode(void **state)
{
	uint64_t val = CR0_PG | CR0_PE | CR0_NE | CR0_ET;

	(void)state;
	guest_32bit(CR0_PE | CR0_ET, CR4_PAE, EFER_LME);
	gpr[GPR_RAX] = 0xffffffff00000000 | val;	/* 32-bit code: upper half ignored */
	assert_int_equal(vmx_cr_access(&env, qual_mov_to(0, GPR_RAX)), VMX_CR_DONE);
	assert_int_equal(vmcs.val[VMCS_CR0_SHADOW], val);
	assert_int_equal(vmcs.val[VMCS_GUEST_CR0], val);
	assert_int_equal(vmcs.val[VMCS_GUEST_EFER], EFER_LME | EFER_LMA);
	assert_true(vmcs.val[VMCS_ENTRY_CTLS] & ENTRYCTL_IA32E_GUEST);
	assert_true(soft.flush_vpid);
	assert_int_equal(view_cr0(), val);
	assert_int_equal(vmcs.bad, 0);
}

static void test_cr0_refusals(void **state)
{
	(void)state;
	/* long mode without PAE */
	guest_32bit(CR0_PE, 0, EFER_LME);
	gpr[GPR_RCX] = CR0_PG | CR0_PE | CR0_NE;
	assert_int_equal(vmx_cr_access(&env, qual_mov_to(0, GPR_RCX)), VMX_CR_GP);
	assert_int_equal(vmcs.val[VMCS_CR0_SHADOW], CR0_PE);	/* unchanged */
	assert_int_equal(vmcs.val[VMCS_GUEST_EFER], EFER_LME);
	/* PG without PE, NW without CD */
	guest_32bit(CR0_PE, 0, 0);
	gpr[GPR_RCX] = CR0_PG | CR0_NE;
	assert_int_equal(vmx_cr_access(&env, qual_mov_to(0, GPR_RCX)), VMX_CR_GP);
	gpr[GPR_RCX] = CR0_PE | CR0_NW;
	assert_int_equal(vmx_cr_access(&env, qual_mov_to(0, GPR_RCX)), VMX_CR_GP);
	/* bits 63:32 in 64-bit code */
	guest_32bit(CR0_PG | CR0_PE, CR4_PAE, EFER_LME | EFER_LMA);
	gpr[GPR_RCX] = (1ull << 32) | CR0_PG | CR0_PE | CR0_NE;
	assert_int_equal(vmx_cr_access(&env, qual_mov_to(0, GPR_RCX)), VMX_CR_GP);
	/* paging off from 64-bit code */
	gpr[GPR_RCX] = CR0_PE | CR0_NE;
	assert_int_equal(vmx_cr_access(&env, qual_mov_to(0, GPR_RCX)), VMX_CR_GP);
	assert_false(soft.flush_vpid);
}

static void test_cr0_leave_long_mode_from_compat(void **state)
{
	(void)state;
	guest_32bit(CR0_PG | CR0_PE | CR0_NE, CR4_PAE, EFER_LME | EFER_LMA);
	vmcs.val[VMCS_GUEST_CS_AR] = 0xc09b;		/* compatibility mode */
	gpr[GPR_RDX] = CR0_PE;				/* and NE cleared: the exit */
	assert_int_equal(vmx_cr_access(&env, qual_mov_to(0, GPR_RDX)), VMX_CR_DONE);
	assert_int_equal(vmcs.val[VMCS_GUEST_EFER], EFER_LME);
	assert_false(vmcs.val[VMCS_ENTRY_CTLS] & ENTRYCTL_IA32E_GUEST);
	assert_int_equal(view_cr0(), CR0_PE);		/* the guest sees NE clear */
	assert_int_equal(vmcs.val[VMCS_GUEST_CR0], CR0_PE | CR0_NE);	/* the CPU has it */
}

/* PAE paging outside long mode: the PDPTEs come from the VMCS. */
static void test_cr0_pae_pdptes(void **state)
{
	uint64_t pdpte[4] = { 0x3001, 0, 0x5001, 0x6001 };

	(void)state;
	guest_32bit(CR0_PE, CR4_PAE, 0);
	vmcs.val[VMCS_GUEST_CR3] = 0x2020;		/* 32-byte aligned */
	memcpy(guest_mem + 0x2020, pdpte, sizeof(pdpte));
	gpr[GPR_RBX] = CR0_PG | CR0_PE | CR0_NE;
	assert_int_equal(vmx_cr_access(&env, qual_mov_to(0, GPR_RBX)), VMX_CR_DONE);
	for (int i = 0; i < 4; i++)
		assert_int_equal(vmcs.val[VMCS_GUEST_PDPTE0 + 2 * i], pdpte[i]);
	/* a present entry with a reserved bit: #GP, nothing changed */
	guest_32bit(CR0_PE, CR4_PAE, 0);
	vmcs.val[VMCS_GUEST_CR3] = 0x2020;
	pdpte[2] |= 1ull << 63;
	memcpy(guest_mem + 0x2020, pdpte, sizeof(pdpte));
	assert_int_equal(vmx_cr_access(&env, qual_mov_to(0, GPR_RBX)), VMX_CR_GP);
	assert_int_equal(vmcs.val[VMCS_CR0_SHADOW], CR0_PE);
	/* an address bit beyond the guest's width (36) is reserved too: a
	 * host with fewer bits than 52 would fail the VM entry with it */
	pdpte[2] = 0x5001 | 1ull << 47;
	memcpy(guest_mem + 0x2020, pdpte, sizeof(pdpte));
	assert_int_equal(vmx_cr_access(&env, qual_mov_to(0, GPR_RBX)), VMX_CR_GP);
	pdpte[2] = 0x5001 | 1ull << 35;			/* within it: fine */
	memcpy(guest_mem + 0x2020, pdpte, sizeof(pdpte));
	assert_int_equal(vmx_cr_access(&env, qual_mov_to(0, GPR_RBX)), VMX_CR_DONE);
	pdpte[2] = 0x5001;
	/* in long mode, a CR3 beyond the width: #GP; within it: loaded */
	guest_32bit(CR0_PG | CR0_PE | CR0_NE, CR4_PAE, EFER_LME | EFER_LMA);
	gpr[GPR_RBX] = 1ull << 40 | 0x7000;
	assert_int_equal(vmx_cr_access(&env, qual_mov_to(3, GPR_RBX)), VMX_CR_GP);
	gpr[GPR_RBX] = 0x7000;
	assert_int_equal(vmx_cr_access(&env, qual_mov_to(3, GPR_RBX)), VMX_CR_DONE);
	assert_int_equal(vmcs.val[VMCS_GUEST_CR3], 0x7000);
	gpr[GPR_RBX] = CR0_PG | CR0_PE | CR0_NE;
	/* unreadable */
	guest_32bit(CR0_PE, CR4_PAE, 0);
	mem_fail = 1;
	assert_int_equal(vmx_cr_access(&env, qual_mov_to(0, GPR_RBX)), VMX_CR_GP);
}

/* A state written whole (an arrival): PAE paging outside long mode gets
 * its PDPTEs from CR3, long mode and 32-bit paging none; bad ones load as
 * not present. */
static void test_state_load_pdptes(void **state)
{
	uint64_t pdpte[4] = { 0x3001, 0, 0x5001, 0x6001 };

	(void)state;
	guest_32bit(CR0_PG | CR0_PE, CR4_PAE, 0);
	vmcs.val[VMCS_GUEST_CR3] = 0x2020;
	memcpy(guest_mem + 0x2020, pdpte, sizeof(pdpte));
	vmx_cr_load_pdptes(&env);
	for (int i = 0; i < 4; i++)
		assert_int_equal(vmcs.val[VMCS_GUEST_PDPTE0 + 2 * i], pdpte[i]);
	/* a reserved bit, or memory that cannot be read: none present */
	pdpte[1] = 0x4001 | 1ull << 60;
	memcpy(guest_mem + 0x2020, pdpte, sizeof(pdpte));
	vmx_cr_load_pdptes(&env);
	for (int i = 0; i < 4; i++)
		assert_int_equal(vmcs.val[VMCS_GUEST_PDPTE0 + 2 * i], 0);
	/* long mode and 32-bit paging leave the fields alone */
	vmcs.val[VMCS_GUEST_PDPTE0] = 0x77;
	guest_32bit(CR0_PG | CR0_PE, CR4_PAE, EFER_LME | EFER_LMA);
	vmx_cr_load_pdptes(&env);
	guest_32bit(CR0_PG | CR0_PE, 0, 0);
	vmx_cr_load_pdptes(&env);
	assert_int_equal(vmcs.val[VMCS_GUEST_PDPTE0], 0x77);
}

/* MOV to/from CR8 become EXIT_CR8 with the register; CRs other than 8
 * stay with cr.c. */
static void test_cr8_to_core(void **state)
{
	struct vmx_exit_info x = mkexit(VMX_EXIT_CR_ACCESS, qual_mov_to(8, GPR_R11), 4);
	struct vm_exit e;

	(void)state;
	assert_int_equal(decode(&x, &e), VMX_ACT_CORE);
	assert_int_equal(e.code, EXIT_CR8);
	assert_true(e.u.cr8.write);
	assert_int_equal(e.u.cr8.gpr, GPR_R11);
	assert_int_equal(e.inst_len, 4);
	x = mkexit(VMX_EXIT_CR_ACCESS, qual_mov_from(8, GPR_RAX), 4);
	assert_int_equal(decode(&x, &e), VMX_ACT_CORE);
	assert_int_equal(e.code, EXIT_CR8);
	assert_false(e.u.cr8.write);
	assert_int_equal(e.u.cr8.gpr, GPR_RAX);
	x = mkexit(VMX_EXIT_CR_ACCESS, 8 | CR_TYPE_CLTS << CR_QUAL_TYPE_SHIFT, 2);
	assert_int_equal(decode(&x, &e), VMX_ACT_CORE);
	assert_int_equal(e.code, EXIT_UNHANDLED);
	x = mkexit(VMX_EXIT_CR_ACCESS, qual_mov_to(3, GPR_RAX), 3);
	assert_int_equal(decode(&x, &e), VMX_ACT_CR);
}

static void test_cr4(void **state)
{
	(void)state;
	guest_32bit(CR0_PE, 0, 0);
	gpr[GPR_RSI] = CR4_VMXE;		/* the guest has no VMX */
	assert_int_equal(vmx_cr_access(&env, qual_mov_to(4, GPR_RSI)), VMX_CR_GP);
	gpr[GPR_RSI] = 1ull << 20;		/* SMEP: this CPU has it, the guest's CPUID not */
	assert_int_equal(vmx_cr_access(&env, qual_mov_to(4, GPR_RSI)), VMX_CR_GP);
	gpr[GPR_RSI] = 1ull << 12;		/* LA57: fixed to 0 here */
	assert_int_equal(vmx_cr_access(&env, qual_mov_to(4, GPR_RSI)), VMX_CR_GP);
	assert_int_equal(vmcs.val[VMCS_CR4_SHADOW], 0);
	gpr[GPR_RSI] = CR4_PAE | CR4_OSFXSR;
	assert_int_equal(vmx_cr_access(&env, qual_mov_to(4, GPR_RSI)), VMX_CR_DONE);
	assert_int_equal(vmcs.val[VMCS_CR4_SHADOW], CR4_PAE | CR4_OSFXSR);
	assert_int_equal(vmcs.val[VMCS_GUEST_CR4], CR4_PAE | CR4_OSFXSR | CR4_VMXE);
	assert_true(soft.flush_vpid);
	/* clearing PAE in long mode */
	guest_32bit(CR0_PG | CR0_PE, CR4_PAE, EFER_LME | EFER_LMA);
	gpr[GPR_RSI] = 0;
	assert_int_equal(vmx_cr_access(&env, qual_mov_to(4, GPR_RSI)), VMX_CR_GP);
}

static void test_cr3_and_cr8(void **state)
{
	(void)state;
	guest_32bit(CR0_PG | CR0_PE, CR4_PAE, EFER_LME | EFER_LMA);
	gpr[GPR_R12] = 0x7000;
	assert_int_equal(vmx_cr_access(&env, qual_mov_to(3, GPR_R12)), VMX_CR_DONE);
	assert_int_equal(vmcs.val[VMCS_GUEST_CR3], 0x7000);
	assert_true(soft.flush_vpid);
	assert_int_equal(vmx_cr_access(&env, qual_mov_from(3, GPR_R15)), VMX_CR_DONE);
	assert_int_equal(gpr[GPR_R15], 0x7000);
	/* CR8 is not the back end's: the decoder hands it to the core */
	assert_int_equal(vmx_cr_access(&env, qual_mov_to(8, GPR_RAX)), VMX_CR_UNHANDLED);
	assert_int_equal(vmx_cr_access(&env, qual_mov_from(8, GPR_RSP)), VMX_CR_UNHANDLED);
}

static void test_clts_lmsw(void **state)
{
	uint64_t lmsw_qual = CR_TYPE_LMSW << CR_QUAL_TYPE_SHIFT;

	(void)state;
	guest_32bit(CR0_PE | CR0_TS | CR0_MP, 0, 0);
	assert_int_equal(vmx_cr_access(&env, CR_TYPE_CLTS << CR_QUAL_TYPE_SHIFT), VMX_CR_DONE);
	assert_int_equal(view_cr0(), CR0_PE | CR0_MP);
	/* LMSW 0: clears MP/EM/TS but cannot clear PE */
	assert_int_equal(vmx_cr_access(&env, lmsw_qual | 0ull << CR_QUAL_LMSW_SHIFT), VMX_CR_DONE);
	assert_int_equal(view_cr0(), CR0_PE);
	/* LMSW sets PE from real mode; high bits of the source are ignored */
	guest_32bit(0, 0, 0);
	assert_int_equal(vmx_cr_access(&env, lmsw_qual | 0xfff3ull << CR_QUAL_LMSW_SHIFT), VMX_CR_DONE);
	assert_int_equal(view_cr0(), CR0_PE | CR0_MP);
}

static void test_cr_impossible(void **state)
{
	(void)state;
	guest_32bit(CR0_PE, 0, 0);
	assert_int_equal(vmx_cr_access(&env, qual_mov_from(0, 0)), VMX_CR_UNHANDLED);
	assert_int_equal(vmx_cr_access(&env, qual_mov_from(4, 0)), VMX_CR_UNHANDLED);
	for (unsigned cr = 0; cr < 16; cr++) {
		if (cr == 0 || cr == 3 || cr == 4 || cr == 8)
			continue;
		assert_int_equal(vmx_cr_access(&env, qual_mov_to(cr, 0)), VMX_CR_UNHANDLED);
	}
	assert_int_equal(vmcs.bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_simple_exits, setup),
		cmocka_unit_test_setup(test_virt_insns, setup),
		cmocka_unit_test_setup(test_backend_exits, setup),
		cmocka_unit_test_setup(test_pml_full, setup),
		cmocka_unit_test_setup(test_io, setup),
		cmocka_unit_test_setup(test_msr, setup),
		cmocka_unit_test_setup(test_ept_violation, setup),
		cmocka_unit_test_setup(test_misconfig_and_unknown, setup),
		cmocka_unit_test_setup(test_exception_or_nmi, setup),
		cmocka_unit_test_setup(test_db_exit, setup),
		cmocka_unit_test_setup(test_fetch_insn, setup),
		cmocka_unit_test_setup(test_entry_failure, setup),
		cmocka_unit_test_setup(test_hostile, setup),
		cmocka_unit_test_setup(test_info_read_only_defined_fields, setup),
		cmocka_unit_test_setup(test_fixup_requeue, setup),
		cmocka_unit_test_setup(test_fixup_nmi_unblocking, setup),
		cmocka_unit_test_setup(test_cr0_enter_long_mode, setup),
		cmocka_unit_test_setup(test_cr0_refusals, setup),
		cmocka_unit_test_setup(test_cr0_leave_long_mode_from_compat, setup),
		cmocka_unit_test_setup(test_cr0_pae_pdptes, setup),
		cmocka_unit_test_setup(test_state_load_pdptes, setup),
		cmocka_unit_test_setup(test_cr4, setup),
		cmocka_unit_test_setup(test_cr3_and_cr8, setup),
		cmocka_unit_test_setup(test_cr8_to_core, setup),
		cmocka_unit_test_setup(test_clts_lmsw, setup),
		cmocka_unit_test_setup(test_cr_impossible, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
