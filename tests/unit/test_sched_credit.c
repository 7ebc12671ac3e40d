/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The credit scheduling policy (hv/sched/credit.c) on a simulated clock
 * driving N host CPUs the way hv/sched.c does: a 250 Hz tick, reschedule
 * IPIs returned by wake/set_params, halt when pick_next finds nothing.
 * Entities are CPU hogs or interactive (run a burst, sleep, wake).  The
 * simulation measures run time itself and checks the policy against it.
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

#include "hv/sched/sched_ops.h"

#define MS	1000000ull
#define SEC	(1000 * MS)
#define DT	(250 * 1000ull)	/* simulation step */
#define TICK	(4 * MS)	/* 250 Hz */
#define SLICE	(10 * MS)
#define MAXE	16
#define MAXC	8

static const struct sched_ops *ops = &sched_credit_ops;

enum kind { HOG, IO };

struct ent {
	struct sched_entity se;
	enum kind kind;
	uint64_t burst, nap;	/* IO: runs burst, then sleeps nap */
	uint64_t left;		/* of the current burst */
	uint64_t wake_at;
	bool asleep, removed, lat_pending;
	uint64_t woke_at, max_lat, wakes;
	uint64_t ran;		/* measured by the simulation */
	uint64_t wait, max_wait;
};

struct sim {
	unsigned int ncpu, n;
	struct ent e[MAXE];
	struct ent *cur[MAXC];
	bool pick[MAXC];
	uint64_t now, busy[MAXC];
	unsigned int wrong_cpu, double_run;
	bool lose_ipis;		/* wake's IPIs to busy CPUs never arrive */
};

static struct sim S;

static uint64_t rng;

static uint32_t rnd(uint32_t n)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rng >> 33) % n;
}

static void sim_init(unsigned int ncpu)
{
	memset(&S, 0, sizeof(S));
	S.ncpu = ncpu;
	assert_int_equal(ops->init(ncpu), 0);
	for (unsigned int c = 0; c < ncpu; c++)
		S.pick[c] = true;
}

static void kick(int cpu)
{
	if (cpu >= 0) {
		assert_true((unsigned int)cpu < S.ncpu);
		S.pick[cpu] = !S.lose_ipis || !S.cur[cpu];
	}
}

static struct ent *sim_add(enum kind k, uint32_t weight, uint32_t cap_bp,
			   uint64_t aff)
{
	struct ent *e = &S.e[S.n++];
	struct sched_params p = { weight, cap_bp, aff };

	e->kind = k;
	e->burst = 1 * MS;
	e->nap = 15 * MS;
	e->left = e->burst;
	assert_int_equal(ops->add_vcpu(&e->se, &p, S.now), 0);
	assert_true(e->se.cpu >= 0 && (aff >> e->se.cpu & 1));
	kick(ops->wake(&e->se, S.now));
	return e;
}

static struct ent *ent_of(struct sched_entity *se)
{
	return se ? (struct ent *)((char *)se - offsetof(struct ent, se)) : NULL;
}

static void do_pick(unsigned int c)
{
	struct ent *e = ent_of(ops->pick_next(c, S.now));

	S.pick[c] = false;
	S.cur[c] = e;
	if (!e)
		return;
	assert_false(e->removed);
	assert_false(e->asleep);
	if (!(e->se.p.affinity >> c & 1))
		S.wrong_cpu++;
	for (unsigned int o = 0; o < S.ncpu; o++)
		if (o != c && S.cur[o] == e)
			S.double_run++;
	if (e->lat_pending) {
		e->lat_pending = false;
		if (S.now - e->woke_at > e->max_lat)
			e->max_lat = S.now - e->woke_at;
	}
}

/* Run the CPUs for DT: account, end bursts (the vCPU halts). */
static void run_cpus(void)
{
	for (unsigned int c = 0; c < S.ncpu; c++) {
		struct ent *e = S.cur[c];

		if (!e)
			continue;
		e->ran += DT;
		S.busy[c] += DT;
		if (e->kind != IO || (e->left -= DT) > 0)
			continue;
		assert_true(ops->sleep(&e->se, S.now));
		e->asleep = true;
		e->wake_at = S.now + e->nap;
		S.cur[c] = NULL;
		S.pick[c] = true;
	}
}

static bool running(const struct ent *e)
{
	for (unsigned int c = 0; c < S.ncpu; c++)
		if (S.cur[c] == e)
			return true;
	return false;
}

static void wake_and_wait(void)
{
	for (unsigned int i = 0; i < S.n; i++) {
		struct ent *e = &S.e[i];

		if (e->removed)
			continue;
		if (e->asleep && S.now >= e->wake_at) {
			e->asleep = false;
			e->left = e->burst;
			e->woke_at = S.now;
			e->lat_pending = true;
			e->wakes++;
			kick(ops->wake(&e->se, S.now));
		}
		e->wait = e->asleep || running(e) ? 0 : e->wait + DT;
		if (e->wait > e->max_wait)
			e->max_wait = e->wait;
	}
}

static void sim_step(void)
{
	S.now += DT;
	run_cpus();
	wake_and_wait();
	if (S.now % TICK == 0)
		for (unsigned int c = 0; c < S.ncpu; c++)
			if (ops->tick(c, S.now))
				S.pick[c] = true;
	for (unsigned int c = 0; c < S.ncpu; c++)
		if (S.pick[c])
			do_pick(c);
}

static void sim_run(uint64_t ns)
{
	uint64_t end = S.now + ns;

	if (S.now == 0)
		for (unsigned int c = 0; c < S.ncpu; c++)
			if (S.pick[c])
				do_pick(c);
	while (S.now < end)
		sim_step();
}

/* Snapshot of the measured run times, for windows. */
static void snap(uint64_t *ran)
{
	for (unsigned int i = 0; i < S.n; i++)
		ran[i] = S.e[i].ran;
}

static void set_params(struct ent *e, uint32_t w, uint32_t cap, uint64_t aff)
{
	struct sched_params p = { w, cap, aff };

	kick(ops->set_params(&e->se, &p, S.now));
}

/* Two hogs with weights r*256 and 256 on one CPU for secs: |got/r - 1|. */
static double fairness_error(unsigned int r, unsigned int secs)
{
	double got;

	sim_init(1);
	sim_add(HOG, 256 * r, 0, 1);
	sim_add(HOG, 256, 0, 1);
	sim_run(secs * SEC);
	assert_int_equal(S.busy[0], secs * SEC);	/* never idle with work */
	got = (double)S.e[0].ran / (double)S.e[1].ran;
	return got > r ? got / r - 1 : 1 - got / r;
}

/* Weights share one CPU 1:1, 2:1 and 4:1 within 2 % of the ratio; the
 * error of each is the benchmark figure, printed as it is checked. */
static void test_weights(void **state)
{
	static const unsigned int ratio[] = { 1, 2, 4 };

	(void)state;
	for (unsigned int i = 0; i < 3; i++) {
		double err = fairness_error(ratio[i], 10);

		print_message("[ INFO     ] fairness error %u:1 over 10 s: %.3f %%\n",
			      ratio[i], 100 * err);
		assert_true(err <= 0.02);
	}
}

/* Three hogs over one CPU, one of them twice as heavy, on 1..3 CPUs more. */
static void test_weights_beside_others(void **state)
{
	(void)state;
	sim_init(1);
	sim_add(HOG, 512, 0, 1);
	sim_add(HOG, 256, 0, 1);
	sim_add(HOG, 256, 0, 1);
	sim_run(10 * SEC);
	assert_in_range(S.e[0].ran, 49 * SEC / 10, 51 * SEC / 10);
	assert_in_range(S.e[1].ran, 245 * SEC / 100, 255 * SEC / 100);
}

static double share(const struct ent *e, uint64_t ran0, uint64_t ns)
{
	return (double)(e->ran - ran0) / (double)ns;
}

static void test_cap(void **state)
{
	struct ent *a, *b;

	(void)state;
	sim_init(1);
	a = sim_add(HOG, 256, 2500, 1);
	sim_run(10 * SEC);
	assert_true(share(a, 0, 10 * SEC) >= 0.24 && share(a, 0, 10 * SEC) <= 0.26);
	assert_int_equal(S.busy[0], a->ran);	/* halted the rest */

	sim_init(1);
	a = sim_add(HOG, 256, 2500, 1);
	b = sim_add(HOG, 256, 0, 1);
	sim_run(10 * SEC);
	assert_true(share(a, 0, 10 * SEC) >= 0.24 && share(a, 0, 10 * SEC) <= 0.26);
	assert_true(share(b, 0, 10 * SEC) >= 0.74);
}

/* A guest cap of 50 % over a 2-vCPU guest on 2 CPUs: 25 % each. */
static void test_guest_cap_split(void **state)
{
	uint32_t cap = sched_cap_split(50, 2);

	(void)state;
	assert_int_equal(cap, 2500);
	assert_int_equal(sched_cap_split(100, 3), 3333);
	assert_int_equal(sched_cap_split(300, 2), SCHED_CAP_BP_MAX);
	sim_init(2);
	sim_add(HOG, 256, cap, SCHED_AFFINITY_ANY);
	sim_add(HOG, 256, cap, SCHED_AFFINITY_ANY);
	sim_run(10 * SEC);
	assert_true(share(&S.e[0], 0, 10 * SEC) + share(&S.e[1], 0, 10 * SEC) <= 0.51);
	assert_true(share(&S.e[0], 0, 10 * SEC) >= 0.24);
}

static void test_wake_latency_beside_hogs(void **state)
{
	struct ent *io;

	(void)state;
	sim_init(1);
	for (int i = 0; i < 3; i++)
		sim_add(HOG, 256, 0, 1);
	io = sim_add(IO, 256, 0, 1);
	sim_run(5 * SEC);
	assert_true(io->wakes >= 250);
	assert_true(io->max_lat <= SLICE);
	print_message("[ INFO     ] interactive beside 3 hogs: worst wake-up latency %.2f ms over %lu wake-ups\n",
		      (double)io->max_lat / MS, (unsigned long)io->wakes);

	/* Without the IPI the next tick still preempts for it. */
	sim_init(1);
	S.lose_ipis = true;
	for (int i = 0; i < 3; i++)
		sim_add(HOG, 256, 0, 1);
	io = sim_add(IO, 256, 0, 1);
	sim_run(5 * SEC);
	assert_true(io->wakes >= 250);
	assert_true(io->max_lat <= TICK);
}

static void test_pinning(void **state)
{
	(void)state;
	sim_init(2);
	for (int i = 0; i < 3; i++)
		sim_add(HOG, 256, 0, 2);
	sim_run(6 * SEC);
	assert_int_equal(S.wrong_cpu, 0);
	assert_int_equal(S.busy[0], 0);
	for (int i = 0; i < 3; i++)
		assert_in_range(S.e[i].ran, 196 * SEC / 100, 204 * SEC / 100);
}

static void test_spread(void **state)
{
	uint64_t r0[MAXE];

	(void)state;
	sim_init(2);
	sim_add(HOG, 256, 0, SCHED_AFFINITY_ANY);
	sim_add(HOG, 256, 0, SCHED_AFFINITY_ANY);
	sim_run(5 * SEC);
	assert_true(share(&S.e[0], 0, 5 * SEC) >= 0.99);
	assert_true(share(&S.e[1], 0, 5 * SEC) >= 0.99);

	/* Both pinned to CPU 0, then let float: CPU 1 takes one. */
	sim_init(2);
	sim_add(HOG, 256, 0, 1);
	sim_add(HOG, 256, 0, 1);
	sim_run(1 * SEC);
	assert_int_equal(S.busy[1], 0);
	set_params(&S.e[0], 256, 0, SCHED_AFFINITY_ANY);
	set_params(&S.e[1], 256, 0, SCHED_AFFINITY_ANY);
	snap(r0);
	sim_run(4 * SEC);
	assert_true(share(&S.e[0], r0[0], 4 * SEC) >= 0.98);
	assert_true(share(&S.e[1], r0[1], 4 * SEC) >= 0.98);
}

/* Four unpinned hogs on two CPUs: half a CPU each. */
static void test_spread_four_on_two(void **state)
{
	(void)state;
	sim_init(2);
	for (int i = 0; i < 4; i++)
		sim_add(HOG, 256, 0, SCHED_AFFINITY_ANY);
	sim_run(8 * SEC);
	for (int i = 0; i < 4; i++)
		assert_in_range(S.e[i].ran, 39 * SEC / 10, 41 * SEC / 10);
	assert_int_equal(S.double_run, 0);
}

/* Three unpinned hogs on two CPUs: the odd one out rotates, two thirds of
 * a CPU each. */
static void test_spread_three_on_two(void **state)
{
	(void)state;
	sim_init(2);
	for (int i = 0; i < 3; i++)
		sim_add(HOG, 256, 0, SCHED_AFFINITY_ANY);
	sim_run(12 * SEC);
	for (int i = 0; i < 3; i++)
		print_message("[ INFO     ] 3 hogs on 2 CPUs: hog %d got %.1f %%\n", i,
			      100 * share(&S.e[i], 0, 12 * SEC));
	for (int i = 0; i < 3; i++)
		assert_in_range(S.e[i].ran, 78 * SEC / 10, 82 * SEC / 10);
}

static void test_change_while_running(void **state)
{
	uint64_t r0[MAXE];
	double got;

	(void)state;
	sim_init(1);
	sim_add(HOG, 256, 0, 1);
	sim_add(HOG, 256, 0, 1);
	sim_run(3 * SEC);
	set_params(&S.e[0], 768, 0, 1);
	snap(r0);
	sim_run(6 * SEC);
	got = (double)(S.e[0].ran - r0[0]) / (double)(S.e[1].ran - r0[1]);
	assert_true(got >= 3 * 0.98 && got <= 3 * 1.02);

	/* A cap set on a running hog, then lifted. */
	set_params(&S.e[0], 256, 2500, 1);
	set_params(&S.e[1], 256, 0, 1);
	snap(r0);
	sim_run(10 * SEC);
	assert_true(share(&S.e[0], r0[0], 10 * SEC) >= 0.24 &&
		    share(&S.e[0], r0[0], 10 * SEC) <= 0.26);
	set_params(&S.e[0], 256, 0, 1);
	snap(r0);
	sim_run(4 * SEC);
	assert_true(share(&S.e[0], r0[0], 4 * SEC) >= 0.49);
}

static void remove_ent(struct ent *e)
{
	ops->remove_vcpu(&e->se);
	e->removed = true;
	assert_int_equal(e->se.cpu, -1);
	assert_int_equal(e->se.state, SE_OFF);
}

static void test_remove(void **state)
{
	uint64_t r0[MAXE];
	struct ent *q = NULL;

	(void)state;
	sim_init(1);
	for (int i = 0; i < 3; i++)
		sim_add(HOG, 256, 0, 1);
	sim_run(1 * SEC);
	for (int i = 0; i < 3 && !q; i++)
		if (S.e[i].se.state == SE_QUEUED)
			q = &S.e[i];
	assert_non_null(q);
	assert_false(running(q));
	remove_ent(q);
	snap(r0);
	sim_run(4 * SEC);
	assert_int_equal(q->ran, r0[q - S.e]);
	for (int i = 0; i < 3; i++)
		if (&S.e[i] != q)
			assert_in_range(S.e[i].ran - r0[i], 196 * SEC / 100, 204 * SEC / 100);

	/* The running one, by its own CPU between two entries. */
	q = S.cur[0];
	remove_ent(q);
	do_pick(0);
	assert_non_null(S.cur[0]);
	assert_ptr_not_equal(S.cur[0], q);
	snap(r0);
	sim_run(1 * SEC);
	assert_int_equal(q->ran, r0[q - S.e]);
}

/* The policy's own accounting agrees with what the CPUs did. */
static void test_accounting(void **state)
{
	struct sched_usage u;

	(void)state;
	sim_init(1);
	sim_add(HOG, 512, 0, 1);
	sim_add(HOG, 256, 0, 1);
	sim_add(IO, 256, 0, 1);
	sim_run(3 * SEC);
	for (int i = 0; i < 3; i++) {
		ops->usage(&S.e[i].se, S.now, &u);
		assert_int_equal(u.runtime_ns, S.e[i].ran);
		assert_int_equal(u.cpu, 0);
	}
	ops->usage(&S.e[1].se, S.now, &u);
	assert_int_equal(u.runtime_ns + u.steal_ns, 3 * SEC);
	assert_true(u.switches > 10);
}

static void test_bad_params(void **state)
{
	struct sched_entity se;
	struct sched_params p = { 0, 0, 1 };

	(void)state;
	assert_int_equal(ops->init(0), -EINVAL);
	assert_int_equal(ops->init(SCHED_MAX_CPUS + 1), -EINVAL);
	assert_int_equal(ops->init(2), 0);
	assert_int_equal(ops->add_vcpu(&se, &p, 0), -EINVAL);	/* weight 0 */
	p = (struct sched_params){ 256, 10001, 1 };
	assert_int_equal(ops->add_vcpu(&se, &p, 0), -EINVAL);	/* cap > 1 CPU */
	p = (struct sched_params){ 256, 0, 4 };
	assert_int_equal(ops->add_vcpu(&se, &p, 0), -EINVAL);	/* no such CPU */
	p = (struct sched_params){ 256, 0, 2 };
	assert_int_equal(ops->add_vcpu(&se, &p, 0), 0);
	assert_int_equal(se.cpu, 1);
	p.weight = 70000;
	assert_int_equal(ops->set_params(&se, &p, 0), -EINVAL);
	assert_int_equal(se.p.weight, 256);
	assert_null(ops->pick_next(1, 0));	/* asleep: nothing to run */
	assert_false(ops->tick(1, TICK));
	assert_int_equal(ops->wake(&se, 0), 1);	/* idle CPU 1 gets the IPI */
	assert_ptr_equal(ops->pick_next(1, 0), &se);
	assert_null(ops->pick_next(0, 0));
}

/* A wake that comes while the vCPU still runs (its CPU is on the way to a
 * halt) makes that halt fail instead of being lost. */
static void test_wake_racing_sleep(void **state)
{
	struct sched_entity se;
	struct sched_params p = { 256, 0, 1 };

	(void)state;
	assert_int_equal(ops->init(1), 0);
	assert_int_equal(ops->add_vcpu(&se, &p, 0), 0);
	assert_int_equal(ops->wake(&se, 0), 0);
	assert_ptr_equal(ops->pick_next(0, 0), &se);
	assert_int_equal(ops->wake(&se, MS), -1);	/* running: nothing to IPI */
	assert_false(ops->sleep(&se, 2 * MS));
	assert_int_equal(se.state, SE_QUEUED);
	assert_ptr_equal(ops->pick_next(0, 2 * MS), &se);
	assert_true(ops->sleep(&se, 3 * MS));
	assert_int_equal(se.state, SE_SLEEPING);
	assert_null(ops->pick_next(0, 3 * MS));
	assert_int_equal(se.runtime_ns, 3 * MS);
}

/* Random mixes (weights 64..1024, caps 10..100 %, pinned or not, hogs and
 * interactive): every runnable entity runs at least once a second, pinning
 * holds, nothing runs on two CPUs at once. */
static void random_config(void)
{
	unsigned int ncpu = 1 + rnd(4), n = 1 + rnd(8);

	sim_init(ncpu);
	for (unsigned int i = 0; i < n; i++) {
		uint64_t aff = rnd(2) ? SCHED_AFFINITY_ANY : 0;
		uint32_t cap = rnd(4) ? 0 : 1000 + rnd(9000);
		struct ent *e;

		while (!(aff & ((1ull << ncpu) - 1)))
			aff = rnd(1u << ncpu);
		e = sim_add(rnd(3) ? HOG : IO, 64 + rnd(961), cap, aff);
		e->burst = DT * (1 + rnd(20));
		e->nap = MS * (1 + rnd(30));
	}
}

static void test_no_starvation_property(void **state)
{
	uint64_t worst = 0;

	(void)state;
	rng = 0x5eed5c4edull;
	for (int cfg = 0; cfg < 150; cfg++) {
		random_config();
		sim_run(2 * SEC);
		assert_int_equal(S.wrong_cpu, 0);
		assert_int_equal(S.double_run, 0);
		for (unsigned int i = 0; i < S.n; i++) {
			assert_true(S.e[i].ran > 0);
			assert_true(S.e[i].max_wait <= SEC);
			if (S.e[i].max_wait > worst)
				worst = S.e[i].max_wait;
		}
	}
	print_message("[ INFO     ] 150 random mixes: longest runnable wait %.1f ms\n",
		      (double)worst / MS);
}


/* A low-weight hog alone on its CPU (nothing else wants it) carries no
 * debt for that time: once a default-weight hog joins, it still gets about
 * its 32/288 share within a few seconds. */
static void test_no_debt_while_alone(void **state)
{
	uint64_t before[MAXE];

	(void)state;
	sim_init(1);
	sim_add(HOG, 32, 0, 1);
	sim_run(60 * SEC);			/* one minute alone */
	sim_add(HOG, 256, 0, 1);
	snap(before);
	sim_run(10 * SEC);
	assert_true(S.e[0].ran - before[0] >= 500 * MS);	/* ~1.1 s expected */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_weights),
		cmocka_unit_test(test_no_debt_while_alone),
		cmocka_unit_test(test_weights_beside_others),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_guest_cap_split),
		cmocka_unit_test(test_wake_latency_beside_hogs),
		cmocka_unit_test(test_pinning),
		cmocka_unit_test(test_spread),
		cmocka_unit_test(test_spread_four_on_two),
		cmocka_unit_test(test_spread_three_on_two),
		cmocka_unit_test(test_change_while_running),
		cmocka_unit_test(test_remove),
		cmocka_unit_test(test_accounting),
		cmocka_unit_test(test_bad_params),
		cmocka_unit_test(test_wake_racing_sleep),
		cmocka_unit_test(test_no_starvation_property),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
