/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * testguest mode "ipiflood": a guest that floods its local APIC with
 * interprocessor interrupts, for the hypervisor's containment tests.
 *   ipiflood [secs=S] [sibling=1]
 * It software-enables its APIC (SVR, Intel SDM vol. 3A 10.9) and, in a
 * tight loop with interrupts on, writes the ICR (10.6.1) with:
 *  - fixed IPIs to APIC ids no vCPU has,
 *  - fixed IPIs of TG_IPI_VECTOR to all-excluding-self and to all (the
 *    handler counts and EOIs them),
 *  - NMIs to its own id (the NMI handler counts them),
 *  - INIT and SIPI to absent ids and to all-excluding-self.
 * It alternates each second between the xAPIC page (0xFEE00300/310) and,
 * when CPUID.1:ECX bit 21 offers it, the x2APIC ICR MSR 0x830 (10.12).
 * It starts no application processor: with vcpus=2 give sibling=1, which
 * sends no SIPI to others (it would start the AP at garbage) but floods
 * the parked AP (APIC id 1, in wait-for-SIPI) with NMIs, fixed IPIs and
 * INITs instead.
 * About every second:
 *   TG ipi sec=S rounds=R self=N nmi=M x2apic=0/1
 * Forever without secs=; with it, `TG ipi done rounds=R`, power off.
 */
#include "guest/testguest/arch.h"
#include "guest/testguest/tg.h"

#define APIC_BASE_MSR	0x1B
#define APIC_BASE_EN	(1u << 11)
#define APIC_BASE_EXTD	(1u << 10)
#define XAPIC		0xFEE00000u
#define REG_ID		0x20
#define REG_EOI		0xB0
#define REG_SVR		0xF0
#define REG_ICR_LO	0x300
#define REG_ICR_HI	0x310
#define REG_LVT0	0x350
#define MSR_X2(reg)	(0x800u + ((reg) >> 4))
#define CPUID1_X2APIC	(1u << 21)

#define DM_FIXED	(0u << 8)
#define DM_NMI		(4u << 8)
#define DM_INIT		(5u << 8)
#define DM_SIPI		(6u << 8)
#define DM_EXTINT	(7u << 8)
#define ASSERT		(1u << 14)
#define SH_ALL		(2u << 18)
#define SH_OTHERS	(3u << 18)

static volatile uint32_t self_ipis, nmis;
static bool x2, sibling;

static volatile uint32_t *reg(uint32_t off)
{
	return (volatile uint32_t *)(XAPIC + off);
}

static void apic_eoi(void)
{
	if (x2)
		wrmsr(MSR_X2(REG_EOI), 0);
	else
		*reg(REG_EOI) = 0;
}

static void on_ipi(int vector)
{
	if (vector == TG_NMI_VECTOR) {
		nmis++;
		return;
	}
	self_ipis++;
	apic_eoi();
}

static void icr(uint32_t dest, uint32_t lo)
{
	if (x2) {
		wrmsr(MSR_X2(REG_ICR_LO), (uint64_t)dest << 32 | lo);
		return;
	}
	*reg(REG_ICR_HI) = dest << 24;
	*reg(REG_ICR_LO) = lo;
}

/* xAPIC mode, software-enabled, LINT0 the 8259's virtual wire (enabling
 * the APIC again after x2APIC mode starts it with every LVT masked). */
static void to_xapic(void)
{
	uint64_t base = rdmsr(APIC_BASE_MSR);

	if (base & APIC_BASE_EXTD)
		wrmsr(APIC_BASE_MSR, base & ~(uint64_t)(APIC_BASE_EN | APIC_BASE_EXTD));
	wrmsr(APIC_BASE_MSR, (base & ~(uint64_t)APIC_BASE_EXTD) | APIC_BASE_EN);
	x2 = false;
	*reg(REG_SVR) = 0x1FF;		/* first: a disabled APIC keeps LVTs masked */
	*reg(REG_LVT0) = DM_EXTINT;
}

static void to_x2apic(void)
{
	wrmsr(APIC_BASE_MSR, rdmsr(APIC_BASE_MSR) | APIC_BASE_EN | APIC_BASE_EXTD);
	x2 = true;
}

static uint32_t my_id(void)
{
	return x2 ? (uint32_t)rdmsr(MSR_X2(REG_ID)) : *reg(REG_ID) >> 24;
}

/* One round of everything; `absent` is an id no vCPU has. */
static void round(uint32_t absent)
{
	icr(absent, ASSERT | DM_FIXED | TG_IPI_VECTOR);
	icr(0, SH_OTHERS | ASSERT | DM_FIXED | TG_IPI_VECTOR);
	icr(0, SH_ALL | ASSERT | DM_FIXED | TG_IPI_VECTOR);
	icr(my_id(), ASSERT | DM_NMI);
	icr(absent, ASSERT | DM_INIT);
	icr(absent, DM_SIPI | 0x9F);
	if (sibling) {		/* the parked application processor, APIC id 1 */
		icr(1, ASSERT | DM_NMI);
		icr(1, ASSERT | DM_FIXED | TG_IPI_VECTOR);
		icr(1, ASSERT | DM_INIT);
		return;
	}
	icr(0, SH_OTHERS | ASSERT | DM_INIT);
	icr(0, SH_OTHERS | DM_SIPI | 0x9F);
}

void mode_ipiflood(void)
{
	uint32_t secs = tg_opt_u32("secs", 0);
	bool have_x2 = cpuid(1, 0).ecx & CPUID1_X2APIC;
	uint32_t rounds = 0, start, sec = 0;

	sibling = tg_opt_u32("sibling", 0);
	tg_apic_handler = on_ipi;
	to_xapic();
	tg_printf("TG ipi start id=%u x2apic_cpuid=%u\n", my_id(), have_x2);
	sti();
	start = tg_ticks;
	for (;;) {
		uint32_t absent = x2 ? 0x12345u + (rounds & 0xFF) : 0x10u + (rounds & 0xE);

		round(absent);
		rounds++;
		if (tg_ticks - start < (sec + 1) * TG_HZ)
			continue;
		sec++;
		tg_printf("TG ipi sec=%u rounds=%u self=%u nmi=%u x2apic=%u\n", sec, rounds,
			  self_ipis, nmis, x2);
		if (secs && sec >= secs)
			break;
		cli();		/* the handler's EOI follows x2 */
		if (have_x2 && !x2)
			to_x2apic();
		else if (x2)
			to_xapic();
		sti();
	}
	cli();
	tg_printf("TG ipi done rounds=%u\n", rounds);
	tg_poweroff();
}
