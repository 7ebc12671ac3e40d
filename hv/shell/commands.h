/* SPDX-License-Identifier: BSD-2-Clause */
/* The shell's command table; each subsystem adds its commands here. */
#ifndef FERRY_HV_SHELL_COMMANDS_H
#define FERRY_HV_SHELL_COMMANDS_H

#include <stddef.h>
#include "hv/shell/shell.h"

extern const struct shell_cmd shell_commands[];
extern const size_t shell_commands_count;

#endif
