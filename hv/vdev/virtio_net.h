/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * virtio-net (Virtio 1.1, 5.1; device type 1) over the PCI transport
 * (virtio_pci.h): queue 0 receives, queue 1 transmits.  Features offered:
 * VIRTIO_NET_F_CSUM (0), VIRTIO_NET_F_GUEST_CSUM (1), VIRTIO_NET_F_MAC
 * (5), VIRTIO_NET_F_GUEST_TSO4 (7), VIRTIO_NET_F_HOST_TSO4 (11),
 * VIRTIO_NET_F_MRG_RXBUF (15), VIRTIO_NET_F_STATUS (16), and the
 * transport's INDIRECT_DESC and VERSION_1.  No control queue, no event
 * index.  Every chain holds
 * the 12-byte struct virtio_net_hdr (flags, gso_type, le16 hdr_len,
 * gso_size, csum_start, csum_offset, num_buffers: with VERSION_1
 * num_buffers is always there, 5.1.6) and then one Ethernet frame (no FCS).
 *
 * Device configuration: mac[6] at 0, le16 status at 6 (bit 0 LINK_UP).
 * Writes are ignored.
 *
 * Transmit: on the doorbell, each chain (header then frame, readable only)
 * is copied out and handed to tx(ctx, frame, len, off) without its
 * header.  The offloads it asks for (off: NEEDS_CSUM with its offsets,
 * GSO TCPv4 with its MSS) are checked for form here, and finished by the
 * owner (hv/net/gso.h).  A frame up to VNET_MAX_FRAME bytes, or
 * VNET_MAX_GSO_FRAME with GSO.  A frame that is too short or too long,
 * or whose header asks for an offload that was not negotiated (or one
 * that does not exist), is dropped and counted, and its chain returned.
 * When tx() has no room (-EAGAIN) the chain is left in the queue and the
 * device stops (tx_stalled) until vnet_tx_resume(); the guest sees a
 * device that is slow, never a frame lost.
 * Receive: vnet_rx_frame() puts one frame in the next receive chain
 * (writable only), or across several with MRG_RXBUF, with a zero header,
 * DATA_VALID when the caller says its checksums were verified and the
 * driver took GUEST_CSUM, or a GSO header for a super-frame; without
 * buffers enough the frame is not taken and waits with its owner (the
 * device keeps no frames).  Every chain the device takes is
 * returned before the call ends, so none is in flight at a snapshot (a
 * chain left by a stall is still the driver's, in the available ring).
 *
 * Not thread-safe: the owner serializes calls, including vnet_rx.
 */
#ifndef FERRY_HV_VDEV_VIRTIO_NET_H
#define FERRY_HV_VDEV_VIRTIO_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "hv/vdev/snap.h"
#include "hv/vdev/virtio_pci.h"

#define VIRTIO_ID_NET		1
#define VIRTIO_NET_F_CSUM	(1ull << 0)
#define VIRTIO_NET_F_GUEST_CSUM	(1ull << 1)
#define VIRTIO_NET_F_MAC	(1ull << 5)
#define VIRTIO_NET_F_GUEST_TSO4	(1ull << 7)
#define VIRTIO_NET_F_HOST_TSO4	(1ull << 11)
#define VIRTIO_NET_F_MRG_RXBUF	(1ull << 15)
#define VIRTIO_NET_F_STATUS	(1ull << 16)
#define VIRTIO_NET_S_LINK_UP	1
#define VNET_HDR_LEN		12
#define VNET_MIN_FRAME		14
#define VNET_MAX_FRAME		1518	/* 1500 + Ethernet header + VLAN tag */
#define VNET_MAX_GSO_FRAME	(14 + 65535)	/* the largest IPv4 packet */
#define VNET_HDR_F_NEEDS_CSUM	1
#define VNET_HDR_F_DATA_VALID	2
#define VNET_HDR_GSO_NONE	0
#define VNET_HDR_GSO_TCPV4	1
#define VNET_RXQ		0
#define VNET_TXQ		1
#define VNET_CFG_LEN		8

enum vnet_drop {
	VNET_DROP_RX_NOT_READY,	/* driver not running or receive queue off */
	VNET_DROP_RX_SMALL_BUF,	/* buffer shorter than header + frame */
	VNET_DROP_RX_BAD_FRAME,	/* vnet_rx given a frame of a bad length */
	VNET_DROP_RX_QUEUE,	/* receive queue broken */
	VNET_DROP_RX_LINK_DOWN,	/* the operator took the link down */
	VNET_DROP_TX_RUNT,	/* shorter than header + Ethernet header */
	VNET_DROP_TX_OVERSIZE,	/* frame over VNET_MAX_FRAME */
	VNET_DROP_TX_BAD_HDR,	/* offload not negotiated, unknown or malformed */
	VNET_DROP_TX_OFFLOAD,	/* the owner could not finish the offload */
	VNET_DROP_TX_QUEUE,	/* transmit queue broke on this chain */
	VNET_DROP_TX_LINK_DOWN,	/* the operator took the link down */
	VNET_NR_DROP
};

struct vnet_stats {
	uint64_t rx_frames, rx_bytes;	/* delivered to the guest */
	uint64_t rx_valid;		/* of those: marked DATA_VALID */
	uint64_t rx_gso, rx_gso_segs;	/* super-frames (GUEST_TSO4), the segments in them */
	uint64_t rx_gso_small;		/* a super-frame did not fit the buffer: given back */
	uint64_t tx_frames, tx_bytes;	/* sent by the guest, handed to tx() */
	uint64_t tx_csum, tx_gso;	/* of those: NEEDS_CSUM, and GSO */
	uint64_t tx_stalls;		/* tx() had no room: the queue waited */
	uint64_t rx_waits;		/* no receive buffer: the frame waited (-ENOBUFS) */
	uint64_t drops[VNET_NR_DROP];
};

/* What a transmitted frame's header asks for (Virtio 1.1 5.1.6.2). */
struct vnet_offload {
	bool csum;			/* NEEDS_CSUM: csum_start, csum_offset */
	uint16_t csum_start, csum_offset;
	uint16_t gso_size;		/* GSO TCPv4 with this MSS; 0: none */
};

struct vnet_config {
	uint8_t mac[6];
	uint8_t irq;			/* INTx line (I/O APIC pin) */
	struct vq_mem mem;		/* guest RAM */
	/* 0: taken; -EAGAIN: no room now (the chain waits, see above); any
	 * other error: dropped (counted as VNET_DROP_TX_OFFLOAD). */
	int (*tx)(void *ctx, const uint8_t *frame, size_t len, const struct vnet_offload *off);
	void *ctx;			/* for tx */
};

/* (c): set at creation, not saved.  Never copy the struct (the
 * transport's callbacks point at it). */
struct vnet {
	struct virtio_pci vp;
	struct vnet_config cfg;		/* (c) */
	uint16_t net_status;		/* VIRTIO_NET_S_*: guest-visible */
	struct vnet_stats stats;	/* host-side, not saved */
	bool tx_stalled;		/* waiting for vnet_tx_resume */
	bool rx_kicked;			/* the driver posted receive buffers */
	enum rx_short { RX_SHORT_NO, RX_SHORT_WAIT, RX_SHORT_DROP } rx_short;
					/* too few or too small: until a doorbell */
	struct vq_chain chain;		/* scratch */
	struct vq_chain first;		/* scratch: a merged frame's first buffer */
	struct vq_used used[VQ_MAX_SIZE];	/* scratch: a merged frame's buffers */
	uint8_t buf[VNET_HDR_LEN + VNET_MAX_GSO_FRAME];	/* scratch */
};

/* Build the device, link up; attach dev->vp.fn to the bus afterwards
 * (vpci_attach).  -EINVAL for a bad configuration. */
int vnet_init(struct vnet *dev, const struct vnet_config *cfg);

/* A frame for the guest (no FCS), given in pieces that follow each other.
 * valid: its IP and TCP/UDP checksums were verified (by the NIC, or
 * computed by ferry): DATA_VALID.  gso_size: a TCPv4 super-frame of segs
 * segments whose every checksum was verified, with the pseudo-header sum
 * in its TCP checksum field (NEEDS_CSUM, GSO_TCPV4: Virtio 1.1 5.1.6.4);
 * only to a driver that took GUEST_TSO4 (vnet_rx_gso). */
struct vnet_piece {
	const uint8_t *p;
	size_t len;
};
struct vnet_rx_frame {
	const struct vnet_piece *piece;
	unsigned int nr;
	bool valid;
	uint16_t gso_size;		/* 0: an ordinary frame */
	uint16_t hdr_len;		/* with gso_size: Ethernet + IP + TCP headers */
	unsigned int segs;		/* with gso_size: for the statistics */
};

/* 0 if delivered, -EAGAIN if dropped (counted by reason), -EMSGSIZE if
 * a super-frame does not fit the guest's next buffer (nothing taken,
 * nothing dropped: give it the segments one by one), -ENOBUFS if the
 * driver has not posted enough receive buffers (nothing taken: the frame
 * waits, and vnet_rx_take_kick says when the driver posts more).  A frame
 * that the whole ring could not hold is dropped (VNET_DROP_RX_SMALL_BUF). */
int vnet_rx_frame(struct vnet *dev, const struct vnet_rx_frame *f);
/* Whether the driver notified the receive queue since the last call. */
bool vnet_rx_take_kick(struct vnet *dev);
/* Whether the driver takes super-frames (GUEST_TSO4 and GUEST_CSUM). */
bool vnet_rx_gso(const struct vnet *dev);
int vnet_rx_valid(struct vnet *dev, const uint8_t *frame, size_t len, bool valid);
static inline int vnet_rx(struct vnet *dev, const uint8_t *frame, size_t len)
{
	return vnet_rx_valid(dev, frame, len, false);
}

/* Take up transmitting where a stall (or a restore) left it. */
void vnet_tx_resume(struct vnet *dev);
static inline bool vnet_tx_stalled(const struct vnet *dev) { return dev->tx_stalled; }

/* Link state as the guest sees it (a configuration change interrupt).
 * While it is down nothing passes: frames either way are dropped and
 * counted, as with a cable pulled out.  It travels in the snapshot. */
void vnet_set_link(struct vnet *dev, bool up);
static inline bool vnet_link_up(const struct vnet *dev)
{
	return dev->net_status & VIRTIO_NET_S_LINK_UP;
}

const char *vnet_drop_name(enum vnet_drop d);

/* Save or restore the whole device: transport, queues, link.  The MAC is
 * saved and must match the device's (it is fixed at creation, and the
 * destination creates the device with the guest's MAC).  Refused
 * restores (-EINVAL) leave dev unchanged. */
int vnet_snapshot(struct vnet *dev, struct snap *s);

#endif
