/* SPDX-License-Identifier: BSD-2-Clause */
/* The virtual 16550A (hv/vdev/uart.c): Linux 8250 probing and start-up
 * tests, THR-empty interrupts, the receive FIFO, loopback, the IRQ line. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>
#include "hv/vdev/uart.h"

#define COM1 0x3F8

/* What the UART did to the outside world. */
struct wire_log {
	int level;		/* last irq() level */
	int irq_calls;
	uint8_t tx[256];
	size_t ntx;		/* bytes transmitted (all counted) */
};

static void on_irq(void *ctx, int level)
{
	struct wire_log *w = ctx;

	assert_int_not_equal(level, w->level);	/* only on changes */
	w->level = level;
	w->irq_calls++;
}

static void on_tx(void *ctx, uint8_t byte)
{
	struct wire_log *w = ctx;

	w->tx[w->ntx++ % sizeof(w->tx)] = byte;
}

static struct wire_log wl;

static void setup(struct uart *u)
{
	memset(&wl, 0, sizeof(wl));
	uart_init(u, COM1, on_irq, on_tx, &wl);
	assert_true(uart_valid(u));
}

static void outb(struct uart *u, unsigned int reg, uint8_t v)
{
	uint32_t x = v;

	assert_int_equal(uart_io(u, (uint16_t)(COM1 + reg), 1, false, &x), 0);
	assert_true(uart_valid(u));
	assert_int_equal(wl.level, u->irq_level);
}

static uint8_t inb(struct uart *u, unsigned int reg)
{
	uint32_t x = 0xdeadbeef;

	assert_int_equal(uart_io(u, (uint16_t)(COM1 + reg), 1, true, &x), 0);
	assert_true(x <= 0xff);
	assert_true(uart_valid(u));
	assert_int_equal(wl.level, u->irq_level);
	return (uint8_t)x;
}

static void test_reset_state(void **state)
{
	struct uart u;
	uint32_t v;

	(void)state;
	setup(&u);
	assert_int_equal(inb(&u, UART_IER), 0);
	assert_int_equal(inb(&u, UART_IIR), 0x01);
	assert_int_equal(inb(&u, UART_LCR), 0);
	assert_int_equal(inb(&u, UART_MCR), 0);
	assert_int_equal(inb(&u, UART_LSR), 0x60);
	assert_int_equal(inb(&u, UART_MSR), 0xB0);
	assert_int_equal(inb(&u, UART_SCR), 0);
	assert_int_equal(inb(&u, UART_RBR), 0);		/* empty */
	outb(&u, UART_LCR, 0x80);
	assert_int_equal(inb(&u, UART_DLL), 1);
	assert_int_equal(inb(&u, UART_DLM), 0);
	assert_int_equal(uart_io(&u, COM1 - 1, 1, true, &v), -ENOENT);
	assert_int_equal(uart_io(&u, COM1 + 8, 1, true, &v), -ENOENT);
	assert_int_equal(uart_io(&u, 0x2F8, 1, true, &v), -ENOENT);
	assert_int_equal(wl.irq_calls, 0);
}

/* drivers/tty/serial/8250/8250_port.c autoconfig() and
 * autoconfig_16550a(), in the order Linux does them. */
static void test_linux_autoconfig(void **state)
{
	struct uart u;
	uint8_t scratch2, scratch3;

	(void)state;
	setup(&u);
	outb(&u, UART_IER, 0);
	scratch2 = inb(&u, UART_IER) & 0x0f;
	outb(&u, UART_IER, 0x0f);
	scratch3 = inb(&u, UART_IER) & 0x0f;
	outb(&u, UART_IER, 0);
	assert_int_equal(scratch2, 0);
	assert_int_equal(scratch3, 0x0f);
	/* Loopback check: MSR must mirror RTS|OUT2 as CTS|DCD. */
	outb(&u, UART_MCR, UART_MCR_LOOP | 0x0A);
	assert_int_equal(inb(&u, UART_MSR) & 0xf0, 0x90);
	outb(&u, UART_MCR, 0);
	/* Scratch register. */
	outb(&u, UART_SCR, 0xa5);
	assert_int_equal(inb(&u, UART_SCR), 0xa5);
	outb(&u, UART_SCR, 0x5a);
	assert_int_equal(inb(&u, UART_SCR), 0x5a);
	/* FIFO: IIR bits 7-6 = 3 means a working 16550A. */
	outb(&u, UART_FCR, UART_FCR_ENABLE);
	assert_int_equal(inb(&u, UART_IIR) >> 6, 3);
	outb(&u, UART_FCR, 0);
	/* Not an ST16C650 (no EFR behind LCR 0x80 or 0xBF). */
	outb(&u, UART_LCR, 0x80);
	assert_int_not_equal(inb(&u, UART_FCR), 0);
	outb(&u, UART_LCR, 0xBF);
	assert_int_not_equal(inb(&u, UART_FCR), 0);
	/* Not a 16750: the 64-byte FIFO bit (IIR bit 5) never sets. */
	outb(&u, UART_LCR, 0);
	outb(&u, UART_FCR, UART_FCR_ENABLE | 0x20);
	assert_int_equal(inb(&u, UART_IIR) >> 5, 6);
	outb(&u, UART_LCR, 0x80);
	outb(&u, UART_FCR, UART_FCR_ENABLE | 0x20);
	assert_int_equal(inb(&u, UART_IIR) >> 5, 6);
	outb(&u, UART_LCR, 0);
	/* Not XScale: IER bit 6 (UUE) does not stick. */
	outb(&u, UART_IER, 0x40);
	assert_int_equal(inb(&u, UART_IER) & 0x40, 0);
	outb(&u, UART_IER, 0);
	assert_int_not_equal(inb(&u, UART_LSR), 0xff);
}

/* serial8250_do_startup(): the THRE re-assert test and the TXEN test. */
static void test_linux_startup_thre_tests(void **state)
{
	struct uart u;
	uint8_t iir1, iir, lsr;

	(void)state;
	setup(&u);
	outb(&u, UART_FCR, 0x07);
	outb(&u, UART_LCR, 0x03);
	outb(&u, UART_MCR, UART_MCR_DTR | UART_MCR_RTS | UART_MCR_OUT2);
	assert_true(inb(&u, UART_LSR) & UART_LSR_THRE);
	outb(&u, UART_IER, UART_IER_THRI);
	iir1 = inb(&u, UART_IIR);
	outb(&u, UART_IER, 0);
	outb(&u, UART_IER, UART_IER_THRI);
	iir = inb(&u, UART_IIR);
	outb(&u, UART_IER, 0);
	assert_int_equal(iir1, 0xC2);
	assert_int_equal(iir, 0xC2);		/* re-asserted: no UART_BUG_THRE */
	outb(&u, UART_IER, UART_IER_THRI);
	lsr = inb(&u, UART_LSR);
	iir = inb(&u, UART_IIR);
	outb(&u, UART_IER, 0);
	assert_true(lsr & UART_LSR_TEMT);
	assert_false(iir & UART_IIR_NO_INT);	/* no UART_BUG_TXEN */
}

static void test_thre_interrupt(void **state)
{
	struct uart u;

	(void)state;
	setup(&u);
	outb(&u, UART_MCR, UART_MCR_OUT2);
	outb(&u, UART_IER, UART_IER_THRI);
	assert_int_equal(wl.level, 1);
	assert_int_equal(uart_iir(&u), 0x02);
	assert_int_equal(inb(&u, UART_IIR), 0x02);	/* clears it */
	assert_int_equal(wl.level, 0);
	assert_int_equal(inb(&u, UART_IIR), 0x01);
	/* The 8250 interrupt handler writes bytes: the line rises again. */
	outb(&u, UART_THR, 'a');
	outb(&u, UART_THR, 'b');
	assert_int_equal(wl.level, 1);
	assert_int_equal(wl.ntx, 2);
	assert_memory_equal(wl.tx, "ab", 2);
	/* IER writes that keep THRI set do not re-trigger. */
	assert_int_equal(inb(&u, UART_IIR), 0x02);
	outb(&u, UART_IER, UART_IER_THRI | UART_IER_RDI);
	assert_int_equal(inb(&u, UART_IIR), 0x01);
	/* __stop_tx(): THRI off drops the line. */
	outb(&u, UART_THR, 'c');
	assert_int_equal(wl.level, 1);
	outb(&u, UART_IER, UART_IER_RDI);
	assert_int_equal(wl.level, 0);
	/* No OUT2, no interrupt line (the PC wiring), though IIR says so. */
	outb(&u, UART_MCR, 0);
	outb(&u, UART_IER, UART_IER_THRI);
	assert_int_equal(wl.level, 0);
	assert_int_equal(uart_iir(&u), 0x02);
	outb(&u, UART_MCR, UART_MCR_OUT2);
	assert_int_equal(wl.level, 1);
	assert_int_equal(u.stats.tx_bytes, 3);
}

static void test_testguest_console(void **state)
{
	struct uart u;
	const char *msg = "TG hello\r\n";

	(void)state;
	setup(&u);
	/* guest/testguest/console.c tg_uart_init() */
	outb(&u, UART_IER, 0);
	outb(&u, UART_LCR, 0x80);
	outb(&u, UART_DLL, 1);
	outb(&u, UART_DLM, 0);
	outb(&u, UART_LCR, 0x03);
	outb(&u, UART_FCR, 0x07);
	outb(&u, UART_MCR, 0x0B);
	for (const char *c = msg; *c; c++) {
		assert_true(inb(&u, UART_LSR) & UART_LSR_THRE);
		outb(&u, UART_THR, (uint8_t)*c);
	}
	assert_int_equal(wl.ntx, strlen(msg));
	assert_memory_equal(wl.tx, msg, strlen(msg));
	assert_int_equal(wl.level, 0);		/* polled: no interrupts */
	/* tg_uart_enable_rx_irq() and tg_uart_irq(). */
	outb(&u, UART_IER, UART_IER_RDI);
	assert_true(uart_rx_push(&u, 'q'));
	assert_true(uart_rx_push(&u, '\r'));
	assert_int_equal(wl.level, 1);
	assert_int_equal(inb(&u, UART_LSR) & UART_LSR_DR, 1);
	assert_int_equal(inb(&u, UART_RBR), 'q');
	assert_int_equal(inb(&u, UART_RBR), '\r');
	assert_int_equal(inb(&u, UART_LSR) & UART_LSR_DR, 0);
	assert_int_equal(wl.level, 0);
}

static void test_rx_fifo_and_trigger(void **state)
{
	struct uart u;

	(void)state;
	setup(&u);
	outb(&u, UART_MCR, UART_MCR_OUT2);
	outb(&u, UART_FCR, 0xC7);		/* trigger at 14 */
	outb(&u, UART_IER, UART_IER_RDI);
	assert_true(uart_rx_push(&u, 0));
	assert_int_equal(inb(&u, UART_IIR), 0xCC);	/* time-out: below 14 */
	assert_int_equal(wl.level, 1);
	for (int i = 1; i < 14; i++)
		assert_true(uart_rx_push(&u, (uint8_t)i));
	assert_int_equal(inb(&u, UART_IIR), 0xC4);
	assert_true(uart_rx_push(&u, 14));
	assert_true(uart_rx_push(&u, 15));
	assert_int_equal(uart_rx_room(&u), 0);
	assert_false(uart_rx_push(&u, 16));	/* full: the console waits */
	assert_int_equal(inb(&u, UART_LSR) & UART_LSR_OE, 0);	/* no loss */
	for (int i = 0; i < 16; i++)
		assert_int_equal(inb(&u, UART_RBR), i);
	assert_int_equal(inb(&u, UART_IIR), 0xC1);
	assert_int_equal(wl.level, 0);
	/* FCR bit 1 empties the receiver. */
	assert_true(uart_rx_push(&u, 'x'));
	outb(&u, UART_FCR, 0xC3);
	assert_int_equal(inb(&u, UART_LSR) & UART_LSR_DR, 0);
	assert_int_equal(wl.level, 0);
	/* Other trigger levels. */
	outb(&u, UART_FCR, 0x41);
	for (int i = 0; i < 3; i++)
		assert_true(uart_rx_push(&u, 'y'));
	assert_int_equal(inb(&u, UART_IIR), 0xCC);
	assert_true(uart_rx_push(&u, 'y'));
	assert_int_equal(inb(&u, UART_IIR), 0xC4);
	outb(&u, UART_FCR, 0x81);
	assert_int_equal(inb(&u, UART_IIR), 0xCC);	/* 4 of 8 */
	assert_int_equal(u.stats.rx_bytes, 21);
}

static void test_non_fifo_mode(void **state)
{
	struct uart u;

	(void)state;
	setup(&u);
	outb(&u, UART_IER, UART_IER_RDI);
	assert_true(uart_rx_push(&u, 'a'));
	assert_false(uart_rx_push(&u, 'b'));	/* one holding register */
	assert_int_equal(inb(&u, UART_IIR), 0x04);
	assert_int_equal(inb(&u, UART_RBR), 'a');
	/* Enabling the FIFO clears it; disabling clears it again. */
	assert_true(uart_rx_push(&u, 'c'));
	outb(&u, UART_FCR, 0x01);
	assert_int_equal(inb(&u, UART_LSR) & 1, 0);
	assert_true(uart_rx_push(&u, 'd'));
	assert_true(uart_rx_push(&u, 'e'));
	outb(&u, UART_FCR, 0x00);
	assert_int_equal(inb(&u, UART_LSR) & 1, 0);
	assert_int_equal(inb(&u, UART_IIR), 0x01);
}

static void test_overrun_in_loopback(void **state)
{
	struct uart u;

	(void)state;
	setup(&u);
	outb(&u, UART_FCR, 0x01);
	outb(&u, UART_MCR, UART_MCR_LOOP | UART_MCR_OUT2);
	outb(&u, UART_IER, UART_IER_RDI | UART_IER_RLSI);
	assert_false(uart_rx_push(&u, 'z'));	/* line disconnected */
	for (int i = 0; i < 17; i++)
		outb(&u, UART_THR, (uint8_t)('A' + i));
	assert_int_equal(wl.ntx, 0);		/* nothing left the UART */
	assert_int_equal(u.stats.overruns, 1);
	assert_int_equal(inb(&u, UART_IIR), 0xC6);	/* line status first */
	assert_int_equal(wl.level, 0);		/* loopback cuts the IRQ */
	assert_int_equal(inb(&u, UART_LSR), 0x63);	/* DR, OE, THRE, TEMT */
	assert_int_equal(inb(&u, UART_LSR), 0x61);	/* OE cleared by the read */
	assert_int_equal(inb(&u, UART_IIR), 0xC4);
	for (int i = 0; i < 16; i++)
		assert_int_equal(inb(&u, UART_RBR), 'A' + i);	/* the 17th was lost */
	uart_rx_wire(&u, 'w');
	assert_int_equal(inb(&u, UART_RBR), 'w');
}

static void test_priority(void **state)
{
	struct uart u;

	(void)state;
	setup(&u);
	outb(&u, UART_FCR, 0x01);
	outb(&u, UART_MCR, UART_MCR_LOOP);
	(void)inb(&u, UART_MSR);		/* deltas of entering loopback */
	outb(&u, UART_IER, 0x0f);
	outb(&u, UART_MCR, UART_MCR_LOOP | UART_MCR_DTR);	/* DDSR */
	for (int i = 0; i < 17; i++)
		outb(&u, UART_THR, 'x');	/* data, overrun, THRE */
	assert_int_equal(uart_iir(&u), 0xC6);
	(void)inb(&u, UART_LSR);
	assert_int_equal(uart_iir(&u), 0xC4);
	for (int i = 0; i < 16; i++)
		(void)inb(&u, UART_RBR);
	assert_int_equal(inb(&u, UART_IIR), 0xC2);
	assert_int_equal(inb(&u, UART_IIR), 0xC0);	/* modem status */
	assert_int_equal(inb(&u, UART_MSR) & 0x0f, 0x02);
	assert_int_equal(inb(&u, UART_IIR), 0xC1);
}

static void test_loopback_modem_lines(void **state)
{
	struct uart u;
	uint8_t msr;

	(void)state;
	setup(&u);
	outb(&u, UART_MCR, UART_MCR_LOOP);
	msr = inb(&u, UART_MSR);
	assert_int_equal(msr & 0xf0, 0);	/* inputs follow MCR: all low */
	assert_int_equal(msr & 0x0f, 0x0b);	/* CTS, DSR, DCD fell */
	outb(&u, UART_MCR, UART_MCR_LOOP | UART_MCR_DTR | UART_MCR_RTS |
			       UART_MCR_OUT1 | UART_MCR_OUT2);
	assert_int_equal(inb(&u, UART_MSR), 0xf0 | 0x0b);	/* no TERI on rise */
	outb(&u, UART_MCR, UART_MCR_LOOP | UART_MCR_DTR | UART_MCR_RTS | UART_MCR_OUT2);
	assert_int_equal(inb(&u, UART_MSR), 0xb4);	/* RI fell: TERI */
	assert_int_equal(inb(&u, UART_MSR), 0xb0);	/* deltas cleared */
	outb(&u, UART_MCR, UART_MCR_OUT2);
	assert_int_equal(inb(&u, UART_MSR), 0xb0);	/* terminal again */
	/* DLAB: offset 0 and 1 are the divisor; no transmission. */
	outb(&u, UART_LCR, 0x83);
	outb(&u, UART_DLL, 0x0c);
	outb(&u, UART_DLM, 0x01);
	assert_int_equal(wl.ntx, 0);
	assert_int_equal(inb(&u, UART_DLL), 0x0c);
	assert_int_equal(inb(&u, UART_DLM), 0x01);
	outb(&u, UART_LCR, 0x03);
	assert_int_equal(inb(&u, UART_IER), 0);
	assert_int_equal(inb(&u, UART_LCR), 0x03);
	outb(&u, UART_LSR, 0xff);		/* ignored */
	assert_int_equal(inb(&u, UART_LSR), 0x60);
}

static void test_wide_access_and_memory_bound(void **state)
{
	struct uart u;
	uint32_t v;
	size_t before = sizeof(u);
	int taken = 0;

	(void)state;
	setup(&u);
	v = 0x0b03;				/* LCR=3, MCR=0x0b */
	assert_int_equal(uart_io(&u, COM1 + 3, 2, false, &v), 0);
	assert_int_equal(uart_io(&u, COM1 + 3, 2, true, &v), 0);
	assert_int_equal(v, 0x0b03);
	assert_int_equal(uart_io(&u, COM1 + 6, 4, true, &v), 0);
	assert_int_equal(v, 0xffff00b0);	/* MSR, SCR, then not the UART */
	assert_int_equal(uart_io(&u, COM1, 3, true, &v), -EINVAL);
	/* A guest that never reads: the console is refused, nothing grows. */
	for (int i = 0; i < 100000; i++)
		taken += uart_rx_push(&u, (uint8_t)i);
	assert_int_equal(taken, 1);		/* FIFO off: one byte */
	for (int i = 0; i < 100000; i++)
		outb(&u, UART_THR, (uint8_t)i);
	assert_int_equal(wl.ntx, 100000);
	assert_int_equal(sizeof(u), before);
}

/* Random register traffic and input from a fixed seed: always valid, and
 * the line the PIC sees always matches the UART's own view. */
static void test_fuzz(void **state)
{
	struct uart u;
	uint32_t v;

	(void)state;
	setup(&u);
	srand(16550);
	for (int i = 0; i < 300000; i++) {
		int op = rand() % 10;

		v = (uint32_t)rand();
		if (op < 7)
			assert_int_equal(uart_io(&u, (uint16_t)(COM1 + rand() % 8),
						 (uint8_t)(1u << (rand() % 3)), op & 1, &v), 0);
		else if (op == 7)
			uart_rx_wire(&u, (uint8_t)v);
		else
			(void)uart_rx_push(&u, (uint8_t)v);
		assert_true(uart_valid(&u));
		assert_int_equal(wl.level, u.irq_level);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reset_state),
		cmocka_unit_test(test_linux_autoconfig),
		cmocka_unit_test(test_linux_startup_thre_tests),
		cmocka_unit_test(test_thre_interrupt),
		cmocka_unit_test(test_testguest_console),
		cmocka_unit_test(test_rx_fifo_and_trigger),
		cmocka_unit_test(test_non_fifo_mode),
		cmocka_unit_test(test_overrun_in_loopback),
		cmocka_unit_test(test_priority),
		cmocka_unit_test(test_loopback_modem_lines),
		cmocka_unit_test(test_wide_access_and_memory_bound),
		cmocka_unit_test(test_fuzz),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
