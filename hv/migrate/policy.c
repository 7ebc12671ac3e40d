/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Live-migration decisions (policy.h, docs/migration.md): when to stop
 * pre-copy, when and how hard to throttle the guest, pacing to a bandwidth
 * cap, admission of a HELLO, and the TSC rule.  Integers only.
 */
#include <errno.h>
#include <stdio.h>	/* snprintf only */
#include <string.h>
#include "hv/migrate/policy.h"

#define US_PER_S	1000000ull
#define NS_PER_S	1000000000ull
#define PACE_BPS_MAX	100000000000ull	/* 100 GB/s: keeps products in 64 bits */
#define PACE_DT_MAX	10000000ull	/* refill at most 10 s at once */
#define PACE_BURST_MIN	(16u * 1024)

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* a * b / c (rounded up if up), in 128 bits, saturated to 64; c > 0. */
static uint64_t muldiv(uint64_t a, uint64_t b, uint64_t c, bool up)
{
	unsigned __int128 x = (unsigned __int128)a * b;

	x = (x + (up ? c - 1 : 0)) / c;
	return x > UINT64_MAX ? UINT64_MAX : (uint64_t)x;
}

/* ---- the rules ---- */

/* amount per second over us microseconds (a zero time counts as 1 us). */
uint64_t mig_rate(uint64_t amount, uint64_t us)
{
	return muldiv(amount, US_PER_S, max_u64(us, 1), false);
}

/* Exponentially weighted average, new samples weigh one half. */
uint64_t mig_ewma(uint64_t avg, uint64_t sample)
{
	if (!avg)
		return sample;
	return avg / 2 + sample / 2 + (avg & sample & 1);
}

uint64_t mig_transfer_us(uint64_t bytes, uint64_t Bps)
{
	return Bps ? muldiv(bytes, US_PER_S, Bps, true) : UINT64_MAX;
}

/* Wire bytes a remaining page will cost: what the last dirty round paid
 * per page (zero pages make it cheaper); after round 0, whose set is all
 * memory, assume full data pages. */
uint64_t mig_page_bytes(const struct mig_round *r, uint32_t round)
{
	if (round == 0 || !r->pages_sent)
		return MIG_PAGE_WIRE;
	return max_u64(r->bytes_sent / r->pages_sent, 1);
}

/* Downtime if the guest stopped now: the rest of the memory and the
 * fixed-size state at the link rate, plus the READY/COMMIT round trip. */
uint64_t mig_downtime_us(uint64_t pages, uint64_t page_bytes, uint64_t link_Bps,
			 uint64_t state_bytes, uint64_t handover_us)
{
	uint64_t bytes = pages > UINT64_MAX / page_bytes ? UINT64_MAX : pages * page_bytes;

	return sat_add(mig_transfer_us(sat_add(bytes, state_bytes), link_Bps), handover_us);
}

/* A round shrank if what it left is under MIG_SHRINK_PCT of what it sent. */
bool mig_round_shrank(const struct mig_round *r)
{
	return r->dirtied * 100 < r->pages_sent * MIG_SHRINK_PCT;
}

/* The guest dirties at least as many bytes per second as the link carries:
 * rounds cannot shrink. */
bool mig_outpaced(uint64_t dirty_pps, uint64_t page_bytes, uint64_t link_Bps)
{
	if (dirty_pps && page_bytes > UINT64_MAX / dirty_pps)
		return true;
	return link_Bps && dirty_pps * page_bytes >= link_Bps;
}

/* The round's pages that carried data (not sent as ZERO). */
static uint64_t data_pages(const struct mig_round *r)
{
	return r->pages_sent - (r->zero_pages < r->pages_sent ? r->zero_pages : r->pages_sent);
}

/*
 * Every page with data the round sent was dirtied again while it went: the
 * guest dirties at least as fast as the link carries, by how much the round
 * cannot tell (its dirty rate reads as the link's, since a page dirtied
 * twice counts once).  Such a guest is outpaced for the throttle, which then
 * climbs two steps at a time.
 */
bool mig_saturated(const struct mig_round *r)
{
	uint64_t data = data_pages(r);

	return data > MIG_HOT_SET_PAGES && r->dirtied * 100 >= data * MIG_SATURATED_PCT;
}

/* Throttle steps: the share of time each vCPU sits out. */
uint32_t mig_throttle_next(uint32_t pct)
{
	static const uint8_t steps[] = { 20, 40, 60, 80, 90, 95, MIG_THROTTLE_MAX };

	for (size_t i = 0; i < sizeof(steps); i++)
		if (steps[i] > pct)
			return steps[i];
	return MIG_THROTTLE_MAX;
}

/*
 * A throttle that bites at once: a guest that dirties 10x what the link
 * carries needs 95% at once, not a climb from 20% that sends its memory
 * again at every step.  The throttle cuts the vCPUs' time, and the dirty
 * rate with it (hv/throttle.h), so aim it at half the link.
 */
uint32_t mig_throttle_for(uint64_t dirty_Bps, uint64_t link_Bps)
{
	uint32_t pct = 0;

	while (pct < MIG_THROTTLE_MAX &&
	       (unsigned __int128)dirty_Bps * (100 - pct) > (unsigned __int128)link_Bps * 50)
		pct = mig_throttle_next(pct);
	return pct;
}

/* ---- the round decision ---- */

void mig_policy_init(struct mig_policy *p, const struct mig_policy_cfg *cfg)
{
	memset(p, 0, sizeof(*p));
	p->cfg = *cfg;
	if (!p->cfg.downtime_ms)
		p->cfg.downtime_ms = MIG_DOWNTIME_DEFAULT_MS;
	/* the target never above the ceiling: a stop that fits the target but
	 * not downtime-max would pause the guest only to give up */
	if (p->cfg.downtime_max_ms && p->cfg.downtime_ms > p->cfg.downtime_max_ms)
		p->cfg.downtime_ms = p->cfg.downtime_max_ms;
	if (!p->cfg.max_rounds)
		p->cfg.max_rounds = MIG_MAX_ROUNDS_DEFAULT;
	if (p->cfg.max_rounds >= MIG_ROUNDS_MAX)	/* the last round is one more */
		p->cfg.max_rounds = MIG_ROUNDS_MAX - 1;
	p->page_bytes = MIG_PAGE_WIRE;
}

/*
 * A saturated round's dirty rate reads as the link's (mig_saturated); the
 * sender's sample early in the round, before the set filled, shows the
 * real one, and the rounds before were lower bounds, so it replaces them.
 * Only then: a guest that rewrites a few pages at once and then rests
 * would look fast over 100 ms.
 */
static void fold_dirty_rate(struct mig_policy *p, const struct mig_round *r)
{
	uint64_t us = r->dirty_us > r->elapsed_us ? r->dirty_us : r->elapsed_us;

	p->dirty_pps = mig_ewma(p->dirty_pps, mig_rate(r->dirtied, us));
	if (r->early_us && mig_saturated(r))
		p->dirty_pps = max_u64(p->dirty_pps, mig_rate(r->early_dirtied, r->early_us));
}

/*
 * Fold one round into the link and dirty-rate estimates.  A long round
 * measures the link.  A short one is mostly latency and page scanning (an
 * idle guest's round 0 scans all memory to send a few pages): its rate is
 * only a lower bound of the link's, so it can raise the estimate but not
 * lower it, and until a long round the estimate is at least
 * MIG_LINK_PRIOR_BPS.  Never above the operator's bandwidth cap.
 */
static void measure(struct mig_policy *p, const struct mig_round *r, uint32_t round)
{
	uint64_t rate = mig_rate(r->bytes_sent, r->elapsed_us);

	if (r->bytes_sent >= MIG_RATE_MIN_BYTES)
		p->link_Bps = p->measured ? mig_ewma(p->link_Bps, rate) : rate;
	else
		p->link_Bps = max_u64(max_u64(p->link_Bps, rate),
				      p->measured ? 0 : MIG_LINK_PRIOR_BPS);
	p->measured |= r->bytes_sent >= MIG_RATE_MIN_BYTES;
	if (p->cfg.cap_Bps && p->link_Bps > p->cfg.cap_Bps)
		p->link_Bps = p->cfg.cap_Bps;
	fold_dirty_rate(p, r);
	if (!p->dirty_pps && r->dirtied)
		p->dirty_pps = 1;
	p->page_bytes = mig_page_bytes(r, round);
	p->stalled = mig_round_shrank(r) ? 0 : p->stalled + 1;
	p->sent_bytes += r->bytes_sent;
}

static uint64_t ms(uint64_t us) { return (us + 999) / 1000; }

static void decide(struct mig_decision *d, enum mig_action a, bool forced)
{
	d->action = a;
	d->forced = forced;
}

/* Stuck: stop and copy anyway, unless that breaks downtime_max. */
static void stop_anyway(const struct mig_policy *p, struct mig_decision *d, const char *why)
{
	uint32_t max = p->cfg.downtime_max_ms;

	if (max && d->downtime_us > (uint64_t)max * 1000) {
		decide(d, MIG_ACT_GIVE_UP, false);
		snprintf(d->why, sizeof(d->why), "%s; expected downtime %llu ms exceeds "
			 "downtime-max %u ms: giving up, the guest stays here", why,
			 (unsigned long long)ms(d->downtime_us), max);
		return;
	}
	decide(d, MIG_ACT_STOP, true);
	snprintf(d->why, sizeof(d->why), "%s; stopping anyway: expected downtime %llu ms "
		 "(target %u ms)", why, (unsigned long long)ms(d->downtime_us),
		 p->cfg.downtime_ms);
}

static void throttle_up(struct mig_policy *p, struct mig_decision *d, bool outpaced,
			bool saturated)
{
	uint64_t dirty = p->dirty_pps * p->page_bytes / 10000, link = p->link_Bps / 10000;
	uint32_t want = mig_throttle_for(p->dirty_pps * p->page_bytes, p->link_Bps);

	p->throttle_pct = mig_throttle_next(p->throttle_pct);
	if (saturated)
		p->throttle_pct = mig_throttle_next(p->throttle_pct);
	if (want > p->throttle_pct)
		p->throttle_pct = want;
	d->throttle_pct = p->throttle_pct;
	decide(d, MIG_ACT_THROTTLE, false);
	snprintf(d->why, sizeof(d->why), "%s (guest dirties %llu.%02llu MB/s, link carries "
		 "%llu.%02llu MB/s): throttling its vCPUs by %u%%",
		 outpaced ? "guest dirties faster than the link" : "rounds stopped shrinking",
		 (unsigned long long)(dirty / 100), (unsigned long long)(dirty % 100),
		 (unsigned long long)(link / 100), (unsigned long long)(link % 100),
		 p->throttle_pct);
}

/* converge=auto: throttle while outpaced or stuck; at the top step, give
 * it MIG_STALL_ROUNDS rounds, then stop anyway. */
static bool converge_auto(struct mig_policy *p, struct mig_decision *d, bool outpaced,
			  bool saturated)
{
	bool stuck = p->stalled >= MIG_STALL_ROUNDS;

	outpaced = outpaced || saturated;
	if (!outpaced && !stuck)
		return false;
	if (p->throttle_pct < MIG_THROTTLE_MAX) {
		throttle_up(p, d, outpaced, saturated);
		return true;
	}
	if (!stuck)
		return false;
	stop_anyway(p, d, "not converging with the guest throttled by 99%");
	return true;
}

/* The downtime no round can shrink: the state records and the hand-over. */
static uint64_t fixed_us(const struct mig_policy *p)
{
	return mig_downtime_us(0, p->page_bytes, p->link_Bps, p->cfg.state_bytes,
			       p->cfg.handover_us);
}

/*
 * Over the target, but a hot set of a few pages that every round rewrites
 * (timer, stack) cannot shrink; or the pages left cost at most a tenth of
 * the target (ours) while the rest
 * is fixed cost (state, hand-over) that more rounds or a throttle cannot
 * shrink, so stop now rather than squeeze a guest for nothing.
 */
static bool nothing_to_gain(const struct mig_policy *p, const struct mig_round *r,
			    struct mig_decision *d, uint64_t target_us)
{
	uint64_t fixed = fixed_us(p);
	char why[96];

	if (r->dirtied <= MIG_HOT_SET_PAGES && !mig_round_shrank(r) && p->rounds > 1)
		snprintf(why, sizeof(why), "the %llu pages left are written again every round "
			 "(a hot set)", (unsigned long long)r->dirtied);
	else if (d->downtime_us != UINT64_MAX && d->downtime_us - fixed <= target_us / 10)
		snprintf(why, sizeof(why), "the pages left take %llu ms, the fixed costs %llu ms",
			 (unsigned long long)ms(d->downtime_us - fixed),
			 (unsigned long long)ms(fixed));
	else
		return false;
	stop_anyway(p, d, why);
	return true;
}

/*
 * The expected downtime fits the target.  The target is the most an
 * operator accepts, not an aim (Xen goes on while rounds shrink, whatever
 * the downtime), so while the pages left take over a fifth of it:
 *  - the last round left under three quarters of the data pages it sent:
 *    one more round, which costs about the downtime it would have been,
 *    and should cut them by a quarter again (a fifth of the target is then
 *    about twice the target away in time);
 *  - it left more: a writer near the link's rate.  With converge=auto, a
 *    step of the throttle, so that rounds shrink.
 * Otherwise stop and copy.
 */
static void fits_target(struct mig_policy *p, const struct mig_round *r,
			struct mig_decision *d, uint64_t target_us, uint32_t round)
{
	uint64_t fixed = fixed_us(p), data = data_pages(r);
	bool worth = p->rounds < p->cfg.max_rounds && d->downtime_us > fixed &&
		     d->downtime_us - fixed > target_us / 5;

	if (worth && r->dirtied * 4 < data * 3) {
		decide(d, MIG_ACT_NEXT_ROUND, false);
		snprintf(d->why, sizeof(d->why), "round %u: %llu pages left fit (%llu ms), but "
			 "rounds still shrink them: one more", round, (unsigned long long)r->dirtied,
			 (unsigned long long)ms(d->downtime_us));
	} else if (worth && p->cfg.converge == MIG_CONVERGE_AUTO &&
		   p->throttle_pct < MIG_THROTTLE_MAX) {
		p->throttle_pct = mig_throttle_next(p->throttle_pct);
		d->throttle_pct = p->throttle_pct;
		decide(d, MIG_ACT_THROTTLE, false);
		snprintf(d->why, sizeof(d->why), "%llu pages left fit (%llu ms), but rounds shrink "
			 "slowly: throttling its vCPUs by %u%% to bring it down", (unsigned long long)r->dirtied,
			 (unsigned long long)ms(d->downtime_us), p->throttle_pct);
	} else {
		decide(d, MIG_ACT_STOP, false);
		snprintf(d->why, sizeof(d->why), "%llu pages left fit: expected downtime %llu ms "
			 "(target %u ms)", (unsigned long long)r->dirtied,
			 (unsigned long long)ms(d->downtime_us), p->cfg.downtime_ms);
	}
}

void mig_policy_round(struct mig_policy *p, const struct mig_round *r, struct mig_decision *d)
{
	uint32_t round = p->rounds++;
	uint64_t target_us = (uint64_t)p->cfg.downtime_ms * 1000;
	char why[64];

	measure(p, r, round);
	memset(d, 0, sizeof(*d));
	d->throttle_pct = p->throttle_pct;
	d->downtime_us = mig_downtime_us(r->dirtied, p->page_bytes, p->link_Bps,
					 p->cfg.state_bytes, p->cfg.handover_us);
	if (d->downtime_us <= target_us) {
		fits_target(p, r, d, target_us, round);
		return;
	}
	if (nothing_to_gain(p, r, d, target_us))
		return;
	if (p->rounds >= p->cfg.max_rounds) {
		snprintf(why, sizeof(why), "%u rounds done", p->rounds);
		stop_anyway(p, d, why);
		return;
	}
	/* A guest that dirties faster than the top throttle slows would have
	 * its memory sent again and again: a bound on the total, as Xen has
	 * (which has no throttle, and stops at 3x). */
	if (p->cfg.mem_bytes && p->sent_bytes >= MIG_SENT_MAX_X * p->cfg.mem_bytes &&
	    (p->throttle_pct >= MIG_THROTTLE_MAX || p->cfg.converge == MIG_CONVERGE_OFF)) {
		snprintf(why, sizeof(why), "%llu MiB sent, %ux the guest's memory",
			 (unsigned long long)(p->sent_bytes >> 20), MIG_SENT_MAX_X);
		stop_anyway(p, d, why);
		return;
	}
	if (p->cfg.converge == MIG_CONVERGE_AUTO &&
	    converge_auto(p, d, mig_outpaced(p->dirty_pps, p->page_bytes, p->link_Bps),
			  mig_saturated(r)))
		return;
	if (p->cfg.converge == MIG_CONVERGE_OFF && p->stalled >= MIG_STALL_ROUNDS) {
		stop_anyway(p, d, "rounds stopped shrinking (converge=off)");
		return;
	}
	decide(d, MIG_ACT_NEXT_ROUND, false);
	snprintf(d->why, sizeof(d->why), "round %u: %llu pages left, expected downtime %llu ms "
		 "> target %u ms", round, (unsigned long long)r->dirtied,
		 (unsigned long long)ms(d->downtime_us), p->cfg.downtime_ms);
}

/* ---- pacing ---- */

void mig_pace_init(struct mig_pace *p, uint64_t Bps, uint64_t now_us)
{
	memset(p, 0, sizeof(*p));
	p->Bps = min_u64(Bps, PACE_BPS_MAX);
	p->burst = max_u64(p->Bps / 50, PACE_BURST_MIN);	/* 20 ms worth */
	p->tokens = p->burst;
	p->last_us = now_us;
}

static void refill(struct mig_pace *p, uint64_t now_us)
{
	uint64_t dt = now_us > p->last_us ? min_u64(now_us - p->last_us, PACE_DT_MAX) : 0;
	uint64_t acc = p->frac + dt * p->Bps;

	if (now_us > p->last_us)
		p->last_us = now_us;
	p->tokens += acc / US_PER_S;
	p->frac = acc % US_PER_S;
	if (p->tokens >= p->burst) {
		p->tokens = p->burst;
		p->frac = 0;
	}
}

size_t mig_pace_allow(struct mig_pace *p, uint64_t now_us, size_t want)
{
	if (!p->Bps)
		return want;
	refill(p, now_us);
	return (size_t)min_u64(p->tokens, want);
}

void mig_pace_take(struct mig_pace *p, size_t n)
{
	if (p->Bps)
		p->tokens -= min_u64(p->tokens, n);
}

/* ---- admission ---- */

uint64_t mig_mem_needed(uint64_t mem_size)
{
	return mem_size + mem_size / 256 + mem_size / 32768 + mig_payload_max(MIG_SRC);
}

uint64_t mig_ppm_diff(uint64_t a, uint64_t b)
{
	uint64_t d = a > b ? a - b : b - a;

	if (!a)
		return b ? UINT64_MAX : 0;
	return muldiv(d, US_PER_S, a, false);
}

/* Everything but memory: who, versions, baseline, limits, name. */
static int admit_fit(const struct mig_hello *h, const struct mig_host *host, struct mig_error *e)
{
	if (!host->peer_allowed)
		return mig_error_set(e, MIG_E_NOT_ALLOWED, "this host does not accept migrations from you");
	if (host->busy)
		return mig_error_set(e, MIG_E_BUSY, "a migration is already coming in");
	if (h->proto_version != MIG_PROTO_VERSION)
		return mig_error_set(e, MIG_E_VERSION, "source speaks protocol v%u, this host v%u",
				     h->proto_version, MIG_PROTO_VERSION);
	if (h->cpu_state_version != MIG_CPU_STATE_VERSION || h->dev_version != host->dev_version)
		return mig_error_set(e, MIG_E_VERSION, "state versions cpu v%u/device v%u, "
				     "this host cpu v%u/device v%u", h->cpu_state_version,
				     h->dev_version, MIG_CPU_STATE_VERSION, host->dev_version);
	if (h->cpu_baseline != host->cpu_baseline)
		return mig_error_set(e, MIG_E_BASELINE, "guest CPU baseline %016llx, this host's %016llx",
				     (unsigned long long)h->cpu_baseline,
				     (unsigned long long)host->cpu_baseline);
	if (h->arch_caps & ~host->arch_caps)
		return mig_error_set(e, MIG_E_BASELINE, "its CPU claims RDCL_NO (not affected by "
				     "Meltdown); this host's CPU is affected");
	if (h->vcpus > host->max_vcpus || h->mem_size > host->max_mem)
		return mig_error_set(e, MIG_E_LIMIT, "%u vCPUs and %llu MiB, this host takes at most "
				     "%u and %llu MiB", h->vcpus,
				     (unsigned long long)(h->mem_size >> 20), host->max_vcpus,
				     (unsigned long long)(host->max_mem >> 20));
	if (host->name_taken && host->name_taken(host->ctx, h->name))
		return mig_error_set(e, MIG_E_NAME_TAKEN, "a guest named '%s' exists here", h->name);
	return 0;
}

int mig_admit(const struct mig_hello *h, const struct mig_host *host, struct mig_error *e)
{
	uint64_t need = mig_mem_needed(h->mem_size);
	uint64_t ppm;

	if (admit_fit(h, host, e))
		return -EPERM;
	if (need > host->free_bytes) {
		mig_error_set(e, MIG_E_NO_MEMORY, "needs %llu MiB, %llu MiB free here",
			      (unsigned long long)((need + (1u << 20) - 1) >> 20),
			      (unsigned long long)(host->free_bytes >> 20));
		return -EPERM;
	}
	mig_error_set(e, MIG_OK, "%s", "");
	ppm = mig_ppm_diff(h->tsc_hz, host->tsc_hz);
	if (ppm > MIG_TSC_WARN_PPM)
		mig_error_set(e, MIG_OK, "note: TSC %llu kHz here, %llu kHz at the source: "
			      "the guest's TSC will be scaled", (unsigned long long)(host->tsc_hz / 1000),
			      (unsigned long long)(h->tsc_hz / 1000));
	return 0;
}

/* ---- TSC ---- */

/* The TSC wraps, so the sum does too. */
uint64_t mig_tsc_advance(uint64_t ticks, uint64_t hz, uint64_t ns)
{
	return ticks + muldiv(ns, hz, NS_PER_S, false);
}

uint64_t mig_tsc_resume(uint64_t tsc_at_pause, uint64_t src_hz, uint64_t paused_ns,
			uint64_t local_ns)
{
	return mig_tsc_advance(tsc_at_pause, src_hz, sat_add(paused_ns, local_ns));
}

uint64_t mig_silence_us(uint64_t mem_bytes, uint64_t srtt_us)
{
	uint64_t us = MIG_SILENCE_BASE_US + mem_bytes / 1000;	/* 1 GB/s: 1000 B/us */

	if (srtt_us > MIG_SILENCE_MAX_US / 64)
		return MIG_SILENCE_MAX_US;
	us += 64 * srtt_us;
	return us < MIG_SILENCE_MAX_US ? us : MIG_SILENCE_MAX_US;
}
