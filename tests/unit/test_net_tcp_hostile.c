/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * TCP against a hand-driven peer: the test builds every segment itself and
 * reads what the stack sends, to check option negotiation, reassembly with
 * SACK and D-SACK, the RST/SYN/ACK rules of RFC 5961, window edges, zero
 * windows, simultaneous open, TIME-WAIT reuse, SYN floods and a fuzz of
 * well-checksummed garbage.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hv/net/cksum.h"
#include "hv/net/net.h"
#include "hv/net/tcp_priv.h"
#include "tests/unit/net_frames.h"
#include "tests/unit/net_free.h"

#define MY_IP	0x0a000001u
#define PEER_IP	0x0a000002u
#define PORT	80
#define PPORT	4000
#define CAP_MAX	256
#define SEC	1000000ull

static const uint8_t my_mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };
static const uint8_t peer_mac[6] = { 0x02, 0, 0, 0, 0, 0x02 };

struct cap {
	int n;
	size_t len[CAP_MAX];
	uint8_t f[CAP_MAX][ETH_FRAME_MAX];
};

static struct cap cap;
static struct netstack ns;
static uint64_t now_us;

/* A parsed segment the stack sent. */
struct seg {
	uint32_t src, dst;
	uint16_t sport, dport;
	uint32_t seq, ack, wnd;
	uint8_t flags;
	uint32_t len;
	const uint8_t *data;
	uint16_t mss;
	int ws;
	bool sackok;
	int nsack;
	uint32_t sack[4][2];
};

static int cap_xmit(void *ctx, const void *frame, size_t len)
{
	(void)ctx;
	if (cap.n < CAP_MAX) {
		memcpy(cap.f[cap.n], frame, len);
		cap.len[cap.n] = len;
	}
	cap.n++;
	return 0;
}

static void tick(uint64_t us)
{
	now_us += us;
	net_poll(&ns, now_us);
}

static int setup_cfg(const struct net_config *base)
{
	struct net_config cfg = *base;
	uint8_t f[ETH_ZLEN];

	cfg.xmit = cap_xmit;
	cfg.seed = 5;
	cfg.arp_timeout_ms = 24 * 3600 * 1000;	/* the peer stays known */
	memcpy(cfg.mac, my_mac, 6);
	memset(&cap, 0, sizeof(cap));
	now_us = 1000000;
	assert_int_equal(net_init(&ns, &cfg), 0);
	net_set_time(&ns, now_us);
	assert_int_equal(net_set_ipv4(&ns, MY_IP, 24, 0), 0);
	/* teach it the peer's MAC */
	net_input(&ns, f, arp_frame(f, ARP_OP_REPLY, peer_mac, PEER_IP, my_mac, MY_IP, my_mac));
	cap.n = 0;
	return 0;
}

static int setup(void **state)
{
	static const struct net_config cfg = { .rcvbuf = 65536, .sndbuf = 65536 };

	(void)state;
	return setup_cfg(&cfg);
}

static int teardown(void **state)
{
	(void)state;
	net_free(&ns);
	return 0;
}

/* --- the hand-driven peer --- */

struct opts {
	uint8_t b[40];
	size_t n;
};

static void opt_syn(struct opts *o, uint16_t mss, int ws, bool sackok)
{
	o->n = 0;
	if (mss) {
		o->b[o->n++] = 2;
		o->b[o->n++] = 4;
		put_be16(o->b + o->n, mss);
		o->n += 2;
	}
	if (ws >= 0) {
		o->b[o->n++] = 1;
		o->b[o->n++] = 3;
		o->b[o->n++] = 3;
		o->b[o->n++] = (uint8_t)ws;
	}
	if (sackok) {
		o->b[o->n++] = 4;
		o->b[o->n++] = 2;
	}
	while (o->n % 4)
		o->b[o->n++] = 0;
}

/* The Ethernet and IPv4 headers of a frame from src to us, for l4len
 * bytes of proto. */
static void ip_hdr(uint8_t *f, uint32_t src, uint8_t proto, size_t l4len)
{
	uint8_t *ip = f + ETH_HLEN;

	memcpy(f, my_mac, 6);
	memcpy(f + 6, peer_mac, 6);
	put_be16(f + 12, ETH_P_IP);
	memset(ip, 0, IP_HLEN);
	ip[0] = 0x45;
	put_be16(ip + 2, (uint16_t)(IP_HLEN + l4len));
	ip[8] = 64;
	ip[9] = proto;
	put_be32(ip + 12, src);
	put_be32(ip + 16, MY_IP);
	csum_store(ip + 10, csum_finish(csum_add(0, ip, IP_HLEN)));
}

static void inject_from(uint32_t src, uint16_t sport, uint16_t dport, uint32_t seq,
			uint32_t ack, uint8_t flags, uint16_t wnd, const struct opts *o,
			const void *data, size_t len)
{
	static uint8_t f[ETH_FRAME_MAX + 100];
	uint8_t *t = f + ETH_HLEN + IP_HLEN;
	size_t ol = o ? o->n : 0, tl = TCP_HLEN + ol + len;

	ip_hdr(f, src, IP_PROTO_TCP, tl);
	memset(t, 0, TCP_HLEN);
	put_be16(t, sport);
	put_be16(t + 2, dport);
	put_be32(t + 4, seq);
	put_be32(t + 8, ack);
	t[12] = (uint8_t)(((TCP_HLEN + ol) / 4) << 4);
	t[13] = flags;
	put_be16(t + 14, wnd);
	if (ol)
		memcpy(t + TCP_HLEN, o->b, ol);
	if (len)
		memcpy(t + TCP_HLEN + ol, data, len);
	csum_store(t + 16, csum_finish(csum_add(csum_pseudo(src, MY_IP, 6, (uint16_t)tl),
						t, tl)));
	net_set_time(&ns, now_us);
	net_input(&ns, f, ETH_HLEN + IP_HLEN + tl);
}

static void inject(uint32_t seq, uint32_t ack, uint8_t flags, uint16_t wnd,
		   const void *data, size_t len)
{
	inject_from(PEER_IP, PPORT, PORT, seq, ack, flags, wnd, NULL, data, len);
}

static void parse_opts(struct seg *s, const uint8_t *o, size_t n)
{
	while (n) {
		if (o[0] == 0)
			break;
		if (o[0] == 1) {
			o++;
			n--;
			continue;
		}
		assert_true(n >= 2 && o[1] >= 2 && o[1] <= n);
		if (o[0] == 2)
			s->mss = get_be16(o + 2);
		if (o[0] == 3)
			s->ws = o[2];
		if (o[0] == 4)
			s->sackok = true;
		if (o[0] == 5) {
			s->nsack = (o[1] - 2) / 8;
			for (int i = 0; i < s->nsack; i++) {
				s->sack[i][0] = get_be32(o + 2 + 8 * i);
				s->sack[i][1] = get_be32(o + 6 + 8 * i);
			}
		}
		n -= o[1];
		o += o[1];
	}
}

/* Parse captured frame i, checking both checksums. */
static struct seg seg_at(int i)
{
	const uint8_t *ip = cap.f[i] + ETH_HLEN, *t = ip + IP_HLEN;
	size_t tl = get_be16(ip + 2) - IP_HLEN, hl;
	struct seg s;

	assert_true(i < cap.n && i < CAP_MAX);
	assert_int_equal(get_be16(cap.f[i] + 12), ETH_P_IP);
	assert_int_equal(ip[9], IP_PROTO_TCP);
	assert_true(csum_ok(csum_add(0, ip, IP_HLEN)));
	assert_true(csum_ok(csum_add(csum_pseudo(get_be32(ip + 12), get_be32(ip + 16), 6,
						 (uint16_t)tl), t, tl)));
	memset(&s, 0, sizeof(s));
	s.ws = -1;
	s.src = get_be32(ip + 12);
	s.dst = get_be32(ip + 16);
	s.sport = get_be16(t);
	s.dport = get_be16(t + 2);
	s.seq = get_be32(t + 4);
	s.ack = get_be32(t + 8);
	s.flags = t[13];
	s.wnd = get_be16(t + 14);
	hl = (size_t)(t[12] >> 4) * 4;
	parse_opts(&s, t + TCP_HLEN, hl - TCP_HLEN);
	s.data = t + hl;
	s.len = (uint32_t)(tl - hl);
	return s;
}

static struct seg last(void)
{
	assert_true(cap.n > 0);
	return seg_at(cap.n - 1);
}

/* A connection accepted from the peer: the peer's next sequence number
 * and ours. */
struct hs {
	struct tcp_conn *l, *c;
	uint32_t pseq, sseq;
};

static void open_conn(struct hs *h, uint16_t mss, int ws, bool sackok)
{
	struct opts o;
	struct seg sa;

	memset(h, 0, sizeof(*h));
	assert_int_equal(tcp_listen(&ns, PORT, 4, &h->l), 0);
	opt_syn(&o, mss, ws, sackok);
	inject_from(PEER_IP, PPORT, PORT, 1000, 0, TCP_SYN, 65535, &o, NULL, 0);
	sa = last();
	assert_int_equal(sa.flags, TCP_SYN | TCP_ACK);
	assert_int_equal(sa.ack, 1001);
	h->pseq = 1001;
	h->sseq = sa.seq + 1;
	inject(h->pseq, h->sseq, TCP_ACK, 65535, NULL, 0);
	assert_int_equal(tcp_accept(h->l, &h->c), 0);
	cap.n = 0;
}

static void fill(uint8_t *b, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)((seed + i) * 31 + 7);
}

/* --- tests --- */

static void test_options(void **state)
{
	struct opts o;
	struct seg sa;
	struct hs h;
	uint8_t big[4000];

	(void)state;
	assert_int_equal(tcp_listen(&ns, PORT, 4, &h.l), 0);
	opt_syn(&o, 1000, 7, true);
	inject_from(PEER_IP, PPORT, PORT, 1000, 0, TCP_SYN, 65535, &o, NULL, 0);
	assert_int_equal(cap.n, 1);
	sa = last();
	assert_int_equal(sa.mss, TCP_MSS_OURS);
	assert_int_equal(sa.ws, 1);		/* 64 KiB needs a scale of 1 */
	assert_true(sa.sackok);
	assert_int_equal(sa.wnd, 65535);
	/* no options at all: MSS 536, no scaling, no SACK, and none echoed */
	opt_syn(&o, 0, -1, false);
	inject_from(PEER_IP, PPORT + 1, PORT, 5000, 0, TCP_SYN, 65535, &o, NULL, 0);
	sa = last();
	assert_int_equal(sa.ws, -1);
	assert_false(sa.sackok);
	/* tiny MSS is clamped; data goes out in such segments */
	tcp_close(h.l);
	cap.n = 0;
	open_conn(&h, 10, -1, false);
	assert_int_equal(h.c->mss, TCP_MSS_MIN);
	fill(big, sizeof(big), 0);
	assert_int_equal(tcp_send(h.c, big, 200), 200);
	assert_int_equal(seg_at(0).len, TCP_MSS_MIN);
	assert_int_equal(h.c->snd_wscale, 0);
	assert_false(h.c->sack_ok);
}

static void test_reassembly_and_sack(void **state)
{
	struct hs h;
	uint8_t d[6000], r[6000];
	struct seg a;
	uint32_t p;

	(void)state;
	open_conn(&h, 1460, 0, true);
	p = h.pseq;
	fill(d, sizeof(d), 1);
	inject(p + 2000, h.sseq, TCP_ACK, 65535, d + 2000, 1000);	/* [2000,3000) */
	a = last();
	assert_int_equal(a.ack, p);
	assert_int_equal(a.nsack, 1);
	assert_int_equal(a.sack[0][0], p + 2000);
	assert_int_equal(a.sack[0][1], p + 3000);
	inject(p + 4000, h.sseq, TCP_ACK, 65535, d + 4000, 1000);	/* [4000,5000) */
	a = last();
	assert_int_equal(a.nsack, 2);
	assert_int_equal(a.sack[0][0], p + 4000);		/* most recent first */
	assert_int_equal(a.sack[1][0], p + 2000);
	inject(p + 1000, h.sseq, TCP_ACK, 65535, d + 1000, 1000);	/* joins [2000) */
	a = last();
	assert_int_equal(a.sack[0][0], p + 1000);
	assert_int_equal(a.sack[0][1], p + 3000);
	assert_int_equal(tcp_recv(h.c, r, sizeof(r)), -EAGAIN);
	inject(p + 4000, h.sseq, TCP_ACK, 65535, d + 4000, 1000);	/* duplicate */
	a = last();
	assert_int_equal(a.sack[0][0], p + 4000);		/* D-SACK */
	inject(p, h.sseq, TCP_ACK, 65535, d, 1000);			/* fills the hole */
	a = last();
	assert_int_equal(a.ack, p + 3000);
	assert_int_equal(a.nsack, 1);
	inject(p + 3000, h.sseq, TCP_ACK | TCP_PSH, 65535, d + 3000, 1000);
	assert_int_equal(last().ack, p + 5000);
	assert_int_equal(last().nsack, 0);
	assert_int_equal(tcp_recv(h.c, r, sizeof(r)), 5000);
	assert_memory_equal(r, d, 5000);
	/* old data again: an ACK with a D-SACK block for it */
	cap.n = 0;
	inject(p + 100, h.sseq, TCP_ACK, 65535, d + 100, 500);
	a = last();
	assert_int_equal(a.ack, p + 5000);
	assert_int_equal(a.nsack, 1);
	assert_int_equal(a.sack[0][0], p + 100);
	assert_int_equal(a.sack[0][1], p + 600);
	/* partly old, partly new: the new part is taken */
	inject(p + 4500, h.sseq, TCP_ACK, 65535, d + 4500, 1400);
	assert_int_equal(tcp_recv(h.c, r, sizeof(r)), 900);
	assert_memory_equal(r, d + 5000, 900);
	assert_int_equal(ns.stats.tcp.rx_bad_csum, 0);
}

static void test_fin_out_of_order(void **state)
{
	struct hs h;
	uint8_t d[2000], r[2000];

	(void)state;
	open_conn(&h, 1460, 0, true);
	fill(d, sizeof(d), 3);
	inject(h.pseq + 1000, h.sseq, TCP_ACK | TCP_FIN, 65535, d + 1000, 1000);
	assert_int_equal(tcp_get_state(h.c), TCP_ESTABLISHED);
	/* data beyond the FIN is ignored */
	inject(h.pseq + 2001, h.sseq, TCP_ACK, 65535, d, 10);
	inject(h.pseq, h.sseq, TCP_ACK, 65535, d, 1000);
	assert_int_equal(tcp_get_state(h.c), TCP_CLOSE_WAIT);
	assert_int_equal(last().ack, h.pseq + 2001);
	assert_int_equal(tcp_recv(h.c, r, sizeof(r)), 2000);
	assert_memory_equal(r, d, 2000);
	assert_int_equal(tcp_recv(h.c, r, sizeof(r)), 0);
	/* data after FIN changes nothing */
	inject(h.pseq + 2001, h.sseq, TCP_ACK, 65535, d, 10);
	assert_int_equal(tcp_recv(h.c, r, sizeof(r)), 0);
}

static void test_rst_rules(void **state)
{
	struct hs h;
	uint8_t b[4];
	struct seg a;

	(void)state;
	open_conn(&h, 1460, 0, true);
	inject(h.pseq + 100, 0, TCP_RST, 0, NULL, 0);		/* in window */
	assert_int_equal(cap.n, 1);
	a = last();
	assert_int_equal(a.flags, TCP_ACK);			/* challenge ACK */
	assert_int_equal(a.ack, h.pseq);
	assert_int_equal(tcp_get_state(h.c), TCP_ESTABLISHED);
	inject(h.pseq + 1000000, 0, TCP_RST, 0, NULL, 0);	/* outside: silent */
	inject(h.pseq - 1, 0, TCP_RST, 0, NULL, 0);
	assert_int_equal(cap.n, 1);
	/* SYN on an established connection: challenge ACK, nothing else
	 * (after the gap the connection's challenges keep) */
	tick(TCP_CHALLENGE_GAP_US);
	inject(h.pseq + 5, 0, TCP_SYN, 65535, NULL, 0);
	assert_int_equal(cap.n, 2);
	assert_int_equal(last().flags, TCP_ACK);
	assert_int_equal(tcp_get_state(h.c), TCP_ESTABLISHED);
	assert_int_equal(ns.stats.tcp.challenge_acks, 2);
	/* exact: reset */
	inject(h.pseq, 0, TCP_RST, 0, NULL, 0);
	assert_int_equal(tcp_recv(h.c, b, 4), -ECONNRESET);
	assert_int_equal(tcp_get_state(h.c), TCP_CLOSED);
	/* the tuple is gone: a segment now gets a RST */
	inject(h.pseq, h.sseq, TCP_ACK, 65535, "x", 1);
	assert_int_equal(last().flags, TCP_RST);
	assert_int_equal(last().seq, h.sseq);
	tcp_close(h.c);
}

static void test_challenge_ack_limit(void **state)
{
	struct hs h;

	(void)state;
	open_conn(&h, 1460, 0, true);
	for (int i = 0; i < 1000; i++)
		inject(h.pseq + 1 + (uint32_t)i, 0, TCP_RST, 0, NULL, 0);
	assert_int_equal(cap.n, 1);			/* one per connection per gap */
	tick(TCP_CHALLENGE_GAP_US);
	inject(h.pseq + 1, 0, TCP_RST, 0, NULL, 0);
	assert_int_equal(cap.n, 2);
	assert_int_equal(tcp_get_state(h.c), TCP_ESTABLISHED);
}

static void test_out_of_window(void **state)
{
	struct hs h;
	uint8_t d[100], r[100];
	uint64_t oow;

	(void)state;
	open_conn(&h, 1460, 0, true);
	fill(d, sizeof(d), 9);
	oow = ns.stats.tcp.rx_out_of_window;
	inject(h.pseq + 70000, h.sseq, TCP_ACK, 65535, d, 100);	/* past the window */
	assert_int_equal(last().ack, h.pseq);
	inject(h.pseq - 200, h.sseq, TCP_ACK, 65535, d, 100);	/* before it */
	assert_int_equal(ns.stats.tcp.rx_out_of_window, oow + 2);
	assert_int_equal(tcp_recv(h.c, r, sizeof(r)), -EAGAIN);
	/* ACK of data never sent: answered, ignored */
	cap.n = 0;
	inject(h.pseq, h.sseq + 5000, TCP_ACK, 65535, d, 100);
	assert_int_equal(cap.n, 1);
	assert_int_equal(tcp_recv(h.c, r, sizeof(r)), -EAGAIN);
	assert_int_equal(h.c->snd_una, h.sseq);
	/* an ACK far below snd_una (RFC 5961 5.2) is ignored too */
	inject(h.pseq, h.sseq - 1000000, TCP_ACK, 65535, d, 100);
	assert_int_equal(tcp_recv(h.c, r, sizeof(r)), -EAGAIN);
	/* data straddling the right edge: the part inside is taken */
	for (uint32_t off = 0; off < 65536 - 100; off += 1000) {
		uint8_t blk[1000];

		fill(blk, sizeof(blk), off);
		inject(h.pseq + off, h.sseq, TCP_ACK, 65535, blk,
		       off + 1000 <= 65436 ? 1000 : 65436 - off);
	}
	inject(h.pseq + 65436, h.sseq, TCP_ACK, 65535, d, 100);
	assert_int_equal(tcp_recv_avail(h.c), 65536);
	tick(50000);					/* the delayed ACK */
	assert_int_equal(last().wnd, 0);
	assert_int_equal(last().ack, h.pseq + 65536);
	/* a zero-window probe gets an ACK and nothing is taken */
	cap.n = 0;
	inject(h.pseq + 65536, h.sseq, TCP_ACK, 65535, d, 1);
	assert_int_equal(cap.n, 1);
	assert_int_equal(last().ack, h.pseq + 65536);
	assert_int_equal(last().wnd, 0);
	/* reading opens the window with an update */
	cap.n = 0;
	assert_int_equal(tcp_recv(h.c, r, 100), 100);
	assert_int_equal(cap.n, 0);			/* too small to tell */
	for (int i = 0; i < 400; i++)
		tcp_recv(h.c, r, 100);
	/* updates at 1 MSS, then each time the window can double */
	assert_true(cap.n >= 1 && cap.n <= 6);
	assert_true((seg_at(0).wnd << 1) >= TCP_MSS_OURS && (seg_at(0).wnd << 1) < TCP_MSS_OURS + 100);
	assert_true((last().wnd << 1) >= 23360);
}

static void test_zero_window_sender(void **state)
{
	struct net_config cfg = { .rcvbuf = 65536, .sndbuf = 65536,
				  .user_timeout_ms = 5000 };
	struct hs h;
	uint8_t d[3000];
	int probes = 0;

	(void)state;
	teardown(state);
	setup_cfg(&cfg);
	open_conn(&h, 1460, 0, true);
	fill(d, sizeof(d), 4);
	inject(h.pseq, h.sseq, TCP_ACK, 0, NULL, 0);		/* window closes */
	assert_int_equal(tcp_send(h.c, d, 3000), 3000);
	assert_int_equal(cap.n, 0);
	/* 60 s of probes, each answered with a zero window: no timeout */
	for (int t = 0; t < 600; t++) {
		int before = cap.n;

		tick(SEC / 10);
		if (cap.n > before) {
			struct seg p = last();

			assert_int_equal(p.len, 1);
			assert_int_equal(p.seq, h.sseq);
			probes++;
			inject(h.pseq, h.sseq, TCP_ACK, 0, NULL, 0);
		}
	}
	assert_true(probes >= 5 && probes <= 20);
	assert_int_equal(tcp_connected(h.c), 1);
	/* the window opens: everything goes */
	cap.n = 0;
	inject(h.pseq, h.sseq, TCP_ACK, 65535, NULL, 0);
	assert_int_equal(cap.n, 2);			/* two full segments... */
	assert_int_equal(seg_at(0).seq, h.sseq);
	assert_int_equal(seg_at(1).seq + seg_at(1).len, h.sseq + 2920);
	inject(h.pseq, h.sseq + 2920, TCP_ACK, 65535, NULL, 0);
	assert_int_equal(cap.n, 3);			/* ...then the rest (Nagle) */
	assert_int_equal(last().len, 80);
	/* the peer goes quiet during a zero window: probes time out */
	inject(h.pseq, h.sseq + 3000, TCP_ACK, 0, NULL, 0);
	assert_int_equal(tcp_send(h.c, d, 100), 100);
	for (int t = 0; t < 1200 && tcp_connected(h.c) == 1; t++)
		tick(SEC / 10);
	assert_int_equal(tcp_connected(h.c), -ETIMEDOUT);
	tcp_close(h.c);
}

static unsigned count_used(void)
{
	unsigned n = 0;

	for (uint32_t i = 0; i < ns.tcp.p.max_conns; i++)
		n += ns.tcp.conns[i].used;
	return n;
}

/* An orphan (closed by the application) that a live peer keeps behind a
 * zero window does not live for ever. */
static void test_orphan_zero_window(void **state)
{
	struct hs h;
	uint8_t d[100];
	bool rst = false;

	(void)state;
	open_conn(&h, 1460, 0, true);
	inject(h.pseq, h.sseq, TCP_ACK, 0, NULL, 0);
	fill(d, sizeof(d), 1);
	assert_int_equal(tcp_send(h.c, d, 100), 100);
	tcp_close(h.c);
	for (int t = 0; t < 1500 && !rst; t++) {
		int before = cap.n;

		tick(SEC / 10);
		for (int i = before; i < cap.n && i < CAP_MAX; i++)
			rst |= (seg_at(i).flags & TCP_RST) != 0;
		if (cap.n > before && !rst)
			inject(h.pseq, h.sseq, TCP_ACK, 0, NULL, 0);	/* still full */
		if (cap.n > CAP_MAX / 2)
			cap.n = 0;
	}
	assert_true(rst);
	assert_int_equal(count_used(), 1);		/* the listener */
	tcp_close(h.l);
}

static void test_simultaneous_open(void **state)
{
	struct tcp_conn *c;
	struct opts o;
	struct seg syn, a;

	(void)state;
	assert_int_equal(tcp_connect(&ns, PEER_IP, 7000, &c), 0);
	syn = last();
	assert_int_equal(syn.flags, TCP_SYN);
	assert_true(syn.sackok && syn.ws >= 0 && syn.mss == TCP_MSS_OURS);
	/* the peer's SYN crosses ours */
	opt_syn(&o, 1400, 2, true);
	inject_from(PEER_IP, 7000, syn.sport, 9000, 0, TCP_SYN, 1000, &o, NULL, 0);
	assert_int_equal(tcp_get_state(c), TCP_SYN_RCVD);
	a = last();
	assert_int_equal(a.flags, TCP_SYN | TCP_ACK);
	assert_int_equal(a.seq, syn.seq);
	assert_int_equal(a.ack, 9001);
	inject_from(PEER_IP, 7000, syn.sport, 9001, syn.seq + 1, TCP_SYN | TCP_ACK, 1000,
		    &o, NULL, 0);
	/* a SYN-ACK in SYN-RCVD: RFC 5961 challenge; then the ACK */
	inject_from(PEER_IP, 7000, syn.sport, 9001, syn.seq + 1, TCP_ACK, 1000, NULL,
		    NULL, 0);
	assert_int_equal(tcp_connected(c), 1);
	assert_int_equal(c->mss, 1400);
	assert_int_equal(c->snd_wscale, 2);
	assert_int_equal(c->snd_wnd, 4000);
	tcp_abort(c);
	assert_int_equal(last().flags & TCP_RST, TCP_RST);
}

static void test_syn_sent_rules(void **state)
{
	struct tcp_conn *c;
	struct seg syn;

	(void)state;
	assert_int_equal(tcp_connect(&ns, PEER_IP, 7000, &c), 0);
	syn = last();
	/* a bad ACK draws a RST and changes nothing */
	inject_from(PEER_IP, 7000, syn.sport, 1, syn.seq + 5, TCP_SYN | TCP_ACK, 1000,
		    NULL, NULL, 0);
	assert_int_equal(last().flags, TCP_RST);
	assert_int_equal(last().seq, syn.seq + 5);
	assert_int_equal(tcp_connected(c), 0);
	/* a RST without an acceptable ACK is ignored; with one, refused */
	inject_from(PEER_IP, 7000, syn.sport, 0, 0, TCP_RST, 0, NULL, NULL, 0);
	assert_int_equal(tcp_connected(c), 0);
	inject_from(PEER_IP, 7000, syn.sport, 0, syn.seq + 1, TCP_RST | TCP_ACK, 0,
		    NULL, NULL, 0);
	assert_int_equal(tcp_connected(c), -ECONNREFUSED);
	tcp_close(c);
}

static void test_time_wait_reuse(void **state)
{
	struct hs h;
	struct seg f;

	(void)state;
	open_conn(&h, 1460, 0, true);
	tcp_close(h.c);					/* our FIN */
	f = last();
	assert_true(f.flags & TCP_FIN);
	inject(h.pseq, f.seq + 1, TCP_ACK | TCP_FIN, 65535, NULL, 0);
	assert_int_equal(tcp_get_state(h.c), TCP_TIME_WAIT);
	/* retransmitted FIN: ACKed again */
	cap.n = 0;
	inject(h.pseq, f.seq + 1, TCP_ACK | TCP_FIN, 65535, NULL, 0);
	assert_int_equal(cap.n, 1);
	assert_int_equal(last().ack, h.pseq + 1);
	/* a new SYN with a higher sequence number opens a new connection */
	inject(h.pseq + 100000, 0, TCP_SYN, 65535, NULL, 0);
	assert_int_equal(last().flags, TCP_SYN | TCP_ACK);
	assert_int_equal(last().ack, h.pseq + 100001);
	/* an old SYN on a TIME-WAIT would have been answered by an ACK */
	tcp_close(h.l);
}

static unsigned count_state(enum tcp_state st)
{
	unsigned n = 0;

	for (uint32_t i = 0; i < ns.tcp.p.max_conns; i++)
		n += ns.tcp.conns[i].used && ns.tcp.conns[i].state == st;
	return n;
}

static void test_syn_flood(void **state)
{
	struct tcp_conn *l, *c;
	uint64_t rng = 99;
	struct opts o;
	struct seg sa;

	(void)state;
	assert_int_equal(tcp_listen(&ns, PORT, 8, &l), 0);
	opt_syn(&o, 1460, 7, true);
	for (int i = 0; i < 2000; i++) {
		rng = rng * 6364136223846793005ull + 1;
		inject_from(0x0a000000u | (uint32_t)(3 + (rng >> 33) % 250),
			    (uint16_t)(1024 + (rng >> 20) % 60000), PORT, (uint32_t)rng, 0,
			    TCP_SYN, 65535, &o, NULL, 0);
		assert_true(count_state(TCP_SYN_RCVD) <= 8);
	}
	assert_true(ns.stats.tcp.syn_evicted >= 1990);
	/* half-open connections hold no buffers */
	for (uint32_t i = 0; i < ns.tcp.p.max_conns; i++)
		if (ns.tcp.conns[i].state == TCP_SYN_RCVD)
			assert_null(ns.tcp.conns[i].rbuf);
	/* a real client still gets in */
	cap.n = 0;
	inject_from(PEER_IP, PPORT, PORT, 1000, 0, TCP_SYN, 65535, &o, NULL, 0);
	sa = last();
	assert_int_equal(sa.flags, TCP_SYN | TCP_ACK);
	inject(1001, sa.seq + 1, TCP_ACK, 65535, NULL, 0);
	assert_int_equal(tcp_accept(l, &c), 0);
	assert_int_equal(tcp_get_state(c), TCP_ESTABLISHED);
	/* the flood's half-open connections give up after a few SYN-ACKs */
	for (int t = 0; t < 120; t++)
		tick(SEC);
	assert_int_equal(count_state(TCP_SYN_RCVD), 0);
	assert_int_equal(tcp_get_state(c), TCP_ESTABLISHED);
	tcp_close(c);
	tcp_close(l);
}

static void test_accept_queue_full(void **state)
{
	struct tcp_conn *l, *c;
	struct seg sa;

	(void)state;
	assert_int_equal(tcp_listen(&ns, PORT, 2, &l), 0);
	for (int i = 0; i < 3; i++) {
		cap.n = 0;
		inject_from(PEER_IP, (uint16_t)(PPORT + i), PORT, 1000, 0, TCP_SYN, 65535,
			    NULL, NULL, 0);
		if (i == 2) {
			assert_int_equal(cap.n, 0);	/* queue full: dropped */
			break;
		}
		sa = last();
		inject_from(PEER_IP, (uint16_t)(PPORT + i), PORT, 1001, sa.seq + 1, TCP_ACK,
			    65535, NULL, NULL, 0);
	}
	assert_int_equal(ns.stats.tcp.syn_dropped, 1);
	assert_int_equal(tcp_accept(l, &c), 0);
	assert_int_equal(c->rport, PPORT);		/* oldest first */
	tcp_close(l);				/* resets the unaccepted one */
	assert_int_equal(last().flags & TCP_RST, TCP_RST);
	assert_int_equal(tcp_get_state(c), TCP_ESTABLISHED);
	tcp_abort(c);
}

/* Well-checksummed garbage at an established connection and at random
 * ports: nothing crashes, the connection either survives intact or is
 * reset, and the stack still serves a new connection afterwards. */
static void test_fuzz_segments(void **state)
{
	uint64_t rng = 0xfeedface;
	struct hs h;
	uint8_t d[1600], r[4096];
	struct opts o;
	uint64_t got = 0;
	uint32_t rcv0;
	long n;

	(void)state;
	open_conn(&h, 1460, 5, true);
	rcv0 = h.c->rcv_nxt;
	for (int i = 0; i < 20000; i++) {
		uint32_t seq, ack;
		size_t len;
		uint16_t dport;

		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		seq = (rng & 1) ? h.pseq + (uint32_t)(rng >> 40) % 200000 - 100000 : (uint32_t)rng;
		ack = (rng & 2) ? h.sseq + (uint32_t)(rng >> 44) % 2000 - 1000 : (uint32_t)(rng >> 16);
		len = (rng >> 24) % 1400;
		dport = (rng & 4) ? PORT : (uint16_t)(rng >> 48);
		o.n = (rng >> 8) % 40 & ~3u;
		for (size_t k = 0; k < sizeof(o.b); k++)
			o.b[k] = (uint8_t)(rng >> (k % 56));
		fill(d, len, (uint32_t)i);
		inject_from(PEER_IP, (rng & 8) ? PPORT : (uint16_t)(rng >> 32), dport, seq, ack,
			    (uint8_t)(rng >> 56), (uint16_t)(rng >> 4), &o, d, len);
		while ((n = tcp_recv(h.c, r, sizeof(r))) > 0)
			got += (uint64_t)n;
		if (i % 100 == 0)
			tick(1000);
		cap.n = 0;
	}
	assert_true(tcp_rcv_queued(h.c) <= h.c->rsize);
	if (tcp_get_state(h.c) == TCP_CLOSED) {
		assert_true(tcp_recv(h.c, r, sizeof(r)) < 0);	/* reset: says so */
	} else {
		/* intact: every byte it took in order was read or is queued,
		 * once, and what it sent is acknowledged no further than sent */
		uint32_t in = h.c->rcv_nxt - rcv0 - (h.c->fin_rcvd ? 1u : 0u);

		assert_int_equal(got + tcp_rcv_queued(h.c), in);
		assert_true((int32_t)(h.c->snd_max - h.c->snd_una) >= 0);
	}
	tcp_abort(h.c);
	tcp_close(h.l);
	for (int t = 0; t < 200; t++)
		tick(SEC);
	/* the stack is healthy */
	cap.n = 0;
	{
		struct hs h2;

		open_conn(&h2, 1460, 0, true);
		fill(d, 10, 0);
		inject(h2.pseq, h2.sseq, TCP_ACK | TCP_PSH, 65535, d, 10);
		assert_int_equal(tcp_recv(h2.c, r, sizeof(r)), 10);
		tcp_abort(h2.c);
		tcp_close(h2.l);
	}
}


/* Only a FIN outstanding and the peer's window zero: the FIN is sent
 * again on the retransmission timer (no data waits, so nothing for the
 * persist timer), and the orphan ends after the user timeout. */
static void test_fin_resent_into_zero_window(void **state)
{
	struct hs h;
	int fins = 0;

	(void)state;
	open_conn(&h, 1460, 0, true);
	inject(h.pseq, h.sseq, TCP_ACK, 0, NULL, 0);	/* window closes, nothing queued */
	tcp_close(h.c);					/* orphan: FIN goes out anyway */
	assert_true(last().flags & TCP_FIN);
	cap.n = 0;
	for (int t = 0; t < 600; t++)			/* ten minutes, peer silent */
		tick(SEC);
	for (int i = 0; i < cap.n && i < CAP_MAX; i++)
		fins += (seg_at(i).flags & TCP_FIN) != 0;
	assert_true(fins >= 2);				/* retransmitted, backing off */
	assert_int_equal(count_used(), 1);		/* only the listener is left */
}


/* Orphans that a peer keeps in FIN-WAIT-2 fill the table: the oldest is
 * reset to make way for a connect, and for a new client's SYN. */
static void test_orphans_yield_their_slots(void **state)
{
	struct tcp_conn *l, *c, *out = NULL;
	struct seg sa, f;
	int rc;

	(void)state;
	assert_int_equal(tcp_listen(&ns, PORT, 4, &l), 0);
	for (int i = 0; i < 15; i++) {
		uint16_t sp = (uint16_t)(PPORT + i);

		cap.n = 0;
		inject_from(PEER_IP, sp, PORT, 1000, 0, TCP_SYN, 65535, NULL, NULL, 0);
		sa = last();
		inject_from(PEER_IP, sp, PORT, 1001, sa.seq + 1, TCP_ACK, 65535, NULL, NULL, 0);
		assert_int_equal(tcp_accept(l, &c), 0);
		tcp_close(c);				/* the app is done with it */
		f = last();
		assert_true(f.flags & TCP_FIN);
		inject_from(PEER_IP, sp, PORT, 1001, f.seq + 1, TCP_ACK, 65535, NULL, NULL, 0);
	}
	assert_int_equal(count_state(TCP_FIN_WAIT_2), 15);	/* the table is full */
	cap.n = 0;
	rc = tcp_connect(&ns, PEER_IP, 7000, &out);
	assert_int_equal(rc, 0);			/* the oldest orphan made way */
	assert_int_equal(ns.stats.tcp.orphans_reset, 1);
	assert_true(seg_at(0).flags & TCP_RST);		/* and its peer was told */
	assert_int_equal(seg_at(0).dport, PPORT);	/* the oldest */
	cap.n = 0;
	inject_from(PEER_IP, 9999, PORT, 5000, 0, TCP_SYN, 65535, NULL, NULL, 0);
	assert_true(last().flags & TCP_SYN);		/* a new client is answered */
	assert_int_equal(ns.stats.tcp.syn_dropped, 0);
	assert_int_equal(ns.stats.tcp.orphans_reset, 2);
	tcp_abort(out);
}


/* The NIC's ring is full the moment the SYN goes out: the retransmission
 * timer sends it again. */
static int busy_left;
static int busy_xmit(void *ctx, const void *frame, size_t len)
{
	if (busy_left > 0) {
		busy_left--;
		return -EAGAIN;
	}
	return cap_xmit(ctx, frame, len);
}

static void test_syn_retried_after_full_ring(void **state)
{
	struct tcp_conn *c;
	int syns = 0;

	(void)state;
	ns.xmit = busy_xmit;
	busy_left = 1;
	assert_int_equal(tcp_connect(&ns, PEER_IP, 7000, &c), 0);
	assert_int_equal(cap.n, 0);			/* refused by the ring */
	for (int t = 0; t < 300; t++)
		tick(SEC);
	for (int i = 0; i < cap.n && i < CAP_MAX; i++)
		syns += (seg_at(i).flags & TCP_SYN) != 0;
	ns.xmit = cap_xmit;
	assert_true(syns >= 2);				/* sent again, backing off */
	assert_true(tcp_connected(c) < 0);		/* and given up on in the end */
	tcp_abort(c);
}


/* The challenge-ACK budget an attacker sees on its own connection does not
 * depend on whether its spoofed RST hit another connection (the side
 * channel of CVE-2016-5696). */
static void test_challenge_acks_per_connection(void **state)
{
	struct hs a;
	struct tcp_conn *b;
	struct seg sa;
	int seen[2];

	(void)state;
	open_conn(&a, 1460, 0, true);		/* the attacker's own connection */
	inject_from(PEER_IP, PPORT + 1, PORT, 5000, 0, TCP_SYN, 65535, NULL, NULL, 0);
	sa = last();
	inject_from(PEER_IP, PPORT + 1, PORT, 5001, sa.seq + 1, TCP_ACK, 65535, NULL, NULL, 0);
	assert_int_equal(tcp_accept(a.l, &b), 0);	/* the victim connection */
	for (int hit = 0; hit < 2; hit++) {
		tick(SEC);
		cap.n = 0;
		if (hit) {	/* a spoofed in-window RST on the victim: challenged */
			inject_from(PEER_IP, PPORT + 1, PORT, 5001 + 10, 0, TCP_RST, 0,
				    NULL, NULL, 0);
			assert_int_equal(cap.n, 1);
			cap.n = 0;
		}
		for (int i = 0; i < 100; i++)	/* then 100 on its own */
			inject(a.pseq + 1 + (uint32_t)i, 0, TCP_RST, 0, NULL, 0);
		seen[hit] = cap.n;
	}
	assert_int_equal(seen[0], seen[1]);
	assert_int_equal(seen[0], 1);
	assert_int_equal(tcp_get_state(b), TCP_ESTABLISHED);
	tcp_abort(b);
}


/* Requests for us from as many new hosts as the cache holds leave the
 * entry of the peer ferry is sending to (they are answered, and cached only
 * in free slots). */
static void test_arp_keeps_entries_in_use(void **state)
{
	struct hs h;
	uint8_t f[ETH_ZLEN], mac[6];
	uint8_t d[100];

	(void)state;
	open_conn(&h, 1460, 0, true);
	fill(d, sizeof(d), 0);
	assert_int_equal(tcp_send(h.c, d, 100), 100);	/* the peer is in use */
	for (int i = 0; i < ARP_CACHE_SIZE; i++) {
		static const uint8_t zero[6], bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
		uint8_t smac[6] = { 0x02, 0, 0, 0, 1, (uint8_t)i };

		tick(1000);
		net_input(&ns, f, arp_frame(f, ARP_OP_REQUEST, smac,
					    0x0a000000u | (uint32_t)(100 + i), zero, MY_IP, bcast));
	}
	assert_int_equal(arp_lookup(&ns, PEER_IP, mac), 0);
	assert_int_equal(ns.stats.arp.tx_replies >= ARP_CACHE_SIZE, 1);
}

/* A router's "fragmentation needed" (RFC 1191) from 10.0.0.254 quoting
 * the IP header and first 8 TCP bytes of ip, with seq in place of its
 * sequence number, and the next hop's MTU. */
static void frag_needed(const uint8_t *ip, uint32_t seq, uint16_t mtu)
{
	uint8_t f[ETH_HLEN + IP_HLEN + ICMP_HLEN + IP_HLEN + 8];
	uint8_t *m = f + ETH_HLEN + IP_HLEN;
	size_t ml = ICMP_HLEN + IP_HLEN + 8;

	ip_hdr(f, 0x0a0000feu, IP_PROTO_ICMP, ml);
	memset(m, 0, ICMP_HLEN);
	m[0] = 3;
	m[1] = 4;
	put_be16(m + 6, mtu);
	memcpy(m + ICMP_HLEN, ip, IP_HLEN + 8);
	put_be32(m + ICMP_HLEN + IP_HLEN + 4, seq);
	csum_store(m + 2, csum_finish(csum_add(0, m, ml)));
	net_set_time(&ns, now_us);
	net_input(&ns, f, sizeof(f));
}

/* Segments too big for a router on the path (it says so, DF being set)
 * are cut to its MTU and sent again at once, not left to vanish until
 * the user timeout; not below 536 bytes, and only for a message that
 * quotes a segment of ours in flight. */
static void test_path_mtu(void **state)
{
	static uint8_t d[3 * 1460];
	uint8_t quoted[IP_HLEN + 8];
	struct tcp_info i;
	struct hs h;
	struct seg g;

	(void)state;
	open_conn(&h, 1460, 0, true);
	fill(d, sizeof(d), 3);
	assert_int_equal(tcp_send(h.c, d, sizeof(d)), (long)sizeof(d));
	assert_int_equal(cap.n, 3);
	assert_int_equal(seg_at(0).len, 1460);
	memcpy(quoted, cap.f[0] + ETH_HLEN, sizeof(quoted));
	cap.n = 0;
	/* not in flight, or not from us: nothing */
	frag_needed(quoted, h.sseq - 1, 1000);
	frag_needed(quoted, h.sseq + sizeof(d), 1000);
	put_be32(quoted + 12, PEER_IP);
	frag_needed(quoted, h.sseq, 1000);
	put_be32(quoted + 12, MY_IP);
	assert_int_equal(cap.n, 0);
	tcp_get_info(h.c, &i);
	assert_int_equal(i.mss, 1460);
	/* in flight: all of it again, in 960-byte segments */
	frag_needed(quoted, h.sseq + 1460, 1000);
	assert_int_equal(cap.n, 5);
	for (int k = 0; k < 5; k++) {
		g = seg_at(k);
		assert_int_equal(g.seq, h.sseq + 960u * (uint32_t)k);
		assert_int_equal(g.len, k < 4 ? 960 : sizeof(d) - 4 * 960);
		assert_memory_equal(g.data, d + 960 * k, g.len);
	}
	assert_int_equal(ns.stats.tcp.pmtu_lowered, 1);
	/* an MTU below 576 (or none given) counts as 576; a larger one is no news */
	cap.n = 0;
	frag_needed(quoted, h.sseq, 0);
	assert_int_equal(seg_at(0).len, 536);
	assert_int_equal(cap.n, 9);
	cap.n = 0;
	frag_needed(quoted, h.sseq, 1400);
	assert_int_equal(cap.n, 0);
	tcp_get_info(h.c, &i);
	assert_int_equal(i.mss, 536);
	/* the peer's ACK: on as before, in 536-byte segments */
	inject(h.pseq, h.sseq + sizeof(d), TCP_ACK, 65535, NULL, 0);
	cap.n = 0;
	assert_int_equal(tcp_send(h.c, d, 1000), 1000);
	assert_int_equal(cap.n, 1);			/* Nagle keeps the rest */
	assert_int_equal(last().len, 536);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_options, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reassembly_and_sack, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fin_out_of_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rst_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_challenge_ack_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_out_of_window, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zero_window_sender, setup, teardown),
		cmocka_unit_test_setup_teardown(test_orphan_zero_window, setup, teardown),
		cmocka_unit_test_setup_teardown(test_simultaneous_open, setup, teardown),
		cmocka_unit_test_setup_teardown(test_syn_sent_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_time_wait_reuse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_syn_flood, setup, teardown),
		cmocka_unit_test_setup_teardown(test_accept_queue_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fuzz_segments, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fin_resent_into_zero_window, setup, teardown),
		cmocka_unit_test_setup_teardown(test_orphans_yield_their_slots, setup, teardown),
		cmocka_unit_test_setup_teardown(test_syn_retried_after_full_ring, setup, teardown),
		cmocka_unit_test_setup_teardown(test_challenge_acks_per_connection, setup, teardown),
		cmocka_unit_test_setup_teardown(test_arp_keeps_entries_in_use, setup, teardown),
		cmocka_unit_test_setup_teardown(test_path_mtu, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
