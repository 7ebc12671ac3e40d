/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Vendor-neutral x86 instruction decoder: length, prefixes, ModRM/SIB,
 * displacement and immediate of any instruction in the one-byte, 0F, 0F38
 * and 0F3A maps, VEX (C4/C5), EVEX (62) and AMD XOP (8F) encodings.
 * Used to advance RIP without NRIP-save and to find the memory operand of
 * an instruction that faulted on MMIO.  Pure logic: no guest access here.
 *
 * References: Intel SDM vol. 2A ch. 2 (instruction format) and appendix A
 * (opcode maps); AMD APM vol. 3 ch. 1 (instruction encoding).
 */
#ifndef FERRY_ARCH_X86_EMULATE_DECODE_H
#define FERRY_ARCH_X86_EMULATE_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define X86_MAX_INSN_LEN 15	/* SDM 2.3.11: longer raises #GP */

/* Default operand/address size of the code being decoded. */
enum cpu_mode {
	CPU_MODE_REAL,		/* real or virtual-8086 mode: 16-bit, no VEX */
	CPU_MODE_PROT16,	/* protected or compatibility mode, CS.D = 0 */
	CPU_MODE_PROT32,	/* protected or compatibility mode, CS.D = 1 */
	CPU_MODE_LONG64,	/* 64-bit mode: EFER.LMA = 1 and CS.L = 1 */
};

/* General registers in the order of their encoding (SDM 2.1.5). */
enum x86_reg {
	X86_RAX, X86_RCX, X86_RDX, X86_RBX, X86_RSP, X86_RBP, X86_RSI, X86_RDI,
	X86_R8, X86_R9, X86_R10, X86_R11, X86_R12, X86_R13, X86_R14, X86_R15,
	X86_RIP,		/* regs[] slot of RIP (of this instruction) */
	X86_RFLAGS,		/* regs[] slot of RFLAGS (used by mmio.c) */
	X86_NR_REGS,
};
#define X86_REG_NONE (-1)	/* base/index slot unused */

/* Segment registers in the order of their encoding (SDM 3.4.2). */
enum x86_seg {
	X86_SEG_ES, X86_SEG_CS, X86_SEG_SS, X86_SEG_DS, X86_SEG_FS, X86_SEG_GS,
	X86_SEG_NONE = 7,
};

/* Legacy prefixes seen (x86_insn.prefixes). */
#define X86_PFX_OPSIZE	(1u << 0)	/* 66 */
#define X86_PFX_ADSIZE	(1u << 1)	/* 67 */
#define X86_PFX_LOCK	(1u << 2)	/* F0 */
#define X86_PFX_REPNE	(1u << 3)	/* F2 */
#define X86_PFX_REP	(1u << 4)	/* F3 */
#define X86_PFX_SEG	(1u << 5)	/* any of 26 2E 36 3E 64 65 */

/* Opcode map of x86_insn.opcode. */
enum x86_map {
	X86_MAP_ONE,		/* one-byte map */
	X86_MAP_0F,		/* 0F xx, VEX/EVEX map 1 */
	X86_MAP_0F38,		/* 0F 38 xx, VEX/EVEX map 2 */
	X86_MAP_0F3A,		/* 0F 3A xx, VEX/EVEX map 3 */
	X86_MAP_EVEX5,		/* EVEX map 5 (AVX512-FP16) */
	X86_MAP_EVEX6,		/* EVEX map 6 (AVX512-FP16) */
	X86_MAP_XOP8,		/* AMD XOP maps 8, 9, 0Ah */
	X86_MAP_XOP9,
	X86_MAP_XOPA,
};

/* Which escape introduced the opcode (x86_insn.vex_kind). */
enum x86_vex_kind { X86_VEX_NONE, X86_VEX2, X86_VEX3, X86_EVEX, X86_XOP };

/* x86_decode_ex() flags. */
#define X86_DF_AMD	(1u << 0)	/* AMD: 66 shortens near branches in 64-bit mode */

/*
 * One decoded instruction.  Filled by x86_decode(); read-only afterwards.
 * Register numbers (reg, rm, base, index) include the REX/VEX extension
 * bits and are only meaningful for general-register operands.
 */
struct x86_insn {
	uint8_t length;		/* total bytes; on -EAGAIN: bytes needed so far */
	uint8_t npfx;		/* legacy prefix and REX bytes before the opcode */
	uint8_t prefixes;	/* X86_PFX_* */
	uint8_t seg;		/* last segment override, or X86_SEG_NONE */
	uint8_t rep;		/* last of F2/F3 (0 if none) */
	uint8_t opsize;		/* effective operand size in bytes: 2, 4, 8 */
	uint8_t addrsize;	/* effective address size in bytes: 2, 4, 8 */
	uint8_t rex;		/* REX byte in effect (40-4F), 0 if none */
	uint8_t rex_w, rex_r, rex_x, rex_b; /* REX or VEX/EVEX/XOP extensions, 0/1 */
	uint8_t vex_kind;	/* enum x86_vex_kind */
	uint8_t vex_vvvv;	/* VEX/EVEX/XOP register operand, un-inverted */
	uint8_t vex_l;		/* VEX.L (EVEX: L'L) */
	uint8_t vex_pp;		/* implied prefix: 0 none, 1 66, 2 F3, 3 F2 */
	uint8_t map;		/* enum x86_map */
	uint8_t opcode;		/* opcode byte within the map */
	enum cpu_mode mode;	/* mode the bytes were decoded for */

	bool has_modrm;
	uint8_t modrm;		/* raw byte */
	uint8_t mod;		/* 0-3; 3 for MOV CR/DR whatever the byte says */
	uint8_t reg;		/* ModRM.reg | REX.R << 3 */
	uint8_t rm;		/* ModRM.rm | REX.B << 3 (register operand) */
	bool has_sib;
	uint8_t sib;		/* raw byte */

	/* Memory operand (ModRM with mod != 3, or the moffs of A0-A3). */
	bool has_mem;
	int8_t base;		/* GPR, X86_RIP for RIP-relative, or X86_REG_NONE */
	int8_t index;		/* GPR or X86_REG_NONE */
	uint8_t scale;		/* 1, 2, 4, 8 */
	uint8_t disp_size;	/* 0, 1, 2, 4 (8 only for a 64-bit moffs) */
	int64_t disp;		/* sign-extended (moffs: zero-extended) */

	uint8_t imm_size;	/* 0, 1, 2, 4, 8 */
	uint8_t imm2_size;	/* 0, 1, 2 */
	uint64_t imm;		/* raw, zero-extended; 3DNow! suffix opcode too */
	uint16_t imm2;		/* ENTER ib, SSE4a 2nd ib, far pointer selector */
};

/*
 * Decode one instruction from buf[0..avail).  Returns its length (> 0), or
 *   -EAGAIN  avail is too short: out->length = bytes known to be needed;
 *   -E2BIG   the instruction would exceed 15 bytes (#GP);
 *   -EILSEQ  undefined opcode or invalid prefix combination (#UD);
 *   -EINVAL  mode is not an enum cpu_mode value.
 * On error, fields other than length may be partly filled.
 * Group opcodes whose ModRM.reg selects an undefined form, LOCK on a
 * non-lockable instruction and undefined 0F38/0F3A opcodes are not
 * reported as #UD: their length is computed as for their neighbours.
 * Where vendors differ (66 on a near branch in 64-bit mode) Intel's
 * semantics apply, unless flags has X86_DF_AMD.
 */
int x86_decode(const uint8_t *buf, size_t avail, enum cpu_mode mode,
	       unsigned flags, struct x86_insn *out);

/*
 * The two vendors' hypercall instructions: VMCALL (0F 01 C1, Intel) and
 * VMMCALL (0F 01 D9, AMD).  Each raises #UD on the other vendor's CPU,
 * where ferry decodes it to give the guest the same hypercall on both.
 */
enum x86_hypercall { X86_HC_NONE, X86_HC_VMCALL, X86_HC_VMMCALL };

/* Which hypercall instruction insn is, if any.  With LOCK it is none: a
 * CPU raises #UD for it whatever the vendor.  Other prefixes only add to
 * insn->length, as for the native instruction the SVM back end matches. */
enum x86_hypercall x86_insn_hypercall(const struct x86_insn *insn);

/* The decoder mode for the guest's current code segment. */
enum cpu_mode x86_cpu_mode(bool cr0_pe, bool rflags_vm, bool efer_lma,
			   bool cs_l, bool cs_d);

/*
 * Segment of the memory operand: the override if any, else SS for a
 * (E/R)BP or (E/R)SP base, DS otherwise.  String destinations (ES:rDI)
 * are the caller's business.
 */
enum x86_seg x86_insn_segment(const struct x86_insn *insn);

#endif
