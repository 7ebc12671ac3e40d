/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * testguest: the interfaces shared by the files of the freestanding
 * multiboot1 test guest.  Every file's exports are listed under its name.
 * See guest/testguest/README.md for the command line and output format.
 */
#ifndef TG_H
#define TG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TG_PAGE 4096u
#define TG_MIB (1024u * 1024u)
/* Highest physical address the guest uses as RAM (paging off, below the
 * 32-bit PCI/MMIO hole). */
#define TG_RAM_LIMIT 0xC0000000u

/* Ferry's guest control port (see README.md): outw(TG_CTL_PORT, cmd). */
#define TG_CTL_PORT 0x504
#define TG_CTL_POWEROFF 0x2000
/* QEMU's isa-debug-exit device, used as a fallback on bare QEMU. */
#define TG_QEMU_EXIT_PORT 0xf4

/* entry.S */
extern char __image_start[], __image_end[];
extern void (*const tg_isr_table[48])(void);
/* Runs fn(arg); returns -1 when it returned normally, or the exception
 * vector that interrupted it (see tg_caught for the details). */
int tg_catch(void (*fn)(void *), void *arg);
/* Called by the trap handler only: unwinds to the armed tg_catch. */
__attribute__((noreturn)) void tg_catch_resume(int vector);
extern uint32_t tg_catch_esp; /* non-zero while a tg_catch is armed */

/* lib.c */
void *memset(void *d, int c, size_t n);
void *memcpy(void *d, const void *s, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
uint64_t __udivdi3(uint64_t n, uint64_t d);
uint64_t __umoddi3(uint64_t n, uint64_t d);
uint64_t __udivmoddi4(uint64_t n, uint64_t d, uint64_t *rem);
bool tg_parse_u32(const char *s, uint32_t *out);
uint32_t tg_xorshift32(uint32_t *state);
uint32_t tg_mix32(uint32_t x);

/* console.c: 16550 UART at 0x3F8 */
void tg_uart_init(void);
void tg_putc(char c);
__attribute__((format(printf, 1, 2))) void tg_printf(const char *fmt, ...);
void tg_uart_enable_rx_irq(void);
void tg_uart_irq(void);
int tg_uart_getc(void); /* -1 when the receive ring is empty */
int tg_read_line(char *line, int max); /* needs tg_uart_enable_rx_irq, sti */

/* trap.c: GDT, IDT, exceptions */
struct trap_frame {
	uint32_t edi, esi, ebp, esp0, ebx, edx, ecx, eax; /* pusha */
	uint32_t vector, err;
	uint32_t eip, cs, eflags; /* pushed by the CPU */
};

/* What the last exception caught by tg_catch was. */
struct tg_caught {
	uint32_t vector, err, eip, cr2;
	uint32_t dr6;	/* #DB only, read in the handler (which then clears it) */
};
extern struct tg_caught tg_caught;
void tg_trap_init(void);
/* A mode that uses its local APIC: vectors TG_APIC_VEC_FIRST to
 * TG_IPI_VECTOR (IRQs 12-14, masked at the 8259) and NMIs go to
 * tg_apic_handler(vector) when it is set. */
#define TG_APIC_VEC_FIRST 0x2C
#define TG_IPI_VECTOR 0x2E
#define TG_NMI_VECTOR 2
extern void (*volatile tg_apic_handler)(int vector);
void tg_trap(struct trap_frame *f);
const char *tg_vector_name(int vector);

/* timer.c: 8259 PIC and 8254 PIT */
#define TG_HZ 100u
extern volatile uint32_t tg_ticks;
void tg_pic_init(void);
void tg_pic_unmask(int irq);
void tg_pic_eoi(int irq);
void tg_timer_start(void);
void tg_timer_hz(uint32_t hz); /* tg_ticks then count at hz, not TG_HZ */
void tg_wait_tick_edge(void);
void tg_wait_ticks(uint32_t n);
uint64_t tg_tsc_per_tick(void);

/* main.c: boot information, options, power */
struct tg_boot {
	uint32_t mem_lower_kib, mem_upper_kib; /* 0 when not given */
	bool have_mem;
	uint32_t ram_end;  /* first byte past usable RAM above 1 MiB */
	uint32_t free_start; /* first page past the guest image */
	uint64_t high_end; /* end of RAM from 4 GiB up (memory map); 0: none */
};
extern struct tg_boot tg_boot;
uint32_t tg_opt_u32(const char *key, uint32_t def);
const char *tg_opt_str(const char *key); /* NULL when absent */
bool tg_opt_has(const char *key);
bool tg_list_has(const char *list, const char *name);
__attribute__((noreturn)) void tg_poweroff(void);
__attribute__((noreturn)) void tg_halt_forever(void);

/* mode_bench.c: one unit of the `work` loop (also smp's worker) */
uint32_t tg_work_unit(uint32_t *state);

/* smp_tramp.S: the application processors' real-mode start, copied below
 * 1 MiB by mode_smp.c; tg_tramp_gdt is where the copy wants the GDT
 * pointer (6 bytes, as SGDT stores it). */
extern char tg_tramp_start[], tg_tramp_gdt[], tg_tramp_end[];
extern uint32_t tg_smp_ap_stack; /* the starting AP's initial ESP */
__attribute__((noreturn)) void tg_smp_ap_main(void);

/* The modes: one file each, all noreturn. */
__attribute__((noreturn)) void mode_hello(void);
__attribute__((noreturn)) void mode_echo(void);
__attribute__((noreturn)) void mode_crash(void);
__attribute__((noreturn)) void mode_memtest(void);
__attribute__((noreturn)) void mode_heartbeat(void);
__attribute__((noreturn)) void mode_tickrate(void);
__attribute__((noreturn)) void mode_fpu(void);
__attribute__((noreturn)) void mode_exits(void);
__attribute__((noreturn)) void mode_work(void);
__attribute__((noreturn)) void mode_share(void);
__attribute__((noreturn)) void mode_hostile(void);
__attribute__((noreturn)) void mode_vqhostile(void);
__attribute__((noreturn)) void mode_netflood(void);
__attribute__((noreturn)) void mode_netbeat(void);
__attribute__((noreturn)) void mode_dirty(void);
__attribute__((noreturn)) void mode_spin(void);
__attribute__((noreturn)) void mode_triplefault(void);
__attribute__((noreturn)) void mode_ipiflood(void);
__attribute__((noreturn)) void mode_smp(void);

#endif
