/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Interrupt and exception dispatch.  Interrupts go to the handler registered
 * for their vector; an exception in ferry itself is a bug and ends in a
 * report (vector, error code, registers, CPU) and a clean stop of every CPU.
 */
#include <stddef.h>
#include "arch/x86/desc.h"
#include "arch/x86/cpu.h"
#include "arch/x86/percpu.h"
#include "hv/lib/panic.h"
#include "hv/lib/log.h"

static irq_handler_t handlers[256];
static volatile uint64_t spurious_count;

static const char *const exc_names[32] = {
	"#DE divide error", "#DB debug", "NMI", "#BP breakpoint", "#OF overflow",
	"#BR bound range", "#UD invalid opcode", "#NM device not available",
	"#DF double fault", "coprocessor overrun", "#TS invalid TSS",
	"#NP segment not present", "#SS stack fault", "#GP general protection",
	"#PF page fault", "reserved 15", "#MF x87 error", "#AC alignment check",
	"#MC machine check", "#XM SIMD error", "#VE virtualization", "#CP control protection",
	"reserved 22", "reserved 23", "reserved 24", "reserved 25", "reserved 26",
	"reserved 27", "#HV hypervisor injection", "#VC VMM communication",
	"#SX security", "reserved 31",
};

void irq_register(uint8_t vector, irq_handler_t fn)
{
	handlers[vector] = fn;
}

static void report_exception(const struct trap_frame *tf)
{
	panic_begin();
	panic_printf("\nferry: EXCEPTION %s (vector %lu) error=%#lx on CPU %u\n",
		     exc_names[tf->vector], tf->vector, tf->error, panic_cpu_index());
	panic_printf("  rip=%016lx cs=%04lx rflags=%016lx rsp=%016lx ss=%04lx\n",
		     tf->rip, tf->cs, tf->rflags, tf->rsp, tf->ss);
	panic_printf("  rax=%016lx rbx=%016lx rcx=%016lx rdx=%016lx\n",
		     tf->rax, tf->rbx, tf->rcx, tf->rdx);
	panic_printf("  rsi=%016lx rdi=%016lx rbp=%016lx r8 =%016lx\n",
		     tf->rsi, tf->rdi, tf->rbp, tf->r8);
	panic_printf("  r9 =%016lx r10=%016lx r11=%016lx r12=%016lx\n",
		     tf->r9, tf->r10, tf->r11, tf->r12);
	panic_printf("  r13=%016lx r14=%016lx r15=%016lx\n", tf->r13, tf->r14, tf->r15);
	panic_printf("  cr0=%016lx cr2=%016lx cr3=%016lx cr4=%016lx\n",
		     read_cr0(), read_cr2(), read_cr3(), read_cr4());
	panic_backtrace(tf->rbp, tf->rsp);
	panic_end();
}

#define CPUID1_MCA		(1u << 14)	/* EDX: MCG_CAP and the banks */
#define MSR_MCG_CAP		0x179
#define MSR_MCG_STATUS		0x17a
#define MSR_MC0_STATUS		0x401		/* bank i: 0x400 + 4i: CTL, STATUS, ADDR, MISC */
#define MCI_STATUS_VAL		(1ull << 63)

/*
 * A machine check while a guest ran: both back ends intercept #MC (and
 * VMX's exit 41, one during VM entry), as KVM does, because the CPU then
 * delivers it to no handler of ours, and without the intercept it would
 * go to the guest's.  The hardware may be failing (memory ferry or a
 * guest holds): the report names the CPU and the banks that hold the
 * error (Intel SDM Vol. 3B 16.3, AMD APM Vol. 2 9.3), and every CPU stops,
 * as for an exception in ferry.
 */
void trap_guest_machine_check(void)
{
	unsigned int banks = 0;

	if (cpuid(1, 0).edx & CPUID1_MCA)
		banks = (unsigned int)(rdmsr(MSR_MCG_CAP) & 0xff);
	panic_begin();
	panic_printf("\nferry: MACHINE CHECK while a guest ran on CPU %u\n", panic_cpu_index());
	if (banks)
		panic_printf("  mcg_status=%#lx\n", rdmsr(MSR_MCG_STATUS));
	for (unsigned int i = 0; i < banks && i < 32; i++) {
		uint64_t st = rdmsr(MSR_MC0_STATUS + 4 * i);

		if (st & MCI_STATUS_VAL)
			panic_printf("  bank %u: status=%016lx addr=%016lx misc=%016lx\n", i, st,
				     rdmsr(MSR_MC0_STATUS + 4 * i + 1),
				     rdmsr(MSR_MC0_STATUS + 4 * i + 2));
	}
	panic_end();
}

void trap_dispatch(struct trap_frame *tf);
void trap_dispatch(struct trap_frame *tf)
{
	irq_handler_t fn = handlers[tf->vector & 0xff];

	if (fn) {
		fn(tf);
		return;
	}
	if (tf->vector < 32) {
		report_exception(tf);
		return;
	}
	spurious_count++;	/* unexpected vector: no EOI owed for spurious */
}
