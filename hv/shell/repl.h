/* SPDX-License-Identifier: BSD-2-Clause */
/* The interactive shell on the console and the boot script. */
#ifndef FERRY_HV_SHELL_REPL_H
#define FERRY_HV_SHELL_REPL_H

#include <stdbool.h>

void repl_run_boot_script(void);
/* Host work the shell CPU does while it waits; fn says whether it has
 * more to do at once (the CPU then does not sleep), waits for the network
 * (the CPU sleeps until a frame comes, netif_wait), or has nothing. */
enum repl_work { REPL_IDLE, REPL_WAIT_NET, REPL_BUSY };
void repl_set_background(enum repl_work (*fn)(void));
/* True while a command or the boot script runs. */
bool repl_in_command(void);
/* Run it once; sleep until the next interrupt unless it is busy. */
void repl_idle(void);
/* Run it once and return: for a loop that has work of its own. */
void repl_poll(void);
__attribute__((noreturn)) void repl_loop(void);

#endif
