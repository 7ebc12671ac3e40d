/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Whole migrations on the host: the real sender (hv/migrate/send.c) moves a
 * small fake guest to the real receiver (recv.c) over the simulated link,
 * with the real stream, channel, policy and dirty log in between
 * (tests/unit/mig_host.h lists the seams).  A clean run, where the
 * destination's memory and state equal the source's; a link cut mid-round;
 * a cancel before COMMIT; silence after COMMIT (in doubt); a lost COMMIT;
 * and lying peers on either side.
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

#include "hv/migrate/chan.h"
#include "hv/migrate/migrate.h"
#include "hv/migrate/stream.h"
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
	unsigned int n;
	bool (*cancel)(void);
} S;

static void sink_line(const char *prefix, const char *line)
{
	if (S.n < 64)
		snprintf(S.line[S.n++], sizeof(S.line[0]), "%s%s", prefix, line);
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

/* ---- the guest and the world ---- */

static struct mh_vm *src_vm;
static uint64_t next_write_us;
static uint32_t write_rng = 1;

/* The running guest writes one of its first 64 pages each millisecond. */
static void guest_tick(void)
{
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
	next_write_us = 0;
	W.tick = guest_tick;
	return 0;
}

static int teardown(void **st)
{
	(void)st;
	for (unsigned int i = 0; getenv("E2E_SHOW") && i < S.n; i++)
		fprintf(stderr, "  | %s\n", S.line[i]);
	for (const struct mig_entry *e; getenv("E2E_SHOW") && (e = mig_history_at(0));) {
		for (unsigned int i = 0; (e = mig_history_at(i)); i++)
			fprintf(stderr, "  h %s %s %u rounds: %s\n", e->out ? "out" : "in",
				mig_outcome_name(e->outcome), e->rounds, e->why);
		break;
	}
	src_vm = NULL;
	mh_down();
	return 0;
}

static int migrate(void)
{
	struct mig_out_args a = { .name = "g1", .sink = &sink, .net = &W.src, .ip = MH_DST_IP,
				  .port = MIG_PORT };

	W.running = MH_SRC;
	return mig_out_run(&a);
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
static void destination_discarded(void)
{
	struct mh_vm *d = mh_vm_on(MH_DST, "g1");

	assert_non_null(d);
	assert_true(d->destroyed);
	assert_int_equal(last_entry(false)->outcome, MIG_FAILED);
}

/* ---- a clean run ---- */

static void test_clean_run(void **st)
{
	struct mh_vm *d;

	(void)st;
	assert_int_equal(migrate(), 0);
	assert_true(said("migrate g1: done in"));
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
	/* the guest wrote while it moved: more than one round, all in the log */
	assert_true(last_entry(true)->rounds >= 2);
	assert_int_equal(last_entry(true)->outcome, MIG_DONE);
	assert_int_equal(last_entry(false)->outcome, MIG_DONE);
	assert_true(src_vm->vm.dirty.stats.faults > 0);
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
	mh_run_for(MIG_SILENCE_US + SEC);	/* the destination's own timeout */
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
	mh_run_for(MIG_SILENCE_US + SEC);
	destination_discarded();
}

/*
 * COMMIT lost (every copy of it), the rest of the link up.  Both ends wait
 * 10 s; the destination began one round trip earlier (at END), so it
 * discards first, but its ABORT is one trip too late: the source is in
 * doubt just as when all went silent.  Never both copies running: the
 * destination's copy is gone before the source could resume its own.
 */
static void test_commit_lost(void **st)
{
	(void)st;
	W.drop_commit = true;
	assert_int_equal(migrate(), -ECANCELED);
	assert_true(W.commit_seen);
	assert_false(W.sim.cut);
	assert_true(said("in doubt"));
	assert_int_equal(src_vm->vm.state, VM_PAUSED);
	assert_int_equal(src_vm->vm.mig.kind, VM_MIG_IN_DOUBT);
	destination_discarded();		/* already */
	assert_non_null(strstr(last_entry(false)->why, "silent"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_clean_run, setup, teardown),
		cmocka_unit_test_setup_teardown(test_paused_guest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_link_cut_mid_round, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cancel_before_commit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_silence_after_commit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_commit_lost, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
