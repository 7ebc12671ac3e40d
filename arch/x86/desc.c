/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Per-CPU GDT and TSS, and the IDT that all CPUs share.  NMIs, double faults
 * and machine checks run on their own IST stacks so that a broken stack
 * still produces a readable report.
 */
#include <string.h>
#include <malloc.h>
#include <stdlib.h>
#include "arch/x86/desc.h"
#include "arch/x86/percpu.h"
#include "arch/x86/mm.h"

struct idt_gate {
	uint16_t off_lo;
	uint16_t sel;
	uint8_t ist;
	uint8_t type;
	uint16_t off_mid;
	uint32_t off_hi;
	uint32_t reserved;
} __attribute__((packed));

struct desc_ptr {
	uint16_t limit;
	uint64_t base;
} __attribute__((packed));

extern char trap_stubs[];

static struct idt_gate idt[256] __attribute__((aligned(16)));

#define IST_STACK_SIZE 8192

static void set_gate(int vec, uint8_t ist)
{
	uint64_t off = (uint64_t)(trap_stubs + vec * 16);

	idt[vec] = (struct idt_gate){
		.off_lo = off & 0xffff, .sel = SEL_KCODE, .ist = ist,
		.type = 0x8e, /* present, DPL 0, 64-bit interrupt gate */
		.off_mid = (off >> 16) & 0xffff, .off_hi = off >> 32,
	};
}

void idt_init(void)
{
	for (int v = 0; v < 256; v++)
		set_gate(v, 0);
	set_gate(2, IST_NMI);
	set_gate(8, IST_DF);
	set_gate(18, IST_MC);
}

void idt_load(void)
{
	struct desc_ptr p = { sizeof(idt) - 1, (uint64_t)idt };

	__asm__ volatile("lidt %0" : : "m"(p));
}

static uint64_t tss_desc_lo(const struct tss64 *tss)
{
	uint64_t base = (uint64_t)tss, limit = sizeof(*tss) - 1;

	return (limit & 0xffff) | ((base & 0xffffff) << 16) |
	       (0x89ull << 40) /* present, 64-bit available TSS */ |
	       ((limit >> 16) & 0xf) << 48 | ((base >> 24) & 0xff) << 56;
}

static void *ist_stack(void)
{
	char *s = memalign(16, IST_STACK_SIZE);

	return s ? s + IST_STACK_SIZE : NULL;
}

/* Load this CPU's GDT and TSS; needs the heap for the IST stacks. */
void gdt_init_this_cpu(void)
{
	struct percpu *c = this_cpu();
	struct gdt_table *g = &c->gdt;
	struct desc_ptr p = { sizeof(g->entry) - 1, (uint64_t)g->entry };

	memset(&c->tss, 0, sizeof(c->tss));
	c->tss.iomap_base = sizeof(c->tss);	/* no I/O bitmap */
	c->tss.ist[IST_NMI - 1] = (uint64_t)ist_stack();
	c->tss.ist[IST_DF - 1] = (uint64_t)ist_stack();
	c->tss.ist[IST_MC - 1] = (uint64_t)ist_stack();
	g->entry[0] = 0;
	g->entry[1] = 0x00209a0000000000;	/* 64-bit code, DPL 0 */
	g->entry[2] = 0x0000920000000000;	/* data */
	g->entry[3] = tss_desc_lo(&c->tss);
	g->entry[4] = (uint64_t)&c->tss >> 32;
	__asm__ volatile(
		"lgdt %0\n\t"
		"pushq %1\n\t"
		"leaq 1f(%%rip), %%rax\n\t"
		"pushq %%rax\n\t"
		"lretq\n"
		"1:\n\t"
		"movl %2, %%eax\n\t"
		"movl %%eax, %%ds\n\t"
		"movl %%eax, %%es\n\t"
		"movl %%eax, %%ss\n\t"
		"ltr %w3"
		: : "m"(p), "i"(SEL_KCODE), "i"(SEL_KDATA), "r"(SEL_TSS)
		: "rax", "memory");
}
