/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * virtio-net's feature choice and transmit headers (virtio 1.1, 5.1.3 and
 * 5.1.6): plain logic, apart from drivers/virtio_net.c so that host unit
 * tests reach it (tests/unit/test_virtio.c).
 */
#include <string.h>
#include "drivers/nic.h"
#include "drivers/virtio_net.h"
#include "drivers/virtio_pci.h"
#include "hv/lib/bytes.h"

uint64_t virtio_net_features(uint64_t offered)
{
	uint64_t want = 1ull << VIRTIO_F_VERSION_1 | 1ull << VIRTIO_NET_F_MAC |
			1ull << VIRTIO_NET_F_STATUS | 1ull << VIRTIO_NET_F_CSUM;
	uint64_t f = offered & want;

	if (!(f & 1ull << VIRTIO_F_VERSION_1))
		return 0;
	/* HOST_TSO4 needs CSUM (5.1.3.1) */
	if ((f & 1ull << VIRTIO_NET_F_CSUM) && (offered & 1ull << VIRTIO_NET_F_HOST_TSO4))
		f |= 1ull << VIRTIO_NET_F_HOST_TSO4;
	return f;
}

void virtio_net_hdr(uint8_t h[VNET_HDR_LEN], uint64_t features, const uint8_t *frame,
		    uint32_t len, uint16_t hdr_len, uint16_t mss)
{
	memset(h, 0, VNET_HDR_LEN);
	if (!(features & 1ull << VIRTIO_NET_F_CSUM) || !nic_frame_is_tcp4(frame, len))
		return;
	h[0] = VNET_HDR_F_NEEDS_CSUM;	/* flags; then gso_type, hdr_len, gso_size */
	put_le16(h + 6, 34);		/* csum_start: the TCP header */
	put_le16(h + 8, 16);		/* csum_offset: its checksum field */
	if (mss) {
		h[1] = VNET_HDR_GSO_TCPV4;
		put_le16(h + 2, hdr_len);
		put_le16(h + 4, mss);
	}
}

/* One's-complement sum of a 16-bit big-endian word into a folded sum. */
static uint16_t fold_add(uint16_t a, uint32_t b)
{
	uint32_t s = (uint32_t)a + b;

	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

void virtio_net_tso_fix(uint8_t *f, uint32_t hlen, uint32_t payload)
{
	uint8_t *ip = f + 14, *tcp = f + 34;
	uint16_t sum = 0;

	put_be16(ip + 10, 0);
	for (int i = 0; i < 20; i += 2)
		sum = fold_add(sum, get_be16(ip + i));
	put_be16(ip + 10, (uint16_t)~sum);
	put_be16(tcp + 16, fold_add(get_be16(tcp + 16), hlen - 34 + payload));
}
