/* SPDX-License-Identifier: BSD-2-Clause */
/* One migration connection, without blocking (chan.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hv/crypto/crypto.h"
#include "hv/crypto/random.h"
#include "hv/lib/bytes.h"
#include "hv/migrate/chan.h"
#include "hv/netif.h"

#define SRX_CAP		(NOISE_REC_HDR + NOISE_MSG_MAX)	/* one whole sealed record */
#define PROLOGUE_LEN	(NOISE_FERRY_PROLOGUE + 2 * KEY_FP_BYTES)

/* Sealing adds NOISE_REC_OVERHEAD per record of at most this many bytes. */
static size_t sealed_size(size_t n)
{
	return n + (n / NOISE_REC_MAX_PAYLOAD + 1) * NOISE_REC_OVERHEAD;
}

int chan_init(struct mig_chan *ch, enum mig_role role, struct tcp_conn *conn, size_t tx_cap)
{
	memset(ch, 0, sizeof(*ch));
	mig_stream_init(&ch->st, role);
	ch->conn = conn;
	ch->tx_cap = sealed_size(tx_cap);
	ch->tx = malloc(ch->tx_cap);
	ch->pt_cap = tx_cap;
	ch->last_rx_us = netif_now_us();
	return ch->tx ? 0 : -ENOMEM;
}

static void wipe_keys(struct mig_chan *ch)
{
	if (ch->hs) {
		noise_hs_wipe(ch->hs);
		free(ch->hs);
		ch->hs = NULL;
	}
	noise_cipher_wipe(&ch->ctx);
	noise_cipher_wipe(&ch->crx);
}

void chan_close(struct mig_chan *ch, bool abort)
{
	if (ch->conn) {
		netif_lock();
		if (abort)
			tcp_abort(ch->conn);
		else
			tcp_close(ch->conn);
		netif_uplink_kick();
		netif_unlock();
		ch->conn = NULL;
	}
	mig_stream_fini(&ch->st);
	wipe_keys(ch);
	if (ch->pt)
		crypto_wipe(ch->pt, ch->pt_cap);
	crypto_wipe(ch->rx, sizeof(ch->rx));
	free(ch->tx);
	free(ch->pt);
	free(ch->srx);
	ch->tx = ch->pt = ch->srx = NULL;
}

/* ---- sending ---- */

/* Seal pt[0..n) into tx as records of at most NOISE_REC_MAX_PAYLOAD. */
static int seal_into_tx(struct mig_chan *ch, const uint8_t *pt, size_t n)
{
	size_t off = 0, out = 0, w;

	do {
		size_t chunk = n - off < NOISE_REC_MAX_PAYLOAD ? n - off : NOISE_REC_MAX_PAYLOAD;
		int rc = noise_rec_seal(&ch->ctx, pt + off, chunk, ch->tx + out, ch->tx_cap - out,
					&w);
		if (rc)
			return rc;
		off += chunk;
		out += w;
	} while (off < n);
	ch->tx_len = out;
	ch->tx_off = 0;
	return 0;
}

int chan_queue(struct mig_chan *ch, const struct mig_rec *r)
{
	long n;

	if (ch->tx_off < ch->tx_len)
		return -EBUSY;
	if (ch->mode == CHAN_HANDSHAKE)
		return -EPROTO;
	if (ch->mode == CHAN_PLAIN) {
		n = mig_stream_encode(&ch->st, r, ch->tx, ch->tx_cap);
		if (n < 0)
			return (int)n;
		ch->tx_len = (size_t)n;
		ch->tx_off = 0;
		return 0;
	}
	n = mig_stream_encode(&ch->st, r, ch->pt, ch->pt_cap);
	if (n < 0)
		return (int)n;
	return seal_into_tx(ch, ch->pt, (size_t)n);
}

bool chan_tx_idle(const struct mig_chan *ch)
{
	return ch->tx_off >= ch->tx_len;
}

/*
 * Bytes into TCP, and its frames to the NIC at once (here, and after a
 * read or a close): queued frames wait for the next poll otherwise, and
 * the loop may sleep before it (READY, COMMIT, COMMITTED waited up to a
 * timer tick or the next frame in).
 */
static long send_kick(struct mig_chan *ch, const void *buf, size_t n)
{
	long sent;

	netif_lock();
	sent = tcp_send(ch->conn, buf, n);
	netif_uplink_kick();
	netif_unlock();
	return sent;
}

int chan_push(struct mig_chan *ch, size_t limit)
{
	size_t want = ch->tx_len - ch->tx_off;
	long n;

	if (!want)
		return 1;
	if (want > limit)
		want = limit;
	if (!want)
		return 0;
	n = send_kick(ch, ch->tx + ch->tx_off, want);
	if (n == -EAGAIN)
		return 0;
	if (n < 0)
		return (int)n;
	ch->tx_off += (size_t)n;
	ch->bytes_out += (uint64_t)n;
	return ch->tx_off == ch->tx_len;
}

/* ---- receiving ---- */

/* TCP's bytes into buf[cap]: > 0 bytes, 0 none now, < 0 error or -EPIPE. */
static long take(struct mig_chan *ch, uint8_t *buf, size_t cap)
{
	long n;

	if (ch->rx_eof)
		return -EPIPE;
	if (!cap)
		return 0;
	netif_lock();
	n = tcp_recv(ch->conn, buf, cap);
	netif_uplink_kick();	/* a window update it sent: now */
	netif_unlock();
	if (n == -EAGAIN)
		return 0;
	if (n == 0) {
		ch->rx_eof = true;
		return -EPIPE;
	}
	if (n < 0)
		return n;
	ch->bytes_in += (uint64_t)n;
	return n;
}

/* More of the encrypted side's bytes (frames, sealed records) into srx. */
static long fill_srx(struct mig_chan *ch)
{
	long n = take(ch, ch->srx + ch->srx_len, SRX_CAP - ch->srx_len);

	if (n > 0)
		ch->srx_len += (size_t)n;
	return n;
}

static void srx_consume(struct mig_chan *ch, size_t used)
{
	memmove(ch->srx, ch->srx + used, ch->srx_len - used);
	ch->srx_len -= used;
}

static int open_failed(struct mig_chan *ch)
{
	mig_error_set(&ch->hs_err, MIG_E_INTEGRITY, "a sealed record did not open (altered, "
		      "replayed, reordered or dropped)");
	return -EBADMSG;
}

/* The next sealed record's plaintext into rx: 1, 0 (wait), < 0. */
static int open_next(struct mig_chan *ch)
{
	for (;;) {
		size_t pl = 0, used = 0;
		int rc = noise_rec_open(&ch->crx, ch->srx, ch->srx_len, ch->rx, sizeof(ch->rx),
					&pl, &used);
		if (rc == 0 && !pl) {	/* ferry never seals one: it would only be noise */
			mig_error_set(&ch->hs_err, MIG_E_PROTOCOL, "an empty sealed record");
			return -EBADMSG;
		}
		if (rc == 0) {
			srx_consume(ch, used);
			ch->rx_len = pl;
			ch->rx_off = 0;
			return 1;
		}
		if (rc != -EAGAIN)
			return open_failed(ch);
		long n = fill_srx(ch);
		if (n <= 0)
			return (int)n;
	}
}

/* Plaintext from TCP into rx: > 0, 0, or < 0. */
static long fill_plain(struct mig_chan *ch)
{
	long n = take(ch, ch->rx, sizeof(ch->rx));

	if (n > 0) {
		ch->rx_len = (size_t)n;
		ch->rx_off = 0;
	}
	return n;
}

static int refuse_secure(struct mig_chan *ch);

int chan_pull(struct mig_chan *ch, const struct mig_rec **out)
{
	if (ch->mode == CHAN_HANDSHAKE)
		return 0;
	for (;;) {
		if (ch->rx_off == ch->rx_len) {
			long n = ch->mode == CHAN_SEALED ? open_next(ch) : fill_plain(ch);
			if (n <= 0)
				return (int)n;
			/* the type's high byte: 'N' is a handshake frame */
			if (ch->sniff && ch->rx_len >= 2 && ch->rx[1] == CHAN_HS_MSG1 >> 8)
				return refuse_secure(ch);
			ch->sniff = false;
		}
		size_t used = 0;
		int rc = mig_stream_feed(&ch->st, ch->rx + ch->rx_off, ch->rx_len - ch->rx_off,
					 &used, out);
		ch->rx_off += used;
		if (rc == 1)
			ch->last_rx_us = netif_now_us();
		if (rc)
			return rc;
	}
}

bool chan_partial(const struct mig_chan *ch)
{
	return mig_stream_partial(&ch->st) || (ch->mode != CHAN_PLAIN && ch->srx_len);
}

/* Best effort: the bytes go now or not at all (we are ending). */
static void send_now(struct mig_chan *ch, const void *buf, size_t n)
{
	send_kick(ch, buf, n);
}

void chan_abort(struct mig_chan *ch, uint32_t code, const char *msg)
{
	struct mig_rec r = { .type = MIG_ABORT };
	uint8_t buf[MIG_HDR_SIZE + 8 + MIG_MSG_MAX], sealed[sizeof(buf) + NOISE_REC_OVERHEAD];
	struct mig_error e;
	size_t w;
	long n;

	/* behind a record not fully sent, the peer would misframe: skip it */
	if (!ch->conn || !chan_tx_idle(ch) || ch->mode == CHAN_HANDSHAKE)
		return;
	mig_error_set(&e, code, "%s", msg);
	r.abort.code = code;
	memcpy(r.abort.msg, e.msg, sizeof(r.abort.msg));
	n = mig_stream_encode(&ch->st, &r, buf, sizeof(buf));
	if (n <= 0)
		return;
	if (ch->mode == CHAN_PLAIN)
		send_now(ch, buf, (size_t)n);
	else if (!noise_rec_seal(&ch->ctx, buf, (size_t)n, sealed, sizeof(sealed), &w))
		send_now(ch, sealed, w);
}

const char *chan_peer_text(const struct mig_chan *ch, char *buf, size_t len)
{
	if (ch->mode == CHAN_SEALED)
		snprintf(buf, len, "%s %s", ch->peer.name, ch->peer.fp_text);
	else
		snprintf(buf, len, "insecure");
	return buf;
}

/* ---- the handshake (docs/migration.md, "The secure channel") ---- */

/* Queue a handshake frame (tx is empty at this point). */
static void queue_frame(struct mig_chan *ch, unsigned int type, const void *body, size_t len)
{
	put_le16(ch->tx, (uint16_t)type);
	put_le16(ch->tx + 2, (uint16_t)len);
	memcpy(ch->tx + CHAN_HS_HDR, body, len);
	ch->tx_len = CHAN_HS_HDR + len;
	ch->tx_off = 0;
}

static int hs_fail(struct mig_chan *ch, uint32_t code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int hs_fail(struct mig_chan *ch, uint32_t code, const char *fmt, ...)
{
	char msg[MIG_MSG_MAX + 1];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!ch->hs_err.code)
		mig_error_set(&ch->hs_err, code, "%s", msg);
	wipe_keys(ch);
	return -ECONNREFUSED;
}

/* The destination refuses: told (NULL: the same) to the source, which has
 * proved nothing yet, and the reason here; then fail. */
static int refuse_told(struct mig_chan *ch, uint32_t code, const char *told, const char *fmt,
		       ...) __attribute__((format(printf, 4, 5)));

static int refuse_told(struct mig_chan *ch, uint32_t code, const char *told, const char *fmt,
		       ...)
{
	uint8_t body[4 + MIG_MSG_MAX];
	char why[MIG_MSG_MAX + 1];
	struct mig_error e, t;
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	mig_error_set(&e, code, "%s", why);	/* printable only */
	mig_error_set(&t, code, "%s", told ? told : why);
	n = strlen(t.msg);
	memcpy(body, &(uint32_t){ code }, 4);	/* little-endian host */
	memcpy(body + 4, t.msg, n);
	ch->tx_len = ch->tx_off = 0;
	queue_frame(ch, CHAN_HS_REFUSE, body, 4 + n);
	chan_push(ch, SIZE_MAX);
	return hs_fail(ch, code, "%s", e.msg);
}

#define refuse(ch, code, ...) refuse_told(ch, code, NULL, __VA_ARGS__)

static void prologue(uint8_t out[PROLOGUE_LEN], const uint8_t *hint_src, const uint8_t *hint_dst)
{
	noise_ferry_prologue(out, MIG_PROTO_VERSION);
	memcpy(out + NOISE_FERRY_PROLOGUE, hint_src, KEY_FP_BYTES);
	memcpy(out + NOISE_FERRY_PROLOGUE + KEY_FP_BYTES, hint_dst, KEY_FP_BYTES);
}

/* A handshake with a fresh ephemeral key; the key is wiped here. */
static int hs_begin(struct mig_chan *ch, enum noise_role role, const uint8_t rs[NOISE_KEY],
		    const uint8_t pro[PROLOGUE_LEN])
{
	uint8_t e[NOISE_KEY];
	int rc;

	ch->hs = malloc(sizeof(*ch->hs));
	if (!ch->hs)
		return -ENOMEM;
	rc = rng_bytes(e, sizeof(e));
	if (!rc)
		rc = noise_hs_init(ch->hs, role, ch->kr->key.priv, rs, e, pro, PROLOGUE_LEN);
	crypto_wipe(e, sizeof(e));
	return rc;
}

/* Why hs_begin or alloc_srx failed, in words. */
static const char *no_key_why(int rc)
{
	if (rc == -ENOMEM)
		return "out of memory";
	if (rc == -EIO)
		return "the CPU's random source gave no (or a stuck) value";
	return rng_source() ? "the key could not be made" : "no random source";
}

static int alloc_srx(struct mig_chan *ch)
{
	ch->srx = malloc(SRX_CAP);
	ch->pt = malloc(ch->pt_cap);
	return ch->srx && ch->pt ? 0 : -ENOMEM;
}

int chan_hs_start_src(struct mig_chan *ch, const struct mig_keyring *kr,
		      const struct mig_peer *peer)
{
	uint8_t pro[PROLOGUE_LEN], body[CHAN_HS_MSG1_LEN];
	size_t n;
	int rc;

	ch->kr = kr;
	ch->peer = *peer;
	ch->mode = CHAN_HANDSHAKE;
	prologue(pro, kr->fp, peer->fp);
	if ((rc = alloc_srx(ch)) || (rc = hs_begin(ch, NOISE_INITIATOR, peer->pub, pro)))
		return hs_fail(ch, MIG_E_INTERNAL, "no ephemeral key: %s", no_key_why(rc));
	memcpy(body, pro + NOISE_FERRY_PROLOGUE, 2 * KEY_FP_BYTES);
	if (noise_hs_write(ch->hs, NULL, 0, body + 2 * KEY_FP_BYTES, NOISE_HS_OVERHEAD, &n))
		return hs_fail(ch, MIG_E_INTERNAL, "cannot write the handshake");
	queue_frame(ch, CHAN_HS_MSG1, body, sizeof(body));
	return 0;
}

void chan_hs_start_dst(struct mig_chan *ch, const struct mig_keyring *kr)
{
	ch->kr = kr;
	ch->mode = CHAN_HANDSHAKE;
	if (alloc_srx(ch))
		hs_fail(ch, MIG_E_INTERNAL, "out of memory for the secure channel");
}

void chan_plain_dst(struct mig_chan *ch)
{
	ch->sniff = true;
}

/* A plaintext listener got a handshake: say why not, in the frame the
 * source expects. */
static int refuse_secure(struct mig_chan *ch)
{
	refuse(ch, MIG_E_NOT_ALLOWED, "listener is insecure (plaintext): both ends must say "
	       "`insecure`");
	return -ECONNREFUSED;
}

static int split(struct mig_chan *ch)
{
	if (noise_hs_split(ch->hs, &ch->ctx, &ch->crx))
		return -EPROTO;
	free(ch->hs);
	ch->hs = NULL;
	ch->kr = NULL;
	ch->mode = CHAN_SEALED;
	return 1;
}

/* Destination: message 1 came (body of len bytes). */
static int dst_msg1(struct mig_chan *ch, const uint8_t *body, size_t len)
{
	const uint8_t *hint_src = body, *hint_dst = body + KEY_FP_BYTES;
	uint8_t pro[PROLOGUE_LEN], msg2[CHAN_HS_MSG2_LEN], pl[1];
	char fp[KEY_FP_LEN + 1];
	const struct mig_peer *p;
	size_t n;
	int rc;

	if (len != CHAN_HS_MSG1_LEN)
		return refuse(ch, MIG_E_PROTOCOL, "malformed handshake (%zu bytes)", len);
	if (memcmp(hint_dst, ch->kr->fp, KEY_FP_BYTES)) {
		key_fp_text(hint_dst, fp);
		return refuse(ch, MIG_E_NOT_ALLOWED, "wrong key: source pinned %s, this host "
			      "is %s", fp, ch->kr->fp_text);
	}
	p = mig_trust_by_fp(ch->kr, hint_src);
	if (!p) {
		key_fp_text(hint_src, fp);
		return refuse(ch, MIG_E_NOT_ALLOWED, "not trusted: source key %s (migrate "
			      "trust)", fp);
	}
	/* the peer has proved nothing yet: what the operator named a trusted
	 * key, and where it is pinned, stays here */
	if (p->ip && p->ip != ch->peer_ip)
		return refuse_told(ch, MIG_E_NOT_ALLOWED, "not trusted from this address",
				   "not trusted: source key %s is '%s' from another address",
				   p->fp_text, p->name);
	ch->peer = *p;
	prologue(pro, hint_src, hint_dst);
	if ((rc = hs_begin(ch, NOISE_RESPONDER, p->pub, pro)))
		return refuse(ch, MIG_E_INTERNAL, "no ephemeral key here: %s", no_key_why(rc));
	if (noise_hs_read(ch->hs, body + 2 * KEY_FP_BYTES, NOISE_HS_OVERHEAD, pl, sizeof(pl), &n))
		return refuse_told(ch, MIG_E_NOT_ALLOWED, "handshake did not prove the key",
				   "handshake did not prove key %s ('%s')", p->fp_text, p->name);
	if (noise_hs_write(ch->hs, NULL, 0, msg2, sizeof(msg2), &n))
		return refuse(ch, MIG_E_INTERNAL, "cannot answer the handshake");
	queue_frame(ch, CHAN_HS_MSG2, msg2, n);
	return split(ch) < 0 ? refuse(ch, MIG_E_INTERNAL, "handshake state") : 0;
}

/* Source: the destination's answer (a frame of type, body of len bytes). */
static int src_answer(struct mig_chan *ch, unsigned int type, const uint8_t *body, size_t len)
{
	uint8_t pl[1];
	char msg[MIG_MSG_MAX + 1];
	size_t n;
	uint32_t code;

	if (type == CHAN_HS_REFUSE && len >= 4 && len <= 4 + MIG_MSG_MAX) {
		memcpy(&code, body, 4);
		memcpy(msg, body + 4, len - 4);
		msg[len - 4] = 0;
		return hs_fail(ch, code >= 1 && code <= MIG_CODE_LAST ? code : MIG_E_NOT_ALLOWED,
			       "refused: %s", msg);
	}
	if (type != CHAN_HS_MSG2 || len != CHAN_HS_MSG2_LEN)
		return hs_fail(ch, MIG_E_PROTOCOL, "does not speak the secure channel (is it "
			       "listening `insecure`?)");
	if (noise_hs_read(ch->hs, body, len, pl, sizeof(pl), &n))
		return hs_fail(ch, MIG_E_NOT_ALLOWED, "did not prove key %s ('%s'): an impostor?",
			       ch->peer.fp_text, ch->peer.name);
	return split(ch);
}

/*
 * A whole frame in srx?  1 with it taken out, 0 wait, < 0: -EPROTONOSUPPORT
 * (a plaintext record: the peer is `insecure`), -EBADMSG (not a frame), or
 * the connection's error.
 */
static int next_frame(struct mig_chan *ch, unsigned int *type, uint8_t *body, size_t cap,
		      size_t *len)
{
	long n;

	for (;;) {
		if (ch->srx_len >= 2 && ch->srx[1] == MIG_MAGIC >> 8)
			return -EPROTONOSUPPORT;
		if (ch->srx_len >= 2 && ch->srx[1] != CHAN_HS_MSG1 >> 8)
			return -EBADMSG;
		if (ch->srx_len >= CHAN_HS_HDR && get_le16(ch->srx + 2) > cap)
			return -EBADMSG;
		if (ch->srx_len >= CHAN_HS_HDR &&
		    ch->srx_len >= CHAN_HS_HDR + (size_t)get_le16(ch->srx + 2))
			break;
		n = fill_srx(ch);
		if (n <= 0)
			return (int)n;
	}
	*type = get_le16(ch->srx);
	*len = get_le16(ch->srx + 2);
	memcpy(body, ch->srx + CHAN_HS_HDR, *len);
	srx_consume(ch, CHAN_HS_HDR + *len);
	ch->last_rx_us = netif_now_us();
	return 1;
}

/* What the peer's bytes were, when they were no handshake frame. */
static int not_a_frame(struct mig_chan *ch, int rc)
{
	bool dst = ch->st.role == MIG_DST;

	if (rc == -EPIPE)
		return hs_fail(ch, MIG_E_PROTOCOL, "closed the connection during the handshake");
	if (rc == -EBADMSG && dst)
		return refuse(ch, MIG_E_PROTOCOL, "not a handshake: this host takes only the "
			      "secure channel");
	if (rc == -EPROTONOSUPPORT && dst) {
		ch->mode = CHAN_PLAIN;		/* answer in the source's language */
		chan_abort(ch, MIG_E_NOT_ALLOWED, "secure channel only: trust each other's keys, "
			   "or say `insecure` on both ends");
		return hs_fail(ch, MIG_E_NOT_ALLOWED, "source speaks plaintext (`insecure`); this "
			       "listener is secure only");
	}
	if (rc == -EBADMSG || rc == -EPROTONOSUPPORT)
		return hs_fail(ch, MIG_E_PROTOCOL, "does not speak the secure channel (is it "
			       "listening `insecure`?)");
	return hs_fail(ch, MIG_E_TIMEOUT, "connection lost during the handshake (error %d)", rc);
}

int chan_handshake(struct mig_chan *ch)
{
	uint8_t body[4 + MIG_MSG_MAX + CHAN_HS_MSG1_LEN];
	unsigned int type = 0;
	size_t len = 0;
	int rc;

	if (ch->mode == CHAN_SEALED)
		return chan_push(ch, SIZE_MAX) < 0 ? -EPIPE : chan_tx_idle(ch);
	if (ch->hs_err.code)
		return -ECONNREFUSED;
	if (ch->mode != CHAN_HANDSHAKE)
		return -EPROTO;
	rc = chan_push(ch, SIZE_MAX);
	if (rc < 0)
		return not_a_frame(ch, rc);
	if (ch->st.role == MIG_SRC && !chan_tx_idle(ch))
		return 0;
	rc = next_frame(ch, &type, body, sizeof(body), &len);
	if (rc <= 0)
		return rc ? not_a_frame(ch, rc) : 0;
	if (ch->st.role == MIG_SRC)
		return src_answer(ch, type, body, len);
	if (type != CHAN_HS_MSG1)
		return refuse(ch, MIG_E_PROTOCOL, "unexpected handshake frame %#x", type);
	rc = dst_msg1(ch, body, len);
	if (rc < 0)
		return rc;
	return chan_handshake(ch);
}
