/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * 16550 UART driver, polled for output and interrupt-driven or polled for
 * input.  Registers per the PC16550D datasheet.
 */
#include <errno.h>
#include <stdint.h>
#include "drivers/serial.h"
#include "arch/x86/cpu.h"
#include "hv/lib/time.h"

enum { RBR = 0, THR = 0, IER = 1, FCR = 2, LCR = 3, MCR = 4, LSR = 5, SCR = 7 };
#define LSR_DR		0x01
#define LSR_THRE	0x20
#define LCR_DLAB	0x80

/* 8N1 at the given baud rate, FIFOs on; -ENODEV when nothing answers. */
int serial_init(struct serial *u, uint16_t port, uint32_t baud)
{
	uint16_t div = baud ? 115200 / baud : 1;

	u->port = port;
	u->baud = baud;
	outb(port + SCR, 0x5a);
	u->present = inb(port + SCR) == 0x5a;
	if (!u->present)
		return -ENODEV;
	outb(port + IER, 0);
	u->ier = 0;
	outb(port + LCR, LCR_DLAB);
	outb(port + 0, div ? div & 0xff : 1);
	outb(port + 1, div >> 8);
	outb(port + LCR, 0x03);
	outb(port + FCR, 0x07);		/* enable and clear FIFOs */
	outb(port + MCR, 0x0b);		/* DTR, RTS, OUT2 (IRQ line) */
	return 0;
}

/*
 * Wait for room in the transmitter.  A slow reader (a terminal, a socket
 * under an emulator) must not lose output, so wait long; but a UART that
 * never drains must not hang ferry: after ~1 s the byte goes out anyway,
 * and until the UART has room again the next bytes do not wait (a panic
 * report through a stuck UART would take a second a byte).
 */
void serial_putc(struct serial *u, char c)
{
	uint64_t deadline = 0;

	if (!u->present)
		return;
	while (!(inb(u->port + LSR) & LSR_THRE)) {
		uint64_t now = rdtsc();
		if (u->stuck)
			break;
		if (!deadline)
			deadline = now + (tsc_hz() ? tsc_hz() : 1000000000);
		else if ((int64_t)(now - deadline) > 0) {
			u->stuck = true;
			break;
		}
		cpu_relax();
	}
	if (inb(u->port + LSR) & LSR_THRE)
		u->stuck = false;
	outb(u->port + THR, c);
}

void serial_write(struct serial *u, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\n' && u->last != '\r')
			serial_putc(u, '\r');
		serial_putc(u, s[i]);
		u->last = s[i];
	}
}

int serial_getc(struct serial *u)
{
	if (!u->present || !(inb(u->port + LSR) & LSR_DR))
		return -1;
	return inb(u->port + RBR);
}

/* IER: bit 0 received data available, bit 1 transmitter empty. */
static void set_ier(struct serial *u, uint8_t bit, bool on)
{
	uint8_t ier = on ? u->ier | bit : u->ier & ~bit;

	if (!u->present || ier == u->ier)
		return;
	u->ier = ier;
	outb(u->port + IER, ier);	/* enabling THRE with room raises it anew */
}

void serial_enable_rx_irq(struct serial *u)
{
	set_ier(u, 0x01, true);
}

void serial_tx_irq(struct serial *u, bool on)
{
	set_ier(u, 0x02, on);
}

/* Whether the transmitter takes a byte now without waiting. */
bool serial_tx_ready(struct serial *u)
{
	return !u->present || (inb(u->port + LSR) & LSR_THRE);
}

void serial_tx_byte(struct serial *u, char c)
{
	if (u->present)
		outb(u->port + THR, c);
}
