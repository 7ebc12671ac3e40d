/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * testguest: the 8259A interrupt controllers (remapped to vectors
 * 0x20-0x2F, everything masked until a driver asks) and the 8254 timer,
 * channel 0 in mode 2 at TG_HZ (or what tg_timer_hz sets), which counts
 * tg_ticks.
 */
#include "guest/testguest/arch.h"
#include "guest/testguest/tg.h"

#define PIC1_CMD 0x20
#define PIC1_DATA 0x21
#define PIC2_CMD 0xA0
#define PIC2_DATA 0xA1
#define ICW1_INIT_ICW4 0x11 /* edge triggered, cascade, ICW4 follows */
#define ICW4_8086 0x01
#define OCW2_EOI 0x20
#define OCW3_READ_ISR 0x0B
#define PIC_CASCADE_IRQ 2

#define PIT_CH0 0x40
#define PIT_CMD 0x43
#define PIT_CH0_LOHI_MODE2 0x34 /* channel 0, lobyte/hibyte, mode 2 */
#define PIT_HZ 1193182u

volatile uint32_t tg_ticks;
static uint8_t pic_masks[2] = { 0xFF, 0xFF };

void tg_pic_init(void)
{
	outb(PIC1_CMD, ICW1_INIT_ICW4);
	outb(PIC2_CMD, ICW1_INIT_ICW4);
	outb(PIC1_DATA, 0x20); /* ICW2: vector base */
	outb(PIC2_DATA, 0x28);
	outb(PIC1_DATA, 1 << PIC_CASCADE_IRQ); /* ICW3: slave on IRQ 2 */
	outb(PIC2_DATA, PIC_CASCADE_IRQ);
	outb(PIC1_DATA, ICW4_8086);
	outb(PIC2_DATA, ICW4_8086);
	outb(PIC1_DATA, pic_masks[0]);
	outb(PIC2_DATA, pic_masks[1]);
}

void tg_pic_unmask(int irq)
{
	if (irq >= 8) {
		pic_masks[1] &= (uint8_t)~(1u << (irq - 8));
		outb(PIC2_DATA, pic_masks[1]);
		irq = PIC_CASCADE_IRQ;
	}
	pic_masks[0] &= (uint8_t)~(1u << irq);
	outb(PIC1_DATA, pic_masks[0]);
}

static bool in_service(uint16_t cmd_port, int bit)
{
	outb(cmd_port, OCW3_READ_ISR);
	return inb(cmd_port) & (1u << bit);
}

/* IRQ 7 and 15 may be spurious (8259A data sheet): those get no EOI on
 * their own controller. */
void tg_pic_eoi(int irq)
{
	if (irq == 7 && !in_service(PIC1_CMD, 7))
		return;
	if (irq == 15 && !in_service(PIC2_CMD, 7)) {
		outb(PIC1_CMD, OCW2_EOI);
		return;
	}
	if (irq >= 8)
		outb(PIC2_CMD, OCW2_EOI);
	outb(PIC1_CMD, OCW2_EOI);
}

/* Channel 0 at hz (19 Hz up: the divisor has 16 bits). */
void tg_timer_hz(uint32_t hz)
{
	uint32_t div = (PIT_HZ + hz / 2) / hz;

	outb(PIT_CMD, PIT_CH0_LOHI_MODE2);
	outb(PIT_CH0, (uint8_t)div);
	outb(PIT_CH0, (uint8_t)(div >> 8));
}

void tg_timer_start(void)
{
	tg_timer_hz(TG_HZ);
	tg_pic_unmask(0);
	sti();
}

/* Sleeps until n ticks have passed since start.  Testing with interrupts
 * off and then STI;HLT (atomic) cannot miss the tick that ends the wait.
 * Returns with interrupts enabled. */
static void wait_since(uint32_t start, uint32_t n)
{
	for (;;) {
		cli();
		if (tg_ticks - start >= n)
			break;
		sti_hlt();
	}
	sti();
}

/* Returns just after tg_ticks changed. */
void tg_wait_tick_edge(void)
{
	wait_since(tg_ticks, 1);
}

void tg_wait_ticks(uint32_t n)
{
	wait_since(tg_ticks, n);
}

/* TSC increments per timer tick, measured over 10 ticks. */
uint64_t tg_tsc_per_tick(void)
{
	uint64_t t0;

	tg_wait_tick_edge();
	t0 = rdtsc();
	tg_wait_ticks(10);
	return (rdtsc() - t0) / 10;
}
