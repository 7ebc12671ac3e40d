/* SPDX-License-Identifier: BSD-2-Clause */
/* Recent migrations for `migrations`, and `debug migrate` fault points. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "hv/migrate/migrate.h"

static struct mig_entry hist[MIG_HISTORY];
static uint64_t hist_seq[MIG_HISTORY];	/* 1.. in order added; 0: empty slot */
static uint64_t hist_n;			/* entries ever added */

/* The oldest entry that pick() accepts, or MIG_HISTORY. */
static unsigned int oldest(bool (*pick)(const struct mig_entry *e))
{
	unsigned int best = MIG_HISTORY;

	for (unsigned int i = 0; i < MIG_HISTORY; i++)
		if (hist_seq[i] && pick(&hist[i]) &&
		    (best == MIG_HISTORY || hist_seq[i] < hist_seq[best]))
			best = i;
	return best;
}

static bool refused(const struct mig_entry *e) { return e->outcome == MIG_REFUSED; }
static bool ended(const struct mig_entry *e) { return e->outcome != MIG_RUNNING; }

/* The slot for a new entry: an empty one, else the oldest refusal, else
 * the oldest other one that is not running (a migration updates its entry
 * until it ends).  Refusals cost a peer no more than a connection, so they
 * take each other's places first: a stream of them must not push out the
 * outcome of a migration that an in-doubt source may still ask about
 * (mig_history_find_in). */
static unsigned int free_slot(void)
{
	unsigned int best;

	for (unsigned int i = 0; i < MIG_HISTORY; i++)
		if (!hist_seq[i])
			return i;
	best = oldest(refused);
	return best < MIG_HISTORY ? best : oldest(ended);
}

const struct mig_entry *mig_history_find_in(uint64_t id, const char *key)
{
	const struct mig_entry *found = NULL;
	uint64_t seq = 0;

	for (unsigned int i = 0; i < MIG_HISTORY; i++)
		if (hist_seq[i] > seq && !hist[i].out && hist[i].id == id &&
		    hist[i].outcome != MIG_REFUSED && (!key || !strcmp(hist[i].key, key))) {
			found = &hist[i];
			seq = hist_seq[i];
		}
	return found;
}

struct mig_entry *mig_history_add(uint64_t id, bool out, const char *guest, const char *peer,
				  uint64_t mem_bytes)
{
	unsigned int slot = free_slot();
	struct mig_entry *e;

	if (slot == MIG_HISTORY)	/* all running: more than can run at once */
		slot = (unsigned int)(hist_n % MIG_HISTORY);
	e = &hist[slot];
	memset(e, 0, sizeof(*e));
	hist_seq[slot] = ++hist_n;
	e->id = id;
	e->out = out;
	snprintf(e->guest, sizeof(e->guest), "%s", guest);
	snprintf(e->peer, sizeof(e->peer), "%s", peer);
	e->mem_bytes = mem_bytes;
	e->outcome = MIG_RUNNING;
	return e;
}

/* Entry i in the order added (0 oldest kept). */
const struct mig_entry *mig_history_at(unsigned int i)
{
	uint64_t after = 0;
	unsigned int slot = MIG_HISTORY;

	for (unsigned int k = 0; k <= i; k++, after = hist_seq[slot]) {
		slot = MIG_HISTORY;
		for (unsigned int j = 0; j < MIG_HISTORY; j++)
			if (hist_seq[j] > after &&
			    (slot == MIG_HISTORY || hist_seq[j] < hist_seq[slot]))
				slot = j;
		if (slot == MIG_HISTORY)
			return NULL;
	}
	return &hist[slot];
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
