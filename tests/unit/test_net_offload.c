/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for the stack's side of NIC offloads and the zero-copy send
 * paths: TCP checksum offload on output (only the pseudo-header sum in the
 * field; a NIC model completes it, a software-checking peer accepts it),
 * checksums a NIC verified on input (skipped, and only those; hostile
 * frames still rejected), frames built in the driver's transmit buffer
 * (net_config.tx_frame) with ARP traffic in between, TCP segmentation
 * offload (a NIC model cuts the frames as the 8254x does), tcp_send_buffer
 * / tcp_send_commit, and nettest_fill_crc.
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
#include "hv/lib/crc32.h"
#include "hv/net/net.h"
#include "hv/net/nettest.h"
#include "hv/net/tcp_priv.h"
#include "tests/unit/net_free.h"
#include "tests/unit/netsim.h"

#define A_IP	0x0a000001u
#define B_IP	0x0a000002u
#define PORT	5001
#define SEC	1000000ull

/* --- a NIC model for stack a: lends its next buffer, completes checksums --- */

struct nic {
	uint8_t buf[ETH_FRAME_MAX];	/* the "next ring slot" */
	bool lent;			/* handed out by tx_frame, not yet used */
	bool dirty;			/* another frame took the slot since */
	uint64_t frames, completed, in_place, clobbered, bad_field;
	uint64_t sent_clobbered;	/* a frame built there went out spoilt */
	uint64_t tso, tso_segs, tso_bad_hdr;
	bool tso_local;			/* refuse TSO: the peer is on this host */
	uint64_t tso_refused;
};

static struct nic nic;

static void *nic_tx_frame(void *ctx)
{
	(void)ctx;
	nic.lent = true;
	nic.dirty = false;
	return nic.buf;
}

static bool is_tcp4(const uint8_t *f, size_t len)
{
	return len >= NET_TCP_OFF + TCP_HLEN && get_be16(f + ETH_O_TYPE) == ETH_P_IP &&
	       f[ETH_HLEN] == 0x45 && f[ETH_HLEN + IP_O_PROTO] == IP_PROTO_TCP;
}

/* What the 8254x does with TXSM (SDM 3.3.6): sum from TUCSS to the end of
 * the TCP segment, field included, and store the complement. */
static void nic_complete(uint8_t *f)
{
	const uint8_t *ip = f + ETH_HLEN;
	uint16_t tl = (uint16_t)(get_be16(ip + IP_O_LEN) - IP_HLEN);
	uint8_t *t = f + NET_TCP_OFF, want[2];

	csum_store(want, csum_fold(csum_pseudo(get_be32(ip + IP_O_SRC),
					       get_be32(ip + IP_O_DST), IP_PROTO_TCP, tl)));
	if (memcmp(t + TCP_O_CSUM, want, 2))
		nic.bad_field++;
	csum_store(t + TCP_O_CSUM, csum_finish(csum_add(0, t, tl)));
	nic.completed++;
}

static int nic_xmit(void *ctx, const void *frame, size_t len)
{
	uint8_t copy[ETH_FRAME_MAX];

	assert_true(len <= ETH_FRAME_MAX);
	if (frame == nic.buf) {
		nic.in_place++;
		nic.sent_clobbered += nic.dirty;
	} else if (nic.lent) {
		memset(nic.buf, 0xaa, sizeof(nic.buf));	/* the slot is taken */
		nic.clobbered++;
		nic.dirty = true;
	}
	nic.lent = false;
	nic.frames++;
	memcpy(copy, frame, len);
	if (is_tcp4(copy, len))
		nic_complete(copy);
	return netsim_xmit(ctx, copy, len);
}

/* TSO as the 8254x does it (SDM 3.5.1): per segment the headers with the
 * IPv4 length, ID and checksum, the sequence number, PSH/FIN (last only)
 * and the checksum (the field's pseudo-header sum plus the length) fixed. */
static int nic_xmit_tso(void *ctx, const struct net_tso *t)
{
	size_t total = t->len[0] + t->len[1], hl = t->hlen, tl;
	uint8_t pay[NET_TSO_MAX], seg[ETH_FRAME_MAX], *ip = seg + ETH_HLEN;
	uint8_t *tcp = seg + NET_TCP_OFF, want[2], flags = t->hdr[NET_TCP_OFF + TCP_O_FLAGS];
	uint16_t ph;
	int rc = 0;

	assert_true(total <= sizeof(pay) && hl + t->mss <= ETH_FRAME_MAX && t->mss);
	assert_true(is_tcp4(t->hdr, hl));
	memcpy(pay, t->data[0], t->len[0]);
	memcpy(pay + t->len[0], t->data[1], t->len[1]);
	csum_store(want, csum_fold(csum_pseudo(get_be32(t->hdr + ETH_HLEN + IP_O_SRC),
					       get_be32(t->hdr + ETH_HLEN + IP_O_DST),
					       IP_PROTO_TCP, 0)));
	if (get_be16(t->hdr + ETH_HLEN + IP_O_CSUM) ||
	    memcmp(t->hdr + NET_TCP_OFF + TCP_O_CSUM, want, 2))
		nic.tso_bad_hdr++;
	if (nic.tso_local) {		/* the peer is on this host (netif.c) */
		nic.tso_refused++;
		return -EXDEV;
	}
	if (t->hdr == nic.buf)
		nic.in_place++;
	nic.lent = false;
	nic.tso++;
	for (size_t off = 0, i = 0; off < total && !rc; off += t->mss, i++) {
		size_t n = total - off < t->mss ? total - off : t->mss;

		memcpy(seg, t->hdr, hl);
		memcpy(seg + hl, pay + off, n);
		tl = hl - NET_TCP_OFF + n;
		put_be16(ip + IP_O_LEN, (uint16_t)(IP_HLEN + tl));
		put_be16(ip + IP_O_ID, (uint16_t)(get_be16(ip + IP_O_ID) + i));
		csum_store(ip + IP_O_CSUM, csum_finish(csum_add(0, ip, IP_HLEN)));
		put_be32(tcp + TCP_O_SEQ, get_be32(tcp + TCP_O_SEQ) + (uint32_t)off);
		if (off + n < total)
			tcp[TCP_O_FLAGS] = flags & (uint8_t)~(TCP_PSH | TCP_FIN);
		ph = (uint16_t)(get_be16(tcp + TCP_O_CSUM) + tl);
		ph = (uint16_t)(ph + (get_be16(tcp + TCP_O_CSUM) + tl > 0xffff));
		put_be16(tcp + TCP_O_CSUM, ph);
		csum_store(tcp + TCP_O_CSUM, csum_finish(csum_add(0, tcp, tl)));
		nic.tso_segs++;
		nic.frames++;
		rc = netsim_xmit(ctx, seg, hl + n);
	}
	return rc;
}

/* --- two stacks over netsim: a offloads, b checks everything itself --- */

struct world {
	struct netsim sim;
	struct netstack a, b;
};

static struct world W;

static const struct netsim_cfg link_cfg = {
	.seed = 7, .delay_us = 500, .rate_Bps = 12500000, .queue_bytes = 256 * 1024,
};

static void world_up(uint32_t sndbuf, uint32_t tso_max)
{
	struct net_config ca = { .xmit = nic_xmit, .tx_frame = nic_tx_frame,
				 .tx_tcp_csum = true, .seed = 1, .sndbuf = sndbuf,
				 .arp_timeout_ms = 100 };

	if (tso_max) {
		ca.xmit_tso = nic_xmit_tso;
		ca.tso_max = tso_max;
	}
	struct net_config cb = { .xmit = netsim_xmit, .seed = 2 };

	memset(&W, 0, sizeof(W));
	memset(&nic, 0, sizeof(nic));
	netsim_init(&W.sim, &link_cfg);
	ca.xmit_ctx = &W.sim.port[0];
	cb.xmit_ctx = &W.sim.port[1];
	memcpy(ca.mac, (uint8_t[6]){ 0x02, 0, 0, 0, 0, 1 }, 6);
	memcpy(cb.mac, (uint8_t[6]){ 0x02, 0, 0, 0, 0, 2 }, 6);
	assert_int_equal(net_init(&W.a, &ca), 0);
	assert_int_equal(net_init(&W.b, &cb), 0);
	netsim_attach(&W.sim, 0, &W.a);
	netsim_attach(&W.sim, 1, &W.b);
	assert_int_equal(net_set_ipv4(&W.a, A_IP, 24, 0), 0);
	assert_int_equal(net_set_ipv4(&W.b, B_IP, 24, 0), 0);
}

static void world_down(void)
{
	net_free(&W.a);
	net_free(&W.b);
	netsim_fini(&W.sim);
}

static void connect_pair(struct tcp_conn **c, struct tcp_conn **srv)
{
	struct tcp_conn *l;

	assert_int_equal(tcp_listen(&W.b, PORT, 0, &l), 0);
	assert_int_equal(tcp_connect(&W.a, B_IP, PORT, c), 0);
	*srv = NULL;
	for (int i = 0; i < 10000 && (!*srv || tcp_connected(*c) != 1); i++) {
		netsim_step(&W.sim, W.sim.now_us + SEC);
		if (!*srv && tcp_accept(l, srv))
			*srv = NULL;
	}
	assert_non_null(*srv);
	assert_int_equal(tcp_connected(*c), 1);
}

/* A whole nettest stream from a (offloading, in place, TSO frames of at
 * most tso_max bytes, unless b is "local": then they are refused) to b. */
static void offload_stream(uint32_t tso_max, bool local)
{
	struct nettest_tx *tx = malloc(sizeof(*tx));
	struct nettest_rx *rx = malloc(sizeof(*rx));
	struct tcp_conn *c, *s;
	uint64_t total = 3u << 20;
	int rt = 0, rr = 0;

	assert_non_null(tx);
	assert_non_null(rx);
	world_up(0, tso_max);
	nic.tso_local = local;
	connect_pair(&c, &s);
	nettest_tx_init(tx, c, total, W.sim.now_us);
	nettest_rx_init(rx, s, W.sim.now_us);
	for (long i = 0; i < 5000000 && (rt == 0 || rr == 0); i++) {
		if (!rt)
			rt = nettest_tx_poll(tx, W.sim.now_us);
		if (!rr)
			rr = nettest_rx_poll(rx, W.sim.now_us);
		netsim_step(&W.sim, W.sim.now_us + SEC);
	}
	assert_int_equal(rt, 1);
	assert_int_equal(rr, 1);
	assert_int_equal(rx->bytes, total);
	assert_int_equal(rx->crc, tx->crc);
	assert_int_equal(W.b.stats.tcp.rx_bad_csum, 0);
	assert_int_equal(nic.bad_field, 0);
	assert_int_equal(nic.sent_clobbered, 0);
	assert_int_equal(nic.tso_bad_hdr, 0);
	assert_true(W.a.stats.arp.tx_requests > 1);		/* refreshes happened */
	if (local) {		/* refused once, then segments: all of them */
		assert_int_equal(nic.tso_refused, 1);
		assert_int_equal(nic.tso, 0);
		assert_true(nic.completed > total / TCP_MSS_OURS);
		assert_int_equal(W.a.stats.eth.tx_errors, 0);
	} else if (tso_max) {	/* most data in TSO frames, headers in place */
		assert_true(nic.tso_segs > total / TCP_MSS_OURS / 2);
		assert_true(nic.tso < nic.tso_segs / 2);
		assert_true(nic.in_place > nic.tso / 2);
	} else {
		assert_int_equal(nic.tso, 0);
		assert_true(nic.completed > total / TCP_MSS_OURS);
		assert_true(nic.in_place > total / TCP_MSS_OURS);
	}
	tcp_close(c);
	tcp_close(s);
	world_down();
	free(tx);
	free(rx);
}

static void test_tx_offload_stream(void **state)
{
	(void)state;
	offload_stream(0, false);
}

static void test_tso_stream(void **state)
{
	(void)state;
	offload_stream(16384, false);
}

/* TSO to a peer on this host (a guest behind ferry's switch, netif.c):
 * the frame is refused and the connection goes on in segments. */
static void test_tso_refused_for_a_local_peer(void **state)
{
	(void)state;
	offload_stream(16384, true);
}

/* Without the NIC's completion the segments would be rejected: the field
 * holds only the pseudo-header sum. */
static int raw_xmit(void *ctx, const void *frame, size_t len)
{
	return netsim_xmit(ctx, frame, len);
}

static void test_tx_offload_needs_nic(void **state)
{
	struct tcp_conn *c;

	(void)state;
	world_up(0, 0);
	W.a.xmit = raw_xmit;		/* a NIC that does not offload */
	W.a.tx_frame = NULL;
	assert_int_equal(tcp_connect(&W.a, B_IP, PORT, &c), 0);
	for (int i = 0; i < 20; i++)
		netsim_step(&W.sim, W.sim.now_us + SEC);
	assert_true(W.b.stats.tcp.rx_bad_csum >= 1);
	assert_int_equal(W.b.stats.tcp.rx_no_conn, 0);
	assert_int_equal(W.b.stats.tcp.tx_resets, 0);
	tcp_abort(c);
	world_down();
}

/* --- one stack and hand-made frames: checksums the NIC verified --- */

struct cap {
	int n;
	size_t len;
	uint8_t f[ETH_FRAME_MAX];	/* the last frame */
};

static struct cap cap;
static struct netstack ns;
static const uint8_t my_mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };
static const uint8_t peer_mac[6] = { 0x02, 0, 0, 0, 0, 0x02 };

static int cap_xmit(void *ctx, const void *frame, size_t len)
{
	(void)ctx;
	memcpy(cap.f, frame, len);
	cap.len = len;
	cap.n++;
	return 0;
}

static int one_up(void **state)
{
	struct net_config cfg = { .xmit = cap_xmit, .seed = 3, .tx_tcp_csum = true };

	(void)state;
	memcpy(cfg.mac, my_mac, 6);
	memset(&cap, 0, sizeof(cap));
	assert_int_equal(net_init(&ns, &cfg), 0);
	net_set_time(&ns, SEC);
	assert_int_equal(net_set_ipv4(&ns, A_IP, 24, 0), 0);
	/* learn the peer so that replies go out at once */
	uint8_t f[64] = { 0 };
	memcpy(f, my_mac, 6);
	memcpy(f + 6, peer_mac, 6);
	put_be16(f + 12, ETH_P_ARP);
	put_be16(f + 14, 1);
	put_be16(f + 16, ETH_P_IP);
	f[18] = 6;
	f[19] = 4;
	put_be16(f + 20, ARP_OP_REPLY);
	memcpy(f + 22, peer_mac, 6);
	put_be32(f + 28, B_IP);
	memcpy(f + 32, my_mac, 6);
	put_be32(f + 38, A_IP);
	net_input(&ns, f, 60);
	cap.n = 0;
	return 0;
}

static int one_down(void **state)
{
	(void)state;
	net_free(&ns);
	return 0;
}

/* A SYN from the peer to a port nobody listens on; bad_tcp/bad_ip spoil
 * those checksums. */
static size_t syn_frame(uint8_t *f, bool bad_tcp, bool bad_ip)
{
	uint8_t *ip = f + ETH_HLEN, *t = f + NET_TCP_OFF;

	memset(f, 0, NET_TCP_OFF + TCP_HLEN);
	memcpy(f, my_mac, 6);
	memcpy(f + 6, peer_mac, 6);
	put_be16(f + ETH_O_TYPE, ETH_P_IP);
	ip[IP_O_VHL] = 0x45;
	put_be16(ip + IP_O_LEN, IP_HLEN + TCP_HLEN);
	ip[IP_O_TTL] = 64;
	ip[IP_O_PROTO] = IP_PROTO_TCP;
	put_be32(ip + IP_O_SRC, B_IP);
	put_be32(ip + IP_O_DST, A_IP);
	csum_store(ip + IP_O_CSUM, csum_finish(csum_add(0, ip, IP_HLEN)));
	put_be16(t + TCP_O_SPORT, 40000);
	put_be16(t + TCP_O_DPORT, 9);
	put_be32(t + TCP_O_SEQ, 1000);
	t[TCP_O_OFF] = 5 << 4;
	t[TCP_O_FLAGS] = TCP_SYN;
	put_be16(t + TCP_O_WIN, 1000);
	csum_store(t + TCP_O_CSUM,
		   csum_finish(csum_add(csum_pseudo(B_IP, A_IP, IP_PROTO_TCP, TCP_HLEN),
					t, TCP_HLEN)));
	if (bad_tcp)
		t[TCP_O_CSUM] ^= 0x5a;
	if (bad_ip)
		ip[IP_O_CSUM] ^= 0x5a;
	return NET_TCP_OFF + TCP_HLEN;
}

static void test_rx_verified_flags(void **state)
{
	const struct net_stats *st = &ns.stats;
	uint8_t f[ETH_FRAME_MAX];
	size_t n;

	(void)state;
	n = syn_frame(f, true, false);
	net_input(&ns, f, n);				/* checked here: bad */
	assert_int_equal(st->tcp.rx_bad_csum, 1);
	net_input_flags(&ns, f, n, NET_RX_IP_CSUM_OK);	/* IP flag only */
	assert_int_equal(st->tcp.rx_bad_csum, 2);
	assert_int_equal(cap.n, 0);
	net_input_flags(&ns, f, n, NET_RX_IP_CSUM_OK | NET_RX_TCP_CSUM_OK);
	assert_int_equal(st->tcp.rx_bad_csum, 2);	/* trusted: answered */
	assert_int_equal(st->tcp.rx_no_conn, 1);
	assert_int_equal(cap.n, 1);
	net_input(&ns, f, n);				/* the flag does not stick */
	assert_int_equal(st->tcp.rx_bad_csum, 3);

	n = syn_frame(f, false, true);
	net_input(&ns, f, n);
	assert_int_equal(st->ip.rx_bad_csum, 1);
	net_input_flags(&ns, f, n, NET_RX_IP_CSUM_OK);
	assert_int_equal(st->ip.rx_bad_csum, 1);
	assert_int_equal(st->tcp.rx_no_conn, 2);
	assert_int_equal(cap.n, 2);
}

/* The RST we send with offload on carries the pseudo-header sum only. */
static void test_tx_offload_rst_field(void **state)
{
	uint8_t f[ETH_FRAME_MAX], want[2];
	size_t n = syn_frame(f, false, false);
	const uint8_t *t = cap.f + NET_TCP_OFF;

	(void)state;
	net_input(&ns, f, n);
	assert_int_equal(cap.n, 1);
	assert_int_equal(t[TCP_O_FLAGS], TCP_RST | TCP_ACK);
	csum_store(want, csum_fold(csum_pseudo(A_IP, B_IP, IP_PROTO_TCP, TCP_HLEN)));
	assert_memory_equal(t + TCP_O_CSUM, want, 2);
	assert_false(csum_ok(csum_add(csum_pseudo(A_IP, B_IP, IP_PROTO_TCP, TCP_HLEN),
				      t, TCP_HLEN)));
	/* the IPv4 header checksum is still ours */
	assert_true(csum_ok(csum_add(0, cap.f + ETH_HLEN, IP_HLEN)));
}

/* Lying lengths and random bytes are rejected whatever the NIC says. */
static void test_rx_verified_hostile(void **state)
{
	const struct net_stats *st = &ns.stats;
	unsigned all = NET_RX_IP_CSUM_OK | NET_RX_TCP_CSUM_OK;
	uint8_t f[ETH_FRAME_MAX];
	uint64_t rng = 12345;
	size_t n;

	(void)state;
	n = syn_frame(f, false, false);
	put_be16(f + ETH_HLEN + IP_O_LEN, 400);		/* longer than the frame */
	net_input_flags(&ns, f, n, all);
	assert_int_equal(st->ip.rx_errors, 1);
	n = syn_frame(f, false, false);
	put_be16(f + ETH_HLEN + IP_O_LEN, IP_HLEN + 10);	/* TCP header cut */
	net_input_flags(&ns, f, n, all);
	assert_int_equal(st->tcp.rx_errors, 1);
	n = syn_frame(f, false, false);
	f[NET_TCP_OFF + TCP_O_OFF] = 15 << 4;		/* offset past the end */
	net_input_flags(&ns, f, n, all);
	assert_int_equal(st->tcp.rx_errors, 2);
	assert_int_equal(cap.n, 0);
	for (int i = 0; i < 20000; i++) {
		n = syn_frame(f, false, false);
		for (int k = 0; k < 4; k++) {
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			f[ETH_HLEN + (rng >> 33) % (n - ETH_HLEN)] = (uint8_t)(rng >> 20);
		}
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		net_input_flags(&ns, f, ETH_HLEN + (rng >> 33) % (n - ETH_HLEN + 1), all);
	}
}

/* ICMP keeps its full checksum with TCP offload on. */
static void test_tx_offload_icmp_untouched(void **state)
{
	uint8_t f[ETH_FRAME_MAX], *ip = f + ETH_HLEN, *m = f + NET_L4_OFF;
	size_t n = syn_frame(f, false, false);

	(void)state;
	ip[IP_O_PROTO] = IP_PROTO_ICMP;
	put_be16(ip + IP_O_LEN, IP_HLEN + 16);
	put_be16(ip + IP_O_CSUM, 0);
	csum_store(ip + IP_O_CSUM, csum_finish(csum_add(0, ip, IP_HLEN)));
	memset(m, 0x33, 16);
	m[0] = ICMP_ECHO;
	m[1] = 0;
	put_be16(m + 2, 0);
	csum_store(m + 2, csum_finish(csum_add(0, m, 16)));
	n = NET_L4_OFF + 16;
	net_input(&ns, f, n);
	assert_int_equal(cap.n, 1);
	assert_int_equal(cap.f[NET_L4_OFF], ICMP_ECHO_REPLY);
	assert_true(csum_ok(csum_add(0, cap.f + NET_L4_OFF, 16)));
}

/* --- zero-copy sending and the fused generator --- */

static void test_send_buffer_commit(void **state)
{
	struct tcp_conn *c, *s;
	uint8_t *p, *first, got[12000];
	size_t n, total = 0, read = 0;
	long r;

	(void)state;
	world_up(4096, 0);
	connect_pair(&c, &s);
	first = c->sbuf;		/* the ring is indexed by sequence number */
	n = tcp_send_buffer(c, &p);
	assert_ptr_equal(p, first + ((c->sb_seq + c->sb_len) & 4095));
	assert_int_equal(n, 4096 - (size_t)(p - first));
	assert_int_equal(tcp_send_commit(c, n + 1), -EINVAL);
	while (total < sizeof(got)) {
		n = tcp_send_buffer(c, &p);
		if (n) {
			n = n > sizeof(got) - total ? sizeof(got) - total : n;
			n = n > 1000 ? 1000 : n;
			assert_true(p >= first && p + n <= first + 4096);	/* no wrap */
			for (size_t i = 0; i < n; i++)
				p[i] = (uint8_t)((total + i) * 13);
			assert_int_equal(tcp_send_commit(c, n), (long)n);
			total += n;
		}
		netsim_step(&W.sim, W.sim.now_us + SEC);
		while ((r = tcp_recv(s, got + read, sizeof(got) - read)) > 0)
			read += (size_t)r;
	}
	for (int i = 0; i < 1000 && read < sizeof(got); i++) {
		netsim_step(&W.sim, W.sim.now_us + SEC);
		while ((r = tcp_recv(s, got + read, sizeof(got) - read)) > 0)
			read += (size_t)r;
	}
	assert_int_equal(read, sizeof(got));
	for (size_t i = 0; i < sizeof(got); i++)
		assert_int_equal(got[i], (uint8_t)(i * 13));
	assert_int_equal(tcp_shutdown(c), 0);
	assert_int_equal(tcp_send_buffer(c, &p), 0);
	assert_int_equal(tcp_send_commit(c, 0), -EPIPE);
	tcp_close(c);
	tcp_close(s);
	world_down();
}

static void test_fill_crc(void **state)
{
	static uint8_t a[70000], b[70000];

	(void)state;
	for (uint64_t off = 0; off < 20; off++)
		for (size_t len = 0; len < 45; len++) {
			uint64_t o = off + (off & 4 ? (1ull << 40) : 0);
			uint32_t seed = (uint32_t)(off * 77 + len);

			nettest_fill(o, a, len);
			memset(b, 0, len + 8);
			assert_int_equal(nettest_fill_crc(o, b, len, seed),
					 crc32_update(seed, a, len));
			assert_memory_equal(a, b, len);
			assert_int_equal(b[len], 0);	/* nothing past the end */
		}
	nettest_fill(5, a, sizeof(a) - 3);
	assert_int_equal(nettest_fill_crc(5, b, sizeof(b) - 3, 0),
			 crc32_update(0, a, sizeof(a) - 3));
	assert_memory_equal(a, b, sizeof(a) - 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tx_offload_stream),
		cmocka_unit_test(test_tso_stream),
		cmocka_unit_test(test_tso_refused_for_a_local_peer),
		cmocka_unit_test(test_tx_offload_needs_nic),
		cmocka_unit_test_setup_teardown(test_rx_verified_flags, one_up, one_down),
		cmocka_unit_test_setup_teardown(test_tx_offload_rst_field, one_up, one_down),
		cmocka_unit_test_setup_teardown(test_rx_verified_hostile, one_up, one_down),
		cmocka_unit_test_setup_teardown(test_tx_offload_icmp_untouched, one_up, one_down),
		cmocka_unit_test(test_send_buffer_commit),
		cmocka_unit_test(test_fill_crc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
