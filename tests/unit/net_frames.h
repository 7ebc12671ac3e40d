/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Frames the network tests build by hand and feed to a stack.
 */
#ifndef FERRY_TESTS_UNIT_NET_FRAMES_H
#define FERRY_TESTS_UNIT_NET_FRAMES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "hv/lib/bytes.h"
#include "hv/net/proto.h"

/* An ARP packet (Ethernet, IPv4) from sha/spa about tha/tpa, sent to
 * dst; its length. */
static inline size_t arp_frame(uint8_t *f, uint16_t op, const uint8_t *sha, uint32_t spa,
			       const uint8_t *tha, uint32_t tpa, const uint8_t *dst)
{
	uint8_t *a = f + ETH_HLEN;

	memcpy(f, dst, 6);
	memcpy(f + 6, sha, 6);
	put_be16(f + 12, ETH_P_ARP);
	put_be16(a, 1);
	put_be16(a + 2, ETH_P_IP);
	a[4] = 6;
	a[5] = 4;
	put_be16(a + 6, op);
	memcpy(a + 8, sha, 6);
	put_be32(a + 14, spa);
	memcpy(a + 18, tha, 6);
	put_be32(a + 24, tpa);
	return ETH_HLEN + ARP_LEN;
}

#endif
