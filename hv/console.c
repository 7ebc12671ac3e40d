/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The console UART, its lock, and the raw path used by panic().
 *
 * Output goes into a ring that the UART drains as fast as it can take it:
 * from its transmit interrupt, from the shell CPU's background work
 * (console_poll) and from every write.  So a CPU that logs never waits
 * for the baud rate (a 100-character line is ~9 ms at 115200 baud, time a
 * migration's receiver or a vCPU exit handler should not spend), unless
 * the ring is full: then the writer waits for room with the lock dropped
 * and its interrupts as the caller had them (on, but for a caller that
 * turned them off), so a long write (`log`: 64 KiB, seconds at 115200
 * baud) holds no CPU deaf to IPIs and no other writer behind a held lock.
 * Nothing is lost unless the UART takes nothing at all for TX_STALL_US (a
 * virtual UART whose other end stopped reading, a BMC's with no one
 * attached): then what does not fit is dropped and counted, and a line
 * says so once it moves again, so that no CPU waits for ever.
 */
#include "hv/console.h"
#include <errno.h>
#include <stdio.h>
#include "hv/lib/heap.h"
#include "hv/lib/panic.h"
#include "hv/lib/spinlock.h"
#include "hv/lib/time.h"
#include "drivers/serial.h"
#include "arch/x86/cpu.h"

#define TX_RING 16384		/* a power of two */
#define TX_STALL_US 1000000	/* a UART that takes nothing this long: drop */

static struct serial con;
static spinlock_t con_lock = SPINLOCK_INIT;
static char tx[TX_RING];
static uint32_t tx_head, tx_tail;	/* (con_lock) bytes in: head - tail */
static char tx_last;			/* last byte queued, for LF -> CRLF */
static uint64_t tx_moved_us;		/* (con_lock) the UART last took a byte */
static bool tx_stuck;			/* (con_lock) it took none for TX_STALL_US */
static uint64_t tx_dropped, tx_noted;	/* (con_lock) bytes dropped, said so */

/* Move what the UART takes now; interrupt when it has room again. */
static void tx_kick(void)
{
	uint32_t tail = tx_tail;

	while (tx_tail != tx_head && serial_tx_ready(&con))
		serial_tx_byte(&con, tx[tx_tail++ % TX_RING]);
	if (tx_tail != tail) {
		tx_moved_us = time_now_us();
		tx_stuck = false;
	}
	serial_tx_irq(&con, tx_tail != tx_head);
}

/* Whether the UART took nothing in the TX_STALL_US since `since` (a wait's
 * start) or since it last took a byte, whichever is later.  Never before
 * the clock runs: time_now_us() is 0 until then. */
static bool tx_stalled(uint64_t since)
{
	uint64_t now = time_now_us();

	if (tx_moved_us > since)
		since = tx_moved_us;
	return now > since && now - since > TX_STALL_US;
}

/* Queue what fits of s[0..n), LF as CRLF; how many bytes of s went in. */
static size_t tx_fill(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		bool cr = s[i] == '\n' && tx_last != '\r';

		if (TX_RING - (tx_head - tx_tail) < (cr ? 2u : 1u))
			break;
		if (cr)
			tx[tx_head++ % TX_RING] = '\r';
		tx[tx_head++ % TX_RING] = s[i];
		tx_last = s[i];
	}
	return i;
}

/* Bytes were dropped and the ring has room again: say how many. */
static void tx_note_drops(void)
{
	char line[96];
	int n;

	if (tx_dropped == tx_noted || TX_RING - (tx_head - tx_tail) < sizeof(line))
		return;
	n = snprintf(line, sizeof(line), "\r\n[console: %lu bytes dropped: the serial line "
		     "took nothing for %u s]\r\n", (unsigned long)(tx_dropped - tx_noted),
		     TX_STALL_US / 1000000);
	tx_noted = tx_dropped;
	tx_fill(line, (size_t)n < sizeof(line) - 1 ? (size_t)n : sizeof(line) - 1);
}

/* panic(): what is queued first (unless the line took nothing for long:
 * then the message alone), then the message, waiting as needed. */
static void raw_write(const char *s, unsigned long n)
{
	if (tx_stuck)
		tx_tail = tx_head;
	while (tx_tail != tx_head)
		serial_putc(&con, tx[tx_tail++ % TX_RING]);
	serial_write(&con, s, n);
}

int console_init(uint16_t port, uint32_t baud)
{
	struct serial probe;

	if (con.present)
		console_flush();	/* what the old port has queued goes out there */
	/* a port where no UART answers is refused, and the console stays
	 * where it was: never a ferry that says nothing and hears nothing */
	if (serial_init(&probe, port, baud))
		return -ENODEV;
	con = probe;
	panic_console = raw_write;
	libc_set_output(console_write);
	return 0;
}

void console_write(const char *s, size_t n)
{
	uint64_t since = 0;
	bool first = true;

	while (n || first) {
		uint64_t f = irq_save();
		bool gave_up = false;
		size_t k;

		spin_lock(&con_lock);
		if (first)
			tx_note_drops();
		first = false;
		tx_kick();
		k = tx_fill(s, n);
		s += k;
		n -= k;
		tx_kick();
		if (n && !k) {			/* full, and the UART took nothing */
			if (!since)
				since = time_now_us();
			if (tx_stuck || tx_stalled(since)) {
				tx_stuck = true;	/* until it takes a byte again */
				tx_dropped += n;
				gave_up = true;
			}
		}
		spin_unlock(&con_lock);
		irq_restore(f);
		if (gave_up)
			return;
		if (n)
			cpu_relax();		/* the lock dropped meanwhile */
	}
}

size_t console_room(void)
{
	uint32_t used = __atomic_load_n(&tx_head, __ATOMIC_RELAXED) -
			__atomic_load_n(&tx_tail, __ATOMIC_RELAXED);

	return used < TX_RING ? (TX_RING - used) / 2 : 0;	/* each LF may be CRLF */
}

void console_poll(void)
{
	uint64_t f;

	if (tx_tail == tx_head)
		return;
	f = irq_save();
	spin_lock(&con_lock);
	tx_kick();
	if (!tx_stuck && tx_dropped != tx_noted) {	/* it moves again: say so */
		tx_note_drops();
		tx_kick();
	}
	spin_unlock(&con_lock);
	irq_restore(f);
}

void console_flush(void)
{
	uint64_t since = time_now_us();

	while (tx_tail != tx_head && !tx_stuck && !tx_stalled(since)) {
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
