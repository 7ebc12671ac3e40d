/* SPDX-License-Identifier: BSD-2-Clause */
/* Little-endian fields of the migration stream, byte by byte (any host,
 * any alignment). */
#ifndef FERRY_HV_MIGRATE_LE_H
#define FERRY_HV_MIGRATE_LE_H

#include <stdint.h>

static inline void mig_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void mig_put32(uint8_t *p, uint32_t v)
{
	mig_put16(p, (uint16_t)v);
	mig_put16(p + 2, (uint16_t)(v >> 16));
}

static inline uint16_t mig_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t mig_get32(const uint8_t *p)
{
	return mig_get16(p) | (uint32_t)mig_get16(p + 2) << 16;
}

#endif
