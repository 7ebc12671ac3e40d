/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Live-migration decisions as pure functions of measurements, integers
 * only (docs/migration.md "Rounds", "Throttle", "TSC"):
 *   - after each pre-copy round: another round, throttle, stop and copy,
 *     or give up, with the reason in words;
 *   - the expected downtime, fixed costs included;
 *   - pacing to a bandwidth cap (a token bucket);
 *   - the destination's admission of a HELLO;
 *   - the guest TSC and device clock after the hand-over.
 * Units: bytes, microseconds (us), bytes per second (Bps), pages per
 * second (pps), percent.
 */
#ifndef FERRY_HV_MIGRATE_POLICY_H
#define FERRY_HV_MIGRATE_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "hv/migrate/stream.h"
#include "hv/throttle.h"

#define MIG_DOWNTIME_DEFAULT_MS	300
#define MIG_MAX_ROUNDS_DEFAULT	30
#define MIG_STALL_ROUNDS	2	/* rounds not shrinking before acting */
#define MIG_SHRINK_PCT		90	/* a round "shrinks" below 90% of its set */
#define MIG_RATE_MIN_BYTES	(256u * 1024)	/* smaller rounds only raise the link estimate */
#define MIG_LINK_PRIOR_BPS	1000000u	/* assumed link until a round measures it */
#define MIG_PAGE_WIRE		(4096u + 9u)	/* a DATA page in a PAGES record */
#define MIG_THROTTLE_MAX	THROTTLE_MAX_PCT
#define MIG_HOT_SET_PAGES	64	/* a set this small that does not shrink is hot */
#define MIG_SENT_MAX_X		3	/* at the top throttle, stop once 3x the guest's RAM went */
#define MIG_SATURATED_PCT	95	/* a round whose pages were nearly all dirtied again */
#define MIG_EARLY_US		100000	/* the sender samples the dirty log this far into a round */

enum mig_converge {
	MIG_CONVERGE_AUTO,	/* throttle the guest until it converges (default) */
	MIG_CONVERGE_OFF,	/* never throttle; stop anyway when stuck */
};

struct mig_policy_cfg {
	uint32_t downtime_ms;		/* target; 0 = MIG_DOWNTIME_DEFAULT_MS */
	uint32_t downtime_max_ms;	/* 0: none; else give up rather than exceed it */
	uint32_t max_rounds;		/* 0 = MIG_MAX_ROUNDS_DEFAULT */
	enum mig_converge converge;
	uint64_t state_bytes;		/* CPU + device + TSC + END records on the wire */
	uint64_t handover_us;		/* measured round trip (HELLO/HELLO_REPLY) */
	uint64_t cap_Bps;		/* bandwidth=: the link is never faster; 0 none */
	uint64_t mem_bytes;		/* guest RAM; 0: no limit on what pre-copy sends */
};

/* What the sender measured in one round. */
struct mig_round {
	uint64_t pages_sent;		/* pages in this round's PAGES records */
	uint64_t zero_pages;		/* of which sent as MIG_PAGE_ZERO */
	uint64_t sparse_pages;		/* of which sent as MIG_PAGE_SPARSE */
	uint64_t bytes_sent;		/* wire bytes of the round */
	uint64_t elapsed_us;		/* from its first byte to its ROUND_END */
	uint64_t dirtied;		/* pages dirtied meanwhile: the next set */
	uint64_t dirty_us;		/* over which they were dirtied, if longer than
					 * elapsed_us (the sender waited for ROUND_ACK
					 * before the round); 0: elapsed_us */
	uint64_t early_dirtied;		/* of those, dirty early_us into it (0, 0: no sample) */
	uint64_t early_us;
};

enum mig_action {
	MIG_ACT_NEXT_ROUND,	/* send the dirty set again */
	MIG_ACT_THROTTLE,	/* raise the throttle to d->throttle_pct, next round */
	MIG_ACT_STOP,		/* pause the guest, send the rest and the state */
	MIG_ACT_GIVE_UP,	/* abort: the guest keeps running on the source */
};

struct mig_decision {
	enum mig_action action;
	uint32_t throttle_pct;		/* share of time vCPUs sit out from now on */
	uint64_t downtime_us;		/* expected if the guest stopped now */
	bool forced;			/* STOP although the target is not met */
	char why[160];			/* for the operator, always set */
};

/* The policy's memory across rounds.  Owned by the sender. */
struct mig_policy {
	struct mig_policy_cfg cfg;
	uint32_t rounds;		/* rounds reported so far */
	uint64_t link_Bps;		/* EWMA of the link rate (see measure()) */
	bool measured;			/* a round long enough to measure the link */
	uint64_t dirty_pps;		/* EWMA of the dirty rate */
	uint64_t page_bytes;		/* wire bytes per remaining page */
	uint32_t stalled;		/* consecutive rounds that did not shrink */
	uint32_t throttle_pct;		/* current throttle, 0 = none */
	uint64_t sent_bytes;		/* wire bytes of all rounds so far */
};

void mig_policy_init(struct mig_policy *p, const struct mig_policy_cfg *cfg);
/* After round p->rounds ended with the measurements r: what next. */
void mig_policy_round(struct mig_policy *p, const struct mig_round *r, struct mig_decision *d);

/* The rules, one by one. */
uint64_t mig_rate(uint64_t amount, uint64_t us);		/* per second */
uint64_t mig_ewma(uint64_t avg, uint64_t sample);		/* 1/2 weight; 0 = none yet */
uint64_t mig_transfer_us(uint64_t bytes, uint64_t Bps);	/* UINT64_MAX if Bps == 0 */
uint64_t mig_page_bytes(const struct mig_round *r, uint32_t round);
uint64_t mig_downtime_us(uint64_t pages, uint64_t page_bytes, uint64_t link_Bps,
			 uint64_t state_bytes, uint64_t handover_us);
bool mig_round_shrank(const struct mig_round *r);
bool mig_outpaced(uint64_t dirty_pps, uint64_t page_bytes, uint64_t link_Bps);
bool mig_saturated(const struct mig_round *r);
uint32_t mig_throttle_next(uint32_t pct);			/* 0, 20, 40, ... 99 */
/* The lowest step that slows dirty_Bps to half of link_Bps (0: none needed). */
uint32_t mig_throttle_for(uint64_t dirty_Bps, uint64_t link_Bps);
/* How long a peer may stay silent before it counts as gone: the base
 * (10 s), plus 64 round trips (a loaded host's link), plus
 * one pass over the guest's memory at 1 GB/s (a big guest's allocation or
 * load), at most MIG_SILENCE_MAX_US.  `migrate ... timeout=S` overrides. */
#define MIG_SILENCE_BASE_US	(10ull * 1000000)
#define MIG_SILENCE_MAX_US	(MIG_TIMEOUT_MAX_S * 1000000ull)
uint64_t mig_silence_us(uint64_t mem_bytes, uint64_t srtt_us);

/* Token bucket for bandwidth=MB/s: tokens are bytes, refilled per us. */
struct mig_pace {
	uint64_t Bps;			/* 0: unlimited */
	uint64_t tokens, burst;		/* bytes available now, and at most */
	uint64_t last_us;		/* time of the last refill */
	uint64_t frac;			/* refill remainder, in byte-microseconds */
};
void mig_pace_init(struct mig_pace *p, uint64_t Bps, uint64_t now_us);
/* Bytes that may be sent now, at most want (updates the bucket). */
size_t mig_pace_allow(struct mig_pace *p, uint64_t now_us, size_t want);
/* Spend n bytes (n <= what mig_pace_allow gave). */
void mig_pace_take(struct mig_pace *p, size_t n);

/* What the destination knows of itself when a HELLO comes. */
struct mig_host {
	bool peer_allowed;		/* the listener accepts this peer */
	bool busy;			/* a migration is already coming in */
	uint64_t cpu_baseline;		/* mig_cpu_baseline(cpuid_guest) */
	uint64_t arch_caps;		/* IA32_ARCH_CAPABILITIES bits it can give a guest */
	uint32_t dev_version;		/* vdev_snapshot's format version */
	uint32_t max_vcpus;		/* VM_MAX_VCPUS */
	uint64_t max_mem;		/* VM_MAX_MEM_MB << 20 */
	uint64_t free_bytes;		/* memory a new guest could get */
	uint64_t tsc_hz;		/* this host's TSC rate */
	bool (*name_taken)(void *ctx, const char *name);
	void *ctx;
};

/* Memory a destination needs for a guest of mem_size (pages, tables,
 * frame list, bitmap, stream buffer). */
uint64_t mig_mem_needed(uint64_t mem_size);
/*
 * Check a HELLO before any memory moves.  0: accept (e->code MIG_OK;
 * e->msg may hold a warning, e.g. a TSC rate mismatch).  -EPERM: refuse,
 * with e->code and e->msg ready for HELLO_REPLY and the local log.
 */
int mig_admit(const struct mig_hello *h, const struct mig_host *host, struct mig_error *e);

/* Difference of two rates in parts per million of a. */
uint64_t mig_ppm_diff(uint64_t a, uint64_t b);
#define MIG_TSC_WARN_PPM	5000	/* 0.5%: say that the guest's TSC is scaled */

/* ticks at hz advanced by ns nanoseconds (wrapping like a TSC). */
uint64_t mig_tsc_advance(uint64_t ticks, uint64_t hz, uint64_t ns);
/* The guest TSC to load on the destination: the TSC at pause advanced by
 * the time it stood still (paused_ns from COMMIT plus local_ns since
 * COMMIT arrived), at the source's rate. */
uint64_t mig_tsc_resume(uint64_t tsc_at_pause, uint64_t src_hz, uint64_t paused_ns,
			uint64_t local_ns);

#endif
