/* SPDX-License-Identifier: BSD-2-Clause */
/* A guest frame's transmit offloads, finished in software: see gso.h. */
#include <errno.h>
#include <string.h>
#include "hv/lib/bytes.h"
#include "hv/net/cksum.h"
#include "hv/net/gso.h"
#include "hv/net/proto.h"

#define IP_OFF		14
#define TCP_FIN		0x01
#define TCP_PSH		0x08
#define TCP_CWR		0x80

static int plan_tcp4(const uint8_t *f, size_t len, const struct gso_req *r, struct gso_plan *p)
{
	uint32_t ihl, doff, tot;

	if (len < IP_OFF + 20 + 20 || get_be16(f + 12) != 0x0800 || (f[IP_OFF] >> 4) != 4)
		return -EINVAL;
	ihl = (f[IP_OFF] & 0xf) * 4u;
	tot = get_be16(f + IP_OFF + 2);
	if (ihl < 20 || f[IP_OFF + 9] != 6 || IP_OFF + tot != len ||
	    (get_be16(f + IP_OFF + 6) & 0x3fff))	/* MF or a fragment offset */
		return -EINVAL;
	if (len < IP_OFF + ihl + 20)
		return -EINVAL;
	doff = (f[IP_OFF + ihl + 12] >> 4) * 4u;
	p->hlen = IP_OFF + ihl + doff;
	if (doff < 20 || p->hlen > len || r->csum_start != IP_OFF + ihl || r->csum_offset != 16)
		return -EINVAL;
	p->payload = (uint32_t)len - p->hlen;
	if (p->hlen + r->mss > ETH_FRAME_MAX || !p->payload)
		return -EINVAL;
	p->segs = (p->payload + r->mss - 1) / r->mss;
	p->partial = r->partial_ok && ihl == 20;
	p->cwr = f[IP_OFF + ihl + 13] & TCP_CWR;
	return 0;
}

/* A checksum-only request that is TCP's, on an IPv4 frame with a 20-byte
 * header: the field already holds what a NIC completes. */
static bool partial_tcp4(const uint8_t *f, size_t len, const struct gso_req *r)
{
	return r->partial_ok && r->csum && r->csum_start == IP_OFF + 20 && r->csum_offset == 16 &&
	       len >= IP_OFF + 40 && get_be16(f + 12) == 0x0800 && f[IP_OFF] == 0x45 &&
	       f[IP_OFF + 9] == 6;
}

int gso_plan(const uint8_t *f, size_t len, const struct gso_req *r, struct gso_plan *p)
{
	memset(p, 0, sizeof(*p));
	if (len > GSO_FRAME_MAX || (r->mss && !r->csum))	/* GSO implies NEEDS_CSUM */
		return -EINVAL;
	if (r->mss)
		return plan_tcp4(f, len, r, p);
	if (len > GSO_PLAIN_MAX ||
	    (r->csum && (size_t)r->csum_start + r->csum_offset + 2 > len))
		return -EINVAL;
	p->segs = 1;
	p->hlen = (uint32_t)len;	/* the whole frame goes as it is */
	p->partial = partial_tcp4(f, len, r);
	return 0;
}

/* The checksum field at off, over f[start..len), the field's own value
 * (a pseudo-header sum, or zero) included. */
static void finish(uint8_t *f, size_t len, size_t start, size_t off)
{
	uint16_t c = csum_finish(csum_add(0, f + start, len - start));

	csum_store(f + off, c ? c : 0xffff);
}

size_t gso_segment(const uint8_t *f, const struct gso_req *r, const struct gso_plan *p,
		   unsigned int k, uint8_t *out)
{
	uint32_t ihl = r->csum_start - IP_OFF, off = k * (uint32_t)r->mss, plen;
	uint8_t *ip = out + IP_OFF, *tcp = out + r->csum_start;
	uint64_t sum;
	uint8_t fl;

	if (!r->mss) {
		memcpy(out, f, p->hlen);
		if (r->csum && !p->partial)
			finish(out, p->hlen, r->csum_start, (size_t)r->csum_start + r->csum_offset);
		return p->hlen;
	}
	plen = p->payload - off < r->mss ? p->payload - off : r->mss;
	memcpy(out, f, p->hlen);
	memcpy(out + p->hlen, f + p->hlen + off, plen);
	put_be16(ip + 2, (uint16_t)(p->hlen - IP_OFF + plen));
	put_be16(ip + 4, (uint16_t)(get_be16(ip + 4) + k));
	put_be16(ip + 10, 0);
	csum_store(ip + 10, csum_finish(csum_add(0, ip, ihl)));
	put_be32(tcp + 4, get_be32(tcp + 4) + off);
	fl = tcp[13];
	if (k + 1 < p->segs)
		fl &= (uint8_t)~(TCP_FIN | TCP_PSH);
	if (k)
		fl &= (uint8_t)~TCP_CWR;
	tcp[13] = fl;
	sum = csum_pseudo(get_be32(ip + 12), get_be32(ip + 16), 6,
			  (uint16_t)(p->hlen - r->csum_start + plen));
	put_be16(tcp + 16, 0);
	if (p->partial)
		csum_store(tcp + 16, csum_fold(sum));
	else
		csum_store(tcp + 16, csum_finish(csum_add(sum, tcp, p->hlen - r->csum_start + plen)));
	return p->hlen + plen;
}

void gso_tso_hdr(uint8_t *out, const uint8_t *first, const uint8_t *last, uint32_t hlen,
		 uint32_t payload)
{
	uint8_t *ip = out + IP_OFF, *tcp = out + IP_OFF + 20;

	memcpy(out, first, hlen);
	put_be16(ip + 2, (uint16_t)(hlen - IP_OFF + payload));
	put_be16(ip + 10, 0);
	tcp[13] = (uint8_t)((tcp[13] & ~(TCP_FIN | TCP_PSH)) |
			    (last[IP_OFF + 20 + 13] & (TCP_FIN | TCP_PSH)));
	put_be16(tcp + 16, 0);
	csum_store(tcp + 16, csum_fold(csum_pseudo(get_be32(ip + 12), get_be32(ip + 16), 6, 0)));
}
