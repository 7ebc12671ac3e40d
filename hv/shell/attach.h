/* SPDX-License-Identifier: BSD-2-Clause */
/* `console NAME`: the operator's terminal joined to a guest's serial port. */
#ifndef FERRY_HV_SHELL_ATTACH_H
#define FERRY_HV_SHELL_ATTACH_H

#define ATTACH_ESCAPE		0x1d	/* Ctrl-] leaves */
#define ATTACH_KEYS		256	/* keys typed ahead of the guest */
#define ATTACH_STALL_US		500000	/* a guest that takes none of them for
					 * this long is not reading: drop them */

struct vm;

/*
 * Show the guest's output and send it the keys typed until Ctrl-] or until
 * the guest leaves this host.  Keys wait in a queue while the guest's
 * receive FIFO is full (a paste into a busy guest arrives whole); a guest
 * that takes none for ATTACH_STALL_US (paused, stopped, in loopback)
 * loses what was typed, with one note saying so.  Ctrl-] always works, and
 * the shell CPU's background work (network, migrations) goes on.
 */
int console_attach(struct vm *vm);

#endif
