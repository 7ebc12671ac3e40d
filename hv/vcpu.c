/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The vCPU run loop: inject what the virtual devices raise, switch guest
 * extended state in when another vCPU used this CPU, enter the guest
 * through the back end, and hand each exit to its handler (hv/exit.c).
 */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/fpu.h"
#include "arch/x86/percpu.h"
#include "hv/kvmclock.h"
#include "hv/throttle.h"
#include "hv/msr.h"
#include "hv/sched.h"
#include "hv/lib/panic.h"
#include "hv/lib/time.h"
#include "hv/tsc.h"
#include "hv/vcpu.h"
#include "hv/vm_devices.h"

#define THROTTLE_PERIOD_US 40000	/* 10 timer ticks */

/* ---- the state machine (hv/vm.h) ---------------------------------------- */

#define T(from, to) (1u << ((from) * VCPU_STATE_COUNT + (to)))

static const uint32_t legal =
	T(VCPU_IDLE, VCPU_RUNNABLE) | T(VCPU_IDLE, VCPU_HALTED) | T(VCPU_HALTED, VCPU_IDLE) |
	T(VCPU_RUNNABLE, VCPU_RUNNING) | T(VCPU_HALTED, VCPU_RUNNING) |
	T(VCPU_RUNNING, VCPU_RUNNABLE) | T(VCPU_RUNNING, VCPU_HALTED) |
	T(VCPU_RUNNABLE, VCPU_IDLE);

_Static_assert(VCPU_STATE_COUNT * VCPU_STATE_COUNT <= 32, "transition mask too small");

const char *vcpu_state_name(enum vcpu_state s)
{
	static const char *const names[VCPU_STATE_COUNT] = {
		[VCPU_IDLE] = "idle", [VCPU_RUNNABLE] = "runnable",
		[VCPU_RUNNING] = "running", [VCPU_HALTED] = "halted",
	};
	return (unsigned int)s < VCPU_STATE_COUNT ? names[s] : "?";
}

bool vcpu_state_legal(enum vcpu_state from, enum vcpu_state to)
{
	if ((unsigned int)from >= VCPU_STATE_COUNT || (unsigned int)to >= VCPU_STATE_COUNT)
		return false;
	return legal & T(from, to);
}

enum vcpu_state vcpu_state(const struct vcpu *v)
{
	return __atomic_load_n(&v->state, __ATOMIC_ACQUIRE);
}

void vcpu_set_state(struct vcpu *v, enum vcpu_state from, enum vcpu_state to)
{
	enum vcpu_state now = vcpu_state(v);

	if (!vcpu_state_legal(from, to) || now != from)
		panic("vCPU %u of %s: %s -> %s asked while %s", v->hw.id, v->vm->name,
		      vcpu_state_name(from), vcpu_state_name(to), vcpu_state_name(now));
	/* steal: the time it could run but waited for its CPU (the scheduler
	 * stops the clock, runnable_since_ns 0, while its guest is paused or
	 * it is throttled: sched_steal_clock) */
	if (to == VCPU_RUNNABLE)
		v->runnable_since_ns = time_now_ns();
	else if (from == VCPU_RUNNABLE && to == VCPU_RUNNING && v->runnable_since_ns) {
		uint64_t t = time_now_ns();	/* since may be another CPU's, later */

		v->stats.steal_ns += t > v->runnable_since_ns ? t - v->runnable_since_ns : 0;
	}
	if (to == VCPU_RUNNING)
		v->stats.switches++;
	/* a full barrier: RUNNING is seen before the vCPU reads vm->state
	 * (vcpu_run), so vm_pause's store of PAUSED and its wait for the
	 * vCPU to stop running cannot both miss the other */
	__atomic_store_n(&v->state, to, __ATOMIC_SEQ_CST);
}

void vcpu_request(struct vcpu *v, uint32_t req)
{
	__atomic_or_fetch(&v->req, req, __ATOMIC_ACQ_REL);
}

bool vcpu_take_request(struct vcpu *v, uint32_t req)
{
	return __atomic_fetch_and(&v->req, ~req, __ATOMIC_ACQ_REL) & req;
}

bool vcpu_has_request(const struct vcpu *v, uint32_t req)
{
	return __atomic_load_n(&v->req, __ATOMIC_ACQUIRE) & req;
}

/* ---- creation -------------------------------------------------------------- */

static struct seg mb1_seg(const struct mb1_seg_reg *r)
{
	return (struct seg){
		.sel = r->selector, .base = r->base, .limit = r->limit,
		.attr = r->type | r->s << 4 | r->dpl << 5 | r->present << 7 |
			r->db << 10 | r->g << 11,
	};
}

/* The multiboot1 machine state: flat 32-bit protected mode, paging off. */
void vcpu_mb1_state(const struct mb1_entry_state *e, struct cpu_state *s)
{
	memset(s, 0, sizeof(*s));
	s->gpr[GPR_RAX] = e->eax;
	s->gpr[GPR_RBX] = e->ebx;
	s->rip = e->eip;
	s->rflags = e->eflags | 2;
	s->cr0 = e->cr0;
	s->cs = mb1_seg(&e->cs);
	s->ds = mb1_seg(&e->ds);
	s->es = mb1_seg(&e->es);
	s->fs = mb1_seg(&e->fs);
	s->gs = mb1_seg(&e->gs);
	s->ss = mb1_seg(&e->ss);
	s->tr = (struct seg){ .sel = 0, .attr = 0x8b, .limit = 0x67 };	/* busy 32-bit TSS */
	s->ldtr = (struct seg){ .attr = 0x82, .limit = 0xffff };	/* LDT, present */
	s->gdtr.limit = 0xffff;
	s->idtr.limit = 0xffff;
	s->dr6 = 0xffff0ff0;
	s->dr7 = 0x400;
	s->xcr0 = 1;
	msr_reset(s);
}

/* The state INIT leaves (SDM vol. 3A 9.1.1, table 9-1): real mode at
 * F000:FFF0, caches off, everything else cleared. */
void vcpu_init_state(struct cpu_state *s)
{
	const struct seg data = { .attr = 0x93, .limit = 0xffff };

	memset(s, 0, sizeof(*s));
	s->rip = 0xfff0;
	s->rflags = 2;
	s->cr0 = 0x60000010;			/* CD, NW, ET */
	s->cs = (struct seg){ .sel = 0xf000, .base = 0xffff0000, .limit = 0xffff, .attr = 0x9b };
	s->ds = s->es = s->fs = s->gs = s->ss = data;
	s->tr = (struct seg){ .attr = 0x8b, .limit = 0xffff };
	s->ldtr = (struct seg){ .attr = 0x82, .limit = 0xffff };
	s->gdtr.limit = s->idtr.limit = 0xffff;
	s->dr6 = 0xffff0ff0;
	s->dr7 = 0x400;
	s->xcr0 = 1;
	msr_reset(s);
}

/* A SIPI with vector v starts the processor at v << 12 in real mode. */
static void sipi_state(struct cpu_state *s, uint8_t vector)
{
	vcpu_init_state(s);
	s->cs.sel = (uint16_t)(vector << 8);
	s->cs.base = (uint64_t)vector << 12;
	s->rip = 0;
}

int vcpu_create(struct vm *vm, unsigned int id, const struct cpu_state *initial,
		struct vcpu **out)
{
	struct vcpu *v = calloc(1, sizeof(*v));
	struct cpu_state s = *initial;
	int rc;

	if (!v)
		return -ENOMEM;
	v->vm = vm;
	v->hw.vm = &vm->hw;
	v->hw.id = id;
	v->cpu = -1;
	v->state = VCPU_IDLE;
	v->hw.xcr0 = 1;
	v->fpu = memalign(64, sizeof(*v->fpu));
	if (!v->fpu) {
		free(v);
		return -ENOMEM;
	}
	fpu_area_init(v->fpu);
	rc = vmm->vcpu_init(&v->hw);
	if (rc) {
		free(v->fpu);
		free(v);
		return rc;
	}
	memcpy(v->hw.gpr, s.gpr, sizeof(v->hw.gpr));
	vmm->set_state(&v->hw, &s);
	if (id == 0)
		vm_tsc_set(vm, 0);	/* the guest's TSC starts near 0 */
	vcpu_tsc_sync(v);		/* every vCPU's the same */
	*out = v;
	return 0;
}

void vcpu_reset(struct vcpu *v, const struct cpu_state *s)
{
	struct percpu *c = this_cpu();

	if (c->fpu_owner == v)
		c->fpu_owner = NULL;	/* its registers are stale: load v->fpu next */
	fpu_area_init(v->fpu);
	v->hw.xcr0 = 1;
	memcpy(v->hw.gpr, s->gpr, sizeof(v->hw.gpr));
	vmm->set_state(&v->hw, s);
	vmm->want_intr_window(&v->hw, false);
	v->halted_if = false;
	v->halted_nmi_blocked = false;
	__atomic_store_n(&v->halt_cli, false, __ATOMIC_SEQ_CST);
	v->irq_quiet_until_ns = 0;
	v->timer_hint_ns = 0;		/* the devices' timers before the reset */
}

void vcpu_free(struct vcpu *v)
{
	if (!v)
		return;
	vmm->vcpu_destroy(&v->hw);
	free(v->fpu);
	free(v);
}

/* Extended state: the registers hold whichever vCPU ran here last. */
static void fpu_switch_in(struct vcpu *v)
{
	struct percpu *c = this_cpu();
	struct vcpu *owner = c->fpu_owner;

	if (owner == v)
		return;
	if (owner)
		fpu_save(owner->fpu);
	fpu_restore(v->fpu);
	fpu_set_xcr0(v->hw.xcr0);
	c->fpu_owner = v;
}

/* An NMI, if the guest is not blocking NMIs, is not in an STI or MOV SS
 * shadow (VMX refuses an entry injecting one under MOV SS blocking, and
 * under STI blocking on some CPUs; KVM waits for both) and no other event
 * is being delivered; false leaves it to the next entry. */
static bool inject_nmi(struct vcpu *v)
{
	struct cpu_state s;
	struct event e = { .valid = true, .type = EVENT_NMI, .vector = 2 };

	vmm->get_state(&v->hw, &s);
	if ((s.interruptibility & (INTR_NMI_BLOCKED | INTR_SHADOW_STI | INTR_SHADOW_MOV_SS)) ||
	    s.pending.valid)
		return false;
	vmm->inject(&v->hw, &e);
	return true;
}

/*
 * Events from the local APIC first: INIT (the vCPU resets and waits for a
 * SIPI), SIPI (it starts in real mode at the vector's page), an NMI (put
 * back into the APIC when it cannot go in now), an ExtINT message (the
 * 8259's vector, taken only when an interrupt can go in).  Returns true
 * if nothing else may go in at this entry.
 */
static bool inject_event(struct vcpu *v, bool intr_ok)
{
	uint8_t vec = 0;
	enum lapic_event ev;

	if (!vm_event_pending(v))
		return false;
	for (;;) {
		ev = vm_take_event(v, &vec, intr_ok);
		switch (ev) {
		case LAPIC_EV_NONE:
			return false;
		case LAPIC_EV_NMI:
			if (inject_nmi(v))
				return true;
			vm_return_nmi(v);
			return false;
		case LAPIC_EV_EXTINT: {
			struct event e = { .valid = true, .type = EVENT_EXTINT, .vector = vec };
			vmm->inject(&v->hw, &e);
			return true;
		}
		case LAPIC_EV_INIT: {	/* the APIC is in wait-for-SIPI now */
			struct cpu_state s;
			vcpu_init_state(&s);
			vcpu_reset(v, &s);
			v->stats.inits++;
			/* no second look: siblings that send INITs without end
			 * would hold this CPU here for ever; a SIPI already
			 * sent wakes the vCPU for its next run */
			return true;
		}
		case LAPIC_EV_SIPI: {
			struct cpu_state s;
			sipi_state(&s, vec);
			vcpu_reset(v, &s);
			v->stats.sipis++;
			return true;
		}
		default:
			break;
		}
	}
}

/* Offer the highest-priority pending interrupt, or ask for a window.
 * True if an interrupt goes in at this entry. */
static bool inject_pending(struct vcpu *v)
{
	bool ok = vmm->intr_allowed(&v->hw);
	int vec;

	if (inject_event(v, ok)) {
		/* an NMI (or ExtINT) went in: an interrupt that waits asks for
		 * its window, not for the next unrelated exit (its handler
		 * runs with IF clear; its IRET opens the window) */
		vmm->want_intr_window(&v->hw, vm_pending_vector(v) >= 0);
		return false;
	}
	vec = vm_pending_vector(v);
	if (vec < 0) {
		/* an ExtINT message put back for want of IF waits for the
		 * window as a vector would */
		vmm->want_intr_window(&v->hw, !ok && vm_extint_waiting(v));
		return false;
	}
	if (!ok) {
		vmm->want_intr_window(&v->hw, true);
		return false;
	}
	vec = vm_ack_vector(v);
	vmm->want_intr_window(&v->hw, false);
	if (vec >= 0) {
		struct event e = { .valid = true, .type = EVENT_EXTINT, .vector = vec };
		vmm->inject(&v->hw, &e);
	}
	return vec >= 0;
}

/* The guest pulled its reset line, and v is the one to reboot it: the
 * bootstrap processor, whose state the new system starts from, so the
 * application processors always come back waiting for its SIPIs.  A vCPU
 * reloading the images in an AP's place once left the BSP at the reset
 * vector with no firmware behind it. */
static bool reset_due(struct vcpu *v)
{
	return v->hw.id == 0 && __atomic_load_n(&v->vm->reset_pending, __ATOMIC_ACQUIRE);
}

/* An AP after the reset line was pulled: it runs no more of the old
 * system (the line stops every CPU at once) and waits for the BSP's
 * reboot.  Run on, Linux's AP would go on to its next reset method, a
 * triple fault, and the guest would stop instead of rebooting. */
static bool reset_parked(struct vcpu *v)
{
	return v->hw.id != 0 && __atomic_load_n(&v->vm->reset_pending, __ATOMIC_ACQUIRE);
}

bool vcpu_wants_wake(struct vcpu *v)
{
	if (reset_parked(v))
		return false;
	/* only what can go in now: waking for an NMI the guest blocks (or an
	 * ExtINT with interrupts off) would find it refused at entry, and the
	 * guest would run HLT again and again */
	return (v->halted_if && vm_pending_vector(v) >= 0) ||
	       vm_event_wakes(v, !v->halted_nmi_blocked, v->halted_if) ||
	       reset_due(v);
}

/* Something was sent to v (an interrupt, an IPI): make it look, wherever it
 * is.  On its own CPU it looks before its next entry anyway. */
void vcpu_notify(struct vcpu *v)
{
	int cpu;

	/* the event posted before (under dev_lock, released) is seen by a vCPU
	 * that halts now, or its HALTED by us: a full barrier between the two */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	cpu = __atomic_load_n(&v->cpu, __ATOMIC_ACQUIRE);

	if (vcpu_state(v) == VCPU_HALTED) {
		sched_wake(v);	/* with credit left it may preempt a CPU hog */
		return;
	}
	if (cpu < 0 || (unsigned int)cpu == this_cpu()->index)
		return;
	/* One kick until the vCPU next looks (vcpu_run clears the flag before
	 * it asks the devices): a guest's IPI flood costs its target's CPU
	 * one host IPI per exit at most, not one per guest IPI. */
	if (!__atomic_exchange_n(&v->notified, true, __ATOMIC_SEQ_CST))
		apic_send_ipi(cpus[cpu].apic_id, VEC_KICK);
}

void vcpu_arm_timer(struct vcpu *v)
{
	uint64_t *at = &v->irq_quiet_until_ns, t = __atomic_load_n(at, __ATOMIC_ACQUIRE);

	if (!t) {			/* cleared: it has just taken an interrupt */
		at = &v->timer_hint_ns;
		t = __atomic_load_n(at, __ATOMIC_ACQUIRE);
	}
	if (!t || t == UINT64_MAX)
		return;
	/* in the guest's clock: the host's is offset.  Due already (it fell
	 * due since the look): the timer fires at once, and the time is
	 * cleared so that the next look is a full one and this one is not
	 * asked for again (a pending interrupt the guest cannot take yet
	 * leaves the quiet time in the past) */
	if (apic_timer_wake_at_ns(t - v->vm->clock_offset_ns))
		__atomic_compare_exchange_n(at, &t, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

static void account(struct vcpu *v, uint64_t t0, uint64_t t1, uint64_t t2)
{
	uint64_t hz = tsc_hz() ? tsc_hz() : 1;

	v->stats.guest_ns += (t1 - t0) * 1000000000ull / hz;
	v->stats.host_ns += (t2 - t1) * 1000000000ull / hz;
}

/* Time the vCPU held its CPU: in the guest, and in ferry for its exits (a
 * dirtier under write-protect logging spends most of it on its faults). */
static uint64_t busy_ns(const struct vcpu *v)
{
	return v->stats.guest_ns + v->stats.host_ns;
}

/*
 * Migration throttle (vm->throttle_pct): of each THROTTLE_PERIOD_US, a vCPU
 * runs for throttle_budget_ns() of busy time, pct less than it used per
 * period while unthrottled (thr_base_ns, measured here whenever no throttle
 * is on), then sits out (thr_until_ns, which the scheduler honours) until
 * the period ends.  Checked at exits, so the timer tick bounds the
 * overshoot.
 */
static bool throttled(struct vcpu *v)
{
	uint32_t pct = __atomic_load_n(&v->vm->throttle_pct, __ATOMIC_RELAXED);
	uint64_t now = time_now_ns(), run_ns, period_ns = THROTTLE_PERIOD_US * 1000;

	if (now - v->thr_start_ns >= period_ns) {
		if (!pct)
			v->thr_base_ns = throttle_base_next(v->thr_base_ns,
				busy_ns(v) - v->thr_busy0_ns, now - v->thr_start_ns,
				period_ns);
		v->thr_start_ns = now;
		v->thr_busy0_ns = busy_ns(v);
		return false;
	}
	if (!pct)
		return false;
	run_ns = throttle_budget_ns(pct, period_ns, v->thr_base_ns);
	if (busy_ns(v) - v->thr_busy0_ns < run_ns)
		return false;
	v->thr_until_ns = v->thr_start_ns + THROTTLE_PERIOD_US * 1000;
	return true;
}

bool vcpu_throttled_now(struct vcpu *v)
{
	return v->thr_until_ns && time_now_ns() < v->thr_until_ns;
}

enum vcpu_state vcpu_run(struct vcpu *v)
{
	uint64_t start = this_cpu()->timer_ticks;
	bool halted = false;

	for (;;) {
		if (v->vm->state != VM_RUNNING)
			return halted ? VCPU_HALTED : VCPU_RUNNABLE;
		if (reset_parked(v))
			return VCPU_HALTED;
		if (halted) {
			if (!vcpu_wants_wake(v))
				return VCPU_HALTED;
			halted = false;
		}
		/* awake (an NMI, INIT, SIPI): cleared before an event is taken
		 * below, so a sibling's all_halted_for_good that no longer sees
		 * the event sees this */
		if (__atomic_load_n(&v->halt_cli, __ATOMIC_RELAXED))
			__atomic_store_n(&v->halt_cli, false, __ATOMIC_SEQ_CST);
		if (vcpu_take_request(v, VCPU_REQ_INIT)) {
			struct cpu_state s;
			vcpu_init_state(&s);
			vcpu_reset(v, &s);
		}
		/* before looking: a notify from now on sends its IPI again */
		__atomic_store_n(&v->notified, false, __ATOMIC_SEQ_CST);
		if (reset_due(v) &&
		    __atomic_exchange_n(&v->vm->reset_pending, false, __ATOMIC_ACQ_REL)) {
			vm_reboot(v);
			continue;
		}
		if (inject_pending(v))
			v->pv_eoi_hint = true;
		kvmclock_sync(v);		/* the TSC setting, kvmclock with it */
		if (vm_waits_for_sipi(v))
			return VCPU_HALTED;	/* an application processor before its SIPI */
		irq_disable();
		/* checked with interrupts off: a kick IPI from now on ends the run */
		if (vcpu_take_request(v, VCPU_REQ_KICK) ||
		    __atomic_exchange_n(&this_cpu()->resched, false, __ATOMIC_ACQ_REL)) {
			irq_enable();
			return VCPU_RUNNABLE;
		}
		/* an interrupt sent since the devices were asked: its kick IPI
		 * may have landed already, with interrupts on, and the guest
		 * would not see it before its next exit; look again */
		if (__atomic_load_n(&v->notified, __ATOMIC_SEQ_CST)) {
			irq_enable();
			if (throttled(v) || sched_preempt(start))
				return VCPU_RUNNABLE;
			continue;
		}
		vcpu_arm_timer(v);	/* its timer ends the run when due */
		fpu_switch_in(v);
		vm_arrival_entry(v);
		/* PV EOI: the flag is set only across this one run */
		uint64_t eoi_flag = v->pv_eoi_hint ? vm_pv_eoi_arm(v) : 0;
		uint64_t t0 = rdtsc();
		__atomic_add_fetch(&v->guest_seq, 1, __ATOMIC_SEQ_CST);	/* odd: in guest */
		vmm->run(&v->hw, &v->exit);
		__atomic_add_fetch(&v->guest_seq, 1, __ATOMIC_SEQ_CST);
		uint64_t t1 = rdtsc();
		irq_enable();		/* host interrupts that ended the run land here */
		if (eoi_flag)		/* before the exit is handled: the EOI came first */
			vm_pv_eoi_sync(v, eoi_flag);
		enum exit_action a = exit_handle(v, &v->exit);
		account(v, t0, t1, rdtsc());
		if (__atomic_load_n(&v->vm->reset_pending, __ATOMIC_ACQUIRE)) {
			/* rebooted at the top, now or at its next run: a guest
			 * that resets without end still yields its turn */
			if (v->hw.id == 0 && (throttled(v) || sched_preempt(start)))
				return VCPU_RUNNABLE;
			if (v->hw.id == 0)
				continue;
			vcpu_notify(v->vm->vcpus[0]);	/* the BSP reboots */
			return VCPU_HALTED;		/* parked: reset_parked */
		}
		if (a == EXIT_STOP)
			return VCPU_RUNNABLE;
		if (a == EXIT_YIELD_HALT) {
			halted = true;
			continue;	/* an interrupt may be due already */
		}
		if (a == EXIT_YIELD) {
			sched_yield_cpu();
			return VCPU_RUNNABLE;
		}
		if (throttled(v) || sched_preempt(start))
			return VCPU_RUNNABLE;
	}
}

void vcpu_kick(struct vcpu *v)
{
	int cpu = __atomic_load_n(&v->cpu, __ATOMIC_ACQUIRE);

	vcpu_request(v, VCPU_REQ_KICK);
	if (cpu >= 0 && (unsigned int)cpu != this_cpu()->index)
		apic_send_ipi(cpus[cpu].apic_id, VEC_KICK);
}

void vcpu_kick_and_wait(struct vcpu *v)
{
	vcpu_kick(v);
	while (vcpu_state(v) == VCPU_RUNNING)
		cpu_relax();
}
