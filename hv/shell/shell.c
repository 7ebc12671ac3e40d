/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The management shell's command dispatch, output, error messages and the
 * generic `help` (see shell.h).  The commands themselves live elsewhere.
 */
#include "hv/shell/shell.h"
#include "hv/lib/errtext.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>	/* vsnprintf only */
#include <stdlib.h>
#include <string.h>

#define OUT_BUF		256	/* longer output is formatted into the heap */
#define HELP_COL_MAX	32	/* usage wider than this is not aligned */

/* Output sink; set by the console code (or a test), used by everyone. */
static shell_out_fn out_fn;
static void *out_ctx;

/* Bumped by shell_error() and shell_reported(), so shell_exec() knows a
 * failure was reported. */
static unsigned int errors_reported;

static bool never_interrupted(void)
{
	return false;
}

bool (*shell_interrupted)(void) = never_interrupted;

void shell_set_interrupt(bool (*poll)(void))
{
	shell_interrupted = poll ? poll : never_interrupted;
}

/* ---- output ---- */

void shell_set_output(shell_out_fn out, void *ctx)
{
	out_fn = out;
	out_ctx = ctx;
}

void shell_get_output(shell_out_fn *out, void **ctx)
{
	*out = out_fn;
	*ctx = out_ctx;
}

/* Format output too long for the stack buffer; truncate if out of memory. */
static void vprint_long(const char *shortbuf, size_t n, const char *fmt,
			va_list ap)
{
	char *p = malloc(n + 1);

	if (!p) {
		out_fn(out_ctx, shortbuf, OUT_BUF - 1);
		return;
	}
	vsnprintf(p, n + 1, fmt, ap);
	out_fn(out_ctx, p, n);
	free(p);
}

static void shell_vprintf(const char *fmt, va_list ap)
{
	char buf[OUT_BUF];
	va_list again;
	int n;

	if (!out_fn)
		return;
	va_copy(again, ap);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	if (n > 0 && (size_t)n < sizeof(buf))
		out_fn(out_ctx, buf, (size_t)n);
	else if (n > 0)
		vprint_long(buf, (size_t)n, fmt, again);
	va_end(again);
}

void shell_printf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	shell_vprintf(fmt, ap);
	va_end(ap);
}

void shell_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	errors_reported++;
	shell_printf("error: %s: ", cmd);
	va_start(ap, fmt);
	shell_vprintf(fmt, ap);
	va_end(ap);
	shell_printf("\n");
}

void shell_reported(void)
{
	errors_reported++;
}

/* ---- dispatch ---- */

const struct shell_cmd *shell_find(const struct shell_cmd *tab, size_t n,
				   const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (tab[i].name && strcmp(tab[i].name, name) == 0)
			return &tab[i];
	return NULL;
}

static int split_error(int err)
{
	if (err == -E2BIG)
		shell_printf("error: too many arguments (max %d)\n",
			     SHELL_MAX_ARGS);
	else
		shell_printf("error: unterminated quote\n");
	return err;
}

static int run(const struct shell_cmd *cmd, int argc, char **argv)
{
	unsigned int before = errors_reported;
	int r;

	if (!cmd->fn) {
		shell_error(cmd->name, "not implemented");
		return -ENOSYS;
	}
	r = cmd->fn(argc, argv);
	if (r < 0 && errors_reported == before)
		shell_error(cmd->name, "%s", errtext(r));
	return r;
}

int shell_exec(const struct shell_cmd *tab, size_t n, const char *line)
{
	char buf[SHELL_LINE_MAX + 1];
	char *argv[SHELL_MAX_ARGS];
	const struct shell_cmd *cmd;
	size_t len = strnlen(line, sizeof(buf));
	int argc;

	if (len > SHELL_LINE_MAX) {
		shell_printf("error: line too long\n");
		return -E2BIG;
	}
	memcpy(buf, line, len + 1);
	argc = parse_split(buf, argv, SHELL_MAX_ARGS);
	if (argc < 0)
		return split_error(argc);
	if (argc == 0)
		return 0;
	cmd = shell_find(tab, n, argv[0]);
	if (!cmd) {
		shell_printf("error: unknown command '%s' (try 'help')\n",
			     argv[0]);
		return -ENOENT;
	}
	return run(cmd, argc, argv);
}

/* ---- help ---- */

static const char *args_of(const struct shell_cmd *c)
{
	return c->args ? c->args : "";
}

static size_t usage_width(const struct shell_cmd *c)
{
	size_t a = strlen(args_of(c));

	return strlen(c->name) + (a ? a + 1 : 0);
}

static void print_usage(const struct shell_cmd *c, size_t width)
{
	const char *args = args_of(c);
	size_t w = usage_width(c);

	shell_printf("%s%s%s", c->name, args[0] ? " " : "", args);
	if (c->help && c->help[0])
		shell_printf("%*s  %s", (int)(width > w ? width - w : 0), "",
			     c->help);
	shell_printf("\n");
}

void shell_help_all(const struct shell_cmd *tab, size_t n)
{
	size_t i, width = 0;

	for (i = 0; i < n; i++)
		if (tab[i].name && usage_width(&tab[i]) > width)
			width = usage_width(&tab[i]);
	if (width > HELP_COL_MAX)
		width = HELP_COL_MAX;
	for (i = 0; i < n; i++)
		if (tab[i].name)
			print_usage(&tab[i], width);
}

int shell_help_cmd(const struct shell_cmd *tab, size_t n, const char *name)
{
	const struct shell_cmd *c = shell_find(tab, n, name);
	const char *args;

	if (!c) {
		shell_error("help", "unknown command '%s'", name);
		return -ENOENT;
	}
	args = args_of(c);
	shell_printf("usage: %s%s%s\n", c->name, args[0] ? " " : "", args);
	if (c->help && c->help[0])
		shell_printf("%s\n", c->help);
	return 0;
}

int shell_help(const struct shell_cmd *tab, size_t n, int argc, char **argv)
{
	if (argc <= 1) {
		shell_help_all(tab, n);
		return 0;
	}
	if (argc == 2)
		return shell_help_cmd(tab, n, argv[1]);
	shell_error(argv[0], "usage: %s [CMD]", argv[0]);
	return -EINVAL;
}
