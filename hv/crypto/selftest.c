/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Known answers for the BearSSL primitives linked into ferry: a wrong
 * build (flags, a missing member, a miscompiled file) shows at boot rather
 * than as a failed handshake later.  X25519 is RFC 7748 section 6.1 (Alice's
 * public key); SHA-256 is FIPS 180-2's "abc"; the AEAD answer was computed
 * with Debian's python3-cryptography.
 */
#include <errno.h>
#include <string.h>
#include <bearssl.h>

#include "hv/crypto/crypto.h"
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
	br_poly1305_ctmul_run(key, iv, buf, 22, "aad", 3, tag, br_chacha20_ct_run, 1);
	if (memcmp(buf, aead_ct, 22) || memcmp(tag, aead_ct + 22, 16))
		return -EIO;
	return 0;
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
	pr_info("crypto: BearSSL X25519, SHA-256, ChaCha20-Poly1305 self-tests pass");
	return 0;
}
