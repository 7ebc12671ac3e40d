/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * XSAVE/XRSTOR (or FXSAVE/FXRSTOR on CPUs without XSAVE) of guest extended
 * state, Intel SDM Vol. 1 ch. 13.  The area is always in the standard
 * (non-compacted) format, so it is the same on Intel and AMD.  Saving uses
 * the host's full XCR0 so every component the hardware holds is captured.
 */
#include <stdbool.h>
#include <string.h>
#include "arch/x86/cpu.h"
#include "arch/x86/fpu.h"


static bool has_xsave(void)
{
	return read_cr4() & CR4_OSXSAVE;
}

uint64_t fpu_host_xcr0(void)
{
	return has_xsave() ? (cpuid(0xd, 0).eax & 0xe7) : 0;
}

void fpu_area_init(void *area)
{
	uint8_t *a = area;

	memset(a, 0, 4096);
	a[0] = 0x7f; a[1] = 0x03;		/* FCW = 0x37f */
	a[24] = 0x80; a[25] = 0x1f;		/* MXCSR = 0x1f80 */
	a[512] = 0x3;				/* XSTATE_BV: x87 and SSE as given */
}

void fpu_set_xcr0(uint64_t xcr0)
{
	if (has_xsave() && xcr0 != xgetbv(0))
		xsetbv(0, xcr0);
}

void fpu_save(void *area)
{
	if (has_xsave()) {
		uint64_t guest = xgetbv(0), host = fpu_host_xcr0();
		if (guest != host)
			xsetbv(0, host);
		__asm__ volatile("xsave (%0)" : : "r"(area), "a"(-1), "d"(-1) : "memory");
		if (guest != host)
			xsetbv(0, guest);
		return;
	}
	__asm__ volatile("fxsave (%0)" : : "r"(area) : "memory");
}

void fpu_restore(const void *area)
{
	if (has_xsave()) {
		uint64_t guest = xgetbv(0), host = fpu_host_xcr0();
		if (guest != host)
			xsetbv(0, host);
		__asm__ volatile("xrstor (%0)" : : "r"(area), "a"(-1), "d"(-1) : "memory");
		if (guest != host)
			xsetbv(0, guest);
		return;
	}
	__asm__ volatile("fxrstor (%0)" : : "r"(area) : "memory");
}
