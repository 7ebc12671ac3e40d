/* SPDX-License-Identifier: BSD-2-Clause */
/* The console's panic banner: see conwatch.h. */
#define _GNU_SOURCE		/* memmem */
#include <string.h>
#include "hv/conwatch.h"

#define BANNER	"---[ end Kernel panic - not syncing: "
#define TAIL	" ]---"

/* The line ended: the reason between BANNER and TAIL, if it is the banner. */
static bool banner(const struct conwatch *w, char *why, size_t len)
{
	const char *start, *end;
	size_t n;

	start = memmem(w->line, w->n, BANNER, sizeof(BANNER) - 1);
	if (!start)
		return false;
	start += sizeof(BANNER) - 1;
	n = (size_t)(w->line + w->n - start);
	end = memmem(start, n, TAIL, sizeof(TAIL) - 1);
	if (!end)
		return false;
	n = (size_t)(end - start);
	if (len) {
		if (n > len - 1)
			n = len - 1;
		for (size_t i = 0; i < n; i++)	/* the log and the shell get text */
			why[i] = start[i] >= 0x20 && start[i] < 0x7f ? start[i] : '?';
		why[n] = 0;
	}
	return true;
}

bool conwatch_byte(struct conwatch *w, uint8_t byte, char *why, size_t len)
{
	bool hit = false;

	if (byte == '\n') {
		hit = !w->skip && banner(w, why, len);
		w->n = 0;
		w->skip = false;
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
