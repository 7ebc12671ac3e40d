/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The operator's console: one UART chosen by the command line.  Output is
 * serialised across CPUs; input is read by the shell (and, when attached,
 * forwarded to a guest's virtual UART).
 */
#ifndef FERRY_HV_CONSOLE_H
#define FERRY_HV_CONSOLE_H

#include <stddef.h>
#include <stdint.h>

/* Move the console to the UART at port (0, or -ENODEV: none answers there,
 * and the console stays where it was). */
int console_init(uint16_t port, uint32_t baud);
void console_write(const char *s, size_t n);	/* queued: never waits unless full */
size_t console_room(void);		/* bytes console_write takes now without waiting */
void console_poll(void);		/* move queued output to the UART (IRQ, idle loop) */
void console_flush(void);		/* wait until everything queued is out */
int console_getc(void);			/* -1 when no byte is waiting */
void console_enable_irq(void);
uint16_t console_port(void);
uint32_t console_baud(void);

#endif
