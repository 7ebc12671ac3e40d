/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Emulation of the instructions guests use on MMIO (local APIC, device
 * registers): MOV to/from memory, MOV imm, MOVZX/MOVSX/MOVSXD, STOS,
 * ADD/ADC/SUB/SBB/CMP, AND/OR/XOR/TEST and XCHG with a memory operand
 * (a compiler may fold a volatile read into any of them: `cmpl $-1,
 * (reg)`).  The caller has decoded the instruction (decode.h) and knows
 * the guest-physical address from the exit; this file performs the
 * access through a callback and applies the architectural register and
 * flag updates.  hv/exit.c's do_mmio calls it for every access outside
 * RAM (the APICs, unclaimed memory).
 */
#ifndef FERRY_ARCH_X86_EMULATE_MMIO_H
#define FERRY_ARCH_X86_EMULATE_MMIO_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/emulate/decode.h"

/*
 * One MMIO access of `size` bytes (1, 2, 4 or 8) at `gpa`.  For a write,
 * *val holds the data (zero-extended); for a read the callee stores the
 * data in *val (bits above size are ignored).  Returns 0 or -errno.
 */
typedef int (*x86_mmio_fn)(void *ctx, uint64_t gpa, bool write,
			   uint64_t *val, int size);

/*
 * Perform insn's memory access at gpa and update regs[] (the 16 GPRs and
 * regs[X86_RFLAGS]; regs[X86_RIP] is neither read nor written).
 * Returns how far to advance RIP: insn->length, or 0 when a REP STOS has
 * iterations left (the guest re-executes it).  Errors:
 *   -EOPNOTSUPP  an instruction this emulator does not handle;
 *   -EINVAL      the instruction has no memory operand;
 *   -EILSEQ      the CPU raises #UD for it, before any access (82 in
 *                64-bit mode; LOCK on MOV, CMP, TEST, a register
 *                destination: all but a read-modify-write of memory);
 *   anything the callback returns: registers and flags are then
 *   unchanged, though for a read-modify-write (ADD, OR... to memory,
 *   XCHG) the device may have seen the read before the write failed.
 * Semantics: 32-bit register writes zero-extend to 64 bits, 8- and 16-bit
 * writes keep the other bits; without REX, byte registers 4-7 are AH, CH,
 * DH, BH.  AND/OR/XOR/TEST clear CF and OF and set SF, ZF, PF; AF
 * (architecturally undefined) is left unchanged.  ADD/ADC/SUB/SBB/CMP set
 * CF, OF, AF, SF, ZF and PF as the SDM's pages say (ADC and SBB take CF
 * in); SUB, SBB and CMP subtract the source from the destination, which
 * is the register in the forms with the d bit (02, 03 ... 3A, 3B) and
 * memory in the others.  CMP writes only the flags.
 */
int x86_emulate_mmio(const struct x86_insn *insn, uint64_t regs[X86_NR_REGS],
		     uint64_t gpa, x86_mmio_fn mmio, void *ctx);

/* Register access with the x86 sub-register rules above (size 1, 2, 4, 8). */
uint64_t x86_reg_read(const uint64_t regs[X86_NR_REGS], unsigned reg,
		      unsigned size, bool rex);
void x86_reg_write(uint64_t regs[X86_NR_REGS], unsigned reg, unsigned size,
		   bool rex, uint64_t val);

#endif
