// SPDX-License-Identifier: BSD-2-Clause
/*
 * The host key and the trust table: hv/crypto/keyfile.c reads what
 * tools/ferry-keygen writes and refuses every damaged, truncated, padded or
 * edited key file; public keys as text; hv/migrate/trust.c's rules (one
 * name, key and address per peer; bad input changes nothing); and
 * hv/crypto/random.c refusing to give bytes without a hardware source.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>
#include <bearssl.h>

#include "hv/crypto/keyfile.h"
#include "hv/crypto/random.h"
#include "hv/migrate/trust.h"

static uint8_t file[KEYFILE_SIZE + 8];
static size_t file_len;

static void load_keygen_file(void)
{
	FILE *f = fopen(KEYGEN_DIR "/ferry.key", "rb");

	assert_non_null(f);
	file_len = fread(file, 1, sizeof(file), f);
	fclose(f);
	assert_int_equal(file_len, KEYFILE_SIZE);
}

/* Put a right checksum on an edited file. */
static void reseal(uint8_t *f)
{
	br_sha256_context c;

	br_sha256_init(&c);
	br_sha256_update(&c, f, 112);
	br_sha256_out(&c, f + 112);
}

static void refused(const uint8_t *f, size_t len, const char *words)
{
	struct host_key k;
	const char *why = NULL;

	memset(&k, 0x55, sizeof(k));
	assert_int_equal(keyfile_parse(f, len, &k, &why), -EINVAL);
	assert_non_null(why);
	assert_non_null(strstr(why, words));
	for (size_t i = 0; i < sizeof(k); i++)		/* nothing half-read is left */
		assert_int_equal(((uint8_t *)&k)[i], 0);
}

static void test_keygen_file_reads(void **st)
{
	struct host_key k;
	const char *why = NULL;
	uint8_t pub[NOISE_KEY];
	char hex[KEY_HEX_LEN + 1], line[KEY_HEX_LEN + 2] = { 0 };
	FILE *f;

	(void)st;
	load_keygen_file();
	assert_int_equal(keyfile_parse(file, file_len, &k, &why), 0);
	assert_null(why);
	assert_int_equal(noise_pubkey(pub, k.priv), 0);
	assert_memory_equal(pub, k.pub, NOISE_KEY);
	assert_memory_equal(k.seed, file + 80, NOISE_KEY);
	/* ferry.pub holds the same key as text */
	f = fopen(KEYGEN_DIR "/ferry.pub", "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	fclose(f);
	key_to_hex(k.pub, hex);
	assert_memory_equal(line, hex, KEY_HEX_LEN);
}

static void test_every_truncation_and_padding(void **st)
{
	(void)st;
	load_keygen_file();
	refused(file, 0, "magic");
	refused(file, 7, "magic");
	for (size_t n = 8; n < KEYFILE_SIZE; n++)
		refused(file, n, "truncated");
	refused(file, KEYFILE_SIZE + 1, "longer");
	refused(file, KEYFILE_SIZE + 8, "longer");
}

static void test_every_flipped_bit(void **st)
{
	(void)st;
	load_keygen_file();
	for (size_t i = 0; i < KEYFILE_SIZE; i++) {
		for (int b = 0; b < 8; b++) {
			struct host_key k;
			const char *why = NULL;

			file[i] ^= (uint8_t)(1u << b);
			assert_int_equal(keyfile_parse(file, KEYFILE_SIZE, &k, &why), -EINVAL);
			file[i] ^= (uint8_t)(1u << b);
		}
	}
}

/* Edits with a recomputed checksum: each field's own rule. */
static void test_fields_checked(void **st)
{
	uint8_t f[KEYFILE_SIZE];

	(void)st;
	load_keygen_file();
	memcpy(f, file, sizeof(f));
	f[8] = 2;
	reseal(f);
	refused(f, sizeof(f), "version");
	memcpy(f, file, sizeof(f));
	f[10] = 2;
	reseal(f);
	refused(f, sizeof(f), "kind");
	memcpy(f, file, sizeof(f));
	f[14] = 1;
	reseal(f);
	refused(f, sizeof(f), "reserved");
	memcpy(f, file, sizeof(f));
	f[50] ^= 1;			/* a public key that is not the private key's */
	reseal(f);
	refused(f, sizeof(f), "not the private key's");
	memcpy(f, file, sizeof(f));
	memset(f + 16, 0, 32);
	reseal(f);
	refused(f, sizeof(f), "all zero");
	memcpy(f, file, sizeof(f));
	f[112] ^= 0x80;
	refused(f, sizeof(f), "checksum");
	memcpy(f, "FERRYKEZ", 8);
	refused(f, sizeof(f), "magic");
}

static void test_public_key_text(void **st)
{
	uint8_t pub[NOISE_KEY], back[NOISE_KEY];
	char hex[KEY_HEX_LEN + 1], fp[KEY_FP_LEN + 1], bad[KEY_HEX_LEN + 2];
	const char *why;

	(void)st;
	for (int i = 0; i < NOISE_KEY; i++)
		pub[i] = (uint8_t)(i * 37 + 11);
	key_to_hex(pub, hex);
	assert_int_equal(strlen(hex), KEY_HEX_LEN);
	assert_memory_equal(hex, "0b30557a", 8);
	assert_int_equal(key_from_hex(hex, back, &why), 0);
	assert_memory_equal(back, pub, NOISE_KEY);
	for (int i = 0; hex[i]; i++)		/* upper case too */
		bad[i] = (char)(hex[i] >= 'a' ? hex[i] - 32 : hex[i]);
	bad[KEY_HEX_LEN] = 0;
	assert_int_equal(key_from_hex(bad, back, &why), 0);
	assert_memory_equal(back, pub, NOISE_KEY);
	memset(back, 0x77, sizeof(back));
	strcpy(bad, hex);
	bad[KEY_HEX_LEN - 1] = 0;		/* 63 digits */
	assert_int_equal(key_from_hex(bad, back, &why), -EINVAL);
	strcpy(bad, hex);
	strcat(bad, "0");			/* 65 */
	assert_int_equal(key_from_hex(bad, back, &why), -EINVAL);
	strcpy(bad, hex);
	bad[10] = 'g';
	assert_int_equal(key_from_hex(bad, back, &why), -EINVAL);
	assert_non_null(strstr(why, "hex"));
	memset(bad, '0', KEY_HEX_LEN);
	bad[KEY_HEX_LEN] = 0;
	assert_int_equal(key_from_hex(bad, back, &why), -EINVAL);
	assert_int_equal(back[0], 0x77);	/* refusals write nothing */
	key_fingerprint(pub, fp);
	assert_int_equal(strlen(fp), KEY_FP_LEN);
	assert_memory_equal(fp, "SHA256:", 7);
}

/* ---- the trust table ---- */

static void key_n(uint8_t pub[NOISE_KEY], int n)
{
	memset(pub, n, NOISE_KEY);
}

/* Keys no peer can prove (low order: any DH with them is all zeros) or
 * that spell another key (not canonical) are refused at `migrate trust`,
 * with the reason, not later as a handshake that fails for no clear one. */
static void test_trust_refuses_unusable_keys(void **st)
{
	static struct mig_keyring kr;
	static const uint8_t order8[NOISE_KEY] = {
		0xe0, 0xeb, 0x7a, 0x7c, 0x3b, 0x41, 0xb8, 0xae, 0x16, 0x56, 0xe3, 0xfa, 0xf1, 0x9f,
		0xc4, 0x6a, 0xda, 0x09, 0x8d, 0xeb, 0x9c, 0x32, 0xb1, 0xfd, 0x86, 0x62, 0x05, 0x16,
		0x5f, 0x49, 0xb8, 0x00,
	};
	uint8_t k[NOISE_KEY];
	struct host_key hk;
	char err[160];

	(void)st;
	memset(&kr, 0, sizeof(kr));
	memset(k, 0, sizeof(k));
	k[0] = 1;						/* u = 1 */
	assert_int_equal(mig_trust_add(&kr, "one", k, 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not a usable X25519 public key"));
	assert_int_equal(mig_trust_add(&kr, "o8", order8, 0, err, sizeof(err)), -EINVAL);
	memset(k, 0xff, sizeof(k));
	k[0] = 0xed;
	k[31] = 0x7f;						/* u = p: 0 again */
	assert_int_equal(mig_trust_add(&kr, "p", k, 0, err, sizeof(err)), -EINVAL);
	k[0] = 0xec;						/* p - 1: canonical, but -1 */
	assert_false(noise_pubkey_usable(k));			/* -1: of low order too */
	assert_int_equal(mig_trust_add(&kr, "pm1", k, 0, err, sizeof(err)), -EINVAL);
	/* a real key, and the same key with bit 255 set (another fingerprint) */
	for (int i = 0; i < NOISE_KEY; i++)
		hk.priv[i] = (uint8_t)(i * 7 + 1);
	assert_int_equal(noise_pubkey(hk.pub, hk.priv), 0);
	assert_true(noise_pubkey_usable(hk.pub));
	memcpy(k, hk.pub, sizeof(k));
	k[31] |= 0x80;
	assert_int_equal(mig_trust_add(&kr, "hi", k, 0, err, sizeof(err)), -EINVAL);
	assert_int_equal(mig_trust_add(&kr, "real", hk.pub, 0, err, sizeof(err)), 0);
	assert_int_equal(kr.nr_peers, 1);
}

static void test_trust_rules(void **st)
{
	static struct mig_keyring kr;
	uint8_t k1[NOISE_KEY], k2[NOISE_KEY], k3[NOISE_KEY], fp[KEY_FP_BYTES];
	char err[160];
	const struct mig_peer *p;

	(void)st;
	memset(&kr, 0, sizeof(kr));
	key_n(k1, 1);
	key_n(k2, 2);
	key_n(k3, 3);
	assert_int_equal(mig_trust_add(&kr, "hosta", k1, 0x0a000001, err, sizeof(err)), 0);
	assert_int_equal(mig_trust_add(&kr, "hostb", k2, 0, err, sizeof(err)), 0);
	assert_int_equal(kr.nr_peers, 2);
	/* the same line again (ferry.rc run twice): fine, nothing changes */
	assert_int_equal(mig_trust_add(&kr, "hosta", k1, 0x0a000001, err, sizeof(err)), 0);
	assert_int_equal(kr.nr_peers, 2);
	/* another key, or another address, under a trusted name: refused */
	assert_int_equal(mig_trust_add(&kr, "hosta", k3, 0x0a000001, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "untrust hosta"));
	assert_int_equal(mig_trust_add(&kr, "hosta", k1, 0x0a000009, err, sizeof(err)), -EEXIST);
	/* a trusted key or address under a new name: refused */
	assert_int_equal(mig_trust_add(&kr, "hostc", k2, 0, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "that key"));
	assert_int_equal(mig_trust_add(&kr, "hostc", k3, 0x0a000001, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "that address"));
	/* names: the shell's rule, and never an address */
	assert_int_equal(mig_trust_add(&kr, "10.0.0.3", k3, 0, err, sizeof(err)), -EINVAL);
	assert_int_equal(mig_trust_add(&kr, "-x", k3, 0, err, sizeof(err)), -EINVAL);
	assert_int_equal(mig_trust_add(&kr, "", k3, 0, err, sizeof(err)), -EINVAL);
	assert_int_equal(mig_trust_add(&kr, "a b", k3, 0, err, sizeof(err)), -EINVAL);
	assert_int_equal(mig_trust_add(&kr, "abcdefghijklmnopqrstuvwxyz012345", k3, 0, err,
				       sizeof(err)), -EINVAL);
	assert_int_equal(kr.nr_peers, 2);
	/* lookups */
	p = mig_trust_by_name(&kr, "hostb");
	assert_non_null(p);
	assert_memory_equal(p->pub, k2, NOISE_KEY);
	assert_ptr_equal(mig_trust_by_ip(&kr, 0x0a000001), mig_trust_by_name(&kr, "hosta"));
	assert_null(mig_trust_by_ip(&kr, 0x0a000002));
	assert_null(mig_trust_by_ip(&kr, 0));		/* "any address" is no address */
	key_fp_bytes(k2, fp);
	assert_ptr_equal(mig_trust_by_fp(&kr, fp), p);
	key_fp_bytes(k3, fp);
	assert_null(mig_trust_by_fp(&kr, fp));
	/* untrust */
	assert_int_equal(mig_trust_remove(&kr, "nosuch"), -ENOENT);
	assert_int_equal(mig_trust_remove(&kr, "hosta"), 0);
	assert_int_equal(kr.nr_peers, 1);
	assert_null(mig_trust_by_name(&kr, "hosta"));
	assert_string_equal(kr.peer[0].name, "hostb");
	assert_int_equal(mig_trust_add(&kr, "hostc", k3, 0x0a000001, err, sizeof(err)), 0);
}

static void test_trust_table_full(void **st)
{
	static struct mig_keyring kr;
	uint8_t k[NOISE_KEY];
	char err[160], name[16];

	(void)st;
	memset(&kr, 0, sizeof(kr));
	for (int i = 0; i < MIG_TRUST_MAX; i++) {
		key_n(k, i + 1);
		snprintf(name, sizeof(name), "h%d", i);
		assert_int_equal(mig_trust_add(&kr, name, k, 0, err, sizeof(err)), 0);
	}
	key_n(k, 100);
	assert_int_equal(mig_trust_add(&kr, "onemore", k, 0, err, sizeof(err)), -ENOSPC);
	assert_int_equal(kr.nr_peers, MIG_TRUST_MAX);
	assert_null(mig_trust_by_name(&kr, "onemore"));
}

/* Without a key or a random source there is no secure channel, and why. */
static void test_secure_ready(void **st)
{
	static struct mig_keyring kr;
	struct host_key k;
	const char *why;
	char msg[160];

	(void)st;
	memset(&kr, 0, sizeof(kr));
	mig_keyring_no_key(&kr, "the ferry.key module was refused at boot: truncated");
	assert_int_equal(mig_secure_ready(&kr, msg, sizeof(msg)), -ENOENT);
	assert_non_null(strstr(msg, "truncated"));
	load_keygen_file();
	assert_int_equal(keyfile_parse(file, file_len, &k, &why), 0);
	mig_keyring_set_key(&kr, &k);
	assert_true(kr.have_key);
	assert_int_equal(rng_setup(NULL, NULL, NULL, NULL, 0), -ENODEV);
	assert_int_equal(mig_secure_ready(&kr, msg, sizeof(msg)), -ENODEV);
	assert_non_null(strstr(msg, "RDRAND"));
}

/* ---- the DRBG ---- */

static unsigned int fake_calls, fake_fail_after = ~0u;

static bool fake_hw(uint64_t *out)
{
	if (fake_calls >= fake_fail_after)
		return false;
	*out = 0x9e3779b97f4a7c15ull * ++fake_calls;
	return true;
}

static void test_rng(void **st)
{
	uint8_t a[32], b[32], zero[32] = { 0 };

	(void)st;
	assert_int_equal(rng_setup(NULL, NULL, NULL, NULL, 0), -ENODEV);
	assert_null(rng_source());
	memset(a, 0, sizeof(a));
	assert_int_equal(rng_bytes(a, sizeof(a)), -ENODEV);	/* no weak bytes */
	assert_memory_equal(a, zero, sizeof(a));
	fake_calls = 0;
	fake_fail_after = ~0u;
	assert_int_equal(rng_setup(fake_hw, "FAKE", NULL, "seed", 4), 0);
	assert_string_equal(rng_source(), "FAKE");
	assert_int_equal(rng_bytes(a, sizeof(a)), 0);
	assert_int_equal(rng_bytes(b, sizeof(b)), 0);
	assert_memory_not_equal(a, b, sizeof(a));
	assert_memory_not_equal(a, zero, sizeof(a));
	assert_true(fake_calls >= 16);		/* reseeded from the source per draw */
	/* a seeded DRBG whose source runs dry (a guest spinning on RDSEED)
	 * goes on from its seed: a guest cannot stop migrations so */
	fake_fail_after = fake_calls;
	assert_int_equal(rng_bytes(b, sizeof(b)), 0);
	assert_memory_not_equal(a, b, sizeof(a));
	/* dry at the first seeding: refused, not weak, and tried again at
	 * each use until it gives */
	fake_calls = 0;
	fake_fail_after = 3;
	assert_int_equal(rng_setup(fake_hw, "FAKE", NULL, "seed", 4), -EIO);
	assert_null(rng_source());
	assert_non_null(strstr(rng_why(), "gave no (or a stuck) value"));
	memset(a, 0, sizeof(a));
	assert_int_equal(rng_bytes(a, sizeof(a)), -EIO);
	assert_memory_equal(a, zero, sizeof(a));
	fake_fail_after = ~0u;
	assert_int_equal(rng_bytes(a, sizeof(a)), 0);
	assert_string_equal(rng_source(), "FAKE");
	assert_null(rng_why());
	assert_memory_not_equal(a, zero, sizeof(a));
}

/* RDSEED run dry: the fallback (RDRAND) seeds and reseeds. */
static bool dry_hw(uint64_t *out)
{
	(void)out;
	return false;
}

static void test_rng_fallback(void **st)
{
	uint8_t a[32];

	(void)st;
	fake_calls = 0;
	fake_fail_after = ~0u;
	assert_int_equal(rng_setup(dry_hw, "DRY", fake_hw, "seed", 4), 0);
	assert_int_equal(fake_calls, 8);
	assert_int_equal(rng_bytes(a, sizeof(a)), 0);
	assert_int_equal(fake_calls, 16);
	assert_int_equal(rng_setup(NULL, NULL, fake_hw, NULL, 0), -ENODEV);	/* no source */
	assert_non_null(strstr(rng_why(), "no RDSEED or RDRAND"));
}

/* A source that runs dry for a while (RDSEED under load) is waited for;
 * one stuck at one value (AMD's RDRAND all ones, carry set) is refused. */
static unsigned int flaky_n, flaky_dry;
static bool flaky_hw(uint64_t *out)
{
	if (flaky_dry) {
		flaky_dry--;
		return false;
	}
	*out = 0x9e3779b97f4a7c15ull * ++flaky_n;
	flaky_dry = 40;			/* dry for 40 tries before each word */
	return true;
}

static bool stuck_hw(uint64_t *out)
{
	*out = ~0ull;
	return true;
}

static void test_rng_dry_or_stuck(void **st)
{
	uint8_t a[32];

	(void)st;
	flaky_n = flaky_dry = 0;
	assert_int_equal(rng_setup(flaky_hw, "FLAKY", NULL, "seed", 4), 0);
	assert_int_equal(rng_bytes(a, sizeof(a)), 0);
	assert_int_equal(rng_setup(stuck_hw, "STUCK", NULL, "seed", 4), -EIO);
	assert_null(rng_source());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rng_dry_or_stuck),
		cmocka_unit_test(test_rng_fallback),
		cmocka_unit_test(test_keygen_file_reads),
		cmocka_unit_test(test_every_truncation_and_padding),
		cmocka_unit_test(test_every_flipped_bit),
		cmocka_unit_test(test_fields_checked),
		cmocka_unit_test(test_public_key_text),
		cmocka_unit_test(test_trust_rules),
		cmocka_unit_test(test_trust_refuses_unusable_keys),
		cmocka_unit_test(test_trust_table_full),
		cmocka_unit_test(test_secure_ready),
		cmocka_unit_test(test_rng),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
