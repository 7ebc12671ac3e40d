/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The interactive console (see attach.h).  The guest may leave meanwhile
 * (a background migration frees it during the shell CPU's background
 * work), so it is found again by serial after every such step.  An
 * incoming guest's console is empty until its history arrives with its
 * state; from then on it shows like any other.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "hv/console.h"
#include "hv/lib/log.h"
#include "hv/lib/time.h"
#include "hv/migrate/migrate.h"
#include "hv/shell/attach.h"
#include "hv/shell/repl.h"
#include "hv/shell/shell.h"
#include "hv/vm.h"
#include "hv/vm_devices.h"

struct keyq {
	uint8_t b[ATTACH_KEYS];
	unsigned int head, count;
	unsigned long dropped;
	uint64_t stuck_since;	/* the guest last took a key, or 0 */
};

/* The guest an attached console followed has gone: say where, from the
 * newest migration of that name. */
static void gone(const char *name)
{
	const struct mig_entry *e, *last = NULL;

	for (unsigned int i = 0; (e = mig_history_at(i)); i++)
		if (!strcmp(e->guest, name))
			last = e;
	if (last && last->out && last->outcome == MIG_DONE)
		shell_printf("%s left this host: migrated to %s\n", name, last->peer);
	else if (last && !last->out && last->outcome != MIG_DONE)
		shell_printf("%s did not arrive: the migration from %s %s%s%s\n", name,
			     last->peer, mig_outcome_name(last->outcome), last->why[0] ? ": " : "",
			     last->why);
	else
		shell_printf("%s is gone (destroyed)\n", name);
}

/* Keys from the terminal into q; false when Ctrl-] came.  While q is full
 * keys stay in the terminal's line (QEMU and real UARTs hold them), unless
 * the guest has taken none for ATTACH_STALL_US: then they are read and
 * dropped, so that Ctrl-] is still seen. */
static bool read_keys(struct keyq *q, uint64_t now)
{
	bool stalled = q->count == ATTACH_KEYS && q->stuck_since &&
		       now - q->stuck_since > ATTACH_STALL_US;
	int c;

	while (q->count < ATTACH_KEYS || stalled) {
		if ((c = console_getc()) < 0)
			break;
		if (c == ATTACH_ESCAPE)
			return false;
		if (q->count == ATTACH_KEYS) {
			q->dropped++;
			continue;
		}
		q->b[(q->head + q->count++) % ATTACH_KEYS] = (uint8_t)c;
	}
	return true;
}

/* Keys from q into the guest's receive FIFO, as many as it takes. */
static unsigned int feed_keys(struct keyq *q, struct vm *vm, uint64_t now)
{
	unsigned int fed = 0;

	while (q->count && vm_console_input(vm, q->b[q->head])) {
		q->head = (q->head + 1) % ATTACH_KEYS;
		q->count--;
		fed++;
	}
	if (fed || !q->count)
		q->stuck_since = 0;
	else if (!q->stuck_since)
		q->stuck_since = now ? now : 1;
	return fed;
}

int console_attach(struct vm *vm)
{
	static struct keyq q;	/* one console at a time: the shell's */
	char buf[256], name[VM_NAME_MAX];
	uint64_t serial = vm->serial, pos = vm_console_tail(vm, 4096);
	uint64_t now, quiet_since = time_now_us();
	bool line_start = true, escaped;
	unsigned long noted = 0;

	memset(&q, 0, sizeof(q));
	snprintf(name, sizeof(name), "%s", vm->name);
	shell_printf("Connected to %s (escape character is ^])\n", name);
	if (vm->state == VM_INCOMING)
		shell_printf("(%s is arriving by migration: its output shows once it is here)\n",
			     name);
	/* host messages wait for the end of the guest's line (or 1 s of quiet) */
	log_console_hold(true);
	for (;;) {
		/* no more than the console takes now: a guest that writes
		 * faster than the line runs keeps its own ring's newest, and
		 * the shell CPU's background work never waits on it */
		size_t room = console_room();
		size_t n = vm_console_read(vm, &pos, buf, room < sizeof(buf) ? room : sizeof(buf));

		now = time_now_us();
		if (n) {
			console_write(buf, n);
			line_start = buf[n - 1] == '\n';
			quiet_since = now;
		}
		if (line_start || now - quiet_since > 1000000)
			log_console_flush();
		escaped = !read_keys(&q, now);
		if (q.dropped != noted) {
			if (!line_start)
				console_write("\n", 1);
			line_start = true;
			shell_printf("(%s is not reading its console: %lu keys dropped)\n", name,
				     q.dropped - noted);
			noted = q.dropped;
		}
		if (escaped) {
			feed_keys(&q, vm, now);	/* what came before Ctrl-] */
			break;
		}
		/* nothing moved: sleep to the next interrupt; else only poll */
		if (!feed_keys(&q, vm, now) && !n)
			repl_idle();
		else
			repl_poll();
		if (!(vm = vm_by_serial(serial)))
			break;
	}
	if (!line_start)
		console_write("\n", 1);
	/* the guest's output went to the terminal as it was: undo what it may
	 * have left set (an unended escape or OSC string, colours, the line
	 * drawing set, mouse and focus reports, the other screen, a hidden
	 * cursor), so the operator sees ferry's lines as ferry wrote them */
	static const char reset[] = "\x18\x1b\\\x1b[0m\x0f\x1b[?1000l\x1b[?1002l\x1b[?1003l"
				    "\x1b[?1004l\x1b[?1006l\x1b[?1049l\x1b[?25h";
	console_write(reset, sizeof(reset) - 1);
	/* the rest of a burst that held the ^] (a paste, a file sent) is the
	 * guest's, not commands for ferry */
	while (console_getc() >= 0)
		;
	log_console_hold(false);
	if (!vm)
		gone(name);
	shell_printf("Disconnected from %s\n", name);
	return 0;
}
