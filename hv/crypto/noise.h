/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Noise_KK_25519_ChaChaPoly_SHA256 (the Noise Protocol Framework, revision
 * 34) as a pure state machine over byte buffers, and a record layer on the
 * two cipher states it ends with.  Both peers know each other's static
 * public key beforehand (pinned keys), so a peer with any other key fails
 * the handshake itself.  Primitives come from BearSSL; see
 * docs/migration.md ("The secure channel").
 *
 * Handshake (-> s, <- s pre-messages):
 *   initiator: noise_hs_write (msg 1: e, es, ss), noise_hs_read (msg 2)
 *   responder: noise_hs_read (msg 1), noise_hs_write (msg 2: e, ee, se)
 *   both:      noise_hs_split -> tx and rx cipher states; the handshake
 *              state is wiped.
 * A failure of any step is final: the state is wiped and every later call
 * fails.  The ephemeral private key is the caller's (from the DRBG).
 */
#ifndef FERRY_CRYPTO_NOISE_H
#define FERRY_CRYPTO_NOISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NOISE_KEY	32	/* X25519 keys, ChaCha20 keys, SHA-256 hashes */
#define NOISE_TAG	16	/* Poly1305 */
#define NOISE_MSG_MAX	65535	/* any Noise message, spec section 3 */
/* A handshake message: the ephemeral key, then the sealed payload. */
#define NOISE_HS_OVERHEAD	(NOISE_KEY + NOISE_TAG)
/* A record: le16 length of what follows, then ciphertext and tag. */
#define NOISE_REC_HDR		2
#define NOISE_REC_OVERHEAD	(NOISE_REC_HDR + NOISE_TAG)
#define NOISE_REC_MAX_PAYLOAD	(NOISE_MSG_MAX - NOISE_TAG)

enum noise_role { NOISE_INITIATOR, NOISE_RESPONDER };

/* One direction of the transport: key and counter nonce (spec 5.1). */
struct noise_cipher {
	uint8_t k[NOISE_KEY];
	uint64_t n;
	int dead;		/* failed or wiped: refuses everything */
};

struct noise_hs {
	enum noise_role role;
	int step;		/* messages done; -1 after a failure */
	uint8_t ck[NOISE_KEY], h[NOISE_KEY];
	struct noise_cipher c;	/* the handshake's CipherState */
	uint8_t s[NOISE_KEY], e[NOISE_KEY];	/* own private keys */
	uint8_t rs[NOISE_KEY], re[NOISE_KEY];	/* the peer's public keys */
	uint8_t s_pub[NOISE_KEY];
};

/* Public key of a private one; 0, or -EINVAL. */
int noise_pubkey(uint8_t pub[NOISE_KEY], const uint8_t priv[NOISE_KEY]);
/* Whether pub is a canonical X25519 public key (below 2^255 - 19) of a
 * point that is not of low order: what a peer's pinned key must be. */
bool noise_pubkey_usable(const uint8_t pub[NOISE_KEY]);

/*
 * ferry's prologue: "ferry-migrate" and the migration protocol version
 * (le32), so that peers speaking different versions fail the first message.
 */
#define NOISE_FERRY_PROLOGUE	17
void noise_ferry_prologue(uint8_t out[NOISE_FERRY_PROLOGUE], uint32_t proto_version);

/*
 * Start a handshake.  s is our static private key, rs the peer's pinned
 * public key, e our fresh ephemeral private key (copied; the caller wipes
 * its copy), and the prologue both sides must agree on.
 */
int noise_hs_init(struct noise_hs *hs, enum noise_role role, const uint8_t s[NOISE_KEY],
		  const uint8_t rs[NOISE_KEY], const uint8_t e[NOISE_KEY], const void *prologue,
		  size_t prologue_len);
/* Our next message, carrying payload (may be empty), into out[cap]. */
int noise_hs_write(struct noise_hs *hs, const void *payload, size_t len, uint8_t *out,
		   size_t cap, size_t *out_len);
/* The peer's next message; its payload into payload[cap]. */
int noise_hs_read(struct noise_hs *hs, const uint8_t *msg, size_t len, void *payload,
		  size_t cap, size_t *payload_len);
/* After both messages: our sending and receiving cipher states. */
int noise_hs_split(struct noise_hs *hs, struct noise_cipher *tx, struct noise_cipher *rx);
/* The handshake hash (channel binding), valid after message 2 and before split. */
int noise_hs_hash(const struct noise_hs *hs, uint8_t h[NOISE_KEY]);
void noise_hs_wipe(struct noise_hs *hs);

/*
 * Noise's EncryptWithAd/DecryptWithAd (section 5.1) on a cipher state:
 * buf[len] in place, the tag apart; nonces count up from 0.  A failed
 * decryption wipes and kills c (-EBADMSG); 2^64-1 is never used (-EOVERFLOW).
 */
/* ChaCha20-Poly1305 (RFC 8439) in place, as every record uses it: 32-byte
 * key, 12-byte nonce, 16-byte tag (written when encrypting, computed for
 * comparison when decrypting). */
void noise_aead(const void *key, const void *iv, void *data, size_t len, const void *aad,
		size_t aad_len, void *tag, int encrypt);

int noise_encrypt(struct noise_cipher *c, const void *ad, size_t ad_len, uint8_t *buf,
		  size_t len, uint8_t tag[NOISE_TAG]);
int noise_decrypt(struct noise_cipher *c, const void *ad, size_t ad_len, uint8_t *buf,
		  size_t len, const uint8_t tag[NOISE_TAG]);

/*
 * Records.  seal writes len + NOISE_REC_OVERHEAD bytes.  open takes the
 * bytes received so far: -EAGAIN while a whole record is not there yet,
 * else 0 with *used bytes consumed and the plaintext in pt[cap].  The length
 * is authenticated (it is the AEAD's associated data) and the nonce is the
 * record count, so an altered, truncated, replayed, reordered or dropped
 * record fails with -EBADMSG, after which the cipher state is dead.
 */
int noise_rec_seal(struct noise_cipher *c, const void *pt, size_t len, uint8_t *out,
		   size_t cap, size_t *out_len);
int noise_rec_open(struct noise_cipher *c, const uint8_t *in, size_t avail, void *pt,
		   size_t cap, size_t *pt_len, size_t *used);
void noise_cipher_wipe(struct noise_cipher *c);

#endif
