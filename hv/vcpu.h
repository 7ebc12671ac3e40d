/* SPDX-License-Identifier: BSD-2-Clause */
/* vCPUs: creation in the multiboot1 entry state, and running them. */
#ifndef FERRY_HV_VCPU_H
#define FERRY_HV_VCPU_H

#include "hv/loader/mb1elf.h"
#include "hv/vm.h"

/* A vCPU that starts in *initial (from a loader). */
int vcpu_create(struct vm *vm, unsigned int id, const struct cpu_state *initial,
		struct vcpu **out);
/* The state after INIT (real mode at F000:FFF0), as application processors
 * start before their SIPI. */
void vcpu_init_state(struct cpu_state *s);
/* The multiboot1 machine state (flat 32-bit protected mode) as a CPU state. */
void vcpu_mb1_state(const struct mb1_entry_state *e, struct cpu_state *s);
void vcpu_free(struct vcpu *v);
/* From v's own CPU: v starts again in *s (a reboot), extended state and
 * XCR0 as at power-on. */
void vcpu_reset(struct vcpu *v, const struct cpu_state *s);

/*
 * The state machine of hv/vm.h.  vcpu_set_state: v goes from `from` to
 * `to`; panics if that is not in the table or v is not in `from` (both
 * are ferry's bugs).  The caller holds the lock the table names.
 */
void vcpu_set_state(struct vcpu *v, enum vcpu_state from, enum vcpu_state to);
bool vcpu_state_legal(enum vcpu_state from, enum vcpu_state to);
enum vcpu_state vcpu_state(const struct vcpu *v);	/* atomic read */
const char *vcpu_state_name(enum vcpu_state s);

/* Requests (VCPU_REQ_*): set by anyone; taken (tested and cleared) by the
 * CPU v is placed on. */
void vcpu_request(struct vcpu *v, uint32_t req);
bool vcpu_take_request(struct vcpu *v, uint32_t req);
bool vcpu_has_request(const struct vcpu *v, uint32_t req);

/*
 * Run v on this CPU for up to one time slice; v is RUNNING (picked by the
 * scheduler).  Interrupts enabled.  Returns the state v leaves in, for the
 * scheduler to set: VCPU_HALTED when the guest waits in HLT for an
 * interrupt, else VCPU_RUNNABLE (slice over, kicked, or the VM is paused or
 * stopped).
 */
enum vcpu_state vcpu_run(struct vcpu *v);
/* True when a halted v has an interrupt it can take. */
bool vcpu_wants_wake(struct vcpu *v);
/* This CPU's timer wakes it when v's next device timer is due (found when
 * v last looked for an interrupt and had none, or took one), not at its
 * next tick: for v's entry, or v halted on this CPU as it idles.
 * Interrupts off. */
void vcpu_arm_timer(struct vcpu *v);
/* v was sent an interrupt or event: interrupt the CPU it is placed on. */
void vcpu_notify(struct vcpu *v);
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
/* EXIT_YIELD: the vCPU spins (a PAUSE loop): let another vCPU have the CPU. */
enum exit_action { EXIT_RESUME, EXIT_YIELD_HALT, EXIT_STOP, EXIT_YIELD };
enum exit_action exit_handle(struct vcpu *v, struct vm_exit *e);
const char *exit_name(enum exit_code c);

#endif
