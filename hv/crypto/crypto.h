/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ferry's crypto layer: BearSSL (built by tools/build-bearssl.sh from
 * Debian's source, see docs/migration.md) and the little ferry puts on it.
 * Sits just above hv/lib; nothing here touches hardware.
 */
#ifndef FERRY_CRYPTO_CRYPTO_H
#define FERRY_CRYPTO_CRYPTO_H

#include <stddef.h>

/*
 * Zero a secret.  The stores go through a volatile pointer and the asm
 * barrier tells the compiler the memory is read afterwards, so neither
 * dead-store elimination nor inlining can drop the wipe.
 */
static inline void crypto_wipe(void *p, size_t n)
{
	volatile unsigned char *v = p;

	while (n--)
		*v++ = 0;
	__asm__ __volatile__("" : : "r"(p) : "memory");
}

/* Known-answer tests of the primitives ferry uses; 0 or -EIO. */
int crypto_selftest(void);

#endif
