/* SPDX-License-Identifier: BSD-2-Clause */
/* Which unpinned vCPU to move, if any (balance.h). */
#include "hv/sched/balance.h"

#define NCPU 64

/* The most loaded CPU with two vCPUs worth moving between, or -1. */
static int busiest(const struct bal_vcpu *v, unsigned int nv, const uint32_t *load)
{
	unsigned int movable[NCPU] = { 0 };
	int best = -1;

	for (unsigned int i = 0; i < nv; i++)
		if (v[i].cpu >= 0 && v[i].demand >= BAL_MIN_DEMAND)
			movable[v[i].cpu]++;
	for (int c = 0; c < NCPU; c++)
		if (movable[c] >= 2 && load[c] > BAL_OVERLOAD && (best < 0 || load[c] > load[best]))
			best = c;
	return best;
}

bool bal_pick(const struct bal_vcpu *v, unsigned int nv, uint64_t cpu_ok, struct bal_move *out)
{
	uint32_t load[NCPU] = { 0 }, best_max = 0;
	bool found = false;
	int s;

	for (unsigned int i = 0; i < nv; i++)
		if (v[i].cpu >= 0 && v[i].cpu < NCPU)
			load[v[i].cpu] += v[i].demand;
	if ((s = busiest(v, nv, load)) < 0)
		return false;
	for (unsigned int i = 0; i < nv; i++) {
		uint32_t d = v[i].demand;

		if (v[i].cpu != s || d < BAL_MIN_DEMAND || v[i].settled)
			continue;
		for (unsigned int t = 0; t < NCPU; t++) {
			uint32_t here = load[s] - d, there = load[t] + d;
			uint32_t worst = here > there ? here : there;

			if ((int)t == s || !(cpu_ok & v[i].affinity & (1ull << t)))
				continue;
			if (worst + BAL_MARGIN > load[s] || (found && worst >= best_max))
				continue;
			*out = (struct bal_move){ .vcpu = i, .to = t };
			best_max = worst;
			found = true;
		}
	}
	return found;
}
