/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for the stack's pure helpers: CRC-32 (known vectors, chaining,
 * against a bitwise reference), the Internet checksum (RFC 1071 example,
 * odd lengths and offsets against a reference), the nettest stream
 * generator and the address text helpers.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "hv/net/cksum.h"
#include "hv/lib/crc32.h"
#include "hv/net/net.h"
#include "hv/net/nettest.h"

static uint64_t rng = 0x1234567;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint32_t crc_ref(uint32_t crc, const uint8_t *p, size_t n)
{
	crc = ~crc;
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = crc & 1 ? (crc >> 1) ^ 0xEDB88320u : crc >> 1;
	}
	return ~crc;
}

static void test_crc_vectors(void **state)
{
	const char *fox = "The quick brown fox jumps over the lazy dog";

	(void)state;
	assert_int_equal(crc32_update(0, "123456789", 9), 0xCBF43926u);
	assert_int_equal(crc32_update(0, "", 0), 0);
	assert_int_equal(crc32_update(0, "a", 1), 0xE8B7BE43u);
	assert_int_equal(crc32_update(0, fox, strlen(fox)), 0x414FA339u);
	/* chaining */
	assert_int_equal(crc32_update(crc32_update(0, "1234", 4), "56789", 5),
			 0xCBF43926u);
}

static void test_crc_random(void **state)
{
	static uint8_t buf[4096 + 16];

	(void)state;
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rnd();
	for (int t = 0; t < 200; t++) {
		size_t off = rnd() % 16, len = rnd() % 4096, cut = len ? rnd() % len : 0;
		uint32_t want = crc_ref(0, buf + off, len);
		uint32_t got = crc32_update(crc32_update(0, buf + off, cut),
					    buf + off + cut, len - cut);

		assert_int_equal(got, want);
	}
}

/* Big-endian 16-bit word sum, the textbook way. */
static uint16_t csum_ref(const uint8_t *p, size_t n)
{
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static uint16_t stored(uint16_t c)
{
	uint8_t b[2];

	csum_store(b, c);
	return get_be16(b);
}

static void test_cksum_rfc1071(void **state)
{
	const uint8_t ex[] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };

	(void)state;
	/* RFC 1071 3: the sum is 0xddf2, the checksum its complement */
	assert_int_equal(stored(csum_finish(csum_add(0, ex, sizeof(ex)))), 0x220d);
}

static void test_cksum_random(void **state)
{
	static uint8_t buf[2048 + 8];

	(void)state;
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rnd();
	for (int t = 0; t < 500; t++) {
		size_t off = rnd() % 8, len = rnd() % 2048;
		size_t half = (rnd() % (len / 2 + 1)) * 2;	/* even split */
		uint64_t s = csum_add(csum_add(0, buf + off, half),
				      buf + off + half, len - half);

		assert_int_equal(stored(csum_finish(s)), csum_ref(buf + off, len));
	}
	/* all-ones / all-zero corner cases */
	memset(buf, 0xff, 64);
	assert_int_equal(stored(csum_finish(csum_add(0, buf, 64))), csum_ref(buf, 64));
	memset(buf, 0, 64);
	assert_int_equal(stored(csum_finish(csum_add(0, buf, 64))), 0xffff);
}

static void test_cksum_verify(void **state)
{
	uint8_t pkt[40];

	(void)state;
	for (size_t i = 0; i < sizeof(pkt); i++)
		pkt[i] = (uint8_t)(i * 37 + 5);
	put_be16(pkt + 10, 0);
	csum_store(pkt + 10, csum_finish(csum_add(0, pkt, sizeof(pkt))));
	assert_true(csum_ok(csum_add(0, pkt, sizeof(pkt))));
	pkt[3] ^= 0x40;
	assert_false(csum_ok(csum_add(0, pkt, sizeof(pkt))));
}

static void test_pseudo_header(void **state)
{
	uint8_t ph[12] = { 10, 0, 0, 1, 10, 0, 0, 2, 0, 6, 0x05, 0xdc };

	(void)state;
	assert_int_equal(stored(csum_finish(csum_pseudo(0x0a000001, 0x0a000002, 6, 1500))),
			 csum_ref(ph, sizeof(ph)));
}

static uint64_t smix(uint64_t k)
{
	uint64_t z = (k + 1) * 0x9E3779B97F4A7C15ull;

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static void test_stream(void **state)
{
	static uint8_t whole[8192], part[8192];

	(void)state;
	nettest_fill(0, whole, sizeof(whole));
	for (size_t i = 0; i < sizeof(whole); i++)
		assert_int_equal(whole[i], (uint8_t)(smix(i / 8) >> (8 * (i % 8))));
	for (int t = 0; t < 100; t++) {
		size_t off = rnd() % 4096, len = rnd() % 4096;

		nettest_fill(off, part, len);
		assert_memory_equal(part, whole + off, len);
	}
	/* far offsets work too (no state) */
	nettest_fill((1ull << 40) + 3, part, 13);
	for (size_t i = 0; i < 13; i++) {
		uint64_t o = (1ull << 40) + 3 + i;

		assert_int_equal(part[i], (uint8_t)(smix(o / 8) >> (8 * (o % 8))));
	}
}

static void test_rate(void **state)
{
	(void)state;
	assert_int_equal(nettest_rate(100 << 20, 1000000), 100 << 20);
	assert_int_equal(nettest_rate(1000, 0), 0);
	assert_int_equal(nettest_rate(3000, 2000), 1500000);
	assert_true(nettest_rate(UINT64_MAX / 2, 1000000) > 0);
}

static void test_addr_text(void **state)
{
	char buf[18];

	(void)state;
	net_format_ipv4(0xc0a80001, buf);
	assert_string_equal(buf, "192.168.0.1");
	net_format_ipv4(0, buf);
	assert_string_equal(buf, "0.0.0.0");
	net_format_mac((const uint8_t[]){ 0x52, 0x54, 0, 0xab, 0xcd, 0xef }, buf);
	assert_string_equal(buf, "52:54:00:ab:cd:ef");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc_vectors),
		cmocka_unit_test(test_crc_random),
		cmocka_unit_test(test_cksum_rfc1071),
		cmocka_unit_test(test_cksum_random),
		cmocka_unit_test(test_cksum_verify),
		cmocka_unit_test(test_pseudo_header),
		cmocka_unit_test(test_stream),
		cmocka_unit_test(test_rate),
		cmocka_unit_test(test_addr_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
