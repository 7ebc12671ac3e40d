/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * testguest: 16550 UART on COM1 (0x3F8), polled output with a bounded wait,
 * interrupt-driven input (IRQ 4) into a small ring, read by the line, and a
 * printf subset:
 * %s %c %d %u %x %p, the l and ll length modifiers, width and 0 flag.
 */
#include <stdarg.h>

#include "guest/testguest/arch.h"
#include "guest/testguest/tg.h"

/* Register offsets and bits, from the PC16550D data sheet. */
#define COM1 0x3F8
#define UART_THR 0 /* transmit holding (write), receive buffer (read) */
#define UART_IER 1
#define UART_FCR 2
#define UART_LCR 3
#define UART_MCR 4
#define UART_LSR 5
#define UART_DLL 0 /* divisor latch, with LCR.DLAB set */
#define UART_DLM 1
#define LCR_8N1 0x03
#define LCR_DLAB 0x80
#define LSR_DR 0x01
#define LSR_THRE 0x20
#define IER_RDA 0x01
#define MCR_DTR_RTS_OUT2 0x0B
#define FCR_ENABLE_CLEAR 0x07

#define RX_RING 256

/* Receive ring: written by the IRQ 4 handler, read by the main loop. */
static volatile char rx_ring[RX_RING];
static volatile uint32_t rx_head, rx_tail;

void tg_uart_init(void)
{
	outb(COM1 + UART_IER, 0);
	outb(COM1 + UART_LCR, LCR_DLAB);
	outb(COM1 + UART_DLL, 1); /* 115200 baud */
	outb(COM1 + UART_DLM, 0);
	outb(COM1 + UART_LCR, LCR_8N1);
	outb(COM1 + UART_FCR, FCR_ENABLE_CLEAR);
	outb(COM1 + UART_MCR, MCR_DTR_RTS_OUT2);
}

/* Waits for THRE a bounded time, so that a UART model that never reports
 * an empty transmitter slows the guest down instead of hanging it. */
void tg_putc(char c)
{
	int spins = 100000;

	while (!(inb(COM1 + UART_LSR) & LSR_THRE) && --spins)
		cpu_relax();
	outb(COM1 + UART_THR, (uint8_t)c);
}

void tg_uart_enable_rx_irq(void)
{
	outb(COM1 + UART_IER, IER_RDA);
	tg_pic_unmask(4);
}

void tg_uart_irq(void)
{
	while (inb(COM1 + UART_LSR) & LSR_DR) {
		char c = (char)inb(COM1 + UART_THR);

		if (rx_head - rx_tail < RX_RING)
			rx_ring[rx_head++ % RX_RING] = c;
	}
}

int tg_uart_getc(void)
{
	int c;

	if (rx_tail == rx_head)
		return -1;
	c = (unsigned char)rx_ring[rx_tail % RX_RING];
	rx_tail++;
	return c;
}

/* Collects one non-empty line (CR or LF ends it), halting with interrupts
 * on while none comes; returns its length (the line is NUL-terminated). */
int tg_read_line(char *line, int max)
{
	int n = 0, c;

	for (;;) {
		cli();
		c = tg_uart_getc();
		if (c < 0) {
			sti_hlt();
			continue;
		}
		sti();
		if (c == '\r' || c == '\n') {
			if (n)
				break;
			continue;
		}
		if (n < max - 1)
			line[n++] = (char)c;
	}
	line[n] = 0;
	return n;
}

static void put_str(const char *s)
{
	for (; *s; s++) {
		if (*s == '\n')
			tg_putc('\r');
		tg_putc(*s);
	}
}

/* One conversion's formatting state. */
struct fmt_spec {
	int width;
	bool zero;
	int longs; /* number of 'l' modifiers */
};

static void put_number(uint64_t v, unsigned base, bool neg,
		       const struct fmt_spec *sp)
{
	char buf[24];
	int n = 0;

	do {
		buf[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	if (neg && sp->zero)
		tg_putc('-');
	for (int w = n + neg; w < sp->width; w++)
		tg_putc(sp->zero ? '0' : ' ');
	if (neg && !sp->zero)
		tg_putc('-');
	while (n)
		tg_putc(buf[--n]);
}

static uint64_t fetch_unsigned(va_list *ap, int longs)
{
	if (longs >= 2)
		return va_arg(*ap, unsigned long long);
	if (longs == 1)
		return va_arg(*ap, unsigned long);
	return va_arg(*ap, unsigned int);
}

static int64_t fetch_signed(va_list *ap, int longs)
{
	if (longs >= 2)
		return va_arg(*ap, long long);
	if (longs == 1)
		return va_arg(*ap, long);
	return va_arg(*ap, int);
}

static void put_conversion(char conv, va_list *ap, const struct fmt_spec *sp)
{
	int64_t s;

	switch (conv) {
	case 'd':
		s = fetch_signed(ap, sp->longs);
		put_number(s < 0 ? -(uint64_t)s : (uint64_t)s, 10, s < 0, sp);
		break;
	case 'u':
		put_number(fetch_unsigned(ap, sp->longs), 10, false, sp);
		break;
	case 'x':
		put_number(fetch_unsigned(ap, sp->longs), 16, false, sp);
		break;
	case 'p':
		put_str("0x");
		put_number((uintptr_t)va_arg(*ap, void *), 16, false, sp);
		break;
	case 's':
		put_str(va_arg(*ap, const char *));
		break;
	case 'c':
		tg_putc((char)va_arg(*ap, int));
		break;
	default:
		tg_putc('%');
		tg_putc(conv);
	}
}

static const char *parse_spec(const char *f, struct fmt_spec *sp)
{
	sp->width = 0;
	sp->zero = (*f == '0');
	sp->longs = 0;
	while (*f >= '0' && *f <= '9')
		sp->width = sp->width * 10 + (*f++ - '0');
	while (*f == 'l') {
		sp->longs++;
		f++;
	}
	return f;
}

void tg_printf(const char *fmt, ...)
{
	struct fmt_spec sp;
	va_list ap;

	va_start(ap, fmt);
	for (; *fmt; fmt++) {
		if (*fmt != '%') {
			if (*fmt == '\n')
				tg_putc('\r');
			tg_putc(*fmt);
			continue;
		}
		if (*++fmt == '%') {
			tg_putc('%');
			continue;
		}
		fmt = parse_spec(fmt, &sp);
		if (!*fmt)
			break;
		put_conversion(*fmt, &ap, &sp);
	}
	va_end(ap);
}
