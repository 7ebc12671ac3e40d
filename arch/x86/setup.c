/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What every CPU does for itself at bring-up, the boot CPU included:
 * ferry's page tables, descriptor tables, FPU/SSE control bits (ferry's own
 * code never touches those registers; see docs/ARCHITECTURE.md) and local
 * APIC.  What virtualisation it offers is looked at by hv/vmm.c.
 */
#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/desc.h"
#include "arch/x86/paging_host.h"
#include "arch/x86/percpu.h"
#include "arch/x86/smp.h"

#define XCR0_X87	(1ull << 0)
#define XCR0_SSE	(1ull << 1)
#define XCR0_AVX	(1ull << 2)
#define XCR0_AVX512	(7ull << 5)

/* Let guests use x87/SSE/AVX: ferry switches that state per vCPU with XSAVE. */
static void fpu_init(void)
{
	write_cr0((read_cr0() & ~(CR0_EM | CR0_TS)) | CR0_MP | CR0_NE);
	uint64_t cr4 = read_cr4() | CR4_OSFXSR | CR4_OSXMMEXCPT;
	if (cpuid(1, 0).ecx & (1u << 26)) {	/* XSAVE */
		write_cr4(cr4 | CR4_OSXSAVE);
		uint64_t mask = cpuid(0xd, 0).eax;
		xsetbv(0, mask & (XCR0_X87 | XCR0_SSE | XCR0_AVX | XCR0_AVX512));
		return;
	}
	write_cr4(cr4);
}

void cpu_init_this(void)
{
	host_paging_load();
	idt_load();
	gdt_init_this_cpu();
	fpu_init();
	apic_init_this_cpu();
}

void cpu_mark_online(void)
{
	__atomic_store_n(&this_cpu()->online, true, __ATOMIC_RELEASE);
}
