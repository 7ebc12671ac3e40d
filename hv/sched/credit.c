/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The credit policy: proportional share of host CPUs between vCPUs, in the
 * meaning of Xen credit2 (weight 256 is the default; a cap is a share of one
 * CPU).  Pure logic over now_ns arguments: see hv/sched/sched_ops.h.
 *
 * Each entity holds credit, in ns of run time at weight 256.  Running burns
 * it at 256/weight per ns, so over an epoch an entity runs in proportion to
 * its weight.  A CPU runs the eligible entity with the most credit; when even
 * that one has none left, every entity of the queue gets as many
 * CREDIT_INIT more as bring that one above zero (kept at most CREDIT_INIT,
 * so a sleeper does not hoard), as credit2 scales its reset.  Debt between
 * competitors is carried, which makes the shares exact in the long run
 * despite tick-sized overruns; an entity that ran alone (a weight below
 * 102 burns more than one CREDIT_INIT per reset) carries none into the
 * time it has company.
 *
 * A cap is a per-vCPU budget of cap_bp/10000 of each CAP_PERIOD_NS, refilled
 * once a period; an overrun is debt against the next period.  A guest's cap
 * is split evenly over its vCPUs (sched_cap_split), so a guest whose vCPUs
 * are not all busy stays below its cap rather than above it.
 *
 * A vCPU that wakes with credit left is boosted: it runs before the others
 * of its queue and preempts the running one at once (wake returns its CPU
 * to IPI); the boost ends when it is picked.  Having no credit left bounds
 * what a vCPU that wakes often can take this way.
 *
 * Balancing: an unpinned entity that wakes beside a running one moves to an
 * idle allowed CPU; an idle CPU pulls a waiting entity from the busiest on
 * each tick, a busy one every BALANCE_NS, and then also takes an entity that
 * is behind from a CPU with one runnable more, so that 3 hogs on 2 CPUs get
 * 2/3 each.  Credit is per queue: a moved entity joins at the end of the
 * epoch of its new queue.  Pinning is strict: an entity is only ever placed
 * on an allowed CPU (one whose affinity changed while it ran leaves at its
 * CPU's next pick_next).
 */
#include <errno.h>
#include <stddef.h>
#include "hv/lib/spinlock.h"
#include "hv/sched/sched_ops.h"

#define NS_PER_MS	1000000ull
#define SLICE_NS	(10 * NS_PER_MS)
#define CREDIT_INIT	((int64_t)(10 * NS_PER_MS))
#define CREDIT_DEBT_MAX	((int64_t)(60000 * NS_PER_MS))	/* a minute at weight 256 */
#define CAP_PERIOD_NS	(100 * NS_PER_MS)
#define BALANCE_NS	(20 * NS_PER_MS)	/* a busy CPU's pull interval */

struct runq {
	spinlock_t lock;
	struct sched_entity *members;	/* (lock) all entities placed here */
	struct sched_entity *curr;	/* (lock) RUNNING here, or NULL */
	unsigned int nr_run;		/* (lock, read racily) QUEUED + RUNNING */
	unsigned int nr_members;	/* (lock, read racily) */
	bool yielded;			/* (lock) curr gave up its slice */
	uint64_t next_balance_ns;	/* owner CPU only */
};

static struct runq rqs[SCHED_MAX_CPUS];
static unsigned int nr_cpus;

static bool params_ok(const struct sched_params *p)
{
	uint64_t all = nr_cpus >= 64 ? UINT64_MAX : (1ull << nr_cpus) - 1;

	return p->weight >= SCHED_WEIGHT_MIN && p->weight <= SCHED_WEIGHT_MAX &&
	       p->cap_bp <= SCHED_CAP_BP_MAX && (p->affinity & all) != 0;
}

static bool allowed(const struct sched_entity *se, unsigned int cpu)
{
	return se->p.affinity >> cpu & 1;
}

static unsigned int load_of(unsigned int cpu)
{
	return __atomic_load_n(&rqs[cpu].nr_run, __ATOMIC_RELAXED);
}

static void set_state(struct runq *rq, struct sched_entity *se, enum se_state s)
{
	bool was = se->state == SE_QUEUED || se->state == SE_RUNNING;
	bool is = s == SE_QUEUED || s == SE_RUNNING;

	if (was != is)
		__atomic_store_n(&rq->nr_run, rq->nr_run + (is ? 1 : -1),
				 __ATOMIC_RELAXED);
	se->state = s;
}

/* Lock the queue se is on; NULL (nothing locked) when it is on none. */
static struct runq *lock_se(struct sched_entity *se)
{
	for (;;) {
		int c = __atomic_load_n(&se->cpu, __ATOMIC_ACQUIRE);

		if (c < 0)
			return NULL;
		spin_lock(&rqs[c].lock);
		if (se->cpu == c)
			return &rqs[c];
		spin_unlock(&rqs[c].lock);
	}
}

/* Two queues' locks, always in ascending CPU order. */
static void lock2(unsigned int a, unsigned int b)
{
	spin_lock(&rqs[a < b ? a : b].lock);
	if (a != b)
		spin_lock(&rqs[a < b ? b : a].lock);
}

static void unlock2(unsigned int a, unsigned int b)
{
	spin_unlock(&rqs[a].lock);
	if (a != b)
		spin_unlock(&rqs[b].lock);
}

static void cap_refill(struct sched_entity *se, uint64_t now)
{
	int64_t quota = (int64_t)(CAP_PERIOD_NS * se->p.cap_bp / SCHED_CAP_BP_MAX);
	uint64_t n;

	if (!se->p.cap_bp || now < se->cap_next_ns)
		return;
	n = (now - se->cap_next_ns) / CAP_PERIOD_NS + 1;
	se->cap_next_ns += n * CAP_PERIOD_NS;
	for (uint64_t i = 0; i < n && se->cap_budget < quota; i++)
		se->cap_budget += quota;
	if (se->cap_budget > quota)
		se->cap_budget = quota;
}

/* Time since se->since_ns, 0 if another CPU stored a later since_ns than
 * the now this CPU read before its lock (never a wrap to 2^64). */
static uint64_t since(const struct sched_entity *se, uint64_t now)
{
	return now > se->since_ns ? now - se->since_ns : 0;
}

static bool within_cap(struct sched_entity *se, uint64_t now)
{
	cap_refill(se, now);
	return !se->p.cap_bp || se->cap_budget > 0;
}

static bool eligible(struct sched_entity *se, uint64_t now)
{
	return se->state == SE_QUEUED && within_cap(se, now);
}

/* Charge the running entity for the time since it was last charged. */
static void charge(struct sched_entity *se, uint64_t now)
{
	uint64_t d = now > se->since_ns ? now - se->since_ns : 0;

	se->runtime_ns += d;
	se->credit -= (int64_t)(d * SCHED_WEIGHT_DEFAULT / se->p.weight);
	if (se->p.cap_bp)
		se->cap_budget -= (int64_t)d;
	se->since_ns = now;
}

/* Does a rank before b?  Boosted first (longest waiting), then credit. */
static bool better(const struct sched_entity *a, const struct sched_entity *b)
{
	if (a->boost != b->boost)
		return a->boost;
	if (!a->boost && a->credit != b->credit)
		return a->credit > b->credit;
	return a->since_ns < b->since_ns;
}

/* The best eligible waiting entity of rq, skipping skip. */
static struct sched_entity *best_waiting(struct runq *rq, uint64_t now,
					 const struct sched_entity *skip)
{
	struct sched_entity *best = NULL;

	for (struct sched_entity *se = rq->members; se; se = se->next)
		if (se != skip && eligible(se, now) && (!best || better(se, best)))
			best = se;
	return best;
}

/* A new epoch once no eligible entity of rq has credit left: enough
 * CREDIT_INIT for the best of them (the one running, or the best waiting)
 * to have some again. */
static void maybe_reset(struct runq *rq, uint64_t now)
{
	struct sched_entity *w = best_waiting(rq, now, NULL);
	int64_t best, add;

	if ((rq->curr && rq->curr->credit > 0) || (w && w->credit > 0))
		return;
	if (!rq->curr && !w)
		return;
	best = rq->curr && (!w || rq->curr->credit > w->credit) ? rq->curr->credit : w->credit;
	add = (1 + (best < -CREDIT_DEBT_MAX ? CREDIT_DEBT_MAX : -best) / CREDIT_INIT) *
	      CREDIT_INIT;
	for (struct sched_entity *se = rq->members; se; se = se->next) {
		se->credit += add;
		if (se->credit > CREDIT_INIT)
			se->credit = CREDIT_INIT;
		if (se->credit < -CREDIT_DEBT_MAX)
			se->credit = -CREDIT_DEBT_MAX;	/* no overflow, whatever runs */
	}
}

static void link_se(struct runq *rq, struct sched_entity *se, unsigned int cpu)
{
	se->next = rq->members;
	rq->members = se;
	rq->nr_members++;
	__atomic_store_n(&se->cpu, (int)cpu, __ATOMIC_RELEASE);
}

static void unlink_se(struct runq *rq, struct sched_entity *se)
{
	struct sched_entity **pp = &rq->members;

	while (*pp && *pp != se)
		pp = &(*pp)->next;
	if (*pp)
		*pp = se->next;
	se->next = NULL;
	rq->nr_members--;
	if (rq->curr == se)
		rq->curr = NULL;
	set_state(rq, se, SE_OFF);
	__atomic_store_n(&se->cpu, -1, __ATOMIC_RELEASE);
}

/* Move a non-running se between two locked queues. */
static void move(struct sched_entity *se, unsigned int from, unsigned int to)
{
	enum se_state s = se->state;

	unlink_se(&rqs[from], se);
	link_se(&rqs[to], se, to);
	set_state(&rqs[to], se, s);
	if (se->credit > 0)
		se->credit = 0;		/* joins at the end of the epoch there */
}

/* The allowed CPU with the fewest runnable, then fewest placed entities. */
static int least_loaded(const struct sched_entity *se)
{
	int best = -1;

	for (unsigned int c = 0; c < nr_cpus; c++) {
		if (!allowed(se, c))
			continue;
		if (best < 0 || load_of(c) < load_of(best) ||
		    (load_of(c) == load_of(best) &&
		     rqs[c].nr_members < rqs[best].nr_members))
			best = (int)c;
	}
	return best;
}

static int credit_init(unsigned int ncpus)
{
	if (ncpus == 0 || ncpus > SCHED_MAX_CPUS)
		return -EINVAL;
	nr_cpus = ncpus;
	for (unsigned int c = 0; c < SCHED_MAX_CPUS; c++)
		rqs[c] = (struct runq){ .lock = SPINLOCK_INIT };
	return 0;
}

static int credit_add(struct sched_entity *se, const struct sched_params *p,
		      uint64_t now)
{
	int c;

	if (!params_ok(p))
		return -EINVAL;
	*se = (struct sched_entity){ .p = *p, .cpu = -1, .last_cpu = -1,
		.credit = CREDIT_INIT, .cap_next_ns = now + CAP_PERIOD_NS,
		.since_ns = now };
	se->cap_budget = (int64_t)(CAP_PERIOD_NS * p->cap_bp / SCHED_CAP_BP_MAX);
	c = least_loaded(se);
	spin_lock(&rqs[c].lock);
	link_se(&rqs[c], se, (unsigned int)c);
	se->state = SE_SLEEPING;
	spin_unlock(&rqs[c].lock);
	return 0;
}

static void credit_remove(struct sched_entity *se)
{
	struct runq *rq = lock_se(se);

	if (!rq)
		return;
	unlink_se(rq, se);
	spin_unlock(&rq->lock);
}

/* An idle allowed CPU other than se's, or -1. */
static int idle_cpu_for(const struct sched_entity *se)
{
	for (unsigned int c = 0; c < nr_cpus; c++)
		if ((int)c != se->cpu && allowed(se, c) && load_of(c) == 0)
			return (int)c;
	return -1;
}

/* Move a waiting se to the idle CPU t if it is still worth it. */
static void place_idle(struct sched_entity *se, int t)
{
	int from = __atomic_load_n(&se->cpu, __ATOMIC_ACQUIRE);

	if (from < 0 || t < 0)
		return;
	lock2((unsigned int)from, (unsigned int)t);
	if (se->cpu == from && se->state == SE_QUEUED && rqs[from].curr &&
	    rqs[t].nr_run == 0)
		move(se, (unsigned int)from, (unsigned int)t);
	unlock2((unsigned int)from, (unsigned int)t);
}

/* Whom to IPI for a waiting se: its CPU if idle or if se should preempt. */
static int kick_for(struct sched_entity *se)
{
	struct runq *rq = lock_se(se);
	int k = -1;

	if (!rq)
		return -1;
	if (se->state == SE_QUEUED &&
	    (!rq->curr || (se->boost && !rq->curr->boost)))
		k = se->cpu;
	spin_unlock(&rq->lock);
	return k;
}

static int credit_wake(struct sched_entity *se, uint64_t now)
{
	struct runq *rq = lock_se(se);
	bool busy;

	if (!rq)
		return -1;
	if (se->state != SE_SLEEPING) {
		se->woken = se->state != SE_OFF;	/* a sleep() racing us fails */
		spin_unlock(&rq->lock);
		return -1;
	}
	set_state(rq, se, SE_QUEUED);
	se->since_ns = now;
	se->boost = se->credit > 0;
	busy = rq->curr != NULL;
	spin_unlock(&rq->lock);
	if (busy)
		place_idle(se, idle_cpu_for(se));
	return kick_for(se);
}

static bool credit_sleep(struct sched_entity *se, uint64_t now)
{
	struct runq *rq = lock_se(se);
	bool slept;

	if (!rq)
		return false;
	slept = !se->woken;
	se->woken = false;
	if (se->state == SE_RUNNING) {
		charge(se, now);
		rq->curr = NULL;
		set_state(rq, se, slept ? SE_SLEEPING : SE_QUEUED);
	} else if (se->state == SE_QUEUED && slept) {
		se->steal_ns += since(se, now);
		set_state(rq, se, SE_SLEEPING);
	}
	if (slept)
		se->boost = false;
	spin_unlock(&rq->lock);
	return slept;
}

static void credit_yield(unsigned int cpu, uint64_t now)
{
	struct runq *rq = &rqs[cpu];

	spin_lock(&rq->lock);
	if (rq->curr) {
		charge(rq->curr, now);
		rq->yielded = true;
	}
	spin_unlock(&rq->lock);
}

/* Run time scaled to weight 256: who is behind across queues. */
static uint64_t vrun(const struct sched_entity *se)
{
	return se->runtime_ns / se->p.weight * SCHED_WEIGHT_DEFAULT;
}

/* The least run runnable entity of a locked queue (UINT64_MAX: none). */
static uint64_t min_vrun(unsigned int cpu)
{
	uint64_t m = UINT64_MAX;

	for (struct sched_entity *se = rqs[cpu].members; se; se = se->next)
		if ((se->state == SE_QUEUED || se->state == SE_RUNNING) &&
		    vrun(se) < m)
			m = vrun(se);
	return m;
}

/* The least run waiting, eligible entity of src that may run on dst, and
 * when only behind, only one that has run less than everyone on dst and
 * has run on src since it came (no ping-pong before it ever runs). */
static struct sched_entity *pullable(unsigned int src, unsigned int dst,
				     uint64_t now, bool behind)
{
	uint64_t limit = behind ? min_vrun(dst) : UINT64_MAX;
	struct sched_entity *best = NULL;

	for (struct sched_entity *se = rqs[src].members; se; se = se->next)
		if (allowed(se, dst) && eligible(se, now) && vrun(se) < limit &&
		    (!behind || se->last_cpu == (int)src) &&
		    (!best || vrun(se) < vrun(best)))
			best = se;
	return best;
}

/* The CPU with the most runnable entities, at least margin more than cpu. */
static int busiest(unsigned int cpu, unsigned int margin)
{
	int src = -1;

	for (unsigned int c = 0; c < nr_cpus; c++)
		if (c != cpu && load_of(c) >= load_of(cpu) + margin &&
		    (src < 0 || load_of(c) > load_of(src)))
			src = (int)c;
	return src;
}

/* Pull one waiting entity from the busiest CPU to cpu if that evens the
 * load, or with rotate, one that is behind from a CPU with one more (so an
 * odd entity out does not stay out).  @pre no lock held. */
static bool pull(unsigned int cpu, uint64_t now, bool rotate)
{
	int src = busiest(cpu, rotate ? 1 : 2);
	struct sched_entity *se = NULL;
	bool even;

	if (src < 0)
		return false;
	lock2(cpu, (unsigned int)src);
	even = rqs[src].nr_run >= rqs[cpu].nr_run + 2;
	if (even || (rotate && rqs[src].nr_run == rqs[cpu].nr_run + 1)) {
		se = pullable((unsigned int)src, cpu, now, !even);
		if (se)
			move(se, (unsigned int)src, cpu);
	}
	unlock2(cpu, (unsigned int)src);
	return se != NULL;
}

/* Should the running entity of rq give way now? */
static bool should_preempt(struct runq *rq, uint64_t now)
{
	struct sched_entity *cur = rq->curr;
	struct sched_entity *w;

	if (!within_cap(cur, now))
		return true;
	w = best_waiting(rq, now, NULL);
	if (!w)
		return false;
	if (rq->yielded || (w->boost && !cur->boost))
		return true;
	if (now - cur->run_start_ns >= SLICE_NS)
		return true;
	return cur->credit <= 0 && w->credit > 0;
}

static bool credit_tick(unsigned int cpu, uint64_t now)
{
	struct runq *rq = &rqs[cpu];
	bool resched;

	spin_lock(&rq->lock);
	if (rq->curr) {
		charge(rq->curr, now);
		maybe_reset(rq, now);
		resched = should_preempt(rq, now);
	} else {
		resched = best_waiting(rq, now, NULL) != NULL;
	}
	spin_unlock(&rq->lock);
	if (!resched && (!rq->curr || now >= rq->next_balance_ns)) {
		rq->next_balance_ns = now + BALANCE_NS;
		resched = pull(cpu, now, rq->curr != NULL) && !rq->curr;
	}
	return resched;
}

/* Send the entity rq stopped running to an allowed CPU (affinity changed
 * while it ran).  @pre no lock held. */
static void evict(struct sched_entity *se, unsigned int cpu)
{
	int t = least_loaded(se);

	if (t < 0)
		return;
	lock2(cpu, (unsigned int)t);
	if (se->cpu == (int)cpu && se->state != SE_RUNNING && !allowed(se, cpu))
		move(se, cpu, (unsigned int)t);
	unlock2(cpu, (unsigned int)t);
}

/* Put the running entity back in the queue.  Returns it if it must leave. */
static struct sched_entity *put_prev(struct runq *rq, unsigned int cpu,
				     uint64_t now)
{
	struct sched_entity *prev = rq->curr;

	if (!prev)
		return NULL;
	charge(prev, now);
	set_state(rq, prev, SE_QUEUED);
	rq->curr = NULL;
	return allowed(prev, cpu) ? NULL : prev;
}

static void run(struct runq *rq, struct sched_entity *se, unsigned int cpu,
		uint64_t now)
{
	se->steal_ns += since(se, now);
	se->since_ns = now;
	se->run_start_ns = now;
	se->boost = false;
	se->woken = false;
	se->last_cpu = (int)cpu;
	se->switches++;
	set_state(rq, se, SE_RUNNING);
	rq->curr = se;
}

static struct sched_entity *credit_pick_next(unsigned int cpu, uint64_t now)
{
	struct runq *rq = &rqs[cpu];
	struct sched_entity *prev, *se;

	spin_lock(&rq->lock);
	prev = rq->curr;
	if (put_prev(rq, cpu, now)) {
		spin_unlock(&rq->lock);
		evict(prev, cpu);
		spin_lock(&rq->lock);
	}
	if (!best_waiting(rq, now, NULL)) {
		spin_unlock(&rq->lock);
		pull(cpu, now, false);
		spin_lock(&rq->lock);
	}
	maybe_reset(rq, now);
	se = best_waiting(rq, now, rq->yielded ? prev : NULL);
	if (!se)
		se = best_waiting(rq, now, NULL);
	rq->yielded = false;
	if (se)
		run(rq, se, cpu, now);
	spin_unlock(&rq->lock);
	return se;
}

/* New params on a locked, non-running se that is not allowed where it is. */
static int relocate(struct sched_entity *se)
{
	int from = se->cpu, t = least_loaded(se);

	spin_unlock(&rqs[from].lock);
	lock2((unsigned int)from, (unsigned int)t);
	if (se->cpu == from && se->state != SE_RUNNING && !allowed(se, from))
		move(se, (unsigned int)from, (unsigned int)t);
	unlock2((unsigned int)from, (unsigned int)t);
	return kick_for(se);
}

static int credit_set_params(struct sched_entity *se,
			     const struct sched_params *p, uint64_t now)
{
	struct runq *rq;

	if (!params_ok(p))
		return -EINVAL;
	rq = lock_se(se);
	if (!rq)
		return -EINVAL;
	if (se->state == SE_RUNNING)
		charge(se, now);
	if (p->cap_bp != se->p.cap_bp) {
		se->cap_budget = (int64_t)(CAP_PERIOD_NS * p->cap_bp / SCHED_CAP_BP_MAX);
		se->cap_next_ns = now + CAP_PERIOD_NS;
	}
	se->p = *p;
	if (se->state == SE_RUNNING) {
		int c = se->cpu;	/* re-decides at once, leaves if not allowed */

		spin_unlock(&rq->lock);
		return c;
	}
	if (!allowed(se, (unsigned int)se->cpu))
		return relocate(se);
	spin_unlock(&rq->lock);
	return -1;
}

static void credit_usage(struct sched_entity *se, uint64_t now,
			 struct sched_usage *out)
{
	struct runq *rq = lock_se(se);

	if (rq && se->state == SE_RUNNING)
		charge(se, now);
	*out = (struct sched_usage){ .state = se->state, .cpu = se->cpu,
		.runtime_ns = se->runtime_ns, .steal_ns = se->steal_ns,
		.switches = se->switches };
	if (rq && se->state == SE_QUEUED)
		out->capped = !within_cap(se, now);
	if (rq && se->state == SE_QUEUED)
		out->steal_ns += since(se, now);
	if (rq)
		spin_unlock(&rq->lock);
}

const struct sched_ops sched_credit_ops = {
	.name		= "credit",
	.init		= credit_init,
	.add_vcpu	= credit_add,
	.remove_vcpu	= credit_remove,
	.wake		= credit_wake,
	.sleep		= credit_sleep,
	.yield		= credit_yield,
	.tick		= credit_tick,
	.pick_next	= credit_pick_next,
	.set_params	= credit_set_params,
	.usage		= credit_usage,
};
