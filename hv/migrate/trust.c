/* SPDX-License-Identifier: BSD-2-Clause */
/* The trusted peers and the host key (trust.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "hv/crypto/crypto.h"
#include "hv/crypto/random.h"
#include "hv/migrate/trust.h"

void mig_keyring_set_key(struct mig_keyring *kr, const struct host_key *k)
{
	kr->key = *k;
	kr->have_key = true;
	kr->why[0] = 0;
	key_fp_bytes(k->pub, kr->fp);
	key_fingerprint(k->pub, kr->fp_text);
}

void mig_keyring_no_key(struct mig_keyring *kr, const char *why)
{
	crypto_wipe(&kr->key, sizeof(kr->key));
	kr->have_key = false;
	memset(kr->fp, 0, sizeof(kr->fp));
	kr->fp_text[0] = 0;
	snprintf(kr->why, sizeof(kr->why), "%s", why);
}

/* 1..31 of [A-Za-z0-9_.-], first a letter or digit, and not an address
 * (a HOST argument may be either). */
static bool peer_name_ok(const char *s)
{
	size_t n = strlen(s);
	bool digits_dots = true;

	if (!n || n > MIG_PEER_NAME_MAX ||
	    !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') ||
	      (s[0] >= '0' && s[0] <= '9')))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			     (c >= '0' && c <= '9');
		if (!alnum && c != '_' && c != '.' && c != '-')
			return false;
		if (!(c >= '0' && c <= '9') && c != '.')
			digits_dots = false;
	}
	return !digits_dots;
}

static bool same(const struct mig_peer *p, const uint8_t pub[NOISE_KEY], uint32_t ip)
{
	return !memcmp(p->pub, pub, NOISE_KEY) && p->ip == ip;
}

/* Another peer that holds the name, the key or the address? */
static const struct mig_peer *clash(const struct mig_keyring *kr, const char *name,
				    const uint8_t pub[NOISE_KEY], uint32_t ip, const char **what)
{
	uint8_t fp[KEY_FP_BYTES];

	key_fp_bytes(pub, fp);
	for (unsigned int i = 0; i < kr->nr_peers; i++) {
		const struct mig_peer *p = &kr->peer[i];
		/* the handshake finds a peer by its fingerprint: one each */
		*what = !strcmp(p->name, name) ? "the name" :
			!memcmp(p->pub, pub, NOISE_KEY) || !memcmp(p->fp, fp, KEY_FP_BYTES) ?
			"that key" :
			ip && p->ip == ip ? "that address" : NULL;
		if (*what)
			return p;
	}
	return NULL;
}

int mig_trust_add(struct mig_keyring *kr, const char *name, const uint8_t pub[NOISE_KEY],
		  uint32_t ip, char *err, size_t errlen)
{
	const struct mig_peer *c;
	struct mig_peer *p;
	const char *what;

	if (!peer_name_ok(name)) {
		snprintf(err, errlen, "bad peer name '%s' (1-%d of A-Z a-z 0-9 _ . -, first a "
			 "letter or digit, not an address)", name, MIG_PEER_NAME_MAX);
		return -EINVAL;
	}
	if (!noise_pubkey_usable(pub)) {
		snprintf(err, errlen, "not a usable X25519 public key (of low order, or not "
			 "canonical): check what was pasted");
		return -EINVAL;
	}
	c = clash(kr, name, pub, ip, &what);
	if (c && !strcmp(c->name, name) && same(c, pub, ip))
		return 0;
	if (c) {
		snprintf(err, errlen, "%s is trusted as '%s' already (`migrate untrust %s` first)",
			 what, c->name, c->name);
		return -EEXIST;
	}
	if (kr->nr_peers == MIG_TRUST_MAX) {
		snprintf(err, errlen, "at most %d trusted peers", MIG_TRUST_MAX);
		return -ENOSPC;
	}
	p = &kr->peer[kr->nr_peers++];
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", name);
	memcpy(p->pub, pub, NOISE_KEY);
	key_fp_bytes(pub, p->fp);
	key_fingerprint(pub, p->fp_text);
	p->ip = ip;
	return 0;
}

int mig_trust_remove(struct mig_keyring *kr, const char *name)
{
	for (unsigned int i = 0; i < kr->nr_peers; i++) {
		if (strcmp(kr->peer[i].name, name))
			continue;
		memmove(&kr->peer[i], &kr->peer[i + 1],
			(kr->nr_peers - i - 1) * sizeof(kr->peer[0]));
		kr->nr_peers--;
		memset(&kr->peer[kr->nr_peers], 0, sizeof(kr->peer[0]));
		return 0;
	}
	return -ENOENT;
}

const struct mig_peer *mig_trust_by_name(const struct mig_keyring *kr, const char *name)
{
	for (unsigned int i = 0; i < kr->nr_peers; i++)
		if (!strcmp(kr->peer[i].name, name))
			return &kr->peer[i];
	return NULL;
}

const struct mig_peer *mig_trust_by_ip(const struct mig_keyring *kr, uint32_t ip)
{
	for (unsigned int i = 0; ip && i < kr->nr_peers; i++)
		if (kr->peer[i].ip == ip)
			return &kr->peer[i];
	return NULL;
}

const struct mig_peer *mig_trust_by_fp(const struct mig_keyring *kr,
				       const uint8_t fp[KEY_FP_BYTES])
{
	for (unsigned int i = 0; i < kr->nr_peers; i++)
		if (!memcmp(kr->peer[i].fp, fp, KEY_FP_BYTES))
			return &kr->peer[i];
	return NULL;
}

int mig_secure_ready(const struct mig_keyring *kr, char *why, size_t len)
{
	if (!kr->have_key) {
		snprintf(why, len, "%s", kr->why[0] ? kr->why : "no host key");
		return -ENOENT;
	}
	if (!rng_source()) {
		snprintf(why, len, "%s", rng_why());
		return -ENODEV;
	}
	return 0;
}
