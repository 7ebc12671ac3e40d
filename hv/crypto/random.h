/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Random bytes for ephemeral keys: BearSSL's HMAC-DRBG (SHA-256), seeded
 * from the CPU's hardware source (RDSEED, else RDRAND), the host key file's
 * seed and TSC jitter, and reseeded from the hardware source (RDRAND
 * when RDSEED runs dry) before every draw where it gives something.  A CPU
 * with neither instruction has no good source: rng_bytes then refuses
 * (-ENODEV) rather than giving bytes an attacker might guess; one whose
 * source gave nothing (or a stuck value) when the DRBG was first seeded
 * refuses too (-EIO), and tries to seed it again at each use.
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
/* RDRAND where the CPU has it (the fallback when RDSEED runs dry), or NULL. */
rng_hw_fn rng_cpu_fallback(void);

#define RNG_SEED_MAX	64	/* of the caller's seed bytes, kept until seeded */

/*
 * Seed the DRBG from hw, else fallback (NULL: none), the caller's seed (may
 * be NULL; its first RNG_SEED_MAX bytes) and TSC jitter.  0, -ENODEV (no
 * source) or -EIO (each source failed 100 paused tries in a row for a
 * word, or gave the same word twice): then rng_bytes seeds it later.
 */
int rng_setup(rng_hw_fn hw, const char *name, rng_hw_fn fallback, const void *seed,
	      size_t seed_len);
/* Fill out; 0, -ENODEV (no source) or -EIO (not seeded yet: it failed). */
int rng_bytes(void *out, size_t len);
/* The source in use, or NULL when the DRBG is not seeded. */
const char *rng_source(void);
/* Why rng_source() is NULL, in words; NULL when it is not. */
const char *rng_why(void);

#endif
