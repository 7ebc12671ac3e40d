/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * This host's migration identity and the peers it trusts, known-hosts
 * style: a peer is a name, a pinned X25519 public key and, optionally, the
 * one address it may connect from and is reached at.  `migrate trust`,
 * `untrust`, `trusted` and `key` (hv/shell/cmd_migrate.c) show and change
 * it; the channel (chan.c) pins keys from it.  Pure: no I/O, no logging.
 * Shell CPU only: not locked.
 */
#ifndef FERRY_HV_MIGRATE_TRUST_H
#define FERRY_HV_MIGRATE_TRUST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "hv/crypto/keyfile.h"

#define MIG_TRUST_MAX		16
#define MIG_PEER_NAME_MAX	31	/* the shell's name rule */

struct mig_peer {
	char name[MIG_PEER_NAME_MAX + 1];
	uint8_t pub[NOISE_KEY];
	uint8_t fp[KEY_FP_BYTES];	/* key_fp_bytes(pub) */
	char fp_text[KEY_FP_LEN + 1];
	uint32_t ip;			/* host order; 0: any address */
};

/* One host's keys.  why says why there is no usable key (for errors). */
struct mig_keyring {
	bool have_key;
	struct host_key key;		/* secret */
	uint8_t fp[KEY_FP_BYTES];
	char fp_text[KEY_FP_LEN + 1];
	char why[128];			/* no key: the reason, for `migrate key` */
	struct mig_peer peer[MIG_TRUST_MAX];
	unsigned int nr_peers;
};

/* This host's keyring (identity.c; the host tests give one per host). */
struct mig_keyring *mig_keyring(void);

/* Take k as the host key (copied; the caller wipes its copy). */
void mig_keyring_set_key(struct mig_keyring *kr, const struct host_key *k);
/* No key: forget any, and remember why. */
void mig_keyring_no_key(struct mig_keyring *kr, const char *why);

/* Can this host make a secure channel (a key, and a random source for
 * ephemeral keys)?  0, or -ENOENT / -ENODEV with the reason in why. */
int mig_secure_ready(const struct mig_keyring *kr, char *why, size_t len);

/*
 * Trust pub as name, from and at ip (0: any address).  0; -EINVAL (bad
 * name), -EEXIST (the name, key or address is another peer's: untrust it
 * first), -ENOSPC (table full), with err set.  Trusting the same name, key
 * and address again is 0 and changes nothing.
 */
int mig_trust_add(struct mig_keyring *kr, const char *name, const uint8_t pub[NOISE_KEY],
		  uint32_t ip, char *err, size_t errlen);
/* 0, or -ENOENT. */
int mig_trust_remove(struct mig_keyring *kr, const char *name);

const struct mig_peer *mig_trust_by_name(const struct mig_keyring *kr, const char *name);
const struct mig_peer *mig_trust_by_ip(const struct mig_keyring *kr, uint32_t ip);
const struct mig_peer *mig_trust_by_fp(const struct mig_keyring *kr,
				       const uint8_t fp[KEY_FP_BYTES]);

#endif
