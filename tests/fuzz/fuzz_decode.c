/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target: the x86 instruction decoder and the MMIO emulator
 * (arch/x86/emulate/decode.c, mmio.c) on bytes a hostile guest executes.
 *
 * Input: byte 0 = mode (bits 0-1) and flags (bit 2: X86_DF_AMD, bit 3:
 * also emulate as MMIO), then the instruction bytes (at most 15 are
 * decoded, as the hypervisor fetches at most that many), the rest
 * seeds the registers and the fake device's read value.
 *
 * Invariants checked (abort on violation):
 *   - success: 0 < len <= min(avail, 15), insn.length == len, decoding
 *     exactly len bytes gives len again with the same fields, len - 1
 *     bytes gives -EAGAIN;
 *     the decoded fields are within their documented ranges;
 *   - -EAGAIN: avail < insn.length <= 15, and giving insn.length bytes
 *     (from the padded input) does not ask for the same count again;
 *   - only the documented errors;
 *   - MMIO: returns insn.length, 0 (REP STOS only) or a documented
 *     error; on error registers are unchanged; RIP is never touched;
 *     every device access has size 1/2/4/8.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/x86/emulate/decode.h"
#include "arch/x86/emulate/mmio.h"
#include "tests/fuzz/fuzz.h"


struct fdev {
	uint64_t rval;
	int accesses;
	int fail_at;		/* fail the n-th access (1-based), 0: never */
};

static int fmmio(void *ctx, uint64_t gpa, bool write, uint64_t *val, int size)
{
	struct fdev *d = ctx;

	(void)gpa;
	CHECK(size == 1 || size == 2 || size == 4 || size == 8);
	CHECK(val != NULL);
	d->accesses++;
	CHECK(d->accesses < 1000);
	if (d->fail_at && d->accesses == d->fail_at)
		return -EIO;
	if (!write)
		*val = d->rval;
	return 0;
}

static void check_fields(const struct x86_insn *in, int len, enum cpu_mode mode)
{
	CHECK(in->length == len);
	CHECK(in->mode == mode);
	CHECK(in->npfx < len);
	CHECK(in->opsize == 2 || in->opsize == 4 || in->opsize == 8);
	CHECK(in->addrsize == 2 || in->addrsize == 4 || in->addrsize == 8);
	CHECK(in->map <= X86_MAP_XOPA);
	CHECK(in->vex_kind <= X86_XOP);
	CHECK(in->seg <= X86_SEG_GS || in->seg == X86_SEG_NONE);
	CHECK(in->imm_size == 0 || in->imm_size == 1 || in->imm_size == 2 ||
	      in->imm_size == 4 || in->imm_size == 8);
	CHECK(in->imm2_size <= 2);
	if (in->has_modrm) {
		CHECK(in->mod <= 3);
		CHECK(in->reg < 16 && in->rm < 16);
	}
	if (in->has_mem) {
		CHECK(in->base == X86_REG_NONE || (in->base >= 0 && in->base <= X86_RIP));
		CHECK(in->index == X86_REG_NONE || (in->index >= 0 && in->index < 16));
		CHECK(in->scale == 1 || in->scale == 2 || in->scale == 4 || in->scale == 8);
		CHECK(in->disp_size <= 8);
	}
	CHECK((int)in->npfx + 1 + in->has_modrm + in->has_sib + in->disp_size +
	      in->imm_size + in->imm2_size <= len + 4 /* VEX/EVEX/XOP/escape bytes */);
	(void)x86_insn_hypercall(in);
	(void)x86_insn_segment(in);
}

/* FERRY_FUZZ_MKSEEDS=dir: write a few seeds (mode byte + instruction +
 * register bytes) covering each map, escape and MMIO form, and exit. */
static void mkseeds(const char *dir)
{
	static const struct { uint8_t m; const char *b; size_t n; } seeds[] = {
#define S(m, b) { m, b, sizeof(b) - 1 }
		S(0x0b, "\x89\x08"), S(0x0b, "\x88\x20"), S(0x0b, "\x40\x88\x20"),
		S(0x0b, "\x66\x89\x08"), S(0x0b, "\x4c\x89\x00"),
		S(0x0b, "\xa3\x00\x03\xe0\xfe\x00\x00\x00\x00"), S(0x08, "\x89\x07"),
		S(0x09, "\x66\x89\x07"), S(0x0a, "\x89\x0f"), S(0x0b, "\xc6\x00\x12"),
		S(0x0b, "\x48\xc7\x05\x08\x00\x00\x00\xff\xff\xff\x7f"),
		S(0x0b, "\x4c\x0f\xb6\x00"), S(0x0b, "\x48\x0f\xbf\x40\x10"), S(0x0b, "\x48\x63\x00"),
		S(0x0b, "\x21\x03"), S(0x0b, "\x80\x4f\x10\x80"), S(0x0b, "\x48\xf7\x00\x01\x00\x00\x00"),
		S(0x0b, "\x85\x00"), S(0x0b, "\x48\x87\x03"), S(0x0b, "\xf3\x48\xab"), S(0x0b, "\xaa"),
		S(0x03, "\xf0\x48\x0f\xb1\x0a"), S(0x03, "\x64\xf0\x0f\xc1\x43\x10"),
		S(0x03, "\x43\x89\x84\xf5\x00\x10\x00\x00"), S(0x03, "\x67\x89\x05\x10\x00\x00\x00"),
		S(0x03, "\x0f\x01\xd9"), S(0x07, "\x66\xe8\x00\x00"), S(0x03, "\xc8\x00\x10\x03"),
		S(0x03, "\x66\x0f\x3a\x63\x48\x10\x1a"), S(0x03, "\x0f\x0f\x08\xb4"),
		S(0x03, "\xf2\x0f\x78\xc1\x08\x04"), S(0x03, "\xc4\x81\x74\x58\x54\x88\x10"),
		S(0x03, "\xc5\xfe\x6f\x05\x00\x00\x00\x00"), S(0x03, "\xc4\xe3\xfd\x00\xc8\x4e"),
		S(0x03, "\x62\xf1\x7c\x48\x58\x50\x01"), S(0x03, "\x62\xf5\x7c\x48\x58\xc1"),
		S(0x03, "\x8f\xe8\x78\xc0\xc8\x03"), S(0x03, "\x8f\xe9\x78\x81\xc8"),
		S(0x02, "\x9a\x78\x56\x34\x12\x10\x00"), S(0x00, "\x8b\x46\x10"),
		S(0x01, "\x67\x8b\x44\x24\x10"), S(0x02, "\xc4\xe2\x7d\x92\x14\x88"),
		S(0x03, "\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x66\x90"),
		S(0x0b, "\x83\x38\xff"), S(0x0b, "\x48\x2b\x03"), S(0x0b, "\x10\x20"),
		S(0x0b, "\x66\x19\x08"), S(0x0b, "\x3a\x20"), S(0x0a, "\x82\x38\x01"),
		S(0x0b, "\xf0\x89\x08"), S(0x0b, "\xf0\x83\x28\x01"),
#undef S
	};
	char path[4096];

	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/insn-%02zu", dir, i);
		f = fopen(path, "wb");
		CHECK(f);
		fputc(seeds[i].m, f);
		fwrite(seeds[i].b, 1, seeds[i].n, f);
		for (int k = 0; k < 16 * 8 + 9; k++)	/* registers, read value, fail */
			fputc(k % 8 == 0 ? 0x80 + k : (k == 16 * 8 + 8 ? 0 : k & 3), f);
		fclose(f);
	}
	exit(0);
}

FUZZ_SEEDS_FROM(mkseeds)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct x86_insn in, again;
	uint8_t code[X86_MAX_INSN_LEN + 1];
	enum cpu_mode mode;
	unsigned flags;
	size_t avail;
	bool emulate;
	int r;

	if (size < 1)
		return 0;
	mode = (enum cpu_mode)(data[0] & 3);
	flags = (data[0] >> 2) & 1 ? X86_DF_AMD : 0;
	emulate = (data[0] >> 3) & 1;
	data++, size--;
	avail = size < X86_MAX_INSN_LEN + 1 ? size : X86_MAX_INSN_LEN + 1;
	/* An exact-size heap copy, so ASan sees any read past avail. */
	uint8_t *buf = malloc(avail ? avail : 1);
	memcpy(buf, data, avail);
	memset(code, 0, sizeof(code));
	memcpy(code, data, avail);

	r = x86_decode(buf, avail, mode, flags, &in);
	if (r > 0) {
		CHECK((size_t)r <= avail && r <= X86_MAX_INSN_LEN);
		check_fields(&in, r, mode);
		CHECK(x86_decode(buf, (size_t)r, mode, flags, &again) == r);
		/* bytes after the instruction change nothing */
		CHECK(again.opcode == in.opcode && again.map == in.map &&
		      again.prefixes == in.prefixes && again.npfx == in.npfx &&
		      again.has_modrm == in.has_modrm && again.modrm == in.modrm &&
		      again.has_mem == in.has_mem && again.base == in.base &&
		      again.index == in.index && again.scale == in.scale &&
		      again.disp == in.disp && again.disp_size == in.disp_size &&
		      again.imm == in.imm && again.imm_size == in.imm_size &&
		      again.opsize == in.opsize && again.addrsize == in.addrsize &&
		      again.vex_kind == in.vex_kind && again.rex == in.rex);
		CHECK(x86_decode(buf, (size_t)r - 1, mode, flags, &again) == -EAGAIN);
		CHECK(again.length > r - 1 && again.length <= r);
	} else if (r == -EAGAIN) {
		CHECK(in.length > avail && in.length <= X86_MAX_INSN_LEN);
	} else {
		CHECK(r == -E2BIG || r == -EILSEQ);
	}
	/* Invalid mode is refused, never a crash. */
	CHECK(x86_decode(buf, avail, (enum cpu_mode)4, flags, &again) == -EINVAL);
	free(buf);

	if (r > 0 && emulate) {
		uint64_t regs[X86_NR_REGS], before[X86_NR_REGS];
		const uint8_t *rest = data + r;
		size_t nrest = size - (size_t)r;
		struct fdev d = { 0 };

		for (int i = 0; i < X86_NR_REGS; i++) {
			uint64_t v = 0x0101010101010101ull * (uint64_t)(i + 1);
			if (nrest >= 8) {
				memcpy(&v, rest, 8);
				rest += 8, nrest -= 8;
			}
			regs[i] = v;
		}
		if (nrest >= 8) {
			memcpy(&d.rval, rest, 8);
			rest += 8, nrest -= 8;
		}
		if (nrest >= 1)
			d.fail_at = rest[0] & 3;
		memcpy(before, regs, sizeof(regs));
		int e = x86_emulate_mmio(&in, regs, 0xfee00300ull, fmmio, &d);
		CHECK(regs[X86_RIP] == before[X86_RIP]);
		if (e < 0) {
			CHECK(e == -EOPNOTSUPP || e == -EINVAL || e == -EILSEQ || e == -EIO);
			CHECK(memcmp(regs, before, sizeof(regs)) == 0);
		} else {
			CHECK(e == r || e == 0);
			if (e == 0)	/* only REP STOS re-executes */
				CHECK(in.rep != 0);
		}
		/* Sub-register access must not go out of bounds. */
		for (unsigned reg = 0; reg < 16; reg++)
			for (unsigned sz = 1; sz <= 8; sz <<= 1) {
				uint64_t v = x86_reg_read(regs, reg, sz, in.rex != 0);
				x86_reg_write(regs, reg, sz, in.rex != 0, v);
			}
	}
	return 0;
}
