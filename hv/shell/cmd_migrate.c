/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Migration commands: migrate, migrate listen, migrate key, trust, untrust,
 * trusted, migrations, debug migrate.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "arch/x86/task.h"
#include "hv/crypto/keyfile.h"
#include "hv/lib/log.h"
#include "hv/migrate/migrate.h"
#include "hv/migrate/trust.h"
#include "hv/net/net.h"
#include "hv/netif.h"
#include "hv/shell/cmd_migrate.h"
#include "hv/shell/parse.h"
#include "hv/shell/shell.h"
#include "hv/vm.h"

static void allow_text(const struct mig_listen_cfg *c, char *buf, size_t len)
{
	size_t n = 0;
	char ip[16];

	if (!c->nr_allow) {
		snprintf(buf, len, "any address");
		return;
	}
	buf[0] = 0;
	for (unsigned int i = 0; i < c->nr_allow && n < len; i++) {
		net_format_ipv4(c->allow[i], ip);
		n += snprintf(buf + n, len - n, "%s%s", i ? ", " : "", ip);
	}
}

/* "A,B,C" into cfg->allow. */
static int parse_allow(char *list, struct mig_listen_cfg *cfg)
{
	char *save = NULL;

	if (!list_valid(list)) {	/* "from ," must not read as "from anyone" */
		shell_error("migrate", "bad address list '%s' after 'from': ADDR[,ADDR...] "
			    "with no empty entry", list);
		return -EINVAL;
	}
	for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (cfg->nr_allow == MIG_ALLOW_MAX) {
			shell_error("migrate", "at most %d addresses after 'from'", MIG_ALLOW_MAX);
			return -EINVAL;
		}
		if (parse_ipv4(tok, &cfg->allow[cfg->nr_allow])) {
			shell_error("migrate", "'%s' is not an IPv4 address", tok);
			return -EINVAL;
		}
		cfg->nr_allow++;
	}
	return 0;
}

#define LISTEN_USAGE	"usage: migrate listen [PORT] [from ADDR[,ADDR...]] [max=N] [insecure] " \
			"(in any order) | migrate listen off"

/*
 * `migrate listen`'s options, each at most once and in any order: PORT,
 * from LIST, max=N, insecure.
 */
static int listen_args(int argc, char **argv, struct mig_listen_cfg *cfg)
{
	bool port_given = false, from_given = false;
	uint64_t n;
	int rc;

	for (int i = 2; i < argc; i++) {
		const char *w = argv[i];
		bool insecure = !strcmp(w, "insecure"), from = !strcmp(w, "from");
		bool max = !strncmp(w, "max=", 4), port = !insecure && !from && !max;

		if ((insecure && cfg->insecure) || (max && cfg->max_in) ||
		    (from && (from_given || i + 1 == argc)) || (port && port_given)) {
			shell_error("migrate", LISTEN_USAGE);	/* twice, or 'from' with no list */
			return -EINVAL;
		}
		if (insecure) {
			cfg->insecure = true;
		} else if (max) {
			if (parse_u64(w + 4, 1, MIG_IN_MAX, &n)) {
				shell_error("migrate", "bad %s: guests arriving at once, 1-%d", w,
					    MIG_IN_MAX);
				return -EINVAL;
			}
			cfg->max_in = (unsigned int)n;
		} else if (from) {
			if ((rc = parse_allow(argv[++i], cfg)))
				return rc;
			from_given = true;
		} else {
			if (parse_u64(w, 1, 65535, &n)) {
				shell_error("migrate", "bad port '%s' (1-65535)", w);
				return -EINVAL;
			}
			cfg->port = (uint16_t)n;
			port_given = true;
		}
	}
	return 0;
}

static int listen_cmd(int argc, char **argv)
{
	struct mig_listen_cfg cfg = { .port = MIG_PORT };
	char err[96], allow[160];
	int rc;

	if (argc == 3 && !strcmp(argv[2], "off")) {
		mig_listen_off();
		shell_printf("migrate: listener off\n");
		return 0;
	}
	if ((rc = listen_args(argc, argv, &cfg)))
		return rc;
	if ((rc = mig_listen(&cfg, err, sizeof(err)))) {
		shell_error("migrate", "%s", err);
		return rc;
	}
	allow_text(&cfg, allow, sizeof(allow));
	shell_printf("migrate: listening on port %u (from %s)%s, %u at once\n", cfg.port, allow,
		     cfg.insecure ? ", insecure" : ", trusted keys only",
		     cfg.max_in ? cfg.max_in : MIG_IN_MAX);
	if (cfg.insecure)
		shell_printf("warning: migrate: insecure listener: guests arrive in the clear from "
			     "anyone who can reach this port; every migration will warn\n");
	return 0;
}

/* HOST[:PORT]: an address, or the name of a trusted peer with one.  host
 * stays as given: `migrate -b` says it back. */
static int target(const char *host, struct mig_out_args *a)
{
	const struct mig_peer *p = NULL;
	const char *colon = strchr(host, ':');
	size_t len = colon ? (size_t)(colon - host) : strlen(host);
	char name[MIG_PEER_NAME_MAX + 1];
	uint64_t port = MIG_PORT;

	if (!parse_host_port(host, MIG_PORT, &a->ip, &a->port))
		return 0;
	if (len < sizeof(name)) {
		memcpy(name, host, len);
		name[len] = 0;
		p = mig_trust_by_name(mig_keyring(), name);
	}
	if (!p || (colon && parse_u64(colon + 1, 1, 65535, &port))) {
		shell_error("migrate", "'%s' is not HOST[:PORT] (an IPv4 address, or the name "
			    "of a trusted peer)", host);
		return -EINVAL;
	}
	if (!p->ip) {
		shell_error("migrate", "trusted peer '%s' has no address: give it (migrate NAME "
			    "ADDR), or trust it with one", name);
		return -EINVAL;
	}
	a->ip = p->ip;
	a->port = (uint16_t)port;
	a->peer_name = p->name;
	return 0;
}

static int out_args(int argc, char **argv, struct mig_out_args *a)
{
	static const char *const keys[] = {
		"downtime", "bandwidth", "converge", "downtime-max", "max-rounds", "timeout", NULL,
	};
	const char *v[6];
	uint64_t n;
	int bad, rc;

	memset(a, 0, sizeof(*a));
	if (!name_valid(argv[1])) {	/* no guest has it; nor may a copy of it
					 * (migrate -b) shorten it into one's */
		shell_error("migrate", "no guest named '%s'", argv[1]);
		return -ENOENT;
	}
	a->name = argv[1];
	a->net = &host_if.stack;
	if (argc > 3 && !strcmp(argv[argc - 1], "insecure")) {
		a->insecure = true;
		argc--;
	}
	if ((rc = target(argv[2], a)))
		return rc;
	if ((rc = kv_parse(argc - 3, argv + 3, keys, v, &bad))) {
		shell_error("migrate", "%s: '%s'", kv_strerror(rc), argv[3 + bad]);
		return rc;
	}
	if (v[0] && parse_u64(v[0], 1, 60000, &n) == 0)
		a->policy.downtime_ms = (uint32_t)n;
	else if (v[0])
		goto bad_value;
	if (v[1] && parse_u64(v[1], 1, 100000, &n) == 0)
		a->bandwidth_Bps = n * 1000000;
	else if (v[1])
		goto bad_value;
	if (v[2] && strcmp(v[2], "auto") && strcmp(v[2], "off"))
		goto bad_value;
	a->policy.converge = v[2] && !strcmp(v[2], "off") ? MIG_CONVERGE_OFF : MIG_CONVERGE_AUTO;
	if (v[3] && parse_u64(v[3], 1, 600000, &n) == 0)
		a->policy.downtime_max_ms = (uint32_t)n;
	else if (v[3])
		goto bad_value;
	if (v[4] && parse_u64(v[4], 1, MIG_ROUNDS_MAX - 2, &n) == 0)
		a->policy.max_rounds = (uint32_t)n;
	else if (v[4])
		goto bad_value;
	if (v[5] && parse_u64(v[5], 1, MIG_SILENCE_MAX_US / 1000000, &n) == 0)
		a->timeout_s = (uint32_t)n;
	else if (v[5])
		goto bad_value;
	return 0;
bad_value:
	shell_error("migrate", "bad value: downtime=MS (1-60000) bandwidth=MB/s (1-100000) "
		    "converge=auto|off downtime-max=MS max-rounds=N (1-%u) timeout=S (1-%llu)",
		    MIG_ROUNDS_MAX - 2, MIG_SILENCE_MAX_US / 1000000);
	return -EINVAL;
}

/* ---- keys and trust ---- */

static int key_show(void)
{
	struct mig_keyring *kr = mig_keyring();
	char hex[KEY_HEX_LEN + 1], why[160];

	if (!kr->have_key) {
		shell_error("migrate", "%s", kr->why[0] ? kr->why : "no host key");
		return -ENOENT;
	}
	key_to_hex(kr->key.pub, hex);
	shell_printf("migrate: this host's public key: %s\n", hex);
	shell_printf("migrate: fingerprint %s\n", kr->fp_text);
	if (mig_secure_ready(kr, why, sizeof(why)))
		shell_printf("warning: migrate: %s\n", why);
	return 0;
}

static int trust_cmd(int argc, char **argv)
{
	uint8_t pub[NOISE_KEY];
	uint32_t ip = 0;
	const char *why;
	char err[160];
	int rc;

	if (argc != 4 && argc != 5) {
		shell_error("migrate", "usage: migrate trust NAME PUBKEY [ADDR]");
		return -EINVAL;
	}
	if (key_from_hex(argv[3], pub, &why)) {
		shell_error("migrate", "bad PUBKEY: %s", why);
		return -EINVAL;
	}
	if (argc == 5 && parse_ipv4(argv[4], &ip)) {
		shell_error("migrate", "'%s' is not an IPv4 address", argv[4]);
		return -EINVAL;
	}
	if (argc == 5 && !ip) {
		shell_error("migrate", "0.0.0.0 is no peer's address");
		return -EINVAL;
	}
	if ((rc = mig_trust_add(mig_keyring(), argv[2], pub, ip, err, sizeof(err)))) {
		shell_error("migrate", "%s", err);
		return rc;
	}
	shell_printf("migrate: trusting '%s' (%s)%s%s\n", argv[2],
		     mig_trust_by_name(mig_keyring(), argv[2])->fp_text,
		     argc == 5 ? " at " : " from any address", argc == 5 ? argv[4] : "");
	return 0;
}

static int trusted_list(void)
{
	const struct mig_keyring *kr = mig_keyring();
	char ip[16];

	if (!kr->nr_peers) {
		shell_printf("migrate: no trusted peers\n");
		return 0;
	}
	shell_printf("%-16s %-23s %-15s %s\n", "NAME", "FINGERPRINT", "ADDRESS", "PUBKEY");
	for (unsigned int i = 0; i < kr->nr_peers; i++) {
		const struct mig_peer *p = &kr->peer[i];
		char hex[KEY_HEX_LEN + 1];
		key_to_hex(p->pub, hex);
		if (p->ip)
			net_format_ipv4(p->ip, ip);
		shell_printf("%-16s %-23s %-15s %s\n", p->name, p->fp_text, p->ip ? ip : "any", hex);
	}
	return 0;
}

static bool is_key_cmd(const char *w)
{
	return !strcmp(w, "key") || !strcmp(w, "trust") || !strcmp(w, "untrust") ||
	       !strcmp(w, "trusted");
}

static int key_cmd(int argc, char **argv)
{
	if (!strcmp(argv[1], "trust"))
		return trust_cmd(argc, argv);
	if (argc != (strcmp(argv[1], "untrust") ? 2 : 3)) {
		shell_error("migrate", "usage: migrate key | migrate untrust NAME | migrate trusted");
		return -EINVAL;
	}
	if (!strcmp(argv[1], "key"))
		return key_show();
	if (!strcmp(argv[1], "trusted"))
		return trusted_list();
	if (mig_trust_remove(mig_keyring(), argv[2])) {
		shell_error("migrate", "no trusted peer named '%s'", argv[2]);
		return -ENOENT;
	}
	shell_printf("migrate: no longer trusting '%s'\n", argv[2]);
	return 0;
}

/* The foreground `migrate`: lines to the console, Ctrl-C cancels. */
static void sink_print(void *ctx, const char *line)
{
	(void)ctx;
	shell_printf("%s\n", line);
}

static void sink_error(void *ctx, const char *msg)
{
	(void)ctx;
	shell_error("migrate", "%s", msg);
}

static bool sink_cancelled(void *ctx)
{
	(void)ctx;
	return shell_interrupted();
}

static const struct mig_sink console_sink = { sink_print, sink_error, sink_cancelled, NULL };

/*
 * Background migrations (`migrate -b`): each runs mig_out_run() in a task
 * of its own (arch/x86/task.h), stepped by the shell CPU's background work
 * while the prompt stays free.  Its lines become host log lines, shown
 * above the prompt; `migrate cancel NAME` sets the flag its waits look at.
 */
#define BG_MAX	4

struct bg_mig {
	bool used;
	volatile bool cancel;
	char guest[VM_NAME_MAX];
	char peer_name[MIG_PEER_NAME_MAX + 1];	/* a copy: `untrust` may remove the original */
	struct mig_out_args a;
	struct mig_sink sink;
	struct mig_out *mig;
};

static struct bg_mig bg[BG_MAX];

static void bg_print(void *ctx, const char *line)
{
	(void)ctx;
	pr_info("%s", line);
}

static void bg_error(void *ctx, const char *msg)
{
	struct bg_mig *b = ctx;

	pr_err("migrate %s: %s", b->guest, msg);
}

/* Every wait of the migration comes here: the shell CPU's other work runs
 * meanwhile (the task gives the CPU back), and a cancel is seen. */
static bool bg_cancelled(void *ctx)
{
	struct bg_mig *b = ctx;

	task_yield(TASK_BUSY);
	return b->cancel;
}

static void bg_run(void *arg)
{
	struct bg_mig *b = arg;

	mig_out_finish(b->mig);		/* its last line said how it ended */
	b->used = false;
}

static struct bg_mig *bg_find(const char *guest)
{
	for (unsigned int i = 0; i < BG_MAX; i++)
		if (bg[i].used && !strcmp(bg[i].guest, guest))
			return &bg[i];
	return NULL;
}

static int bg_start(const struct mig_out_args *a, const char *host)
{
	struct bg_mig *b = NULL;
	int rc;

	for (unsigned int i = 0; i < BG_MAX && !b; i++)
		if (!bg[i].used)
			b = &bg[i];
	if (!b) {
		shell_error("migrate", "%d background migrations run already", BG_MAX);
		return -EBUSY;
	}
	memset(b, 0, sizeof(*b));
	b->a = *a;
	snprintf(b->guest, sizeof(b->guest), "%s", a->name);
	b->a.name = b->guest;
	if (a->peer_name) {
		snprintf(b->peer_name, sizeof(b->peer_name), "%s", a->peer_name);
		b->a.peer_name = b->peer_name;
	}
	/*
	 * Claimed, and listed in `migrations`, before the prompt returns; a
	 * refusal is this command's own error.  The task runs from the
	 * shell's next background step.
	 */
	b->a.sink = &console_sink;
	b->mig = mig_out_begin(&b->a, &rc);
	if (!b->mig)
		return rc;
	b->sink = (struct mig_sink){ bg_print, bg_error, bg_cancelled, b };
	b->a.sink = &b->sink;
	if (!task_spawn(bg_run, b, TASK_STACK_DEFAULT)) {
		mig_out_abandon(b->mig, "no memory for a background migration");
		shell_error("migrate", "no memory for a background migration");
		return -ENOMEM;
	}
	b->used = true;
	shell_printf("migrate: %s to %s in the background (`migrations` shows it, "
		     "`migrate cancel %s` stops it)\n", b->guest, host, b->guest);
	return 0;
}

static int cancel_cmd(int argc, char **argv)
{
	struct bg_mig *b;

	if (argc != 3) {
		shell_error("migrate", "usage: migrate cancel NAME");
		return -EINVAL;
	}
	if (!(b = bg_find(argv[2]))) {
		if (!mig_in_cancel(argv[2])) {
			shell_printf("migrate: %s's arrival cancelled; the source keeps the guest\n",
				     argv[2]);
			return 0;
		}
		shell_error("migrate", "no background migration of '%s' runs, and none "
			    "arrives that has not committed", argv[2]);
		return -ENOENT;
	}
	b->cancel = true;
	shell_printf("migrate: cancelling %s's migration (once the destination has its "
		     "COMMIT it completes regardless)\n", b->guest);
	return 0;
}

int cmd_migrate(int argc, char **argv)
{
	struct mig_out_args a;
	bool background = false;
	int rc;

	if (argc >= 2 && !strcmp(argv[1], "listen"))
		return listen_cmd(argc, argv);
	if (argc >= 2 && is_key_cmd(argv[1]))
		return key_cmd(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "cancel"))
		return cancel_cmd(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "-b")) {
		background = true;
		argv++;
		argc--;
	}
	if (argc < 3) {
		shell_error("migrate", "usage: migrate [-b] NAME HOST[:PORT] [downtime=MS] "
			    "[bandwidth=MB/s] [converge=auto|off] [downtime-max=MS] [max-rounds=N] "
			    "[timeout=S] [insecure] | migrate cancel NAME | "
			    "migrate listen ... | migrate key | trust NAME PUBKEY [ADDR] | "
			    "untrust NAME | trusted");
		return -EINVAL;
	}
	if (!host_if.present) {
		shell_error("migrate", "no network interface (ferry found no e1000 NIC)");
		return -ENODEV;
	}
	if (!host_if.stack.ip) {
		shell_error("migrate", "no IPv4 address here yet (net ip ADDR/LEN)");
		return -EINVAL;
	}
	if ((rc = out_args(argc, argv, &a)))
		return rc;
	if (background)
		return bg_start(&a, argv[2]);
	a.sink = &console_sink;
	rc = mig_out_run(&a);
	if (rc == -ECANCELED)
		shell_reported();	/* the failure line said it all */
	return rc;
}

/* Live figures of the migrations that run now, in or out. */
static void show_running(void)
{
	const struct mig_entry *e;
	uint64_t now = netif_now_us();
	bool head = false;

	for (unsigned int i = 0; (e = mig_history_at(i)); i++) {
		const struct mig_live *l = &e->live;
		uint64_t up = now - l->start_us;

		if (e->outcome != MIG_RUNNING || !e->mem_bytes)
			continue;
		if (!head)
			shell_printf("running:\n%-16s %-3s %-21s %-10s %5s %9s %9s %9s %8s %12s "
				     "%8s %10s\n", "GUEST", "DIR", "PEER", "PHASE", "ROUND",
				     "SENT(MB)", "PAGES", "DIRTY", "MB/s", "DOWNTIME~ms",
				     "THROTTLE", "ELAPSED(s)");
		head = true;
		shell_printf("%-16s %-3s %-21s %-10s %5u %5lu.%03lu %9lu %9lu %5lu.%02lu %12lu "
			     "%7u%% %6lu.%03lu\n", e->guest, e->out ? "out" : "in", e->peer,
			     l->phase ? l->phase : "-", e->rounds, e->bytes / 1000000,
			     e->bytes / 1000 % 1000, l->pages, l->dirty, l->rate_Bps / 1000000,
			     l->rate_Bps / 10000 % 100, (l->downtime_us + 999) / 1000,
			     l->throttle_pct, up / 1000000, up / 1000 % 1000);
	}
	if (!head)
		shell_printf("running: none\n");
}

int cmd_migrations(int argc, char **argv)
{
	struct mig_listen_cfg cfg;
	const struct mig_entry *e;
	char allow[160];

	(void)argv;
	if (argc > 1) {
		shell_error("migrations", "takes no arguments");
		return -EINVAL;
	}
	if (mig_listening(&cfg)) {
		allow_text(&cfg, allow, sizeof(allow));
		shell_printf("listener: port %u (from %s)%s, %u at once\n", cfg.port, allow,
			     cfg.insecure ? ", insecure" : ", trusted keys only",
			     cfg.max_in ? cfg.max_in : MIG_IN_MAX);
	} else {
		shell_printf("listener: off\n");
	}
	shell_printf("%-16s  %-3s  %-16s %-21s %-9s %9s %13s %7s %9s  %-30s %s\n", "ID", "DIR",
		     "GUEST", "PEER", "OUTCOME", "TOTAL(s)", "DOWNTIME(ms)", "ROUNDS", "SENT/MEM",
		     "KEY", "WHY");
	for (unsigned int i = 0; (e = mig_history_at(i)); i++) {
		uint64_t x100 = e->mem_bytes ? e->bytes * 100 / e->mem_bytes : 0;
		shell_printf("%016lx  %-3s  %-16s %-21s %-9s %5lu.%03lu %9lu.%03lu %7u %6lu.%02lu  "
			     "%-30s %s\n", e->id, e->out ? "out" : "in", e->guest, e->peer,
			     mig_outcome_name(e->outcome), e->total_us / 1000000,
			     e->total_us / 1000 % 1000, e->downtime_us / 1000, e->downtime_us % 1000,
			     e->rounds, x100 / 100, x100 % 100, e->key[0] ? e->key : "-", e->why);
	}
	show_running();
	return 0;
}

int cmd_debug_migrate(int argc, char **argv)
{
	enum mig_point p;
	uint64_t secs = 20;

	if (argc == 2 && !strcmp(argv[1], "off")) {
		memset(&mig_debug, 0, sizeof(mig_debug));
		shell_printf("debug migrate: off\n");
		return 0;
	}
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "hold") && !mig_point_parse(argv[2], &p) &&
	    (argc == 3 || !parse_u64(argv[3], 1, 600, &secs))) {
		mig_debug.hold_at = p;
		mig_debug.hold_s = (uint32_t)secs;
		shell_printf("debug migrate: the next migration holds %lu s at %s\n", secs,
			     mig_point_name(p));
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "abort") && !mig_point_parse(argv[2], &p)) {
		mig_debug.abort_at = p;
		shell_printf("debug migrate: the next migration aborts at %s\n", mig_point_name(p));
		return 0;
	}
	shell_error("debug", "usage: debug migrate hold PHASE [SECS] | abort PHASE | off "
		    "(PHASE: precopy stopcopy ready commit)");
	return -EINVAL;
}
