/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CRC-32 as used by zlib, Ethernet and PNG (reflected polynomial 0xEDB88320,
 * initial value and final XOR 0xFFFFFFFF): crc32_update(0, "123456789", 9)
 * is 0xCBF43926.  Chain calls by passing the previous result.
 */
#ifndef FERRY_HV_NET_CRC32_H
#define FERRY_HV_NET_CRC32_H

#include <stddef.h>
#include <stdint.h>

uint32_t crc32_update(uint32_t crc, const void *buf, size_t len);

/* For loops that make the data in registers (nettest's sender): the
 * slicing-by-8 tables, filled by crc32_tables(), and one step of the raw
 * register (~crc) over the eight little-endian bytes of w. */
extern uint32_t crc32_tab[8][256];
void crc32_tables(void);

static inline uint32_t crc32_step64(uint32_t raw, uint64_t w)
{
	uint32_t a = raw ^ (uint32_t)w, b = (uint32_t)(w >> 32);

	return crc32_tab[7][a & 0xff] ^ crc32_tab[6][(a >> 8) & 0xff] ^
	       crc32_tab[5][(a >> 16) & 0xff] ^ crc32_tab[4][a >> 24] ^
	       crc32_tab[3][b & 0xff] ^ crc32_tab[2][(b >> 8) & 0xff] ^
	       crc32_tab[1][(b >> 16) & 0xff] ^ crc32_tab[0][b >> 24];
}

#endif
