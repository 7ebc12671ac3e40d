/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Live migration as the shell sees it (docs/migration.md): the sender
 * (`migrate NAME HOST`, a foreground command on the shell CPU), the
 * listener and receiver (background work of the shell CPU), the list of
 * recent migrations, and one-shot fault injection for tests.
 *
 * Vendor neutral: guests are reached through hv/vmstate.h and hv/vm.h.
 */
#ifndef FERRY_HV_MIGRATE_MIGRATE_H
#define FERRY_HV_MIGRATE_MIGRATE_H

#include <stdbool.h>
#include <stdint.h>
#include "hv/migrate/policy.h"

#define MIG_ALLOW_MAX		8			/* `from` addresses */
#define MIG_IN_MAX		4			/* guests arriving at once */
#define MIG_HISTORY		16			/* `migrations` keeps these */
#define MIG_KEY_MODULE		"ferry.key"		/* the GRUB module of the host key */

/* ---- the host key (identity.c) ---- */

/* At boot: the host key from the `ferry.key` module and the random source;
 * without them (or with crypto_ok false) secure migration is off. */
void mig_identity_init(bool crypto_ok);

/* ---- sender ---- */

struct netstack;

/*
 * Where a migration out reports and how it learns to stop.  The shell's
 * foreground `migrate` prints and watches Ctrl-C (hv/shell/cmd_migrate.c);
 * a background migration would log and watch a cancel flag.
 *   print:	one line of progress or outcome, without a newline
 *   error:	the migration could not start; nothing moved
 *   cancelled:	called in every wait; may run the calling CPU's other
 *		work; true asks to cancel (not honoured after COMMIT)
 */
struct mig_sink {
	void (*print)(void *ctx, const char *line);
	void (*error)(void *ctx, const char *msg);
	bool (*cancelled)(void *ctx);
	void *ctx;
};

struct mig_out_args {
	const char *name;		/* the guest */
	const struct mig_sink *sink;
	struct netstack *net;		/* the stack to connect from: &host_if.stack
					 * (the host tests give a simulated one) */
	uint32_t ip;			/* destination, host order */
	uint16_t port;
	const char *peer_name;		/* the trusted peer to pin; NULL: the one
					 * trusted at ip */
	bool insecure;			/* plaintext, unauthenticated (warns) */
	uint64_t bandwidth_Bps;		/* 0: unlimited */
	uint32_t timeout_s;		/* peer silence that ends it; 0: mig_silence_us */
	struct mig_policy_cfg policy;	/* downtime, converge, ... */
};

/* Move the guest, reporting to a->sink.  0 when the guest runs on the
 * destination, else a negative errno (the guest runs here, or is paused
 * here in doubt: the last line said which). */
int mig_out_run(const struct mig_out_args *a);

/* mig_out_run in two steps, for a migration that runs in the background:
 * begin claims the guest and opens its `migrations` entry at once (NULL:
 * refused, *rc says why and the sink heard it); finish does the rest and
 * frees the migration; abandon, instead of finish, gives the guest back
 * untouched, the entry failed for why.  a must outlive the migration. */
struct mig_out;
struct mig_out *mig_out_begin(const struct mig_out_args *a, int *rc);
int mig_out_finish(struct mig_out *o);
void mig_out_abandon(struct mig_out *o, const char *why);

/* ---- listener and receiver ---- */

struct mig_listen_cfg {
	uint16_t port;
	uint32_t allow[MIG_ALLOW_MAX];	/* host order; none: anyone */
	unsigned int nr_allow;
	bool insecure;			/* plaintext only (warns at every migration) */
	unsigned int max_in;		/* guests arriving at once; 0: MIG_IN_MAX */
};

/* Start (or move) the listener: 0 or -errno, reason in err. */
int mig_listen(const struct mig_listen_cfg *cfg, char *err, size_t errlen);
void mig_listen_off(void);
bool mig_listening(struct mig_listen_cfg *out);
/* Background step on the shell CPU: no migration coming in; one is, and
 * this step moved nothing (wait for the network); or it did work and more
 * may be ready at once (do not sleep). */
enum mig_in_work { MIG_IN_NONE, MIG_IN_WAITING, MIG_IN_BUSY };
enum mig_in_work mig_in_poll(void);
/* The operator stops guest name's arrival (shell CPU): before COMMIT the
 * guest here is discarded and the source told (it keeps its copy); 0, or
 * -ENOENT when no guest of that name is arriving or COMMIT came already. */
int mig_in_cancel(const char *name);

/* Remember how migration id reached its destination, for the QUERY that
 * settles it in doubt: the same pinned key (peer NULL: insecure), and
 * whether the operator had paused the guest before (then "discarded"
 * leaves it paused). */
struct mig_peer;
void mig_doubt_note(uint64_t id, const struct mig_peer *peer, bool was_paused);

/* Settle in-doubt guests by asking their destination (QUERY) over net (the
 * host's stack; NULL: no network); idle: the shell runs no command now
 * (only then may a guest be freed or resumed). */
struct netstack;
void mig_doubt_poll(struct netstack *net, bool idle);

/* ---- history ---- */

enum mig_outcome {
	MIG_RUNNING, MIG_DONE, MIG_FAILED, MIG_CANCELLED, MIG_REFUSED, MIG_IN_DOUBT,
};

struct mig_entry {
	uint64_t id;
	bool out;			/* we were the source */
	char guest[32];
	char peer[24];			/* "a.b.c.d:port" */
	char key[64];			/* "NAME,SHA256:..." of the proved peer, "insecure" */
	enum mig_outcome outcome;
	uint64_t total_us, downtime_us;
	uint32_t rounds;
	uint64_t bytes, mem_bytes;	/* on the wire; guest memory */
	char why[128];			/* failure reason, if any */
	/* While it runs: rounds and bytes as they grow, and these */
	struct mig_live {
		const char *phase;	/* "connecting", "precopy", "stop-copy", ... */
		uint64_t start_us;	/* netif_now_us() at its start */
		uint64_t pages;		/* pages sent (received) so far */
		uint64_t dirty;		/* pages left after the last round */
		uint64_t rate_Bps;	/* the last round's rate */
		uint64_t downtime_us;	/* expected if it stopped now */
		uint32_t throttle_pct;
	} live;
};

/* Add an entry (the oldest one goes); returns a slot to update. */
struct mig_entry *mig_history_add(uint64_t id, bool out, const char *guest, const char *peer,
				  uint64_t mem_bytes);
/* Entry i (0 oldest) or NULL. */
const struct mig_entry *mig_history_at(unsigned int i);
/* The newest incoming migration with this id that was admitted here (not
 * refused: a refused HELLO may carry any id), from the peer whose key
 * (mig_entry.key) is key, any peer if key is NULL; or NULL.  What an
 * in-doubt source's QUERY is answered from, with the asker's key: another
 * trusted host that reuses the id once its entry is gone must not be able
 * to make it hear "discarded" while the guest runs here. */
const struct mig_entry *mig_history_find_in(uint64_t id, const char *key);
const char *mig_outcome_name(enum mig_outcome o);

/* ---- fault injection (`debug migrate`) ---- */

enum mig_point { MIG_AT_NONE, MIG_AT_PRECOPY, MIG_AT_STOPCOPY, MIG_AT_READY, MIG_AT_COMMIT };

struct mig_debug {
	enum mig_point hold_at;
	uint32_t hold_s;
	enum mig_point abort_at;
};
extern struct mig_debug mig_debug;
const char *mig_point_name(enum mig_point p);
int mig_point_parse(const char *s, enum mig_point *out);
/* Whether to abort at p (one-shot: clears it). */
bool mig_debug_abort(enum mig_point p);
/* Seconds to hold at p, 0 for none (one-shot). */
uint32_t mig_debug_hold(enum mig_point p);

#endif
