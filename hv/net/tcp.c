/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * TCP connection table and the stream API of tcp.h: open, accept, send,
 * receive, close.  Segment processing is in tcp_in.c, building segments in
 * tcp_out.c, timers and congestion control in tcp_timer.c.
 */
#include "hv/net/tcp_priv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define EPHEMERAL_LO	49152u
#define EPHEMERAL_N	16384u

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = TCP_BUF_MIN;

	if (v > TCP_BUF_MAX)
		v = TCP_BUF_MAX;
	while (p < v)
		p <<= 1;
	return p;
}

int tcp_init(struct netstack *s, const struct net_config *cfg)
{
	struct tcp_table *t = &s->tcp;

	t->p.max_conns = cfg->max_conns ? cfg->max_conns : 16;
	t->p.sndbuf = pow2_at_least(cfg->sndbuf ? cfg->sndbuf : 1u << 20);
	t->p.rcvbuf = pow2_at_least(cfg->rcvbuf ? cfg->rcvbuf : 1u << 20);
	t->p.syn_backlog = cfg->syn_backlog ? cfg->syn_backlog : 16;
	t->p.user_timeout_us = (uint64_t)(cfg->user_timeout_ms ?: 60000) * 1000;
	t->p.time_wait_us = (uint64_t)(cfg->time_wait_ms ?: 60000) * 1000;
	t->p.min_rto_us = (uint64_t)(cfg->min_rto_ms ?: 200) * 1000;
	t->p.delack_us = (uint64_t)(cfg->delack_ms ?: 40) * 1000;
	t->secret[0] = net_rand(s);
	t->secret[1] = net_rand(s);
	t->next_port = (uint16_t)(EPHEMERAL_LO + net_rand(s) % EPHEMERAL_N);
	t->conns = calloc(t->p.max_conns, sizeof(*t->conns));
	return t->conns ? 0 : -ENOMEM;
}

/* --- ISN (RFC 6528): a 4 us clock plus SipHash-2-4 of the 4-tuple. --- */

static uint64_t rotl(uint64_t x, int b)
{
	return x << b | x >> (64 - b);
}

static void sip_round(uint64_t v[4])
{
	v[0] += v[1]; v[1] = rotl(v[1], 13); v[1] ^= v[0]; v[0] = rotl(v[0], 32);
	v[2] += v[3]; v[3] = rotl(v[3], 16); v[3] ^= v[2];
	v[0] += v[3]; v[3] = rotl(v[3], 21); v[3] ^= v[0];
	v[2] += v[1]; v[1] = rotl(v[1], 17); v[1] ^= v[2]; v[2] = rotl(v[2], 32);
}

static void sip_word(uint64_t v[4], uint64_t m)
{
	v[3] ^= m;
	sip_round(v);
	sip_round(v);
	v[0] ^= m;
}

static uint64_t siphash24(const uint64_t k[2], uint64_t m0, uint64_t m1)
{
	uint64_t v[4] = { k[0] ^ 0x736f6d6570736575ull, k[1] ^ 0x646f72616e646f6dull,
			  k[0] ^ 0x6c7967656e657261ull, k[1] ^ 0x7465646279746573ull };

	sip_word(v, m0);
	sip_word(v, m1);
	sip_word(v, 16ull << 56);
	v[2] ^= 0xff;
	for (int i = 0; i < 4; i++)
		sip_round(v);
	return v[0] ^ v[1] ^ v[2] ^ v[3];
}

static uint32_t tcp_isn(struct tcp_conn *c)
{
	uint64_t m0 = (uint64_t)c->lip << 32 | c->rip;
	uint64_t m1 = (uint64_t)c->lport << 16 | c->rport;

	return (uint32_t)(c->s->now_us / 4) +
	       (uint32_t)siphash24(c->s->tcp.secret, m0, m1);
}

/* --- slots --- */

static struct tcp_conn *oldest(struct netstack *s, uint8_t state)
{
	struct tcp_conn *best = NULL;

	for (uint32_t i = 0; i < s->tcp.p.max_conns; i++) {
		struct tcp_conn *c = &s->tcp.conns[i];

		if (c->used && c->state == state && !c->app_owned &&
		    (!best || c->serial < best->serial))
			best = c;
	}
	return best;
}

/* The oldest connection that its owner closed and that still waits for
 * the peer to finish (FIN-WAIT-1/2, CLOSING, LAST-ACK). */
static struct tcp_conn *oldest_orphan(struct netstack *s)
{
	static const uint8_t states[] = { TCP_FIN_WAIT_1, TCP_FIN_WAIT_2, TCP_CLOSING,
					  TCP_LAST_ACK };
	struct tcp_conn *best = NULL, *c;

	for (unsigned int i = 0; i < sizeof(states); i++)
		if ((c = oldest(s, states[i])) && (!best || c->serial < best->serial))
			best = c;
	return best;
}

/* A free slot; when full, recycle the oldest orphaned TIME-WAIT, then the
 * oldest other orphan (reset: a peer that never finishes closing must not
 * hold the table, which migrations share), and for a SYN the oldest
 * half-open connection. */
struct tcp_conn *tcp_conn_alloc(struct netstack *s, bool for_syn)
{
	struct tcp_conn *c = NULL;

	for (uint32_t i = 0; i < s->tcp.p.max_conns && !c; i++)
		if (!s->tcp.conns[i].used)
			c = &s->tcp.conns[i];
	if (!c && (c = oldest(s, TCP_TIME_WAIT)))
		tcp_conn_free(c);
	if (!c && (c = oldest_orphan(s))) {
		s->stats.tcp.orphans_reset++;
		tcp_send_rst(c);
		tcp_conn_free(c);
	}
	if (!c && for_syn && (c = oldest(s, TCP_SYN_RCVD))) {
		s->stats.tcp.syn_evicted++;
		tcp_conn_free(c);
	}
	if (!c)
		return NULL;
	memset(c, 0, sizeof(*c));
	c->s = s;
	c->used = true;
	c->serial = ++s->tcp.serial;
	return c;
}

static int rset_alloc(struct tcp_rset *s, uint32_t bufsize)
{
	uint32_t max = min_u32(bufsize / TCP_RSET_BYTES + 16, 65535);

	if (!s->r)
		s->r = malloc(max * sizeof(*s->r));
	s->n = 0;
	s->max = s->r ? (uint16_t)max : 0;
	return s->r ? 0 : -ENOMEM;
}

static void free_buffers(struct tcp_conn *c)
{
	free(c->sbuf);
	free(c->rbuf);
	free(c->ooo.r);
	free(c->sacked.r);
	c->sbuf = c->rbuf = NULL;
	memset(&c->ooo, 0, sizeof(c->ooo));
	memset(&c->sacked, 0, sizeof(c->sacked));
}

int tcp_alloc_buffers(struct tcp_conn *c)
{
	if (!c->sbuf)
		c->sbuf = malloc(c->ssize);
	if (!c->rbuf)
		c->rbuf = malloc(c->rsize);
	if (!c->sbuf || !c->rbuf || rset_alloc(&c->ooo, c->rsize) ||
	    rset_alloc(&c->sacked, c->ssize)) {
		free_buffers(c);
		return -ENOMEM;
	}
	return 0;
}

void tcp_conn_free(struct tcp_conn *c)
{
	if (c->s->tcp.last == c)
		c->s->tcp.last = NULL;
	free_buffers(c);
	c->used = false;
	c->app_owned = false;
	c->state = TCP_CLOSED;
}

/* Identity, sequence numbers and defaults of a new connection. */
void tcp_conn_setup(struct tcp_conn *c, uint32_t rip, uint16_t rport,
		    uint16_t lport)
{
	const struct tcp_params *p = &c->s->tcp.p;

	c->lip = c->s->ip;
	c->rip = rip;
	c->lport = lport;
	c->rport = rport;
	c->ssize = p->sndbuf;
	c->rsize = p->rcvbuf;
	c->iss = tcp_isn(c);
	c->snd_una = c->snd_nxt = c->snd_max = c->iss;
	c->sb_seq = c->iss + 1;
	c->recover = c->iss;
	c->mss = TCP_MSS_DEFAULT;
	c->ws_ok = c->sack_ok = false;
	c->rcv_wscale = 0;
	while (c->rcv_wscale < TCP_WSCALE_MAX && (c->rsize >> c->rcv_wscale) > 65535)
		c->rcv_wscale++;
	tcp_timers_init(c);
}

void tcp_conn_done(struct tcp_conn *c, int err)
{
	c->state = TCP_CLOSED;
	if (err && !c->err)
		c->err = err;
	c->t_rexmt = c->t_persist = c->t_delack = c->t_wait = c->t_tlp = 0;
	c->ack_now = c->tx_blocked = false;
	if (!c->app_owned)
		tcp_conn_free(c);
}

void tcp_enter_time_wait(struct tcp_conn *c)
{
	c->state = TCP_TIME_WAIT;
	c->t_rexmt = c->t_persist = c->t_tlp = 0;
	c->t_wait = c->s->now_us + c->s->tcp.p.time_wait_us;
	if (!c->app_owned)
		free_buffers(c);
}

static bool tuple_match(const struct tcp_conn *c, const struct tcp_seg *g)
{
	return c->used && c->state != TCP_LISTEN && c->state != TCP_CLOSED &&
	       c->lport == g->dport &&
	       c->rport == g->sport && c->rip == g->src && c->lip == g->dst;
}

struct tcp_conn *tcp_lookup(struct netstack *s, const struct tcp_seg *g)
{
	struct tcp_table *t = &s->tcp;
	struct tcp_conn *listener = NULL;

	if (t->last && tuple_match(t->last, g))
		return t->last;
	for (uint32_t i = 0; i < t->p.max_conns; i++) {
		struct tcp_conn *c = &t->conns[i];

		if (tuple_match(c, g)) {
			t->last = c;
			return c;
		}
		if (c->used && c->state == TCP_LISTEN && c->lport == g->dport)
			listener = c;
	}
	return listener;
}

static bool port_in_use(struct netstack *s, uint16_t port)
{
	for (uint32_t i = 0; i < s->tcp.p.max_conns; i++)
		if (s->tcp.conns[i].used && s->tcp.conns[i].lport == port)
			return true;
	return false;
}

/* A listener on port: connections keep their own four-tuples (tcp_lookup
 * matches them first), so those left by an earlier listener, open or in
 * TIME-WAIT, do not keep a new one from listening there. */
static bool listening_on(struct netstack *s, uint16_t port)
{
	for (uint32_t i = 0; i < s->tcp.p.max_conns; i++)
		if (s->tcp.conns[i].used && s->tcp.conns[i].state == TCP_LISTEN &&
		    s->tcp.conns[i].lport == port)
			return true;
	return false;
}

static int ephemeral_port(struct netstack *s, uint16_t *port)
{
	for (uint32_t n = 0; n < EPHEMERAL_N; n++) {
		uint16_t p = s->tcp.next_port;
		uint32_t q = (uint32_t)p + 1;

		s->tcp.next_port = (uint16_t)(q < EPHEMERAL_LO + EPHEMERAL_N ?
					      q : EPHEMERAL_LO);
		if (!port_in_use(s, p)) {
			*port = p;
			return 0;
		}
	}
	return -EADDRINUSE;
}

/* --- the API --- */

int tcp_connect(struct netstack *s, uint32_t ip, uint16_t port,
		struct tcp_conn **out)
{
	struct tcp_conn *c;
	uint16_t lport;
	int rc;

	if (!s->ip)
		return -EADDRNOTAVAIL;
	if (!port || !ip_is_unicast(s, ip) || ip == s->ip)
		return -EINVAL;
	rc = ephemeral_port(s, &lport);
	if (rc)
		return rc;
	c = tcp_conn_alloc(s, false);
	if (!c)
		return -ENOMEM;
	tcp_conn_setup(c, ip, port, lport);
	if (tcp_alloc_buffers(c)) {
		tcp_conn_free(c);
		return -ENOMEM;
	}
	c->app_owned = true;
	c->state = TCP_SYN_SENT;
	s->stats.tcp.active_opens++;
	tcp_send_syn(c);
	*out = c;
	return 0;
}

int tcp_connected(struct tcp_conn *c)
{
	if (c->err)
		return c->err;
	if (c->state == TCP_SYN_SENT || c->state == TCP_SYN_RCVD)
		return 0;
	if (c->state == TCP_LISTEN || c->state == TCP_CLOSED)
		return -ENOTCONN;
	return 1;
}

int tcp_listen(struct netstack *s, uint16_t port, unsigned backlog,
	       struct tcp_conn **out)
{
	struct tcp_conn *c;

	if (!port)
		return -EINVAL;
	if (listening_on(s, port))
		return -EADDRINUSE;
	c = tcp_conn_alloc(s, false);
	if (!c)
		return -ENOMEM;
	c->state = TCP_LISTEN;
	c->lport = port;
	c->app_owned = true;
	if (!backlog || backlog > s->tcp.p.syn_backlog)
		backlog = s->tcp.p.syn_backlog;
	c->backlog = (uint16_t)backlog;
	*out = c;
	return 0;
}

int tcp_accept(struct tcp_conn *l, struct tcp_conn **out)
{
	struct netstack *s = l->s;
	struct tcp_conn *best = NULL;

	if (l->state != TCP_LISTEN)
		return -EINVAL;
	for (uint32_t i = 0; i < s->tcp.p.max_conns; i++) {
		struct tcp_conn *c = &s->tcp.conns[i];

		if (c->used && c->parent == l && !c->app_owned &&
		    c->state >= TCP_ESTABLISHED && (!best || c->serial < best->serial))
			best = c;
	}
	if (!best)
		return -EAGAIN;
	best->parent = NULL;
	best->app_owned = true;
	*out = best;
	return 0;
}

uint32_t tcp_rcv_queued(const struct tcp_conn *c)
{
	return c->rcv_nxt - c->rcv_user - (c->fin_rcvd ? 1 : 0);
}

/* 0 when tcp_send may queue data, else its error. */
static int tcp_send_check(const struct tcp_conn *c)
{
	if (c->err)
		return c->err;
	if (c->state == TCP_LISTEN || c->state == TCP_SYN_RCVD)
		return -EINVAL;
	if (c->fin_queued || (c->state != TCP_SYN_SENT &&
			      c->state != TCP_ESTABLISHED && c->state != TCP_CLOSE_WAIT))
		return -EPIPE;
	return 0;
}

size_t tcp_send_buffer(struct tcp_conn *c, uint8_t **buf)
{
	uint32_t off;

	if (tcp_send_check(c) || !c->sbuf)
		return 0;
	off = (c->sb_seq + c->sb_len) & (c->ssize - 1);
	*buf = c->sbuf + off;
	return min_u32(c->ssize - c->sb_len, c->ssize - off);
}

long tcp_send_commit(struct tcp_conn *c, size_t n)
{
	uint8_t *buf;
	int rc = tcp_send_check(c);

	if (rc)
		return rc;
	if (n > tcp_send_buffer(c, &buf))
		return -EINVAL;
	c->sb_len += (uint32_t)n;
	if (n && c->state != TCP_SYN_SENT)
		tcp_output(c);
	return (long)n;
}

long tcp_send(struct tcp_conn *c, const void *buf, size_t len)
{
	uint32_t n;
	int rc = tcp_send_check(c);

	if (rc)
		return rc;
	n = (uint32_t)(len < c->ssize ? len : c->ssize);
	n = min_u32(n, c->ssize - c->sb_len);
	if (!n)
		return len ? -EAGAIN : 0;
	ring_put(c->sbuf, c->ssize, c->sb_seq + c->sb_len, buf, n);
	c->sb_len += n;
	if (c->state != TCP_SYN_SENT)
		tcp_output(c);
	return n;
}

/* After a read, tell the peer about the window only if what it may still
 * send has fallen to half the buffer or less and would at least double
 * (like Linux's tcp_cleanup_rbuf), and by a useful amount (RFC 1122
 * 4.2.3.3).  Otherwise the next ACK carries the news. */
static void tcp_window_update(struct tcp_conn *c)
{
	uint32_t cur = seq_gt(c->rcv_adv, c->rcv_nxt) ? c->rcv_adv - c->rcv_nxt : 0;
	uint32_t next = c->rcv_user + c->rsize - c->rcv_nxt;

	if (c->state < TCP_ESTABLISHED || c->fin_rcvd)
		return;
	if (cur <= c->rsize / 2 && next >= 2 * cur &&
	    next - cur >= min_u32(c->rsize / 2, TCP_MSS_OURS))
		tcp_send_ack(c);
}

long tcp_recv(struct tcp_conn *c, void *buf, size_t len)
{
	uint32_t n = c->rbuf ? tcp_rcv_queued(c) : 0;

	if (c->state == TCP_LISTEN)
		return -EINVAL;
	if (n) {
		n = (uint32_t)(len < n ? len : n);
		ring_get(c->rbuf, c->rsize, c->rcv_user, buf, n);
		c->rcv_user += n;
		tcp_window_update(c);
		return n;
	}
	if (c->err)
		return c->err;
	return c->fin_rcvd ? 0 : -EAGAIN;
}

int tcp_shutdown(struct tcp_conn *c)
{
	if (c->err)
		return c->err;
	if (c->fin_queued)
		return 0;
	if (c->state == TCP_ESTABLISHED)
		c->state = TCP_FIN_WAIT_1;
	else if (c->state == TCP_CLOSE_WAIT)
		c->state = TCP_LAST_ACK;
	else
		return -ENOTCONN;
	c->fin_queued = true;
	tcp_output(c);
	return 0;
}

static void listener_close(struct tcp_conn *l)
{
	struct netstack *s = l->s;

	for (uint32_t i = 0; i < s->tcp.p.max_conns; i++) {
		struct tcp_conn *c = &s->tcp.conns[i];

		if (c->used && c->parent == l && !c->app_owned) {
			if (c->state != TCP_SYN_RCVD)
				tcp_send_rst(c);
			tcp_conn_free(c);
		}
	}
	tcp_conn_free(l);
}

void tcp_abort(struct tcp_conn *c)
{
	if (c->state == TCP_LISTEN) {
		listener_close(c);
		return;
	}
	if (c->state >= TCP_SYN_RCVD && c->state != TCP_TIME_WAIT)
		tcp_send_rst(c);
	tcp_conn_free(c);
}

void tcp_close(struct tcp_conn *c)
{
	if (c->state == TCP_LISTEN) {
		listener_close(c);
		return;
	}
	if (c->state == TCP_CLOSED || c->state == TCP_SYN_SENT ||
	    (c->rbuf && tcp_rcv_queued(c))) {	/* RFC 2525 2.17 */
		tcp_abort(c);
		return;
	}
	c->app_owned = false;
	if (c->state == TCP_ESTABLISHED || c->state == TCP_CLOSE_WAIT)
		tcp_shutdown(c);
	if (c->state == TCP_FIN_WAIT_2)
		c->t_wait = c->s->now_us + TCP_FIN_WAIT2_US;
	if (c->state == TCP_TIME_WAIT)
		tcp_enter_time_wait(c);
}

void tcp_set_nodelay(struct tcp_conn *c, bool on)
{
	c->nodelay = on;
	if (on && c->state >= TCP_ESTABLISHED)
		tcp_output(c);
}

size_t tcp_send_space(const struct tcp_conn *c)
{
	return c->sbuf ? c->ssize - c->sb_len : 0;
}

size_t tcp_send_unacked(const struct tcp_conn *c)
{
	return c->sb_len;
}

size_t tcp_recv_avail(const struct tcp_conn *c)
{
	return c->rbuf ? tcp_rcv_queued(c) : 0;
}

enum tcp_state tcp_get_state(const struct tcp_conn *c)
{
	return (enum tcp_state)c->state;
}

const char *tcp_state_name(enum tcp_state st)
{
	static const char *const names[] = {
		[TCP_CLOSED] = "CLOSED", [TCP_LISTEN] = "LISTEN",
		[TCP_SYN_SENT] = "SYN_SENT", [TCP_SYN_RCVD] = "SYN_RCVD",
		[TCP_ESTABLISHED] = "ESTABLISHED", [TCP_FIN_WAIT_1] = "FIN_WAIT_1",
		[TCP_FIN_WAIT_2] = "FIN_WAIT_2", [TCP_CLOSE_WAIT] = "CLOSE_WAIT",
		[TCP_CLOSING] = "CLOSING", [TCP_LAST_ACK] = "LAST_ACK",
		[TCP_TIME_WAIT] = "TIME_WAIT",
	};

	if ((unsigned)st >= sizeof(names) / sizeof(names[0]))
		return "?";
	return names[st];
}

void tcp_get_info(const struct tcp_conn *c, struct tcp_info *i)
{
	memset(i, 0, sizeof(*i));
	i->state = (enum tcp_state)c->state;
	i->lip = c->lip;
	i->rip = c->rip;
	i->lport = c->lport;
	i->rport = c->rport;
	i->app_owned = c->app_owned;
	i->snd_queued = c->sb_len;
	i->rcv_queued = c->rbuf ? tcp_rcv_queued(c) : 0;
	i->snd_wnd = c->snd_wnd;
	i->rcv_wnd = c->state >= TCP_SYN_RCVD ? c->rcv_adv - c->rcv_nxt : 0;
	i->cwnd = c->cwnd;
	i->ssthresh = c->ssthresh;
	i->mss = c->mss;
	i->srtt_us = c->srtt_us;
	i->rto_us = c->rto_us;
	i->bytes_in = c->bytes_in;
	i->bytes_out = c->bytes_out;
	i->segs_in = c->segs_in;
	i->segs_out = c->segs_out;
	i->retransmits = c->retransmits;
	i->err = c->err;
}

void tcp_foreach(struct netstack *s, tcp_visit_fn fn, void *arg)
{
	for (uint32_t i = 0; i < s->tcp.p.max_conns; i++) {
		struct tcp_info info;

		if (!s->tcp.conns[i].used)
			continue;
		tcp_get_info(&s->tcp.conns[i], &info);
		fn(&info, arg);
	}
}
