/* SPDX-License-Identifier: BSD-2-Clause */
/* Guest commands (hv/shell/cmd_vm.c), listed in the table in commands.c. */
#ifndef FERRY_HV_SHELL_CMD_VM_H
#define FERRY_HV_SHELL_CMD_VM_H

#include <stdbool.h>

int cmd_create(int argc, char **argv);
int cmd_start(int argc, char **argv);
int cmd_pause(int argc, char **argv);
int cmd_resume(int argc, char **argv);
int cmd_destroy(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_top(int argc, char **argv);	/* cmd_top.c */
int cmd_sched(int argc, char **argv);	/* cmd_sched.c */
int cmd_pin(int argc, char **argv);
int cmd_console(int argc, char **argv);
struct vm;
/* A migration owns the guest: the shell keeps its hands off (true, and
 * `error: CMD: 'NAME' is migrating ...` said). */
bool shell_vm_migrating(const char *cmd, const struct vm *vm);
/* `debug bad-entry NAME`, dispatched by `debug` in commands.c. */
int cmd_debug_bad_entry(int argc, char **argv);

#endif
