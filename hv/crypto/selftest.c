/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Known answers for the BearSSL primitives linked into ferry: a wrong
 * build (flags, a missing member, a miscompiled file) shows at boot rather
 * than as a failed handshake later.  X25519 is RFC 7748 section 6.1 (Alice's
 * public key); SHA-256 is FIPS 180-2's "abc"; the AEAD answer was computed
 * with Debian's python3-cryptography; the Noise handshake is the published
 * Noise_KK_25519_ChaChaPoly_SHA256 vector (cacophony's; the whole vector is
 * in tests/tools/noise_kk_cacophony.json), run here with both roles.
 */
#include <errno.h>
#include <string.h>
#include <bearssl.h>

#include "hv/crypto/crypto.h"
#include "hv/crypto/noise.h"
#include "hv/lib/log.h"

static const unsigned char x_priv[32] = {
	0x77, 0x07, 0x6d, 0x0a, 0x73, 0x18, 0xa5, 0x7d, 0x3c, 0x16, 0xc1, 0x72,
	0x51, 0xb2, 0x66, 0x45, 0xdf, 0x4c, 0x2f, 0x87, 0xeb, 0xc0, 0x99, 0x2a,
	0xb1, 0x77, 0xfb, 0xa5, 0x1d, 0xb9, 0x2c, 0x2a,
};
static const unsigned char x_pub[32] = {
	0x85, 0x20, 0xf0, 0x09, 0x89, 0x30, 0xa7, 0x54, 0x74, 0x8b, 0x7d, 0xdc,
	0xb4, 0x3e, 0xf7, 0x5a, 0x0d, 0xbf, 0x3a, 0x0d, 0x26, 0x38, 0x1a, 0xf4,
	0xeb, 0xa4, 0xa9, 0x8e, 0xaa, 0x9b, 0x4e, 0x6a,
};
static const unsigned char sha_abc[32] = {
	0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40, 0xde,
	0x5d, 0xae, 0x22, 0x23, 0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c,
	0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad,
};
/* key 00..1f, nonce 0^4 || le64(7), aad "aad", "ferry crypto self-test" */
static const unsigned char aead_ct[22 + 16] = {
	0x97, 0x6a, 0xf6, 0x3a, 0x5b, 0xc8, 0x19, 0xfb, 0x1b, 0x46, 0x3a, 0x5c,
	0xdc, 0xfb, 0x75, 0xf6, 0x54, 0xb0, 0xd6, 0x24, 0x82, 0x99, 0x1f, 0xec,
	0x1d, 0xcb, 0xcd, 0xf9, 0xdc, 0x53, 0x11, 0x8c, 0x3d, 0x23, 0x16, 0x62,
	0x9a, 0x33,
};

/* the cacophony vector's keys (test keys, never a host's) and its hash */
static const uint8_t kk_init_s[32] = {
	0xe6, 0x1e, 0xf9, 0x91, 0x9c, 0xde, 0x45, 0xdd, 0x5f, 0x82, 0x16, 0x64,
	0x04, 0xbd, 0x08, 0xe3, 0x8b, 0xce, 0xb5, 0xdf, 0xdf, 0xde, 0xd0, 0xa3,
	0x4c, 0x8d, 0xf7, 0xed, 0x54, 0x22, 0x14, 0xd1,
};
static const uint8_t kk_init_e[32] = {
	0x89, 0x3e, 0x28, 0xb9, 0xdc, 0x6c, 0xa8, 0xd6, 0x11, 0xab, 0x66, 0x47,
	0x54, 0xb8, 0xce, 0xb7, 0xba, 0xc5, 0x11, 0x73, 0x49, 0xa4, 0x43, 0x9a,
	0x6b, 0x05, 0x69, 0xda, 0x97, 0x7c, 0x46, 0x4a,
};
static const uint8_t kk_resp_s[32] = {
	0x4a, 0x3a, 0xcb, 0xfd, 0xb1, 0x63, 0xde, 0xc6, 0x51, 0xdf, 0xa3, 0x19,
	0x4d, 0xec, 0xe6, 0x76, 0xd4, 0x37, 0x02, 0x9c, 0x62, 0xa4, 0x08, 0xb4,
	0xc5, 0xea, 0x91, 0x14, 0x24, 0x6e, 0x48, 0x93,
};
static const uint8_t kk_resp_e[32] = {
	0xbb, 0xdb, 0x4c, 0xdb, 0xd3, 0x09, 0xf1, 0xa1, 0xf2, 0xe1, 0x45, 0x69,
	0x67, 0xfe, 0x28, 0x8c, 0xad, 0xd6, 0xf7, 0x12, 0xd6, 0x5d, 0xc7, 0xb7,
	0x79, 0x3d, 0x5e, 0x63, 0xda, 0x6b, 0x37, 0x5b,
};
static const uint8_t kk_hash[32] = {
	0x24, 0xc6, 0xb5, 0x1e, 0xcb, 0x76, 0x27, 0x71, 0x40, 0xca, 0x01, 0x8b,
	0x59, 0x85, 0xbc, 0x9f, 0x03, 0xde, 0x32, 0x1d, 0xae, 0x2d, 0x34, 0xdc,
	0xae, 0x43, 0x3d, 0xaf, 0xef, 0x01, 0x31, 0xd9,
};

static int test_x25519(void)
{
	const br_ec_impl *ec = &br_ec_c25519_m31;
	unsigned char out[32];
	size_t n = ec->mulgen(out, x_priv, sizeof(x_priv), BR_EC_curve25519);

	return n == 32 && memcmp(out, x_pub, 32) == 0 ? 0 : -EIO;
}

static int test_sha256(void)
{
	br_sha256_context c;
	unsigned char out[32];

	br_sha256_init(&c);
	br_sha256_update(&c, "abc", 3);
	br_sha256_out(&c, out);
	return memcmp(out, sha_abc, 32) == 0 ? 0 : -EIO;
}

static int test_aead(void)
{
	unsigned char key[32], iv[12] = { 0 }, buf[22], tag[16];

	for (int i = 0; i < 32; i++)
		key[i] = (unsigned char)i;
	iv[4] = 7;
	memcpy(buf, "ferry crypto self-test", 22);
	noise_aead(key, iv, buf, 22, "aad", 3, tag, 1);
	if (memcmp(buf, aead_ct, 22) || memcmp(tag, aead_ct + 22, 16))
		return -EIO;
	return 0;
}

struct kk_pair {
	struct noise_hs ini, res;
	struct noise_cipher itx, irx, rtx, rrx;
	uint8_t msg[96], pt[32], h[NOISE_KEY];
};

static int kk_handshake(struct kk_pair *p)
{
	uint8_t ipub[NOISE_KEY], rpub[NOISE_KEY];
	size_t n, pn;

	if (noise_pubkey(ipub, kk_init_s) || noise_pubkey(rpub, kk_resp_s) ||
	    noise_hs_init(&p->ini, NOISE_INITIATOR, kk_init_s, rpub, kk_init_e, "John Galt", 9) ||
	    noise_hs_init(&p->res, NOISE_RESPONDER, kk_resp_s, ipub, kk_resp_e, "John Galt", 9) ||
	    noise_hs_write(&p->ini, "Ludwig von Mises", 16, p->msg, sizeof(p->msg), &n) ||
	    noise_hs_read(&p->res, p->msg, n, p->pt, sizeof(p->pt), &pn) || pn != 16 ||
	    noise_hs_write(&p->res, "Murray Rothbard", 15, p->msg, sizeof(p->msg), &n) ||
	    noise_hs_read(&p->ini, p->msg, n, p->pt, sizeof(p->pt), &pn) || pn != 15 ||
	    memcmp(p->pt, "Murray Rothbard", 15) || noise_hs_hash(&p->ini, p->h) ||
	    memcmp(p->h, kk_hash, NOISE_KEY) || noise_hs_hash(&p->res, p->h) ||
	    memcmp(p->h, kk_hash, NOISE_KEY))
		return -EIO;
	if (noise_hs_split(&p->ini, &p->itx, &p->irx) || noise_hs_split(&p->res, &p->rtx, &p->rrx))
		return -EIO;
	return 0;
}

/* The handshake's hash against the vector's, then one record each way. */
static int test_noise_kk(void)
{
	struct kk_pair p;
	size_t n, pn, used;
	int err = kk_handshake(&p);

	if (!err && (noise_rec_seal(&p.itx, "ferry", 5, p.msg, sizeof(p.msg), &n) ||
		     noise_rec_open(&p.rrx, p.msg, n, p.pt, sizeof(p.pt), &pn, &used) ||
		     pn != 5 || memcmp(p.pt, "ferry", 5) ||
		     noise_rec_seal(&p.rtx, "yrref", 5, p.msg, sizeof(p.msg), &n) ||
		     noise_rec_open(&p.irx, p.msg, n, p.pt, sizeof(p.pt), &pn, &used) ||
		     pn != 5 || memcmp(p.pt, "yrref", 5)))
		err = -EIO;
	crypto_wipe(&p, sizeof(p));
	return err;
}

int crypto_selftest(void)
{
	if (test_x25519()) {
		pr_err("crypto: X25519 self-test failed");
		return -EIO;
	}
	if (test_sha256()) {
		pr_err("crypto: SHA-256 self-test failed");
		return -EIO;
	}
	if (test_aead()) {
		pr_err("crypto: ChaCha20-Poly1305 self-test failed");
		return -EIO;
	}
	if (test_noise_kk()) {
		pr_err("crypto: Noise KK self-test failed");
		return -EIO;
	}
	pr_info("crypto: X25519, SHA-256, ChaCha20-Poly1305 and Noise KK self-tests pass");
	return 0;
}
