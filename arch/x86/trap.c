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
