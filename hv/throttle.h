/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The migration throttle's arithmetic, used by the vCPU loop (hv/vcpu.c)
 * and set by the migration policy (hv/migrate/policy.c): of each period a
 * throttled vCPU runs for the rest of pct percent of what it used per period
 * before the throttle (its demand), then sits out.  A share of the period
 * alone would not slow a guest that uses less than that share: a writer
 * paced by its timer, busy a tenth of the time, went on dirtying at its
 * full rate up to a throttle of 90%.
 */
#ifndef FERRY_HV_THROTTLE_H
#define FERRY_HV_THROTTLE_H

#include <stdint.h>

#define THROTTLE_MAX_PCT	99	/* a throttled guest always runs a little */

/* Guest time a vCPU throttled by pct may run per period_ns, from base_ns,
 * its guest time per period before the throttle (0: not known, the whole
 * period); at least 1% of the period, so that it always runs a little. */
static inline uint64_t throttle_budget_ns(uint32_t pct, uint64_t period_ns, uint64_t base_ns)
{
	uint64_t demand = base_ns && base_ns < period_ns ? base_ns : period_ns;
	uint64_t floor = period_ns / 100;
	uint64_t budget;

	pct = pct > THROTTLE_MAX_PCT ? THROTTLE_MAX_PCT : pct;
	budget = demand / 100 * (100 - pct) + demand % 100 * (100 - pct) / 100;
	return budget > floor ? budget : floor;
}

/* The demand estimate after the vCPU ran used_ns unthrottled in elapsed_ns
 * (a period or more: a halted vCPU sees no exits), as guest time per
 * period_ns: a moving average (half weight), 0 = none yet. */
static inline uint64_t throttle_base_next(uint64_t base_ns, uint64_t used_ns,
					  uint64_t elapsed_ns, uint64_t period_ns)
{
	uint64_t sample = elapsed_ns > period_ns ?
		(uint64_t)((unsigned __int128)used_ns * period_ns / elapsed_ns) : used_ns;

	sample = sample < period_ns ? sample : period_ns;
	return base_ns ? base_ns / 2 + sample / 2 : sample;
}

#endif
