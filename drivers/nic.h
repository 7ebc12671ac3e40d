/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The NIC interface: what ferry's network code (hv/netif.c, and through it
 * the stack in hv/net and the migration channel) asks of a network card,
 * whatever its driver.  Each driver (e1000, e1000e, virtio-net) fills one
 * `struct nic_ops` and registers a `struct nic_driver` in drivers/nic.c,
 * which scans PCI for every card some driver claims and starts the one
 * the `nic=` option chooses (drivers/nicsel.h).
 *
 * Polled, like the drivers under it: one caller at a time (the network
 * lock); the interrupt only wakes a CPU that waits for the network.
 */
#ifndef FERRY_DRIVERS_NIC_H
#define FERRY_DRIVERS_NIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "drivers/nicsel.h"
#include "drivers/pci.h"

#define NIC_BUF		2048	/* a frame buffer: a frame up to 1514 bytes fits */
#define NIC_TSO_MAX	32768	/* payload per TSO frame, for drivers that have TSO */

/* Flags for a received frame: the stack's NET_RX_* values. */
#define NIC_RX_IP_CSUM_OK	(1u << 0)
#define NIC_RX_TCP_CSUM_OK	(1u << 1)

struct nic_stats {
	uint64_t rx_frames, rx_bytes, tx_frames, tx_bytes;
	uint64_t rx_errors;	/* frames the NIC marked bad, or too long */
	uint64_t rx_missed;	/* frames the NIC dropped (ring full), if it says */
	uint64_t tx_busy;	/* transmit ring full */
	uint64_t tx_done;	/* transmit descriptors the NIC gave back */
	uint64_t tx_csum;	/* frames whose TCP checksum the NIC computed */
	uint64_t tx_tso;	/* TSO frames (each several segments) */
	uint64_t rx_csum;	/* frames with a checksum the NIC verified */
	uint64_t dev_errors;	/* values from the device that made no sense */
};

typedef void (*nic_rx_fn)(void *ctx, const void *frame, size_t len, unsigned flags);

/* A piece of a TSO frame's payload: the stack's send ring gives two, a
 * guest's super-frame cut into segments one per segment (hv/gnet.c). */
struct nic_iov {
	const uint8_t *base;
	size_t len;
};
#define NIC_TSO_IOV_MAX	64	/* pieces per TSO frame, at most */

struct nic;
struct nic_ops {
	/* Queue one frame (copied unless built in tx_frame's buffer);
	 * -EAGAIN when the ring is full, -EINVAL for a bad length.  With
	 * tx_csum, an IPv4 TCP frame (20-byte IP header) gets its TCP
	 * checksum from the NIC, which adds the field (the pseudo-header
	 * sum, with the length) to its sum. */
	int (*xmit)(struct nic *n, const void *frame, size_t len);
	/* The buffer of the next transmit slot (NULL: ring full). */
	void *(*tx_frame)(struct nic *n);
	/* One TSO frame: headers hdr (an IPv4 TCP frame's, with the
	 * pseudo-header sum without the length in the TCP checksum, as
	 * hv/net/tcp_out.c and gso_tso_hdr leave them), then the payload
	 * iov[0..niov) in order, up to
	 * NIC_TSO_MAX bytes, cut into mss-byte segments; PSH and FIN go on
	 * the last segment only.  NULL without TSO. */
	int (*xmit_tso)(struct nic *n, const uint8_t *hdr, size_t hlen,
			const struct nic_iov *iov, unsigned int niov, unsigned int mss);
	void (*tx_kick)(struct nic *n);	/* hand queued frames to the NIC */
	/* Free transmit descriptors once those sent are taken back: a frame
	 * takes one, a TSO frame at most nic_tx_descs() of its payload. */
	unsigned int (*tx_room)(struct nic *n);
	/* Hand up to budget received frames to rx; returns how many. */
	int (*poll)(struct nic *n, nic_rx_fn rx, void *ctx, int budget);
	bool (*link_up)(struct nic *n);
	/* Receive frames for every MAC (and every multicast), for the guests
	 * behind ferry's switch; NULL when the card needs nothing for that. */
	void (*set_promisc)(struct nic *n, bool on);
	/* The PCI interrupt, masked from probe on; causes latch while
	 * masked; irq_ack returns and clears them (0: not this NIC's). */
	void (*irq_setup)(struct nic *n);
	void (*irq_mask)(struct nic *n);
	void (*irq_unmask)(struct nic *n);
	uint32_t (*irq_ack)(struct nic *n);
};

/* What a driver's probe fills in; the driver's own state follows it. */
struct nic {
	const struct nic_ops *ops;
	const char *driver;		/* "e1000", "e1000e", "virtio-net" */
	const char *model;		/* "82540EM", "82574L", "virtio 1.x" */
	struct pci_dev pci;
	uint8_t mac[6];
	bool tx_csum;			/* TCP checksum offload: clear it before
					 * netif_init to sum in software */
	bool tso;			/* segmentation offload (xmit_tso) */
	unsigned int tx_slots;		/* transmit descriptors in the ring */
	struct nic_stats stats;
};

/* A driver: which PCI functions it takes, how to read their MAC without
 * starting them, and how to start one (allocating its state).  Each
 * callback gets the driver's arg (one code serving several models). */
struct nic_driver {
	const char *name;
	const void *arg;
	bool (*match)(const struct pci_dev *d, const void *arg);
	int (*read_mac)(const struct pci_dev *d, const void *arg, uint8_t mac[6]);
	int (*probe)(const struct pci_dev *d, const void *arg, struct nic **out);
};

extern const struct nic_driver e1000_driver, e1000e_driver, virtio_net_driver;

/* A card some driver claims, found by nic_scan. */
struct nic_found {
	struct pci_dev pci;
	const struct nic_driver *drv;
	uint8_t mac[6];
	bool mac_ok;			/* read_mac succeeded */
};

#define NIC_MAX_FOUND	8

/* Every PCI function a driver claims, in bus order, up to max; the count. */
unsigned int nic_scan(struct nic_found *found, unsigned int max);
/*
 * Start the card sel chooses among found[0..n) (the first one when sel is
 * NIC_SEL_ANY); *which is its index.  -ENODEV when there is none or none
 * matches, else the driver's probe error.
 */
int nic_start(const struct nic_found *found, unsigned int n, const struct nic_sel *sel,
	      struct nic **out, unsigned int *which);

/* Is this frame IPv4 with a 20-byte header (version 4, IHL 5) carrying
 * TCP (protocol 6), and not a fragment (MF and the offset clear), as the
 * offloads want?  A fragment's bytes 34-53 are not a TCP header (or not
 * all of one): a checksum written there would corrupt it. */
static inline bool nic_frame_is_tcp4(const uint8_t *f, size_t len)
{
	return len >= 14 + 20 + 20 && f[12] == 0x08 && f[13] == 0x00 && f[14] == 0x45 &&
	       f[14 + 9] == 6 && !(f[14 + 6] & 0x3f) && !f[14 + 7];
}

/* The payload bytes of iov[0..n), or 0 when n is 0 or over
 * NIC_TSO_IOV_MAX, a piece is empty or the sum is over NIC_TSO_MAX:
 * xmit_tso refuses all of those. */
static inline size_t nic_iov_len(const struct nic_iov *iov, unsigned int n)
{
	size_t total = 0;

	if (!n || n > NIC_TSO_IOV_MAX)
		return 0;
	for (unsigned int i = 0; i < n; i++) {
		if (!iov[i].len || !iov[i].base || iov[i].len > NIC_TSO_MAX)
			return 0;
		total += iov[i].len;
	}
	return total <= NIC_TSO_MAX ? total : 0;
}

/* Where a driver stands in a TSO frame's payload as it fills its buffers. */
struct nic_iov_cur {
	const struct nic_iov *iov;
	unsigned int n, i;
	size_t off;			/* into iov[i] */
};

/* Copy the next bytes of the payload, up to max, into dst: how many. */
static inline size_t nic_iov_copy(struct nic_iov_cur *c, uint8_t *dst, size_t max)
{
	size_t done = 0;

	while (done < max && c->i < c->n) {
		size_t k = c->iov[c->i].len - c->off;

		if (k > max - done)
			k = max - done;
		memcpy(dst + done, c->iov[c->i].base + c->off, k);
		done += k;
		c->off += k;
		if (c->off == c->iov[c->i].len) {
			c->i++;
			c->off = 0;
		}
	}
	return done;
}

/* The most descriptors a frame (a TSO frame: its payload) of that many
 * bytes takes in any driver's ring: a context and the headers, then the
 * payload a buffer at a time. */
static inline unsigned int nic_tx_descs(size_t bytes)
{
	return 2 + (unsigned int)((bytes + NIC_BUF - 1) / NIC_BUF);
}

static inline int nic_xmit(struct nic *n, const void *f, size_t len) { return n->ops->xmit(n, f, len); }
static inline void nic_tx_kick(struct nic *n) { n->ops->tx_kick(n); }
static inline bool nic_link_up(struct nic *n) { return n->ops->link_up(n); }
static inline int nic_poll(struct nic *n, nic_rx_fn rx, void *ctx, int budget)
{
	return n->ops->poll(n, rx, ctx, budget);
}

#endif
