/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Guests' NICs on ferry's switch (hv/net/switch.h, run by hv/netif.c):
 * one switch port per guest with `nic=on`, and two frame queues that keep
 * the guest's device lock (vm->dev_lock) and the network lock apart.
 *
 *   guest -> switch:  the NIC's tx callback (under dev_lock) copies the
 *	frame into the port's tx queue; after the exit, with dev_lock
 *	dropped, gnet_flush() puts it through the switch under the network
 *	lock (to the wire, the stack, or other guests' rx queues).
 *   switch -> guest:  the port's out() copies the frame into its rx queue
 *	(under the network lock); gnet_deliver(), with neither lock held,
 *	hands it to the guest's NIC under its dev_lock (vm_nic_rx).  It runs
 *	after netif_poll (frames from the wire) and after gnet_flush (frames
 *	from a guest), so never inside a guest's own tx callback.
 *
 * Locks: dev_lock and the network lock are never held together; the
 * queues are single-producer single-consumer rings (each side under its
 * own lock).  A full rx queue drops the frame (counted); a full tx queue
 * stops the guest's NIC, and frames for the wire wait in it while the
 * NIC's ring is full (gnet_tx_round).  Frames for
 * a guest that is not running wait in its rx queue (arriving by
 * migration after COMMIT, its NIC's rings are not in its memory yet; paused, a
 * migration may be taking its last copy of RAM and devices), and so do
 * frames for a NIC whose driver has posted no buffer for them yet: they
 * go in when it posts some (gnet_rx_posted).
 *
 * Management: a guest port reaches ferry's own stack only with SW_F_MGMT,
 * which `net mgmt NAME on` sets (off at creation; not migrated).
 *
 * After a migration, gnet_arrived() announces the guest's MAC with RARP
 * frames from its port, at the switch's growing intervals
 * (sw_announce_delay_ms), before the guest runs.
 */
#ifndef FERRY_HV_GNET_H
#define FERRY_HV_GNET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "hv/net/switch.h"

struct vm;
struct snap;
struct gnet_carry;
struct gso_req;

#define GNET_QLEN	256		/* frames per queue, each way */
/* Broadcast and multicast may fill a guest's rx queue this far, no more:
 * a guest (or the LAN) flooding cannot crowd out another's unicast. */
#define GNET_FLOOD_QMAX	(GNET_QLEN / 2)
#define GNET_CARRY_BYTES 32768u	/* of frames at most in a device state */

struct gnet_stats {
	struct sw_port_stats sw;	/* in = from the guest, out = to it */
	uint64_t tx_qfull;		/* from the guest: its tx queue was full (the NIC waited) */
	uint64_t tx_waits;		/* from the guest: its frames waited for the wire */
	uint64_t tx_wire_drops;		/* ... and were dropped: it took nothing for a while */
	uint64_t rx_qfull;		/* for the guest: its rx queue was full */
	uint64_t rx_flood_drop;		/* broadcast/multicast for it: its queue half full */
	uint64_t rx_nic_drop;		/* its NIC dropped it (driver off, buffers too small) */
	uint64_t rx_waited;		/* came while it was paused or arriving */
	uint64_t rx_carried;		/* came with it from a migration's source */
	uint64_t announces;		/* RARP frames the wire took for it */
	bool mgmt;			/* SW_F_MGMT */
};

/* A port for vm's MAC: 0, -EEXIST (the MAC is taken), -ENOSPC, -ENOMEM.
 * An incoming guest's (VM_INCOMING) is dormant until gnet_arrived: the
 * guest runs at the source meanwhile, so its MAC is on the wire. */
int gnet_attach(struct vm *vm);
void gnet_detach(struct vm *vm);		/* no port: nothing */
/* Does a port (a guest's or ferry's own) have this MAC? */
bool gnet_mac_taken(const uint8_t mac[6]);

/* Under vm->dev_lock: a frame the guest's NIC sent, with the offloads it
 * asks for (hv/net/gso.h), finished here: segments into the port's tx
 * queue.  0; -EAGAIN when the queue has no room for all its segments yet
 * (the NIC waits: gnet_flush empties the queue), or, for a frame of more
 * segments than the queue holds, until its last round is queued (the NIC
 * offers it again, and only the rest goes); -EINVAL for a frame whose
 * offload cannot be done (refused whole). */
int gnet_guest_tx(struct vm *vm, const uint8_t *frame, size_t len, const struct gso_req *r);
/* Without dev_lock, after an exit that may have sent frames: through the
 * switch.  False when some wait in the queue for room on the wire (see
 * gnet_tx_round); the NIC then stays stopped if it was. */
bool gnet_flush(struct vm *vm);
/*
 * Under the network lock, on the shell CPU (netif_poll): guests' frames
 * that wait for the wire go, a few from each waiting port in turn, as
 * long as the NIC has room beyond ferry's own reserve (netif_wire_room).
 * A guest that floods the wire so gets its share of it, not more: the
 * others' and ferry's own frames (a migration's) still go, and its frames
 * wait in its queue and its driver's ring instead of being dropped.  The
 * ports it took from have their NICs woken in gnet_deliver.
 */
void gnet_tx_round(void);
/* A migration's source, about to send COMMIT (no lock held): vm's frames
 * that still wait for the wire here are dropped, counted; the number.
 * After COMMIT the guest may run at the destination, and a frame from
 * here would teach the LAN's switches its old port again. */
unsigned int gnet_tx_discard(struct vm *vm);
/* Do guests' frames wait for the wire?  (The shell CPU keeps polling.) */
bool gnet_tx_backlog(void);
/* Without locks: frames queued for guests into their NICs. */
void gnet_deliver(void);
/* Under the network lock (netif_poll): announce rounds that are due. */
void gnet_timers(uint64_t now_us);
/* An incoming guest is about to run here: its port wakes, its MAC is
 * announced. */
void gnet_arrived(struct vm *vm);
/* Without locks: vm runs (again); the frames that waited go in, and its
 * NIC's transmit queue is looked at (chains may wait that no doorbell
 * will announce: a stall, or a migration's restore). */
void gnet_wake(struct vm *vm);
/* The guest's driver posted receive buffers: the frames that waited for
 * them go in (no lock held). */
void gnet_rx_posted(struct vm *vm);

/* Frames in flight, with the device state of a migrating guest (without
 * dev_lock).  Saving: the frames that wait for paused vm, oldest first,
 * GNET_CARRY_BYTES at most.  Restoring: *in gets them (vm unused), for
 * gnet_rx_carry once the whole state is in.  0 or a negative errno. */
int gnet_rx_snapshot(struct vm *vm, struct snap *s, struct gnet_carry **in);
/* vm gets them before any frame still queued for it (c NULL: none; no
 * port: dropped). */
void gnet_rx_carry(struct vm *vm, struct gnet_carry *c);
/* The frames that came for paused vm after gnet_rx_snapshot saved its
 * device state, in the same format, at most room of them and
 * GNET_CARRY_BYTES (a migration's last word before COMMIT, MIG_FRAMES).
 * Restoring: *in gets them, as gnet_rx_snapshot.  0 or a negative errno. */
int gnet_rx_late_snapshot(struct vm *vm, struct snap *s, uint32_t room, struct gnet_carry **in);
/* vm gets them after what gnet_rx_carry gave it, GNET_QLEN in all (the
 * rest is dropped and counted; c NULL: none). */
void gnet_rx_carry_more(struct vm *vm, struct gnet_carry *c);

/* 0, or -ENOENT when vm has no port. */
int gnet_set_mgmt(struct vm *vm, bool on);
int gnet_stats(struct vm *vm, struct gnet_stats *out);
/* Each guest port, under the network lock: fn(vm, stats, arg). */
void gnet_for_each(void (*fn)(struct vm *vm, const uint8_t mac[6],
			      const struct gnet_stats *st, void *arg), void *arg);

#endif
