/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The console UART, its lock, and the raw path used by panic().
 *
 * Output goes into a ring that the UART drains as fast as it can take it:
 * from its transmit interrupt, from the shell CPU's background work
 * (console_poll) and from every write.  So a CPU that logs never waits
 * for the baud rate (a 100-character line is ~9 ms at 115200 baud, time a
 * migration's receiver or a vCPU exit handler should not spend), unless
 * the ring is full: then the writer drains it itself, and nothing is lost.
 */
#include "hv/console.h"
#include "hv/lib/heap.h"
#include "hv/lib/panic.h"
#include "hv/lib/spinlock.h"
#include "drivers/serial.h"
#include "arch/x86/cpu.h"

#define TX_RING 16384		/* a power of two */

static struct serial con;
static spinlock_t con_lock = SPINLOCK_INIT;
static char tx[TX_RING];
static uint32_t tx_head, tx_tail;	/* (con_lock) bytes in: head - tail */
static char tx_last;			/* last byte queued, for LF -> CRLF */

/* Move what the UART takes now; interrupt when it has room again. */
static void tx_kick(void)
{
	while (tx_tail != tx_head && serial_tx_ready(&con))
		serial_tx_byte(&con, tx[tx_tail++ % TX_RING]);
	serial_tx_irq(&con, tx_tail != tx_head);
}

static void tx_put(char c)
{
	while (tx_head - tx_tail == TX_RING) {	/* full: drain it ourselves */
		tx_kick();
		cpu_relax();
	}
	tx[tx_head++ % TX_RING] = c;
	tx_last = c;
}

/* panic(): what is queued first, then the message, waiting as needed. */
static void raw_write(const char *s, unsigned long n)
{
	while (tx_tail != tx_head)
		serial_putc(&con, tx[tx_tail++ % TX_RING]);
	serial_write(&con, s, n);
}

void console_init(uint16_t port, uint32_t baud)
{
	if (con.present)
		console_flush();	/* what the old port has queued goes out there */
	serial_init(&con, port, baud);
	panic_console = raw_write;
	libc_set_output(console_write);
}

void console_write(const char *s, size_t n)
{
	uint64_t f = irq_save();

	spin_lock(&con_lock);
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\n' && tx_last != '\r')
			tx_put('\r');
		tx_put(s[i]);
	}
	tx_kick();
	spin_unlock(&con_lock);
	irq_restore(f);
}

void console_poll(void)
{
	uint64_t f;

	if (tx_tail == tx_head)
		return;
	f = irq_save();
	spin_lock(&con_lock);
	tx_kick();
	spin_unlock(&con_lock);
	irq_restore(f);
}

void console_flush(void)
{
	while (tx_tail != tx_head) {
		console_poll();
		cpu_relax();
	}
}

int console_getc(void)
{
	return serial_getc(&con);
}

void console_enable_irq(void)
{
	serial_enable_rx_irq(&con);
}

uint16_t console_port(void) { return con.port; }
uint32_t console_baud(void) { return con.baud; }
