/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * TCP output: building segments (header, options, checksum), choosing what
 * to send under the send, congestion and receive windows (RFC 9293 3.8.6,
 * Nagle and sender SWS avoidance of RFC 1122 4.2.3.4, limited transmit of
 * RFC 3042), ACKs with SACK blocks (RFC 2018) and resets.
 */
#include "hv/net/cksum.h"
#include "hv/net/tcp_priv.h"

#include <errno.h>

/* Header fields of one outgoing segment. */
struct tcp_hdr {
	uint32_t rip;
	uint16_t lport, rport;
	uint32_t seq, ack;
	uint8_t flags;
	uint16_t wnd;
	unsigned tx;			/* NET_TX_* */
};

/* Fill the header at NET_L4_OFF of frame (options and data already
 * there), then checksum and send. */
static int tcp_emit(struct netstack *s, uint8_t *frame, const struct tcp_hdr *h,
		    uint32_t optlen, uint32_t len)
{
	uint8_t *t = frame + NET_L4_OFF;
	uint32_t tl = TCP_HLEN + optlen + len;
	uint64_t sum;
	int rc;

	put_be16(t + TCP_O_SPORT, h->lport);
	put_be16(t + TCP_O_DPORT, h->rport);
	put_be32(t + TCP_O_SEQ, h->seq);
	put_be32(t + TCP_O_ACK, h->ack);
	t[TCP_O_OFF] = (uint8_t)(((TCP_HLEN + optlen) / 4) << 4);
	t[TCP_O_FLAGS] = h->flags;
	put_be16(t + TCP_O_WIN, h->wnd);
	put_be16(t + TCP_O_CSUM, 0);
	put_be16(t + TCP_O_URP, 0);
	sum = csum_pseudo(s->ip, h->rip, IP_PROTO_TCP, s->tso ? 0 : (uint16_t)tl);
	if (s->tx_tcp_csum || s->tso)	/* the NIC sums and complements */
		csum_store(t + TCP_O_CSUM, csum_fold(sum));
	else
		csum_store(t + TCP_O_CSUM, csum_finish(csum_add(sum, t, tl)));
	rc = ip_output(s, frame, tl, h->rip, IP_PROTO_TCP, h->tx);
	if (rc == -EAGAIN)
		s->stats.tcp.tx_blocked++;
	else if (rc != -EXDEV)
		s->stats.tcp.tx_segs++;
	if (h->flags & TCP_RST)
		s->stats.tcp.tx_resets++;
	return rc;
}

/* A half-open passive connection (its listener its parent) answers a SYN
 * whose source may be forged; from ESTABLISHED on, the peer has answered
 * us, and a simultaneous open's SYN_RCVD follows ferry's own SYN. */
static unsigned tx_flags(const struct tcp_conn *c)
{
	return c->state == TCP_SYN_RCVD && c->parent ? NET_TX_ANSWER : 0;
}

/* MSS, window scale and SACK-permitted: offered in a SYN, echoed in a
 * SYN-ACK only when the peer offered them (RFC 7323 1.3, RFC 2018 2). */
static uint32_t syn_options(const struct tcp_conn *c, uint8_t *o)
{
	bool offer = c->state == TCP_SYN_SENT;
	uint32_t n = 0;

	o[n++] = TCP_OPT_MSS;
	o[n++] = 4;
	put_be16(o + n, TCP_MSS_OURS);
	n += 2;
	if (offer || c->ws_ok) {
		o[n++] = TCP_OPT_NOP;
		o[n++] = TCP_OPT_WS;
		o[n++] = 3;
		o[n++] = c->rcv_wscale;
	}
	if (offer || c->sack_ok) {
		o[n++] = TCP_OPT_NOP;
		o[n++] = TCP_OPT_NOP;
		o[n++] = TCP_OPT_SACKOK;
		o[n++] = 2;
	}
	return n;
}

static void put_block(uint8_t *o, const struct tcp_range *r)
{
	put_be32(o, r->start);
	put_be32(o + 4, r->end);
}

/* SACK blocks: a pending D-SACK, then the held range with the most recent
 * segment (RFC 2018 4), then the lowest ones, which the sender needs most. */
static uint32_t sack_options(struct tcp_conn *c, uint8_t *o)
{
	const struct tcp_rset *s = &c->ooo;
	uint32_t nb = 0;
	int recent = -1;

	if (!c->sack_ok || (!s->n && !c->dsack_pending))
		return 0;
	if (c->dsack_pending)		/* RFC 2883: the duplicate first */
		put_block(o + 4 + 8 * nb++, &c->dsack);
	c->dsack_pending = false;
	for (int i = 0; i < s->n; i++)
		if (s->r[i].start == c->ooo_last)
			recent = i;
	if (recent >= 0 && nb < TCP_SACK_MAX)
		put_block(o + 4 + 8 * nb++, &s->r[recent]);
	for (int i = 0; i < s->n && nb < TCP_SACK_MAX; i++)
		if (i != recent)
			put_block(o + 4 + 8 * nb++, &s->r[i]);
	o[0] = TCP_OPT_NOP;
	o[1] = TCP_OPT_NOP;
	o[2] = TCP_OPT_SACK;
	o[3] = (uint8_t)(2 + 8 * nb);
	return 4 + 8 * nb;
}

/* Receive window to offer: all free space, except that the right edge
 * never moves left and only moves right by a useful amount
 * (receiver SWS avoidance, RFC 1122 4.2.3.3). */
uint32_t tcp_rcv_window(const struct tcp_conn *c)
{
	uint32_t used = c->rcv_nxt - c->rcv_user;
	uint32_t space = used < c->rsize ? c->rsize - used : 0;
	uint32_t promised = seq_gt(c->rcv_adv, c->rcv_nxt) ?
			    c->rcv_adv - c->rcv_nxt : 0;
	uint32_t step = min_u32(c->rsize / 2, TCP_MSS_OURS);

	if (space < promised || space - promised < step)
		return promised;
	return space;
}

/*
 * The window field and the right edge it promises (RFC 7323 2.3: SYNs are
 * never scaled).  A promise the scale cannot express is rounded up rather
 * than shrunk, but never past the receive buffer's end: rounded up ACK
 * after ACK, each time from the last edge, it crept beyond the buffer and
 * the peer's data there was cut.  Rounding down instead moves the edge left
 * by less than one unit, within the buffer, whose bytes trim() still takes.
 */
static uint16_t wnd_field(const struct tcp_conn *c, bool syn, uint32_t *edge)
{
	uint32_t ws = syn ? 0 : c->rcv_wscale;
	uint32_t w = tcp_rcv_window(c);
	uint32_t promised = seq_gt(c->rcv_adv, c->rcv_nxt) ?
			    c->rcv_adv - c->rcv_nxt : 0;
	uint32_t used = c->rcv_nxt - c->rcv_user;
	uint32_t room = used < c->rsize ? c->rsize - used : 0;
	uint32_t units = min_u32(w >> ws, 65535);

	if ((units << ws) < promised) {
		units = min_u32((promised + (1u << ws) - 1) >> ws, 65535);
		if ((units << ws) > room)
			units = min_u32(room >> ws, 65535);
	}
	*edge = c->rcv_nxt + (units << ws);
	return (uint16_t)units;
}

/* Can [seq, seq+len) go as one TSO frame (data only, next hop known)? */
static bool tso_ok(const struct tcp_conn *c, uint32_t len, uint8_t flags)
{
	return c->s->tso_max && !c->no_tso && len <= c->s->tso_max &&
	       !(flags & (TCP_SYN | TCP_FIN | TCP_RST)) && c->state != TCP_SYN_SENT &&
	       ip_resolved(c->s, c->rip);
}

/* The payload of a TSO frame: straight from the send ring. */
static void tso_setup(struct tcp_conn *c, struct net_tso *t, const uint8_t *frame,
		      uint32_t seq, uint32_t len, uint32_t optlen)
{
	uint32_t off = seq & (c->ssize - 1), first = min_u32(len, c->ssize - off);

	*t = (struct net_tso){ .hdr = frame, .hlen = NET_L4_OFF + TCP_HLEN + optlen,
			       .data = { c->sbuf + off, c->sbuf },
			       .len = { first, len - first }, .mss = c->mss - optlen };
}

/* Send one segment of c: data [seq, seq+len) from the send ring plus
 * flags; ACK is added once synchronized.  More than a segment goes as one
 * TSO frame when the NIC can; otherwise options may shorten the data, and
 * then FIN is left off.  Returns payload bytes sent or -EAGAIN. */
static long tcp_xmit(struct tcp_conn *c, uint32_t seq, uint32_t len,
		     uint8_t flags)
{
	struct netstack *s = c->s;
	uint8_t *frame = net_tx_frame(s), *t = frame + NET_L4_OFF;
	bool syn = flags & TCP_SYN;
	uint32_t optlen = syn ? syn_options(c, t + TCP_HLEN) :
				sack_options(c, t + TCP_HLEN);
	struct tcp_hdr h = { .rip = c->rip, .lport = c->lport,
			     .rport = c->rport, .seq = seq, .ack = c->rcv_nxt,
			     .tx = tx_flags(c) };
	struct net_tso tso;
	uint32_t edge;
	bool as_tso;
	int rc;

	if (len + optlen > c->mss && tso_ok(c, len, flags)) {
		tso_setup(c, &tso, frame, seq, len, optlen);
		s->tso = &tso;
	} else if (len + optlen > c->mss) {
		len = c->mss - optlen;
		flags &= (uint8_t)~TCP_FIN;
	}
	if (len && !s->tso)
		ring_get(c->sbuf, c->ssize, seq, t + TCP_HLEN + optlen, len);
	if (len && seq + len == c->sb_seq + c->sb_len)
		flags |= TCP_PSH;
	if (c->state != TCP_SYN_SENT)
		flags |= TCP_ACK;
	h.flags = flags;
	h.wnd = wnd_field(c, syn, &edge);
	as_tso = s->tso != NULL;
	rc = tcp_emit(s, frame, &h, optlen, len);
	s->tso = NULL;
	if (rc == -EXDEV && as_tso) {	/* a peer on this host: segments from now on */
		c->no_tso = true;
		return tcp_xmit(c, seq, len, flags);
	}
	if (rc == -EAGAIN) {
		c->tx_blocked = true;
		return -EAGAIN;
	}
	c->segs_out++;
	if (flags & TCP_ACK) {
		c->ack_now = false;
		c->acks_pending = 0;
		c->t_delack = 0;
		if (seq_gt(edge, c->rcv_adv))
			c->rcv_adv = edge;
	}
	return len;
}

/* Account for a segment covering [seq, seq+covered) with n data bytes. */
static void tcp_sent(struct tcp_conn *c, uint32_t seq, uint32_t covered,
		     uint32_t n)
{
	uint32_t end = seq + covered;

	if (seq_lt(seq, c->snd_max)) {
		c->retransmits++;
		c->s->stats.tcp.retransmits++;
		if (c->undo_valid)
			c->undo_retrans++;
		if (seq_gt(end, c->high_rxt))
			c->high_rxt = end;
		if (c->rtt_timing && seq_le(seq, c->rtt_seq) &&
		    seq_lt(c->rtt_seq, end))
			c->rtt_timing = false;	/* Karn */
	} else {
		c->bytes_out += n;
	}
	/* the user timeout counts from when data goes out unanswered, not from
	 * progress made before a quiet spell */
	if (c->snd_una == c->snd_max && seq_gt(end, c->snd_max))
		c->last_progress_us = c->s->now_us;
	if (seq_gt(end, c->snd_max))
		c->snd_max = end;
	if (seq_gt(end, c->snd_nxt))
		c->snd_nxt = end;
	if (!c->t_rexmt && c->state != TCP_TIME_WAIT)
		c->t_rexmt = c->s->now_us + c->rto_us;
}

static uint32_t send_end(const struct tcp_conn *c)
{
	return c->sb_seq + c->sb_len;
}

uint32_t tcp_send_at(struct tcp_conn *c, uint32_t seq, uint32_t maxlen)
{
	uint32_t end = send_end(c);
	uint32_t avail = seq_lt(seq, end) ? end - seq : 0;
	uint32_t len = min_u32(min_u32(avail, maxlen), c->mss);
	bool fin = c->fin_queued && seq + len == end;
	uint32_t covered;
	long n;

	if (!len && !fin)
		return 0;
	n = tcp_xmit(c, seq, len, fin ? TCP_FIN : 0);
	if (n < 0)
		return 0;
	covered = (uint32_t)n + (fin && (uint32_t)n == len);
	tcp_sent(c, seq, covered, (uint32_t)n);
	return covered;
}

/* Bytes the send and congestion windows allow beyond snd_nxt; during
 * SACK recovery the congestion window is measured against the pipe. */
static uint32_t tcp_usable(const struct tcp_conn *c)
{
	uint32_t cwnd = c->cwnd, right, rwnd, pipe;

	if (c->sack_ok && (c->in_recovery || c->rto_recovery)) {
		right = c->snd_una + c->snd_wnd;
		rwnd = seq_gt(right, c->snd_nxt) ? right - c->snd_nxt : 0;
		pipe = tcp_sack_pipe(c);
		return min_u32(rwnd, cwnd > pipe ? cwnd - pipe : 0);
	}
	if (!c->in_recovery && c->dupacks && c->dupacks < 3)
		cwnd += c->dupacks * c->mss;	/* limited transmit */
	right = c->snd_una + min_u32(c->snd_wnd, cwnd);
	return seq_gt(right, c->snd_nxt) ? right - c->snd_nxt : 0;
}

/* Nagle (RFC 896) and sender-side SWS avoidance (RFC 1122 4.2.3.4). */
static bool tcp_small_ok(const struct tcp_conn *c, uint32_t len,
			 uint32_t avail)
{
	if (len >= c->mss || seq_lt(c->snd_nxt, c->snd_max) ||
	    c->snd_nxt == c->snd_una)
		return true;
	if (len == avail && (c->nodelay || c->fin_queued))
		return true;
	return c->max_sndwnd && len >= c->max_sndwnd / 2;
}

/* Most payload one send may carry: a TSO frame's worth, else a segment. */
static uint32_t tcp_seg_max(const struct tcp_conn *c)
{
	return c->s->tso_max > c->mss ? c->s->tso_max : c->mss;
}

/* Send the next segment the windows allow; false when nothing went. */
static bool tcp_output_one(struct tcp_conn *c)
{
	uint32_t end = send_end(c), seq = c->snd_nxt, room = UINT32_MAX;
	uint32_t avail, len, covered;
	bool fin, fresh;
	long n;

	if (c->sacked.n && seq_lt(seq, c->snd_max))	/* go-back-N: skip SACKed */
		c->snd_nxt = seq = tcp_sack_skip(c, seq, &room);
	avail = seq_lt(seq, end) ? end - seq : 0;
	len = min_u32(min_u32(min_u32(avail, tcp_usable(c)), tcp_seg_max(c)), room);
	fin = c->fin_queued && seq + len == end;
	fresh = seq == c->snd_max;

	if (!len && !fin)
		return false;
	if (len && !tcp_small_ok(c, len, avail))
		return false;
	n = tcp_xmit(c, seq, len, fin ? TCP_FIN : 0);
	if (n < 0)
		return false;
	covered = (uint32_t)n + (fin && (uint32_t)n == len);
	if (fresh && n > 0 && !c->rtt_timing) {
		c->rtt_timing = true;
		c->rtt_seq = seq;
		c->rtt_start_us = c->s->now_us;
	}
	tcp_sent(c, seq, covered, (uint32_t)n);
	return covered > 0;
}

static bool can_send_data(const struct tcp_conn *c)
{
	return c->state == TCP_ESTABLISHED || c->state == TCP_CLOSE_WAIT ||
	       c->state == TCP_FIN_WAIT_1 || c->state == TCP_CLOSING ||
	       c->state == TCP_LAST_ACK;
}

void tcp_output(struct tcp_conn *c)
{
	if (can_send_data(c) && c->sbuf) {
		c->tx_blocked = false;
		if (c->in_recovery || c->rto_recovery)
			tcp_sack_lost_rexmit(c);
		if (c->in_recovery && c->sack_ok)
			tcp_sack_retransmit(c);
		while (!c->tx_blocked && tcp_output_one(c))
			;
		tcp_arm_persist(c);
		tcp_arm_tlp(c);
	}
	if (c->ack_now)
		tcp_send_ack(c);
}

void tcp_send_ack(struct tcp_conn *c)
{
	if (c->state < TCP_ESTABLISHED)
		return;
	tcp_xmit(c, c->snd_nxt, 0, 0);
}

void tcp_send_syn(struct tcp_conn *c)
{
	if (tcp_xmit(c, c->iss, 0, TCP_SYN) < 0) {
		if (!c->t_rexmt)	/* ring full: the timer sends it again */
			c->t_rexmt = c->s->now_us + c->rto_us;
		return;
	}
	c->snd_nxt = c->iss + 1;
	if (seq_lt(c->snd_max, c->snd_nxt))
		c->snd_max = c->snd_nxt;
	if (!c->backoff && !c->rtt_timing) {
		c->rtt_timing = true;
		c->rtt_seq = c->iss;
		c->rtt_start_us = c->s->now_us;
	}
	if (!c->t_rexmt)
		c->t_rexmt = c->s->now_us + c->rto_us;
}

void tcp_send_rst(struct tcp_conn *c)
{
	struct tcp_hdr h = { .rip = c->rip, .lport = c->lport, .rport = c->rport,
			     .seq = c->snd_nxt, .ack = c->rcv_nxt,
			     .flags = TCP_RST | TCP_ACK, .tx = tx_flags(c) };

	tcp_emit(c->s, net_tx_frame(c->s), &h, 0, 0);
}

/* RST for a segment that has no connection (RFC 9293 3.10.7.1). */
void tcp_send_rst_reply(struct netstack *s, const struct tcp_seg *g)
{
	struct tcp_hdr h = { .rip = g->src, .lport = g->dport, .rport = g->sport,
			     .tx = NET_TX_ANSWER };

	if (g->flags & TCP_ACK) {
		h.seq = g->ack;
		h.flags = TCP_RST;
	} else {
		h.ack = g->seq + g->len + !!(g->flags & TCP_SYN) +
			!!(g->flags & TCP_FIN);
		h.flags = TCP_RST | TCP_ACK;
	}
	tcp_emit(s, net_tx_frame(s), &h, 0, 0);
}

/* An ACK that tells a possibly blind attacker nothing new (RFC 5961 3.2,
 * 4.2, 5.2): one per connection per TCP_CHALLENGE_GAP_US, and at most
 * TCP_CHALLENGE_PER_SEC per stack.  The limit per connection comes first,
 * so the stack's budget is not a counter that an attacker could read
 * through challenges on its own connection to learn whether a guess hit
 * another (CVE-2016-5696): at the default table size it cannot run out. */
void tcp_challenge_ack(struct tcp_conn *c)
{
	struct tcp_table *t = &c->s->tcp;

	if (c->chal_last_us && c->s->now_us - c->chal_last_us < TCP_CHALLENGE_GAP_US)
		return;
	c->chal_last_us = c->s->now_us ? c->s->now_us : 1;
	if (c->s->now_us - t->chal_window_us >= 1000000) {
		t->chal_window_us = c->s->now_us;
		t->chal_count = 0;
	}
	if (t->chal_count >= TCP_CHALLENGE_PER_SEC)
		return;
	t->chal_count++;
	c->s->stats.tcp.challenge_acks++;
	tcp_send_ack(c);
}
