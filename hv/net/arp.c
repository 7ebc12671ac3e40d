/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ARP (RFC 826) with the cache rules of RFC 1122 2.3.2: entries expire,
 * entries still in use are refreshed before they do, unanswered requests
 * are retried once a second ARP_RETRIES times, and a few frames wait for
 * resolution (the rest are dropped and left to TCP's retransmission).
 */
#include "hv/net/net_priv.h"

#include <errno.h>
#include <string.h>

#define ARP_RETRY_US	1000000ull

static const uint8_t mac_bcast[ETH_ALEN] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const uint8_t mac_zero[ETH_ALEN];

void arp_init(struct netstack *s, uint64_t timeout_us)
{
	s->arp.timeout_us = timeout_us;
}

static struct arp_entry *arp_find(struct netstack *s, uint32_t ip)
{
	for (int i = 0; i < ARP_CACHE_SIZE; i++) {
		struct arp_entry *e = &s->arp.e[i];

		if (e->state != ARP_FREE && e->ip == ip)
			return e;
	}
	return NULL;
}

static void pending_drop(struct netstack *s, uint32_t nexthop)
{
	for (int i = 0; i < ARP_PENDING; i++) {
		struct arp_pending *p = &s->arp.pend[i];

		if (p->len && p->nexthop == nexthop) {
			p->len = 0;
			s->stats.arp.unresolved++;
		}
	}
}

static void entry_free(struct netstack *s, struct arp_entry *e)
{
	pending_drop(s, e->ip);
	e->state = ARP_FREE;
}

/* Which entries a new one may take when none is free. */
enum arp_take {
	ARP_TAKE_NOT_OWN,	/* for an answer or an ARP packet about us */
	ARP_TAKE_ANY,		/* for ferry's own traffic */
};

/* First what no one answered for, then what ferry does not send to, least
 * recently used first: an entry ferry sends through or waits on (a
 * migration's peer) stays however many hosts ask for us or send from
 * addresses no one answers for (forged sources cost a flood nothing),
 * while a host that asks for us still finds room among theirs. */
static int keep_rank(const struct arp_entry *e)
{
	return e->own * 2 + (e->state == ARP_REACHABLE);
}

static bool older(const struct arp_entry *a, const struct arp_entry *b)
{
	int ra = keep_rank(a), rb = keep_rank(b);

	return ra != rb ? ra < rb : a->used_us < b->used_us;
}

/* A free entry, else the least worth keeping of those take allows. */
static struct arp_entry *arp_alloc(struct netstack *s, uint32_t ip, enum arp_take take)
{
	struct arp_entry *victim = NULL;

	for (int i = 0; i < ARP_CACHE_SIZE; i++) {
		struct arp_entry *e = &s->arp.e[i];

		if (e->state == ARP_FREE) {
			victim = e;
			break;
		}
		if ((take == ARP_TAKE_ANY || !e->own) && (!victim || older(e, victim)))
			victim = e;
	}
	if (!victim)
		return NULL;
	if (victim->state != ARP_FREE)
		entry_free(s, victim);
	memset(victim, 0, sizeof(*victim));
	victim->ip = ip;
	victim->used_us = s->now_us;
	return victim;
}

static void arp_send(struct netstack *s, uint16_t op, const uint8_t *dst_mac,
		     const uint8_t *tha, uint32_t tpa)
{
	uint8_t f[ETH_ZLEN];
	uint8_t *a = f + ETH_HLEN;

	put_be16(a + ARP_O_HTYPE, ARP_HTYPE_ETH);
	put_be16(a + ARP_O_PTYPE, ETH_P_IP);
	a[ARP_O_HLEN] = ETH_ALEN;
	a[ARP_O_PLEN] = 4;
	put_be16(a + ARP_O_OP, op);
	mac_copy(a + ARP_O_SHA, s->mac);
	put_be32(a + ARP_O_SPA, s->ip);
	mac_copy(a + ARP_O_THA, tha);
	put_be32(a + ARP_O_TPA, tpa);
	if (op == ARP_OP_REQUEST)
		s->stats.arp.tx_requests++;
	else
		s->stats.arp.tx_replies++;
	eth_output(s, f, ETH_HLEN + ARP_LEN, dst_mac, ETH_P_ARP);
}

static void arp_request(struct netstack *s, struct arp_entry *e)
{
	arp_send(s, ARP_OP_REQUEST, mac_bcast, mac_zero, e->ip);
	e->next_req_us = s->now_us + ARP_RETRY_US;
}

/* Gratuitous ARP (RFC 5227 3): a request for our own address. */
void arp_announce(struct netstack *s)
{
	arp_send(s, ARP_OP_REQUEST, mac_bcast, mac_zero, s->ip);
}

static void pending_flush(struct netstack *s, const struct arp_entry *e)
{
	for (int i = 0; i < ARP_PENDING; i++) {
		struct arp_pending *p = &s->arp.pend[i];

		if (p->len && p->nexthop == e->ip) {
			eth_output(s, p->frame, p->len, e->mac, ETH_P_IP);
			p->len = 0;
		}
	}
}

static void arp_learn(struct netstack *s, struct arp_entry *e,
		      const uint8_t *mac)
{
	mac_copy(e->mac, mac);
	e->state = ARP_REACHABLE;
	e->tries = 0;
	e->expires_us = s->now_us + s->arp.timeout_us;
	e->next_req_us = s->now_us;
	pending_flush(s, e);
}

static bool arp_header_ok(const uint8_t *a, size_t len)
{
	uint16_t op;

	if (len < ARP_LEN || get_be16(a + ARP_O_HTYPE) != ARP_HTYPE_ETH ||
	    get_be16(a + ARP_O_PTYPE) != ETH_P_IP ||
	    a[ARP_O_HLEN] != ETH_ALEN || a[ARP_O_PLEN] != 4)
		return false;
	op = get_be16(a + ARP_O_OP);
	return (op == ARP_OP_REQUEST || op == ARP_OP_REPLY) &&
	       !mac_is_multicast(a + ARP_O_SHA);
}

void arp_input(struct netstack *s, const uint8_t *a, size_t len)
{
	uint32_t spa, tpa;
	struct arp_entry *e;
	uint16_t op;

	if (!arp_header_ok(a, len)) {
		s->stats.arp.rx_errors++;
		return;
	}
	op = get_be16(a + ARP_O_OP);
	spa = get_be32(a + ARP_O_SPA);
	tpa = get_be32(a + ARP_O_TPA);
	if (op == ARP_OP_REQUEST)
		s->stats.arp.rx_requests++;
	else
		s->stats.arp.rx_replies++;
	if (!s->ip)
		return;
	if (spa == s->ip) {
		if (memcmp(a + ARP_O_SHA, s->mac, ETH_ALEN))
			s->stats.arp.conflicts++;
		return;
	}
	/* Learn only on-link unicast senders; create entries only when the
	 * packet is about us (RFC 826 "merge" rule), never in one of ferry's
	 * own: the reply below needs none, and a flood of askers must not
	 * push out the entries ferry sends through or waits on.  A host that
	 * is there (a peer's late reply) still gets in past a flood's. */
	e = ip_is_unicast(s, spa) && (spa & s->netmask) == (s->ip & s->netmask)
	    ? arp_find(s, spa) : NULL;
	if (!e && tpa == s->ip && ip_is_unicast(s, spa) &&
	    (spa & s->netmask) == (s->ip & s->netmask))
		e = arp_alloc(s, spa, ARP_TAKE_NOT_OWN);
	if (e)
		arp_learn(s, e, a + ARP_O_SHA);
	if (op == ARP_OP_REQUEST && tpa == s->ip)
		arp_send(s, ARP_OP_REPLY, a + ARP_O_SHA, a + ARP_O_SHA, spa);
}

/* A free slot, else for ferry's own frame one an answer holds (that
 * answer is dropped); else the frame is dropped, the older ones kept:
 * earlier data. */
static int pending_add(struct netstack *s, uint32_t nexthop,
		       const uint8_t *frame, size_t len, bool answer)
{
	struct arp_pending *slot = NULL;

	for (int i = 0; i < ARP_PENDING; i++) {
		struct arp_pending *p = &s->arp.pend[i];

		if (!p->len) {
			slot = p;
			break;
		}
		if (!answer && p->answer && !slot)
			slot = p;
	}
	if (!slot || slot->len)
		s->stats.arp.unresolved++;
	if (!slot)
		return 0;
	memcpy(slot->frame, frame, len);
	slot->len = (uint16_t)len;
	slot->answer = answer;
	slot->nexthop = nexthop;
	slot->queued_us = s->now_us;
	return 0;
}

/* May an answer start resolving a next hop now?  ARP_ANSWER_RATE a
 * second: each broadcasts up to ARP_RETRIES requests. */
static bool answer_may_resolve(struct netstack *s)
{
	struct arp_cache *a = &s->arp;

	if (s->now_us - a->answer_window_us >= 1000000) {
		a->answer_window_us = s->now_us;
		a->answer_new = 0;
	}
	if (a->answer_new >= ARP_ANSWER_RATE)
		return false;
	a->answer_new++;
	return true;
}

int arp_output(struct netstack *s, uint32_t nexthop, uint8_t *frame,
	       size_t len, unsigned flags)
{
	struct arp_entry *e = arp_find(s, nexthop);
	bool answer = flags & NET_TX_ANSWER;
	int rc;

	/* frame may be the driver's next transmit buffer (net_tx_frame):
	 * it is sent or copied before any ARP request goes out */
	if (e && e->state == ARP_REACHABLE) {
		uint64_t left = e->expires_us > s->now_us ?
				e->expires_us - s->now_us : 0;

		e->used_us = s->now_us;
		e->own = e->own || !answer;
		rc = eth_output(s, frame, len, e->mac, ETH_P_IP);
		if (left < s->arp.timeout_us / 4 && s->now_us >= e->next_req_us)
			arp_request(s, e);	/* refresh while still valid */
		return rc;
	}
	if (len > ETH_FRAME_MAX)
		return -EINVAL;
	if (e) {
		e->own = e->own || !answer;
		return pending_add(s, nexthop, frame, len, answer);
	}
	e = !answer || answer_may_resolve(s) ?
	    arp_alloc(s, nexthop, answer ? ARP_TAKE_NOT_OWN : ARP_TAKE_ANY) : NULL;
	if (!e) {		/* an answer, and no room: as if lost */
		s->stats.arp.unresolved++;
		return 0;
	}
	e->state = ARP_INCOMPLETE;
	e->own = !answer;
	e->tries = 1;
	e->expires_us = s->now_us;
	rc = pending_add(s, nexthop, frame, len, answer);
	arp_request(s, e);
	return rc;
}

static uint64_t arp_entry_poll(struct netstack *s, struct arp_entry *e)
{
	if (e->state == ARP_REACHABLE) {
		if (s->now_us >= e->expires_us) {
			entry_free(s, e);
			return UINT64_MAX;
		}
		return e->expires_us;
	}
	if (s->now_us < e->next_req_us)
		return e->next_req_us;
	if (e->tries >= ARP_RETRIES) {
		entry_free(s, e);
		return UINT64_MAX;
	}
	e->tries++;
	arp_request(s, e);
	return e->next_req_us;
}

uint64_t arp_poll(struct netstack *s)
{
	uint64_t next = UINT64_MAX;

	for (int i = 0; i < ARP_CACHE_SIZE; i++) {
		struct arp_entry *e = &s->arp.e[i];
		uint64_t t;

		if (e->state == ARP_FREE)
			continue;
		t = arp_entry_poll(s, e);
		if (t < next)
			next = t;
	}
	return next;
}

int arp_lookup(struct netstack *s, uint32_t ip, uint8_t *mac)
{
	struct arp_entry *e = arp_find(s, ip);

	if (!e || e->state != ARP_REACHABLE)
		return -ENOENT;
	e->used_us = s->now_us;		/* looked up to send (TSO) */
	mac_copy(mac, e->mac);
	return 0;
}

void arp_foreach(struct netstack *s, arp_visit_fn fn, void *arg)
{
	for (int i = 0; i < ARP_CACHE_SIZE; i++) {
		const struct arp_entry *e = &s->arp.e[i];
		struct arp_info info;

		if (e->state == ARP_FREE)
			continue;
		memset(&info, 0, sizeof(info));
		info.ip = e->ip;
		info.complete = e->state == ARP_REACHABLE;
		if (info.complete) {
			mac_copy(info.mac, e->mac);
			info.expires_in_ms = e->expires_us > s->now_us ?
				(e->expires_us - s->now_us) / 1000 : 0;
		}
		fn(&info, arg);
	}
}

void arp_flush(struct netstack *s)
{
	memset(s->arp.e, 0, sizeof(s->arp.e));
	for (int i = 0; i < ARP_PENDING; i++)
		s->arp.pend[i].len = 0;
}
