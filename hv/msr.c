/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The MSR allow-list (Intel SDM Vol. 4 for the numbers, Vol. 3A 11.11-12
 * for MTRR and PAT rules).  Pure functions over struct cpu_state.
 */
#include <stddef.h>
#include "hv/msr.h"

#define EFER_WRITABLE	((1ull << 0) | (1ull << 8) | (1ull << 11))	/* SCE, LME, NXE */
#define EFER_LMA	(1ull << 10)

static bool canonical(uint64_t a)
{
	return (uint64_t)((int64_t)(a << 16) >> 16) == a;
}

/* PAT entries may hold types 0, 1, 4, 5, 6, 7 only. */
static bool pat_valid(uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		uint8_t t = v >> (i * 8);
		if (t > 7 || t == 2 || t == 3)
			return false;
	}
	return true;
}

void msr_reset(struct cpu_state *s)
{
	s->pat = 0x0007040600070406ull;
	s->mtrr_def_type = 0xc06;	/* MTRRs enabled, fixed enabled, WB */
	s->misc_enable = 1;		/* fast strings */
}

static uint64_t *state_msr(struct cpu_state *s, uint32_t index)
{
	switch (index) {
	case MSR_IA32_SYSENTER_CS:  return &s->sysenter_cs;
	case MSR_IA32_SYSENTER_ESP: return &s->sysenter_esp;
	case MSR_IA32_SYSENTER_EIP: return &s->sysenter_eip;
	case MSR_STAR:		    return &s->star;
	case MSR_LSTAR:		    return &s->lstar;
	case MSR_CSTAR:		    return &s->cstar;
	case MSR_SFMASK:	    return &s->sfmask;
	case MSR_FSBASE:	    return &s->fs.base;
	case MSR_GSBASE:	    return &s->gs.base;
	case MSR_KERNELGSBASE:	    return &s->kernel_gs_base;
	case MSR_IA32_PAT:	    return &s->pat;
	case MSR_IA32_MTRR_DEF_TYPE: return &s->mtrr_def_type;
	case MSR_IA32_MISC_ENABLE:  return &s->misc_enable;
	case MSR_EFER_:		    return &s->efer;
	}
	return NULL;
}

bool msr_in_state(uint32_t index)
{
	struct cpu_state s;

	return state_msr(&s, index) != NULL;	/* the address only, never read */
}

enum msr_status msr_read(const struct cpu_state *s, uint32_t index, uint64_t guest_tsc,
			 uint64_t *value)
{
	uint64_t *p = state_msr((struct cpu_state *)s, index);

	if (p) {
		*value = *p;
		return MSR_DONE;
	}
	switch (index) {
	case MSR_IA32_TSC:
		*value = guest_tsc;
		return MSR_DONE;
	case MSR_IA32_FEATURE_CONTROL:
		*value = 1;	/* locked, VMX off */
		return MSR_DONE;
	case MSR_IA32_UCODE_REV:
	case MSR_IA32_MTRRCAP:	/* no variable or fixed ranges to program */
		*value = 0;
		return MSR_DONE;
	}
	return MSR_GP;
}

static enum msr_status write_efer(struct cpu_state *s, uint64_t v)
{
	bool paging = s->cr0 & (1ull << 31);

	if (v & ~(EFER_WRITABLE | EFER_LMA))
		return MSR_GP;
	if (paging && ((v ^ s->efer) & (1ull << 8)))	/* LME with paging on */
		return MSR_GP;
	s->efer = (v & EFER_WRITABLE) | (s->efer & EFER_LMA);
	return MSR_DONE;
}

static bool value_ok(uint32_t index, uint64_t v)
{
	switch (index) {
	case MSR_IA32_SYSENTER_ESP: case MSR_IA32_SYSENTER_EIP:
	case MSR_LSTAR: case MSR_CSTAR: case MSR_FSBASE: case MSR_GSBASE:
	case MSR_KERNELGSBASE:
		return canonical(v);
	case MSR_IA32_SYSENTER_CS: case MSR_SFMASK:
		return v >> 32 == 0;
	case MSR_IA32_PAT:
		return pat_valid(v);
	case MSR_IA32_MTRR_DEF_TYPE:	/* MTRR types: PAT's without UC- (7) */
		return !(v & ~0xcffull) && pat_valid(v & 0xff) && (v & 0xff) != 7;
	}
	return true;
}

enum msr_status msr_write(struct cpu_state *s, uint32_t index, uint64_t value,
			  bool *tsc_written, uint64_t *new_tsc)
{
	uint64_t *p;

	*tsc_written = false;
	if (index == MSR_EFER_)
		return write_efer(s, value);
	if (index == MSR_IA32_TSC) {
		*tsc_written = true;
		*new_tsc = value;
		return MSR_DONE;
	}
	if (index == MSR_IA32_UCODE_REV)
		return MSR_DONE;	/* the microcode loader's "clear" write */
	p = state_msr(s, index);
	if (!p || !value_ok(index, value))
		return MSR_GP;
	*p = value;
	return MSR_DONE;
}
