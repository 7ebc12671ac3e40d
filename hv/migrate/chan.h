/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One migration connection: a TCP connection of ferry's stack (hv/netif.h)
 * and the record stream on it (stream.h), driven without blocking.  Both
 * the sender and the receiver use it; they decide how to wait.
 */
#ifndef FERRY_HV_MIGRATE_CHAN_H
#define FERRY_HV_MIGRATE_CHAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "hv/migrate/stream.h"
#include "hv/net/tcp.h"

#define MIG_CHAN_RX 16384

struct mig_chan {
	struct tcp_conn *conn;		/* owned; closed by chan_close */
	struct mig_stream st;		/* ~8 KiB */
	uint8_t *tx;			/* one encoded record waiting to go out */
	size_t tx_cap, tx_len, tx_off;
	uint8_t rx[MIG_CHAN_RX];	/* bytes from TCP not yet fed */
	size_t rx_len, rx_off;
	bool rx_eof;			/* the peer closed its side */
	uint64_t last_rx_us;		/* when bytes last came */
	uint64_t bytes_out, bytes_in;
	uint32_t peer_ip;
};

/* Set up ch around conn (may be NULL until connected) for role, with a
 * transmit buffer for records up to tx_cap bytes.  0 or -ENOMEM. */
int chan_init(struct mig_chan *ch, enum mig_role role, struct tcp_conn *conn, size_t tx_cap);
/* Free the buffers and give the connection back: graceful close, or a
 * reset if abort. */
void chan_close(struct mig_chan *ch, bool abort);

/* Encode r into the transmit buffer (empty, or -EBUSY).  -EINVAL: r is
 * not ours to send (ch->st.tx_err says why). */
int chan_queue(struct mig_chan *ch, const struct mig_rec *r);
/* Give TCP what it takes of the transmit buffer, at most limit bytes.
 * 1: all gone; 0: some left; < 0: the connection's error. */
int chan_push(struct mig_chan *ch, size_t limit);
bool chan_tx_idle(const struct mig_chan *ch);

/* The next record from the peer: 1 (*out valid until the next call), 0
 * (none complete yet), or < 0: -EPROTO (refused: ch->st.rx_err), -EPIPE
 * (the peer closed; ch->st says whether mid-record), or the connection's
 * error. */
int chan_pull(struct mig_chan *ch, const struct mig_rec **out);

/* Send an ABORT now if the conversation allows one (best effort). */
void chan_abort(struct mig_chan *ch, uint32_t code, const char *msg);

#endif
