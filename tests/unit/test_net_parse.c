/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for Ethernet, ARP, IPv4 and ICMP: configuration, ARP requests,
 * replies, resolution, refresh and expiry, echo replies (checked byte by
 * byte and by checksum), ping round trips, and every parser against
 * truncated, lying, badly checksummed and random frames (fixed seeds).
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

#define CAP_MAX 64

/* Frames the stack transmitted. */
struct cap {
	int n;
	bool busy;
	size_t len[CAP_MAX];
	uint8_t f[CAP_MAX][ETH_FRAME_MAX];
};

static struct cap cap;
static struct netstack ns;

static const uint8_t my_mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };
static const uint8_t peer_mac[6] = { 0x02, 0, 0, 0, 0, 0x02 };
static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
#define MY_IP	0x0a000001u	/* 10.0.0.1/24 */
#define PEER_IP	0x0a000002u
#define GW_IP	0x0a0000feu

static int cap_xmit(void *ctx, const void *frame, size_t len)
{
	(void)ctx;
	assert_true(len >= ETH_ZLEN && len <= ETH_FRAME_MAX);
	if (cap.busy)
		return -EAGAIN;
	if (cap.n < CAP_MAX) {
		memcpy(cap.f[cap.n], frame, len);
		cap.len[cap.n] = len;
	}
	cap.n++;
	return 0;
}

static int setup(void **state)
{
	struct net_config cfg = { .xmit = cap_xmit, .seed = 42, .arp_timeout_ms = 10000 };

	(void)state;
	memcpy(cfg.mac, my_mac, 6);
	memset(&cap, 0, sizeof(cap));
	assert_int_equal(net_init(&ns, &cfg), 0);
	net_set_time(&ns, 1000000);
	assert_int_equal(net_set_ipv4(&ns, MY_IP, 24, GW_IP), 0);
	cap.n = 0;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	net_free(&ns);
	return 0;
}

/* --- frame builders --- */

static size_t eth_hdr(uint8_t *f, const uint8_t *dst, const uint8_t *src, uint16_t type)
{
	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	put_be16(f + 12, type);
	return ETH_HLEN;
}

static size_t ip_frame(uint8_t *f, uint32_t src, uint32_t dst, uint8_t proto,
		       const uint8_t *l4, size_t l4len)
{
	uint8_t *h = f + eth_hdr(f, my_mac, peer_mac, ETH_P_IP);

	memset(h, 0, IP_HLEN);
	h[0] = 0x45;
	put_be16(h + 2, (uint16_t)(IP_HLEN + l4len));
	put_be16(h + 6, IP_FLAG_DF);
	h[8] = 64;
	h[9] = proto;
	put_be32(h + 12, src);
	put_be32(h + 16, dst);
	csum_store(h + 10, csum_finish(csum_add(0, h, IP_HLEN)));
	memcpy(h + IP_HLEN, l4, l4len);
	return ETH_HLEN + IP_HLEN + l4len;
}

static void ip_fix_csum(uint8_t *f)
{
	uint8_t *h = f + ETH_HLEN;
	size_t hl = (size_t)(h[0] & 15) * 4;

	put_be16(h + 10, 0);
	csum_store(h + 10, csum_finish(csum_add(0, h, hl)));
}

static size_t echo_frame(uint8_t *f, uint8_t type, uint32_t src, uint32_t dst,
			 uint16_t id, uint16_t seq, size_t datalen)
{
	uint8_t m[ICMP_HLEN + 1500];

	m[0] = type;
	m[1] = 0;
	put_be16(m + 2, 0);
	put_be16(m + 4, id);
	put_be16(m + 6, seq);
	for (size_t i = 0; i < datalen; i++)
		m[8 + i] = (uint8_t)(i * 7);
	csum_store(m + 2, csum_finish(csum_add(0, m, ICMP_HLEN + datalen)));
	return ip_frame(f, src, dst, IP_PROTO_ICMP, m, ICMP_HLEN + datalen);
}

static size_t tcp_frame(uint8_t *f, uint16_t sport, uint16_t dport, uint32_t seq,
			uint32_t ack, uint8_t flags, const uint8_t *opt, size_t optlen)
{
	uint8_t t[60];
	size_t tl = TCP_HLEN + optlen;

	memset(t, 0, sizeof(t));
	put_be16(t, sport);
	put_be16(t + 2, dport);
	put_be32(t + 4, seq);
	put_be32(t + 8, ack);
	t[12] = (uint8_t)((tl / 4) << 4);
	t[13] = flags;
	put_be16(t + 14, 8192);
	if (optlen)
		memcpy(t + TCP_HLEN, opt, optlen);
	csum_store(t + 16, csum_finish(csum_add(csum_pseudo(PEER_IP, MY_IP, 6, (uint16_t)tl),
						t, tl)));
	return ip_frame(f, PEER_IP, MY_IP, IP_PROTO_TCP, t, tl);
}

static void learn_peer(void)
{
	uint8_t f[64];

	net_input(&ns, f, arp_frame(f, ARP_OP_REPLY, peer_mac, PEER_IP, my_mac, MY_IP, my_mac));
}

/* --- configuration and ARP --- */

static void test_config(void **state)
{
	struct net_config cfg = { .xmit = cap_xmit };
	struct netstack other;
	const uint8_t *a;

	(void)state;
	assert_int_equal(net_set_ipv4(&ns, MY_IP, 24, GW_IP), 0);
	assert_int_equal(cap.n, 1);	/* gratuitous ARP */
	assert_memory_equal(cap.f[0], bcast, 6);
	assert_int_equal(get_be16(cap.f[0] + 12), ETH_P_ARP);
	a = cap.f[0] + ETH_HLEN;
	assert_int_equal(get_be16(a + ARP_O_OP), ARP_OP_REQUEST);
	assert_int_equal(get_be32(a + ARP_O_SPA), MY_IP);
	assert_int_equal(get_be32(a + ARP_O_TPA), MY_IP);
	assert_memory_equal(a + ARP_O_SHA, my_mac, 6);
	assert_int_equal(net_prefix_len(&ns), 24);

	assert_int_equal(net_set_ipv4(&ns, MY_IP, 0, 0), -EINVAL);
	assert_int_equal(net_set_ipv4(&ns, MY_IP, 33, 0), -EINVAL);
	assert_int_equal(net_set_ipv4(&ns, 0, 24, 0), -EINVAL);
	assert_int_equal(net_set_ipv4(&ns, 0x7f000001, 8, 0), -EINVAL);
	assert_int_equal(net_set_ipv4(&ns, 0xe0000001, 24, 0), -EINVAL);
	assert_int_equal(net_set_ipv4(&ns, 0x0a000000, 24, 0), -EINVAL);
	assert_int_equal(net_set_ipv4(&ns, 0x0a0000ff, 24, 0), -EINVAL);
	assert_int_equal(net_set_ipv4(&ns, MY_IP, 24, 0x0b000001), -EINVAL);
	assert_int_equal(net_set_ipv4(&ns, MY_IP, 24, MY_IP), -EINVAL);
	assert_int_equal(ns.ip, MY_IP);		/* failures change nothing */
	assert_int_equal(ns.gw, GW_IP);
	assert_int_equal(net_set_ipv4(&ns, 0x0a000005, 32, 0), 0);

	memcpy(cfg.mac, bcast, 6);
	assert_int_equal(net_init(&other, &cfg), -EINVAL);
	cfg.xmit = NULL;
	memcpy(cfg.mac, my_mac, 6);
	assert_int_equal(net_init(&other, &cfg), -EINVAL);
}

static void test_arp_request_reply(void **state)
{
	uint8_t f[64], mac[6];
	const uint8_t *a;

	(void)state;
	net_input(&ns, f, arp_frame(f, ARP_OP_REQUEST, peer_mac, PEER_IP,
				    (uint8_t[6]){ 0 }, MY_IP, bcast));
	assert_int_equal(cap.n, 1);
	assert_memory_equal(cap.f[0], peer_mac, 6);
	assert_memory_equal(cap.f[0] + 6, my_mac, 6);
	a = cap.f[0] + ETH_HLEN;
	assert_int_equal(get_be16(a + ARP_O_OP), ARP_OP_REPLY);
	assert_memory_equal(a + ARP_O_SHA, my_mac, 6);
	assert_int_equal(get_be32(a + ARP_O_SPA), MY_IP);
	assert_memory_equal(a + ARP_O_THA, peer_mac, 6);
	assert_int_equal(get_be32(a + ARP_O_TPA), PEER_IP);
	assert_int_equal(arp_lookup(&ns, PEER_IP, mac), 0);
	assert_memory_equal(mac, peer_mac, 6);
	assert_int_equal(ns.stats.arp.rx_requests, 1);
	assert_int_equal(ns.stats.arp.tx_replies, 1);

	/* a request for someone else: no reply, no new entry */
	net_input(&ns, f, arp_frame(f, ARP_OP_REQUEST, peer_mac, 0x0a000003,
				    (uint8_t[6]){ 0 }, 0x0a000004, bcast));
	assert_int_equal(cap.n, 1);
	assert_int_equal(arp_lookup(&ns, 0x0a000003, mac), -ENOENT);

	/* someone claiming our address */
	net_input(&ns, f, arp_frame(f, ARP_OP_REPLY, peer_mac, MY_IP, my_mac, MY_IP, bcast));
	assert_int_equal(ns.stats.arp.conflicts, 1);

	/* off-link senders are not learnt */
	net_input(&ns, f, arp_frame(f, ARP_OP_REQUEST, peer_mac, 0x0b000001,
				    (uint8_t[6]){ 0 }, MY_IP, bcast));
	assert_int_equal(arp_lookup(&ns, 0x0b000001, mac), -ENOENT);
}

static void test_arp_malformed(void **state)
{
	uint8_t f[64];
	size_t n;

	(void)state;
	n = arp_frame(f, ARP_OP_REQUEST, peer_mac, PEER_IP, (uint8_t[6]){ 0 }, MY_IP, bcast);
	net_input(&ns, f, ETH_HLEN + 27);		/* truncated */
	f[ETH_HLEN + 4] = 8;				/* hlen lies */
	net_input(&ns, f, n);
	f[ETH_HLEN + 4] = 6;
	put_be16(f + ETH_HLEN + 6, 3);			/* bad op */
	net_input(&ns, f, n);
	put_be16(f + ETH_HLEN + 6, 1);
	put_be16(f + ETH_HLEN + 2, 0x86dd);		/* not IPv4 */
	net_input(&ns, f, n);
	put_be16(f + ETH_HLEN + 2, ETH_P_IP);
	f[ETH_HLEN + 8] = 0x01;				/* multicast sender */
	net_input(&ns, f, n);
	assert_int_equal(ns.stats.arp.rx_errors, 5);
	assert_int_equal(cap.n, 0);
}

struct arp_seen {
	int n;
	struct arp_info e[4];
};

static void arp_visit(const struct arp_info *i, void *arg)
{
	struct arp_seen *s = arg;

	if (s->n < 4)
		s->e[s->n] = *i;
	s->n++;
}

static void test_arp_resolve_and_ping(void **state)
{
	struct icmp_echo_reply r;
	struct arp_seen seen = { 0 };
	uint8_t f[1600];
	const uint8_t *ip;

	(void)state;
	assert_int_equal(icmp_ping_send(&ns, PEER_IP, 7, 1, 56), 0);
	assert_int_equal(cap.n, 1);			/* only the ARP request */
	assert_int_equal(get_be16(cap.f[0] + 12), ETH_P_ARP);
	assert_int_equal(get_be32(cap.f[0] + ETH_HLEN + ARP_O_TPA), PEER_IP);
	arp_foreach(&ns, arp_visit, &seen);
	assert_int_equal(seen.n, 1);
	assert_false(seen.e[0].complete);

	net_set_time(&ns, 1000500);
	learn_peer();					/* the held echo goes out */
	assert_int_equal(cap.n, 2);
	assert_memory_equal(cap.f[1], peer_mac, 6);
	ip = cap.f[1] + ETH_HLEN;
	assert_int_equal(ip[IP_O_PROTO], IP_PROTO_ICMP);
	assert_true(csum_ok(csum_add(0, ip, IP_HLEN)));
	assert_true(csum_ok(csum_add(0, ip + IP_HLEN, ICMP_HLEN + 56)));
	assert_int_equal(ip[IP_HLEN], ICMP_ECHO);

	net_set_time(&ns, 1003000);
	net_input(&ns, f, echo_frame(f, ICMP_ECHO_REPLY, PEER_IP, MY_IP, 7, 1, 56));
	assert_int_equal(icmp_ping_reply(&ns, &r), 1);
	assert_int_equal(r.from, PEER_IP);
	assert_int_equal(r.seq, 1);
	assert_int_equal(r.len, 56);
	assert_int_equal(r.rtt_us, 3000);
	assert_int_equal(r.ttl, 64);
	assert_int_equal(icmp_ping_reply(&ns, &r), 0);
	/* the same reply again is unmatched */
	net_input(&ns, f, echo_frame(f, ICMP_ECHO_REPLY, PEER_IP, MY_IP, 7, 1, 56));
	assert_int_equal(icmp_ping_reply(&ns, &r), 0);
	assert_int_equal(ns.stats.icmp.rx_unmatched, 1);

	/* off-link goes to the gateway; without one it is unreachable */
	assert_int_equal(icmp_ping_send(&ns, 0x08080808, 7, 2, 0), 0);
	assert_int_equal(get_be32(cap.f[2] + ETH_HLEN + ARP_O_TPA), GW_IP);
	assert_int_equal(net_set_ipv4(&ns, MY_IP, 24, 0), 0);
	assert_int_equal(icmp_ping_send(&ns, 0x08080808, 7, 3, 0), -ENETUNREACH);
	assert_int_equal(icmp_ping_send(&ns, PEER_IP, 7, 3, ICMP_PING_MAXDATA + 1), -EINVAL);
	assert_int_equal(icmp_ping_send(&ns, 0x0a0000ff, 7, 3, 8), -EINVAL);
}

static void test_arp_expiry_and_refresh(void **state)
{
	uint8_t mac[6], f[64];
	int before;

	(void)state;
	learn_peer();
	assert_int_equal(arp_lookup(&ns, PEER_IP, mac), 0);
	/* late in its life, using the entry sends a refresh request */
	net_set_time(&ns, 1000000 + 9000000);
	before = cap.n;
	assert_int_equal(icmp_ping_send(&ns, PEER_IP, 1, 1, 0), 0);
	assert_int_equal(cap.n, before + 2);		/* echo + request */
	assert_int_equal(get_be16(cap.f[before] + 12), ETH_P_IP);	/* frame first: */
	assert_int_equal(get_be16(cap.f[before + 1] + 12), ETH_P_ARP);	/* see tx_frame */
	/* not answered: it expires */
	assert_true(net_poll(&ns, 1000000 + 9999999) <= 1000000 + 10000000);
	assert_int_equal(arp_lookup(&ns, PEER_IP, mac), 0);
	net_poll(&ns, 1000000 + 10000000);
	assert_int_equal(arp_lookup(&ns, PEER_IP, mac), -ENOENT);

	/* an answered refresh extends the lifetime */
	net_set_time(&ns, 20000000);
	learn_peer();
	net_set_time(&ns, 29000000);
	net_input(&ns, f, arp_frame(f, ARP_OP_REPLY, peer_mac, PEER_IP, my_mac, MY_IP, my_mac));
	net_poll(&ns, 35000000);
	assert_int_equal(arp_lookup(&ns, PEER_IP, mac), 0);
}

static void test_arp_unanswered(void **state)
{
	int arps = 0;

	(void)state;
	assert_int_equal(icmp_ping_send(&ns, PEER_IP, 1, 1, 0), 0);
	for (uint64_t t = 1000000; t <= 6000000; t += 250000)
		net_poll(&ns, t);
	for (int i = 0; i < cap.n; i++)
		arps += get_be16(cap.f[i] + 12) == ETH_P_ARP;
	assert_int_equal(arps, ARP_RETRIES);
	assert_int_equal(ns.stats.arp.unresolved, 1);	/* the held echo */
	assert_int_equal(net_poll(&ns, 7000000), UINT64_MAX);
}

/* Echo requests from n forged on-link sources from 10.0.0.first, one a
 * millisecond from t: each is answered, none of them resolves. */
static void forged_pings(uint64_t t, int first, int n)
{
	uint8_t f[128];

	for (int i = 0; i < n; i++) {
		net_set_time(&ns, t + 1000 * (uint64_t)i);
		net_input(&ns, f, echo_frame(f, ICMP_ECHO, 0x0a000000u | (uint32_t)(first + i),
					     MY_IP, 1, (uint16_t)i, 8));
	}
}

/* Answers to forged sources (echo replies here; resets alike) take no
 * entry or queue slot that ferry's own traffic holds: a SYN to a peer
 * waiting for its reply between two floods goes when the reply comes.
 * And they start resolving at most ARP_ANSWER_RATE next hops a second. */
static void test_arp_answers_keep_own_entries(void **state)
{
	struct tcp_conn *c;
	uint8_t mac[6];
	const uint8_t *t;
	int requests;

	(void)state;
	forged_pings(1000000, 100, ARP_CACHE_SIZE);
	assert_int_equal(tcp_connect(&ns, PEER_IP, 80, &c), 0);
	forged_pings(2000000, 150, ARP_CACHE_SIZE);
	requests = (int)ns.stats.arp.tx_requests;
	cap.n = 0;
	net_set_time(&ns, 2100000);
	learn_peer();
	assert_int_equal(arp_lookup(&ns, PEER_IP, mac), 0);
	assert_int_equal(cap.n, 1);			/* the SYN, which waited */
	assert_memory_equal(cap.f[0], peer_mac, 6);
	t = cap.f[0] + NET_L4_OFF;
	assert_int_equal(get_be16(t + TCP_O_DPORT), 80);
	assert_int_equal(t[TCP_O_FLAGS], TCP_SYN);
	assert_int_equal(requests, 1 + 2 * ARP_ANSWER_RATE + 1);	/* and ours */
	tcp_abort(c);
}

/* A host that asks for us after a flood of forged askers filled the cache
 * is cached in place of one of theirs (not of the peer ferry sends to),
 * so that answering it needs no request. */
static void test_arp_asker_after_a_flood(void **state)
{
	static const uint8_t host_mac[6] = { 0x02, 0, 0, 0, 0, 0x33 };
	uint8_t f[128], mac[6];
	int before;

	(void)state;
	learn_peer();
	assert_int_equal(icmp_ping_send(&ns, PEER_IP, 1, 1, 0), 0);	/* in use */
	for (int i = 0; i < ARP_CACHE_SIZE; i++) {
		uint8_t smac[6] = { 0x02, 0, 0, 0, 1, (uint8_t)i };

		net_set_time(&ns, 1000000 + 1000 * (uint64_t)i);
		net_input(&ns, f, arp_frame(f, ARP_OP_REQUEST, smac,
					    0x0a000000u | (uint32_t)(100 + i),
					    (uint8_t[6]){ 0 }, MY_IP, bcast));
	}
	net_input(&ns, f, arp_frame(f, ARP_OP_REQUEST, host_mac, 0x0a000033u,
				    (uint8_t[6]){ 0 }, MY_IP, bcast));
	assert_int_equal(arp_lookup(&ns, 0x0a000033u, mac), 0);
	assert_memory_equal(mac, host_mac, 6);
	assert_int_equal(arp_lookup(&ns, PEER_IP, mac), 0);
	before = (int)ns.stats.arp.tx_requests;
	net_input(&ns, f, echo_frame(f, ICMP_ECHO, 0x0a000033u, MY_IP, 1, 1, 8));
	assert_int_equal(ns.stats.arp.tx_requests, before);
	assert_memory_equal(cap.f[cap.n - 1], host_mac, 6);	/* the echo reply */
}

/* --- ICMP --- */

static void test_echo_reply(void **state)
{
	uint8_t f[1600];
	size_t n;
	const uint8_t *ip, *m;

	(void)state;
	learn_peer();
	n = echo_frame(f, ICMP_ECHO, PEER_IP, MY_IP, 0x1234, 9, 1000);
	net_input(&ns, f, n);
	assert_int_equal(cap.n, 1);
	assert_int_equal(cap.len[0], n);
	assert_memory_equal(cap.f[0], peer_mac, 6);
	ip = cap.f[0] + ETH_HLEN;
	assert_true(csum_ok(csum_add(0, ip, IP_HLEN)));
	assert_int_equal(get_be32(ip + IP_O_SRC), MY_IP);
	assert_int_equal(get_be32(ip + IP_O_DST), PEER_IP);
	assert_int_equal(get_be16(ip + IP_O_LEN), IP_HLEN + ICMP_HLEN + 1000);
	m = ip + IP_HLEN;
	assert_int_equal(m[0], ICMP_ECHO_REPLY);
	assert_true(csum_ok(csum_add(0, m, ICMP_HLEN + 1000)));
	assert_int_equal(get_be16(m + 4), 0x1234);
	assert_int_equal(get_be16(m + 6), 9);
	assert_memory_equal(m + 8, f + ETH_HLEN + IP_HLEN + 8, 1000);
	assert_int_equal(ns.stats.icmp.tx_echo_replies, 1);

	/* Ethernet padding after the IP packet is ignored */
	n = echo_frame(f, ICMP_ECHO, PEER_IP, MY_IP, 1, 1, 0);
	memset(f + n, 0xee, 60 - n);
	net_input(&ns, f, 60);
	assert_int_equal(cap.n, 2);
	assert_true(csum_ok(csum_add(0, cap.f[1] + ETH_HLEN + IP_HLEN, ICMP_HLEN)));

	/* no answer to a broadcast, a bad checksum, or a runt */
	net_input(&ns, f, echo_frame(f, ICMP_ECHO, PEER_IP, 0x0a0000ff, 1, 1, 8));
	n = echo_frame(f, ICMP_ECHO, PEER_IP, MY_IP, 1, 1, 8);
	f[n - 1] ^= 1;
	net_input(&ns, f, n);
	net_input(&ns, f, ip_frame(f, PEER_IP, MY_IP, IP_PROTO_ICMP, (uint8_t[4]){ 8 }, 4));
	net_input(&ns, f, echo_frame(f, 13, PEER_IP, MY_IP, 1, 1, 12));	/* timestamp */
	assert_int_equal(cap.n, 2);
	assert_int_equal(ns.stats.icmp.rx_bad_csum, 1);
	assert_int_equal(ns.stats.icmp.rx_errors, 1);
	assert_int_equal(ns.stats.icmp.rx_other, 1);
}

/* --- IPv4 and Ethernet --- */

static void test_ip_malformed(void **state)
{
	uint8_t f[1600], g[1600];
	size_t n;

	(void)state;
	learn_peer();
	n = echo_frame(f, ICMP_ECHO, PEER_IP, MY_IP, 1, 1, 32);
	memcpy(g, f, n);

	net_input(&ns, g, ETH_HLEN + 19);			/* truncated header */
	g[ETH_HLEN] = 0x65; ip_fix_csum(g);			/* version 6 */
	net_input(&ns, g, n);
	g[ETH_HLEN] = 0x44;					/* IHL 4 */
	net_input(&ns, g, n);
	g[ETH_HLEN] = 0x4f; ip_fix_csum(g);			/* IHL past the frame */
	net_input(&ns, g, ETH_HLEN + 40);
	memcpy(g, f, n);
	put_be16(g + ETH_HLEN + 2, (uint16_t)(n - ETH_HLEN + 1)); ip_fix_csum(g);
	net_input(&ns, g, n);					/* length lies (long) */
	put_be16(g + ETH_HLEN + 2, 19); ip_fix_csum(g);
	net_input(&ns, g, n);					/* shorter than header */
	assert_int_equal(ns.stats.ip.rx_errors, 6);

	memcpy(g, f, n);
	g[ETH_HLEN + 10] ^= 0x55;				/* bad checksum */
	net_input(&ns, g, n);
	assert_int_equal(ns.stats.ip.rx_bad_csum, 1);

	memcpy(g, f, n);
	put_be16(g + ETH_HLEN + 6, IP_FLAG_MF); ip_fix_csum(g);
	net_input(&ns, g, n);
	put_be16(g + ETH_HLEN + 6, 100); ip_fix_csum(g);
	net_input(&ns, g, n);
	assert_int_equal(ns.stats.ip.rx_frags, 2);

	net_input(&ns, g, echo_frame(g, ICMP_ECHO, PEER_IP, 0x0a000009, 1, 1, 8));
	net_input(&ns, g, echo_frame(g, ICMP_ECHO, 0xffffffff, MY_IP, 1, 1, 8));
	net_input(&ns, g, echo_frame(g, ICMP_ECHO, MY_IP, MY_IP, 1, 1, 8));
	assert_int_equal(ns.stats.ip.rx_not_for_us, 3);
	net_input(&ns, g, ip_frame(g, PEER_IP, MY_IP, 17, (uint8_t[8]){ 0 }, 8));
	assert_int_equal(ns.stats.ip.rx_unknown_proto, 1);
	assert_int_equal(cap.n, 0);

	/* with options (IHL 6) a packet is still handled */
	memcpy(g, f, ETH_HLEN + IP_HLEN);
	memset(g + ETH_HLEN + IP_HLEN, 1, 4);			/* 4 NOP options */
	memcpy(g + ETH_HLEN + IP_HLEN + 4, f + ETH_HLEN + IP_HLEN, n - ETH_HLEN - IP_HLEN);
	g[ETH_HLEN] = 0x46;
	put_be16(g + ETH_HLEN + 2, (uint16_t)(n - ETH_HLEN + 4));
	ip_fix_csum(g);
	net_input(&ns, g, n + 4);
	assert_int_equal(cap.n, 1);
}

static void test_eth_malformed(void **state)
{
	uint8_t f[2000];
	size_t n;

	(void)state;
	n = echo_frame(f, ICMP_ECHO, PEER_IP, MY_IP, 1, 1, 8);
	net_input(&ns, f, 13);
	net_input(&ns, f, 0);
	net_input(&ns, NULL, 100);
	net_input(&ns, f, ETH_RX_MAX + 1);
	assert_int_equal(ns.stats.eth.rx_errors, 4);
	f[0] = 0x04;						/* not our MAC */
	net_input(&ns, f, n);
	memcpy(f, my_mac, 6);
	f[6] = 0x01;						/* group source */
	net_input(&ns, f, n);
	memcpy(f + 6, peer_mac, 6);
	put_be16(f + 12, 0x86dd);				/* IPv6 */
	net_input(&ns, f, n);
	assert_int_equal(ns.stats.eth.rx_dropped, 3);
	assert_int_equal(ns.stats.eth.rx_frames, 7);
	assert_int_equal(cap.n, 0);
}

static void test_unconfigured(void **state)
{
	struct net_config cfg = { .xmit = cap_xmit };
	struct netstack s2;
	struct tcp_conn *c;
	uint8_t f[200];

	(void)state;
	memcpy(cfg.mac, my_mac, 6);
	assert_int_equal(net_init(&s2, &cfg), 0);
	net_input(&s2, f, echo_frame(f, ICMP_ECHO, PEER_IP, MY_IP, 1, 1, 8));
	net_input(&s2, f, arp_frame(f, ARP_OP_REQUEST, peer_mac, PEER_IP,
				    (uint8_t[6]){ 0 }, MY_IP, bcast));
	assert_int_equal(cap.n, 0);
	assert_int_equal(icmp_ping_send(&s2, PEER_IP, 1, 1, 0), -ENETUNREACH);
	assert_int_equal(tcp_connect(&s2, PEER_IP, 80, &c), -EADDRNOTAVAIL);
	net_free(&s2);
}

static void test_driver_busy(void **state)
{
	uint8_t f[200];

	(void)state;
	learn_peer();
	cap.busy = true;
	net_input(&ns, f, echo_frame(f, ICMP_ECHO, PEER_IP, MY_IP, 1, 1, 8));
	assert_int_equal(ns.stats.eth.tx_busy, 1);
	assert_int_equal(icmp_ping_send(&ns, PEER_IP, 1, 1, 0), -EAGAIN);
	cap.busy = false;
}

/* --- TCP header parsing (connection logic is in test_net_tcp.c) --- */

static void test_tcp_malformed(void **state)
{
	uint8_t f[200];
	const uint8_t *t;
	size_t n;
	struct tcp_conn *l;

	(void)state;
	learn_peer();
	assert_int_equal(tcp_listen(&ns, 80, 4, &l), 0);
	n = tcp_frame(f, 1000, 80, 5, 0, TCP_SYN, NULL, 0);
	net_input(&ns, f, n - 1);			/* IP length lies */
	put_be16(f + ETH_HLEN + 2, IP_HLEN + 19); ip_fix_csum(f);
	net_input(&ns, f, n);				/* truncated TCP header */
	n = tcp_frame(f, 1000, 80, 5, 0, TCP_SYN, NULL, 0);
	f[ETH_HLEN + IP_HLEN + 12] = 0x40;		/* data offset 4 */
	net_input(&ns, f, n);
	f[ETH_HLEN + IP_HLEN + 12] = 0x60;		/* data offset past the end */
	net_input(&ns, f, n);
	n = tcp_frame(f, 1000, 80, 5, 0, TCP_SYN, (uint8_t[4]){ 2, 0, 0, 0 }, 4);
	net_input(&ns, f, n);				/* option length 0 */
	n = tcp_frame(f, 1000, 80, 5, 0, TCP_SYN, (uint8_t[4]){ 1, 1, 2, 9 }, 4);
	net_input(&ns, f, n);				/* option overruns */
	n = tcp_frame(f, 1000, 80, 5, 0, TCP_SYN | TCP_FIN, NULL, 0);
	net_input(&ns, f, n);
	n = tcp_frame(f, 0, 80, 5, 0, TCP_SYN, NULL, 0);
	net_input(&ns, f, n);				/* port 0 */
	assert_int_equal(ns.stats.tcp.rx_errors, 7);
	n = tcp_frame(f, 1000, 80, 5, 0, TCP_SYN, NULL, 0);
	f[n - 3] ^= 0x10;
	net_input(&ns, f, n);
	assert_int_equal(ns.stats.tcp.rx_bad_csum, 1);
	assert_int_equal(ns.stats.tcp.passive_opens, 0);
	assert_int_equal(cap.n, 0);

	/* closed port: RST, ACKing the SYN */
	net_input(&ns, f, tcp_frame(f, 1000, 81, 5, 0, TCP_SYN, NULL, 0));
	assert_int_equal(cap.n, 1);
	t = cap.f[0] + ETH_HLEN + IP_HLEN;
	assert_int_equal(t[13], TCP_RST | TCP_ACK);
	assert_int_equal(get_be32(t + 8), 6);
	assert_int_equal(get_be32(t + 4), 0);
	assert_true(csum_ok(csum_add(csum_pseudo(MY_IP, PEER_IP, 6, TCP_HLEN), t, TCP_HLEN)));
	/* an ACK to a closed port: RST with seq = its ack; RST: nothing */
	net_input(&ns, f, tcp_frame(f, 1000, 81, 5, 777, TCP_ACK, NULL, 0));
	t = cap.f[1] + ETH_HLEN + IP_HLEN;
	assert_int_equal(t[13], TCP_RST);
	assert_int_equal(get_be32(t + 4), 777);
	net_input(&ns, f, tcp_frame(f, 1000, 81, 5, 777, TCP_RST, NULL, 0));
	assert_int_equal(cap.n, 2);

	/* a well-formed SYN with odd but valid options opens */
	n = tcp_frame(f, 1000, 80, 5, 0, TCP_SYN,
		      (uint8_t[12]){ 1, 3, 3, 99, 2, 4, 0, 10, 4, 2, 0, 0 }, 12);
	net_input(&ns, f, n);
	assert_int_equal(ns.stats.tcp.passive_opens, 1);
	assert_int_equal(cap.n, 3);
	t = cap.f[2] + ETH_HLEN + IP_HLEN;
	assert_int_equal(t[13], TCP_SYN | TCP_ACK);
	assert_int_equal(get_be32(t + 8), 6);
	tcp_close(l);
}

/* --- fuzz --- */

static uint64_t fz = 0x9e3779b97f4a7c15ull;

static uint64_t frand(void)
{
	fz ^= fz << 13;
	fz ^= fz >> 7;
	fz ^= fz << 17;
	return fz;
}

static size_t fuzz_template(uint8_t *f, int kind)
{
	switch (kind) {
	case 0:
		return arp_frame(f, ARP_OP_REQUEST, peer_mac, PEER_IP, (uint8_t[6]){ 0 },
				 MY_IP, bcast);
	case 1:
		return echo_frame(f, ICMP_ECHO, PEER_IP, MY_IP, 1, 1, frand() % 200);
	case 2:
		return tcp_frame(f, 1000 + frand() % 4, 80, (uint32_t)frand(), (uint32_t)frand(),
				 (uint8_t)frand(), (uint8_t[8]){ 2, 4, 5, 180, 3, 3, 7, 0 }, 8);
	default:
		for (int i = 0; i < 1600; i++)
			f[i] = (uint8_t)frand();
		return frand() % 1600;
	}
}

static void test_fuzz(void **state)
{
	static uint8_t f[2000];
	struct tcp_conn *l;
	const int rounds = 30000;

	(void)state;
	assert_int_equal(tcp_listen(&ns, 80, 4, &l), 0);
	for (int r = 0; r < rounds; r++) {
		int kind = (int)(frand() % 4), flips = (int)(frand() % 4);
		size_t n = fuzz_template(f, kind);

		for (int k = 0; k < flips; k++)
			f[frand() % (n + 1)] ^= (uint8_t)frand();
		if (frand() % 4 == 0)
			n = frand() % (n + 1);
		if (kind && kind < 3 && frand() % 2 && n >= ETH_HLEN + IP_HLEN &&
		    (f[ETH_HLEN] & 15) >= 5)
			ip_fix_csum(f);			/* get past the IP check */
		if (kind < 3 && frand() % 2)
			memcpy(f, my_mac, 6);
		net_set_time(&ns, 1000000 + (uint64_t)r * 1000);
		net_input(&ns, f, n);
		if (r % 64 == 0)
			net_poll(&ns, 1000000 + (uint64_t)r * 1000);
		cap.n = 0;
	}
	assert_int_equal(ns.stats.eth.rx_frames, rounds);
	/* the listener still works and half-open connections stay bounded */
	assert_int_equal(tcp_get_state(l), TCP_LISTEN);
	for (uint32_t i = 0, half = 0; i < ns.tcp.p.max_conns; i++) {
		half += ns.tcp.conns[i].used && ns.tcp.conns[i].state == TCP_SYN_RCVD;
		assert_true(half <= 4);
	}
	tcp_close(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_config, setup, teardown),
		cmocka_unit_test_setup_teardown(test_arp_request_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_arp_malformed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_arp_resolve_and_ping, setup, teardown),
		cmocka_unit_test_setup_teardown(test_arp_expiry_and_refresh, setup, teardown),
		cmocka_unit_test_setup_teardown(test_arp_unanswered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_arp_answers_keep_own_entries, setup, teardown),
		cmocka_unit_test_setup_teardown(test_arp_asker_after_a_flood, setup, teardown),
		cmocka_unit_test_setup_teardown(test_echo_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ip_malformed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_eth_malformed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unconfigured, setup, teardown),
		cmocka_unit_test_setup_teardown(test_driver_busy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tcp_malformed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fuzz, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
