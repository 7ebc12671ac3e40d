/* SPDX-License-Identifier: BSD-2-Clause */
/* The host key file and the text forms of public keys (keyfile.h). */
#include <errno.h>
#include <string.h>
#include "hv/lib/bytes.h"
#include <bearssl.h>

#include "hv/crypto/crypto.h"
#include "hv/crypto/keyfile.h"

static const char magic[8] = { 'F', 'E', 'R', 'R', 'Y', 'K', 'E', 'Y' };

#define OFF_VERSION	8
#define OFF_KIND	10
#define OFF_RESERVED	12
#define OFF_PRIV	16
#define OFF_PUB		48
#define OFF_SEED	80
#define OFF_SUM		112
_Static_assert(OFF_SUM + 32 == KEYFILE_SIZE, "key file layout");

static unsigned int le16(const uint8_t *p)
{
	return p[0] | (unsigned int)p[1] << 8;
}

static int all_zero(const uint8_t *p, size_t n)
{
	uint8_t d = 0;

	for (size_t i = 0; i < n; i++)
		d |= p[i];
	return d == 0;
}

/* The header and the checksum: is this a whole, intact version-1 file? */
static const char *check_frame(const uint8_t *f, size_t len)
{
	br_sha256_context c;
	uint8_t sum[32];

	if (len < sizeof(magic) || memcmp(f, magic, sizeof(magic)))
		return "not a ferry key file (no FERRYKEY magic)";
	if (len != KEYFILE_SIZE)
		return len < KEYFILE_SIZE ? "the key file is truncated" :
					    "the key file is longer than a version-1 key file";
	if (le16(f + OFF_VERSION) != KEYFILE_VERSION)
		return "unknown key file version (this ferry reads version 1)";
	if (le16(f + OFF_KIND) != KEYFILE_KIND_X25519)
		return "unknown key kind (this ferry reads X25519 keys)";
	if (!all_zero(f + OFF_RESERVED, 4))
		return "reserved bytes of the key file are not zero";
	br_sha256_init(&c);
	br_sha256_update(&c, f, OFF_SUM);
	br_sha256_out(&c, sum);
	crypto_wipe(&c, sizeof(c));	/* its buffer held the seed */
	if (memcmp(sum, f + OFF_SUM, sizeof(sum)))
		return "the key file's checksum does not match (damaged or edited)";
	return NULL;
}

int keyfile_parse(const void *data, size_t len, struct host_key *out, const char **why)
{
	const uint8_t *f = data;
	uint8_t pub[NOISE_KEY];

	*why = check_frame(f, len);
	if (!*why && all_zero(f + OFF_PRIV, NOISE_KEY))
		*why = "the private key is all zero";
	if (!*why && (noise_pubkey(pub, f + OFF_PRIV) || memcmp(pub, f + OFF_PUB, NOISE_KEY)))
		*why = "the public key is not the private key's";
	if (*why) {
		crypto_wipe(out, sizeof(*out));
		return -EINVAL;
	}
	memcpy(out->priv, f + OFF_PRIV, NOISE_KEY);
	memcpy(out->pub, f + OFF_PUB, NOISE_KEY);
	memcpy(out->seed, f + OFF_SEED, NOISE_KEY);
	return 0;
}

void key_fp_bytes(const uint8_t pub[NOISE_KEY], uint8_t fp[KEY_FP_BYTES])
{
	br_sha256_context c;
	uint8_t h[32];

	br_sha256_init(&c);
	br_sha256_update(&c, pub, NOISE_KEY);
	br_sha256_out(&c, h);
	memcpy(fp, h, KEY_FP_BYTES);
}

static void to_hex(const uint8_t *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = 0;
}

void key_fp_text(const uint8_t fp[KEY_FP_BYTES], char out[KEY_FP_LEN + 1])
{
	memcpy(out, "SHA256:", 7);
	to_hex(fp, KEY_FP_BYTES, out + 7);
}

void key_fingerprint(const uint8_t pub[NOISE_KEY], char out[KEY_FP_LEN + 1])
{
	uint8_t fp[KEY_FP_BYTES];

	key_fp_bytes(pub, fp);
	key_fp_text(fp, out);
}

void key_to_hex(const uint8_t pub[NOISE_KEY], char out[KEY_HEX_LEN + 1])
{
	to_hex(pub, NOISE_KEY, out);
}

int key_from_hex(const char *s, uint8_t pub[NOISE_KEY], const char **why)
{
	uint8_t k[NOISE_KEY];

	if (strlen(s) != KEY_HEX_LEN) {
		*why = "a public key is 64 hex digits (as tools/ferry-keygen prints it)";
		return -EINVAL;
	}
	for (size_t i = 0; i < NOISE_KEY; i++) {
		int hi = hex_digit(s[2 * i]), lo = hex_digit(s[2 * i + 1]);
		if (hi < 0 || lo < 0) {
			*why = "a public key is hex digits only (0-9, a-f)";
			return -EINVAL;
		}
		k[i] = (uint8_t)(hi << 4 | lo);
	}
	if (all_zero(k, NOISE_KEY)) {
		*why = "the all-zero key is no one's key";
		return -EINVAL;
	}
	memcpy(pub, k, NOISE_KEY);
	return 0;
}
