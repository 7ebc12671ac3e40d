/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The migration sender: `migrate NAME HOST`, run by the shell CPU in the
 * foreground.  Pre-copy rounds over the dirty log (hv/mm/dirty.h, steps
 * S1..S9), the policy's decisions each round, stop and copy, then the
 * two-phase hand-over (docs/migration.md).  Until COMMIT is sent every
 * failure resumes the guest here, unchanged; after it, silence leaves the
 * guest paused here "in doubt".
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include "hv/lib/errtext.h"
#include "arch/x86/cpu.h"
#include "hv/cpuid.h"
#include "hv/gnet.h"
#include "hv/migrate/chan.h"
#include "hv/migrate/migrate.h"
#include "hv/migrate/sparse.h"
#include "hv/migrate/trust.h"
#include "hv/netif.h"
#include "hv/tsc.h"
#include "hv/lib/time.h"
#include "hv/vdev/devices.h"
#include "hv/version.h"
#include "hv/vm.h"
#include "hv/vmstate.h"

#define PAGES_PER_REC	64u		/* 256 KiB records: the shell stays lively */
#define REC_CAP		(MIG_HDR_SIZE + 4 + PAGES_PER_REC * (9 + MIG_PAGE_SIZE))
#define PUSH_CHUNK	(64u * 1024)	/* bytes offered to TCP per step */
#define RUN_MAX		(1u << 16)	/* pages per zero run (256 MiB): records stay lively */
#define REC_SPAN_MAX	MIG_REC_SPAN_MAX	/* pages a record covers (the receiver
						 * refuses more) */
#define SCAN_STEP	4096u		/* pages scanned between looks at the shell
					 * CPU's other work and at Ctrl-C */
#define ACK_SLICE_MIN	50000u		/* waiting for ROUND_ACK: a round at least this often */
#define ACK_SLICE_MAX	1000000u	/* ... and at most this seldom */

/* Why the migration ended early: a code for ABORT and words for the log. */
struct out_fail {
	uint32_t code;
	char msg[MIG_MSG_MAX + 1];
};

struct mig_out {
	const struct mig_out_args *a;
	struct vm *vm;
	struct mig_chan ch;
	struct mig_policy pol;
	struct mig_pace pace;
	struct mig_entry *hist;
	struct out_fail fail;
	uint64_t *set, *more;		/* pages to send; a second collection */
	uint8_t *dev;			/* device state buffer (allocated before the pause) */
	struct fpu_area *xsave;		/* a vCPU's, on its way (likewise) */
	size_t words;
	uint64_t id;
	uint64_t grace_us;		/* more silence allowed while the peer allocates */
	uint64_t silence_us;		/* a peer this quiet is gone (mig_silence_us) */
	char peer[24];
	struct mig_peer pin;		/* the key the destination must prove */
	uint64_t hs_us;			/* how long the handshake took */
	uint64_t hello_us;		/* HELLO to HELLO_REPLY */
	bool was_paused;		/* the operator had paused it */
	bool logging;			/* dirty log started */
	bool paused;			/* we paused it for stop and copy */
	bool accepted;			/* HELLO_REPLY said yes: memory may move */
	bool commit_sent;
	uint64_t t_start, t_pause, last_progress;
	uint64_t t_clock;		/* the TSC record's instant (device state) */
	uint64_t t_state, last_pages;	/* the last round was sent; its pages */
	uint64_t t_sent, t_ready;	/* END handed to TCP; READY came */
	uint32_t late_frames;		/* frames for the guest sent in FRAMES */
	uint32_t tx_dropped;		/* its frames waiting for the wire at COMMIT */
	uint64_t t_collect;		/* the dirty log last began a new set */
	uint64_t t_round0, t_acked;	/* ROUND_END 0 handed to TCP; ROUND_ACK came */
	bool told_wait;			/* the operator knows we wait for it */
	uint32_t rounds;
	uint64_t pages_total;
	struct page_batch {
		struct mig_page page[PAGES_PER_REC];
		uint8_t sparse[PAGES_PER_REC][MIG_SPARSE_MAX];	/* encoded sparse pages */
		uint32_t n;
		uint32_t span;		/* pages the entries cover */
	} batch;
};

static int failf(struct mig_out *o, uint32_t code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int failf(struct mig_out *o, uint32_t code, const char *fmt, ...)
{
	va_list ap;

	if (!o->fail.code) {
		o->fail.code = code;
		va_start(ap, fmt);
		vsnprintf(o->fail.msg, sizeof(o->fail.msg), fmt, ap);
		va_end(ap);
	}
	return -ECANCELED;
}

/* A line of progress or of the outcome, to wherever the migration reports. */
static void say(struct mig_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(struct mig_out *o, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	o->a->sink->print(o->a->sink->ctx, line);
}

/* The migration could not start: nothing moved. */
static void refuse(struct mig_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void refuse(struct mig_out *o, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	o->a->sink->error(o->a->sink->ctx, msg);
}

static int conn_error(struct mig_out *o, int rc)
{
	if (rc == -EBADMSG || rc == -ECONNREFUSED)
		return failf(o, o->ch.hs_err.code, "%s: %s", o->peer, o->ch.hs_err.msg);
	if (rc == -EPROTO)
		return failf(o, o->ch.st.rx_err.code, "%s sent a bad record: %s", o->peer,
			     o->ch.st.rx_err.msg);
	if (rc == -EPIPE)
		return failf(o, MIG_E_PROTOCOL, "%s closed the connection", o->peer);
	return failf(o, MIG_E_TIMEOUT, "connection to %s lost: %s", o->peer, errtext(rc));
}

/* The destination has written round 0 (the stream checked the claim). */
static void note_ack(struct mig_out *o, const struct mig_rec *r)
{
	uint64_t us;

	o->t_acked = netif_now_us();
	us = o->t_acked - o->t_round0;
	say(o, "migrate %s: %s has written round 0 (%lu pages), %lu.%03lu ms after it was sent",
	    o->vm->name, o->peer, r->ack.pages, us / 1000, us % 1000);
}

/* A record came while we were sending: only an ABORT may (ROUND_ACK is
 * taken before this is asked). */
static int unexpected(struct mig_out *o, const struct mig_rec *r)
{
	if (r->type == MIG_ABORT)
		return failf(o, r->abort.code, "%s aborted: %s: %s", o->peer,
			     mig_code_name(r->abort.code), r->abort.msg);
	return failf(o, MIG_E_PROTOCOL, "%s sent %s out of turn", o->peer,
		     mig_type_name(r->type));
}

/* The sink asks to cancel (the shell: Ctrl-C): cancel, unless
 * COMMIT is out; then the migration must run to its end. */
static int cancelled(struct mig_out *o)
{
	if (o->a->sink->cancelled(o->a->sink->ctx) && !o->commit_sent)
		return failf(o, MIG_E_CANCELLED, "cancelled by the operator");
	return 0;
}

/*
 * Paused by us and not yet handed over: a destination that reads a
 * segment now and then (or a link that collapsed after the pause) keeps
 * resetting the silence limit, and the guest would stay stopped for as
 * long as the rest takes to trickle through.  Before COMMIT giving up is
 * always safe (the guest runs on here), so past downtime-max, else the
 * longest of ten times the target, four times the downtime the policy
 * expected when it stopped (a large last round on a slow link, as with
 * converge=off) and the silence limit (timeout=S), it does.
 */
static int pause_overdue(struct mig_out *o)
{
	const struct mig_policy_cfg *p = &o->a->policy;
	uint64_t target = (p->downtime_ms ? p->downtime_ms : MIG_DOWNTIME_DEFAULT_MS) * 10000ull;
	uint64_t expect = 4 * o->hist->live.downtime_us, limit = o->silence_us;

	if (target > limit)
		limit = target;
	if (expect > limit)
		limit = expect;
	if (p->downtime_max_ms)
		limit = p->downtime_max_ms * 1000ull;

	if (!o->paused || o->commit_sent || !o->t_pause ||
	    netif_now_us() - o->t_pause <= limit)
		return 0;
	return failf(o, MIG_E_TIMEOUT, "the guest has been paused for %llu ms and %s has not "
		     "taken its last round and state: giving up", (unsigned long long)
		     ((netif_now_us() - o->t_pause) / 1000), o->peer);
}

/*
 * One step of waiting: frames move and the shell CPU's other work runs
 * (inside the sink's cancelled()), a cancel ends it (not after COMMIT), a
 * peer's ABORT ends it, and silence times out.  idle: the last step moved
 * nothing, so wait for the network rather than spin.
 */
static int step(struct mig_out *o, bool idle)
{
	const struct mig_rec *r;
	int rc;

	if ((rc = cancelled(o)))
		return rc;
	/* while we send, only ROUND_ACK or an ABORT may come (READY is wait_rec's) */
	if (o->ch.st.phase == MIG_PH_MEMORY || o->ch.st.phase == MIG_PH_STATE) {
		rc = chan_pull(&o->ch, &r);
		if (rc == 1 && r->type == MIG_ROUND_ACK)
			note_ack(o, r);
		else if (rc == 1)
			return unexpected(o, r);
		if (rc < 0)
			return conn_error(o, rc);
	}
	if (netif_now_us() - o->last_progress > o->silence_us)
		return failf(o, MIG_E_TIMEOUT, "%s silent for %llu s", o->peer,
			     (unsigned long long)(o->silence_us / 1000000));
	if ((rc = pause_overdue(o)))
		return rc;
	if (idle)
		netif_wait();	/* sleep until a frame comes: the peer's ACKs */
	else
		cpu_relax();
	return 0;
}

/* Send the queued record to the end, paced. */
static int flush(struct mig_out *o)
{
	for (;;) {
		uint64_t now = netif_now_us();
		size_t left = o->ch.tx_len - o->ch.tx_off;
		size_t want = left < PUSH_CHUNK ? left : PUSH_CHUNK;
		size_t allow = mig_pace_allow(&o->pace, now, want);
		size_t before = o->ch.tx_off;
		int rc = allow ? chan_push(&o->ch, allow) : 0;

		mig_pace_take(&o->pace, o->ch.tx_off - before);
		if (o->ch.tx_off != before)
			o->last_progress = now;
		o->hist->bytes = o->ch.bytes_out;	/* live, for `migrations` */
		if (rc == 1)
			return 0;
		if (rc < 0)
			return conn_error(o, rc);
		netif_poll();
		if ((rc = step(o, o->ch.tx_off == before)))
			return rc;
	}
}

/*
 * Wait until the peer has acknowledged everything handed to TCP.  A round
 * ends here, so that its time (and the link rate the policy learns from it)
 * is the network's, not a copy into the send buffer; and the guest is only
 * paused once nothing of the last round is still queued.
 */
static int drain(struct mig_out *o)
{
	size_t last = SIZE_MAX;
	int rc;

	for (;;) {
		netif_lock();
		size_t left = tcp_send_unacked(o->ch.conn);
		netif_unlock();
		if (!left)
			return 0;
		bool moved = left < last;

		if (moved)
			o->last_progress = netif_now_us();	/* acks are progress */
		last = left;
		netif_poll();
		if ((rc = step(o, !moved)))
			return rc;
	}
}

static int send_rec(struct mig_out *o, const struct mig_rec *r)
{
	int rc = chan_queue(&o->ch, r);

	if (rc)
		return failf(o, MIG_E_INTERNAL, "cannot encode %s: %s", mig_type_name(r->type),
			     o->ch.st.tx_err.msg);
	return flush(o);
}

/* Wait for the peer's next record, which must be of type want (a
 * ROUND_ACK before it is noted: a paused guest's source does not wait for
 * it). */
static int wait_rec(struct mig_out *o, uint16_t want, const struct mig_rec **out)
{
	int rc;

	o->last_progress = netif_now_us();
	for (;;) {
		netif_poll();
		rc = chan_pull(&o->ch, out);
		if (rc == 1 && (*out)->type == MIG_ROUND_ACK && want != MIG_ROUND_ACK) {
			note_ack(o, *out);
			continue;
		}
		if (rc == 1) {
			if ((*out)->type == want)
				return 0;
			return unexpected(o, *out);
		}
		if (rc < 0)
			return conn_error(o, rc);
		if (o->ch.last_rx_us > o->last_progress)
			o->last_progress = o->ch.last_rx_us;
		if ((rc = cancelled(o)) || (rc = pause_overdue(o)))
			return rc;
		if (netif_now_us() - o->last_progress > o->silence_us + o->grace_us)
			return failf(o, MIG_E_TIMEOUT, "no %s from %s within %llu s",
				     mig_type_name(want), o->peer,
				     (unsigned long long)((o->silence_us + o->grace_us) / 1000000));
		netif_wait();
	}
}

/* `debug migrate`: hold or abort here (tests inject faults this way). */
static int debug_point(struct mig_out *o, enum mig_point p)
{
	uint32_t hold = mig_debug_hold(p);
	int rc;

	if (hold) {
		uint64_t end = netif_now_us() + hold * 1000000ull;
		say(o, "migrate %s: held at %s for %u s (debug)", o->vm->name,
		    mig_point_name(p), hold);
		while (netif_now_us() < end) {
			netif_poll();
			if ((rc = cancelled(o)))
				return rc;
			netif_wait();
		}
		o->last_progress = netif_now_us();
	}
	if (mig_debug_abort(p))
		return failf(o, MIG_E_INTERNAL, "aborted at %s (debug)", mig_point_name(p));
	return 0;
}

/* ---- connecting and HELLO ---- */

static int connect_peer(struct mig_out *o)
{
	struct tcp_conn *c = NULL;
	int rc;

	netif_lock();
	rc = tcp_connect(o->a->net, o->a->ip, o->a->port, &c);
	netif_unlock();
	o->ch.conn = c;
	while (rc == 0) {
		netif_poll();
		netif_lock();
		rc = tcp_connected(c);
		netif_unlock();
		if (rc == 0 && cancelled(o))
			return -ECANCELED;
		if (rc == 0 && netif_now_us() - o->t_start > o->silence_us)
			rc = -ETIMEDOUT;
	}
	if (rc < 0)
		return failf(o, MIG_E_NOT_ALLOWED, "cannot connect to %s: %s%s", o->peer,
			     errtext(rc),
			     rc == -ECONNREFUSED ? " (is `migrate listen` on there?)" : "");
	netif_lock();
	tcp_set_nodelay(c, true);
	netif_unlock();
	return 0;
}

/* ---- the secure channel ---- */

/* The trusted peer to pin: by name, else by the address.  Nothing moves
 * (nothing is even sent) to a host that is not trusted. */
static int pin_peer(struct mig_out *o)
{
	struct mig_keyring *kr = mig_keyring();
	const struct mig_peer *p;
	char why[160], ip[16];

	if (mig_secure_ready(kr, why, sizeof(why)))
		return failf(o, MIG_E_NOT_ALLOWED, "no secure channel here: %s; or `insecure` on "
			     "both ends", why);
	p = o->a->peer_name ? mig_trust_by_name(kr, o->a->peer_name) : mig_trust_by_ip(kr, o->a->ip);
	net_format_ipv4(o->a->ip, ip);
	if (!p)
		return failf(o, MIG_E_NOT_ALLOWED, "%s is not a trusted peer: `migrate trust NAME "
			     "PUBKEY %s` first (or say `insecure` on both ends)",
			     o->a->peer_name ? o->a->peer_name : ip, ip);
	o->pin = *p;
	return 0;
}

/* The Noise handshake: the destination proves o->pin, or nothing moves. */
static int handshake(struct mig_out *o)
{
	int rc;

	uint64_t t0 = netif_now_us();

	if (chan_hs_start_src(&o->ch, mig_keyring(), &o->pin))
		return failf(o, o->ch.hs_err.code, "%s", o->ch.hs_err.msg);
	o->last_progress = t0;
	for (;;) {
		netif_poll();
		rc = chan_handshake(&o->ch);
		if (rc == 1)
			break;
		if (rc < 0)
			return failf(o, o->ch.hs_err.code, "%s %s", o->peer, o->ch.hs_err.msg);
		if ((rc = cancelled(o)))
			return rc;
		if (netif_now_us() - o->ch.last_rx_us > o->silence_us &&
		    netif_now_us() - o->last_progress > o->silence_us)
			return failf(o, MIG_E_TIMEOUT, "no handshake from %s within %llu s", o->peer,
				     (unsigned long long)(o->silence_us / 1000000));
		netif_wait();
	}
	o->hs_us = netif_now_us() - t0;
	snprintf(o->hist->key, sizeof(o->hist->key), "%s,%s", o->pin.name, o->pin.fp_text);
	return 0;
}

static uint64_t random_id(void)
{
	uint64_t x = rdtsc() ^ ((uint64_t)netif_now_us() << 32);

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static void fill_hello(struct mig_out *o, struct mig_hello *h)
{
	struct vm *vm = o->vm;

	memset(h, 0, sizeof(*h));
	h->proto_version = MIG_PROTO_VERSION;
	h->cpu_state_version = MIG_CPU_STATE_VERSION;
	h->dev_version = VDEV_SNAP_VERSION;
	h->vcpus = vm->nr_vcpus;
	h->mig_id = o->id;
	h->mem_size = vm->mem_size;
	h->cpu_baseline = mig_cpu_baseline(cpuid_guest);
	h->tsc_hz = vm_tsc_hz(vm);	/* the rate its TSC runs at here */
	h->guest_tsc = vm_tsc_now(vm);
	h->nic = vm->nic;
	memcpy(h->mac, vm->mac, sizeof(h->mac));
	h->pvpanic = vm->pvpanic;
	h->arch_caps = vm->rdcl_no ? ARCH_CAP_RDCL_NO : 0;
	h->weight = vm->weight;
	h->cap_pct = vm->cap_pct;
	snprintf(h->ferry_version, sizeof(h->ferry_version), "%s", ferry_version);
	snprintf(h->name, sizeof(h->name), "%s", vm->name);
	snprintf(h->kernel, sizeof(h->kernel), "%s", vm->kernel);
	snprintf(h->cmdline, sizeof(h->cmdline), "%s", vm->cmdline);
	snprintf(h->initrd, sizeof(h->initrd), "%s", vm->initrd);
	snprintf(h->modules, sizeof(h->modules), "%s", vm->modules);
	h->timeout_s = o->a->timeout_s;
}

static int hello(struct mig_out *o)
{
	struct mig_rec r = { .type = MIG_HELLO };
	const struct mig_rec *in;
	uint64_t t0 = netif_now_us();
	int rc;

	fill_hello(o, &r.hello);
	/* the peer takes and maps the guest's RAM before it answers, but does
	 * not zero it (round 0 writes every page): 1 s per GB is ample */
	o->grace_us = o->vm->mem_size / 1000;
	rc = send_rec(o, &r);
	if (!rc)
		rc = wait_rec(o, MIG_HELLO_REPLY, &in);
	o->grace_us = 0;
	if (rc)
		return rc;
	if (in->reply.code != MIG_OK)
		return failf(o, in->reply.code, "%s refused: %s: %s", o->peer,
			     mig_code_name(in->reply.code), in->reply.msg);
	o->accepted = true;
	o->hello_us = netif_now_us() - t0;
	o->pol.cfg.handover_us = o->hello_us;
	if (in->reply.msg[0])
		say(o, "migrate %s: %s says: %s", o->vm->name, o->peer, in->reply.msg);
	return 0;
}

/* ---- memory ---- */

static int flush_batch(struct mig_out *o, uint64_t *bytes)
{
	struct mig_rec r = { .type = MIG_PAGES };
	int rc;

	if (!o->batch.n)
		return 0;
	r.pages.count = o->batch.n;
	r.pages.page = o->batch.page;
	rc = send_rec(o, &r);
	*bytes += o->ch.tx_len;
	o->batch.n = 0;
	o->batch.span = 0;
	return rc;
}

/* How many pages the guest dirtied in the round's first MIG_EARLY_US, for
 * a round that turns out saturated (mig_round). */
static void sample_early(struct mig_out *o, struct mig_round *m)
{
	uint64_t us = netif_now_us() - o->t_collect;

	if (m->early_us || us < MIG_EARLY_US || !o->logging)
		return;
	m->early_dirtied = dirty_log_pending(&o->vm->dirty);
	m->early_us = us;
}

/* Send the pages in set; count them and the zero ones into *m. */
static int send_set(struct mig_out *o, const uint64_t *set, struct mig_round *m)
{
	size_t g, n = o->vm->nr_frames, scanned = 0;
	int rc;

	dirty_bitmap_for_each(g, set, n) {
		const uint8_t *data = vm_page_hva(o->vm, g);	/* RAM page g, not GPA */

		/* a large zero guest makes few records: the shell goes on meanwhile */
		if (++scanned % SCAN_STEP == 0 && (rc = cancelled(o)))
			return rc;
		if (o->batch.n == PAGES_PER_REC || o->batch.span >= REC_SPAN_MAX) {
			if ((rc = flush_batch(o, &m->bytes_sent)))
				return rc;
			sample_early(o, m);
		}
		o->batch.span++;
		struct mig_page *last = o->batch.n ? &o->batch.page[o->batch.n - 1] : NULL;
		uint8_t *sp = o->batch.sparse[o->batch.n];
		/* mostly-zero pages go as their non-zero words; all-zero ones as a flag */
		int len = mig_sparse_likely(data) ? mig_sparse_encode(data, sp, MIG_SPARSE_MAX) : -1;
		bool zero = len == 0;

		m->zero_pages += zero;
		m->sparse_pages += len > 0;
		m->pages_sent++;
		/* zero pages next to each other travel as one run */
		if (zero && last && (last->kind == MIG_PAGE_ZERO || last->kind == MIG_PAGE_ZERO_RUN) &&
		    last->gfn + mig_page_span(last) == g && mig_page_span(last) < RUN_MAX) {
			last->run = (uint32_t)mig_page_span(last) + 1;
			last->kind = MIG_PAGE_ZERO_RUN;
			continue;
		}
		o->batch.page[o->batch.n++] = len > 0 ?
			(struct mig_page){ .gfn = g, .kind = MIG_PAGE_SPARSE, .data = sp,
					   .len = (uint16_t)len } :
			(struct mig_page){ .gfn = g, .kind = zero ? MIG_PAGE_ZERO : MIG_PAGE_DATA,
					   .data = data };
	}
	return flush_batch(o, &m->bytes_sent);
}

/* Steps S6..S8: the pages written since the last collection, into out. */
static int collect(struct mig_out *o, uint64_t *out, uint64_t *count)
{
	bool need_flush = false;
	int n = dirty_log_collect_begin(&o->vm->dirty, &o->vm->hw.gpt, out, o->words, &need_flush);

	if (need_flush)
		vm_flush_gpt(o->vm);
	dirty_log_flush_done(&o->vm->dirty, &o->vm->hw.gpt);
	o->t_collect = netif_now_us();
	if (n < 0)
		return failf(o, MIG_E_INTERNAL, "dirty log collection failed (error %d)", n);
	*count = (uint64_t)n;
	return 0;
}

static int round_end(struct mig_out *o, uint64_t pages, uint64_t remaining)
{
	struct mig_rec r = { .type = MIG_ROUND_END };

	r.round.round = o->rounds;
	r.round.pages = pages;
	r.round.remaining = remaining;
	o->pages_total += pages;
	if (o->rounds == 0)
		o->t_round0 = netif_now_us();
	o->rounds++;
	o->hist->rounds = o->rounds;
	o->hist->live.pages = o->pages_total;
	spin_lock(&o->vm->lock);
	o->vm->mig.round = o->rounds;
	spin_unlock(&o->vm->lock);
	return send_rec(o, &r);
}

static void print_round(struct mig_out *o, const struct mig_round *m, const struct mig_decision *d)
{
	uint64_t rate = mig_rate(m->bytes_sent, m->elapsed_us);	/* B/s */
	uint64_t drate = o->pol.dirty_pps * MIG_PAGE_SIZE;

	o->hist->live.dirty = m->dirtied;
	o->hist->live.rate_Bps = rate;
	o->hist->live.downtime_us = d->downtime_us;

	say(o, "migrate %s: round %u: sent %lu pages (%lu zero), %lu dirty left, "
	    "%lu.%02lu MB/s, guest dirties %lu.%02lu MB/s, downtime ~%lu ms, "
	    "throttle %u%%", o->vm->name, o->rounds - 1, m->pages_sent, m->zero_pages,
	    m->dirtied, rate / 1000000, rate / 10000 % 100, drate / 1000000,
	    drate / 10000 % 100, (d->downtime_us + 999) / 1000, o->pol.throttle_pct);
}

static int start_log(struct mig_out *o)
{
	bool need_flush = false;
	int rc = dirty_log_start(&o->vm->dirty, &o->vm->hw.gpt, &need_flush);

	if (need_flush)
		vm_flush_gpt(o->vm);
	if (need_flush || !rc)
		dirty_log_flush_done(&o->vm->dirty, &o->vm->hw.gpt);
	if (rc)
		return failf(o, MIG_E_INTERNAL, "cannot start the dirty log (error %d)", rc);
	o->logging = true;
	o->t_collect = netif_now_us();
	return 0;
}

/*
 * The hand-over's fixed cost: READY, COMMIT and COMMITTED are about two
 * round trips.  HELLO's round trip measured it first, but that includes the
 * destination taking the guest's frames; TCP's smoothed RTT knows better
 * once data has flowed.
 */
static void learn_handover(struct mig_out *o)
{
	struct tcp_info ti;

	netif_lock();
	tcp_get_info(o->ch.conn, &ti);
	netif_unlock();
	if (ti.srtt_us && 2ull * ti.srtt_us < o->pol.cfg.handover_us)
		o->pol.cfg.handover_us = 2ull * ti.srtt_us;
	if (!o->a->timeout_s)
		o->silence_us = mig_silence_us(o->vm->mem_size, ti.srtt_us);
}

/* Long enough for ROUND_ACK from the destination that it has written
 * round 0: the silence allowed, and 1 s per 100 MB of the guest's memory,
 * which the destination zeroes as round 0 comes (an emulated host manages
 * about 400 MB/s). */
static uint64_t ack_limit_us(const struct mig_out *o)
{
	return o->silence_us + o->vm->mem_size / 100;
}

/*
 * The policy would stop and copy, but the destination has not said that
 * round 0 is written: pausing now would put its writing (all the zeroing
 * of a large idle guest) into the downtime.  Wait for ROUND_ACK at most
 * slice_us, the guest running; the caller then sends what it dirtied
 * meanwhile in another round and asks the policy again.  Past
 * ack_limit_us() after round 0 the migration fails (the guest runs on).
 */
static int await_ack(struct mig_out *o, uint64_t slice_us)
{
	uint64_t start = netif_now_us();
	const struct mig_rec *r;
	int rc;

	if (!o->told_wait)
		say(o, "migrate %s: waiting for %s to write round 0 before pausing the guest",
		    o->vm->name, o->peer);
	o->told_wait = true;
	while (!o->t_acked) {
		uint64_t now = netif_now_us();

		if (now - o->t_round0 > ack_limit_us(o))
			return failf(o, MIG_E_TIMEOUT, "no ROUND_ACK from %s: round 0 not written "
				     "there %llu s after it was sent", o->peer,
				     (unsigned long long)(ack_limit_us(o) / 1000000));
		if (now - start >= slice_us)
			break;
		if ((rc = cancelled(o)))
			return rc;
		netif_poll();
		rc = chan_pull(&o->ch, &r);
		if (rc == 1 && r->type == MIG_ROUND_ACK)
			note_ack(o, r);
		else if (rc == 1)
			return unexpected(o, r);
		else if (rc < 0)
			return conn_error(o, rc);
		else
			netif_wait();
	}
	o->last_progress = netif_now_us();	/* the wait is the ack limit's, not silence */
	return 0;
}

/* How long to wait for ROUND_ACK before another round: as long as we have
 * waited so far, within ACK_SLICE_MIN..ACK_SLICE_MAX, so that a long wait
 * costs few rounds and a short one leaves little dirtied behind. */
static uint64_t ack_slice_us(const struct mig_out *o)
{
	uint64_t waited = netif_now_us() - o->t_round0;

	return waited < ACK_SLICE_MIN ? ACK_SLICE_MIN : waited > ACK_SLICE_MAX ? ACK_SLICE_MAX :
	       waited;
}

/*
 * Pre-copy: rounds until the policy says stop and the destination has
 * written round 0 (ROUND_ACK); rounds go on while it has not.  set holds
 * the next round.
 */
static int precopy(struct mig_out *o)
{
	struct mig_decision d;
	uint64_t waited_from = 0;	/* the last round began after waiting from then */
	int rc;

	memset(o->set, 0xff, o->words * 8);		/* round 0: everything */
	o->hist->live.phase = "precopy";
	for (;;) {
		struct mig_round m = { 0 };
		uint64_t t0 = netif_now_us();

		if ((rc = send_set(o, o->set, &m)) || (rc = collect(o, o->set, &m.dirtied)))
			return rc;
		if ((rc = round_end(o, m.pages_sent, m.dirtied)) || (rc = drain(o)))
			return rc;
		m.elapsed_us = netif_now_us() - t0;
		/* the guest dirtied this set during the wait too; the link only
		 * carried it during the round */
		m.dirty_us = waited_from ? m.elapsed_us + (t0 - waited_from) : 0;
		waited_from = 0;
		learn_handover(o);
		mig_policy_round(&o->pol, &m, &d);
		print_round(o, &m, &d);
		if (o->rounds == 1 && (rc = debug_point(o, MIG_AT_PRECOPY)))
			return rc;
		if (d.action == MIG_ACT_GIVE_UP)
			return failf(o, MIG_E_TIMEOUT, "%s", d.why);
		if (d.action == MIG_ACT_THROTTLE || d.forced)
			say(o, "migrate %s: %s", o->vm->name, d.why);
		if (d.action == MIG_ACT_THROTTLE)
			__atomic_store_n(&o->vm->throttle_pct, d.throttle_pct, __ATOMIC_RELEASE);
		o->hist->live.throttle_pct = o->vm->throttle_pct;
		if (d.action != MIG_ACT_STOP && o->rounds < MIG_ROUNDS_MAX - 1)
			continue;
		if (o->t_acked)
			return 0;
		/* after the stream's last round the ack is waited for in full */
		waited_from = netif_now_us();
		if ((rc = await_ack(o, o->rounds < MIG_ROUNDS_MAX - 1 ? ack_slice_us(o) : UINT64_MAX)))
			return rc;
		if (o->rounds >= MIG_ROUNDS_MAX - 1)
			return 0;
	}
}

/* ---- stop and copy, hand-over ---- */

static int pause_guest(struct mig_out *o)
{
	char err[96];

	if (o->was_paused)
		return 0;
	if (vm_pause(o->vm, err, sizeof(err)))
		return failf(o, MIG_E_STATE, "%s", err);
	o->paused = true;
	return 0;
}

static int send_state(struct mig_out *o)
{
	uint8_t *xsave = o->xsave->bytes;
	uint64_t tsc, clock_ns;
	struct mig_rec r;
	long n;
	int rc;

	for (unsigned int i = 0; i < o->vm->nr_vcpus; i++) {
		r = (struct mig_rec){ .type = MIG_VCPU_STATE };
		r.vcpu.id = i;
		vmstate_save_vcpu(o->vm, i, &r.vcpu.cpu, xsave, &r.vcpu.xsave_len, &r.vcpu.halted);
		r.vcpu.xsave = xsave;
		if ((rc = send_rec(o, &r)))
			return rc;
	}
	r = (struct mig_rec){ .type = MIG_DEVICE_STATE };
	r.dev.data = o->dev;
	/* the clock at the devices' instant: their timers and the RTC are
	 * saved relative to it, and COMMIT's paused_ns counts from it, so on
	 * the destination they go on from where they were, not late by the
	 * hand-over (the TSC, read here too, runs on through a pause) */
	o->t_clock = netif_now_us();
	vmstate_save_time(o->vm, &tsc, &clock_ns);
	n = vmstate_save_devices(o->vm, o->dev, MIG_DEV_STATE_MAX);
	if (n <= 0)
		return failf(o, MIG_E_INTERNAL, "cannot save the devices (error %ld)", n);
	r.dev.len = (uint32_t)n;
	if ((rc = send_rec(o, &r)))
		return rc;
	r = (struct mig_rec){ .type = MIG_TSC };
	r.tsc.guest_tsc = tsc;
	r.tsc.guest_clock_ns = clock_ns;
	if ((rc = send_rec(o, &r)))
		return rc;
	r = (struct mig_rec){ .type = MIG_END };
	r.end.rounds = o->rounds;
	r.end.vcpus = o->vm->nr_vcpus;
	r.end.pages = o->pages_total;
	return send_rec(o, &r);
}

static int stop_and_copy(struct mig_out *o)
{
	struct mig_round m = { 0 };
	uint64_t more;
	char why[128];
	int rc;

	if ((rc = pause_guest(o)))
		return rc;
	o->hist->live.phase = "stop-copy";
	o->t_pause = netif_now_us();
	if ((rc = debug_point(o, MIG_AT_STOPCOPY)))
		return rc;
	if (o->logging) {
		if ((rc = collect(o, o->more, &more)))
			return rc;
		for (size_t i = 0; i < o->words; i++)
			o->set[i] |= o->more[i];
	}
	if ((rc = send_set(o, o->set, &m)) || (rc = round_end(o, m.pages_sent, 0)))
		return rc;
	/* as the destination will check it: if it fails here too, the
	 * source's devices or guest are at odds with memory, not the copy */
	if (vmstate_check_devices(o->vm, why, sizeof(why)))
		say(o, "migrate %s: warning: the device state does not match memory here "
		    "either: %s", o->vm->name, why);
	o->t_state = netif_now_us();
	o->last_pages = m.pages_sent;
	return send_state(o);
}

_Static_assert(MIG_FRAMES_MAX == 4 + GNET_CARRY_BYTES, "FRAMES holds what gnet writes");
_Static_assert(MIG_MODULES_MAX + 1 == VM_MODULES_MAX && MIG_KERNEL_MAX + 1 == sizeof(((struct vm *)0)->initrd),
	       "HELLO carries a guest's module names whole");

/* Frames that came for the guest since its device state was saved follow
 * it in FRAMES, so that they are not lost with the source's copy (those
 * that come after COMMIT still are).  None, or none that could be
 * written: nothing is sent, and the frames stay for the guest here. */
static int send_late_frames(struct mig_out *o)
{
	struct mig_rec r = { .type = MIG_FRAMES };
	long n = vmstate_save_late_frames(o->vm, o->dev, MIG_FRAMES_MAX);
	uint32_t count;

	if (n <= 4)
		return 0;
	memcpy(&count, o->dev, sizeof(count));	/* the list's, little-endian */
	o->late_frames = count;
	r.frames.len = (uint32_t)n;
	r.frames.data = o->dev;
	return send_rec(o, &r);
}

static int handover(struct mig_out *o)
{
	struct mig_rec r = { .type = MIG_COMMIT };
	const struct mig_rec *in;
	int rc;

	o->t_sent = netif_now_us();
	o->hist->live.phase = "handover";
	if ((rc = wait_rec(o, MIG_READY, &in)))
		return rc;
	o->t_ready = netif_now_us();
	if ((rc = debug_point(o, MIG_AT_READY)) || (rc = send_late_frames(o)))
		return rc;
	/* after COMMIT it may run there: none of its frames goes from here */
	o->tx_dropped = vmstate_drop_tx_waiting(o->vm);
	r.commit.paused_ns = (netif_now_us() - o->t_clock) * 1000;	/* since the TSC record's */
	r.commit.flags = o->was_paused ? MIG_COMMIT_PAUSED : 0;
	if ((rc = chan_queue(&o->ch, &r)))
		return failf(o, MIG_E_INTERNAL, "cannot encode COMMIT");
	o->commit_sent = true;		/* once TCP has a byte of it, it may arrive */
	rc = flush(o);
	if (rc && o->ch.tx_off == 0)
		o->commit_sent = false;
	if (rc || (rc = debug_point(o, MIG_AT_COMMIT)))
		return rc;
	return wait_rec(o, MIG_COMMITTED, &in);
}

/* ---- the whole migration ---- */

static int claim(struct mig_out *o)
{
	struct vm *vm = vm_find(o->a->name);
	int rc = 0;

	if (!vm) {
		refuse(o, "no guest named '%s'", o->a->name);
		return -ENOENT;
	}
	spin_lock(&vm->lock);
	if (vm->mig_owned || vm->mig.kind == VM_MIG_IN_DOUBT)
		rc = -EBUSY;
	else if (vm->state != VM_RUNNING && vm->state != VM_PAUSED)
		rc = -EINVAL;
	if (!rc) {
		vm->mig_owned = true;
		vm->mig.kind = VM_MIG_OUT;
		vm->mig.id = o->id;
		vm->mig.round = 0;
		snprintf(vm->mig.peer, sizeof(vm->mig.peer), "%s", o->peer);
		vm->mig.peer_ip = o->a->ip;
		vm->mig.peer_port = o->a->port;
		o->was_paused = vm->state == VM_PAUSED;
	}
	spin_unlock(&vm->lock);
	if (rc == -EBUSY)
		refuse(o, "'%s' is %s", vm->name,
		       vm->mig_owned ? "migrating already" : "in doubt from an earlier migration");
	else if (rc)
		refuse(o, "cannot migrate '%s': it is %s (running or paused only)",
		       vm->name, vm_state_name(vm->state));
	o->vm = vm;
	return rc;
}

static void release(struct mig_out *o, enum vm_mig_kind kind)
{
	bool need_flush = false;

	__atomic_store_n(&o->vm->throttle_pct, 0, __ATOMIC_RELEASE);
	if (o->logging && !dirty_log_stop(&o->vm->dirty, &o->vm->hw.gpt, &need_flush) &&
	    need_flush) {
		vm_flush_gpt(o->vm);
		dirty_log_flush_done(&o->vm->dirty, &o->vm->hw.gpt);
	}
	spin_lock(&o->vm->lock);
	o->vm->mig.kind = kind;
	o->vm->mig_owned = false;
	spin_unlock(&o->vm->lock);
}

static void finish_ok(struct mig_out *o)
{
	uint64_t now = netif_now_us(), total = now - o->t_start, down = now - o->t_pause;
	uint64_t sent = o->ch.bytes_out, mem = o->vm->mem_size;
	uint64_t x100 = mem ? sent * 100 / mem : 0;

	o->hist->outcome = MIG_DONE;
	o->hist->total_us = total;
	o->hist->downtime_us = down;
	o->hist->rounds = o->rounds;
	o->hist->bytes = sent;
	say(o, "migrate %s: done in %lu.%03lu s, downtime %lu.%03lu ms, %u rounds, %lu bytes "
	    "sent for %lu bytes of memory (%lu.%02lux)", o->vm->name, total / 1000000,
	    total / 1000 % 1000, down / 1000, down % 1000, o->rounds, sent, mem,
	    x100 / 100, x100 % 100);
	say(o, "migrate %s: downtime = %lu us last round (%lu pages) + %lu us state + %lu us "
	    "until READY + %lu us commit", o->vm->name, o->t_state - o->t_pause, o->last_pages,
	    o->t_sent - o->t_state, o->t_ready - o->t_sent, now - o->t_ready);
	if (o->late_frames)
		say(o, "migrate %s: %u frame%s that came for it after its state was saved "
		    "went with it", o->vm->name, o->late_frames, o->late_frames == 1 ? "" : "s");
	if (o->tx_dropped)
		say(o, "migrate %s: %u frame%s it sent that still waited for the wire here "
		    "dropped at COMMIT", o->vm->name, o->tx_dropped, o->tx_dropped == 1 ? "" : "s");
	release(o, VM_MIG_NONE);
	vm_destroy(o->vm);
}

static void finish_failed(struct mig_out *o)
{
	char err[96];
	bool doubt = o->commit_sent && o->fail.code != MIG_OK &&
		     o->ch.st.phase != MIG_PH_ABORTED;

	o->hist->rounds = o->rounds;
	o->hist->bytes = o->ch.bytes_out;
	o->hist->total_us = netif_now_us() - o->t_start;
	snprintf(o->hist->why, sizeof(o->hist->why), "%s", o->fail.msg);
	if (doubt) {
		mig_doubt_note(o->id, o->ch.mode == CHAN_SEALED ? &o->ch.peer : NULL,
			       o->was_paused);
		o->hist->outcome = MIG_IN_DOUBT;
		release(o, VM_MIG_IN_DOUBT);
		say(o, "migrate %s: in doubt: %s; %s is paused here: check %s, then "
		    "`resume %s` or `destroy %s`", o->vm->name, o->fail.msg, o->vm->name,
		    o->peer, o->vm->name, o->vm->name);
		return;
	}
	o->hist->outcome = o->fail.code == MIG_E_CANCELLED ? MIG_CANCELLED :
			   o->ch.st.phase == MIG_PH_REFUSED ? MIG_REFUSED : MIG_FAILED;
	chan_abort(&o->ch, o->fail.code, o->fail.msg);
	release(o, VM_MIG_NONE);
	if (o->paused && vm_resume(o->vm, err, sizeof(err)))
		say(o, "migrate %s: resuming failed: %s", o->vm->name, err);
	if (!o->accepted) {
		refuse(o, "%s", o->fail.msg);	/* nothing moved */
		return;
	}
	say(o, "migrate %s: failed: %s; %s %s here as before", o->vm->name, o->fail.msg,
	    o->vm->name, o->was_paused ? "stays paused" : "runs");
}

static int run(struct mig_out *o)
{
	struct mig_policy_cfg cfg = o->a->policy;
	int rc;

	o->words = dirty_bitmap_words(o->vm->nr_frames);
	o->set = calloc(o->words, 8);
	o->more = calloc(o->words, 8);
	o->dev = malloc(MIG_DEV_STATE_MAX);
	o->xsave = memalign(64, sizeof(*o->xsave));
	if (!o->set || !o->more || !o->dev || !o->xsave)
		return failf(o, MIG_E_INTERNAL, "out of memory for the page bitmaps");
	if (chan_init(&o->ch, MIG_SRC, NULL, REC_CAP))
		return failf(o, MIG_E_INTERNAL, "out of memory for the stream");
	o->last_progress = o->t_start;
	cfg.cap_Bps = o->a->bandwidth_Bps;
	cfg.mem_bytes = o->vm->mem_size;
	cfg.state_bytes = o->vm->nr_vcpus * (MIG_HDR_SIZE + 8 + MIG_CPU_STATE_WIRE + 1024) +
			  MIG_HDR_SIZE + 8192 + 4 * MIG_HDR_SIZE + 48;
	mig_policy_init(&o->pol, &cfg);
	mig_pace_init(&o->pace, o->a->bandwidth_Bps, netif_now_us());
	if (o->a->insecure) {
		say(o, "migrate %s: warning: insecure: the guest's memory and state cross the "
		    "network in the clear, to a peer no key vouches for", o->vm->name);
		snprintf(o->hist->key, sizeof(o->hist->key), "insecure");
	} else if ((rc = pin_peer(o))) {
		return rc;
	}
	if ((rc = connect_peer(o)) || (!o->a->insecure && (rc = handshake(o))) ||
	    (rc = hello(o)))
		return rc;
	if (o->a->insecure)
		say(o, "migrate %s: to %s, id %016lx, %lu MiB, insecure (plaintext), HELLO answered "
		    "in %lu.%03lu ms", o->vm->name, o->peer, o->id, o->vm->mem_size >> 20,
		    o->hello_us / 1000, o->hello_us % 1000);
	else
		say(o, "migrate %s: to %s, id %016lx, %lu MiB, peer %s %s (sealed, handshake "
		    "%lu.%03lu ms), HELLO answered in %lu.%03lu ms", o->vm->name, o->peer, o->id,
		    o->vm->mem_size >> 20, o->pin.name, o->pin.fp_text, o->hs_us / 1000,
		    o->hs_us % 1000, o->hello_us / 1000, o->hello_us % 1000);
	if (!o->was_paused && (rc = start_log(o)))
		return rc;
	if (o->was_paused)
		memset(o->set, 0xff, o->words * 8);
	else if ((rc = precopy(o)))
		return rc;
	if ((rc = stop_and_copy(o)))
		return rc;
	return handover(o);
}

struct mig_out *mig_out_begin(const struct mig_out_args *a, int *rc)
{
	struct mig_out *o = calloc(1, sizeof(*o));
	char ip[16];

	if (!o) {
		a->sink->error(a->sink->ctx, "no memory for a migration");
		*rc = -ENOMEM;
		return NULL;
	}
	o->a = a;
	o->id = random_id();
	o->t_start = netif_now_us();
	net_format_ipv4(a->ip, ip);
	snprintf(o->peer, sizeof(o->peer), "%s:%u", ip, a->port);
	if ((*rc = claim(o))) {
		free(o);
		return NULL;
	}
	o->silence_us = a->timeout_s ? a->timeout_s * 1000000ull :
			mig_silence_us(o->vm->mem_size, 0);	/* refined by learn_handover */
	o->hist = mig_history_add(o->id, true, o->vm->name, o->peer, o->vm->mem_size);
	o->hist->live.start_us = o->t_start;
	o->hist->live.phase = "connecting";
	return o;
}

int mig_out_finish(struct mig_out *o)
{
	int rc;

	/* the clocks start now: the task may begin well after the command
	 * (ferry.rc takes no background steps until it ends) */
	o->t_start = o->hist->live.start_us = netif_now_us();
	rc = run(o);
	if (rc == 0)
		finish_ok(o);
	else
		finish_failed(o);
	chan_close(&o->ch, rc != 0);
	free(o->set);
	free(o->more);
	free(o->dev);
	free(o->xsave);
	free(o);
	return rc ? -ECANCELED : 0;
}

void mig_out_abandon(struct mig_out *o, const char *why)
{
	o->hist->outcome = MIG_FAILED;
	snprintf(o->hist->why, sizeof(o->hist->why), "%s", why);
	release(o, VM_MIG_NONE);
	free(o);
}

int mig_out_run(const struct mig_out_args *a)
{
	int rc;
	struct mig_out *o = mig_out_begin(a, &rc);

	return o ? mig_out_finish(o) : rc;
}
