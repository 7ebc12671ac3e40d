/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Local APIC: enable, calibrate its timer against the PIT, the tick on every
 * CPU, IPIs (including INIT-SIPI-SIPI for SMP bring-up); and routing of ISA
 * interrupts through the I/O APIC the MADT describes.
 *
 * The timer runs one-shot, armed each time for the CPU's next tick
 * (TIMER_HZ: timer_ticks counts those only) or the wake that
 * apic_timer_wake_at_ns() asked for, whichever arch/x86/tickwake.h says,
 * so that a guest's timer is served when it is due, not at the next tick
 * (a halted vCPU's, or a running one's that makes no exit of its own).
 *
 * x2APIC mode where the CPU has it (CPUID.1:ECX[21]; Intel SDM Vol. 3A
 * 11.12): registers are MSRs 0x800 + offset / 16, the ICR is one 64-bit
 * MSR with a 32-bit destination, and APIC ids are 32 bits.  xAPIC (MMIO,
 * 8-bit ids) otherwise.  The boot CPU decides once; every CPU then
 * switches itself in apic_init_this_cpu().
 */
#include <stdbool.h>
#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/desc.h"
#include "arch/x86/mm.h"
#include "arch/x86/paging_host.h"
#include "arch/x86/percpu.h"
#include "arch/x86/acpi.h"
#include "arch/x86/tickwake.h"
#include "hv/lib/log.h"
#include "hv/lib/panic.h"
#include "hv/lib/time.h"

enum {
	LAPIC_ID = 0x20, LAPIC_EOI = 0xb0, LAPIC_SVR = 0xf0, LAPIC_ESR = 0x280,
	LAPIC_ICR_LO = 0x300, LAPIC_ICR_HI = 0x310, LAPIC_LVT_TIMER = 0x320,
	LAPIC_LVT_LINT0 = 0x350, LAPIC_LVT_LINT1 = 0x360, LAPIC_TIMER_INIT = 0x380,
	LAPIC_TIMER_CUR = 0x390, LAPIC_TIMER_DIV = 0x3e0,
};
#define LVT_MASKED	(1u << 16)
#define APIC_BASE_EXTD	(1u << 10)	/* IA32_APIC_BASE: x2APIC mode */
#define APIC_BASE_EN	(1u << 11)	/* IA32_APIC_BASE: global enable */
#define MSR_X2APIC_BASE	0x800u
#define MSR_X2APIC_ICR	0x830u
#define CPUID1_X2APIC	(1u << 21)
#define LVT_PERIODIC	(1u << 17)
#define ICR_PENDING	(1u << 12)

static volatile uint32_t *lapic;	/* xAPIC registers; NULL in x2APIC mode */
static bool x2apic;			/* set once by the boot CPU */
static bool apic_ready;
static uint32_t timer_per_tick;		/* timer counts per 1/TIMER_HZ s */
static uint64_t tsc_per_tick;		/* TSC cycles per 1/TIMER_HZ s; 0: periodic */

static uint32_t lapic_read(uint32_t reg)
{
	return x2apic ? (uint32_t)rdmsr(MSR_X2APIC_BASE + reg / 16) : lapic[reg / 4];
}

static void lapic_write(uint32_t reg, uint32_t v)
{
	if (x2apic)
		wrmsr(MSR_X2APIC_BASE + reg / 16, v);
	else
		lapic[reg / 4] = v;
}

bool apic_x2apic(void)
{
	return x2apic;
}

uint32_t apic_id(void)
{
	return x2apic ? lapic_read(LAPIC_ID) : lapic_read(LAPIC_ID) >> 24;
}

void apic_eoi(void)
{
	lapic_write(LAPIC_EOI, 0);
}

/* Fire at TSC at (at most a tick and its slack from now; at once if it is
 * past).  The count rounds up: firing early would cost an interrupt for
 * nothing. */
static void timer_arm(struct percpu *c, uint64_t at, uint64_t now)
{
	uint64_t delta = at > now ? at - now : 0, max = tsc_per_tick + TICKWAKE_SLACK(tsc_per_tick);
	uint64_t counts;

	if (delta > max)
		delta = max;
	counts = (delta * timer_per_tick + tsc_per_tick - 1) / tsc_per_tick;
	c->timer_armed_tsc = now + delta;
	lapic_write(LAPIC_TIMER_INIT, counts ? (uint32_t)counts : 1);	/* 0 would stop it */
}

static void timer_irq(struct trap_frame *tf)
{
	struct percpu *c = this_cpu();
	uint64_t now, woke;

	(void)tf;
	if (!tsc_per_tick) {		/* periodic, before the calibration */
		c->timer_ticks++;
		apic_eoi();
		return;
	}
	now = rdtsc();
	woke = c->timer.woke;
	if (tickwake_fired(&c->timer, now, tsc_per_tick))
		c->timer_ticks++;
	if (c->timer.woke != woke)
		c->timer_wakes++;
	timer_arm(c, tickwake_next(&c->timer, tsc_per_tick), now);
	apic_eoi();
}

bool apic_timer_wake_at_ns(uint64_t ns)
{
	struct percpu *c = this_cpu();
	uint64_t now_ns = time_now_ns(), now = rdtsc(), next;
	bool due = ns <= now_ns;

	if (!tsc_per_tick)
		return due;
	if (!due && ns - now_ns >= 2000000000ull / TIMER_HZ)
		return false;	/* a tick comes first, and it is asked again */
	tickwake_ask(&c->timer, due ? now : now + (ns - now_ns) * tsc_hz() / 1000000000ull,
		     tsc_per_tick);
	next = tickwake_next(&c->timer, tsc_per_tick);
	if (next != c->timer_armed_tsc)
		timer_arm(c, next, now);
	return due;
}

/* One-shot from now on, the first tick a tick away. */
static void timer_start_oneshot(void)
{
	struct percpu *c = this_cpu();
	uint64_t now = rdtsc();

	c->timer = (struct tickwake){ .tick_due = now + tsc_per_tick };
	lapic_write(LAPIC_LVT_TIMER, VEC_TIMER);
	timer_arm(c, c->timer.tick_due, now);
}

static void stop_irq(struct trap_frame *tf)
{
	(void)tf;
	for (;;) {
		irq_disable();
		cpu_halt();
	}
}

static void kick_irq(struct trap_frame *tf)
{
	(void)tf;
	apic_eoi();
}

static void spurious_irq(struct trap_frame *tf)
{
	(void)tf;	/* no EOI for the spurious vector */
}

/* Boot CPU, once: the mode, the xAPIC mapping, the vectors. */
static void apic_setup(uint64_t base)
{
	x2apic = cpuid(1, 0).ecx & CPUID1_X2APIC;
	if (!x2apic) {
		lapic = ioremap(base & ~0xffful, 4096);
		if (!lapic)
			panic("apic: cannot map the local APIC at %#lx", base & ~0xffful);
	}
	irq_register(VEC_TIMER, timer_irq);
	irq_register(VEC_KICK, kick_irq);
	irq_register(VEC_STOP, stop_irq);
	irq_register(VEC_SPURIOUS, spurious_irq);
	panic_stop_others = apic_stop_others;
	apic_ready = true;
	pr_info("apic: %s mode", x2apic ? "x2APIC" : "xAPIC");
}

/* SDM 11.12.5: x2APIC is entered from xAPIC mode (EN, then EN|EXTD). */
static void apic_enable(uint64_t base)
{
	base |= APIC_BASE_EN;
	wrmsr(MSR_APIC_BASE, base);
	if (x2apic && !(base & APIC_BASE_EXTD))
		wrmsr(MSR_APIC_BASE, base | APIC_BASE_EXTD);
}

void apic_init_this_cpu(void)
{
	uint64_t base = rdmsr(MSR_APIC_BASE);

	if (!apic_ready)
		apic_setup(base);
	apic_enable(base);
	lapic_write(LAPIC_SVR, 0x100 | VEC_SPURIOUS);	/* software enable */
	lapic_write(LAPIC_ESR, 0);
	if (this_cpu()->index != 0) {
		lapic_write(LAPIC_LVT_LINT0, LVT_MASKED);
		lapic_write(LAPIC_LVT_LINT1, LVT_MASKED);
	}
	lapic_write(LAPIC_TIMER_DIV, 0x3);		/* divide by 16 */
	if (tsc_per_tick) {
		timer_start_oneshot();
	} else {	/* the boot CPU, until apic_calibrate */
		lapic_write(LAPIC_LVT_TIMER, VEC_TIMER | LVT_PERIODIC);
		lapic_write(LAPIC_TIMER_INIT, 1000000);
	}
	this_cpu()->apic_id = apic_id();
}

/* Measure the APIC timer against 20 ms of the (calibrated) TSC. */
void apic_calibrate(void)
{
	uint32_t a0, a1;

	lapic_write(LAPIC_LVT_TIMER, LVT_MASKED);
	lapic_write(LAPIC_TIMER_DIV, 0x3);
	lapic_write(LAPIC_TIMER_INIT, 0xffffffff);
	a0 = lapic_read(LAPIC_TIMER_CUR);
	udelay(20000);
	a1 = lapic_read(LAPIC_TIMER_CUR);
	timer_per_tick = (uint64_t)(a0 - a1) * 50 / TIMER_HZ;
	if (!timer_per_tick)
		timer_per_tick = 1;
	tsc_per_tick = tsc_hz() / TIMER_HZ;
	if (!tsc_per_tick)
		tsc_per_tick = 1;
	timer_start_oneshot();
	pr_info("timer: TSC %lu.%03lu MHz, APIC timer %lu kHz, tick %u Hz",
		tsc_hz() / 1000000, tsc_hz() / 1000 % 1000,
		(uint64_t)timer_per_tick * TIMER_HZ * 16 / 1000, TIMER_HZ);
}

/* xAPIC only: the x2APIC ICR has no delivery-status bit (SDM 11.12.9). */
static void icr_wait(void)
{
	for (int i = 0; !x2apic && i < 1000000 && (lapic_read(LAPIC_ICR_LO) & ICR_PENDING); i++)
		cpu_relax();
}

/* One interrupt command: xAPIC takes an 8-bit destination in ICR_HI
 * bits 31:24, x2APIC a 32-bit one in bits 63:32 of the one MSR. */
static void icr_send(uint32_t dest, uint32_t lo)
{
	icr_wait();
	if (x2apic) {
		/* WRMSR to the x2APIC is not serializing: the stores the
		 * target will look for (a mailbox, a resched flag) must be
		 * visible before the IPI is (SDM 11.12.3; Linux's
		 * weak_wrmsr_fence) */
		__asm__ volatile("mfence; lfence" ::: "memory");
		wrmsr(MSR_X2APIC_ICR, (uint64_t)dest << 32 | lo);
		return;
	}
	lapic_write(LAPIC_ICR_HI, dest << 24);
	lapic_write(LAPIC_ICR_LO, lo);
}

void apic_send_ipi(uint32_t dest, uint8_t vector)
{
	uint64_t f = irq_save();

	icr_send(dest, vector);
	irq_restore(f);
}

/* Intel SDM Vol. 3A 9.4.4.1: INIT, 10 ms, SIPI, 200 us, SIPI. */
void apic_send_init_sipi(uint32_t dest, uint32_t trampoline_pa)
{
	icr_send(dest, 0x4500);			/* INIT, assert */
	icr_wait();
	udelay(10000);
	for (int i = 0; i < 2; i++) {
		icr_send(dest, 0x4600 | (trampoline_pa >> 12));
		icr_wait();
		udelay(200);
	}
}

void apic_send_nmi(uint32_t dest)
{
	uint64_t f = irq_save();

	icr_send(dest, 0x400);			/* delivery mode NMI */
	irq_restore(f);
}

/* NMI to every other online CPU: reaches them even with interrupts off. */
void apic_stop_others(void)
{
	uint32_t self = this_cpu()->index;

	if (!apic_ready)
		return;
	for (unsigned int i = 0; i < cpu_count; i++)
		if (i != self && cpus[i].online)
			icr_send(cpus[i].apic_id, 0x400);
}

/*
 * The legacy 8259 pair: move its vectors off the exception range and mask
 * every line, since interrupts come through the local and I/O APICs.
 */
void pic_disable(void)
{
	outb(0x20, 0x11); outb(0xa0, 0x11);		/* ICW1: init, ICW4 */
	outb(0x21, VEC_IRQ_BASE); outb(0xa1, VEC_IRQ_BASE + 8);
	outb(0x21, 4); outb(0xa1, 2);			/* cascade on IRQ2 */
	outb(0x21, 1); outb(0xa1, 1);			/* 8086 mode */
	outb(0x21, 0xff); outb(0xa1, 0xff);		/* mask all */
}

/*
 * I/O APIC redirection (82093AA datasheet): ISA irq -> vector on one CPU.
 * The MADT's overrides give the pin and polarity; without one, an ISA line
 * is edge/active-high, and a PCI line (routed by the chipset onto an ISA
 * IRQ, as PIIX does in QEMU and Bochs) is level/active-high.
 */
static volatile uint32_t *ioapic_regs;

static volatile uint32_t *ioapic_pin(unsigned int irq, uint16_t *flags, uint32_t *pin)
{
	const struct acpi_info *a = acpi_get();
	uint32_t gsi = irq;

	if (!a->ioapic_pa)
		return NULL;
	for (unsigned int i = 0; i < a->n_overrides; i++)
		if (a->overrides[i].irq == irq) {
			gsi = a->overrides[i].gsi;
			*flags = a->overrides[i].flags;
		}
	if (gsi < a->ioapic_gsi_base || gsi - a->ioapic_gsi_base >= 24)
		return NULL;
	*pin = gsi - a->ioapic_gsi_base;
	/* mapped once, by the first route (at set-up): ioapic_mask runs in an
	 * interrupt handler, where remapping's page-table lock may not be
	 * taken (spinlock.h) */
	if (!ioapic_regs)
		ioapic_regs = ioremap(a->ioapic_pa, 4096);
	return ioapic_regs;
}

static bool route(unsigned int irq, uint8_t vector, uint32_t dest, uint16_t flags)
{
	uint32_t pin;
	volatile uint32_t *io = ioapic_pin(irq, &flags, &pin);

	if (!io || dest > 0xff)		/* the redirection entry holds 8 bits */
		return false;
	uint32_t lo = vector;
	if ((flags & 3) == 3)
		lo |= 1u << 13;		/* active low */
	if (((flags >> 2) & 3) == 3)
		lo |= 1u << 15;		/* level triggered */
	io[0] = 0x10 + pin * 2 + 1;
	io[4] = dest << 24;
	io[0] = 0x10 + pin * 2;
	io[4] = lo;
	return true;
}

void ioapic_route_isa(unsigned int irq, uint8_t vector, uint32_t dest)
{
	route(irq, vector, dest, 0);
}

bool ioapic_route_pci(unsigned int irq, uint8_t vector, uint32_t dest)
{
	return irq && irq < 16 && route(irq, vector, dest, 1 | 3 << 2);	/* high, level */
}

void ioapic_mask(unsigned int irq)
{
	uint16_t flags = 0;
	uint32_t pin;
	volatile uint32_t *io = ioapic_pin(irq, &flags, &pin);

	if (!io)
		return;
	io[0] = 0x10 + pin * 2;
	io[4] = io[4] | 1u << 16;
}
