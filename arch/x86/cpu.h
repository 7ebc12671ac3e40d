/* SPDX-License-Identifier: BSD-2-Clause */
/* Thin wrappers around x86 instructions and registers (Intel SDM Vol. 2). */
#ifndef FERRY_ARCH_X86_CPU_H
#define FERRY_ARCH_X86_CPU_H

#include <stdint.h>

#define MSR_EFER		0xc0000080
#define MSR_FS_BASE		0xc0000100
#define MSR_GS_BASE		0xc0000101
#define MSR_KERNEL_GS_BASE	0xc0000102
#define MSR_APIC_BASE		0x0000001b
#define MSR_FEATURE_CONTROL	0x0000003a
#define MSR_PAT			0x00000277

#define EFER_SCE	(1u << 0)
#define EFER_LME	(1u << 8)
#define EFER_LMA	(1u << 10)
#define EFER_NXE	(1u << 11)
#define EFER_SVME	(1u << 12)

#define CR0_PE		(1ul << 0)
#define CR0_MP		(1ul << 1)
#define CR0_EM		(1ul << 2)
#define CR0_TS		(1ul << 3)
#define CR0_ET		(1ul << 4)
#define CR0_NE		(1ul << 5)
#define CR0_WP		(1ul << 16)
#define CR0_NW		(1ul << 29)
#define CR0_CD		(1ul << 30)
#define CR0_PG		(1ul << 31)

#define CR4_PAE		(1ul << 5)
#define CR4_PGE		(1ul << 7)
#define CR4_OSFXSR	(1ul << 9)
#define CR4_OSXMMEXCPT	(1ul << 10)
#define CR4_VMXE	(1ul << 13)
#define CR4_OSXSAVE	(1ul << 18)

#define RFLAGS_IF	(1ul << 9)

static inline uint8_t inb(uint16_t port)
{
	uint8_t v;
	__asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline uint16_t inw(uint16_t port)
{
	uint16_t v;
	__asm__ volatile("inw %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline uint32_t inl(uint16_t port)
{
	uint32_t v;
	__asm__ volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

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

static inline uint64_t rdmsr(uint32_t msr)
{
	uint32_t lo, hi;
	__asm__ volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
	return ((uint64_t)hi << 32) | lo;
}

static inline void wrmsr(uint32_t msr, uint64_t v)
{
	__asm__ volatile("wrmsr" : : "c"(msr), "a"((uint32_t)v),
			 "d"((uint32_t)(v >> 32)) : "memory");
}

struct cpuid_regs { uint32_t eax, ebx, ecx, edx; };

static inline struct cpuid_regs cpuid(uint32_t leaf, uint32_t subleaf)
{
	struct cpuid_regs r;
	__asm__ volatile("cpuid" : "=a"(r.eax), "=b"(r.ebx), "=c"(r.ecx), "=d"(r.edx)
			 : "a"(leaf), "c"(subleaf));
	return r;
}

static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

#define DEFINE_CR(n)							\
static inline uint64_t read_cr##n(void)					\
{									\
	uint64_t v;							\
	__asm__ volatile("mov %%cr" #n ", %0" : "=r"(v));		\
	return v;							\
}									\
static inline void write_cr##n(uint64_t v)				\
{									\
	__asm__ volatile("mov %0, %%cr" #n : : "r"(v) : "memory");	\
}
DEFINE_CR(0)
DEFINE_CR(2)
DEFINE_CR(3)
DEFINE_CR(4)
#undef DEFINE_CR

static inline uint64_t read_rflags(void)
{
	uint64_t v;
	__asm__ volatile("pushfq; popq %0" : "=r"(v));
	return v;
}

static inline void cpu_relax(void) { __asm__ volatile("pause" ::: "memory"); }
static inline void irq_enable(void) { __asm__ volatile("sti" ::: "memory"); }
static inline void irq_disable(void) { __asm__ volatile("cli" ::: "memory"); }
static inline void cpu_halt(void) { __asm__ volatile("hlt" ::: "memory"); }
/* sti;hlt: wakes on the next interrupt with no window between the two */
static inline void cpu_idle(void) { __asm__ volatile("sti; hlt; cli" ::: "memory"); }

static inline uint64_t irq_save(void)
{
	uint64_t f = read_rflags();
	irq_disable();
	return f;
}

static inline void irq_restore(uint64_t flags)
{
	if (flags & RFLAGS_IF)
		irq_enable();
}

static inline void invlpg(uint64_t va)
{
	__asm__ volatile("invlpg (%0)" : : "r"(va) : "memory");
}

static inline void xsetbv(uint32_t idx, uint64_t v)
{
	__asm__ volatile("xsetbv" : : "c"(idx), "a"((uint32_t)v),
			 "d"((uint32_t)(v >> 32)));
}

static inline uint64_t xgetbv(uint32_t idx)
{
	uint32_t lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(idx));
	return ((uint64_t)hi << 32) | lo;
}

#endif
