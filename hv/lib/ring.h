/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A byte ring that keeps the newest RING_SIZE bytes: a guest's console
 * history.  Writers and readers hold the owner's lock.
 */
#ifndef FERRY_HV_RING_H
#define FERRY_HV_RING_H

#include <stddef.h>
#include <stdint.h>

#define RING_SIZE (16 * 1024)

struct ring {
	uint64_t head;		/* bytes ever written */
	char buf[RING_SIZE];
};

void ring_put(struct ring *r, const char *s, size_t n);
/* Copy out the bytes written since *pos (clamped to what is kept);
 * returns how many, and moves *pos on. */
size_t ring_read(const struct ring *r, uint64_t *pos, char *out, size_t max);
/* Where a reader wanting the last `back` bytes starts. */
uint64_t ring_tail(const struct ring *r, size_t back);

#endif
