/* SPDX-License-Identifier: BSD-2-Clause */
/* vCPUs: creation in the multiboot1 entry state, and running them. */
#ifndef FERRY_HV_VCPU_H
#define FERRY_HV_VCPU_H

#include "hv/loader/mb1elf.h"
#include "hv/vm.h"

/* A vCPU that starts in *initial (from a loader). */
int vcpu_create(struct vm *vm, unsigned int id, const struct cpu_state *initial,
		struct vcpu **out);
/* The multiboot1 machine state (flat 32-bit protected mode) as a CPU state. */
void vcpu_mb1_state(const struct mb1_entry_state *e, struct cpu_state *s);
void vcpu_free(struct vcpu *v);

/* What vcpu_run() tells the scheduler. */
enum vcpu_run_result {
	RUN_PREEMPT,	/* slice over, or kicked: still runnable */
	RUN_HALTED,	/* waiting for an interrupt */
	RUN_NOT_RUNNABLE,	/* the VM is paused or stopped */
};

/* Run v on this CPU for up to one time slice.  Interrupts enabled. */
enum vcpu_run_result vcpu_run(struct vcpu *v);
/* True when a halted v has an interrupt it can take. */
bool vcpu_wants_wake(struct vcpu *v);
/* Make v leave the guest now and wait until no CPU runs it. */
void vcpu_kick_and_wait(struct vcpu *v);
void vcpu_kick(struct vcpu *v);
/* Sitting out a migration throttle period (the scheduler skips it). */
bool vcpu_throttled_now(struct vcpu *v);
/* Save v's extended state (x87/SSE/AVX) from whichever CPU holds it into
 * v->fpu.  v must not be running (paused VM). */
void vcpu_fpu_sync(struct vcpu *v);
/* Ask v's CPU to do that the next time it looks at its run queue (before
 * it would sleep), so that a later vcpu_fpu_sync finds it done: pausing
 * does this, and migration's stop-and-copy does not wait for a CPU to
 * wake up. */
void vcpu_fpu_sync_soon(struct vcpu *v);

/* Exit handlers (hv/exit.c): what the run loop does next. */
enum exit_action { EXIT_RESUME, EXIT_YIELD_HALT, EXIT_STOP };
enum exit_action exit_handle(struct vcpu *v, struct vm_exit *e);
const char *exit_name(enum exit_code c);

#endif
