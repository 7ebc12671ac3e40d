/* SPDX-License-Identifier: BSD-2-Clause */
/* Migration commands: migrate, migrate listen, migrations, debug migrate. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "hv/migrate/migrate.h"
#include "hv/net/net.h"
#include "hv/netif.h"
#include "hv/shell/cmd_migrate.h"
#include "hv/shell/parse.h"
#include "hv/shell/shell.h"

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

static int listen_cmd(int argc, char **argv)
{
	struct mig_listen_cfg cfg = { .port = MIG_PORT };
	char err[96], allow[160];
	uint64_t port;
	int i = 2, rc;

	if (argc == 3 && !strcmp(argv[2], "off")) {
		mig_listen_off();
		shell_printf("migrate: listener off\n");
		return 0;
	}
	if (i < argc && strcmp(argv[i], "from")) {
		if (parse_u64(argv[i], 1, 65535, &port)) {
			shell_error("migrate", "bad port '%s' (1-65535)", argv[i]);
			return -EINVAL;
		}
		cfg.port = (uint16_t)port;
		i++;
	}
	if (i < argc && !strcmp(argv[i], "from")) {
		if (i + 2 != argc) {
			shell_error("migrate", "usage: migrate listen [PORT] [from ADDR[,ADDR...]]");
			return -EINVAL;
		}
		if ((rc = parse_allow(argv[i + 1], &cfg)))
			return rc;
		i += 2;
	}
	if (i != argc) {
		shell_error("migrate", "usage: migrate listen [PORT] [from ADDR[,ADDR...]] | "
			    "migrate listen off");
		return -EINVAL;
	}
	if ((rc = mig_listen(&cfg, err, sizeof(err)))) {
		shell_error("migrate", "%s", err);
		return rc;
	}
	allow_text(&cfg, allow, sizeof(allow));
	shell_printf("migrate: listening on port %u (from %s)\n", cfg.port, allow);
	return 0;
}

static int out_args(int argc, char **argv, struct mig_out_args *a)
{
	static const char *const keys[] = {
		"downtime", "bandwidth", "converge", "downtime-max", "max-rounds", NULL,
	};
	const char *v[5];
	uint64_t n;
	int bad, rc;

	memset(a, 0, sizeof(*a));
	a->name = argv[1];
	a->net = &host_if.stack;
	if (parse_host_port(argv[2], MIG_PORT, &a->ip, &a->port)) {
		shell_error("migrate", "'%s' is not HOST[:PORT] (an IPv4 address)", argv[2]);
		return -EINVAL;
	}
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
	return 0;
bad_value:
	shell_error("migrate", "bad value: downtime=MS (1-60000) bandwidth=MB/s (1-100000) "
		    "converge=auto|off downtime-max=MS max-rounds=N (1-%u)", MIG_ROUNDS_MAX - 2);
	return -EINVAL;
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

int cmd_migrate(int argc, char **argv)
{
	struct mig_out_args a;
	int rc;

	if (argc >= 2 && !strcmp(argv[1], "listen"))
		return listen_cmd(argc, argv);
	if (argc < 3) {
		shell_error("migrate", "usage: migrate NAME HOST[:PORT] [downtime=MS] "
			    "[bandwidth=MB/s] [converge=auto|off] | migrate listen ...");
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
	a.sink = &console_sink;
	rc = mig_out_run(&a);
	return rc == -ECANCELED ? 1 : rc;	/* the failure line said it all */
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
		shell_printf("listener: port %u (from %s)\n", cfg.port, allow);
	} else {
		shell_printf("listener: off\n");
	}
	shell_printf("%-16s  %-3s  %-16s %-21s %-9s %9s %13s %7s %9s  %s\n", "ID", "DIR", "GUEST",
		     "PEER", "OUTCOME", "TOTAL(s)", "DOWNTIME(ms)", "ROUNDS", "SENT/MEM", "WHY");
	for (unsigned int i = 0; (e = mig_history_at(i)); i++) {
		uint64_t x100 = e->mem_bytes ? e->bytes * 100 / e->mem_bytes : 0;
		shell_printf("%016lx  %-3s  %-16s %-21s %-9s %5lu.%03lu %9lu.%03lu %7u %6lu.%02lu  %s\n",
			     e->id, e->out ? "out" : "in", e->guest, e->peer,
			     mig_outcome_name(e->outcome), e->total_us / 1000000,
			     e->total_us / 1000 % 1000, e->downtime_us / 1000, e->downtime_us % 1000,
			     e->rounds, x100 / 100, x100 % 100, e->why);
	}
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
