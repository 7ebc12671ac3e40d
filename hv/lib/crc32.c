/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CRC-32 (ISO 3309 / ITU-T V.42, the zlib variant), slicing-by-8: eight table
 * look-ups per eight bytes.  The tables are computed on first use; the
 * computation is idempotent, so a racing first use only writes equal values.
 */
#include "hv/lib/crc32.h"

#define CRC32_POLY 0xEDB88320u

uint32_t crc32_tab[8][256];
static int crc_ready;

static void crc32_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (CRC32_POLY & (0u - (c & 1)));
		crc32_tab[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++) {
			uint32_t prev = crc32_tab[t - 1][i];

			crc32_tab[t][i] = (prev >> 8) ^ crc32_tab[0][prev & 0xff];
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
	return crc32_step64(c, le32(p) | (uint64_t)le32(p + 4) << 32);
}

void crc32_tables(void)
{
	if (!__atomic_load_n(&crc_ready, __ATOMIC_ACQUIRE))
		crc32_init();
}

uint32_t crc32_update(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t c = ~crc;

	crc32_tables();
	for (; len >= 8; p += 8, len -= 8)
		c = crc32_block8(c, p);
	while (len--)
		c = (c >> 8) ^ crc32_tab[0][(c ^ *p++) & 0xff];
	return ~c;
}
