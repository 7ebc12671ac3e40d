/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The migration listener and receiver: background work of the shell CPU
 * (mig_in_poll), one incoming migration at a time.  It checks the HELLO
 * before any memory moves, builds an empty guest (VM_INCOMING), loads
 * pages, vCPUs and devices as they come, answers END with READY and runs
 * the guest only on COMMIT (docs/migration.md, "A migration").  Any failure
 * before COMMIT discards the partial guest; nothing here blocks.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hv/cpuid.h"
#include "hv/lib/log.h"
#include "hv/lib/namelist.h"
#include "hv/migrate/chan.h"
#include "hv/migrate/migrate.h"
#include "hv/migrate/sparse.h"
#include "hv/migrate/trust.h"
#include "hv/modules.h"
#include "hv/mm/memory.h"
#include "hv/netif.h"
#include "hv/lib/time.h"
#include "hv/vdev/devices.h"
#include "hv/version.h"
#include "hv/vm.h"
#include "hv/vmstate.h"

#define RX_RECORDS_PER_POLL	32	/* then let the shell have the CPU */
#define RX_PAGES_PER_POLL	32768	/* or once this many pages are written
					 * (zero runs cover many per record) */
#define IN_INTRO_US		1000000	/* to say who it is when slots run short */
#define IN_SLOTS		(MIG_IN_MAX * 2) /* connections at once: migrations, and short
					 * ones (QUERY, a HELLO refused busy) */
#define IN_TX_CAP		(MIG_HDR_SIZE + 1024)

struct in {
	struct mig_chan ch;
	struct vm *vm;			/* from the accepted HELLO on */
	struct mig_entry *hist;
	char peer[24];
	char name[MIG_NAME_MAX + 1];
	char key[64];			/* the proved peer, "NAME,SHA256:..." or "insecure" */
	bool hs_done;			/* the handshake is over (or there is none) */
	bool proved;			/* a sealed record opened: the key is proved */
	uint64_t t_start;
	uint64_t t_last_round;		/* the last ROUND_END came */
	uint64_t t_round_start;		/* this round began (HELLO, last ROUND_END) */
	uint64_t round_bytes0;		/* bytes in when it began */
	uint64_t t_state;		/* the first VCPU_STATE came */
	uint64_t t_ready;		/* READY went out */
	uint64_t t_commit;		/* COMMIT came */
	uint64_t round_zero;		/* ZERO pages in the round so far */
	struct mig_tsc tsc;
	uint8_t *dev;			/* the device state, loaded again at COMMIT */
	uint32_t dev_len;
	uint8_t *late;			/* FRAMES, given to the guest at COMMIT */
	uint32_t late_len;
	bool closing;			/* done or refused: flush, then close */
	uint64_t poll_pages;		/* pages written in this poll */
	bool arrive_paused;		/* COMMIT said the guest was paused */
	enum mig_point held_at;		/* `debug migrate hold` in progress */
	uint64_t hold_end_us;
};

static struct {
	bool on;
	struct mig_listen_cfg cfg;
	struct tcp_conn *listener;
	struct in *slot[IN_SLOTS];
} L;

/* Is in still open (its handlers may have freed it)? */
static bool alive(const struct in *in)
{
	for (unsigned int i = 0; i < IN_SLOTS; i++)
		if (L.slot[i] == in)
			return true;
	return false;
}

/* As many other connections as the listener allows bring a guest already. */
static bool busy_besides(const struct in *in)
{
	unsigned int n = 0, max = L.cfg.max_in ? L.cfg.max_in : MIG_IN_MAX;

	for (unsigned int i = 0; i < IN_SLOTS; i++)
		if (L.slot[i] && L.slot[i] != in && L.slot[i]->vm)
			n++;
	return n >= max;
}

/* ---- the listener ---- */

int mig_listen(const struct mig_listen_cfg *cfg, char *err, size_t errlen)
{
	struct tcp_conn *l = NULL;
	char why[160];
	int rc = 0;

	if (!host_if.present) {
		snprintf(err, errlen, "no network interface");
		return -ENODEV;
	}
	if (!cfg->insecure && (rc = mig_secure_ready(mig_keyring(), why, sizeof(why)))) {
		snprintf(err, errlen, "no secure channel here: %s (or `migrate listen ... "
			 "insecure`)", why);
		return rc;
	}
	/*
	 * A new port opens before the old one closes: if it cannot (in use,
	 * no memory), the listener goes on as it was, port and all.
	 */
	netif_lock();
	if (!L.listener || L.cfg.port != cfg->port)
		rc = tcp_listen(&host_if.stack, cfg->port, 4, &l);
	if (l) {
		if (L.listener)
			tcp_close(L.listener);
		L.listener = l;
	}
	netif_unlock();
	if (rc && L.on) {
		snprintf(err, errlen, "cannot listen on port %u (error %d); still listening on "
			 "port %u as before", cfg->port, rc, L.cfg.port);
		return rc;
	}
	if (rc) {
		snprintf(err, errlen, "cannot listen on port %u (error %d)", cfg->port, rc);
		return rc;
	}
	L.cfg = *cfg;
	L.on = true;
	return 0;
}

void mig_listen_off(void)
{
	netif_lock();
	if (L.listener)
		tcp_close(L.listener);
	netif_unlock();
	L.listener = NULL;
	L.on = false;
}

bool mig_listening(struct mig_listen_cfg *out)
{
	if (L.on && out)
		*out = L.cfg;
	return L.on;
}

static bool peer_allowed(uint32_t ip)
{
	if (!L.cfg.nr_allow)
		return true;
	for (unsigned int i = 0; i < L.cfg.nr_allow; i++)
		if (L.cfg.allow[i] == ip)
			return true;
	return false;
}

/* ---- ending ---- */

static void in_free(struct in *in)
{
	chan_close(&in->ch, !in->closing);
	free(in->dev);
	free(in->late);
	for (unsigned int i = 0; i < IN_SLOTS; i++)
		if (L.slot[i] == in)
			L.slot[i] = NULL;
	free(in);
}

/* The ending, with its figures, in `migrations` (once the HELLO named it). */
static void record(struct in *in, enum mig_outcome outcome, const char *why)
{
	if (!in->hist)
		return;
	in->hist->outcome = outcome;
	in->hist->total_us = netif_now_us() - in->t_start;
	in->hist->bytes = in->ch.bytes_in;
	in->hist->rounds = in->ch.st.rounds;
	if (why)
		snprintf(in->hist->why, sizeof(in->hist->why), "%s", why);
}

static void discard(struct in *in, uint32_t code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Before COMMIT: tell the source (if it can still hear), free the guest. */
static void discard(struct in *in, uint32_t code, const char *fmt, ...)
{
	char why[MIG_MSG_MAX + 1];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (code)
		chan_abort(&in->ch, code, why);
	if (in->vm)
		vm_destroy(in->vm);
	pr_info("migrate in %s: failed: %s; discarded", in->name[0] ? in->name : "?", why);
	record(in, code == MIG_E_CANCELLED ? MIG_CANCELLED : MIG_FAILED, why);
	in->closing = code != 0;	/* let the ABORT out before the FIN */
	in_free(in);
}

static int send_small(struct in *in, const struct mig_rec *r)
{
	int rc = chan_queue(&in->ch, r);

	if (!rc && chan_push(&in->ch, IN_TX_CAP) != 1)
		rc = -EIO;		/* a few bytes into an empty ring: the link is gone */
	return rc;
}

/* ---- HELLO ---- */

static bool name_taken(void *ctx, const char *name)
{
	(void)ctx;
	return vm_find(name) != NULL;
}

static void host_facts(struct in *in, struct mig_host *h)
{
	struct mem_stats st;

	mem_get_stats(&st);
	memset(h, 0, sizeof(*h));
	h->peer_allowed = peer_allowed(in->ch.peer_ip);
	h->busy = busy_besides(in);
	h->cpu_baseline = mig_cpu_baseline(cpuid_guest);
	h->arch_caps = vm_host_rdcl_no() ? ARCH_CAP_RDCL_NO : 0;
	h->dev_version = VDEV_SNAP_VERSION;
	h->max_vcpus = VM_MAX_VCPUS;
	h->max_mem = (uint64_t)VM_MAX_MEM_MB << 20;
	h->free_bytes = st.free;
	h->tsc_hz = tsc_hz();
	h->name_taken = name_taken;
}

static int reply(struct in *in, const struct mig_error *e)
{
	struct mig_rec r = { .type = MIG_HELLO_REPLY };

	r.reply.proto_version = MIG_PROTO_VERSION;
	r.reply.code = e->code;
	r.reply.xcr0_mask = vmstate_xcr0_mask();
	snprintf(r.reply.ferry_version, sizeof(r.reply.ferry_version), "%s", ferry_version);
	memcpy(r.reply.msg, e->msg, sizeof(r.reply.msg));
	return send_small(in, &r);
}

static void refuse(struct in *in, const struct mig_error *e)
{
	pr_err("migrate: refused incoming %s from %s: %s: %s", in->name, in->peer,
	       mig_code_name(e->code), e->msg);
	in->hist->outcome = MIG_REFUSED;
	if (snprintf(in->hist->why, sizeof(in->hist->why), "%s: %s", mig_code_name(e->code),
		     e->msg) >= (int)sizeof(in->hist->why))
		pr_debug("migrate in: the refusal is cut short in `migrations`");
	reply(in, e);
	in->closing = true;
	in_free(in);
}

static int create_guest(struct in *in, const struct mig_hello *h, struct mig_error *e)
{
	struct vm_config cfg = {
		.name = h->name, .kernel = h->kernel, .mem_mb = h->mem_size >> 20,
		.vcpus = h->vcpus, .cmdline = h->cmdline, .nic = h->nic,
		.initrd = h->initrd[0] ? h->initrd : NULL,
		.modules = h->modules[0] ? h->modules : NULL,
		.mac = h->nic ? h->mac : NULL, .weight = h->weight, .cap_pct = h->cap_pct,
		.pvpanic = h->pvpanic ? VM_PVPANIC_ON : VM_PVPANIC_OFF,
		.meltdown = h->arch_caps & ARCH_CAP_RDCL_NO ? VM_MELTDOWN_NOT_AFFECTED :
			    VM_MELTDOWN_AFFECTED,
	};
	char err[128];
	int rc = vm_create_incoming(&cfg, &in->vm, err, sizeof(err));

	in->ch.last_rx_us = netif_now_us();	/* taking a big guest's frames is no silence */
	if (rc) {
		/* a guest here has its name or its MAC: either is taken */
		mig_error_set(e, rc == -EEXIST || rc == -EADDRINUSE ? MIG_E_NAME_TAKEN :
			      rc == -ENOMEM ? MIG_E_NO_MEMORY :
			      rc == -E2BIG ? MIG_E_LIMIT : MIG_E_INTERNAL, "%s", err);
		in->vm = NULL;
		return rc;
	}
	spin_lock(&in->vm->lock);
	in->vm->mig.kind = VM_MIG_IN;
	in->vm->mig.id = h->mig_id;
	snprintf(in->vm->mig.peer, sizeof(in->vm->mig.peer), "%s", in->peer);
	spin_unlock(&in->vm->lock);
	return 0;
}

/* The images a reboot loads again (kernel, initrd, modules) are this
 * host's modules of those names: a note on the reply, in both logs, when
 * one is missing here (the guest runs; its next reboot here would stop
 * it, as `create` with that name would fail). */
static void note_missing_images(const struct mig_hello *h, struct mig_error *e)
{
	char name[MIG_MODULES_MAX + 1];
	const char *missing = NULL;
	size_t n;

	if (!modules_find(h->kernel))
		missing = h->kernel;
	else if (h->initrd[0] && !modules_find(h->initrd))
		missing = h->initrd;
	for (const char *p = h->modules; !missing && namelist_next(&p, name, sizeof(name)) > 0; )
		if (!modules_find(name))
			missing = name;
	if (!missing)
		return;
	n = strnlen(e->msg, sizeof(e->msg) - 1);
	snprintf(e->msg + n, sizeof(e->msg) - n, "%snote: no module '%s' here: a reboot of "
		 "the guest here would stop it", n ? "; " : "", missing);
}

static void on_hello(struct in *in, const struct mig_hello *h)
{
	bool known = mig_history_find_in(h->mig_id, NULL) != NULL;	/* before this one's entry */
	struct mig_host host;
	struct mig_error e;

	snprintf(in->name, sizeof(in->name), "%s", h->name);
	in->hist = mig_history_add(h->mig_id, false, h->name, in->peer, h->mem_size);
	snprintf(in->hist->key, sizeof(in->hist->key), "%s", in->key);
	in->hist->live.start_us = netif_now_us();
	in->hist->live.phase = "precopy";
	if (in->ch.mode == CHAN_PLAIN)
		pr_warn("migrate in %s from %s: insecure: plaintext and unauthenticated (the "
			"listener is `insecure`)", h->name, in->peer);
	host_facts(in, &host);
	if (known) {		/* its outcome here must stay what a QUERY hears */
		mig_error_set(&e, MIG_E_PROTOCOL, "migration %016llx came here before",
			      (unsigned long long)h->mig_id);
		refuse(in, &e);
		return;
	}
	if (mig_admit(h, &host, &e) || create_guest(in, h, &e)) {
		refuse(in, &e);
		return;
	}
	note_missing_images(h, &e);
	if (reply(in, &e)) {
		discard(in, 0, "cannot answer %s", in->peer);
		return;
	}
	in->t_round_start = netif_now_us();
	in->round_bytes0 = in->ch.bytes_in;
	if (in->ch.mode == CHAN_SEALED)
		pr_info("migrate in %s from %s: id %016lx, %lu MiB, peer %s %s (sealed)%s%s",
			h->name, in->peer, h->mig_id, h->mem_size >> 20, in->ch.peer.name,
			in->ch.peer.fp_text, e.msg[0] ? "; " : "", e.msg);
	else
		pr_info("migrate in %s from %s: id %016lx, %lu MiB, insecure (plaintext)%s%s",
			h->name, in->peer, h->mig_id, h->mem_size >> 20, e.msg[0] ? "; " : "",
			e.msg);
}

/* ---- memory and state ---- */

/*
 * The incoming guest's frames were not zeroed (hv/vm.c), so that HELLO is
 * answered at once rather than after zeroing all of its RAM.  Every entry
 * writes its whole page instead, a ZERO one too, and the stream refuses a
 * round 0 that leaves any page out (check_round), before any vCPU state:
 * so no guest runs on what its frames held before.  The zeroing happens
 * here, as round 0 comes, while the source's guest still runs: the source
 * pauses it only after ROUND_ACK (send_ack).
 */
static void on_pages(struct in *in, const struct mig_pages *p)
{
	for (uint32_t i = 0; i < p->count; i++) {
		const struct mig_page *pg = &p->page[i];
		uint8_t *dst = vm_page_hva(in->vm, pg->gfn);	/* RAM page, not GPA */
		if (pg->kind == MIG_PAGE_DATA) {
			memcpy(dst, pg->data, MIG_PAGE_SIZE);
		} else if (pg->kind == MIG_PAGE_SPARSE) {
			mig_sparse_decode(pg->data, pg->len, dst);	/* checked by the stream */
		} else {
			for (uint64_t k = 0; k < mig_page_span(pg); k++)
				memset(vm_page_hva(in->vm, pg->gfn + k), 0, MIG_PAGE_SIZE);
			in->round_zero += mig_page_span(pg);
		}
		in->poll_pages += mig_page_span(pg);
	}
}

static bool hold_or_abort(struct in *in, enum mig_point p)
{
	uint32_t hold = mig_debug_hold(p);

	if (mig_debug_abort(p)) {
		discard(in, MIG_E_INTERNAL, "aborted at %s (debug)", mig_point_name(p));
		return true;
	}
	if (hold) {
		pr_info("migrate in %s: held at %s for %u s (debug)", in->name, mig_point_name(p),
			hold);
		in->held_at = p;
		in->hold_end_us = netif_now_us() + hold * 1000000ull;
		return true;
	}
	return false;
}

/* Round 0 is written, every page of it (on_pages is done with a record
 * before the next comes): the source may pause its guest now. */
static void send_ack(struct in *in)
{
	struct mig_rec r = { .type = MIG_ROUND_ACK };

	r.ack.round = 0;
	r.ack.pages = in->ch.st.round0_pages;
	if (send_small(in, &r))
		discard(in, 0, "cannot send ROUND_ACK to %s", in->peer);
}

static void on_round(struct in *in, const struct mig_round_end *r)
{
	uint64_t now = netif_now_us(), us = now - in->t_round_start;
	uint64_t rate = mig_rate(in->ch.bytes_in - in->round_bytes0, us);
	uint64_t dirty = mig_rate(r->remaining * MIG_PAGE_SIZE, us);

	in->t_last_round = now;
	in->hist->rounds = r->round + 1;
	in->hist->bytes = in->ch.bytes_in;
	in->hist->live.pages += r->pages;
	in->hist->live.dirty = r->remaining;
	in->hist->live.rate_Bps = rate;
	pr_info("migrate in %s: round %u: %lu pages (%lu zero), %lu left, %lu.%02lu MB/s in, "
		"guest dirtied %lu.%02lu MB/s", in->name, r->round, r->pages, in->round_zero,
		r->remaining, rate / 1000000, rate / 10000 % 100, dirty / 1000000,
		dirty / 10000 % 100);
	in->t_round_start = now;
	in->round_bytes0 = in->ch.bytes_in;
	in->round_zero = 0;
	spin_lock(&in->vm->lock);
	in->vm->mig.round = r->round + 1;
	spin_unlock(&in->vm->lock);
	/* a hold here delays the ack: the source goes on with rounds meanwhile */
	if (r->round == 0 && !hold_or_abort(in, MIG_AT_PRECOPY))
		send_ack(in);
}

static void on_vcpu(struct in *in, const struct mig_vcpu *v)
{
	if (v->id == 0)
		in->t_state = netif_now_us();
	if (v->id == 0 && hold_or_abort(in, MIG_AT_STOPCOPY) && !alive(in))
		return;
	if (vmstate_load_vcpu(in->vm, v->id, &v->cpu, v->xsave, v->xsave_len, v->halted))
		discard(in, MIG_E_STATE, "vCPU %u's state cannot be loaded", v->id);
}

/* A copy of a record's bytes, for COMMIT (which loads them again). */
static void keep(struct in *in, const uint8_t *data, uint32_t len, uint8_t **to,
		 uint32_t *to_len)
{
	*to = malloc(len);
	if (!*to) {
		discard(in, MIG_E_INTERNAL, "out of memory");
		return;
	}
	memcpy(*to, data, len);
	*to_len = len;
}

static void on_devices(struct in *in, const struct mig_devstate *d)
{
	if (vmstate_load_devices(in->vm, d->data, d->len, true)) {
		discard(in, MIG_E_STATE, "the device state was refused");
		return;
	}
	keep(in, d->data, d->len, &in->dev, &in->dev_len);
}

static void send_ready(struct in *in)
{
	struct mig_rec r = { .type = MIG_READY };

	r.ready.pages = in->ch.st.total_pages;
	in->t_ready = netif_now_us();
	if (send_small(in, &r))
		discard(in, 0, "cannot send READY to %s", in->peer);
}

static void on_end(struct in *in)
{
	char why[128];

	/* every page and the device state are in: a NIC whose rings disagree
	 * with them would stop at its first frame; the guest stays there */
	if (vmstate_check_devices(in->vm, why, sizeof(why))) {
		discard(in, MIG_E_STATE, "the device state does not match memory: %s", why);
		return;
	}
	if (mig_debug_abort(MIG_AT_READY)) {
		discard(in, MIG_E_INTERNAL, "refused to be ready (debug)");
		return;
	}
	if (!hold_or_abort(in, MIG_AT_READY))
		send_ready(in);
}

/* ---- the hand-over ---- */

static void finish(struct in *in)
{
	struct mig_rec r = { .type = MIG_COMMITTED };

	if (send_small(in, &r))
		pr_warn("migrate in %s: COMMITTED did not go out: the source will be in doubt",
			in->name);
	record(in, MIG_DONE, NULL);
	pr_info("migrate in %s: done: %s here (state came %lu us after the last round, "
		"loaded in %lu us, COMMIT %lu us after READY, running %lu us after COMMIT)",
		in->name, in->arrive_paused ? "paused" : "running",
		in->t_state - in->t_last_round, in->t_ready - in->t_state,
		in->t_commit - in->t_ready, netif_now_us() - in->t_commit);
	in->closing = true;
	in_free(in);
}

static void on_commit(struct in *in, const struct mig_commit *c)
{
	uint64_t t_commit = netif_now_us(), local_ns, tsc, clock_ns;
	char err[96];

	in->t_commit = t_commit;
	in->arrive_paused = c->flags & MIG_COMMIT_PAUSED;
	if (!in->arrive_paused)
		vm_arrival_start(in->vm);
	if (mig_debug_abort(MIG_AT_COMMIT)) {
		discard(in, MIG_E_INTERNAL, "could not start the guest (debug)");
		return;
	}
	local_ns = (netif_now_us() - t_commit) * 1000;
	tsc = mig_tsc_resume(in->tsc.guest_tsc, in->ch.st.hello.tsc_hz, c->paused_ns, local_ns);
	clock_ns = in->tsc.guest_clock_ns + c->paused_ns + local_ns;
	vmstate_load_time(in->vm, tsc, clock_ns);
	if (vmstate_load_devices(in->vm, in->dev, in->dev_len, false)) {
		discard(in, MIG_E_INTERNAL, "cannot start the guest");
		return;
	}
	/* after the device state's (which that load put back): they were
	 * checked when they came, so only memory can fail them now, and a
	 * few frames lost is no reason to lose the guest */
	if (in->late && vmstate_load_late_frames(in->vm, in->late, in->late_len))
		pr_warn("migrate in %s: the frames that came late are lost (out of memory)",
			in->name);
	if (vm_activate(in->vm, !(c->flags & MIG_COMMIT_PAUSED), err, sizeof(err))) {
		discard(in, MIG_E_INTERNAL, "cannot start the guest");
		return;
	}
	spin_lock(&in->vm->lock);
	in->vm->mig.kind = VM_MIG_NONE;
	in->vm->mig_owned = false;
	spin_unlock(&in->vm->lock);
	in->vm = NULL;			/* it runs: ours no longer to discard */
	if (!hold_or_abort(in, MIG_AT_COMMIT))
		finish(in);
}

int mig_in_cancel(const char *name)
{
	for (unsigned int i = 0; i < IN_SLOTS; i++) {
		struct in *in = L.slot[i];

		/* in->vm is set from the accepted HELLO until COMMIT starts it */
		if (in && in->vm && !in->closing && !strcmp(in->name, name)) {
			discard(in, MIG_E_CANCELLED, "the destination's operator cancelled it");
			return 0;
		}
	}
	return -ENOENT;
}

/* An in-doubt source asks how migration q->mig_id ended here. */
static void on_query(struct in *in, const struct mig_query *q)
{
	struct mig_rec r = { .type = MIG_QUERY_REPLY };
	const struct mig_entry *found;
	static const char *const said[] = { "unknown here", "ran here", "discarded here" };

	if (!peer_allowed(in->ch.peer_ip)) {
		discard(in, MIG_E_NOT_ALLOWED, "%s may not ask", in->peer);
		return;
	}
	found = mig_history_find_in(q->mig_id, in->key);	/* only what this peer sent */
	r.qreply.mig_id = q->mig_id;
	r.qreply.outcome = !found || found->outcome == MIG_RUNNING ? MIG_Q_UNKNOWN :
			   found->outcome == MIG_DONE ? MIG_Q_RAN : MIG_Q_DISCARDED;
	pr_info("migrate in: %s asks about migration %016lx: %s", in->peer, q->mig_id,
		said[r.qreply.outcome]);
	send_small(in, &r);
	in->closing = true;
	in_free(in);
}

/* Frames that came for the guest at the source after its state: checked
 * now, so that a bad list is refused while the source still runs it, and
 * given to it at COMMIT after the device state's. */
static void on_frames(struct in *in, const struct mig_frames *f)
{
	if (vmstate_load_late_frames(NULL, f->data, f->len)) {
		discard(in, MIG_E_STATE, "the frames that came late were refused");
		return;
	}
	keep(in, f->data, f->len, &in->late, &in->late_len);
}

/* One record; false when the migration ended (in is freed). */
static bool on_record(struct in *in, const struct mig_rec *r)
{
	switch (r->type) {
	case MIG_HELLO:		on_hello(in, &r->hello); break;
	case MIG_PAGES:		on_pages(in, &r->pages); break;
	case MIG_ROUND_END:	on_round(in, &r->round); break;
	case MIG_VCPU_STATE:	on_vcpu(in, &r->vcpu); break;
	case MIG_DEVICE_STATE:	on_devices(in, &r->dev); break;
	case MIG_TSC:		in->tsc = r->tsc; break;
	case MIG_END:		on_end(in); break;
	case MIG_FRAMES:	on_frames(in, &r->frames); break;
	case MIG_COMMIT:	on_commit(in, &r->commit); break;
	case MIG_QUERY:		on_query(in, &r->query); break;
	case MIG_ABORT:
		discard(in, 0, "the source aborted: %s: %s", mig_code_name(r->abort.code),
			r->abort.msg);
		break;
	default:
		discard(in, MIG_E_PROTOCOL, "unexpected %s", mig_type_name(r->type));
		break;
	}
	return alive(in) && !in->held_at;
}

/*
 * Whether to log one more refused handshake: at most HS_LOG_PER_S a second,
 * so that junk connections from the network cannot keep the console (and
 * so the shell CPU) busy; the lines left out are counted in the next one.
 * `migrations` keeps every refusal.
 */
#define HS_LOG_PER_S	5

static bool hs_log_ok(unsigned long *skipped)
{
	static uint64_t window_us;
	static unsigned int in_window;
	static unsigned long held;
	uint64_t now = netif_now_us();

	if (now - window_us >= 1000000) {
		window_us = now;
		in_window = 0;
	}
	if (in_window >= HS_LOG_PER_S) {
		held++;
		return false;
	}
	in_window++;
	*skipped = held;
	held = 0;
	return true;
}

/* The handshake was refused (or a plaintext listener was asked for one):
 * no guest exists yet; the source has heard why. */
static void hs_refused(struct in *in)
{
	struct mig_entry *e = mig_history_add(0, false, "-", in->peer, 0);
	unsigned long skipped;

	if (hs_log_ok(&skipped)) {
		if (skipped)
			pr_err("migrate: refused incoming from %s: %s (%lu refusals before it "
			       "not shown: see `migrations`)", in->peer, in->ch.hs_err.msg, skipped);
		else
			pr_err("migrate: refused incoming from %s: %s", in->peer, in->ch.hs_err.msg);
	}
	e->outcome = MIG_REFUSED;
	snprintf(e->why, sizeof(e->why), "%s", in->ch.hs_err.msg);
	in->closing = true;
	in_free(in);
}

static void pull_error(struct in *in, int rc)
{
	if (rc == -ECONNREFUSED && !in->vm)
		hs_refused(in);
	else if (rc == -EBADMSG || rc == -ECONNREFUSED)
		discard(in, in->ch.hs_err.code, "%s", in->ch.hs_err.msg);
	else if (rc == -EPROTO)
		discard(in, in->ch.st.rx_err.code, "%s", in->ch.st.rx_err.msg);
	else if (rc == -EPIPE)
		discard(in, 0, "%s closed the connection%s", in->peer,
			chan_partial(&in->ch) ? " in the middle of a record" : "");
	else
		discard(in, 0, "connection from %s lost (error %d)", in->peer, rc);
}

/* A debug hold ran out: do what it delayed. */
static void unhold(struct in *in)
{
	enum mig_point p = in->held_at;

	in->held_at = MIG_AT_NONE;
	in->ch.last_rx_us = netif_now_us();
	if (p == MIG_AT_PRECOPY)
		send_ack(in);
	else if (p == MIG_AT_READY)
		send_ready(in);
	else if (p == MIG_AT_COMMIT)
		finish(in);
}

static bool silent(struct in *in)
{
	struct tcp_info ti = { 0 };
	uint64_t limit;

	netif_lock();
	tcp_get_info(in->ch.conn, &ti);
	netif_unlock();
	/* the source's `timeout=S` holds here too, once its HELLO came */
	limit = in->vm && in->ch.st.hello.timeout_s ? in->ch.st.hello.timeout_s * 1000000ull :
		mig_silence_us(in->vm ? in->vm->mem_size : 0, ti.srtt_us);

	if (netif_now_us() - in->ch.last_rx_us <= limit)
		return false;
	discard(in, MIG_E_TIMEOUT, "%s silent for %llu s", in->peer,
		(unsigned long long)(limit / 1000000));
	return true;
}

/* The handshake, before any record: true if it moved (or ended). */
static bool hs_step(struct in *in)
{
	int rc = chan_handshake(&in->ch);

	if (rc < 0) {
		hs_refused(in);
		return true;
	}
	if (rc == 0)
		return silent(in);
	in->hs_done = true;
	snprintf(in->key, sizeof(in->key), "%s,%s", in->ch.peer.name, in->ch.peer.fp_text);
	return true;
}

/* The first sealed record opened: only now has the peer proved its key.
 * KK's first message can be replayed by anyone who saw it, and the
 * handshake then completes here, but no record of the replayer's opens;
 * saying "proved" at the handshake let replays fill the log. */
static void note_proved(struct in *in)
{
	if (in->proved || in->ch.mode != CHAN_SEALED)
		return;
	in->proved = true;
	pr_info("migrate in: %s proved the key of '%s' (%s)", in->peer, in->ch.peer.name,
		in->ch.peer.fp_text);
}

/* One look at the connection; true if it did something (more may wait). */
static bool in_step(struct in *in)
{
	const struct mig_rec *r;
	int rc = 0, i;

	if (!in->hs_done)
		return hs_step(in);
	if (in->held_at) {
		if (netif_now_us() < in->hold_end_us)
			return false;
		unhold(in);
		return true;
	}
	in->poll_pages = 0;
	for (i = 0; i < RX_RECORDS_PER_POLL && in->poll_pages < RX_PAGES_PER_POLL; i++) {
		rc = chan_pull(&in->ch, &r);
		if (rc <= 0)
			break;
		note_proved(in);
		if (!on_record(in, r))
			return true;
	}
	if (rc < 0) {
		pull_error(in, rc);
		return true;
	}
	if (silent(in))
		return true;
	return i > 0;
}

/*
 * All slots taken: the oldest connection that has not yet said who it is
 * (no HELLO or QUERY after IN_INTRO_US) makes room.  A genuine peer does
 * its handshake and HELLO in milliseconds, so a few silent or trickling
 * connections cannot keep every real migration out.
 */
static unsigned int make_room(void)
{
	unsigned int victim = IN_SLOTS;
	uint64_t now = netif_now_us();

	for (unsigned int i = 0; i < IN_SLOTS; i++) {
		struct in *in = L.slot[i];

		if (in && !in->hist && !in->vm && now - in->t_start > IN_INTRO_US &&
		    (victim == IN_SLOTS || in->t_start < L.slot[victim]->t_start))
			victim = i;
	}
	if (victim < IN_SLOTS) {
		pr_info("migrate in: %s said nothing in %llu ms: closed, for a new connection",
			L.slot[victim]->peer,
			(unsigned long long)((now - L.slot[victim]->t_start) / 1000));
		in_free(L.slot[victim]);
	}
	return victim;
}

static void accept_one(void)
{
	struct tcp_conn *c = NULL;
	struct tcp_info ti;
	struct in *in;
	char ip[16];

	unsigned int free_slot = 0;

	while (free_slot < IN_SLOTS && L.slot[free_slot])
		free_slot++;
	netif_lock();
	if (tcp_accept(L.listener, &c))
		c = NULL;
	netif_unlock();
	if (c && free_slot == IN_SLOTS)
		free_slot = make_room();
	netif_lock();
	if (c && free_slot == IN_SLOTS) {
		tcp_abort(c);		/* all slots taken: the peer sees a reset */
		c = NULL;
	}
	if (c) {
		tcp_get_info(c, &ti);
		tcp_set_nodelay(c, true);	/* READY, COMMITTED: no Nagle wait */
	}
	netif_unlock();
	if (!c)
		return;
	in = calloc(1, sizeof(*in));
	if (!in || chan_init(&in->ch, MIG_DST, c, IN_TX_CAP)) {
		free(in);
		netif_lock();
		tcp_abort(c);
		netif_unlock();
		return;
	}
	in->ch.peer_ip = ti.rip;
	in->t_start = netif_now_us();
	if (L.cfg.insecure) {
		chan_plain_dst(&in->ch);
		in->hs_done = true;
		snprintf(in->key, sizeof(in->key), "insecure");
	} else {
		chan_hs_start_dst(&in->ch, mig_keyring());
	}
	net_format_ipv4(ti.rip, ip);
	snprintf(in->peer, sizeof(in->peer), "%s", ip);
	L.slot[free_slot] = in;
}

enum mig_in_work mig_in_poll(void)
{
	enum mig_in_work w = MIG_IN_NONE;

	if (L.listener)
		accept_one();
	for (unsigned int i = 0; i < IN_SLOTS; i++) {
		if (!L.slot[i])
			continue;
		bool moved = in_step(L.slot[i]);
		if (moved)
			w = MIG_IN_BUSY;
		else if (L.slot[i] && w == MIG_IN_NONE)
			w = MIG_IN_WAITING;
	}
	return w;
}
