/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The Internet checksum (RFC 1071): one's-complement sum of 16-bit words.
 * Sums are kept in the host's native word order, which RFC 1071 section 2(B)
 * shows is byte-order independent as long as the result is stored with a
 * native store (csum_store), never byte-swapped.
 */
#ifndef FERRY_HV_NET_CKSUM_H
#define FERRY_HV_NET_CKSUM_H

#include <stddef.h>
#include <stdint.h>

/* Add len bytes at buf to a running sum.  Only the last piece of a
 * checksummed region may have an odd length. */
uint64_t csum_add(uint64_t sum, const void *buf, size_t len);

/* Fold a running sum and complement it: the value for the header field. */
uint16_t csum_finish(uint64_t sum);
/* Fold without complementing: what a NIC completing the checksum (TX
 * offload) expects in the field, e.g. the pseudo-header sum. */
uint16_t csum_fold(uint64_t sum);

/* Sum of the TCP/UDP pseudo-header (RFC 9293 3.1); addresses host order. */
uint64_t csum_pseudo(uint32_t src, uint32_t dst, uint8_t proto, uint16_t len);

/* Store / load a checksum field (native order, see above). */
void csum_store(uint8_t *field, uint16_t csum);

/* True when a region whose checksum field is included sums to all ones. */
int csum_ok(uint64_t sum);

#endif
