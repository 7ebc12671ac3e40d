/* SPDX-License-Identifier: BSD-2-Clause */
/* The DRBG for ephemeral keys and its hardware source (random.h). */
#include <errno.h>
#include <string.h>
#include <bearssl.h>

#include "arch/x86/cpu.h"
#include "hv/crypto/crypto.h"
#include "hv/crypto/random.h"

#define HW_WORDS	8	/* 512 bits from the hardware per (re)seed */
#define HW_RETRIES	100	/* RDRAND: the SDM's ten retries are plenty; RDSEED
				 * runs dry under load and wants a pause between
				 * (Intel's DRNG guide): 100, paused, for both */
#define JITTER		64	/* TSC samples around the hardware draws */

static struct {
	br_hmac_drbg_context drbg;
	rng_hw_fn hw, fallback;
	const char *name;
	bool ready;
	uint8_t seed[RNG_SEED_MAX];	/* the caller's, until the DRBG is seeded */
	size_t seed_len;
} R;

/* RDSEED and RDRAND set CF when the destination holds a random value
 * (SDM Vol. 2B, "RDRAND", "RDSEED"). */
static bool hw_rdseed(uint64_t *out)
{
	uint8_t ok;

	__asm__ volatile("rdseed %0; setc %1" : "=r"(*out), "=qm"(ok) : : "cc");
	return ok;
}

static bool hw_rdrand(uint64_t *out)
{
	uint8_t ok;

	__asm__ volatile("rdrand %0; setc %1" : "=r"(*out), "=qm"(ok) : : "cc");
	return ok;
}

/* CPUID.(EAX=7,ECX=0):EBX[18] RDSEED; CPUID.01H:ECX[30] RDRAND. */
rng_hw_fn rng_cpu_fallback(void)
{
	return cpuid(1, 0).ecx & (1u << 30) ? hw_rdrand : NULL;
}

rng_hw_fn rng_cpu_source(const char **name)
{
	if (cpuid(0, 0).eax >= 7 && (cpuid(7, 0).ebx & (1u << 18))) {
		*name = "RDSEED";
		return hw_rdseed;
	}
	if (cpuid(1, 0).ecx & (1u << 30)) {
		*name = "RDRAND";
		return hw_rdrand;
	}
	*name = NULL;
	return NULL;
}

/* HW_WORDS draws from hw, each retried with a pause; the TSC between them
 * adds its jitter.  A word equal to the one before is a source stuck at one
 * value (as some AMD CPUs' RDRAND returned all ones, carry set): -EIO, as
 * for a source that gives nothing. */
static int gather_from(rng_hw_fn hw, uint64_t words[HW_WORDS], uint64_t tsc[HW_WORDS])
{
	for (int i = 0; i < HW_WORDS; i++) {
		int tries = 0;

		while (!hw(&words[i])) {
			if (++tries == HW_RETRIES)
				return -EIO;
			__builtin_ia32_pause();
		}
		if (i && words[i] == words[i - 1])
			return -EIO;
		tsc[i] = rdtsc();
	}
	return 0;
}

/* The source, else the fallback (RDSEED runs dry when a guest spins on it:
 * the RDRAND behind it is then still there). */
static int gather(uint64_t words[HW_WORDS], uint64_t tsc[HW_WORDS])
{
	int err = gather_from(R.hw, words, tsc);

	if (err && R.fallback)
		err = gather_from(R.fallback, words, tsc);
	return err;
}

/* The first seeding: the hardware's words, the caller's seed and jitter. */
static int seed_now(void)
{
	uint64_t words[HW_WORDS], tsc[HW_WORDS], jitter[JITTER];
	int err;

	for (int i = 0; i < JITTER; i++)
		jitter[i] = rdtsc();
	err = gather(words, tsc);
	if (!err) {
		br_hmac_drbg_init(&R.drbg, &br_sha256_vtable, words, sizeof(words));
		br_hmac_drbg_update(&R.drbg, tsc, sizeof(tsc));
		br_hmac_drbg_update(&R.drbg, jitter, sizeof(jitter));
		if (R.seed_len)
			br_hmac_drbg_update(&R.drbg, R.seed, R.seed_len);
		crypto_wipe(R.seed, sizeof(R.seed));
		R.seed_len = 0;
		R.ready = true;
	}
	crypto_wipe(words, sizeof(words));
	return err;
}

int rng_setup(rng_hw_fn hw, const char *name, rng_hw_fn fallback, const void *seed,
	      size_t seed_len)
{
	crypto_wipe(&R, sizeof(R));
	if (!hw)
		return -ENODEV;
	R.hw = hw;
	R.fallback = fallback;
	R.name = name;
	R.seed_len = seed && seed_len ? (seed_len < RNG_SEED_MAX ? seed_len : RNG_SEED_MAX) : 0;
	if (R.seed_len)
		memcpy(R.seed, seed, R.seed_len);
	return seed_now();
}

int rng_bytes(void *out, size_t len)
{
	uint64_t words[HW_WORDS], tsc[HW_WORDS];
	int err;

	if (!R.hw)
		return -ENODEV;
	if (!R.ready)
		return seed_now() ? -EIO : rng_bytes(out, len);	/* it failed at boot: again */
	/* Reseeded from the hardware when it gives something; when it gives
	 * nothing now (run dry by a guest), the DRBG goes on from its seed,
	 * which is as good as it was: a guest cannot stop migrations so. */
	err = gather(words, tsc);
	if (!err) {
		br_hmac_drbg_update(&R.drbg, words, sizeof(words));
		br_hmac_drbg_update(&R.drbg, tsc, sizeof(tsc));
	}
	br_hmac_drbg_generate(&R.drbg, out, len);
	crypto_wipe(words, sizeof(words));
	return 0;
}

const char *rng_source(void)
{
	return R.ready ? R.name : NULL;
}

const char *rng_why(void)
{
	if (R.ready)
		return NULL;
	return R.hw ? "the CPU's random source gave no (or a stuck) value; tried again at each use"
		    : "no random source for ephemeral keys (no RDSEED or RDRAND)";
}
