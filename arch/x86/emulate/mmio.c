/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MMIO instruction emulation: classify the decoded instruction into one of
 * a few access kinds, do the access through the caller's callback, and
 * update registers and flags as the SDM vol. 2 instruction pages say.
 */
#include <errno.h>

#include "arch/x86/emulate/mmio.h"

#define RFLAGS_CF (1ull << 0)
#define RFLAGS_PF (1ull << 2)
#define RFLAGS_AF (1ull << 4)
#define RFLAGS_ZF (1ull << 6)
#define RFLAGS_SF (1ull << 7)
#define RFLAGS_DF (1ull << 10)
#define RFLAGS_OF (1ull << 11)

enum mmio_kind {
	K_STORE,	/* memory <- register or immediate */
	K_LOAD,		/* register <- memory (MOV, MOVZX) */
	K_LOAD_SX,	/* register <- sign-extended memory (MOVSX, MOVSXD) */
	K_STOS,		/* ES:[rDI] <- rAX, REP-able */
	K_ALU_MEM,	/* memory <- memory op source (CMP: flags only) */
	K_ALU_REG,	/* register <- register op memory (CMP: flags only) */
	K_TEST,		/* flags <- memory AND source */
	K_XCHG,		/* memory <-> register */
};

/* Group 1's ModRM.reg and the 00-3B rows' opcode bits 5:3 (SDM table A-6). */
enum alu_op { A_ADD, A_OR, A_ADC, A_SBB, A_AND, A_SUB, A_XOR, A_CMP };

/* What one instruction does, filled by classify(). */
struct mmio_op {
	enum mmio_kind kind;
	unsigned size;		/* bytes accessed in memory */
	unsigned reg_size;	/* bytes of the register operand */
	unsigned reg;		/* register operand */
	bool use_imm;		/* source is the immediate, not the register */
	enum alu_op aop;
};

static uint64_t mask_of(unsigned size)
{
	return size >= 8 ? ~0ull : (1ull << (8 * size)) - 1;
}

static uint64_t sext(uint64_t v, unsigned size)
{
	unsigned shift = 64 - 8 * size;

	return size >= 8 ? v : (uint64_t)((int64_t)(v << shift) >> shift);
}

uint64_t x86_reg_read(const uint64_t regs[X86_NR_REGS], unsigned reg,
		      unsigned size, bool rex)
{
	if (size == 1 && !rex && reg >= 4 && reg < 8)
		return (regs[reg - 4] >> 8) & 0xFF;	/* AH, CH, DH, BH */
	return regs[reg & 15] & mask_of(size);
}

/* SDM vol. 1 3.4.1.1: 32-bit results zero-extend, 8/16-bit ones merge. */
void x86_reg_write(uint64_t regs[X86_NR_REGS], unsigned reg, unsigned size,
		   bool rex, uint64_t val)
{
	if (size == 1 && !rex && reg >= 4 && reg < 8) {
		regs[reg - 4] = (regs[reg - 4] & ~0xFF00ull) | (val & 0xFF) << 8;
		return;
	}
	reg &= 15;
	if (size >= 4)
		regs[reg] = val & mask_of(size);
	else
		regs[reg] = (regs[reg] & ~mask_of(size)) | (val & mask_of(size));
}

static void set_op(struct mmio_op *op, enum mmio_kind kind, unsigned size,
		   unsigned reg)
{
	op->kind = kind;
	op->size = size;
	op->reg_size = size;
	op->reg = reg;
}

/* Group 1 (80-83) and group 3 (F6, F7) with a memory destination. */
static int classify_group(const struct x86_insn *in, struct mmio_op *op,
			  unsigned size)
{
	unsigned sub = (in->modrm >> 3) & 7;

	if (in->opcode == 0xF6 || in->opcode == 0xF7) {
		if (sub > 1)
			return -EOPNOTSUPP;	/* NOT, NEG, MUL, DIV... */
		set_op(op, K_TEST, size, 0);
		op->use_imm = true;
		return 0;
	}
	if (in->opcode == 0x82 && in->mode == CPU_MODE_LONG64)
		return -EILSEQ;		/* 80's alias: #UD in 64-bit mode */
	set_op(op, K_ALU_MEM, size, 0);
	op->use_imm = true;
	op->aop = (enum alu_op)sub;
	return 0;
}

/*
 * The ALU rows 00-3F: xx0-xx3 are ADD, OR, ADC, SBB, AND, SUB, XOR, CMP
 * between r/m and a register; the d bit (opcode & 2) makes the register
 * the destination and the first operand.  xx4-xx7 (AL/eAX with an
 * immediate, segment pushes, BCD adjusts, prefixes) have no memory operand.
 */
static int classify_alu(const struct x86_insn *in, struct mmio_op *op,
			unsigned size)
{
	if ((in->opcode & 7) > 3)
		return -EOPNOTSUPP;
	set_op(op, (in->opcode & 2) ? K_ALU_REG : K_ALU_MEM, size, in->reg);
	op->aop = (enum alu_op)(in->opcode >> 3);
	return 0;
}

static int classify_one_byte(const struct x86_insn *in, struct mmio_op *op)
{
	unsigned size = (in->opcode & 1) ? in->opsize : 1;

	switch (in->opcode) {
	case 0x88: case 0x89: set_op(op, K_STORE, size, in->reg); return 0;
	case 0x8A: case 0x8B: set_op(op, K_LOAD, size, in->reg); return 0;
	case 0xA0: case 0xA1: set_op(op, K_LOAD, size, X86_RAX); return 0;
	case 0xA2: case 0xA3: set_op(op, K_STORE, size, X86_RAX); return 0;
	case 0xAA: case 0xAB: set_op(op, K_STOS, size, X86_RAX); return 0;
	case 0x84: case 0x85: set_op(op, K_TEST, size, in->reg); return 0;
	case 0x86: case 0x87: set_op(op, K_XCHG, size, in->reg); return 0;
	case 0x00 ... 0x3F:
		return classify_alu(in, op, size);
	case 0x80 ... 0x83: case 0xF6: case 0xF7:
		return classify_group(in, op, size);
	case 0xC6: case 0xC7:
		if ((in->modrm >> 3) & 7)
			return -EOPNOTSUPP;	/* XABORT, XBEGIN */
		set_op(op, K_STORE, size, 0);
		op->use_imm = true;
		return 0;
	case 0x63:			/* MOVSXD: only in 64-bit mode */
		if (in->mode != CPU_MODE_LONG64)
			return -EOPNOTSUPP;	/* ARPL */
		set_op(op, K_LOAD_SX, in->opsize == 8 ? 4 : in->opsize, in->reg);
		op->reg_size = in->opsize;
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

/* MOVZX (0F B6/B7) and MOVSX (0F BE/BF). */
static int classify_0f(const struct x86_insn *in, struct mmio_op *op)
{
	switch (in->opcode) {
	case 0xB6: case 0xB7: case 0xBE: case 0xBF:
		set_op(op, in->opcode >= 0xBE ? K_LOAD_SX : K_LOAD,
		       (in->opcode & 1) ? 2 : 1, in->reg);
		op->reg_size = in->opsize;
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

/*
 * May LOCK prefix it?  Only a read-modify-write with a memory destination:
 * of the instructions here the ALU ones but CMP, and XCHG (SDM LOCK).
 */
static bool lockable(const struct mmio_op *op)
{
	return (op->kind == K_ALU_MEM && op->aop != A_CMP) || op->kind == K_XCHG;
}

static int classify(const struct x86_insn *in, struct mmio_op *op)
{
	int r;

	*op = (struct mmio_op){ 0 };
	if (in->vex_kind != X86_VEX_NONE)
		return -EOPNOTSUPP;
	if (in->map == X86_MAP_ONE)
		r = classify_one_byte(in, op);
	else if (in->map == X86_MAP_0F)
		r = classify_0f(in, op);
	else
		r = -EOPNOTSUPP;
	if (r)
		return r;
	if (op->kind != K_STOS && !in->has_mem)
		return -EINVAL;		/* register form: nothing to emulate */
	if ((in->prefixes & X86_PFX_LOCK) && !lockable(op))
		return -EILSEQ;		/* #UD, before any access */
	return 0;
}

/* The source operand of a store or an instruction with a memory destination. */
static uint64_t source(const struct x86_insn *in, const struct mmio_op *op,
		       const uint64_t *regs)
{
	if (op->use_imm)
		return sext(in->imm, in->imm_size) & mask_of(op->size);
	return x86_reg_read(regs, op->reg, op->size, in->rex != 0);
}

/* f with SF, ZF, PF set from the result, as every ALU instruction does. */
static uint64_t szp_flags(uint64_t f, uint64_t res, unsigned size)
{
	unsigned low = (uint8_t)res;

	f &= ~(RFLAGS_SF | RFLAGS_ZF | RFLAGS_PF);
	if (!(res & mask_of(size)))
		f |= RFLAGS_ZF;
	if (res >> (8 * size - 1) & 1)
		f |= RFLAGS_SF;
	low ^= low >> 4;	/* PF: even number of ones in the low byte */
	low ^= low >> 2;
	low ^= low >> 1;
	if (!(low & 1))
		f |= RFLAGS_PF;
	return f;
}

/* SF, ZF, PF from the result; CF = OF = 0 (SDM AND/OR/XOR/TEST). */
static uint64_t logic_flags(uint64_t f, uint64_t res, unsigned size)
{
	return szp_flags(f & ~(RFLAGS_CF | RFLAGS_OF), res, size);
}

/*
 * ADD, ADC, SUB, SBB, CMP of a and b (masked to size) with *flags' CF as
 * the carry or borrow in of ADC and SBB; *flags gets the six arithmetic
 * flags (SDM vol. 2).  a - b - c is done as a + ~b + !c, whose carries
 * are the borrows inverted.  CF and AF are the carries out of the top
 * bit and out of bit 3; OF is set when both addends have a sign that the
 * result does not.
 */
static uint64_t arith(enum alu_op aop, uint64_t a, uint64_t b, unsigned size,
		      uint64_t *flags)
{
	bool sub = aop == A_SUB || aop == A_SBB || aop == A_CMP;
	uint64_t cin = (aop == A_ADC || aop == A_SBB) ? *flags & RFLAGS_CF : 0;
	unsigned top = 8 * size - 1;
	uint64_t res, carry, f = *flags & ~(RFLAGS_CF | RFLAGS_AF | RFLAGS_OF);

	if (sub) {
		b = ~b & mask_of(size);
		cin ^= 1;
	}
	res = (a + b + cin) & mask_of(size);
	carry = (a & b) | ((a | b) & ~res);	/* out of each bit */
	if (sub)
		carry = ~carry;
	if (carry >> top & 1)
		f |= RFLAGS_CF;
	if (carry >> 3 & 1)
		f |= RFLAGS_AF;
	if (((a ^ res) & (b ^ res)) >> top & 1)
		f |= RFLAGS_OF;
	*flags = szp_flags(f, res, size);
	return res;
}

/* a op b at size bytes (a, b masked to it); *flags as the SDM says. */
static uint64_t alu(enum alu_op aop, uint64_t a, uint64_t b, unsigned size,
		    uint64_t *flags)
{
	uint64_t res;

	switch (aop) {
	case A_OR:  res = a | b; break;
	case A_AND: res = a & b; break;
	case A_XOR: res = a ^ b; break;
	default:    return arith(aop, a, b, size, flags);
	}
	*flags = logic_flags(*flags, res, size);
	return res;
}

static int mmio_read(x86_mmio_fn mmio, void *ctx, uint64_t gpa,
		     unsigned size, uint64_t *val)
{
	int r;

	*val = 0;
	r = mmio(ctx, gpa, false, val, (int)size);
	*val &= mask_of(size);
	return r;
}

static int mmio_write(x86_mmio_fn mmio, void *ctx, uint64_t gpa,
		      unsigned size, uint64_t val)
{
	val &= mask_of(size);
	return mmio(ctx, gpa, true, &val, (int)size);
}

/* Everything an access needs, bundled to keep the helpers short. */
struct mmio_env {
	const struct x86_insn *in;
	uint64_t *regs;
	uint64_t gpa;
	x86_mmio_fn mmio;
	void *ctx;
};

static int do_load(struct mmio_env *e, const struct mmio_op *op, bool sx)
{
	uint64_t v;
	int r = mmio_read(e->mmio, e->ctx, e->gpa, op->size, &v);

	if (r)
		return r;
	if (sx)
		v = sext(v, op->size);
	x86_reg_write(e->regs, op->reg, op->reg_size, e->in->rex != 0, v);
	return 0;
}

static int do_store(struct mmio_env *e, const struct mmio_op *op)
{
	return mmio_write(e->mmio, e->ctx, e->gpa, op->size,
			  source(e->in, op, e->regs));
}

/*
 * The ALU instructions: the destination, also the first operand, is
 * memory (K_ALU_MEM) or the register (K_ALU_REG): SUB, SBB and CMP
 * compute destination - source.  CMP writes only the flags.
 */
static int do_alu(struct mmio_env *e, const struct mmio_op *op)
{
	bool rex = e->in->rex != 0;
	uint64_t m, res, flags = e->regs[X86_RFLAGS];
	int r = mmio_read(e->mmio, e->ctx, e->gpa, op->size, &m);

	if (r)
		return r;
	if (op->kind == K_ALU_MEM)
		res = alu(op->aop, m, source(e->in, op, e->regs), op->size, &flags);
	else
		res = alu(op->aop, x86_reg_read(e->regs, op->reg, op->size, rex), m,
			  op->size, &flags);
	if (op->aop != A_CMP && op->kind == K_ALU_MEM)
		r = mmio_write(e->mmio, e->ctx, e->gpa, op->size, res);
	else if (op->aop != A_CMP)
		x86_reg_write(e->regs, op->reg, op->size, rex, res);
	if (!r)
		e->regs[X86_RFLAGS] = flags;
	return r;
}

static int do_test(struct mmio_env *e, const struct mmio_op *op)
{
	uint64_t v;
	int r = mmio_read(e->mmio, e->ctx, e->gpa, op->size, &v);

	if (!r)
		e->regs[X86_RFLAGS] = logic_flags(e->regs[X86_RFLAGS],
						  v & source(e->in, op, e->regs), op->size);
	return r;
}

static int do_xchg(struct mmio_env *e, const struct mmio_op *op)
{
	uint64_t old;
	int r = mmio_read(e->mmio, e->ctx, e->gpa, op->size, &old);

	if (!r)
		r = do_store(e, op);
	if (!r)
		x86_reg_write(e->regs, op->reg, op->size, e->in->rex != 0, old);
	return r;
}

/*
 * STOS: one iteration per call (SDM STOS, REP).  rDI and rCX are updated
 * at the address size; with iterations left the guest re-executes.
 */
static int do_stos(struct mmio_env *e, const struct mmio_op *op)
{
	const struct x86_insn *in = e->in;
	uint64_t *regs = e->regs;
	unsigned as = in->addrsize;
	uint64_t count = regs[X86_RCX] & mask_of(as);
	uint64_t step = (regs[X86_RFLAGS] & RFLAGS_DF) ? -(uint64_t)op->size : op->size;
	int r;

	if (in->rep && count == 0)
		return in->length;
	r = mmio_write(e->mmio, e->ctx, e->gpa, op->size,
		       x86_reg_read(regs, X86_RAX, op->size, true));
	if (r)
		return r;
	x86_reg_write(regs, X86_RDI, as, true, regs[X86_RDI] + step);
	if (!in->rep)
		return in->length;
	x86_reg_write(regs, X86_RCX, as, true, count - 1);
	return count > 1 ? 0 : in->length;
}

int x86_emulate_mmio(const struct x86_insn *insn, uint64_t regs[X86_NR_REGS],
		     uint64_t gpa, x86_mmio_fn mmio, void *ctx)
{
	struct mmio_env e = { insn, regs, gpa, mmio, ctx };
	struct mmio_op op;
	int r = classify(insn, &op);

	if (r)
		return r;
	switch (op.kind) {
	case K_STORE:     r = do_store(&e, &op); break;
	case K_LOAD:      r = do_load(&e, &op, false); break;
	case K_LOAD_SX:   r = do_load(&e, &op, true); break;
	case K_ALU_MEM:
	case K_ALU_REG:   r = do_alu(&e, &op); break;
	case K_TEST:      r = do_test(&e, &op); break;
	case K_XCHG:      r = do_xchg(&e, &op); break;
	case K_STOS:      return do_stos(&e, &op);
	}
	return r ? r : insn->length;
}
