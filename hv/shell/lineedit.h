/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Line editor for the serial console: turns the byte stream from COM1 into
 * finished command lines, echoing through a callback.  Works on a dumb
 * terminal (only "\b", spaces and "\r\n" are ever written); ANSI cursor keys
 * (ESC [ A/B/C/D, ESC O A/B/C/D, Home/End, Delete) are understood when sent.
 *
 * Keys: printable ASCII inserts; BS (0x08) and DEL (0x7f) erase left of the
 * cursor; Ctrl-U kills the line; Ctrl-C abandons it ("^C" and a new prompt);
 * CR, LF or CRLF end it; Up/Down walk the history; Left/Right, Home/End,
 * Ctrl-A/Ctrl-E move the cursor; TAB inserts a space.  Every other control
 * byte, every byte >= 0x80 and every unknown escape sequence is ignored.
 *
 * A line longer than LE_LINE_MAX bytes is refused at the byte that overflows
 * it ("error: line too long"), and the rest of that line, up to the next CR
 * or LF, is discarded.
 */
#ifndef FERRY_HV_SHELL_LINEEDIT_H
#define FERRY_HV_SHELL_LINEEDIT_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define LE_LINE_MAX	1024	/* longest accepted line, without the NUL */
#define LE_HISTORY	16	/* lines kept for Up/Down */
#define LE_ESC_MAX	16	/* bytes after ESC before a sequence is dropped */

/* What le_feed() tells its caller about the byte it just consumed. */
enum le_event {
	LE_NONE = 0,	/* nothing to do yet */
	LE_LINE,	/* a line is finished: read it with le_line() */
	LE_CANCEL,	/* Ctrl-C: line abandoned, new prompt already shown */
	LE_TOO_LONG,	/* line refused; rest of it will be discarded */
};

/* Where echo goes (the UART in the hypervisor, a buffer in tests). */
typedef void (*le_out_fn)(void *ctx, const char *s, size_t n);

/* Input state (internal). */
enum le_state {
	LE_ST_NORMAL,	/* ordinary input */
	LE_ST_ESC,	/* after ESC */
	LE_ST_CSI,	/* after ESC [ : parameters until a final byte */
	LE_ST_SS3,	/* after ESC O : one final byte */
	LE_ST_DISCARD,	/* dropping the rest of an over-long line */
};

/*
 * One editor per console.  Owned and used by the shell's CPU only; no lock.
 * buf[0..len) is the line being edited (NUL-terminated), cur the cursor.
 * hist is a ring: the newest entry is hist[(hist_head + LE_HISTORY - 1) %
 * LE_HISTORY]; hist_pos is -1 while editing the draft, else how many
 * entries back from the newest is shown (the draft is kept in draft).
 */
struct line_editor {
	le_out_fn out;			/* set at init, never NULL */
	void *ctx;			/* passed back to out */
	const char *prompt;		/* borrowed; must outlive the editor */

	char buf[LE_LINE_MAX + 1];
	size_t len;
	size_t cur;
	bool done;			/* buf holds a finished line */
	bool after_cr;			/* last byte was CR: swallow one LF */

	enum le_state state;
	unsigned int esc_len;		/* bytes seen in this sequence */
	unsigned int esc_param;		/* first numeric CSI parameter */

	char hist[LE_HISTORY][LE_LINE_MAX + 1];
	unsigned int hist_head;		/* next slot to write */
	unsigned int hist_count;	/* valid entries, <= LE_HISTORY */
	int hist_pos;
	char draft[LE_LINE_MAX + 1];
};

/* Set up an empty editor; prints nothing.  out must not be NULL. */
void le_init(struct line_editor *le, const char *prompt,
	     le_out_fn out, void *ctx);

/* Start a new line: print the prompt.  Call at start and after LE_LINE. */
void le_prompt(struct line_editor *le);
/* Draw the prompt and the line being edited again, cursor where it was,
 * after other output (the terminal must be at the start of a line). */
void le_redisplay(struct line_editor *le);

/* Consume one input byte; any value is safe. */
enum le_event le_feed(struct line_editor *le, uint8_t byte);

/* The finished line after LE_LINE; valid until the next le_feed/le_prompt. */
const char *le_line(const struct line_editor *le);

/* Number of history entries (for tests and a `history` command). */
unsigned int le_history_count(const struct line_editor *le);

/* History entry i, 0 being the newest; NULL when out of range. */
const char *le_history(const struct line_editor *le, unsigned int i);

#endif
