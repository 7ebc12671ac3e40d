/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Reset: the FADT reset register, then the keyboard controller, then a
 * triple fault.  Power-off: ACPI S5.
 */
#include "hv/console.h"
#include "hv/power.h"
#include "hv/lib/time.h"
#include "arch/x86/acpi.h"
#include "arch/x86/cpu.h"

void power_reboot(void)
{
	console_flush();		/* the last words reach the operator */
	acpi_reset();
	udelay(50000);
	outb(0x64, 0xfe);		/* 8042: pulse the reset line */
	udelay(50000);
	struct { uint16_t limit; uint64_t base; } __attribute__((packed)) none = { 0, 0 };
	__asm__ volatile("lidt %0; int3" : : "m"(none));	/* triple fault */
}

void power_off(void)
{
	console_flush();
	acpi_poweroff();
	udelay(100000);
}
