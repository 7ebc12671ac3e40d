/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internet checksum (RFC 1071, RFC 1624 for the folding rules).  Eight bytes
 * per step with end-around carry: one pass over the data, no per-byte work.
 */
#include "hv/net/cksum.h"
#include "hv/net/proto.h"

#include <string.h>

static uint64_t add_carry(uint64_t a, uint64_t b)
{
	uint64_t s = a + b;

	return s + (s < b);	/* end-around carry */
}

uint64_t csum_add(uint64_t sum, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t w;
	uint32_t w32;
	uint16_t w16;

	for (; len >= 32; p += 32, len -= 32) {
		uint64_t a, b, c, d;

		memcpy(&a, p, 8);
		memcpy(&b, p + 8, 8);
		memcpy(&c, p + 16, 8);
		memcpy(&d, p + 24, 8);
		sum = add_carry(add_carry(sum, a), b);
		sum = add_carry(add_carry(sum, c), d);
	}
	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&w, p, 8);
		sum = add_carry(sum, w);
	}
	if (len >= 4) {
		memcpy(&w32, p, 4);
		sum = add_carry(sum, w32);
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		memcpy(&w16, p, 2);
		sum = add_carry(sum, w16);
		p += 2;
		len -= 2;
	}
	if (len) {
		uint8_t last[2] = { p[0], 0 };

		memcpy(&w16, last, 2);
		sum = add_carry(sum, w16);
	}
	return sum;
}

uint16_t csum_fold(uint64_t sum)
{
	sum = (sum & 0xffffffffu) + (sum >> 32);
	sum = (sum & 0xffffffffu) + (sum >> 32);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

uint16_t csum_finish(uint64_t sum)
{
	return (uint16_t)~csum_fold(sum);
}

uint64_t csum_pseudo(uint32_t src, uint32_t dst, uint8_t proto, uint16_t len)
{
	uint8_t ph[12];

	put_be32(ph, src);
	put_be32(ph + 4, dst);
	ph[8] = 0;
	ph[9] = proto;
	put_be16(ph + 10, len);
	return csum_add(0, ph, sizeof(ph));
}

void csum_store(uint8_t *field, uint16_t csum)
{
	memcpy(field, &csum, 2);
}

int csum_ok(uint64_t sum)
{
	return csum_fold(sum) == 0xffff;
}
