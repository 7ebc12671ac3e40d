/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Intel 82540EM (e1000) driver: the NIC QEMU and Bochs both emulate.
 * Polled: the network code calls e1000_poll() from its loop.  One caller
 * at a time (the network lock).
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

struct e1000_stats {
	uint64_t rx_frames, rx_bytes, tx_frames, tx_bytes;
	uint64_t rx_errors;	/* frames the NIC marked bad, or too long */
	uint64_t rx_missed;	/* the NIC's missed-packet count (ring full) */
	uint64_t tx_busy;	/* transmit ring full */
};

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
	struct e1000_stats stats;
};

/* Find, reset and start the first 82540EM; -ENODEV when there is none. */
int e1000_probe(struct e1000 *nic);
/* Queue one frame (copied); -EAGAIN when the ring is full.  Frames go out
 * in bursts: at 32 queued, at the next poll, or on e1000_tx_kick(). */
int e1000_xmit(struct e1000 *nic, const void *frame, size_t len);
void e1000_tx_kick(struct e1000 *nic);
/* Hand up to budget received frames to rx; returns how many. */
int e1000_poll(struct e1000 *nic, void (*rx)(void *ctx, const void *frame, size_t len),
	       void *ctx, int budget);
bool e1000_link_up(struct e1000 *nic);

#endif
