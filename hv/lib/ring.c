/* SPDX-License-Identifier: BSD-2-Clause */
/* Byte ring keeping the newest bytes written. */
#include "hv/lib/ring.h"

void ring_put(struct ring *r, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		r->buf[(r->head + i) % RING_SIZE] = s[i];
	r->head += n;
}

size_t ring_read(const struct ring *r, uint64_t *pos, char *out, size_t max)
{
	size_t n = 0;

	if (*pos + RING_SIZE < r->head)
		*pos = r->head - RING_SIZE;	/* lost: overwritten */
	while (*pos < r->head && n < max)
		out[n++] = r->buf[(*pos)++ % RING_SIZE];
	return n;
}

uint64_t ring_tail(const struct ring *r, size_t back)
{
	if (back > RING_SIZE)
		back = RING_SIZE;
	return r->head > back ? r->head - back : 0;
}
