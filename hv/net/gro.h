/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Receive coalescing for a guest's NIC: consecutive IPv4 TCP segments of
 * one connection, queued for a guest, given to it as one super-frame
 * (virtio-net's GUEST_TSO4, Virtio 1.1 5.1.6.4), as Linux's GRO builds
 * them.  A guest under emulation pays per frame far more than per byte, so
 * 45 segments of 1448 bytes cost it one frame's work instead of 45.
 *
 * What joins (the rules of Linux's tcp4_gro_receive, which the guest's own
 * stack expects of a GSO frame): IPv4 with a 20-byte header, not a
 * fragment; TCP with ACK and nothing but ACK and PSH; payload.  Every
 * segment after the first has the same Ethernet header, TOS, DF bit, TTL,
 * addresses, ports, acknowledgment, header length, flags word and window,
 * and the same TCP options byte for byte; its sequence number follows the
 * one before, and its payload is at most the first's (the MSS).  A segment
 * shorter than the MSS, or one with PSH, is the last.  At most
 * GRO_MAX_SEGS segments and 65535 bytes of IP packet.
 *
 * Checksums: a segment whose checksums nobody checked yet is checked here
 * (IP header and TCP) before it joins; one that fails never joins, and
 * goes to the guest alone, unmarked, for its stack to count and drop.
 * The super-frame's TCP checksum field holds the pseudo-header sum and
 * the guest is told NEEDS_CSUM (its CHECKSUM_PARTIAL): every byte under
 * it was checked, and a guest that forwards the frame segments it again.
 *
 * Pure logic: the frames stay where they are; the super-frame is the
 * header built here followed by each segment's payload, in place.
 */
#ifndef FERRY_HV_NET_GRO_H
#define FERRY_HV_NET_GRO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GRO_MAX_SEGS	64
#define GRO_HDR_MAX	(14 + 20 + 60)	/* Ethernet, IP without options, TCP */
#define GRO_IP_MAX	65535u

struct gro_piece {
	const uint8_t *p;
	uint16_t len;
};

struct gro {
	uint8_t hdr[GRO_HDR_MAX];	/* the first segment's headers, fixed up by gro_finish */
	uint16_t hlen;
	uint16_t mss;			/* the first segment's payload */
	unsigned int segs;
	uint32_t payload;		/* bytes, all segments */
	uint32_t next_seq;
	bool closed;			/* PSH or a short segment: the last has come */
	uint64_t checked;		/* segments whose checksums were summed here */
	struct gro_piece piece[GRO_MAX_SEGS];	/* each segment's payload */
};

static inline void gro_reset(struct gro *g)
{
	g->segs = 0;
}

/* Add f[0..len) (one frame as received; valid: its IP and TCP checksums
 * are known good).  True if it joined: the first segment starts a
 * super-frame.  False: it cannot (not a TCP segment that may join, not the
 * next one of this connection, bad checksums, or no room); g unchanged.
 * f must stay in place until the super-frame is delivered. */
bool gro_add(struct gro *g, const uint8_t *f, size_t len, bool valid);

/* Fix up the headers for the segments added (at least one): IP total
 * length and header checksum, PSH from the last, the pseudo-header sum in
 * the TCP checksum field.  Returns the super-frame's length. */
size_t gro_finish(struct gro *g);

#endif
