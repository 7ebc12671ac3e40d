/* SPDX-License-Identifier: BSD-2-Clause */
/* Receive coalescing for a guest (hv/net/gro.c): the segments of a TCP
 * stream, cut by hv/net/gso.c as a sender's NIC would, join back into the
 * super-frame they came from; whatever a receiver's GRO keeps apart (other
 * connections, gaps, flags, options, windows, fragments, bad checksums)
 * stays apart, and a super-frame never outgrows an IP packet. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>
#include "hv/lib/bytes.h"
#include "hv/net/cksum.h"
#include "hv/net/gro.h"
#include "hv/net/gso.h"

#define SRC_IP	0x0a000001u
#define DST_IP	0x0a000002u
#define SEQ0	0xfffff000u		/* wraps within a super-frame */
#define MSS	1448

static uint8_t big[GSO_FRAME_MAX];
static uint8_t seg[GRO_MAX_SEGS + 8][GSO_PLAIN_MAX + 64];
static size_t seglen[GRO_MAX_SEGS + 8];
static struct gro g;

/* An IPv4 TCP super-frame with n payload bytes, optlen bytes of TCP
 * options and flags (checksum field: the pseudo-header sum). */
static size_t build(size_t n, unsigned int optlen, uint8_t flags)
{
	uint8_t *ip = big + 14, *tcp = ip + 20;
	size_t tl = 20 + optlen + n;

	memset(big, 0, 14 + 20 + tl);
	memset(big, 0x02, 6);
	memset(big + 6, 0x52, 6);
	put_be16(big + 12, 0x0800);
	ip[0] = 0x45;
	put_be16(ip + 2, (uint16_t)(20 + tl));
	put_be16(ip + 4, 0x1234);
	put_be16(ip + 6, 0x4000);
	ip[8] = 64;
	ip[9] = 6;
	put_be32(ip + 12, SRC_IP);
	put_be32(ip + 16, DST_IP);
	put_be16(tcp, 5001);
	put_be16(tcp + 2, 40000);
	put_be32(tcp + 4, SEQ0);
	put_be32(tcp + 8, 99);
	tcp[12] = (uint8_t)(((20 + optlen) / 4) << 4);
	tcp[13] = flags;
	put_be16(tcp + 14, 501);
	for (unsigned int i = 0; i < optlen; i++)
		tcp[20 + i] = (uint8_t)(i == 0 ? 8 : i + 3);	/* a timestamp-like option */
	for (size_t i = 0; i < n; i++)
		tcp[20 + optlen + i] = (uint8_t)(i * 13 + (i >> 9));
	csum_store(tcp + 16, csum_fold(csum_pseudo(SRC_IP, DST_IP, 6, (uint16_t)tl)));
	return 14 + 20 + tl;
}

/* Cut it into segments of mss with full checksums, as the wire carries
 * them: how many. */
static unsigned int cut(size_t len, uint16_t mss)
{
	struct gso_req r = { .csum = true, .csum_start = 34, .csum_offset = 16, .mss = mss };
	struct gso_plan p;

	assert_int_equal(gso_plan(big, len, &r, &p), 0);
	assert_true(p.segs <= GRO_MAX_SEGS + 8);
	for (unsigned int k = 0; k < p.segs; k++)
		seglen[k] = gso_segment(big, &r, &p, k, seg[k]);
	return p.segs;
}

/* Add segments [0, n): how many joined before the first that did not. */
static unsigned int add_all(unsigned int n, bool valid)
{
	unsigned int k;

	gro_reset(&g);
	for (k = 0; k < n; k++)
		if (!gro_add(&g, seg[k], seglen[k], valid))
			break;
	return k;
}

/* The super-frame g holds, as the guest receives it, against big[0..len). */
static void check_rebuilt(size_t len)
{
	uint8_t out[GSO_FRAME_MAX];
	size_t at, hl = g.hlen, tl;

	assert_int_equal(gro_finish(&g), len);
	memcpy(out, g.hdr, hl);
	at = hl;
	for (unsigned int k = 0; k < g.segs; k++) {
		memcpy(out + at, g.piece[k].p, g.piece[k].len);
		at += g.piece[k].len;
	}
	assert_int_equal(at, len);
	tl = len - 34;
	assert_int_equal(get_be16(out + 16), len - 14);
	assert_true(csum_ok(csum_add(0, out + 14, 20)));
	/* NEEDS_CSUM: the field holds the pseudo-header sum, so completing it
	 * over the segment gives a valid checksum */
	assert_int_equal(get_be16(out + 34 + 16), get_be16(big + 34 + 16));
	csum_store(out + 34 + 16, csum_finish(csum_add(0, out + 34, tl)));
	assert_true(csum_ok(csum_add(csum_pseudo(SRC_IP, DST_IP, 6, (uint16_t)tl), out + 34, tl)));
	assert_int_equal(out[34 + 13], big[34 + 13]);	/* flags, PSH from the last */
	assert_memory_equal(out + 34 + 20, big + 34 + 20, hl - 54);	/* options */
	assert_memory_equal(out + hl, big + hl, len - hl);		/* payload */
	assert_int_equal(get_be32(out + 34 + 4), SEQ0);
}

static void test_segments_join_back(void **state)
{
	size_t len;
	unsigned int n;

	(void)state;
	len = build(45 * MSS, 12, 0x18);		/* 45 full segments, PSH at the end */
	n = cut(len, MSS);
	assert_int_equal(add_all(n, false), n);
	assert_int_equal(g.checked, n);
	assert_true(g.closed);
	check_rebuilt(len);

	len = build(10 * MSS + 100, 0, 0x10);		/* a short last one */
	n = cut(len, MSS);
	assert_int_equal(add_all(n, true), n);
	check_rebuilt(len);

	len = build(3001, 0, 0x10);			/* a small MSS */
	n = cut(len, 536);
	assert_int_equal(add_all(n, false), n);
	check_rebuilt(len);
}

static void test_the_last_one_ends_it(void **state)
{
	unsigned int n;

	(void)state;
	n = cut(build(4 * MSS, 0, 0x10), MSS);
	/* a short segment in the middle ends the super-frame */
	put_be16(seg[1] + 16, (uint16_t)(get_be16(seg[1] + 16) - 100));
	seglen[1] -= 100;
	put_be16(seg[1] + 24, 0);
	csum_store(seg[1] + 24, csum_finish(csum_add(0, seg[1] + 14, 20)));
	assert_int_equal(add_all(n, true), 2);
	/* PSH in the middle too */
	n = cut(build(4 * MSS, 0, 0x10), MSS);
	seg[1][34 + 13] |= 0x08;
	assert_int_equal(add_all(n, true), 2);
	assert_int_equal(g.hdr[34 + 13], 0x18);
	/* a gap in the sequence, and a segment from the past */
	n = cut(build(4 * MSS, 0, 0x10), MSS);
	assert_true(gro_add((gro_reset(&g), &g), seg[0], seglen[0], true));
	assert_false(gro_add(&g, seg[2], seglen[2], true));
	assert_false(gro_add(&g, seg[0], seglen[0], true));
	assert_true(gro_add(&g, seg[1], seglen[1], true));
	assert_int_equal(g.segs, 2);
}

/* Segment 1 of a fresh cut, changed by fn, must not join segment 0;
 * segment 0 alone still joins. */
static void apart(void (*fn)(uint8_t *s), bool alone_ok)
{
	cut(build(2 * MSS, 12, 0x10), MSS);
	fn(seg[1]);
	gro_reset(&g);
	assert_true(gro_add(&g, seg[0], seglen[0], true));
	assert_false(gro_add(&g, seg[1], seglen[1], true));
	assert_int_equal(g.segs, 1);
	gro_reset(&g);
	assert_int_equal(gro_add(&g, seg[1], seglen[1], true), alone_ok);
}

static void other_port(uint8_t *s) { s[34 + 1] ^= 1; }
static void other_addr(uint8_t *s) { s[14 + 15] ^= 1; }
static void other_mac(uint8_t *s) { s[6] ^= 2; }
static void other_ack(uint8_t *s) { s[34 + 11] ^= 1; }
static void other_window(uint8_t *s) { s[34 + 15] ^= 1; }
static void other_option(uint8_t *s) { s[34 + 20 + 5] ^= 1; }
static void other_tos(uint8_t *s) { s[15] ^= 4; }
static void other_ttl(uint8_t *s) { s[22] ^= 1; }
static void with_ece(uint8_t *s) { s[34 + 13] |= 0x40; }
static void with_fin(uint8_t *s) { s[34 + 13] |= 0x01; }
static void with_syn(uint8_t *s) { s[34 + 13] |= 0x02; }
static void with_rst(uint8_t *s) { s[34 + 13] |= 0x04; }
static void with_urg(uint8_t *s) { s[34 + 13] |= 0x20; }
static void no_ack(uint8_t *s) { s[34 + 13] &= (uint8_t)~0x10; }
static void fragment(uint8_t *s) { s[20] |= 0x20; }	/* MF */
static void ip_options(uint8_t *s) { s[14] = 0x46; }
static void not_ip(uint8_t *s) { s[13] = 0xdd; }
static void not_tcp(uint8_t *s) { s[23] = 17; }

static void test_what_stays_apart(void **state)
{
	(void)state;
	apart(other_port, true);
	apart(other_addr, true);
	apart(other_mac, true);
	apart(other_ack, true);
	apart(other_window, true);
	apart(other_option, true);
	apart(other_tos, true);
	apart(other_ttl, true);
	apart(with_ece, false);
	apart(with_fin, false);
	apart(with_syn, false);
	apart(with_rst, false);
	apart(with_urg, false);
	apart(no_ack, false);
	apart(fragment, false);
	apart(ip_options, false);
	apart(not_ip, false);
	apart(not_tcp, false);
}

static void test_bad_sums_never_join(void **state)
{
	unsigned int n;

	(void)state;
	n = cut(build(3 * MSS, 0, 0x10), MSS);
	seg[1][34 + 20 + 7] ^= 0x40;			/* a payload bit flipped on the wire */
	assert_int_equal(add_all(n, false), 1);
	gro_reset(&g);
	assert_false(gro_add(&g, seg[1], seglen[1], false));	/* not even alone */
	/* the NIC checked it (valid): taken as it is */
	assert_int_equal(add_all(n, true), n);

	n = cut(build(3 * MSS, 0, 0x10), MSS);
	seg[2][14 + 10] ^= 1;				/* only the IP header's sum wrong */
	gro_reset(&g);
	assert_true(gro_add(&g, seg[0], seglen[0], false));
	assert_true(gro_add(&g, seg[1], seglen[1], false));
	assert_false(gro_add(&g, seg[2], seglen[2], false));
	assert_int_equal(g.segs, 2);
}

static void test_lengths(void **state)
{
	unsigned int n, k;

	(void)state;
	/* a frame shorter than its IP length, one with only headers */
	n = cut(build(2 * MSS, 0, 0x10), MSS);
	gro_reset(&g);
	assert_false(gro_add(&g, seg[0], seglen[0] - 1, true));
	assert_false(gro_add(&g, seg[0], 54, true));
	put_be16(seg[0] + 16, 40);
	assert_false(gro_add(&g, seg[0], seglen[0], true));
	/* Ethernet padding after the IP packet is not payload */
	n = cut(build(2 * MSS, 0, 0x10), MSS);
	gro_reset(&g);
	assert_true(gro_add(&g, seg[0], seglen[0] + 6, true));
	assert_int_equal(g.payload, MSS);
	/* GRO_MAX_SEGS small segments, and no more */
	n = cut(build((GRO_MAX_SEGS + 4) * 100, 0, 0x10), 100);
	assert_int_equal(add_all(n, true), GRO_MAX_SEGS);
	/* never over an IP packet: 65535 - 40 bytes of payload fill it */
	n = cut(build(65535 - 40, 0, 0x10), MSS);
	assert_int_equal(add_all(n, true), n);
	assert_int_equal(gro_finish(&g), 14 + 65535);
	gro_reset(&g);
	cut(build(45 * MSS, 0, 0x10), MSS);
	for (k = 0; k < 45; k++)
		assert_true(gro_add(&g, seg[k], seglen[k], true));
	assert_int_equal(g.hlen - 14 + g.payload, 40 + 45 * MSS);
	/* a 46th full segment would make it 66648 bytes */
	put_be32(seg[44] + 38, SEQ0 + 45u * MSS);
	assert_false(gro_add(&g, seg[44], seglen[44], true));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_segments_join_back),
		cmocka_unit_test(test_the_last_one_ends_it),
		cmocka_unit_test(test_what_stays_apart),
		cmocka_unit_test(test_bad_sums_never_join),
		cmocka_unit_test(test_lengths),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
