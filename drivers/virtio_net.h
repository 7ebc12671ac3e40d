/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * virtio-net over the modern virtio 1.x PCI transport (virtio 1.1, 4.1 and
 * 5.1): QEMU `-device virtio-net-pci` (with or without disable-legacy=on),
 * and the NIC of ferry nested on a KVM cloud VM.  One receive and one
 * transmit split virtqueue (drivers/virtq.h), interrupts on the legacy
 * INTx line.  Features ferry takes when offered: VERSION_1 (required),
 * MAC, STATUS (link state), CSUM (the device completes TCP checksums) and
 * HOST_TSO4 (TSO).  It takes no receive offloads, so frames arrive whole
 * and fully checksummed, one per 2 KiB buffer.
 */
#ifndef FERRY_DRIVERS_VIRTIO_NET_H
#define FERRY_DRIVERS_VIRTIO_NET_H

#include <stdint.h>

/* Feature bits (5.1.3). */
#define VIRTIO_NET_F_CSUM	0
#define VIRTIO_NET_F_MAC	5
#define VIRTIO_NET_F_HOST_TSO4	11
#define VIRTIO_NET_F_STATUS	16

/* struct virtio_net_hdr (5.1.6), 12 bytes with VERSION_1. */
#define VNET_HDR_LEN		12
#define VNET_HDR_F_NEEDS_CSUM	1
#define VNET_HDR_GSO_TCPV4	1

/* The features ferry accepts of those offered (VERSION_1 among them, or 0:
 * the device is not a modern one ferry can drive). */
uint64_t virtio_net_features(uint64_t offered);
/* Fill the 12-byte header for frame (len bytes; hdr_len/mss only for
 * TSO, 0 otherwise) given the negotiated features. */
void virtio_net_hdr(uint8_t hdr[VNET_HDR_LEN], uint64_t features, const uint8_t *frame,
		    uint32_t len, uint16_t hdr_len, uint16_t mss);
/* The headers of a TSO frame as the device's segmentation wants them
 * (hlen bytes; payload bytes follow): the stack leaves the TCP checksum
 * field without the length (as the 8254x takes it) and the IPv4 checksum
 * 0; a virtio device, like Linux's GSO behind it, wants the pseudo-header
 * sum with the TCP length and a valid IPv4 header. */
void virtio_net_tso_fix(uint8_t *hdrs, uint32_t hlen, uint32_t payload);

#endif
