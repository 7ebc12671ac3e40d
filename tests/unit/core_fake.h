/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The host stand-ins for the core's unit tests (hv/vcpu.c, hv/exit.c,
 * hv/sched.c, hv/vmstate.c): a scripted back end behind struct vmm_ops
 * that returns a sequence of exits and records what the core asked of it,
 * host CPUs without privileged instructions (core_seam.c), a clock the
 * test moves, and a guest with real devices (hv/vm_devices.c, hv/vdev).
 */
#ifndef FERRY_TESTS_UNIT_CORE_FAKE_H
#define FERRY_TESTS_UNIT_CORE_FAKE_H

#include <stdbool.h>
#include <stdint.h>
#include "arch/x86/percpu.h"
#include "hv/vm.h"

#define FAKE_MAX 32

/* One exit of the script; regs: load RAX/RCX/RDX first (a guest
 * instruction's operands); intr: intr_allowed() from now on, 0 unchanged;
 * ticks: added to this CPU's timer_ticks; wakes: to its timer_wakes. */
struct fake_step {
	struct vm_exit exit;
	bool regs;
	uint64_t rax, rcx, rdx;
	int intr;		/* 1 allowed, -1 not */
	unsigned int ticks;	/* timer ticks that pass in the guest */
	unsigned int wakes;	/* timer wakes served (apic_timer_wake_at_ns's) */
	uint64_t ns;		/* time that passes besides the ticks' */
};

struct fake_backend {
	const struct fake_step *script;
	unsigned int n, pos;
	bool intr_allowed;
	unsigned int runs;			/* vmm->run calls */
	struct vcpu *ran[FAKE_MAX];		/* which vCPU each entered */
	enum vcpu_state state_in_run[FAKE_MAX];
	struct event injected[FAKE_MAX];
	unsigned int nr_injected;
	uint8_t skipped[FAKE_MAX];		/* skip_insn lengths */
	unsigned int nr_skipped;
	bool window;				/* last want_intr_window */
	bool window_in_run[FAKE_MAX];		/* ... as each vmm->run began */
	struct cpu_state state;			/* what get/set_state move */
	unsigned int get_state, set_state;
	uint64_t tsc_offset, tsc_mult;		/* the last set_tsc */
	unsigned int tsc_sets;
	bool irq_on;				/* host interrupts (fake_irq) */
	unsigned int irq_off_runs;		/* runs entered with them off */
	unsigned int ipis, idles;
	unsigned int wakes;			/* apic_timer_wake_at_ns calls */
	uint64_t wake_ns;			/* the earliest they asked for */
	uint32_t ipi_apic;
	unsigned int fpu_saves, fpu_restores;
	uint64_t xcr0_set;
};

extern struct fake_backend fake;
extern uint64_t fake_now_ns;
extern unsigned int fake_cpu;		/* index of "this" CPU */
extern char fake_stop_reason[160];
extern unsigned int fake_stops;

void fake_reset(void);
extern unsigned int fake_reboots;	/* vm_reboot calls */			/* clean back end, CPUs, clock */
void fake_script(const struct fake_step *s, unsigned int n);
struct vm *fake_vm_new(const char *name, enum vm_state state);
extern struct vm *fake_vm_slots[VM_MAX];	/* what vm_at() returns (fake_reset clears) */
void fake_vm_free(struct vm *vm);
/* Guest port access through the core (hv/vm_devices.c). */
void fake_out(struct vm *vm, uint16_t port, uint32_t val);
/* The PIC at vector 0x20 with only IRQ 0 open, the PIT at 100 Hz. */
void fake_guest_timer(struct vm *vm);
/* vm (one vCPU) gets a second, started (no SIPI awaited) with its APIC
 * software-enabled, the 8259 masked; vCPU 1 is returned.  fake_drop_ap
 * frees it again. */
struct vcpu *fake_add_ap(struct vm *vm);
void fake_drop_ap(struct vm *vm);
/* I/O APIC pin 2 (the PIT's IRQ 0) as fixed vector vec to APIC apic, and
 * the PIT's channel 0 at a rate of about 1 kHz from now. */
void fake_pit_to_apic(struct vm *vm, uint8_t vec, unsigned int apic);

/* The seam of core_seam.c. */
struct percpu *fake_this_cpu(void);
void fake_irq(bool on);
void fake_idle(void);
void fake_sched_reset(void);
bool fake_sched_run(unsigned int cpu);	/* one round of cpu's loop */
void fake_sched_loop_once(unsigned int cpu);	/* the same as an AP's loop: or idle */
/* runs once at the next fake_irq(false): an interrupt that came just before */
extern void (*fake_irq_off_hook)(void);

extern unsigned int fake_warnings;

#endif
