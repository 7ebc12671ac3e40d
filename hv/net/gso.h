/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Offloads a guest's NIC asks of the device on a frame it sends (virtio-net's
 * NEEDS_CSUM and GSO TCPv4, virtio 1.1 5.1.6.2): finished here in software,
 * before the frame meets the switch, so that everything behind the switch
 * (the wire, other guests, ferry's stack) sees ordinary frames.  Segments
 * bound for a NIC with TSO may be joined again for it (gso_tso_hdr): the
 * NIC cuts them as they were cut here.
 *
 *   checksum only:  the field at csum_start + csum_offset holds the
 *	pseudo-header sum (as Linux leaves it); the sum from csum_start to
 *	the end goes in, folded and complemented (a zero result is sent as
 *	0xFFFF, as Linux's skb_checksum_help does).  Any protocol.
 *   segmentation:   an IPv4 TCP frame (no VLAN tag, no IP options beyond
 *	its IHL, not a fragment) of up to 64 KiB, cut into frames that carry
 *	at most gso_size bytes of payload each: IP total length, id (+1 per
 *	segment) and header checksum, TCP sequence number and checksum redone
 *	per segment; FIN and PSH only on the last, CWR only on the first.
 *
 * Pure logic: the caller owns every buffer.  Frames that do not say what
 * they are (lengths that disagree, a checksum offset that is not TCP's,
 * segments beyond the MTU) are refused whole: nothing of them is sent.
 */
#ifndef FERRY_HV_NET_GSO_H
#define FERRY_HV_NET_GSO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GSO_FRAME_MAX	(14 + 65535)	/* Ethernet header + the largest IPv4 packet */
#define GSO_PLAIN_MAX	1518		/* a frame that is not segmented: 1500 + 14 + VLAN tag */

struct gso_req {
	bool csum;			/* NEEDS_CSUM */
	uint16_t csum_start, csum_offset;
	uint16_t mss;			/* GSO TCPv4 with this MSS; 0: none */
	/* An IPv4 TCP frame with a 20-byte IP header may keep a partial TCP
	 * checksum (the pseudo-header sum, with the length, in the field:
	 * what a NIC's checksum offload completes, drivers/nic.h). */
	bool partial_ok;
};

/* What gso_plan found: segments to send, and where the payload starts. */
struct gso_plan {
	unsigned int segs;
	uint32_t hlen;			/* Ethernet + IP + TCP headers */
	uint32_t payload;
	bool partial;			/* segments keep a partial TCP checksum */
	/* The first segment carries CWR (only it does): a NIC's TSO frame
	 * copies its first header's flags onto every segment it cuts, so
	 * that segment never goes in one (gso_tso_first). */
	bool cwr;
};

/* Check frame f[0..len) against r.  0 with *p filled (segs is 1 without
 * mss, and when the payload fits one segment), or -EINVAL. */
int gso_plan(const uint8_t *f, size_t len, const struct gso_req *r, struct gso_plan *p);

/* Segment k (< p->segs) of a planned frame, built in out (room for
 * GSO_PLAIN_MAX bytes): its length.  Without mss, the one "segment" is
 * the frame with its checksum finished. */
size_t gso_segment(const uint8_t *f, const struct gso_req *r, const struct gso_plan *p,
		   unsigned int k, uint8_t *out);

/* The segment of a planned frame from which its TSO frames may start:
 * 1 when the first carries CWR (it goes on its own), else 0. */
static inline unsigned int gso_tso_first(const struct gso_plan *p)
{
	return p->cwr ? 1 : 0;
}

/*
 * Consecutive segments of one super-frame, as gso_segment built them with
 * a partial checksum, sent on as one TSO frame by a NIC that has TSO
 * (drivers/nic.h xmit_tso; the NIC cuts at the same MSS, so the wire sees
 * the same segments).  Their headers (hlen bytes) for it, built in out:
 * first's, with the IP total length for payload bytes of payload, no IP
 * checksum (the NIC's), the TCP checksum field holding the pseudo-header
 * sum without the length (as ferry's stack leaves it, hv/net/tcp_out.c),
 * and last's FIN and PSH.  first must not carry CWR (gso_tso_first).
 */
void gso_tso_hdr(uint8_t *out, const uint8_t *first, const uint8_t *last, uint32_t hlen,
		 uint32_t payload);

#endif
