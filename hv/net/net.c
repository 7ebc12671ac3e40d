/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The stack's entry points (init, input, poll, IPv4 configuration) and
 * Ethernet II framing; text helpers for addresses.
 */
#include "hv/net/net_priv.h"

#include <errno.h>
#include <string.h>

static const uint8_t eth_bcast[ETH_ALEN] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

static uint64_t ms_or(uint32_t ms, uint32_t dflt_ms)
{
	return (uint64_t)(ms ? ms : dflt_ms) * 1000;
}

int net_init(struct netstack *s, const struct net_config *cfg)
{
	if (!cfg->xmit || mac_is_multicast(cfg->mac))
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	mac_copy(s->mac, cfg->mac);
	s->xmit = cfg->xmit;
	s->xmit_ctx = cfg->xmit_ctx;
	s->tx_tcp_csum = cfg->tx_tcp_csum;
	s->tx_frame = cfg->tx_frame;
	s->xmit_tso = cfg->xmit_tso;
	s->tso_max = cfg->xmit_tso ? cfg->tso_max : 0;
	if (s->tso_max > NET_TSO_MAX)
		s->tso_max = NET_TSO_MAX;
	s->rng = cfg->seed ^ 0x9e3779b97f4a7c15ull;
	if (!s->rng)
		s->rng = 1;
	s->ip_id = (uint16_t)net_rand(s);
	arp_init(s, ms_or(cfg->arp_timeout_ms, 60000));
	return tcp_init(s, cfg);
}

uint64_t net_rand(struct netstack *s)
{
	uint64_t x = s->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	s->rng = x;
	return x * 0x2545f4914f6cdd1dull;
}

static uint32_t prefix_mask(unsigned len)
{
	return len ? ~0u << (32 - len) : 0;
}

/* Not 0/8, loopback, multicast or class E (RFC 1122 3.2.1.3). */
static bool addr_plausible(uint32_t a)
{
	return (a >> 24) != 0 && (a >> 24) != 127 && a < 0xe0000000u;
}

int net_set_ipv4(struct netstack *s, uint32_t addr, unsigned prefix_len,
		 uint32_t gw)
{
	uint32_t mask;

	if (prefix_len < 1 || prefix_len > 32 || !addr_plausible(addr))
		return -EINVAL;
	mask = prefix_mask(prefix_len);
	if (prefix_len <= 30 && ((addr & ~mask) == 0 || (addr | mask) == ~0u))
		return -EINVAL;	/* network or broadcast address */
	if (gw && (!addr_plausible(gw) || (gw & mask) != (addr & mask) ||
		   gw == addr || (gw | mask) == ~0u))
		return -EINVAL;
	s->ip = addr;
	s->netmask = mask;
	s->gw = gw;
	arp_flush(s);
	arp_announce(s);
	return 0;
}

unsigned net_prefix_len(const struct netstack *s)
{
	return (unsigned)__builtin_popcount(s->netmask);
}

void net_set_time(struct netstack *s, uint64_t now_us)
{
	s->now_us = now_us;
}

uint8_t *net_tx_frame(struct netstack *s)
{
	uint8_t *f = s->tx_frame ? s->tx_frame(s->xmit_ctx) : NULL;

	return f ? f : s->txbuf;
}

int eth_output(struct netstack *s, uint8_t *frame, size_t len,
	       const uint8_t *dst, uint16_t type)
{
	const struct net_tso *tso = s->tso;
	int rc;

	s->tso = NULL;

	mac_copy(frame + ETH_O_DST, dst);
	mac_copy(frame + ETH_O_SRC, s->mac);
	put_be16(frame + ETH_O_TYPE, type);
	if (len < ETH_ZLEN) {
		memset(frame + len, 0, ETH_ZLEN - len);
		len = ETH_ZLEN;
	}
	if (tso)		/* once: an ARP request may follow */
		rc = s->xmit_tso(s->xmit_ctx, tso);
	else
		rc = s->xmit(s->xmit_ctx, frame, len);
	if (rc == -EAGAIN) {
		s->stats.eth.tx_busy++;
		return rc;
	}
	if (rc == -EXDEV && tso)
		return rc;	/* not sent: TCP sends it again as segments */
	if (rc < 0) {
		s->stats.eth.tx_errors++;
		return -EIO;
	}
	s->stats.eth.tx_frames++;
	s->stats.eth.tx_bytes += len;
	return 0;
}

static bool eth_for_us(const struct netstack *s, const uint8_t *dst)
{
	return !memcmp(dst, s->mac, ETH_ALEN) || !memcmp(dst, eth_bcast, ETH_ALEN);
}

void net_input(struct netstack *s, const void *frame, size_t len)
{
	net_input_flags(s, frame, len, 0);
}

void net_input_flags(struct netstack *s, const void *frame, size_t len,
		     unsigned flags)
{
	const uint8_t *f = frame;
	uint16_t type;

	s->stats.eth.rx_frames++;
	s->stats.eth.rx_bytes += len;
	if (!f || len < ETH_HLEN || len > ETH_RX_MAX) {
		s->stats.eth.rx_errors++;
		return;
	}
	type = get_be16(f + ETH_O_TYPE);
	if (!eth_for_us(s, f + ETH_O_DST) || mac_is_multicast(f + ETH_O_SRC)) {
		s->stats.eth.rx_dropped++;
		return;
	}
	if (type == ETH_P_IP) {
		s->rx_flags = flags;
		ip_input(s, f + ETH_HLEN, len - ETH_HLEN);
		s->rx_flags = 0;
	}
	else if (type == ETH_P_ARP)
		arp_input(s, f + ETH_HLEN, len - ETH_HLEN);
	else
		s->stats.eth.rx_dropped++;
}

void net_rx_batch(struct netstack *s, bool on)
{
	s->rx_batch = on;
}

uint64_t net_poll(struct netstack *s, uint64_t now_us)
{
	uint64_t a, t;

	s->now_us = now_us;
	a = arp_poll(s);
	t = tcp_poll(s);
	return a < t ? a : t;
}

static char *put_dec(char *p, unsigned v)
{
	if (v >= 100)
		*p++ = (char)('0' + v / 100);
	if (v >= 10)
		*p++ = (char)('0' + v / 10 % 10);
	*p++ = (char)('0' + v % 10);
	return p;
}

void net_format_ipv4(uint32_t addr, char buf[16])
{
	char *p = buf;

	for (int i = 3; i >= 0; i--) {
		p = put_dec(p, (addr >> (8 * i)) & 0xff);
		if (i)
			*p++ = '.';
	}
	*p = 0;
}

void net_format_mac(const uint8_t *mac, char buf[18])
{
	static const char hex[] = "0123456789abcdef";

	for (int i = 0; i < ETH_ALEN; i++) {
		buf[3 * i] = hex[mac[i] >> 4];
		buf[3 * i + 1] = hex[mac[i] & 15];
		buf[3 * i + 2] = i < ETH_ALEN - 1 ? ':' : 0;
	}
}
