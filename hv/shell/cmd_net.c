/* SPDX-License-Identifier: BSD-2-Clause */
/* Network commands: net, ping, arp, netstat, nettest. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hv/lib/errtext.h"
#include "arch/x86/cpu.h"
#include "hv/gnet.h"
#include "hv/lib/crc32.h"
#include "hv/migrate/migrate.h"
#include "hv/net/nettest.h"
#include "hv/netif.h"
#include "hv/sched.h"
#include "hv/shell/cmd_net.h"
#include "hv/shell/cmd_vm.h"
#include "hv/shell/parse.h"
#include "hv/shell/shell.h"
#include "hv/vm.h"
#include "hv/vm_devices.h"

static bool need_net(const char *cmd)
{
	if (host_if.present)
		return true;
	if (!host_if.nr_found)
		shell_error(cmd, "no network interface (ferry found no e1000, e1000e or "
			    "virtio-net NIC)");
	else
		shell_error(cmd, "no network interface (%u NICs found, none started: see `net`)",
			    host_if.nr_found);
	return false;
}

/* While a network command waits: keep frames moving, let Ctrl-C through. */
static bool wait_step(void)
{
	netif_poll();
	if (shell_interrupted())
		return false;
	cpu_relax();
	return true;
}

static void show_found(const struct nic_found *f, const char *what)
{
	char mac[18];

	net_format_mac(f->mac, mac);
	shell_printf("%s %s at pci:%02x:%02x.%x, MAC %s\n", what, f->drv->name, f->pci.bus,
		     f->pci.dev, f->pci.fn, f->mac_ok ? mac : "unknown");
}

/* The other cards ferry found, and how to choose one of them. */
static void show_others(void)
{
	for (unsigned int i = 0; i < host_if.nr_found; i++)
		if (!host_if.present || i != host_if.in_use)
			show_found(&host_if.found[i], "other: ");
	if (host_if.nr_found > 1)
		shell_printf("       (nic=pci:BB:DD.F or nic=MAC on ferry's command line chooses)\n");
}

static void show_nic(void)
{
	struct nic *n = host_if.nic;
	char mac[18];

	net_format_mac(n->mac, mac);
	shell_printf("nic:   %s (%s) at pci:%02x:%02x.%x, MAC %s, link %s\n", n->driver,
		     n->model, n->pci.bus, n->pci.dev, n->pci.fn, mac,
		     nic_link_up(n) ? "up" : "down");
	show_others();
	if (host_if.irq)
		shell_printf("irq:   PCI line %u, %lu interrupts (they wake the shell CPU)\n",
			     host_if.irq_line, host_if.irqs);
	else
		shell_printf("irq:   none (PCI line %u%s): polled\n", host_if.irq_line,
			     host_if.irq_storm ? ", masked: it fired without the NIC" : "");
	shell_printf("offload: tx checksum %s (%lu frames), TSO %s (%lu frames), "
		     "rx checksum verified in %lu frames\n", n->tx_csum ? "on" : "off",
		     n->stats.tx_csum, n->tso ? "on" : "off", n->stats.tx_tso, n->stats.rx_csum);
	if (n->stats.dev_errors)
		shell_printf("device: %lu values from the NIC refused (bad ids or lengths)\n",
			     n->stats.dev_errors);
}

static void show_net(void)
{
	struct netstack *s = &host_if.stack;
	const struct net_stats *st = &s->stats;
	const struct nic_stats *ns = &host_if.nic->stats;
	char ip[16], gw[16];

	net_format_ipv4(s->ip, ip);
	net_format_ipv4(s->gw, gw);
	show_nic();
	if (s->ip)
		shell_printf("ipv4:  %s/%u%s%s\n", ip, net_prefix_len(s), s->gw ? " gateway " : "",
			     s->gw ? gw : "");
	else
		shell_printf("ipv4:  not configured (net ip ADDR/LEN [gw ADDR])\n");
	shell_printf("rx:    %lu frames, %lu bytes, %lu errors, %lu dropped, %lu missed by the NIC\n",
		     st->eth.rx_frames, st->eth.rx_bytes, st->eth.rx_errors + ns->rx_errors,
		     st->eth.rx_dropped, ns->rx_missed);
	shell_printf("tx:    %lu frames, %lu bytes, %lu errors, %lu ring-full\n",
		     st->eth.tx_frames, st->eth.tx_bytes, st->eth.tx_errors, st->eth.tx_busy);
	shell_printf("ip:    %lu in, %lu out, %lu bad, %lu bad checksum, %lu fragments dropped\n",
		     st->ip.rx_packets, st->ip.tx_packets, st->ip.rx_errors, st->ip.rx_bad_csum,
		     st->ip.rx_frags);
	shell_printf("tcp:   %lu in, %lu out, %lu retransmits, %lu resets sent, %lu bad\n",
		     st->tcp.rx_segs, st->tcp.tx_segs, st->tcp.retransmits, st->tcp.tx_resets,
		     st->tcp.rx_errors + st->tcp.rx_bad_csum);
	shell_printf("       %lu fast retransmits, %lu timeouts, %lu tail probes, %lu undone as "
		     "spurious; in: %lu out of order, %lu outside the window, %lu duplicate ACKs\n",
		     st->tcp.fast_retransmits, st->tcp.rto_timeouts, st->tcp.tail_probes,
		     st->tcp.spurious_undos, st->tcp.rx_ooo, st->tcp.rx_out_of_window,
		     st->tcp.rx_dup_acks);
}

/* A guest's port on the switch: frames each way, drops by reason. */
static void show_port(const char *pfx, const struct gnet_stats *st)
{
	static const char *const q[] = { "rx queue full", "the NIC refused it",
					 "broadcast or multicast over half its rx queue" };
	const uint64_t qn[] = { st->rx_qfull, st->rx_nic_drop, st->rx_flood_drop };

	shell_printf("%sfrom guest %lu frames, %lu bytes; to guest %lu frames, %lu bytes; "
		     "management %s\n", pfx, st->sw.in_frames, st->sw.in_bytes, st->sw.out_frames,
		     st->sw.out_bytes, st->mgmt ? "on" : "off");
	for (int i = 0; i < SW_NR_DROP; i++)
		if (st->sw.drops[i])
			shell_printf("%sdropped %lu: %s\n", pfx, st->sw.drops[i], sw_drop_name(i));
	for (size_t i = 0; i < sizeof(qn) / sizeof(qn[0]); i++)
		if (qn[i])
			shell_printf("%sdropped %lu: %s\n", pfx, qn[i], q[i]);
	if (st->tx_qfull)	/* the guest's NIC waited: nothing was lost */
		shell_printf("%stx queue full %lu times (the NIC waited)\n", pfx, st->tx_qfull);
	if (st->tx_waits)	/* nor here: they waited for the wire's room */
		shell_printf("%sframes waited for the wire %lu times (its share of it)\n", pfx,
			     st->tx_waits);
	if (st->tx_wire_drops)
		shell_printf("%sdropped %lu frames for a wire that took nothing for %u ms\n", pfx,
			     st->tx_wire_drops, NETIF_WIRE_STUCK_MS);
	if (st->rx_waited || st->rx_carried)
		shell_printf("%s%lu frames waited for it (paused or arriving), %lu came with it "
			     "from a migration's source\n", pfx, st->rx_waited, st->rx_carried);
	if (st->announces)
		shell_printf("%sannounced %lu times (RARP) after migration\n", pfx, st->announces);
}

void net_show_guest(struct vm *vm)
{
	struct gnet_stats st;

	if (!gnet_stats(vm, &st))
		show_port("switch:     ", &st);
}

static void guest_row(struct vm *vm, const uint8_t mac[6], const struct gnet_stats *st,
		      void *arg)
{
	char m[18];

	(void)arg;
	net_format_mac(mac, m);
	shell_printf("guest: %s, MAC %s\n", vm->name, m);
	show_port("       ", st);
}

static void show_guests(void)
{
	if (host_if.local_port >= 0)
		shell_printf("switch: guests beside ferry's address%s; %lu frames for the wire "
			     "dropped (ring full)\n", host_if.promisc ? ", NIC promiscuous" : "",
			     host_if.uplink_busy);
	gnet_for_each(guest_row, NULL);
}

/* `net WHAT NAME YES|NO`: 1 for YES, 0 for NO, or -EINVAL (said). */
static int parse_switch(int argc, char **argv, const char *yes, const char *no)
{
	if (argc != 4 || (strcmp(argv[3], yes) && strcmp(argv[3], no))) {
		shell_error("net", "usage: net %s NAME %s|%s", argv[1], yes, no);
		return -EINVAL;
	}
	return !strcmp(argv[3], yes);
}

static int no_guest_nic(const char *name)
{
	shell_error("net", "no guest named '%s' with a NIC", name);
	return -ENOENT;
}

/* net mgmt NAME on|off: may the guest reach ferry's own address? */
static int net_mgmt(int argc, char **argv)
{
	int on = parse_switch(argc, argv, "on", "off");
	struct vm *vm = on < 0 ? NULL : vm_find(argv[2]);

	if (on < 0)
		return on;
	if (!vm || gnet_set_mgmt(vm, on))
		return no_guest_nic(argv[2]);
	shell_printf("guest %s: ferry's own address (migration, nettest) %s\n", vm->name,
		     on ? "reachable" : "unreachable");
	return 0;
}

/* net link NAME up|down: plug or pull the guest NIC's cable.  The guest
 * sees its carrier go (a virtio configuration change); nothing passes
 * either way until it is plugged back.  It moves with the guest. */
static int net_link(int argc, char **argv)
{
	int up = parse_switch(argc, argv, "up", "down");
	struct vm *vm = up < 0 ? NULL : vm_find(argv[2]);

	if (up < 0)
		return up;
	/* the cable moves with the guest: a change now would be lost */
	if (vm && shell_vm_migrating("net", vm))
		return -EBUSY;
	if (!vm || vm_nic_set_link(vm, up))
		return no_guest_nic(argv[2]);
	shell_printf("guest %s: link %s\n", vm->name, up ? "up" : "down");
	return 0;
}

/* `net` with no NIC running: what was found, and why none runs. */
static int show_no_net(void)
{
	char want[24];

	nic_sel_format(&host_if.sel, want);
	if (!host_if.nr_found) {
		shell_error("net", "no network interface (ferry found no e1000, e1000e or "
			    "virtio-net NIC)");
		return -ENODEV;
	}
	shell_printf("nic:   none in use (wanted: %s; error %d)\n", want, host_if.probe_err);
	show_others();
	return -ENODEV;
}

/*
 * A migration that runs now, in or out (the foreground `migrate`, `migrate
 * -b`, or one arriving), as `migrations` lists it; NULL if none.  Its TCP
 * connection is bound to the host's address: changed under it, the
 * migration stalls until its silence timeout, and one past COMMIT ends in
 * doubt with the guest paused.
 */
static const struct mig_entry *migration_running(void)
{
	const struct mig_entry *e;

	for (unsigned int i = 0; (e = mig_history_at(i)); i++)
		if (e->outcome == MIG_RUNNING)
			return e;
	return NULL;
}

int cmd_net(int argc, char **argv)
{
	const struct mig_entry *mig;
	char err[128];
	uint32_t ip, gwip = 0;
	unsigned int len;

	if (argc > 1 && !strcmp(argv[1], "mgmt"))
		return net_mgmt(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "link"))
		return net_link(argc, argv);
	if (argc == 1 && !host_if.present)
		return show_no_net();
	if (!need_net("net"))
		return -ENODEV;
	if (argc == 1) {
		netif_lock();
		show_net();
		show_guests();
		netif_unlock();
		return 0;
	}
	bool gw = argc == 5 && !strcmp(argv[3], "gw");
	if (strcmp(argv[1], "ip") || (argc != 3 && !gw)) {
		shell_error("net", "usage: net [ip ADDR/LEN [gw ADDR] | mgmt NAME on|off | "
			    "link NAME up|down]");
		return -EINVAL;
	}
	if (parse_ipv4_prefix(argv[2], &ip, &len)) {
		shell_error("net", "'%s' is not ADDR/LEN with LEN 1-30", argv[2]);
		return -EINVAL;
	}
	if (gw && parse_ipv4(argv[4], &gwip)) {
		shell_error("net", "gateway '%s' is not an IPv4 address", argv[4]);
		return -EINVAL;
	}
	if ((mig = migration_running())) {
		shell_error("net", "not while a migration runs (%s, %s %s): its connection "
			    "would lose this address; wait for it to end (`migrations`)",
			    mig->guest, mig->out ? "out to" : "in from", mig->peer);
		return -EBUSY;
	}
	if (netif_configure(ip, len, gwip, err, sizeof(err))) {
		shell_error("net", "%s", err);
		return -EINVAL;
	}
	shell_printf("ipv4 address %s%s%s\n", argv[2], gw ? " gateway " : "", gw ? argv[4] : "");
	return 0;
}

static void print_reply(const struct icmp_echo_reply *r)
{
	char from[16];

	net_format_ipv4(r->from, from);
	shell_printf("%u bytes from %s: icmp_seq=%u ttl=%u time=%lu.%03lu ms\n", r->len + 8,
		     from, r->seq, r->ttl, r->rtt_us / 1000, r->rtt_us % 1000);
}

int cmd_ping(int argc, char **argv)
{
	uint64_t count = 4, got = 0, sent = 0, min = ~0ull, max = 0, sum = 0;
	uint32_t dst;
	struct icmp_echo_reply r;

	if (!need_net("ping"))
		return -ENODEV;
	if (argc < 2 || argc > 3 || parse_ipv4(argv[1], &dst) ||
	    (argc == 3 && parse_u64(argv[2], 1, 1000000, &count))) {
		shell_error("ping", "usage: ping HOST [COUNT] (HOST an IPv4 address, COUNT 1-1000000)");
		return -EINVAL;
	}
	uint16_t id = (uint16_t)rdtsc();
	shell_printf("PING %s: 56 data bytes\n", argv[1]);
	bool interrupted = false;
	for (uint64_t seq = 1; seq <= count && !interrupted; seq++) {
		uint64_t deadline = netif_now_us() + 1000000;
		netif_lock();
		int rc = icmp_ping_send(&host_if.stack, dst, id, (uint16_t)seq, 56);
		netif_unlock();
		if (rc && rc != -EAGAIN) {
			shell_error("ping", "cannot send to %s: %s", argv[1], errtext(rc));
			return rc;
		}
		sent++;
		while (netif_now_us() < deadline) {
			if (!wait_step()) {
				interrupted = true;
				break;
			}
			netif_lock();
			int n = icmp_ping_reply(&host_if.stack, &r);
			netif_unlock();
			if (n == 1 && r.id == id) {
				print_reply(&r);
				got++;
				sum += r.rtt_us;
				min = r.rtt_us < min ? r.rtt_us : min;
				max = r.rtt_us > max ? r.rtt_us : max;
				if (seq == count)
					break;
			}
		}
	}
	shell_printf("--- %s ping statistics ---\n%lu packets transmitted, %lu received, %lu%% packet loss\n",
		     argv[1], sent, got, sent ? (sent - got) * 100 / sent : 0);
	if (got)
		shell_printf("rtt min/avg/max = %lu.%03lu/%lu.%03lu/%lu.%03lu ms\n", min / 1000,
			     min % 1000, sum / got / 1000, sum / got % 1000, max / 1000, max % 1000);
	return got ? 0 : -EHOSTUNREACH;
}

static void arp_row(const struct arp_info *a, void *arg)
{
	char ip[16], mac[18];

	(void)arg;
	net_format_ipv4(a->ip, ip);
	net_format_mac(a->mac, mac);
	shell_printf("%-16s %-18s %s\n", ip, a->complete ? mac : "(incomplete)",
		     a->complete ? "" : "");
	if (a->complete)
		shell_printf("%-16s expires in %lu s\n", "", a->expires_in_ms / 1000);
}

int cmd_arp(int argc, char **argv)
{
	(void)argv;
	if (!need_net("arp"))
		return -ENODEV;
	if (argc > 1) {
		shell_error("arp", "takes no arguments");
		return -EINVAL;
	}
	shell_printf("%-16s %-18s\n", "ADDRESS", "MAC");
	netif_lock();
	arp_foreach(&host_if.stack, arp_row, NULL);
	netif_unlock();
	return 0;
}

static void conn_row(const struct tcp_info *t, void *arg)
{
	char l[16], r[16], la[24], ra[24];

	(void)arg;
	net_format_ipv4(t->lip, l);
	net_format_ipv4(t->rip, r);
	snprintf(la, sizeof(la), "%s:%u", l, t->lport);
	snprintf(ra, sizeof(ra), "%s:%u", t->state == TCP_LISTEN ? "*" : r, t->rport);
	shell_printf("%-22s %-22s %-12s %12lu %12lu %8lu %6u %7u\n", la, ra, tcp_state_name(t->state),
		     t->bytes_in, t->bytes_out, t->retransmits, t->cwnd / (t->mss ? t->mss : 1),
		     t->srtt_us / 1000);
}

int cmd_netstat(int argc, char **argv)
{
	(void)argv;
	if (!need_net("netstat"))
		return -ENODEV;
	if (argc > 1) {
		shell_error("netstat", "takes no arguments");
		return -EINVAL;
	}
	shell_printf("%-22s %-22s %-12s %12s %12s %8s %6s %7s\n", "LOCAL", "REMOTE", "STATE",
		     "BYTES-IN", "BYTES-OUT", "RETRANS", "CWND", "RTT(ms)");
	netif_lock();
	tcp_foreach(&host_if.stack, conn_row, NULL);
	netif_unlock();
	return 0;
}

static void rate_line(const char *what, uint64_t bytes, uint64_t us, uint32_t crc)
{
	uint64_t rate = nettest_rate(bytes, us);

	shell_printf("nettest: %s %lu bytes in %lu.%03lu s: %lu.%02lu MB/s, crc32 %08x\n", what,
		     bytes, us / 1000000, us / 1000 % 1000, rate / 1000000, rate / 10000 % 100, crc);
}

/* Serve one connection to its end; false if interrupted. */
static bool serve_one(struct tcp_conn *c, struct nettest_rx *rx)
{
	int rc;

	netif_lock();
	nettest_rx_init(rx, c, netif_now_us());
	netif_unlock();
	for (;;) {
		netif_lock();
		rc = nettest_rx_poll(rx, netif_now_us());
		netif_unlock();
		if (rc)
			break;
		if (!wait_step()) {
			netif_lock();
			tcp_abort(c);
			netif_unlock();
			return false;
		}
	}
	if (rc < 0)
		shell_printf("nettest: connection failed after %lu bytes: %s\n", rx->bytes,
			     errtext(rc));
	else
		rate_line("received", rx->bytes, rx->end_us - rx->start_us, rx->crc);
	netif_lock();
	tcp_close(c);
	netif_unlock();
	return true;
}

static int nettest_listen(uint16_t port)
{
	struct tcp_conn *l, *c;
	struct nettest_rx *rx = malloc(sizeof(*rx));
	int rc;

	if (!rx)
		return -ENOMEM;
	netif_lock();
	rc = tcp_listen(&host_if.stack, port, 4, &l);
	netif_unlock();
	if (rc) {
		free(rx);
		shell_error("nettest", "cannot listen on port %u: %s", port, errtext(rc));
		return rc;
	}
	shell_printf("nettest: listening on port %u (Ctrl-C stops)\n", port);
	for (bool go = true; go; ) {
		netif_lock();
		rc = tcp_accept(l, &c);
		netif_unlock();
		if (rc == 0)
			go = serve_one(c, rx);
		else
			go = wait_step();
	}
	netif_lock();
	tcp_close(l);
	netif_unlock();
	free(rx);
	shell_printf("nettest: stopped\n");
	return 0;
}

static int nettest_send(uint32_t ip, uint16_t port, uint64_t mb)
{
	struct nettest_tx *tx = malloc(sizeof(*tx));
	struct tcp_conn *c = NULL;
	int rc;

	if (!tx)
		return -ENOMEM;
	netif_lock();
	rc = tcp_connect(&host_if.stack, ip, port, &c);
	netif_unlock();
	while (rc == 0) {
		netif_lock();
		rc = tcp_connected(c);
		netif_unlock();
		if (rc == 0 && !wait_step())
			rc = -EINTR;
	}
	if (rc < 0) {
		shell_error("nettest", "cannot connect: %s", errtext(rc));
		if (c) {		/* refused, timed out or interrupted: ours to give back */
			netif_lock();
			tcp_abort(c);
			netif_unlock();
		}
		free(tx);
		return rc;
	}
	netif_lock();
	nettest_tx_init(tx, c, mb << 20, netif_now_us());
	netif_unlock();
	for (rc = 0; rc == 0; ) {
		netif_lock();
		rc = nettest_tx_poll(tx, netif_now_us());
		netif_unlock();
		if (rc == 0 && !wait_step())
			rc = -EINTR;
	}
	if (rc > 0)
		rate_line("sent", tx->total, tx->end_us - tx->start_us, tx->crc);
	else
		shell_error("nettest", "send failed after %lu bytes: %s", tx->queued, errtext(rc));
	netif_lock();
	if (rc > 0)
		tcp_close(c);
	else
		tcp_abort(c);
	netif_unlock();
	free(tx);
	return rc > 0 ? 0 : rc;
}

int cmd_nettest(int argc, char **argv)
{
	uint64_t port, mb;
	uint32_t ip;

	if (!need_net("nettest"))
		return -ENODEV;
	if (argc == 3 && !strcmp(argv[1], "listen") && !parse_u64(argv[2], 1, 65535, &port))
		return nettest_listen(port);
	if (argc == 5 && !strcmp(argv[1], "send") && !parse_ipv4(argv[2], &ip) &&
	    !parse_u64(argv[3], 1, 65535, &port) && !parse_u64(argv[4], 1, 1 << 20, &mb))
		return nettest_send(ip, port, mb);
	shell_error("nettest", "usage: nettest listen PORT | nettest send HOST PORT MB");
	return -EINVAL;
}
