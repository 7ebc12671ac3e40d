/* SPDX-License-Identifier: BSD-2-Clause */
/* Pick the back end the CPU offers and describe its features in words. */
#include <stdio.h>
#include <string.h>
#include "arch/x86/cpu.h"
#include "arch/x86/virt.h"

#define CPUID_EXT_FEAT_EDX_1G	(1u << 26)	/* CPUID 8000_0001h EDX: 1 GiB pages */

/* What a guest page walk needs to know of the CPU; read once, here, not
 * at every exit that walks. */
static void walk_caps(struct virt_caps *c)
{
	unsigned phys = cpuid(0x80000008, 0).eax & 0xff;

	c->maxphyaddr = phys < 32 ? 32 : phys > 52 ? 52 : phys;
	c->gbpages = cpuid(0x80000001, 0).edx & CPUID_EXT_FEAT_EDX_1G;
}

void virt_detect(struct virt_caps *caps)
{
	memset(caps, 0, sizeof(*caps));
	vmx_detect(caps);
	if (caps->kind == VIRT_NONE)
		svm_detect(caps);
	if (caps->kind == VIRT_NONE)
		snprintf(caps->why, sizeof(caps->why), "CPU has neither VMX nor SVM");
	walk_caps(caps);
}

int virt_describe(const struct virt_caps *c, char *buf, int len)
{
	const char *pre = c->usable ? "" : " (unusable: ";
	const char *why = c->usable ? "" : c->why;
	const char *post = c->usable ? "" : ")";

	if (c->kind == VIRT_NONE)
		return snprintf(buf, len, "none (%s)", c->why);
	if (c->kind == VIRT_VMX)
		return snprintf(buf, len, "VMX%s%s%s%s%s%s%s%s%s%s%s", c->nested_paging ? " EPT" : "",
				c->unrestricted ? " unrestricted-guest" : "",
				c->tagged_tlb ? " VPID" : "", c->ad_bits ? " EPT-A/D" : "",
				c->dirty_log_hw ? " PML" : "", c->tsc_scaling ? " TSC-scaling" : "",
				c->pause_exiting ? " PLE" : "", c->rdcl_no ? " RDCL_NO" : "",
				pre, why, post);
	return snprintf(buf, len, "SVM%s%s%s asids=%u%s%s%s%s", c->nested_paging ? " NPT" : "",
			c->next_rip ? " NRIP-save" : "", c->pause_exiting ? " pause-filter" : "",
			c->asids, c->rdcl_no ? " RDCL_NO" : "", pre, why, post);
}
