/* SPDX-License-Identifier: BSD-2-Clause */
/* Guest TSC scaling arithmetic: see time.h. */
#include "hv/lib/time.h"

uint64_t tsc_mult_for(uint64_t guest_hz, uint64_t host_hz)
{
	uint64_t diff = guest_hz > host_hz ? guest_hz - host_hz : host_hz - guest_hz;

	if (!guest_hz || !host_hz || (unsigned __int128)diff * 1000000 <=
	    (unsigned __int128)host_hz * TSC_NATIVE_PPM)
		return TSC_MULT_ONE;
	return (uint64_t)(((unsigned __int128)guest_hz << TSC_MULT_FRAC) / host_hz);
}

uint64_t tsc_scaled(uint64_t tsc, uint64_t mult)
{
	if (mult == TSC_MULT_ONE)
		return tsc;
	return (uint64_t)(((unsigned __int128)tsc * mult) >> TSC_MULT_FRAC);
}
