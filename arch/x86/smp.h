/* SPDX-License-Identifier: BSD-2-Clause */
/* CPU bring-up: per-CPU set-up common to all CPUs, and starting the APs. */
#ifndef FERRY_ARCH_X86_SMP_H
#define FERRY_ARCH_X86_SMP_H

void percpu_setup(unsigned int index);
/* Final page tables, IDT, GDT/TSS, local APIC and FPU for the calling CPU
 * (arch/x86/setup.c).  The CPU then looks at its virtualisation features
 * (hv/vmm.c) and says it is online: smp_start() waits for that. */
void cpu_init_this(void);
void cpu_mark_online(void);
void smp_start(void (*entry)(void));
unsigned int cpus_online(void);

#endif
