/* SPDX-License-Identifier: BSD-2-Clause */
/* kvmclock's arithmetic: see pvclock.h. */
#include <string.h>
#include "hv/vdev/pvclock.h"

#define NS_PER_S 1000000000ull

/*
 * ns = ((d scaled by 2^shift) * mul) >> 32 with mul = 2^32 * 1e9 / (tsc_hz *
 * 2^shift).  mul < 2^32 needs tsc_hz * 2^shift > 1e9; keeping it at most
 * 2e9 keeps mul >= 2^31, the most precise choice.
 */
void pvclock_scale(uint64_t tsc_hz, uint32_t *mul, int8_t *shift)
{
	unsigned __int128 num = (unsigned __int128)NS_PER_S << 32;
	uint64_t f = tsc_hz ? tsc_hz : 1;	/* tsc_hz * 2^s, rounded down */
	int s = 0;

	while (f <= NS_PER_S) {
		f <<= 1;
		s++;
	}
	while (f > 2 * NS_PER_S) {
		f >>= 1;
		s--;
	}
	if (s >= 0)
		*mul = (uint32_t)(num / ((unsigned __int128)(tsc_hz ? tsc_hz : 1) << s));
	else
		*mul = (uint32_t)((num << -s) / tsc_hz);
	*shift = (int8_t)s;
}

void pvclock_fill(struct pvclock_time *t, uint64_t tsc_hz, uint64_t tsc, uint64_t ns,
		  uint32_t version)
{
	memset(t, 0, sizeof(*t));
	t->version = version;
	t->tsc_timestamp = tsc;
	t->system_time = ns;
	pvclock_scale(tsc_hz, &t->tsc_to_system_mul, &t->tsc_shift);
	t->flags = PVCLOCK_TSC_STABLE;
}

uint64_t pvclock_read(const struct pvclock_time *t, uint64_t tsc)
{
	uint64_t d = tsc - t->tsc_timestamp;

	d = t->tsc_shift >= 0 ? d << t->tsc_shift : d >> -t->tsc_shift;
	return t->system_time + (uint64_t)(((unsigned __int128)d * t->tsc_to_system_mul) >> 32);
}

void pvclock_wall_fill(struct pvclock_wall *w, uint64_t tod_ns, uint64_t now_ns,
		       uint32_t version)
{
	uint64_t boot = tod_ns > now_ns ? tod_ns - now_ns : 0;

	w->version = version;
	w->sec = (uint32_t)(boot / NS_PER_S);
	w->nsec = (uint32_t)(boot % NS_PER_S);
}

bool pvclock_msr_valid(uint64_t v, uint8_t phys_bits)
{
	uint64_t gpa = v & ~PVCLOCK_ENABLE;

	if (!(v & PVCLOCK_ENABLE))
		return true;
	return !(gpa & 3) && (phys_bits >= 64 || !(gpa >> phys_bits));
}
