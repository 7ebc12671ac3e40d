/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Device snapshots, bhyve style: every device has ONE function
 *
 *	int X_snapshot(struct X *dev, struct snap *s);
 *
 * (time-based devices also take the guest clock, X_snapshot(dev, s, now_ns),
 * and store their times relative to it so that a restore at another time
 * base continues at the same phase) that walks its state field by field
 * with snap_u8/u16/u32/u64/bool/bytes.
 * Saving, those calls copy each field into s->buf; restoring, they copy it
 * back out.  Save and restore cannot drift apart because they are the same
 * code.  Live migration carries the resulting bytes in its stream.
 *
 * Format: fields back to back, little-endian, no padding, no self
 * description; each device starts with a version byte (snap_version).
 *
 * Errors are sticky: the first failure sets s->err and every later call is
 * a no-op, so a device walks all its fields and checks s->err once.
 *   - saving past cap:		-EOVERFLOW
 *   - restoring past the end:	-EINVAL (truncated input)
 *   - a bool that is not 0/1, a version that differs: -EINVAL
 * A restore that read garbage must be refused by the device (snap_invalid)
 * before the values are used; see the device files for the pattern.
 *
 * Saving with buf == NULL only measures: pos counts the bytes needed.
 */
#ifndef FERRY_HV_VDEV_SNAP_H
#define FERRY_HV_VDEV_SNAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct snap {
	uint8_t *buf;		/* saving: written; restoring: only read */
	size_t cap, pos;	/* bytes in buf; bytes done so far (pos <= cap) */
	bool restore;		/* direction: false = save, true = restore */
	int err;		/* 0, or the first error (negative errno) */
};

/* Start saving into buf[0..cap) (buf NULL: measure only). */
void snap_save_init(struct snap *s, void *buf, size_t cap);
/* Start restoring from buf[0..len); buf is never written. */
void snap_restore_init(struct snap *s, const void *buf, size_t len);

/* Save *v, or restore into *v.  No-ops once s->err is set; a failed
 * restore leaves *v unchanged. */
void snap_u8(struct snap *s, uint8_t *v);
void snap_u16(struct snap *s, uint16_t *v);
void snap_u32(struct snap *s, uint32_t *v);
void snap_u64(struct snap *s, uint64_t *v);
void snap_bool(struct snap *s, bool *v);		/* one byte, 0 or 1 */
void snap_bytes(struct snap *s, void *p, size_t len);	/* raw bytes */

/* Save the version byte, or restore and compare it (-EINVAL if it
 * differs).  Returns s->err. */
int snap_version(struct snap *s, uint8_t version);
/* Mark restored data as unacceptable: s->err = -EINVAL unless an error is
 * already set.  Returns s->err. */
int snap_invalid(struct snap *s);

#endif
