/* SPDX-License-Identifier: BSD-2-Clause */
/* Helpers shared by the migration-stream unit tests (header only; include
 * cmocka.h first). */
#ifndef FERRY_TESTS_UNIT_MIG_WIRE_H
#define FERRY_TESTS_UNIT_MIG_WIRE_H

#include <stdint.h>
#include <string.h>
#include "hv/migrate/stream.h"
#include "hv/lib/crc32.h"

/* Feed n bytes to s; what mig_stream_feed said at the end (1: *out). */
static inline int mig_feed_all(struct mig_stream *s, const uint8_t *p, size_t n,
			       const struct mig_rec **out)
{
	size_t used = 0;
	int rc = 0;

	while (n) {
		rc = mig_stream_feed(s, p, n, &used, out);
		p += used;
		n -= used;
		if (rc)
			return rc;
	}
	return rc;
}

/* A hand-made record of rec_len bytes gets the CRC a lying peer would put
 * in (header bytes 0-11, then the payload; little-endian host). */
static inline void mig_fix_crc(uint8_t *rec, size_t rec_len)
{
	uint32_t crc = crc32_update(crc32_update(0, rec, 12), rec + MIG_HDR_SIZE,
				    rec_len - MIG_HDR_SIZE);

	memcpy(rec + 12, &crc, 4);
}

/* S and D: a fresh source and destination that agreed on a 1-vCPU guest of
 * guest_pages pages (HELLO and HELLO_REPLY exchanged); buf is scratch. */
static inline void mig_accept_pair(struct mig_stream *s, struct mig_stream *d,
				   uint64_t guest_pages, uint8_t *buf, size_t cap)
{
	struct mig_rec h = { .type = MIG_HELLO }, y = { .type = MIG_HELLO_REPLY };
	const struct mig_rec *out;
	long n;

	mig_stream_init(s, MIG_SRC);
	mig_stream_init(d, MIG_DST);
	h.hello = (struct mig_hello){
		.proto_version = MIG_PROTO_VERSION, .cpu_state_version = MIG_CPU_STATE_VERSION,
		.dev_version = 1, .vcpus = 1, .mig_id = 5, .mem_size = guest_pages * MIG_PAGE_SIZE,
		.cpu_baseline = 1, .tsc_hz = 1000000000, .weight = 256, .name = "g", .kernel = "k",
	};
	n = mig_stream_encode(s, &h, buf, cap);
	assert_true(n > 0);
	assert_int_equal(mig_feed_all(d, buf, (size_t)n, &out), 1);
	y.reply = (struct mig_reply){ .proto_version = MIG_PROTO_VERSION, .code = MIG_OK,
				      .xcr0_mask = 3 };
	n = mig_stream_encode(d, &y, buf, cap);
	assert_true(n > 0);
	assert_int_equal(mig_feed_all(s, buf, (size_t)n, &out), 1);
	assert_int_equal(s->phase, MIG_PH_MEMORY);
}

/* d refuses a PAGES record of one entry (gfn, kind, then tail bytes)
 * built by hand, with a valid CRC, as a lying peer would (little-endian
 * host); its error is MIG_E_PROTOCOL and mentions why. */
static inline void mig_refuse_one_page(struct mig_stream *d, uint64_t gfn, uint8_t kind,
				       const void *tail, size_t tail_len, const char *why)
{
	static uint8_t rec[MIG_HDR_SIZE + 4 + 9 + MIG_PAGE_SIZE + 64];
	uint32_t len = (uint32_t)(4 + 9 + tail_len), one = 1;
	const struct mig_rec *out;

	assert_true(tail_len <= MIG_PAGE_SIZE + 64);
	memset(rec, 0, sizeof(rec));
	rec[0] = MIG_PAGES & 0xff;
	rec[1] = MIG_PAGES >> 8;
	memcpy(rec + 4, &len, 4);
	memcpy(rec + 8, &d->rx_seq, 4);		/* the next sequence number */
	memcpy(rec + 16, &one, 4);
	memcpy(rec + 20, &gfn, 8);
	rec[28] = kind;
	memcpy(rec + 29, tail, tail_len);
	mig_fix_crc(rec, MIG_HDR_SIZE + len);
	assert_int_equal(mig_feed_all(d, rec, MIG_HDR_SIZE + len, &out), -EPROTO);
	assert_int_equal(d->rx_err.code, MIG_E_PROTOCOL);
	assert_non_null(strstr(d->rx_err.msg, why));
}

#endif
