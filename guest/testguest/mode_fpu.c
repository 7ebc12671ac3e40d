/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * testguest mode "fpu": keeps known values in xmm0-7 (ymm0-7 when AVX can
 * be enabled), four x87 stack registers, MXCSR and the x87 control word
 * while doing integer work, CPUID, port I/O and HLT (VM exits and
 * interrupts under a hypervisor), then checks that nothing changed.
 *   fpu [rounds=K] [avx=0] [chunks=N] [inject=R]
 * inject=R zeroes xmm3 in round R behind the checker's back: a self-test
 * of the checker, which must then report reg=xmm3.
 * The guest's C code is built with -mgeneral-regs-only, so only the asm
 * below touches these registers.
 */
#include "guest/testguest/arch.h"
#include "guest/testguest/tg.h"

#define CPUID_1_ECX_XSAVE (1u << 26)
#define CPUID_1_ECX_OSXSAVE (1u << 27)
#define CPUID_1_ECX_AVX (1u << 28)
#define XCR0_X87_SSE_AVX 0x7u
#define MXCSR_TEST 0x7F80u /* all masked, round toward zero (SDM 10.2.3) */
#define FCW_TEST 0x0F7Fu /* all masked, 64-bit, truncate (SDM 8.1.5) */
#define NREGS 8
#define X87_VALUES 4
#define MAX_FAIL_LINES 16

/* Register images: vec[i] is xmm i (lanes 0-3) or ymm i (lanes 0-7). */
struct fpu_image {
	uint32_t vec[NREGS][8];
	uint64_t x87[X87_VALUES]; /* x87[3] ends up in st0 */
	uint32_t mxcsr;
	uint16_t fcw;
} __attribute__((aligned(32)));

struct fpu_test {
	bool avx;
	uint32_t errors;
	uint32_t chunks;
	uint32_t inject; /* round that clobbers xmm3, 0 for none */
	struct fpu_image want, got;
};

static void load_vectors(const struct fpu_image *s, bool avx)
{
	if (avx)
		__asm__ volatile(
			"vmovdqu 0(%0), %%ymm0\n\tvmovdqu 32(%0), %%ymm1\n\t"
			"vmovdqu 64(%0), %%ymm2\n\tvmovdqu 96(%0), %%ymm3\n\t"
			"vmovdqu 128(%0), %%ymm4\n\tvmovdqu 160(%0), %%ymm5\n\t"
			"vmovdqu 192(%0), %%ymm6\n\tvmovdqu 224(%0), %%ymm7"
			: : "r"(s->vec) : "memory");
	else
		__asm__ volatile(
			"movdqu 0(%0), %%xmm0\n\tmovdqu 32(%0), %%xmm1\n\t"
			"movdqu 64(%0), %%xmm2\n\tmovdqu 96(%0), %%xmm3\n\t"
			"movdqu 128(%0), %%xmm4\n\tmovdqu 160(%0), %%xmm5\n\t"
			"movdqu 192(%0), %%xmm6\n\tmovdqu 224(%0), %%xmm7"
			: : "r"(s->vec) : "memory");
}

static void save_vectors(struct fpu_image *s, bool avx)
{
	if (avx)
		__asm__ volatile(
			"vmovdqu %%ymm0, 0(%0)\n\tvmovdqu %%ymm1, 32(%0)\n\t"
			"vmovdqu %%ymm2, 64(%0)\n\tvmovdqu %%ymm3, 96(%0)\n\t"
			"vmovdqu %%ymm4, 128(%0)\n\tvmovdqu %%ymm5, 160(%0)\n\t"
			"vmovdqu %%ymm6, 192(%0)\n\tvmovdqu %%ymm7, 224(%0)"
			: : "r"(s->vec) : "memory");
	else
		__asm__ volatile(
			"movdqu %%xmm0, 0(%0)\n\tmovdqu %%xmm1, 32(%0)\n\t"
			"movdqu %%xmm2, 64(%0)\n\tmovdqu %%xmm3, 96(%0)\n\t"
			"movdqu %%xmm4, 128(%0)\n\tmovdqu %%xmm5, 160(%0)\n\t"
			"movdqu %%xmm6, 192(%0)\n\tmovdqu %%xmm7, 224(%0)"
			: : "r"(s->vec) : "memory");
}

static void load_x87_mxcsr(const struct fpu_image *s)
{
	__asm__ volatile("ldmxcsr %0" : : "m"(s->mxcsr));
	__asm__ volatile("fninit\n\tfldcw %0" : : "m"(s->fcw));
	__asm__ volatile("fildll 0(%0)\n\tfildll 8(%0)\n\t"
			 "fildll 16(%0)\n\tfildll 24(%0)"
			 : : "r"(s->x87) : "memory");
}

static void save_x87_mxcsr(struct fpu_image *s)
{
	__asm__ volatile("stmxcsr %0" : "=m"(s->mxcsr));
	__asm__ volatile("fnstcw %0" : "=m"(s->fcw));
	__asm__ volatile("fistpll 24(%0)\n\tfistpll 16(%0)\n\t"
			 "fistpll 8(%0)\n\tfistpll 0(%0)"
			 : : "r"(s->x87) : "memory");
}

/* SDM Vol. 1 13.3: CR4.OSXSAVE, then XCR0 = x87 | SSE | AVX. */
static bool enable_avx(void)
{
	struct cpuid_regs r = cpuid(1, 0);

	if (!(r.ecx & CPUID_1_ECX_XSAVE) || !(r.ecx & CPUID_1_ECX_AVX))
		return false;
	if ((cpuid(0xD, 0).eax & XCR0_X87_SSE_AVX) != XCR0_X87_SSE_AVX)
		return false;
	write_cr4(read_cr4() | CR4_OSXSAVE);
	__asm__ volatile("xsetbv" : : "c"(0), "a"(XCR0_X87_SSE_AVX), "d"(0));
	return cpuid(1, 0).ecx & CPUID_1_ECX_OSXSAVE;
}

/* SDM Vol. 3A 13.1.3: SSE needs CR0.EM clear, CR0.MP and CR4.OSFXSR. */
static void enable_sse(void)
{
	write_cr0((read_cr0() & ~(CR0_EM | CR0_TS)) | CR0_MP);
	write_cr4(read_cr4() | CR4_OSFXSR | CR4_OSXMMEXCPT);
}

static void make_image(struct fpu_image *s, uint32_t round)
{
	for (uint32_t i = 0; i < NREGS; i++)
		for (uint32_t j = 0; j < 8; j++)
			s->vec[i][j] = tg_mix32(round * 64 + i * 8 + j + 1);
	for (uint32_t i = 0; i < X87_VALUES; i++)
		s->x87[i] = ((uint64_t)tg_mix32(round ^ (i << 24)) << 30) -
			    (uint64_t)round * 977;
	s->mxcsr = MXCSR_TEST;
	s->fcw = FCW_TEST;
}

/* Integer work with CPUID and port I/O (VM exits) in between, and one
 * sleep until the next timer interrupt. */
static uint32_t churn(uint32_t round, uint32_t chunks)
{
	uint32_t s = round * 2654435761u | 1, acc = 0;

	for (uint32_t k = 0; k < chunks; k++) {
		for (int i = 0; i < 4096; i++)
			acc += tg_xorshift32(&s) * 2654435761u;
		acc ^= cpuid(k & 1 ? 1 : 0, 0).eax;
		outb(0x80, (uint8_t)acc);
		acc += inb(0x80);
	}
	tg_wait_tick_edge();
	return acc;
}

/* Reports one corrupted register; idx < 0 for registers without one. */
static void fail(struct fpu_test *t, uint32_t round, const char *reg,
		 int idx, uint64_t want, uint64_t got)
{
	if (t->errors++ >= MAX_FAIL_LINES)
		return;
	tg_printf("TG FAIL fpu reg=%s", reg);
	if (idx >= 0)
		tg_printf("%d", idx);
	tg_printf(" round=%u want=0x%llx got=0x%llx\n", round, want, got);
}

static void compare_vectors(struct fpu_test *t, uint32_t round)
{
	uint32_t lanes = t->avx ? 8 : 4;

	for (uint32_t i = 0; i < NREGS; i++)
		for (uint32_t j = 0; j < lanes; j++)
			if (t->want.vec[i][j] != t->got.vec[i][j]) {
				fail(t, round, j < 4 ? "xmm" : "ymm", (int)i,
				     t->want.vec[i][j], t->got.vec[i][j]);
				break;
			}
}

static void compare(struct fpu_test *t, uint32_t round)
{
	compare_vectors(t, round);
	for (uint32_t i = 0; i < X87_VALUES; i++)
		if (t->want.x87[i] != t->got.x87[i])
			fail(t, round, "st", (int)(X87_VALUES - 1 - i),
			     t->want.x87[i], t->got.x87[i]);
	if (t->want.mxcsr != t->got.mxcsr)
		fail(t, round, "mxcsr", -1, t->want.mxcsr, t->got.mxcsr);
	if (t->want.fcw != t->got.fcw)
		fail(t, round, "fcw", -1, t->want.fcw, t->got.fcw);
}

static uint32_t one_round(struct fpu_test *t, uint32_t round)
{
	uint32_t acc, before = t->errors;

	make_image(&t->want, round);
	memset(&t->got, 0, sizeof(t->got));
	load_vectors(&t->want, t->avx);
	load_x87_mxcsr(&t->want);
	acc = churn(round, t->chunks);
	if (round == t->inject)
		__asm__ volatile("pxor %%xmm3, %%xmm3" : : : "memory");
	save_x87_mxcsr(&t->got);
	save_vectors(&t->got, t->avx);
	compare(t, round);
	return t->errors == before ? acc : 0;
}

void mode_fpu(void)
{
	static struct fpu_test t;
	uint32_t rounds = tg_opt_u32("rounds", 0), last_print = 0;
	uint32_t acc = 0;

	t.chunks = tg_opt_u32("chunks", 16);
	t.inject = tg_opt_u32("inject", 0);
	enable_sse();
	t.avx = tg_opt_u32("avx", 1) && enable_avx();
	tg_printf("TG fpu start sse=1 avx=%d rounds=%u chunks=%u\n", t.avx,
		  rounds, t.chunks);
	for (uint32_t k = 1; !rounds || k <= rounds; k++) {
		acc ^= one_round(&t, k);
		if (k == 1 || k == rounds || tg_ticks - last_print >= TG_HZ) {
			last_print = tg_ticks;
			if (t.errors)
				tg_printf("TG fpu round=%u errors=%u\n", k, t.errors);
			else
				tg_printf("TG fpu round=%u ok\n", k);
		}
	}
	tg_printf("TG fpu done rounds=%u errors=%u acc=0x%08x\n", rounds,
		  t.errors, acc);
	tg_printf(t.errors ? "TG FAIL fpu\n" : "TG PASS fpu\n");
	tg_poweroff();
}
