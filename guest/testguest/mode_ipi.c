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
#include "guest/testguest/apic.h"
#include "guest/testguest/arch.h"
#include "guest/testguest/tg.h"

static volatile uint32_t self_ipis, nmis;
static bool x2, sibling;

static void apic_eoi(void)
{
	if (x2)
		wrmsr(MSR_X2(REG_EOI), 0);
	else
		*apic_reg(REG_EOI) = 0;
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
	*apic_reg(REG_ICR_HI) = dest << 24;
	*apic_reg(REG_ICR_LO) = lo;
}

/* xAPIC mode, software-enabled, LINT0 the 8259's virtual wire. */
static void to_xapic(void)
{
	apic_xapic_on(0xFF, true);
	x2 = false;
}

static void to_x2apic(void)
{
	wrmsr(APIC_BASE_MSR, rdmsr(APIC_BASE_MSR) | APIC_BASE_EN | APIC_BASE_EXTD);
	x2 = true;
}

static uint32_t my_id(void)
{
	return x2 ? (uint32_t)rdmsr(MSR_X2(REG_ID)) : *apic_reg(REG_ID) >> 24;
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
