/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A guest's state as plain data (hv/vmstate.c) on the host: vCPU, devices
 * with console history, and time, saved from one guest and restored into
 * another; hostile input refused without a change (core_fake.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "hv/lib/time.h"
#include "arch/x86/cpu.h"
#include "hv/sched.h"
#include "hv/tsc.h"
#include "hv/vdev/devices.h"
#include "hv/vcpu.h"
#include "hv/vm_devices.h"
#include "hv/vmstate.h"
#include "tests/unit/core_fake.h"

static struct vm *src, *dst;
static uint8_t xsave[FPU_AREA_SIZE];

static int setup(void **state)
{
	(void)state;
	fake_reset();
	fake_sched_reset();
	src = fake_vm_new("src", VM_PAUSED);
	dst = fake_vm_new("dst", VM_INCOMING);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fake_vm_free(src);
	fake_vm_free(dst);
	return 0;
}

/* src's vCPU halted in HLT with IF set, at rip 0x1234, FPU bytes i & 0xff. */
static void halted_source(struct cpu_state *s)
{
	struct vcpu *v = src->vcpus[0];

	memset(&fake.state, 0, sizeof(fake.state));
	fake.state.rip = 0x1234;
	fake.state.rflags = 0x202;
	fake.state.xcr0 = 3;
	fake.state.gpr[GPR_RBX] = 0xb0b;
	v->hw.gpr[GPR_RBX] = 0xb0b;		/* where the back ends keep it */
	for (int i = 0; i < FPU_AREA_SIZE; i++)
		v->fpu->bytes[i] = (uint8_t)i;
	vcpu_set_state(v, VCPU_IDLE, VCPU_HALTED);
	*s = fake.state;
}

static void test_vcpu_round_trip(void **state)
{
	struct cpu_state s, out;
	uint32_t len;
	bool halted;
	struct vcpu *d = dst->vcpus[0];

	(void)state;
	halted_source(&s);
	vmstate_save_vcpu(src, 0, &out, xsave, &len, &halted);
	assert_true(halted);
	assert_memory_equal(&out, &s, sizeof(s));
	assert_int_equal(len, VMSTATE_XSAVE_LEGACY);		/* x87 | SSE */
	assert_int_equal(xsave[100], 100);
	memset(&fake.state, 0, sizeof(fake.state));
	fake.set_state = 0;
	memset(d->fpu->bytes, 0xee, FPU_AREA_SIZE);
	assert_int_equal(vmstate_load_vcpu(dst, 0, &out, xsave, len, halted), 0);
	assert_int_equal(fake.set_state, 1);
	assert_memory_equal(&fake.state, &s, sizeof(s));
	assert_memory_equal(d->fpu->bytes, xsave, len);
	assert_int_equal(d->fpu->bytes[len], 0);		/* the rest from reset */
	assert_int_equal(vcpu_state(d), VCPU_HALTED);
	assert_true(d->halted_if);
	/* loaded again, not halted and IF clear */
	out.rflags = 2;
	assert_int_equal(vmstate_load_vcpu(dst, 0, &out, xsave, len, false), 0);
	assert_int_equal(vcpu_state(d), VCPU_IDLE);
	assert_false(d->halted_if);
}

static void test_halted_stays_halted_when_placed(void **state)
{
	struct cpu_state s;

	(void)state;
	halted_source(&s);
	assert_int_equal(vmstate_load_vcpu(dst, 0, &s, xsave, VMSTATE_XSAVE_LEGACY, true), 0);
	cpu_count = 1;
	sched_enable_cpu();
	assert_int_equal(sched_add(dst->vcpus[0]), 0);
	assert_int_equal(vcpu_state(dst->vcpus[0]), VCPU_HALTED);
}

static void test_vcpu_hostile(void **state)
{
	struct cpu_state s;
	struct vcpu *d = dst->vcpus[0];

	(void)state;
	halted_source(&s);
	fake.set_state = 0;
	assert_int_equal(vmstate_load_vcpu(dst, 1, &s, xsave, 576, true), -EINVAL);
	assert_int_equal(vmstate_load_vcpu(dst, 0, &s, xsave, 575, true), -EINVAL);
	assert_int_equal(vmstate_load_vcpu(dst, 0, &s, xsave, FPU_AREA_SIZE + 1, true), -EINVAL);
	cpu_count = 1;
	sched_enable_cpu();
	assert_int_equal(sched_add(d), 0);
	assert_int_equal(vmstate_load_vcpu(dst, 0, &s, xsave, 576, true), -EBUSY);
	assert_int_equal(fake.set_state, 0);
	assert_int_equal(vcpu_state(d), VCPU_RUNNABLE);
}

/* src: timer programmed, "hi" on its console; its devices saved. */
static long saved_devices(uint8_t **buf)
{
	long n;

	fake_guest_timer(src);
	fake_out(src, 0x3f8, 'h');
	fake_out(src, 0x3f8, 'i');
	n = vmstate_save_devices(src, NULL, 0);
	assert_true(n > 0);
	*buf = malloc(n + 1);
	assert_non_null(*buf);
	assert_int_equal(vmstate_save_devices(src, *buf, n), n);
	return n;
}

static void test_devices_round_trip(void **state)
{
	uint8_t *buf, *again;
	char con[8];
	uint64_t pos = 0;
	long n = saved_devices(&buf);

	(void)state;
	assert_int_equal(vmstate_load_devices(dst, buf, n, true), 0);
	assert_int_equal(vm_console_read(dst, &pos, con, sizeof(con)), 2);
	assert_memory_equal(con, "hi", 2);
	again = malloc(n);
	assert_int_equal(vmstate_save_devices(dst, again, n), n);
	assert_memory_equal(again, buf, n);
	assert_int_equal(vm_pending_vector(dst->vcpus[0]), vm_pending_vector(src->vcpus[0]));
	fake_now_ns += 20000000;
	assert_int_equal(vm_pending_vector(dst->vcpus[0]), 0x20);		/* its timer runs */
	/* without the console: devices only (a second load) */
	assert_int_equal(vmstate_load_devices(dst, buf, n, false), 0);
	pos = 0;
	assert_int_equal(vm_console_read(dst, &pos, con, sizeof(con)), 2);
	free(again);
	free(buf);
}

static void refused_unchanged(const uint8_t *bad, size_t len)
{
	long n = vmstate_save_devices(dst, NULL, 0);
	uint8_t *before = malloc(n), *after = malloc(n);
	uint64_t pos = 0;
	char con[8];

	assert_int_equal(vmstate_save_devices(dst, before, n), n);
	assert_int_equal(vmstate_load_devices(dst, bad, len, true), -EINVAL);
	assert_int_equal(vmstate_save_devices(dst, after, n), n);
	assert_memory_equal(after, before, n);
	assert_int_equal(vm_console_read(dst, &pos, con, sizeof(con)), 0);
	free(before);
	free(after);
}

static void test_devices_hostile(void **state)
{
	uint8_t *buf;
	long n = saved_devices(&buf);
	uint32_t huge = 5000;

	(void)state;
	refused_unchanged(buf, n - 1);			/* cut short */
	buf[n] = 0;
	refused_unchanged(buf, n + 1);			/* a byte left over */
	/* the end: console length, "hi", the count of frames that travel */
	memcpy(buf + n - 10, &huge, 4);			/* console longer than kept */
	refused_unchanged(buf, n);
	memcpy(buf + n - 10, &(uint32_t){ 2 }, 4);
	memcpy(buf + n - 4, &(uint32_t){ 1 }, 4);	/* a frame that is not there */
	refused_unchanged(buf, n);
	memcpy(buf + n - 4, &(uint32_t){ 0 }, 4);
	buf[0] ^= 0xff;					/* not a device record */
	refused_unchanged(buf, n);
	refused_unchanged(buf, 0);
	free(buf);
}

static void test_time_round_trip(void **state)
{
	uint64_t tsc, clock, gen = dst->tsc.gen;

	(void)state;
	vmstate_load_time(dst, 5000000000ull, 7000000000ull);
	/* the vCPUs' back ends get it at their next entry */
	assert_int_equal(dst->tsc.gen, gen + 1);
	assert_true(dst->tsc.mult == TSC_MULT_ONE);
	/* kvmclock's reference is the arrived pair, not this host's clock */
	assert_true(dst->tsc.clock_tsc == 5000000000ull);
	assert_true(dst->tsc.clock_ns == 7000000000ull);
	fake_now_ns += 1000;
	vmstate_save_time(dst, &tsc, &clock);
	assert_true(clock == 7000001000ull);
	assert_true(tsc >= 5000000000ull && tsc - 5000000000ull < (1ull << 32));
}

/* A guest whose TSC ran at twice this host's rate: its devices came first
 * (on_devices), so loading the time scales the TSC before it is set, and
 * the value holds at once (it used to run unscaled until vm_activate). */
static void test_time_scaled_before_it_is_set(void **state)
{
	uint64_t want = tsc_mult_for(2 * tsc_hz(), tsc_hz()), t;

	(void)state;
	assert_true(want != TSC_MULT_ONE);
	dst->dev->lapic[0].cfg.tsc_hz = 2 * tsc_hz();
	vmstate_load_time(dst, 5000000000ull, 7000000000ull);
	assert_true(dst->tsc.mult == want);
	t = vm_tsc_now(dst);
	assert_true(t >= 5000000000ull && t - 5000000000ull < (1ull << 32));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(test_vcpu_round_trip),
		T(test_halted_stays_halted_when_placed),
		T(test_vcpu_hostile),
		T(test_devices_round_trip),
		T(test_devices_hostile),
		T(test_time_round_trip),
		T(test_time_scaled_before_it_is_set),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
