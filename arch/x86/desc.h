/* SPDX-License-Identifier: BSD-2-Clause */
/* Descriptor tables: GDT, 64-bit TSS and IDT (Intel SDM Vol. 3A ch. 3, 6, 8). */
#ifndef FERRY_ARCH_X86_DESC_H
#define FERRY_ARCH_X86_DESC_H

#include <stdint.h>

#define SEL_KCODE	0x08
#define SEL_KDATA	0x10
#define SEL_TSS		0x18

#define IST_NMI		1
#define IST_DF		2
#define IST_MC		3

struct tss64 {
	uint32_t reserved0;
	uint64_t rsp[3];
	uint64_t reserved1;
	uint64_t ist[7];
	uint64_t reserved2;
	uint16_t reserved3;
	uint16_t iomap_base;
} __attribute__((packed));

struct gdt_table {
	uint64_t entry[5];	/* null, code, data, TSS (two slots) */
} __attribute__((aligned(16)));

struct trap_frame {
	uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
	uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
	uint64_t vector, error;
	uint64_t rip, cs, rflags, rsp, ss;
};

void gdt_init_this_cpu(void);
void idt_init(void);
void idt_load(void);

typedef void (*irq_handler_t)(struct trap_frame *tf);
void irq_register(uint8_t vector, irq_handler_t fn);

/* A machine check that ended a guest's run: a report, and every CPU stops. */
__attribute__((noreturn)) void trap_guest_machine_check(void);

#endif
