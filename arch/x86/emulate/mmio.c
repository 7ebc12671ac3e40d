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
#define RFLAGS_ZF (1ull << 6)
#define RFLAGS_SF (1ull << 7)
#define RFLAGS_DF (1ull << 10)
#define RFLAGS_OF (1ull << 11)

enum mmio_kind {
	K_STORE,	/* memory <- register or immediate */
	K_LOAD,		/* register <- memory (MOV, MOVZX) */
	K_LOAD_SX,	/* register <- sign-extended memory (MOVSX, MOVSXD) */
	K_STOS,		/* ES:[rDI] <- rAX, REP-able */
	K_LOGIC_MEM,	/* memory <- memory op source */
	K_LOGIC_REG,	/* register <- register op memory */
	K_TEST,		/* flags <- memory AND source */
	K_XCHG,		/* memory <-> register */
};

/* Group 1 and the 08/20/30 rows share these ModRM.reg numbers (SDM table A-6). */
enum logic_op { L_OR = 1, L_AND = 4, L_XOR = 6 };

/* What one instruction does, filled by classify(). */
struct mmio_op {
	enum mmio_kind kind;
	unsigned size;		/* bytes accessed in memory */
	unsigned reg_size;	/* bytes of the register operand */
	unsigned reg;		/* register operand */
	bool use_imm;		/* source is the immediate, not the register */
	enum logic_op lop;
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

/* Group 1 (80, 81, 83) and group 3 (F6, F7) with a memory destination. */
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
	if (sub != L_OR && sub != L_AND && sub != L_XOR)
		return -EOPNOTSUPP;		/* ADD, ADC, SBB, SUB, CMP */
	set_op(op, K_LOGIC_MEM, size, 0);
	op->use_imm = true;
	op->lop = (enum logic_op)sub;
	return 0;
}

/* The logic rows: 08-0B OR, 20-23 AND, 30-33 XOR. */
static int classify_logic(const struct x86_insn *in, struct mmio_op *op,
			  unsigned size)
{
	set_op(op, (in->opcode & 2) ? K_LOGIC_REG : K_LOGIC_MEM, size, in->reg);
	op->lop = (enum logic_op)(in->opcode >> 3);
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
	case 0x08 ... 0x0B: case 0x20 ... 0x23: case 0x30 ... 0x33:
		return classify_logic(in, op, size);
	case 0x80: case 0x81: case 0x83: case 0xF6: case 0xF7:
		return classify_group(in, op, in->opcode == 0x80 ? 1 : size);
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
	return 0;
}

/* The source operand of a store or logic instruction. */
static uint64_t source(const struct x86_insn *in, const struct mmio_op *op,
		       const uint64_t *regs)
{
	if (op->use_imm)
		return sext(in->imm, in->imm_size) & mask_of(op->size);
	return x86_reg_read(regs, op->reg, op->size, in->rex != 0);
}

/* SF, ZF, PF from the result; CF = OF = 0 (SDM AND/OR/XOR/TEST). */
static void logic_flags(uint64_t *regs, uint64_t res, unsigned size)
{
	uint64_t f = regs[X86_RFLAGS];
	unsigned low = (uint8_t)res;

	f &= ~(RFLAGS_CF | RFLAGS_OF | RFLAGS_SF | RFLAGS_ZF | RFLAGS_PF);
	if (!(res & mask_of(size)))
		f |= RFLAGS_ZF;
	if (res >> (8 * size - 1) & 1)
		f |= RFLAGS_SF;
	low ^= low >> 4;	/* PF: even number of ones in the low byte */
	low ^= low >> 2;
	low ^= low >> 1;
	if (!(low & 1))
		f |= RFLAGS_PF;
	regs[X86_RFLAGS] = f;
}

static uint64_t logic(enum logic_op lop, uint64_t a, uint64_t b)
{
	switch (lop) {
	case L_OR:  return a | b;
	case L_AND: return a & b;
	default:    return a ^ b;
	}
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

/* AND/OR/XOR: the destination is memory (K_LOGIC_MEM) or the register. */
static int do_logic(struct mmio_env *e, const struct mmio_op *op)
{
	bool rex = e->in->rex != 0;
	uint64_t v, res;
	int r = mmio_read(e->mmio, e->ctx, e->gpa, op->size, &v);

	if (r)
		return r;
	res = logic(op->lop, v, source(e->in, op, e->regs)) & mask_of(op->size);
	if (op->kind == K_LOGIC_MEM)
		r = mmio_write(e->mmio, e->ctx, e->gpa, op->size, res);
	else
		x86_reg_write(e->regs, op->reg, op->size, rex, res);
	if (!r)
		logic_flags(e->regs, res, op->size);
	return r;
}

static int do_test(struct mmio_env *e, const struct mmio_op *op)
{
	uint64_t v;
	int r = mmio_read(e->mmio, e->ctx, e->gpa, op->size, &v);

	if (!r)
		logic_flags(e->regs, v & source(e->in, op, e->regs), op->size);
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
	case K_LOGIC_MEM:
	case K_LOGIC_REG: r = do_logic(&e, &op); break;
	case K_TEST:      r = do_test(&e, &op); break;
	case K_XCHG:      r = do_xchg(&e, &op); break;
	case K_STOS:      return do_stos(&e, &op);
	}
	return r ? r : insn->length;
}
