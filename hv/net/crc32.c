/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CRC-32 (ISO 3309 / ITU-T V.42, the zlib variant), slicing-by-8: eight table
 * look-ups per eight bytes.  The tables are computed on first use; the
 * computation is idempotent, so a racing first use only writes equal values.
 */
#include "hv/net/crc32.h"

#define CRC32_POLY 0xEDB88320u

static uint32_t crc_tab[8][256];
static int crc_ready;

static void crc32_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (CRC32_POLY & (0u - (c & 1)));
		crc_tab[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++) {
			uint32_t prev = crc_tab[t - 1][i];

			crc_tab[t][i] = (prev >> 8) ^ crc_tab[0][prev & 0xff];
		}
	__atomic_store_n(&crc_ready, 1, __ATOMIC_RELEASE);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 |
	       (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t crc32_block8(uint32_t c, const uint8_t *p)
{
	uint32_t a = c ^ le32(p), b = le32(p + 4);

	return crc_tab[7][a & 0xff] ^ crc_tab[6][(a >> 8) & 0xff] ^
	       crc_tab[5][(a >> 16) & 0xff] ^ crc_tab[4][a >> 24] ^
	       crc_tab[3][b & 0xff] ^ crc_tab[2][(b >> 8) & 0xff] ^
	       crc_tab[1][(b >> 16) & 0xff] ^ crc_tab[0][b >> 24];
}

uint32_t crc32_update(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t c = ~crc;

	if (!__atomic_load_n(&crc_ready, __ATOMIC_ACQUIRE))
		crc32_init();
	for (; len >= 8; p += 8, len -= 8)
		c = crc32_block8(c, p);
	while (len--)
		c = (c >> 8) ^ crc_tab[0][(c ^ *p++) & 0xff];
	return ~c;
}
