/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Whole migrations on the host: the real sender (hv/migrate/send.c) moves a
 * small fake guest to the real receiver (recv.c) over the simulated link,
 * with the real stream, channel, policy and dirty log in between
 * (tests/unit/mig_host.h lists the seams).  A clean run, where the
 * destination's memory and state equal the source's; a link cut mid-round;
 * a cancel before COMMIT; silence after COMMIT (in doubt); a lost COMMIT;
 * an in-doubt source settled by its QUERY (ran, discarded, unknown, a key
 * untrusted since, a host that cannot prove the key);
 * and lying peers on either side.  Every migration runs over the secure
 * channel unless a test says `insecure`: then the keys and the channel's
 * own failures, an untrusted source, a destination with the wrong key, an
 * impostor, a byte altered on the wire, and records replayed, dropped,
 * reordered or cut short by a source that holds the keys.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hv/crypto/crypto.h"
#include "hv/crypto/random.h"
#include "hv/migrate/chan.h"
#include "hv/lib/log.h"
#include "hv/migrate/migrate.h"
#include "hv/migrate/stream.h"
#include "hv/net/tcp.h"
#include "hv/netif.h"
#include "hv/vdev/devices.h"
#include "tests/unit/mig_host.h"
#include "tests/unit/mig_wire.h"

#define SEC	1000000ull
#define MB	2		/* the guest's MiB */

static const struct netsim_cfg lan = {
	.seed = 3, .delay_us = 200, .rate_Bps = 12500000, .queue_bytes = 256 * 1024,
};

/* ---- the sink: what the operator would see ---- */

static struct {
	char line[64][512];
	uint64_t at[64];		/* when it was said (simulated) */
	unsigned int n;
	bool (*cancel)(void);
} S;

static void sink_line(const char *prefix, const char *line)
{
	if (S.n < 64) {
		S.at[S.n] = W.sim.now_us;
		snprintf(S.line[S.n++], sizeof(S.line[0]), "%s%s", prefix, line);
	}
}

static void sink_print(void *ctx, const char *line)
{
	(void)ctx;
	sink_line("", line);
}

static void sink_error(void *ctx, const char *msg)
{
	(void)ctx;
	sink_line("error: ", msg);
}

static bool sink_cancelled(void *ctx)
{
	(void)ctx;
	return S.cancel && S.cancel();
}

static const struct mig_sink sink = { .print = sink_print, .error = sink_error,
				       .cancelled = sink_cancelled };

static bool said(const char *words)
{
	for (unsigned int i = 0; i < S.n; i++)
		if (strstr(S.line[i], words))
			return true;
	return false;
}

/* When the first line with words was said; fails if none was. */
static uint64_t said_at(const char *words)
{
	for (unsigned int i = 0; i < S.n; i++)
		if (strstr(S.line[i], words))
			return S.at[i];
	fail_msg("nothing said '%s'", words);
	return 0;
}

/* ---- the guest and the world ---- */

static struct mh_vm *src_vm;
static uint64_t next_write_us;
static uint32_t write_rng = 1;
static uint64_t t_paused;		/* the source's guest was first seen paused */

/* The running guest writes one of its first 64 pages each millisecond. */
static void guest_tick(void)
{
	if (src_vm && !t_paused && src_vm->vm.state == VM_PAUSED)
		t_paused = W.sim.now_us;
	while (src_vm && src_vm->vm.state == VM_RUNNING && !src_vm->destroyed &&
	       W.sim.now_us >= next_write_us) {
		write_rng = write_rng * 1103515245u + 12345u;
		mh_guest_write(src_vm, (write_rng >> 16) % 64, (uint8_t)(write_rng >> 8));
		next_write_us += 1000;
	}
}

static int setup(void **st)
{
	(void)st;
	memset(&S, 0, sizeof(S));
	mh_up(&lan);
	src_vm = mh_source_vm("g1", MB);
	next_write_us = W.sim.now_us;
	t_paused = 0;
	W.tick = guest_tick;
	return 0;
}

/* E2E_SHOW=1: what the operator saw, and `migrations`. */
static void show(void)
{
	const struct mig_entry *e;

	for (unsigned int i = 0; i < S.n; i++)
		fprintf(stderr, "  | %s\n", S.line[i]);
	for (unsigned int i = 0; (e = mig_history_at(i)); i++)
		fprintf(stderr, "  h %s %s %u rounds: %s\n", e->out ? "out" : "in",
			mig_outcome_name(e->outcome), e->rounds, e->why);
}

static bool doubt_test;		/* teardown winds doubt.c down */
static void doubt_wind_down(void);
static void log_line(const char *buf, size_t len);
static unsigned int times_said(const char *words);

static int teardown(void **st)
{
	(void)st;
	if (getenv("E2E_SHOW"))
		show();
	if (doubt_test)
		doubt_wind_down();
	src_vm = NULL;
	mh_down();
	return 0;
}

static int migrate_named(const char *name)
{
	struct mig_out_args a = { .name = name, .sink = &sink, .net = &W.src, .ip = MH_DST_IP,
				  .port = MIG_PORT };

	W.running = MH_SRC;
	return mig_out_run(&a);
}

static int migrate(void)
{
	return migrate_named("g1");
}

/* The newest `migrations` entry of that direction. */
static const struct mig_entry *last_entry(bool out)
{
	const struct mig_entry *e, *found = NULL;

	for (unsigned int i = 0; (e = mig_history_at(i)); i++)
		if (e->out == out)
			found = e;
	assert_non_null(found);
	return found;
}

/* The source keeps its guest, running, no longer migrating. */
static void source_kept(void)
{
	assert_false(src_vm->destroyed);
	assert_int_equal(src_vm->vm.state, VM_RUNNING);
	assert_int_equal(src_vm->vm.mig.kind, VM_MIG_NONE);
	assert_false(src_vm->vm.mig_owned);
	assert_int_equal(src_vm->vm.throttle_pct, 0);
	assert_false(src_vm->vm.dirty.enabled);
}

/* The destination made a guest and threw it away. */
static void destination_discarded_as(enum mig_outcome outcome)
{
	struct mh_vm *d = mh_vm_on(MH_DST, "g1");

	assert_non_null(d);
	assert_true(d->destroyed);
	assert_int_equal(last_entry(false)->outcome, outcome);
}

static void destination_discarded(void)
{
	destination_discarded_as(MIG_FAILED);
}

/* ---- begun in the shell, run or given back ---- */

/* mig_out_begin claims the guest and lists it at once; a second begin of
 * it is refused; abandon gives it back untouched, the entry failed. */
static void test_begin_then_abandon(void **st)
{
	struct mig_out_args a = { .name = "g1", .sink = &sink, .net = &W.src, .ip = MH_DST_IP,
				  .port = MIG_PORT };
	struct mig_out *o;
	int rc = 0;

	(void)st;
	W.running = MH_SRC;
	o = mig_out_begin(&a, &rc);
	assert_non_null(o);
	assert_true(src_vm->vm.mig_owned);
	assert_int_equal(last_entry(true)->outcome, MIG_RUNNING);
	assert_string_equal(last_entry(true)->live.phase, "connecting");
	assert_null(mig_out_begin(&a, &rc));
	assert_int_equal(rc, -EBUSY);
	assert_true(said("'g1' is migrating already"));
	mig_out_abandon(o, "no memory for a background migration");
	source_kept();
	assert_int_equal(last_entry(true)->outcome, MIG_FAILED);
	assert_string_equal(last_entry(true)->why, "no memory for a background migration");
	assert_int_equal(migrate(), 0);		/* and it can go after all */
	assert_true(src_vm->destroyed);
}

/* ---- the listener ---- */

/* `migrate listen` to a port in use: the listener goes on where it was,
 * and says so, rather than list itself on while nothing listens. */
static void test_listener_kept_when_the_new_port_is_taken(void **st)
{
	struct mig_listen_cfg lc = { .port = 7448 }, now;
	struct tcp_conn *other;
	char err[96];

	(void)st;
	W.running = MH_DST;
	assert_int_equal(tcp_listen(&host_if.stack, 7448, 1, &other), 0);
	assert_int_equal(mig_listen(&lc, err, sizeof(err)), -EADDRINUSE);
	assert_non_null(strstr(err, "cannot listen on port 7448"));
	assert_non_null(strstr(err, "still listening on port 7447 as before"));
	assert_true(mig_listening(&now));
	assert_int_equal(now.port, MIG_PORT);
	tcp_close(other);
	assert_int_equal(migrate(), 0);		/* and it still listens */
	assert_true(src_vm->destroyed);
	W.running = MH_DST;
	assert_int_equal(mig_listen(&lc, err, sizeof(err)), 0);	/* now it moves */
	assert_true(mig_listening(&now));
	assert_int_equal(now.port, 7448);
}

/* ---- a clean run ---- */

static void test_clean_run(void **st)
{
	struct mh_vm *d;

	(void)st;
	assert_int_equal(migrate(), 0);
	assert_true(said("migrate g1: done in"));
	assert_true(said("(sealed, handshake ") && said("), HELLO answered in "));
	assert_true(src_vm->destroyed);
	mh_run_for(100000);
	d = mh_vm_on(MH_DST, "g1");
	assert_non_null(d);
	assert_false(d->destroyed);
	assert_int_equal(d->vm.state, VM_RUNNING);
	assert_false(d->vm.mig_owned);
	assert_int_equal(d->vm.mig.kind, VM_MIG_NONE);
	assert_int_equal(d->vm.mem_size, (uint64_t)MB << 20);
	assert_string_equal(d->vm.kernel, "guest.elf");
	assert_string_equal(d->vm.cmdline, "console=ttyS0");
	/* what a reboot there loads again came too, and a missing one is named */
	assert_string_equal(d->vm.initrd, "");
	assert_string_equal(d->vm.modules, "ramdisk,config");
	assert_true(said("note: no module 'config' here: a reboot of the guest here would stop it"));
	assert_int_equal(d->vm.weight, 384);	/* its share came along */
	assert_int_equal(d->vm.cap_pct, 60);
	assert_true(src_vm->vm.rdcl_no);	/* what its CPU says of Meltdown came too */
	assert_true(d->vm.rdcl_no);
	/* memory as the source left it when it paused: every byte */
	assert_memory_equal(d->mem, src_vm->mem, d->vm.mem_size);
	assert_int_equal(d->cpu_loads, 1);
	assert_memory_equal(&d->cpu, &src_vm->cpu, sizeof(d->cpu));
	assert_int_equal(d->xsave_len, src_vm->xsave_len);
	assert_memory_equal(d->xsave, src_vm->xsave, d->xsave_len);
	assert_int_equal(d->dev_len, src_vm->dev_len);
	assert_memory_equal(d->dev, src_vm->dev, d->dev_len);
	assert_int_equal(d->dev_loads, 2);		/* at DEVICE_STATE and at COMMIT */
	assert_true(d->time_loaded);
	assert_true(d->guest_tsc > src_vm->guest_tsc);	/* it went on while paused */
	assert_true(d->clock_ns > src_vm->clock_ns);
	/* the clock went with the devices' own instant: their timers go on
	 * from it, not late by the hand-over */
	assert_true(src_vm->time_saved_us && src_vm->time_saved_us == src_vm->dev_saved_us);
	/* the guest wrote while it moved: more than one round, all in the log */
	assert_true(last_entry(true)->rounds >= 2);
	/* paused only once the destination had written round 0 */
	assert_true(t_paused >= said_at("has written round 0 (512 pages)"));
	assert_int_equal(last_entry(true)->outcome, MIG_DONE);
	assert_int_equal(last_entry(false)->outcome, MIG_DONE);
	assert_true(src_vm->vm.dirty.stats.faults > 0);
}

/* The destination finds the NIC's rings in memory at odds with the
 * device state (a page that missed the log, a device that ran on): it
 * refuses the guest before READY, and the guest runs on at the source,
 * whose NIC still works. */
/* Between two looks at Ctrl-C (which run the shell CPU's other work), the
 * most source pages the sender went through. */
static uint64_t looked_at, most_between;
static struct mh_vm *zero_vm;

static bool count_gap(void)
{
	uint64_t now = zero_vm->page_lookups;

	if (now - looked_at > most_between)
		most_between = now - looked_at;
	looked_at = now;
	return false;
}

/* A guest of zeroes makes few records (runs of zero pages), so the sender
 * once scanned all its memory without a look at Ctrl-C or the shell CPU's
 * other work; the receiver zeroed up to 16 GiB in one poll.  It now looks
 * every 4096 pages, and a record covers at most 32768. */
static void test_zero_guest_leaves_the_shell_cpu_its_turns(void **st)
{
	struct mh_vm *d;

	(void)st;
	zero_vm = mh_source_vm("z", 256);
	memset(zero_vm->mem, 0, zero_vm->vm.mem_size);
	looked_at = most_between = 0;
	S.cancel = count_gap;
	assert_int_equal(migrate_named("z"), 0);
	count_gap();
	assert_true(said("migrate z: done in"));
	assert_true(zero_vm->page_lookups >= 65536);	/* every page once at least */
	assert_true(most_between <= 4096 + 64);
	mh_run_for(100000);
	d = mh_vm_on(MH_DST, "z");
	assert_non_null(d);
	assert_int_equal(d->vm.state, VM_RUNNING);
	for (uint64_t i = 0; i < d->vm.mem_size; i += 4096)
		assert_int_equal(d->mem[i], 0);
}

static void test_device_state_at_odds_with_memory(void **st)
{
	(void)st;
	W.dev_at_odds[MH_DST] = true;
	assert_int_not_equal(migrate(), 0);
	assert_true(said("the device state does not match memory: queue 0: memory has "
			 "avail index 7"));
	assert_false(said("here either"));
	assert_true(said("g1 runs here as before"));
	source_kept();
	destination_discarded();
}

/* The source's own memory and devices already disagree: it says so (the
 * copy is not to blame), and the destination refuses the guest. */
static void test_device_state_at_odds_at_the_source(void **st)
{
	(void)st;
	W.dev_at_odds[MH_SRC] = W.dev_at_odds[MH_DST] = true;
	assert_int_not_equal(migrate(), 0);
	assert_true(said("migrate g1: warning: the device state does not match memory here "
			 "either: queue 0"));
	source_kept();
	destination_discarded();
}

/* Frames that came for the paused guest after its device state was saved
 * follow it in FRAMES, and the destination gives them to it at COMMIT,
 * after the device state's (loaded again there). */
static void test_late_frames_go_with_the_guest(void **st)
{
	struct mh_vm *d;

	(void)st;
	W.late_frames = 3;
	assert_int_equal(migrate(), 0);
	d = mh_vm_on(MH_DST, "g1");
	assert_non_null(d);
	assert_int_equal(d->late_got, 3);
	assert_int_equal(d->late_after, 2);
	assert_true(said("migrate g1: 3 frames that came for it after its state was saved "
			 "went with it"));
}

/* The guest's frames that still wait for the wire at the source when it
 * sends COMMIT are dropped then, and said: after COMMIT the guest may run
 * at the destination, and a frame from the source would teach the LAN's
 * switches the old port. */
static void test_waiting_frames_dropped_at_commit(void **st)
{
	(void)st;
	W.tx_waiting = 4;
	assert_int_equal(migrate(), 0);
	assert_int_equal(W.tx_waiting, 0);
	assert_true(W.tx_dropped_at != 0);
	assert_true(said("migrate g1: 4 frames it sent that still waited for the wire here "
			 "dropped at COMMIT"));
}

/* A list of them that the destination refuses ends the migration before
 * COMMIT: the guest runs on at the source. */
static void test_late_frames_refused(void **st)
{
	(void)st;
	W.late_frames = 2;
	W.late_bad = true;
	assert_int_not_equal(migrate(), 0);
	assert_true(said("the frames that came late were refused"));
	assert_true(said("g1 runs here as before"));
	source_kept();
	destination_discarded();
}

/* The destination's READY and COMMITTED (and its ACKs of them) go to the
 * NIC before its turn ends, not at its next poll: its loop may sleep in
 * between, and the source's downtime with it. */
static void test_records_leave_at_once(void **st)
{
	(void)st;
	assert_int_equal(migrate(), 0);
	assert_true(src_vm->destroyed);
	assert_int_equal(W.dst_left_unkicked, 0);
}

/*
 * A destination slow to write round 0 (held 2 s before its ROUND_ACK, as
 * `debug migrate hold precopy` does): the source goes on with rounds, the
 * guest running, and pauses it only after the ack.
 */
static void test_source_waits_for_round_ack(void **st)
{
	uint64_t t_ack, t_wait;

	(void)st;
	mig_debug = (struct mig_debug){ .hold_at = MIG_AT_PRECOPY, .hold_s = 2 };
	assert_int_equal(migrate(), 0);
	assert_false(said("held at precopy"));		/* the destination held, not we */
	t_wait = said_at("waiting for 10.0.0.2:7447 to write round 0 before pausing the guest");
	t_ack = said_at("has written round 0 (512 pages)");
	assert_true(t_ack - t_wait >= 2 * SEC - 200000);
	assert_true(t_paused > t_ack);
	assert_true(last_entry(true)->rounds >= 4);	/* it went on meanwhile */
	mh_run_for(100000);
	assert_memory_equal(mh_vm_on(MH_DST, "g1")->mem, src_vm->mem, (size_t)MB << 20);
}

/* A paused guest arrives paused, in one round. */
static void test_paused_guest(void **st)
{
	struct mh_vm *d;

	(void)st;
	src_vm->vm.state = VM_PAUSED;
	assert_int_equal(migrate(), 0);
	mh_run_for(100000);
	d = mh_vm_on(MH_DST, "g1");
	assert_non_null(d);
	assert_int_equal(d->vm.state, VM_PAUSED);
	assert_memory_equal(d->mem, src_vm->mem, d->vm.mem_size);
	assert_int_equal(last_entry(true)->rounds, 1);
}

/* ---- failures before COMMIT: the source resumes, the destination discards ---- */

static void test_link_cut_mid_round(void **st)
{
	(void)st;
	W.cut_after = 600 * 1024;		/* inside round 0 (about 1.4 MB) */
	assert_int_equal(migrate(), -ECANCELED);
	assert_true(W.sim.cut);
	assert_true(said("silent") || said("lost"));
	assert_true(said("g1 runs here as before"));
	source_kept();
	assert_int_equal(last_entry(true)->outcome, MIG_FAILED);
	mh_run_for(MIG_SILENCE_BASE_US + SEC);	/* the destination's own timeout */
	destination_discarded();
	assert_non_null(strstr(last_entry(false)->why, "silent"));
}

static bool after_round_0(void)
{
	return src_vm->vm.mig.round >= 1;
}

static void test_cancel_before_commit(void **st)
{
	(void)st;
	S.cancel = after_round_0;
	assert_int_equal(migrate(), -ECANCELED);
	assert_true(said("cancelled by the operator"));
	source_kept();
	assert_int_equal(last_entry(true)->outcome, MIG_CANCELLED);
	mh_run_for(100000);			/* at once, not by its timeout */
	destination_discarded();
	/* the sender's ABORT goes out behind the round's queued bytes and its
	 * reset overtakes it, so the destination sees the connection go */
	assert_non_null(strstr(last_entry(false)->why, "lost"));
}

/* The destination's operator cancels the arrival after round 0 (the
 * source's wait is where the destination's shell would run): the guest
 * there is discarded at once, the source is told why and keeps its guest;
 * after COMMIT there is nothing left to cancel. */
static int dst_cancel_rc = 1;

static bool cancel_at_destination(void)
{
	if (src_vm->vm.mig.round >= 1 && dst_cancel_rc == 1) {
		W.running = MH_DST;
		dst_cancel_rc = mig_in_cancel("g1");
		W.running = MH_SRC;
	}
	return false;
}

static void test_cancel_at_the_destination(void **st)
{
	(void)st;
	W.running = MH_DST;
	assert_int_equal(mig_in_cancel("g1"), -ENOENT);		/* nothing arrives yet */
	W.running = MH_SRC;
	S.cancel = cancel_at_destination;
	assert_int_equal(migrate(), -ECANCELED);
	assert_int_equal(dst_cancel_rc, 0);
	assert_true(said("aborted: cancelled: the destination's operator cancelled it; g1 runs "
			 "here as before"));
	source_kept();
	destination_discarded_as(MIG_CANCELLED);
	assert_string_equal(last_entry(false)->why, "the destination's operator cancelled it");
	W.running = MH_DST;
	assert_int_equal(mig_in_cancel("g1"), -ENOENT);		/* gone: once is all */
	W.running = MH_SRC;
	S.cancel = NULL;
	dst_cancel_rc = 1;
	assert_int_equal(migrate(), 0);			/* and it can go after all */
	W.running = MH_DST;
	assert_int_equal(mig_in_cancel("g1"), -ENOENT);		/* it runs there */
	W.running = MH_SRC;
}

/* ---- after COMMIT ---- */

/* Silence from the moment COMMIT leaves: the source cannot know whether it
 * arrived, so it keeps its copy paused, in doubt; the destination never
 * got it, so it discards when its timeout runs out. */
static void test_silence_after_commit(void **st)
{
	(void)st;
	W.cut_at_commit = true;		/* both ways: no ABORT gets back either */
	assert_int_equal(migrate(), -ECANCELED);
	assert_true(W.commit_seen);
	assert_true(said("in doubt"));
	assert_false(src_vm->destroyed);
	assert_int_equal(src_vm->vm.state, VM_PAUSED);
	assert_int_equal(src_vm->vm.mig.kind, VM_MIG_IN_DOUBT);
	assert_int_equal(last_entry(true)->outcome, MIG_IN_DOUBT);
	mh_run_for(MIG_SILENCE_BASE_US + SEC);
	destination_discarded();
}

/*
 * COMMIT lost (every copy of it), the rest of the link up.  Both ends wait
 * about 10 s (mig_silence_us: each adds 64 of its own round-trip
 * estimates); the destination began one round trip earlier (at END), so it
 * discards first.  Its ABORT reaches the source before the source gives up
 * (then the source runs its copy again) or one trip too late (then the
 * source is in doubt, as when all went silent).  Either way never both
 * copies running: the destination's copy is gone before the source could
 * resume its own.
 */
static void test_commit_lost(void **st)
{
	(void)st;
	W.drop_commit = true;
	assert_int_equal(migrate(), -ECANCELED);
	assert_true(W.commit_seen);
	assert_false(W.sim.cut);
	destination_discarded();		/* already */
	/* this link (200 us each way) lets the ABORT back in time: the
	 * source runs its copy again (the other outcome, in doubt, is
	 * test_silence_after_commit's) */
	assert_false(said("in doubt"));
	assert_true(said("aborted: timeout"));
	assert_true(said("runs here as before"));
	assert_int_equal(src_vm->vm.state, VM_RUNNING);
	assert_int_equal(src_vm->vm.mig.kind, VM_MIG_NONE);
	assert_non_null(strstr(last_entry(false)->why, "silent"));
}

/* ---- peers that lie ---- */

/* Put seq and the CRC into a hand-made record of len bytes. */
static void forge_seal(uint8_t *rec, size_t len, uint32_t seq)
{
	memcpy(rec + 8, &seq, 4);		/* little-endian host */
	mig_fix_crc(rec, len);
}

static size_t forge(uint8_t *rec, uint16_t type, const void *payload, uint32_t len)
{
	memset(rec, 0, MIG_HDR_SIZE);
	memcpy(rec, &type, 2);
	memcpy(rec + 4, &len, 4);
	memcpy(rec + MIG_HDR_SIZE, payload, len);
	return MIG_HDR_SIZE + len;
}

/* A lying destination on port 7448: reads the HELLO, answers with lie. */
static struct {
	struct tcp_conn *l, *c;
	uint8_t lie[64];
	size_t lie_len;
	bool told;
	uint8_t got[256];
	size_t got_len;
} LD;

static void lying_dst_tick(void)
{
	uint8_t buf[4096];
	long n;

	guest_tick();
	if (!LD.c && tcp_accept(LD.l, &LD.c))
		LD.c = NULL;
	if (!LD.c)
		return;
	while ((n = tcp_recv(LD.c, buf, sizeof(buf))) > 0) {
		if (LD.told && LD.got_len + (size_t)n <= sizeof(LD.got)) {
			memcpy(LD.got + LD.got_len, buf, (size_t)n);
			LD.got_len += (size_t)n;
		}
		if (!LD.told) {
			assert_int_equal(tcp_send(LD.c, LD.lie, LD.lie_len), (long)LD.lie_len);
			LD.told = true;
		}
	}
}

static void lying_destination(const uint8_t *lie, size_t len, uint32_t code, const char *words)
{
	/* a plaintext source: these lies test the record checks, not the keys */
	struct mig_out_args a = { .name = "g1", .sink = &sink, .net = &W.src, .ip = MH_DST_IP,
				  .port = 7448, .insecure = true };
	uint16_t abort_type = MIG_ABORT;

	memset(&LD, 0, sizeof(LD));
	memcpy(LD.lie, lie, len);
	LD.lie_len = len;
	assert_int_equal(tcp_listen(&host_if.stack, 7448, 1, &LD.l), 0);
	W.tick = lying_dst_tick;
	assert_int_equal(mig_out_run(&a), -ECANCELED);
	assert_true(LD.told);
	assert_true(said(words));
	assert_true(said("error: 10.0.0.2:7448 sent a bad record"));	/* nothing moved */
	source_kept();
	assert_int_equal(last_entry(true)->outcome, MIG_FAILED);
	mh_run_for(100000);
	assert_true(LD.got_len >= MIG_HDR_SIZE + 6);			/* it said why */
	assert_memory_equal(LD.got, &abort_type, 2);
	assert_int_equal(LD.got[MIG_HDR_SIZE], code);
	tcp_abort(LD.c);
	tcp_close(LD.l);
}

/* HELLO_REPLY of 7 bytes: below its smallest (8). */
static void test_lying_destination_size(void **st)
{
	uint8_t rec[64], pay[7] = { 2 };
	size_t n = forge(rec, MIG_HELLO_REPLY, pay, sizeof(pay));

	(void)st;
	forge_seal(rec, n, 0);
	lying_destination(rec, n, MIG_E_PROTOCOL, "length 7 outside 8..1024");
}

/* A HELLO_REPLY with a CRC that does not match. */
static void test_lying_destination_crc(void **st)
{
	uint8_t rec[64], pay[20] = { 2 };
	size_t n = forge(rec, MIG_HELLO_REPLY, pay, sizeof(pay));

	(void)st;
	forge_seal(rec, n, 0);
	rec[MIG_HDR_SIZE + 4] ^= 1;
	lying_destination(rec, n, MIG_E_INTEGRITY, "CRC-32 mismatch");
}

/* A lying source: the real channel for the truth, raw bytes for the lie. */
static struct mig_chan LS;

static const struct mig_rec *ls_pull(void)
{
	const struct mig_rec *r;

	for (int i = 0; i < 2000; i++) {
		int rc = chan_pull(&LS, &r);
		if (rc == 1)
			return r;
		if (rc < 0)
			return NULL;
		netif_wait();
	}
	return NULL;
}

static void ls_send(const struct mig_rec *r)
{
	if (chan_queue(&LS, r))
		fail_msg("cannot send %s: %s", mig_type_name(r->type), LS.st.tx_err.msg);
	for (int i = 0; i < 2000 && chan_push(&LS, SIZE_MAX) != 1; i++)
		netif_wait();
	assert_true(chan_tx_idle(&LS));
}

/* Bytes straight onto the wire, then a little time for them to arrive. */
static void ls_raw(const uint8_t *b, size_t len)
{
	assert_int_equal(tcp_send(LS.conn, b, len), (long)len);
	for (int i = 0; i < 5; i++)
		netif_wait();
}

/* A hand-made record, sealed with the channel's key as the liar holds it. */
static void ls_lie(uint8_t *rec, size_t len)
{
	uint8_t sealed[256];
	size_t n;

	forge_seal(rec, len, LS.st.tx_seq);
	assert_int_equal(noise_rec_seal(&LS.ctx, rec, len, sealed, sizeof(sealed), &n), 0);
	ls_raw(sealed, n);
}

/* Queue r sealed, and take its wire bytes instead of sending them. */
static size_t ls_capture(const struct mig_rec *r, uint8_t *out, size_t cap)
{
	size_t n;

	assert_int_equal(chan_queue(&LS, r), 0);
	n = LS.tx_len;
	assert_true(n <= cap);
	memcpy(out, LS.tx, n);
	LS.tx_len = LS.tx_off = 0;
	return n;
}

static uint32_t ls_timeout_s;		/* what its HELLO says of timeout=S */

/* Connect, say HELLO for a 2 MiB guest "liar" with migration id id (0: a
 * new one, as a real source's), and get the answer. */
static const struct mig_rec *ls_hello_id(uint64_t id)
{
	static uint64_t next = 0x4c494152;
	struct mig_rec h = { .type = MIG_HELLO };
	const struct mig_rec *r;
	struct tcp_conn *c = NULL;

	assert_int_equal(tcp_connect(&W.src, MH_DST_IP, MIG_PORT, &c), 0);
	for (int i = 0; i < 100 && tcp_connected(c) == 0; i++)
		netif_wait();
	assert_int_equal(tcp_connected(c), 1);
	assert_int_equal(chan_init(&LS, MIG_SRC, c, 64 * 1024), 0);
	W.running = MH_SRC;
	assert_int_equal(chan_hs_start_src(&LS, &W.kr[MH_SRC], &W.kr[MH_SRC].peer[0]), 0);
	for (int i = 0; i < 100 && chan_handshake(&LS) == 0; i++)
		netif_wait();
	assert_int_equal(LS.mode, CHAN_SEALED);
	h.hello = (struct mig_hello){ .proto_version = MIG_PROTO_VERSION,
		.cpu_state_version = MIG_CPU_STATE_VERSION, .dev_version = VDEV_SNAP_VERSION,
		.vcpus = 1, .mig_id = id ? id : next++, .mem_size = MB << 20,
		.cpu_baseline = mig_cpu_baseline(cpuid_guest), .tsc_hz = 2000000000ull,
		.weight = 256 };
	strcpy(h.hello.name, "liar");
	strcpy(h.hello.kernel, "guest.elf");
	h.hello.timeout_s = ls_timeout_s;
	ls_send(&h);
	r = ls_pull();
	assert_non_null(r);
	assert_int_equal(r->type, MIG_HELLO_REPLY);
	return r;
}

/* ... a new one, accepted. */
static void ls_hello(void)
{
	assert_int_equal(ls_hello_id(0)->reply.code, MIG_OK);
	assert_non_null(mh_vm_on(MH_DST, "liar"));
}

/* A HELLO that says the id of a migration that ran here is refused, and
 * what a QUERY about that id hears stays "ran here": otherwise the
 * refusal, recorded under that id, would tell an in-doubt source that
 * the guest was discarded here, and it would resume its copy beside the
 * one that runs here. */
static void test_hello_with_a_used_id_refused(void **st)
{
	const struct mig_rec *r;
	uint64_t id;

	(void)st;
	assert_int_equal(migrate(), 0);
	id = last_entry(false)->id;
	assert_int_equal(last_entry(false)->outcome, MIG_DONE);
	r = ls_hello_id(id);
	assert_int_equal(r->reply.code, MIG_E_PROTOCOL);
	assert_non_null(strstr(r->reply.msg, "came here before"));
	assert_null(mh_vm_on(MH_DST, "liar"));
	assert_int_equal(last_entry(false)->outcome, MIG_REFUSED);
	assert_non_null(mig_history_find_in(id, NULL));
	assert_int_equal(mig_history_find_in(id, NULL)->outcome, MIG_DONE);
	chan_close(&LS, true);
}

/* The receiver said ABORT with code, threw the guest away, and noted why. */
static void ls_refused(uint32_t code, const char *words)
{
	const struct mig_rec *r = ls_pull();
	struct mh_vm *d = mh_vm_on(MH_DST, "liar");

	while (r && (r->type == MIG_ROUND_ACK || r->type == MIG_READY))
		r = ls_pull();
	assert_non_null(r);
	assert_int_equal(r->type, MIG_ABORT);
	assert_int_equal(r->abort.code, code);
	assert_non_null(strstr(r->abort.msg, words));
	assert_true(d->destroyed);
	assert_int_equal(last_entry(false)->outcome, MIG_FAILED);
	assert_non_null(strstr(last_entry(false)->why, words));
	chan_close(&LS, true);
}

/* A page beyond the guest's memory. */
static void test_lying_source_page_out_of_range(void **st)
{
	uint8_t rec[64], pay[13] = { 1 };	/* count 1, gfn, kind ZERO */
	uint64_t gfn = (MB << 20) / MIG_PAGE_SIZE;

	(void)st;
	ls_hello();
	memcpy(pay + 4, &gfn, 8);
	pay[12] = MIG_PAGE_ZERO;
	ls_lie(rec, forge(rec, MIG_PAGES, pay, sizeof(pay)));
	ls_refused(MIG_E_PROTOCOL, "gfn");
}

/* ROUND_END one byte short: refused from the header alone. */
static void test_lying_source_wrong_size(void **st)
{
	uint8_t rec[64], pay[19] = { 0 };

	(void)st;
	ls_hello();
	ls_lie(rec, forge(rec, MIG_ROUND_END, pay, sizeof(pay)));
	ls_refused(MIG_E_PROTOCOL, "ROUND_END");
}

/* The whole guest, truthfully, up to END; then one more PAGES. */
static void test_lying_source_record_after_end(void **st)
{
	struct mig_page run = { .gfn = 0, .kind = MIG_PAGE_ZERO_RUN,
				.run = (MB << 20) / MIG_PAGE_SIZE };
	struct mig_rec r = { .type = MIG_PAGES, .pages = { 1, &run } };
	uint8_t rec[64], pay[13] = { 1 };

	(void)st;
	ls_hello();
	ls_send(&r);
	r = (struct mig_rec){ .type = MIG_ROUND_END, .round = { 0, run.run, 0 } };
	ls_send(&r);
	r = (struct mig_rec){ .type = MIG_VCPU_STATE };
	r.vcpu.cpu = src_vm->cpu;
	r.vcpu.xsave = src_vm->xsave;
	r.vcpu.xsave_len = src_vm->xsave_len;
	ls_send(&r);
	r = (struct mig_rec){ .type = MIG_DEVICE_STATE, .dev = { src_vm->dev_len, src_vm->dev } };
	ls_send(&r);
	r = (struct mig_rec){ .type = MIG_TSC, .tsc = { 1000, 1000 } };
	ls_send(&r);
	r = (struct mig_rec){ .type = MIG_END, .end = { 1, 1, run.run } };
	ls_send(&r);
	pay[12] = MIG_PAGE_ZERO;
	ls_lie(rec, forge(rec, MIG_PAGES, pay, sizeof(pay)));
	ls_refused(MIG_E_PROTOCOL, "PAGES");
	assert_int_equal(mh_vm_on(MH_DST, "liar")->cpu_loads, 1);	/* it got that far */
}

/*
 * A scripted destination on port 7448, plaintext: the real channel and
 * stream (so it keeps to the protocol), answering as the receiver would,
 * except for ROUND_ACK: after ack_us, never, or a lie in raw bytes.
 */
enum sd_ack { SD_ACK, SD_NEVER, SD_EARLY, SD_TWICE };
static struct {
	struct tcp_conn *l;
	struct mig_chan ch;
	bool open, acked;
	enum sd_ack how;
	uint64_t ack_us, t_round0;
	bool trickle;			/* the link slows to a trickle once paused */
	uint32_t downtime_max_ms;	/* the migration's downtime-max= */
	int rc;
} SD;

static void sd_send(const struct mig_rec *r)
{
	assert_int_equal(chan_queue(&SD.ch, r), 0);
	assert_int_equal(chan_push(&SD.ch, SIZE_MAX), 1);
}

/* A ROUND_ACK the stream would not let us encode, straight onto the wire. */
static void sd_lie(uint32_t round, uint64_t pages)
{
	uint8_t rec[64], pay[12];
	size_t n;

	memcpy(pay, &round, 4);
	memcpy(pay + 4, &pages, 8);
	n = forge(rec, MIG_ROUND_ACK, pay, sizeof(pay));
	forge_seal(rec, n, SD.ch.st.tx_seq++);
	assert_int_equal(tcp_send(SD.ch.conn, rec, n), (long)n);
}

static void sd_record(const struct mig_rec *r)
{
	struct mig_rec y = { .type = 0 };

	if (r->type == MIG_HELLO) {
		y = (struct mig_rec){ .type = MIG_HELLO_REPLY, .reply = {
			.proto_version = MIG_PROTO_VERSION, .xcr0_mask = 7 } };
		sd_send(&y);
		if (SD.how == SD_EARLY)		/* round 0 not even begun */
			sd_lie(0, 0);
	} else if (r->type == MIG_ROUND_END && r->round.round == 0) {
		SD.t_round0 = W.sim.now_us;
	} else if (r->type == MIG_END) {
		y = (struct mig_rec){ .type = MIG_READY, .ready = { SD.ch.st.total_pages } };
		sd_send(&y);
	} else if (r->type == MIG_COMMIT) {
		y.type = MIG_COMMITTED;
		sd_send(&y);
	}
}

static void sd_tick(void)
{
	struct mig_rec a = { .type = MIG_ROUND_ACK };
	const struct mig_rec *r;
	struct tcp_conn *c = NULL;

	guest_tick();
	if (SD.trickle && src_vm && src_vm->vm.state == VM_PAUSED)
		W.sim.cfg.rate_Bps = 800;	/* a segment every two seconds */
	if (!SD.open && !tcp_accept(SD.l, &c) && c) {
		assert_int_equal(chan_init(&SD.ch, MIG_DST, c, 64 * 1024), 0);
		chan_plain_dst(&SD.ch);
		SD.open = true;
	}
	while (SD.open && !SD.rc && (SD.rc = chan_pull(&SD.ch, &r)) == 1) {
		SD.rc = 0;
		sd_record(r);
	}
	if (SD.rc || !SD.t_round0 || SD.acked || SD.how == SD_NEVER ||
	    W.sim.now_us < SD.t_round0 + SD.ack_us)
		return;
	SD.acked = true;
	a.ack = (struct mig_round_ack){ 0, SD.ch.st.round0_pages };
	sd_send(&a);
	if (SD.how == SD_TWICE)
		sd_lie(0, SD.ch.st.round0_pages);
}

static int sd_migrate(enum sd_ack how, uint64_t ack_us)
{
	struct mig_out_args a = { .name = "g1", .sink = &sink, .net = &W.src, .ip = MH_DST_IP,
				  .port = 7448, .insecure = true };
	int rc;

	bool trickle = SD.trickle;
	uint32_t max = SD.downtime_max_ms;

	memset(&SD, 0, sizeof(SD));
	SD.trickle = trickle;
	SD.downtime_max_ms = a.policy.downtime_max_ms = max;
	SD.how = how;
	SD.ack_us = ack_us;
	assert_int_equal(tcp_listen(&host_if.stack, 7448, 1, &SD.l), 0);
	W.tick = sd_tick;
	W.running = MH_SRC;
	rc = mig_out_run(&a);
	mh_run_for(100000);
	return rc;
}

static void sd_done(void)
{
	if (SD.open)
		chan_close(&SD.ch, true);
	SD.open = false;	/* later ticks (teardown's) leave it alone */
	tcp_close(SD.l);
}

/* The scripted destination itself: acking at once, the migration works
 * (so that the failures below are the lies', not the script's). */
static void test_scripted_destination(void **st)
{
	(void)st;
	assert_int_equal(sd_migrate(SD_ACK, 0), 0);
	assert_true(said("migrate g1: done in"));
	assert_true(t_paused >= said_at("has written round 0"));
	sd_done();
}

/* A destination slow to ack: the source sends rounds meanwhile; pausing
 * comes after the ack, however the policy had judged the rounds before. */
static void test_slow_ack_keeps_the_guest_running(void **st)
{
	(void)st;
	assert_int_equal(sd_migrate(SD_ACK, 3 * SEC), 0);
	assert_true(t_paused >= SD.t_round0 + 3 * SEC);
	assert_true(t_paused >= said_at("has written round 0"));
	assert_true(last_entry(true)->rounds >= 5);
	sd_done();
}

/* A destination that never acks: the source gives up at its ack limit
 * (silence plus 1 s per 100 MB), the guest running here throughout. */
static void test_no_ack_fails_with_the_guest_here(void **st)
{
	(void)st;
	assert_int_equal(sd_migrate(SD_NEVER, 0), -ECANCELED);
	assert_true(said("failed: no ROUND_ACK from 10.0.0.2:7448: round 0 not written there"));
	assert_true(said("g1 runs here as before"));
	assert_int_equal(t_paused, 0);			/* never paused */
	source_kept();
	assert_int_equal(last_entry(true)->outcome, MIG_FAILED);
	assert_true(SD.ch.st.phase == MIG_PH_ABORTED);	/* it was told */
	assert_int_equal(SD.ch.st.end_code, MIG_E_TIMEOUT);
	assert_true(W.sim.now_us > SD.t_round0 + MIG_SILENCE_BASE_US);
	sd_done();
}

/* The link slows to a trickle the moment the guest is paused, and the
 * destination (a script, with no limit of its own) takes a segment now
 * and then, which resets the silence limit: the guest is not kept
 * stopped past downtime-max (or, without one, far past the target) for
 * what the rest would take.  Before COMMIT giving up is safe: it runs
 * on here. */
static void test_pause_is_bounded_before_commit(void **st)
{
	(void)st;
	SD.trickle = true;
	SD.downtime_max_ms = 1000;
	assert_int_equal(sd_migrate(SD_ACK, 0), -ECANCELED);
	assert_true(said("has been paused for"));
	assert_true(said("g1 runs here as before"));
	source_kept();
	assert_true(W.sim.now_us - t_paused < 3 * SEC);
	W.sim.cfg.rate_Bps = lan.rate_Bps;
	sd_done();
}

/* Lying acks: round 0 before it was sent; round 0 twice.  Refused, the
 * migration ends, the guest runs here. */
static void lying_ack(enum sd_ack how, const char *words)
{
	assert_int_equal(sd_migrate(how, 0), -ECANCELED);
	assert_true(said(words));
	assert_true(said("g1 runs here as before"));
	assert_int_equal(t_paused, 0);
	source_kept();
	/* its ABORT, or the reset that overtakes it behind queued pages */
	assert_true(SD.ch.st.phase == MIG_PH_ABORTED || SD.rc < 0);
	sd_done();
}

static void test_lying_ack_early(void **st)
{
	(void)st;
	lying_ack(SD_EARLY, "sent a bad record: ROUND_ACK of round 0, which has not ended");
}

static void test_lying_ack_twice(void **st)
{
	(void)st;
	lying_ack(SD_TWICE, "sent a bad record: ROUND_ACK of round 0 twice");
}

/* ---- the secure channel ---- */

/* 48 bytes of a dense page of the guest, as they sit in its memory. */
static void watch_guest(void)
{
	W.watch = src_vm->mem + 7 * MIG_PAGE_SIZE + 1000;	/* page 7: dense */
	W.watch_len = 48;
}

static void test_sealed_run_shows_no_guest_bytes(void **st)
{
	(void)st;
	watch_guest();
	assert_int_equal(migrate(), 0);
	assert_true(said("peer dst SHA256:"));
	assert_true(said("(sealed, handshake "));
	assert_false(W.watch_seen);			/* nothing of it on the wire */
	assert_non_null(strstr(last_entry(true)->key, "dst,SHA256:"));
	assert_non_null(strstr(last_entry(false)->key, "src,SHA256:"));
	mh_run_for(100000);
	assert_memory_equal(mh_vm_on(MH_DST, "g1")->mem, src_vm->mem, (size_t)MB << 20);
}

static int migrate_insecure(void)
{
	struct mig_out_args a = { .name = "g1", .sink = &sink, .net = &W.src, .ip = MH_DST_IP,
				  .port = MIG_PORT, .insecure = true };

	W.running = MH_SRC;
	return mig_out_run(&a);
}

static int setup_insecure(void **st)
{
	(void)st;
	memset(&S, 0, sizeof(S));
	mh_up_listen(&lan, true);
	src_vm = mh_source_vm("g1", MB);
	next_write_us = W.sim.now_us;
	W.tick = guest_tick;
	return 0;
}

/* insecure on both ends: it works, in the clear, and says so. */
static void test_insecure_both_ends(void **st)
{
	(void)st;
	watch_guest();
	assert_int_equal(migrate_insecure(), 0);
	assert_true(said("warning: insecure"));
	assert_true(said("insecure (plaintext)"));
	assert_true(W.watch_seen);			/* the check above can fail */
	assert_string_equal(last_entry(true)->key, "insecure");
	assert_string_equal(last_entry(false)->key, "insecure");
}

/* The refusal, on the source, before anything moved; B has no guest. */
static void refused_before_data(const char *src_words, const char *dst_words)
{
	assert_true(said(src_words));
	assert_true(said("error: "));
	source_kept();
	assert_int_equal(last_entry(true)->outcome, MIG_FAILED);
	assert_int_equal(last_entry(true)->rounds, 0);
	mh_run_for(100000);
	assert_null(mh_vm_on(MH_DST, "g1"));		/* no guest was even made */
	if (dst_words) {
		assert_int_equal(last_entry(false)->outcome, MIG_REFUSED);
		assert_non_null(strstr(last_entry(false)->why, dst_words));
	}
}

/* A guest whose CPU says it is not affected by Meltdown does not go to a
 * host whose CPU is: HELLO is refused, nothing moves.  One created with
 * meltdown=affected goes, and says the same there. */
static void test_meltdown_promise_kept(void **st)
{
	struct mh_vm *d;

	(void)st;
	W.meltdown[MH_DST] = true;
	assert_int_not_equal(migrate(), 0);
	assert_true(said("error: 10.0.0.2:7447 refused: guest CPU differs: its CPU claims "
			 "RDCL_NO (not affected by Meltdown); this host's CPU is affected"));
	source_kept();
	assert_int_equal(last_entry(true)->outcome, MIG_REFUSED);
	assert_int_equal(last_entry(true)->rounds, 0);
	mh_run_for(100000);
	assert_null(mh_vm_on(MH_DST, "g1"));		/* no guest was even made */
	assert_int_equal(last_entry(false)->outcome, MIG_REFUSED);
	assert_non_null(strstr(last_entry(false)->why, "this host's CPU is affected"));
	src_vm->vm.rdcl_no = false;		/* as create meltdown=affected makes it */
	assert_int_equal(migrate(), 0);
	mh_run_for(100000);
	d = mh_vm_on(MH_DST, "g1");
	assert_non_null(d);
	assert_int_equal(d->vm.state, VM_RUNNING);
	assert_false(d->vm.rdcl_no);
}

/* Only the source says insecure: the secure listener refuses it. */
static void test_insecure_source_refused(void **st)
{
	(void)st;
	assert_int_equal(migrate_insecure(), -ECANCELED);
	refused_before_data("secure channel only", "speaks plaintext");
}

/* Only the listener says insecure: the secure source is refused. */
static void test_insecure_listener_refused(void **st)
{
	(void)st;
	assert_int_equal(migrate(), -ECANCELED);
	refused_before_data("refused: listener is insecure", "listener is insecure");
}

/* B does not trust A's key. */
static void test_untrusted_source(void **st)
{
	(void)st;
	assert_int_equal(mig_trust_remove(&W.kr[MH_DST], "src"), 0);
	assert_int_equal(migrate(), -ECANCELED);
	refused_before_data("refused: not trusted: source key SHA256:", "not trusted");
}

/* Host h trusts name with pub at ip instead. */
static void retrust(enum mh_host h, const char *name, const uint8_t *pub, uint32_t ip)
{
	char err[160];

	assert_int_equal(mig_trust_remove(&W.kr[h], name), 0);
	assert_int_equal(mig_trust_add(&W.kr[h], name, pub, ip, err, sizeof(err)), 0);
}

/* B trusts A's key, but only from another address. */
static void test_trusted_from_elsewhere(void **st)
{
	(void)st;
	retrust(MH_DST, "src", W.kr[MH_SRC].key.pub, 0x0a000063);
	assert_int_equal(migrate(), -ECANCELED);
	/* the source, which proved nothing, hears no name; this host says it */
	refused_before_data("not trusted from this address", "is 'src' from another address");
	assert_false(said("'src'"));
}

/* A pinned another key for B's address: B says so, A says B refused. */
static void test_destination_with_the_wrong_key(void **st)
{
	struct host_key other;

	(void)st;
	mh_key(&other, 9);
	retrust(MH_SRC, "dst", other.pub, MH_DST_IP);
	assert_int_equal(migrate(), -ECANCELED);
	refused_before_data("refused: wrong key: source pinned", "wrong key");
}

/* No trust entry for the address at all: nothing is even sent. */
static void test_destination_not_trusted(void **st)
{
	(void)st;
	assert_int_equal(mig_trust_remove(&W.kr[MH_SRC], "dst"), 0);
	assert_int_equal(migrate(), -ECANCELED);
	assert_true(said("is not a trusted peer"));
	source_kept();
	assert_int_equal(W.src_payload, 0);
}

/*
 * An impostor at B's address that knows B's public key (and so its
 * fingerprint) but not its private key: the handshake cannot complete,
 * nothing moves.
 */
static void test_impostor_destination(void **st)
{
	struct host_key fake;
	uint8_t fp[KEY_FP_BYTES];
	char fp_text[KEY_FP_LEN + 1];

	(void)st;
	mh_key(&fake, 7);
	memcpy(fp, W.kr[MH_DST].fp, sizeof(fp));
	memcpy(fp_text, W.kr[MH_DST].fp_text, sizeof(fp_text));
	memcpy(fake.pub, W.kr[MH_DST].key.pub, NOISE_KEY);	/* claims B's public key */
	W.kr[MH_DST].key = fake;
	assert_int_equal(migrate(), -ECANCELED);
	assert_true(said("refused: handshake did not prove the key"));
	source_kept();
	assert_int_equal(last_entry(true)->rounds, 0);
	mh_run_for(100000);
	assert_null(mh_vm_on(MH_DST, "g1"));
}

/* Without a random source there are no ephemeral keys: refused here. */
static void test_no_random_source(void **st)
{
	(void)st;
	assert_int_equal(rng_setup(NULL, NULL, NULL, NULL, 0), -ENODEV);
	assert_int_equal(migrate(), -ECANCELED);
	assert_true(said("no random source"));
	source_kept();
	assert_int_equal(W.src_payload, 0);
}

/* One bit altered on the wire in round 0, TCP checksum fixed: B cannot
 * open that record, discards, and tells A, whose guest runs on. */
static void test_byte_altered_on_the_wire(void **st)
{
	(void)st;
	W.flip_at = 300 * 1024;
	assert_int_equal(migrate(), -ECANCELED);
	assert_true(W.flipped);
	assert_true(said("integrity error"));
	assert_true(said("g1 runs here as before"));
	source_kept();
	mh_run_for(100000);
	destination_discarded();
	assert_non_null(strstr(last_entry(false)->why, "did not open"));
}

/* A source with the keys that replays, drops or reorders sealed records:
 * a PAGES record of one zero page at gfn, sealed into out, not sent. */
static size_t ls_pages_rec(uint64_t gfn, uint8_t *out, size_t cap)
{
	struct mig_page pg = { .gfn = gfn, .kind = MIG_PAGE_ZERO };
	struct mig_rec r = { .type = MIG_PAGES, .pages = { 1, &pg } };

	return ls_capture(&r, out, cap);
}

static void test_sealed_record_replayed(void **st)
{
	uint8_t a[128];
	size_t n;

	(void)st;
	ls_hello();
	n = ls_pages_rec(1, a, sizeof(a));
	ls_raw(a, n);
	ls_raw(a, n);				/* the same record again */
	ls_refused(MIG_E_INTEGRITY, "did not open");
}

/* Two sealed PAGES records, captured in order (a then b), not sent. */
static void ls_two(uint8_t *a, size_t *na, uint8_t *b, size_t *nb)
{
	ls_hello();
	*na = ls_pages_rec(1, a, 128);
	*nb = ls_pages_rec(2, b, 128);
}

static void test_sealed_record_dropped(void **st)
{
	uint8_t a[128], b[128];
	size_t na, nb;

	(void)st;
	ls_two(a, &na, b, &nb);
	ls_raw(b, nb);				/* a never arrives */
	ls_refused(MIG_E_INTEGRITY, "did not open");
}

static void test_sealed_records_reordered(void **st)
{
	uint8_t a[128], b[128];
	size_t na, nb;

	(void)st;
	ls_two(a, &na, b, &nb);
	ls_raw(b, nb);
	ls_raw(a, na);
	ls_refused(MIG_E_INTEGRITY, "did not open");
}

/* An empty sealed record: ferry never seals one, and a peer that sends
 * them would keep a silence timer alive with nothing. */
static void test_sealed_record_empty(void **st)
{
	uint8_t sealed[64];
	size_t n;

	(void)st;
	ls_hello();
	assert_int_equal(noise_rec_seal(&LS.ctx, NULL, 0, sealed, sizeof(sealed), &n), 0);
	ls_raw(sealed, n);
	ls_refused(MIG_E_PROTOCOL, "empty sealed record");
}

/* A record trickled a byte every 2 s: bytes are no sign of life, whole
 * records are, so the destination gives up once the silence limit has
 * passed (about 10 s) and frees the guest, not after the week the record
 * would take. */
/* The source's `timeout=S` holds at the destination too: a source silent
 * after its HELLO is waited for S seconds, not by the destination's own
 * rule (about 10 s for this guest), and then it is silent. */
static void test_source_timeout_holds_at_the_destination(void **st)
{
	(void)st;
	ls_timeout_s = 30;
	ls_hello();
	ls_timeout_s = 0;
	mh_run_for(25 * SEC);
	assert_false(mh_vm_on(MH_DST, "liar")->destroyed);
	mh_run_for(10 * SEC);
	assert_true(mh_vm_on(MH_DST, "liar")->destroyed);
	assert_int_equal(last_entry(false)->outcome, MIG_FAILED);
	assert_non_null(strstr(last_entry(false)->why, "silent for 30 s"));
	chan_close(&LS, true);
}

static void test_trickled_record_times_out(void **st)
{
	uint8_t a[128];
	size_t n;

	(void)st;
	ls_hello();
	n = ls_pages_rec(1, a, sizeof(a));
	for (size_t i = 0; i + 1 < n && i < 15 && !mh_vm_on(MH_DST, "liar")->destroyed; i++) {
		assert_true(i < 7);	/* 14 s: past the limit */
		ls_raw(a + i, 1);
		mh_run_for(2 * SEC);
	}
	assert_true(mh_vm_on(MH_DST, "liar")->destroyed);
	assert_int_equal(last_entry(false)->outcome, MIG_FAILED);
	assert_non_null(strstr(last_entry(false)->why, "silent"));
	chan_close(&LS, true);
}

/* Eight connections that never say who they are fill the destination's
 * slots; a second on, the oldest makes room for a real migration, which
 * goes through (without that, the ninth connection was reset). */
static void test_silent_connections_make_room(void **st)
{
	struct tcp_conn *c[2 * MIG_IN_MAX];

	(void)st;
	for (unsigned int i = 0; i < 2 * MIG_IN_MAX; i++) {
		assert_int_equal(tcp_connect(&W.src, MH_DST_IP, MIG_PORT, &c[i]), 0);
		for (int k = 0; k < 100 && tcp_connected(c[i]) == 0; k++)
			netif_wait();
		assert_int_equal(tcp_connected(c[i]), 1);
	}
	mh_run_for(2 * SEC);
	assert_int_equal(migrate(), 0);
	assert_true(said("migrate g1: done in"));
	for (unsigned int i = 0; i < 2 * MIG_IN_MAX; i++)
		tcp_abort(c[i]);
}

/* Half a sealed record, then the end of the stream. */
static void test_sealed_record_cut_short(void **st)
{
	uint8_t a[128];
	size_t n;

	(void)st;
	ls_hello();
	n = ls_pages_rec(1, a, sizeof(a));
	ls_raw(a, n / 2);
	tcp_close(LS.conn);
	LS.conn = NULL;
	mh_run_for(100000);
	assert_true(mh_vm_on(MH_DST, "liar")->destroyed);
	assert_int_equal(last_entry(false)->outcome, MIG_FAILED);
	assert_non_null(strstr(last_entry(false)->why, "in the middle of a record"));
	chan_close(&LS, true);
}

/* Bytes that are no good handshake, to the secure listener: it answers
 * with a refusal frame naming why, notes it, and goes on listening. */
static void hostile_handshake(const uint8_t *bytes, size_t n, const char *words)
{
	struct tcp_conn *c = NULL;
	uint8_t got[256];
	long k = 0;

	W.running = MH_SRC;
	assert_int_equal(tcp_connect(&W.src, MH_DST_IP, MIG_PORT, &c), 0);
	for (int i = 0; i < 100 && tcp_connected(c) == 0; i++)
		netif_wait();
	assert_int_equal(tcp_send(c, bytes, n), (long)n);
	for (int i = 0; i < 200 && k <= 0; i++) {
		netif_wait();
		k = tcp_recv(c, got, sizeof(got) - 1);
	}
	assert_true(k > 8);
	got[k] = 0;
	assert_int_equal(got[0] | got[1] << 8, CHAN_HS_REFUSE);
	assert_non_null(strstr((char *)got + 8, words));
	assert_int_equal(last_entry(false)->outcome, MIG_REFUSED);
	assert_non_null(strstr(last_entry(false)->why, words));
	tcp_abort(c);
	mh_run_for(10000);
}

/* Log lines "error: migrate: refused incoming", counted through the log's sink. */
static unsigned int refused_lines;
static char last_refused[512];

static void count_refused(const char *buf, size_t len)
{
	char line[512];

	snprintf(line, sizeof(line), "%.*s", (int)len, buf);
	if (strstr(line, "error: migrate: refused incoming")) {
		refused_lines++;
		memcpy(last_refused, line, sizeof(line));
	}
}

/* Junk from the network, as fast as it comes: each is refused and noted in
 * `migrations` as always (hostile_handshake checks), but the log (the console) says at most 5 a second, and
 * the next line says how many it left out. */
static void test_a_handshake_flood_does_not_flood_the_log(void **st)
{
	static const uint8_t http[] = "GET / HTTP/1.0\r\n\r\n";
	uint64_t t0, seconds;

	(void)st;
	refused_lines = 0;
	log_set_sink(count_refused);
	mh_run_for(1100000);		/* a fresh second of the log's budget */
	t0 = W.sim.now_us;
	for (int i = 0; i < 20; i++)
		hostile_handshake(http, sizeof(http) - 1, "not a handshake");
	seconds = (W.sim.now_us - t0) / 1000000 + 1;	/* budgets the flood spanned */
	assert_true(refused_lines >= 1 && refused_lines <= 5 * (seconds + 1));
	assert_true(refused_lines < 20);
	assert_non_null(strstr(last_refused, "not a handshake"));
	mh_run_for(1100000);
	hostile_handshake(http, sizeof(http) - 1, "not a handshake");
	assert_non_null(strstr(last_refused, "refusals before it not shown"));
	mh_run_for(1100000);
	hostile_handshake(http, sizeof(http) - 1, "not a handshake");
	assert_null(strstr(last_refused, "not shown"));	/* none left out since */
	assert_null(strstr(last_refused, "handshake0"));	/* nothing stray after it */
	log_set_sink(NULL);
}

static void test_hostile_handshakes(void **st)
{
	static const uint8_t http[] = "GET / HTTP/1.0\r\n\r\n";
	uint8_t f[4 + CHAN_HS_MSG1_LEN] = { 0x01, 0x4e, 10, 0 };

	(void)st;
	hostile_handshake(http, sizeof(http) - 1, "not a handshake");
	hostile_handshake(f, 4 + 10, "malformed handshake (10 bytes)");
	f[2] = f[3] = 0xff;			/* longer than any frame */
	hostile_handshake(f, 4, "not a handshake");
	f[0] = 0x02;				/* message 2, from a source */
	f[2] = CHAN_HS_MSG2_LEN;
	f[3] = 0;
	hostile_handshake(f, 4 + CHAN_HS_MSG2_LEN, "unexpected handshake frame");
	/* the right hints, then no real handshake */
	f[0] = 0x01;
	f[2] = CHAN_HS_MSG1_LEN;
	memcpy(f + 4, W.kr[MH_SRC].fp, KEY_FP_BYTES);
	memcpy(f + 4 + KEY_FP_BYTES, W.kr[MH_DST].fp, KEY_FP_BYTES);
	memset(f + 4 + 2 * KEY_FP_BYTES, 0x42, NOISE_HS_OVERHEAD);
	hostile_handshake(f, sizeof(f), "handshake did not prove");
	assert_null(mh_vm_on(MH_DST, "g1"));
	/* and the listener works on */
	assert_int_equal(migrate(), 0);
}

/* Someone who recorded the start of a migration (the handshake, HELLO,
 * round 0) replays it without the source's keys.  Message 1 is genuine, so
 * the destination answers it, but with a fresh ephemeral key: the recorded
 * records were sealed for the old one and do not open.  Nothing is made. */
static void test_recorded_migration_replayed(void **st)
{
	static uint8_t rec[16384];
	struct tcp_conn *c = NULL;
	struct mh_vm *d;
	uint8_t got[512];
	long k;

	(void)st;
	W.cap = rec;
	W.cap_len = sizeof(rec);
	assert_int_equal(migrate(), 0);
	assert_int_equal(W.cap_got, sizeof(rec));
	d = mh_vm_on(MH_DST, "g1");
	vm_destroy(&d->vm);			/* a replayed HELLO could make g1 again */
	W.cap = NULL;
	log_set_sink(log_line);
	assert_int_equal(tcp_connect(&W.src, MH_DST_IP, MIG_PORT, &c), 0);
	for (int i = 0; i < 100 && tcp_connected(c) == 0; i++)
		netif_wait();
	for (size_t at = 0; at < sizeof(rec); at += (size_t)k) {
		k = tcp_send(c, rec + at, sizeof(rec) - at);
		assert_true(k >= 0);
		netif_wait();
	}
	mh_run_for(200000);
	while ((k = tcp_recv(c, got, sizeof(got))) > 0)
		;
	assert_true(mh_vm_on(MH_DST, "g1") == d);	/* no new guest */
	assert_true(said("failed: a sealed record did not open"));
	assert_false(said("proved the key"));		/* it proved nothing */
	tcp_abort(c);
	log_set_sink(NULL);
}

/* ---- settling a guest in doubt (hv/migrate/doubt.c) ---- */

static void log_line(const char *buf, size_t len)
{
	char line[512];

	snprintf(line, sizeof(line), "%.*s", (int)len, buf);
	sink_line("log: ", line);
}

/* How many lines said words. */
static unsigned int times_said(const char *words)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < S.n; i++)
		n += strstr(S.line[i], words) != NULL;
	return n;
}

/* The source's shell CPU between commands for up to us (simulated): it
 * polls and settles guests in doubt, until done() holds. */
static bool idle_until(bool (*done)(void), uint64_t us)
{
	uint64_t end = W.sim.now_us + us;

	while (W.sim.now_us < end) {
		W.running = MH_SRC;
		mig_doubt_poll(&W.src, true);
		if (done && done())
			return true;
		netif_wait();
	}
	return false;
}

static bool source_copy_gone(void) { return src_vm->destroyed; }
static bool source_settled(void) { return src_vm->vm.mig.kind != VM_MIG_IN_DOUBT; }

/* The link works again, for good. */
static void link_back(void)
{
	W.cut_at_commit = W.cut_at_activate = false;
	W.sim.cut = false;
}


/* In doubt after COMMIT, with the log in S. */
static void into_doubt(void)
{
	doubt_test = true;
	log_set_sink(log_line);
	assert_int_equal(migrate(), -ECANCELED);
	assert_true(W.commit_seen);
	assert_int_equal(src_vm->vm.state, VM_PAUSED);
	assert_int_equal(src_vm->vm.mig.kind, VM_MIG_IN_DOUBT);
	assert_int_equal(last_entry(true)->outcome, MIG_IN_DOUBT);
}

/* What the operator does with a guest left in doubt, then no question is
 * left open (doubt.c keeps one across the test's worlds otherwise). */
static void doubt_wind_down(void)
{
	doubt_test = false;
	link_back();
	if (!src_vm->destroyed)
		vm_destroy(&src_vm->vm);
	idle_until(NULL, 6 * SEC);
	log_set_sink(NULL);
}

/* COMMIT never arrived: the source in doubt, the destination's copy gone
 * once its silence ran out. */
static void doubt_after_a_lost_commit(void)
{
	W.cut_at_commit = true;
	into_doubt();
	mh_run_for(MIG_SILENCE_BASE_US + SEC);
	destination_discarded();
}

/* COMMIT arrived and the guest runs there, but nothing came back: the
 * source asks once the link is back, hears "ran", and frees its copy. */
static void test_doubt_settled_ran(void **st)
{
	struct mh_vm *d;

	(void)st;
	W.cut_at_activate = true;
	into_doubt();
	d = mh_vm_on(MH_DST, "g1");
	assert_non_null(d);
	assert_false(d->destroyed);
	assert_int_equal(d->vm.state, VM_RUNNING);
	assert_false(idle_until(source_copy_gone, 10 * SEC));	/* no link, no answer */
	link_back();
	assert_true(idle_until(source_copy_gone, 30 * SEC));
	assert_true(said("completed on 10.0.0.2:7447: freeing the copy here"));
	assert_false(d->destroyed);				/* never none */
	assert_int_equal(d->vm.state, VM_RUNNING);
}

/* COMMIT never arrived: once the destination has discarded its copy, the
 * source hears "discarded" and runs the guest on, as before. */
static void test_doubt_settled_discarded(void **st)
{
	(void)st;
	doubt_after_a_lost_commit();
	link_back();
	assert_true(idle_until(source_settled, 30 * SEC));
	assert_true(said("never ran on 10.0.0.2:7447: resumed here"));
	source_kept();
}

/* The same with a guest the operator had paused before the migration:
 * "discarded" leaves it paused, no longer in doubt. */
static void test_doubt_discarded_stays_paused(void **st)
{
	char err[64];

	(void)st;
	assert_int_equal(vm_pause(&src_vm->vm, err, sizeof(err)), 0);
	doubt_after_a_lost_commit();
	link_back();
	assert_true(idle_until(source_settled, 30 * SEC));
	assert_true(said("stays paused here, as before it"));
	assert_false(src_vm->destroyed);
	assert_int_equal(src_vm->vm.state, VM_PAUSED);
	assert_int_equal(src_vm->vm.mig.kind, VM_MIG_NONE);
}

/* The destination no longer knows the id (its history moved on): the
 * source hears "unknown", says so once, and keeps its copy in doubt for the
 * operator. */
static void test_doubt_unknown_keeps_asking(void **st)
{
	(void)st;
	doubt_after_a_lost_commit();
	for (unsigned int i = 0; i < MIG_HISTORY; i++)	/* 16 migrations later */
		mig_history_add(0x5000 + i, false, "other", "10.0.0.9:7447", 0)->outcome =
			MIG_DONE;
	link_back();
	assert_false(idle_until(source_settled, 30 * SEC));
	assert_int_equal(times_said("has no record of migration"), 1);
	assert_false(src_vm->destroyed);
	assert_int_equal(src_vm->vm.state, VM_PAUSED);
	assert_int_equal(src_vm->vm.mig.kind, VM_MIG_IN_DOUBT);
}

/* The destination's key is untrusted after the migration (it leaked, say):
 * the source does not ask it, says why once, and leaves it to the operator. */
static void test_doubt_untrusted_not_asked(void **st)
{
	(void)st;
	W.cut_at_activate = true;
	into_doubt();
	assert_int_equal(mig_trust_remove(&W.kr[MH_SRC], "dst"), 0);
	link_back();
	assert_false(idle_until(source_copy_gone, 30 * SEC));
	assert_int_equal(times_said("is no longer trusted with that key"), 1);
	assert_false(said("completed on"));
	assert_int_equal(src_vm->vm.state, VM_PAUSED);
	assert_int_equal(src_vm->vm.mig.kind, VM_MIG_IN_DOUBT);
}

/* A host at the destination's address that cannot prove the key the
 * destination proved at the migration (it was replaced, or it is another
 * host) gets no say: the handshake fails and the guest stays in doubt. */
static void test_doubt_impostor_gets_no_say(void **st)
{
	struct host_key k;

	(void)st;
	W.cut_at_activate = true;
	into_doubt();
	mh_key(&k, 9);
	mig_keyring_set_key(&W.kr[MH_DST], &k);
	link_back();
	assert_false(idle_until(source_copy_gone, 30 * SEC));
	assert_int_equal(times_said("cannot ask about migration"), 1);
	assert_false(said("completed on"));
	assert_false(said("never ran on"));
	assert_int_equal(src_vm->vm.state, VM_PAUSED);
	assert_int_equal(src_vm->vm.mig.kind, VM_MIG_IN_DOUBT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_records_leave_at_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clean_run, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zero_guest_leaves_the_shell_cpu_its_turns, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_begin_then_abandon, setup, teardown),
		cmocka_unit_test_setup_teardown(test_device_state_at_odds_with_memory, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_late_frames_go_with_the_guest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_late_frames_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_waiting_frames_dropped_at_commit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_meltdown_promise_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_device_state_at_odds_at_the_source, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_sealed_record_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(test_silent_connections_make_room, setup, teardown),
		cmocka_unit_test_setup_teardown(test_source_timeout_holds_at_the_destination, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_trickled_record_times_out, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hello_with_a_used_id_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_paused_guest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_source_waits_for_round_ack, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scripted_destination, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slow_ack_keeps_the_guest_running, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_no_ack_fails_with_the_guest_here, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_lying_ack_early, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lying_ack_twice, setup, teardown),
		cmocka_unit_test_setup_teardown(test_link_cut_mid_round, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cancel_at_the_destination, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cancel_before_commit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_silence_after_commit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_commit_lost, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lying_destination_size, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lying_destination_crc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lying_source_page_out_of_range, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lying_source_wrong_size, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lying_source_record_after_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sealed_run_shows_no_guest_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_insecure_both_ends, setup_insecure, teardown),
		cmocka_unit_test_setup_teardown(test_insecure_source_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_insecure_listener_refused, setup_insecure,
						teardown),
		cmocka_unit_test_setup_teardown(test_untrusted_source, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_handshake_flood_does_not_flood_the_log, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_trusted_from_elsewhere, setup, teardown),
		cmocka_unit_test_setup_teardown(test_destination_with_the_wrong_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_destination_not_trusted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_impostor_destination, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_random_source, setup, teardown),
		cmocka_unit_test_setup_teardown(test_byte_altered_on_the_wire, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sealed_record_replayed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sealed_record_dropped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sealed_records_reordered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sealed_record_cut_short, setup, teardown),
		cmocka_unit_test_setup_teardown(test_recorded_migration_replayed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_doubt_settled_ran, setup, teardown),
		cmocka_unit_test_setup_teardown(test_doubt_settled_discarded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_doubt_discarded_stays_paused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_doubt_unknown_keeps_asking, setup, teardown),
		cmocka_unit_test_setup_teardown(test_doubt_untrusted_not_asked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_doubt_impostor_gets_no_say, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pause_is_bounded_before_commit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_handshakes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_listener_kept_when_the_new_port_is_taken, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
