/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An arriving guest's first steps (hv/vm_arrival.c): each step is noted
 * once, from COMMIT on, only for a guest with a NIC; vCPU 0's first entry
 * takes its counters; the first frame out logs the split and ends it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "hv/lib/log.h"
#include "hv/lib/time.h"
#include "hv/vcpu.h"
#include "hv/vm.h"

static uint64_t now;
static char line[512];
static int lines;

uint64_t time_now_us(void) { return now; }

const char *exit_name(enum exit_code c)
{
	static const char *const n[EXIT_COUNT] = { [EXIT_EXTERNAL] = "external-interrupt",
						   [EXIT_MSR_WRITE] = "wrmsr",
						   [EXIT_HLT] = "hlt", [EXIT_IO] = "io" };

	return n[c] ? n[c] : "other";
}

void log_printf(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	(void)level;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	lines++;
}

static struct vm vm;
static struct vcpu v0, v1;

static int setup(void **st)
{
	(void)st;
	memset(&vm, 0, sizeof(vm));
	memset(&v0, 0, sizeof(v0));
	memset(&v1, 0, sizeof(v1));
	strcpy(vm.name, "lx");
	vm.nic = true;
	vm.nr_vcpus = 2;
	vm.vcpus[0] = &v0;
	vm.vcpus[1] = &v1;
	v0.vm = v1.vm = &vm;
	v1.hw.id = 1;
	v0.stats.exits[EXIT_HLT] = 500;		/* from before it came: not counted */
	v0.stats.guest_ns = 9000000;
	now = 1000;
	lines = 0;
	line[0] = 0;
	return 0;
}

static void test_split_once(void **st)
{
	(void)st;
	vm_arrival_start(&vm);
	now = 1400;
	vm_arrival_note(&vm, VM_ARR_ACTIVE);
	now = 1500;
	vm_arrival_entry(&v1);			/* vCPU 1: not the one followed */
	assert_int_equal(vm.arr.t[VM_ARR_ENTRY], 0);
	vm_arrival_entry(&v0);
	v0.stats.exits[EXIT_MSR_WRITE] += 3;
	v0.stats.exits[EXIT_HLT] += 1;
	v0.stats.guest_ns += 25000000;		/* 25 ms in the guest */
	v0.stats.host_ns += 40000;
	now = 1600;
	vm_arrival_entry(&v0);			/* later entries change nothing */
	assert_int_equal(vm.arr.t[VM_ARR_ENTRY], 1500);
	now = 2000;
	vm_arrival_note(&vm, VM_ARR_RX);
	now = 2500;
	vm_arrival_note(&vm, VM_ARR_RX);
	assert_int_equal(vm.arr.t[VM_ARR_RX], 2000);
	assert_int_equal(lines, 0);
	now = 31000;
	vm_arrival_note(&vm, VM_ARR_TX);
	assert_int_equal(lines, 1);
	assert_false(vm.arr.armed);
	assert_string_equal(line, "vm lx: arrival: COMMIT + 400 us running, + 500 us first entry, "
			    "+ 1000 us first frame in, + 30000 us first frame out; vCPU 0 since "
			    "its entry: 25000 us in guest, 40 us in ferry, exits wrmsr 3 hlt 1");
	now = 40000;
	vm_arrival_note(&vm, VM_ARR_TX);	/* over: no second line */
	vm_arrival_note(&vm, VM_ARR_RX);
	assert_int_equal(lines, 1);
	assert_int_equal(vm.arr.t[VM_ARR_TX], 31000);
}

/* A frame out before any in, and no entry seen: zeros, not garbage. */
static void test_steps_missing(void **st)
{
	(void)st;
	vm_arrival_start(&vm);
	now = 3000;
	vm_arrival_note(&vm, VM_ARR_TX);
	assert_int_equal(lines, 1);
	assert_non_null(strstr(line, "+ 0 us first entry, + 0 us first frame in, + 2000 us "
				     "first frame out"));
}

/* Without a NIC no frame out would end it: never armed. */
static void test_no_nic(void **st)
{
	(void)st;
	vm.nic = false;
	vm_arrival_start(&vm);
	assert_false(vm.arr.armed);
	vm_arrival_entry(&v0);
	vm_arrival_note(&vm, VM_ARR_TX);
	assert_int_equal(vm.arr.t[VM_ARR_ENTRY], 0);
	assert_int_equal(lines, 0);
}

/* Not armed (a guest started here, or long arrived): nothing is noted. */
static void test_not_armed(void **st)
{
	(void)st;
	vm_arrival_note(&vm, VM_ARR_RX);
	vm_arrival_note(&vm, VM_ARR_TX);
	assert_int_equal(vm.arr.t[VM_ARR_RX], 0);
	assert_int_equal(lines, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_split_once, setup),
		cmocka_unit_test_setup(test_steps_missing, setup),
		cmocka_unit_test_setup(test_no_nic, setup),
		cmocka_unit_test_setup(test_not_armed, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
