/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The shell on the console: bytes from the UART go through the line editor,
 * finished lines through the command table.  Runs on the boot CPU, which
 * sleeps between bytes (woken by the UART interrupt or the timer tick) and
 * runs the host's background work (network, migration) while it waits.
 */
#include <string.h>
#include "hv/console.h"
#include "hv/lib/log.h"
#include "hv/modules.h"
#include "hv/netif.h"
#include "hv/shell/commands.h"
#include "hv/shell/lineedit.h"
#include "hv/shell/repl.h"
#include "hv/shell/script.h"
#include "hv/shell/shell.h"
#include "arch/x86/cpu.h"

#define PROMPT "ferry> "

static struct line_editor editor;
static enum repl_work (*background)(void);
static bool in_command;		/* a command (or the boot script) is running */

bool repl_in_command(void)
{
	return in_command;
}

static void out_console(void *ctx, const char *s, size_t n)
{
	(void)ctx;
	console_write(s, n);
}

/* Ctrl-C while a command runs: look at the bytes waiting on the console. */
static bool ctrl_c_pending(void)
{
	int c;

	if (background)
		background();
	while ((c = console_getc()) >= 0)
		if (c == 0x03)
			return true;
	return false;
}

void repl_set_background(enum repl_work (*fn)(void))
{
	background = fn;
}

void repl_idle(void)
{
	switch (background ? background() : REPL_IDLE) {
	case REPL_BUSY:
		cpu_relax();
		break;
	case REPL_WAIT_NET:
		netif_wait();
		break;
	case REPL_IDLE:
		netif_idle();
		break;
	}
}

void repl_poll(void)
{
	if (background)
		(void)background();
}

static void script_echo(unsigned int lineno, const char *line)
{
	pr_info("ferry.rc:%u: %s", lineno, line);
}

void repl_run_boot_script(void)
{
	const struct module *m = modules_find("ferry.rc");
	int failed;

	if (!m)
		return;
	pr_info("boot: running boot script ferry.rc (%zu bytes)", m->size);
	shell_set_output(out_console, NULL);
	/* a long line (nettest, ping, migrate) stops at Ctrl-C, and the
	 * network and migrations go on meanwhile, as at the prompt */
	shell_set_interrupt(ctrl_c_pending);
	in_command = true;
	failed = script_run(shell_commands, shell_commands_count, m->data, m->size, script_echo);
	in_command = false;
	pr_info("boot: ferry.rc done, %d line%s failed", failed, failed == 1 ? "" : "s");
}

/*
 * At the prompt, host log lines are held so they never split what the
 * operator is typing: they are shown on the prompt's line (cleared), and
 * the prompt with the half-typed line is drawn again below them.
 */
static void show_held_log(void)
{
	if (!log_console_pending())
		return;
	console_write("\r\033[K", 4);
	log_console_flush();
	le_redisplay(&editor);
}

void repl_loop(void)
{
	le_init(&editor, PROMPT, out_console, NULL);
	shell_set_output(out_console, NULL);
	shell_set_interrupt(ctrl_c_pending);
	log_console_hold(true);
	le_prompt(&editor);
	for (;;) {
		int c = console_getc();

		if (c < 0) {
			show_held_log();
			repl_idle();
			continue;
		}
		if (le_feed(&editor, (uint8_t)c) == LE_LINE) {
			in_command = true;
			log_console_hold(false);	/* a command's time: lines go out */
			shell_exec(shell_commands, shell_commands_count, le_line(&editor));
			in_command = false;
			log_console_hold(true);
			le_prompt(&editor);
		}
	}
}
