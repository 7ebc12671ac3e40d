/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fatal errors in ferry itself.  panic() prints a report on the console
 * (bypassing locks other CPUs may hold), stops every other CPU and halts.
 */
#ifndef FERRY_HV_PANIC_H
#define FERRY_HV_PANIC_H

#include <stdint.h>

/* Stack frames followed by the backtrace lie in the kernel's upper half,
 * on the stack the report started from: above its stack pointer, within
 * PANIC_STACK_SPAN of it, each above the last.  newlib and BearSSL keep no
 * frame pointers, so RBP may hold any value there; one followed blindly
 * would fault inside the report and end it. */
#define PANIC_FRAME_MIN 0xffff800000000000ull
#define PANIC_STACK_SPAN (64u << 10)

static inline int panic_frame_ok(uint64_t rbp, uint64_t above, uint64_t sp)
{
	return rbp >= PANIC_FRAME_MIN && !(rbp & 7) && rbp >= above && rbp >= sp &&
	       rbp - sp < PANIC_STACK_SPAN - 16;
}

__attribute__((noreturn, format(printf, 1, 2)))
void panic(const char *fmt, ...);

/* Building blocks for reports with more detail (exception dumps). */
void panic_begin(void);
void panic_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void panic_backtrace(uint64_t rbp, uint64_t sp);	/* sp: the stack it is on */
unsigned int panic_cpu_index(void);
__attribute__((noreturn)) void panic_end(void);

/* Set by the APIC code: stop all other CPUs (NMI). */
extern void (*panic_stop_others)(void);
/* Set at boot: raw console output usable without locks. */
extern void (*panic_console)(const char *s, unsigned long n);

#define BUG_ON(c) do { if (c) panic("BUG at %s:%d: %s", __FILE__, __LINE__, #c); } while (0)

#endif
