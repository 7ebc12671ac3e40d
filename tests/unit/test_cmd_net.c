/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `net ip` as the shell parses it (hv/shell/cmd_net.c), against fakes of
 * the stack and of the migrations it would change the address under.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "drivers/nicsel.h"
#include "hv/gnet.h"
#include "hv/migrate/migrate.h"
#include "hv/net/arp.h"
#include "hv/net/icmp.h"
#include "hv/net/nettest.h"
#include "hv/net/tcp.h"
#include "hv/netif.h"
#include "hv/shell/cmd_net.h"
#include "hv/shell/cmd_vm.h"
#include "hv/shell/shell.h"
#include "tests/unit/shell_said.h"
#include "hv/vm.h"
#include "hv/vm_devices.h"

/* ---- fakes: what cmd_net.c reaches ---- */

struct netif host_if;
static struct mig_entry hist[2];	/* `migrations`, oldest first */
static unsigned int nr_hist;
static unsigned int configured;		/* netif_configure calls */

const struct mig_entry *mig_history_at(unsigned int i) { return i < nr_hist ? &hist[i] : NULL; }
int netif_configure(uint32_t ip, unsigned int len, uint32_t gw, char *err, size_t errlen)
{ (void)ip; (void)len; (void)gw; (void)err; (void)errlen; configured++; return 0; }

void arp_foreach(struct netstack *s, arp_visit_fn fn, void *arg) { (void)s; (void)fn; (void)arg; }
void gnet_for_each(void (*fn)(struct vm *, const uint8_t mac[6], const struct gnet_stats *, void *),
		   void *arg) { (void)fn; (void)arg; }
int gnet_set_mgmt(struct vm *vm, bool on) { (void)vm; (void)on; return 0; }
int gnet_stats(struct vm *vm, struct gnet_stats *o) { (void)vm; (void)o; return -ENOENT; }
int icmp_ping_reply(struct netstack *s, struct icmp_echo_reply *o) { (void)s; (void)o; return 0; }
int icmp_ping_send(struct netstack *s, uint32_t d, uint16_t id, uint16_t seq, size_t len)
{ (void)s; (void)d; (void)id; (void)seq; (void)len; return 0; }
void net_format_ipv4(uint32_t ip, char b[16]) { (void)ip; strcpy(b, "x"); }
void net_format_mac(const uint8_t *m, char b[18]) { (void)m; strcpy(b, "x"); }
unsigned net_prefix_len(const struct netstack *s) { (void)s; return 24; }
void netif_lock(void) {}
void netif_unlock(void) {}
void netif_poll(void) {}
uint64_t netif_now_us(void) { return 0; }
uint64_t nettest_rate(uint64_t b, uint64_t us) { (void)b; (void)us; return 0; }
void nettest_rx_init(struct nettest_rx *r, struct tcp_conn *c, uint64_t now)
{ (void)r; (void)c; (void)now; }
int nettest_rx_poll(struct nettest_rx *r, uint64_t now) { (void)r; (void)now; return 1; }
void nettest_tx_init(struct nettest_tx *t, struct tcp_conn *c, uint64_t n, uint64_t now)
{ (void)t; (void)c; (void)n; (void)now; }
int nettest_tx_poll(struct nettest_tx *t, uint64_t now) { (void)t; (void)now; return 1; }
void nic_sel_format(const struct nic_sel *s, char b[24]) { (void)s; strcpy(b, "x"); }
const char *sw_drop_name(enum sw_drop d) { (void)d; return ""; }
void tcp_abort(struct tcp_conn *c) { (void)c; }
int tcp_accept(struct tcp_conn *l, struct tcp_conn **o) { (void)l; (void)o; return -EAGAIN; }
void tcp_close(struct tcp_conn *c) { (void)c; }
int tcp_connect(struct netstack *s, uint32_t ip, uint16_t p, struct tcp_conn **o)
{ (void)s; (void)ip; (void)p; (void)o; return -ENOMEM; }
int tcp_connected(struct tcp_conn *c) { (void)c; return -1; }
void tcp_foreach(struct netstack *s, tcp_visit_fn fn, void *arg) { (void)s; (void)fn; (void)arg; }
int tcp_listen(struct netstack *s, uint16_t p, unsigned b, struct tcp_conn **o)
{ (void)s; (void)p; (void)b; (void)o; return -ENOMEM; }
const char *tcp_state_name(enum tcp_state st) { (void)st; return ""; }
struct vm *vm_find(const char *name) { (void)name; return NULL; }
int vm_nic_set_link(struct vm *vm, bool up) { (void)vm; (void)up; return 0; }
bool shell_vm_migrating(const char *cmd, const struct vm *vm) { (void)cmd; (void)vm; return false; }

static int run(const char *line)
{
	static const struct shell_cmd tab[] = { { "net", "", "", cmd_net } };

	said[0] = 0;
	return shell_exec(tab, 1, line);
}

static void entry(bool out_, const char *guest, const char *peer, enum mig_outcome o)
{
	struct mig_entry *e = &hist[nr_hist++];

	memset(e, 0, sizeof(*e));
	e->out = out_;
	snprintf(e->guest, sizeof(e->guest), "%s", guest);
	snprintf(e->peer, sizeof(e->peer), "%s", peer);
	e->outcome = o;
}

/* The host's address stays while a migration runs, in or out: its TCP
 * connection would stall under a new one (and one past COMMIT end in
 * doubt).  Ended ones do not count. */
static void test_net_ip_waits_for_migrations(void **st)
{
	(void)st;
	host_if.present = true;
	shell_set_output(said_out, NULL);
	entry(true, "g0", "10.0.0.3:7447", MIG_DONE);
	entry(false, "g1", "10.0.0.4:40000", MIG_RUNNING);
	assert_int_equal(run("net ip 10.0.0.9/24"), -EBUSY);
	assert_string_equal(said, "error: net: not while a migration runs (g1, in from "
			    "10.0.0.4:40000): its connection would lose this address; wait for it "
			    "to end (`migrations`)\n");
	hist[1].out = true;
	assert_int_equal(run("net ip 10.0.0.9/24 gw 10.0.0.1"), -EBUSY);
	assert_non_null(strstr(said, "(g1, out to 10.0.0.4:40000)"));
	assert_int_equal(configured, 0);
	hist[1].outcome = MIG_IN_DOUBT;
	assert_int_equal(run("net ip 10.0.0.9/24"), 0);
	assert_int_equal(configured, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_net_ip_waits_for_migrations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
