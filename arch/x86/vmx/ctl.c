/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * From the VMX capability MSRs to every control ferry writes: nothing is
 * hard-coded, each control word comes out of vmx_adjust_ctl() (Intel SDM
 * Vol. 3C appendix A "VMX Capability Reporting Facility", A.3-A.5 and
 * A.7-A.8 for the CR fixed bits), and the MSR bitmap ("MSR-Bitmap
 * Address" in "VM-Execution Control Fields").  Pure logic.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "arch/x86/cpu.h"
#include "arch/x86/msr_pass.h"
#include "arch/x86/paging.h"
#include "arch/x86/vmx/vmcs.h"
#include "arch/x86/vmx/vmx.h"

/*
 * A capability MSR holds the allowed 0-settings in bits 31:0 (a 1 there:
 * the control must be 1) and the allowed 1-settings in bits 63:32 (a 0
 * there: the control must be 0).  Result: the forced bits, every wanted
 * bit (-ENOTSUP if one cannot be 1) and the optional bits the CPU allows.
 * -EINVAL if the MSR contradicts itself (a bit that must be both).
 */
int vmx_adjust_ctl(uint32_t want, uint32_t optional, uint64_t cap_msr, uint32_t *out)
{
	uint32_t must1 = (uint32_t)cap_msr;
	uint32_t may1 = (uint32_t)(cap_msr >> 32);

	if (must1 & ~may1)
		return -EINVAL;
	if (want & ~may1)
		return -ENOTSUP;
	*out = must1 | want | (optional & may1);
	return 0;
}

/* vmx_adjust_ctl with the refusal in words. */
static int adjust(const char *what, uint32_t want, uint32_t optional, uint64_t cap,
		  uint32_t *out, char *why, size_t len)
{
	int rc = vmx_adjust_ctl(want, optional, cap, out);

	if (rc == -ENOTSUP)
		snprintf(why, len, "%s controls %#x not supported (allowed-1 %#x)", what,
			 want & ~(uint32_t)(cap >> 32), (uint32_t)(cap >> 32));
	else if (rc)
		snprintf(why, len, "%s capability MSR is inconsistent (%#llx)", what,
			 (unsigned long long)cap);
	return rc;
}

/* A control ferry toggles at run time must be free in both directions. */
static int togglable(const char *what, uint32_t bit, uint64_t cap, char *why, size_t len)
{
	if (((uint32_t)(cap >> 32) & bit) && !((uint32_t)cap & bit))
		return 0;
	snprintf(why, len, "%s control %#x cannot be toggled", what, bit);
	return -ENOTSUP;
}

/* A control ferry must not have set. */
static int must_be_clear(const char *what, uint32_t ctl, uint32_t bit, char *why, size_t len)
{
	if (!(ctl & bit))
		return 0;
	snprintf(why, len, "%s control %#x is forced on by the CPU", what, bit);
	return -ENOTSUP;
}

/* Pin-based, primary and secondary execution controls. */
static int derive_exec(const struct vmx_caps *c, bool tc, struct vmx_config *cfg,
		       char *why, size_t len)
{
	const uint32_t proc_want = PROC_HLT_EXITING | PROC_TSC_OFFSETTING |
		PROC_UNCOND_IO_EXITING | PROC_USE_MSR_BITMAPS | PROC_SECONDARY_CTLS |
		PROC_MWAIT_EXITING | PROC_MONITOR_EXITING | PROC_RDPMC_EXITING |
		PROC_CR8_LOAD_EXITING | PROC_CR8_STORE_EXITING;
	uint64_t proc_cap = tc ? c->true_proc : c->proc;
	int rc;

	rc = adjust("pin-based", PIN_EXT_INT_EXITING | PIN_NMI_EXITING,
		    PIN_VIRTUAL_NMIS | PIN_PREEMPTION_TIMER, tc ? c->true_pin : c->pin, &cfg->pin,
		    why, len);
	if (!rc)
		rc = adjust("primary processor-based", proc_want, 0, proc_cap, &cfg->proc, why, len);
	if (!rc)
		rc = togglable("interrupt-window exiting", PROC_INTR_WINDOW_EXITING, proc_cap, why, len);
	if (!rc)	/* a scaled guest TSC without the CPU's scaling (hv/tsc.h) */
		rc = togglable("RDTSC exiting", PROC_RDTSC_EXITING, proc_cap, why, len);
	if (!rc)
		rc = must_be_clear("use I/O bitmaps", cfg->proc, PROC_USE_IO_BITMAPS, why, len);
	if (!rc)
		rc = adjust("secondary processor-based", PROC2_EPT | PROC2_UNRESTRICTED_GUEST,
			    PROC2_VPID | PROC2_WBINVD_EXITING | PROC2_PAUSE_LOOP_EXITING, c->proc2,
			    &cfg->proc2, why, len);
	if (!rc)
		rc = must_be_clear("PML", cfg->proc2, PROC2_PML, why, len);
	cfg->vnmi = cfg->pin & PIN_VIRTUAL_NMIS;
	cfg->preempt_timer = cfg->pin & PIN_PREEMPTION_TIMER;
	cfg->preempt_shift = (uint8_t)(c->misc & 0x1f);
	cfg->tsc_scaling = !(cfg->proc2 & PROC2_TSC_SCALING) &&
		((c->proc2 >> 32) & PROC2_TSC_SCALING);
	return rc;
}

static int derive_exit_entry(const struct vmx_caps *c, bool tc, struct vmx_config *cfg,
			     char *why, size_t len)
{
	uint64_t entry_cap = tc ? c->true_entry : c->entry;
	int rc;

	/* Debug controls: the guest's DR7 and DEBUGCTL live in the VMCS, so
	 * that its breakpoints survive exits (an exit sets DR7 to 400h). */
	rc = adjust("VM-exit", EXITCTL_HOST_ADDR_SPACE | EXITCTL_SAVE_EFER |
		    EXITCTL_LOAD_EFER | EXITCTL_SAVE_PAT | EXITCTL_LOAD_PAT | EXITCTL_SAVE_DEBUG, 0,
		    tc ? c->true_exit : c->exit, &cfg->exit, why, len);
	/* Off, so the host interrupt stays pending in the local APIC and is
	 * taken when the core enables interrupts after the run. */
	if (!rc)
		rc = must_be_clear("acknowledge interrupt on exit", cfg->exit,
				   EXITCTL_ACK_INTR_ON_EXIT, why, len);
	if (!rc)
		rc = adjust("VM-entry", ENTRYCTL_LOAD_EFER | ENTRYCTL_LOAD_PAT | ENTRYCTL_LOAD_DEBUG,
			    0, entry_cap, &cfg->entry, why, len);
	if (!rc)
		rc = togglable("IA-32e mode guest", ENTRYCTL_IA32E_GUEST, entry_cap, why, len);
	return rc;
}

/* EPT must walk 4 levels into WB tables and be flushable; VPIDs are used
 * only when INVVPID can flush them. */
static int derive_ept_vpid(const struct vmx_caps *c, struct vmx_config *cfg,
			   char *why, size_t len)
{
	uint64_t cap = c->ept_vpid;

	if (!(cap & EPT_CAP_WALK4) || !(cap & EPT_CAP_WB) || !(cap & EPT_CAP_INVEPT) ||
	    !(cap & (EPT_CAP_INVEPT_SINGLE | EPT_CAP_INVEPT_ALL))) {
		snprintf(why, len, "EPT lacks 4-level WB tables or INVEPT (cap %#llx)",
			 (unsigned long long)cap);
		return -ENOTSUP;
	}
	cfg->invept_single = cap & EPT_CAP_INVEPT_SINGLE;
	cfg->ept_max_page = (cap & EPT_CAP_2M) ? PT_SIZE_2M : PT_SIZE_4K;
	cfg->ept_ad = cap & EPT_CAP_AD;
	cfg->pml = (c->proc2 >> 32) & PROC2_PML;
	if (!(cap & VPID_CAP_INVVPID) ||
	    !(cap & (VPID_CAP_INVVPID_SINGLE | VPID_CAP_INVVPID_ALL)))
		cfg->proc2 &= ~PROC2_VPID;
	cfg->vpid = cfg->proc2 & PROC2_VPID;
	cfg->invvpid_single = cap & VPID_CAP_INVVPID_SINGLE;
	return 0;
}

/* Fixed CR bits (A.7, A.8): a bit set in FIXED0 must be 1, a bit clear in
 * FIXED1 must be 0.  Unrestricted guest frees CR0.PE and CR0.PG.  The CR4
 * mask also holds the bits the guest's CPUID hides (hv/cpuid.c), so that
 * setting one exits and is #GP (cr.c) whatever this CPU supports. */
static int derive_cr(const struct vmx_caps *c, struct vmx_config *cfg, char *why, size_t len)
{
	cfg->cr0_must1 = c->cr0_fixed0 & ~(uint64_t)(CR0_PE | CR0_PG);
	cfg->cr0_must0 = ~c->cr0_fixed1;
	cfg->cr4_must1 = c->cr4_fixed0;
	cfg->cr4_must0 = ~c->cr4_fixed1;
	if ((cfg->cr0_must1 & cfg->cr0_must0) || (cfg->cr4_must1 & cfg->cr4_must0) ||
	    !(cfg->cr4_must1 & CR4_VMXE) || (cfg->cr0_must0 & (CR0_PE | CR0_PG))) {
		snprintf(why, len, "inconsistent CR fixed bits (CR0 %#llx/%#llx, CR4 %#llx/%#llx)",
			 (unsigned long long)c->cr0_fixed0, (unsigned long long)c->cr0_fixed1,
			 (unsigned long long)c->cr4_fixed0, (unsigned long long)c->cr4_fixed1);
		return -ENOTSUP;
	}
	cfg->cr0_mask = cfg->cr0_must1 | cfg->cr0_must0;
	cfg->cr4_mask = cfg->cr4_must1 | cfg->cr4_must0 | ~VMM_GUEST_CR4_BITS;
	return 0;
}

static int check_basic(const struct vmx_caps *c, char *why, size_t len)
{
	uint64_t size = (c->basic >> VMX_BASIC_SIZE_SHIFT) & VMX_BASIC_SIZE_MASK;

	if (size == 0 || size > 4096) {
		snprintf(why, len, "VMCS region size %llu is not 1..4096", (unsigned long long)size);
		return -ENOTSUP;
	}
	if (!(c->misc & VMX_MISC_EXIT_SAVES_LMA)) {
		snprintf(why, len, "VM exits do not save EFER.LMA (IA32_VMX_MISC bit 5)");
		return -ENOTSUP;
	}
	return 0;
}

/* Every control value and mask from the capability MSRs; 0, or -ENOTSUP
 * (or -EINVAL for contradictory MSRs) with the reason in why. */
int vmx_config_derive(const struct vmx_caps *caps, struct vmx_config *cfg,
		      char *why, size_t whylen)
{
	bool tc = caps->basic & VMX_BASIC_TRUE_CTLS;
	int rc;

	memset(cfg, 0, sizeof(*cfg));
	cfg->revision = caps->basic & VMX_BASIC_REVISION_MASK;
	cfg->pa32 = caps->basic & VMX_BASIC_PA32;
	rc = check_basic(caps, why, whylen);
	if (!rc)
		rc = derive_exec(caps, tc, cfg, why, whylen);
	if (!rc)
		rc = derive_exit_entry(caps, tc, cfg, why, whylen);
	if (!rc)
		rc = derive_ept_vpid(caps, cfg, why, whylen);
	if (!rc)
		rc = derive_cr(caps, cfg, why, whylen);
	return rc;
}

/*
 * MSR bitmap: read-low (MSRs 0-1FFFh) at byte 0, read-high (C0000000h-
 * C0001FFFh) at 1024, write-low at 2048, write-high at 3072; a set bit
 * makes the access exit.  Everything exits but the MSRs of the shared
 * pass-through list (arch/x86/msr_pass.c) marked for VMX.
 */
#define MSR_BITMAP_SIZE 4096
#define MSR_HIGH_BASE	0xc0000000u
#define MSR_RANGE	0x2000u

/* Byte and bit of msr's read or write bit; false if outside both ranges. */
static bool msr_bit(uint32_t msr, bool write, size_t *byte, unsigned *bit)
{
	size_t base = write ? 2048 : 0;

	if (msr >= MSR_HIGH_BASE && msr - MSR_HIGH_BASE < MSR_RANGE) {
		base += 1024;
		msr -= MSR_HIGH_BASE;
	} else if (msr >= MSR_RANGE) {
		return false;
	}
	*byte = base + msr / 8;
	*bit = msr % 8;
	return true;
}

void vmx_msr_bitmap_init(uint8_t *bitmap)
{
	size_t byte;
	unsigned bit;

	memset(bitmap, 0xff, MSR_BITMAP_SIZE);
	for (size_t i = 0; i < msr_pass_count; i++) {
		if (!(msr_pass_list[i].vendors & MSR_PASS_VMX))
			continue;
		for (int w = 0; w < 2; w++)
			if (msr_bit(msr_pass_list[i].msr, w, &byte, &bit))
				bitmap[byte] &= ~(1u << bit);
	}
}

/* Would this access exit?  (MSRs outside both ranges always do.) */
bool vmx_msr_bitmap_exits(const uint8_t *bitmap, uint32_t msr, bool write)
{
	size_t byte;
	unsigned bit;

	if (!msr_bit(msr, write, &byte, &bit))
		return true;
	return bitmap[byte] & (1u << bit);
}
