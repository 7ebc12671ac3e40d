/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A simulated Ethernet link between two stacks in one process, driven by
 * simulated time: rate-limited with a drop-tail queue, with propagation
 * delay and seeded loss, reordering, duplication and corruption, for the
 * host unit tests (the product does not use it).  Deterministic for a given
 * seed and call sequence.
 */
#ifndef FERRY_TESTS_UNIT_NETSIM_H
#define FERRY_TESTS_UNIT_NETSIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct netstack;

/* Impairments; probabilities in parts per million. */
struct netsim_cfg {
	uint64_t seed;
	uint64_t delay_us;		/* one-way propagation */
	uint64_t rate_Bps;		/* bytes per second; 0: unlimited */
	uint64_t queue_bytes;		/* drop-tail limit per direction; 0: none */
	uint32_t loss_ppm, dup_ppm, reorder_ppm, corrupt_ppm;
	uint64_t reorder_us;		/* extra delay of a reordered frame, max */
	uint64_t poll_us;		/* >0: frames reach a stack only every poll_us,
					 * all that came as one net_rx_batch, as a
					 * NIC's interrupt or poll brings them */
};

struct netsim_frame {
	struct netsim_frame *next;
	uint64_t at_us;
	int to;
	size_t len;
	uint8_t data[];
};

struct netsim_stats {
	uint64_t sent, delivered, lost, duplicated, reordered, corrupted;
	uint64_t queue_drops, cut_drops;
};

struct netsim;

/* What net_config.xmit_ctx points at: one end of the link. */
struct netsim_port {
	struct netsim *sim;
	int side;
};

struct netsim {
	struct netsim_cfg cfg;
	struct netstack *ep[2];
	struct netsim_port port[2];
	struct netsim_frame *q, *tail;	/* sorted by at_us, FIFO for ties */
	uint64_t rng, now_us;
	uint64_t busy_until[2];		/* serialization of each direction */
	bool cut;			/* link down: everything is dropped */
	struct netsim_stats st;
};

void netsim_init(struct netsim *n, const struct netsim_cfg *cfg);
/* Attach the stack at side 0 or 1 (after net_init with netsim_xmit and
 * &n->port[side] as its transmit callback and context). */
void netsim_attach(struct netsim *n, int side, struct netstack *s);
/* The transmit callback for net_config. */
int netsim_xmit(void *ctx, const void *frame, size_t len);
/* Time of the next delivery (UINT64_MAX when none). */
uint64_t netsim_next(const struct netsim *n);
/* Set the time and hand every due frame to its stack. */
void netsim_deliver(struct netsim *n, uint64_t now_us);
/* Run both stacks' timers at the current time, then advance to the next
 * event (a delivery or a timer), at most to limit, and deliver what is
 * due.  Returns the new time.  Callers act on their connections between
 * steps. */
uint64_t netsim_step(struct netsim *n, uint64_t limit);
void netsim_fini(struct netsim *n);

#endif
