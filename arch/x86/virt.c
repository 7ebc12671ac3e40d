/* SPDX-License-Identifier: BSD-2-Clause */
/* Pick the back end the CPU offers and describe its features in words. */
#include <stdio.h>
#include <string.h>
#include "arch/x86/virt.h"

void virt_detect(struct virt_caps *caps)
{
	memset(caps, 0, sizeof(*caps));
	vmx_detect(caps);
	if (caps->kind == VIRT_NONE)
		svm_detect(caps);
	if (caps->kind == VIRT_NONE)
		snprintf(caps->why, sizeof(caps->why), "CPU has neither VMX nor SVM");
}

int virt_describe(const struct virt_caps *c, char *buf, int len)
{
	const char *pre = c->usable ? "" : " (unusable: ";
	const char *why = c->usable ? "" : c->why;
	const char *post = c->usable ? "" : ")";

	if (c->kind == VIRT_NONE)
		return snprintf(buf, len, "none (%s)", c->why);
	if (c->kind == VIRT_VMX)
		return snprintf(buf, len, "VMX%s%s%s%s%s%s%s%s", c->nested_paging ? " EPT" : "",
				c->unrestricted ? " unrestricted-guest" : "",
				c->tagged_tlb ? " VPID" : "", c->ad_bits ? " EPT-A/D" : "",
				c->dirty_log_hw ? " PML" : "", pre, why, post);
	return snprintf(buf, len, "SVM%s%s asids=%u%s%s%s", c->nested_paging ? " NPT" : "",
			c->next_rip ? " NRIP-save" : "", c->asids, pre, why, post);
}
