/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Boot script runner: executes the text of the GRUB module ferry.rc, one
 * shell command per line, so a host can configure itself at boot.
 */
#ifndef FERRY_HV_SHELL_SCRIPT_H
#define FERRY_HV_SHELL_SCRIPT_H

#include <stddef.h>

#include "hv/shell/shell.h"

/*
 * Told each line before it runs and, for a line that failed, the first
 * error message it printed ("error: ...", at most 159 bytes), so that the
 * console code can log both.
 */
typedef void (*script_echo_fn)(unsigned int lineno, const char *line);

/*
 * Run text[0..len) through shell_exec() line by line.  Lines end with LF,
 * CR or CRLF; the last may lack an ending.  Blank lines and lines whose
 * first non-blank character is '#' are skipped.  Every other line is
 * passed to echo (may be NULL) and run.  A line that fails, is longer than
 * SHELL_LINE_MAX, or holds a byte outside printable ASCII and TAB is
 * reported through shell output as "error: script: line N: ..." and to
 * echo (see above), and the rest still runs.  text need not be
 * NUL-terminated and may hold any bytes.  Returns the number of failed
 * lines.  Uses about 2 KiB of stack on top of shell_exec()'s.
 */
int script_run(const struct shell_cmd *tab, size_t n, const char *text,
	       size_t len, script_echo_fn echo);

#endif
