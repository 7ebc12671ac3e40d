/* SPDX-License-Identifier: BSD-2-Clause */
/* Sparse pages (sparse.h). */
#include <string.h>
#include "hv/lib/bytes.h"
#include "hv/migrate/sparse.h"

#define WORDS		512u	/* 8-byte words in a page */
#define SEG_HDR		4u
#define SAMPLES		16u	/* sampled words, one in each 256 bytes */
#define STRIDE		(WORDS / SAMPLES)


bool mig_sparse_likely(const void *page)
{
	const volatile uint64_t *q = page;	/* a running guest may write it */
	unsigned int zero = 0;

	for (unsigned int i = 0; i < SAMPLES; i++)
		zero += q[i * STRIDE + i * 5 % STRIDE] == 0;	/* not always a line's start */
	return zero >= SAMPLES / 2;
}

int mig_sparse_encode(const void *page, uint8_t *out, size_t cap)
{
	const volatile uint64_t *q = page;
	uint8_t *seg = NULL;		/* header of the open segment */
	size_t len = 0;
	uint16_t words = 0;

	if (cap > MIG_SPARSE_MAX)
		cap = MIG_SPARSE_MAX;
	for (unsigned int i = 0; i < WORDS; i++) {
		uint64_t w = q[i];	/* read once: what we test is what we send */

		if (!w) {
			if (seg)
				put_le16(seg + 2, words);
			seg = NULL;
			continue;
		}
		if (!seg) {
			if (len + SEG_HDR + 8 > cap)
				return -1;
			seg = out + len;
			put_le16(seg, (uint16_t)i);
			len += SEG_HDR;
			words = 0;
		} else if (len + 8 > cap) {
			return -1;
		}
		memcpy(out + len, &w, 8);
		len += 8;
		words++;
	}
	if (seg)
		put_le16(seg + 2, words);
	return (int)len;
}

bool mig_sparse_valid(const uint8_t *in, size_t len)
{
	size_t pos = 0;
	unsigned int next = 0;		/* first word a segment may start at */

	if (len < MIG_SPARSE_MIN || len > MIG_SPARSE_MAX)
		return false;
	while (pos < len) {
		if (len - pos < SEG_HDR)
			return false;
		unsigned int first = get_le16(in + pos), n = get_le16(in + pos + 2);
		if (first < next || first >= WORDS || n == 0 || n > WORDS - first ||
		    (size_t)n * 8 > len - pos - SEG_HDR)
			return false;
		pos += SEG_HDR + (size_t)n * 8;
		next = first + n;
	}
	return true;
}

void mig_sparse_decode(const uint8_t *in, size_t len, void *page)
{
	uint8_t *p = page;
	size_t pos = 0;

	memset(p, 0, WORDS * 8);
	while (pos + SEG_HDR <= len) {
		unsigned int first = get_le16(in + pos), n = get_le16(in + pos + 2);
		memcpy(p + first * 8, in + pos + SEG_HDR, (size_t)n * 8);
		pos += SEG_HDR + (size_t)n * 8;
	}
}
