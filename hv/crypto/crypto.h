/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ferry's crypto layer: BearSSL (built by tools/build-bearssl.sh from
 * Debian's source, see docs/migration.md) and the little ferry puts on it.
 * Sits just above hv/lib; nothing here touches hardware.
 */
#ifndef FERRY_CRYPTO_CRYPTO_H
#define FERRY_CRYPTO_CRYPTO_H

#include <stddef.h>
#include "hv/lib/wipe.h"

/* Zero a secret (hv/lib/wipe.h). */
static inline void crypto_wipe(void *p, size_t n)
{
	mem_wipe(p, n);
}

/* Known-answer tests of the primitives ferry uses; 0 or -EIO. */
int crypto_selftest(void);

#endif
