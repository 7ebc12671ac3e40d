/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ICMP (RFC 792, RFC 1122 3.2.2): echo requests are answered (not when sent
 * to a broadcast address), echo replies are matched to the requests that
 * icmp_ping_send() remembers and queued with their round-trip time, and
 * "fragmentation needed" about our TCP segments (every packet has DF set)
 * goes to TCP (RFC 1191 path MTU discovery).  Other types are counted and
 * ignored.
 */
#include "hv/net/cksum.h"
#include "hv/net/net_priv.h"

#include <errno.h>
#include <string.h>

static void icmp_echo_reply(struct netstack *s, const uint8_t *iph,
			    const uint8_t *msg, size_t len)
{
	uint8_t *r = s->txbuf + NET_L4_OFF;

	if (ip_is_broadcast(s, get_be32(iph + IP_O_DST)))
		return;
	memcpy(r, msg, len);
	r[ICMP_O_TYPE] = ICMP_ECHO_REPLY;
	r[ICMP_O_CODE] = 0;
	put_be16(r + ICMP_O_CSUM, 0);
	csum_store(r + ICMP_O_CSUM, csum_finish(csum_add(0, r, len)));
	if (!ip_output(s, s->txbuf, len, get_be32(iph + IP_O_SRC), IP_PROTO_ICMP,
		       NET_TX_ANSWER))
		s->stats.icmp.tx_echo_replies++;
}

static struct icmp_ping_out *ping_match(struct netstack *s, uint32_t from,
					uint16_t id, uint16_t seq)
{
	for (int i = 0; i < ICMP_PING_SLOTS; i++) {
		struct icmp_ping_out *o = &s->icmp.out[i];

		if (o->used && o->dst == from && o->id == id && o->seq == seq)
			return o;
	}
	return NULL;
}

static void icmp_got_reply(struct netstack *s, const uint8_t *iph,
			   const uint8_t *msg, size_t len)
{
	struct icmp_state *st = &s->icmp;
	uint32_t from = get_be32(iph + IP_O_SRC);
	uint16_t id = get_be16(msg + ICMP_O_ID), seq = get_be16(msg + ICMP_O_SEQ);
	struct icmp_ping_out *o = ping_match(s, from, id, seq);
	struct icmp_echo_reply *r;

	if (!o) {
		s->stats.icmp.rx_unmatched++;
		return;
	}
	s->stats.icmp.rx_echo_replies++;
	if (st->rep_count == ICMP_REPLY_SLOTS) {	/* drop the oldest */
		st->rep_head = (st->rep_head + 1) % ICMP_REPLY_SLOTS;
		st->rep_count--;
	}
	r = &st->rep[(st->rep_head + st->rep_count++) % ICMP_REPLY_SLOTS];
	r->from = from;
	r->id = id;
	r->seq = seq;
	r->len = (uint16_t)(len - ICMP_HLEN);
	r->ttl = iph[IP_O_TTL];
	r->rtt_us = s->now_us - o->sent_us;
	o->used = false;
}

/* "Fragmentation needed" (RFC 1191 4): the packet it quotes must be one
 * we sent, to a TCP peer, with at least the ports and sequence number
 * (RFC 792's 8 bytes); TCP checks that number against what is in flight. */
static void icmp_frag_needed(struct netstack *s, const uint8_t *msg, size_t len)
{
	const uint8_t *q = msg + ICMP_HLEN;
	size_t qlen = len - ICMP_HLEN, hl = qlen ? (size_t)(q[IP_O_VHL] & 15) * 4 : 0;

	if (qlen < IP_HLEN || (q[IP_O_VHL] >> 4) != 4 || hl < IP_HLEN || qlen < hl + 8 ||
	    q[IP_O_PROTO] != IP_PROTO_TCP || get_be32(q + IP_O_SRC) != s->ip) {
		s->stats.icmp.rx_other++;
		return;
	}
	s->stats.icmp.rx_frag_needed++;
	tcp_frag_needed(s, get_be32(q + IP_O_DST), get_be16(q + hl + TCP_O_SPORT),
			get_be16(q + hl + TCP_O_DPORT), get_be32(q + hl + TCP_O_SEQ),
			get_be16(msg + ICMP_O_MTU));
}

void icmp_input(struct netstack *s, const uint8_t *iph, const uint8_t *msg,
		size_t len)
{
	s->stats.icmp.rx_msgs++;
	if (len < ICMP_HLEN || len > NET_L4_MAX) {
		s->stats.icmp.rx_errors++;
		return;
	}
	if (!csum_ok(csum_add(0, msg, len))) {
		s->stats.icmp.rx_bad_csum++;
		return;
	}
	switch (msg[ICMP_O_TYPE]) {
	case ICMP_ECHO:
		s->stats.icmp.rx_echo_requests++;
		icmp_echo_reply(s, iph, msg, len);
		break;
	case ICMP_ECHO_REPLY:
		icmp_got_reply(s, iph, msg, len);
		break;
	case ICMP_DEST_UNREACH:
		if (msg[ICMP_O_CODE] == ICMP_FRAG_NEEDED)
			icmp_frag_needed(s, msg, len);
		else
			s->stats.icmp.rx_other++;
		break;
	default:
		s->stats.icmp.rx_other++;
	}
}

int icmp_ping_send(struct netstack *s, uint32_t dst, uint16_t id,
		   uint16_t seq, size_t len)
{
	uint8_t *m = s->txbuf + NET_L4_OFF;
	struct icmp_ping_out *o;
	int rc;

	if (len > ICMP_PING_MAXDATA || !ip_is_unicast(s, dst))
		return -EINVAL;
	m[ICMP_O_TYPE] = ICMP_ECHO;
	m[ICMP_O_CODE] = 0;
	put_be16(m + ICMP_O_CSUM, 0);
	put_be16(m + ICMP_O_ID, id);
	put_be16(m + ICMP_O_SEQ, seq);
	for (size_t i = 0; i < len; i++)
		m[ICMP_HLEN + i] = (uint8_t)(0x10 + i);
	csum_store(m + ICMP_O_CSUM, csum_finish(csum_add(0, m, ICMP_HLEN + len)));
	o = &s->icmp.out[s->icmp.out_next++ % ICMP_PING_SLOTS];
	o->dst = dst;
	o->id = id;
	o->seq = seq;
	o->sent_us = s->now_us;
	o->used = true;		/* before sending: a reply may come at once */
	rc = ip_output(s, s->txbuf, ICMP_HLEN + len, dst, IP_PROTO_ICMP, 0);
	if (rc < 0) {
		o->used = false;
		return rc;
	}
	s->stats.icmp.tx_echo_requests++;
	return 0;
}

int icmp_ping_reply(struct netstack *s, struct icmp_echo_reply *out)
{
	struct icmp_state *st = &s->icmp;

	if (!st->rep_count)
		return 0;
	*out = st->rep[st->rep_head];
	st->rep_head = (st->rep_head + 1) % ICMP_REPLY_SLOTS;
	st->rep_count--;
	return 1;
}
