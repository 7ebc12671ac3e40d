/* SPDX-License-Identifier: BSD-2-Clause */
/* The dirty-log method: `debug dirtylog` and the lines of `cpus` and `info`
 * (hv/shell/cmd_dirtylog.c). */
#ifndef FERRY_HV_SHELL_CMD_DIRTYLOG_H
#define FERRY_HV_SHELL_CMD_DIRTYLOG_H

struct vm;

/* `debug dirtylog [wp | pml [ENTRIES] | NAME]` (argv[0] is "dirtylog"). */
int cmd_debug_dirtylog(int argc, char **argv);
/* One line for `cpus`: "dirty log: pml (available: pml)". */
void dirtylog_show_method(void);
/* One line for `info NAME`: the method and this VM's logging counters. */
void dirtylog_show_vm(struct vm *vm);

#endif
