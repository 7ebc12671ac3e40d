/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * testguest: tiny inline wrappers around the x86 instructions the guest
 * uses (port I/O, CPUID, RDTSC, MSRs, control and debug registers).  32-bit
 * protected mode, paging normally off.
 */
#ifndef TG_ARCH_H
#define TG_ARCH_H

#include <stdint.h>

static inline void outb(uint16_t port, uint8_t v)
{
	__asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline void outw(uint16_t port, uint16_t v)
{
	__asm__ volatile("outw %0, %1" : : "a"(v), "Nd"(port));
}

static inline void outl(uint16_t port, uint32_t v)
{
	__asm__ volatile("outl %0, %1" : : "a"(v), "Nd"(port));
}

static inline uint8_t inb(uint16_t port)
{
	uint8_t v;

	__asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline uint32_t inl(uint16_t port)
{
	uint32_t v;

	__asm__ volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

struct cpuid_regs {
	uint32_t eax, ebx, ecx, edx;
};

static inline struct cpuid_regs cpuid(uint32_t leaf, uint32_t subleaf)
{
	struct cpuid_regs r;

	__asm__ volatile("cpuid"
			 : "=a"(r.eax), "=b"(r.ebx), "=c"(r.ecx), "=d"(r.edx)
			 : "a"(leaf), "c"(subleaf));
	return r;
}

static inline uint64_t rdtsc(void)
{
	uint64_t v;

	__asm__ volatile("rdtsc" : "=A"(v));
	return v;
}

static inline uint64_t rdmsr(uint32_t msr)
{
	uint64_t v;

	__asm__ volatile("rdmsr" : "=A"(v) : "c"(msr));
	return v;
}

static inline void wrmsr(uint32_t msr, uint64_t v)
{
	__asm__ volatile("wrmsr" : : "c"(msr), "A"(v) : "memory");
}

static inline uint32_t read_cr0(void)
{
	uint32_t v;

	__asm__ volatile("mov %%cr0, %0" : "=r"(v));
	return v;
}

static inline void write_cr0(uint32_t v)
{
	__asm__ volatile("mov %0, %%cr0" : : "r"(v) : "memory");
}

static inline uint32_t read_cr4(void)
{
	uint32_t v;

	__asm__ volatile("mov %%cr4, %0" : "=r"(v));
	return v;
}

static inline void write_cr4(uint32_t v)
{
	__asm__ volatile("mov %0, %%cr4" : : "r"(v) : "memory");
}

static inline void write_cr3(uint32_t v)
{
	__asm__ volatile("mov %0, %%cr3" : : "r"(v) : "memory");
}

static inline uint32_t read_cr2(void)
{
	uint32_t v;

	__asm__ volatile("mov %%cr2, %0" : "=r"(v));
	return v;
}

static inline uint32_t read_dr6(void)
{
	uint32_t v;

	__asm__ volatile("mov %%dr6, %0" : "=r"(v));
	return v;
}

static inline void write_dr6(uint32_t v)
{
	__asm__ volatile("mov %0, %%dr6" : : "r"(v));
}

static inline void write_dr0(uint32_t v)
{
	__asm__ volatile("mov %0, %%dr0" : : "r"(v));
}

static inline void write_dr7(uint32_t v)
{
	__asm__ volatile("mov %0, %%dr7" : : "r"(v) : "memory");
}

static inline void sti(void)
{
	__asm__ volatile("sti" : : : "memory");
}

static inline void cli(void)
{
	__asm__ volatile("cli" : : : "memory");
}

/* Enable interrupts and wait for one; STI's one-instruction shadow makes
 * the pair atomic, so a pending interrupt cannot be lost in between. */
static inline void sti_hlt(void)
{
	__asm__ volatile("sti; hlt" : : : "memory");
}

static inline void cpu_relax(void)
{
	__asm__ volatile("pause" : : : "memory");
}

/* CR0/CR4 bits, SDM Vol. 3A 2.5. */
#define CR0_PE (1u << 0)
#define CR0_MP (1u << 1)
#define CR0_EM (1u << 2)
#define CR0_TS (1u << 3)
#define CR0_PG (1u << 31)
#define CR4_PAE (1u << 5)
#define CR4_OSFXSR (1u << 9)
#define CR4_OSXMMEXCPT (1u << 10)
#define CR4_OSXSAVE (1u << 18)

#endif
