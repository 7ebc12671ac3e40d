// SPDX-License-Identifier: BSD-2-Clause
/*
 * hv/crypto/noise.c against the published test vector for the protocol
 * (cacophony's, both roles, transport included) and a second implementation (tests/tools/noise_kk.py
 * on Python's cryptography package): both roles reproduce its handshake
 * messages and records byte for byte and open its records; then the record
 * layer against every kind of tampering, and handshakes with the wrong keys.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "hv/crypto/noise.h"
#include "hv/migrate/stream.h"
#include "noise_kk_vectors.h"

/* The Python peer (tests/tools/noise_kk.py, the integration tests' second
 * implementation) speaks the version the channel's prologue names. */
_Static_assert(KK_PROTO_VERSION == MIG_PROTO_VERSION,
	       "tests/tools/noise_kk.py PROTO_VERSION follows MIG_PROTO_VERSION");

#define BUF 512

static int init_ver(struct noise_hs *hs, enum noise_role role, const uint8_t *s,
		    const uint8_t *rs_priv, const uint8_t *e, uint32_t version)
{
	uint8_t rs[NOISE_KEY], pro[NOISE_FERRY_PROLOGUE];

	assert_int_equal(noise_pubkey(rs, rs_priv), 0);
	noise_ferry_prologue(pro, version);
	return noise_hs_init(hs, role, s, rs, e, pro, sizeof(pro));
}

static void init_as(struct noise_hs *hs, enum noise_role role)
{
	int init = role == NOISE_INITIATOR;

	assert_int_equal(init_ver(hs, role, init ? kk_init_s : kk_resp_s,
				  init ? kk_resp_s : kk_init_s, init ? kk_init_e : kk_resp_e,
				  KK_PROTO_VERSION), 0);
}

/* One side of the published vector; the other side's messages are the vector's. */
static void caco_side(enum noise_role role)
{
	static const uint8_t *const pt[] = { caco_pt0, caco_pt1, caco_pt2, caco_pt3,
					     caco_pt4, caco_pt5 };
	static const uint8_t *const ct[] = { caco_ct0, caco_ct1, caco_ct2, caco_ct3,
					     caco_ct4, caco_ct5 };
	static const size_t ptn[] = { sizeof(caco_pt0), sizeof(caco_pt1), sizeof(caco_pt2),
				      sizeof(caco_pt3), sizeof(caco_pt4), sizeof(caco_pt5) };
	int init = role == NOISE_INITIATOR;
	struct noise_hs hs;
	struct noise_cipher tx, rx;
	uint8_t rs[NOISE_KEY], buf[BUF], h[NOISE_KEY];
	size_t n;

	assert_int_equal(CACO_MESSAGES, 6);
	assert_int_equal(noise_pubkey(rs, init ? caco_resp_static : caco_init_static), 0);
	assert_int_equal(noise_hs_init(&hs, role, init ? caco_init_static : caco_resp_static, rs,
				       init ? caco_init_ephemeral : caco_resp_ephemeral,
				       caco_init_prologue, sizeof(caco_init_prologue)), 0);
	for (int i = 0; i < 2; i++) {
		if ((i == 0) == init) {
			assert_int_equal(noise_hs_write(&hs, pt[i], ptn[i], buf, sizeof(buf), &n), 0);
			assert_int_equal(n, ptn[i] + NOISE_HS_OVERHEAD);
			assert_memory_equal(buf, ct[i], n);
		} else {
			assert_int_equal(noise_hs_read(&hs, ct[i], ptn[i] + NOISE_HS_OVERHEAD, buf,
						       sizeof(buf), &n), 0);
			assert_int_equal(n, ptn[i]);
			assert_memory_equal(buf, pt[i], n);
		}
	}
	assert_int_equal(noise_hs_hash(&hs, h), 0);
	assert_memory_equal(h, caco_handshake_hash, NOISE_KEY);
	assert_int_equal(noise_hs_split(&hs, &tx, &rx), 0);
	/* transport messages alternate, the initiator's first; no associated data */
	for (int i = 2; i < CACO_MESSAGES; i++) {
		if ((i % 2 == 0) == init) {
			memcpy(buf, pt[i], ptn[i]);
			assert_int_equal(noise_encrypt(&tx, NULL, 0, buf, ptn[i], buf + ptn[i]), 0);
			assert_memory_equal(buf, ct[i], ptn[i] + NOISE_TAG);
		} else {
			memcpy(buf, ct[i], ptn[i]);
			assert_int_equal(noise_decrypt(&rx, NULL, 0, buf, ptn[i], ct[i] + ptn[i]), 0);
			assert_memory_equal(buf, pt[i], ptn[i]);
		}
	}
}

static void test_published_vector_initiator(void **state)
{
	(void)state;
	caco_side(NOISE_INITIATOR);
}

static void test_published_vector_responder(void **state)
{
	(void)state;
	caco_side(NOISE_RESPONDER);
}

static void check_open(struct noise_cipher *rx, const uint8_t *rec, size_t len, const char *want)
{
	uint8_t pt[BUF];
	size_t n = 99, used = 0;

	assert_int_equal(noise_rec_open(rx, rec, len, pt, sizeof(pt), &n, &used), 0);
	assert_int_equal(used, len);
	assert_int_equal(n, strlen(want));
	assert_memory_equal(pt, want, n);
}

static void check_seal(struct noise_cipher *tx, const char *pt, const uint8_t *want, size_t len)
{
	uint8_t out[BUF];
	size_t n = 0;

	assert_int_equal(noise_rec_seal(tx, pt, strlen(pt), out, sizeof(out), &n), 0);
	assert_int_equal(n, len);
	assert_memory_equal(out, want, len);
}

#define SEAL(c, d, i) check_seal(c, kk_##d##_pt##i, kk_##d##_rec##i, sizeof(kk_##d##_rec##i))
#define OPEN(c, d, i) check_open(c, kk_##d##_rec##i, sizeof(kk_##d##_rec##i), kk_##d##_pt##i)

static void test_initiator_matches_python(void **state)
{
	struct noise_hs hs;
	struct noise_cipher tx, rx;
	uint8_t out[BUF], h[NOISE_KEY];
	size_t n = 0;

	(void)state;
	init_as(&hs, NOISE_INITIATOR);
	assert_int_equal(noise_hs_write(&hs, kk_payload1, strlen(kk_payload1), out,
					sizeof(out), &n), 0);
	assert_int_equal(n, sizeof(kk_msg1));
	assert_memory_equal(out, kk_msg1, n);
	assert_int_equal(noise_hs_read(&hs, kk_msg2, sizeof(kk_msg2), out, sizeof(out), &n), 0);
	assert_int_equal(n, strlen(kk_payload2));
	assert_memory_equal(out, kk_payload2, n);
	assert_int_equal(noise_hs_hash(&hs, h), 0);
	assert_memory_equal(h, kk_hash, NOISE_KEY);
	assert_int_equal(noise_hs_split(&hs, &tx, &rx), 0);
	assert_int_equal(hs.step, -1);
	SEAL(&tx, i2r, 0);
	SEAL(&tx, i2r, 1);
	SEAL(&tx, i2r, 2);
	OPEN(&rx, r2i, 0);
	OPEN(&rx, r2i, 1);
}

static void test_responder_matches_python(void **state)
{
	struct noise_hs hs;
	struct noise_cipher tx, rx;
	uint8_t out[BUF], h[NOISE_KEY];
	size_t n = 0;

	(void)state;
	init_as(&hs, NOISE_RESPONDER);
	assert_int_equal(noise_hs_read(&hs, kk_msg1, sizeof(kk_msg1), out, sizeof(out), &n), 0);
	assert_int_equal(n, strlen(kk_payload1));
	assert_memory_equal(out, kk_payload1, n);
	assert_int_equal(noise_hs_write(&hs, kk_payload2, strlen(kk_payload2), out,
					sizeof(out), &n), 0);
	assert_int_equal(n, sizeof(kk_msg2));
	assert_memory_equal(out, kk_msg2, n);
	assert_int_equal(noise_hs_hash(&hs, h), 0);
	assert_memory_equal(h, kk_hash, NOISE_KEY);
	assert_int_equal(noise_hs_split(&hs, &tx, &rx), 0);
	OPEN(&rx, i2r, 0);
	OPEN(&rx, i2r, 1);
	OPEN(&rx, i2r, 2);
	SEAL(&tx, r2i, 0);
	SEAL(&tx, r2i, 1);
}

/* The responder's receiving state, as after the handshake with Python. */
static void responder_rx(struct noise_cipher *rx)
{
	struct noise_hs hs;
	struct noise_cipher tx;
	uint8_t out[BUF];
	size_t n;

	init_as(&hs, NOISE_RESPONDER);
	assert_int_equal(noise_hs_read(&hs, kk_msg1, sizeof(kk_msg1), out, sizeof(out), &n), 0);
	assert_int_equal(noise_hs_write(&hs, NULL, 0, out, sizeof(out), &n), 0);
	assert_int_equal(noise_hs_split(&hs, &tx, rx), 0);
}

static int open_rec(struct noise_cipher *rx, const uint8_t *rec, size_t len)
{
	uint8_t pt[BUF];
	size_t n, used;

	return noise_rec_open(rx, rec, len, pt, sizeof(pt), &n, &used);
}

/* After a refusal the state is dead: even the right record fails. */
static void assert_dead(struct noise_cipher *rx)
{
	assert_int_equal(rx->dead, 1);
	assert_int_equal(open_rec(rx, kk_i2r_rec0, sizeof(kk_i2r_rec0)), -EBADMSG);
	assert_int_equal(open_rec(rx, kk_i2r_rec1, sizeof(kk_i2r_rec1)), -EBADMSG);
}

static void test_every_flipped_bit_refused(void **state)
{
	uint8_t rec[sizeof(kk_i2r_rec0)];
	struct noise_cipher rx;

	(void)state;
	for (size_t i = 0; i < sizeof(rec) * 8; i++) {
		responder_rx(&rx);
		memcpy(rec, kk_i2r_rec0, sizeof(rec));
		rec[i / 8] ^= (uint8_t)(1u << (i % 8));
		int err = open_rec(&rx, rec, sizeof(rec));

		/* a longer length only waits for bytes; any other change is refused */
		if (err == -EAGAIN) {
			assert_true(i < 16);
			continue;
		}
		assert_int_equal(err, -EBADMSG);
		assert_dead(&rx);
	}
}

static void test_replayed_record_refused(void **state)
{
	struct noise_cipher rx;

	(void)state;
	responder_rx(&rx);
	OPEN(&rx, i2r, 0);
	assert_int_equal(open_rec(&rx, kk_i2r_rec0, sizeof(kk_i2r_rec0)), -EBADMSG);
	assert_dead(&rx);
}

static void test_reordered_record_refused(void **state)
{
	struct noise_cipher rx;

	(void)state;
	responder_rx(&rx);
	assert_int_equal(open_rec(&rx, kk_i2r_rec1, sizeof(kk_i2r_rec1)), -EBADMSG);
	assert_dead(&rx);
}

static void test_dropped_record_refused(void **state)
{
	struct noise_cipher rx;

	(void)state;
	responder_rx(&rx);
	OPEN(&rx, i2r, 0);
	/* record 1 never came; record 2 is sealed under nonce 2 */
	assert_int_equal(open_rec(&rx, kk_i2r_rec2, sizeof(kk_i2r_rec2)), -EBADMSG);
	assert_dead(&rx);
}

static void test_truncated_record_waits_then_refused(void **state)
{
	uint8_t rec[sizeof(kk_i2r_rec0)];
	struct noise_cipher rx;

	(void)state;
	responder_rx(&rx);
	/* every strict prefix is incomplete: nothing is released */
	for (size_t len = 0; len < sizeof(rec); len++)
		assert_int_equal(open_rec(&rx, kk_i2r_rec0, len), -EAGAIN);
	assert_int_equal(rx.dead, 0);
	/* a record cut short whose length was rewritten to match */
	memcpy(rec, kk_i2r_rec0, sizeof(rec));
	rec[0] = (uint8_t)(sizeof(rec) - 2 - 5);
	assert_int_equal(open_rec(&rx, rec, sizeof(rec) - 5), -EBADMSG);
	assert_dead(&rx);
}

static void test_short_length_refused(void **state)
{
	const uint8_t rec[2 + 15] = { 15, 0 };
	struct noise_cipher rx;

	(void)state;
	responder_rx(&rx);
	assert_int_equal(open_rec(&rx, rec, sizeof(rec)), -EBADMSG);
	assert_dead(&rx);
}

static void test_wrong_direction_refused(void **state)
{
	struct noise_cipher rx;

	(void)state;
	responder_rx(&rx);
	/* a record the responder itself sent, reflected back */
	assert_int_equal(open_rec(&rx, kk_r2i_rec0, sizeof(kk_r2i_rec0)), -EBADMSG);
	assert_dead(&rx);
}

/* A handshake where side `bad` pins a wrong key for its peer. */
static void handshake_with_wrong_pin(enum noise_role bad)
{
	static const uint8_t other[NOISE_KEY] = { 0x42, 0x42, 0x42 };
	struct noise_hs ini, res;
	uint8_t m[BUF], p[BUF];
	size_t n, pn;

	assert_int_equal(init_ver(&ini, NOISE_INITIATOR, kk_init_s,
				  bad == NOISE_INITIATOR ? other : kk_resp_s, kk_init_e,
				  KK_PROTO_VERSION), 0);
	assert_int_equal(init_ver(&res, NOISE_RESPONDER, kk_resp_s,
				  bad == NOISE_RESPONDER ? other : kk_init_s, kk_resp_e,
				  KK_PROTO_VERSION), 0);
	assert_int_equal(noise_hs_write(&ini, "x", 1, m, sizeof(m), &n), 0);
	assert_int_equal(noise_hs_read(&res, m, n, p, sizeof(p), &pn), -EBADMSG);
	assert_int_equal(res.step, -1);
	assert_int_equal(noise_hs_write(&res, NULL, 0, m, sizeof(m), &n), -EPROTO);
}

static void test_wrong_peer_key_fails_handshake(void **state)
{
	(void)state;
	handshake_with_wrong_pin(NOISE_INITIATOR);
	handshake_with_wrong_pin(NOISE_RESPONDER);
}

static void test_other_protocol_version_fails(void **state)
{
	struct noise_hs res;
	uint8_t p[BUF];
	size_t pn;

	(void)state;
	assert_int_equal(init_ver(&res, NOISE_RESPONDER, kk_resp_s, kk_init_s, kk_resp_e,
				  KK_PROTO_VERSION + 1), 0);
	assert_int_equal(noise_hs_read(&res, kk_msg1, sizeof(kk_msg1), p, sizeof(p), &pn),
			 -EBADMSG);
}

static void test_tampered_handshake_messages_fail(void **state)
{
	uint8_t m[sizeof(kk_msg2)], p[BUF];
	struct noise_hs hs;
	size_t n;

	(void)state;
	for (size_t i = 0; i < sizeof(m); i++) {
		init_as(&hs, NOISE_INITIATOR);
		assert_int_equal(noise_hs_write(&hs, kk_payload1, strlen(kk_payload1), p,
						sizeof(p), &n), 0);
		memcpy(m, kk_msg2, sizeof(m));
		m[i] ^= 0x01;
		assert_int_equal(noise_hs_read(&hs, m, sizeof(m), p, sizeof(p), &n), -EBADMSG);
		assert_int_equal(hs.step, -1);
	}
	init_as(&hs, NOISE_RESPONDER);
	assert_int_equal(noise_hs_read(&hs, kk_msg1, NOISE_HS_OVERHEAD - 1, p, sizeof(p), &n),
			 -EBADMSG);
}

static void test_out_of_turn_and_split_early(void **state)
{
	struct noise_hs hs;
	struct noise_cipher tx, rx;
	uint8_t p[BUF];
	size_t n;

	(void)state;
	init_as(&hs, NOISE_RESPONDER);
	assert_int_equal(noise_hs_write(&hs, NULL, 0, p, sizeof(p), &n), -EPROTO);
	init_as(&hs, NOISE_INITIATOR);
	assert_int_equal(noise_hs_read(&hs, kk_msg2, sizeof(kk_msg2), p, sizeof(p), &n), -EPROTO);
	init_as(&hs, NOISE_INITIATOR);
	assert_int_equal(noise_hs_split(&hs, &tx, &rx), -EPROTO);
}

static void test_handshake_wiped_after_split(void **state)
{
	static const uint8_t zero[sizeof(struct noise_hs) - sizeof(int) * 2];
	struct noise_hs hs;
	struct noise_cipher tx, rx;
	uint8_t out[BUF];
	size_t n;

	(void)state;
	init_as(&hs, NOISE_RESPONDER);
	assert_int_equal(noise_hs_read(&hs, kk_msg1, sizeof(kk_msg1), out, sizeof(out), &n), 0);
	assert_int_equal(noise_hs_write(&hs, NULL, 0, out, sizeof(out), &n), 0);
	assert_int_equal(noise_hs_split(&hs, &tx, &rx), 0);
	assert_memory_equal(hs.ck, zero, NOISE_KEY);
	assert_memory_equal(hs.s, zero, NOISE_KEY);
	assert_memory_equal(hs.e, zero, NOISE_KEY);
	assert_memory_equal(hs.c.k, zero, NOISE_KEY);
	noise_cipher_wipe(&tx);
	assert_memory_equal(tx.k, zero, NOISE_KEY);
	assert_int_equal(noise_rec_seal(&tx, "x", 1, out, sizeof(out), &n), -EBADMSG);
}

static void test_record_bounds(void **state)
{
	static uint8_t big[NOISE_MSG_MAX + 8];
	struct noise_cipher tx, rx;
	size_t n, used;
	uint8_t small[4];

	(void)state;
	memset(&tx, 0, sizeof(tx));
	assert_int_equal(noise_rec_seal(&tx, big, NOISE_REC_MAX_PAYLOAD + 1, big, sizeof(big), &n),
			 -EMSGSIZE);
	assert_int_equal(noise_rec_seal(&tx, big, 10, small, sizeof(small), &n), -EMSGSIZE);
	assert_int_equal(noise_rec_seal(&tx, big, NOISE_REC_MAX_PAYLOAD, big, sizeof(big), &n), 0);
	assert_int_equal(n, NOISE_MSG_MAX + NOISE_REC_HDR);
	memset(&rx, 0, sizeof(rx));
	assert_int_equal(noise_rec_open(&rx, big, n, big, sizeof(big), &n, &used), 0);
	assert_int_equal(n, NOISE_REC_MAX_PAYLOAD);
	tx.n = UINT64_MAX;
	assert_int_equal(noise_rec_seal(&tx, big, 1, big, sizeof(big), &n), -EOVERFLOW);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_published_vector_initiator),
		cmocka_unit_test(test_published_vector_responder),
		cmocka_unit_test(test_initiator_matches_python),
		cmocka_unit_test(test_responder_matches_python),
		cmocka_unit_test(test_every_flipped_bit_refused),
		cmocka_unit_test(test_replayed_record_refused),
		cmocka_unit_test(test_reordered_record_refused),
		cmocka_unit_test(test_dropped_record_refused),
		cmocka_unit_test(test_truncated_record_waits_then_refused),
		cmocka_unit_test(test_short_length_refused),
		cmocka_unit_test(test_wrong_direction_refused),
		cmocka_unit_test(test_wrong_peer_key_fails_handshake),
		cmocka_unit_test(test_other_protocol_version_fails),
		cmocka_unit_test(test_tampered_handshake_messages_fail),
		cmocka_unit_test(test_out_of_turn_and_split_early),
		cmocka_unit_test(test_handshake_wiped_after_split),
		cmocka_unit_test(test_record_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
