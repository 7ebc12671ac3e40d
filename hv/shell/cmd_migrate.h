/* SPDX-License-Identifier: BSD-2-Clause */
/* Migration commands (hv/shell/cmd_migrate.c), listed in commands.c. */
#ifndef FERRY_HV_SHELL_CMD_MIGRATE_H
#define FERRY_HV_SHELL_CMD_MIGRATE_H

int cmd_migrate(int argc, char **argv);
int cmd_migrations(int argc, char **argv);
/* `debug migrate ...` (argv[0] is "migrate"). */
int cmd_debug_migrate(int argc, char **argv);

#endif
