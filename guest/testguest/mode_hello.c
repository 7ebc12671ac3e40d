/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * testguest modes "hello" (greeting, memory size and CPU identity, then
 * power off), "echo" (serial input through IRQ 4, one line back per line
 * in; the line "quit" powers off), "crash" (an exception nobody catches,
 * to check the TG EXC report: crash [kind=ud|gp|de]), and two that never
 * come back: "spin" (a CPU-bound loop with interrupts off, for ever) and
 * "triplefault" (an exception with an empty IDT: the CPU shuts down).
 */
#include "guest/testguest/arch.h"
#include "guest/testguest/tg.h"

#define CPUID_1_ECX_HYPERVISOR (1u << 31)
#define LINE_MAX 120

static void print_cpu(void)
{
	struct cpuid_regs r = cpuid(0, 0);
	uint32_t vendor[4] = { r.ebx, r.edx, r.ecx, 0 };
	uint32_t hv[4] = { 0 };
	bool hv_bit = cpuid(1, 0).ecx & CPUID_1_ECX_HYPERVISOR;

	if (hv_bit) {
		r = cpuid(0x40000000, 0);
		hv[0] = r.ebx;
		hv[1] = r.ecx;
		hv[2] = r.edx;
	}
	tg_printf("TG cpu vendor=%s hypervisor=%d hv_signature=\"%s\"\n",
		  (const char *)vendor, hv_bit, (const char *)hv);
}

void mode_hello(void)
{
	tg_printf("TG hello from testguest\n");
	tg_printf("TG mem lower_kib=%u upper_kib=%u total_mib=%u\n",
		  tg_boot.mem_lower_kib, tg_boot.mem_upper_kib,
		  (tg_boot.mem_upper_kib + 1024) / 1024);
	print_cpu();
	tg_poweroff();
}

void mode_echo(void)
{
	char line[LINE_MAX];
	uint32_t count = 0;

	tg_uart_enable_rx_irq();
	sti();
	tg_printf("TG echo ready\n");
	for (;;) {
		tg_read_line(line, sizeof(line));
		tg_printf("TG echo line=%u text=%s\n", ++count, line);
		if (!strcmp(line, "quit"))
			tg_poweroff();
	}
}

void mode_crash(void)
{
	const char *kind = tg_opt_str("kind");
	uint32_t a = 1, d = 0;

	tg_printf("TG crash kind=%s\n", kind ? kind : "ud");
	if (kind && !strcmp(kind, "gp"))
		__asm__ volatile("mov %0, %%ds" : : "r"(0x1234) : "memory");
	else if (kind && !strcmp(kind, "de"))
		__asm__ volatile("divl %2" : "+a"(a), "+d"(d) : "r"(0u));
	else
		__asm__ volatile("ud2");
	tg_printf("TG FAIL crash survived\n");
	tg_poweroff();
}

/* Interrupts off and no exits: only the host's timer can take the CPU
 * back from this guest. */
void mode_spin(void)
{
	__asm__ volatile("cli\n1:\tjmp 1b" : : : "memory");
	__builtin_unreachable();
}

/* INT3 with an IDT of limit 0: #GP for the missing gate, #DF for that
 * one's, then shutdown (SDM Vol. 3A 6.15, "Interrupt 8"). */
void mode_triplefault(void)
{
	static const struct {
		uint16_t limit;
		uint32_t base;
	} __attribute__((packed)) empty = { 0, 0 };

	__asm__ volatile("cli; lidt %0; int3" : : "m"(empty) : "memory");
	tg_printf("TG FAIL triplefault survived\n");
	tg_poweroff();
}
