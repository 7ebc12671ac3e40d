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
 * so ferry reads the guest's console bytes as they go out and stops the
 * guest when the end line completes, with REASON, if the opening line with
 * the same reason came first: the whole report (the stack, the registers)
 * is on the console by then.  (With panic=N Linux reboots instead, before
 * the end line.)  Something in the guest that prints both lines stops its
 * own guest; nothing outside can write its console.  The watch is not
 * guest state: a migration does not carry it.
 */
#ifndef FERRY_HV_CONWATCH_H
#define FERRY_HV_CONWATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONWATCH_LINE	256	/* longer lines are not the banner: skipped */
#define CONWATCH_REASON	64	/* the opening line's reason, compared so far */

struct conwatch {
	char line[CONWATCH_LINE];
	uint16_t n;
	bool skip;			/* the line overflowed: ignore it to its end */
	char reason[CONWATCH_REASON];	/* the last opening line's reason */
	uint8_t reason_n;		/* its length, up to CONWATCH_REASON */
	bool armed;			/* an opening line was seen */
};

/* One byte the guest sent to its console: true when it completes the
 * banner line, with the panic's reason (printable, cut to len) in why. */
bool conwatch_byte(struct conwatch *w, uint8_t byte, char *why, size_t len);

#endif
