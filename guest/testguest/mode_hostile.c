/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * testguest mode "hostile": tries, one at a time, what a guest must not be
 * able to do to its host, and reports what happened:
 *   TG hostile TRY <name>
 *   TG hostile RESULT <name> outcome=<none|ud|gp|pf|...> [vec= err=] [k=v]
 * outcome=none means the instruction completed without an exception.
 *   hostile [only=NAME,...] [skip=NAME,...]
 * NAME is an attempt or a group (svm vmx msr pci ctl cr4 reset exit exc
 * mem hlt).
 * Memory escapes run last but for the final "cli_hlt", which never
 * returns; under ferry they may legitimately stop the guest.
 */
#include "guest/testguest/arch.h"
#include "guest/testguest/hostile.h"
#include "guest/testguest/tg.h"

#define MSR_EFER 0xC0000080u
#define EFER_SVME (1ull << 12)
#define MSR_VM_CR 0xC0010114u
#define VM_CR_SVMDIS (1ull << 4)
#define MSR_VM_HSAVE_PA 0xC0010117u
#define MSR_FEATURE_CONTROL 0x3Au
#define MSR_VMX_BASIC 0x480u
#define CR4_VMXE (1u << 13)
#define PCI_CONF_ADDR 0xCF8
#define PCI_CONF_DATA 0xCFC
#define KBD_CMD 0x64
#define KBD_PULSE_RESET 0xFE
#define QEMU_EXIT_CODE 0x31 /* QEMU exits with status 99 */

/* Memory the SVM/VMX instructions are pointed at, so that one that does
 * execute only touches the guest's own pages. */
static uint8_t scratch[2][TG_PAGE] __attribute__((aligned(TG_PAGE)));
static uint64_t scratch_pa_ptr;

void hostile_report(struct attempt_ctx *c, const char *label, uint64_t v)
{
	if (c->n < HOSTILE_MAX_VALUES) {
		c->label[c->n] = label;
		c->value[c->n++] = v;
	}
}

#define INSN_ATTEMPT(fn, insn)                                               \
	static void fn(void *c)                                              \
	{                                                                    \
		(void)c;                                                     \
		__asm__ volatile(insn : : "a"(scratch[0]), "c"(0), "d"(0)    \
				 : "memory");                                \
	}

/* AMD APM Vol. 2 15.5-15.27: each is #UD unless EFER.SVME is set. */
INSN_ATTEMPT(try_vmrun, "vmrun")
INSN_ATTEMPT(try_vmload, "vmload")
INSN_ATTEMPT(try_vmsave, "vmsave")
INSN_ATTEMPT(try_stgi, "stgi")
INSN_ATTEMPT(try_clgi, "clgi")
INSN_ATTEMPT(try_skinit, "skinit")
INSN_ATTEMPT(try_invlpga, "invlpga")
/* SDM Vol. 3C 30.3: #UD outside VMX operation (and in it, for a guest). */
INSN_ATTEMPT(try_vmxoff, "vmxoff")
INSN_ATTEMPT(try_vmlaunch, "vmlaunch")
INSN_ATTEMPT(try_vmresume, "vmresume")
INSN_ATTEMPT(try_vmfunc, "xor %%eax, %%eax; vmfunc")

/* Hypercalls with EAX = 0: a hypervisor may define them; report EAX. */
static void try_vmmcall(void *c)
{
	uint32_t a = 0;

	__asm__ volatile("vmmcall" : "+a"(a) : : "memory");
	hostile_report(c, "eax", a);
}

static void try_vmcall(void *c)
{
	uint32_t a = 0;

	__asm__ volatile("vmcall" : "+a"(a) : : "memory");
	hostile_report(c, "eax", a);
}

/* Memory-operand VMX instructions, pointed at scratch_pa_ptr. */
#define VMX_MEM_ATTEMPT(fn, insn)                                            \
	static void fn(void *c)                                              \
	{                                                                    \
		(void)c;                                                     \
		scratch_pa_ptr = (uint32_t)scratch[1];                       \
		__asm__ volatile(insn : : "a"(&scratch_pa_ptr), "c"(1)       \
				 : "memory");                                \
	}

VMX_MEM_ATTEMPT(try_vmxon, "vmxon (%0)")
VMX_MEM_ATTEMPT(try_vmptrld, "vmptrld (%0)")
VMX_MEM_ATTEMPT(try_vmptrst, "vmptrst (%0)")
VMX_MEM_ATTEMPT(try_vmclear, "vmclear (%0)")
VMX_MEM_ATTEMPT(try_invept, "invept (%0), %1")
VMX_MEM_ATTEMPT(try_invvpid, "invvpid (%0), %1")

static void try_vmread(void *c)
{
	uint32_t v = 0;

	__asm__ volatile("vmread %1, %0" : "=r"(v) : "r"(0u));
	hostile_report(c, "value", v);
}

static void try_vmwrite(void *c)
{
	(void)c;
	__asm__ volatile("vmwrite %0, %1" : : "r"(0u), "r"(0x6800u));
}

/* SDM Vol. 3A 2.5: #GP without VMX.  QEMU 7.2 TCG turns the reserved
 * bit into an SVM "invalid state" #VMEXIT even outside a guest and so
 * hangs bare; under ferry on QEMU it produces exit code -1. */
static void try_cr4_vmxe(void *c)
{
	write_cr4(read_cr4() | CR4_VMXE);
	hostile_report(c, "cr4", read_cr4());
}

static void clear_cr4_vmxe(void)
{
	if (read_cr4() & CR4_VMXE)
		write_cr4(read_cr4() & ~CR4_VMXE);
}

static void try_efer_svme(void *c)
{
	uint64_t efer = rdmsr(MSR_EFER);

	hostile_report(c, "efer_before", efer);
	wrmsr(MSR_EFER, efer | EFER_SVME);
	hostile_report(c, "efer_after", rdmsr(MSR_EFER));
}

static void clear_efer_svme(void)
{
	uint64_t efer = rdmsr(MSR_EFER);

	if (efer & EFER_SVME)
		wrmsr(MSR_EFER, efer & ~EFER_SVME);
}

static void try_hsave_read(void *c)
{
	hostile_report(c, "value", rdmsr(MSR_VM_HSAVE_PA));
}

static void try_hsave_write(void *c)
{
	wrmsr(MSR_VM_HSAVE_PA, (uint32_t)scratch[1]);
	hostile_report(c, "readback", rdmsr(MSR_VM_HSAVE_PA));
}

static void try_vm_cr_write(void *c)
{
	uint64_t v = rdmsr(MSR_VM_CR);

	hostile_report(c, "before", v);
	wrmsr(MSR_VM_CR, v | VM_CR_SVMDIS);
	hostile_report(c, "after", rdmsr(MSR_VM_CR));
}

static void try_feature_control_write(void *c)
{
	hostile_report(c, "before", rdmsr(MSR_FEATURE_CONTROL));
	wrmsr(MSR_FEATURE_CONTROL, 0x5); /* lock, VMXON outside SMX */
	hostile_report(c, "after", rdmsr(MSR_FEATURE_CONTROL));
}

static void try_vmx_basic_read(void *c)
{
	hostile_report(c, "value", rdmsr(MSR_VMX_BASIC));
}

/* PCI configuration mechanism #1: vendor/device of 00:00.0 and 00:01.0. */
static void try_pci_cf8(void *c)
{
	outl(PCI_CONF_ADDR, 0x80000000u);
	hostile_report(c, "id_00_0", inl(PCI_CONF_DATA));
	outl(PCI_CONF_ADDR, 0x80000800u);
	hostile_report(c, "id_01_0", inl(PCI_CONF_DATA));
	outl(PCI_CONF_ADDR, 0);
}

/* Junk on ferry's own control port: unknown commands and widths. */
static void try_ctl_junk(void *c)
{
	outw(TG_CTL_PORT, 0x1234);
	outb(TG_CTL_PORT, 0xFF);
	outl(TG_CTL_PORT, 0xFFFFFFFFu);
	hostile_report(c, "read", inl(TG_CTL_PORT));
}

static void spin_a_while(void)
{
	for (volatile uint32_t i = 0; i < 20000000u; i++)
		;
}

static void try_kbd_reset(void *c)
{
	(void)c;
	outb(KBD_CMD, KBD_PULSE_RESET);
	spin_a_while();
}

static void try_qemu_exit(void *c)
{
	(void)c;
	outb(TG_QEMU_EXIT_PORT, QEMU_EXIT_CODE);
	spin_a_while();
}

/*
 * Debug exceptions, which ferry intercepts on both back ends (so that a
 * chain of them cannot hold a host CPU, CVE-2015-8104) and must deliver
 * as the CPU would: the RESULT line shows the trap's eip and DR6.
 * Single-stepping over CPUID, which a hypervisor emulates, traps right
 * after it with DR6.BS; a data breakpoint (DR0, write, 4 bytes) right
 * after the write with DR6.B0.
 */
#define EFLAGS_TF 0x100u
#define DR7_L0 (1u << 0)
#define DR7_RW0_WRITE (1u << 16)
#define DR7_LEN0_4 (3u << 18)
#define DR7_CLEAR 0x400u

extern char tg_db_step_after[], tg_db_data_after[];
static volatile uint32_t db_target;

static void try_db_step(void *c)
{
	uint32_t a = 0, b, cx = 0, d;

	hostile_report(c, "want_eip", (uint32_t)tg_db_step_after);
	__asm__ volatile("pushf\n\torl %4, (%%esp)\n\tpopf\n\tcpuid\n"
			 ".globl tg_db_step_after\ntg_db_step_after:\n\tnop"
			 : "+a"(a), "=b"(b), "+c"(cx), "=d"(d)
			 : "i"(EFLAGS_TF)
			 : "memory", "cc");
}

static void try_db_data(void *c)
{
	hostile_report(c, "want_eip", (uint32_t)tg_db_data_after);
	write_dr0((uint32_t)&db_target);
	write_dr7(DR7_L0 | DR7_RW0_WRITE | DR7_LEN0_4);
	__asm__ volatile("movl $1, %0\n"
			 ".globl tg_db_data_after\ntg_db_data_after:\n\tnop"
			 : "=m"(db_target) : : "memory");
}

static void db_off(void)
{
	write_dr7(DR7_CLEAR);
}

static const struct attempt attempts[] = {
	{ "svm_vmrun", "svm", try_vmrun, NULL },
	{ "svm_vmload", "svm", try_vmload, NULL },
	{ "svm_vmsave", "svm", try_vmsave, NULL },
	{ "svm_vmmcall", "svm", try_vmmcall, NULL },
	{ "svm_stgi", "svm", try_stgi, NULL },
	{ "svm_clgi", "svm", try_clgi, NULL },
	{ "svm_skinit", "svm", try_skinit, NULL },
	{ "svm_invlpga", "svm", try_invlpga, NULL },
	{ "vmx_vmxon", "vmx", try_vmxon, NULL },
	{ "vmx_vmcall", "vmx", try_vmcall, NULL },
	{ "vmx_vmlaunch", "vmx", try_vmlaunch, NULL },
	{ "vmx_vmresume", "vmx", try_vmresume, NULL },
	{ "vmx_vmxoff", "vmx", try_vmxoff, NULL },
	{ "vmx_vmptrld", "vmx", try_vmptrld, NULL },
	{ "vmx_vmptrst", "vmx", try_vmptrst, NULL },
	{ "vmx_vmclear", "vmx", try_vmclear, NULL },
	{ "vmx_vmread", "vmx", try_vmread, NULL },
	{ "vmx_vmwrite", "vmx", try_vmwrite, NULL },
	{ "vmx_invept", "vmx", try_invept, NULL },
	{ "vmx_invvpid", "vmx", try_invvpid, NULL },
	{ "vmx_vmfunc", "vmx", try_vmfunc, NULL },
	{ "msr_efer_svme", "msr", try_efer_svme, clear_efer_svme },
	{ "msr_hsave_read", "msr", try_hsave_read, NULL },
	{ "msr_hsave_write", "msr", try_hsave_write, NULL },
	{ "msr_vm_cr_write", "msr", try_vm_cr_write, NULL },
	{ "msr_feature_control_write", "msr", try_feature_control_write,
	  NULL },
	{ "msr_vmx_basic_read", "msr", try_vmx_basic_read, NULL },
	{ "pci_cf8", "pci", try_pci_cf8, NULL },
	{ "ctl_junk", "ctl", try_ctl_junk, NULL },
	{ "cr4_vmxe", "cr4", try_cr4_vmxe, clear_cr4_vmxe },
	{ "kbd_reset", "reset", try_kbd_reset, NULL },
	{ "qemu_exit", "exit", try_qemu_exit, NULL },
	{ "exc_db_step", "exc", try_db_step, NULL },
	{ "exc_db_data", "exc", try_db_data, db_off },
};

static bool selected(const struct attempt *a)
{
	const char *only = tg_opt_str("only"), *skip = tg_opt_str("skip");

	if (only && !tg_list_has(only, a->name) && !tg_list_has(only, a->group))
		return false;
	return !tg_list_has(skip, a->name) && !tg_list_has(skip, a->group);
}

static void run_attempt(const struct attempt *a)
{
	struct attempt_ctx c = { .n = 0 };
	int vec;

	tg_printf("TG hostile TRY %s\n", a->name);
	vec = tg_catch(a->run, &c);
	if (a->after)
		a->after();
	tg_printf("TG hostile RESULT %s outcome=%s", a->name,
		  tg_vector_name(vec));
	if (vec >= 0)
		tg_printf(" vec=%d err=0x%x eip=0x%x", vec, tg_caught.err,
			  tg_caught.eip);
	if (vec == 1)
		tg_printf(" dr6=0x%x", tg_caught.dr6);
	for (int i = 0; i < c.n; i++)
		tg_printf(" %s=0x%llx", c.label[i], c.value[i]);
	tg_printf("\n");
}

static uint32_t run_table(const struct attempt *t, size_t n)
{
	uint32_t tried = 0;

	for (size_t i = 0; i < n; i++) {
		if (!selected(&t[i]))
			continue;
		run_attempt(&t[i]);
		tried++;
	}
	return tried;
}

void mode_hostile(void)
{
	const struct attempt hlt = { "cli_hlt", "hlt", NULL, NULL };
	uint32_t tried;

	tried = run_table(attempts, sizeof(attempts) / sizeof(attempts[0]));
	tried += run_table(hostile_mem_attempts, hostile_mem_count);
	tg_printf("TG hostile done tried=%u\n", tried);
	if (!selected(&hlt))
		tg_poweroff();
	tg_printf("TG hostile TRY cli_hlt\n");
	tg_halt_forever();
}
