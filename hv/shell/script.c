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

#define REASON_MAX	160	/* kept of a failed line's error message */

/*
 * Passes the output of the running line on to the shell's sink and keeps
 * its first "error: " line, so that the log can say why the line failed.
 */
struct capture {
	shell_out_fn out;
	void *ctx;
	size_t len;			/* of the output line being collected */
	char cur[REASON_MAX];
	char reason[REASON_MAX];	/* "" until an error line ends */
};

static void capture_out(void *ctx, const char *s, size_t n)
{
	struct capture *c = ctx;
	size_t i;

	if (c->out)
		c->out(c->ctx, s, n);
	for (i = 0; i < n; i++) {
		if (s[i] != '\n') {
			if (c->len < sizeof(c->cur) - 1)
				c->cur[c->len++] = s[i];
			continue;
		}
		c->cur[c->len] = '\0';
		if (!c->reason[0] && !strncmp(c->cur, "error: ", 7))
			memcpy(c->reason, c->cur, c->len + 1);
		c->len = 0;
	}
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
	struct capture cap;
	unsigned int lineno = 0;
	size_t pos = 0, end;
	int failed = 0;

	shell_get_output(&cap.out, &cap.ctx);
	shell_set_output(capture_out, &cap);
	while (pos < len) {
		end = line_end(text, len, pos);
		lineno++;
		cap.len = 0;
		cap.reason[0] = '\0';
		if (run_line(tab, n, text + pos, end - pos, lineno, echo) < 0) {
			failed++;
			if (echo && cap.reason[0])
				echo(lineno, cap.reason);
		}
		pos = next_line(text, len, end);
	}
	shell_set_output(cap.out, cap.ctx);
	return failed;
}
