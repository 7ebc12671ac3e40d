/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Watching a guest's serial console for Linux's panic banner.
 *
 * Debian's kernel reports a panic through pvpanic only once the
 * pvpanic_pci module is loaded (hv/vdev/pvpanic.h); a panic before that
 * (no root file system, an initramfs that fails) leaves the guest spinning
 * with interrupts off for ever, unseen.  Every Linux panic ends its report
 * on the console with one line,
 *
 *     ---[ end Kernel panic - not syncing: REASON ]---
 *
 * so ferry reads the guest's console bytes as they go out and stops the
 * guest when that line is complete, with REASON: the whole report (the
 * stack, the registers) is on the console by then.  A guest that prints the
 * line itself stops itself; nothing else can write its console.  The
 * partial line is not guest state: a migration does not carry it.
 */
#ifndef FERRY_HV_CONWATCH_H
#define FERRY_HV_CONWATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONWATCH_LINE	256	/* longer lines are not the banner: skipped */

struct conwatch {
	char line[CONWATCH_LINE];
	uint16_t n;
	bool skip;			/* the line overflowed: ignore it to its end */
};

/* One byte the guest sent to its console: true when it completes the
 * banner line, with the panic's reason (printable, cut to len) in why. */
bool conwatch_byte(struct conwatch *w, uint8_t byte, char *why, size_t len);

#endif
