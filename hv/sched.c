/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Per-CPU run queues of vCPUs (STYLE: pick_next / sleep / wake).  A vCPU is
 * removed by the CPU that runs it, so no other CPU ever frees a vCPU that
 * a CPU may still touch (its FPU state included).
 *
 * Mechanism and policy are apart.  The mechanism (this file): which CPU a
 * vCPU is placed on (the least loaded one its pinning allows), the
 * membership lists and their locks, the vCPU state changes made under
 * them (hv/vm.h's table), the requests (kick, FPU sync, remove, move),
 * IPIs, the loop and idling.  The policy (hv/sched/sched_ops.h, the credit
 * policy by default): which runnable vCPU of a CPU runs next, for how
 * long, and at what share (weight, cap, wake-up boost).
 *
 * The policy sees each vCPU pinned to the one CPU the mechanism placed it
 * on, so it never moves one by itself: moving a vCPU (pinning, balancing)
 * is the mechanism's, by its CPU dropping it and another adding it, which
 * keeps "a vCPU is removed only by its own CPU" and its FPU state saved
 * on the way.  Before each choice a CPU tells the policy which of its
 * vCPUs can run (a halted one woken by its timer or an interrupt, a
 * resumed or no longer throttled one); vcpu_notify() wakes one at once,
 * so that a woken interactive vCPU preempts a CPU hog (boost).
 */
#include <errno.h>
#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/fpu.h"
#include "arch/x86/percpu.h"
#include "hv/lib/time.h"
#include "hv/lib/log.h"
#include "hv/sched.h"
#include "hv/sched/balance.h"
#include "hv/sched/sched_ops.h"
#include "hv/vcpu.h"

#define RUNQ_MAX 16
#define SHELL_SLICE_TICKS (TIMER_HZ / 100 + 1)	/* the boot CPU: about 10 ms */

struct runq {
	spinlock_t lock;
	struct vcpu *v[RUNQ_MAX];	/* (lock) */
	unsigned int n;			/* (lock) */
	uint64_t last_tick;		/* owner CPU: the tick the policy last saw */
	uint64_t last_wakes;		/* owner CPU: the timer wakes it last saw */
	bool usable;			/* the back end is enabled on this CPU */
};

static struct runq runqs[MAX_CPUS];
static const struct sched_ops *policy = &sched_credit_ops;

/* Boot CPU, before any CPU can run guests: empty queues. */
void sched_init(void)
{
	for (unsigned int i = 0; i < MAX_CPUS; i++)
		runqs[i] = (struct runq){ .lock = SPINLOCK_INIT };
	policy->init(MAX_CPUS < SCHED_MAX_CPUS ? MAX_CPUS : SCHED_MAX_CPUS);
}

static struct vcpu *vcpu_of(struct sched_entity *se)
{
	return (struct vcpu *)((char *)se - offsetof(struct vcpu, se));
}

/* Mechanism: can v run now (or go on running)?  Its CPU only. */
static bool sched_runnable(struct vcpu *v)
{
	enum vcpu_state st = vcpu_state(v);

	if (vcpu_has_request(v, VCPU_REQ_REMOVE) || v->vm->state != VM_RUNNING)
		return false;
	if (vcpu_throttled_now(v))
		return false;
	if (st == VCPU_HALTED)
		return vcpu_wants_wake(v);
	return st == VCPU_RUNNABLE || st == VCPU_RUNNING;
}

/* Steal runs only while v could run: stopped while it cannot (its guest
 * paused, its throttle period out, its cap spent: waiting for its own
 * budget is not waiting for another's use of the CPU), started again
 * when it can. */
static void steal_clock(struct vcpu *v, bool can)
{
	if (vcpu_state(v) != VCPU_RUNNABLE)
		return;
	if (!can)
		v->runnable_since_ns = 0;
	else if (!v->runnable_since_ns)
		v->runnable_since_ns = time_now_ns();
}

void sched_enable_cpu(void)
{
	runqs[this_cpu()->index].usable = true;
}

unsigned int sched_load(unsigned int cpu)
{
	return cpu < MAX_CPUS ? runqs[cpu].n : 0;
}

/* ---- placement ----------------------------------------------------------------- */

static bool may_run_on(const struct vcpu *v, unsigned int cpu)
{
	return cpu < SCHED_MAX_CPUS && (v->affinity & (1ull << cpu)) && runqs[cpu].usable &&
	       cpus[cpu].online && runqs[cpu].n < RUNQ_MAX;
}

/* Least loaded CPU v may run on; the boot CPU only when nothing else can. */
static int pick_cpu(const struct vcpu *v)
{
	int best = -1;

	for (unsigned int i = 1; i < cpu_count; i++)
		if (may_run_on(v, i) && (best < 0 || runqs[i].n < runqs[best].n))
			best = i;
	if (best < 0 && may_run_on(v, 0))
		best = 0;
	return best;
}

/* ---- mechanism ------------------------------------------------------------------ */

/* Make cpu leave its guest and look at its run queue again.  On this CPU
 * with no vCPU running the flag is still set: the wake may come from an
 * interrupt after the scheduler chose to idle (run_one clears it before
 * its choice, so a wake it saw while syncing bounces no entry). */
static void poke(int cpu)
{
	if (cpu < 0)
		return;
	__atomic_store_n(&cpus[cpu].resched, true, __ATOMIC_RELEASE);
	if ((unsigned int)cpu != this_cpu()->index)
		apic_send_ipi(cpus[cpu].apic_id, VEC_KICK);
}

/* The policy's view of v: its share, pinned to the CPU it is placed on. */
static struct sched_params params_on(const struct vcpu *v, unsigned int cpu)
{
	return (struct sched_params){ .weight = v->weight, .cap_bp = v->cap_bp,
				      .affinity = 1ull << cpu };
}

static int add_on(struct vcpu *v, int cpu)
{
	struct sched_params p;
	struct runq *q;

	if (cpu < 0)
		return -EBUSY;
	p = params_on(v, (unsigned int)cpu);
	if (policy->add_vcpu(&v->se, &p, time_now_ns()))
		return -EINVAL;
	q = &runqs[cpu];
	spin_lock(&q->lock);
	q->v[q->n++] = v;
	if (vcpu_state(v) == VCPU_IDLE)	/* a migrated-in vCPU may be HALTED */
		vcpu_set_state(v, VCPU_IDLE, VCPU_RUNNABLE);
	__atomic_store_n(&v->cpu, cpu, __ATOMIC_RELEASE);
	spin_unlock(&q->lock);
	policy->wake(&v->se, time_now_ns());
	poke(cpu);
	return 0;
}

int sched_add(struct vcpu *v)
{
	int cpu;

	if (!v->weight)
		v->weight = SCHED_WEIGHT_DEFAULT;
	if (!v->affinity)
		v->affinity = SCHED_AFFINITY_ANY;
	cpu = pick_cpu(v);
	return add_on(v, cpu);
}

void sched_wake(struct vcpu *v)
{
	if (__atomic_load_n(&v->cpu, __ATOMIC_ACQUIRE) < 0)
		return;
	/* the policy names the CPU to interrupt: v's if it is idle there, or if
	 * v (woken with credit left) should preempt what runs */
	poke(policy->wake(&v->se, time_now_ns()));
}

/* On the CPU a vCPU is placed on: its extended state to memory. */
static void fpu_sync_here(struct vcpu *v)
{
	struct percpu *c = this_cpu();

	if (c->fpu_owner == v) {
		fpu_save(v->fpu);
		c->fpu_owner = NULL;
	}
	vcpu_take_request(v, VCPU_REQ_FPU_SYNC);
}

void vcpu_fpu_sync_soon(struct vcpu *v)
{
	int cpu = __atomic_load_n(&v->cpu, __ATOMIC_ACQUIRE);

	if (cpu >= 0 && (unsigned int)cpu != this_cpu()->index)
		vcpu_request(v, VCPU_REQ_FPU_SYNC);
}

void vcpu_fpu_sync(struct vcpu *v)
{
	int cpu = __atomic_load_n(&v->cpu, __ATOMIC_ACQUIRE);

	if (cpu < 0)
		return;		/* never placed, or reaped: nobody holds it */
	if ((unsigned int)cpu == this_cpu()->index) {
		fpu_sync_here(v);
		return;
	}
	vcpu_request(v, VCPU_REQ_FPU_SYNC);
	while (vcpu_has_request(v, VCPU_REQ_FPU_SYNC)) {
		poke(cpu);
		for (int i = 0; i < 1000 && vcpu_has_request(v, VCPU_REQ_FPU_SYNC); i++)
			cpu_relax();
	}
}

/* On the owning CPU: save extended state on request, drop vCPUs marked
 * for removal. */
static void reap(struct runq *q)
{
	struct percpu *c = this_cpu();

	spin_lock(&q->lock);
	for (unsigned int i = 0; i < q->n; ) {
		struct vcpu *v = q->v[i];
		if (vcpu_has_request(v, VCPU_REQ_FPU_SYNC))
			fpu_sync_here(v);
		if (!vcpu_has_request(v, VCPU_REQ_REMOVE)) {
			i++;
			continue;
		}
		q->v[i] = q->v[--q->n];
		if (c->fpu_owner == v) {
			fpu_save(v->fpu);	/* it may go on elsewhere (pin) */
			c->fpu_owner = NULL;
		}
		policy->remove_vcpu(&v->se);
		vcpu_take_request(v, VCPU_REQ_FPU_SYNC | VCPU_REQ_REMOVE);
		/* a halted vCPU stays halted wherever it goes next (pin, the
		 * balancer, a migration's save): it waits for an interrupt */
		if (vcpu_state(v) != VCPU_HALTED)
			vcpu_set_state(v, vcpu_state(v), VCPU_IDLE);
		__atomic_store_n(&v->cpu, -1, __ATOMIC_RELEASE);
	}
	spin_unlock(&q->lock);
}

void sched_remove(struct vcpu *v)
{
	int cpu = __atomic_load_n(&v->cpu, __ATOMIC_ACQUIRE);

	if (cpu < 0)
		return;
	vcpu_request(v, VCPU_REQ_REMOVE);
	if ((unsigned int)cpu == this_cpu()->index) {
		reap(&runqs[cpu]);
		return;
	}
	vcpu_kick(v);
	while (__atomic_load_n(&v->cpu, __ATOMIC_ACQUIRE) >= 0) {
		poke(cpu);
		for (int i = 0; i < 1000 && __atomic_load_n(&v->cpu, __ATOMIC_ACQUIRE) >= 0; i++)
			cpu_relax();
	}
}

/* This CPU's vCPUs, copied under the queue lock and used without it: only
 * this CPU removes them, so they stay. */
static unsigned int own_vcpus(struct runq *q, struct vcpu *list[RUNQ_MAX])
{
	unsigned int n;

	spin_lock(&q->lock);
	n = q->n;
	for (unsigned int i = 0; i < n; i++)
		list[i] = q->v[i];
	spin_unlock(&q->lock);
	return n;
}

/* Tell the policy which of this CPU's vCPUs can run now and which cannot. */
static void sync_policy(struct runq *q, uint64_t now)
{
	struct vcpu *list[RUNQ_MAX];
	unsigned int n = own_vcpus(q, list);

	for (unsigned int i = 0; i < n; i++) {
		struct sched_usage u;
		bool can;

		if (list[i] == this_cpu()->vcpu)
			continue;	/* the running one: the policy knows */
		can = sched_runnable(list[i]);
		policy->usage(&list[i]->se, now, &u);
		steal_clock(list[i], can && !u.capped);
		/* the CPU the policy names: this one when the woken vCPU
		 * should preempt the running one (its next entry is then
		 * skipped); before a choice, run_one clears the flag */
		if (can && u.state == SE_SLEEPING)
			poke(policy->wake(&list[i]->se, now));
		else if (!can && u.state == SE_QUEUED)
			policy->sleep(&list[i]->se, now);
	}
}

/* The timer wakes this CPU for the halted vCPUs beside the running one
 * when their timers fall due (the running one's own is asked at each
 * entry), and for the throttled ones when they may run again.  Each is
 * asked for: unlike arm_wakes, no early return (one that can run but is
 * left waiting by the policy must not keep the others from their
 * timers).  One that can run already is the policy's (sync_policy told
 * it, or the next tick will): asking for its past time would only end
 * the runner's run once more for nothing.
 * @pre host interrupts on (the timer's state is theirs too). */
static void arm_siblings(struct runq *q)
{
	struct vcpu *list[RUNQ_MAX];
	unsigned int n = own_vcpus(q, list);

	irq_disable();
	for (unsigned int i = 0; i < n; i++) {
		struct vcpu *v = list[i];

		if (v == this_cpu()->vcpu)
			continue;
		if (vcpu_state(v) == VCPU_HALTED && v->halted_if && !sched_runnable(v))
			vcpu_arm_timer(v);
		if (vcpu_throttled_now(v))
			apic_timer_wake_at_ns(v->thr_until_ns);
	}
	irq_enable();
}

static bool run_one(struct runq *q)
{
	struct percpu *c = this_cpu();
	struct sched_entity *se;
	enum vcpu_state next;
	struct vcpu *v;

	reap(q);
	if (!q->n)
		return false;
	sync_policy(q, time_now_ns());
	/* every wake until now is in the choice below: none may bounce its
	 * entry; one from now on sets the flag again (the idle loop, or the
	 * entry, sees it) */
	__atomic_store_n(&c->resched, false, __ATOMIC_RELEASE);
	se = policy->pick_next(c->index, time_now_ns());
	if (!se)
		return false;
	v = vcpu_of(se);
	spin_lock(&q->lock);
	if (!sched_runnable(v)) {
		spin_unlock(&q->lock);
		policy->sleep(se, time_now_ns());
		return true;	/* something changed since the sync: choose again */
	}
	vcpu_set_state(v, vcpu_state(v), VCPU_RUNNING);
	spin_unlock(&q->lock);
	c->vcpu = v;
	q->last_tick = c->timer_ticks;
	q->last_wakes = c->timer_wakes;
	if (c->index)
		arm_siblings(q);
	next = vcpu_run(v);
	c->vcpu = NULL;
	spin_lock(&q->lock);
	vcpu_set_state(v, VCPU_RUNNING, next);	/* from here others may use it */
	spin_unlock(&q->lock);
	if (next == VCPU_HALTED || !sched_runnable(v)) {
		steal_clock(v, false);
		policy->sleep(se, time_now_ns());
	}
	return true;
}

/* From vcpu_run on this CPU, after an exit: should the running vCPU give
 * the CPU back?  The policy is asked once per timer tick; the boot CPU
 * lets the shell in every slice.  Between ticks, a timer wake served
 * (a halted sibling's timer, asked by arm_siblings, or the running
 * vCPU's own) has the halted ones looked at: one whose timer fell due is
 * woken, and preempts the running one as a vCPU woken by an interrupt
 * does (poke), rather than wait for the tick (up to 4 ms). */
bool sched_preempt(uint64_t start_tick)
{
	struct percpu *c = this_cpu();
	struct runq *q = &runqs[c->index];
	/* read once: a tick that lands between two reads would be lost */
	uint64_t ticks = __atomic_load_n(&c->timer_ticks, __ATOMIC_RELAXED);
	uint64_t wakes = __atomic_load_n(&c->timer_wakes, __ATOMIC_RELAXED);
	bool tick = ticks != q->last_tick;

	if (c->index == 0)
		return ticks - start_tick >= SHELL_SLICE_TICKS;
	if (!tick && (wakes == q->last_wakes || __atomic_load_n(&q->n, __ATOMIC_RELAXED) < 2)) {
		q->last_wakes = wakes;	/* a wake with no sibling: the runner's own */
		return false;
	}
	q->last_tick = ticks;
	q->last_wakes = wakes;
	sync_policy(q, time_now_ns());	/* halted ones whose timer is due wait now */
	arm_siblings(q);		/* and the others' next */
	return tick && policy->tick(c->index, time_now_ns());
}

void sched_yield_cpu(void)
{
	if (this_cpu()->index)		/* the boot CPU's vCPUs yield to the shell anyway */
		policy->yield(this_cpu()->index, time_now_ns());
}

/* ---- shares, pinning, accounting (the shell) ---------------------------------- */

int sched_set_share(struct vcpu *v, uint32_t weight, uint32_t cap_bp)
{
	int cpu = __atomic_load_n(&v->cpu, __ATOMIC_ACQUIRE);

	if (weight < SCHED_WEIGHT_MIN || weight > SCHED_WEIGHT_MAX || cap_bp > SCHED_CAP_BP_MAX)
		return -EINVAL;
	v->weight = weight;
	v->cap_bp = cap_bp;
	if (cpu >= 0) {
		struct sched_params p = params_on(v, (unsigned int)cpu);
		int k = policy->set_params(&v->se, &p, time_now_ns());
		if (k < -1)
			return k;
		poke(k);
	}
	return 0;
}

int sched_pin(struct vcpu *v, uint64_t affinity)
{
	int cpu = __atomic_load_n(&v->cpu, __ATOMIC_ACQUIRE);
	bool any = false;

	/* the boot CPU runs the shell: guests only where it is the only one
	 * (there it runs them between keystrokes, with no timer slices) */
	if (cpu_count > 1)
		affinity &= ~1ull;
	for (unsigned int i = 0; i < cpu_count && i < SCHED_MAX_CPUS; i++)
		any |= (affinity & (1ull << i)) && runqs[i].usable && cpus[i].online;
	if (!any)
		return -EINVAL;
	uint64_t old = v->affinity;
	int to;

	v->affinity = affinity;
	if (cpu < 0 || (affinity & (1ull << cpu)))
		return 0;	/* placed later, or already where it may be */
	sched_remove(v);	/* its CPU drops it, its FPU state saved */
	to = pick_cpu(v);
	if (to < 0) {		/* their queues are full: it stays where it was */
		v->affinity = old;
		add_on(v, cpu);
		return -EBUSY;
	}
	return add_on(v, to);
}


/* Before idling: the timer wakes this CPU when the first of its halted
 * vCPUs' timers is due, or its throttled ones may run again.  True when a
 * halted one can run already (its timer fell due since the choice): no
 * sleep then.  The list is a copy (own_vcpus), so that a look at a vCPU's
 * devices, which may wake others, holds no queue lock. */
static bool arm_wakes(struct runq *q)
{
	struct vcpu *list[RUNQ_MAX];
	unsigned int n = own_vcpus(q, list);

	for (unsigned int i = 0; i < n; i++) {
		struct vcpu *v = list[i];

		if (vcpu_state(v) == VCPU_HALTED && v->halted_if) {
			/* cleared since the choice (a sibling touched a device,
			 * or time raised a line as it looked): look again, as the
			 * choice did; a look that finds nothing sets it anew.
			 * Only one that may run: a paused guest's would be found
			 * wanting again and again, and the CPU would never sleep */
			if (!__atomic_load_n(&v->irq_quiet_until_ns, __ATOMIC_ACQUIRE) &&
			    sched_runnable(v))
				return true;
			vcpu_arm_timer(v);
		}
		if (vcpu_throttled_now(v))
			apic_timer_wake_at_ns(v->thr_until_ns);
	}
	return false;
}

/*
 * One round of an AP's loop: run a vCPU, or sleep until an interrupt.  A
 * vCPU always runs with host interrupts on until its entry (vcpu_run may
 * reboot its guest or wait for other CPUs, which answer with IPIs).  The
 * last look before sleeping is with interrupts off, so a wake that came
 * after the choice (poke's flag, its IPI still pending) is not slept
 * through: sti;hlt takes the IPI.
 */
static void loop_once(struct runq *q)
{
	irq_enable();
	if (run_one(q))
		return;
	irq_disable();
	if (__atomic_exchange_n(&this_cpu()->resched, false, __ATOMIC_ACQ_REL))
		return;
	if (arm_wakes(q))
		return;
	uint64_t t0 = rdtsc();
	cpu_idle();
	this_cpu()->idle_tsc += rdtsc() - t0;	/* for `top` */
}

void sched_loop(void)
{
	struct runq *q = &runqs[this_cpu()->index];

	for (;;)
		loop_once(q);
}

/* ---- load balancing (the boot CPU, from sched_poll) ---------------------------- */

#define BAL_INTERVAL_NS	(250ull * 1000000)
#define BAL_SETTLE_NS	(2000ull * 1000000)	/* a moved vCPU stays this long */
#define BAL_VCPUS	(VM_MAX * VM_MAX_VCPUS)

static struct bal_vcpu bal_v[BAL_VCPUS];
static struct vcpu *bal_who[BAL_VCPUS];

/* What v wanted since the last look, in permille of one CPU. */
static uint32_t demand_of(struct vcpu *v, uint64_t span_ns)
{
	uint64_t used = v->stats.guest_ns + v->stats.host_ns, steal = v->stats.steal_ns;
	uint64_t d = (used - v->bal.used_ns) + (steal - v->bal.steal_ns);
	bool seen = v->bal.seen;

	v->bal.used_ns = used;
	v->bal.steal_ns = steal;
	v->bal.seen = true;
	if (!seen || !span_ns)
		return 0;
	d = d * 1000 / span_ns;
	return d > 2000 ? 2000 : (uint32_t)d;
}

static unsigned int gather(uint64_t now, uint64_t span_ns)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < VM_MAX; i++) {
		struct vm *vm = vm_at(i);

		for (unsigned int j = 0; vm && j < vm->nr_vcpus && n < BAL_VCPUS; j++) {
			struct vcpu *v = vm->vcpus[j];
			bal_who[n] = v;
			bal_v[n++] = (struct bal_vcpu){
				.cpu = __atomic_load_n(&v->cpu, __ATOMIC_ACQUIRE),
				.affinity = v->affinity,
				.demand = demand_of(v, span_ns),
				.settled = v->bal.moved_ns && now - v->bal.moved_ns < BAL_SETTLE_NS,
			};
		}
	}
	return n;
}

/* CPUs that may take one more vCPU: never the boot CPU while others can. */
static uint64_t cpus_open(void)
{
	uint64_t ok = 0;

	for (unsigned int i = 1; i < cpu_count && i < SCHED_MAX_CPUS; i++)
		if (runqs[i].usable && cpus[i].online && runqs[i].n < RUNQ_MAX)
			ok |= 1ull << i;
	return ok;
}

/* Every BAL_INTERVAL_NS: move at most one unpinned vCPU off an overloaded
 * CPU (hv/sched/balance.h), as `pin` moves one. */
static void balance(void)
{
	static uint64_t last;
	uint64_t now = time_now_ns();
	struct bal_move m;
	struct vcpu *v;
	int from;

	if (now - last < BAL_INTERVAL_NS || cpu_count < 3)
		return;
	if (!bal_pick(bal_v, gather(now, last ? now - last : 0), cpus_open(), &m)) {
		last = now;
		return;
	}
	last = now;
	v = bal_who[m.vcpu];
	from = __atomic_load_n(&v->cpu, __ATOMIC_ACQUIRE);
	if (from < 0)
		return;
	sched_remove(v);	/* its CPU drops it, its FPU state saved */
	if (add_on(v, (int)m.to))
		add_on(v, from);
	v->bal.moved_ns = now;
	pr_debug("sched: %s vCPU %u: CPU %d -> %u (balance)", v->vm->name, v->hw.id,
		 from, m.to);
}

/* The boot CPU's turn between shell inputs: balance, and on a host with
 * no other CPU run one of its vCPUs for a slice.  True when one can run
 * again at once, so that the shell loop does not sleep; else the halted
 * ones' timers are armed first, as an AP's idle loop does, so that a
 * sleeping shell does not leave them waiting for the next tick. */
bool sched_poll(void)
{
	struct runq *q = &runqs[0];
	bool again;

	balance();
	if (!q->n)
		return false;
	irq_enable();
	again = run_one(q);
	irq_disable();
	return again || arm_wakes(q);
}
