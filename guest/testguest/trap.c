/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * testguest: the IDT and the one C entry for every interrupt and
 * exception.  IRQs go to their drivers; an exception inside tg_catch is
 * recorded and unwound; any other exception is reported as
 *   TG EXC vec=13 err=0x0 eip=0x00101234 [cr2=0x...]
 * and the guest powers off.
 */
#include "guest/testguest/arch.h"
#include "guest/testguest/tg.h"

#define IDT_ENTRIES 48
#define KERNEL_CS 0x08
#define GATE_INT32 0x8E /* present, DPL 0, 32-bit interrupt gate */
#define IRQ_BASE 0x20
#define VEC_DB 1
#define VEC_PF 14
#define DR6_CLEAR 0xFFFF0FF0u /* DR6 with no condition recorded */

/* An IDT gate descriptor, SDM Vol. 3A 6.11 (Figure 6-2). */
struct idt_gate {
	uint16_t offset_lo;
	uint16_t selector;
	uint8_t zero;
	uint8_t type_attr;
	uint16_t offset_hi;
} __attribute__((packed));

struct idt_ptr {
	uint16_t limit;
	uint32_t base;
} __attribute__((packed));

static struct idt_gate idt[IDT_ENTRIES] __attribute__((aligned(8)));
struct tg_caught tg_caught;

static const char *const vector_names[32] = {
	"de", "db", "nmi", "bp", "of", "br", "ud", "nm", "df", "cso",
	"ts", "np", "ss", "gp", "pf", "res15", "mf", "ac", "mc", "xm",
	"ve", "cp", "res22", "res23", "res24", "res25", "res26", "res27",
	"hv", "vc", "sx", "res31",
};

/* Lower-case mnemonic of an exception vector ("gp", "ud"...). */
const char *tg_vector_name(int vector)
{
	if (vector < 0)
		return "none";
	if (vector < 32)
		return vector_names[vector];
	return "irq";
}

void tg_trap_init(void)
{
	struct idt_ptr p = { sizeof(idt) - 1, (uint32_t)idt };

	for (int i = 0; i < IDT_ENTRIES; i++) {
		uint32_t a = (uint32_t)tg_isr_table[i];

		idt[i].offset_lo = (uint16_t)a;
		idt[i].selector = KERNEL_CS;
		idt[i].zero = 0;
		idt[i].type_attr = GATE_INT32;
		idt[i].offset_hi = (uint16_t)(a >> 16);
	}
	__asm__ volatile("lidt %0" : : "m"(p));
}

static void handle_irq(int irq)
{
	if (irq == 0)
		tg_ticks++;
	else if (irq == 4)
		tg_uart_irq();
	tg_pic_eoi(irq);
}

void (*volatile tg_apic_handler)(int vector);

void tg_trap(struct trap_frame *f)
{
	uint32_t cr2 = f->vector == VEC_PF ? read_cr2() : 0;

	if (tg_apic_handler && (f->vector == TG_NMI_VECTOR ||
				(f->vector >= TG_APIC_VEC_FIRST && f->vector <= TG_IPI_VECTOR))) {
		tg_apic_handler((int)f->vector);
		return;
	}

	if (f->vector >= IRQ_BASE) {
		handle_irq((int)f->vector - IRQ_BASE);
		return;
	}
	if (tg_catch_esp) {
		tg_caught.vector = f->vector;
		tg_caught.err = f->err;
		tg_caught.eip = f->eip;
		tg_caught.cr2 = cr2;
		tg_caught.dr6 = 0;
		if (f->vector == VEC_DB) { /* its bits are sticky: clear them */
			tg_caught.dr6 = read_dr6();
			write_dr6(DR6_CLEAR);
		}
		tg_catch_resume((int)f->vector);
	}
	tg_printf("TG EXC vec=%u err=0x%x eip=0x%08x", f->vector, f->err,
		  f->eip);
	if (f->vector == VEC_PF)
		tg_printf(" cr2=0x%08x", cr2);
	tg_printf(" name=%s\n", tg_vector_name((int)f->vector));
	tg_poweroff();
}
