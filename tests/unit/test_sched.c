/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The scheduler (hv/sched.c) on the host: placement, round robin, halted,
 * paused and throttled vCPUs, removal, FPU-sync and kick requests, and the
 * state changes it makes (core_fake.c, core_seam.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <string.h>
#include <cmocka.h>
#include "hv/sched.h"
#include "hv/vcpu.h"
#include "hv/vm_devices.h"
#include "tests/unit/core_fake.h"

#define NVM 17

static struct vm *vms[NVM];

static int setup(void **state)
{
	(void)state;
	fake_reset();
	fake_sched_reset();
	for (int i = 0; i < NVM; i++)
		vms[i] = fake_vm_new("s", VM_RUNNING);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	for (int i = 0; i < NVM; i++)
		fake_vm_free(vms[i]);
	return 0;
}

static struct vcpu *V(int i)
{
	return vms[i]->vcpus[0];
}

static void enable_cpus(unsigned int n)
{
	cpu_count = n;
	for (unsigned int i = 0; i < n; i++) {
		fake_cpu = i;
		sched_enable_cpu();
	}
	fake_cpu = 0;
}

/* The CPUs took the pokes of sched_add (else their next entry is skipped). */
static void settle(void)
{
	for (unsigned int i = 0; i < MAX_CPUS; i++)
		cpus[i].resched = false;
}

static void test_placement_least_loaded_not_boot(void **state)
{
	(void)state;
	enable_cpus(3);
	assert_int_equal(sched_add(V(0)), 0);
	assert_int_equal(V(0)->cpu, 1);
	assert_int_equal(vcpu_state(V(0)), VCPU_RUNNABLE);
	assert_int_equal(fake.ipis, 1);			/* CPU 1 told to look */
	assert_int_equal(fake.ipi_apic, 0x11);
	assert_true(cpus[1].resched);
	assert_int_equal(sched_add(V(1)), 0);
	assert_int_equal(V(1)->cpu, 2);
	assert_int_equal(sched_add(V(2)), 0);
	assert_int_equal(V(2)->cpu, 1);
	assert_int_equal(sched_load(0), 0);
	assert_int_equal(sched_load(1), 2);
	assert_int_equal(sched_load(2), 1);
	assert_int_equal(sched_load(MAX_CPUS), 0);
}

/* Let the balancer look once more after span_ns, in which each vCPU
 * ran ran_ns and waited steal_ns. */
static void balance_after(uint64_t span_ns, const int *who, int n, uint64_t ran_ns,
			  uint64_t steal_ns)
{
	fake_now_ns += span_ns;
	for (int i = 0; i < n; i++) {
		V(who[i])->stats.guest_ns += ran_ns;
		V(who[i])->stats.steal_ns += steal_ns;
	}
	sched_poll();
}

/* Two CPU hogs that share CPU 1 while CPU 2 idles: one of them moves (as
 * `pin` would move it), once; pinned ones never do. */
static void test_balancer_spreads_unpinned_hogs(void **state)
{
	const int hogs[] = { 0, 1 };

	(void)state;
	enable_cpus(3);
	fake_vm_slots[0] = vms[0];
	fake_vm_slots[1] = vms[1];
	V(0)->affinity = V(1)->affinity = 1ull << 1;
	assert_int_equal(sched_add(V(0)), 0);
	assert_int_equal(sched_add(V(1)), 0);
	assert_int_equal(sched_load(1), 2);
	fake_cpu = 1;			/* their CPU drops the one that moves */
	fake_now_ns = 1000000000;
	sched_poll();			/* the first look */
	balance_after(250000000, hogs, 2, 125000000, 125000000);
	assert_int_equal(sched_load(1), 2);	/* pinned: they stay */
	V(0)->affinity = V(1)->affinity = SCHED_AFFINITY_ANY;
	balance_after(250000000, hogs, 2, 125000000, 125000000);
	assert_int_equal(sched_load(1), 1);
	assert_int_equal(sched_load(2), 1);
	assert_int_equal(V(0)->cpu + V(1)->cpu, 3);
	assert_int_equal(vcpu_state(V(0)), VCPU_RUNNABLE);
	assert_int_equal(vcpu_state(V(1)), VCPU_RUNNABLE);
	/* each alone now: nothing more moves */
	for (int i = 0; i < 10; i++)
		balance_after(250000000, hogs, 2, 250000000, 0);
	assert_int_equal(sched_load(1), 1);
	assert_int_equal(sched_load(2), 1);
	fake_cpu = 0;
}

static void test_no_cpu_or_full(void **state)
{
	(void)state;
	cpu_count = 2;				/* nothing enabled */
	assert_int_equal(sched_add(V(0)), -EBUSY);
	assert_int_equal(vcpu_state(V(0)), VCPU_IDLE);
	assert_int_equal(V(0)->cpu, -1);
	enable_cpus(1);				/* the boot CPU alone takes guests */
	for (int i = 0; i < NVM - 1; i++)
		assert_int_equal(sched_add(V(i)), 0);
	assert_int_equal(sched_add(V(NVM - 1)), -EBUSY);
	assert_int_equal(sched_load(0), NVM - 1);
	assert_int_equal(fake.ipis, 0);		/* all on this CPU */
}

/* Two CPU-bound vCPUs on one CPU take turns, each RUNNING while it runs. */
static void test_both_run_and_states(void **state)
{
	static const struct fake_step tick[] = {
		{ .exit = { .code = EXIT_EXTERNAL }, .ticks = 4 },	/* 16 ms */
	};
	int seen[2] = { 0, 0 };

	(void)state;
	enable_cpus(2);
	sched_add(V(0));
	sched_add(V(1));
	settle();
	for (int i = 0; i < 8; i++) {
		fake_script(tick, 1);		/* one slice, then a kick */
		assert_true(fake_sched_run(1));
	}
	for (unsigned int i = 0; i < fake.runs && i < FAKE_MAX; i++) {
		assert_int_equal(fake.state_in_run[i], VCPU_RUNNING);
		seen[fake.ran[i] == V(1)]++;
	}
	assert_true(seen[0] >= 3 && seen[1] >= 3);	/* turns, not one hog */
	assert_int_equal(vcpu_state(V(0)), VCPU_RUNNABLE);
	assert_null(cpus[1].vcpu);
	assert_false(fake_sched_run(0));	/* the boot CPU has none */
}

/* One exit: HLT with interrupts on. */
static const struct fake_step hlt[] = {
	{ .exit = { .code = EXIT_HLT, .inst_len = 1 }, .intr = 1 },
};

/* On a host of two CPUs, a vCPU placed on CPU 1 halts there. */
static void run_until_halted(struct vcpu *v)
{
	fake_script(hlt, 1);
	fake_sched_run(1);
	assert_int_equal(vcpu_state(v), VCPU_HALTED);
}

static void test_halted_paused_throttled_are_skipped(void **state)
{
	(void)state;
	enable_cpus(2);
	sched_add(V(0));
	settle();
	run_until_halted(V(0));
	sched_add(V(1));
	settle();
	fake_sched_run(1);
	fake_sched_run(1);
	assert_ptr_equal(fake.ran[1], V(1));
	assert_ptr_equal(fake.ran[2], V(1));	/* V(0) sleeps */
	fake_guest_timer(vms[0]);
	fake_now_ns += 20000000;
	vms[1]->state = VM_PAUSED;
	fake_sched_run(1);
	assert_ptr_equal(fake.ran[3], V(0));	/* woken by its timer */
	assert_int_equal(fake.state_in_run[3], VCPU_RUNNING);
	assert_int_equal(fake.injected[0].vector, 0x20);
	V(0)->thr_until_ns = fake_now_ns + 1000;
	fake_sched_run(1);			/* the policy is told: no one can run */
	assert_false(fake_sched_run(1));	/* throttled, and V(1) paused */
	assert_int_equal(fake.runs, 4);
	assert_int_equal(fake.idles, 0);
}

/* A slice is over when the timer says so and another vCPU waits: the
 * running one counts as runnable. */
static void test_slice_ends_when_another_waits(void **state)
{
	static const struct fake_step s[] = {
		{ .exit = { .code = EXIT_EXTERNAL }, .ticks = 100 },
		{ .exit = { .code = EXIT_EXTERNAL }, .ticks = 100 },
	};

	(void)state;
	enable_cpus(2);
	sched_add(V(0));
	settle();
	fake_script(s, 2);
	fake_sched_run(1);
	assert_int_equal(fake.runs, 3);		/* alone: runs on to the script's end */
	sched_add(V(1));
	settle();
	fake_script(s, 2);
	fake_sched_run(1);
	assert_int_equal(fake.runs, 4);		/* one exit, then V(1)'s turn */
	assert_int_equal(fake.pos, 1);
	assert_int_equal(vcpu_state(V(1)), VCPU_RUNNABLE);
}

/* On the boot CPU a guest gives the shell its turn after every slice. */
static void test_boot_cpu_always_contended(void **state)
{
	(void)state;
	enable_cpus(1);
	fake_cpu = 0;
	cpus[0].timer_ticks = 100;
	assert_false(sched_preempt(100));
	cpus[0].timer_ticks = 100 + 250;	/* a second later: far past a slice */
	assert_true(sched_preempt(100));
}

static void test_remove_on_own_cpu(void **state)
{
	(void)state;
	enable_cpus(1);
	sched_add(V(0));
	sched_add(V(1));
	settle();
	cpus[0].fpu_owner = V(0);
	sched_remove(V(0));
	assert_int_equal(V(0)->cpu, -1);
	assert_int_equal(vcpu_state(V(0)), VCPU_IDLE);
	assert_int_equal(V(0)->req, 0);
	assert_null(cpus[0].fpu_owner);
	assert_int_equal(sched_load(0), 1);
	sched_remove(V(0));			/* not placed: nothing to do */
	sched_poll();
	assert_int_equal(fake.runs, 1);
	assert_ptr_equal(fake.ran[0], V(1));
}

static void test_fpu_sync_requests(void **state)
{
	(void)state;
	enable_cpus(2);
	sched_add(V(0));			/* on CPU 1 */
	cpus[1].fpu_owner = V(0);
	vcpu_fpu_sync_soon(V(0));		/* asked from CPU 0 */
	assert_true(vcpu_has_request(V(0), VCPU_REQ_FPU_SYNC));
	assert_int_equal(fake.fpu_saves, 0);
	V(0)->vm->state = VM_PAUSED;
	assert_false(fake_sched_run(1));	/* CPU 1 looks at its queue */
	assert_int_equal(fake.fpu_saves, 1);
	assert_null(cpus[1].fpu_owner);
	assert_false(vcpu_has_request(V(0), VCPU_REQ_FPU_SYNC));
	/* on its own CPU: at once, and only if it holds the registers */
	vcpu_fpu_sync(V(0));
	assert_int_equal(fake.fpu_saves, 1);
	cpus[1].fpu_owner = V(0);
	vcpu_fpu_sync(V(0));
	assert_int_equal(fake.fpu_saves, 2);
	vcpu_fpu_sync(V(1));			/* never placed */
	assert_int_equal(fake.fpu_saves, 2);
}

static void test_kick_sends_an_ipi_to_its_cpu(void **state)
{
	(void)state;
	enable_cpus(3);
	sched_add(V(0));
	sched_add(V(1));
	settle();
	fake.ipis = 0;
	vcpu_kick(V(1));
	assert_int_equal(fake.ipis, 1);
	assert_int_equal(fake.ipi_apic, 0x12);
	assert_true(vcpu_has_request(V(1), VCPU_REQ_KICK));
	vcpu_kick_and_wait(V(0));		/* not RUNNING: returns */
	assert_int_equal(fake.ipis, 2);
	fake_script(NULL, 0);
	fake_sched_run(2);
	assert_int_equal(fake.runs, 0);		/* the kick ended it before entry */
	assert_false(vcpu_has_request(V(1), VCPU_REQ_KICK));
}


/* A halted vCPU woken by its own timer while its CPU's scheduler looks
 * enters the guest at once: the wake does not leave a resched flag that
 * bounces the entry. */
static void test_timer_wake_enters(void **state)
{
	(void)state;
	enable_cpus(2);
	sched_add(V(0));
	settle();
	run_until_halted(V(0));
	fake_guest_timer(vms[0]);
	fake_now_ns += 20000000;
	unsigned int runs = fake.runs;
	fake_script(NULL, 0);
	fake_sched_run(1);
	assert_int_equal(fake.runs, runs + 1);		/* it entered the guest */
}

/* An interrupt on an idle AP, after its scheduler found nothing to run and
 * before it sleeps, wakes a halted vCPU there: the AP looks again instead
 * of sleeping to its next tick, and the vCPU enters. */
static void timer_wakes_v0(void)
{
	fake_guest_timer(vms[0]);
	fake_now_ns += 20000000;
	sched_wake(V(0));
}

static void test_wake_before_idle_not_slept_through(void **state)
{
	unsigned int idles, runs;

	(void)state;
	enable_cpus(2);
	sched_add(V(0));
	settle();
	run_until_halted(V(0));
	idles = fake.idles;
	fake_irq_off_hook = timer_wakes_v0;	/* lands as the loop turns interrupts off */
	fake_sched_loop_once(1);
	assert_null(fake_irq_off_hook);
	assert_int_equal(fake.idles, idles);		/* it did not sleep */
	runs = fake.runs;
	fake_script(NULL, 0);
	fake_sched_loop_once(1);
	assert_int_equal(fake.runs, runs + 1);		/* the vCPU entered */
	assert_true(fake.irq_on);			/* after its run: interrupts on */
	/* nothing left to run: now it sleeps, interrupts off until then */
	run_until_halted(V(0));
	idles = fake.idles;
	fake_sched_loop_once(1);
	assert_int_equal(fake.idles, idles + 1);
}

/* An AP that idles with a halted vCPU has its timer wake it when the
 * vCPU's own timer is due (the guest's clock is offset from the host's),
 * not at its next tick; and a vCPU's entry asks for the same.  One halted
 * with interrupts off asks for nothing; a throttled one for its end. */
static uint64_t v0_due;

static void clear_v0_quiet(void)
{
	__atomic_store_n(&V(0)->irq_quiet_until_ns, 0, __ATOMIC_RELAXED);
}

static void v0_due_and_cleared(void)
{
	fake_now_ns = v0_due + 1;
	clear_v0_quiet();
}

/* A 1-CPU host: the boot CPU runs its guest between shell inputs.  While
 * the guest can run the shell must not sleep (it slept until the next
 * interrupt after every slice, up to a tick each time); once the guest
 * halts, its timer is asked for before the shell sleeps, as an AP's idle
 * loop asks. */
static void test_boot_cpu_runs_its_guest_without_sleeping(void **state)
{
	static const struct fake_step slice[] = {	/* a slice's worth of ticks */
		{ .exit = { .code = EXIT_EXTERNAL }, .intr = 1, .ticks = 3 },
	};
	uint64_t due;

	(void)state;
	enable_cpus(1);
	sched_add(V(0));
	settle();
	assert_int_equal(V(0)->cpu, 0);
	fake_script(slice, 1);
	assert_true(sched_poll());			/* its slice is over: again */
	assert_int_equal(fake.runs, 1);
	assert_int_equal(vcpu_state(V(0)), VCPU_RUNNABLE);
	fake_guest_timer(vms[0]);			/* the PIT at 100 Hz, from now */
	fake_script(hlt, 1);
	assert_true(sched_poll());			/* it ran, and halted */
	assert_int_equal(vcpu_state(V(0)), VCPU_HALTED);
	due = vm_next_event_ns(V(0)) - vms[0]->clock_offset_ns;
	assert_true(due > fake_now_ns);
	fake.wakes = 0;
	assert_false(sched_poll());			/* nothing to run: sleep, ... */
	assert_int_equal(fake.wakes, 1);		/* ... woken for its timer */
	assert_true(fake.wake_ns == due);
	v0_due = due;
	v0_due_and_cleared();				/* the timer fired */
	fake_script(hlt, 1);
	assert_true(sched_poll());
	assert_int_equal(fake.runs, 3);
	assert_int_equal(fake.nr_injected, 1);		/* the PIT's tick went in */
	assert_int_equal(fake.injected[0].vector, 0x20);
}

static void test_idle_and_entry_arm_the_guest_timer(void **state)
{
	uint64_t due;

	(void)state;
	enable_cpus(2);
	sched_add(V(0));
	settle();
	vms[0]->clock_offset_ns = 5000000000ull;
	fake_guest_timer(vms[0]);			/* the PIT at 100 Hz */
	run_until_halted(V(0));
	due = vm_next_event_ns(V(0)) - vms[0]->clock_offset_ns;
	v0_due = due;
	assert_true(due > fake_now_ns && due <= fake_now_ns + 10100000);	/* 11932 PIT counts */
	assert_int_equal(fake.wakes, 1);		/* its entry */
	assert_true(fake.wake_ns == due);
	fake.wakes = 0;
	fake_sched_loop_once(1);			/* nothing runs: it idles */
	assert_int_equal(fake.idles, 1);
	assert_int_equal(fake.wakes, 1);
	assert_true(fake.wake_ns == due);
	/* halted with interrupts off: no timer can wake it */
	V(0)->halted_if = false;
	fake.wakes = 0;
	fake_sched_loop_once(1);
	assert_int_equal(fake.wakes, 0);
	/* a throttled one beside it: the CPU wakes when its period is out */
	sched_add(V(1));
	settle();
	assert_int_equal(V(1)->cpu, 1);
	V(1)->thr_until_ns = fake_now_ns + 300000;
	fake_sched_loop_once(1);
	assert_int_equal(fake.idles, 3);
	assert_int_equal(fake.wakes, 1);
	assert_true(fake.wake_ns == fake_now_ns + 300000);
	/* a throttle that is over (its time stays set) asks for nothing: a
	 * past time would fire at once, at every idle (paused, so that the
	 * CPU idles) */
	vms[1]->state = VM_PAUSED;
	V(1)->thr_until_ns = fake_now_ns - 1;
	fake.wakes = 0;
	fake_sched_loop_once(1);
	assert_int_equal(fake.idles, 4);
	assert_int_equal(fake.wakes, 0);
	/* V(0) halted and able to take interrupts, its quiet time cleared
	 * between the choice and the idle (a sibling touched a device): the
	 * idle loop looks at its devices again and arms the same edge */
	V(0)->halted_if = true;
	fake.wakes = 0;
	fake_irq_off_hook = clear_v0_quiet;
	fake_sched_loop_once(1);
	assert_int_equal(fake.idles, 5);
	assert_int_equal(fake.wakes, 1);
	assert_true(fake.wake_ns == due);
	/* ... and when the edge fell due meanwhile, it is not slept through */
	fake_irq_off_hook = v0_due_and_cleared;
	fake_sched_loop_once(1);
	assert_int_equal(fake.idles, 5);
	/* ... unless its guest is paused: that edge cannot wake it, and the
	 * CPU sleeps (it would look, find it wanting, and never sleep) */
	vms[0]->state = VM_PAUSED;
	fake_irq_off_hook = clear_v0_quiet;
	fake_sched_loop_once(1);
	assert_int_equal(fake.idles, 6);
}

/* The entry that injects the guest's timer interrupt (which clears the
 * quiet time) still asks for its next one, from the hint the injection
 * left; a time found past clears what it came from, so it is not asked
 * for again until a look finds it anew. */
static void test_entry_after_an_interrupt_arms_the_next(void **state)
{
	uint64_t next;

	(void)state;
	enable_cpus(2);
	sched_add(V(0));
	settle();
	fake_guest_timer(vms[0]);			/* the PIT at 100 Hz */
	run_until_halted(V(0));
	fake_now_ns += 10000200;			/* its first edge is past */
	fake.wakes = 0;
	fake_script(hlt, 1);
	fake_sched_run(1);			/* one entry, with the interrupt */
	assert_int_equal(fake.runs, 2);
	assert_int_equal(fake.injected[0].vector, 0x20);
	next = V(0)->timer_hint_ns - vms[0]->clock_offset_ns;
	assert_true(next > fake_now_ns && next <= fake_now_ns + 10100000);
	assert_int_equal(fake.wakes, 1);	/* that entry asked for its next edge */
	assert_true(fake.wake_ns == next);
	/* a hint gone past by the next entry: asked once, then cleared */
	V(0)->timer_hint_ns = fake_now_ns - 1 + vms[0]->clock_offset_ns;
	__atomic_store_n(&V(0)->irq_quiet_until_ns, 0, __ATOMIC_RELAXED);
	fake_irq(false);
	vcpu_arm_timer(V(0));
	fake_irq(true);
	assert_int_equal(V(0)->timer_hint_ns, 0);
	/* a reset forgets the devices' timers from before it */
	V(0)->timer_hint_ns = fake_now_ns + 5000000 + vms[0]->clock_offset_ns;
	vm_reboot(V(0));
	assert_int_equal(V(0)->timer_hint_ns, 0);
}

/* A vCPU capped at 10 % that would run all the time, alone on its CPU:
 * waiting for its own budget is not steal (top showed ~90 %, and the
 * balancer took it for a whole CPU's demand). */
static void test_cap_wait_is_not_steal(void **state)
{
	static const struct fake_step tick[] = {
		{ .exit = { .code = EXIT_EXTERNAL }, .ticks = 1 },
	};
	uint64_t steal0, t0;

	(void)state;
	enable_cpus(2);
	sched_add(V(0));
	assert_int_equal(sched_set_share(V(0), 256, 1000), 0);	/* cap 10 % */
	settle();
	steal0 = V(0)->stats.steal_ns;
	t0 = fake_now_ns;
	for (int i = 0; i < 500; i++) {
		fake_script(tick, 1);
		if (!fake_sched_run(1))
			fake_now_ns += 4000000;			/* idle: a tick goes by */
	}
	assert_true(fake_now_ns - t0 >= 1000000000ull);		/* seconds of it */
	assert_true(V(0)->stats.steal_ns - steal0 < (fake_now_ns - t0) / 10);
}

/* Time a vCPU spends paused is not steal: it could not have run. */
static void test_pause_is_not_steal(void **state)
{
	static const struct fake_step tick[] = {
		{ .exit = { .code = EXIT_EXTERNAL }, .ticks = 1 },
	};

	(void)state;
	enable_cpus(2);
	sched_add(V(0));
	settle();
	fake_script(tick, 1);
	fake_sched_run(1);			/* it ran */
	vms[0]->state = VM_PAUSED;		/* vm_pause */
	fake_script(tick, 1);
	fake_sched_run(1);			/* its CPU sees it paused */
	uint64_t steal0 = V(0)->stats.steal_ns;
	fake_now_ns += 10 * 1000000000ull;	/* paused for 10 s */
	vms[0]->state = VM_RUNNING;		/* vm_resume */
	sched_wake(V(0));
	settle();
	fake_script(tick, 1);
	fake_sched_run(1);
	assert_true(V(0)->stats.steal_ns - steal0 < 100000000ull);
}

/* A PIT edge that vCPU 0's look (from the scheduler) routes to its halted
 * sibling on the same CPU: the sibling is picked, and enters. */
static void test_sibling_wake_enters(void **state)
{
	struct vm *vm = vms[0];
	struct vcpu *ap;

	(void)state;
	ap = fake_add_ap(vm);
	enable_cpus(2);
	sched_add(V(0));
	sched_add(ap);
	assert_int_equal(ap->cpu, 1);
	assert_int_equal(V(0)->cpu, 1);
	settle();
	fake_script(hlt, 1);
	fake_sched_run(1);
	fake_script(hlt, 1);
	fake_sched_run(1);
	assert_int_equal(vcpu_state(V(0)), VCPU_HALTED);
	assert_int_equal(vcpu_state(ap), VCPU_HALTED);
	fake_pit_to_apic(vm, 0x30, 1);
	fake_now_ns += 2000000;
	unsigned int runs = fake.runs;
	fake_script(NULL, 0);
	fake_sched_run(1);
	assert_int_equal(fake.runs, runs + 1);
	assert_ptr_equal(fake.ran[runs], ap);
	sched_remove(ap);
	sched_remove(V(0));
	fake_drop_ap(vm);
}

/* A halted vCPU beside a running one on its CPU: the runner's first entry
 * has the timer asked for the sibling's next PIT edge, and the wake that
 * comes then, between ticks, wakes the sibling, which preempts the
 * runner at once (boosted) instead of waiting for the tick.  Time alone
 * (an exit past the edge with no wake served) changes nothing: the wake
 * interrupt is what makes the CPU look. */
static void test_halted_sibling_woken_between_ticks(void **state)
{
	struct fake_step hog[] = {
		{ .exit = { .code = EXIT_EXTERNAL } },			/* past the edge */
		{ .exit = { .code = EXIT_EXTERNAL }, .wakes = 1 },	/* its wake */
		{ .exit = { .code = EXIT_EXTERNAL } },
	};
	unsigned int runs;
	uint64_t due;

	(void)state;
	enable_cpus(2);
	sched_add(V(1));
	settle();
	fake_guest_timer(vms[1]);			/* the PIT at 100 Hz */
	run_until_halted(V(1));
	sched_add(V(0));
	assert_int_equal(V(0)->cpu, 1);
	settle();
	due = vm_next_event_ns(V(1)) - vms[1]->clock_offset_ns;
	assert_true(due > fake_now_ns + 1000000);
	fake.wakes = 0;
	runs = fake.runs;
	hog[2].ns = 1000000;
	fake_script(hog + 2, 1);			/* 1 ms of V(0), then a kick */
	fake_sched_run(1);
	assert_ptr_equal(fake.ran[runs], V(0));
	assert_int_equal(fake.wakes, 1);		/* asked as V(0) entered */
	assert_true(fake.wake_ns == due);
	hog[0].ns = due - fake_now_ns + 1000;
	hog[2].ns = 0;
	runs = fake.runs;
	fake.wakes = 0;
	fake_script(hog, 3);
	fake_sched_run(1);
	assert_ptr_equal(fake.ran[runs], V(0));
	assert_int_equal(fake.runs, runs + 2);		/* the wake ended its run */
	/* asked for once, at the choice: not again once due (the policy has
	 * it; asking for its past time would end a run once more) */
	assert_int_equal(fake.wakes, 1);
	assert_int_equal(fake.pos, 2);
	assert_int_equal(vcpu_state(V(0)), VCPU_RUNNABLE);
	fake_script(hlt, 1);
	fake_sched_run(1);
	assert_ptr_equal(fake.ran[runs + 2], V(1));	/* the sibling, with its edge */
	assert_int_equal(fake.injected[fake.nr_injected - 1].vector, 0x20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(test_placement_least_loaded_not_boot),
		T(test_no_cpu_or_full),
		T(test_balancer_spreads_unpinned_hogs),
		T(test_both_run_and_states),
		T(test_halted_paused_throttled_are_skipped),
		T(test_idle_and_entry_arm_the_guest_timer),
		T(test_entry_after_an_interrupt_arms_the_next),
		T(test_slice_ends_when_another_waits),
		T(test_boot_cpu_always_contended),
		T(test_boot_cpu_runs_its_guest_without_sleeping),
		T(test_remove_on_own_cpu),
		T(test_fpu_sync_requests),
		T(test_kick_sends_an_ipi_to_its_cpu),
		T(test_timer_wake_enters),
		T(test_wake_before_idle_not_slept_through),
		T(test_pause_is_not_steal),
		T(test_cap_wait_is_not_steal),
		T(test_sibling_wake_enters),
		T(test_halted_sibling_woken_between_ticks),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
