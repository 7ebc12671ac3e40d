/* SPDX-License-Identifier: BSD-2-Clause */
/* The console's panic banner: see conwatch.h. */
#define _GNU_SOURCE		/* memmem */
#include <stdio.h>
#include <string.h>
#include "hv/conwatch.h"

#define OPEN	"Kernel panic - not syncing: "
#define BANNER	"---[ end " OPEN
#define TAIL	" ]---"

/* Where what follows prefix starts in the line, or NULL. */
static const char *after(const struct conwatch *w, const char *prefix, size_t len)
{
	const char *p = memmem(w->line, w->n, prefix, len);

	return p ? p + len : NULL;
}

/* The line ended: an opening line arms the watch with its reason; the end
 * line with the same reason fires it, its reason (printable, cut) in why. */
static bool line_done(struct conwatch *w, char *why, size_t len)
{
	const char *start = after(w, BANNER, sizeof(BANNER) - 1), *end;
	size_t n;

	if (!start) {
		start = after(w, OPEN, sizeof(OPEN) - 1);
		if (start) {
			n = (size_t)(w->line + w->n - start);
			w->reason_n = (uint8_t)(n < sizeof(w->reason) ? n : sizeof(w->reason));
			memcpy(w->reason, start, w->reason_n);
			w->armed = true;
		}
		return false;
	}
	n = (size_t)(w->line + w->n - start);
	end = memmem(start, n, TAIL, sizeof(TAIL) - 1);
	if (!end || !w->armed)
		return false;
	n = (size_t)(end - start);
	if (w->reason_n ? n < w->reason_n || memcmp(start, w->reason, w->reason_n) : n != 0)
		return false;		/* not the panic that opened */
	if (len) {
		if (n > len - 1)
			n = len - 1;
		for (size_t i = 0; i < n; i++)	/* the log and the shell get text */
			why[i] = start[i] >= 0x20 && start[i] < 0x7f ? start[i] : '?';
		why[n] = 0;
	}
	return true;
}

bool conwatch_byte(struct conwatch *w, uint8_t byte, uint64_t now_ns, char *why, size_t len)
{
	bool hit = false;

	if (byte != '\r' && byte != '\n' && byte != ' ')
		w->ended = false;	/* it speaks on: no panic, or not yet */
	if (byte == '\n') {
		hit = !w->skip && line_done(w, w->why, sizeof(w->why));
		w->n = 0;
		w->skip = false;
		if (hit) {
			w->ended = true;
			w->ended_ns = now_ns;
			if (len)
				snprintf(why, len, "%s", w->why);
		}
		return hit;
	}
	if (byte == '\r' || w->skip)
		return false;
	if (w->n == sizeof(w->line)) {
		w->skip = true;
		return false;
	}
	w->line[w->n++] = (char)byte;
	return false;
}

bool conwatch_due(const struct conwatch *w, uint64_t now_ns, char *why, size_t len)
{
	if (!w->ended || now_ns - w->ended_ns < CONWATCH_QUIET_NS)
		return false;
	if (len)
		snprintf(why, len, "%s", w->why);
	return true;
}
