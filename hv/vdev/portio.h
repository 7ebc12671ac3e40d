/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Port I/O helpers shared by the 8-bit ISA devices in hv/vdev: a 16- or
 * 32-bit access to an 8-bit device is split into byte accesses to port,
 * port+1, ... as the ISA bus does (bus sizing).  Internal to hv/vdev.
 */
#ifndef FERRY_HV_VDEV_PORTIO_H
#define FERRY_HV_VDEV_PORTIO_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

/* One byte access; returns false if port is not the device's (reads of
 * such bytes give 0xff, writes are dropped). */
typedef bool (*portio_byte_fn)(void *dev, uint16_t port, bool in, uint8_t *val);

/*
 * Do a size-byte access (1, 2 or 4) through fn.  Returns -ENOENT if the
 * first port is not the device's, -EINVAL for another size, else 0 with
 * *val filled for reads.
 */
static inline int portio_split(void *dev, portio_byte_fn fn, uint16_t port,
			       uint8_t size, bool in, uint32_t *val)
{
	uint32_t out = 0;
	uint8_t b;

	if (size != 1 && size != 2 && size != 4)
		return -EINVAL;
	for (unsigned int i = 0; i < size; i++) {
		b = in ? 0xff : (uint8_t)(*val >> (8 * i));
		if (!fn(dev, (uint16_t)(port + i), in, &b)) {
			if (i == 0)
				return -ENOENT;
			b = 0xff;
		}
		out |= (uint32_t)b << (8 * i);
	}
	if (in)
		*val = out;
	return 0;
}

#endif
