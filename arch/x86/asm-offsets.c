/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Offsets the assembly files need, taken from the C definitions instead of
 * being kept by hand (the asm-offsets / genassym idea).  The build compiles
 * this file to assembly only: every DEFINE() leaves a line "-> NAME value"
 * there, which the Makefile turns into `#define NAME value` in
 * $(BUILD)/asm-offsets.h for the .S files.  Nothing here is linked.
 */
#include <stddef.h>
#include <stdint.h>
#include "hv/cpu_state.h"

#define DEFINE(sym, val) \
	__asm__ volatile("\n.ascii \"-> " #sym " %c0\"" : : "i" ((long)(val)))

/* Byte offset of general register r in a uint64_t gpr[GPR_COUNT]. */
#define GPR(r)	DEFINE(G_##r, GPR_##r * sizeof(uint64_t))

void asm_offsets(void);

void asm_offsets(void)
{
	GPR(RAX); GPR(RCX); GPR(RDX); GPR(RBX); GPR(RSP); GPR(RBP); GPR(RSI); GPR(RDI);
	GPR(R8); GPR(R9); GPR(R10); GPR(R11); GPR(R12); GPR(R13); GPR(R14); GPR(R15);
}
