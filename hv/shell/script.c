/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Boot script runner (see script.h): splits the module into lines, skips
 * comments and blank lines, refuses over-long and binary lines, and runs
 * the rest through the command table.
 */
#include "hv/shell/script.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

static bool is_eol(char c)
{
	return c == '\n' || c == '\r';
}

/* Index of the first byte at or after pos that ends a line, or len. */
static size_t line_end(const char *text, size_t len, size_t pos)
{
	while (pos < len && !is_eol(text[pos]))
		pos++;
	return pos;
}

/* Where the line after the one ending at end starts (CRLF counts once). */
static size_t next_line(const char *text, size_t len, size_t end)
{
	if (end >= len)
		return len;
	if (text[end] == '\r' && end + 1 < len && text[end + 1] == '\n')
		return end + 2;
	return end + 1;
}

/* Nothing to run: blank, or a comment. */
static bool is_skipped(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	return i == n || s[i] == '#';
}

/* Index of the first byte that is neither printable ASCII nor TAB, or n. */
static size_t bad_byte(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c != '\t' && (c < 0x20 || c > 0x7e))
			return i;
	}
	return n;
}

/* Check, echo and run one line; returns < 0 if it failed. */
static int run_line(const struct shell_cmd *tab, size_t n, const char *s,
		    size_t len, unsigned int lineno, script_echo_fn echo)
{
	char buf[SHELL_LINE_MAX + 1];
	size_t bad;
	int r;

	if (is_skipped(s, len))
		return 0;
	if (len > SHELL_LINE_MAX) {
		shell_error("script", "line %u: too long (max %d bytes), skipped",
			    lineno, SHELL_LINE_MAX);
		return -E2BIG;
	}
	bad = bad_byte(s, len);
	if (bad < len) {
		shell_error("script", "line %u: invalid byte 0x%02x, skipped",
			    lineno, (unsigned char)s[bad]);
		return -EINVAL;
	}
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (echo)
		echo(lineno, buf);
	r = shell_exec(tab, n, buf);
	if (r < 0)
		shell_error("script", "line %u: failed", lineno);
	return r;
}

int script_run(const struct shell_cmd *tab, size_t n, const char *text,
	       size_t len, script_echo_fn echo)
{
	unsigned int lineno = 0;
	size_t pos = 0, end;
	int failed = 0;

	while (pos < len) {
		end = line_end(text, len, pos);
		lineno++;
		if (run_line(tab, n, text + pos, end - pos, lineno, echo) < 0)
			failed++;
		pos = next_line(text, len, end);
	}
	return failed;
}
