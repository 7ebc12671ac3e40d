/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * This host's key, from the GRUB module `ferry.key`, and the random source
 * for ephemeral keys, set up once at boot.  A key file that is missing,
 * malformed, truncated or of the wrong length leaves the host without a
 * key: secure migration is off (listen and send say why) and only
 * `insecure` migrations remain; ferry never runs with a weak key.
 */
#include <stdio.h>
#include "hv/crypto/crypto.h"
#include "hv/crypto/random.h"
#include "hv/lib/log.h"
#include "hv/migrate/migrate.h"
#include "hv/migrate/trust.h"
#include "hv/modules.h"

static struct mig_keyring keyring;

struct mig_keyring *mig_keyring(void)
{
	return &keyring;
}

/* Read and check the module, then wipe it: the key lives on in keyring only. */
static int load_key(struct host_key *k)
{
	const struct module *m = modules_find(MIG_KEY_MODULE);
	const char *why;
	char msg[128];

	if (!m) {
		mig_keyring_no_key(&keyring, "no host key: boot with a `" MIG_KEY_MODULE "` "
				   "module (tools/ferry-keygen makes one; README, \"Migration\")");
		pr_info("migrate: no %s module: secure migration is off", MIG_KEY_MODULE);
		return -1;
	}
	if (keyfile_parse(m->data, m->size, k, &why)) {
		snprintf(msg, sizeof(msg), "the %s module was refused at boot: %s", MIG_KEY_MODULE,
			 why);
		mig_keyring_no_key(&keyring, msg);
		pr_err("migrate: %s (%zu bytes) refused: %s; secure migration is off",
		       MIG_KEY_MODULE, m->size, why);
	} else {
		mig_keyring_set_key(&keyring, k);
	}
	crypto_wipe((void *)m->data, m->size);
	return keyring.have_key ? 0 : -1;
}

void mig_identity_init(bool crypto_ok)
{
	struct host_key k;
	const char *src;
	rng_hw_fn hw = rng_cpu_source(&src);

	if (!crypto_ok) {
		const struct module *m = modules_find(MIG_KEY_MODULE);

		/* unread, the key is still wiped: nothing may copy it later
		 * (a guest given the module by name, say) */
		if (m)
			crypto_wipe((void *)m->data, m->size);
		mig_keyring_no_key(&keyring, "the crypto self-test failed at boot");
		pr_err("migrate: the crypto self-test failed: secure migration is off");
		return;
	}
	if (load_key(&k))
		return;
	if (rng_setup(hw, src, rng_cpu_fallback(), k.seed, sizeof(k.seed)))
		pr_err("migrate: %s: no ephemeral keys, so no secure migration (a test host "
		       "needs RDRAND: QEMU -cpu ...,+rdrand)",
		       hw ? "the CPU's random source fails" : "no RDSEED or RDRAND on this CPU");
	else
		pr_info("migrate: host key %s (%s), ephemeral keys from %s through HMAC-DRBG",
			keyring.fp_text, MIG_KEY_MODULE, src);
	crypto_wipe(&k, sizeof(k));
}
