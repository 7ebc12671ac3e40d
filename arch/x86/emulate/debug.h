/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What DR6 becomes when a back end delivers a debug exception (#DB) the
 * CPU reported without delivering it: a #DB intercepted on VMX (the exit
 * leaves DR6 alone and puts the cause in the exit qualification), or the
 * single-step trap after an instruction ferry emulated (both vendors).
 * Intel SDM Vol. 3B "Debug Status Register (DR6)" and "Debug Exceptions"
 * (VM exits: Vol. 3C "Exit Qualification for Debug Exceptions"); AMD APM
 * Vol. 2 13.1.1.3.  Pure.
 */
#ifndef FERRY_ARCH_X86_EMULATE_DEBUG_H
#define FERRY_ARCH_X86_EMULATE_DEBUG_H

#include <stdint.h>

/* Causes, in the format of VMX's exit qualification and pending debug
 * exceptions: a set bit means "this happened". */
#define X86_DB_B0_B3	0xfull		/* breakpoint conditions 0-3 */
#define X86_DB_BLD	(1ull << 11)	/* bus lock detected */
#define X86_DB_BD	(1ull << 13)	/* MOV DR with DR7.GD set */
#define X86_DB_BS	(1ull << 14)	/* single step */
#define X86_DB_RTM	(1ull << 16)	/* inside an RTM region */
#define X86_DB_CAUSES	(X86_DB_B0_B3 | X86_DB_BLD | X86_DB_BD | X86_DB_BS | X86_DB_RTM)

/* DR6 bits that read 1 when clear of meaning (reserved ones, and BLD and
 * RTM, which are active low); bit 12 reads 0. */
#define X86_DR6_ACTIVE_LOW	0xffff0ff0ull
#define X86_DR6_BIT12		(1ull << 12)

#define X86_DR7_GD		(1ull << 13)

/*
 * DR6 after a #DB for `causes`: the CPU clears B0-B3 and sets the bits of
 * this exception; BD, BS and BT stay set from earlier ones (the handler
 * clears them); the active-low bits go to 0 for their cause.  As KVM
 * delivers a #DB payload.
 */
static inline uint64_t x86_dr6_after_db(uint64_t dr6, uint64_t causes)
{
	causes &= X86_DB_CAUSES;
	dr6 = (dr6 & ~X86_DB_B0_B3) | X86_DR6_ACTIVE_LOW | causes;
	dr6 ^= causes & X86_DR6_ACTIVE_LOW;
	return dr6 & ~X86_DR6_BIT12 & 0xffffffffull;
}

#endif
