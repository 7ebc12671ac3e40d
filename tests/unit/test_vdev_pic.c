/* SPDX-License-Identifier: BSD-2-Clause */
/* The virtual 8259A pair (hv/vdev/pic.c), programmed as the test guest and
 * Linux program it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>
#include "hv/vdev/pic.h"

static void outb(struct pic *p, uint16_t port, uint8_t v)
{
	uint32_t x = v;

	assert_int_equal(pic_io(p, port, 1, false, &x), 0);
	assert_true(pic_valid(p));
}

static uint8_t inb(struct pic *p, uint16_t port)
{
	uint32_t x = 0xdeadbeef;

	assert_int_equal(pic_io(p, port, 1, true, &x), 0);
	assert_true(x <= 0xff);
	return (uint8_t)x;
}

static void pulse(struct pic *p, unsigned int irq)
{
	assert_int_equal(pic_set_irq(p, irq, 1), 0);
	assert_int_equal(pic_set_irq(p, irq, 0), 0);
}

/* guest/testguest/timer.c: tg_pic_init() then tg_pic_unmask() of irqs. */
static void testguest_init(struct pic *p, uint8_t master_mask, uint8_t slave_mask)
{
	outb(p, 0x20, 0x11);
	outb(p, 0xA0, 0x11);
	outb(p, 0x21, 0x20);
	outb(p, 0xA1, 0x28);
	outb(p, 0x21, 1 << 2);
	outb(p, 0xA1, 2);
	outb(p, 0x21, 0x01);
	outb(p, 0xA1, 0x01);
	outb(p, 0x21, master_mask);
	outb(p, 0xA1, slave_mask);
}

/* Linux arch/x86/kernel/i8259.c: probe_8259A() and init_8259A(0). */
static void linux_init(struct pic *p)
{
	outb(p, 0xA1, 0xff);
	outb(p, 0x21, 0xfb);
	assert_int_equal(inb(p, 0x21), 0xfb);	/* the probe */
	outb(p, 0x21, 0xff);
	outb(p, 0x20, 0x11);
	outb(p, 0x21, 0x30);
	outb(p, 0x21, 1 << 2);
	outb(p, 0x21, 0x01);
	outb(p, 0xA0, 0x11);
	outb(p, 0xA1, 0x38);
	outb(p, 0xA1, 2);
	outb(p, 0xA1, 0x01);
	outb(p, 0x21, 0xfb);	/* cached masks: all but the cascade */
	outb(p, 0xA1, 0xff);
}

/* Linux's unmask of one irq (cached mask registers). */
static void linux_unmask(struct pic *p, unsigned int irq)
{
	if (irq < 8)
		outb(p, 0x21, inb(p, 0x21) & ~(1u << irq));
	else
		outb(p, 0xA1, inb(p, 0xA1) & ~(1u << (irq - 8)));
}

/* Linux mask_and_ack_8259A(): specific EOIs. */
static void linux_eoi(struct pic *p, unsigned int irq)
{
	if (irq >= 8) {
		outb(p, 0xA0, 0x60 + (irq & 7));
		outb(p, 0x20, 0x60 + 2);
	} else {
		outb(p, 0x20, 0x60 + irq);
	}
}

static uint8_t read_isr(struct pic *p, uint16_t cmd)
{
	uint8_t v;

	outb(p, cmd, 0x0B);
	v = inb(p, cmd);
	outb(p, cmd, 0x0A);
	return v;
}

static void test_power_on(void **state)
{
	struct pic p;

	(void)state;
	pic_init(&p);
	assert_true(pic_valid(&p));
	assert_int_equal(inb(&p, 0x21), 0xff);
	assert_int_equal(inb(&p, 0xA1), 0xff);
	assert_int_equal(inb(&p, 0x4D0), 0);
	pulse(&p, 0);
	assert_int_equal(pic_pending_vector(&p), -1);	/* masked */
	assert_int_equal(inb(&p, 0x20), 0x01);		/* but latched in IRR */
	assert_int_equal(pic_set_irq(&p, 16, 1), -EINVAL);
	uint32_t v;
	assert_int_equal(pic_io(&p, 0x22, 1, true, &v), -ENOENT);
	assert_int_equal(pic_io(&p, 0x1F, 1, false, &v), -ENOENT);
}

static void test_testguest_timer_and_uart(void **state)
{
	struct pic p;

	(void)state;
	pic_init(&p);
	testguest_init(&p, 0xff & ~0x01 & ~0x10, 0xff);
	assert_int_equal(pic_pending_vector(&p), -1);
	pulse(&p, 0);
	assert_int_equal(pic_pending_vector(&p), 0x20);
	assert_int_equal(pic_ack(&p), 0x20);
	assert_int_equal(read_isr(&p, 0x20), 0x01);
	assert_int_equal(pic_pending_vector(&p), -1);
	pulse(&p, 0);				/* next tick while in service */
	assert_int_equal(pic_pending_vector(&p), -1);
	outb(&p, 0x20, 0x20);			/* tg_pic_eoi(0) */
	assert_int_equal(pic_pending_vector(&p), 0x20);
	assert_int_equal(pic_ack(&p), 0x20);
	outb(&p, 0x20, 0x20);
	assert_int_equal(pic_pending_vector(&p), -1);

	pic_set_irq(&p, 4, 1);			/* UART line goes high */
	assert_int_equal(pic_pending_vector(&p), 0x24);
	assert_int_equal(pic_ack(&p), 0x24);
	pic_set_irq(&p, 4, 0);			/* handler drained the FIFO */
	outb(&p, 0x20, 0x20);
	assert_int_equal(pic_pending_vector(&p), -1);
	assert_int_equal(p.stats.acks, 3);
	assert_int_equal(p.stats.spurious, 0);
}

static void test_linux_init_and_slave(void **state)
{
	struct pic p;

	(void)state;
	pic_init(&p);
	linux_init(&p);
	assert_int_equal(inb(&p, 0x21), 0xfb);
	linux_unmask(&p, 0);
	linux_unmask(&p, 8);
	linux_unmask(&p, 12);
	pulse(&p, 0);
	assert_int_equal(pic_ack(&p), 0x30);
	linux_eoi(&p, 0);
	pulse(&p, 12);
	pulse(&p, 8);
	assert_int_equal(pic_pending_vector(&p), 0x38);
	assert_int_equal(pic_ack(&p), 0x38);
	assert_int_equal(read_isr(&p, 0x20), 0x04);
	assert_int_equal(read_isr(&p, 0xA0), 0x01);
	assert_int_equal(pic_pending_vector(&p), -1);	/* 12 below 8 */
	linux_eoi(&p, 8);
	assert_int_equal(pic_pending_vector(&p), 0x3C);
	assert_int_equal(pic_ack(&p), 0x3C);
	linux_eoi(&p, 12);
	assert_int_equal(pic_pending_vector(&p), -1);
	assert_int_equal(read_isr(&p, 0x20) | read_isr(&p, 0xA0), 0);
	/* Masking the cascade hides the whole slave. */
	outb(&p, 0x21, 0xff);
	pulse(&p, 8);
	assert_int_equal(pic_pending_vector(&p), -1);
	outb(&p, 0x21, 0xfb);
	assert_int_equal(pic_pending_vector(&p), 0x38);
}

static void test_priority_and_nesting(void **state)
{
	struct pic p;

	(void)state;
	pic_init(&p);
	testguest_init(&p, 0x00, 0x00);
	pulse(&p, 3);
	pulse(&p, 1);
	assert_int_equal(pic_ack(&p), 0x21);
	pulse(&p, 0);				/* higher: nests */
	assert_int_equal(pic_pending_vector(&p), 0x20);
	assert_int_equal(pic_ack(&p), 0x20);
	pulse(&p, 5);
	assert_int_equal(pic_pending_vector(&p), -1);	/* 3, 5 below */
	assert_int_equal(read_isr(&p, 0x20), 0x03);
	outb(&p, 0x20, 0x20);			/* non-specific: clears 0 */
	assert_int_equal(read_isr(&p, 0x20), 0x02);
	assert_int_equal(pic_pending_vector(&p), -1);
	outb(&p, 0x20, 0x20);			/* clears 1 */
	assert_int_equal(pic_ack(&p), 0x23);
	outb(&p, 0x20, 0x63);			/* specific EOI 3 */
	assert_int_equal(pic_ack(&p), 0x25);
	outb(&p, 0x20, 0x20);
	assert_int_equal(pic_pending_vector(&p), -1);
	/* The slave's lines rank at IR2 of the master: above 3, below 1. */
	pulse(&p, 3);
	pulse(&p, 15);
	assert_int_equal(pic_pending_vector(&p), 0x2F);
	pulse(&p, 1);
	assert_int_equal(pic_pending_vector(&p), 0x21);
}

static void test_spurious_master(void **state)
{
	struct pic p;

	(void)state;
	pic_init(&p);
	testguest_init(&p, 0x00, 0x00);
	assert_int_equal(pic_ack(&p), 0x27);	/* nothing at all */
	pulse(&p, 3);
	assert_int_equal(pic_pending_vector(&p), 0x23);
	outb(&p, 0x21, 0x08);			/* masked before INTA */
	assert_int_equal(pic_ack(&p), 0x27);
	assert_int_equal(read_isr(&p, 0x20), 0);	/* no ISR bit: no EOI */
	assert_int_equal(p.stats.spurious, 2);
	/* A real IRQ 7 sets ISR bit 7 and needs its EOI. */
	pulse(&p, 7);
	assert_int_equal(pic_ack(&p), 0x27);
	assert_int_equal(read_isr(&p, 0x20), 0x80);
	outb(&p, 0x20, 0x20);
	assert_int_equal(p.stats.spurious, 2);
}

static void test_spurious_slave(void **state)
{
	struct pic p;

	(void)state;
	pic_init(&p);
	testguest_init(&p, 0x00, 0x00);
	pulse(&p, 10);
	assert_int_equal(pic_pending_vector(&p), 0x2A);
	outb(&p, 0xA1, 0x04);			/* slave masks it */
	assert_int_equal(pic_pending_vector(&p), 0x2F);	/* IR2 latched */
	assert_int_equal(pic_ack(&p), 0x2F);
	assert_int_equal(read_isr(&p, 0x20), 0x04);	/* master: EOI it */
	assert_int_equal(read_isr(&p, 0xA0), 0x00);	/* slave: no EOI */
	outb(&p, 0x20, 0x20);
	assert_int_equal(pic_pending_vector(&p), -1);
	assert_int_equal(p.stats.spurious, 1);
	outb(&p, 0xA1, 0x00);			/* unmask: request still there */
	assert_int_equal(pic_ack(&p), 0x2A);
}

static void test_level_vs_edge(void **state)
{
	struct pic p;

	(void)state;
	pic_init(&p);
	testguest_init(&p, 0x00, 0x00);
	outb(&p, 0x4D0, 0xff);
	outb(&p, 0x4D1, 0xff);
	assert_int_equal(inb(&p, 0x4D0), 0xf8);	/* IRQ 0-2 edge only */
	assert_int_equal(inb(&p, 0x4D1), 0xde);	/* IRQ 8, 13 edge only */
	outb(&p, 0x4D0, 0x00);
	outb(&p, 0x4D1, 0x02);			/* IRQ 9 level */

	pic_set_irq(&p, 9, 1);
	assert_int_equal(pic_ack(&p), 0x29);
	outb(&p, 0xA0, 0x20);
	outb(&p, 0x20, 0x20);
	assert_int_equal(pic_pending_vector(&p), 0x29);	/* still high */
	/* The line drops after the master latched the cascade: the slave's
	 * spurious IRQ 15, with the master's IR2 to be EOId. */
	pic_set_irq(&p, 9, 0);
	assert_int_equal(pic_pending_vector(&p), 0x2F);
	assert_int_equal(pic_ack(&p), 0x2F);
	assert_int_equal(read_isr(&p, 0xA0), 0);
	outb(&p, 0x20, 0x20);
	assert_int_equal(pic_pending_vector(&p), -1);

	pic_set_irq(&p, 10, 1);			/* edge, held high */
	assert_int_equal(pic_ack(&p), 0x2A);
	outb(&p, 0xA0, 0x20);
	outb(&p, 0x20, 0x20);
	assert_int_equal(pic_pending_vector(&p), -1);
	pic_set_irq(&p, 10, 1);			/* no new edge */
	assert_int_equal(pic_pending_vector(&p), -1);
	pulse(&p, 10);
	pic_set_irq(&p, 10, 1);
	assert_int_equal(pic_pending_vector(&p), 0x2A);

	/* Switching a high line to level makes it request at once. */
	pic_set_irq(&p, 11, 1);
	assert_int_equal(pic_ack(&p), 0x2A);
	outb(&p, 0xA0, 0x20);
	outb(&p, 0x20, 0x20);
	assert_int_equal(pic_ack(&p), 0x2B);
	outb(&p, 0xA0, 0x20);
	outb(&p, 0x20, 0x20);
	outb(&p, 0x4D1, 0x0a);
	assert_int_equal(pic_pending_vector(&p), 0x2B);
}

static void test_auto_eoi_and_rotation(void **state)
{
	struct pic p;

	(void)state;
	pic_init(&p);
	outb(&p, 0x20, 0x11);
	outb(&p, 0x21, 0x20);
	outb(&p, 0x21, 0x04);
	outb(&p, 0x21, 0x03);			/* 8086, AEOI */
	outb(&p, 0x21, 0x00);
	pulse(&p, 4);
	assert_int_equal(pic_ack(&p), 0x24);
	assert_int_equal(read_isr(&p, 0x20), 0);
	pulse(&p, 6);
	assert_int_equal(pic_pending_vector(&p), 0x26);	/* nothing in service */
	assert_int_equal(pic_ack(&p), 0x26);
	outb(&p, 0x20, 0x80);			/* rotate in AEOI mode */
	pulse(&p, 1);
	assert_int_equal(pic_ack(&p), 0x21);	/* 1 becomes lowest */
	pulse(&p, 1);
	pulse(&p, 3);
	assert_int_equal(pic_ack(&p), 0x23);
	assert_int_equal(pic_ack(&p), 0x21);
	outb(&p, 0x20, 0x00);			/* rotation off */
	outb(&p, 0x20, 0xC7);			/* set priority: 7 lowest */
	pulse(&p, 1);
	pulse(&p, 0);
	assert_int_equal(pic_ack(&p), 0x20);
}

/* A slave in automatic EOI mode with a second request behind the first:
 * the master must see IR2 again, or the second one is lost. */
static void test_slave_auto_eoi(void **state)
{
	struct pic p;

	(void)state;
	pic_init(&p);
	testguest_init(&p, 0x00, 0x00);
	outb(&p, 0xA0, 0x11);
	outb(&p, 0xA1, 0x28);
	outb(&p, 0xA1, 0x02);
	outb(&p, 0xA1, 0x03);			/* slave: 8086, AEOI */
	outb(&p, 0xA1, 0x00);
	pulse(&p, 8);
	pulse(&p, 9);
	assert_int_equal(pic_ack(&p), 0x28);
	assert_int_equal(read_isr(&p, 0xA0), 0);
	assert_int_equal(pic_pending_vector(&p), -1);	/* master IR2 busy */
	outb(&p, 0x20, 0x20);
	assert_int_equal(pic_ack(&p), 0x29);
	outb(&p, 0x20, 0x20);
	assert_int_equal(pic_pending_vector(&p), -1);
}

static void test_rotate_on_eoi_and_set_priority(void **state)
{
	struct pic p;

	(void)state;
	pic_init(&p);
	testguest_init(&p, 0x00, 0x00);
	pulse(&p, 0);
	assert_int_equal(pic_ack(&p), 0x20);
	outb(&p, 0x20, 0xA0);			/* rotate on non-specific EOI */
	pulse(&p, 0);
	pulse(&p, 1);
	assert_int_equal(pic_ack(&p), 0x21);	/* 0 is now lowest */
	outb(&p, 0x20, 0xE1);			/* rotate on specific EOI 1 */
	assert_int_equal(pic_ack(&p), 0x20);	/* 2..7, 0, 1 */
	outb(&p, 0x20, 0x20);
	outb(&p, 0x20, 0xC4);			/* 4 lowest: 5 highest */
	pulse(&p, 3);
	pulse(&p, 5);
	assert_int_equal(pic_ack(&p), 0x25);
	assert_int_equal(pic_pending_vector(&p), -1);	/* 3 ranks below 5 */
	outb(&p, 0x20, 0x65);
	assert_int_equal(pic_ack(&p), 0x23);
}

static void test_poll_and_register_reads(void **state)
{
	struct pic p;

	(void)state;
	pic_init(&p);
	testguest_init(&p, 0x00, 0x00);
	outb(&p, 0x20, 0x0C);			/* OCW3 poll */
	assert_int_equal(inb(&p, 0x20), 0x00);	/* nothing */
	pulse(&p, 5);
	pulse(&p, 6);
	assert_int_equal(inb(&p, 0x20), 0x60);	/* IRR */
	outb(&p, 0x20, 0x0C);
	assert_int_equal(inb(&p, 0x21), 0x85);	/* poll on either port */
	assert_int_equal(inb(&p, 0x20), 0x40);	/* back to IRR */
	assert_int_equal(read_isr(&p, 0x20), 0x20);
	outb(&p, 0x20, 0x0B);
	assert_int_equal(inb(&p, 0x20), 0x20);	/* ISR until changed */
	assert_int_equal(inb(&p, 0x20), 0x20);
	outb(&p, 0x20, 0x08);			/* OCW3 without RR: no change */
	assert_int_equal(inb(&p, 0x20), 0x20);
	uint32_t w;
	assert_int_equal(pic_io(&p, 0x20, 2, true, &w), 0);
	assert_int_equal(w, 0x0020);		/* ISR, IMR */
}

static void test_special_mask_mode(void **state)
{
	struct pic p;

	(void)state;
	pic_init(&p);
	testguest_init(&p, 0x00, 0x00);
	pulse(&p, 3);
	assert_int_equal(pic_ack(&p), 0x23);
	pulse(&p, 5);
	assert_int_equal(pic_pending_vector(&p), -1);
	outb(&p, 0x21, 0x08);			/* mask the one in service */
	outb(&p, 0x20, 0x68);			/* set special mask mode */
	assert_int_equal(pic_pending_vector(&p), 0x25);
	outb(&p, 0x20, 0x48);			/* reset special mask mode */
	assert_int_equal(pic_pending_vector(&p), -1);
	outb(&p, 0x20, 0x63);
	assert_int_equal(pic_pending_vector(&p), 0x25);
}

/* With ICW4.SFNM on the master, a higher slave request is let through
 * while IR2 is in service; without it the master blocks it. */
static int sfnm_case(bool sfnm)
{
	struct pic p;

	pic_init(&p);
	outb(&p, 0x20, 0x11);
	outb(&p, 0x21, 0x20);
	outb(&p, 0x21, 0x04);
	outb(&p, 0x21, sfnm ? 0x11 : 0x01);
	outb(&p, 0xA0, 0x11);
	outb(&p, 0xA1, 0x28);
	outb(&p, 0xA1, 0x02);
	outb(&p, 0xA1, 0x01);
	outb(&p, 0x21, 0x00);
	outb(&p, 0xA1, 0x00);
	pulse(&p, 12);
	assert_int_equal(pic_ack(&p), 0x2C);
	pulse(&p, 13);				/* below 12: never */
	assert_int_equal(pic_pending_vector(&p), -1);
	pulse(&p, 9);				/* above 12 */
	return pic_pending_vector(&p);
}

static void test_special_fully_nested(void **state)
{
	(void)state;
	assert_int_equal(sfnm_case(false), -1);
	assert_int_equal(sfnm_case(true), 0x29);
}

static void test_init_sequence_in_progress(void **state)
{
	struct pic p;

	(void)state;
	pic_init(&p);
	testguest_init(&p, 0x00, 0x00);
	pulse(&p, 1);
	outb(&p, 0x20, 0x11);
	assert_int_equal(pic_pending_vector(&p), -1);
	assert_int_equal(pic_ack(&p), -1);
	outb(&p, 0x21, 0x40);
	outb(&p, 0x21, 0x04);
	assert_int_equal(pic_ack(&p), -1);
	outb(&p, 0x21, 0x01);
	assert_int_equal(inb(&p, 0x21), 0x00);	/* ICW1 cleared IMR */
	assert_int_equal(pic_pending_vector(&p), -1);	/* and the old edge */
	pulse(&p, 1);
	assert_int_equal(pic_ack(&p), 0x41);
	/* Single mode, no ICW4: ICW2 only; the slave is then unreachable. */
	outb(&p, 0x20, 0x12);
	outb(&p, 0x21, 0x50);
	outb(&p, 0x21, 0x00);			/* OCW1 now */
	assert_int_equal(inb(&p, 0x21), 0x00);
	pulse(&p, 9);
	assert_int_equal(pic_pending_vector(&p), -1);
	pulse(&p, 6);
	assert_int_equal(pic_ack(&p), 0x56);
}

/* Random port writes, line changes and acks from a fixed seed: the state
 * stays valid and what pending promises, ack delivers. */
static void test_fuzz(void **state)
{
	static const uint16_t ports[] = { 0x20, 0x21, 0xA0, 0xA1, 0x4D0, 0x4D1 };
	struct pic p;
	uint32_t v;
	int want;

	(void)state;
	srand(8259);
	pic_init(&p);
	for (int i = 0; i < 200000; i++) {
		int op = rand() % 8;
		uint16_t port = ports[rand() % 6];

		v = (uint32_t)rand() & 0xff;
		if (op < 3)
			assert_int_equal(pic_io(&p, port, 1, false, &v), 0);
		else if (op == 3)
			assert_int_equal(pic_io(&p, port, 1, true, &v), 0);
		else if (op < 6)
			pic_set_irq(&p, (unsigned int)rand() % 16, rand() & 1);
		else if ((want = pic_pending_vector(&p)) >= 0)
			assert_int_equal(pic_ack(&p), want);
		else
			(void)pic_ack(&p);
		assert_true(pic_valid(&p));
		want = pic_pending_vector(&p);
		assert_true(want == -1 || (want & ~7) == p.chip[0].base ||
			    (want & ~7) == p.chip[1].base);
	}
	/* Re-initialising always gives a working controller back. */
	outb(&p, 0x4D0, 0);
	outb(&p, 0x4D1, 0);
	for (int irq = 0; irq < 16; irq++)
		pic_set_irq(&p, (unsigned int)irq, 0);
	testguest_init(&p, 0x00, 0x00);
	assert_int_equal(pic_pending_vector(&p), -1);
	pulse(&p, 0);
	assert_int_equal(pic_ack(&p), 0x20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_power_on),
		cmocka_unit_test(test_testguest_timer_and_uart),
		cmocka_unit_test(test_linux_init_and_slave),
		cmocka_unit_test(test_priority_and_nesting),
		cmocka_unit_test(test_spurious_master),
		cmocka_unit_test(test_spurious_slave),
		cmocka_unit_test(test_level_vs_edge),
		cmocka_unit_test(test_auto_eoi_and_rotation),
		cmocka_unit_test(test_slave_auto_eoi),
		cmocka_unit_test(test_rotate_on_eoi_and_set_priority),
		cmocka_unit_test(test_poll_and_register_reads),
		cmocka_unit_test(test_special_mask_mode),
		cmocka_unit_test(test_special_fully_nested),
		cmocka_unit_test(test_init_sequence_in_progress),
		cmocka_unit_test(test_fuzz),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
