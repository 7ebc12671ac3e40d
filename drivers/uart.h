/* SPDX-License-Identifier: BSD-2-Clause */
/* 16550 UART on an I/O port: ferry's console. */
#ifndef FERRY_DRIVERS_UART_H
#define FERRY_DRIVERS_UART_H

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>

struct uart {
	uint16_t port;
	uint32_t baud;
	bool present;
	char last;		/* last byte written, for LF -> CRLF */
};

int uart_init(struct uart *u, uint16_t port, uint32_t baud);
void uart_putc(struct uart *u, char c);
void uart_write(struct uart *u, const char *s, size_t n);	/* LF -> CRLF unless after CR */
int uart_getc(struct uart *u);		/* -1 when nothing is waiting */
void uart_enable_rx_irq(struct uart *u);

#endif
