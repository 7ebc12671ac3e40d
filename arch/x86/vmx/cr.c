/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Control-register access exits, handled inside the back end so the core
 * never sees them (Intel SDM Vol. 3C "Exit Qualification for Control-
 * Register Accesses", Table 27-3/28-3).  They happen when a guest write
 * touches a bit of the CR0/CR4 guest/host masks (the VMX fixed bits, e.g.
 * CR0.NE and CR4.VMXE) and, on CPUs without true controls, for MOV CR3
 * (MOV CR8 exits too, and goes to the core: exit.c decode_cr8).  Each
 * write is carried out as the CPU would (Vol. 3A "MOV-Move to/from Control
 * Registers"): checks that #GP, EFER.LMA and the IA-32e mode control when
 * paging is switched, PDPTEs loaded for PAE paging outside long mode
 * ("Loading Page-Directory-Pointer-Table Entries"), and a flush of the
 * guest's TLB where the architecture flushes.  Pure logic.
 */
#include <string.h>
#include "arch/x86/cpu.h"
#include "arch/x86/vmx/vmcs.h"
#include "arch/x86/vmx/vmx.h"

#define CR4_PSE		(1ull << 4)
#define CR4_PCIDE	(1ull << 17)
#define CR4_SMEP	(1ull << 20)
#define CR4_SMAP	(1ull << 21)
#define CR3_NOFLUSH	(1ull << 63)
#define CR0_FLUSH_BITS	(CR0_PG | CR0_WP | CR0_PE | CR0_CD)
#define CR4_FLUSH_BITS	(CR4_PGE | CR4_PAE | CR4_PSE | CR4_PCIDE | CR4_SMEP | CR4_SMAP)
#define CR4_PDPTE_BITS	(CR4_PGE | CR4_PAE | CR4_PSE | CR4_SMEP)
#define PDPTE_P		1ull
/* 2:1, 8:5, and 63:MAXPHYADDR (the guest's, which is below any host's: an
 * entry the guest's own CPU would refuse must not reach VM entry, which
 * checks the host's) */
#define PDPTE_RSVD	(0x1e6ull | ~0ull << VMM_GUEST_PHYS_BITS)
#define CR3_RSVD	(~0ull << VMM_GUEST_PHYS_BITS)
#define AR_L		(1u << 13)

struct cr_state {		/* the guest's view, read once */
	uint64_t cr0, cr4, efer, entry;
	bool code64;		/* 64-bit code: 64-bit operands */
};

static void cr_state_read(const struct vmx_cr_env *env, struct cr_state *st)
{
	const struct vmcs_io *io = env->io;

	st->cr0 = vmx_cr_view(vmcs_rd(io, VMCS_GUEST_CR0), vmcs_rd(io, VMCS_CR0_SHADOW),
			      env->cfg->cr0_mask);
	st->cr4 = vmx_cr_view(vmcs_rd(io, VMCS_GUEST_CR4), vmcs_rd(io, VMCS_CR4_SHADOW),
			      env->cfg->cr4_mask);
	st->efer = vmcs_rd(io, VMCS_GUEST_EFER);
	st->entry = vmcs_rd(io, VMCS_ENTRY_CTLS);
	st->code64 = (st->efer & EFER_LMA) && (vmcs_rd(io, VMCS_GUEST_CS_AR) & AR_L);
}

static bool pae_legacy(uint64_t cr0, uint64_t cr4, uint64_t efer)
{
	return (cr0 & CR0_PG) && (cr4 & CR4_PAE) && !(efer & EFER_LMA);
}

/* The four PDPTEs at cr3[31:5]; false (-> #GP) if unreadable or a present
 * entry has reserved bits set. */
static bool pdptes_read(const struct vmx_cr_env *env, uint64_t cr3, uint64_t pdpte[4])
{
	if (env->read_gpa(env->gpa_ctx, cr3 & 0xffffffe0ull, pdpte, 4 * sizeof(uint64_t)))
		return false;
	for (int i = 0; i < 4; i++)
		if ((pdpte[i] & PDPTE_P) && (pdpte[i] & PDPTE_RSVD))
			return false;
	return true;
}

static void pdptes_write(const struct vmcs_io *io, const uint64_t pdpte[4])
{
	for (int i = 0; i < 4; i++)
		vmcs_wr(io, VMCS_GUEST_PDPTE0 + 2 * i, pdpte[i]);
}

void vmx_cr_load_pdptes(const struct vmx_cr_env *env)
{
	struct cr_state st;
	uint64_t pdpte[4] = { 0 };

	cr_state_read(env, &st);
	if (!pae_legacy(st.cr0, st.cr4, st.efer))
		return;
	if (!pdptes_read(env, vmcs_rd(env->io, VMCS_GUEST_CR3), pdpte))
		memset(pdpte, 0, sizeof(pdpte));
	pdptes_write(env->io, pdpte);
}

static void cr_commit(const struct vmcs_io *io, uint32_t real_field, uint32_t shadow_field,
		      uint64_t view, uint64_t must1, uint64_t must0)
{
	vmcs_wr(io, real_field, (view | must1) & ~must0);
	vmcs_wr(io, shadow_field, view);
}

/* Paging switched on or off with EFER.LME: long mode follows (LMA and the
 * IA-32e mode guest control).  False if the switch #GPs. */
static bool cr0_long_mode(struct cr_state *st, uint64_t val)
{
	if (!(st->cr0 & CR0_PG) && (val & CR0_PG) && (st->efer & EFER_LME)) {
		if (!(st->cr4 & CR4_PAE))
			return false;
		st->efer |= EFER_LMA;
		st->entry |= ENTRYCTL_IA32E_GUEST;
	} else if ((st->cr0 & CR0_PG) && !(val & CR0_PG) && (st->efer & EFER_LMA)) {
		if (st->code64)
			return false;
		st->efer &= ~(uint64_t)EFER_LMA;
		st->entry &= ~(uint64_t)ENTRYCTL_IA32E_GUEST;
	}
	return true;
}

static enum vmx_cr_result cr0_write(const struct vmx_cr_env *env, uint64_t val)
{
	const struct vmcs_io *io = env->io;
	const struct vmx_config *cfg = env->cfg;
	struct cr_state st;
	uint64_t old, pdpte[4];
	bool load_pdptes;

	cr_state_read(env, &st);
	old = st.cr0;
	if ((val >> 32) || ((val & CR0_PG) && !(val & CR0_PE)) ||
	    ((val & CR0_NW) && !(val & CR0_CD)) || !cr0_long_mode(&st, val))
		return VMX_CR_GP;
	load_pdptes = !(old & CR0_PG) && pae_legacy(val, st.cr4, st.efer);
	if (load_pdptes && !pdptes_read(env, vmcs_rd(io, VMCS_GUEST_CR3), pdpte))
		return VMX_CR_GP;
	cr_commit(io, VMCS_GUEST_CR0, VMCS_CR0_SHADOW, val, cfg->cr0_must1, cfg->cr0_must0);
	vmcs_wr(io, VMCS_GUEST_EFER, st.efer);
	vmcs_wr(io, VMCS_ENTRY_CTLS, st.entry);
	if (load_pdptes)
		pdptes_write(io, pdpte);
	if ((old ^ val) & CR0_FLUSH_BITS)
		env->soft->flush_vpid = true;
	return VMX_CR_DONE;
}

static enum vmx_cr_result cr4_write(const struct vmx_cr_env *env, uint64_t val)
{
	const struct vmcs_io *io = env->io;
	const struct vmx_config *cfg = env->cfg;
	struct cr_state st;
	uint64_t pdpte[4];
	bool load_pdptes;

	cr_state_read(env, &st);
	/* Bits the guest's CPUID hides (VMXE among them) are reserved to it. */
	if ((val & cfg->cr4_must0) || (val & ~VMM_GUEST_CR4_BITS) ||
	    ((st.efer & EFER_LMA) && !(val & CR4_PAE)))
		return VMX_CR_GP;
	load_pdptes = pae_legacy(st.cr0, val, st.efer) && ((st.cr4 ^ val) & CR4_PDPTE_BITS);
	if (load_pdptes && !pdptes_read(env, vmcs_rd(io, VMCS_GUEST_CR3), pdpte))
		return VMX_CR_GP;
	cr_commit(io, VMCS_GUEST_CR4, VMCS_CR4_SHADOW, val, cfg->cr4_must1, cfg->cr4_must0);
	if (load_pdptes)
		pdptes_write(io, pdpte);
	if ((st.cr4 ^ val) & CR4_FLUSH_BITS)
		env->soft->flush_vpid = true;
	return VMX_CR_DONE;
}

static enum vmx_cr_result cr3_write(const struct vmx_cr_env *env, uint64_t val)
{
	struct cr_state st;
	uint64_t pdpte[4];
	bool flush = true;

	cr_state_read(env, &st);
	if ((st.cr4 & CR4_PCIDE) && (val & CR3_NOFLUSH)) {
		flush = false;
		val &= ~CR3_NOFLUSH;
	}
	if ((st.efer & EFER_LMA) && (val & CR3_RSVD))
		return VMX_CR_GP;	/* beyond the address width */
	if (pae_legacy(st.cr0, st.cr4, st.efer)) {
		if (!pdptes_read(env, val, pdpte))
			return VMX_CR_GP;
		pdptes_write(env->io, pdpte);
	}
	vmcs_wr(env->io, VMCS_GUEST_CR3, val);
	if (flush)
		env->soft->flush_vpid = true;
	return VMX_CR_DONE;
}

static enum vmx_cr_result mov_to_cr(const struct vmx_cr_env *env, unsigned cr, uint64_t val)
{
	switch (cr) {
	case 0:
		return cr0_write(env, val);
	case 3:
		return cr3_write(env, val);
	case 4:
		return cr4_write(env, val);
	default:			/* CR8 is the core's (exit.c decode_cr8) */
		return VMX_CR_UNHANDLED;
	}
}

static enum vmx_cr_result mov_from_cr(const struct vmx_cr_env *env, unsigned cr,
				      unsigned reg, bool code64)
{
	uint64_t val;

	if (cr == 3)
		val = vmcs_rd(env->io, VMCS_GUEST_CR3);
	else
		return VMX_CR_UNHANDLED;	/* CR0/CR4 reads never exit; CR8 is the core's */
	env->gpr[reg] = code64 ? val : (uint32_t)val;
	return VMX_CR_DONE;
}

/*
 * Carry out the access described by qual.  VMX_CR_DONE: step over the
 * instruction; VMX_CR_GP: inject #GP(0) instead, nothing changed;
 * VMX_CR_UNHANDLED: a qualification no CPU produces here.
 */
enum vmx_cr_result vmx_cr_access(const struct vmx_cr_env *env, uint64_t qual)
{
	unsigned cr = qual & CR_QUAL_CR_MASK;
	unsigned type = (qual >> CR_QUAL_TYPE_SHIFT) & 3;
	unsigned reg = (qual >> CR_QUAL_GPR_SHIFT) & 0xf;
	uint64_t lmsw = (qual >> CR_QUAL_LMSW_SHIFT) & 0xffff;
	struct cr_state st;

	cr_state_read(env, &st);
	switch (type) {
	case CR_TYPE_MOV_TO:
		return mov_to_cr(env, cr, st.code64 ? env->gpr[reg] : (uint32_t)env->gpr[reg]);
	case CR_TYPE_MOV_FROM:
		return mov_from_cr(env, cr, reg, st.code64);
	case CR_TYPE_CLTS:
		return cr0_write(env, st.cr0 & ~(uint64_t)CR0_TS);
	default:	/* LMSW: loads PE MP EM TS, can set PE but not clear it */
		return cr0_write(env, (st.cr0 & ~0xfull) | (lmsw & 0xf) | (st.cr0 & CR0_PE));
	}
}
