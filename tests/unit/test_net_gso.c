/* SPDX-License-Identifier: BSD-2-Clause */
/* A guest frame's transmit offloads finished in software (hv/net/gso.c):
 * checksums completed, TCPv4 super-frames cut into MTU-sized segments
 * whose headers and checksums a receiver accepts and whose payloads put
 * back together give the original; frames that lie about themselves are
 * refused whole. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>
#include "hv/lib/bytes.h"
#include "hv/net/cksum.h"
#include "hv/net/gso.h"

#define SRC_IP	0x0a000002u
#define DST_IP	0x0a000001u
#define SEQ0	0xfffff000u		/* wraps within a super-frame */
#define ID0	0xfffe

static uint8_t frame[GSO_FRAME_MAX];

/* An IPv4 TCP frame with n payload bytes, TCP options of optlen bytes,
 * flags, and the pseudo-header sum in the checksum field (Linux's
 * CHECKSUM_PARTIAL); its length. */
static size_t build(size_t n, unsigned int optlen, uint8_t flags)
{
	uint8_t *ip = frame + 14, *tcp = ip + 20;
	size_t tl = 20 + optlen + n;

	memset(frame, 0, 14 + 20 + tl);
	memset(frame, 0x02, 12);
	put_be16(frame + 12, 0x0800);
	ip[0] = 0x45;
	put_be16(ip + 2, (uint16_t)(20 + tl));
	put_be16(ip + 4, ID0);
	put_be16(ip + 6, 0x4000);	/* DF */
	ip[8] = 64;
	ip[9] = 6;
	put_be32(ip + 12, SRC_IP);
	put_be32(ip + 16, DST_IP);
	put_be16(tcp, 40000);
	put_be16(tcp + 2, 5001);
	put_be32(tcp + 4, SEQ0);
	put_be32(tcp + 8, 77);
	tcp[12] = (uint8_t)(((20 + optlen) / 4) << 4);
	tcp[13] = flags;
	put_be16(tcp + 14, 64240);
	for (unsigned int i = 0; i < optlen; i++)
		tcp[20 + i] = 1;	/* NOP */
	for (size_t i = 0; i < n; i++)
		tcp[20 + optlen + i] = (uint8_t)(i * 7 + (i >> 8));
	csum_store(tcp + 16, csum_fold(csum_pseudo(SRC_IP, DST_IP, 6, (uint16_t)tl)));
	csum_store(ip + 10, csum_finish(csum_add(0, ip, 20)));
	return 14 + 20 + tl;
}

static const struct gso_req TSO = { .csum = true, .csum_start = 34, .csum_offset = 16, .mss = 1448 };

/* A receiver's checks on one segment; returns its TCP payload length. */
static size_t check_segment(const uint8_t *s, size_t len, uint32_t *seq, uint8_t *flags)
{
	const uint8_t *ip = s + 14, *tcp = ip + 20;
	size_t tl = len - 34, hl = (tcp[12] >> 4) * 4u;

	assert_true(len <= 1514);
	assert_int_equal(get_be16(ip + 2), len - 14);
	assert_true(csum_ok(csum_add(0, ip, 20)));
	assert_true(csum_ok(csum_add(csum_pseudo(SRC_IP, DST_IP, 6, (uint16_t)tl), tcp, tl)));
	*seq = get_be32(tcp + 4);
	*flags = tcp[13];
	return tl - hl;
}

static void segments_rebuild(size_t n, unsigned int optlen, uint8_t flags, uint16_t mss)
{
	struct gso_req r = TSO;
	struct gso_plan p;
	size_t len = build(n, optlen, flags), at = 0;
	uint8_t seg[GSO_PLAIN_MAX];
	uint32_t hlen = 34 + 20 + optlen;

	r.mss = mss;
	assert_int_equal(gso_plan(frame, len, &r, &p), 0);
	assert_int_equal(p.segs, (n + mss - 1) / mss);
	assert_int_equal(p.hlen, hlen);
	for (unsigned int k = 0; k < p.segs; k++) {
		size_t sl = gso_segment(frame, &r, &p, k, seg), pl;
		uint32_t seq;
		uint8_t fl;

		pl = check_segment(seg, sl, &seq, &fl);
		assert_int_equal(pl, k + 1 < p.segs ? mss : n - at);
		assert_int_equal(seq, (uint32_t)(SEQ0 + at));
		assert_int_equal(get_be16(seg + 18), (uint16_t)(ID0 + k));
		assert_int_equal(get_be16(seg + 20), 0x4000);
		assert_memory_equal(seg + 34 + 20, frame + 34 + 20, optlen);	/* options kept */
		assert_memory_equal(seg + hlen, frame + hlen + at, pl);
		/* FIN and PSH on the last only, CWR on the first only */
		assert_int_equal(fl, flags & (k + 1 < p.segs ? ~0x09 : 0xff) & (k ? ~0x80 : 0xff));
		at += pl;
	}
	assert_int_equal(at, n);
}

static void test_tso_cuts_and_sums(void **state)
{
	(void)state;
	segments_rebuild(65535 - 40, 0, 0x18, 1448);	/* the largest, ACK|PSH */
	segments_rebuild(10000, 12, 0x99, 1448);	/* timestamps; CWR|PSH|FIN|ACK */
	segments_rebuild(2896, 0, 0x10, 1448);		/* exactly two */
	segments_rebuild(3001, 0, 0x10, 536);
}

static void test_payload_within_one_segment(void **state)
{
	struct gso_plan p;
	size_t len = build(100, 0, 0x18);
	uint8_t seg[GSO_PLAIN_MAX];
	uint32_t seq;
	uint8_t fl;

	(void)state;
	assert_int_equal(gso_plan(frame, len, &TSO, &p), 0);
	assert_int_equal(p.segs, 1);
	assert_int_equal(gso_segment(frame, &TSO, &p, 0, seg), len);
	assert_int_equal(check_segment(seg, len, &seq, &fl), 100);
	assert_int_equal(fl, 0x18);
}

static void test_checksum_only(void **state)
{
	struct gso_req r = { .csum = true, .csum_start = 34, .csum_offset = 16 };
	struct gso_plan p;
	size_t len = build(1000, 0, 0x18);
	uint8_t seg[GSO_PLAIN_MAX];
	uint32_t seq;
	uint8_t fl;

	(void)state;
	assert_int_equal(gso_plan(frame, len, &r, &p), 0);
	assert_int_equal(p.segs, 1);
	assert_int_equal(gso_segment(frame, &r, &p, 0, seg), len);
	assert_int_equal(check_segment(seg, len, &seq, &fl), 1000);
	/* UDP too: any protocol, at the offset the header gives */
	frame[23] = 17;
	put_be16(frame + 34 + 4, (uint16_t)(len - 34));
	csum_store(frame + 34 + 6, csum_fold(csum_pseudo(SRC_IP, DST_IP, 17, (uint16_t)(len - 34))));
	r.csum_offset = 6;
	assert_int_equal(gso_plan(frame, len, &r, &p), 0);
	gso_segment(frame, &r, &p, 0, seg);
	assert_true(csum_ok(csum_add(csum_pseudo(SRC_IP, DST_IP, 17, (uint16_t)(len - 34)),
				     seg + 34, len - 34)));
	/* and a frame with no offload at all goes as it is */
	r = (struct gso_req){ 0 };
	assert_int_equal(gso_plan(frame, len, &r, &p), 0);
	gso_segment(frame, &r, &p, 0, seg);
	assert_memory_equal(seg, frame, len);
}

/* With partial_ok, TCP segments keep the pseudo-header sum for a NIC to
 * complete: completing it gives what software would have; a TCP frame
 * with only NEEDS_CSUM goes as it is; UDP is still finished here. */
static void test_partial_for_the_nic(void **state)
{
	struct gso_req r = TSO;
	struct gso_plan p;
	size_t len = build(5000, 0, 0x18), sl;
	uint8_t seg[GSO_PLAIN_MAX], *tcp = seg + 34;

	(void)state;
	r.partial_ok = true;
	assert_int_equal(gso_plan(frame, len, &r, &p), 0);
	assert_true(p.partial);
	for (unsigned int k = 0; k < p.segs; k++) {
		uint8_t want[2];
		uint64_t ph;

		sl = gso_segment(frame, &r, &p, k, seg);
		ph = csum_pseudo(SRC_IP, DST_IP, 6, (uint16_t)(sl - 34));
		csum_store(want, csum_fold(ph));
		assert_memory_equal(tcp + 16, want, 2);
		/* what the NIC does: sum the segment with the field, complement */
		csum_store(tcp + 16, csum_finish(csum_add(0, tcp, sl - 34)));
		assert_true(csum_ok(csum_add(ph, tcp, sl - 34)));
		assert_true(csum_ok(csum_add(0, seg + 14, 20)));
	}
	r = (struct gso_req){ .csum = true, .csum_start = 34, .csum_offset = 16, .partial_ok = true };
	len = build(1000, 0, 0x18);
	assert_int_equal(gso_plan(frame, len, &r, &p), 0);
	assert_true(p.partial);
	assert_int_equal(gso_segment(frame, &r, &p, 0, seg), len);
	assert_memory_equal(seg, frame, len);		/* as the guest left it */
	frame[23] = 17;
	r.csum_offset = 6;
	assert_int_equal(gso_plan(frame, len, &r, &p), 0);
	assert_false(p.partial);			/* UDP: finished here */
}

/* Segments sent on as one TSO frame: the headers for it are the first
 * segment's with the whole length, no IP checksum, the pseudo-header sum
 * without the length, and the last segment's PSH and FIN; a NIC that cuts
 * them at the MSS again makes the same segments. */
static void test_tso_headers(void **state)
{
	struct gso_req r = TSO;
	struct gso_plan p;
	size_t len = build(5000, 12, 0x19), l0, l3;	/* ACK PSH FIN, timestamps */
	uint8_t s0[GSO_PLAIN_MAX], s3[GSO_PLAIN_MAX], h[256], want[2];
	const uint8_t *ip = h + 14, *tcp = h + 34;

	(void)state;
	r.partial_ok = true;
	assert_int_equal(gso_plan(frame, len, &r, &p), 0);
	assert_int_equal(p.segs, 4);
	l0 = gso_segment(frame, &r, &p, 0, s0);
	l3 = gso_segment(frame, &r, &p, 3, s3);
	assert_int_equal(s0[47] & 0x09, 0);		/* not on the first */
	gso_tso_hdr(h, s0, s3, p.hlen, 5000);
	assert_int_equal(get_be16(ip + 2), 20 + 32 + 5000);
	assert_int_equal(get_be16(ip + 4), ID0);
	assert_int_equal(get_be16(ip + 10), 0);
	assert_int_equal(get_be32(tcp + 4), SEQ0);
	assert_int_equal(tcp[13], 0x19);
	csum_store(want, csum_fold(csum_pseudo(SRC_IP, DST_IP, 6, 0)));
	assert_memory_equal(tcp + 16, want, 2);
	assert_memory_equal(tcp + 20, frame + 54, 12);	/* the options */
	assert_memory_equal(h, frame, 14);
	/* the last segment's flags only: a middle run has neither */
	gso_tso_hdr(h, s0, s0, p.hlen, 2 * 1448 - 24);
	assert_int_equal(tcp[13], 0x10);
	assert_int_equal(get_be16(ip + 2), 20 + 32 + 2 * 1448 - 24);
	(void)l0;
	(void)l3;
}

static struct gso_plan plan;
#define refused(len, r)	assert_int_equal(gso_plan(frame, (len), (r), &plan), -EINVAL)

static void test_liars_refused(void **state)
{
	struct gso_req r = TSO;
	size_t len = build(5000, 0, 0x10);

	(void)state;
	refused(len - 1, &r);			/* IP total length disagrees */
	refused(len + 1, &r);
	r.csum = false;
	refused(len, &r);			/* GSO without NEEDS_CSUM */
	r = TSO;
	r.csum_offset = 6;
	refused(len, &r);			/* not TCP's checksum */
	r = TSO;
	r.csum_start = 40;
	refused(len, &r);
	r = TSO;
	r.mss = 1461;				/* segments past the MTU */
	refused(len, &r);
	r = TSO;
	frame[23] = 17;				/* not TCP */
	refused(len, &r);
	frame[23] = 6;
	put_be16(frame + 20, 0x2000);		/* more fragments */
	refused(len, &r);
	put_be16(frame + 20, 0x0010);		/* an offset */
	refused(len, &r);
	put_be16(frame + 20, 0x4000);
	frame[14] = 0x46;			/* IHL says options, start says not */
	refused(len, &r);
	frame[14] = 0x65;			/* not IPv4 */
	refused(len, &r);
	frame[14] = 0x45;
	len = build(8, 0, 0x10);
	frame[34 + 12] = 0xf0;			/* a TCP header longer than the frame */
	refused(len, &r);
	refused(build(0, 0, 0x10), &r);		/* no payload to cut */
	len = build(5000, 0, 0x10);
	put_be16(frame + 12, 0x8100);		/* VLAN tag */
	refused(len, &r);
	refused(40, &r);
	r = (struct gso_req){ .csum = true, .csum_start = 1500, .csum_offset = 16 };
	refused(1000, &r);			/* field past the end */
	r.csum_start = 34;
	refused(GSO_PLAIN_MAX + 1, &r);		/* too long unsegmented */
	r = TSO;
	refused(GSO_FRAME_MAX + 1, &r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tso_cuts_and_sums),
		cmocka_unit_test(test_payload_within_one_segment),
		cmocka_unit_test(test_checksum_only),
		cmocka_unit_test(test_partial_for_the_nic),
		cmocka_unit_test(test_tso_headers),
		cmocka_unit_test(test_liars_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
