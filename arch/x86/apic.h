/* SPDX-License-Identifier: BSD-2-Clause */
/* Local APIC (x2APIC or xAPIC, Intel SDM Vol. 3A ch. 11) and I/O APIC. */
#ifndef FERRY_ARCH_X86_APIC_H
#define FERRY_ARCH_X86_APIC_H

#include <stdbool.h>
#include <stdint.h>

#define VEC_TIMER	0xf0	/* local APIC timer: scheduler tick */
#define VEC_KICK	0xf1	/* IPI: look at your run queue / leave the guest */
#define VEC_STOP	0xf2	/* IPI: stop (panic, power off) */
#define VEC_VMX_RELEASE	0xf3	/* IPI: VMCLEAR a VMCS active on this CPU (arch/x86/vmx) */
#define VEC_SPURIOUS	0xff
#define VEC_IRQ_BASE	0x30	/* ISA IRQ n arrives at VEC_IRQ_BASE + n */

#define TIMER_HZ	250

void apic_init_this_cpu(void);	/* enable, spurious vector, the timer's tick */
/* Wake this CPU by its timer at host time ns (time_now_ns), if that is
 * within two ticks; the earliest asked for holds until it is served.
 * Asked again before each guest entry and idle.  A time already past
 * fires at once, and says so (true).  Wakes come at most TICKWAKE_MIN_GAP
 * apart, whatever a guest's timers ask for.  Interrupts off. */
bool apic_timer_wake_at_ns(uint64_t ns);
void apic_calibrate(void);	/* boot CPU: measure the timer and the TSC */
void apic_eoi(void);
uint32_t apic_id(void);
bool apic_x2apic(void);		/* x2APIC mode (after the boot CPU's init) */
void apic_send_ipi(uint32_t apic_id, uint8_t vector);
void apic_send_init_sipi(uint32_t apic_id, uint32_t trampoline_pa);
void apic_stop_others(void);
void apic_send_nmi(uint32_t apic_id);
void pic_disable(void);
/* dest_apic above 255 cannot be an I/O APIC destination (no interrupt
 * remapping): the line is left as it was. */
void ioapic_route_isa(unsigned int irq, uint8_t vector, uint32_t dest_apic);
/* A PCI device's line (its config-space interrupt line, 1-15): level
 * triggered.  False when there is no I/O APIC pin for it. */
bool ioapic_route_pci(unsigned int irq, uint8_t vector, uint32_t dest_apic);
void ioapic_mask(unsigned int irq);

#endif
