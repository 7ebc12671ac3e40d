/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Load balancing of unpinned vCPUs: the decision, as a pure function of
 * what each vCPU wanted over the last interval (hv/sched.c gathers it and
 * moves the vCPU).  A vCPU's demand is the share of one CPU it ran plus the
 * share it spent runnable but waiting (steal): what it would have used on
 * a CPU of its own.  A CPU is overloaded when its vCPUs' demands add up to
 * more than BAL_OVERLOAD; then one vCPU moves to the CPU where the larger
 * of the two loads comes out smallest, if that beats the overloaded CPU's
 * load by BAL_MARGIN (so that loads that are merely uneven stay put), and
 * if the vCPU did not move within the last few intervals (no ping-pong).
 */
#ifndef FERRY_HV_SCHED_BALANCE_H
#define FERRY_HV_SCHED_BALANCE_H

#include <stdbool.h>
#include <stdint.h>

#define BAL_OVERLOAD	1100	/* permille of one CPU */
#define BAL_MARGIN	100	/* permille */
#define BAL_MIN_DEMAND	50	/* a vCPU that wants less is not worth moving */

struct bal_vcpu {
	int cpu;		/* where it is placed; < 0: nowhere */
	uint64_t affinity;	/* CPUs it may run on (bit i: CPU i) */
	uint32_t demand;	/* permille of one CPU, 0..2000 */
	bool settled;		/* moved lately: leave it */
};

struct bal_move {
	unsigned int vcpu;	/* index into the array */
	unsigned int to;	/* CPU */
};

/* cpu_ok: the CPUs that may take one more vCPU (bit i: CPU i, i < 64).
 * true and *out filled when a move helps. */
bool bal_pick(const struct bal_vcpu *v, unsigned int nv, uint64_t cpu_ok, struct bal_move *out);

#endif
