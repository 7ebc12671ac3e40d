/* SPDX-License-Identifier: BSD-2-Clause */
/* kmain(): the boot CPU's path from GRUB's hand-over to the shell. */
#include <stdint.h>
#include <string.h>
#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/desc.h"
#include "arch/x86/percpu.h"
#include "arch/x86/smp.h"
#include "drivers/acpi.h"
#include "hv/console.h"
#include "hv/libc.h"
#include "hv/log.h"
#include "hv/panic.h"
#include "hv/time.h"
#include "hv/version.h"

void kmain(uint32_t magic, uint32_t info_pa);

static char early_heap[8 << 20] __attribute__((aligned(4096)));

static void log_to_console(const char *s, size_t n)
{
	console_write(s, n);
}

static void ap_idle(void)
{
	for (;;)
		cpu_idle();
}

void kmain(uint32_t magic, uint32_t info_pa)
{
	(void)magic; (void)info_pa;
	percpu_setup(0);
	time_init();
	console_init(0x3f8, 115200);
	log_set_sink(log_to_console);
	pic_disable();
	idt_init();
	idt_load();
	heap_init(early_heap, sizeof(early_heap));
	pr_info("ferry %s (%s) starting", ferry_version, ferry_gitrev);
	cpu_init_this();
	apic_calibrate();
	smp_start(ap_idle);
	irq_enable();
	pr_info("boot: %u CPUs online", cpus_online());
	ap_idle();
}
