/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Random bytes for ephemeral keys: BearSSL's HMAC-DRBG (SHA-256), seeded
 * from the CPU's hardware source (RDSEED, else RDRAND), the host key file's
 * seed and TSC jitter, and reseeded from the hardware source before every
 * draw.  A CPU with neither instruction has no good source: rng_bytes then
 * refuses (-ENODEV) rather than giving bytes an attacker might guess.
 * Used by the shell CPU only (migrations run there): not locked.
 */
#ifndef FERRY_CRYPTO_RANDOM_H
#define FERRY_CRYPTO_RANDOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One 64-bit draw from a hardware source: true on success. */
typedef bool (*rng_hw_fn)(uint64_t *out);

/* The CPU's best source (RDSEED, then RDRAND; CPUID says), or NULL; *name
 * says which ("RDSEED", "RDRAND"). */
rng_hw_fn rng_cpu_source(const char **name);

/*
 * Seed the DRBG from hw (NULL: no source, the DRBG stays off), the caller's
 * seed (may be NULL) and TSC jitter.  0, -ENODEV (no source) or -EIO (the
 * source failed ten times in a row, SDM Vol. 1 7.3.17.1's advice).
 */
int rng_setup(rng_hw_fn hw, const char *name, const void *seed, size_t seed_len);
/* Fill out; 0, -ENODEV (never seeded) or -EIO. */
int rng_bytes(void *out, size_t len);
/* The source in use, or NULL when there is none. */
const char *rng_source(void);

#endif
