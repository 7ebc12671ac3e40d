/* SPDX-License-Identifier: BSD-2-Clause */
/* The console UART, its lock, and the raw path used by panic(). */
#include <stdarg.h>
#include <stdio.h>
#include "hv/console.h"
#include "hv/panic.h"
#include "hv/spinlock.h"
#include "drivers/serial.h"
#include "arch/x86/cpu.h"

static struct serial con;
static spinlock_t con_lock = SPINLOCK_INIT;

static void raw_write(const char *s, unsigned long n)
{
	serial_write(&con, s, n);
}

void console_init(uint16_t port, uint32_t baud)
{
	serial_init(&con, port, baud);
	panic_console = raw_write;
}

void console_write(const char *s, size_t n)
{
	uint64_t f = irq_save();

	spin_lock(&con_lock);
	serial_write(&con, s, n);
	spin_unlock(&con_lock);
	irq_restore(f);
}

void console_printf(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 1)
		n = sizeof(buf) - 1;
	if (n > 0)
		console_write(buf, n);
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
