/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Line editor for the serial console (keys and limits: see lineedit.h).
 *
 * Redrawing uses only "\b", spaces and the characters of the line, so it
 * works on any terminal; it assumes the line does not wrap.  Escape
 * sequences follow ECMA-48 section 5.4: after ESC [ come parameter bytes
 * (0x30-0x3f), intermediate bytes (0x20-0x2f) and one final byte
 * (0x40-0x7e).  A sequence longer than LE_ESC_MAX is dropped, and any byte
 * outside 0x20-0x7e ends it and is then handled as ordinary input, so
 * Enter and Ctrl-C always work.
 */
#include "hv/shell/lineedit.h"

#include <string.h>

#define CTRL(c)		((c) & 0x1f)
#define KEY_BS		0x08
#define KEY_DEL		0x7f
#define KEY_ESC		0x1b

#define PARAM_DONE	0x10000	/* esc_param flag: first parameter ended */

#define RUN		32
static const char backs[RUN + 1] = "\b\b\b\b\b\b\b\b\b\b\b\b\b\b\b\b"
				   "\b\b\b\b\b\b\b\b\b\b\b\b\b\b\b\b";
static const char spaces[RUN + 1] = "                                ";

/* ---- output ---- */

static void emit(struct line_editor *le, const char *s, size_t n)
{
	if (n)
		le->out(le->ctx, s, n);
}

static void emit_str(struct line_editor *le, const char *s)
{
	emit(le, s, strlen(s));
}

/* Write n copies of the character that run (backs or spaces) repeats. */
static void emit_rep(struct line_editor *le, const char *run, size_t n)
{
	while (n) {
		size_t k = n < RUN ? n : RUN;

		emit(le, run, k);
		n -= k;
	}
}

/*
 * The terminal cursor sits at column `from` of the line; rewrite the line
 * from there, blank out what remains of an old line of old_len bytes, and
 * move the terminal cursor back to le->cur.
 */
static void redraw_tail(struct line_editor *le, size_t from, size_t old_len)
{
	size_t pad = old_len > le->len ? old_len - le->len : 0;

	emit(le, le->buf + from, le->len - from);
	emit_rep(le, spaces, pad);
	emit_rep(le, backs, le->len + pad - le->cur);
}

/* ---- editing ---- */

static void reset_line(struct line_editor *le)
{
	le->len = 0;
	le->cur = 0;
	le->buf[0] = '\0';
	le->done = false;
	le->hist_pos = -1;
}

static void move_to(struct line_editor *le, size_t pos)
{
	if (pos < le->cur)
		emit_rep(le, backs, le->cur - pos);
	else
		emit(le, le->buf + le->cur, pos - le->cur);
	le->cur = pos;
}

/* Replace the whole line by s (strlen(s) <= LE_LINE_MAX). */
static void set_line(struct line_editor *le, const char *s)
{
	size_t old_len = le->len;

	move_to(le, 0);
	le->len = strlen(s);
	memmove(le->buf, s, le->len + 1);
	le->cur = le->len;
	redraw_tail(le, 0, old_len);
}

static enum le_event refuse_line(struct line_editor *le)
{
	emit_str(le, "\r\nerror: line too long\r\n");
	reset_line(le);
	le->state = LE_ST_DISCARD;
	return LE_TOO_LONG;
}

static enum le_event insert(struct line_editor *le, char c)
{
	if (le->len >= LE_LINE_MAX)
		return refuse_line(le);
	memmove(le->buf + le->cur + 1, le->buf + le->cur, le->len - le->cur + 1);
	le->buf[le->cur] = c;
	le->len++;
	le->cur++;
	redraw_tail(le, le->cur - 1, le->len);
	return LE_NONE;
}

/* Remove the byte under the cursor; the terminal cursor is at le->cur. */
static void delete_at_cursor(struct line_editor *le)
{
	memmove(le->buf + le->cur, le->buf + le->cur + 1, le->len - le->cur);
	le->len--;
	redraw_tail(le, le->cur, le->len + 1);
}

static void backspace(struct line_editor *le)
{
	if (le->cur == 0)
		return;
	emit(le, "\b", 1);
	le->cur--;
	delete_at_cursor(le);
}

static void delete_key(struct line_editor *le)
{
	if (le->cur < le->len)
		delete_at_cursor(le);
}

/* ---- history ---- */

static bool is_blank(const char *s)
{
	while (*s == ' ')
		s++;
	return *s == '\0';
}

unsigned int le_history_count(const struct line_editor *le)
{
	return le->hist_count;
}

const char *le_history(const struct line_editor *le, unsigned int i)
{
	if (i >= le->hist_count)
		return NULL;
	return le->hist[(le->hist_head + LE_HISTORY - 1 - i) % LE_HISTORY];
}

static void history_add(struct line_editor *le, const char *s)
{
	if (is_blank(s))
		return;
	if (le->hist_count && strcmp(le_history(le, 0), s) == 0)
		return;
	memcpy(le->hist[le->hist_head], s, strlen(s) + 1);
	le->hist_head = (le->hist_head + 1) % LE_HISTORY;
	if (le->hist_count < LE_HISTORY)
		le->hist_count++;
}

static void history_up(struct line_editor *le)
{
	if (le->hist_pos + 1 >= (int)le->hist_count)
		return;
	if (le->hist_pos < 0)
		memcpy(le->draft, le->buf, le->len + 1);
	le->hist_pos++;
	set_line(le, le_history(le, (unsigned int)le->hist_pos));
}

static void history_down(struct line_editor *le)
{
	if (le->hist_pos < 0)
		return;
	le->hist_pos--;
	if (le->hist_pos < 0)
		set_line(le, le->draft);
	else
		set_line(le, le_history(le, (unsigned int)le->hist_pos));
}

/* ---- line endings ---- */

static enum le_event finish(struct line_editor *le)
{
	emit_str(le, "\r\n");
	history_add(le, le->buf);
	le->hist_pos = -1;
	le->done = true;
	return LE_LINE;
}

static enum le_event cancel(struct line_editor *le)
{
	le->state = LE_ST_NORMAL;
	emit_str(le, "^C\r\n");
	le_prompt(le);
	return LE_CANCEL;
}

/* ---- input state machine ---- */

static enum le_event feed_normal(struct line_editor *le, uint8_t b)
{
	switch (b) {
	case '\r':
		le->after_cr = true;
		return finish(le);
	case '\n':
		return finish(le);
	case CTRL('C'):
		return cancel(le);
	case CTRL('U'):
		set_line(le, "");
		break;
	case CTRL('A'):
		move_to(le, 0);
		break;
	case CTRL('E'):
		move_to(le, le->len);
		break;
	case KEY_BS:
	case KEY_DEL:
		backspace(le);
		break;
	case KEY_ESC:
		le->state = LE_ST_ESC;
		le->esc_len = 0;
		le->esc_param = 0;
		break;
	case '\t':
		return insert(le, ' ');
	default:
		if (b >= 0x20 && b < 0x7f)
			return insert(le, (char)b);
		break;	/* other controls and 8-bit bytes: ignored */
	}
	return LE_NONE;
}

static bool in_range(uint8_t b, uint8_t lo, uint8_t hi)
{
	return b >= lo && b <= hi;
}

/* End an escape sequence early; a control byte still does its job. */
static enum le_event esc_abort(struct line_editor *le, uint8_t b)
{
	le->state = LE_ST_NORMAL;
	if (in_range(b, 0x20, 0x7e))
		return LE_NONE;
	return feed_normal(le, b);
}

/* Act on a complete sequence (xterm/VT220 keys; others are ignored). */
static void esc_action(struct line_editor *le, uint8_t final)
{
	unsigned int p = le->esc_param;

	le->state = LE_ST_NORMAL;
	if (final == 'A')
		history_up(le);
	else if (final == 'B')
		history_down(le);
	else if (final == 'C' && le->cur < le->len)
		move_to(le, le->cur + 1);
	else if (final == 'D' && le->cur > 0)
		move_to(le, le->cur - 1);
	else if (final == 'H' || (final == '~' && (p == 1 || p == 7)))
		move_to(le, 0);
	else if (final == 'F' || (final == '~' && (p == 4 || p == 8)))
		move_to(le, le->len);
	else if (final == '~' && p == 3)
		delete_key(le);
}

static enum le_event feed_esc(struct line_editor *le, uint8_t b)
{
	if (b == '[') {
		le->state = LE_ST_CSI;
	} else if (b == 'O') {
		le->state = LE_ST_SS3;
	} else {
		return esc_abort(le, b);	/* Alt-key or junk */
	}
	return LE_NONE;
}

/* Only the first parameter is kept; ';' starts the next (ignored) one. */
static void csi_param(struct line_editor *le, uint8_t b)
{
	if (b == ';')
		le->esc_param |= PARAM_DONE;
	else if (in_range(b, '0', '9') && le->esc_param < 1000)
		le->esc_param = le->esc_param * 10 + (b - '0');
}

static enum le_event feed_csi(struct line_editor *le, uint8_t b)
{
	if (!in_range(b, 0x20, 0x7e))
		return esc_abort(le, b);
	if (++le->esc_len > LE_ESC_MAX) {
		le->state = LE_ST_NORMAL;	/* give up, drop the byte */
		return LE_NONE;
	}
	if (in_range(b, 0x40, 0x7e)) {
		le->esc_param &= ~PARAM_DONE;
		esc_action(le, b);
	} else if (in_range(b, 0x30, 0x3f)) {
		csi_param(le, b);
	}
	return LE_NONE;		/* 0x20-0x2f: intermediates, ignored */
}

static enum le_event feed_ss3(struct line_editor *le, uint8_t b)
{
	if (in_range(b, 0x40, 0x7e))
		esc_action(le, b);
	else
		return esc_abort(le, b);
	return LE_NONE;
}

static enum le_event feed_discard(struct line_editor *le, uint8_t b)
{
	if (b == CTRL('C'))
		return cancel(le);
	if (b == '\r' || b == '\n') {
		le->state = LE_ST_NORMAL;
		le->after_cr = b == '\r';
		le_prompt(le);
	}
	return LE_NONE;
}

/* ---- public ---- */

void le_init(struct line_editor *le, const char *prompt,
	     le_out_fn out, void *ctx)
{
	memset(le, 0, sizeof(*le));
	le->out = out;
	le->ctx = ctx;
	le->prompt = prompt ? prompt : "";
	le->state = LE_ST_NORMAL;
	reset_line(le);
}

void le_prompt(struct line_editor *le)
{
	reset_line(le);
	emit_str(le, le->prompt);
}

void le_redisplay(struct line_editor *le)
{
	emit_str(le, le->prompt);
	emit(le, le->buf, le->len);
	emit_rep(le, backs, le->len - le->cur);
}

enum le_event le_feed(struct line_editor *le, uint8_t byte)
{
	bool after_cr = le->after_cr;

	le->after_cr = false;
	if (le->done)
		reset_line(le);
	if (after_cr && byte == '\n')
		return LE_NONE;		/* CRLF is one Enter */
	switch (le->state) {
	case LE_ST_ESC:
		return feed_esc(le, byte);
	case LE_ST_CSI:
		return feed_csi(le, byte);
	case LE_ST_SS3:
		return feed_ss3(le, byte);
	case LE_ST_DISCARD:
		return feed_discard(le, byte);
	default:
		return feed_normal(le, byte);
	}
}

const char *le_line(const struct line_editor *le)
{
	return le->buf;
}
