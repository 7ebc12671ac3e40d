/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The `nettest` throughput test over the TCP stream API, as pure state
 * machines the shell polls: a sender of a reproducible byte stream and a
 * receiver that counts bytes and computes their CRC-32.
 *
 * The stream: byte i is byte (i mod 8) of the little-endian 64-bit value
 * splitmix64(i div 8), where splitmix64(k) is: z = (k + 1) *
 * 0x9E3779B97F4A7C15; z = (z ^ z>>30) * 0xBF58476D1CE4E5B9; z = (z ^ z>>27) *
 * 0x94D049BB133111EB; z ^ z>>31 (all mod 2^64).  A host-side peer can
 * produce or check it without ferry's code.
 */
#ifndef FERRY_HV_NET_NETTEST_H
#define FERRY_HV_NET_NETTEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hv/net/tcp.h"

#define NETTEST_CHUNK	16384

/* Bytes [offset, offset + len) of the stream. */
void nettest_fill(uint64_t offset, void *buf, size_t len);

/* nettest_fill, and return crc32_update(crc, buf, len) of what it wrote
 * (in one pass: the words are checksummed as they are made). */
uint32_t nettest_fill_crc(uint64_t offset, void *buf, size_t len, uint32_t crc);

/* Bytes per second for bytes moved in us microseconds (0 if us is 0). */
uint64_t nettest_rate(uint64_t bytes, uint64_t us);

/* Receiving side of one connection.  Owned by the caller. */
struct nettest_rx {
	struct tcp_conn *c;
	uint64_t bytes;
	uint32_t crc;
	uint64_t start_us, end_us;	/* accept to end of stream */
	bool done;
	int err;
	uint8_t buf[NETTEST_CHUNK];
};

void nettest_rx_init(struct nettest_rx *r, struct tcp_conn *c, uint64_t now_us);
/* Consume what has arrived: 1 at end of stream, 0 to be called again,
 * <0 on a connection error (also kept in r->err). */
int nettest_rx_poll(struct nettest_rx *r, uint64_t now_us);

/* Sending side: total bytes of the stream, then FIN. */
struct nettest_tx {
	struct tcp_conn *c;
	uint64_t total, queued;
	uint32_t crc;			/* of the bytes queued so far */
	uint64_t start_us, end_us;	/* start to FIN acknowledged */
	bool shut, done;
	int err;
	uint8_t buf[NETTEST_CHUNK];
};

void nettest_tx_init(struct nettest_tx *t, struct tcp_conn *c, uint64_t total,
		     uint64_t now_us);
/* Queue more of the stream: 1 once everything including FIN is
 * acknowledged, 0 to be called again, <0 on error. */
int nettest_tx_poll(struct nettest_tx *t, uint64_t now_us);

#endif
