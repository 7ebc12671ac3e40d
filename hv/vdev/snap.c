/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Device snapshots: bounds-checked little-endian field walker shared by
 * save and restore (see snap.h).
 */
#include <errno.h>
#include <string.h>
#include "hv/vdev/snap.h"

void snap_save_init(struct snap *s, void *buf, size_t cap)
{
	s->buf = buf;
	s->cap = buf ? cap : SIZE_MAX;
	s->pos = 0;
	s->restore = false;
	s->err = 0;
}

void snap_restore_init(struct snap *s, const void *buf, size_t len)
{
	s->buf = (uint8_t *)(uintptr_t)buf;	/* restore never writes it */
	s->cap = buf ? len : 0;
	s->pos = 0;
	s->restore = true;
	s->err = 0;
}

/* Reserve len bytes at pos: returns where they are (NULL when measuring),
 * or sets the error.  *ok says whether the caller may go on. */
static uint8_t *take(struct snap *s, size_t len, bool *ok)
{
	uint8_t *p;

	*ok = false;
	if (s->err)
		return NULL;
	if (len > s->cap - s->pos) {
		s->err = s->restore ? -EINVAL : -EOVERFLOW;
		return NULL;
	}
	p = s->buf ? s->buf + s->pos : NULL;
	s->pos += len;
	*ok = true;
	return p;
}

/* The one primitive: an unsigned little-endian integer of n bytes. */
static void snap_le(struct snap *s, uint64_t *v, size_t n)
{
	bool ok;
	uint8_t *p = take(s, n, &ok);
	uint64_t x = 0;

	if (!ok || !p)
		return;
	if (!s->restore) {
		for (size_t i = 0; i < n; i++)
			p[i] = (uint8_t)(*v >> (8 * i));
		return;
	}
	for (size_t i = 0; i < n; i++)
		x |= (uint64_t)p[i] << (8 * i);
	*v = x;
}

void snap_u8(struct snap *s, uint8_t *v)
{
	uint64_t x = *v;

	snap_le(s, &x, 1);
	*v = (uint8_t)x;
}

void snap_u16(struct snap *s, uint16_t *v)
{
	uint64_t x = *v;

	snap_le(s, &x, 2);
	*v = (uint16_t)x;
}

void snap_u32(struct snap *s, uint32_t *v)
{
	uint64_t x = *v;

	snap_le(s, &x, 4);
	*v = (uint32_t)x;
}

void snap_u64(struct snap *s, uint64_t *v)
{
	snap_le(s, v, 8);
}

void snap_bool(struct snap *s, bool *v)
{
	uint64_t x = *v ? 1 : 0;

	snap_le(s, &x, 1);
	if (s->err)
		return;
	if (x > 1) {
		s->err = -EINVAL;
		return;
	}
	*v = x != 0;
}

void snap_bytes(struct snap *s, void *p, size_t len)
{
	bool ok;
	uint8_t *q = take(s, len, &ok);

	if (!ok || !q || !len)
		return;
	if (s->restore)
		memcpy(p, q, len);
	else
		memcpy(q, p, len);
}

int snap_version(struct snap *s, uint8_t version)
{
	uint8_t v = version;

	snap_u8(s, &v);
	if (!s->err && v != version)
		s->err = -EINVAL;
	return s->err;
}

int snap_invalid(struct snap *s)
{
	if (!s->err)
		s->err = -EINVAL;
	return s->err;
}
