/* SPDX-License-Identifier: BSD-2-Clause */
/* Glue between the NIC in use (drivers/nic.h) and the stack in hv/net. */
#include <errno.h>
#include <stdio.h>
#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/percpu.h"
#include "arch/x86/task.h"
#include "hv/gnet.h"
#include "hv/lib/bytes.h"
#include "hv/lib/log.h"
#include "hv/net/cksum.h"
#include "hv/net/gso.h"
#include "hv/netif.h"
#include "hv/sched.h"
#include "hv/lib/spinlock.h"
#include "hv/lib/time.h"

/* The drivers' flags and offsets are the stack's. */
_Static_assert(NIC_RX_IP_CSUM_OK == NET_RX_IP_CSUM_OK, "rx flags");
_Static_assert(NIC_RX_TCP_CSUM_OK == NET_RX_TCP_CSUM_OK, "rx flags");
_Static_assert(NET_TCP_OFF == 34, "offload contexts: TCP at 34");

struct netif host_if;
static spinlock_t lock = SPINLOCK_INIT;

void netif_lock(void) { spin_lock(&lock); }
void netif_unlock(void) { spin_unlock(&lock); }
uint64_t netif_now_us(void) { return time_now_us(); }

/* ---- the switch's local and uplink ports -------------------------------- */

/* What the local port was handed during one sw_input (one frame at most:
 * the switch never sends a frame back to its source port). */
static const void *local_frame;
static size_t local_len;
static int uplink_rc;			/* the NIC's answer to the last frame */
static bool partial;			/* the frame in sw_input: NETIF_CSUM_PARTIAL */

static unsigned rx_flags_now;		/* the frame in sw_input: NET_RX_* */

bool netif_csum_partial(void)
{
	return partial;
}

unsigned netif_rx_flags(void)
{
	return rx_flags_now;
}

/* A frame with a partial TCP checksum, completed in a copy. */
static const uint8_t *completed(const uint8_t *f, size_t len)
{
	static uint8_t buf[NIC_BUF];

	if (len > sizeof(buf) || !nic_frame_is_tcp4(f, len))
		return f;
	memcpy(buf, f, len);
	csum_store(buf + NET_TCP_OFF + 16,
		   csum_finish(csum_add(0, buf + NET_TCP_OFF, len - NET_TCP_OFF)));
	return buf;
}

static void local_out(void *ctx, const uint8_t *frame, size_t len)
{
	(void)ctx;
	local_frame = frame;
	local_len = len;
}

/*
 * A guest's TCP frame carries its whole checksum, but a NIC with tx_csum
 * adds the segment's sum to the checksum field (drivers/nic.h): put the
 * pseudo-header sum there instead, as the stack does (hv/net/tcp_out.c),
 * in a copy.  Frames of the stack's own (its MAC) are already so.
 */
static const uint8_t *for_offload(const struct nic *n, const uint8_t *f, size_t len)
{
	static uint8_t buf[NIC_BUF];
	uint16_t tl;

	if (!n->tx_csum || !nic_frame_is_tcp4(f, len) || !memcmp(f + 6, n->mac, 6) ||
	    len > sizeof(buf))
		return f;
	tl = (uint16_t)(get_be16(f + 16) - 20);		/* IPv4 total length - header */
	if (tl < 20 || NET_TCP_OFF + (size_t)tl > len)
		return f;		/* not TCP as it says: sent as it is */
	memcpy(buf, f, len);
	csum_store(buf + NET_TCP_OFF + 16,
		   csum_fold(csum_pseudo(get_be32(f + 26), get_be32(f + 30), 6, tl)));
	return buf;
}

/* A frame built in the NIC's tx_frame buffer goes without a copy. */
static void uplink_out(void *ctx, const uint8_t *frame, size_t len)
{
	const struct nic *n = ctx;

	/* the NIC sums a TCP segment to the end of the frame: bytes after the
	 * IP packet (a guest driver's padding, whatever it holds) are cut,
	 * and the NIC pads again, with zeros */
	if (n->tx_csum && nic_frame_is_tcp4(frame, len)) {
		size_t ip_end = 14 + (size_t)get_be16(frame + 16);

		if (ip_end >= NET_TCP_OFF + 20 && ip_end < len)
			len = ip_end;
	}
	if (!partial)
		frame = for_offload(n, frame, len);
	else if (!n->tx_csum)
		frame = completed(frame, len);	/* else the NIC completes it */
	uplink_rc = nic_xmit(ctx, frame, len);
	if (uplink_rc == -EAGAIN) {
		nic_tx_kick(ctx);
		uplink_rc = nic_xmit(ctx, frame, len);
	}
	if (uplink_rc)
		host_if.uplink_busy++;
}

int netif_switch_input(int port, const void *frame, size_t len, unsigned flags)
{
	const void *f;
	int n;

	local_frame = NULL;
	uplink_rc = 0;
	partial = flags & NETIF_CSUM_PARTIAL;
	rx_flags_now = flags & (NET_RX_IP_CSUM_OK | NET_RX_TCP_CSUM_OK);
	n = sw_input(&host_if.sw, port, frame, len);
	partial = false;
	rx_flags_now = 0;
	f = local_frame;
	local_frame = NULL;
	if (f && (flags & NETIF_CSUM_PARTIAL))
		f = completed(f, local_len);
	if (f)		/* the stack may send again: sw_input is over */
		net_input_flags(&host_if.stack, f, local_len, flags & ~NETIF_CSUM_PARTIAL);
	return n;
}

/* ---- the wire's share for guests ----------------------------------------- */

bool netif_for_wire(int port, const uint8_t *frame, size_t len)
{
	if (!host_if.present || len < 14)
		return false;
	return (frame[0] & 1) ||
	       sw_unicast_port(&host_if.sw, port, frame, len) == host_if.uplink_port;
}

/* The wire is alive while the NIC gives descriptors back or has the room
 * a guest's frame asked for; the dead time counts from the first look
 * that found it full after one that did not. */
static void wire_alive_check(const struct nic *n, bool room)
{
	if (room || n->stats.tx_done != host_if.tx_done_seen || !host_if.wire_full) {
		host_if.tx_done_seen = n->stats.tx_done;
		host_if.wire_alive_us = time_now_us();
	}
	host_if.wire_full = !room;
}

/* Do guests share the wire: a NIC that says its room, and a reserve? */
static bool shared_wire(void)
{
	return host_if.present && host_if.tx_reserve;	/* 0 without tx_room */
}

bool netif_wire_room(size_t bytes)
{
	struct nic *n = host_if.nic;
	unsigned int one = host_if.tx_reserve + nic_tx_descs(NIC_BUF), need, free;

	if (!shared_wire())
		return true;
	/* a TSO frame where the NIC takes one and its ring can hold one;
	 * else what a single frame needs (the segments go one by one) */
	need = host_if.tx_reserve + nic_tx_descs(bytes);
	if (bytes > NIC_BUF && (!n->tso || need > n->tx_slots))
		need = one;
	free = n->ops->tx_room(n);
	if (free < need) {
		nic_tx_kick(n);		/* an emulated NIC may send them at once */
		free = n->ops->tx_room(n);
	}
	wire_alive_check(n, free >= need);	/* need fits the ring: it comes */
	return free >= need;
}

bool netif_wire_stuck(void)
{
	struct nic *n = host_if.nic;

	if (!shared_wire())
		return false;
	(void)n->ops->tx_room(n);	/* takes back what it has sent */
	wire_alive_check(n, false);
	return time_now_us() - host_if.wire_alive_us >= NETIF_WIRE_STUCK_MS * 1000ull;
}

/* A quarter of the ring, and at least a TSO frame's worth, for ferry's
 * own frames; but never more than half, and always room for a frame
 * beside it: guests keep the rest. */
static unsigned int tx_reserve(const struct nic *n)
{
	unsigned int r = n->tx_slots / 4, one = nic_tx_descs(NIC_BUF);

	if (!n->ops->tx_room || n->tx_slots <= one)
		return 0;
	if (r < nic_tx_descs(NIC_TSO_MAX))
		r = nic_tx_descs(NIC_TSO_MAX);
	if (r > n->tx_slots / 2)
		r = n->tx_slots / 2;
	return r <= n->tx_slots - one ? r : n->tx_slots - one;
}

/* One TSO frame of seg[0..k) (k >= 2): 0, or the driver's error. */
static int tso_one(struct nic *n, const struct netif_seg *seg, unsigned int k, uint32_t hlen,
		   uint32_t mss)
{
	struct nic_iov iov[NIC_TSO_IOV_MAX];
	uint8_t hdr[256];
	size_t payload = 0;
	int rc;

	for (unsigned int i = 0; i < k; i++) {
		iov[i] = (struct nic_iov){ seg[i].f + hlen, seg[i].len - hlen };
		payload += seg[i].len - hlen;
	}
	gso_tso_hdr(hdr, seg[0].f, seg[k - 1].f, hlen, (uint32_t)payload);
	rc = n->ops->xmit_tso(n, hdr, hlen, iov, k, mss);
	if (rc == -EAGAIN) {
		nic_tx_kick(n);
		rc = n->ops->xmit_tso(n, hdr, hlen, iov, k, mss);
	}
	return rc;
}

unsigned int netif_switch_tso(int port, const struct netif_seg *seg, unsigned int n,
			      uint32_t hlen, uint32_t mss)
{
	struct nic *nic = host_if.nic;
	unsigned int per, done = 0;

	if (!nic || !nic->tso || !nic->ops->xmit_tso || n < 2 || !mss || hlen > 255 ||
	    sw_unicast_port(&host_if.sw, port, seg[0].f, seg[0].len) != host_if.uplink_port)
		return 0;
	for (unsigned int i = 0; i < n; i++)	/* what gso_segment makes; else not ours */
		if (seg[i].len <= hlen || (i + 1 < n && seg[i].len - hlen != mss))
			return 0;
	per = NIC_TSO_MAX / mss < NIC_TSO_IOV_MAX ? NIC_TSO_MAX / mss : NIC_TSO_IOV_MAX;
	while (per >= 2 && n - done >= 2) {
		unsigned int k = n - done < per ? n - done : per;
		uint64_t bytes = 0;

		for (unsigned int i = 0; i < k; i++)
			bytes += seg[done + i].len;
		/* the rest wait for room (hv/gnet.c: for a TSO frame's payload,
		 * as here), or go one by one (and count if dropped) */
		if (!netif_wire_room(bytes - (uint64_t)k * hlen) ||
		    tso_one(nic, seg + done, k, hlen, mss))
			break;
		sw_forwarded(&host_if.sw, port, host_if.uplink_port, k, bytes);
		done += k;
	}
	return done;
}

void netif_uplink_kick(void)
{
	if (host_if.nic)
		nic_tx_kick(host_if.nic);
}

bool netif_uplink_dropped(void)
{
	return uplink_rc != 0;
}

/* The stack's frames: through the switch, to the wire or to a guest. */
static int xmit(void *ctx, const void *frame, size_t len)
{
	(void)ctx;
	netif_switch_input(host_if.local_port, frame, len, 0);
	return uplink_rc;
}

/* The stack's TSO frames go to the NIC whole, when the wire is where they
 * go: for a guest here (`net mgmt NAME on`) the NIC would put the segments
 * on the wire and the guest never see them, so the stack sends those as
 * segments, through the switch. */
static int xmit_tso(void *ctx, const struct net_tso *t)
{
	struct nic *n = ctx;
	const struct nic_iov iov[2] = { { t->data[0], t->len[0] }, { t->data[1], t->len[1] } };

	if (sw_unicast_port(&host_if.sw, host_if.local_port, t->hdr, t->hlen) !=
	    host_if.uplink_port)
		return -EXDEV;
	return n->ops->xmit_tso(n, t->hdr, t->hlen, iov, t->len[1] ? 2 : 1, t->mss);
}

static void *tx_frame(void *ctx)
{
	struct nic *n = ctx;

	return n->ops->tx_frame(n);
}

/* The NIC's frames: through the switch, to the stack or a guest. */
static void rx(void *ctx, const void *frame, size_t len, unsigned flags)
{
	(void)ctx;
	netif_switch_input(host_if.uplink_port, frame, len, flags);
}

static uint64_t seed(void)
{
	uint64_t s = rdtsc() * 0x9e3779b97f4a7c15ull;

	if (cpuid(1, 0).ecx & (1u << 30)) {	/* RDRAND */
		uint64_t r = 0;
		unsigned char ok = 0;
		__asm__ volatile("rdrand %0; setc %1" : "=r"(r), "=qm"(ok));
		if (ok)
			s ^= r;
	}
	return s;
}

#define IRQ_STORM	10000	/* interrupts in a row that were not ours */
#define NETIF_POLL_PASSES 64	/* of 64 frames, per netif_poll: 16 rings of 256 */

/*
 * The NIC's interrupt only wakes the shell CPU from netif_wait's halt: the
 * frames are handled by netif_poll under the lock, as before.  A line that
 * keeps firing without a cause of ours (shared, or routed wrongly) is
 * masked and ferry goes back to polling.
 */
static void nic_irq(struct trap_frame *tf)
{
	(void)tf;
	if (host_if.nic->ops->irq_ack(host_if.nic)) {
		host_if.irqs++;
		host_if.spurious_run = 0;
	} else if (++host_if.spurious_run >= IRQ_STORM && host_if.irq) {
		ioapic_mask(host_if.irq_line);
		host_if.irq = false;
		host_if.irq_storm = true;	/* netif_poll says so, outside the handler */
	}
	apic_eoi();
}

static void setup_irq(void)
{
	uint8_t line = host_if.nic->pci.irq_line;

	host_if.irq_line = line;
	host_if.irq_cpu = this_cpu()->apic_id;
	/* masked in the NIC (its probe) until netif_idle unmasks it */
	if (!ioapic_route_pci(line, VEC_IRQ_BASE + line, host_if.irq_cpu)) {
		pr_info("net: no interrupt line for the NIC (PCI line %u): polling", line);
		return;
	}
	irq_register(VEC_IRQ_BASE + line, nic_irq);
	host_if.nic->ops->irq_setup(host_if.nic);
	host_if.irq = true;
}

/*
 * The NIC may interrupt only while the CPU sleeps here.  A line left
 * asserted while the CPU runs with interrupts off costs nothing on real
 * hardware, but an emulator then checks for the interrupt after every
 * block it translates, and ferry's busy loops ran at half speed.  Causes
 * latch in ICR whether masked or not, so a frame that came before the
 * unmask wakes the CPU at once: no wake-up is lost.
 */
static bool nic_wakes_me(void)
{
	return host_if.irq && this_cpu()->apic_id == host_if.irq_cpu;
}

void netif_idle(void)
{
	bool nic = nic_wakes_me();

	uint64_t t0;

	if (nic)
		host_if.nic->ops->irq_unmask(host_if.nic);
	t0 = rdtsc();
	cpu_idle();
	this_cpu()->idle_tsc += rdtsc() - t0;	/* for `top` (a 1-CPU host's guests) */
	if (nic)		/* also after a storm switched host_if.irq off */
		host_if.nic->ops->irq_mask(host_if.nic);
}

void netif_wait(void)
{
	if (task_running()) {		/* a background job: the main context decides */
		task_yield(TASK_WAIT);
		return;
	}
	/* guests' frames that wait for the wire are this CPU's to send */
	if (nic_wakes_me() && !sched_load(this_cpu()->index) && !task_busy() &&
	    !gnet_tx_backlog())
		netif_idle();
	else
		cpu_relax();
}

/* Find every card, start the chosen one; the error says why none runs. */
static int start_nic(const char *opt)
{
	const struct nic_found *f;
	char want[24];
	int err;

	host_if.nr_found = nic_scan(host_if.found, NIC_MAX_FOUND);
	if (nic_sel_parse(opt, &host_if.sel)) {
		pr_err("net: nic=%s is neither pci:BB:DD.F nor a MAC address: networking is off",
		       opt);
		return -EINVAL;
	}
	err = nic_start(host_if.found, host_if.nr_found, &host_if.sel, &host_if.nic,
			&host_if.in_use);
	f = &host_if.found[host_if.in_use];
	nic_sel_format(&host_if.sel, want);
	if (err == -ENODEV)
		pr_info("net: %u supported NICs, none is %s: networking is off", host_if.nr_found,
			want);
	else if (err)
		pr_err("net: %s at pci:%02x:%02x.%x did not start (%d): networking is off",
		       f->drv->name, f->pci.bus, f->pci.dev, f->pci.fn, err);
	return err;
}

static void fill_config(struct net_config *cfg, struct nic *n)
{
	for (int i = 0; i < 6; i++)
		cfg->mac[i] = n->mac[i];
	cfg->xmit = xmit;
	cfg->xmit_ctx = n;
	if (n->ops->tx_frame)
		cfg->tx_frame = tx_frame;
	if (n->tso && n->ops->xmit_tso) {
		cfg->xmit_tso = xmit_tso;
		cfg->tso_max = NIC_TSO_MAX;
	}
	cfg->seed = seed();
	cfg->max_conns = 16;
	cfg->tx_tcp_csum = n->tx_csum;
}

/*
 * The switch's ports for the stack and the NIC.  The NIC must hear the
 * guests' MACs: e1000/e1000e go promiscuous (RCTL.UPE/MPE) and the switch
 * drops what is for no port; virtio-net has no set_promisc and needs none
 * while VIRTIO_NET_F_CTRL_RX is not negotiated (it filters nothing then).
 */
static int start_switch(struct nic *n)
{
	host_if.local_port = sw_add_port(&host_if.sw, SW_LOCAL, n->mac, 0, local_out, NULL);
	host_if.uplink_port = sw_add_port(&host_if.sw, SW_UPLINK, n->mac, 0, uplink_out, n);
	if (host_if.local_port < 0 || host_if.uplink_port < 0)
		return -EINVAL;
	if (n->ops->set_promisc) {
		n->ops->set_promisc(n, true);
		host_if.promisc = true;
	}
	return 0;
}

int netif_init(const char *nic_opt)
{
	struct net_config cfg = { 0 };
	int err;

	sw_init(&host_if.sw);
	host_if.local_port = host_if.uplink_port = -1;
	err = start_nic(nic_opt);
	host_if.probe_err = err;
	if (err)
		return err;
	fill_config(&cfg, host_if.nic);
	err = net_init(&host_if.stack, &cfg);
	if (!err)
		err = start_switch(host_if.nic);
	if (err)
		return err;
	host_if.tx_reserve = tx_reserve(host_if.nic);
	net_set_time(&host_if.stack, time_now_us());
	host_if.present = true;
	setup_irq();
	return 0;
}

void netif_poll(void)
{
	if (!host_if.present)
		return;
	if (__atomic_load_n(&host_if.irq_storm, __ATOMIC_RELAXED) && !host_if.storm_told) {
		host_if.storm_told = true;	/* the NIC stays masked: netif_idle */
		pr_warn("net: PCI line %u fires without the NIC: masked, polling instead",
			host_if.irq_line);
	}
	netif_lock();
	net_set_time(&host_if.stack, time_now_us());
	/* the ring's worth many times over, not for ever: a LAN that floods
	 * faster than this CPU takes frames must not hold the network lock
	 * (guests' exits wait for it) and the shell for good */
	net_rx_batch(&host_if.stack, true);
	for (int i = 0; i < NETIF_POLL_PASSES; i++)
		if (nic_poll(host_if.nic, rx, &host_if.stack, 64) < 64)
			break;
	net_rx_batch(&host_if.stack, false);
	net_poll(&host_if.stack, time_now_us());	/* the batch's ACKs */
	gnet_timers(time_now_us());
	gnet_tx_round();		/* after ferry's own: the reserve is theirs */
	nic_tx_kick(host_if.nic);
	netif_unlock();
	gnet_deliver();
}

int netif_configure(uint32_t ip, unsigned int len, uint32_t gw, char *err, size_t errlen)
{
	char a[16], g[16];
	int rc;

	if (!host_if.present) {
		snprintf(err, errlen, "no network interface");
		return -ENODEV;
	}
	if (len == 0 || len > 30) {
		snprintf(err, errlen, "prefix length /%u is not 1-30", len);
		return -EINVAL;
	}
	net_format_ipv4(ip, a);
	net_format_ipv4(gw, g);
	netif_lock();
	net_set_time(&host_if.stack, time_now_us());
	rc = net_set_ipv4(&host_if.stack, ip, len, gw);
	if (!rc)		/* no guest may speak from it */
		sw_set_local_ip(&host_if.sw, ip);
	netif_unlock();
	if (rc)
		snprintf(err, errlen, "the stack refused %s/%u%s%s (off-link gateway?)", a, len,
			 gw ? " gw " : "", gw ? g : "");
	else
		pr_info("net: address %s/%u%s%s", a, len, gw ? ", gateway " : "", gw ? g : "");
	return rc;
}

bool netif_mac(uint8_t mac[6])
{
	if (!host_if.nic)
		return false;
	memcpy(mac, host_if.nic->mac, 6);
	return true;
}
