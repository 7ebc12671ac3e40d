/* SPDX-License-Identifier: BSD-2-Clause */
/* Choosing the back end once, from what the boot CPU found. */
#include <errno.h>
#include "arch/x86/percpu.h"
#include "hv/lib/log.h"
#include "hv/vmm.h"

const struct vmm_ops *vmm;

/* On each CPU, once, before it is online: what virtualisation it has. */
void vmm_detect_this_cpu(void)
{
	virt_detect(&this_cpu()->caps);
}

int vmm_init(void)
{
	const struct virt_caps *c = &cpus[0].caps;

	if (!c->usable)
		return -ENODEV;
	vmm = c->kind == VIRT_VMX ? &vmx_ops : &svm_ops;
	return 0;
}

/* On each CPU: a CPU whose back end does not start runs no guests. */
int vmm_cpu_enable(void)
{
	struct percpu *c = this_cpu();
	int err;

	if (!vmm || !c->caps.usable || c->caps.kind != cpus[0].caps.kind)
		return -ENODEV;
	err = vmm->cpu_enable();
	if (err)
		pr_err("cpu %u: %s could not be enabled (error %d): no guests here",
		       c->index, vmm->name, err);
	return err;
}
