/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `migrate` as the shell parses it (hv/shell/cmd_migrate.c), against fakes
 * of the migration it would start: which guest a command claims.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "arch/x86/task.h"
#include "hv/crypto/keyfile.h"
#include "hv/lib/log.h"
#include "hv/migrate/migrate.h"
#include "hv/migrate/trust.h"
#include "hv/netif.h"
#include "hv/shell/cmd_migrate.h"
#include "hv/shell/shell.h"
#include "tests/unit/shell_said.h"

/* ---- fakes: what cmd_migrate.c reaches ---- */

struct netif host_if;
struct mig_debug mig_debug;
static char claimed[64];	/* the name the migration was started with */
static struct mig_keyring kr;

void log_printf(enum log_level l, const char *f, ...) { (void)l; (void)f; }
static struct mig_out_args begun;	/* what the background migration got */
struct mig_out *mig_out_begin(const struct mig_out_args *a, int *rc)
{ snprintf(claimed, sizeof(claimed), "%s", a->name); begun = *a; *rc = 0; return (struct mig_out *)1; }
int mig_out_finish(struct mig_out *o) { (void)o; return 0; }
void mig_out_abandon(struct mig_out *o, const char *w) { (void)o; (void)w; }
static int run_rc;		/* what the migration ends with */
int mig_out_run(const struct mig_out_args *a)
{
	snprintf(claimed, sizeof(claimed), "%s", a->name);
	if (run_rc)
		a->sink->print(a->sink->ctx, "migrate g1: failed: link down; g1 runs here as before");
	return run_rc;
}
struct task *task_spawn(void (*fn)(void *), void *arg, size_t st) { (void)fn; (void)arg; (void)st; return (struct task *)1; }
void task_yield(enum task_want s) { (void)s; }
struct mig_keyring *mig_keyring(void) { return &kr; }
static const struct mig_peer peer = { .name = "peer", .ip = 0x0a000007 };
const struct mig_peer *mig_trust_by_name(const struct mig_keyring *k, const char *n)
{ (void)k; return strcmp(n, "peer") ? NULL : &peer; }
void net_format_ipv4(uint32_t ip, char b[16]) { (void)ip; strcpy(b, "x"); }
uint64_t netif_now_us(void) { return 0; }
static struct mig_listen_cfg listened;	/* what mig_listen was given last */
static unsigned int listens;		/* and how many times */
int mig_listen(const struct mig_listen_cfg *c, char *e, size_t l) { (void)e; (void)l; listened = *c; listens++; return 0; }
void mig_listen_off(void) {}
static char arriving[32];		/* the guest mig_in_cancel finds arriving */
int mig_in_cancel(const char *n)
{
	if (strcmp(n, arriving))
		return -ENOENT;
	arriving[0] = 0;
	return 0;
}
bool mig_listening(struct mig_listen_cfg *c) { (void)c; return false; }
const struct mig_entry *mig_history_at(unsigned int i) { (void)i; return NULL; }
const char *mig_outcome_name(enum mig_outcome o) { (void)o; return ""; }
int mig_point_parse(const char *s, enum mig_point *p) { (void)s; (void)p; return -1; }
const char *mig_point_name(enum mig_point p) { (void)p; return ""; }
void key_to_hex(const uint8_t k[NOISE_KEY], char h[KEY_HEX_LEN + 1]) { (void)k; h[0] = 0; }
int key_from_hex(const char *h, uint8_t k[NOISE_KEY], const char **w) { (void)h; (void)k; (void)w; return -1; }
int mig_secure_ready(const struct mig_keyring *k, char *w, size_t l) { (void)k; (void)w; (void)l; return 0; }
int mig_trust_add(struct mig_keyring *k, const char *n, const uint8_t p[NOISE_KEY], uint32_t ip, char *e, size_t l) { (void)k;(void)n;(void)p;(void)ip;(void)e;(void)l; return 0; }
int mig_trust_remove(struct mig_keyring *k, const char *n) { (void)k; (void)n; return 0; }

static int run(const char *line)
{
	static const struct shell_cmd tab[] = { { "migrate", "", "", cmd_migrate } };
	char buf[256];

	snprintf(buf, sizeof(buf), "%s", line);
	claimed[0] = said[0] = 0;
	return shell_exec(tab, 1, buf);
}

/* A name longer than any guest's is refused as no guest's, in the
 * foreground and in the background alike: a copy cut to 31 characters
 * could be another guest's name, which would then leave the host. */
static void test_a_name_too_long_is_no_guest(void **st)
{
	(void)st;
	host_if.present = true;
	host_if.stack.ip = 1;
	shell_set_output(said_out, NULL);
	run("migrate -b abcdefghijklmnopqrstuvwxyz01234X 10.0.0.2");
	assert_string_equal(claimed, "");
	assert_non_null(strstr(said, "no guest named 'abcdefghijklmnopqrstuvwxyz01234X'"));
	run("migrate abcdefghijklmnopqrstuvwxyz01234X 10.0.0.2");
	assert_string_equal(claimed, "");
	run("migrate -b abcdefghijklmnopqrstuvwxyz01234 10.0.0.2");	/* 31: a name */
	assert_string_equal(claimed, "abcdefghijklmnopqrstuvwxyz01234");
	run("migrate -b -x 10.0.0.2");
	assert_string_equal(claimed, "");
}

/* An address list with an empty entry is refused, not read as "anyone"
 * (no entry at all) or as the entries it has. */
static void test_listen_from_an_empty_entry(void **st)
{
	static const char *const bad[] = {
		"migrate listen from ,", "migrate listen from \"\"", "migrate listen from ,,",
		"migrate listen from 10.0.0.1,,10.0.0.2", "migrate listen from 10.0.0.1,",
		"migrate listen from ,10.0.0.1", "migrate listen 7500 from , insecure",
	};

	(void)st;
	host_if.present = true;
	shell_set_output(said_out, NULL);
	listens = 0;
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		run(bad[i]);
		assert_non_null(strstr(said, "error: migrate: bad address list '"));
		assert_non_null(strstr(said, "after 'from': ADDR[,ADDR...] with no empty entry"));
	}
	assert_int_equal(listens, 0);
	run("migrate listen from 10.0.0.1,10.0.0.2");
	assert_int_equal(listens, 1);
	assert_int_equal(listened.nr_allow, 2);
	assert_int_equal(listened.allow[1], 0x0a000002);
}

/* A foreground migration that fails is a failed command (a boot script
 * counts it), its failure line said once and no "error:" line after it. */
static void test_a_failed_migration_fails_the_command(void **st)
{
	(void)st;
	host_if.present = true;
	host_if.stack.ip = 1;
	shell_set_output(said_out, NULL);
	run_rc = -ECANCELED;
	assert_int_equal(run("migrate g1 10.0.0.2"), -ECANCELED);
	assert_string_equal(said, "migrate g1: failed: link down; g1 runs here as before\n");
	run_rc = 0;
	assert_int_equal(run("migrate g1 10.0.0.2"), 0);
}

/* `migrate cancel NAME` stops an arrival here when no migration of that
 * name leaves in the background, and says which it did. */
static void test_cancel_an_arrival(void **st)
{
	(void)st;
	host_if.present = true;
	shell_set_output(said_out, NULL);
	strcpy(arriving, "in1");
	assert_int_equal(run("migrate cancel in2"), -ENOENT);
	assert_non_null(strstr(said, "error: migrate: no background migration of 'in2' runs, "
				      "and none arrives that has not committed"));
	assert_string_equal(arriving, "in1");
	assert_int_equal(run("migrate cancel in1"), 0);
	assert_string_equal(said, "migrate: in1's arrival cancelled; the source keeps the guest\n");
	assert_string_equal(arriving, "");
	assert_int_equal(run("migrate cancel in1"), -ENOENT);
}

/* `migrate listen`'s options go in any order, each once. */
static void test_listen_options_in_any_order(void **st)
{
	static const char *const bad[] = {
		"migrate listen insecure insecure", "migrate listen 7500 7501",
		"migrate listen max=1 max=2", "migrate listen from", "migrate listen 7500 from",
		"migrate listen from 10.0.0.1 from 10.0.0.2",
	};

	(void)st;
	host_if.present = true;
	shell_set_output(said_out, NULL);
	listens = 0;
	assert_int_equal(run("migrate listen insecure max=2 7500 from 10.0.0.1"), 0);
	assert_int_equal(listens, 1);
	assert_int_equal(listened.port, 7500);
	assert_true(listened.insecure);
	assert_int_equal(listened.max_in, 2);
	assert_int_equal(listened.nr_allow, 1);
	assert_int_equal(run("migrate listen max=1 insecure"), 0);	/* the old order */
	assert_int_equal(listened.port, MIG_PORT);
	assert_int_equal(listened.max_in, 1);
	assert_int_equal(run("migrate listen from 10.0.0.1 7501 max=3"), 0);
	assert_int_equal(listened.port, 7501);
	assert_false(listened.insecure);
	assert_int_equal(listens, 3);
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(run(bad[i]), -EINVAL);
		assert_non_null(strstr(said, "error: migrate: usage: migrate listen [PORT]"));
	}
	assert_int_equal(run("migrate listen insecure x"), -EINVAL);
	assert_string_equal(said, "error: migrate: bad port 'x' (1-65535)\n");
	assert_int_equal(listens, 3);
}

/* A trusted peer's name with a port: the migration goes there, and the
 * background one says so as it was given. */
static void test_peer_name_with_a_port(void **st)
{
	(void)st;
	host_if.present = true;
	host_if.stack.ip = 1;
	shell_set_output(said_out, NULL);
	assert_int_equal(run("migrate -b g1 peer:7500"), 0);
	assert_int_equal(begun.ip, 0x0a000007);
	assert_int_equal(begun.port, 7500);
	assert_non_null(strstr(said, "migrate: g1 to peer:7500 in the background"));
	assert_int_equal(run("migrate -b g2 nopeer:7500"), -EINVAL);
	assert_non_null(strstr(said, "'nopeer:7500' is not HOST[:PORT]"));
	assert_int_equal(run("migrate -b g2 peer:0"), -EINVAL);
	assert_non_null(strstr(said, "'peer:0' is not HOST[:PORT]"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_name_too_long_is_no_guest),
		cmocka_unit_test(test_listen_from_an_empty_entry),
		cmocka_unit_test(test_a_failed_migration_fails_the_command),
		cmocka_unit_test(test_cancel_an_arrival),
		cmocka_unit_test(test_listen_options_in_any_order),
		cmocka_unit_test(test_peer_name_with_a_port),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
