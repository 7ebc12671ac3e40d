/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ferry's own network interface: a NIC (drivers/nic.h: e1000, e1000e or
 * virtio-net, chosen by the nic= option) and the TCP/IP stack on it.
 * All stack calls go through netif_lock()/netif_unlock(); netif_poll()
 * moves frames and runs timers and is called from the shell CPU's loop
 * and from long-running network commands.
 */
#ifndef FERRY_HV_NETIF_H
#define FERRY_HV_NETIF_H

#include <stdbool.h>
#include "drivers/nic.h"
#include "hv/net/net.h"
#include "hv/net/switch.h"

struct netif {
	bool present;
	bool irq;			/* the NIC's interrupt wakes irq_cpu */
	bool irq_storm;			/* it was switched off: not ours, too often */
	bool storm_told;		/* ... and netif_poll logged it */
	uint8_t irq_line;
	uint32_t irq_cpu;		/* APIC id it is routed to (the shell CPU) */
	uint32_t spurious_run;		/* interrupts in a row with no cause of ours */
	uint64_t irqs;			/* interrupts with a cause of ours */
	struct nic *nic;		/* the card in use (NULL: none) */
	struct nic_found found[NIC_MAX_FOUND];	/* every card a driver knows */
	unsigned int nr_found, in_use;	/* found[in_use] is nic */
	struct nic_sel sel;		/* the nic= option */
	int probe_err;			/* why there is no nic */
	struct netstack stack;
	/* The switch (hv/net/switch.h) between the stack (local port), the
	 * NIC (uplink) and the guests' NICs (hv/gnet.c): every frame of the
	 * stack and of the NIC passes it, except TSO frames, which go
	 * straight to the NIC.  Under the lock. */
	struct sw sw;
	int local_port, uplink_port;	/* -1: none (no NIC) */
	bool promisc;			/* the NIC receives every MAC */
	uint64_t uplink_busy;		/* frames for the wire dropped: ring full */
	unsigned int tx_reserve;	/* transmit descriptors guests leave to ferry */
	uint64_t tx_done_seen, wire_alive_us;	/* netif_wire_stuck */
	bool wire_full;			/* ... the last look found no room */
};

extern struct netif host_if;

/* Boot: find the NICs, start the one nic_opt ("pci:BB:DD.F", a MAC, or
 * NULL/"" for the first) chooses and the stack on it. */
int netif_init(const char *nic_opt);
void netif_poll(void);			/* frames in and out, timers (takes the lock) */
void netif_lock(void);
void netif_unlock(void);
uint64_t netif_now_us(void);
/*
 * Wait a little for the network: a loop that polls and finds nothing to
 * do calls this.  On the shell CPU, with the NIC's interrupt working and no
 * vCPU queued here, no background task busy and no guest frame waiting for
 * the wire (gnet_tx_backlog), the CPU sleeps until a
 * frame comes or goes (or the timer ticks), so that it leaves the machine
 * to others; elsewhere it only relaxes.  Inside a background task
 * (arch/x86/task.h) it yields to the main context, which sleeps for all.
 */
void netif_wait(void);
/* Sleep until any interrupt, the NIC's included (the shell's idle prompt). */
void netif_idle(void);
/*
 * A frame into the switch from port (under the lock); a frame it hands to
 * the local port goes into the stack (with the NIC's rx flags) after
 * sw_input returns.  sw_input's result.  With NETIF_CSUM_PARTIAL the
 * frame, IPv4 TCP with a 20-byte IP header, carries only the
 * pseudo-header sum in its TCP checksum: the NIC completes it (tx_csum),
 * or whoever takes the frame does in software.
 */
#define NETIF_CSUM_PARTIAL	(1u << 8)
int netif_switch_input(int port, const void *frame, size_t len, unsigned flags);
/*
 * The segments seg[0..n) of one TCP super-frame from a guest's port, as
 * hv/net/gso.c cut them (hlen bytes of headers each, mss of payload but
 * the last, partial checksums): when the switch would send the first to
 * the wire and the NIC has TSO, they go as TSO frames of up to
 * NIC_TSO_MAX bytes (so a NIC behind which Linux's GSO runs, as QEMU's
 * virtio-net and e1000e on a tap, hands on one frame, not dozens).  How
 * many went (under the lock); the caller switches the rest one by one.
 */
struct netif_seg {
	const uint8_t *f;
	size_t len;
};
unsigned int netif_switch_tso(int port, const struct netif_seg *seg, unsigned int n,
			      uint32_t hlen, uint32_t mss);
/* During netif_switch_input: does the frame being switched have
 * NETIF_CSUM_PARTIAL?  (For the switch's out() callbacks.) */
bool netif_csum_partial(void);
/* During netif_switch_input: the NET_RX_* flags of the frame being
 * switched (checksums the NIC verified). */
unsigned netif_rx_flags(void);
/* After netif_switch_input: did the NIC refuse the frame it was handed
 * (its ring full: counted in uplink_busy)?  false when none went to it. */
bool netif_uplink_dropped(void);
/*
 * Under the lock, for a guest's frame from port: would the switch send it
 * to the wire (unicast there, or broadcast/multicast)?  And does the NIC's
 * transmit ring have room for a frame of that many bytes beyond ferry's
 * own reserve (a quarter of the ring, a TSO frame at least)?  Guests'
 * frames wait for that room (hv/gnet.c), so ferry's own (the migration
 * channel, the shell's network) never find the ring full because of them.
 */
bool netif_for_wire(int port, const uint8_t *frame, size_t len);
bool netif_wire_room(size_t bytes);
/* Under the lock: has the NIC given back no transmit descriptor, and had
 * no room for a guest's frame, for NETIF_WIRE_STUCK_MS (its link down, or
 * wedged)?  Then guests' frames that wait for it are dropped. */
#define NETIF_WIRE_STUCK_MS	250
bool netif_wire_stuck(void);
/* Hand the frames queued for the wire to the NIC (under the lock). */
void netif_uplink_kick(void);
/* This host's own MAC (its NIC's), for what must differ between hosts on
 * one LAN: false when ferry has no NIC. */
bool netif_mac(uint8_t mac[6]);
/* Configure from text ("10.0.0.2/24", "10.0.0.1" or NULL); error message in err. */
int netif_configure(uint32_t ip, unsigned int len, uint32_t gw, char *err, size_t errlen);

#endif
