/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef FERRY_HV_LIB_WIPE_H
#define FERRY_HV_LIB_WIPE_H

#include <stddef.h>

/*
 * Zero memory that held a secret.  The stores go through a volatile
 * pointer and the asm barrier tells the compiler the memory is read
 * afterwards, so neither dead-store elimination nor inlining can drop the
 * wipe, even just before the memory is freed.
 */
static inline void mem_wipe(void *p, size_t n)
{
	volatile unsigned char *v = p;

	while (n--)
		*v++ = 0;
	__asm__ __volatile__("" : : "r"(p) : "memory");
}

#endif
