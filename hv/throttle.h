/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The migration throttle's arithmetic, used by the vCPU loop (hv/vcpu.c)
 * and set by the migration policy (hv/migrate/policy.c): of each period a
 * throttled vCPU runs for the rest of pct percent, then sits out.
 */
#ifndef FERRY_HV_THROTTLE_H
#define FERRY_HV_THROTTLE_H

#include <stdint.h>

#define THROTTLE_MAX_PCT	99	/* a throttled guest always runs a little */

/* Of each period_us, how long a vCPU throttled by pct may run. */
static inline uint64_t throttle_run_us(uint32_t pct, uint64_t period_us)
{
	pct = pct > THROTTLE_MAX_PCT ? THROTTLE_MAX_PCT : pct;
	return period_us / 100 * (100 - pct) + period_us % 100 * (100 - pct) / 100;
}

#endif
