/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * testguest: the local APIC registers the IPI modes use (Intel SDM Vol. 3A
 * 10.4.1 Table 10-1, 10.6.1 the ICR, 10.12 x2APIC) and turning on xAPIC
 * mode.
 */
#ifndef TG_APIC_H
#define TG_APIC_H

#include <stdbool.h>
#include <stdint.h>
#include "guest/testguest/arch.h"

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
#define SVR_ENABLE	(1u << 8)

/* ICR low word: delivery mode, level, shorthand. */
#define DM_FIXED	(0u << 8)
#define DM_NMI		(4u << 8)
#define DM_INIT		(5u << 8)
#define DM_SIPI		(6u << 8)
#define DM_EXTINT	(7u << 8)
#define ICR_PENDING	(1u << 12)
#define ASSERT		(1u << 14)
#define LEVEL		(1u << 15)
#define SH_ALL		(2u << 18)
#define SH_OTHERS	(3u << 18)

static inline volatile uint32_t *apic_reg(uint32_t off)
{
	return (volatile uint32_t *)(XAPIC + off);
}

/* xAPIC mode (out of x2APIC through disabled, 10.12.5), software-enabled
 * with spurious vector svr_vector; LINT0 the 8259's virtual wire when
 * asked (enabling the APIC again after x2APIC mode, or an AP's INIT,
 * leaves every LVT masked). */
static inline void apic_xapic_on(uint32_t svr_vector, bool lint0_extint)
{
	uint64_t base = rdmsr(APIC_BASE_MSR);

	if (base & APIC_BASE_EXTD)
		wrmsr(APIC_BASE_MSR, base & ~(uint64_t)(APIC_BASE_EN | APIC_BASE_EXTD));
	wrmsr(APIC_BASE_MSR, (base & ~(uint64_t)APIC_BASE_EXTD) | APIC_BASE_EN);
	*apic_reg(REG_SVR) = SVR_ENABLE | svr_vector;	/* first: a disabled APIC keeps LVTs masked */
	if (lint0_extint)
		*apic_reg(REG_LVT0) = DM_EXTINT;
}

#endif
