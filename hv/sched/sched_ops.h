/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The scheduler interface (STYLE: ACRN's and Xen's scheduler ops): the vCPU
 * layer (hv/sched.c) decides nothing about who runs; it asks a policy.  A
 * policy is one file that fills in a struct sched_ops and owns the
 * struct sched_entity embedded in each vCPU.
 *
 * Time is always an argument (now_ns, monotonic); a policy never reads a
 * clock, so host unit tests drive it on simulated time.
 *
 * Locks.  Each host CPU has one run queue, guarded by one spinlock that the
 * policy owns: rq(c).lock.  The ops take it themselves; the caller must hold
 * no run-queue lock when calling.  An operation that moves an entity from
 * one queue to another holds both locks, taken in ascending CPU order, and
 * the balancer only ever try-locks a second queue.  Ownership legend of
 * struct sched_entity:
 *   (p) policy: changed only under rq(se->cpu).lock;
 *   (m) se->cpu itself: changed only with both the old and new queue's lock;
 *   (c) set by the caller before add(), constant while the entity is added.
 * Together with "tick, pick_next, sleep and yield for CPU c are called only
 * by CPU c", a vCPU's scheduling state is changed only by the CPU that runs
 * it or under a documented lock.
 *
 * The loop a host CPU runs (hv/sched.c):
 *	se = ops->pick_next(c, now);	NULL: halt until an IPI or the tick
 *	run the vCPU of se until an exit, the tick, or an IPI;
 *	on each 250 Hz tick:  if (ops->tick(c, now)) leave the guest;
 *	on a halt exit:       ops->sleep(se, now);  (false: a wake came)
 *	then pick_next again (it puts the previous entity back itself).
 * wake(), add() and set_params() return the CPU to send a reschedule IPI
 * to, or -1.  Halted CPUs keep their periodic tick; an idle CPU's tick may
 * pull work from a busy one and then returns true.
 */
#ifndef FERRY_HV_SCHED_SCHED_OPS_H
#define FERRY_HV_SCHED_SCHED_OPS_H

#include <stdbool.h>
#include <stdint.h>

#define SCHED_MAX_CPUS		64	/* bits of an affinity mask */
#define SCHED_WEIGHT_DEFAULT	256	/* Xen credit2's default weight */
#define SCHED_WEIGHT_MIN	1
#define SCHED_WEIGHT_MAX	65535
#define SCHED_CAP_NONE		0
#define SCHED_CAP_BP_MAX	10000	/* one whole CPU, in basis points */
#define SCHED_AFFINITY_ANY	UINT64_MAX

enum se_state {
	SE_OFF,		/* not added to any run queue */
	SE_SLEEPING,	/* on rq(cpu), not runnable (halted, paused) */
	SE_QUEUED,	/* on rq(cpu), runnable, waiting */
	SE_RUNNING,	/* rq(cpu)'s current entity */
};

/* What a caller may set: the share of one vCPU. */
struct sched_params {
	uint32_t weight;	/* SCHED_WEIGHT_MIN..MAX, 256 by default */
	uint32_t cap_bp;	/* 0: none, else basis points of one CPU (2500 = 25 %) */
	uint64_t affinity;	/* bit i: may run on host CPU i; never 0 */
};

/* Embedded in struct vcpu; the policy's part of a vCPU. */
struct sched_entity {
	struct sched_entity *next;	/* (p) rq(cpu)'s member list */
	struct sched_params p;		/* (p) */
	enum se_state state;		/* (p) */
	int cpu;			/* (m) run queue it is on, -1 none */
	int last_cpu;			/* (p) CPU it last ran on, -1 never */
	bool boost;			/* (p) woke with credit left: runs first */
	bool woken;			/* (p) wake() came while runnable: the next
					 * sleep() fails (no lost wake-up) */
	int64_t credit;			/* (p) ns at weight 256 left this epoch */
	int64_t cap_budget;		/* (p) ns it may still run this cap period */
	uint64_t cap_next_ns;		/* (p) start of the next cap period */
	uint64_t since_ns;		/* (p) RUNNING: charged up to; QUEUED: waiting since */
	uint64_t run_start_ns;		/* (p) RUNNING: picked at */
	uint64_t runtime_ns;		/* (p) total time run */
	uint64_t steal_ns;		/* (p) total time runnable but waiting */
	uint64_t switches;		/* (p) times picked */
};

/* A snapshot of one entity's accounting, for `top`. */
struct sched_usage {
	enum se_state state;
	bool capped;		/* queued, but out of its cap's budget now */
	int cpu;
	uint64_t runtime_ns;
	uint64_t steal_ns;
	uint64_t switches;
};

struct sched_ops {
	const char *name;
	/* Reset all run queues; CPUs 0..ncpus-1 exist.  -EINVAL if too many. */
	int (*init)(unsigned int ncpus);
	/* Place se (sleeping) on an allowed CPU with p; -EINVAL on bad p. */
	int (*add_vcpu)(struct sched_entity *se, const struct sched_params *p,
			uint64_t now_ns);
	/* Take se off its queue.  @pre se is not RUNNING, or the caller is the
	 * CPU running it, between two guest entries. */
	void (*remove_vcpu)(struct sched_entity *se);
	/* se may run: returns the CPU to IPI, -1 none.  Any CPU may call. */
	int (*wake)(struct sched_entity *se, uint64_t now_ns);
	/* se stops being runnable; false (it stays runnable) when a wake()
	 * came since it was last picked, so a wake racing a halt is never
	 * lost.  @pre called by the CPU running se, or se is not RUNNING. */
	bool (*sleep)(struct sched_entity *se, uint64_t now_ns);
	/* The running entity of cpu gives up the rest of its slice. */
	void (*yield)(unsigned int cpu, uint64_t now_ns);
	/* Periodic tick on cpu: true when cpu should call pick_next now. */
	bool (*tick)(unsigned int cpu, uint64_t now_ns);
	/* Put the running entity back if runnable, choose the next one; NULL
	 * when nothing may run here (the caller halts). */
	struct sched_entity *(*pick_next)(unsigned int cpu, uint64_t now_ns);
	/* New weight, cap or affinity, while it runs or not: CPU to IPI or -1;
	 * -EINVAL (< -1) and nothing changed on bad p. */
	int (*set_params)(struct sched_entity *se, const struct sched_params *p,
			  uint64_t now_ns);
	/* Accounting of se, charged up to now_ns when it runs. */
	void (*usage)(struct sched_entity *se, uint64_t now_ns,
		      struct sched_usage *out);
};

extern const struct sched_ops sched_credit_ops;	/* hv/sched/credit.c */

/* A guest-level cap of pct % of one CPU, split evenly over its n vCPUs, in
 * each vCPU's cap_bp (at most one CPU each): the credit policy enforces
 * caps per vCPU. */
static inline uint32_t sched_cap_split(uint32_t pct, unsigned int n)
{
	uint64_t bp = n ? (uint64_t)pct * 100 / n : 0;

	return bp > SCHED_CAP_BP_MAX ? SCHED_CAP_BP_MAX : (uint32_t)bp;
}

#endif
