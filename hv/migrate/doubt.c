/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Settling "in doubt" guests when the peers can talk again: background
 * work of the shell CPU (mig_doubt_poll).  For a guest left paused in doubt
 * (COMMIT was sent, no answer came), ask its destination every few seconds
 * with a QUERY how that migration ended there: "ran" means the destination
 * owns the guest and ours is freed; "discarded" means it never ran there,
 * so ours resumes; "unknown" (rebooted, forgotten, still in progress) keeps
 * asking and leaves the decision to the operator (`resume` or `destroy`).
 * Never both copies running, never none: each answer is the destination's
 * own record of whether COMMIT arrived.  The QUERY travels over the same
 * secure channel as the migration, pinned to the key the destination proved
 * then (mig_doubt_note), so no one else can talk this host into freeing or
 * resuming its copy.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "hv/lib/log.h"
#include "hv/migrate/chan.h"
#include "hv/migrate/migrate.h"
#include "hv/migrate/trust.h"
#include "hv/netif.h"
#include "hv/vm.h"

#define ASK_EVERY_US	(5ull * 1000000)
#define ASK_TIMEOUT_US	(5ull * 1000000)
#define NOTES		8	/* migrations remembered for their QUERY */

/* How each recent migration out reached its destination. */
static struct note {
	uint64_t id;
	bool secure;
	bool was_paused;		/* by the operator, before the migration */
	bool warned;			/* its key untrusted since: said so once */
	struct mig_peer peer;		/* secure: the key it proved */
	uint64_t seq;			/* order noted */
} notes[NOTES];
static uint64_t notes_seq;

/* Whether a guest still waits in doubt on migration id. */
static bool pending(uint64_t id)
{
	for (unsigned int i = 0; i < VM_MAX; i++) {
		struct vm *vm = vm_at(i);

		if (vm && vm->mig.kind == VM_MIG_IN_DOUBT && vm->mig.id == id)
			return true;
	}
	return false;
}

/* The note of id itself (one id, one note: note_of finds the first), else
 * a free one, else the oldest whose guest was settled, else the oldest
 * (more guests in doubt at once than NOTES: that one is settled by hand). */
static struct note *note_slot(uint64_t id)
{
	struct note *best = NULL, *settled = NULL, *free = NULL;

	for (unsigned int i = 0; i < NOTES; i++) {
		struct note *n = &notes[i];

		if (n->id == id)
			return n;
		if (!n->id) {
			free = free ? free : n;
			continue;
		}
		if (!best || n->seq < best->seq)
			best = n;
		if (!pending(n->id) && (!settled || n->seq < settled->seq))
			settled = n;
	}
	if (free)
		return free;
	if (settled)
		return settled;
	pr_warn("migrate: %d guests in doubt at once: %016lx will not be asked about; settle "
		"it by hand", NOTES + 1, best->id);
	return best;
}

void mig_doubt_note(uint64_t id, const struct mig_peer *peer, bool was_paused)
{
	struct note *n = note_slot(id);

	memset(n, 0, sizeof(*n));
	n->id = id;
	n->secure = peer != NULL;
	n->was_paused = was_paused;
	n->seq = ++notes_seq;
	if (peer)
		n->peer = *peer;
}

static struct note *note_of(uint64_t id)
{
	for (unsigned int i = 0; i < NOTES; i++)
		if (notes[i].id == id && id)
			return &notes[i];
	return NULL;
}

/* The key the destination proved is still trusted under its name: after
 * `migrate untrust` (say, the key leaked) its answer could free or
 * duplicate the guest. */
static bool still_trusted(const struct mig_peer *p)
{
	const struct mig_peer *t = mig_trust_by_name(mig_keyring(), p->name);

	return t && !memcmp(t->pub, p->pub, sizeof(p->pub));
}

static struct {
	struct mig_chan ch;
	bool active;			/* a question is out */
	bool sent;
	char name[VM_NAME_MAX];		/* the guest asked about */
	uint64_t id;
	uint64_t started_us, next_us;
	uint64_t told_unknown;		/* id we already logged "unknown" for */
	struct netstack *net;		/* the host's stack, as mig_doubt_poll got it */
	unsigned int slot;		/* where the next search starts */
} Q;

/* The in-doubt guest named name, if it is still the one of migration id. */
static struct vm *doubtful(const char *name, uint64_t id)
{
	struct vm *vm = vm_find(name);

	if (!vm || vm->mig.kind != VM_MIG_IN_DOUBT || vm->mig.id != id || vm->mig_owned)
		return NULL;
	return vm;
}

static void settle(uint32_t outcome)
{
	struct vm *vm = doubtful(Q.name, Q.id);
	const struct note *n = note_of(Q.id);
	char err[96], peer[24];

	if (!vm)
		return;		/* the operator settled it meanwhile */
	snprintf(peer, sizeof(peer), "%s", vm->mig.peer);
	if (outcome == MIG_Q_RAN) {
		pr_info("vm %s: migration %016lx completed on %s: freeing the copy here", Q.name,
			Q.id, peer);
		vm_destroy(vm);
	} else if (outcome == MIG_Q_DISCARDED) {
		spin_lock(&vm->lock);
		vm->mig.kind = VM_MIG_NONE;
		spin_unlock(&vm->lock);
		if (n && n->was_paused)
			pr_info("vm %s: migration %016lx never ran on %s: stays paused here, as "
				"before it", Q.name, Q.id, peer);
		else if (vm_resume(vm, err, sizeof(err)))
			pr_err("vm %s: resuming after migration %016lx failed: %s", Q.name, Q.id, err);
		else
			pr_info("vm %s: migration %016lx never ran on %s: resumed here", Q.name, Q.id,
				peer);
	} else if (Q.told_unknown != Q.id) {
		Q.told_unknown = Q.id;
		pr_warn("vm %s: %s has no record of migration %016lx (rebooted?); asking again, "
			"or settle it by hand: `resume %s` or `destroy %s`", Q.name, peer, Q.id,
			Q.name, Q.name);
	}
}

static void finish(void)
{
	chan_close(&Q.ch, false);
	Q.active = false;
	Q.next_us = netif_now_us() + ASK_EVERY_US;
}

/* Start a question about the first in-doubt guest, if any. */
static void ask_next(void)
{
	struct tcp_conn *c = NULL;

	for (unsigned int k = 0; k < VM_MAX; k++) {
		unsigned int i = (Q.slot + k) % VM_MAX;	/* round robin: one that is
							 * never answered does not
							 * starve the others */
		struct vm *vm = vm_at(i);
		struct note *n = vm ? note_of(vm->mig.id) : NULL;
		if (!vm || vm->mig.kind != VM_MIG_IN_DOUBT || vm->mig_owned || !vm->mig.peer_ip ||
		    !n)
			continue;
		if (n->secure && !still_trusted(&n->peer)) {
			if (!n->warned)
				pr_warn("vm %s: %s is no longer trusted with that key: not asking it "
					"about migration %016lx; settle it by hand: `resume %s` or "
					"`destroy %s`", vm->name, n->peer.name, n->id, vm->name,
					vm->name);
			n->warned = true;
			continue;
		}
		if (chan_init(&Q.ch, MIG_SRC, NULL, MIG_HDR_SIZE + 64))
			return;
		netif_lock();
		if (tcp_connect(Q.net, vm->mig.peer_ip, vm->mig.peer_port, &c))
			c = NULL;
		netif_unlock();
		Q.ch.conn = c;
		if (c && n->secure && chan_hs_start_src(&Q.ch, mig_keyring(), &n->peer))
			c = NULL;
		snprintf(Q.name, sizeof(Q.name), "%s", vm->name);
		Q.id = vm->mig.id;
		Q.slot = i + 1;
		Q.active = true;
		Q.sent = false;
		Q.started_us = netif_now_us();
		if (!c)
			finish();
		return;
	}
	Q.next_us = netif_now_us() + ASK_EVERY_US;
}

/* The handshake of a secure QUERY: 1 done, 0 not yet, < 0 failed. */
static int secure(bool late)
{
	int rc = chan_handshake(&Q.ch);

	if (rc < 0 && Q.told_unknown != Q.id) {
		Q.told_unknown = Q.id;
		pr_warn("vm %s: cannot ask about migration %016lx: %s", Q.name, Q.id,
			Q.ch.hs_err.msg);
	}
	if (rc < 0 || (rc == 0 && late))
		finish();
	return rc;
}

static void step(void)
{
	const struct mig_rec *r;
	struct mig_rec q = { .type = MIG_QUERY };
	bool late = netif_now_us() - Q.started_us > ASK_TIMEOUT_US;
	int rc;

	if (!Q.sent) {
		netif_lock();
		rc = tcp_connected(Q.ch.conn);
		netif_unlock();
		if (rc == 0 && !late)
			return;
		if (rc == 1 && Q.ch.mode == CHAN_HANDSHAKE && secure(late) <= 0)
			return;
		q.query.proto_version = MIG_PROTO_VERSION;
		q.query.mig_id = Q.id;
		if (rc < 0 || chan_queue(&Q.ch, &q) || chan_push(&Q.ch, 64) != 1) {
			finish();	/* not reachable yet: ask again later */
			return;
		}
		Q.sent = true;
	}
	rc = chan_pull(&Q.ch, &r);
	if (rc == 1 && r->type == MIG_QUERY_REPLY) {
		settle(r->qreply.outcome);
		finish();
	} else if (rc != 0 || netif_now_us() - Q.started_us > ASK_TIMEOUT_US) {
		finish();
	}
}

void mig_doubt_poll(struct netstack *net, bool idle)
{
	if (!net || !net->ip)
		return;
	if (!idle)
		return;		/* only between commands: those may be using the guest */
	if (!Q.active)
		Q.net = net;	/* a question out keeps the stack it began on */
	if (Q.active)
		step();
	else if (netif_now_us() >= Q.next_us)
		ask_next();
}
