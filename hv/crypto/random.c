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
	rng_hw_fn hw;
	const char *name;
	bool ready;
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

/* HW_WORDS draws, each retried with a pause; the TSC between them adds its
 * jitter.  A word equal to the one before is a source stuck at one value
 * (as some AMD CPUs' RDRAND returned all ones, carry set): -EIO, as for a
 * source that gives nothing. */
static int gather(uint64_t words[HW_WORDS], uint64_t tsc[HW_WORDS])
{
	for (int i = 0; i < HW_WORDS; i++) {
		int tries = 0;

		while (!R.hw(&words[i])) {
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

int rng_setup(rng_hw_fn hw, const char *name, const void *seed, size_t seed_len)
{
	uint64_t words[HW_WORDS], tsc[HW_WORDS], jitter[JITTER];
	int err;

	crypto_wipe(&R, sizeof(R));
	if (!hw)
		return -ENODEV;
	R.hw = hw;
	R.name = name;
	for (int i = 0; i < JITTER; i++)
		jitter[i] = rdtsc();
	err = gather(words, tsc);
	if (!err) {
		br_hmac_drbg_init(&R.drbg, &br_sha256_vtable, words, sizeof(words));
		br_hmac_drbg_update(&R.drbg, tsc, sizeof(tsc));
		br_hmac_drbg_update(&R.drbg, jitter, sizeof(jitter));
		if (seed && seed_len)
			br_hmac_drbg_update(&R.drbg, seed, seed_len);
		R.ready = true;
	}
	crypto_wipe(words, sizeof(words));
	return err;
}

int rng_bytes(void *out, size_t len)
{
	uint64_t words[HW_WORDS], tsc[HW_WORDS];
	int err;

	if (!R.ready)
		return -ENODEV;
	err = gather(words, tsc);
	if (!err) {
		br_hmac_drbg_update(&R.drbg, words, sizeof(words));
		br_hmac_drbg_update(&R.drbg, tsc, sizeof(tsc));
		br_hmac_drbg_generate(&R.drbg, out, len);
	}
	crypto_wipe(words, sizeof(words));
	return err;
}

const char *rng_source(void)
{
	return R.ready ? R.name : NULL;
}
