/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * IPv4 (RFC 791, host requirements of RFC 1122 3.2.1): header validation
 * and checksum on input, fragments dropped and counted (never reassembled),
 * options skipped; on output DF set (a router's "fragmentation needed"
 * lowers TCP's MSS, RFC 1191), TTL 64, one gateway for everything
 * off-link.
 */
#include "hv/net/cksum.h"
#include "hv/net/net_priv.h"

#include <errno.h>

static const uint8_t mac_bcast[ETH_ALEN] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

bool ip_is_broadcast(const struct netstack *s, uint32_t addr)
{
	if (addr == IP_BROADCAST)
		return true;
	return s->ip && s->netmask != ~0u &&
	       (addr & s->netmask) == (s->ip & s->netmask) &&
	       (addr | s->netmask) == ~0u;
}

bool ip_is_unicast(const struct netstack *s, uint32_t addr)
{
	uint32_t top = addr >> 24;

	return top != 0 && top != 127 && addr < 0xe0000000u &&
	       !ip_is_broadcast(s, addr);
}

/* Validate the header; on success *hl and *tot are its lengths. */
static bool ip_header_ok(struct netstack *s, const uint8_t *p, size_t len,
			 size_t *hl, size_t *tot)
{
	if (len < IP_HLEN || (p[IP_O_VHL] >> 4) != 4) {
		s->stats.ip.rx_errors++;
		return false;
	}
	*hl = (size_t)(p[IP_O_VHL] & 15) * 4;
	*tot = get_be16(p + IP_O_LEN);
	if (*hl < IP_HLEN || *hl > len || *tot < *hl || *tot > len) {
		s->stats.ip.rx_errors++;
		return false;
	}
	if (!(s->rx_flags & NET_RX_IP_CSUM_OK) && !csum_ok(csum_add(0, p, *hl))) {
		s->stats.ip.rx_bad_csum++;
		return false;
	}
	return true;
}

void ip_input(struct netstack *s, const uint8_t *p, size_t len)
{
	size_t hl, tot;
	uint32_t dst, src;

	if (!ip_header_ok(s, p, len, &hl, &tot))
		return;
	s->stats.ip.rx_packets++;
	if (get_be16(p + IP_O_FRAG) & (IP_FLAG_MF | IP_FRAG_MASK)) {
		s->stats.ip.rx_frags++;
		return;
	}
	dst = get_be32(p + IP_O_DST);
	src = get_be32(p + IP_O_SRC);
	if (!s->ip || (dst != s->ip && !ip_is_broadcast(s, dst)) ||
	    !ip_is_unicast(s, src) || src == s->ip) {
		s->stats.ip.rx_not_for_us++;
		return;
	}
	if (p[IP_O_PROTO] == IP_PROTO_ICMP)
		icmp_input(s, p, p + hl, tot - hl);
	else if (p[IP_O_PROTO] == IP_PROTO_TCP && dst == s->ip)
		tcp_input(s, p, p + hl, tot - hl);
	else
		s->stats.ip.rx_unknown_proto++;
}

static int ip_route(struct netstack *s, uint32_t dst, uint32_t *nexthop)
{
	if (!s->ip)
		return -ENETUNREACH;
	if ((dst & s->netmask) == (s->ip & s->netmask)) {
		*nexthop = dst;
		return 0;
	}
	if (!s->gw)
		return -ENETUNREACH;
	*nexthop = s->gw;
	return 0;
}

bool ip_resolved(struct netstack *s, uint32_t dst)
{
	uint32_t nexthop;
	uint8_t mac[ETH_ALEN];

	return !ip_is_broadcast(s, dst) && !ip_route(s, dst, &nexthop) &&
	       !arp_lookup(s, nexthop, mac);
}

/* IDs the frame uses: one per segment the NIC will make of it. */
static uint16_t ip_ids(const struct netstack *s)
{
	const struct net_tso *t = s->tso;

	return t ? (uint16_t)((t->len[0] + t->len[1] + t->mss - 1) / t->mss) : 1;
}

int ip_output(struct netstack *s, uint8_t *frame, size_t l4len,
	      uint32_t dst, uint8_t proto, unsigned flags)
{
	uint8_t *h = frame + ETH_HLEN;
	uint32_t nexthop = 0;
	size_t len = IP_HLEN + l4len;

	if (l4len > (s->tso ? NET_TSO_MAX + 60 : NET_L4_MAX))
		return -EINVAL;
	if (!ip_is_broadcast(s, dst) && ip_route(s, dst, &nexthop)) {
		s->stats.ip.tx_no_route++;
		return -ENETUNREACH;
	}
	h[IP_O_VHL] = 0x45;
	h[IP_O_TOS] = 0;
	put_be16(h + IP_O_LEN, (uint16_t)len);
	put_be16(h + IP_O_ID, s->ip_id);
	s->ip_id = (uint16_t)(s->ip_id + ip_ids(s));
	put_be16(h + IP_O_FRAG, IP_FLAG_DF);
	h[IP_O_TTL] = IP_TTL_DEFAULT;
	h[IP_O_PROTO] = proto;
	put_be16(h + IP_O_CSUM, 0);
	put_be32(h + IP_O_SRC, s->ip);
	put_be32(h + IP_O_DST, dst);
	if (!s->tso)	/* else the NIC sums each segment's header, field 0 */
		csum_store(h + IP_O_CSUM, csum_finish(csum_add(0, h, IP_HLEN)));
	s->stats.ip.tx_packets++;
	if (!nexthop)
		return eth_output(s, frame, ETH_HLEN + len, mac_bcast, ETH_P_IP);
	return arp_output(s, nexthop, frame, ETH_HLEN + len, flags);
}
