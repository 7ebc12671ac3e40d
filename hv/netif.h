/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ferry's own network interface: the e1000 and the TCP/IP stack on it.
 * All stack calls go through netif_lock()/netif_unlock(); netif_poll()
 * moves frames and runs timers and is called from the shell CPU's loop
 * and from long-running network commands.
 */
#ifndef FERRY_HV_NETIF_H
#define FERRY_HV_NETIF_H

#include <stdbool.h>
#include "drivers/e1000.h"
#include "hv/net/net.h"

struct netif {
	bool present;
	struct e1000 nic;
	struct netstack stack;
};

extern struct netif host_if;

int netif_init(void);			/* boot: find the NIC, start the stack */
void netif_poll(void);			/* frames in and out, timers (takes the lock) */
void netif_lock(void);
void netif_unlock(void);
uint64_t netif_now_us(void);
/* Configure from text ("10.0.0.2/24", "10.0.0.1" or NULL); error message in err. */
int netif_configure(const char *addr, const char *gw, char *err, size_t errlen);

#endif
