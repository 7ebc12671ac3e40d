/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * TCP timers and congestion control: retransmission timeout (RFC 6298),
 * persist (zero-window probes, RFC 9293 3.8.6.1), delayed ACK (RFC 1122
 * 4.2.3.2), TIME-WAIT; slow start and congestion avoidance with
 * appropriate byte counting (RFC 5681, RFC 3465 L=2), fast retransmit and
 * NewReno fast recovery (RFC 6582).  All times are microseconds.
 */
#include "hv/net/tcp_priv.h"

#include <errno.h>

#define RTT_GRANULARITY_US	1000
#define PERSIST_BACKOFF_MAX	10
#define BACKOFF_MAX		30

void tcp_timers_init(struct tcp_conn *c)
{
	c->rto_us = TCP_INIT_RTO_US;
	c->srtt_us = c->rttvar_us = 0;
	c->last_progress_us = c->last_rx_us = c->s->now_us;
}

static uint64_t clamp_rto(const struct tcp_conn *c, uint64_t rto)
{
	if (rto < c->s->tcp.p.min_rto_us)
		rto = c->s->tcp.p.min_rto_us;
	return rto > TCP_MAX_RTO_US ? TCP_MAX_RTO_US : rto;
}

static void rto_from_srtt(struct tcp_conn *c)
{
	uint64_t var4 = 4 * (uint64_t)c->rttvar_us;

	if (!c->srtt_us)
		return;
	c->rto_us = (uint32_t)clamp_rto(c, c->srtt_us +
		    (var4 > RTT_GRANULARITY_US ? var4 : RTT_GRANULARITY_US));
}

/* New data acknowledged after timeouts: the backed-off RTO goes, as in
 * BSD, rather than waiting for an RTT sample that Karn's rule may not
 * allow for a long time. */
void tcp_rto_restore(struct tcp_conn *c)
{
	if (c->backoff)
		rto_from_srtt(c);
	c->backoff = 0;
}

/* RFC 6298 2.2 and 2.3, in integers: alpha 1/8, beta 1/4, K 4. */
void tcp_rtt_sample(struct tcp_conn *c, uint64_t r)
{
	if (r > TCP_MAX_RTO_US)
		r = TCP_MAX_RTO_US;
	if (!r)
		r = 1;		/* srtt 0 means "no sample yet" */
	if (!c->srtt_us) {
		c->srtt_us = (uint32_t)r;
		c->rttvar_us = (uint32_t)(r / 2);
	} else {
		uint64_t d = c->srtt_us > r ? c->srtt_us - r : r - c->srtt_us;

		c->rttvar_us = (uint32_t)((3 * (uint64_t)c->rttvar_us + d) / 4);
		c->srtt_us = (uint32_t)((7 * (uint64_t)c->srtt_us + r) / 8);
	}
	rto_from_srtt(c);
}

/* RFC 6928 initial window; ssthresh starts "arbitrarily high". */
void tcp_cc_init(struct tcp_conn *c)
{
	c->cwnd = min_u32(TCP_INIT_CWND_SEGS * c->mss, max_u32(2 * c->mss, 14600));
	c->ssthresh = 1u << 30;
	c->bytes_acked = 0;
	c->dupacks = 0;
	c->in_recovery = false;
	c->recover = c->iss;
	c->dupthresh = TCP_DUPTHRESH;
}

/* A congestion response starts: remember what to restore should it prove
 * spurious (RFC 3708 / RFC 4015 style, driven by D-SACK). */
static void undo_save(struct tcp_conn *c)
{
	if (c->undo_valid)
		return;			/* keep the state before the first */
	c->undo_valid = true;
	c->prior_cwnd = c->cwnd;
	c->prior_ssthresh = c->ssthresh;
	c->undo_marker = c->snd_una;
	c->undo_end = 0;
	c->undo_retrans = 0;
}

static void undo(struct tcp_conn *c)
{
	c->cwnd = max_u32(c->cwnd, c->prior_cwnd);
	c->ssthresh = max_u32(c->ssthresh, c->prior_ssthresh);
	c->in_recovery = c->rto_recovery = false;
	c->dupacks = 0;
	c->undo_valid = false;
	if (c->dupthresh < TCP_DUPTHRESH_MAX)
		c->dupthresh++;
	c->s->stats.tcp.spurious_undos++;
}

/* A D-SACK for [start, end).  Once the episode is over and every segment
 * resent in it has come back as a duplicate, the losses were reordering. */
void tcp_cc_undo_check(struct tcp_conn *c, uint32_t start, uint32_t end)
{
	if (!c->undo_valid || seq_lt(start, c->undo_marker) ||
	    seq_gt(end, c->snd_max) || !c->undo_retrans)
		return;
	if (!--c->undo_retrans && !c->in_recovery && !c->rto_recovery)
		undo(c);
}

static void episode_end(struct tcp_conn *c)
{
	c->undo_end = c->snd_max;	/* D-SACKs may still come */
	if (c->undo_valid && !c->undo_retrans)
		undo(c);
}

static uint32_t flight(const struct tcp_conn *c)
{
	return c->snd_max - c->snd_una;
}

static void cc_recovery_ack(struct tcp_conn *c, uint32_t ack, uint32_t acked)
{
	if (seq_ge(ack, c->recover)) {		/* full ACK: RFC 6582 3.2 (3) */
		c->cwnd = min_u32(c->ssthresh, max_u32(flight(c), c->mss) + c->mss);
		c->in_recovery = false;
		c->dupacks = 0;
		episode_end(c);
		return;
	}
	if (c->sack_ok)		/* tcp_output resends holes by the pipe */
		return;
	/* partial ACK: resend the next hole, deflate (RFC 6582 3.2 (4)) */
	tcp_send_at(c, ack, c->mss);
	c->cwnd = (c->cwnd > acked ? c->cwnd - acked : 0) +
		  (acked >= c->mss ? c->mss : 0);
	c->cwnd = max_u32(c->cwnd, c->mss);
}

void tcp_cc_ack(struct tcp_conn *c, uint32_t ack, uint32_t acked)
{
	if (c->in_recovery) {
		cc_recovery_ack(c, ack, acked);
		return;
	}
	c->dupacks = 0;
	if (c->rto_recovery && seq_ge(ack, c->recover)) {
		c->rto_recovery = false;
		episode_end(c);
	}
	if (c->undo_valid && c->undo_end && seq_ge(ack, c->undo_end))
		c->undo_valid = false;	/* too late to tell */
	if (c->cwnd < c->ssthresh) {
		/* a stretch ACK (GRO, or net_rx_batch at a ferry receiver)
		 * counts for the segments it covers, as Linux counts it:
		 * RFC 3465's L = 2 SMSS would slow the start to a crawl */
		c->cwnd += min_u32(acked, TCP_ACK_STRETCH * c->mss);
	} else {
		c->bytes_acked += acked;
		if (c->bytes_acked >= c->cwnd) {
			c->bytes_acked -= c->cwnd;
			c->cwnd += c->mss;
		}
	}
	c->cwnd = min_u32(c->cwnd, 1u << 30);
}

/* Fast retransmit: RFC 5681 3.2, RFC 6582 3.2 (1), (2), RFC 6675 5. */
static void enter_recovery(struct tcp_conn *c)
{
	uint32_t n;

	undo_save(c);
	c->ssthresh = max_u32(flight(c) / 2, 2 * c->mss);
	c->recover = c->snd_max;
	c->in_recovery = true;
	c->s->stats.tcp.fast_retransmits++;
	c->high_rxt = c->snd_una;
	n = tcp_send_at(c, c->snd_una, c->mss);
	c->high_rxt = c->snd_una + n;
	c->rxt_fence = c->snd_max;
	c->cwnd = c->sack_ok ? c->ssthresh : c->ssthresh + 3 * c->mss;
}

void tcp_cc_dupack(struct tcp_conn *c)
{
	if (c->dupacks < 255)
		c->dupacks++;
	if (c->in_recovery) {
		if (!c->sack_ok)
			c->cwnd += c->mss;	/* NewReno inflation */
	} else if ((c->dupacks >= tcp_dupthresh(c) ||
		    (c->sack_ok && (tcp_sack_lost_enough(c) ||
				    (c->tlp_out && c->sacked.n)))) &&
		   !seq_lt(c->snd_una, c->recover)) {
		enter_recovery(c);
	}
	tcp_output(c);
}

static uint64_t persist_interval(const struct tcp_conn *c)
{
	uint64_t t = (uint64_t)c->rto_us << c->persist_backoff;

	return clamp_rto(c, t);
}

void tcp_arm_persist(struct tcp_conn *c)
{
	bool pending = seq_lt(c->snd_una, c->sb_seq + c->sb_len);

	if (c->snd_wnd || !pending || c->t_rexmt || c->t_persist)
		return;
	c->t_persist = c->s->now_us + persist_interval(c);
}

/* Tail loss probe (RFC 8985 7): when the last segments of a flight may be
 * lost there are no duplicate ACKs to tell; after two smoothed RTTs send
 * one segment (new data, else the last one again) to draw a SACK that
 * starts fast recovery, instead of waiting for the RTO. */
static bool tlp_eligible(const struct tcp_conn *c)
{
	return c->sack_ok && c->srtt_us && !c->in_recovery && !c->rto_recovery &&
	       !c->tlp_out && c->snd_wnd && c->snd_una != c->snd_max &&
	       c->t_rexmt && (c->state == TCP_ESTABLISHED ||
			      c->state == TCP_CLOSE_WAIT || c->state == TCP_FIN_WAIT_1);
}

void tcp_arm_tlp(struct tcp_conn *c)
{
	uint64_t pto = 2 * (uint64_t)c->srtt_us, now = c->s->now_us;

	c->t_tlp = 0;
	if (!tlp_eligible(c))
		return;
	if (c->snd_max - c->snd_una <= c->mss)
		pto += 200000;		/* a lone segment may wait for a delayed ACK */
	if (pto < 10000)
		pto = 10000;
	if (now + pto < c->t_rexmt)
		c->t_tlp = now + pto;
}

static void tlp_timeout(struct tcp_conn *c)
{
	uint32_t end = c->sb_seq + c->sb_len, n;

	c->t_tlp = 0;
	if (!tlp_eligible(c))
		return;
	c->s->stats.tcp.tail_probes++;
	if (seq_lt(c->snd_nxt, end) &&
	    seq_lt(c->snd_nxt, c->snd_una + c->snd_wnd))
		n = tcp_send_at(c, c->snd_nxt, c->mss);
	else
		n = tcp_send_at(c, c->snd_max - min_u32(c->mss, c->snd_max - c->snd_una),
				c->mss);
	if (!n)
		return;
	c->tlp_out = true;
	c->t_rexmt = c->s->now_us + c->rto_us;
}

static void give_up(struct tcp_conn *c)
{
	c->s->stats.tcp.conn_timeouts++;
	tcp_send_rst(c);
	tcp_conn_done(c, -ETIMEDOUT);
}

static bool user_timeout(const struct tcp_conn *c)
{
	return c->s->now_us - c->last_progress_us >= c->s->tcp.p.user_timeout_us;
}

static void syn_timeout(struct tcp_conn *c)
{
	unsigned limit = c->state == TCP_SYN_SENT ? TCP_SYN_RETRIES :
						    TCP_SYNACK_RETRIES;

	if (++c->backoff > limit) {
		c->s->stats.tcp.conn_timeouts++;
		tcp_conn_done(c, c->parent ? 0 : -ETIMEDOUT);
		return;
	}
	c->rto_us = (uint32_t)clamp_rto(c, 2 * (uint64_t)c->rto_us);
	c->rtt_timing = false;
	tcp_send_syn(c);
}

/* RFC 6298 5.4-5.6 and RFC 5681 3.1 (loss window). */
static void rexmt_timeout(struct tcp_conn *c)
{
	c->t_rexmt = 0;
	c->s->stats.tcp.rto_timeouts++;
	if (c->state == TCP_SYN_SENT || c->state == TCP_SYN_RCVD) {
		syn_timeout(c);
		return;
	}
	if (user_timeout(c)) {
		give_up(c);
		return;
	}
	if (c->snd_una == c->snd_max)
		return;
	if (!c->snd_wnd && seq_lt(c->snd_una, c->sb_seq + c->sb_len)) {	/* data behind a closed window: probe */
		tcp_arm_persist(c);
		return;
	}
	undo_save(c);
	if (!c->backoff)
		c->ssthresh = max_u32(flight(c) / 2, 2 * c->mss);
	c->cwnd = c->mss;
	c->bytes_acked = 0;
	c->in_recovery = false;
	c->dupacks = 0;
	c->recover = c->snd_max;
	c->rto_recovery = true;
	c->high_rxt = c->snd_una;
	c->rxt_fence = c->snd_max;
	if (c->backoff)
		c->sacked.n = 0;	/* stale or reneged: RFC 2018 8 */
	if (c->backoff < BACKOFF_MAX)
		c->backoff++;
	c->rto_us = (uint32_t)clamp_rto(c, 2 * (uint64_t)c->rto_us);
	c->rtt_timing = false;
	c->snd_nxt = c->snd_una;
	tcp_output(c);
}

/* A peer that answers the probes (with a zero window) keeps the
 * connection alive as long as the application holds it; a silent peer,
 * or a stuck orphan, ends it after the user timeout. */
static void persist_timeout(struct tcp_conn *c)
{
	uint64_t limit = c->s->tcp.p.user_timeout_us, now = c->s->now_us;

	c->t_persist = 0;
	if ((c->last_rx_us < c->probe_us && now - c->last_rx_us >= limit) ||
	    (!c->app_owned && now - c->last_progress_us >= limit)) {
		give_up(c);
		return;
	}
	c->probe_us = now;
	c->s->stats.tcp.zwin_probes++;
	tcp_send_at(c, c->snd_una, 1);	/* one byte past the window */
	c->t_rexmt = 0;
	if (c->persist_backoff < PERSIST_BACKOFF_MAX)
		c->persist_backoff++;
	c->t_persist = c->s->now_us + persist_interval(c);
}

static void wait_timeout(struct tcp_conn *c)
{
	c->t_wait = 0;
	if (c->state == TCP_TIME_WAIT ||
	    (c->state == TCP_FIN_WAIT_2 && !c->app_owned))
		tcp_conn_done(c, 0);
}

static bool due(const struct tcp_conn *c, uint64_t t)
{
	return c->used && t && c->s->now_us >= t;
}

static uint64_t earliest(uint64_t a, uint64_t b)
{
	if (!b)
		return a;
	return a < b ? a : b;
}

uint64_t tcp_conn_poll(struct tcp_conn *c)
{
	uint64_t next = UINT64_MAX;

	if (c->tx_blocked)
		tcp_output(c);
	if (due(c, c->t_delack)) {
		c->t_delack = 0;
		c->ack_now = true;
		tcp_output(c);
	}
	if (due(c, c->t_rexmt))
		rexmt_timeout(c);
	if (due(c, c->t_persist))
		persist_timeout(c);
	if (due(c, c->t_tlp))
		tlp_timeout(c);
	if (due(c, c->t_wait))
		wait_timeout(c);
	if (!c->used)
		return next;
	next = earliest(next, c->t_delack);
	next = earliest(next, c->t_rexmt);
	next = earliest(next, c->t_persist);
	next = earliest(next, c->t_wait);
	next = earliest(next, c->t_tlp);
	if (c->tx_blocked)
		next = earliest(next, c->s->now_us + 1000);
	return next;
}

uint64_t tcp_poll(struct netstack *s)
{
	uint64_t next = UINT64_MAX;

	for (uint32_t i = 0; i < s->tcp.p.max_conns; i++) {
		struct tcp_conn *c = &s->tcp.conns[i];
		uint64_t t;

		if (!c->used || c->state == TCP_LISTEN)
			continue;
		t = tcp_conn_poll(c);
		if (t < next)
			next = t;
	}
	return next;
}
