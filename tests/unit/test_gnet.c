/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Guests' NICs on ferry's switch (hv/gnet.c) over a stand-in for
 * hv/netif.c (the switch with an uplink and a local port that record what
 * they get) and for vm_nic_rx (records what a guest's NIC is handed):
 * frames queued each way and delivered only by gnet_flush/gnet_deliver,
 * ports and MACs, anti-spoofing counted per guest, full queues, guests
 * without buffers or still arriving, the announce rounds, and one
 * connection's segments joined for a guest that takes super-frames.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>
#include <sanitizer/asan_interface.h>
#include "hv/gnet.h"
#include "hv/lib/log.h"
#include "hv/net/cksum.h"
#include "hv/net/gso.h"
#include "hv/netif.h"
#include "hv/vdev/snap.h"
#include "hv/vm.h"
#include "hv/vm_devices.h"

static const uint8_t HOST[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
static const uint8_t MA[6] = { 0x52, 0x54, 0x00, 0xaa, 0, 1 };
static const uint8_t MB[6] = { 0x52, 0x54, 0x00, 0xaa, 0, 2 };
static const uint8_t PEER[6] = { 0x02, 0, 0, 0, 0, 0x77 };

/* ---- the stand-ins ------------------------------------------------------ */

struct netif host_if;
static uint64_t now_us;
static int locked;			/* the network lock, as a count */

struct sink {
	unsigned int frames;
	size_t len;
	uint8_t last[1600];
};
static struct sink wire, local;

void netif_lock(void) { assert_int_equal(locked++, 0); }
void netif_unlock(void) { assert_int_equal(--locked, 0); }
uint64_t netif_now_us(void) { return now_us; }
void netif_uplink_kick(void) { assert_int_equal(locked, 1); }

/* A guest's frames out, as its arrival log counts them (hv/vm_arrival.c). */
static const struct vm *tx_noted;
static int tx_notes;

void vm_arrival_note(struct vm *vm, enum vm_arr_step step)
{
	if (step == VM_ARR_TX) {
		tx_noted = vm;
		tx_notes++;
	}
}

static bool partial;			/* as netif.c: the frame being switched */
static unsigned rx_flags_now;

unsigned netif_rx_flags(void)
{
	return rx_flags_now;
}
static unsigned int partial_frames;	/* switched with NETIF_CSUM_PARTIAL */

bool netif_csum_partial(void)
{
	return partial;
}

static bool wire_full;			/* the NIC refuses what the switch hands it */

bool netif_uplink_dropped(void)
{
	return wire_full;
}

int netif_switch_input(int port, const void *frame, size_t len, unsigned flags)
{
	int n;

	assert_int_equal(locked, 1);
	partial = flags & NETIF_CSUM_PARTIAL;
	partial_frames += partial;
	rx_flags_now = flags & (NET_RX_IP_CSUM_OK | NET_RX_TCP_CSUM_OK);
	n = sw_input(&host_if.sw, port, frame, len);
	partial = false;
	rx_flags_now = 0;
	return n;
}

/* A NIC with TSO behind the stand-in (tso_nic): it takes a super-frame's
 * segments bound for the wire, tso_take of them at most per call, and
 * records them; netif.c's own checks are its integration tests'. */
static bool tso_nic;
static unsigned int tso_take, tso_calls, tso_segs[4];
static uint32_t tso_hlen, tso_mss;
static uint8_t tso_flags;		/* the TCP flags of a TSO frame's first segment */
static size_t tso_bytes;
static uint8_t tso_payload[GSO_FRAME_MAX];

unsigned int netif_switch_tso(int port, const struct netif_seg *seg, unsigned int n,
			      uint32_t hlen, uint32_t mss)
{
	unsigned int k = n < tso_take ? n : tso_take;

	assert_int_equal(locked, 1);
	assert_true(n >= 2 && n <= NIC_TSO_IOV_MAX);
	if (!tso_nic ||
	    sw_unicast_port(&host_if.sw, port, seg[0].f, seg[0].len) != host_if.uplink_port)
		return 0;
	for (unsigned int i = 0; i < k; i++) {
		assert_memory_equal(seg[i].f, seg[0].f, 12);	/* one flow's */
		assert_true(seg[i].len > hlen && tso_bytes + seg[i].len - hlen <= sizeof(tso_payload));
		memcpy(tso_payload + tso_bytes, seg[i].f + hlen, seg[i].len - hlen);
		tso_bytes += seg[i].len - hlen;
	}
	if (tso_calls < 4)
		tso_segs[tso_calls] = k;
	tso_calls++;
	tso_hlen = hlen;
	tso_mss = mss;
	tso_flags = seg[0].f[47];
	return k;
}

static char logged[256];		/* the last line logged */

void log_printf(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	(void)level;
	va_start(ap, fmt);
	vsnprintf(logged, sizeof(logged), fmt, ap);
	va_end(ap);
}

/* The NIC's room for guests' frames beyond ferry's reserve
 * (netif_wire_room): wire_room frames more, each frame the wire takes
 * counted down; ~0u: no end. */
static unsigned int wire_room;

bool netif_for_wire(int port, const uint8_t *f, size_t len)
{
	assert_int_equal(locked, 1);
	return (f[0] & 1) || sw_unicast_port(&host_if.sw, port, f, len) == host_if.uplink_port;
}

static size_t room_asked;		/* the last netif_wire_room's bytes */

bool netif_wire_room(size_t bytes)
{
	assert_int_equal(locked, 1);
	assert_true(bytes > 0);
	room_asked = bytes;
	return wire_room > 0;
}

static bool wire_stuck;			/* the NIC has taken nothing for a while */

bool netif_wire_stuck(void)
{
	assert_int_equal(locked, 1);
	return wire_stuck;
}

static struct sink wire_a, wire_b;	/* the wire's frames, by source */

static void sink_out(void *ctx, const uint8_t *f, size_t len)
{
	struct sink *k = ctx;

	if (k == &wire) {
		if (wire_room != ~0u) {
			assert_true(wire_room > 0);	/* none past the room */
			wire_room--;
		}
		if (!memcmp(f + 6, MA, 6))
			wire_a.frames++;
		if (!memcmp(f + 6, MB, 6))
			wire_b.frames++;
	}
	k->frames++;
	k->len = len;
	memcpy(k->last, f, len);
}

/* What each guest's NIC was handed by vm_nic_rx, and what it answers. */
static struct vm va, vb;
static unsigned int rx_a, rx_b;
static int nic_rc;
static struct vm *nic_rc_vm;		/* the guest nic_rc is for; NULL: both */
static uint8_t rx_last[1600];

static unsigned int tx_resumes;
static unsigned int unstalls_a, unstalls_b;

void vm_nic_tx_unstall(struct vm *vm)
{
	assert_int_equal(locked, 0);
	*(vm == &va ? &unstalls_a : &unstalls_b) += 1;
}

void vm_nic_tx_resume(struct vm *vm)
{
	(void)vm;
	assert_int_equal(locked, 0);
	tx_resumes++;
}

static bool rx_valid;			/* the last frame's checksums known good */

int vm_nic_rx(struct vm *vm, const uint8_t *frame, size_t len, bool valid)
{
	assert_int_equal(locked, 0);	/* never under the network lock */
	if (vm->state != VM_RUNNING)
		return -EBUSY;
	if (nic_rc && (!nic_rc_vm || nic_rc_vm == vm))
		return nic_rc;
	*(vm == &va ? &rx_a : &rx_b) += 1;
	memcpy(rx_last, frame, len);
	rx_valid = valid;
	return 0;
}

/* Super-frames (vm_nic_rx_frame with gso_size), for a guest whose driver
 * takes them (gso_on); too_small: its buffers are not big enough. */
static bool gso_on, too_small;
static unsigned int supers, super_segs;
static uint16_t super_mss, super_hlen;
static size_t super_len;
static uint8_t super_last[GSO_FRAME_MAX];

bool vm_nic_rx_gso(struct vm *vm)
{
	(void)vm;
	assert_int_equal(locked, 0);
	return gso_on;
}

int vm_nic_rx_frame(struct vm *vm, const struct vnet_rx_frame *f)
{
	size_t at = 0;

	assert_int_equal(locked, 0);
	assert_true(f->gso_size && gso_on);	/* single frames come by vm_nic_rx */
	if (vm->state != VM_RUNNING)
		return -EBUSY;
	if (too_small)
		return -EMSGSIZE;
	if (nic_rc && (!nic_rc_vm || nic_rc_vm == vm))
		return nic_rc;
	for (unsigned int i = 0; i < f->nr; i++) {
		assert_true(at + f->piece[i].len <= sizeof(super_last));
		memcpy(super_last + at, f->piece[i].p, f->piece[i].len);
		at += f->piece[i].len;
	}
	supers++;
	super_segs += f->segs;
	super_mss = f->gso_size;
	super_hlen = f->hdr_len;
	super_len = at;
	return 0;
}

/* ---- rig ---------------------------------------------------------------- */

static const struct gso_req PLAIN;

static size_t frame(uint8_t *f, const uint8_t *dst, const uint8_t *src, uint8_t tag)
{
	memset(f, tag, 64);
	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	f[12] = 0x08;
	f[13] = 0x00;
	return 64;
}

static int setup(void **st)
{
	(void)st;
	memset(&host_if, 0, sizeof(host_if));
	memset(&wire, 0, sizeof(wire));
	memset(&wire_a, 0, sizeof(wire_a));
	memset(&wire_b, 0, sizeof(wire_b));
	wire_room = ~0u;
	wire_stuck = false;
	unstalls_a = unstalls_b = 0;
	memset(&local, 0, sizeof(local));
	sw_init(&host_if.sw);
	host_if.local_port = sw_add_port(&host_if.sw, SW_LOCAL, HOST, 0, sink_out, &local);
	host_if.uplink_port = sw_add_port(&host_if.sw, SW_UPLINK, HOST, 0, sink_out, &wire);
	memset(&va, 0, sizeof(va));
	memset(&vb, 0, sizeof(vb));
	strcpy(va.name, "a");
	strcpy(vb.name, "b");
	memcpy(va.mac, MA, 6);
	memcpy(vb.mac, MB, 6);
	va.state = vb.state = VM_RUNNING;
	va.nic = vb.nic = true;
	rx_a = rx_b = 0;
	nic_rc = 0;
	nic_rc_vm = NULL;
	gso_on = too_small = false;
	supers = super_segs = 0;
	partial_frames = 0;
	tso_nic = false;
	tso_take = ~0u;
	tso_calls = 0;
	tso_bytes = 0;
	wire_full = false;
	now_us = 1000000;
	assert_int_equal(gnet_attach(&va), 0);
	assert_int_equal(gnet_attach(&vb), 0);
	return 0;
}

static int teardown(void **st)
{
	(void)st;
	gnet_detach(&va);
	gnet_detach(&vb);
	return 0;
}

/* ---- tests -------------------------------------------------------------- */

/* A frame from A for B waits in A's queue until the flush, then in B's
 * until the delivery; the wire and ferry see nothing of it. */
static void test_guest_to_guest_queued(void **st)
{
	uint8_t f[64];
	struct gnet_stats s;

	(void)st;
	tx_notes = 0;
	gnet_guest_tx(&va, f, frame(f, MB, MA, 0x11), &PLAIN);
	assert_int_equal(rx_b, 0);
	gnet_flush(&va);		/* ... which also delivers */
	assert_int_equal(rx_b, 1);
	assert_int_equal(tx_notes, 1);	/* A's first frame out, for its arrival */
	assert_ptr_equal(tx_noted, &va);
	assert_int_equal(rx_a, 0);
	assert_int_equal(rx_last[20], 0x11);
	assert_int_equal(wire.frames + local.frames, 0);
	assert_int_equal(gnet_stats(&va, &s), 0);
	assert_int_equal(s.sw.in_frames, 1);
	assert_int_equal(s.sw.in_bytes, 64);
	assert_int_equal(gnet_stats(&vb, &s), 0);
	assert_int_equal(s.sw.out_frames, 1);
	gnet_flush(&va);		/* nothing queued: nothing again */
	assert_int_equal(rx_b, 1);
	assert_int_equal(tx_notes, 1);
}

/* From the wire: only the guest owning the destination gets it, and only
 * once gnet_deliver runs; a broadcast reaches both guests and ferry. */
static void test_from_the_wire(void **st)
{
	uint8_t f[64];
	static const uint8_t bc[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

	(void)st;
	netif_lock();
	assert_int_equal(netif_switch_input(host_if.uplink_port, f, frame(f, MA, PEER, 1), 0), 1);
	assert_int_equal(netif_switch_input(host_if.uplink_port, f, frame(f, bc, PEER, 2), 0), 3);
	netif_unlock();
	assert_int_equal(rx_a + rx_b, 0);
	gnet_deliver();
	assert_false(rx_valid);		/* the NIC checked nothing */
	netif_lock();
	netif_switch_input(host_if.uplink_port, f, frame(f, MA, PEER, 3), NET_RX_IP_CSUM_OK);
	netif_unlock();
	gnet_deliver();
	assert_false(rx_valid);		/* the IP header only */
	netif_lock();
	netif_switch_input(host_if.uplink_port, f, frame(f, MA, PEER, 4),
			   NET_RX_IP_CSUM_OK | NET_RX_TCP_CSUM_OK);
	netif_unlock();
	gnet_deliver();
	assert_true(rx_valid);
	rx_a -= 2;
	assert_int_equal(rx_a, 2);
	assert_int_equal(rx_b, 1);
	assert_int_equal(local.frames, 1);
}

/* Another source MAC: dropped, counted on the guest's port, not sent. */
static void test_spoof_counted(void **st)
{
	uint8_t f[64];
	struct gnet_stats s;

	(void)st;
	gnet_guest_tx(&va, f, frame(f, PEER, MB, 3), &PLAIN);
	gnet_guest_tx(&va, f, frame(f, PEER, MA, 4), &PLAIN);
	gnet_flush(&va);
	assert_int_equal(wire.frames, 1);
	assert_int_equal(wire.last[20], 4);
	assert_int_equal(gnet_stats(&va, &s), 0);
	assert_int_equal(s.sw.drops[SW_DROP_SPOOF], 1);
	assert_int_equal(s.sw.in_frames, 1);
}

/* The shell CPU's round (netif_poll), under the network lock. */
static void round_(void)
{
	netif_lock();
	gnet_tx_round();
	netif_unlock();
	gnet_deliver();
}

static void queue_to_wire(struct vm *vm, unsigned int n, uint8_t tag)
{
	uint8_t f[64];

	for (unsigned int i = 0; i < n; i++)
		assert_int_equal(gnet_guest_tx(vm, f, frame(f, PEER, vm->mac, tag), &PLAIN), 0);
}

/* A wire with no room beyond ferry's reserve: a guest's frames for it wait
 * in its queue, none dropped, and go in the shell CPU's round once there
 * is room, which wakes the guest's NIC (it may have stopped on the full
 * queue).  A frame for another guest does not wait for the wire. */
static void test_frames_wait_for_the_wire(void **st)
{
	uint8_t f[64];
	struct gnet_stats s;

	(void)st;
	wire_room = 3;
	queue_to_wire(&va, 10, 7);
	assert_false(gnet_flush(&va));
	assert_int_equal(wire.frames, 3);
	assert_true(gnet_tx_backlog());
	assert_int_equal(gnet_stats(&va, &s), 0);
	assert_int_equal(s.tx_waits, 1);
	assert_int_equal(s.sw.in_frames, 3);
	assert_false(gnet_flush(&va));		/* still no room: still one wait */
	assert_int_equal(gnet_stats(&va, &s), 0);
	assert_int_equal(s.tx_waits, 1);

	gnet_guest_tx(&vb, f, frame(f, MA, MB, 8), &PLAIN);	/* B to A: no wire */
	assert_true(gnet_flush(&vb));
	assert_int_equal(rx_a, 1);

	round_();				/* no room yet: nothing moves */
	assert_int_equal(wire.frames, 3);
	assert_int_equal(unstalls_a, 0);
	wire_room = ~0u;
	round_();
	assert_int_equal(wire.frames, 10);
	assert_int_equal(wire.last[20], 7);
	assert_false(gnet_tx_backlog());
	assert_int_equal(unstalls_a, 1);	/* its NIC woken, once */
	assert_int_equal(unstalls_b, 0);
	assert_int_equal(gnet_stats(&va, &s), 0);
	assert_int_equal(s.sw.in_frames, 10);
	assert_int_equal(s.tx_qfull, 0);
	assert_true(gnet_flush(&va));
}

/* Two guests that flood the wire share it: the round serves them in
 * turn, and while one waits the other's own exits leave its frames for
 * the wire to the round rather than go ahead of it. */
static void test_the_wire_is_shared(void **st)
{
	(void)st;
	wire_room = 0;
	queue_to_wire(&va, 200, 1);
	assert_false(gnet_flush(&va));
	wire_room = ~0u;
	queue_to_wire(&vb, 200, 2);
	assert_false(gnet_flush(&vb));		/* A waits: B waits its turn */
	assert_int_equal(wire.frames, 0);
	for (int r = 0; r < 8; r++) {
		wire_room = 20;
		round_();
		assert_int_equal(wire_room, 0);
	}
	assert_int_equal(wire_a.frames, 80);
	assert_int_equal(wire_b.frames, 80);
	wire_room = 48;
	round_();		/* the first its quantum (32), the other the rest */
	assert_int_equal(wire_a.frames + wire_b.frames, 208);
	assert_true(wire_a.frames == 112 ? wire_b.frames == 96 : wire_a.frames == 96);
	wire_room = ~0u;
	round_();
	assert_int_equal(wire_a.frames, 200);
	assert_int_equal(wire_b.frames, 200);
	assert_false(gnet_tx_backlog());
	/* alone again: a guest's frames go from its own exit */
	queue_to_wire(&va, 5, 1);
	assert_true(gnet_flush(&va));
	assert_int_equal(wire_a.frames, 205);
}

/* A paused guest's frames (a migration taking its last copy) still go as
 * the wire frees: they are on their way, not part of its state. */
static void test_paused_guest_frames_still_go(void **st)
{
	(void)st;
	wire_room = 0;
	queue_to_wire(&va, 4, 3);
	assert_false(gnet_flush(&va));
	va.state = VM_PAUSED;
	wire_room = ~0u;
	round_();
	assert_int_equal(wire.frames, 4);
	assert_false(gnet_tx_backlog());
}

/* A wire that takes nothing for a while (netif_wire_stuck: its link
 * down): the frames waiting for it are dropped and counted, the guest's
 * NIC woken, and a frame for another guest behind them goes. */
static void test_a_dead_wire_drops_what_waits(void **st)
{
	uint8_t f[64];
	struct gnet_stats s;

	(void)st;
	wire_room = 0;
	queue_to_wire(&va, 5, 9);
	gnet_guest_tx(&va, f, frame(f, MB, MA, 10), &PLAIN);
	assert_false(gnet_flush(&va));
	assert_int_equal(rx_b, 0);		/* behind them, in order */
	round_();
	assert_int_equal(gnet_stats(&va, &s), 0);
	assert_int_equal(s.tx_wire_drops, 0);	/* a full wire that moves: they wait */
	assert_int_equal(unstalls_a, 0);
	wire_stuck = true;
	round_();
	assert_int_equal(gnet_stats(&va, &s), 0);
	assert_int_equal(s.tx_wire_drops, 5);
	assert_int_equal(unstalls_a, 1);
	round_();				/* B's frame goes in the next round */
	assert_int_equal(rx_b, 1);
	assert_int_equal(rx_last[20], 10);
	assert_false(gnet_tx_backlog());
	assert_int_equal(wire.frames, 0);
}

/* A migration's source about to send COMMIT: the frames that wait for the
 * wire are dropped and counted, one for another guest among them goes,
 * and nothing is left for the round. */
static void test_discard_at_the_hand_over(void **st)
{
	uint8_t f[64];
	struct gnet_stats s;

	(void)st;
	wire_room = 0;
	queue_to_wire(&va, 3, 1);
	gnet_guest_tx(&va, f, frame(f, MB, MA, 2), &PLAIN);
	queue_to_wire(&va, 2, 3);
	assert_false(gnet_flush(&va));
	va.state = VM_PAUSED;
	assert_int_equal(gnet_tx_discard(&va), 5);
	assert_int_equal(rx_b, 1);
	assert_false(gnet_tx_backlog());
	assert_int_equal(gnet_stats(&va, &s), 0);
	assert_int_equal(s.tx_wire_drops, 5);
	wire_room = ~0u;
	round_();
	assert_int_equal(wire.frames, 0);
	assert_int_equal(gnet_tx_discard(&vb), 0);
}

/* Ferry's own address only with management on. */
static void test_management(void **st)
{
	uint8_t f[64];
	struct gnet_stats s;

	(void)st;
	gnet_guest_tx(&va, f, frame(f, HOST, MA, 5), &PLAIN);
	gnet_flush(&va);
	assert_int_equal(local.frames, 0);
	assert_int_equal(gnet_set_mgmt(&va, true), 0);
	gnet_guest_tx(&va, f, frame(f, HOST, MA, 6), &PLAIN);
	gnet_flush(&va);
	assert_int_equal(local.frames, 1);
	assert_int_equal(gnet_stats(&va, &s), 0);
	assert_int_equal(s.sw.drops[SW_DROP_MGMT], 1);
	assert_true(s.mgmt);
	assert_int_equal(gnet_set_mgmt(&(struct vm){ 0 }, true), -ENOENT);
}

/* MACs: one port each; detach frees it for another guest. */
static void test_ports_and_macs(void **st)
{
	struct vm vc = { 0 };

	(void)st;
	memcpy(vc.mac, MA, 6);
	assert_true(gnet_mac_taken(MA));
	assert_true(gnet_mac_taken(HOST));
	assert_false(gnet_mac_taken(PEER));
	assert_int_equal(gnet_attach(&vc), -EEXIST);
	gnet_detach(&va);
	assert_false(gnet_mac_taken(MA));
	assert_int_equal(gnet_attach(&vc), 0);
	gnet_detach(&vc);
	gnet_detach(&vc);		/* twice: nothing */
	assert_int_equal(gnet_attach(&va), 0);
}

/* A guest's own calls without a lock (its vCPU's tx and rx doorbell)
 * find its port without touching another guest's, which that guest's
 * gnet_detach may be freeing meanwhile: guest C's port, before A's on the
 * switch, is poisoned (as freed memory is) while A's calls run.  (The
 * delivery that follows a flush goes through every port, under the lock
 * gnet_detach waits for.) */
static void test_find_touches_no_other_port(void **st)
{
	struct vm vc = { 0 };
	uint8_t f[64];
	void *gc;
	int pc;

	(void)st;
	memcpy(vc.mac, PEER, 6);
	vc.state = VM_RUNNING;
	vc.nic = true;
	gnet_detach(&va);
	assert_int_equal(gnet_attach(&vc), 0);
	assert_int_equal(gnet_attach(&va), 0);
	pc = sw_lookup(&host_if.sw, PEER);
	assert_true(pc >= 0 && pc < sw_lookup(&host_if.sw, MA));
	gc = host_if.sw.port[pc].ctx;			/* its struct gport */
	__asan_poison_memory_region(gc, 64);
	assert_int_equal(gnet_guest_tx(&va, f, frame(f, MB, MA, 1), &PLAIN), 0);
	gnet_rx_posted(&va);
	__asan_unpoison_memory_region(gc, 64);
	gnet_flush(&va);
	assert_int_equal(rx_b, 1);
	gnet_detach(&vc);
}

/* A full tx queue makes the NIC wait (-EAGAIN, counted) and loses
 * nothing: after the flush the frame is taken.  A frame no offload can
 * make into frames the switch passes is refused, and nothing of it goes. */
static void test_tx_queue_full(void **st)
{
	uint8_t f[64];
	struct gnet_stats s;

	(void)st;
	frame(f, PEER, MA, 7);
	for (int i = 0; i < GNET_QLEN; i++)
		assert_int_equal(gnet_guest_tx(&va, f, 64, &PLAIN), 0);
	assert_int_equal(gnet_guest_tx(&va, f, 64, &PLAIN), -EAGAIN);
	assert_int_equal(gnet_guest_tx(&va, f, 64, &PLAIN), -EAGAIN);
	gnet_flush(&va);
	assert_int_equal(wire.frames, GNET_QLEN);
	assert_int_equal(gnet_stats(&va, &s), 0);
	assert_int_equal(s.tx_qfull, 2);
	assert_int_equal(gnet_guest_tx(&va, f, 64, &PLAIN), 0);
	assert_int_equal(gnet_guest_tx(&va, f, 2000, &PLAIN), -EINVAL);	/* too long unsegmented */
	gnet_flush(&va);
	assert_int_equal(wire.frames, GNET_QLEN + 1);
}

/* A TSO super-frame from a guest leaves as MSS-sized frames with correct
 * checksums, for the wire and for another guest alike; one that needs
 * more slots than are free waits whole, and goes whole after the flush. */
static uint8_t big[GSO_FRAME_MAX];

static size_t tso_frame(const uint8_t *dst, size_t payload)
{
	size_t tl = 20 + payload;

	memset(big, 0, 54);
	memcpy(big, dst, 6);
	memcpy(big + 6, MA, 6);
	big[12] = 0x08;
	big[14] = 0x45;
	big[16] = (uint8_t)((20 + tl) >> 8);
	big[17] = (uint8_t)(20 + tl);
	big[23] = 6;
	big[26] = 10, big[29] = 2;		/* 10.0.0.2 -> 10.0.0.1 */
	big[30] = 10, big[33] = 1;
	big[46] = 0x50;
	big[47] = 0x18;
	for (size_t i = 0; i < payload; i++)
		big[54 + i] = (uint8_t)i;
	return 54 + payload;
}

static void test_tso_from_a_guest(void **st)
{
	struct gso_req tso = { .csum = true, .csum_start = 34, .csum_offset = 16, .mss = 1000 };
	size_t len = tso_frame(PEER, 10 * 1000 + 1);
	const uint8_t *tcp = wire.last + 34;
	uint8_t f[64];

	(void)st;
	assert_int_equal(gnet_guest_tx(&va, big, len, &tso), 0);
	gnet_flush(&va);
	assert_int_equal(wire.frames, 11);
	assert_int_equal(wire.len, 54 + 1);		/* the last byte, alone */
	assert_int_equal(wire.last[54], (uint8_t)10000);
	assert_int_equal(tcp[4] << 24 | tcp[5] << 16 | tcp[6] << 8 | tcp[7], 10000);
	assert_true(csum_ok(csum_add(csum_pseudo(0x0a000002, 0x0a000001, 6, 21), tcp, 21)));
	assert_int_equal(partial_frames, 0);
	/* left partial for a NIC: the wire gets the pseudo-header sum ... */
	tso.partial_ok = true;
	len = tso_frame(PEER, 2000);
	assert_int_equal(gnet_guest_tx(&va, big, len, &tso), 0);
	gnet_flush(&va);
	assert_int_equal(partial_frames, 2);
	{
		uint8_t want[2];

		csum_store(want, csum_fold(csum_pseudo(0x0a000002, 0x0a000001, 6, 20 + 1000)));
		assert_memory_equal(tcp + 16, want, 2);
	}
	/* ... and guest B whole checksums, known good */
	len = tso_frame(MB, 3000);
	assert_int_equal(gnet_guest_tx(&va, big, len, &tso), 0);
	gnet_flush(&va);
	assert_int_equal(rx_b, 3);
	assert_true(csum_ok(csum_add(csum_pseudo(0x0a000002, 0x0a000001, 6, 20 + 1000),
				     rx_last + 34, 20 + 1000)));
	assert_true(rx_valid);
	tso.partial_ok = false;
	wire.frames = 11;
	/* waits whole while the queue lacks room, then goes */
	frame(f, PEER, MA, 7);
	for (int i = 0; i < GNET_QLEN - 5; i++)
		assert_int_equal(gnet_guest_tx(&va, f, 64, &PLAIN), 0);
	len = tso_frame(PEER, 6000);
	assert_int_equal(gnet_guest_tx(&va, big, len, &tso), -EAGAIN);
	gnet_flush(&va);
	assert_int_equal(wire.frames, 11 + GNET_QLEN - 5);
	assert_int_equal(gnet_guest_tx(&va, big, len, &tso), 0);
	gnet_flush(&va);
	assert_int_equal(wire.frames, 11 + GNET_QLEN - 5 + 6);
}

/* A super-frame of more segments than the queue holds (a peer's small
 * MSS) goes in rounds: a queue's worth, -EAGAIN until the last, each
 * segment once and in order; another frame in between starts afresh. */
static void test_tso_in_rounds(void **st)
{
	struct gso_req tiny = { .csum = true, .csum_start = 34, .csum_offset = 16, .mss = 8 };
	size_t len = tso_frame(PEER, 8 * (2 * GNET_QLEN + 10) + 3);
	const uint8_t *tcp = wire.last + 34;
	struct gnet_stats s;

	(void)st;
	for (int round = 0; round < 2; round++) {
		assert_int_equal(gnet_guest_tx(&va, big, len, &tiny), -EAGAIN);
		gnet_flush(&va);
		assert_int_equal(wire.frames, (round + 1) * GNET_QLEN);
		assert_int_equal(tcp[4] << 24 | tcp[5] << 16 | tcp[6] << 8 | tcp[7],
				 8 * ((round + 1) * GNET_QLEN - 1));
		assert_int_equal(wire.last[54], (uint8_t)(8 * ((round + 1) * GNET_QLEN - 1)));
	}
	assert_int_equal(gnet_guest_tx(&va, big, len, &tiny), 0);
	gnet_flush(&va);
	assert_int_equal(wire.frames, 2 * GNET_QLEN + 11);
	assert_int_equal(wire.len, 54 + 3);
	assert_true(csum_ok(csum_add(csum_pseudo(0x0a000002, 0x0a000001, 6, 23), tcp, 23)));
	assert_int_equal(gnet_stats(&va, &s), 0);
	assert_int_equal(s.tx_qfull, 2);
	/* offered again after it went: a new frame, from its start */
	wire.frames = 0;
	assert_int_equal(gnet_guest_tx(&va, big, len, &tiny), -EAGAIN);
	gnet_flush(&va);
	assert_int_equal(wire.frames, GNET_QLEN);
	/* another frame instead of the rest: that one from its start */
	big[41] ^= 1;				/* its sequence number */
	assert_int_equal(gnet_guest_tx(&va, big, len, &tiny), -EAGAIN);
	gnet_flush(&va);
	assert_int_equal(wire.frames, 2 * GNET_QLEN);
	assert_int_equal(tcp[4] << 24 | tcp[5] << 16 | tcp[6] << 8 | tcp[7],
			 1 + 8 * (GNET_QLEN - 1));
}

/* A super-frame for the wire, when the NIC has TSO, reaches it whole (in
 * NIC_TSO_IOV_MAX segments at a time), its payload in order; what the NIC
 * does not take, frames that may not keep a partial checksum and frames
 * for another guest go segment by segment. */
static void test_tso_to_a_nic(void **st)
{
	struct gso_req tso = { .csum = true, .csum_start = 34, .csum_offset = 16, .mss = 500,
			       .partial_ok = true };
	size_t len = tso_frame(PEER, 100 * 500 + 3);
	uint8_t f[64];

	(void)st;
	tso_nic = true;
	assert_int_equal(gnet_guest_tx(&va, big, len, &tso), 0);
	frame(f, PEER, MA, 7);				/* and a frame of its own after it */
	assert_int_equal(gnet_guest_tx(&va, f, 64, &PLAIN), 0);
	gnet_flush(&va);
	assert_int_equal(tso_calls, 2);
	assert_int_equal(tso_segs[0], NIC_TSO_IOV_MAX);
	assert_int_equal(tso_segs[1], 101 - NIC_TSO_IOV_MAX);
	assert_int_equal(tso_hlen, 54);
	assert_int_equal(tso_mss, 500);
	assert_int_equal(tso_bytes, 100 * 500 + 3);
	assert_memory_equal(tso_payload, big + 54, tso_bytes);
	assert_int_equal(wire.frames, 1);		/* only the plain frame */
	assert_int_equal(wire.last[20], 7);
	/* the NIC takes ten at a time: the rest is a group of its own, and
	 * goes on as TSO frames of ten, in order; the last segment alone */
	tso_take = 10;
	tso_calls = 0;
	tso_bytes = 0;
	assert_int_equal(gnet_guest_tx(&va, big, len, &tso), 0);
	gnet_flush(&va);
	assert_int_equal(tso_calls, 10);
	assert_int_equal(tso_bytes, 100 * 500);
	assert_memory_equal(tso_payload, big + 54, tso_bytes);
	assert_int_equal(wire.frames, 1 + 1);
	assert_int_equal(wire.len, 54 + 3);
	/* without a partial checksum: all one by one */
	tso_take = ~0u;
	tso_calls = 0;
	tso.partial_ok = false;
	assert_int_equal(gnet_guest_tx(&va, big, tso_frame(PEER, 2000), &tso), 0);
	gnet_flush(&va);
	assert_int_equal(tso_calls, 0);
	assert_int_equal(wire.frames, 1 + 1 + 4);
	/* for guest B: segments, not TSO */
	tso.partial_ok = true;
	assert_int_equal(gnet_guest_tx(&va, big, tso_frame(MB, 3000), &tso), 0);
	gnet_flush(&va);
	assert_int_equal(tso_calls, 0);
	assert_int_equal(rx_b, 6);
}

/* A super-frame's segments wait for room for a TSO frame, not only for
 * their first: sent alone, that one would take the group with it, and
 * all the rest would go one by one. */
static void test_tso_waits_for_room_for_tso(void **st)
{
	struct gso_req tso = { .csum = true, .csum_start = 34, .csum_offset = 16, .mss = 500,
			       .partial_ok = true };

	(void)st;
	tso_nic = true;
	wire_room = 0;
	assert_int_equal(gnet_guest_tx(&va, big, tso_frame(PEER, 20 * 500), &tso), 0);
	assert_false(gnet_flush(&va));
	assert_int_equal(room_asked, NIC_TSO_MAX);
	wire_room = ~0u;
	round_();
	assert_int_equal(tso_calls, 1);
	assert_int_equal(tso_segs[0], 20);
	assert_int_equal(wire.frames, 0);
	assert_false(gnet_tx_backlog());
}

/* A NIC without ECN-aware TSO copies its first header's CWR onto every
 * segment: a super-frame whose first segment has CWR sends that one on
 * its own, with CWR, and the rest, without, as TSO frames. */
static void test_tso_cwr_goes_alone(void **st)
{
	struct gso_req tso = { .csum = true, .csum_start = 34, .csum_offset = 16, .mss = 500,
			       .partial_ok = true };
	size_t len = tso_frame(PEER, 10 * 500);

	(void)st;
	tso_nic = true;
	big[47] |= 0x80;				/* CWR|PSH|ACK */
	assert_int_equal(gnet_guest_tx(&va, big, len, &tso), 0);
	gnet_flush(&va);
	assert_int_equal(wire.frames, 1);
	assert_int_equal(wire.len, 54 + 500);
	assert_int_equal(wire.last[47] & 0x80, 0x80);
	assert_int_equal(tso_calls, 1);
	assert_int_equal(tso_segs[0], 9);
	assert_int_equal(tso_flags & 0x80, 0);
	assert_int_equal(tso_bytes, 9 * 500);
	assert_memory_equal(tso_payload, big + 54 + 500, tso_bytes);
}

/* A NIC with no buffer drops; a guest still arriving keeps a queue's worth
 * waiting (the rest dropped as a full queue), all of it going in, in
 * order, once it runs. */
static void test_rx_waits_for_a_paused_guest(void **st)
{
	uint8_t f[64];
	struct gnet_stats s;

	(void)st;
	frame(f, MA, PEER, 8);
	nic_rc = -EAGAIN;
	netif_lock();
	netif_switch_input(host_if.uplink_port, f, 64, 0);
	netif_unlock();
	gnet_deliver();
	nic_rc = 0;
	va.state = VM_INCOMING;
	netif_lock();
	for (int i = 0; i < GNET_QLEN + 2; i++)
		netif_switch_input(host_if.uplink_port, f, frame(f, MA, PEER, (uint8_t)i), 0);
	netif_unlock();
	gnet_deliver();
	assert_int_equal(rx_a, 0);
	assert_int_equal(gnet_stats(&va, &s), 0);
	assert_int_equal(s.rx_nic_drop, 1);
	assert_int_equal(s.rx_waited, GNET_QLEN);
	assert_int_equal(s.rx_qfull, 2);
	va.state = VM_RUNNING;
	gnet_wake(&va);
	assert_int_equal(rx_a, GNET_QLEN);
	assert_int_equal(rx_last[20], (uint8_t)(GNET_QLEN - 1));	/* the last, last */
	gnet_deliver();
	assert_int_equal(rx_a, GNET_QLEN);				/* each once */
}

/* A guest flooding broadcasts fills at most half of another's rx queue
 * (that guest not taking them, say): the other half still takes its
 * unicast. */
static void test_flood_leaves_room_for_unicast(void **st)
{
	static const uint8_t bc[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	struct gnet_stats s;
	uint8_t f[64];

	(void)st;
	vb.state = VM_PAUSED;				/* B takes nothing meanwhile */
	for (int i = 0; i < GNET_QLEN; i++) {
		gnet_guest_tx(&va, f, frame(f, bc, MA, (uint8_t)i), &PLAIN);
		gnet_flush(&va);
	}
	netif_lock();
	for (int i = 0; i < 10; i++)
		netif_switch_input(host_if.uplink_port, f, frame(f, MB, PEER, (uint8_t)i), 0);
	netif_unlock();
	assert_int_equal(gnet_stats(&vb, &s), 0);
	assert_int_equal(s.rx_flood_drop, GNET_QLEN - GNET_FLOOD_QMAX);
	assert_int_equal(s.rx_qfull, 0);
	assert_int_equal(s.rx_waited, GNET_FLOOD_QMAX + 10);	/* the unicast too */
	vb.state = VM_RUNNING;
	gnet_wake(&vb);
	assert_int_equal(rx_b, GNET_FLOOD_QMAX + 10);
}

/* While a guest is still arriving (it runs at the source) its port here
 * only holds its MAC: this host's guests reach it over the wire, its own
 * frames from the wire are no loop, and nothing waits for it here.  At
 * COMMIT (gnet_arrived) the port takes over. */
static void test_incoming_port_dormant_until_arrival(void **st)
{
	static const uint8_t MC[6] = { 0x52, 0x54, 0x00, 0xaa, 0, 3 };
	static const uint8_t bc[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	static struct vm vc;
	struct gnet_stats s;
	uint8_t f[64];
	unsigned int w;

	(void)st;
	memset(&vc, 0, sizeof(vc));
	strcpy(vc.name, "c");
	memcpy(vc.mac, MC, 6);
	vc.nic = true;
	vc.state = VM_INCOMING;
	assert_int_equal(gnet_attach(&vc), 0);
	assert_true(gnet_mac_taken(MC));		/* held: no other port gets it */
	/* a guest here to C: to the wire, where C still is */
	w = wire.frames;
	gnet_guest_tx(&va, f, frame(f, MC, MA, 1), &PLAIN);
	gnet_flush(&va);
	assert_int_equal(wire.frames, w + 1);
	/* C's own frames from the wire (from the source) are no loop, and a
	 * broadcast does not queue for it */
	netif_lock();
	assert_int_equal(netif_switch_input(host_if.uplink_port, f, frame(f, MA, MC, 2), 0), 1);
	assert_int_equal(netif_switch_input(host_if.uplink_port, f, frame(f, bc, MC, 3), 0), 3);
	assert_true(netif_switch_input(host_if.uplink_port, f, frame(f, MC, PEER, 4), 0) < 0);
	netif_unlock();
	gnet_deliver();
	assert_int_equal(gnet_stats(&vc, &s), 0);
	assert_int_equal(s.rx_waited + s.rx_qfull + s.sw.out_frames, 0);
	/* COMMIT: the port takes over (frames for C wait for it to run) */
	gnet_arrived(&vc);
	w = wire.frames;
	gnet_guest_tx(&va, f, frame(f, MC, MA, 5), &PLAIN);
	gnet_flush(&va);
	assert_int_equal(wire.frames, w);
	assert_int_equal(gnet_stats(&vc, &s), 0);
	assert_int_equal(s.sw.out_frames, 1);
	netif_lock();
	assert_true(netif_switch_input(host_if.uplink_port, f, frame(f, MA, MC, 6), 0) < 0);
	netif_unlock();
	gnet_detach(&vc);
}

/* The frames waiting for a paused guest travel in its device state and
 * go into it on the destination before any that came there meanwhile. */
static void test_waiting_frames_travel(void **st)
{
	static uint8_t buf[GNET_CARRY_BYTES + 64];
	struct gnet_carry *c = NULL;
	struct gnet_stats st2;
	struct snap s;
	uint8_t f[64];

	(void)st;
	va.state = VM_PAUSED;
	netif_lock();
	for (int i = 0; i < 3; i++)
		netif_switch_input(host_if.uplink_port, f, frame(f, MA, PEER, (uint8_t)(10 + i)), 0);
	netif_unlock();
	gnet_deliver();
	snap_save_init(&s, buf, sizeof(buf));
	assert_int_equal(gnet_rx_snapshot(&va, &s, NULL), 0);
	assert_int_equal(s.pos, 4 + 3 * (2 + 64));
	/* the destination: b stands for the guest there, not yet running */
	vb.state = VM_INCOMING;
	snap_restore_init(&s, buf, s.pos);
	assert_int_equal(gnet_rx_snapshot(NULL, &s, &c), 0);
	assert_non_null(c);
	gnet_rx_carry(&vb, c);
	/* loaded again at COMMIT: the same three, once */
	snap_restore_init(&s, buf, 4 + 3 * (2 + 64));
	c = NULL;
	assert_int_equal(gnet_rx_snapshot(NULL, &s, &c), 0);
	gnet_rx_carry(&vb, c);
	assert_int_equal(gnet_stats(&vb, &st2), 0);
	assert_int_equal(st2.rx_carried, 3);
	netif_lock();
	netif_switch_input(host_if.uplink_port, f, frame(f, MB, PEER, 20), 0);
	netif_unlock();
	gnet_deliver();
	assert_int_equal(rx_b, 0);
	vb.state = VM_RUNNING;
	gnet_wake(&vb);
	assert_int_equal(rx_b, 4);
	assert_int_equal(rx_last[20], 20);		/* the carried three first */
	/* and a failed move leaves the source's three for it */
	va.state = VM_RUNNING;
	gnet_wake(&va);
	assert_int_equal(rx_a, 3);
	assert_int_equal(rx_last[20], 12);
}

static void wire_in(const uint8_t *dst, uint8_t tag)
{
	uint8_t f[64];

	netif_lock();
	netif_switch_input(host_if.uplink_port, f, frame(f, dst, PEER, tag), 0);
	netif_unlock();
	gnet_deliver();
}

/* Frames that come for a paused guest after its device state was saved
 * travel in a record of their own before COMMIT: only those, and on the
 * destination after the ones the device state brought, before any that
 * came there. */
static void test_late_frames_follow(void **st)
{
	static uint8_t dev[GNET_CARRY_BYTES + 64], late[GNET_CARRY_BYTES + 64];
	struct gnet_carry *c = NULL;
	struct gnet_stats st2;
	struct snap s, sl;

	(void)st;
	va.state = VM_PAUSED;
	wire_in(MA, 10);
	wire_in(MA, 11);
	snap_save_init(&s, dev, sizeof(dev));
	assert_int_equal(gnet_rx_snapshot(&va, &s, NULL), 0);
	assert_int_equal(s.pos, 4 + 2 * (2 + 64));
	snap_save_init(&sl, late, sizeof(late));
	assert_int_equal(gnet_rx_late_snapshot(&va, &sl, GNET_QLEN, NULL), 0);
	assert_int_equal(sl.pos, 4);				/* none yet */
	wire_in(MA, 12);
	wire_in(MA, 13);
	logged[0] = 0;
	snap_save_init(&sl, late, sizeof(late));
	assert_int_equal(gnet_rx_late_snapshot(&va, &sl, 1, NULL), 0);
	assert_int_equal(sl.pos, 4 + 1 * (2 + 64));		/* room for one */
	assert_string_equal(logged, "vm a: 1 received frame waiting for it does not fit in what "
			    "a migration carries (32768 bytes of them): lost if it completes");
	logged[0] = 0;
	snap_save_init(&sl, late, sizeof(late));
	assert_int_equal(gnet_rx_late_snapshot(&va, &sl, GNET_QLEN, NULL), 0);
	assert_int_equal(sl.pos, 4 + 2 * (2 + 64));
	assert_string_equal(logged, "");			/* all of them go */
	/* the destination, at COMMIT: the device state, then the late two */
	vb.state = VM_INCOMING;
	snap_restore_init(&s, dev, s.pos);
	assert_int_equal(gnet_rx_snapshot(NULL, &s, &c), 0);
	gnet_rx_carry(&vb, c);
	c = NULL;
	snap_restore_init(&sl, late, sl.pos);
	assert_int_equal(gnet_rx_late_snapshot(NULL, &sl, 0, &c), 0);
	assert_non_null(c);
	gnet_rx_carry_more(&vb, c);
	wire_in(MB, 20);
	assert_int_equal(rx_b, 0);
	vb.state = VM_RUNNING;
	gnet_wake(&vb);
	assert_int_equal(rx_b, 5);
	assert_int_equal(rx_last[20], 20);			/* 10, 11, 12, 13, then 20 */
	assert_int_equal(gnet_stats(&vb, &st2), 0);
	assert_int_equal(st2.rx_carried, 4);
	/* a failed move: the source's guest gets all four, once */
	va.state = VM_RUNNING;
	gnet_wake(&va);
	assert_int_equal(rx_a, 4);
	assert_int_equal(rx_last[20], 13);
}

/* Late frames that come to a destination whose carry is full, or with no
 * carry, are bounded by a queue's worth; the excess is counted. */
static void test_late_frames_bounded(void **st)
{
	static uint8_t buf[GNET_CARRY_BYTES + 64];
	struct gnet_carry *c = NULL;
	struct gnet_stats st2;
	struct snap s;

	(void)st;
	va.state = vb.state = VM_PAUSED;
	for (int i = 0; i < GNET_QLEN; i++)
		wire_in(MA, (uint8_t)i);
	snap_save_init(&s, buf, sizeof(buf));
	assert_int_equal(gnet_rx_snapshot(&va, &s, NULL), 0);
	snap_restore_init(&s, buf, s.pos);
	assert_int_equal(gnet_rx_snapshot(NULL, &s, &c), 0);
	gnet_rx_carry(&vb, c);				/* GNET_QLEN came with b */
	c = NULL;
	snap_restore_init(&s, buf, 4 + 3 * (2 + 64));
	memcpy(buf, &(uint32_t){ 3 }, 4);
	assert_int_equal(gnet_rx_late_snapshot(NULL, &s, 0, &c), 0);
	gnet_rx_carry_more(&vb, c);			/* three more: no room */
	assert_int_equal(gnet_stats(&vb, &st2), 0);
	assert_int_equal(st2.rx_carried, GNET_QLEN);
	assert_int_equal(st2.rx_qfull, 3);
	/* without a device save first, nothing is late */
	gnet_detach(&va);
	va.state = VM_PAUSED;
	assert_int_equal(gnet_attach(&va), 0);
	wire_in(MA, 1);
	snap_save_init(&s, buf, sizeof(buf));
	assert_int_equal(gnet_rx_late_snapshot(&va, &s, GNET_QLEN, NULL), 0);
	assert_int_equal(s.pos, 4);
}

/* At most GNET_CARRY_BYTES of whole frames travel: the oldest. */
static void test_carry_is_bounded(void **st)
{
	static uint8_t buf[GNET_CARRY_BYTES + 64];
	uint8_t f[1514];
	struct snap s;

	(void)st;
	va.state = VM_PAUSED;
	memset(f, 1, sizeof(f));
	memcpy(f, MA, 6);
	memcpy(f + 6, PEER, 6);
	netif_lock();
	for (int i = 0; i < 40; i++)
		netif_switch_input(host_if.uplink_port, f, sizeof(f), 0);
	netif_unlock();
	snap_save_init(&s, buf, sizeof(buf));
	assert_int_equal(gnet_rx_snapshot(&va, &s, NULL), 0);
	assert_int_equal(s.pos, 4 + (GNET_CARRY_BYTES / (2 + 1514)) * (2 + 1514));
}

/* A guest that arrived paused with a queue's worth still to deliver, and
 * as many more queued since, moves on with GNET_QLEN of them, the oldest:
 * a destination takes no more. */
static void test_carry_counts_at_most_a_queue(void **st)
{
	static uint8_t buf[GNET_CARRY_BYTES + 64];
	struct gnet_carry *c = NULL;
	struct snap s;
	uint8_t f[64];

	(void)st;
	va.state = vb.state = VM_PAUSED;
	netif_lock();
	for (int i = 0; i < GNET_QLEN; i++)
		netif_switch_input(host_if.uplink_port, f, frame(f, MA, PEER, (uint8_t)i), 0);
	netif_unlock();
	snap_save_init(&s, buf, sizeof(buf));
	assert_int_equal(gnet_rx_snapshot(&va, &s, NULL), 0);
	snap_restore_init(&s, buf, s.pos);
	assert_int_equal(gnet_rx_snapshot(NULL, &s, &c), 0);
	gnet_rx_carry(&vb, c);				/* b arrived with them, paused */
	netif_lock();
	for (int i = 0; i < GNET_QLEN; i++)
		netif_switch_input(host_if.uplink_port, f, frame(f, MB, PEER, (uint8_t)i), 0);
	netif_unlock();
	snap_save_init(&s, buf, sizeof(buf));
	assert_int_equal(gnet_rx_snapshot(&vb, &s, NULL), 0);
	assert_int_equal(s.pos, 4 + GNET_QLEN * (2 + 64));
	snap_restore_init(&s, buf, s.pos);
	c = NULL;
	assert_int_equal(gnet_rx_snapshot(NULL, &s, &c), 0);
	assert_non_null(c);
	gnet_rx_carry(NULL, c);
}

/* Hostile frame sections are refused whole: no frame is handed on. */
static void test_carry_refuses_bad_frames(void **st)
{
	static const struct { uint32_t n; uint16_t len; size_t have; } bad[] = {
		{ GNET_QLEN + 1, 64, 64 },	/* more than a queue holds */
		{ 1, 13, 13 },			/* shorter than an Ethernet header */
		{ 1, 1519, 1519 },		/* longer than the switch passes */
		{ 2, 64, 64 },			/* the second frame missing */
		{ 1, 64, 10 },			/* the frame cut short */
	};
	uint8_t buf[4 + 2 + 1600];
	struct gnet_carry *c = NULL;
	struct snap s;

	(void)st;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memcpy(buf, &bad[i].n, 4);
		memcpy(buf + 4, &bad[i].len, 2);
		memset(buf + 6, 0x42, bad[i].have);
		snap_restore_init(&s, buf, 6 + bad[i].have);
		assert_int_not_equal(gnet_rx_snapshot(NULL, &s, &c), 0);
		assert_null(c);
	}
}

/* After arrival: RARP for the guest's MAC at 0, 50, 150, 350, 750 ms,
 * counted as announces where the wire took them (not the round the NIC's
 * ring was full), and not as frames from the guest: they are ferry's. */
static void test_announce_rounds(void **st)
{
	static const unsigned int at_ms[] = { 49, 50, 149, 150, 349, 350, 749, 750, 5000 };
	static const unsigned int want[] = { 1, 2, 2, 3, 3, 4, 4, 5, 5 };
	uint64_t t0 = now_us;
	struct gnet_stats s;

	(void)st;
	gnet_arrived(&va);
	assert_int_equal(wire.frames, 1);
	assert_memory_equal(wire.last + 6, MA, 6);
	assert_int_equal(wire.last[12] << 8 | wire.last[13], 0x8035);	/* RARP */
	assert_int_equal(rx_b, 1);			/* broadcast: B hears it too */
	for (unsigned int i = 0; i < sizeof(at_ms) / sizeof(at_ms[0]); i++) {
		now_us = t0 + at_ms[i] * 1000ull;
		wire_full = at_ms[i] == 150;
		netif_lock();
		gnet_timers(now_us);
		netif_unlock();
		assert_int_equal(wire.frames, want[i]);
	}
	assert_int_equal(gnet_stats(&va, &s), 0);
	assert_int_equal(s.announces, SW_ANNOUNCE_ROUNDS - 1);
	assert_int_equal(s.sw.in_frames, 0);
	assert_int_equal(s.sw.in_bytes, 0);
	assert_int_equal(gnet_stats(&vb, &s), 0);
	assert_int_equal(s.sw.out_frames, SW_ANNOUNCE_ROUNDS);	/* B heard them all */
}

static void row(struct vm *vm, const uint8_t mac[6], const struct gnet_stats *st, void *arg)
{
	unsigned int *n = arg;

	assert_memory_equal(mac, vm->mac, 6);
	assert_int_equal(st->sw.in_frames, 0);
	*n += vm == &va ? 1 : 10;
}

/* The wire's segments of super-frame big[0..len), cut at mss with whole
 * checksums, into guest A's rx queue; corrupt: the payload of that one
 * flipped after its checksum (-1: none). */
static unsigned int from_wire(size_t len, uint16_t mss, int corrupt)
{
	struct gso_req r = { .csum = true, .csum_start = 34, .csum_offset = 16, .mss = mss };
	uint8_t seg[GSO_PLAIN_MAX];
	struct gso_plan p;

	memcpy(big, MA, 6);			/* from the peer to guest A */
	memcpy(big + 6, PEER, 6);
	big[47] = 0x10;				/* ACK */
	assert_int_equal(gso_plan(big, len, &r, &p), 0);
	netif_lock();
	for (unsigned int k = 0; k < p.segs; k++) {
		size_t sl = gso_segment(big, &r, &p, k, seg);

		if ((int)k == corrupt)
			seg[60] ^= 0x10;
		assert_int_equal(netif_switch_input(host_if.uplink_port, seg, sl, 0), 1);
	}
	netif_unlock();
	return p.segs;
}

/* For a guest that takes super-frames, one connection's segments go in
 * as one, whole and in order; a segment that fails its checksum goes
 * alone, unmarked, and splits them. */
static void test_rx_segments_joined(void **st)
{
	size_t len = tso_frame(MA, 20 * 1000);

	(void)st;
	gso_on = true;
	assert_int_equal(from_wire(len, 1000, -1), 20);
	gnet_deliver();
	assert_int_equal(supers, 1);
	assert_int_equal(super_segs, 20);
	assert_int_equal(super_mss, 1000);
	assert_int_equal(super_hlen, 54);
	assert_int_equal(super_len, len);
	assert_memory_equal(super_last + 54, big + 54, len - 54);	/* the payload, in order */
	assert_int_equal(super_last[16] << 8 | super_last[17], len - 14);
	assert_true(csum_ok(csum_add(0, super_last + 14, 20)));
	assert_int_equal(rx_a, 0);
	/* the 6th corrupted: 5 joined, it alone (not marked), then 14 */
	assert_int_equal(from_wire(len, 1000, 5), 20);
	gnet_deliver();
	assert_int_equal(supers, 3);
	assert_int_equal(super_segs, 20 + 5 + 14);
	assert_int_equal(rx_a, 1);
	assert_false(rx_valid);
	/* buffers too small for them: one by one, checked, so marked */
	too_small = true;
	from_wire(tso_frame(MA, 3000), 1000, -1);
	gnet_deliver();
	assert_int_equal(rx_a, 4);
	assert_true(rx_valid);
	assert_int_equal(supers, 3);
	too_small = false;
	/* a paused guest keeps them queued, and gets them joined when it runs */
	va.state = VM_PAUSED;
	from_wire(tso_frame(MA, 4000), 1000, -1);
	gnet_deliver();
	assert_int_equal(supers, 3);
	va.state = VM_RUNNING;
	gnet_wake(&va);
	assert_int_equal(supers, 4);
	assert_int_equal(super_segs, 20 + 5 + 14 + 4);
	/* a driver without GUEST_TSO4: one by one, as they came */
	gso_on = false;
	from_wire(tso_frame(MA, 3000), 1000, -1);
	gnet_deliver();
	assert_int_equal(rx_a, 7);
	assert_false(rx_valid);
}

/* A NIC whose driver has posted no buffer (-ENOBUFS) keeps its frames
 * waiting, in order, joined or not, until the driver posts some; the
 * other guest's frames do not wait behind them; a queue's worth waits,
 * the rest is dropped as a full queue. */
static void test_rx_waits_for_buffers(void **st)
{
	uint8_t f[64];
	struct gnet_stats s;

	(void)st;
	nic_rc = -ENOBUFS;
	nic_rc_vm = &va;
	netif_lock();
	for (int i = 0; i < 5; i++)
		netif_switch_input(host_if.uplink_port, f, frame(f, MA, PEER, (uint8_t)i), 0);
	for (int i = 0; i < 2; i++)
		netif_switch_input(host_if.uplink_port, f, frame(f, MB, PEER, (uint8_t)i), 0);
	netif_unlock();
	gnet_deliver();
	assert_int_equal(rx_a, 0);
	assert_int_equal(rx_b, 2);
	gnet_rx_posted(&va);			/* still none that fits */
	assert_int_equal(rx_a, 0);
	nic_rc = 0;
	gnet_deliver();				/* nothing new came: nothing looked at */
	assert_int_equal(rx_a, 0);
	gnet_rx_posted(&va);
	assert_int_equal(rx_a, 5);
	assert_int_equal(rx_last[20], 4);	/* the last, last */
	assert_int_equal(gnet_stats(&va, &s), 0);
	assert_int_equal(s.rx_nic_drop, 0);
	assert_int_equal(s.rx_qfull, 0);
	/* segments wait, and go in joined */
	gso_on = true;
	nic_rc = -ENOBUFS;
	assert_int_equal(from_wire(tso_frame(MA, 8 * 1000), 1000, -1), 8);
	gnet_deliver();
	assert_int_equal(supers, 0);
	nic_rc = 0;
	gnet_rx_posted(&va);
	assert_int_equal(supers, 1);
	assert_int_equal(super_segs, 8);
	gso_on = false;
	/* a queue's worth waits */
	nic_rc = -ENOBUFS;
	netif_lock();
	for (int i = 0; i < GNET_QLEN + 3; i++)
		netif_switch_input(host_if.uplink_port, f, frame(f, MA, PEER, (uint8_t)i), 0);
	netif_unlock();
	gnet_deliver();
	nic_rc = 0;
	gnet_rx_posted(&va);
	assert_int_equal(rx_a, 5 + GNET_QLEN);
	assert_int_equal(rx_last[20], (uint8_t)(GNET_QLEN - 1));
	assert_int_equal(gnet_stats(&va, &s), 0);
	assert_int_equal(s.rx_qfull, 3);
	assert_int_equal(s.rx_nic_drop, 0);
	gnet_rx_posted(&va);			/* nothing waits: nothing happens */
	assert_int_equal(rx_a, 5 + GNET_QLEN);
}

static void test_for_each(void **st)
{
	unsigned int n = 0;

	(void)st;
	gnet_for_each(row, &n);
	assert_int_equal(n, 11);
	assert_int_equal(gnet_stats(&(struct vm){ 0 }, &(struct gnet_stats){ 0 }), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_guest_to_guest_queued, setup, teardown),
		cmocka_unit_test_setup_teardown(test_frames_wait_for_the_wire, setup, teardown),
		cmocka_unit_test_setup_teardown(test_the_wire_is_shared, setup, teardown),
		cmocka_unit_test_setup_teardown(test_paused_guest_frames_still_go, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tso_waits_for_room_for_tso, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_dead_wire_drops_what_waits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_discard_at_the_hand_over, setup, teardown),
		cmocka_unit_test_setup_teardown(test_from_the_wire, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tso_from_a_guest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tso_in_rounds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tso_to_a_nic, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tso_cwr_goes_alone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_spoof_counted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_management, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ports_and_macs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_find_touches_no_other_port, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tx_queue_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rx_waits_for_a_paused_guest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flood_leaves_room_for_unicast, setup, teardown),
		cmocka_unit_test_setup_teardown(test_incoming_port_dormant_until_arrival, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_waiting_frames_travel, setup, teardown),
		cmocka_unit_test_setup_teardown(test_carry_is_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_carry_counts_at_most_a_queue, setup, teardown),
		cmocka_unit_test_setup_teardown(test_carry_refuses_bad_frames, setup, teardown),
		cmocka_unit_test_setup_teardown(test_late_frames_follow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_late_frames_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_announce_rounds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rx_segments_joined, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rx_waits_for_buffers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_for_each, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
