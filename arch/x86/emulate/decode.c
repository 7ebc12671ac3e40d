/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * x86 instruction decoder: prefixes, opcode maps, ModRM/SIB, displacement
 * and immediates, giving the length of any encoding and the parts an
 * emulator needs.  Intel SDM vol. 2A ch. 2 and appendix A; AMD APM vol. 3
 * ch. 1 and appendix A.
 */
#include <errno.h>
#include <string.h>

#include "arch/x86/emulate/decode.h"

/* Opcode attributes: ModRM presence, immediate kind, mode restrictions. */
#define A_M		0x0001	/* has a ModRM byte */
#define A_IMM_SHIFT	1	/* bits 1-4: enum imm_kind */
#define A_INV64		0x0020	/* #UD in 64-bit mode */
#define A_INV		0x0040	/* undefined in every mode */
#define A_D64		0x0080	/* 64-bit mode: operand size defaults to 64 */
#define A_F64		0x0100	/* 64-bit mode: operand size is always 64 */
#define A_BR		0x0200	/* near branch: F64 on Intel, D64 on AMD */
#define A_MODREG	0x0400	/* ModRM.mod ignored, always a register (MOV CR/DR) */

enum imm_kind {
	I_NONE, I_B, I_W, I_D, I_Z, I_V, I_ENTER, I_MOFFS, I_AP, I_GRP3,
	I_SSE4A,
};
#define IMM(k)	((uint16_t)((k) << A_IMM_SHIFT))
#define IMM_OF(a) ((enum imm_kind)(((a) >> A_IMM_SHIFT) & 0xF))

#define M	A_M
#define IB	IMM(I_B)
#define IW	IMM(I_W)
#define IZ	IMM(I_Z)

/* One-byte map, SDM vol. 2D table A-2.  Prefixes and escapes are handled in code. */
static const uint16_t one_byte[256] = {
	[0x00 ... 0x03] = M, [0x04] = IB, [0x05] = IZ, [0x06 ... 0x07] = A_INV64,
	[0x08 ... 0x0B] = M, [0x0C] = IB, [0x0D] = IZ, [0x0E] = A_INV64,
	[0x10 ... 0x13] = M, [0x14] = IB, [0x15] = IZ, [0x16 ... 0x17] = A_INV64,
	[0x18 ... 0x1B] = M, [0x1C] = IB, [0x1D] = IZ, [0x1E ... 0x1F] = A_INV64,
	[0x20 ... 0x23] = M, [0x24] = IB, [0x25] = IZ, [0x27] = A_INV64,
	[0x28 ... 0x2B] = M, [0x2C] = IB, [0x2D] = IZ, [0x2F] = A_INV64,
	[0x30 ... 0x33] = M, [0x34] = IB, [0x35] = IZ, [0x37] = A_INV64,
	[0x38 ... 0x3B] = M, [0x3C] = IB, [0x3D] = IZ, [0x3F] = A_INV64,
	[0x50 ... 0x5F] = A_D64,
	[0x60 ... 0x61] = A_INV64, [0x62] = M | A_INV64, [0x63] = M,
	[0x68] = IZ | A_D64, [0x69] = M | IZ, [0x6A] = IB | A_D64, [0x6B] = M | IB,
	[0x70 ... 0x7F] = IB | A_BR,
	[0x80] = M | IB, [0x81] = M | IZ, [0x82] = M | IB | A_INV64, [0x83] = M | IB,
	[0x84 ... 0x8E] = M, [0x8F] = M | A_D64,
	[0x9A] = IMM(I_AP) | A_INV64, [0x9C ... 0x9D] = A_D64,
	[0xA0 ... 0xA3] = IMM(I_MOFFS), [0xA8] = IB, [0xA9] = IZ,
	[0xB0 ... 0xB7] = IB, [0xB8 ... 0xBF] = IMM(I_V),
	[0xC0 ... 0xC1] = M | IB, [0xC2] = IW | A_BR, [0xC3] = A_BR,
	[0xC4 ... 0xC5] = M | A_INV64, [0xC6] = M | IB, [0xC7] = M | IZ,
	[0xC8] = IMM(I_ENTER) | A_D64, [0xC9] = A_D64, [0xCA] = IW,
	[0xCD] = IB, [0xCE] = A_INV64,
	[0xD0 ... 0xD3] = M, [0xD4 ... 0xD5] = IB | A_INV64, [0xD6] = A_INV64,
	[0xD8 ... 0xDF] = M,
	[0xE0 ... 0xE3] = IB | A_BR, [0xE4 ... 0xE7] = IB,
	[0xE8 ... 0xE9] = IZ | A_BR, [0xEA] = IMM(I_AP) | A_INV64, [0xEB] = IB | A_BR,
	[0xF6 ... 0xF7] = M | IMM(I_GRP3), [0xFE ... 0xFF] = M,
};

/* Two-byte map (0F xx), SDM vol. 2D table A-3; 0F 38 and 0F 3A in code. */
static const uint16_t two_byte[256] = {
	[0x00 ... 0x03] = M, [0x04] = A_INV, [0x0A] = A_INV, [0x0C] = A_INV,
	[0x0D] = M, [0x0F] = M | IB,	/* 0F 0F: AMD 3DNow!, suffix opcode */
	[0x10 ... 0x1F] = M,
	[0x20 ... 0x23] = M | A_MODREG | A_F64, [0x24 ... 0x27] = A_INV,
	[0x28 ... 0x2F] = M,
	[0x36] = A_INV, [0x39] = A_INV, [0x3B ... 0x3F] = A_INV,
	[0x40 ... 0x6F] = M,
	[0x70 ... 0x73] = M | IB, [0x74 ... 0x76] = M,
	[0x78] = M | A_F64, [0x79] = M | A_F64, [0x7A ... 0x7B] = A_INV,
	[0x7C ... 0x7F] = M,
	[0x80 ... 0x8F] = IZ | A_BR,
	[0x90 ... 0x9F] = M,
	[0xA0 ... 0xA1] = A_D64, [0xA3] = M, [0xA4] = M | IB, [0xA5] = M,
	[0xA6 ... 0xA7] = A_INV, [0xA8 ... 0xA9] = A_D64, [0xAB] = M,
	[0xAC] = M | IB, [0xAD ... 0xAF] = M,
	[0xB0 ... 0xB9] = M, [0xBA] = M | IB, [0xBB ... 0xBF] = M,
	[0xC0 ... 0xC1] = M, [0xC2] = M | IB, [0xC3] = M, [0xC4 ... 0xC6] = M | IB,
	[0xC7] = M,
	[0xD0 ... 0xFF] = M,
};

#undef M
#undef IB
#undef IW
#undef IZ

/* Decoding state: the bytes, the read position and the output. */
struct dctx {
	const uint8_t *buf;
	size_t avail;
	size_t pos;
	unsigned flags;		/* X86_DF_* */
	struct x86_insn *in;
};

static bool is64(const struct dctx *d)
{
	return d->in->mode == CPU_MODE_LONG64;
}

/* Make sure n more bytes exist (SDM 2.3.11: at most 15 in all). */
static int need(struct dctx *d, size_t n)
{
	if (d->pos + n > X86_MAX_INSN_LEN)
		return -E2BIG;
	if (d->pos + n > d->avail) {
		d->in->length = (uint8_t)(d->pos + n);
		return -EAGAIN;
	}
	return 0;
}

static int fetch(struct dctx *d, uint8_t *b)
{
	int r = need(d, 1);

	if (r)
		return r;
	*b = d->buf[d->pos++];
	return 0;
}

/* Look at the next byte without consuming it. */
static int peek(struct dctx *d, uint8_t *b)
{
	int r = need(d, 1);

	if (r)
		return r;
	*b = d->buf[d->pos];
	return 0;
}

/* Read an n-byte little-endian value (n <= 8). */
static int fetch_le(struct dctx *d, unsigned n, uint64_t *v)
{
	int r = need(d, n);

	if (r)
		return r;
	*v = 0;
	for (unsigned i = 0; i < n; i++)
		*v |= (uint64_t)d->buf[d->pos + i] << (8 * i);
	d->pos += n;
	return 0;
}

static int64_t sign_extend(uint64_t v, unsigned bytes)
{
	unsigned shift = 64 - 8 * bytes;

	return bytes >= 8 ? (int64_t)v : (int64_t)(v << shift) >> shift;
}

/* Consume one legacy or REX prefix; false when b is not one (SDM 2.1.1, 2.2.1). */
static bool take_prefix(struct dctx *d, uint8_t b)
{
	struct x86_insn *in = d->in;

	switch (b) {
	case 0x26: case 0x2E: case 0x36: case 0x3E:
		in->seg = (b >> 3) & 3;
		in->prefixes |= X86_PFX_SEG;
		break;
	case 0x64: case 0x65:
		in->seg = X86_SEG_FS + (b & 1);
		in->prefixes |= X86_PFX_SEG;
		break;
	case 0x66: in->prefixes |= X86_PFX_OPSIZE; break;
	case 0x67: in->prefixes |= X86_PFX_ADSIZE; break;
	case 0xF0: in->prefixes |= X86_PFX_LOCK; break;
	case 0xF2: case 0xF3:
		in->rep = b;
		in->prefixes |= b == 0xF2 ? X86_PFX_REPNE : X86_PFX_REP;
		break;
	case 0x40 ... 0x4F:
		if (!is64(d))
			return false;
		in->rex = b;	/* a later REX replaces it */
		in->npfx++;
		return true;
	default:
		return false;
	}
	in->rex = 0;		/* REX not directly before the opcode is ignored */
	in->npfx++;
	return true;
}

static int decode_prefixes(struct dctx *d, uint8_t *opcode)
{
	struct x86_insn *in = d->in;

	for (;;) {
		int r = fetch(d, opcode);

		if (r)
			return r;
		if (!take_prefix(d, *opcode))
			break;
	}
	if (in->rex) {
		in->rex_w = (in->rex >> 3) & 1;
		in->rex_r = (in->rex >> 2) & 1;
		in->rex_x = (in->rex >> 1) & 1;
		in->rex_b = in->rex & 1;
	}
	return 0;
}

/*
 * Is C4/C5/62/8F the start of VEX/EVEX/XOP?  Outside 64-bit mode C4/C5/62
 * are LES/LDS/BOUND unless the next byte has mod = 3 (SDM 2.3.5, 2.6.1);
 * 8F is XOP when its map field is >= 8 (APM vol. 4 1.1).
 */
static int is_vex_escape(struct dctx *d, uint8_t b, bool *yes)
{
	uint8_t next;
	int r = peek(d, &next);

	if (r)
		return r;
	if (b == 0x8F)
		*yes = (next & 0x1F) >= 8;
	else
		*yes = is64(d) || (next & 0xC0) == 0xC0;
	if (!*yes)
		return 0;
	if (d->in->mode == CPU_MODE_REAL)
		return -EILSEQ;	/* not recognised in real and v8086 mode */
	if (d->in->rex || (d->in->prefixes &
	    (X86_PFX_OPSIZE | X86_PFX_LOCK | X86_PFX_REP | X86_PFX_REPNE)))
		return -EILSEQ;	/* SDM 2.3.2 */
	return 0;
}

/* The R/X/B/W bits of a VEX-style payload byte (stored inverted but W). */
static void vex_rxb(struct dctx *d, uint8_t p, bool has_xb)
{
	if (!is64(d))
		return;		/* ignored outside 64-bit mode */
	d->in->rex_r = !(p & 0x80);
	if (has_xb) {
		d->in->rex_x = !(p & 0x40);
		d->in->rex_b = !(p & 0x20);
	}
}

static void vex_wvlp(struct dctx *d, uint8_t p, bool has_w)
{
	struct x86_insn *in = d->in;

	if (has_w)
		in->rex_w = p >> 7;
	in->vex_vvvv = (~p >> 3) & (is64(d) ? 0xF : 0x7);
	in->vex_l = (p >> 2) & 1;
	in->vex_pp = p & 3;
}

/* Attributes of an opcode reached through VEX/EVEX/XOP map `map`; -1 if undefined. */
static int vex_attr(uint8_t kind, unsigned map, uint8_t op)
{
	switch (map) {
	case X86_MAP_0F:
		if (kind != X86_EVEX && op == 0x77)
			return 0;	/* VZEROUPPER/VZEROALL: no ModRM */
		return A_M | (IMM_OF(two_byte[op]) == I_B ? IMM(I_B) : 0);
	case X86_MAP_0F38:
	case X86_MAP_XOP9:
		return A_M;
	case X86_MAP_0F3A:
	case X86_MAP_XOP8:
		return A_M | IMM(I_B);
	case X86_MAP_XOPA:
		return A_M | IMM(I_D);
	case X86_MAP_EVEX5: case X86_MAP_EVEX6:
		return kind == X86_EVEX ? A_M : -1;
	default:
		return -1;
	}
}

/* C5 R.vvvv.L.pp: map 0F implied (SDM 2.3.5.6). */
static int vex2_payload(struct dctx *d, unsigned *map)
{
	uint8_t p0;
	int r = fetch(d, &p0);

	if (r)
		return r;
	d->in->vex_kind = X86_VEX2;
	vex_rxb(d, p0, false);
	vex_wvlp(d, p0, false);
	*map = X86_MAP_0F;
	return 0;
}

/* C4 (VEX, maps 1-3) and 8F (XOP, maps 8-0Ah): RXB.mmmmm W.vvvv.L.pp. */
static int vex3_payload(struct dctx *d, uint8_t esc, unsigned *map)
{
	unsigned m;
	uint8_t p0, p1;
	int r;

	if ((r = fetch(d, &p0)) || (r = fetch(d, &p1)))
		return r;
	vex_rxb(d, p0, true);
	vex_wvlp(d, p1, true);
	m = p0 & 0x1F;
	if (esc == 0xC4) {
		d->in->vex_kind = X86_VEX3;
		*map = m <= 3 ? m : 0xFF;	/* 1-3: 0F, 0F38, 0F3A */
	} else {
		d->in->vex_kind = X86_XOP;
		*map = m <= 0xA ? X86_MAP_XOP8 + m - 8 : 0xFF;
	}
	return 0;
}

/* 62 P0 P1 P2 (SDM 2.7.1): P0 bit 3 must be 0 and P1 bit 2 must be 1. */
static int evex_payload(struct dctx *d, unsigned *map)
{
	static const uint8_t maps[8] = { 0xFF, X86_MAP_0F, X86_MAP_0F38,
		X86_MAP_0F3A, 0xFF, X86_MAP_EVEX5, X86_MAP_EVEX6, 0xFF };
	uint8_t p0, p1, p2;
	int r;

	if ((r = fetch(d, &p0)) || (r = fetch(d, &p1)) || (r = fetch(d, &p2)))
		return r;
	d->in->vex_kind = X86_EVEX;
	if ((p0 & 0x08) || !(p1 & 0x04))
		return -EILSEQ;
	vex_rxb(d, p0, true);
	vex_wvlp(d, p1, true);
	d->in->vex_l = (p2 >> 5) & 3;
	*map = maps[p0 & 7];
	return 0;
}

static int decode_vex_payload(struct dctx *d, uint8_t esc, unsigned *map)
{
	switch (esc) {
	case 0xC5: return vex2_payload(d, map);
	case 0x62: return evex_payload(d, map);
	default:   return vex3_payload(d, esc, map);
	}
}

static int decode_vex(struct dctx *d, uint8_t esc, uint16_t *attr)
{
	struct x86_insn *in = d->in;
	unsigned map;
	int r, a;

	if ((r = decode_vex_payload(d, esc, &map)))
		return r;
	if ((r = fetch(d, &in->opcode)))
		return r;
	in->map = (uint8_t)map;
	a = vex_attr(in->vex_kind, map, in->opcode);
	if (a < 0)
		return -EILSEQ;
	*attr = (uint16_t)a;
	return 0;
}

static int decode_0f(struct dctx *d, uint16_t *attr)
{
	struct x86_insn *in = d->in;
	uint8_t b;
	int r;

	if ((r = fetch(d, &b)))
		return r;
	if (b == 0x38 || b == 0x3A) {
		in->map = b == 0x38 ? X86_MAP_0F38 : X86_MAP_0F3A;
		*attr = b == 0x38 ? A_M : A_M | IMM(I_B);
		return fetch(d, &in->opcode);
	}
	in->map = X86_MAP_0F;
	in->opcode = b;
	*attr = two_byte[b];
	if (*attr & A_INV)
		return -EILSEQ;
	/* AMD SSE4a EXTRQ/INSERTQ: 66 or F2 0F 78 /r ib ib (APM vol. 4). */
	if (b == 0x78 && (in->rep == 0xF2 ||
	    (!in->rep && (in->prefixes & X86_PFX_OPSIZE))))
		*attr = A_M | IMM(I_SSE4A);
	return 0;
}

static int decode_opcode(struct dctx *d, uint8_t b, uint16_t *attr)
{
	struct x86_insn *in = d->in;

	if (b == 0x0F)
		return decode_0f(d, attr);
	if (b == 0xC4 || b == 0xC5 || b == 0x62 || b == 0x8F) {
		bool vex;
		int r = is_vex_escape(d, b, &vex);

		if (r)
			return r;
		if (vex)
			return decode_vex(d, b, attr);
	}
	in->map = X86_MAP_ONE;
	in->opcode = b;
	*attr = one_byte[b];
	if (is64(d) && (*attr & A_INV64))
		return -EILSEQ;
	return 0;
}

static void set_addrsize(struct x86_insn *in)
{
	bool p67 = in->prefixes & X86_PFX_ADSIZE;

	switch (in->mode) {
	case CPU_MODE_LONG64: in->addrsize = p67 ? 4 : 8; break;
	case CPU_MODE_PROT32: in->addrsize = p67 ? 2 : 4; break;
	default:              in->addrsize = p67 ? 4 : 2; break;
	}
}

/* Group 5 (FF): /2 and /4 are near branches, /6 is PUSH (SDM table A-6). */
static uint16_t group_attr(const struct x86_insn *in, uint16_t attr)
{
	if (in->map != X86_MAP_ONE || in->opcode != 0xFF)
		return attr;
	switch ((in->modrm >> 3) & 7) {
	case 2: case 4: return attr | A_BR;
	case 6:         return attr | A_D64;
	default:        return attr;
	}
}

/* Effective operand size, SDM 2.2.1.2 and table 3-4 of vol. 1. */
static void set_opsize(struct dctx *d, uint16_t attr)
{
	struct x86_insn *in = d->in;
	bool p66 = in->prefixes & X86_PFX_OPSIZE;
	bool amd = d->flags & X86_DF_AMD;

	if (!is64(d)) {
		in->opsize = (in->mode == CPU_MODE_PROT32) != p66 ? 4 : 2;
		return;
	}
	if (in->vex_kind != X86_VEX_NONE || in->rex_w)
		in->opsize = in->rex_w ? 8 : 4;
	else if ((attr & A_F64) || ((attr & A_BR) && !amd))
		in->opsize = 8;
	else if (p66)
		in->opsize = 2;
	else
		in->opsize = (attr & (A_D64 | A_BR)) ? 8 : 4;
}

static int read_disp(struct dctx *d, unsigned size)
{
	uint64_t v;
	int r;

	d->in->disp_size = (uint8_t)size;
	if (!size)
		return 0;
	if ((r = fetch_le(d, size, &v)))
		return r;
	d->in->disp = sign_extend(v, size);
	return 0;
}

/* 16-bit addressing forms, SDM vol. 2A table 2-1. */
static int decode_mem16(struct dctx *d)
{
	static const int8_t base[8] = { X86_RBX, X86_RBX, X86_RBP, X86_RBP,
					X86_RSI, X86_RDI, X86_RBP, X86_RBX };
	static const int8_t index[8] = { X86_RSI, X86_RDI, X86_RSI, X86_RDI,
					 X86_REG_NONE, X86_REG_NONE,
					 X86_REG_NONE, X86_REG_NONE };
	struct x86_insn *in = d->in;
	unsigned rm = in->modrm & 7;

	if (in->mod == 0 && rm == 6)
		return read_disp(d, 2);		/* [disp16] */
	in->base = base[rm];
	in->index = index[rm];
	return read_disp(d, in->mod == 1 ? 1 : in->mod == 2 ? 2 : 0);
}

/* SIB byte, SDM vol. 2A table 2-3 and 2.2.1.2 for REX.X/REX.B. */
static int decode_sib(struct dctx *d, unsigned *disp_size)
{
	struct x86_insn *in = d->in;
	unsigned idx, b;
	int r;

	if ((r = fetch(d, &in->sib)))
		return r;
	in->has_sib = true;
	in->scale = (uint8_t)(1u << (in->sib >> 6));
	idx = ((in->sib >> 3) & 7) | (unsigned)in->rex_x << 3;
	in->index = idx == X86_RSP ? X86_REG_NONE : (int8_t)idx;
	b = in->sib & 7;
	if (b == 5 && in->mod == 0) {
		*disp_size = 4;			/* [index*scale + disp32] */
		return 0;
	}
	in->base = (int8_t)(b | (unsigned)in->rex_b << 3);
	return 0;
}

/* 32/64-bit addressing forms, SDM vol. 2A table 2-2 and 2.2.1.6. */
static int decode_mem32(struct dctx *d)
{
	struct x86_insn *in = d->in;
	unsigned rm = in->modrm & 7;
	unsigned disp_size = in->mod == 1 ? 1 : in->mod == 2 ? 4 : 0;
	int r;

	if (rm == 4) {
		if ((r = decode_sib(d, &disp_size)))
			return r;
	} else if (rm == 5 && in->mod == 0) {
		in->base = is64(d) ? X86_RIP : X86_REG_NONE;
		disp_size = 4;
	} else {
		in->base = (int8_t)(rm | (unsigned)in->rex_b << 3);
	}
	return read_disp(d, disp_size);
}

static int decode_modrm(struct dctx *d, uint16_t attr)
{
	struct x86_insn *in = d->in;
	int r;

	if ((r = fetch(d, &in->modrm)))
		return r;
	in->has_modrm = true;
	in->mod = (attr & A_MODREG) ? 3 : in->modrm >> 6;
	in->reg = (uint8_t)(((in->modrm >> 3) & 7) | in->rex_r << 3);
	in->rm = (uint8_t)((in->modrm & 7) | in->rex_b << 3);
	if (in->mod == 3)
		return 0;
	in->has_mem = true;
	in->scale = 1;
	return in->addrsize == 2 ? decode_mem16(d) : decode_mem32(d);
}

static int read_imm(struct dctx *d, unsigned size)
{
	d->in->imm_size = (uint8_t)size;
	return size ? fetch_le(d, size, &d->in->imm) : 0;
}

static int read_imm2(struct dctx *d, unsigned size)
{
	uint64_t v = 0;
	int r = fetch_le(d, size, &v);

	d->in->imm2_size = (uint8_t)size;
	d->in->imm2 = (uint16_t)v;
	return r;
}

/* A0-A3: the moffs is an absolute offset of address size (SDM MOV). */
static int read_moffs(struct dctx *d)
{
	struct x86_insn *in = d->in;
	uint64_t v;
	int r = fetch_le(d, in->addrsize, &v);

	in->has_mem = true;
	in->scale = 1;
	in->disp_size = in->addrsize;
	in->disp = (int64_t)v;
	return r;
}

static int decode_imm(struct dctx *d, uint16_t attr)
{
	struct x86_insn *in = d->in;
	unsigned z = in->opsize == 2 ? 2 : 4;
	int r;

	switch (IMM_OF(attr)) {
	case I_B:     return read_imm(d, 1);
	case I_W:     return read_imm(d, 2);
	case I_D:     return read_imm(d, 4);
	case I_Z:     return read_imm(d, z);
	case I_V:     return read_imm(d, in->opsize);
	case I_MOFFS: return read_moffs(d);
	case I_ENTER: return (r = read_imm(d, 2)) ? r : read_imm2(d, 1);
	case I_SSE4A: return (r = read_imm(d, 1)) ? r : read_imm2(d, 1);
	case I_AP:    return (r = read_imm(d, z)) ? r : read_imm2(d, 2);
	case I_GRP3:  /* only TEST (/0, /1) has an immediate */
		if ((in->modrm >> 3) & 6)
			return 0;
		return read_imm(d, in->opcode == 0xF6 ? 1 : z);
	default:      return 0;
	}
}

static void reset_insn(struct x86_insn *in, enum cpu_mode mode)
{
	memset(in, 0, sizeof(*in));
	in->mode = mode;
	in->seg = X86_SEG_NONE;
	in->base = X86_REG_NONE;
	in->index = X86_REG_NONE;
}

int x86_decode(const uint8_t *buf, size_t avail, enum cpu_mode mode,
	       unsigned flags, struct x86_insn *out)
{
	struct dctx d = { .buf = buf, .avail = avail, .flags = flags, .in = out };
	uint16_t attr = 0;
	uint8_t b;
	int r;

	reset_insn(out, mode);
	if ((unsigned)mode > CPU_MODE_LONG64)
		return -EINVAL;
	if ((r = decode_prefixes(&d, &b)) || (r = decode_opcode(&d, b, &attr)))
		return r;
	set_addrsize(out);
	if ((attr & A_M) && (r = decode_modrm(&d, attr)))
		return r;
	set_opsize(&d, group_attr(out, attr));
	if ((r = decode_imm(&d, attr)))
		return r;
	out->length = (uint8_t)d.pos;
	return (int)d.pos;
}

enum x86_hypercall x86_insn_hypercall(const struct x86_insn *insn)
{
	if (insn->map != X86_MAP_0F || insn->opcode != 0x01 || insn->vex_kind != X86_VEX_NONE ||
	    !insn->has_modrm || (insn->prefixes & X86_PFX_LOCK))
		return X86_HC_NONE;
	if (insn->modrm == 0xC1)
		return X86_HC_VMCALL;
	if (insn->modrm == 0xD9)
		return X86_HC_VMMCALL;
	return X86_HC_NONE;
}

enum cpu_mode x86_cpu_mode(bool cr0_pe, bool rflags_vm, bool efer_lma,
			   bool cs_l, bool cs_d)
{
	if (!cr0_pe || rflags_vm)
		return CPU_MODE_REAL;
	if (efer_lma && cs_l)
		return CPU_MODE_LONG64;
	return cs_d ? CPU_MODE_PROT32 : CPU_MODE_PROT16;
}

enum x86_seg x86_insn_segment(const struct x86_insn *insn)
{
	if (insn->seg != X86_SEG_NONE)
		return (enum x86_seg)insn->seg;
	if (insn->base == X86_RSP || insn->base == X86_RBP)
		return X86_SEG_SS;	/* SDM vol. 1 table 3-5 */
	return X86_SEG_DS;
}
