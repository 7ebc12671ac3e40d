/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Sparse pages: a 4 KiB page that is mostly zero travels as its non-zero
 * 8-byte words only (page kind MIG_PAGE_SPARSE, docs/migration.md).
 * Stacks, page tables, the tail of a data section: guests have many.
 *
 * Encoding: segments back to back, each
 *   u16 first word (0..511), u16 words (1..512), then that many words,
 * in ascending order, not overlapping, inside the page; every word not in
 * a segment is zero.  At least one segment, at most MIG_SPARSE_MAX bytes.
 * Pure code, no allocation.
 */
#ifndef FERRY_HV_MIGRATE_SPARSE_H
#define FERRY_HV_MIGRATE_SPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MIG_SPARSE_MAX	2048u	/* bytes: only pages that at least halve */
#define MIG_SPARSE_MIN	12u	/* one segment of one word */

/* Cheap guess from a few sampled words: worth trying mig_sparse_encode? */
bool mig_sparse_likely(const void *page);

/*
 * Encode page into out[0..cap), cap <= MIG_SPARSE_MAX.  Reads each word of
 * the page once, so a page that changes meanwhile still gives a valid
 * encoding.  Returns the bytes written; 0 if the page is all zero; -1 if
 * it does not fit in cap (send it whole).
 */
int mig_sparse_encode(const void *page, uint8_t *out, size_t cap);

/* True if in[0..len) is a valid encoding (the receiver checks first). */
bool mig_sparse_valid(const uint8_t *in, size_t len);

/* Write the page in[0..len) encodes; in must be valid. */
void mig_sparse_decode(const uint8_t *in, size_t len, void *page);

#endif
