/* SPDX-License-Identifier: BSD-2-Clause */
/* Recent migrations for `migrations`, and `debug migrate` fault points. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "hv/migrate/migrate.h"

static struct mig_entry hist[MIG_HISTORY];
static unsigned int hist_n;	/* entries ever added */

struct mig_entry *mig_history_add(uint64_t id, bool out, const char *guest, const char *peer,
				  uint64_t mem_bytes)
{
	struct mig_entry *e = &hist[hist_n++ % MIG_HISTORY];

	memset(e, 0, sizeof(*e));
	e->id = id;
	e->out = out;
	snprintf(e->guest, sizeof(e->guest), "%s", guest);
	snprintf(e->peer, sizeof(e->peer), "%s", peer);
	e->mem_bytes = mem_bytes;
	e->outcome = MIG_RUNNING;
	return e;
}

const struct mig_entry *mig_history_at(unsigned int i)
{
	unsigned int kept = hist_n < MIG_HISTORY ? hist_n : MIG_HISTORY;

	if (i >= kept)
		return NULL;
	return &hist[(hist_n - kept + i) % MIG_HISTORY];
}

const char *mig_outcome_name(enum mig_outcome o)
{
	static const char *const names[] = {
		"running", "done", "failed", "cancelled", "refused", "in-doubt",
	};
	return o <= MIG_IN_DOUBT ? names[o] : "?";
}

/* ---- fault injection ---- */

struct mig_debug mig_debug;

static const char *const point_names[] = { "none", "precopy", "stopcopy", "ready", "commit" };

const char *mig_point_name(enum mig_point p)
{
	return p <= MIG_AT_COMMIT ? point_names[p] : "?";
}

int mig_point_parse(const char *s, enum mig_point *out)
{
	for (unsigned int i = MIG_AT_PRECOPY; i <= MIG_AT_COMMIT; i++)
		if (!strcmp(s, point_names[i])) {
			*out = (enum mig_point)i;
			return 0;
		}
	return -EINVAL;
}

bool mig_debug_abort(enum mig_point p)
{
	if (mig_debug.abort_at != p)
		return false;
	mig_debug.abort_at = MIG_AT_NONE;
	return true;
}

uint32_t mig_debug_hold(enum mig_point p)
{
	if (mig_debug.hold_at != p)
		return 0;
	mig_debug.hold_at = MIG_AT_NONE;
	return mig_debug.hold_s ? mig_debug.hold_s : 20;
}
