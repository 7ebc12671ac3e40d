/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The migration channel's record sealing and opening (hv/crypto/noise.c:
 * ChaCha20-Poly1305 from BearSSL, the constant-time code ferry uses) timed
 * on this machine's own CPU, not an emulated one: what the secure channel
 * costs on hardware.  Built for the host by `make bench-tools`; run by
 * tests/bench/channel_bench.py beside the emulated figures.
 *
 *   seal_native [MIB]     (default 64)
 * prints "seal MB/s open MB/s ms/MiB-seal ms/MiB-open".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hv/crypto/noise.h"

#define PIECE	65519u		/* the largest record ferry seals */

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
	size_t total = mib << 20, pieces = (total + PIECE - 1) / PIECE;
	uint8_t *pt = malloc(PIECE), *back = malloc(PIECE);
	uint8_t *wire = malloc(pieces * (PIECE + NOISE_REC_OVERHEAD));
	struct noise_cipher tx = { .n = 0 }, rx;
	size_t off = 0, out = 0, used = 0, got = 0;
	double t0, t1, t2;

	if (!pt || !back || !wire || !mib)
		return 1;
	for (size_t i = 0; i < sizeof(tx.k); i++)
		tx.k[i] = (uint8_t)(i * 7 + 1);
	rx = tx;
	for (size_t i = 0; i < PIECE; i++)
		pt[i] = (uint8_t)(i * 131);
	memset(wire, 0, pieces * (PIECE + NOISE_REC_OVERHEAD));	/* fault it in first */
	t0 = now_s();
	for (size_t p = 0; p < pieces; p++) {
		size_t n = total - p * PIECE < PIECE ? total - p * PIECE : PIECE, len = 0;

		if (noise_rec_seal(&tx, pt, n, wire + out, PIECE + NOISE_REC_OVERHEAD, &len))
			return 2;
		out += len;
	}
	t1 = now_s();
	while (off < out) {
		if (noise_rec_open(&rx, wire + off, out - off, back, PIECE, &got, &used))
			return 3;
		off += used;
	}
	t2 = now_s();
	if (memcmp(back, pt, got))
		return 4;
	printf("seal %.1f MB/s open %.1f MB/s %.3f ms/MiB-seal %.3f ms/MiB-open\n",
	       total / (t1 - t0) / 1e6, total / (t2 - t1) / 1e6, (t1 - t0) * 1e3 / mib,
	       (t2 - t1) * 1e3 / mib);
	free(pt);
	free(back);
	free(wire);
	return 0;
}
