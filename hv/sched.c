/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Per-CPU run queues of vCPUs (STYLE: pick_next / sleep / wake).  A vCPU is
 * removed by the CPU that runs it, so no other CPU ever frees a vCPU that
 * a CPU may still touch (its FPU state included).
 *
 * Mechanism and policy are apart.  The mechanism: the queues and their
 * locks, the vCPU state changes made under them (hv/vm.h's table), the
 * requests (kick, FPU sync, remove), IPIs, the loop and idling.  The
 * policy, round robin today: which CPU a vCPU is placed on (pick_cpu),
 * which queued vCPU runs next (pick_next) and whether the running one
 * should yield (sched_contended); it sees only run queues and
 * sched_runnable().
 */
#include <errno.h>
#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/fpu.h"
#include "arch/x86/percpu.h"
#include "hv/sched.h"
#include "hv/vcpu.h"

#define RUNQ_MAX 16

struct runq {
	spinlock_t lock;
	struct vcpu *v[RUNQ_MAX];	/* (lock) */
	unsigned int n;			/* (lock) */
	unsigned int next;		/* owner CPU: round-robin cursor */
	bool usable;			/* the back end is enabled on this CPU */
};

static struct runq runqs[MAX_CPUS];

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

void sched_enable_cpu(void)
{
	runqs[this_cpu()->index].usable = true;
}

unsigned int sched_load(unsigned int cpu)
{
	return cpu < MAX_CPUS ? runqs[cpu].n : 0;
}

/* ---- policy: round robin ------------------------------------------------------ */

/* Least loaded usable CPU; the boot CPU only when nothing else can. */
static int pick_cpu(void)
{
	int best = -1;

	for (unsigned int i = 1; i < cpu_count; i++)
		if (runqs[i].usable && cpus[i].online && runqs[i].n < RUNQ_MAX &&
		    (best < 0 || runqs[i].n < runqs[best].n))
			best = i;
	if (best < 0 && runqs[0].usable && runqs[0].n < RUNQ_MAX)
		best = 0;
	return best;
}

/* The next runnable vCPU after the last one picked.  q->lock held. */
static struct vcpu *pick_next(struct runq *q)
{
	for (unsigned int i = 0; i < q->n; i++) {
		struct vcpu *v = q->v[(q->next + i) % q->n];
		if (sched_runnable(v)) {
			q->next = (q->next + i + 1) % q->n;
			return v;
		}
	}
	return NULL;
}

bool sched_contended(void)
{
	struct percpu *c = this_cpu();
	struct runq *q = &runqs[c->index];
	unsigned int n = 0;

	if (c->index == 0)
		return true;	/* the shell shares this CPU */
	for (unsigned int i = 0; i < q->n; i++)
		n += sched_runnable(q->v[i]);
	return n > 1;
}

/* ---- mechanism ------------------------------------------------------------------ */

/* Make cpu leave its guest and look at its run queue again. */
static void poke(int cpu)
{
	if (cpu < 0)
		return;
	__atomic_store_n(&cpus[cpu].resched, true, __ATOMIC_RELEASE);
	if ((unsigned int)cpu != this_cpu()->index)
		apic_send_ipi(cpus[cpu].apic_id, VEC_KICK);
}

int sched_add(struct vcpu *v)
{
	int cpu = pick_cpu();
	struct runq *q;

	if (cpu < 0)
		return -EBUSY;
	q = &runqs[cpu];
	spin_lock(&q->lock);
	q->v[q->n++] = v;
	if (vcpu_state(v) == VCPU_IDLE)	/* a migrated-in vCPU may be HALTED */
		vcpu_set_state(v, VCPU_IDLE, VCPU_RUNNABLE);
	__atomic_store_n(&v->cpu, cpu, __ATOMIC_RELEASE);
	spin_unlock(&q->lock);
	poke(cpu);
	return 0;
}

void sched_wake(struct vcpu *v)
{
	poke(v->cpu);
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
		if (c->fpu_owner == v)
			c->fpu_owner = NULL;
		vcpu_take_request(v, VCPU_REQ_FPU_SYNC | VCPU_REQ_REMOVE);
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

static bool run_one(struct runq *q)
{
	struct percpu *c = this_cpu();
	enum vcpu_state next;
	struct vcpu *v;

	reap(q);
	spin_lock(&q->lock);
	v = pick_next(q);
	if (v)
		vcpu_set_state(v, vcpu_state(v), VCPU_RUNNING);
	spin_unlock(&q->lock);
	if (!v)
		return false;
	c->vcpu = v;
	next = vcpu_run(v);
	c->vcpu = NULL;
	spin_lock(&q->lock);
	vcpu_set_state(v, VCPU_RUNNING, next);	/* from here others may use it */
	spin_unlock(&q->lock);
	return true;
}

void sched_loop(void)
{
	struct runq *q = &runqs[this_cpu()->index];

	irq_enable();
	for (;;) {
		if (run_one(q))
			continue;
		uint64_t t0 = rdtsc();
		cpu_idle();
		this_cpu()->idle_tsc += rdtsc() - t0;	/* for `top` */
	}
}

void sched_poll(void)
{
	struct runq *q = &runqs[0];

	if (q->n) {
		irq_enable();
		run_one(q);
		irq_disable();
	}
}
