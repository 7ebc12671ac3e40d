/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Per-CPU data, reached through %gs.  One struct per physical CPU, set up by
 * the CPU itself in cpu_init_this() and never freed.  Fields written by other
 * CPUs are marked; everything else belongs to the owning CPU.
 */
#ifndef FERRY_ARCH_X86_PERCPU_H
#define FERRY_ARCH_X86_PERCPU_H

#include <stdint.h>
#include <stdbool.h>
#include "arch/x86/desc.h"
#include "arch/x86/tickwake.h"
#include "arch/x86/virt.h"

#define MAX_CPUS 256		/* CPUs ferry brings up; APIC ids are full 32 bits */

struct percpu {
	struct percpu *self;		/* %gs:0, for this_cpu() */
	uint32_t index;			/* 0 = the boot CPU */
	uint32_t apic_id;
	uint64_t pad0[3];
	uint64_t stack_canary;		/* %gs:0x28, kept where user-space libs expect it */
	uint64_t stack_top;
	volatile bool online;		/* written by the CPU, read by all */
	uint64_t timer_ticks;		/* ticks taken (TIMER_HZ), not wakes */
	uint64_t timer_wakes;		/* wakes served (apic_timer_wake_at_ns) */
	struct tickwake timer;		/* arch/x86/apic.c: the next tick and wake */
	uint64_t timer_armed_tsc;	/* when the one-shot fires */
	uint64_t idle_tsc;		/* TSC cycles spent halted */
	struct gdt_table gdt;
	struct tss64 tss;
	void *vcpu;			/* the vCPU this CPU runs now, or NULL */
	volatile bool resched;		/* (a) set by other CPUs: re-read the run queue */
	void *fpu_owner;		/* vCPU whose x87/SSE/AVX state is in the registers */
	void *virt;			/* back end's per-CPU state (VMXON/host-save area) */
	struct virt_caps caps;		/* what this CPU offers, found at bring-up */
};

extern struct percpu cpus[MAX_CPUS];
extern unsigned int cpu_count;		/* CPUs found in the MADT (>= 1) */

static inline struct percpu *this_cpu(void)
{
	struct percpu *p;
	__asm__ volatile("movq %%gs:0, %0" : "=r"(p));
	return p;
}

#endif
