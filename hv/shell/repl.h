/* SPDX-License-Identifier: BSD-2-Clause */
/* The interactive shell on the console and the boot script. */
#ifndef FERRY_HV_SHELL_REPL_H
#define FERRY_HV_SHELL_REPL_H

void repl_run_boot_script(void);
/* Work the shell CPU does while idle or during a long command (polling). */
void repl_set_background(void (*fn)(void));
__attribute__((noreturn)) void repl_loop(void);

#endif
