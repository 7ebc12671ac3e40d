/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The host seam for hv/vcpu.c and hv/sched.c: both are compiled here
 * unchanged, with the four privileged primitives they use replaced by
 * macros, because a host process cannot run them: this_cpu() reads %gs,
 * irq_disable()/irq_enable() are CLI/STI and cpu_idle() is HLT.  The arch
 * headers are included first, so the product's includes of them are
 * no-ops and the macros apply only to the calls.
 */
#include "arch/x86/cpu.h"
#include "arch/x86/percpu.h"
#include "tests/unit/core_fake.h"

#define this_cpu() fake_this_cpu()
#define irq_disable() fake_irq(false)
#define irq_enable() fake_irq(true)
#define cpu_idle() fake_idle()

#include "hv/vcpu.c"
#include "hv/sched.c"

/* For the tests: empty run queues and policy, as at boot, and one round
 * of a CPU's scheduler loop. */
void fake_sched_reset(void)
{
	sched_init();
}

bool fake_sched_run(unsigned int cpu)
{
	fake_cpu = cpu;
	return run_one(&runqs[cpu]);
}

void fake_sched_loop_once(unsigned int cpu)
{
	fake_cpu = cpu;
	loop_once(&runqs[cpu]);
}
