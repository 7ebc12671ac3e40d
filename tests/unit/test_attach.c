/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hv/shell/attach.c, the `console NAME` loop, against a scripted terminal
 * and a fake guest whose receive FIFO takes what the test says: keys are
 * queued and arrive whole, a guest that reads none cannot trap the
 * operator (Ctrl-] works, the shell CPU's background work goes on), and a
 * guest that leaves ends the loop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "hv/console.h"
#include "hv/lib/log.h"
#include "hv/lib/time.h"
#include "hv/migrate/migrate.h"
#include "hv/shell/attach.h"
#include "hv/shell/repl.h"
#include "hv/shell/shell.h"
#include "hv/vm.h"
#include "hv/vm_devices.h"

#define PASSES_MAX 200000	/* a loop still going after this is stuck */

static struct {
	struct vm vm;
	bool present;		/* vm_by_serial finds it */
	const char *keys;	/* the terminal: one key per pass, then nothing */
	size_t nkeys, key_pos;
	unsigned int fifo_room;	/* keys the guest's FIFO takes from now on */
	char got[1024];		/* what the guest received */
	size_t ngot;
	const char *out;	/* guest output, shown once */
	char shown[4096];	/* what the operator saw */
	size_t nshown;
	uint64_t now_us;
	unsigned long passes, idles, polls, reads;
	unsigned long leave_after;	/* the guest leaves after this many passes */
	unsigned long drain_at;		/* from this pass the guest reads again */
	size_t room;			/* console_room(); 0: plenty */
	size_t max_asked;		/* the most vm_console_read was asked for */
} f;

/* ---- fakes ---- */

int console_getc(void)
{
	if (f.key_pos < f.nkeys && f.key_pos < f.passes)	/* one a pass */
		return (uint8_t)f.keys[f.key_pos++];
	return -1;
}

void console_write(const char *s, size_t n)
{
	if (f.nshown + n < sizeof(f.shown)) {
		memcpy(f.shown + f.nshown, s, n);
		f.nshown += n;
	}
}

size_t console_room(void)
{
	return f.room ? f.room : 8192;
}

void shell_printf(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	console_write(buf, strlen(buf));
}

bool vm_console_input(struct vm *vm, uint8_t byte)
{
	assert_ptr_equal(vm, &f.vm);
	if (f.drain_at && f.passes >= f.drain_at)
		f.fifo_room = 1000;
	if (!f.fifo_room)
		return false;
	f.fifo_room--;
	f.got[f.ngot++] = (char)byte;
	return true;
}

size_t vm_console_read(struct vm *vm, uint64_t *pos, char *buf, size_t max)
{
	size_t n = f.out ? strlen(f.out) : 0;

	assert_ptr_equal(vm, &f.vm);
	if (max > f.max_asked)
		f.max_asked = max;
	if (++f.reads > PASSES_MAX)	/* once a pass, whatever else it does */
		fail_msg("the console loop is stuck (%lu passes)", f.reads);
	if (*pos >= n)
		return 0;
	n = n - *pos < max ? n - *pos : max;
	memcpy(buf, f.out + *pos, n);
	*pos += n;
	return n;
}

uint64_t vm_console_tail(struct vm *vm, size_t back) { (void)vm; (void)back; return 0; }

struct vm *vm_by_serial(uint64_t serial)
{
	assert_int_equal(serial, f.vm.serial);
	if (f.leave_after && f.passes >= f.leave_after)
		f.present = false;
	return f.present ? &f.vm : NULL;
}

/* Every pass of the loop ends in one of these: 1 ms passes. */
static void pass(void)
{
	f.passes++;
	f.now_us += 1000;
}

void repl_idle(void) { f.idles++; pass(); }
void repl_poll(void) { f.polls++; pass(); }
void log_console_hold(bool hold) { (void)hold; }
bool log_console_flush(void) { return false; }
uint64_t time_now_us(void) { return f.now_us; }
const struct mig_entry *mig_history_at(unsigned int i) { (void)i; return NULL; }
const char *mig_outcome_name(enum mig_outcome o) { (void)o; return "?"; }

/* ---- tests ---- */

static int setup(void **st)
{
	(void)st;
	memset(&f, 0, sizeof(f));
	snprintf(f.vm.name, sizeof(f.vm.name), "g");
	f.vm.serial = 7;
	f.vm.state = VM_RUNNING;
	f.present = true;
	f.now_us = 1000000;
	return 0;
}

static void typed(const char *keys, size_t n)
{
	f.keys = keys;
	f.nkeys = n;
}

/* A guest that takes every key gets them all, in order; Ctrl-] leaves and
 * is not sent. */
static void test_keys_reach_the_guest(void **st)
{
	static const char k[] = "ls -l\r\x1d" "after";

	(void)st;
	f.fifo_room = 1000;
	f.out = "linux# ";
	typed(k, sizeof(k) - 1);
	assert_int_equal(console_attach(&f.vm), 0);
	assert_int_equal(f.ngot, 6);
	assert_memory_equal(f.got, "ls -l\r", 6);
	assert_non_null(strstr(f.shown, "Connected to g"));
	assert_non_null(strstr(f.shown, "linux# "));
	assert_non_null(strstr(f.shown, "Disconnected from g"));
	/* before it, the terminal is put back as the guest may have left it */
	assert_true(strstr(f.shown, "\x18\x1b\\\x1b[0m\x0f") &&
		    strstr(f.shown, "\x18\x1b\\\x1b[0m\x0f") < strstr(f.shown, "Disconnected"));
	assert_null(strstr(f.shown, "after"));		/* what followed ^] is not the guest's */
}

/* The old loop held the second key of a guest whose FIFO was full and
 * then neither read the terminal (Ctrl-] lost) nor did the shell CPU's
 * background work: the host's shell CPU spun for good. */
static void test_a_guest_that_reads_nothing_cannot_trap_the_operator(void **st)
{
	static char k[ATTACH_KEYS + 50];

	(void)st;
	memset(k, 'x', sizeof(k));
	k[sizeof(k) - 1] = 0x1d;
	f.fifo_room = 1;		/* a paused guest: one byte, then full */
	typed(k, sizeof(k));
	assert_int_equal(console_attach(&f.vm), 0);
	assert_int_equal(f.ngot, 1);
	/* the background work went on while the keys waited, and the shell
	 * CPU slept when nothing moved */
	assert_true(f.passes > ATTACH_STALL_US / 1000);
	assert_true(f.idles > ATTACH_STALL_US / 1000 / 2);
	assert_non_null(strstr(f.shown, "g is not reading its console"));
	assert_non_null(strstr(f.shown, "Disconnected from g"));
}

/* A paste into a guest that reads slowly arrives whole, nothing dropped. */
static void test_a_paste_waits_for_a_slow_guest(void **st)
{
	static char k[600];

	(void)st;
	for (size_t i = 0; i < sizeof(k) - 1; i++)
		k[i] = (char)('a' + i % 26);
	k[sizeof(k) - 1] = 0x1d;
	f.fifo_room = 16;		/* its FIFO full after 16 ... */
	f.drain_at = 100;		/* ... until it reads again, 100 ms later */
	typed(k, sizeof(k));
	assert_int_equal(console_attach(&f.vm), 0);
	assert_int_equal(f.ngot, sizeof(k) - 1);
	assert_memory_equal(f.got, k, sizeof(k) - 1);
	assert_null(strstr(f.shown, "not reading"));
}

/* The guest leaves (a migration freed it): the loop ends on its own. */
static void test_the_guest_leaving_ends_it(void **st)
{
	(void)st;
	f.fifo_room = 1000;
	f.leave_after = 50;
	assert_int_equal(console_attach(&f.vm), 0);
	assert_non_null(strstr(f.shown, "g is gone (destroyed)"));
	assert_true(f.passes <= 51);
}

/* Output that never stops still leaves the background work its turn. */
static void test_steady_output_still_polls(void **st)
{
	static char out[4000];
	static const char k[] = "\x1d";

	(void)st;
	memset(out, 'o', sizeof(out) - 1);
	f.out = out;
	f.fifo_room = 1000;
	f.keys = k;
	f.nkeys = 0;			/* Ctrl-] only once the output is shown */
	f.leave_after = 40;
	assert_int_equal(console_attach(&f.vm), 0);
	assert_true(f.polls >= 10);	/* 256-byte reads: 15 passes with output */
}

/* A guest that writes faster than the serial line: each pass takes no more
 * of its output than the console has room for, so the shell CPU never
 * waits on the line for a guest. */
static void test_output_never_outruns_the_line(void **st)
{
	static char out[4000];

	(void)st;
	memset(out, 'o', sizeof(out) - 1);
	f.out = out;
	f.room = 16;
	f.leave_after = 300;
	assert_int_equal(console_attach(&f.vm), 0);
	assert_int_equal(f.max_asked, 16);
	assert_true(f.nshown > 16 * 200);	/* and it still moves, room by room */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_keys_reach_the_guest, setup),
		cmocka_unit_test_setup(test_a_guest_that_reads_nothing_cannot_trap_the_operator, setup),
		cmocka_unit_test_setup(test_a_paste_waits_for_a_slow_guest, setup),
		cmocka_unit_test_setup(test_the_guest_leaving_ends_it, setup),
		cmocka_unit_test_setup(test_steady_output_still_polls, setup),
		cmocka_unit_test_setup(test_output_never_outruns_the_line, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
