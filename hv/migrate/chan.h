/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One migration connection: a TCP connection of ferry's stack (hv/netif.h)
 * and the record stream on it (stream.h), driven without blocking.  Both
 * the sender and the receiver use it; they decide how to wait.
 *
 * By default the connection is the secure channel (docs/migration.md,
 * "The secure channel"): a Noise KK handshake pinned to a trusted peer's
 * key (chan_hs_start_src / chan_hs_start_dst, then chan_handshake until it
 * says 1), after which every record is sealed and opened here, unseen by
 * the callers.  A connection started with neither is plaintext: both ends
 * said `insecure`.
 */
#ifndef FERRY_HV_MIGRATE_CHAN_H
#define FERRY_HV_MIGRATE_CHAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "hv/crypto/noise.h"
#include "hv/migrate/stream.h"
#include "hv/migrate/trust.h"
#include "hv/net/tcp.h"

#define MIG_CHAN_RX	NOISE_REC_MAX_PAYLOAD	/* one opened record fits */

/* Handshake frames: le16 type, le16 length, then the body. */
#define CHAN_HS_MSG1	0x4e01	/* src: hint of its key, hint of the key it expects, e, es, ss */
#define CHAN_HS_MSG2	0x4e02	/* dst: e, ee, se */
#define CHAN_HS_REFUSE	0x4e03	/* dst: u32 code, then a printable reason */
#define CHAN_HS_HDR	4
#define CHAN_HS_MSG1_LEN	(2 * KEY_FP_BYTES + NOISE_HS_OVERHEAD)
#define CHAN_HS_MSG2_LEN	NOISE_HS_OVERHEAD

enum chan_mode {
	CHAN_PLAIN,		/* records in the clear (`insecure` on both ends) */
	CHAN_HANDSHAKE,		/* the Noise handshake is under way */
	CHAN_SEALED,		/* every record sealed (noise_rec_seal) */
};

struct mig_chan {
	struct tcp_conn *conn;		/* owned; closed by chan_close */
	struct mig_stream st;		/* ~8 KiB */
	uint8_t *tx;			/* bytes waiting to go out (sealed if SEALED) */
	size_t tx_cap, tx_len, tx_off;
	uint8_t *pt;			/* SEALED: a record encoded before sealing */
	size_t pt_cap;
	uint8_t rx[MIG_CHAN_RX];	/* plaintext from TCP or opened, not yet fed */
	size_t rx_len, rx_off;
	uint8_t *srx;			/* handshake frames and sealed bytes not yet opened */
	size_t srx_len;
	bool rx_eof;			/* the peer closed its side */
	uint64_t last_rx_us;		/* when a whole record (or handshake
					 * message) last came: bytes alone, a
					 * trickle, are no sign of life */
	uint64_t bytes_out, bytes_in;
	uint32_t peer_ip;
	/* the secure channel */
	enum chan_mode mode;
	bool sniff;			/* plaintext listener: look at the first bytes */
	const struct mig_keyring *kr;	/* our keys (handshake only) */
	struct noise_hs *hs;		/* during the handshake */
	struct noise_cipher ctx, crx;	/* after it: each direction's key and counter */
	struct mig_peer peer;		/* the peer that proved its key (SEALED) */
	struct mig_error hs_err;	/* why the handshake or an open failed */
};

/* Set up ch around conn (may be NULL until connected) for role, with a
 * transmit buffer for records up to tx_cap bytes.  0 or -ENOMEM. */
int chan_init(struct mig_chan *ch, enum mig_role role, struct tcp_conn *conn, size_t tx_cap);
/* Free the buffers and give the connection back: graceful close, or a
 * reset if abort.  Wipes the keys. */
void chan_close(struct mig_chan *ch, bool abort);

/* The source's side: message 1 for peer (copied) into the transmit
 * buffer.  0, or < 0 with ch->hs_err set (no random bytes, ...). */
int chan_hs_start_src(struct mig_chan *ch, const struct mig_keyring *kr,
		      const struct mig_peer *peer);
/* The destination's side: wait for message 1 from a peer in kr. */
void chan_hs_start_dst(struct mig_chan *ch, const struct mig_keyring *kr);
/* A plaintext listener: refuse a peer that asks for the secure channel. */
void chan_plain_dst(struct mig_chan *ch);
/*
 * Drive the handshake: push what waits, take what came.  1: done (sealed
 * from now on, ch->peer is the peer); 0: not yet; < 0: refused or failed,
 * ch->hs_err says why (the destination has sent the source its refusal).
 */
int chan_handshake(struct mig_chan *ch);

/* Encode r into the transmit buffer (empty, or -EBUSY).  -EINVAL: r is
 * not ours to send (ch->st.tx_err says why). */
int chan_queue(struct mig_chan *ch, const struct mig_rec *r);
/* Give TCP what it takes of the transmit buffer, at most limit bytes.
 * 1: all gone; 0: some left; < 0: the connection's error. */
int chan_push(struct mig_chan *ch, size_t limit);
bool chan_tx_idle(const struct mig_chan *ch);

/* The next record from the peer: 1 (*out valid until the next call), 0
 * (none complete yet), or < 0: -EPROTO (refused: ch->st.rx_err), -EBADMSG
 * (a sealed record did not open: ch->hs_err), -ECONNREFUSED (a plaintext
 * listener was asked for the secure channel: ch->hs_err), -EPIPE (the
 * peer closed; chan_partial says whether mid-record), or the connection's
 * error. */
int chan_pull(struct mig_chan *ch, const struct mig_rec **out);
/* The stream ended in the middle of a record (plain or sealed). */
bool chan_partial(const struct mig_chan *ch);

/* Send an ABORT now if the conversation allows one (best effort). */
void chan_abort(struct mig_chan *ch, uint32_t code, const char *msg);

/* "NAME SHA256:..." of the proved peer, or "insecure" (for logs). */
const char *chan_peer_text(const struct mig_chan *ch, char *buf, size_t len);

#endif
