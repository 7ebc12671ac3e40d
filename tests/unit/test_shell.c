/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for shell dispatch (hv/shell/shell.c) and the boot script
 * runner (hv/shell/script.c): exact error messages, help output, the
 * output sink, the Ctrl-C hook, and scripts with failing, over-long and
 * binary lines.
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

#include "hv/lib/errtext.h"
#include "hv/shell/shell.h"
#include "hv/shell/script.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- captured output ---- */

#define OUT_MAX	(256 * 1024)
static char out_buf[OUT_MAX + 1];
static size_t out_len;
static int out_ctx;

static void sink(void *ctx, const char *s, size_t n)
{
	assert_ptr_equal(ctx, &out_ctx);
	assert_true(out_len + n <= OUT_MAX);
	memcpy(out_buf + out_len, s, n);
	out_len += n;
	out_buf[out_len] = '\0';
}

static void out_reset(void)
{
	out_len = 0;
	out_buf[0] = '\0';
}

/* ---- a command table ---- */

static int calls;		/* how many times `count` ran */
static char last_args[2048];	/* `echo`'s arguments joined by '|' */

static int cmd_count(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	calls++;
	return 0;
}

static int cmd_echo(int argc, char **argv)
{
	int i;

	last_args[0] = '\0';
	for (i = 1; i < argc; i++) {
		if (i > 1)
			strcat(last_args, "|");
		strcat(last_args, argv[i]);
	}
	shell_printf("%s\n", last_args);
	return 0;
}

static int cmd_fail(int argc, char **argv)
{
	(void)argc;
	shell_error(argv[0], "disk on %s", "fire");
	return -EIO;
}

static int cmd_busy(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return -EBUSY;
}

static int cmd_weird(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return -9999;
}

/* Says how it failed in its own words, as a failed `migrate` does. */
static int cmd_told(int argc, char **argv)
{
	(void)argc;
	shell_printf("%s: failed: link down; g1 runs here as before\n", argv[0]);
	shell_reported();
	return -ECANCELED;
}

static int cmd_help(int argc, char **argv);

static const struct shell_cmd cmds[] = {
	{ "help", "[CMD]", "list commands, or show how to use CMD", cmd_help },
	{ "count", NULL, "count calls", cmd_count },
	{ "echo", "[WORDS...]", "print the arguments", cmd_echo },
	{ "fail", "", "always fails, saying why", cmd_fail },
	{ "busy", NULL, "fails without a word", cmd_busy },
	{ "weird", NULL, "returns a strange errno", cmd_weird },
	{ "nofn", NULL, "has no function", NULL },
	{ "told", NULL, "fails in its own words", cmd_told },
};

static int cmd_help(int argc, char **argv)
{
	return shell_help(cmds, ARRAY_SIZE(cmds), argc, argv);
}

static int exec(const char *line)
{
	return shell_exec(cmds, ARRAY_SIZE(cmds), line);
}

static int setup(void **state)
{
	(void)state;
	shell_set_output(sink, &out_ctx);
	out_reset();
	calls = 0;
	return 0;
}

/* ---- dispatch ---- */

static void test_unknown_command(void **state)
{
	(void)state;
	assert_int_equal(exec("frob"), -ENOENT);
	assert_string_equal(out_buf, "error: unknown command 'frob' (try 'help')\n");
	out_reset();
	assert_int_equal(exec("  counter x"), -ENOENT);
	assert_string_equal(out_buf,
			    "error: unknown command 'counter' (try 'help')\n");
	out_reset();
	assert_int_equal(exec("COUNT"), -ENOENT);
	assert_int_equal(calls, 0);
}

static void test_blank_lines(void **state)
{
	(void)state;
	assert_int_equal(exec(""), 0);
	assert_int_equal(exec("     "), 0);
	assert_int_equal(exec(" \t \t"), 0);
	assert_string_equal(out_buf, "");
	assert_int_equal(calls, 0);
}

static void test_dispatch_and_args(void **state)
{
	(void)state;
	assert_int_equal(exec("count"), 0);
	assert_int_equal(exec("\tcount  extra args "), 0);
	assert_int_equal(calls, 2);
	assert_string_equal(out_buf, "");
	assert_int_equal(exec("echo vm cmdline=\"console=ttyS0 quiet\"  x"), 0);
	assert_string_equal(last_args, "vm|cmdline=console=ttyS0 quiet|x");
	assert_string_equal(out_buf, "vm|cmdline=console=ttyS0 quiet|x\n");
}

static void test_line_is_not_modified(void **state)
{
	static const char line[] = "echo \"a b\" c";
	char copy[sizeof(line)];

	(void)state;
	memcpy(copy, line, sizeof(line));
	assert_int_equal(exec(copy), 0);
	assert_string_equal(copy, line);
}

static void test_split_errors(void **state)
{
	char line[256] = "echo";
	int i;

	(void)state;
	assert_int_equal(exec("echo \"unterminated"), -EINVAL);
	assert_string_equal(out_buf, "error: unterminated quote\n");
	for (i = 1; i < SHELL_MAX_ARGS; i++)
		strcat(line, " a");
	out_reset();
	assert_int_equal(exec(line), 0);		/* 32 arguments */
	out_reset();
	strcat(line, " b");
	assert_int_equal(exec(line), -E2BIG);		/* 33 */
	assert_string_equal(out_buf, "error: too many arguments (max 32)\n");
}

static void test_line_length_limit(void **state)
{
	char *line = malloc(SHELL_LINE_MAX + 2);

	(void)state;
	assert_non_null(line);
	memcpy(line, "echo ", 5);
	memset(line + 5, 'a', SHELL_LINE_MAX - 5);
	line[SHELL_LINE_MAX] = '\0';
	assert_int_equal(exec(line), 0);
	assert_int_equal(strlen(last_args), SHELL_LINE_MAX - 5);
	out_reset();
	line[SHELL_LINE_MAX] = 'a';
	line[SHELL_LINE_MAX + 1] = '\0';
	assert_int_equal(exec(line), -E2BIG);
	assert_string_equal(out_buf, "error: line too long\n");
	free(line);
}

static void test_command_errors(void **state)
{
	(void)state;
	assert_int_equal(exec("fail"), -EIO);
	assert_string_equal(out_buf, "error: fail: disk on fire\n");
	out_reset();
	assert_int_equal(exec("busy"), -EBUSY);
	assert_string_equal(out_buf, "error: busy: busy\n");
	out_reset();
	assert_int_equal(exec("weird"), -9999);
	assert_string_equal(out_buf, "error: weird: failed\n");
	out_reset();
	assert_int_equal(exec("nofn"), -ENOSYS);
	assert_string_equal(out_buf, "error: nofn: not implemented\n");
}

static void test_shell_error_format(void **state)
{
	(void)state;
	shell_error("vm", "unknown guest '%s'", "g7");
	assert_string_equal(out_buf, "error: vm: unknown guest 'g7'\n");
	assert_string_equal(errtext(-ENOMEM), "out of memory");
	assert_string_equal(errtext(-EINVAL), "invalid argument");
	assert_string_equal(errtext(-ETIMEDOUT), "timed out");
	assert_string_equal(errtext(0), "failed");
	assert_string_equal(errtext(-123456), "failed");
}

static void test_long_output(void **state)
{
	char *big = malloc(5001);

	(void)state;
	assert_non_null(big);
	memset(big, 'x', 5000);
	big[5000] = '\0';
	shell_printf("<%s>", big);
	assert_int_equal(out_len, 5002);
	assert_int_equal(out_buf[0], '<');
	assert_memory_equal(out_buf + 1, big, 5000);
	assert_int_equal(out_buf[5001], '>');
	free(big);
	out_reset();
	shell_printf("%s", "");
	assert_int_equal(out_len, 0);
}

static void test_no_sink(void **state)
{
	(void)state;
	shell_set_output(NULL, NULL);
	assert_int_equal(exec("frob"), -ENOENT);
	assert_int_equal(exec("fail"), -EIO);
	assert_int_equal(exec("help"), 0);
	assert_int_equal(out_len, 0);
}

static void test_find(void **state)
{
	(void)state;
	assert_ptr_equal(shell_find(cmds, ARRAY_SIZE(cmds), "echo"), &cmds[2]);
	assert_null(shell_find(cmds, ARRAY_SIZE(cmds), "ech"));
	assert_null(shell_find(cmds, 0, "help"));
}

/* ---- help ---- */

static void test_help_all(void **state)
{
	(void)state;
	assert_int_equal(exec("help"), 0);
	assert_string_equal(out_buf,
		"help [CMD]       list commands, or show how to use CMD\n"
		"count            count calls\n"
		"echo [WORDS...]  print the arguments\n"
		"fail             always fails, saying why\n"
		"busy             fails without a word\n"
		"weird            returns a strange errno\n"
		"nofn             has no function\n"
		"told             fails in its own words\n");
}

static void test_help_alignment_cap(void **state)
{
	static const struct shell_cmd tab[] = {
		{ "vm", "create NAME [mem=SIZE] [cpus=N] [cmdline=STR]",
		  "make a guest", cmd_count },
		{ "version", NULL, "print the version", cmd_count },
		{ "quiet", NULL, NULL, cmd_count },
		{ NULL, NULL, NULL, NULL },
	};

	(void)state;
	shell_help_all(tab, ARRAY_SIZE(tab));
	assert_string_equal(out_buf,
		"vm create NAME [mem=SIZE] [cpus=N] [cmdline=STR]  make a guest\n"
		"version                           print the version\n"
		"quiet\n");
}

static void test_help_cmd(void **state)
{
	(void)state;
	assert_int_equal(exec("help echo"), 0);
	assert_string_equal(out_buf,
			    "usage: echo [WORDS...]\nprint the arguments\n");
	out_reset();
	assert_int_equal(exec("help count"), 0);
	assert_string_equal(out_buf, "usage: count\ncount calls\n");
	out_reset();
	assert_int_equal(exec("help frob"), -ENOENT);
	assert_string_equal(out_buf, "error: help: unknown command 'frob'\n");
	out_reset();
	assert_int_equal(exec("help a b"), -EINVAL);
	assert_string_equal(out_buf, "error: help: usage: help [CMD]\n");
}

/* ---- Ctrl-C hook ---- */

static bool pressed(void)
{
	return true;
}

static void test_interrupt_hook(void **state)
{
	(void)state;
	assert_false(shell_interrupted());
	shell_set_interrupt(pressed);
	assert_true(shell_interrupted());
	shell_set_interrupt(NULL);
	assert_non_null(shell_interrupted);
	assert_false(shell_interrupted());
}

/* ---- boot script ---- */

static unsigned int echo_lines[64];
static char echo_text[64][200];
static int echoed;

static void echo_cb(unsigned int lineno, const char *line)
{
	assert_true(echoed < 64);
	echo_lines[echoed] = lineno;
	snprintf(echo_text[echoed], sizeof(echo_text[0]), "%s", line);
	echoed++;
}

static void assert_echo(int i, unsigned int lineno, const char *text)
{
	assert_true(i < echoed);
	assert_int_equal(echo_lines[i], lineno);
	assert_string_equal(echo_text[i], text);
}

/* Run text as a script from an exact-size heap copy (no NUL after it). */
static int run_script(const char *text, size_t len)
{
	char *copy = malloc(len ? len : 1);
	int r;

	assert_non_null(copy);
	memcpy(copy, text, len);
	echoed = 0;
	r = script_run(cmds, ARRAY_SIZE(cmds), copy, len, echo_cb);
	free(copy);
	return r;
}

static int run_str(const char *text)
{
	return run_script(text, strlen(text));
}

static void test_script_basic(void **state)
{
	static const char rc[] =
		"# ferry.rc\n"
		"\n"
		"count\r\n"
		"   # indented comment\n"
		"frob x\n"
		"echo a \"b c\"\r\n"
		"fail\n"
		"\t\n"
		"count";		/* no final newline */

	(void)state;
	assert_int_equal(run_str(rc), 2);
	assert_int_equal(calls, 2);
	/* Each line run, and after a failed one the reason, for the log. */
	assert_int_equal(echoed, 7);
	assert_echo(0, 3, "count");
	assert_echo(1, 5, "frob x");
	assert_echo(2, 5, "error: unknown command 'frob' (try 'help')");
	assert_echo(3, 6, "echo a \"b c\"");
	assert_echo(4, 7, "fail");
	assert_echo(5, 7, "error: fail: disk on fire");
	assert_echo(6, 9, "count");
	assert_string_equal(out_buf,
		"error: unknown command 'frob' (try 'help')\n"
		"error: script: line 5: failed\n"
		"a|b c\n"
		"error: fail: disk on fire\n"
		"error: script: line 7: failed\n");
}

static void test_script_line_endings(void **state)
{
	(void)state;
	/* LF, CR, CRLF each end one line; LF CR is two. */
	assert_int_equal(run_str("count\rcount\r\ncount\n\rcount\r\r\n"), 0);
	assert_int_equal(calls, 4);
	assert_int_equal(echo_lines[0], 1);
	assert_int_equal(echo_lines[1], 2);
	assert_int_equal(echo_lines[2], 3);
	assert_int_equal(echo_lines[3], 5);
	assert_int_equal(run_str(""), 0);
	assert_int_equal(run_str("\n\n\r\n"), 0);
	assert_int_equal(echoed, 0);
}

static void test_script_long_line(void **state)
{
	size_t n = 3000;
	char *text = malloc(n + 32);

	(void)state;
	assert_non_null(text);
	memcpy(text, "echo ", 5);
	memset(text + 5, 'z', n - 5);
	memcpy(text + n, "\ncount\n", 7);
	assert_int_equal(run_script(text, n + 7), 1);
	assert_int_equal(calls, 1);
	assert_int_equal(echoed, 2);
	assert_echo(0, 1, "error: script: line 1: too long (max 1024 bytes), skipped");
	assert_echo(1, 2, "count");
	assert_string_equal(out_buf, "error: script: line 1: too long "
				     "(max 1024 bytes), skipped\n");
	/* Exactly SHELL_LINE_MAX bytes still runs. */
	out_reset();
	memset(text + 5, 'z', SHELL_LINE_MAX - 5);
	text[SHELL_LINE_MAX] = '\n';
	assert_int_equal(run_script(text, SHELL_LINE_MAX + 1), 0);
	assert_int_equal(strlen(last_args), SHELL_LINE_MAX - 5);
	/* A long comment is still a comment. */
	memset(text + 5, 'z', n - 5);
	text[0] = '#';
	assert_int_equal(run_script(text, n + 7), 0);
	assert_int_equal(calls, 2);
	free(text);
}

static void test_script_binary(void **state)
{
	static const char rc[] = "count\n"
				 "co\0unt\n"
				 "echo \xff\xfe\n"
				 "# caf\xc3\xa9, \x01 in a comment is fine\n"
				 "\x7f\n"
				 "count\n";

	(void)state;
	assert_int_equal(run_script(rc, sizeof(rc) - 1), 3);
	assert_int_equal(calls, 2);
	assert_int_equal(echoed, 5);
	assert_echo(2, 3, "error: script: line 3: invalid byte 0xff, skipped");
	assert_echo(4, 6, "count");
	assert_string_equal(out_buf,
		"error: script: line 2: invalid byte 0x00, skipped\n"
		"error: script: line 3: invalid byte 0xff, skipped\n"
		"error: script: line 5: invalid byte 0x7f, skipped\n");
}

static void test_script_bad_quotes(void **state)
{
	(void)state;
	assert_int_equal(run_str("echo \"x\ncount\n"), 1);
	assert_int_equal(calls, 1);
	assert_string_equal(out_buf, "error: unterminated quote\n"
				     "error: script: line 1: failed\n");
	assert_int_equal(echoed, 3);
	assert_echo(1, 1, "error: unterminated quote");
}

/* A failure the command told in its own words is a failure, said once. */
static void test_failure_told(void **state)
{
	(void)state;
	assert_int_equal(exec("told"), -ECANCELED);
	assert_string_equal(out_buf, "told: failed: link down; g1 runs here as before\n");
	out_reset();
	assert_int_equal(run_str("count\ntold\ncount\n"), 1);
	assert_int_equal(calls, 2);
	assert_string_equal(out_buf, "told: failed: link down; g1 runs here as before\n"
				     "error: script: line 2: failed\n");
}

static void test_script_error_reason(void **state)
{
	char line[400], want[200];

	(void)state;
	/* A command that fails without a word gets shell_exec()'s message. */
	assert_int_equal(run_str("echo error: not a failure\nbusy\n"), 1);
	assert_int_equal(echoed, 3);
	assert_echo(2, 2, "error: busy: busy");
	/* A long message is cut, not overflowed; the next line starts afresh. */
	memset(line, 'q', 300);
	line[300] = '\0';
	memcpy(line, "frob", 4);
	strcat(line, "\nfail\n");
	assert_int_equal(run_str(line), 2);
	assert_int_equal(echoed, 4);
	snprintf(want, sizeof(want), "error: unknown command '%.135s", line);
	assert_int_equal(strlen(want), 159);
	assert_echo(1, 1, want);
	assert_echo(3, 2, "error: fail: disk on fire");
	/* The caller's sink is back in place afterwards. */
	out_reset();
	assert_int_equal(exec("frob"), -ENOENT);
	assert_string_equal(out_buf, "error: unknown command 'frob' (try 'help')\n");
}

static void test_script_no_echo(void **state)
{
	(void)state;
	assert_int_equal(script_run(cmds, ARRAY_SIZE(cmds), "count\nfrob\n",
				    11, NULL), 1);
	assert_int_equal(calls, 1);
	/* len is obeyed: the text after it is not run. */
	assert_int_equal(script_run(cmds, ARRAY_SIZE(cmds), "count\nfrob\n",
				    6, NULL), 0);
	assert_int_equal(calls, 2);
}

static void test_script_fuzz(void **state)
{
	static const char alpha[] = "count echo\"\\# \t\r\n\0\xff";
	size_t len = 150000, i;
	uint64_t x = 0x5eed;
	char *text = malloc(len);
	int failed;

	(void)state;
	assert_non_null(text);
	for (i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		text[i] = (x >> 60) & 1 ? (char)(x >> 8)
			: alpha[(x >> 20) % (sizeof(alpha) - 1)];
	}
	shell_set_output(NULL, NULL);
	failed = script_run(cmds, ARRAY_SIZE(cmds), text, len, NULL);
	assert_true(failed > 0);
	free(text);
	/* Still works afterwards. */
	shell_set_output(sink, &out_ctx);
	calls = 0;
	assert_int_equal(run_str("count\n"), 0);
	assert_int_equal(calls, 1);
	assert_string_equal(out_buf, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_unknown_command, setup),
		cmocka_unit_test_setup(test_blank_lines, setup),
		cmocka_unit_test_setup(test_dispatch_and_args, setup),
		cmocka_unit_test_setup(test_line_is_not_modified, setup),
		cmocka_unit_test_setup(test_split_errors, setup),
		cmocka_unit_test_setup(test_line_length_limit, setup),
		cmocka_unit_test_setup(test_command_errors, setup),
		cmocka_unit_test_setup(test_failure_told, setup),
		cmocka_unit_test_setup(test_shell_error_format, setup),
		cmocka_unit_test_setup(test_long_output, setup),
		cmocka_unit_test_setup(test_no_sink, setup),
		cmocka_unit_test_setup(test_find, setup),
		cmocka_unit_test_setup(test_help_all, setup),
		cmocka_unit_test_setup(test_help_alignment_cap, setup),
		cmocka_unit_test_setup(test_help_cmd, setup),
		cmocka_unit_test_setup(test_interrupt_hook, setup),
		cmocka_unit_test_setup(test_script_basic, setup),
		cmocka_unit_test_setup(test_script_line_endings, setup),
		cmocka_unit_test_setup(test_script_long_line, setup),
		cmocka_unit_test_setup(test_script_binary, setup),
		cmocka_unit_test_setup(test_script_bad_quotes, setup),
		cmocka_unit_test_setup(test_script_error_reason, setup),
		cmocka_unit_test_setup(test_script_no_echo, setup),
		cmocka_unit_test_setup(test_script_fuzz, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
