/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The management shell's command dispatch: a table of commands, the
 * output sink every command prints through, uniform error messages, the
 * generic `help`, and the Ctrl-C hook for long-running commands.
 *
 * Used from one CPU at a time (the console's); the sink and the error
 * bookkeeping are global and unlocked.
 */
#ifndef FERRY_HV_SHELL_SHELL_H
#define FERRY_HV_SHELL_SHELL_H

#include <stdbool.h>
#include <stddef.h>

#include "hv/shell/parse.h"

#define SHELL_LINE_MAX	1024		/* same limit as the line editor */
#define SHELL_MAX_ARGS	PARSE_MAX_ARGS

/*
 * One command.  args is the usage after the name ("NAME [mem=SIZE]", or
 * NULL/"" for none), help a one-line description.  fn gets the split line
 * (argv[0] is the name) and returns 0 or a negative errno; if it fails
 * without calling shell_error() or shell_reported(), shell_exec() prints
 * the errno's meaning.
 */
struct shell_cmd {
	const char *name;
	const char *args;
	const char *help;
	int (*fn)(int argc, char **argv);
};

/* Where shell output goes; same shape as the line editor's echo. */
typedef void (*shell_out_fn)(void *ctx, const char *s, size_t n);

/* Set the sink (NULL drops output).  Text uses "\n"; the sink adds "\r". */
void shell_set_output(shell_out_fn out, void *ctx);
/* The sink now set, so a caller can wrap it for a while and put it back. */
void shell_get_output(shell_out_fn *out, void **ctx);

void shell_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print "error: CMD: <message>\n". */
void shell_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * The running command told its failure in its own words (a line that is
 * not "error: ..."): the negative errno it returns still counts as a
 * failure (a boot script counts the line), but nothing more is printed.
 */
void shell_reported(void);

/*
 * Split line and run the command it names.  Empty or blank lines do
 * nothing and return 0.  Errors, each printed as "error: ...":
 * -ENOENT unknown command ("error: unknown command 'x' (try 'help')"),
 * -EINVAL unterminated quote, -E2BIG too many arguments or line longer
 * than SHELL_LINE_MAX; otherwise the command's own result.
 */
int shell_exec(const struct shell_cmd *tab, size_t n, const char *line);

/* The command called name, or NULL. */
const struct shell_cmd *shell_find(const struct shell_cmd *tab, size_t n,
				   const char *name);

/* `help`: every command with its usage and help, aligned in columns. */
void shell_help_all(const struct shell_cmd *tab, size_t n);

/* `help CMD`: usage and help of one command; -ENOENT (and error) if none. */
int shell_help_cmd(const struct shell_cmd *tab, size_t n, const char *name);

/* Body of a `help [CMD]` command: argv as given to the command's fn. */
int shell_help(const struct shell_cmd *tab, size_t n, int argc, char **argv);

/*
 * Polled by long-running commands: true once the operator pressed Ctrl-C.
 * Never NULL; the default always says false.  The console code installs
 * its own (polling the UART) with shell_set_interrupt(), NULL restoring
 * the default.
 */
extern bool (*shell_interrupted)(void);
void shell_set_interrupt(bool (*poll)(void));

#endif
