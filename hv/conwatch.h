/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Watching a guest's serial console for Linux's panic banner.
 *
 * Debian's kernel reports a panic through pvpanic only once the
 * pvpanic_pci module is loaded (hv/vdev/pvpanic.h); a panic before that
 * (no root file system, an initramfs that fails) leaves the guest spinning
 * with interrupts off for ever, unseen.  A Linux panic that does not reboot
 * (panic_timeout 0, Debian's default) opens and ends its report on the
 * console with
 *
 *     Kernel panic - not syncing: REASON
 *     ...
 *     ---[ end Kernel panic - not syncing: REASON ]---
 *
 * so ferry reads the guest's console bytes as they go out and, when the end
 * line completes with REASON after an opening line with the same reason,
 * stops the guest once its console has then stayed silent for
 * CONWATCH_QUIET_NS (a panicked kernel says nothing more; `cat` of an old
 * report, `journalctl -k -b -1` or a pasted bug report is followed by more
 * output, a prompt at least, and stops nothing).  (With panic=N Linux
 * reboots instead, before the end line.)  A reset of the guest forgets
 * what was seen.  Nothing outside the guest can write its console.  The
 * watch is not guest state: a migration does not carry it.
 */
#ifndef FERRY_HV_CONWATCH_H
#define FERRY_HV_CONWATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONWATCH_LINE	256	/* longer lines are not the banner: skipped */
#define CONWATCH_REASON	64	/* the opening line's reason, compared so far */
#define CONWATCH_WHY	112	/* the reason as told, cut */
#define CONWATCH_QUIET_NS 2000000000ull	/* silence after the end line: a panic */

struct conwatch {
	char line[CONWATCH_LINE];
	uint16_t n;
	bool skip;			/* the line overflowed: ignore it to its end */
	char reason[CONWATCH_REASON];	/* the last opening line's reason */
	uint8_t reason_n;		/* its length, up to CONWATCH_REASON */
	bool armed;			/* an opening line was seen */
	bool ended;			/* the end line came, and nothing since */
	uint64_t ended_ns;		/* when */
	char why[CONWATCH_WHY];		/* its reason, printable */
};

/* One byte the guest sent to its console at now_ns: true when it completes
 * the banner line (the panic's reason, printable, cut to len, in why);
 * any other byte but CR, LF and space after it cancels what it said. */
bool conwatch_byte(struct conwatch *w, uint8_t byte, uint64_t now_ns, char *why, size_t len);
/* Whether the end line came and the console has been silent since for
 * CONWATCH_QUIET_NS at now_ns: the guest panicked; its reason in why. */
bool conwatch_due(const struct conwatch *w, uint64_t now_ns, char *why, size_t len);

#endif
