/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for SVM #VMEXIT decoding (arch/x86/svm/exit.c) from
 * synthetic VMCB contents: every exit code the back end knows, the IOIO
 * and NPF information bits, VMRUN failure (-1 as a 32- and a 64-bit
 * value), EXITINTINFO re-injection, the exits settled in the back end, and
 * the instruction length without NRIP-save, fetched from a fake guest
 * memory in real mode, 32-bit protected mode and 64-bit paged mode.  Ends
 * with random VMCBs and memory.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "arch/x86/cpu.h"
#include "arch/x86/emulate/debug.h"
#include "arch/x86/svm/svm.h"
#include "hv/lib/log.h"

void log_printf(enum log_level level, const char *fmt, ...)
{
	(void)level, (void)fmt;
}

/* ferry's report of a machine check, which stops every CPU: here a cmocka
 * assertion, so that expect_assert_failure sees it */
void trap_guest_machine_check(void)
{
	mock_assert(0, "trap_guest_machine_check", __FILE__, __LINE__);
	abort();	/* not reached: mock_assert jumps back to the test */
}

#define MEM_SIZE	(2u << 20)
#define CODE_GPA	0x100000u
#define HIGH_LA		0xffffffff80000000ull	/* 64-bit tests: GPA 0 mapped here */

struct fix {
	struct vmm_vcpu v;
	struct svm_vcpu sv;
	struct vmcb *vmcb;
	uint8_t *mem;
	int reads;
	struct svm_exit_env env;
	struct vm_exit exit;
};

static int fake_read(void *ctx, uint64_t gpa, void *buf, size_t len)
{
	struct fix *f = ctx;

	f->reads++;
	if (gpa >= MEM_SIZE || len > MEM_SIZE - gpa)
		return -EFAULT;
	memcpy(buf, f->mem + gpa, len);
	return 0;
}

/* 32-bit protected mode, paging off, flat CS: the test guest's mode. */
static void mode_prot32(struct vmcb *vmcb)
{
	vmcb->save.cr0 = CR0_PE | CR0_ET;
	vmcb->save.efer = EFER_SVME;
	vmcb->save.cs = (struct vmcb_seg){ 0x08, 0xc9b, 0xffffffff, 0 };
	vmcb->save.rflags = 0x2;
	vmcb->save.rip = CODE_GPA;
	vmcb->save.cpl = 0;
}

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));

	f->vmcb = aligned_alloc(4096, 4096);
	f->mem = calloc(1, MEM_SIZE);
	svm_vmcb_init(f->vmcb, 0x1000, 0x4000, 0x8000);
	mode_prot32(f->vmcb);
	f->sv.vmcb = f->vmcb;
	f->v.arch = &f->sv;
	f->env = (struct svm_exit_env){ false, 40, true, fake_read, f };
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;

	free(f->mem);
	free(f->vmcb);
	free(f);
	return 0;
}

static void code(struct fix *f, uint64_t gpa, const char *bytes, size_t n)
{
	memcpy(f->mem + gpa, bytes, n);
}

static void run_exit(struct fix *f, uint64_t code_, uint64_t info1, uint64_t info2)
{
	f->vmcb->ctl.exit_code = code_;
	f->vmcb->ctl.exit_info1 = info1;
	f->vmcb->ctl.exit_info2 = info2;
	memset(&f->exit, 0xa5, sizeof(f->exit));	/* must be fully rewritten */
	svm_handle_exit(&f->v, &f->env, &f->exit);
}

/* ---- exits with an instruction length ------------------------------------------ */

static void test_cpuid_decoded(void **state)
{
	struct fix *f = *state;

	code(f, CODE_GPA, "\x0f\xa2", 2);
	run_exit(f, SVM_EXIT_CPUID, 0, 0);
	assert_int_equal(f->exit.code, EXIT_CPUID);
	assert_int_equal(f->exit.inst_len, 2);
	assert_int_equal(f->exit.rip, CODE_GPA);
	assert_true(f->reads > 0);
	code(f, CODE_GPA, "\x66\x2e\x0f\xa2", 4);	/* prefixes count */
	run_exit(f, SVM_EXIT_CPUID, 0, 0);
	assert_int_equal(f->exit.inst_len, 4);
}

/* Intercepted only while the guest's TSC is scaled: to the core, with
 * its length. */
static void test_rdtsc_decoded(void **state)
{
	struct fix *f = *state;

	code(f, CODE_GPA, "\x0f\x31", 2);
	run_exit(f, SVM_EXIT_RDTSC, 0, 0);
	assert_int_equal(f->exit.code, EXIT_RDTSC);
	assert_int_equal(f->exit.inst_len, 2);
	/* RDPMC too, to the core (which answers #GP) */
	run_exit(f, SVM_EXIT_RDPMC, 0, 0);
	assert_int_equal(f->exit.code, EXIT_RDPMC);
}

static void test_cpuid_nrip(void **state)
{
	struct fix *f = *state;

	f->env.nrips = true;
	f->vmcb->ctl.next_rip = CODE_GPA + 2;
	run_exit(f, SVM_EXIT_CPUID, 0, 0);
	assert_int_equal(f->exit.code, EXIT_CPUID);
	assert_int_equal(f->exit.inst_len, 2);
	assert_int_equal(f->reads, 0);			/* no guest memory touched */
	/* a next_rip that makes no sense: decode instead */
	f->vmcb->ctl.next_rip = CODE_GPA;
	code(f, CODE_GPA, "\x0f\xa2", 2);
	run_exit(f, SVM_EXIT_CPUID, 0, 0);
	assert_int_equal(f->exit.inst_len, 2);
	assert_true(f->reads > 0);
}

static void test_hlt_vmmcall_xsetbv(void **state)
{
	struct fix *f = *state;

	code(f, CODE_GPA, "\xf4", 1);
	run_exit(f, SVM_EXIT_HLT, 0, 0);
	assert_int_equal(f->exit.code, EXIT_HLT);
	assert_int_equal(f->exit.inst_len, 1);
	code(f, CODE_GPA, "\x0f\x01\xd9", 3);
	run_exit(f, SVM_EXIT_VMMCALL, 0, 0);
	assert_int_equal(f->exit.code, EXIT_HYPERCALL);
	assert_int_equal(f->exit.inst_len, 3);
	code(f, CODE_GPA, "\x0f\x01\xd1", 3);
	run_exit(f, SVM_EXIT_XSETBV, 0, 0);
	assert_int_equal(f->exit.code, EXIT_XSETBV);
	assert_int_equal(f->exit.inst_len, 3);
	run_exit(f, SVM_EXIT_VMMCALL, 0, 0);		/* XSETBV bytes, VMMCALL exit */
	assert_int_equal(f->exit.code, EXIT_UNHANDLED);
}

static void test_msr(void **state)
{
	struct fix *f = *state;

	f->v.gpr[GPR_RCX] = 0xdead0000c0000080ull;	/* upper half ignored */
	f->v.gpr[GPR_RAX] = 0xffffffff00000901ull;
	f->v.gpr[GPR_RDX] = 0xeeeeeeee00000012ull;
	code(f, CODE_GPA, "\x0f\x32", 2);
	run_exit(f, SVM_EXIT_MSR, 0, 0);
	assert_int_equal(f->exit.code, EXIT_MSR_READ);
	assert_int_equal(f->exit.u.msr.index, 0xc0000080);
	assert_int_equal(f->exit.inst_len, 2);
	code(f, CODE_GPA, "\x0f\x30", 2);
	run_exit(f, SVM_EXIT_MSR, 1, 0);
	assert_int_equal(f->exit.code, EXIT_MSR_WRITE);
	assert_int_equal(f->exit.u.msr.value, 0x0000001200000901ull);
	run_exit(f, SVM_EXIT_MSR, 2, 0);		/* neither read nor write */
	assert_int_equal(f->exit.code, EXIT_UNHANDLED);
	assert_int_equal(f->exit.u.vendor.info1, 2);
	run_exit(f, SVM_EXIT_MSR, 0, 0);		/* WRMSR bytes, read exit */
	assert_int_equal(f->exit.code, EXIT_UNHANDLED);
}

static void test_decode_failures(void **state)
{
	struct fix *f = *state;

	code(f, CODE_GPA, "\x90\x90", 2);		/* not the exiting instruction */
	run_exit(f, SVM_EXIT_CPUID, 0, 0);
	assert_int_equal(f->exit.code, EXIT_UNHANDLED);
	assert_non_null(f->exit.u.vendor.what);
	assert_int_equal(f->exit.u.vendor.reason, SVM_EXIT_CPUID);
	f->vmcb->save.rip = MEM_SIZE - 1;		/* runs off guest RAM */
	f->mem[MEM_SIZE - 1] = 0x0f;
	run_exit(f, SVM_EXIT_CPUID, 0, 0);
	assert_int_equal(f->exit.code, EXIT_UNHANDLED);
	f->vmcb->save.rip = 0x7fff0000;			/* nowhere at all */
	run_exit(f, SVM_EXIT_HLT, 0, 0);
	assert_int_equal(f->exit.code, EXIT_UNHANDLED);
	f->env.read_gpa = NULL;				/* no way to read */
	f->vmcb->save.rip = CODE_GPA;
	run_exit(f, SVM_EXIT_HLT, 0, 0);
	assert_int_equal(f->exit.code, EXIT_UNHANDLED);
	f->vmcb->save.rip = CODE_GPA;			/* 15 prefixes + opcode: #GP length */
	f->env.read_gpa = fake_read;
	memset(f->mem + CODE_GPA, 0x66, 15);
	f->mem[CODE_GPA + 15] = 0xf4;
	run_exit(f, SVM_EXIT_HLT, 0, 0);
	assert_int_equal(f->exit.code, EXIT_UNHANDLED);
}

/* Real mode: CS.base + IP, 16-bit code. */
static void test_real_mode(void **state)
{
	struct fix *f = *state;

	f->vmcb->save.cr0 = CR0_ET;
	f->vmcb->save.cs = (struct vmcb_seg){ 0x1000, 0x9b, 0xffff, 0x10000 };
	f->vmcb->save.rip = 0x123;
	code(f, 0x10123, "\x66\x0f\x32", 3);		/* operand-size prefix in 16-bit code */
	run_exit(f, SVM_EXIT_MSR, 0, 0);
	assert_int_equal(f->exit.code, EXIT_MSR_READ);
	assert_int_equal(f->exit.inst_len, 3);
	assert_int_equal(f->exit.rip, 0x123);
}

/* 64-bit code under 4-level paging: GPA 0-2 MiB mapped at HIGH_LA. */
static void mode_long64(struct fix *f)
{
	uint64_t *pml4 = (uint64_t *)(f->mem + 0x1000);
	uint64_t *pdpt = (uint64_t *)(f->mem + 0x2000);
	uint64_t *pd = (uint64_t *)(f->mem + 0x3000);

	pml4[511] = 0x2000 | 0x3;
	pdpt[510] = 0x3000 | 0x3;
	pd[0] = 0x0 | 0x83;				/* 2 MiB page, P, RW */
	f->vmcb->save.cr0 = 0x80050033;
	f->vmcb->save.cr3 = 0x1000;
	f->vmcb->save.cr4 = CR4_PAE;
	f->vmcb->save.efer = EFER_SVME | EFER_LME | EFER_LMA | EFER_NXE;
	f->vmcb->save.cs = (struct vmcb_seg){ 0x10, 0xa9b, 0xffffffff, 0 };
	f->vmcb->save.rip = HIGH_LA + CODE_GPA;
}

static void test_long_mode_paged(void **state)
{
	struct fix *f = *state;

	mode_long64(f);
	code(f, CODE_GPA, "\x48\x0f\xa2", 3);		/* REX.W CPUID */
	run_exit(f, SVM_EXIT_CPUID, 0, 0);
	assert_int_equal(f->exit.code, EXIT_CPUID);
	assert_int_equal(f->exit.inst_len, 3);
	assert_int_equal(f->exit.rip, HIGH_LA + CODE_GPA);
	/* CPL 3 fetching a supervisor page: the walk refuses, no guess */
	f->vmcb->save.cpl = 3;
	run_exit(f, SVM_EXIT_CPUID, 0, 0);
	assert_int_equal(f->exit.code, EXIT_UNHANDLED);
	/* an unmapped linear address */
	f->vmcb->save.cpl = 0;
	f->vmcb->save.rip = 0x0000000000400000ull;
	run_exit(f, SVM_EXIT_CPUID, 0, 0);
	assert_int_equal(f->exit.code, EXIT_UNHANDLED);
}

/* ---- I/O ------------------------------------------------------------------------ */

static void test_ioio_fields(void **state)
{
	struct fix *f = *state;

	run_exit(f, SVM_EXIT_IOIO, 0x3f8ull << 16 | VMCB_IO_SZ8 | VMCB_IO_IN, CODE_GPA + 1);
	assert_int_equal(f->exit.code, EXIT_IO);
	assert_int_equal(f->exit.u.io.port, 0x3f8);
	assert_int_equal(f->exit.u.io.size, 1);
	assert_true(f->exit.u.io.in);
	assert_false(f->exit.u.io.string);
	assert_false(f->exit.u.io.rep);
	assert_int_equal(f->exit.inst_len, 1);
	assert_int_equal(f->reads, 0);			/* EXITINFO2 gave the length */
	run_exit(f, SVM_EXIT_IOIO, 0xcfcull << 16 | VMCB_IO_SZ32, CODE_GPA + 2);
	assert_false(f->exit.u.io.in);
	assert_int_equal(f->exit.u.io.size, 4);
	assert_int_equal(f->exit.u.io.port, 0xcfc);
	assert_int_equal(f->exit.inst_len, 2);
	run_exit(f, SVM_EXIT_IOIO, 0xffffull << 16 | VMCB_IO_SZ16 | VMCB_IO_STR | VMCB_IO_REP |
		 (1ull << 8) /* A32 */, CODE_GPA + 3);
	assert_int_equal(f->exit.u.io.port, 0xffff);
	assert_int_equal(f->exit.u.io.size, 2);
	assert_true(f->exit.u.io.string);
	assert_true(f->exit.u.io.rep);
	assert_int_equal(f->exit.inst_len, 3);
}

static void test_ioio_hostile(void **state)
{
	struct fix *f = *state;

	run_exit(f, SVM_EXIT_IOIO, 0x80ull << 16, CODE_GPA + 1);	/* no size */
	assert_int_equal(f->exit.code, EXIT_UNHANDLED);
	run_exit(f, SVM_EXIT_IOIO, 0x80ull << 16 | VMCB_IO_SZ8 | VMCB_IO_SZ32, CODE_GPA + 1);
	assert_int_equal(f->exit.code, EXIT_UNHANDLED);
	/* EXITINFO2 behind RIP: decode the instruction instead (IN AL, DX) */
	code(f, CODE_GPA, "\xec", 1);
	run_exit(f, SVM_EXIT_IOIO, 0x80ull << 16 | VMCB_IO_SZ8 | VMCB_IO_IN, CODE_GPA - 5);
	assert_int_equal(f->exit.code, EXIT_IO);
	assert_int_equal(f->exit.inst_len, 1);
	assert_int_equal(f->exit.u.io.port, 0x80);
	/* EIP wrapping at 4 GiB in 32-bit code is a length of 1, not 2^32 + 1 */
	f->vmcb->save.rip = 0xffffffff;
	run_exit(f, SVM_EXIT_IOIO, 0x80ull << 16 | VMCB_IO_SZ8, 0);
	assert_int_equal(f->exit.code, EXIT_IO);
	assert_int_equal(f->exit.inst_len, 1);
}

/* ---- nested page faults -------------------------------------------------------------- */

static void test_npf_bits(void **state)
{
	struct fix *f = *state;

	/* write to a read-only page, as QEMU reports it (PLATFORM.md) */
	run_exit(f, SVM_EXIT_NPF, 0x100000007ull, 0xfee00030);
	assert_int_equal(f->exit.code, EXIT_GPA_FAULT);
	assert_int_equal(f->exit.u.gpa_fault.gpa, 0xfee00030);
	assert_true(f->exit.u.gpa_fault.present);
	assert_true(f->exit.u.gpa_fault.write);
	assert_false(f->exit.u.gpa_fault.read);
	assert_false(f->exit.u.gpa_fault.exec);
	assert_int_equal(f->exit.inst_len, 0);
	run_exit(f, SVM_EXIT_NPF, 0x100000004ull, 0x400000000ull);	/* read, not mapped */
	assert_false(f->exit.u.gpa_fault.present);
	assert_true(f->exit.u.gpa_fault.read);
	assert_false(f->exit.u.gpa_fault.write);
	assert_int_equal(f->exit.u.gpa_fault.gpa, 0x400000000ull);
	run_exit(f, SVM_EXIT_NPF, 0x100000015ull, 0x5000);		/* fetch, present */
	assert_true(f->exit.u.gpa_fault.exec);
	assert_false(f->exit.u.gpa_fault.read);
	assert_true(f->exit.u.gpa_fault.present);
	assert_false(f->exit.u.gpa_fault.walk);
	run_exit(f, SVM_EXIT_NPF, 0x200000006ull, 0x3000);		/* guest table walk */
	assert_true(f->exit.u.gpa_fault.write);
	assert_true(f->exit.u.gpa_fault.walk);
	assert_false(f->exit.u.gpa_fault.vectoring);
	assert_int_equal(f->reads, 0);
	/* while an external interrupt was delivered (EXITINTINFO valid) */
	f->vmcb->ctl.exit_int_info = VMCB_EVT_V | 0x20;
	run_exit(f, SVM_EXIT_NPF, 0x100000004ull, 0x400000000ull);
	assert_true(f->exit.u.gpa_fault.vectoring);
	f->vmcb->ctl.exit_int_info = 0;
}

/* ---- codes without payload -------------------------------------------------------------- */

static void test_simple_codes(void **state)
{
	struct fix *f = *state;
	static const struct { uint64_t svm; enum exit_code want; } t[] = {
		{ SVM_EXIT_INTR, EXIT_EXTERNAL }, { SVM_EXIT_NMI, EXIT_EXTERNAL },
		{ SVM_EXIT_SMI, EXIT_EXTERNAL }, { SVM_EXIT_INIT, EXIT_EXTERNAL },
		{ SVM_EXIT_VINTR, EXIT_INTR_WINDOW }, { SVM_EXIT_SHUTDOWN, EXIT_SHUTDOWN },
		{ SVM_EXIT_VMRUN, EXIT_VIRT_INSN }, { SVM_EXIT_VMLOAD, EXIT_VIRT_INSN },
		{ SVM_EXIT_VMSAVE, EXIT_VIRT_INSN }, { SVM_EXIT_STGI, EXIT_VIRT_INSN },
		{ SVM_EXIT_CLGI, EXIT_VIRT_INSN }, { SVM_EXIT_SKINIT, EXIT_VIRT_INSN },
		{ SVM_EXIT_INVLPGA, EXIT_VIRT_INSN },
		{ SVM_EXIT_TASK_SWITCH, EXIT_UNHANDLED }, { SVM_EXIT_FERR_FREEZE, EXIT_UNHANDLED },
		{ SVM_EXIT_RDTSC, EXIT_UNHANDLED }, { 0x0, EXIT_UNHANDLED },	/* CR0 read */
		{ SVM_EXIT_EXC_BASE + 14, EXIT_UNHANDLED }, { 0x401, EXIT_UNHANDLED },
		{ 0x1234, EXIT_UNHANDLED }, { 0xfffffffffffffffeull, EXIT_UNHANDLED },
		{ 0x1000000072ull, EXIT_UNHANDLED },	/* CPUID with junk above */
	};

	code(f, CODE_GPA, "\x0f\xa2", 2);		/* a CPUID, for the junk-above code */
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		run_exit(f, t[i].svm, 0x11, 0x22);
		assert_int_equal(f->exit.code, t[i].want);
		assert_int_equal(f->exit.rip, CODE_GPA);
		assert_int_equal(f->vmcb->save.rip, CODE_GPA);	/* nothing skipped */
		assert_int_equal(f->vmcb->ctl.event_inj, 0);
		if (t[i].want == EXIT_UNHANDLED) {
			assert_non_null(f->exit.u.vendor.what);
			assert_int_equal(f->exit.u.vendor.reason, (uint32_t)t[i].svm);
			assert_int_equal(f->exit.u.vendor.info1, 0x11);
			assert_int_equal(f->exit.u.vendor.info2, 0x22);
		}
	}
	run_exit(f, SVM_EXIT_TASK_SWITCH, 0, 0);
	assert_string_equal(f->exit.u.vendor.what, "SVM exit 07Dh: task switch (not emulated)");
}

static void test_vmrun_failed(void **state)
{
	struct fix *f = *state;

	run_exit(f, 0xffffffffull, 0, 0);		/* QEMU: -1 as 32 bits */
	assert_int_equal(f->exit.code, EXIT_INVALID);
	assert_int_equal(f->exit.u.vendor.reason, 0xffffffffu);
	assert_non_null(f->exit.u.vendor.what);
	run_exit(f, ~0ull, 0, 0);			/* hardware: -1 as 64 bits */
	assert_int_equal(f->exit.code, EXIT_INVALID);
}

/* ---- exits settled in the back end -------------------------------------------------------- */

static void test_invd_wbinvd_nop(void **state)
{
	struct fix *f = *state;

	code(f, CODE_GPA, "\x0f\x08", 2);
	f->vmcb->ctl.int_state = VMCB_INT_SHADOW;
	run_exit(f, SVM_EXIT_INVD, 0, 0);
	assert_int_equal(f->exit.code, EXIT_NONE);
	assert_int_equal(f->vmcb->save.rip, CODE_GPA + 2);
	assert_int_equal(f->vmcb->ctl.int_state, 0);
	code(f, CODE_GPA + 2, "\x0f\x09", 2);
	run_exit(f, SVM_EXIT_WBINVD, 0, 0);
	assert_int_equal(f->exit.code, EXIT_NONE);
	assert_int_equal(f->vmcb->save.rip, CODE_GPA + 4);
	run_exit(f, SVM_EXIT_WBINVD, 0, 0);		/* zero bytes there */
	assert_int_equal(f->exit.code, EXIT_UNHANDLED);
	assert_int_equal(f->vmcb->save.rip, CODE_GPA + 4);
}

static void test_icebp(void **state)
{
	struct fix *f = *state;

	code(f, CODE_GPA, "\xf1", 1);
	run_exit(f, SVM_EXIT_ICEBP, 0, 0);
	assert_int_equal(f->exit.code, EXIT_NONE);
	assert_int_equal(f->vmcb->save.rip, CODE_GPA + 1);	/* a trap */
	assert_int_equal(f->vmcb->ctl.event_inj, 1 | (3u << 8) | (1u << 31));
}

static void test_monitor_mwait_ud(void **state)
{
	struct fix *f = *state;
	static const uint64_t codes[] = { SVM_EXIT_MONITOR, SVM_EXIT_MWAIT, SVM_EXIT_MWAIT_COND,
					  SVM_EXIT_RDTSCP };	/* not in the guest's CPUID */

	for (int i = 0; i < 4; i++) {
		run_exit(f, codes[i], 0, 0);
		assert_int_equal(f->exit.code, EXIT_NONE);
		assert_int_equal(f->vmcb->save.rip, CODE_GPA);	/* a fault */
		assert_int_equal(f->vmcb->ctl.event_inj, 6 | (3u << 8) | (1u << 31));
	}
}

static void test_reflect_db_ac(void **state)
{
	struct fix *f = *state;

	run_exit(f, SVM_EXIT_EXC_BASE + 17, 0, 0);
	assert_int_equal(f->exit.code, EXIT_NONE);
	assert_int_equal(f->vmcb->ctl.event_inj, 17 | (3u << 8) | (1u << 11) | (1u << 31));
	f->vmcb->save.dr7 = 0x400 | X86_DR7_GD | 3;	/* general detect on */
	run_exit(f, SVM_EXIT_EXC_BASE + 1, 0, 0);
	assert_int_equal(f->exit.code, EXIT_NONE);
	assert_int_equal(f->vmcb->ctl.event_inj, 1 | (3u << 8) | (1u << 31));
	assert_int_equal(f->vmcb->save.dr7, 0x400 | 3);	/* GD cleared, the rest kept */
	/* #AC raised while delivering an interrupt: #AC is what is delivered */
	f->vmcb->ctl.exit_int_info = 0x30 | (1u << 31);
	run_exit(f, SVM_EXIT_EXC_BASE + 17, 0, 0);
	assert_int_equal(f->vmcb->ctl.event_inj & 0xff, 17);
}

/* #MC is intercepted from the first VMRUN, and a machine check that ends
 * the guest's run is ferry's to report (every CPU stops), not the
 * guest's: nothing is injected. */
static void test_machine_check_is_the_hosts(void **state)
{
	struct fix *f = *state;

	assert_true(f->vmcb->ctl.intercept_exc & (1u << 18));
	f->vmcb->ctl.event_inj = 0;
	expect_assert_failure(run_exit(f, SVM_EXIT_EXC_BASE + 18, 0, 0));
	assert_int_equal(f->vmcb->ctl.event_inj, 0);
}

/* #UD: VMCALL (and VMMCALL, should it ever #UD) is the hypercall, with the
 * decoded length; every other #UD is the guest's, RIP unchanged. */
static void test_ud_intercept(void **state)
{
	struct fix *f = *state;
	static const struct { const char *bytes; size_t n; } others[] = {
		{ "\x0f\x0b", 2 }, { "\x0f\x01\xc2", 3 }, { "\x0f\x01\xc4", 3 },
		{ "\xf0\x0f\x01\xc1", 4 }, { "\x66\x0f\x38\x80\x00", 5 },
	};

	code(f, CODE_GPA, "\x0f\x01\xc1", 3);
	run_exit(f, SVM_EXIT_EXC_BASE + 6, 0, 0);
	assert_int_equal(f->exit.code, EXIT_HYPERCALL);
	assert_int_equal(f->exit.inst_len, 3);
	assert_int_equal(f->exit.rip, CODE_GPA);
	assert_int_equal(f->vmcb->ctl.event_inj, 0);
	code(f, CODE_GPA, "\x2e\x0f\x01\xd9", 4);
	run_exit(f, SVM_EXIT_EXC_BASE + 6, 0, 0);
	assert_int_equal(f->exit.code, EXIT_HYPERCALL);
	assert_int_equal(f->exit.inst_len, 4);
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		code(f, CODE_GPA, others[i].bytes, others[i].n);
		run_exit(f, SVM_EXIT_EXC_BASE + 6, 0, 0);
		assert_int_equal(f->exit.code, EXIT_NONE);
		assert_int_equal(f->vmcb->save.rip, CODE_GPA);
		assert_int_equal(f->vmcb->ctl.event_inj, 6 | (3u << 8) | (1u << 31));
	}
	/* code outside guest memory: still the guest's #UD */
	f->vmcb->save.rip = MEM_SIZE + 0x1000;
	run_exit(f, SVM_EXIT_EXC_BASE + 6, 0, 0);
	assert_int_equal(f->exit.code, EXIT_NONE);
	assert_int_equal(f->vmcb->ctl.event_inj, 6 | (3u << 8) | (1u << 31));
}

/* A 32-bit program under a 64-bit kernel (compatibility mode, CPL 3):
 * GPA 0-2 MiB identity-mapped for user mode, beside mode_long64's map. */
static void mode_compat_user(struct fix *f)
{
	uint64_t *pml4 = (uint64_t *)(f->mem + 0x1000);
	uint64_t *pdpt = (uint64_t *)(f->mem + 0x4000);
	uint64_t *pd = (uint64_t *)(f->mem + 0x5000);

	mode_long64(f);
	pml4[0] = 0x4000 | 0x7;
	pdpt[0] = 0x5000 | 0x7;
	pd[0] = 0x0 | 0x87;				/* 2 MiB page, P, RW, U */
	f->vmcb->save.cs = (struct vmcb_seg){ 0x23, 0xcfb, 0xffffffff, 0 };	/* D, DPL 3 */
	f->vmcb->save.ss = (struct vmcb_seg){ 0x2b, 0xcf3, 0xffffffff, 0 };
	f->vmcb->save.cpl = 3;
	f->vmcb->save.rflags = 0x10202;			/* IF, RF */
	f->vmcb->save.rip = CODE_GPA;
}

/* SYSENTER in long mode: AMD's #UD, carried out as Intel's CPU would,
 * from the whole 64-bit SYSENTER_ESP/EIP the back end keeps. */
static void test_sysenter(void **state)
{
	struct fix *f = *state;
	struct cpu_state s;

	mode_compat_user(f);
	code(f, CODE_GPA, "\x0f\x34", 2);
	f->vmcb->save.sysenter_cs = 0x10;
	f->sv.sysenter_esp = 0xfffffe0000001000ull;
	f->sv.sysenter_eip = 0xffffffff81a01e40ull;
	f->vmcb->save.sysenter_esp = 0x00001000;	/* what the CPU kept */
	f->vmcb->save.sysenter_eip = 0x81a01e40;
	f->v.gpr[GPR_RSP] = 0xffffd000;
	run_exit(f, SVM_EXIT_EXC_BASE + 6, 0, 0);
	assert_int_equal(f->exit.code, EXIT_NONE);
	assert_int_equal(f->vmcb->ctl.event_inj, 0);
	assert_int_equal(f->vmcb->save.rip, 0xffffffff81a01e40ull);
	assert_int_equal(f->v.gpr[GPR_RSP], 0xfffffe0000001000ull);
	assert_int_equal(f->vmcb->save.rflags, 0x2);	/* IF and RF cleared */
	assert_int_equal(f->vmcb->save.cpl, 0);
	assert_int_equal(f->vmcb->save.cs.sel, 0x10);
	assert_int_equal(f->vmcb->save.cs.attrib, 0xa9b);	/* 64-bit ring-0 code */
	assert_int_equal(f->vmcb->save.ss.sel, 0x18);
	assert_int_equal(f->vmcb->save.ss.attrib, 0xc93);
	assert_int_equal(f->vmcb->save.ss.limit, 0xffffffff);
	/* the state carries the whole values, not the CPU's halves */
	svm_get_state(&f->v, &s);
	assert_int_equal(s.sysenter_esp, 0xfffffe0000001000ull);
	assert_int_equal(s.sysenter_eip, 0xffffffff81a01e40ull);
	s.sysenter_eip = 0xffffffff81000000ull;
	svm_set_state(&f->v, &s);
	assert_int_equal(f->sv.sysenter_eip, 0xffffffff81000000ull);
	/* single-stepped: TF stays, and the step's #DB (DR6.BS) is queued */
	mode_compat_user(f);
	f->vmcb->save.sysenter_cs = 0x10;
	f->vmcb->save.rflags = 0x302;			/* IF, TF */
	f->vmcb->save.dr6 = 0xffff0ff0;
	run_exit(f, SVM_EXIT_EXC_BASE + 6, 0, 0);
	assert_int_equal(f->vmcb->save.rip, 0xffffffff81000000ull);
	assert_int_equal(f->vmcb->save.rflags, 0x102);
	assert_int_equal(f->vmcb->ctl.event_inj, 1 | (3u << 8) | (1u << 31));
	assert_true(f->vmcb->save.dr6 & (1u << 14));
	/* SYSENTER_CS[15:2] zero: #GP(0), nothing else changes */
	mode_compat_user(f);
	f->vmcb->save.sysenter_cs = 0x3;
	run_exit(f, SVM_EXIT_EXC_BASE + 6, 0, 0);
	assert_int_equal(f->exit.code, EXIT_NONE);
	assert_int_equal(f->vmcb->ctl.event_inj, 13 | (3u << 8) | (1u << 11) | (1u << 31));
	assert_int_equal(f->vmcb->save.rip, CODE_GPA);
	assert_int_equal(f->vmcb->save.cpl, 3);
	/* outside long mode the CPU runs SYSENTER itself: a #UD there is the
	 * guest's (SYSEXIT is not emulated either) */
	mode_prot32(f->vmcb);
	run_exit(f, SVM_EXIT_EXC_BASE + 6, 0, 0);
	assert_int_equal(f->vmcb->ctl.event_inj, 6 | (3u << 8) | (1u << 31));
	mode_compat_user(f);
	code(f, CODE_GPA, "\x0f\x35", 2);
	run_exit(f, SVM_EXIT_EXC_BASE + 6, 0, 0);
	assert_int_equal(f->vmcb->ctl.event_inj, 6 | (3u << 8) | (1u << 31));
}

/* MOV to/from CR8 go to the core with the register the instruction names. */
static void test_cr8_to_core(void **state)
{
	struct fix *f = *state;

	mode_long64(f);
	code(f, CODE_GPA, "\x44\x0f\x22\xc3", 4);		/* mov %rbx,%cr8 */
	run_exit(f, SVM_EXIT_WRITE_CR8, 0, 0);
	assert_int_equal(f->exit.code, EXIT_CR8);
	assert_true(f->exit.u.cr8.write);
	assert_int_equal(f->exit.u.cr8.gpr, GPR_RBX);
	assert_int_equal(f->exit.inst_len, 4);
	assert_int_equal(f->vmcb->save.rip, HIGH_LA + CODE_GPA);	/* the core skips */
	code(f, CODE_GPA, "\x45\x0f\x20\xc1", 4);		/* mov %cr8,%r9 */
	run_exit(f, SVM_EXIT_READ_CR8, 0, 0);
	assert_int_equal(f->exit.code, EXIT_CR8);
	assert_false(f->exit.u.cr8.write);
	assert_int_equal(f->exit.u.cr8.gpr, GPR_R9);
	/* an instruction that is not what the exit says: named, not guessed */
	code(f, CODE_GPA, "\x0f\x22\xe0", 3);			/* mov %eax,%cr4 */
	run_exit(f, SVM_EXIT_WRITE_CR8, 0, 0);
	assert_int_equal(f->exit.code, EXIT_UNHANDLED);
	code(f, CODE_GPA, "\x44\x0f\x22\xc3", 4);
	run_exit(f, SVM_EXIT_READ_CR8, 0, 0);
	assert_int_equal(f->exit.code, EXIT_UNHANDLED);
	/* AMD's LOCK MOV CR0 alias of CR8: #UD, as on Intel */
	code(f, CODE_GPA, "\xf0\x0f\x22\xc0", 4);
	run_exit(f, SVM_EXIT_WRITE_CR8, 0, 0);
	assert_int_equal(f->exit.code, EXIT_NONE);
	assert_int_equal(f->vmcb->ctl.event_inj, 6 | (3u << 8) | (1u << 31));
	assert_int_equal(f->vmcb->save.rip, HIGH_LA + CODE_GPA);
}

/* MOV to CR4: the write as the CPU does it; #GP for bits the guest's
 * CPUID hides (VMXE, SMEP, ...) and for clearing PAE in long mode. */
static void test_cr4_write(void **state)
{
	struct fix *f = *state;
	static const uint64_t refused[] = {
		1u << 13 /* VMXE */, 1u << 20 /* SMEP */, 1u << 18 /* OSXSAVE */,
		1u << 17 /* PCIDE */, 1u << 15, 1u << 31,
	};

	code(f, CODE_GPA, "\x0f\x22\xe3", 3);		/* mov %ebx,%cr4 */
	f->v.gpr[GPR_RBX] = 0xffffffff00000620ull;	/* PAE OSFXSR OSXMMEXCPT; high half ignored */
	f->sv.asid.generation = 5;
	run_exit(f, SVM_EXIT_WRITE_CR4, 0, 0);
	assert_int_equal(f->exit.code, EXIT_NONE);
	assert_int_equal(f->vmcb->save.cr4, 0x620);
	assert_int_equal(f->vmcb->save.rip, CODE_GPA + 3);
	assert_int_equal(f->vmcb->ctl.event_inj, 0);
	assert_int_equal(f->sv.asid.generation, 0);	/* PAE changed: fresh ASID */
	f->sv.asid.generation = 5;
	f->vmcb->save.rip = CODE_GPA;
	f->v.gpr[GPR_RBX] = 0x220;			/* OSFXSR off: no flush needed */
	run_exit(f, SVM_EXIT_WRITE_CR4, 0, 0);
	assert_int_equal(f->vmcb->save.cr4, 0x220);
	assert_int_equal(f->sv.asid.generation, 5);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		f->vmcb->save.rip = CODE_GPA;
		f->v.gpr[GPR_RBX] = 0x220 | refused[i];
		run_exit(f, SVM_EXIT_WRITE_CR4, 0, 0);
		assert_int_equal(f->exit.code, EXIT_NONE);
		assert_int_equal(f->vmcb->save.cr4, 0x220);
		assert_int_equal(f->vmcb->save.rip, CODE_GPA);	/* a fault */
		assert_int_equal(f->vmcb->ctl.event_inj,
				 13 | (3u << 8) | (1u << 11) | (1u << 31));
	}
	/* 64-bit code: REX.B source, full width, PAE must stay */
	f->vmcb->save.efer = EFER_SVME | EFER_LMA | EFER_LME;
	f->vmcb->save.cs.attrib = 0xa9b;
	f->vmcb->save.rip = CODE_GPA;
	code(f, CODE_GPA, "\x41\x0f\x22\xe1", 4);	/* mov %r9,%cr4 */
	f->v.gpr[GPR_R9] = 0x1ull << 32 | 0x20;
	run_exit(f, SVM_EXIT_WRITE_CR4, 0, 0);
	assert_int_equal(f->vmcb->ctl.event_inj & 0xff, 13);
	f->v.gpr[GPR_R9] = 0x0;
	run_exit(f, SVM_EXIT_WRITE_CR4, 0, 0);
	assert_int_equal(f->vmcb->ctl.event_inj & 0xff, 13);
	f->v.gpr[GPR_R9] = 0xa0;			/* PAE PGE */
	run_exit(f, SVM_EXIT_WRITE_CR4, 0, 0);
	assert_int_equal(f->vmcb->ctl.event_inj, 0);
	assert_int_equal(f->vmcb->save.cr4, 0xa0);
	assert_int_equal(f->vmcb->save.rip, CODE_GPA + 4);
	/* not a MOV to CR4 there (the guest changed the code): stop it */
	f->vmcb->save.rip = CODE_GPA;
	code(f, CODE_GPA, "\x0f\x22\xd8", 3);		/* mov %rax,%cr3 */
	run_exit(f, SVM_EXIT_WRITE_CR4, 0, 0);
	assert_int_equal(f->exit.code, EXIT_UNHANDLED);
	assert_int_equal(f->vmcb->save.rip, CODE_GPA);
}

/* ---- EXITINTINFO --------------------------------------------------------------------------- */

static void test_exitintinfo_rearmed(void **state)
{
	struct fix *f = *state;
	struct cpu_state s;

	/* an IRQ whose delivery hit a nested page fault (guest IDT not mapped) */
	f->vmcb->ctl.exit_int_info = 0x30 | (0u << 8) | (1u << 31);
	run_exit(f, SVM_EXIT_NPF, 0x100000004ull, 0x7000);
	assert_int_equal(f->exit.code, EXIT_GPA_FAULT);
	assert_int_equal(f->vmcb->ctl.event_inj, 0x30 | (1u << 31));
	svm_get_state(&f->v, &s);			/* the core sees it pending */
	assert_true(s.pending.valid);
	assert_int_equal(s.pending.vector, 0x30);
	assert_int_equal(s.pending.type, EVENT_EXTINT);
	assert_false(svm_intr_allowed(&f->v));		/* nothing on top of it */
	/* a #PF with its error code */
	f->vmcb->ctl.exit_int_info = 14 | (3u << 8) | (1u << 11) | (1u << 31) | (0x2ull << 32);
	run_exit(f, SVM_EXIT_NPF, 0x100000006ull, 0x7000);
	assert_int_equal(f->vmcb->ctl.event_inj, f->vmcb->ctl.exit_int_info);
	/* an NMI */
	f->vmcb->ctl.exit_int_info = 2 | (2u << 8) | (1u << 31);
	run_exit(f, SVM_EXIT_INTR, 0, 0);
	assert_int_equal(f->vmcb->ctl.event_inj, 2 | (2u << 8) | (1u << 31));
	/* junk in the error-code half without EV is not carried over */
	f->vmcb->ctl.exit_int_info = 0x41 | (1u << 31) | (0x55ull << 32);
	run_exit(f, SVM_EXIT_INTR, 0, 0);
	assert_int_equal(f->vmcb->ctl.event_inj, 0x41 | (1u << 31));
}

static bool nmi_blocked(struct fix *f)
{
	struct cpu_state s;

	svm_get_state(&f->v, &s);
	return s.interruptibility & INTR_NMI_BLOCKED;
}

/* NMI blocking kept in software: from the NMI's injection until the
 * first exit after its handler's IRET has retired (RIP moved off it). */
static void test_nmi_blocking(void **state)
{
	struct fix *f = *state;
	struct event nmi = { .valid = true, .type = EVENT_NMI, .vector = 2 };

	svm_inject(&f->v, &nmi);
	assert_true(f->vmcb->ctl.intercept1 & VMCB_I1_IRET);
	assert_true(nmi_blocked(f));
	/* the handler runs and exits on the way (an I/O write, say) */
	f->vmcb->save.rip = CODE_GPA + 0x40;
	run_exit(f, SVM_EXIT_INTR, 0, 0);
	assert_true(nmi_blocked(f));
	/* its IRET, intercepted before it runs: nothing to do, RIP stays */
	f->vmcb->save.rip = CODE_GPA + 0x80;
	run_exit(f, SVM_EXIT_IRET, 0, 0);
	assert_int_equal(f->exit.code, EXIT_NONE);
	assert_int_equal(f->vmcb->save.rip, CODE_GPA + 0x80);
	assert_false(f->vmcb->ctl.intercept1 & VMCB_I1_IRET);
	assert_true(nmi_blocked(f));
	/* the IRET faults on its stack (a nested page fault): still blocked */
	run_exit(f, SVM_EXIT_NPF, 0x100000006ull, 0x7000);
	assert_true(nmi_blocked(f));
	/* it retired: the next exit is elsewhere, and NMIs may go in */
	f->vmcb->save.rip = CODE_GPA + 0x10;
	run_exit(f, SVM_EXIT_INTR, 0, 0);
	assert_false(nmi_blocked(f));
	assert_false(f->vmcb->ctl.intercept1 & VMCB_I1_IRET);
	/* an ordinary interrupt blocks nothing */
	nmi.type = EVENT_EXTINT;
	nmi.vector = 0x30;
	svm_inject(&f->v, &nmi);
	assert_false(nmi_blocked(f));
}

static void test_exitintinfo_not_rearmed(void **state)
{
	struct fix *f = *state;

	f->vmcb->ctl.event_inj = 0x20 | (1u << 31);	/* stale from the last entry */
	f->vmcb->ctl.exit_int_info = 0;
	run_exit(f, SVM_EXIT_INTR, 0, 0);
	assert_int_equal(f->vmcb->ctl.event_inj, 0);
	/* INT n, INT3 (as hardware and as QEMU report it) and INTO re-execute */
	f->vmcb->ctl.exit_int_info = 0x80 | (4u << 8) | (1u << 31);
	run_exit(f, SVM_EXIT_NPF, 4, 0x1000);
	assert_int_equal(f->vmcb->ctl.event_inj, 0);
	f->vmcb->ctl.exit_int_info = 3 | (3u << 8) | (1u << 31);
	run_exit(f, SVM_EXIT_NPF, 4, 0x1000);
	assert_int_equal(f->vmcb->ctl.event_inj, 0);
	f->vmcb->ctl.exit_int_info = 4 | (3u << 8) | (1u << 31);
	run_exit(f, SVM_EXIT_NPF, 4, 0x1000);
	assert_int_equal(f->vmcb->ctl.event_inj, 0);
	f->vmcb->ctl.exit_int_info = 5 | (7u << 8) | (1u << 31);	/* reserved type */
	run_exit(f, SVM_EXIT_NPF, 4, 0x1000);
	assert_int_equal(f->vmcb->ctl.event_inj, 0);
}

/* ---- names and random input ----------------------------------------------------------------- */

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(svm_exit_name(SVM_EXIT_CPUID), "SVM exit 072h: CPUID");
	assert_string_equal(svm_exit_name(SVM_EXIT_NPF), "SVM exit 400h: nested page fault");
	assert_string_equal(svm_exit_name(0xffffffffull), svm_exit_name(~0ull));
	assert_memory_equal(svm_exit_name(~0ull), "VMEXIT_INVALID (exit code -1)", 29);
	assert_string_equal(svm_exit_name(0x999), "SVM exit code unknown to ferry");
}

static uint64_t rng = 0x0123456789abcdefull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void test_random(void **state)
{
	struct fix *f = *state;
	static const uint64_t codes[] = {
		SVM_EXIT_CPUID, SVM_EXIT_HLT, SVM_EXIT_MSR, SVM_EXIT_IOIO, SVM_EXIT_NPF,
		SVM_EXIT_VMMCALL, SVM_EXIT_XSETBV, SVM_EXIT_INVD, SVM_EXIT_WBINVD,
		SVM_EXIT_ICEBP, SVM_EXIT_EXC_BASE + 1, SVM_EXIT_EXC_BASE + 17,
	};

	for (size_t i = 0; i < MEM_SIZE / 8; i++)
		((uint64_t *)f->mem)[i] = rnd();
	for (int i = 0; i < 30000; i++) {
		uint8_t *raw = (uint8_t *)f->vmcb;
		for (size_t j = 0; j < sizeof(*f->vmcb); j += 8)
			*(uint64_t *)(raw + j) = rnd();
		f->env.nrips = rnd() & 1;
		if (rnd() & 1)
			f->vmcb->save.rip &= MEM_SIZE - 1;
		if (rnd() & 1)
			f->vmcb->save.cr0 &= ~CR0_PG;
		f->vmcb->ctl.exit_code = rnd() & 1 ? codes[rnd() % 12] : rnd() % 0x500;
		if (f->vmcb->ctl.exit_code == SVM_EXIT_EXC_BASE + 18)
			continue;	/* stops the host: test_machine_check_is_the_hosts */
		svm_handle_exit(&f->v, &f->env, &f->exit);
		assert_true(f->exit.code < EXIT_COUNT);
		assert_true(f->exit.inst_len <= 15);
		if (f->exit.code == EXIT_UNHANDLED || f->exit.code == EXIT_INVALID)
			assert_non_null(f->exit.u.vendor.what);
		if (f->vmcb->ctl.event_inj)
			assert_true(f->vmcb->ctl.event_inj & VMCB_EVT_V);
	}
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_cpuid_decoded), T(test_rdtsc_decoded), T(test_cpuid_nrip), T(test_hlt_vmmcall_xsetbv),
		T(test_msr), T(test_decode_failures), T(test_real_mode),
		T(test_long_mode_paged), T(test_ioio_fields), T(test_ioio_hostile),
		T(test_npf_bits), T(test_simple_codes), T(test_vmrun_failed),
		T(test_invd_wbinvd_nop), T(test_icebp), T(test_monitor_mwait_ud),
		T(test_reflect_db_ac), T(test_machine_check_is_the_hosts), T(test_ud_intercept), T(test_sysenter), T(test_cr8_to_core), T(test_cr4_write),
		T(test_exitintinfo_rearmed), T(test_nmi_blocking),
		T(test_exitintinfo_not_rearmed), cmocka_unit_test(test_names), T(test_random),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
