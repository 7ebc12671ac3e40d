/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * TCP internals shared by tcp.c (API, table), tcp_in.c (segment arrival),
 * tcp_out.c (segment building), tcp_timer.c (timers, RTT, congestion
 * control) and tcp_sack.c (SACK scoreboard, range sets).  Not for use
 * outside hv/net (tests may peek).
 *
 * Sequence space of one direction (RFC 9293 3.3.1), sender side:
 *   snd_una <= snd_nxt <= snd_max; data byte with sequence q lives in
 *   sbuf[q & (ssize-1)] for q in [sb_seq, sb_seq + sb_len); our FIN, once
 *   queued, has sequence sb_seq + sb_len.
 * Receiver side: bytes [rcv_user, rcv_nxt) are in order and unread, ooo
 *   lists held ranges above rcv_nxt; all in rbuf[q & (rsize-1)].
 */
#ifndef FERRY_HV_NET_TCP_PRIV_H
#define FERRY_HV_NET_TCP_PRIV_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "hv/net/net_priv.h"
#include "hv/net/tcp.h"

#define TCP_MSS_DEFAULT		536		/* RFC 9293 3.7.1 */
#define TCP_MSS_OURS		(ETH_MTU - IP_HLEN - TCP_HLEN)
/* Segments a receive batch may leave unacknowledged: 64 KiB of full
 * segments, the most Linux's GRO makes one of. */
#define TCP_ACK_STRETCH		(65536 / TCP_MSS_OURS)
#define TCP_MSS_MIN		64		/* floor for a hostile peer */
/* Floor for a path's MTU (RFC 1191): 576-byte datagrams, which every IPv4
 * host must take (RFC 791, RFC 1122 3.3.3).  RFC 1191's 68 would let a
 * forged ICMP that guessed a sequence number in flight cut segments to
 * 28 bytes, fifty times the per-segment cost. */
#define TCP_PMTU_MSS_MIN	TCP_MSS_DEFAULT
#define TCP_SACK_MAX		3		/* blocks we send per ACK */
#define TCP_SACK_RX_MAX		4		/* blocks we parse */
#define TCP_RSET_BYTES		2048		/* one range per this much buffer */
#define TCP_WSCALE_MAX		14		/* RFC 7323 2.3 */
#define TCP_INIT_RTO_US		1000000ull	/* RFC 6298 2.1 */
#define TCP_MAX_RTO_US		60000000ull	/* RFC 6298 2.5 */
#define TCP_SYN_RETRIES		6
#define TCP_SYNACK_RETRIES	4
#define TCP_FIN_WAIT2_US	60000000ull	/* orphans in FIN-WAIT-2 */
#define TCP_BUF_MAX		(64u << 20)
#define TCP_BUF_MIN		4096u
#define TCP_INIT_CWND_SEGS	10		/* RFC 6928 */
#define TCP_CHALLENGE_PER_SEC	100		/* RFC 5961 7 */
#define TCP_CHALLENGE_GAP_US	500000ull	/* one per connection per gap */
#define TCP_DUPTHRESH		3		/* RFC 5681 3.2 */
#define TCP_DUPTHRESH_MAX	16		/* after spurious recoveries */

static inline bool seq_lt(uint32_t a, uint32_t b) { return (int32_t)(a - b) < 0; }
static inline bool seq_le(uint32_t a, uint32_t b) { return (int32_t)(a - b) <= 0; }
static inline bool seq_gt(uint32_t a, uint32_t b) { return (int32_t)(a - b) > 0; }
static inline bool seq_ge(uint32_t a, uint32_t b) { return (int32_t)(a - b) >= 0; }

static inline uint32_t min_u32(uint32_t a, uint32_t b) { return a < b ? a : b; }
static inline uint32_t max_u32(uint32_t a, uint32_t b) { return a > b ? a : b; }

/* Rings are indexed by sequence number modulo their power-of-two size. */
static inline void ring_put(uint8_t *ring, uint32_t size, uint32_t seq,
			    const uint8_t *src, uint32_t len)
{
	uint32_t off = seq & (size - 1), first = min_u32(len, size - off);

	memcpy(ring + off, src, first);
	memcpy(ring, src + first, len - first);
}

static inline void ring_get(const uint8_t *ring, uint32_t size, uint32_t seq,
			    uint8_t *dst, uint32_t len)
{
	uint32_t off = seq & (size - 1), first = min_u32(len, size - off);

	memcpy(dst, ring + off, first);
	memcpy(dst + first, ring, len - first);
}

struct tcp_range {
	uint32_t start, end;		/* [start, end) in sequence space */
};

/* A sorted set of disjoint, non-adjacent ranges; r is allocated with the
 * connection's buffers, one range per TCP_RSET_BYTES of buffer, so that
 * even every other segment missing fits. */
struct tcp_rset {
	struct tcp_range *r;
	uint16_t n, max;
};

/* A parsed incoming segment; data points into the received frame. */
struct tcp_seg {
	uint32_t src, dst;		/* IPv4, host order */
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint16_t wnd;			/* raw field */
	uint8_t flags;
	const uint8_t *data;
	uint32_t len;			/* payload bytes */
	uint16_t mss;			/* 0: no option */
	int8_t ws;			/* -1: no option */
	bool sack_ok;
	uint8_t nsack;
	struct tcp_range sack[TCP_SACK_RX_MAX];
};

/*
 * One connection or listener.  Slots live in tcp_table.conns; `used` marks
 * a slot taken.  The application owns the slot while app_owned is set
 * (between connect/accept and close/abort); otherwise the stack frees it
 * when the connection ends.  All fields under the caller's stack lock.
 */
struct tcp_conn {
	struct netstack *s;
	bool used, app_owned, nodelay;
	bool ws_ok, sack_ok;		/* negotiated options */
	bool fin_queued;		/* our FIN follows the queued data */
	bool fin_rcvd;			/* peer's FIN consumed: end of stream */
	bool rfin_known;		/* peer's FIN seen, maybe out of order */
	bool ack_now, tx_blocked;
	bool no_tso;			/* the peer takes no TSO frames (-EXDEV) */
	bool in_recovery, rtt_timing;
	bool rto_recovery;		/* go-back-N after a timeout */
	bool undo_valid;		/* prior_* may be restored */
	bool tlp_out;			/* a tail loss probe is unanswered */
	bool dsack_pending;		/* send dsack first in the next ACK */
	uint8_t state;			/* enum tcp_state */
	uint8_t snd_wscale, rcv_wscale;
	uint8_t dupacks, backoff, persist_backoff, acks_pending;
	uint8_t dupthresh;		/* grows when reordering is seen */
	int err;			/* negative errno once failed */
	uint64_t serial;		/* creation order */
	uint64_t chal_last_us;		/* its last challenge ACK, 0: none */
	struct tcp_conn *parent;	/* listener, until accepted */
	uint16_t backlog;		/* listeners: limit of each queue */

	uint32_t lip, rip;
	uint16_t lport, rport;

	/* send side */
	uint32_t iss, snd_una, snd_nxt, snd_max;
	uint32_t snd_wnd, max_sndwnd, snd_wl1, snd_wl2;
	uint32_t mss;			/* largest segment we send */
	uint32_t cwnd, ssthresh, recover, bytes_acked;
	uint32_t high_rxt;		/* highest sequence sent again */
	uint32_t rxt_fence;		/* snd_max at the last hole resent */
	/* undoing a reduction that D-SACKs prove spurious (RFC 2883 4.3) */
	uint32_t prior_cwnd, prior_ssthresh, undo_marker, undo_end;
	uint32_t undo_retrans;		/* resent segments not D-SACKed */
	struct tcp_rset sacked;		/* scoreboard */
	uint32_t srtt_us, rttvar_us, rto_us, rtt_seq;
	uint64_t rtt_start_us;
	uint8_t *sbuf;
	uint32_t ssize, sb_seq, sb_len;

	/* receive side */
	uint32_t irs, rcv_nxt, rcv_user, rcv_adv, rfin_seq;
	uint8_t *rbuf;
	uint32_t rsize;
	uint32_t ooo_last;		/* start of most recent held range */
	struct tcp_rset ooo;		/* held out-of-order ranges */
	struct tcp_range dsack;		/* duplicate just received */

	/* timers: absolute microseconds, 0 = off */
	uint64_t t_rexmt, t_persist, t_delack, t_wait, t_tlp;
	uint64_t last_progress_us;	/* snd_una moved, window opened, or data
					 * went out with nothing outstanding */
	uint64_t last_rx_us;		/* last acceptable segment */
	uint64_t probe_us;		/* last zero-window probe sent */

	uint64_t bytes_in, bytes_out, segs_in, segs_out, retransmits;
};

/* tcp.c */
struct tcp_conn *tcp_conn_alloc(struct netstack *s, bool for_syn);
void tcp_conn_free(struct tcp_conn *c);
void tcp_conn_setup(struct tcp_conn *c, uint32_t rip, uint16_t rport,
		    uint16_t lport);
int tcp_alloc_buffers(struct tcp_conn *c);
struct tcp_conn *tcp_lookup(struct netstack *s, const struct tcp_seg *g);
/* The connection has ended (err 0: normally); frees orphans. */
void tcp_conn_done(struct tcp_conn *c, int err);
void tcp_enter_time_wait(struct tcp_conn *c);
uint32_t tcp_rcv_queued(const struct tcp_conn *c);

/* tcp_out.c */
void tcp_output(struct tcp_conn *c);
void tcp_send_ack(struct tcp_conn *c);
void tcp_send_syn(struct tcp_conn *c);
void tcp_send_rst(struct tcp_conn *c);
void tcp_send_rst_reply(struct netstack *s, const struct tcp_seg *g);
/* Send up to one segment at seq (a retransmission or probe) ignoring the
 * windows; returns the sequence space it covered (0 if none). */
uint32_t tcp_send_at(struct tcp_conn *c, uint32_t seq, uint32_t maxlen);
void tcp_challenge_ack(struct tcp_conn *c);
/* Window to offer beyond rcv_nxt, after receive-side SWS avoidance. */
uint32_t tcp_rcv_window(const struct tcp_conn *c);

/* tcp_sack.c */
/* Insert [start, end) into a sorted set of at most max ranges, merging;
 * returns its index, or -1 if it did not fit (the set is unchanged). */
int tcp_range_add(struct tcp_rset *s, uint32_t start, uint32_t end);
void tcp_range_del(struct tcp_rset *s, int i, int k);
void tcp_sack_update(struct tcp_conn *c, const struct tcp_seg *g);
void tcp_sack_prune(struct tcp_conn *c);
bool tcp_sack_lost_enough(const struct tcp_conn *c);
void tcp_dsack_note(struct tcp_conn *c, uint32_t start, uint32_t end);
uint32_t tcp_sack_pipe(const struct tcp_conn *c);
uint32_t tcp_sack_skip(const struct tcp_conn *c, uint32_t seq, uint32_t *room);
void tcp_sack_retransmit(struct tcp_conn *c);
void tcp_sack_lost_rexmit(struct tcp_conn *c);

/* tcp_timer.c: timers, RTT (RFC 6298), NewReno (RFC 5681, 6582) */
void tcp_timers_init(struct tcp_conn *c);
void tcp_rtt_sample(struct tcp_conn *c, uint64_t rtt_us);
void tcp_rto_restore(struct tcp_conn *c);
void tcp_cc_init(struct tcp_conn *c);
void tcp_cc_ack(struct tcp_conn *c, uint32_t ack, uint32_t acked);
void tcp_cc_dupack(struct tcp_conn *c);
void tcp_cc_undo_check(struct tcp_conn *c, uint32_t start, uint32_t end);
void tcp_arm_persist(struct tcp_conn *c);
void tcp_arm_tlp(struct tcp_conn *c);
uint64_t tcp_conn_poll(struct tcp_conn *c);
/* Duplicate ACKs (or SACKed segments) that signal a loss: the learnt
 * threshold, but never above a quarter of the flight, so that small
 * windows still recover without a timeout. */
static inline uint32_t tcp_dupthresh(const struct tcp_conn *c)
{
	uint32_t quarter = (c->snd_max - c->snd_una) / c->mss / 4;

	return max_u32(TCP_DUPTHRESH, min_u32(c->dupthresh, quarter));
}

#endif
