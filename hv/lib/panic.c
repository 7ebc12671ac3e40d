/* SPDX-License-Identifier: BSD-2-Clause */
/* panic(): the one way ferry stops itself. */
#include <stdarg.h>
#include <stdio.h>
#include "hv/lib/cpu.h"
#include "hv/lib/panic.h"
#include "arch/x86/cpu.h"

void (*panic_stop_others)(void);
void (*panic_console)(const char *s, unsigned long n);
static volatile int panicking;

static void __attribute__((noreturn)) halt_forever(void)
{
	for (;;) {
		irq_disable();
		cpu_halt();
	}
}

unsigned int panic_cpu_index(void)
{
	return lib_cpu_index();
}

void panic_printf(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 1)
		n = sizeof(buf) - 1;
	if (panic_console && n > 0)
		panic_console(buf, n);
}

/* The first CPU to panic reports; any other one just stops. */
void panic_begin(void)
{
	irq_disable();
	if (__atomic_exchange_n(&panicking, 1, __ATOMIC_SEQ_CST))
		halt_forever();
	if (panic_stop_others)
		panic_stop_others();
}

void panic_backtrace(uint64_t rbp, uint64_t sp)
{
	uint64_t above = sp;

	panic_printf("  backtrace:");
	for (int i = 0; i < 16 && panic_frame_ok(rbp, above, sp); i++) {
		uint64_t *frame = (uint64_t *)rbp;

		panic_printf(" %lx", frame[1]);
		above = rbp + 16;
		rbp = frame[0];
	}
	panic_printf("\n");
}

void panic_end(void)
{
	panic_printf("ferry: stopped. Reset the machine to continue.\n");
	halt_forever();
}

void panic(const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	panic_begin();
	panic_printf("\nferry: PANIC on CPU %u: %s\n", panic_cpu_index(), buf);
	panic_backtrace((uint64_t)__builtin_frame_address(0), (uint64_t)__builtin_frame_address(0));
	panic_end();
}
