/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for the serial-console line editor (hv/shell/lineedit.c):
 * every editing key, history, CR/LF handling, over-long lines, truncated
 * and unknown escape sequences, and a fuzz run checked against a model of
 * a dumb terminal.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "hv/shell/lineedit.h"

#define PROMPT	"> "
#define ESC	"\x1b"
#define UP	ESC "[A"
#define DOWN	ESC "[B"
#define RIGHT	ESC "[C"
#define LEFT	ESC "[D"

/*
 * A dumb terminal: one visible row, a cursor, and nothing but CR, LF, BS
 * and printable characters understood.  Anything else the editor writes
 * is counted as a bad byte.
 */
#define TERM_W	4096
struct term {
	char row[TERM_W];
	size_t rowlen;		/* row[0..rowlen) has been written */
	size_t col;
	unsigned long newlines;
	unsigned long bad;	/* bytes a dumb terminal cannot show */
};

/* Everything the editor wrote since the last out_reset(), bounded. */
#define CAP_MAX	(64 * 1024)
struct capture {
	char buf[CAP_MAX + 1];
	size_t len;
	size_t total;
};

static struct line_editor le;
static struct term term;
static struct capture cap;

static void term_newline(struct term *t)
{
	memset(t->row, ' ', sizeof(t->row));
	t->rowlen = 0;
	t->newlines++;
}

static void term_putc(struct term *t, char c)
{
	if (c == '\r') {
		t->col = 0;
	} else if (c == '\n') {
		term_newline(t);
	} else if (c == '\b') {
		if (t->col > 0)
			t->col--;
	} else if (c >= 0x20 && c < 0x7f && t->col < TERM_W) {
		t->row[t->col++] = c;
		if (t->col > t->rowlen)
			t->rowlen = t->col;
	} else {
		t->bad++;
	}
}

static void out(void *ctx, const char *s, size_t n)
{
	size_t i;

	assert_ptr_equal(ctx, &cap);
	assert_true(n > 0);
	for (i = 0; i < n; i++)
		term_putc(&term, s[i]);
	cap.total += n;
	if (cap.len + n <= CAP_MAX) {
		memcpy(cap.buf + cap.len, s, n);
		cap.len += n;
	}
	cap.buf[cap.len] = '\0';
}

static void out_reset(void)
{
	cap.len = 0;
	cap.buf[0] = '\0';
}

static int setup(void **state)
{
	(void)state;
	memset(&term, 0, sizeof(term));
	term_newline(&term);
	term.newlines = 0;
	cap.total = 0;
	out_reset();
	le_init(&le, PROMPT, out, &cap);
	le_prompt(&le);
	return 0;
}

/* Feed s; return the last event that was not LE_NONE. */
static enum le_event feed_n(const char *s, size_t n)
{
	enum le_event last = LE_NONE, ev;
	size_t i;

	for (i = 0; i < n; i++) {
		ev = le_feed(&le, (uint8_t)s[i]);
		if (ev != LE_NONE)
			last = ev;
	}
	return last;
}

static enum le_event feed(const char *s)
{
	return feed_n(s, strlen(s));
}

/* Feed s, count the lines it completes, re-prompting like the shell. */
static int feed_lines(const char *s, char lines[][64], int max)
{
	int n = 0;

	for (; *s; s++) {
		if (le_feed(&le, (uint8_t)*s) != LE_LINE)
			continue;
		assert_true(n < max);
		strncpy(lines[n], le_line(&le), 63);
		lines[n++][63] = '\0';
		le_prompt(&le);
	}
	return n;
}

/* The visible row shows the prompt and the line, cursor in its place. */
static void check_screen(void)
{
	size_t plen = strlen(PROMPT), i;

	assert_int_equal(term.bad, 0);
	assert_true(le.len <= LE_LINE_MAX);
	assert_true(le.cur <= le.len);
	assert_int_equal(strlen(le.buf), le.len);
	assert_memory_equal(term.row, PROMPT, plen);
	if (le.len)
		assert_memory_equal(term.row + plen, le.buf, le.len);
	for (i = plen + le.len; i < term.rowlen; i++)
		assert_int_equal(term.row[i], ' ');
	assert_int_equal(term.col, plen + le.cur);
}

/* ---- basic input and line endings ---- */

static void test_prompt_and_echo(void **state)
{
	(void)state;
	assert_string_equal(cap.buf, PROMPT);
	out_reset();
	assert_int_equal(feed("help"), LE_NONE);
	assert_string_equal(cap.buf, "help");
	check_screen();
	assert_int_equal(feed("\r"), LE_LINE);
	assert_string_equal(le_line(&le), "help");
	assert_string_equal(cap.buf, "help\r\n");
}

/* Other output (a log line) interrupted the edit: the prompt and the
 * half-typed line come back on a fresh row, cursor where it was. */
static void test_redisplay_after_other_output(void **state)
{
	(void)state;
	feed("migrate g 10.0.0.3");
	feed("\x1b[D\x1b[D");		/* cursor two to the left */
	term_putc(&term, '\r');		/* a log line took the row ... */
	term_putc(&term, '\n');		/* ... and ended it */
	out_reset();
	le_redisplay(&le);
	assert_string_equal(cap.buf, PROMPT "migrate g 10.0.0.3\b\b");
	check_screen();
	feed("X\r");
	assert_string_equal(le_line(&le), "migrate g 10.0.0X.3");
}

static void test_cr_lf_crlf(void **state)
{
	char lines[8][64];

	(void)state;
	assert_int_equal(feed_lines("a\rb\nc\r\nd\r\n", lines, 8), 4);
	assert_string_equal(lines[0], "a");
	assert_string_equal(lines[1], "b");
	assert_string_equal(lines[2], "c");
	assert_string_equal(lines[3], "d");
	/* LF CR is two line ends; CR CR too. */
	assert_int_equal(feed_lines("\n\r\r", lines, 8), 3);
	assert_string_equal(lines[0], "");
	/* The LF swallowed after CR is one byte only. */
	assert_int_equal(feed_lines("x\r\n\ny\r", lines, 8), 3);
	assert_string_equal(lines[1], "");
	assert_string_equal(lines[2], "y");
}

static void test_line_reset_without_prompt(void **state)
{
	(void)state;
	assert_int_equal(feed("abc\r"), LE_LINE);
	/* The caller did not call le_prompt(); the next line still starts empty. */
	assert_int_equal(feed("de\r"), LE_LINE);
	assert_string_equal(le_line(&le), "de");
}

static void test_ignored_bytes(void **state)
{
	static const char junk[] = "a\x00\x02\x04\x06\x07\x0b\x0c\x0e"
				   "\x1f\x80\x9b\xc3\xa9\xfe\xff" "b\r";

	(void)state;
	out_reset();
	assert_int_equal(feed_n(junk, sizeof(junk) - 1), LE_LINE);
	assert_string_equal(le_line(&le), "ab");
	assert_string_equal(cap.buf, "ab\r\n");
}

static void test_tab_is_space(void **state)
{
	(void)state;
	assert_int_equal(feed("vm\tlist\r"), LE_LINE);
	assert_string_equal(le_line(&le), "vm list");
}

/* ---- editing keys ---- */

static void test_backspace_both_codes(void **state)
{
	(void)state;
	feed("abcd");
	out_reset();
	feed("\b");
	assert_string_equal(cap.buf, "\b \b");
	out_reset();
	feed("\x7f");
	assert_string_equal(cap.buf, "\b \b");
	check_screen();
	assert_int_equal(feed("\r"), LE_LINE);
	assert_string_equal(le_line(&le), "ab");
}

static void test_backspace_at_start(void **state)
{
	(void)state;
	out_reset();
	feed("\b\x7f\b");
	assert_string_equal(cap.buf, "");
	feed("x\b\b\by");
	check_screen();
	assert_int_equal(feed("\r"), LE_LINE);
	assert_string_equal(le_line(&le), "y");
}

static void test_ctrl_u(void **state)
{
	(void)state;
	feed("hello");
	out_reset();
	feed("\x15");
	assert_string_equal(cap.buf, "\b\b\b\b\b     \b\b\b\b\b");
	check_screen();
	feed("world");
	assert_int_equal(feed("\r"), LE_LINE);
	assert_string_equal(le_line(&le), "world");
}

static void test_ctrl_u_mid_line(void **state)
{
	(void)state;
	feed("hello" LEFT LEFT "\x15");
	check_screen();
	assert_int_equal(le.len, 0);
	feed("x\r");
	assert_string_equal(le_line(&le), "x");
}

static void test_ctrl_c(void **state)
{
	(void)state;
	feed("vm destroy");
	out_reset();
	assert_int_equal(feed("\x03"), LE_CANCEL);
	assert_string_equal(cap.buf, "^C\r\n" PROMPT);
	check_screen();
	assert_int_equal(feed("ok\r"), LE_LINE);
	assert_string_equal(le_line(&le), "ok");
	/* The abandoned line is not in the history. */
	assert_int_equal(le_history_count(&le), 1);
	assert_string_equal(le_history(&le, 0), "ok");
}

static void test_left_right_insert(void **state)
{
	(void)state;
	feed("ac" LEFT);
	check_screen();
	out_reset();
	feed("b");
	assert_string_equal(cap.buf, "bc\b");
	check_screen();
	feed(RIGHT RIGHT RIGHT "d");
	check_screen();
	feed(LEFT LEFT LEFT LEFT LEFT LEFT "<");
	check_screen();
	assert_int_equal(feed("\r"), LE_LINE);
	assert_string_equal(le_line(&le), "<abcd");
}

static void test_backspace_mid_line(void **state)
{
	(void)state;
	feed("abXcd" LEFT LEFT);
	out_reset();
	feed("\x7f");
	assert_string_equal(cap.buf, "\bcd \b\b\b");
	check_screen();
	assert_int_equal(feed("\r"), LE_LINE);
	assert_string_equal(le_line(&le), "abcd");
}

static void test_home_end_delete(void **state)
{
	(void)state;
	feed("bc" ESC "[H" "a" ESC "[F" "d");
	check_screen();
	feed("\x01" "0" "\x05" "e");		/* Ctrl-A, Ctrl-E */
	check_screen();
	feed(ESC "[1~" ESC "[3~" ESC "[4~" "f");	/* delete the 0 */
	check_screen();
	feed(ESC "OH" ESC "[3~" ESC "OF");	/* delete the a */
	check_screen();
	feed(ESC "[3~");			/* at end: nothing */
	check_screen();
	assert_int_equal(feed("\r"), LE_LINE);
	assert_string_equal(le_line(&le), "bcdef");
}

static void test_ss3_arrows(void **state)
{
	(void)state;
	feed("first\r");
	le_prompt(&le);
	feed("xz" ESC "OD" "y" ESC "OC" "!");
	check_screen();
	feed("\r");
	assert_string_equal(le_line(&le), "xyz!");
	le_prompt(&le);
	feed(ESC "OA" ESC "OA");
	check_screen();
	assert_string_equal(le.buf, "first");
	feed(ESC "OB");
	assert_string_equal(le.buf, "xyz!");
}

/* ---- history ---- */

static void enter(const char *s)
{
	feed(s);
	assert_int_equal(feed("\r"), LE_LINE);
	assert_string_equal(le_line(&le), s);
	le_prompt(&le);
}

static void test_history_walk(void **state)
{
	(void)state;
	enter("one");
	enter("two");
	enter("three");
	feed("dra");
	feed(UP);
	check_screen();
	assert_string_equal(le.buf, "three");
	feed(UP);
	assert_string_equal(le.buf, "two");
	feed(UP UP UP);			/* stops at the oldest */
	check_screen();
	assert_string_equal(le.buf, "one");
	feed(DOWN);
	assert_string_equal(le.buf, "two");
	feed(DOWN DOWN);
	check_screen();
	assert_string_equal(le.buf, "dra");	/* the draft comes back */
	feed(DOWN);
	assert_string_equal(le.buf, "dra");
	feed("ft\r");
	assert_string_equal(le_line(&le), "draft");
}

static void test_history_recall_and_edit(void **state)
{
	(void)state;
	enter("vm list");
	enter("cpus");
	feed(UP UP "\x7f\x7f\x7f\x7f" "start g1");
	check_screen();
	assert_int_equal(feed("\r"), LE_LINE);
	assert_string_equal(le_line(&le), "vm start g1");
	/* The recalled entry itself was not changed. */
	assert_string_equal(le_history(&le, 2), "vm list");
	assert_string_equal(le_history(&le, 0), "vm start g1");
}

static void test_history_skips_blank_and_repeat(void **state)
{
	(void)state;
	enter("a");
	enter("a");
	enter("");
	enter("   ");
	enter("b");
	assert_int_equal(le_history_count(&le), 2);
	assert_string_equal(le_history(&le, 0), "b");
	assert_string_equal(le_history(&le, 1), "a");
	assert_null(le_history(&le, 2));
}

static void test_history_limit(void **state)
{
	char s[16];
	int i;

	(void)state;
	for (i = 0; i < LE_HISTORY + 5; i++) {
		snprintf(s, sizeof(s), "cmd%d", i);
		enter(s);
	}
	assert_int_equal(le_history_count(&le), LE_HISTORY);
	assert_string_equal(le_history(&le, 0), "cmd20");
	assert_string_equal(le_history(&le, LE_HISTORY - 1), "cmd5");
	for (i = 0; i < 40; i++)
		feed(UP);
	assert_string_equal(le.buf, "cmd5");
	check_screen();
}

static void test_history_empty(void **state)
{
	(void)state;
	out_reset();
	feed(UP DOWN);
	assert_string_equal(cap.buf, "");
	assert_int_equal(feed("\r"), LE_LINE);
	assert_string_equal(le_line(&le), "");
}

/* ---- over-long lines ---- */

static void test_longest_line_accepted(void **state)
{
	char line[LE_LINE_MAX];

	(void)state;
	memset(line, 'a', sizeof(line));
	assert_int_equal(feed_n(line, sizeof(line)), LE_NONE);
	check_screen();
	assert_int_equal(feed("\r"), LE_LINE);
	assert_int_equal(strlen(le_line(&le)), LE_LINE_MAX);
}

static void test_too_long_discards_rest(void **state)
{
	char line[3 * LE_LINE_MAX];
	char lines[4][64];

	(void)state;
	memset(line, 'x', sizeof(line));
	assert_int_equal(feed_n(line, LE_LINE_MAX), LE_NONE);
	out_reset();
	assert_int_equal(feed("y"), LE_TOO_LONG);
	assert_string_equal(cap.buf, "\r\nerror: line too long\r\n");
	/* The rest, up to CR/LF, including "commands", is dropped. */
	out_reset();
	assert_int_equal(feed_n(line, sizeof(line)), LE_NONE);
	assert_int_equal(feed("; reboot" UP "\x15\x7f"), LE_NONE);
	assert_string_equal(cap.buf, "");
	assert_int_equal(feed("\r"), LE_NONE);	/* ends the discard */
	assert_string_equal(cap.buf, PROMPT);
	check_screen();
	/* The LF of a CRLF ending the discarded line is not a blank line. */
	assert_int_equal(feed_lines("\nok\r\n", lines, 4), 1);
	assert_string_equal(lines[0], "ok");
	assert_int_equal(le_history_count(&le), 1);
}

static void test_too_long_then_ctrl_c(void **state)
{
	char line[LE_LINE_MAX + 10];

	(void)state;
	memset(line, 'z', sizeof(line));
	assert_int_equal(feed_n(line, sizeof(line)), LE_TOO_LONG);
	assert_int_equal(feed("\x03"), LE_CANCEL);
	check_screen();
	assert_int_equal(feed("ok\n"), LE_LINE);
	assert_string_equal(le_line(&le), "ok");
}

static void test_too_long_mid_line_insert(void **state)
{
	char line[LE_LINE_MAX];

	(void)state;
	memset(line, 'q', sizeof(line));
	feed_n(line, sizeof(line));
	feed(LEFT LEFT);
	assert_int_equal(feed("w"), LE_TOO_LONG);
	assert_int_equal(le.len, 0);
	feed("\nshort\n");
	assert_string_equal(le_line(&le), "short");
}

/* ---- escape sequences ---- */

static void test_truncated_escape_then_enter(void **state)
{
	static const char *const seqs[] = {
		ESC, ESC "[", ESC "[1", ESC "[1;", ESC "[1;5", ESC "O",
		ESC "[?25", ESC "[ ",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(seqs) / sizeof(seqs[0]); i++) {
		feed("ab");
		feed(seqs[i]);
		assert_int_equal(feed("\r"), LE_LINE);	/* Enter not eaten */
		assert_string_equal(le_line(&le), "ab");
		le_prompt(&le);
		feed("cd");
		feed(seqs[i]);
		assert_int_equal(feed("\x03"), LE_CANCEL);
		check_screen();
	}
}

static void test_escape_control_byte_acts(void **state)
{
	(void)state;
	feed("abc" ESC "[\x7f");	/* backspace inside a sequence */
	check_screen();
	feed(ESC "\x15");		/* Ctrl-U right after ESC */
	check_screen();
	assert_int_equal(le.len, 0);
	feed(ESC ESC "[D");		/* ESC restarts a sequence */
	feed("x" ESC "[\x1b[D" "w");
	check_screen();
	assert_int_equal(feed("\r"), LE_LINE);
	assert_string_equal(le_line(&le), "wx");
}

static void test_unknown_sequences_ignored(void **state)
{
	(void)state;
	feed("ab");
	out_reset();
	feed(ESC "[Z" ESC "[5~" ESC "[6~" ESC "[2;5R" ESC "[?1049h"
	     ESC "Ox" ESC "x" ESC "]" ESC "[200~" ESC "[!p" ESC "[1;5C");
	assert_string_equal(cap.buf, "");
	check_screen();
	assert_int_equal(feed("\r"), LE_LINE);
	assert_string_equal(le_line(&le), "ab");
}

static void test_endless_sequence_gives_up(void **state)
{
	char seq[200];

	(void)state;
	seq[0] = 0x1b;
	seq[1] = '[';
	memset(seq + 2, '1', sizeof(seq) - 3);
	seq[sizeof(seq) - 1] = '\0';
	feed(seq);
	assert_int_equal(le.state, LE_ST_NORMAL);
	/* After the bound the rest is ordinary text: the editor answers. */
	check_screen();
	assert_true(le.len > 0 && le.len < sizeof(seq));
	feed("\x15" "ok\r");
	assert_string_equal(le_line(&le), "ok");
	/* Intermediate bytes are bounded the same way. */
	le_prompt(&le);
	memset(seq + 2, ' ', sizeof(seq) - 3);
	feed(seq);
	assert_int_equal(le.state, LE_ST_NORMAL);
	feed("\x15" "ok2\r");
	assert_string_equal(le_line(&le), "ok2");
}

static void test_sequence_at_limit_still_works(void **state)
{
	char seq[LE_ESC_MAX + 3];

	(void)state;
	enter("old");
	/* ESC [ then LE_ESC_MAX - 1 parameter bytes and the final byte. */
	seq[0] = 0x1b;
	seq[1] = '[';
	memset(seq + 2, '0', LE_ESC_MAX - 1);
	seq[LE_ESC_MAX + 1] = 'A';
	seq[LE_ESC_MAX + 2] = '\0';
	feed(seq);
	assert_string_equal(le.buf, "old");
	check_screen();
}

/* ---- fuzz ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

/* Bytes that drive the editor's states, mixed into the random stream. */
static uint8_t interesting(void)
{
	static const uint8_t set[] = {
		0x1b, '[', '[', 'O', 'A', 'B', 'C', 'D', 'H', 'F', '~', '3',
		'1', '4', ';', 0x08, 0x7f, 0x15, 0x01, 0x05, '\t', '\r', '\n',
		0x00, 0x03,
	};

	return set[rnd() % sizeof(set)];
}

/* mode 0: uniform bytes; 1: escape-heavy; 2: long pastes, few line ends */
static uint8_t fuzz_byte(unsigned int mode)
{
	uint32_t r = rnd() % 100;

	if (mode == 0)
		return (uint8_t)rnd();
	if (mode == 2)
		return r < 5 ? (uint8_t)rnd() : (uint8_t)(0x20 + rnd() % 95);
	if (r < 30)
		return (uint8_t)rnd();
	return r < 65 ? interesting() : (uint8_t)(0x20 + rnd() % 95);
}

static unsigned long fuzz_events[LE_TOO_LONG + 1];

static void fuzz_check_event(enum le_event ev)
{
	const char *l;
	size_t i;

	assert_true(ev >= LE_NONE && ev <= LE_TOO_LONG);
	if (ev != LE_LINE)
		return;
	l = le_line(&le);
	assert_true(strlen(l) <= LE_LINE_MAX);
	for (i = 0; l[i]; i++)
		assert_true(l[i] >= 0x20 && l[i] < 0x7f);
	le_prompt(&le);
}

static void fuzz_run(unsigned int mode, unsigned long n)
{
	unsigned long i;
	enum le_event ev;

	memset(fuzz_events, 0, sizeof(fuzz_events));
	for (i = 0; i < n; i++) {
		ev = le_feed(&le, fuzz_byte(mode));
		fuzz_check_event(ev);
		fuzz_events[ev]++;
		if (le.state != LE_ST_DISCARD)
			check_screen();
		out_reset();
	}
}

static void fuzz_then_command(unsigned int mode, char ender)
{
	unsigned int i;

	fuzz_run(mode, 120000);
	assert_true(fuzz_events[LE_LINE] > 0);
	assert_int_equal(term.bad, 0);
	for (i = 0; i < le_history_count(&le); i++)
		assert_true(strlen(le_history(&le, i)) <= LE_LINE_MAX);
	/* One Enter or Ctrl-C gets a clean prompt, whatever came before. */
	if (le_feed(&le, (uint8_t)ender) == LE_LINE)
		le_prompt(&le);
	check_screen();
	assert_int_equal(le.len, 0);
	out_reset();
	assert_int_equal(feed("version\r"), LE_LINE);
	assert_string_equal(le_line(&le), "version");
	assert_string_equal(cap.buf, "version\r\n");
}

static void test_fuzz_random_bytes(void **state)
{
	(void)state;
	rng = 0x0123456789abcdefull;
	fuzz_then_command(0, '\r');
	assert_true(fuzz_events[LE_CANCEL] > 0);
}

static void test_fuzz_escape_heavy(void **state)
{
	(void)state;
	rng = 0xfeedfacecafebeefull;
	fuzz_then_command(1, 0x03);
	assert_true(fuzz_events[LE_CANCEL] > 100);
}

static void test_fuzz_paste_flood(void **state)
{
	(void)state;
	rng = 42;
	fuzz_then_command(2, '\n');
	assert_true(fuzz_events[LE_TOO_LONG] > 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_prompt_and_echo, setup),
		cmocka_unit_test_setup(test_redisplay_after_other_output, setup),
		cmocka_unit_test_setup(test_cr_lf_crlf, setup),
		cmocka_unit_test_setup(test_line_reset_without_prompt, setup),
		cmocka_unit_test_setup(test_ignored_bytes, setup),
		cmocka_unit_test_setup(test_tab_is_space, setup),
		cmocka_unit_test_setup(test_backspace_both_codes, setup),
		cmocka_unit_test_setup(test_backspace_at_start, setup),
		cmocka_unit_test_setup(test_ctrl_u, setup),
		cmocka_unit_test_setup(test_ctrl_u_mid_line, setup),
		cmocka_unit_test_setup(test_ctrl_c, setup),
		cmocka_unit_test_setup(test_left_right_insert, setup),
		cmocka_unit_test_setup(test_backspace_mid_line, setup),
		cmocka_unit_test_setup(test_home_end_delete, setup),
		cmocka_unit_test_setup(test_ss3_arrows, setup),
		cmocka_unit_test_setup(test_history_walk, setup),
		cmocka_unit_test_setup(test_history_recall_and_edit, setup),
		cmocka_unit_test_setup(test_history_skips_blank_and_repeat, setup),
		cmocka_unit_test_setup(test_history_limit, setup),
		cmocka_unit_test_setup(test_history_empty, setup),
		cmocka_unit_test_setup(test_longest_line_accepted, setup),
		cmocka_unit_test_setup(test_too_long_discards_rest, setup),
		cmocka_unit_test_setup(test_too_long_then_ctrl_c, setup),
		cmocka_unit_test_setup(test_too_long_mid_line_insert, setup),
		cmocka_unit_test_setup(test_truncated_escape_then_enter, setup),
		cmocka_unit_test_setup(test_escape_control_byte_acts, setup),
		cmocka_unit_test_setup(test_unknown_sequences_ignored, setup),
		cmocka_unit_test_setup(test_endless_sequence_gives_up, setup),
		cmocka_unit_test_setup(test_sequence_at_limit_still_works, setup),
		cmocka_unit_test_setup(test_fuzz_random_bytes, setup),
		cmocka_unit_test_setup(test_fuzz_escape_heavy, setup),
		cmocka_unit_test_setup(test_fuzz_paste_flood, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
