/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target: the host network stack's input path (hv/net: Ethernet,
 * ARP, IPv4, ICMP, TCP input with options, SACK, reassembly, timers)
 * against a hostile peer on the wire, with a listener (port 80), an
 * active connection (to the peer's port 7000) and an application that
 * accepts, reads, writes and closes.
 *
 * Input: steps of u8 ctl, u16 len (LE), len bytes:
 *   ctl % 5 == 0: a raw Ethernet frame (ctl & 0x80: the NIC claims the
 *                 IP and TCP checksums good)
 *   ctl % 5 == 1: a TCP segment (header, options, data) from the peer:
 *                 Ethernet and IPv4 are built and every checksum fixed;
 *                 ctl & 0x40: its ports are aimed at the active connection
 *                 ctl & 0x20: seq/ack/ports answer the last segment sent
 *   ctl % 5 == 2: an IPv4 payload of protocol bytes[0] (checksummed)
 *   ctl % 5 == 3: time passes: bytes[0..1] ms, then net_poll
 *   ctl % 5 == 4: an application call chosen by bytes[0]
 * Invariants: every frame the stack sends is 14..ETH_FRAME_MAX bytes,
 * with a valid IPv4 header and TCP/ICMP checksum; reads return what was
 * asked at most; queue sizes stay within the buffers.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hv/lib/bytes.h"
#include "hv/net/cksum.h"
#include "hv/net/net.h"
#include "hv/net/tcp.h"
#include "tests/unit/net_free.h"
#include "tests/fuzz/fuzz.h"


#define MY_IP	0x0a000001u
#define PEER_IP	0x0a000002u
#define RCVBUF	8192u
#define SNDBUF	8192u

static const uint8_t my_mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };
static const uint8_t peer_mac[6] = { 0x02, 0, 0, 0, 0, 0x02 };
static struct netstack ns;
static uint64_t now_us;
static unsigned long sent;
/* The last TCP segment the stack sent: a peer that follows along answers it. */
static struct { bool valid; uint32_t seq, ack; uint16_t sport, dport; } last;

static int xmit(void *ctx, const void *frame, size_t len)
{
	const uint8_t *f = frame;

	(void)ctx;
	sent++;
	CHECK(len >= ETH_HLEN && len <= ETH_FRAME_MAX);
	if (get_be16(f + 12) == ETH_P_IP) {
		const uint8_t *ip = f + ETH_HLEN;
		CHECK(len >= ETH_HLEN + IP_HLEN);
		unsigned ihl = (ip[0] & 15) * 4u, tot = get_be16(ip + 2);
		CHECK((ip[0] >> 4) == 4 && ihl >= IP_HLEN);
		CHECK(tot >= ihl && tot <= len - ETH_HLEN);
		CHECK(csum_ok(csum_add(0, ip, ihl)));
		uint32_t src = get_be32(ip + 12), dst = get_be32(ip + 16);
		if (ip[9] == IP_PROTO_TCP) {
			CHECK(tot >= ihl + TCP_HLEN);
			const uint8_t *t = ip + ihl;
			CHECK((t[12] >> 4) * 4u >= TCP_HLEN && (t[12] >> 4) * 4u <= tot - ihl);
			CHECK(csum_ok(csum_add(csum_pseudo(src, dst, IP_PROTO_TCP,
							   (uint16_t)(tot - ihl)), t, tot - ihl)));
			uint32_t dl = tot - ihl - (t[12] >> 4) * 4u;
			last.valid = true;
			last.sport = get_be16(t);
			last.dport = get_be16(t + 2);
			last.ack = get_be32(t + 8);
			last.seq = get_be32(t + 4) + dl + !!(t[13] & 0x02) + !!(t[13] & 0x01);
		} else if (ip[9] == IP_PROTO_ICMP) {
			CHECK(csum_ok(csum_add(0, ip + ihl, tot - ihl)));
		}
	}
	return 0;
}

static uint8_t frame[ETH_RX_MAX + 2000];

static void eth_ip(uint8_t *f, uint8_t proto, size_t plen)
{
	uint8_t *ip = f + ETH_HLEN;

	memcpy(f, my_mac, 6);
	memcpy(f + 6, peer_mac, 6);
	put_be16(f + 12, ETH_P_IP);
	memset(ip, 0, IP_HLEN);
	ip[0] = 0x45;
	put_be16(ip + 2, (uint16_t)(IP_HLEN + plen));
	ip[8] = 64;
	ip[9] = proto;
	put_be32(ip + 12, PEER_IP);
	put_be32(ip + 16, MY_IP);
	csum_store(ip + 10, csum_finish(csum_add(0, ip, IP_HLEN)));
}

/* Feed a frame through an exact-size heap copy (ASan sees over-reads). */
static void input(const uint8_t *f, size_t len, unsigned flags)
{
	uint8_t *c = malloc(len ? len : 1);

	memcpy(c, f, len);
	net_set_time(&ns, now_us);
	if (flags)
		net_input_flags(&ns, c, len, flags);
	else
		net_input(&ns, c, len);
	free(c);
}

static void setup(void)
{
	struct net_config cfg = { .rcvbuf = RCVBUF, .sndbuf = SNDBUF, .xmit = xmit, .seed = 5,
				  .max_conns = 8, .syn_backlog = 2,
				  .arp_timeout_ms = 24 * 3600 * 1000 };
	uint8_t f[64], *a = f + ETH_HLEN;

	memcpy(cfg.mac, my_mac, 6);
	now_us = 1000000;
	CHECK(net_init(&ns, &cfg) == 0);
	net_set_time(&ns, now_us);
	CHECK(net_set_ipv4(&ns, MY_IP, 24, 0) == 0);
	memset(f, 0, sizeof(f));
	memcpy(f, my_mac, 6);
	memcpy(f + 6, peer_mac, 6);
	put_be16(f + 12, ETH_P_ARP);
	put_be16(a, 1);
	put_be16(a + 2, ETH_P_IP);
	a[4] = 6;
	a[5] = 4;
	put_be16(a + 6, ARP_OP_REPLY);
	memcpy(a + 8, peer_mac, 6);
	put_be32(a + 14, PEER_IP);
	memcpy(a + 18, my_mac, 6);
	put_be32(a + 24, MY_IP);
	net_input(&ns, f, ETH_HLEN + ARP_LEN);
}

#define NCONN 4
struct app {
	struct tcp_conn *l, *active, *c[NCONN];
};

static void check_conn(struct tcp_conn *c)
{
	struct tcp_info i;

	if (!c)
		return;
	tcp_get_info(c, &i);
	CHECK(i.rcv_queued <= RCVBUF);
	CHECK(i.snd_queued <= SNDBUF);
	CHECK(tcp_recv_avail(c) <= RCVBUF);
	CHECK(tcp_send_space(c) <= SNDBUF);
	CHECK(tcp_send_unacked(c) <= SNDBUF);
	(void)tcp_state_name(i.state);
}

static void app_op(struct app *a, const uint8_t *p, size_t n)
{
	static uint8_t buf[RCVBUF + 64];
	uint8_t op = n ? p[0] : 0, which = n > 1 ? p[1] : 0;
	struct tcp_conn **cp = (which & 7) < NCONN ? &a->c[which & 7] :
			       (which & 7) == 4 ? &a->active : NULL;
	size_t len = (n > 2 ? p[2] * 37u : 100) % sizeof(buf);

	switch (op % 8) {
	case 0:
		for (int i = 0; i < NCONN; i++)
			if (!a->c[i] && a->l && tcp_accept(a->l, &a->c[i]) != 0)
				break;
		break;
	case 1:
		if (cp && *cp) {
			long r = tcp_recv(*cp, buf, len);
			CHECK(r <= (long)len);
		}
		break;
	case 2:
		if (cp && *cp) {
			memset(buf, 'x', len);
			long r = tcp_send(*cp, buf, len);
			CHECK(r <= (long)len);
		}
		break;
	case 3:
		if (cp && *cp)
			(void)tcp_shutdown(*cp);
		break;
	case 4:
		if (cp && *cp) {
			tcp_close(*cp);
			*cp = NULL;
		}
		break;
	case 5:
		if (cp && *cp) {
			tcp_abort(*cp);
			*cp = NULL;
		}
		break;
	case 6:
		if (cp && *cp) {
			uint8_t *zb;
			size_t space = tcp_send_buffer(*cp, &zb);
			size_t k = space < len ? space : len;
			CHECK(space <= SNDBUF);
			if (k)
				memset(zb, 'z', k);	/* ASan: the space must be real */
			(void)tcp_send_commit(*cp, k);
		}
		break;
	case 7:
		if (cp && *cp) {
			tcp_set_nodelay(*cp, which & 0x80);
			(void)tcp_connected(*cp);
		}
		if (!a->active)
			(void)tcp_connect(&ns, PEER_IP, 7000, &a->active);
		break;
	}
}

static void visit(const struct tcp_info *info, void *arg)
{
	(void)arg;
	CHECK(info->rcv_queued <= RCVBUF && info->snd_queued <= SNDBUF);
}

static void step(FILE *f, uint8_t ctl, const void *b, size_t n)
{
	fputc(ctl, f);
	fputc((int)(n & 0xff), f);
	fputc((int)(n >> 8), f);
	fwrite(b, 1, n, f);
}

/* A TCP header: sport, dport, seq, ack, flags, window, options. */
static size_t tcph(uint8_t *t, uint16_t sp, uint16_t dp, uint32_t seq, uint32_t ack,
		   uint8_t flags, const uint8_t *opt, size_t ol, const char *data)
{
	size_t dl = data ? strlen(data) : 0;

	memset(t, 0, TCP_HLEN);
	put_be16(t, sp);
	put_be16(t + 2, dp);
	put_be32(t + 4, seq);
	put_be32(t + 8, ack);
	t[12] = (uint8_t)(((TCP_HLEN + ol) / 4) << 4);
	t[13] = flags;
	put_be16(t + 14, 8192);
	if (ol)
		memcpy(t + TCP_HLEN, opt, ol);
	if (dl)
		memcpy(t + TCP_HLEN + ol, data, dl);
	return TCP_HLEN + ol + dl;
}

/* FERRY_FUZZ_MKSEEDS=dir: a few conversations, then exit. */
static void mkseeds(const char *dir)
{
	static const uint8_t synopt[] = { 2, 4, 5, 0xb4, 1, 3, 3, 7, 4, 2, 0, 0 };
	static const uint8_t sackopt[] = { 1, 1, 5, 10, 0, 0, 0, 0, 0, 0, 0, 0 };
	uint8_t t[256], b[2] = { 10, 0 }, app[3];
	char path[4096];
	FILE *f;
	size_t n;

	/* passive open, data, SACK, FIN, accept, read, write, close */
	snprintf(path, sizeof(path), "%s/passive", dir);
	CHECK((f = fopen(path, "wb")));
	step(f, 1, t, tcph(t, 4000, 80, 1000, 0, 0x02, synopt, sizeof(synopt), NULL));
	n = tcph(t, 0, 0, 0, 0, 0x10, NULL, 0, NULL);
	step(f, 1 | 0x20, t, n);
	step(f, 1 | 0x20, t, tcph(t, 0, 0, 0, 0, 0x18, NULL, 0, "GET / HTTP/1.0\r\n\r\n"));
	app[0] = 0; app[1] = 0; app[2] = 10;
	step(f, 4, app, 3);
	app[0] = 1;
	step(f, 4, app, 3);
	app[0] = 2;
	step(f, 4, app, 3);
	step(f, 1 | 0x20, t, tcph(t, 0, 0, 0, 0, 0x10, sackopt, sizeof(sackopt), NULL));
	step(f, 3, b, 2);
	step(f, 1 | 0x20, t, tcph(t, 0, 0, 0, 0, 0x11, NULL, 0, NULL));
	app[0] = 4;
	step(f, 4, app, 3);
	step(f, 3, b, 2);
	fclose(f);

	/* active open: SYN-ACK, data both ways, RST */
	snprintf(path, sizeof(path), "%s/active", dir);
	CHECK((f = fopen(path, "wb")));
	step(f, 1 | 0x20, t, tcph(t, 0, 0, 0, 0, 0x12, synopt, sizeof(synopt), NULL));
	app[0] = 2; app[1] = 4; app[2] = 50;
	step(f, 4, app, 3);
	step(f, 1 | 0x20, t, tcph(t, 0, 0, 0, 0, 0x18, NULL, 0, "hello"));
	step(f, 3, b, 2);
	step(f, 1 | 0x20, t, tcph(t, 0, 0, 0, 0, 0x04, NULL, 0, NULL));
	fclose(f);

	/* ICMP echo, ARP request, a raw frame */
	snprintf(path, sizeof(path), "%s/misc", dir);
	CHECK((f = fopen(path, "wb")));
	uint8_t icmp[1 + 16] = { IP_PROTO_ICMP, 8, 0, 0, 0, 0, 1, 0, 1, 'p', 'i', 'n', 'g' };
	step(f, 2, icmp, sizeof(icmp));
	uint8_t arp[ETH_HLEN + ARP_LEN] = { 0 };
	memset(arp, 0xff, 6);
	memcpy(arp + 6, peer_mac, 6);
	put_be16(arp + 12, ETH_P_ARP);
	put_be16(arp + 14, 1);
	put_be16(arp + 16, ETH_P_IP);
	arp[18] = 6; arp[19] = 4;
	put_be16(arp + 20, ARP_OP_REQUEST);
	memcpy(arp + 22, peer_mac, 6);
	put_be32(arp + 28, PEER_IP);
	put_be32(arp + 38, MY_IP);
	step(f, 0, arp, sizeof(arp));
	fclose(f);
	exit(0);
}

FUZZ_SEEDS_FROM(mkseeds)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct app a = { 0 };
	int steps = 0;

	setup();
	memset(&last, 0, sizeof(last));
	CHECK(tcp_listen(&ns, 80, 2, &a.l) == 0);
	CHECK(tcp_connect(&ns, PEER_IP, 7000, &a.active) == 0);

	while (size >= 3 && steps++ < 200) {
		uint8_t ctl = data[0];
		size_t len = (size_t)(data[1] | data[2] << 8);
		data += 3, size -= 3;
		if (len > size)
			len = size;
		const uint8_t *p = data;
		data += len, size -= len;

		switch (ctl % 5) {
		case 0:
			if (len > sizeof(frame))
				len = sizeof(frame);
			input(p, len, ctl & 0x80 ? NET_RX_IP_CSUM_OK | NET_RX_TCP_CSUM_OK : 0);
			break;
		case 1: {
			uint8_t *t = frame + ETH_HLEN + IP_HLEN;
			size_t tl = len < TCP_HLEN ? TCP_HLEN : len;
			if (tl > ETH_MTU - IP_HLEN)
				tl = ETH_MTU - IP_HLEN;
			memset(t, 0, TCP_HLEN);
			memcpy(t, p, len < tl ? len : tl);
			if (ctl & 0x40 && a.active) {
				struct tcp_info i;
				tcp_get_info(a.active, &i);
				put_be16(t, 7000);
				put_be16(t + 2, i.lport);
			}
			if (ctl & 0x20 && last.valid) {	/* follow the stack's numbers */
				put_be16(t, last.dport);
				put_be16(t + 2, last.sport);
				put_be32(t + 4, last.ack);
				put_be32(t + 8, last.seq);
			}
			eth_ip(frame, IP_PROTO_TCP, tl);
			t[16] = t[17] = 0;
			csum_store(t + 16, csum_finish(csum_add(csum_pseudo(PEER_IP, MY_IP,
						IP_PROTO_TCP, (uint16_t)tl), t, tl)));
			input(frame, ETH_HLEN + IP_HLEN + tl, 0);
			break;
		}
		case 2: {
			if (!len)
				break;
			size_t pl = len - 1 > ETH_MTU - IP_HLEN ? ETH_MTU - IP_HLEN : len - 1;
			uint8_t *q = frame + ETH_HLEN + IP_HLEN;
			memcpy(q, p + 1, pl);
			eth_ip(frame, p[0], pl);
			if (p[0] == IP_PROTO_ICMP && pl >= 4) {
				q[2] = q[3] = 0;
				csum_store(q + 2, csum_finish(csum_add(0, q, pl)));
			}
			input(frame, ETH_HLEN + IP_HLEN + pl, 0);
			break;
		}
		case 3:
			now_us += (uint64_t)(len ? p[0] : 1) * 1000 * (len > 1 ? p[1] + 1 : 1);
			net_poll(&ns, now_us);
			break;
		case 4:
			app_op(&a, p, len);
			break;
		}
		check_conn(a.l);
		check_conn(a.active);
		for (int i = 0; i < NCONN; i++)
			check_conn(a.c[i]);
	}
	tcp_foreach(&ns, visit, NULL);
	net_free(&ns);
	return 0;
}
