/* SPDX-License-Identifier: BSD-2-Clause */
/* Guests' NICs on ferry's switch: see gnet.h. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "hv/gnet.h"
#include "hv/lib/log.h"
#include "hv/lib/spinlock.h"
#include "hv/net/cksum.h"
#include "hv/net/gro.h"
#include "hv/net/gso.h"
#include "hv/vdev/snap.h"
#include "hv/netif.h"
#include "hv/vm.h"
#include "hv/vm_devices.h"

#define FRAME_MAX	1518		/* what the switch lets through, tagged */

struct slot {
	uint16_t len;
	bool partial;			/* tx: NETIF_CSUM_PARTIAL */
	/* tx: the first of group segments of one TCP super-frame (1: a
	 * frame of its own), each with hlen bytes of headers and mss of
	 * payload but the last: what netif_switch_tso may send as TSO */
	uint16_t group, mss;
	uint8_t hlen;
	bool valid;			/* rx: its checksums are known good */
	uint8_t data[FRAME_MAX];
};
_Static_assert(GSO_PLAIN_MAX <= FRAME_MAX, "a segment fits a slot");

/* Single producer, single consumer: head and tail only grow. */
struct fq {
	uint32_t head, tail;		/* (a) consumer's, producer's */
	struct slot *slot;		/* GNET_QLEN */
};

/* Frames that waited for the guest on a migration's source and came along
 * in its device state: delivered before the rx queue's. */
struct gnet_carry {
	uint32_t n, next;		/* frames; the next to deliver */
	struct slot slot[];
};

/* Ethernet header and the longest IPv4 and TCP headers. */
#define HDR_MAX		(14 + 60 + 60)

/* A super-frame of more segments than the tx queue holds, going in rounds
 * (tx_rounds): known again by its length, MSS and headers when the NIC
 * offers it anew; that much of it identifies a TCP segment's bytes. */
struct tx_big {
	uint32_t len;			/* 0: none */
	uint32_t done;			/* segments queued so far */
	uint16_t mss, hlen;
	uint8_t hdr[HDR_MAX];
};

struct gport {
	struct vm *vm;
	int port;			/* on host_if.sw */
	struct fq tx, rx;
	struct tx_big big;		/* under the guest's dev_lock, as tx's producer */
	struct gnet_carry *carry;	/* under deliver_lock; NULL: none */
	uint32_t late_from;		/* under deliver_lock: rx index past what */
	uint32_t saved_n;		/* the last device save took, and how many */
	bool saved;
	struct gnet_stats st;		/* all but st.sw (the switch's); under the side's lock */
	struct gro gro;			/* under deliver_lock, as is: */
	struct vnet_piece pc[GRO_MAX_SEGS + 1];	/* its pieces, for the NIC */
	/* (a) Its frames wait for room on the wire: the shell CPU sends
	 * them in turn with other such ports' (gnet_tx_round), and this
	 * guest's own exits leave them to it while others wait too. */
	bool serve;
	bool unstall;			/* (a) the round took some: wake its NIC */
	unsigned int round;		/* announce round due next */
	bool announcing;
	uint64_t announce_t0;		/* us */
};

static struct gport *ports[SW_MAX_PORTS];	/* by switch port; written under the
						 * network lock, read atomically */
/* Each port's guest, beside ports[] (written with it): find() looks here,
 * so it never touches another guest's port, which that guest's
 * gnet_detach may be freeing meanwhile (find runs without the network
 * lock, on any guest's vCPU). */
static struct vm *port_vm[SW_MAX_PORTS];
static spinlock_t deliver_lock = SPINLOCK_INIT;	/* gnet_deliver, gnet_detach */
static bool pending;				/* (a) some rx queue has frames */

/* ---- queues ------------------------------------------------------------- */

static struct slot *fq_space(struct fq *q)
{
	uint32_t head = __atomic_load_n(&q->head, __ATOMIC_ACQUIRE);

	return q->tail - head < GNET_QLEN ? &q->slot[q->tail % GNET_QLEN] : NULL;
}

static void fq_push(struct fq *q)
{
	__atomic_store_n(&q->tail, q->tail + 1, __ATOMIC_RELEASE);
}

static struct slot *fq_peek(struct fq *q)
{
	uint32_t tail = __atomic_load_n(&q->tail, __ATOMIC_ACQUIRE);

	return q->head != tail ? &q->slot[q->head % GNET_QLEN] : NULL;
}

static void fq_pop(struct fq *q)
{
	__atomic_store_n(&q->head, q->head + 1, __ATOMIC_RELEASE);
}

/* ---- ports -------------------------------------------------------------- */

/* vm's own port, which only vm's gnet_detach removes: its callers run for
 * vm (its vCPU, its device save) or under the network lock. */
static struct gport *find(const struct vm *vm)
{
	for (int i = 0; i < SW_MAX_PORTS; i++)
		if (__atomic_load_n(&port_vm[i], __ATOMIC_ACQUIRE) == vm)
			return __atomic_load_n(&ports[i], __ATOMIC_ACQUIRE);
	return NULL;
}

/* The stack leaves TCP checksums to the NIC (tx_csum), and so do guests'
 * TCP segments (NETIF_CSUM_PARTIAL): such a frame that goes to a guest
 * gets its checksum here (the field holds the pseudo-header sum, as for
 * the NIC). */
static bool finish_csum(uint8_t *f, size_t len)
{
	bool ours = host_if.nic && host_if.nic->tx_csum && !memcmp(f + 6, host_if.nic->mac, 6);

	if (!(ours || netif_csum_partial()) || !nic_frame_is_tcp4(f, len))
		return false;
	csum_store(f + NET_TCP_OFF + 16, csum_finish(csum_add(0, f + NET_TCP_OFF,
							      len - NET_TCP_OFF)));
	return true;
}

static uint32_t fq_room(const struct fq *q)
{
	return GNET_QLEN - (q->tail - __atomic_load_n(&q->head, __ATOMIC_ACQUIRE));
}

/* The switch's out() for a guest port: into its rx queue. */
static void port_out(void *ctx, const uint8_t *frame, size_t len)
{
	struct gport *g = ctx;
	struct slot *s = fq_space(&g->rx);

	if (!s || len > FRAME_MAX) {
		g->st.rx_qfull++;
		return;
	}
	if ((frame[0] & 1) && GNET_QLEN - fq_room(&g->rx) >= GNET_FLOOD_QMAX) {
		g->st.rx_flood_drop++;	/* the rest of the queue is for unicast */
		return;
	}
	if (__atomic_load_n(&g->vm->state, __ATOMIC_ACQUIRE) != VM_RUNNING)
		g->st.rx_waited++;	/* it waits here for the guest to run */
	memcpy(s->data, frame, len);
	s->len = (uint16_t)len;
	/* known good: summed here just now, or checked by the NIC */
	s->valid = finish_csum(s->data, len) ||
		   (netif_rx_flags() & (NET_RX_IP_CSUM_OK | NET_RX_TCP_CSUM_OK)) ==
			   (NET_RX_IP_CSUM_OK | NET_RX_TCP_CSUM_OK);
	fq_push(&g->rx);
	__atomic_store_n(&pending, true, __ATOMIC_RELEASE);
}

static struct gport *gport_new(struct vm *vm)
{
	struct gport *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->vm = vm;
	g->tx.slot = malloc(GNET_QLEN * sizeof(struct slot));
	g->rx.slot = malloc(GNET_QLEN * sizeof(struct slot));
	if (!g->tx.slot || !g->rx.slot) {
		free(g->tx.slot);
		free(g->rx.slot);
		free(g);
		return NULL;
	}
	return g;
}

static void gport_free(struct gport *g)
{
	free(g->carry);
	free(g->tx.slot);
	free(g->rx.slot);
	free(g);
}

int gnet_attach(struct vm *vm)
{
	struct gport *g = gport_new(vm);
	int port;

	if (!g)
		return -ENOMEM;
	netif_lock();
	port = sw_add_port(&host_if.sw, SW_GUEST, vm->mac, 0, port_out, g);
	if (port >= 0 && vm->state == VM_INCOMING)
		sw_set_dormant(&host_if.sw, port, true);	/* until it arrives */
	if (port >= 0) {
		g->port = port;
		__atomic_store_n(&ports[port], g, __ATOMIC_RELEASE);
		__atomic_store_n(&port_vm[port], vm, __ATOMIC_RELEASE);	/* last: find sees it whole */
	}
	netif_unlock();
	if (port < 0)
		gport_free(g);
	return port < 0 ? port : 0;
}

void gnet_detach(struct vm *vm)
{
	struct gport *g;

	netif_lock();
	g = find(vm);
	if (g) {
		sw_del_port(&host_if.sw, g->port);
		__atomic_store_n(&port_vm[g->port], NULL, __ATOMIC_RELEASE);
		__atomic_store_n(&ports[g->port], NULL, __ATOMIC_RELEASE);
	}
	netif_unlock();
	if (!g)
		return;
	spin_lock(&deliver_lock);	/* no delivery still looks at it */
	spin_unlock(&deliver_lock);
	gport_free(g);
}

bool gnet_mac_taken(const uint8_t mac[6])
{
	bool taken;

	netif_lock();
	taken = sw_lookup(&host_if.sw, mac) >= 0;
	netif_unlock();
	return taken;
}

/* ---- frames ------------------------------------------------------------- */

/* Segments [from, to) of a planned frame into the tx queue, which has room
 * for them, published at once: gnet_flush sees them whole.  They are one
 * group, but for a first segment with CWR, which goes alone. */
static void tx_queue_segs(struct gport *g, const uint8_t *frame, const struct gso_req *r,
			  const struct gso_plan *p, unsigned int from, unsigned int to)
{
	unsigned int first = from > gso_tso_first(p) ? from : gso_tso_first(p);

	for (unsigned int k = from; k < to; k++) {
		struct slot *s = &g->tx.slot[(g->tx.tail + k - from) % GNET_QLEN];

		s->len = (uint16_t)gso_segment(frame, r, p, k, s->data);
		s->partial = p->partial;
		s->group = (uint16_t)(k < first ? 1 : k == first ? to - first : 0);
		s->mss = r->mss;
		s->hlen = p->hlen <= 255 ? (uint8_t)p->hlen : 0;
	}
	__atomic_store_n(&g->tx.tail, g->tx.tail + (to - from), __ATOMIC_RELEASE);
}

static bool big_is(const struct tx_big *b, const uint8_t *frame, size_t len,
		   const struct gso_req *r, const struct gso_plan *p)
{
	return b->len == len && b->mss == r->mss && b->hlen == p->hlen &&
	       !memcmp(b->hdr, frame, p->hlen);
}

/*
 * A super-frame of more segments than the queue holds (a small MSS, which
 * a NIC cuts as readily as a large one): as many as fit at a time, -EAGAIN
 * until the last, so the NIC keeps the frame and offers it again once
 * gnet_flush has emptied the queue; the segments already queued are not
 * queued again.  A different frame starts afresh: the NIC was reset, and
 * the old one's rest is lost as it would be in a NIC's ring.  (A migration
 * does not carry the rounds: the destination sends the frame whole, and
 * the peer's TCP drops the part it has.)
 */
static int tx_rounds(struct gport *g, const uint8_t *frame, size_t len, const struct gso_req *r,
		     const struct gso_plan *p)
{
	struct tx_big *b = &g->big;
	unsigned int n;

	if (!big_is(b, frame, len, r, p)) {
		*b = (struct tx_big){ .len = (uint32_t)len, .mss = r->mss,
				      .hlen = (uint16_t)p->hlen };
		memcpy(b->hdr, frame, p->hlen);
	}
	n = p->segs - b->done < fq_room(&g->tx) ? p->segs - b->done : fq_room(&g->tx);
	tx_queue_segs(g, frame, r, p, b->done, b->done + n);
	b->done += n;
	if (b->done < p->segs) {
		g->st.tx_qfull++;
		return -EAGAIN;		/* the NIC waits for gnet_flush */
	}
	b->len = 0;
	return 0;
}

int gnet_guest_tx(struct vm *vm, const uint8_t *frame, size_t len, const struct gso_req *r)
{
	struct gport *g = find(vm);
	struct gso_plan p;

	if (!g)
		return 0;		/* no port (detached): nowhere to go */
	if (gso_plan(frame, len, r, &p))
		return -EINVAL;
	if (p.segs > GNET_QLEN)
		return tx_rounds(g, frame, len, r, &p);
	if (fq_room(&g->tx) < p.segs) {
		g->st.tx_qfull++;
		return -EAGAIN;		/* the NIC waits for gnet_flush */
	}
	tx_queue_segs(g, frame, r, &p, 0, p.segs);
	return 0;
}

/* Does s start a group of segments that may go as TSO frames? */
static bool tso_group(const struct slot *s)
{
	return s->group >= 2 && s->partial && s->hlen && s->mss;
}

/* The group of segments at the head of g's tx queue as TSO frames, if
 * they may go so, NIC_TSO_IOV_MAX segments at a time: how many went. */
static unsigned int tx_tso(struct gport *g, const struct slot *s)
{
	struct netif_seg seg[NIC_TSO_IOV_MAX];
	unsigned int n = s->group, done = 0;

	if (!tso_group(s))
		return 0;
	while (n - done >= 2) {
		unsigned int k = n - done < NIC_TSO_IOV_MAX ? n - done : NIC_TSO_IOV_MAX, sent;

		for (unsigned int i = 0; i < k; i++) {
			const struct slot *x = &g->tx.slot[(g->tx.head + done + i) % GNET_QLEN];

			seg[i] = (struct netif_seg){ x->data, x->len };
		}
		sent = netif_switch_tso(g->port, seg, k, s->hlen, s->mss);
		done += sent;
		if (sent < k)
			break;
	}
	return done;
}

/* Does a port other than except (NULL: any) wait for the wire?  Under
 * the network lock, or on the shell CPU, where every gnet_detach runs: no
 * port is being freed. */
static bool port_waits(const struct gport *except)
{
	for (int i = 0; i < SW_MAX_PORTS; i++) {
		const struct gport *o = __atomic_load_n(&ports[i], __ATOMIC_ACQUIRE);

		if (o && o != except && __atomic_load_n(&o->serve, __ATOMIC_ACQUIRE))
			return true;
	}
	return false;
}

/* Has g's tx queue frames?  (Its head is the network lock's side: read
 * atomically, from gnet_deliver.) */
static bool tx_queued(const struct gport *g)
{
	return __atomic_load_n(&g->tx.tail, __ATOMIC_SEQ_CST) !=
	       __atomic_load_n(&g->tx.head, __ATOMIC_SEQ_CST);
}

/*
 * Under the network lock: g's tx queue through the switch, oldest first,
 * until it is empty (true), or budget frames went, or the next one is for
 * the wire and may not go now (false): wire is false, or the NIC has no
 * room beyond what ferry keeps for its own frames (netif_wire_room).  A
 * frame for another guest or the stack goes at once.  What stays waits,
 * as in a NIC's ring: the guest's NIC stops taking frames when the queue
 * is full, and its driver when its own ring is; nothing is dropped.
 */
static bool drain(struct gport *g, bool wire, unsigned int budget)
{
	struct slot *s;

	while ((s = fq_peek(&g->tx))) {
		unsigned int n;

		/* the head of a super-frame's segments waits for room for a
		 * TSO frame, not only for itself: sent alone, they would all
		 * go one by one */
		if (!budget || (netif_for_wire(g->port, s->data, s->len) &&
				(!wire || !netif_wire_room(tso_group(s) ? NIC_TSO_MAX : s->len))))
			return false;
		n = tx_tso(g, s);	/* each TSO frame while the wire has room */
		if (n) {
			if (n < s->group)	/* the rest is a group of its own */
				g->tx.slot[(g->tx.head + n) % GNET_QLEN].group =
					(uint16_t)(s->group - n);
			__atomic_store_n(&g->tx.head, g->tx.head + n, __ATOMIC_RELEASE);
			budget = n < budget ? budget - n : 0;
			continue;
		}
		netif_switch_input(g->port, s->data, s->len, s->partial ? NETIF_CSUM_PARTIAL : 0);
		fq_pop(&g->tx);
		budget--;
	}
	return true;
}

/* Under the network lock. */
static void wait_for_wire(struct gport *g)
{
	if (!__atomic_exchange_n(&g->serve, true, __ATOMIC_SEQ_CST))
		g->st.tx_waits++;
}

/* Under the network lock, g's queue found empty: no longer served, unless
 * a frame came meanwhile (the NIC woken in gnet_deliver queues them
 * without this lock, then sets serve: one of the two sees the other). */
static void served(struct gport *g)
{
	__atomic_store_n(&g->serve, false, __ATOMIC_SEQ_CST);
	if (tx_queued(g))
		__atomic_store_n(&g->serve, true, __ATOMIC_SEQ_CST);
}

/*
 * Under the network lock: while the NIC takes nothing (its link down, or
 * wedged: netif_wire_stuck), the frames for the wire at the head of g's
 * queue are dropped and counted, as a NIC's full ring drops, so that the
 * guest's driver does not wait on them for ever (Linux calls a queue
 * stuck after 5 s).  Frames for guests and ferry behind them then go.
 */
/* Under the network lock: the frames for the wire at the head of g's
 * queue dropped and counted; how many. */
static unsigned int drop_wire_head(struct gport *g)
{
	unsigned int n = 0;
	struct slot *s;

	for (; (s = fq_peek(&g->tx)) && netif_for_wire(g->port, s->data, s->len); n++)
		fq_pop(&g->tx);
	g->st.tx_wire_drops += n;
	return n;
}

static void drop_stale(struct gport *g)
{
	if (!netif_wire_stuck())
		return;
	drop_wire_head(g);
	__atomic_store_n(&g->unstall, true, __ATOMIC_RELEASE);
	__atomic_store_n(&pending, true, __ATOMIC_RELEASE);
}

bool gnet_flush(struct vm *vm)
{
	struct gport *g = vm->nic ? find(vm) : NULL;
	bool empty;

	if (!g || !fq_peek(&g->tx))
		return true;
	vm_arrival_note(vm, VM_ARR_TX);
	netif_lock();
	/* while others wait for the wire, this guest's frames for it wait
	 * their turn in the round, not ahead of them */
	empty = drain(g, !port_waits(g), UINT_MAX);
	if (empty)
		served(g);
	else
		wait_for_wire(g);
	netif_uplink_kick();
	netif_unlock();
	gnet_deliver();
	return empty;
}

unsigned int gnet_tx_discard(struct vm *vm)
{
	struct gport *g = vm->nic ? find(vm) : NULL;
	unsigned int n = 0;

	if (!g)
		return 0;
	netif_lock();
	do			/* what is not for the wire goes */
		n += drop_wire_head(g);
	while (!drain(g, false, UINT_MAX));
	served(g);
	netif_unlock();
	gnet_deliver();
	return n;
}

bool gnet_tx_backlog(void)
{
	return port_waits(NULL);
}

#define TX_QUANTUM	32	/* frames a waiting port sends per turn */

void gnet_tx_round(void)
{
	static unsigned int first;	/* the port served first: it turns */
	unsigned int next = first;
	bool moved = true;

	for (int pass = 0; moved && pass < GNET_QLEN / TX_QUANTUM; pass++) {
		moved = false;
		for (unsigned int k = 0; k < SW_MAX_PORTS; k++) {
			unsigned int i = (first + k) % SW_MAX_PORTS;
			struct gport *g = ports[i];
			uint32_t head;

			if (!g || !__atomic_load_n(&g->serve, __ATOMIC_ACQUIRE))
				continue;
			head = g->tx.head;
			if (drain(g, true, TX_QUANTUM))
				served(g);
			if (g->tx.head == head) {
				if (!pass && __atomic_load_n(&g->serve, __ATOMIC_ACQUIRE))
					drop_stale(g);
				continue;
			}
			if (!moved && !pass)
				next = i + 1;	/* next round, the one after it first */
			moved = true;
			__atomic_store_n(&g->unstall, true, __ATOMIC_RELEASE);
			__atomic_store_n(&pending, true, __ATOMIC_RELEASE);
		}
	}
	first = next % SW_MAX_PORTS;
}

/* Into the guest's NIC, oldest first.  A guest that is paused, or still
 * arriving, leaves the rest waiting (a full queue drops what comes next):
 * they reach it when it runs, or travel with it (gnet_rx_snapshot).  So
 * does a NIC whose driver has not posted receive buffers for it (-ENOBUFS),
 * until it posts more (gnet_rx_posted), as a NIC's own ring would hold
 * them: a burst that finds the ring dry is not lost. */
static int deliver(struct gport *g, struct slot *s)
{
	int rc = vm_nic_rx(g->vm, s->data, s->len, s->valid);

	if (rc == -EBUSY || rc == -ENOBUFS)
		return -EBUSY;
	if (rc)
		g->st.rx_nic_drop++;
	return 0;
}

/* The longest run of frames at the rx queue's head that join into one
 * super-frame (hv/net/gro.h): how many, 0 if the head cannot start one.
 * Those that joined had their checksums checked, so they stay marked. */
static unsigned int gather(struct gport *g)
{
	uint32_t tail = __atomic_load_n(&g->rx.tail, __ATOMIC_ACQUIRE), i;
	unsigned int n = 0;

	gro_reset(&g->gro);
	for (i = g->rx.head; i != tail; i++, n++) {
		struct slot *s = &g->rx.slot[i % GNET_QLEN];

		if (!gro_add(&g->gro, s->data, s->len, s->valid))
			break;
		s->valid = true;
	}
	return n;
}

/* The n frames gathered, as one super-frame. */
static int deliver_gro(struct gport *g, unsigned int n)
{
	struct vnet_piece *pc = g->pc;
	struct gro *r = &g->gro;
	int rc;

	gro_finish(r);
	pc[0] = (struct vnet_piece){ r->hdr, r->hlen };
	for (unsigned int k = 0; k < n; k++)
		pc[k + 1] = (struct vnet_piece){ r->piece[k].p, r->piece[k].len };
	rc = vm_nic_rx_frame(g->vm, &(struct vnet_rx_frame){ .piece = pc, .nr = n + 1,
		.gso_size = r->mss, .hdr_len = r->hlen, .segs = n });
	if (rc == -ENOBUFS)
		return -EBUSY;
	if (rc && rc != -EBUSY && rc != -EMSGSIZE)
		g->st.rx_nic_drop += n;
	return rc && rc != -EBUSY && rc != -EMSGSIZE ? 0 : rc;
}

/* A guest whose driver takes super-frames (GUEST_TSO4) gets runs of one
 * connection's segments joined; one whose next buffer is too small for
 * them gets them one by one. */
static void deliver_port(struct gport *g)
{
	struct gnet_carry *c = g->carry;
	unsigned int n;
	bool gso;

	for (; c && c->next < c->n; c->next++)
		if (deliver(g, &c->slot[c->next]))
			return;
	if (c) {
		g->carry = NULL;
		free(c);
	}
	gso = fq_peek(&g->rx) && vm_nic_rx_gso(g->vm);
	while (fq_peek(&g->rx)) {
		n = gso ? gather(g) : 0;
		if (n >= 2) {
			int rc = deliver_gro(g, n);

			if (rc == -EBUSY)
				return;
			if (rc != -EMSGSIZE) {
				for (; n; n--)
					fq_pop(&g->rx);
				continue;
			}
		}
		do {
			if (deliver(g, fq_peek(&g->rx)))
				return;
			fq_pop(&g->rx);
		} while (n > 1 && --n);
	}
}

void gnet_deliver(void)
{
	if (!__atomic_load_n(&pending, __ATOMIC_ACQUIRE))
		return;
	spin_lock(&deliver_lock);
	__atomic_store_n(&pending, false, __ATOMIC_RELEASE);
	for (int i = 0; i < SW_MAX_PORTS; i++) {
		struct gport *g = __atomic_load_n(&ports[i], __ATOMIC_ACQUIRE);

		if (!g)
			continue;
		deliver_port(g);
		/* the round made room in its queue: its NIC, if it stopped on
		 * a full one, takes up where it stopped, and the frames it
		 * queues go in the next round */
		if (__atomic_exchange_n(&g->unstall, false, __ATOMIC_ACQ_REL)) {
			vm_nic_tx_unstall(g->vm);
			if (tx_queued(g))
				__atomic_store_n(&g->serve, true, __ATOMIC_SEQ_CST);
		}
	}
	spin_unlock(&deliver_lock);
}

void gnet_wake(struct vm *vm)
{
	if (!vm->nic)
		return;
	__atomic_store_n(&pending, true, __ATOMIC_RELEASE);
	gnet_deliver();
	vm_nic_tx_resume(vm);		/* and what it sent meanwhile goes out */
}

void gnet_rx_posted(struct vm *vm)
{
	struct gport *g = find(vm);

	if (g && (g->carry || fq_peek(&g->rx))) {
		__atomic_store_n(&pending, true, __ATOMIC_RELEASE);
		gnet_deliver();
	}
}

/* ---- frames in flight, with a migrating guest ---------------------------- */

/* The frames waiting for a guest, oldest first, numbered from 0: the ones
 * that came here with it and still wait, then its rx queue. */
static uint32_t carry_left(const struct gport *g)
{
	return g->carry ? g->carry->n - g->carry->next : 0;
}

static uint32_t waiting(struct gport *g)
{
	return carry_left(g) + (__atomic_load_n(&g->rx.tail, __ATOMIC_ACQUIRE) - g->rx.head);
}

static struct slot *carry_slot(struct gport *g, uint32_t k)
{
	uint32_t left = carry_left(g);

	return k < left ? &g->carry->slot[g->carry->next + k] :
			  &g->rx.slot[(g->rx.head + k - left) % GNET_QLEN];
}

/* Whole frames from number k0 on, in order, as many as fit in
 * GNET_CARRY_BYTES and at most max (what a destination takes). */
static uint32_t carry_count(struct gport *g, uint32_t k0, uint32_t max)
{
	uint32_t n = 0, bytes = 0, end = waiting(g);

	for (uint32_t k = k0; k < end && n < max; k++, n++)
		if ((bytes += 2u + carry_slot(g, k)->len) > GNET_CARRY_BYTES)
			break;
	return n;
}

static int frame_snapshot(struct snap *s, struct slot *f)
{
	if (s->restore)
		f->valid = false;	/* not saved: the guest checks its sums */
	snap_u16(s, &f->len);
	if (!s->err && (f->len < 14 || f->len > FRAME_MAX))
		return snap_invalid(s);
	snap_bytes(s, f->data, f->len);
	return s->err;
}

/* n frames from number k0 of g's (saving), or into a new *in (restoring). */
static int frames_walk(struct snap *s, struct gport *g, uint32_t k0, uint32_t n,
		       struct gnet_carry **in)
{
	struct gnet_carry *c = NULL;

	snap_u32(s, &n);
	if (s->restore && !s->err && n > GNET_QLEN)
		snap_invalid(s);
	if (s->restore && !s->err && !(c = malloc(sizeof(*c) + n * sizeof(c->slot[0]))))
		s->err = -ENOMEM;
	for (uint32_t i = 0; i < n && !s->err; i++)
		frame_snapshot(s, s->restore ? &c->slot[i] : carry_slot(g, k0 + i));
	if (c && !s->err && n) {
		c->n = n;
		c->next = 0;
		*in = c;
	} else {
		free(c);
	}
	return s->err;
}

int gnet_rx_snapshot(struct vm *vm, struct snap *s, struct gnet_carry **in)
{
	struct gport *g = s->restore ? NULL : find(vm);
	uint32_t n = 0, left;
	int rc;

	if (!g)
		return frames_walk(s, NULL, 0, 0, in);
	spin_lock(&deliver_lock);	/* nothing delivered meanwhile */
	n = carry_count(g, 0, GNET_QLEN);
	rc = frames_walk(s, g, 0, n, in);
	/* what gnet_rx_late_snapshot starts after: if the bound cut into
	 * the frames that came with the guest, the rest of those is lost
	 * and every queued one is late */
	left = carry_left(g);
	g->late_from = g->rx.head + (n > left ? n - left : 0);
	g->saved_n = n;
	g->saved = true;
	spin_unlock(&deliver_lock);
	return rc;
}

int gnet_rx_late_snapshot(struct vm *vm, struct snap *s, uint32_t room, struct gnet_carry **in)
{
	struct gport *g = s->restore ? NULL : find(vm);
	uint32_t n = 0, k0, behind;
	int32_t past;
	int rc;

	if (!g)
		return frames_walk(s, NULL, 0, 0, in);
	spin_lock(&deliver_lock);
	past = (int32_t)(g->late_from - g->rx.head);	/* < 0: delivered since */
	k0 = carry_left(g) + (past > 0 ? (uint32_t)past : 0);
	if (room > GNET_QLEN - g->saved_n)	/* what the destination takes */
		room = GNET_QLEN - g->saved_n;
	if (g->saved && room)
		n = carry_count(g, k0, room);
	rc = frames_walk(s, g, k0, n, in);
	/* the rest stays here: the migration's last word before COMMIT, so
	 * they are lost if it completes; said, since nothing else counts them */
	behind = waiting(g) - g->saved_n - n;
	if (!rc && g->saved && waiting(g) > g->saved_n + n)
		pr_warn("vm %s: %u received frame%s waiting for it do%s not fit in what a "
			"migration carries (%u bytes of them): lost if it completes", g->vm->name,
			behind, behind == 1 ? "" : "s", behind == 1 ? "es" : "", GNET_CARRY_BYTES);
	spin_unlock(&deliver_lock);
	return rc;
}

void gnet_rx_carry(struct vm *vm, struct gnet_carry *c)
{
	struct gport *g = c ? find(vm) : NULL;

	if (!g) {
		free(c);
		return;
	}
	/* The destination loads the device state twice (when it comes, and
	 * again at COMMIT): the second carry replaces the first, whose guest
	 * had not run, so nothing of it was delivered and it counts no more. */
	spin_lock(&deliver_lock);
	if (g->carry)
		g->st.rx_carried -= g->carry->n;
	free(g->carry);
	g->carry = c;
	g->st.rx_carried += c->n;
	spin_unlock(&deliver_lock);
}

void gnet_rx_carry_more(struct vm *vm, struct gnet_carry *c)
{
	struct gport *g = c ? find(vm) : NULL;
	struct gnet_carry *both;
	uint32_t had, take;

	if (!g) {
		free(c);
		return;
	}
	spin_lock(&deliver_lock);
	had = g->carry ? g->carry->n : 0;
	take = had + c->n > GNET_QLEN ? GNET_QLEN - had : c->n;
	g->st.rx_qfull += c->n - take;		/* a lying peer's excess */
	both = had ? realloc(g->carry, sizeof(*both) + (had + take) * sizeof(both->slot[0])) : c;
	if (!both) {
		g->st.rx_qfull += take;
	} else if (had) {
		memcpy(&both->slot[had], c->slot, take * sizeof(c->slot[0]));
		both->n = had + take;
		g->carry = both;
	} else {
		both->n = take;
		g->carry = both;
		c = NULL;
	}
	if (both)
		g->st.rx_carried += take;
	spin_unlock(&deliver_lock);
	free(c);
}

/* ---- announce after migration ------------------------------------------- */

/* One announce frame from g's port: ferry's, not the guest's, so the
 * switch's count of frames from the guest gives it back; counted when
 * the wire took it. */
static void announce_one(struct gport *g)
{
	struct sw_port_stats *st = &host_if.sw.port[g->port].stats;
	uint8_t buf[SW_ANNOUNCE_LEN];
	size_t len = sw_announce_rarp(g->vm->mac, buf);

	if (netif_switch_input(g->port, buf, len, 0) < 0)
		return;
	st->in_frames--;
	st->in_bytes -= len;
	if (!netif_uplink_dropped())
		g->st.announces++;
}

static void announce_due(struct gport *g, uint64_t now_us)
{
	int ms;

	while (g->announcing) {
		ms = sw_announce_delay_ms(g->round);
		if (ms < 0) {
			g->announcing = false;
			return;
		}
		if (now_us < g->announce_t0 + (uint64_t)ms * 1000)
			return;
		announce_one(g);
		g->round++;
	}
}

void gnet_timers(uint64_t now_us)
{
	for (int i = 0; i < SW_MAX_PORTS; i++)
		if (ports[i] && ports[i]->announcing)
			announce_due(ports[i], now_us);
}

void gnet_arrived(struct vm *vm)
{
	struct gport *g;

	netif_lock();
	g = find(vm);
	if (g) {
		sw_set_dormant(&host_if.sw, g->port, false);	/* its MAC is here now */
		g->announcing = true;
		g->round = 0;
		g->announce_t0 = netif_now_us();
		announce_due(g, g->announce_t0);	/* round 0 now */
		netif_uplink_kick();
	}
	netif_unlock();
	if (g)
		pr_info("vm %s: announcing its MAC (RARP, %d rounds)", vm->name,
			SW_ANNOUNCE_ROUNDS);
	gnet_deliver();
}

/* ---- operator ----------------------------------------------------------- */

int gnet_set_mgmt(struct vm *vm, bool on)
{
	struct gport *g;
	int rc = -ENOENT;

	netif_lock();
	g = find(vm);
	if (g)
		rc = sw_set_flags(&host_if.sw, g->port, on ? SW_F_MGMT : 0);
	netif_unlock();
	return rc;
}

static void fill_stats(const struct gport *g, struct gnet_stats *out)
{
	const struct sw_port *p = &host_if.sw.port[g->port];

	*out = g->st;
	out->sw = p->stats;
	out->mgmt = p->flags & SW_F_MGMT;
}

int gnet_stats(struct vm *vm, struct gnet_stats *out)
{
	struct gport *g;

	netif_lock();
	g = find(vm);
	if (g)
		fill_stats(g, out);
	netif_unlock();
	return g ? 0 : -ENOENT;
}

void gnet_for_each(void (*fn)(struct vm *vm, const uint8_t mac[6],
			      const struct gnet_stats *st, void *arg), void *arg)
{
	struct gnet_stats st;

	for (int i = 0; i < SW_MAX_PORTS; i++) {
		if (!ports[i])
			continue;
		fill_stats(ports[i], &st);
		fn(ports[i]->vm, ports[i]->vm->mac, &st, arg);
	}
}
