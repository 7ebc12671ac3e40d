/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A ferry host's long-term key: the file tools/ferry-keygen writes and
 * GRUB hands over as the module `ferry.key`, and the text forms of public
 * keys the operator sees and types.  Pure: no I/O, no logging.
 *
 * The key file, version 1 (docs/migration.md, "Keys"), 144 bytes:
 *   0   8  magic "FERRYKEY"
 *   8   2  version, le16 = 1
 *   10  2  kind, le16 = 1 (X25519 static key pair)
 *   12  4  reserved, zero
 *   16  32 private key (X25519 scalar, RFC 7748 byte order)
 *   48  32 public key (must be the private key's)
 *   80  32 seed: random bytes the DRBG mixes with the CPU's own
 *   112 32 SHA-256 of bytes 0..111
 */
#ifndef FERRY_CRYPTO_KEYFILE_H
#define FERRY_CRYPTO_KEYFILE_H

#include <stddef.h>
#include <stdint.h>
#include "hv/crypto/noise.h"

#define KEYFILE_SIZE		144
#define KEYFILE_VERSION		1
#define KEYFILE_KIND_X25519	1
#define KEY_HEX_LEN		(2 * NOISE_KEY)		/* a public key as text */
#define KEY_FP_BYTES		8			/* the short fingerprint */
#define KEY_FP_LEN		(7 + 2 * KEY_FP_BYTES)	/* "SHA256:" + 16 hex */

struct host_key {
	uint8_t priv[NOISE_KEY];	/* secret: wipe with crypto_wipe */
	uint8_t pub[NOISE_KEY];
	uint8_t seed[NOISE_KEY];	/* secret */
};

/*
 * Check and read a key file of len bytes.  0, or -EINVAL with *why set to
 * a sentence for the log (never quoting key bytes); out is then wiped.
 */
int keyfile_parse(const void *data, size_t len, struct host_key *out, const char **why);

/* The first KEY_FP_BYTES of SHA-256(pub). */
void key_fp_bytes(const uint8_t pub[NOISE_KEY], uint8_t fp[KEY_FP_BYTES]);
/* "SHA256:" and the fingerprint in hex, NUL-terminated (KEY_FP_LEN + 1). */
void key_fingerprint(const uint8_t pub[NOISE_KEY], char out[KEY_FP_LEN + 1]);
/* "SHA256:" and fp in hex (a fingerprint a peer sent). */
void key_fp_text(const uint8_t fp[KEY_FP_BYTES], char out[KEY_FP_LEN + 1]);
/* A public key as 64 lower-case hex digits, NUL-terminated. */
void key_to_hex(const uint8_t pub[NOISE_KEY], char out[KEY_HEX_LEN + 1]);
/*
 * A public key from 64 hex digits (either case), nothing else.  0, or
 * -EINVAL with *why set; an all-zero key (no peer can hold it) is refused.
 */
int key_from_hex(const char *s, uint8_t pub[NOISE_KEY], const char **why);

#endif
