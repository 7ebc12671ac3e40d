/* SPDX-License-Identifier: BSD-2-Clause */
/* The shell's host commands (help, version, cpus, mem, ...) and the table. */
#include <errno.h>
#include <string.h>
#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/percpu.h"
#include "hv/sched.h"
#include "arch/x86/virt.h"
#include "arch/x86/acpi.h"
#include "hv/lib/log.h"
#include "hv/mm/memory.h"
#include "hv/modules.h"
#include "hv/lib/panic.h"
#include "hv/shell/parse.h"
#include "hv/power.h"
#include "hv/shell/cmd_dirtylog.h"
#include "hv/shell/cmd_migrate.h"
#include "hv/shell/cmd_net.h"
#include "hv/shell/cmd_vm.h"
#include "hv/shell/commands.h"
#include "hv/lib/time.h"
#include "hv/version.h"

static int cmd_help(int argc, char **argv)
{
	return shell_help(shell_commands, shell_commands_count, argc, argv);
}

static int no_args(int argc, char **argv)
{
	if (argc > 1) {
		shell_error(argv[0], "takes no arguments (try 'help %s')", argv[0]);
		return -EINVAL;
	}
	return 0;
}

static int cmd_version(int argc, char **argv)
{
	if (no_args(argc, argv))
		return -EINVAL;
	shell_printf("ferry %s (git %s), built %s\n", ferry_version, ferry_gitrev,
		     ferry_build_date);
	return 0;
}

static int cmd_cpus(int argc, char **argv)
{
	char feat[160];

	if (no_args(argc, argv))
		return -EINVAL;
	shell_printf("CPU  APIC  STATE    VCPUS  VIRTUALIZATION\n");
	for (unsigned int i = 0; i < cpu_count; i++) {
		const struct percpu *c = &cpus[i];

		virt_describe(&c->caps, feat, sizeof(feat));
		shell_printf("%-4u %-5u %-8s %-6u %s\n", i, c->apic_id,
			     c->online ? "online" : "offline", sched_load(i),
			     c->online ? feat : "-");
	}
	dirtylog_show_method();
	return 0;
}

static void print_size(const char *label, uint64_t bytes)
{
	shell_printf("%-14s %8lu KiB  (%lu MiB)\n", label, bytes >> 10, bytes >> 20);
}

static int cmd_mem(int argc, char **argv)
{
	struct mem_stats s;

	if (no_args(argc, argv))
		return -EINVAL;
	mem_get_stats(&s);
	print_size("total:", s.total);
	print_size("free:", s.free);
	print_size("ferry:", s.ferry);
	print_size("guests:", s.guests);
	print_size("reserved:", s.reserved);
	shell_printf("heap:          %8lu KiB used of %lu KiB\n", s.heap_used >> 10,
		     s.heap_size >> 10);
	return 0;
}

static int cmd_uptime(int argc, char **argv)
{
	uint64_t us = time_now_us(), s = us / 1000000;

	if (no_args(argc, argv))
		return -EINVAL;
	shell_printf("up %lu:%02lu:%02lu.%03lu (%lu.%06lu s)\n", s / 3600, s / 60 % 60,
		     s % 60, us / 1000 % 1000, s, us % 1000000);
	return 0;
}

static void log_out(const char *buf, size_t len, void *arg)
{
	(void)arg;
	shell_printf("%.*s", (int)len, buf);
}

static int cmd_log(int argc, char **argv)
{
	if (no_args(argc, argv))
		return -EINVAL;
	log_dump(log_out, NULL);
	return 0;
}

static int cmd_modules(int argc, char **argv)
{
	if (no_args(argc, argv))
		return -EINVAL;
	if (!modules_count()) {
		shell_printf("no modules\n");
		return 0;
	}
	shell_printf("%-20s %10s  %-18s %s\n", "NAME", "SIZE", "ADDRESS", "COMMAND LINE");
	for (unsigned int i = 0; i < modules_count(); i++) {
		const struct module *m = modules_get(i);

		shell_printf("%-20s %10zu  %#018lx %s\n", m->name, m->size, m->pa, m->args);
	}
	return 0;
}

static int cmd_reboot(int argc, char **argv)
{
	if (no_args(argc, argv))
		return -EINVAL;
	shell_printf("rebooting\n");
	power_reboot();
	shell_error(argv[0], "the machine did not reset");
	return -EIO;
}

static int cmd_poweroff(int argc, char **argv)
{
	if (no_args(argc, argv))
		return -EINVAL;
	shell_printf("powering off\n");
	power_off();
	shell_error(argv[0], "ACPI S5 did not power off (no FADT/\\_S5?)");
	return -EIO;
}

/* Deliberate crashes, to see (and test) the report ferry gives. */
static int cmd_debug(int argc, char **argv)
{
	uint64_t cpu;

	if (argc >= 2 && !strcmp(argv[1], "migrate"))
		return cmd_debug_migrate(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "dirtylog"))
		return cmd_debug_dirtylog(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "bad-entry"))
		return cmd_debug_bad_entry(argc - 1, argv + 1);
	if (argc == 2 && !strcmp(argv[1], "fault")) {
		__asm__ volatile("ud2");
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "panic"))
		panic("requested with 'debug panic'");
	if (argc == 3 && !strcmp(argv[1], "nmi") && !parse_u64(argv[2], 0, MAX_CPUS - 1, &cpu)) {
		if (cpu >= cpu_count || !cpus[cpu].online) {
			shell_error("debug", "CPU %lu is not online", cpu);
			return -EINVAL;
		}
		apic_send_nmi(cpus[cpu].apic_id);
		udelay(100000);
		return 0;
	}
	shell_error("debug", "usage: debug fault | debug panic | debug nmi CPU | debug bad-entry NAME "
		    "| debug migrate ...");
	return -EINVAL;
}

const struct shell_cmd shell_commands[] = {
	{ "help", "[CMD]", "list commands, or explain one", cmd_help },
	{ "version", "", "ferry's version, git revision and build date", cmd_version },
	{ "cpus", "", "the CPUs: APIC id, state, vCPUs placed there, virtualization features", cmd_cpus },
	{ "mem", "", "memory: total, free, used by ferry and by guests", cmd_mem },
	{ "uptime", "", "time since boot", cmd_uptime },
	{ "log", "", "the log: boot messages and everything since", cmd_log },
	{ "modules", "", "the GRUB modules: name, size, command line", cmd_modules },
	{ "create", "NAME kernel=MODULE [initrd=MODULE | module=M1[,M2...]] [mem=MB] [vcpus=1] [nic=on [mac=52:54:00:XX:XX:XX]] [tsc_khz=N] [meltdown=host|affected] [cmdline=\"...\"]",
	  "define a guest from a GRUB module (multiboot1 ELF, Linux bzImage or PVH vmlinux)", cmd_create },
	{ "start", "[-c] NAME", "start a created guest (-c: attach its console)", cmd_start },
	{ "pause", "NAME", "stop running a guest, keeping it in memory", cmd_pause },
	{ "resume", "NAME", "run a paused guest again", cmd_resume },
	{ "destroy", "NAME", "force a guest off and free everything it had", cmd_destroy },
	{ "list", "", "the guests: state, memory, vCPUs, CPU time, stop reason", cmd_list },
	{ "info", "NAME", "details of one guest", cmd_info },
	{ "stats", "NAME", "VM exits by reason, time in guest vs in ferry", cmd_stats },
	{ "sched", "NAME [weight=W] [cap=PCT]", "a guest's CPU share: weight (256 default) and "
	  "cap in % of one CPU; no options: show them", cmd_sched },
	{ "pin", "NAME VCPU CPULIST|any", "the host CPUs a vCPU may run on (1,3 or 2-5), or any",
	  cmd_pin },
	{ "top", "[-n 1]", "guests' vCPUs and host CPUs over each second: state, CPU, %CPU, exits/s, "
	  "steal; until a key (-n 1: once)", cmd_top },
	{ "console", "NAME", "attach to a guest's serial console (Ctrl-] leaves)", cmd_console },
	{ "net", "[ip ADDR/LEN [gw ADDR] | mgmt NAME on|off | link NAME up|down]",
	  "the NIC, IPv4, counters and guests' switch ports; set the address, let a guest reach "
	  "ferry's, or pull a guest's cable",
	  cmd_net },
	{ "ping", "HOST [COUNT]", "ICMP echo to HOST, with round-trip times", cmd_ping },
	{ "arp", "", "the ARP cache", cmd_arp },
	{ "netstat", "", "TCP connections with their state and counters", cmd_netstat },
	{ "nettest", "listen PORT | send HOST PORT MB", "TCP throughput test with CRC-32 (Ctrl-C stops)", cmd_nettest },
	{ "migrate", "[-b] NAME HOST[:PORT] [downtime=MS] [bandwidth=MB/s] [converge=auto|off] "
	  "[downtime-max=MS] [max-rounds=N] [timeout=S] [insecure] | cancel NAME | "
	  "listen [PORT] [from ADDR,...] [max=N] [insecure] | listen off | key | "
	  "trust NAME PUBKEY [ADDR] | untrust NAME | trusted",
	  "live-migrate a guest to a trusted peer ferry (Ctrl-C cancels; -b: in the background, "
	  "`migrate cancel NAME` stops it, or a guest arriving here); accept migrations (listen's "
	  "options in any order); "
	  "the host key and trusted peers", cmd_migrate },
	{ "migrations", "", "the listener and recent migrations in and out, with their figures", cmd_migrations },
	{ "reboot", "", "reset the machine", cmd_reboot },
	{ "poweroff", "", "power the machine off (ACPI S5)", cmd_poweroff },
	{ "debug", "fault | panic | nmi CPU | bad-entry NAME | migrate hold|abort PHASE | migrate off "
	  "| dirtylog [wp|pml [ENTRIES]|NAME]",
	  "crash ferry on purpose (shows the crash report); make a guest's next VM entry fail "
	  "(illegal guest state: it stops, saying why); inject a migration fault; or pick the "
	  "dirty log (write-protect or PML) and show a guest's",
	  cmd_debug },
};
const size_t shell_commands_count = sizeof(shell_commands) / sizeof(shell_commands[0]);
