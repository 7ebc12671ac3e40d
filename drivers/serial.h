/* SPDX-License-Identifier: BSD-2-Clause */
/* 16550 UART on an I/O port: ferry's console. */
#ifndef FERRY_DRIVERS_SERIAL_H
#define FERRY_DRIVERS_SERIAL_H

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>

struct serial {
	uint16_t port;
	uint32_t baud;
	bool present;
	char last;		/* last byte written, for LF -> CRLF */
	uint8_t ier;		/* interrupt enable register as written */
	bool stuck;		/* serial_putc timed out: no more waits until it drains */
};

int serial_init(struct serial *u, uint16_t port, uint32_t baud);
void serial_putc(struct serial *u, char c);
void serial_write(struct serial *u, const char *s, size_t n);	/* LF -> CRLF unless after CR */
int serial_getc(struct serial *u);		/* -1 when nothing is waiting */
void serial_enable_rx_irq(struct serial *u);
/* Non-blocking transmit, for a caller that queues output: whether
 * serial_tx_byte may write now, and an interrupt when there is room. */
bool serial_tx_ready(struct serial *u);
void serial_tx_byte(struct serial *u, char c);
void serial_tx_irq(struct serial *u, bool on);

#endif
