/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The vCPU scheduler: each vCPU is placed on one physical CPU, which runs
 * its vCPUs round-robin in 10 ms slices driven by the local APIC timer and
 * sleeps (HLT) when none is runnable.  The boot CPU serves the shell and
 * only gets vCPUs when it is the only CPU.
 */
#ifndef FERRY_HV_SCHED_H
#define FERRY_HV_SCHED_H

#include <stdbool.h>
#include "hv/vm.h"

int sched_add(struct vcpu *v);		/* place and make runnable */
void sched_remove(struct vcpu *v);	/* returns once no CPU can run v */
void sched_wake(struct vcpu *v);	/* v may have become runnable */
bool sched_contended(void);		/* should the running vCPU yield? */
void sched_enable_cpu(void);		/* this CPU can run guests */
__attribute__((noreturn)) void sched_loop(void);	/* APs, forever */
void sched_poll(void);			/* the boot CPU, between shell inputs */
unsigned int sched_load(unsigned int cpu);	/* vCPUs placed on cpu */

#endif
