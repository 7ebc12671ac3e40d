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
/* One line for `info NAME`: the leaves of each size that map its RAM in
 * EPT/NPT and the table pages, "map: 14 x 2M, 1024 x 4K, 6 tables"
 * (a session splits the 2 MiB pages, its stop merges them back). */
void dirtylog_show_map(struct vm *vm);

#endif
