/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * TCP segment arrival (RFC 9293 3.10.7): parsing and checksum, LISTEN and
 * SYN-SENT processing, then for synchronized states the sequence check,
 * RST and SYN rules of RFC 5961, ACK processing, data reassembly into the
 * receive ring and FIN.  Every check failure is counted and the segment
 * dropped; nothing here trusts a length it has not bounded.  Also ICMP's
 * "fragmentation needed" for a connection (RFC 1191).
 */
#include "hv/net/cksum.h"
#include "hv/net/tcp_priv.h"

#include <errno.h>
#include <string.h>

/* --- parsing --- */

static void parse_option(struct tcp_seg *g, uint8_t kind, const uint8_t *o,
			 uint32_t l)
{
	switch (kind) {
	case TCP_OPT_MSS:
		if (l == 4)
			g->mss = get_be16(o + 2);
		break;
	case TCP_OPT_WS:
		if (l == 3)
			g->ws = (int8_t)(o[2] > TCP_WSCALE_MAX ? TCP_WSCALE_MAX : o[2]);
		break;
	case TCP_OPT_SACKOK:
		if (l == 2)
			g->sack_ok = true;
		break;
	case TCP_OPT_SACK:
		if (l < 10 || (l - 2) % 8)
			break;
		g->nsack = (uint8_t)min_u32((l - 2) / 8, TCP_SACK_RX_MAX);
		for (uint32_t i = 0; i < g->nsack; i++) {
			g->sack[i].start = get_be32(o + 2 + 8 * i);
			g->sack[i].end = get_be32(o + 6 + 8 * i);
		}
		break;
	}
}

/* RFC 9293 3.2: kinds 0 and 1 are one byte, the rest kind-length-data. */
static bool parse_options(struct tcp_seg *g, const uint8_t *o, uint32_t n)
{
	while (n) {
		uint32_t l;

		if (o[0] == TCP_OPT_EOL)
			break;
		if (o[0] == TCP_OPT_NOP) {
			o++;
			n--;
			continue;
		}
		if (n < 2 || (l = o[1]) < 2 || l > n)
			return false;
		parse_option(g, o[0], o, l);
		o += l;
		n -= l;
	}
	return true;
}

static bool tcp_parse(struct netstack *s, const uint8_t *iph, const uint8_t *p,
		      size_t len, struct tcp_seg *g)
{
	uint32_t hl;
	uint64_t sum;

	if (len < TCP_HLEN || (hl = (uint32_t)(p[TCP_O_OFF] >> 4) * 4) < TCP_HLEN ||
	    hl > len) {
		s->stats.tcp.rx_errors++;
		return false;
	}
	memset(g, 0, sizeof(*g));
	g->src = get_be32(iph + IP_O_SRC);
	g->dst = get_be32(iph + IP_O_DST);
	sum = csum_pseudo(g->src, g->dst, IP_PROTO_TCP, (uint16_t)len);
	if (!(s->rx_flags & NET_RX_TCP_CSUM_OK) && !csum_ok(csum_add(sum, p, len))) {
		s->stats.tcp.rx_bad_csum++;
		return false;
	}
	g->sport = get_be16(p + TCP_O_SPORT);
	g->dport = get_be16(p + TCP_O_DPORT);
	g->seq = get_be32(p + TCP_O_SEQ);
	g->ack = get_be32(p + TCP_O_ACK);
	g->flags = p[TCP_O_FLAGS] & 0x3f;
	g->wnd = get_be16(p + TCP_O_WIN);
	g->data = p + hl;
	g->len = (uint32_t)(len - hl);
	g->ws = -1;
	if (!g->sport || !g->dport || !parse_options(g, p + TCP_HLEN, hl - TCP_HLEN) ||
	    ((g->flags & TCP_SYN) && (g->flags & (TCP_RST | TCP_FIN)))) {
		s->stats.tcp.rx_errors++;
		return false;
	}
	return true;
}

/* --- opening --- */

/* Take the peer's SYN: its sequence numbers and options. */
static void take_syn(struct tcp_conn *c, const struct tcp_seg *g)
{
	uint32_t mss = g->mss ? g->mss : TCP_MSS_DEFAULT;

	c->irs = g->seq;
	c->rcv_nxt = c->rcv_user = c->rcv_adv = g->seq + 1;
	c->mss = max_u32(TCP_MSS_MIN, min_u32(mss, TCP_MSS_OURS));
	c->ws_ok = g->ws >= 0;
	c->snd_wscale = c->ws_ok ? (uint8_t)g->ws : 0;
	if (!c->ws_ok)
		c->rcv_wscale = 0;
	c->sack_ok = g->sack_ok;
	c->snd_wnd = c->max_sndwnd = g->wnd;	/* never scaled in a SYN */
	c->snd_wl1 = g->seq;
	c->snd_wl2 = g->ack;
	tcp_cc_init(c);
}

/* Room for one more half-open child?  Evict the oldest half-open one if
 * that is what is full; refuse if established children are not accepted. */
static bool backlog_room(struct tcp_conn *l)
{
	struct netstack *s = l->s;
	struct tcp_conn *old = NULL;
	unsigned half = 0, queued = 0;

	for (uint32_t i = 0; i < s->tcp.p.max_conns; i++) {
		struct tcp_conn *c = &s->tcp.conns[i];

		if (!c->used || c->parent != l || c->app_owned)
			continue;
		if (c->state != TCP_SYN_RCVD) {
			queued++;
			continue;
		}
		half++;
		if (!old || c->serial < old->serial)
			old = c;
	}
	if (queued >= l->backlog)
		return false;
	if (half >= l->backlog) {
		s->stats.tcp.syn_evicted++;
		tcp_conn_free(old);
	}
	return true;
}

static void listen_input(struct tcp_conn *l, const struct tcp_seg *g)
{
	struct netstack *s = l->s;
	struct tcp_conn *c;

	if (g->flags & TCP_RST)
		return;
	if (g->flags & TCP_ACK) {
		tcp_send_rst_reply(s, g);
		return;
	}
	if (!(g->flags & TCP_SYN))
		return;
	if (!backlog_room(l) || !(c = tcp_conn_alloc(s, true))) {
		s->stats.tcp.syn_dropped++;
		return;
	}
	tcp_conn_setup(c, g->src, g->sport, l->lport);
	c->parent = l;
	c->state = TCP_SYN_RCVD;
	take_syn(c, g);
	s->stats.tcp.passive_opens++;
	tcp_send_syn(c);
}

static void syn_sent_input(struct tcp_conn *c, const struct tcp_seg *g)
{
	struct netstack *s = c->s;
	bool has_ack = g->flags & TCP_ACK;
	bool ack_ok = has_ack && seq_gt(g->ack, c->iss) && seq_le(g->ack, c->snd_max);

	if (has_ack && !ack_ok) {
		if (!(g->flags & TCP_RST))
			tcp_send_rst_reply(s, g);
		return;
	}
	if (g->flags & TCP_RST) {
		if (ack_ok) {
			s->stats.tcp.rx_resets++;
			tcp_conn_done(c, -ECONNREFUSED);
		}
		return;
	}
	if (!(g->flags & TCP_SYN))
		return;
	take_syn(c, g);
	if (!ack_ok) {			/* simultaneous open */
		c->state = TCP_SYN_RCVD;
		tcp_send_syn(c);
		return;
	}
	c->snd_una = g->ack;
	if (c->rtt_timing)
		tcp_rtt_sample(c, s->now_us - c->rtt_start_us);
	c->rtt_timing = false;
	c->backoff = 0;
	c->t_rexmt = 0;
	c->last_progress_us = s->now_us;
	c->state = TCP_ESTABLISHED;
	c->ack_now = true;
	tcp_output(c);
}

/* --- synchronized states --- */

static uint32_t rcv_space(const struct tcp_conn *c)
{
	uint32_t used = c->rcv_nxt - c->rcv_user;
	uint32_t space = used < c->rsize ? c->rsize - used : 0;
	uint32_t promised = seq_gt(c->rcv_adv, c->rcv_nxt) ? c->rcv_adv - c->rcv_nxt : 0;

	return max_u32(space, promised);
}

/* RFC 9293 3.10.7.4 "first", lenient like common stacks: anything that
 * starts within the window and ends after rcv_nxt, or an empty segment
 * at or after rcv_nxt inside the window. */
static bool acceptable(const struct tcp_conn *c, const struct tcp_seg *g)
{
	uint32_t slen = g->len + !!(g->flags & TCP_SYN) + !!(g->flags & TCP_FIN);

	if (seq_gt(g->seq, c->rcv_nxt + rcv_space(c)))
		return false;
	if (!slen)
		return seq_ge(g->seq, c->rcv_nxt);
	return seq_gt(g->seq + slen, c->rcv_nxt);
}

static void rst_input(struct tcp_conn *c, const struct tcp_seg *g)
{
	struct netstack *s = c->s;

	if (g->seq != c->rcv_nxt) {	/* RFC 5961 3.2 */
		if (seq_gt(g->seq, c->rcv_nxt) &&
		    seq_lt(g->seq, c->rcv_nxt + rcv_space(c)))
			tcp_challenge_ack(c);
		return;
	}
	s->stats.tcp.rx_resets++;
	if (c->state == TCP_SYN_RCVD)
		tcp_conn_done(c, c->parent ? 0 : -ECONNREFUSED);
	else if (c->state == TCP_CLOSING || c->state == TCP_LAST_ACK ||
		 c->state == TCP_TIME_WAIT)
		tcp_conn_done(c, 0);
	else
		tcp_conn_done(c, -ECONNRESET);
}

/* The ACK completing a passive open: buffers are allocated only now, so
 * a SYN flood costs no buffer memory. */
static bool syn_rcvd_ack(struct tcp_conn *c, const struct tcp_seg *g)
{
	struct netstack *s = c->s;

	if (!seq_gt(g->ack, c->snd_una) || !seq_le(g->ack, c->snd_max)) {
		tcp_send_rst_reply(s, g);
		return false;
	}
	if (tcp_alloc_buffers(c)) {
		tcp_send_rst(c);
		tcp_conn_done(c, -ENOMEM);
		return false;
	}
	c->state = TCP_ESTABLISHED;
	c->snd_wnd = (uint32_t)g->wnd << c->snd_wscale;
	c->max_sndwnd = max_u32(c->max_sndwnd, c->snd_wnd);
	c->snd_wl1 = g->seq;
	c->snd_wl2 = g->ack;
	return true;
}

static bool is_dupack(const struct tcp_conn *c, const struct tcp_seg *g)
{
	return !g->len && !(g->flags & (TCP_SYN | TCP_FIN)) &&
	       g->ack == c->snd_una && c->snd_una != c->snd_max &&
	       c->snd_wnd && ((uint32_t)g->wnd << c->snd_wscale) == c->snd_wnd;
}

static void ack_advance(struct tcp_conn *c, uint32_t ack)
{
	struct netstack *s = c->s;
	uint32_t acked = ack - c->snd_una;

	if (c->snd_una == c->iss)
		acked--;		/* our SYN */
	if (seq_gt(ack, c->sb_seq)) {
		uint32_t n = min_u32(ack - c->sb_seq, c->sb_len);

		c->sb_seq += n;
		c->sb_len -= n;
	}
	if (c->rtt_timing && seq_gt(ack, c->rtt_seq)) {
		tcp_rtt_sample(c, s->now_us - c->rtt_start_us);
		c->rtt_timing = false;
	}
	c->snd_una = ack;
	if (seq_lt(c->snd_nxt, ack))
		c->snd_nxt = ack;
	tcp_sack_prune(c);
	tcp_rto_restore(c);
	c->last_progress_us = s->now_us;
	tcp_cc_ack(c, ack, acked);
	c->t_rexmt = c->snd_una == c->snd_max ? 0 : s->now_us + c->rto_us;
	c->tlp_out = false;
	tcp_arm_tlp(c);
}

/* RFC 9293 3.10.7.4 "fifth", SND.WL1/WL2 rule. */
static void window_update(struct tcp_conn *c, const struct tcp_seg *g)
{
	struct netstack *s = c->s;
	bool was_zero;

	if (!seq_lt(c->snd_wl1, g->seq) &&
	    !(c->snd_wl1 == g->seq && seq_le(c->snd_wl2, g->ack)))
		return;
	was_zero = !c->snd_wnd;
	c->snd_wnd = (uint32_t)g->wnd << c->snd_wscale;
	c->snd_wl1 = g->seq;
	c->snd_wl2 = g->ack;
	c->max_sndwnd = max_u32(c->max_sndwnd, c->snd_wnd);
	if (!c->snd_wnd)
		return;
	c->t_persist = 0;
	c->persist_backoff = 0;
	if (was_zero) {		/* all beyond the closed window was dropped */
		c->snd_nxt = c->snd_una;
		c->last_progress_us = s->now_us;
	}
	if (c->snd_una != c->snd_max && !c->t_rexmt)
		c->t_rexmt = s->now_us + c->rto_us;
}

/* Our FIN acknowledged: the state moves on.  False if c is gone. */
static bool fin_acked(struct tcp_conn *c)
{
	if (!c->fin_queued || c->snd_una != c->sb_seq + c->sb_len + 1)
		return true;
	switch (c->state) {
	case TCP_FIN_WAIT_1:
		c->state = TCP_FIN_WAIT_2;
		if (!c->app_owned)
			c->t_wait = c->s->now_us + TCP_FIN_WAIT2_US;
		break;
	case TCP_CLOSING:
		tcp_enter_time_wait(c);
		break;
	case TCP_LAST_ACK:
		tcp_conn_done(c, 0);
		return false;
	}
	return true;
}

/* RFC 9293 3.10.7.4 "fifth", with RFC 5961 5.2.  False: stop here. */
static bool ack_input(struct tcp_conn *c, const struct tcp_seg *g)
{
	uint32_t lowest = c->snd_una - max_u32(c->max_sndwnd, 65535);
	bool dup;

	if (seq_gt(g->ack, c->snd_max) || seq_lt(g->ack, lowest)) {
		c->ack_now = true;
		tcp_output(c);
		return false;
	}
	dup = is_dupack(c, g);
	tcp_sack_update(c, g);
	if (seq_gt(g->ack, c->snd_una))
		ack_advance(c, g->ack);
	window_update(c, g);
	if (dup) {
		c->s->stats.tcp.rx_dup_acks++;
		tcp_cc_dupack(c);
	}
	return fin_acked(c);
}

/* Cut the segment to [rcv_nxt, buffer end) and to the peer's FIN. */
static void trim(struct tcp_conn *c, struct tcp_seg *g)
{
	uint32_t right = c->rcv_user + c->rsize;

	if (seq_lt(g->seq, c->rcv_nxt)) {
		uint32_t d = c->rcv_nxt - g->seq;

		if (d > g->len)
			g->flags &= (uint8_t)~TCP_FIN;	/* FIN already had */
		d = min_u32(d, g->len);
		g->data += d;
		g->len -= d;
		g->seq = c->rcv_nxt;
	}
	if (seq_gt(g->seq + g->len, right)) {
		g->len = seq_gt(right, g->seq) ? right - g->seq : 0;
		g->flags &= (uint8_t)~TCP_FIN;
		c->ack_now = true;
	}
	if (c->rfin_known && seq_gt(g->seq + g->len, c->rfin_seq))
		g->len = seq_gt(c->rfin_seq, g->seq) ? c->rfin_seq - g->seq : 0;
}

/* Record [start, end) above rcv_nxt.  With no room left the segment is
 * dropped as if lost (held ranges are never forgotten: no reneging). */
static bool ooo_insert(struct tcp_conn *c, uint32_t start, uint32_t end)
{
	int i = tcp_range_add(&c->ooo, start, end);

	if (i < 0)
		return false;
	c->ooo_last = c->ooo.r[i].start;
	return true;
}

static bool ooo_holds(const struct tcp_conn *c, uint32_t start, uint32_t end)
{
	for (int i = 0; i < c->ooo.n; i++)
		if (seq_le(c->ooo.r[i].start, start) && seq_le(end, c->ooo.r[i].end))
			return true;
	return false;
}

static void ooo_drain(struct tcp_conn *c)
{
	struct tcp_rset *s = &c->ooo;

	while (s->n && seq_le(s->r[0].start, c->rcv_nxt)) {
		if (seq_gt(s->r[0].end, c->rcv_nxt))
			c->rcv_nxt = s->r[0].end;
		tcp_range_del(s, 0, 1);
	}
}

/* Copy trimmed data into the ring; ACK at once for out-of-order data and
 * filled holes (RFC 5681 4.2), else every second segment or on a timer.
 * Inside a receive batch (net_rx_batch) the every-second-segment ACK waits
 * for the batch's end, the next net_poll, as Linux's GRO makes one ACK of
 * the segments that one interrupt brought: the sender gets one stretch ACK
 * per batch instead of one per two segments, and both sides are spared
 * the frames between.  Never more than TCP_ACK_STRETCH segments wait. */
static void rcv_store(struct tcp_conn *c, const struct tcp_seg *g)
{
	struct netstack *s = c->s;
	bool had_ooo = c->ooo.n;

	if (g->seq != c->rcv_nxt) {
		s->stats.tcp.rx_ooo++;
		if (ooo_holds(c, g->seq, g->seq + g->len))
			tcp_dsack_note(c, g->seq, g->seq + g->len);
		if (ooo_insert(c, g->seq, g->seq + g->len))
			ring_put(c->rbuf, c->rsize, g->seq, g->data, g->len);
		c->ack_now = true;
		return;
	}
	ring_put(c->rbuf, c->rsize, g->seq, g->data, g->len);
	c->rcv_nxt += g->len;
	ooo_drain(c);
	c->bytes_in += c->rcv_nxt - g->seq;
	if (had_ooo || ++c->acks_pending >= TCP_ACK_STRETCH)
		c->ack_now = true;
	else if (c->acks_pending >= 2 && !s->rx_batch)
		c->ack_now = true;
	else if (c->acks_pending >= 2)
		c->t_delack = s->now_us;	/* due at the batch's end */
	else if (!c->t_delack)
		c->t_delack = s->now_us + s->tcp.p.delack_us;
}

/* Data after the application closed its end: reset (RFC 9293 3.10.4
 * leaves it open; RFC 2525 2.17 and common stacks reset).  False if c is
 * gone. */
static bool data_input(struct tcp_conn *c, const struct tcp_seg *g)
{
	if (c->state != TCP_ESTABLISHED && c->state != TCP_FIN_WAIT_1 &&
	    c->state != TCP_FIN_WAIT_2)
		return true;
	if (!c->app_owned && !c->parent) {
		tcp_send_rst(c);
		tcp_conn_done(c, -ECONNRESET);
		return false;
	}
	rcv_store(c, g);
	return true;
}

static void fin_consume(struct tcp_conn *c)
{
	c->rcv_nxt++;
	c->fin_rcvd = true;
	c->ack_now = true;
	if (c->state == TCP_ESTABLISHED)
		c->state = TCP_CLOSE_WAIT;
	else if (c->state == TCP_FIN_WAIT_1)
		c->state = TCP_CLOSING;
	else if (c->state == TCP_FIN_WAIT_2)
		tcp_enter_time_wait(c);
}

static void fin_input(struct tcp_conn *c, const struct tcp_seg *g)
{
	uint32_t fseq = g->seq + g->len;

	if ((g->flags & TCP_FIN) && !c->rfin_known &&
	    !(c->ooo.n && seq_gt(c->ooo.r[c->ooo.n - 1].end, fseq))) {
		c->rfin_known = true;
		c->rfin_seq = fseq;
	}
	if (g->flags & TCP_FIN)
		c->ack_now = true;
	if (c->rfin_known && !c->fin_rcvd && c->rcv_nxt == c->rfin_seq)
		fin_consume(c);
}

/* A new SYN for a TIME-WAIT tuple with a higher sequence number starts a
 * new connection (RFC 1122 4.2.2.13). */
static void time_wait_reuse(struct tcp_conn *c, const struct tcp_seg *g)
{
	struct netstack *s = c->s;
	struct tcp_conn *l;

	tcp_conn_free(c);
	l = tcp_lookup(s, g);
	if (l && l->state == TCP_LISTEN) {
		listen_input(l, g);
	} else {
		s->stats.tcp.rx_no_conn++;
		tcp_send_rst_reply(s, g);
	}
}

static bool unacceptable(struct tcp_conn *c, const struct tcp_seg *g)
{
	if (acceptable(c, g))
		return false;
	c->s->stats.tcp.rx_out_of_window++;
	if (g->len && seq_le(g->seq + g->len, c->rcv_nxt) &&
	    seq_ge(g->seq, c->rcv_nxt - c->rsize))
		tcp_dsack_note(c, g->seq, g->seq + g->len);
	if (c->state == TCP_TIME_WAIT && (g->flags & TCP_FIN))
		c->t_wait = c->s->now_us + c->s->tcp.p.time_wait_us;
	c->ack_now = true;
	tcp_output(c);
	return true;
}

static void sync_input(struct tcp_conn *c, struct tcp_seg *g)
{
	bool syn = g->flags & TCP_SYN, ack = g->flags & TCP_ACK;

	if (c->state == TCP_TIME_WAIT && syn && !ack && !c->app_owned &&
	    seq_gt(g->seq, c->rcv_nxt)) {
		time_wait_reuse(c, g);
		return;
	}
	if (c->state == TCP_SYN_RCVD && syn && !ack && g->seq == c->irs) {
		tcp_send_syn(c);	/* our SYN-ACK was lost */
		return;
	}
	if (g->flags & TCP_RST) {
		rst_input(c, g);
		return;
	}
	if (unacceptable(c, g))
		return;
	c->last_rx_us = c->s->now_us;
	if (syn) {
		tcp_challenge_ack(c);	/* RFC 5961 4.2 */
		return;
	}
	if (!ack || (c->state == TCP_SYN_RCVD && !syn_rcvd_ack(c, g)))
		return;
	if (!ack_input(c, g))
		return;
	trim(c, g);
	if (g->len && !data_input(c, g))
		return;
	fin_input(c, g);
	tcp_output(c);
}

void tcp_input(struct netstack *s, const uint8_t *iph, const uint8_t *seg,
	       size_t len)
{
	struct tcp_seg g;
	struct tcp_conn *c;

	s->stats.tcp.rx_segs++;
	if (!tcp_parse(s, iph, seg, len, &g))
		return;
	c = tcp_lookup(s, &g);
	if (!c) {
		s->stats.tcp.rx_no_conn++;
		if (!(g.flags & TCP_RST))
			tcp_send_rst_reply(s, &g);
		return;
	}
	c->segs_in++;
	if (c->state == TCP_LISTEN)
		listen_input(c, &g);
	else if (c->state == TCP_SYN_SENT)
		syn_sent_input(c, &g);
	else
		sync_input(c, &g);
}

/*
 * A router could not forward a segment of ours whole (DF is always set):
 * segments of at most mtu - 40 bytes from now on (options count, as for
 * the peer's MSS), never fewer than TCP_PMTU_MSS_MIN, and what is in
 * flight is sent again at once, cut anew: it was dropped, and the timer
 * would only resend it whole.  Not a sign of congestion, so cwnd stays
 * (RFC 1191 6.5; Linux's tcp_simple_retransmit).  Only a message that
 * quotes a sequence number in flight counts (RFC 5927 4.1.2): a blind
 * attacker must guess the window to shrink a connection's segments.
 */
void tcp_frag_needed(struct netstack *s, uint32_t rip, uint16_t lport,
		     uint16_t rport, uint32_t seq, uint32_t mtu)
{
	struct tcp_seg g = { .src = rip, .dst = s->ip, .sport = rport, .dport = lport };
	struct tcp_conn *c = tcp_lookup(s, &g);
	uint32_t mss = mtu > IP_HLEN + TCP_HLEN + TCP_PMTU_MSS_MIN ?
		       mtu - IP_HLEN - TCP_HLEN : TCP_PMTU_MSS_MIN;

	if (!c || c->state < TCP_ESTABLISHED || c->state == TCP_TIME_WAIT ||
	    seq_lt(seq, c->snd_una) || !seq_lt(seq, c->snd_max) || mss >= c->mss)
		return;
	c->mss = mss;
	s->stats.tcp.pmtu_lowered++;
	c->snd_nxt = c->snd_una;
	tcp_output(c);
}
