/* SPDX-License-Identifier: BSD-2-Clause */
/* Receive coalescing of a guest's TCP segments: see gro.h. */
#include <string.h>
#include "hv/lib/bytes.h"
#include "hv/net/cksum.h"
#include "hv/net/gro.h"

#define IP_OFF		14
#define TCP_OFF		(IP_OFF + 20)
#define TCP_ACK		0x10
#define TCP_PSH		0x08

/* A segment that may join, taken apart. */
struct seg {
	uint16_t hlen;			/* Ethernet + IP + TCP headers */
	uint16_t payload;
	uint32_t seq;
};

/* An IPv4 TCP segment with a 20-byte IP header, not a fragment, ACK and
 * at most PSH besides, and payload: its parts, or false. */
static bool parse(const uint8_t *f, size_t len, struct seg *s)
{
	uint32_t tot, doff;

	if (len < TCP_OFF + 20 || get_be16(f + 12) != 0x0800 || f[IP_OFF] != 0x45 ||
	    f[IP_OFF + 9] != 6 || (get_be16(f + IP_OFF + 6) & 0x3fff))
		return false;
	tot = get_be16(f + IP_OFF + 2);
	doff = (f[TCP_OFF + 12] >> 4) * 4u;
	if (IP_OFF + tot > len || doff < 20 || 20 + doff >= tot ||
	    (f[TCP_OFF + 13] & ~TCP_PSH) != TCP_ACK)
		return false;
	s->hlen = (uint16_t)(TCP_OFF + doff);
	s->payload = (uint16_t)(tot - 20 - doff);
	s->seq = get_be32(f + TCP_OFF + 4);
	return true;
}

/* Its IP header and TCP checksums, summed here. */
static bool sums_ok(const uint8_t *f, const struct seg *s)
{
	uint16_t tl = (uint16_t)(s->hlen - TCP_OFF + s->payload);
	uint64_t sum = csum_pseudo(get_be32(f + IP_OFF + 12), get_be32(f + IP_OFF + 16), 6, tl);

	return csum_ok(csum_add(0, f + IP_OFF, 20)) && csum_ok(csum_add(sum, f + TCP_OFF, tl));
}

/* Whether segment f (parsed as s) continues the super-frame in g. */
static bool follows(const struct gro *g, const uint8_t *f, const struct seg *s)
{
	const uint8_t *h = g->hdr;

	return !g->closed && s->hlen == g->hlen && s->seq == g->next_seq &&
	       s->payload <= g->mss && g->segs < GRO_MAX_SEGS &&
	       g->hlen - IP_OFF + g->payload + s->payload <= GRO_IP_MAX &&
	       !memcmp(f, h, 14) &&				/* Ethernet header */
	       f[IP_OFF + 1] == h[IP_OFF + 1] &&		/* TOS */
	       (f[IP_OFF + 6] & 0x40) == (h[IP_OFF + 6] & 0x40) &&	/* DF */
	       f[IP_OFF + 8] == h[IP_OFF + 8] &&		/* TTL */
	       !memcmp(f + IP_OFF + 12, h + IP_OFF + 12, 8) &&	/* addresses */
	       !memcmp(f + TCP_OFF, h + TCP_OFF, 4) &&		/* ports */
	       !memcmp(f + TCP_OFF + 8, h + TCP_OFF + 8, 5) &&	/* ack, data offset */
	       (f[TCP_OFF + 13] & ~TCP_PSH) == (h[TCP_OFF + 13] & ~TCP_PSH) &&
	       !memcmp(f + TCP_OFF + 14, h + TCP_OFF + 14, 2) &&	/* window */
	       !memcmp(f + TCP_OFF + 20, h + TCP_OFF + 20, g->hlen - TCP_OFF - 20);
}

bool gro_add(struct gro *g, const uint8_t *f, size_t len, bool valid)
{
	struct seg s;

	if (!parse(f, len, &s) || (g->segs && !follows(g, f, &s)))
		return false;
	if (!valid) {
		g->checked++;
		if (!sums_ok(f, &s))
			return false;
	}
	if (!g->segs) {
		memcpy(g->hdr, f, s.hlen);
		g->hlen = s.hlen;
		g->mss = s.payload;
		g->payload = 0;
		g->closed = false;
	}
	g->piece[g->segs++] = (struct gro_piece){ f + s.hlen, s.payload };
	g->payload += s.payload;
	g->next_seq = s.seq + s.payload;
	g->closed = s.payload < g->mss || (f[TCP_OFF + 13] & TCP_PSH);
	if (f[TCP_OFF + 13] & TCP_PSH)
		g->hdr[TCP_OFF + 13] |= TCP_PSH;
	return true;
}

size_t gro_finish(struct gro *g)
{
	uint8_t *ip = g->hdr + IP_OFF, *tcp = g->hdr + TCP_OFF;
	uint16_t tl = (uint16_t)(g->hlen - TCP_OFF + g->payload);

	put_be16(ip + 2, (uint16_t)(20 + tl));
	put_be16(ip + 10, 0);
	csum_store(ip + 10, csum_finish(csum_add(0, ip, 20)));
	put_be16(tcp + 16, 0);
	csum_store(tcp + 16, csum_fold(csum_pseudo(get_be32(ip + 12), get_be32(ip + 16), 6, tl)));
	return (size_t)g->hlen + g->payload;
}
