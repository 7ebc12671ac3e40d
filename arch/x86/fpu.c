/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * XSAVE/XRSTOR (or FXSAVE/FXRSTOR on CPUs without XSAVE) of guest extended
 * state, Intel SDM Vol. 1 ch. 13.  The area is always in the standard
 * (non-compacted) format, so it is the same on Intel and AMD.  Saving uses
 * the host's full XCR0 so every component the hardware holds is captured,
 * and the 64-bit forms (REX.W), so a 64-bit guest's x87 instruction and
 * data pointers keep their upper halves (SDM Vol. 1 13.5.1).
 *
 * AMD CPUs without XSaveErPtr (CPUID 0x80000008 EBX bit 2) save and
 * restore the x87 FIP, FDP and FOP only while an exception is pending
 * (FSW.ES): restoring the next vCPU's state leaves the last one's there,
 * for it to read with FXSAVE, a guest's kernel addresses seen by another
 * guest (CVE-2006-1056, Xen XSA-172).  On those CPUs the pointers are set
 * to a known value first, by the only x87 instructions ferry runs (the
 * sequence Linux uses for X86_BUG_FXSAVE_LEAK; tools/check-fpu.sh allows
 * them in fpu_scrub_x87_pointers alone).
 */
#include <stdbool.h>
#include <string.h>
#include "arch/x86/cpu.h"
#include "arch/x86/fpu.h"


static bool has_xsave(void)
{
	return read_cr4() & CR4_OSXSAVE;
}

#define XSAVEERPTR	(1u << 2)	/* CPUID 0x80000008 EBX */

/* Whether restores leave the x87 pointers of the state before (once). */
static bool x87_pointer_leak(void)
{
	static int leak = -1;		/* a race sets it to the same value */
	struct cpuid_regs v;

	if (leak < 0) {
		v = cpuid(0, 0);
		bool amd = (v.ebx == 0x68747541 && v.edx == 0x69746e65 && v.ecx == 0x444d4163) ||
			   (v.ebx == 0x6f677948 && v.edx == 0x6e65476e && v.ecx == 0x656e6975);
		leak = amd && !(cpuid(0x80000000, 0).eax >= 0x80000008 &&
				(cpuid(0x80000008, 0).ebx & XSAVEERPTR));
	}
	return leak;
}

/* Clear pending x87 exceptions, empty the stack, load one integer: FIP,
 * FDP and FOP now hold this instruction's, whatever the restore keeps. */
static void __attribute__((noinline)) fpu_scrub_x87_pointers(void)
{
	static const int32_t zero;

	__asm__ volatile("fnclex\n\temms\n\tfildl %0" : : "m"(zero));
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
		__asm__ volatile("xsave64 (%0)" : : "r"(area), "a"(-1), "d"(-1) : "memory");
		if (guest != host)
			xsetbv(0, guest);
		return;
	}
	__asm__ volatile("fxsave64 (%0)" : : "r"(area) : "memory");
}

void fpu_restore(const void *area)
{
	if (x87_pointer_leak())
		fpu_scrub_x87_pointers();
	if (has_xsave()) {
		uint64_t guest = xgetbv(0), host = fpu_host_xcr0();
		if (guest != host)
			xsetbv(0, host);
		__asm__ volatile("xrstor64 (%0)" : : "r"(area), "a"(-1), "d"(-1) : "memory");
		if (guest != host)
			xsetbv(0, guest);
		return;
	}
	__asm__ volatile("fxrstor64 (%0)" : : "r"(area) : "memory");
}
