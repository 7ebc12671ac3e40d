/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The vCPU scheduler: each vCPU is placed on one physical CPU (the least
 * loaded one its pinning allows), which runs its vCPUs by the credit
 * policy (hv/sched/credit.c: weights, caps, wake-up boost; slices end on
 * the local APIC timer) and sleeps (HLT) when none is runnable.  The boot
 * CPU serves the shell and only gets vCPUs when it is the only CPU.
 */
#ifndef FERRY_HV_SCHED_H
#define FERRY_HV_SCHED_H

#include <stdbool.h>
#include "hv/vm.h"

void sched_init(void);			/* boot CPU, before guests can run */
int sched_add(struct vcpu *v);		/* place and make runnable */
void sched_remove(struct vcpu *v);	/* returns once no CPU can run v */
void sched_wake(struct vcpu *v);	/* v may have become runnable */
/* From vcpu_run after an exit: give the CPU back now? (start_tick: the
 * timer tick the run began at) */
bool sched_preempt(uint64_t start_tick);
/* From vcpu_run on this CPU: the running vCPU gives up the rest of its
 * slice (it spins); the next pick prefers any other that waits. */
void sched_yield_cpu(void);
/* v's share: weight 1..65535 (256 default), cap in basis points of one CPU
 * (0: none); takes effect at once.  -EINVAL and nothing changed if bad. */
int sched_set_share(struct vcpu *v, uint32_t weight, uint32_t cap_bp);
/* The host CPUs v may run on (bit i: CPU i; SCHED_AFFINITY_ANY: all); moves
 * it now if its CPU is not among them.  -EINVAL if none can run guests. */
int sched_pin(struct vcpu *v, uint64_t affinity);
void sched_enable_cpu(void);		/* this CPU can run guests */
__attribute__((noreturn)) void sched_loop(void);	/* APs, forever */
/* The boot CPU, between shell inputs: true when a vCPU of its own (a
 * 1-CPU host's) can run at once, so that the shell must not sleep. */
bool sched_poll(void);
unsigned int sched_load(unsigned int cpu);	/* vCPUs placed on cpu */

#endif
