/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Intel 82540EM (e1000) driver: the NIC QEMU and Bochs both emulate.
 * Polled: the network code calls e1000_poll() from its loop.  One caller
 * at a time (the network lock).  The interrupt only wakes a CPU that waits
 * for the network (e1000_irq_*); it does no work of its own.  Checksum
 * offload (8254x SDM 3.2.9, 3.3.5, 3.3.6), which QEMU's and Bochs's e1000 both implement for transmit:
 * with tx_csum set, e1000_xmit has the NIC complete the TCP checksum of
 * IPv4 TCP frames (the stack leaves the pseudo-header sum in the field);
 * received frames come with E1000_RX_* flags for checksums the NIC
 * verified (the emulators verify none: they report "ignore checksum").
 * TCP segmentation offload (SDM 3.5), which both emulators implement too:
 * e1000_xmit_tso sends up to E1000_TSO_MAX payload bytes as one frame.
 */
#ifndef FERRY_DRIVERS_E1000_H
#define FERRY_DRIVERS_E1000_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "drivers/pci.h"

#define E1000_RX_DESC 256
#define E1000_TX_DESC 256
#define E1000_BUF 2048
#define E1000_TSO_MAX 32768	/* payload per TSO frame: 16 buffers */

struct e1000_stats {
	uint64_t rx_frames, rx_bytes, tx_frames, tx_bytes;
	uint64_t rx_errors;	/* frames the NIC marked bad, or too long */
	uint64_t rx_missed;	/* the NIC's missed-packet count (ring full) */
	uint64_t tx_busy;	/* transmit ring full */
	uint64_t tx_csum;	/* frames whose TCP checksum the NIC computed */
	uint64_t tx_tso;	/* TSO frames (each several segments) */
	uint64_t rx_csum;	/* frames with a checksum the NIC verified */
};

/* e1000_poll's flags for a frame (the stack's NET_RX_* values). */
#define E1000_RX_IP_CSUM_OK	(1u << 0)
#define E1000_RX_TCP_CSUM_OK	(1u << 1)

struct e1000 {
	struct pci_dev pci;
	volatile uint8_t *regs;
	uint8_t mac[6];
	struct e1000_rx_desc *rx;	/* rings in frames (physically contiguous) */
	struct e1000_tx_desc *tx;
	uint8_t *rx_buf, *tx_buf;	/* E1000_BUF per descriptor */
	uint64_t rx_ring_pa, tx_ring_pa, rx_buf_pa, tx_buf_pa;
	unsigned int rx_next;		/* next descriptor to look at */
	unsigned int tx_tail, tx_clean;
	unsigned int tx_unkicked;	/* queued since the last TDT write */
	unsigned int idle_polls;
	bool tx_csum;			/* TCP checksum offload: on after probe;
					 * clear it to compute checksums in software */
	bool tso;			/* segmentation offload: on after probe;
					 * clear it (before netif_init) to send
					 * every segment from the stack */
	struct e1000_stats stats;
};

/* Find, reset and start the first 82540EM; -ENODEV when there is none. */
int e1000_probe(struct e1000 *nic);
/* Queue one frame (copied); -EAGAIN when the ring is full.  Frames go out
 * in bursts: at 32 queued, at the next poll, or on e1000_tx_kick().  With
 * tx_csum, an IPv4 TCP frame (20-byte IP header) gets its TCP checksum
 * from the NIC, which adds the field's contents to its sum. */
int e1000_xmit(struct e1000 *nic, const void *frame, size_t len);
void e1000_tx_kick(struct e1000 *nic);
/* One TSO frame: headers hdr (hlen bytes, an IPv4 TCP frame as
 * e1000_frame_is_tcp4 wants; the TCP checksum field holds the
 * pseudo-header sum without the length) and the payload data[0], data[1]
 * (copied), cut by the NIC into mss-byte segments.  0, -EAGAIN (ring
 * full) or -EINVAL. */
int e1000_xmit_tso(struct e1000 *nic, const uint8_t *hdr, size_t hlen,
		   const uint8_t *const data[2], const size_t len[2], unsigned int mss);
/* The buffer of the next transmit slot (NULL: ring full): a frame built
 * there is queued by e1000_xmit without a copy.  Valid until the next
 * e1000_xmit. */
void *e1000_tx_frame(struct e1000 *nic);
/* Hand up to budget received frames to rx with their E1000_RX_* flags;
 * returns how many. */
int e1000_poll(struct e1000 *nic,
	       void (*rx)(void *ctx, const void *frame, size_t len, unsigned flags),
	       void *ctx, int budget);
/* Is this frame IPv4 (20-byte header) carrying TCP, as the offload needs? */
bool e1000_frame_is_tcp4(const uint8_t *frame, size_t len);
bool e1000_link_up(struct e1000 *nic);
/* The PCI interrupt: raised, once unmasked, when frames arrive or are
 * sent or the link changes, at once (no moderation); masked from
 * e1000_probe on.
 * Causes latch while masked.  e1000_irq_ack (from the handler) returns
 * and clears them: 0 means the interrupt was not this NIC's. */
void e1000_irq_setup(struct e1000 *nic);
void e1000_irq_mask(struct e1000 *nic);
void e1000_irq_unmask(struct e1000 *nic);
uint32_t e1000_irq_ack(struct e1000 *nic);

#endif
