/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Guest commands, after xl and virsh: create, start, pause, resume,
 * destroy, list, info, stats, console.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "arch/x86/cpu.h"
#include "hv/console.h"
#include "hv/lib/log.h"
#include "hv/sched.h"
#include "hv/migrate/migrate.h"
#include "hv/shell/attach.h"
#include "hv/shell/cmd_dirtylog.h"
#include "hv/shell/cmd_net.h"
#include "hv/shell/cmd_vm.h"
#include "hv/shell/parse.h"
#include "hv/shell/repl.h"
#include "hv/shell/shell.h"
#include "hv/lib/time.h"
#include "hv/vcpu.h"
#include "drivers/nicsel.h"
#include "hv/tsc.h"
#include "hv/vm.h"
#include "hv/vm_devices.h"

static struct vm *named_vm(const char *cmd, int argc, char **argv)
{
	struct vm *vm;

	if (argc != 2) {
		shell_error(cmd, "expected one guest name (try 'help %s')", cmd);
		return NULL;
	}
	vm = vm_find(argv[1]);
	if (!vm)
		shell_error(cmd, "no guest named '%s' (see 'list')", argv[1]);
	return vm;
}

/* mac=: a unicast MAC, not all zero (the guest keeps it for life). */
static int parse_guest_mac(const char *text, const uint8_t **out)
{
	static struct nic_sel sel;

	if (nic_sel_parse(text, &sel) || sel.kind != NIC_SEL_MAC || (sel.mac[0] & 1) ||
	    !(sel.mac[0] | sel.mac[1] | sel.mac[2] | sel.mac[3] | sel.mac[4] | sel.mac[5])) {
		shell_error("create", "mac=%s: a unicast MAC such as 52:54:00:12:34:56, not zero",
			    text);
		return -EINVAL;
	}
	*out = sel.mac;
	return 0;
}

static int create_args(int argc, char **argv, struct vm_config *cfg)
{
	static const char *const keys[] = { "kernel", "mem", "vcpus", "cmdline", "initrd", "nic",
					    "mac", "tsc_khz", "module", "meltdown", NULL };
	const char *vals[10];
	uint64_t n;
	int bad, rc;

	if (argc < 2 || !name_valid(argv[1])) {
		shell_error("create", argc < 2 ? "missing NAME" :
			    "bad name '%s': use 1-31 of A-Z a-z 0-9 _ . - starting with a letter or digit",
			    argc < 2 ? "" : argv[1]);
		return -EINVAL;
	}
	cfg->name = argv[1];
	rc = kv_parse(argc - 2, argv + 2, keys, vals, &bad);
	if (rc) {
		shell_error("create", "%s: '%s'", kv_strerror(rc), argv[2 + bad]);
		return rc;
	}
	if (!vals[0]) {
		shell_error("create", "kernel=MODULE is required (see 'modules')");
		return -EINVAL;
	}
	cfg->kernel = vals[0];
	cfg->mem_mb = 64;
	if (vals[1] && (rc = parse_u64(vals[1], 2, VM_MAX_MEM_MB, &cfg->mem_mb))) {
		shell_error("create", "mem=%s: a size in MiB from 2 to %d", vals[1], VM_MAX_MEM_MB);
		return rc;
	}
	cfg->vcpus = 1;
	if (vals[2]) {
		if ((rc = parse_u64(vals[2], 1, 64, &n))) {
			shell_error("create", "vcpus=%s: a number from 1 to 64", vals[2]);
			return rc;
		}
		cfg->vcpus = n;
	}
	cfg->cmdline = vals[3] ? vals[3] : "";
	cfg->initrd = vals[4];
	cfg->modules = vals[8];
	cfg->nic = vals[5] && !strcmp(vals[5], "on");
	if (vals[5] && !cfg->nic && strcmp(vals[5], "off")) {
		shell_error("create", "nic=%s: on or off", vals[5]);
		return -EINVAL;
	}
	cfg->mac = NULL;
	if (vals[6] && !cfg->nic) {
		shell_error("create", "mac= needs nic=on");
		return -EINVAL;
	}
	if (vals[6] && parse_guest_mac(vals[6], &cfg->mac))
		return -EINVAL;
	if (vals[7] && (rc = parse_u64(vals[7], VM_TSC_KHZ_MIN, VM_TSC_KHZ_MAX, &cfg->tsc_khz))) {
		shell_error("create", "tsc_khz=%s: a rate in kHz from %llu to %llu", vals[7],
			    VM_TSC_KHZ_MIN, VM_TSC_KHZ_MAX);
		return rc;
	}
	if (vals[9] && strcmp(vals[9], "host") && strcmp(vals[9], "affected")) {
		shell_error("create", "meltdown=%s: host (say what this host's CPU says) or "
			    "affected (say nothing: the guest can move to any host)", vals[9]);
		return -EINVAL;
	}
	cfg->meltdown = vals[9] && !strcmp(vals[9], "affected") ? VM_MELTDOWN_AFFECTED :
			VM_MELTDOWN_HOST;
	return 0;
}

int cmd_create(int argc, char **argv)
{
	struct vm_config cfg = { 0 };	/* what create does not set: defaults */
	struct vm *vm;
	char err[160];
	int rc = create_args(argc, argv, &cfg);

	if (rc)
		return rc;
	rc = vm_create(&cfg, &vm, err, sizeof(err));
	if (rc) {
		shell_error("create", "%s", err);
		return rc;
	}
	shell_printf("created %s: %lu MiB, %u vCPU, kernel %s\n", vm->name, cfg.mem_mb,
		     vm->nr_vcpus, vm->kernel);
	return 0;
}

int cmd_start(int argc, char **argv)
{
	bool attach_console = argc == 3 && !strcmp(argv[1], "-c");
	struct vm *vm;
	char err[160];
	int rc;

	if (attach_console) {
		argv++;
		argc--;
	}
	if (!(vm = named_vm("start", argc, argv)))
		return -ENOENT;
	rc = vm_start(vm, err, sizeof(err));
	if (rc) {
		shell_error("start", "%s", err);
		return rc;
	}
	if (attach_console)
		return console_attach(vm);
	shell_printf("started %s\n", vm->name);
	return 0;
}

bool shell_vm_migrating(const char *cmd, const struct vm *vm)
{
	if (!vm->mig_owned)
		return false;
	shell_error(cmd, "'%s' is %s", vm->name, vm->mig.kind == VM_MIG_IN ?
		    "arriving by migration (`migrate cancel NAME` stops it)" :
		    "migrating (`migrate cancel NAME` stops it)");
	return true;
}

/* An in-doubt guest that the operator resumes or destroys is settled. */
static void settle_doubt(struct vm *vm, const char *how)
{
	if (vm->mig.kind != VM_MIG_IN_DOUBT)
		return;
	pr_info("vm %s: migration %016lx was in doubt: %s by the operator", vm->name, vm->mig.id,
		how);
	spin_lock(&vm->lock);
	vm->mig.kind = VM_MIG_NONE;
	spin_unlock(&vm->lock);
}

static int lifecycle(int argc, char **argv,
		     int (*op)(struct vm *, char *, size_t), const char *done)
{
	struct vm *vm = named_vm(argv[0], argc, argv);
	char err[160];
	int rc;

	if (!vm)
		return -ENOENT;
	if (shell_vm_migrating(argv[0], vm))
		return -EBUSY;
	rc = op(vm, err, sizeof(err));
	if (!rc && op == vm_resume)
		settle_doubt(vm, "resumed here");
	if (rc) {
		shell_error(argv[0], "%s", err);
		return rc;
	}
	shell_printf("%s %s\n", done, vm->name);
	return 0;
}

int cmd_pause(int argc, char **argv) { return lifecycle(argc, argv, vm_pause, "paused"); }
int cmd_resume(int argc, char **argv) { return lifecycle(argc, argv, vm_resume, "resumed"); }

int cmd_destroy(int argc, char **argv)
{
	struct vm *vm = named_vm("destroy", argc, argv);
	char name[VM_NAME_MAX];

	if (!vm)
		return -ENOENT;
	if (shell_vm_migrating("destroy", vm))
		return -EBUSY;
	settle_doubt(vm, "destroyed here");
	memcpy(name, vm->name, sizeof(name));
	vm_destroy(vm);
	shell_printf("destroyed %s\n", name);
	return 0;
}

/* `debug bad-entry NAME`: drive a failed VM entry end to end, to see (and
 * test) how ferry reports it.  The back end spoils the state at entry. */
int cmd_debug_bad_entry(int argc, char **argv)
{
	struct vm *vm = named_vm("debug", argc, argv);
	struct vcpu *v;

	if (!vm)
		return -ENOENT;
	if (shell_vm_migrating("debug", vm))
		return -EBUSY;
	if (vm->state == VM_STOPPED) {
		shell_error("debug", "'%s' is stopped: it never enters again", vm->name);
		return -EINVAL;
	}
	v = vm->vcpus[0];
	__atomic_store_n(&v->hw.bad_entry, true, __ATOMIC_RELEASE);
	vcpu_kick(v);	/* a running vCPU re-enters at once */
	shell_printf("debug bad-entry: the next entry of %s's vCPU 0 uses an illegal guest "
		     "state\n", vm->name);
	return 0;
}

int cmd_console(int argc, char **argv)
{
	struct vm *vm = named_vm("console", argc, argv);

	return vm ? console_attach(vm) : -ENOENT;
}

static uint64_t vm_guest_ns(const struct vm *vm)
{
	uint64_t t = 0;

	for (unsigned int i = 0; i < vm->nr_vcpus; i++)
		t += vm->vcpus[i]->stats.guest_ns;
	return t;
}

static const char *run_detail(const struct vm *vm)
{
	const struct vcpu *v = vm->vcpus[0];

	if (vm->mig.kind == VM_MIG_OUT)
		return ", migrating out";
	if (vm->mig.kind == VM_MIG_IN_DOUBT)
		return ", in doubt";
	if (vm->state != VM_RUNNING || !v)
		return "";
	if (v->state == VCPU_HALTED)
		return v->halted_if ? " (halted)" : " (halted, interrupts off)";
	return "";
}

int cmd_list(int argc, char **argv)
{
	(void)argv;
	if (argc > 1) {
		shell_error("list", "takes no arguments");
		return -EINVAL;
	}
	shell_printf("%-16s %-28s %8s %5s %12s  %s\n", "NAME", "STATE", "MEM(MiB)", "VCPUS",
		     "CPU-TIME(s)", "REASON");
	for (unsigned int i = 0; i < VM_MAX; i++) {
		struct vm *vm = vm_at(i);
		char state[40];
		if (!vm)
			continue;
		uint64_t ns = vm_guest_ns(vm);
		snprintf(state, sizeof(state), "%s%s", vm_state_name(vm->state), run_detail(vm));
		shell_printf("%-16s %-28s %8lu %5u %8lu.%03lu  %s\n", vm->name, state,
			     vm->mem_size >> 20, vm->nr_vcpus, ns / 1000000000,
			     ns / 1000000 % 1000, vm->state == VM_STOPPED ? vm->stop_reason : "");
	}
	return 0;
}

static void print_migration(const struct vm *vm)
{
	const struct vm_mig_status *m = &vm->mig;

	if (m->kind == VM_MIG_OUT)
		shell_printf("migration:  outgoing to %s (round %u, id %016lx)\n", m->peer, m->round,
			     m->id);
	else if (m->kind == VM_MIG_IN)
		shell_printf("migration:  incoming from %s (round %u, id %016lx)\n", m->peer,
			     m->round, m->id);
	else if (m->kind == VM_MIG_IN_DOUBT)
		shell_printf("migration:  in doubt (id %016lx, peer %s): `resume` it here if %s "
			     "does not run it, else `destroy` it\n", m->id, m->peer, m->peer);
}

/* The NIC: MAC, frames and bytes each way, drops and queue errors. */
static void print_nic(struct vm *vm)
{
	struct vm_nic_info n;
	const uint8_t *m = n.mac;

	if (!vm_nic_info(vm, &n))
		return;
	shell_printf("nic:        virtio-net %02x:%02x:%02x:%02x:%02x:%02x, status %#x, link %s\n",
		     m[0], m[1], m[2], m[3], m[4], m[5], n.status, n.link_up ? "up" : "down");
	shell_printf("nic rx:     %lu frames, %lu bytes; %lu with checksums known good, "
		     "%lu joined into %lu TSO (%lu too big for the buffer); waited for "
		     "buffers %lu times\n", n.net.rx_frames, n.net.rx_bytes, n.net.rx_valid,
		     n.net.rx_gso_segs, n.net.rx_gso, n.net.rx_gso_small, n.net.rx_waits);
	shell_printf("nic tx:     %lu frames, %lu bytes; offloads: %lu checksummed, %lu TSO "
		     "(cut here); waited for room %lu times\n", n.net.tx_frames, n.net.tx_bytes,
		     n.net.tx_csum, n.net.tx_gso, n.net.tx_stalls);
	for (unsigned int i = 0; i < VNET_NR_DROP; i++)
		if (n.net.drops[i])
			shell_printf("nic drop:   %lu %s\n", n.net.drops[i], vnet_drop_name(i));
	for (unsigned int i = 1; i < VQ_NR_ERR; i++)
		if (n.queue_errors[i])
			shell_printf("nic error:  %lu queue stopped: %s\n", n.queue_errors[i],
				     vq_err_name(i));
	if (n.err == VQ_ERR_IDX)	/* what the driver wrote, what ferry had taken */
		shell_printf("nic error:  last: queue %u avail index %u after %u (used %u)\n",
			     n.err_queue, n.err_avail, n.err_last_avail, n.err_used);
	else if (n.err)
		shell_printf("nic error:  last: queue %u, at avail %u (used %u)\n", n.err_queue,
			     n.err_last_avail, n.err_used);
	net_show_guest(vm);
}

int cmd_info(int argc, char **argv)
{
	struct vm *vm = named_vm("info", argc, argv);
	char tsc[96];
	uint64_t up;

	if (!vm)
		return -ENOENT;
	up = (time_now_ns() - vm->created_ns) / 1000000;
	shell_printf("name:       %s (id %u)\n", vm->name, vm->id);
	shell_printf("state:      %s%s\n", vm_state_name(vm->state), run_detail(vm));
	if (vm->state == VM_STOPPED)
		shell_printf("stopped:    %s\n", vm->stop_reason);
	print_migration(vm);
	shell_printf("kernel:     %s\n", vm->kernel);
	if (vm->initrd[0])
		shell_printf("initrd:     %s\n", vm->initrd);
	if (vm->modules[0])
		shell_printf("modules:    %s\n", vm->modules);
	shell_printf("cmdline:    %s\n", vm->cmdline);
	shell_printf("memory:     %lu MiB (%lu MiB of it on host RAM above 4 GiB)\n",
		     vm->mem_size >> 20, vm_host_high_bytes(vm) >> 20);
	dirtylog_show_map(vm);
	vm_tsc_describe(vm, tsc, sizeof(tsc));
	shell_printf("tsc:        %s\n", tsc);
	shell_printf("cpu:        %s\n", vm->rdcl_no ?
		     "not affected by Meltdown (RDCL_NO): moves only to hosts that are not" :
		     "may be affected by Meltdown: moves to any host");
	for (unsigned int i = 0; i < vm->nr_vcpus; i++)
		shell_printf("vcpu %u:     on CPU %d, rip %#lx\n", i, vm->vcpus[i]->cpu,
			     vm->vcpus[i]->exit.rip);
	shell_printf("created:    %lu.%03lu s ago\n", up / 1000, up % 1000);
	shell_printf("io:         %lu writes dropped, %lu reads of unclaimed ports\n",
		     vm->io_dropped, vm->io_unhandled_reads);
	shell_printf("mmio:       %lu writes dropped, %lu reads of unclaimed addresses\n",
		     vm->mmio_dropped, vm->mmio_unhandled_reads);
	shell_printf("reboots:    %lu\n", vm->reboots);
	if (vm->pvpanic)
		shell_printf("pvpanic:    at pci:00:02.0, %lu crash-kernel loads reported\n",
			     __atomic_load_n(&vm->crash_loads, __ATOMIC_RELAXED));
	dirtylog_show_vm(vm);
	print_nic(vm);
	return 0;
}

int cmd_stats(int argc, char **argv)
{
	struct vm *vm = named_vm("stats", argc, argv);
	uint64_t guest = 0, host = 0, total = 0;

	if (!vm)
		return -ENOENT;
	struct vcpu_stats sum = { 0 };
	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		const struct vcpu_stats *s = &vm->vcpus[i]->stats;
		for (int c = 0; c < EXIT_COUNT; c++)
			sum.exits[c] += s->exits[c];
		sum.pv_eois += s->pv_eois;
		guest += s->guest_ns;
		host += s->host_ns;
	}
	shell_printf("%-22s %12s\n", "EXIT", "COUNT");
	for (int c = 0; c < EXIT_COUNT; c++) {
		total += sum.exits[c];
		if (sum.exits[c])
			shell_printf("%-22s %12lu\n", exit_name(c), sum.exits[c]);
	}
	shell_printf("%-22s %12lu\n", "total", total);
	uint64_t all = guest + host ? guest + host : 1;
	/* per mille in 128 bits: 64 busy vCPUs pass 2^64 / 1000 ns in 3 days */
	unsigned int g = (unsigned int)((unsigned __int128)guest * 1000 / all);
	unsigned int h = (unsigned int)((unsigned __int128)host * 1000 / all);

	shell_printf("time in guest: %lu.%03lu s (%u.%u%%), in ferry: %lu.%03lu s (%u.%u%%)\n",
		     guest / 1000000000, guest / 1000000 % 1000, g / 10, g % 10,
		     host / 1000000000, host / 1000000 % 1000, h / 10, h % 10);
	shell_printf("interrupts ended by PV EOI (no exit): %lu\n", sum.pv_eois);
	return 0;
}
