/* SPDX-License-Identifier: BSD-2-Clause */
/* Network commands (hv/shell/cmd_net.c), listed in commands.c. */
#ifndef FERRY_HV_SHELL_CMD_NET_H
#define FERRY_HV_SHELL_CMD_NET_H

int cmd_net(int argc, char **argv);
int cmd_ping(int argc, char **argv);
int cmd_arp(int argc, char **argv);
int cmd_netstat(int argc, char **argv);
int cmd_nettest(int argc, char **argv);

struct vm;
/* `info NAME`: the guest's port on ferry's switch (nothing without a NIC). */
void net_show_guest(struct vm *vm);

#endif
