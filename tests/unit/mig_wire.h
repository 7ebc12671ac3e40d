/* SPDX-License-Identifier: BSD-2-Clause */
/* Helpers shared by the migration-stream unit tests (header only). */
#ifndef FERRY_TESTS_UNIT_MIG_WIRE_H
#define FERRY_TESTS_UNIT_MIG_WIRE_H

#include <stdint.h>
#include <string.h>
#include "hv/migrate/stream.h"
#include "hv/net/crc32.h"

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

#endif
