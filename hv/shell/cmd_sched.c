/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `sched NAME [weight=W] [cap=PCT]` and `pin NAME VCPU CPULIST|any`: a
 * guest's share of the host CPUs (Xen credit2's meaning: weight 256 is
 * the default; a cap is a percentage of one CPU for the whole guest,
 * split evenly over its vCPUs) and where its vCPUs may run.  Both take
 * effect while it runs.
 */
#include <errno.h>
#include <string.h>
#include "arch/x86/percpu.h"
#include "hv/sched.h"
#include "hv/shell/cmd_vm.h"
#include "hv/shell/parse.h"
#include "hv/shell/shell.h"
#include "hv/vm.h"

static struct vm *find(const char *cmd, const char *name)
{
	struct vm *vm = vm_find(name);

	if (!vm)
		shell_error(cmd, "no guest named '%s' (see 'list')", name);
	return vm;
}

static void show_share(const struct vm *vm)
{
	shell_printf("%s: weight %u, cap %u%% of a CPU (%s)\n", vm->name, vm->weight,
		     vm->cap_pct, vm->cap_pct ? "split over its vCPUs" : "none");
}

int cmd_sched(int argc, char **argv)
{
	static const char *const keys[] = { "weight", "cap", NULL };
	const char *vals[2];
	uint64_t w, cap;
	struct vm *vm;
	int bad, rc;

	if (argc < 2) {
		shell_error("sched", "usage: sched NAME [weight=1..65535] [cap=0..%u]",
			    100 * VM_MAX_VCPUS);
		return -EINVAL;
	}
	if (!(vm = find("sched", argv[1])))
		return -ENOENT;
	if ((rc = kv_parse(argc - 2, argv + 2, keys, vals, &bad))) {
		shell_error("sched", "%s: '%s'", kv_strerror(rc), argv[2 + bad]);
		return rc;
	}
	w = vm->weight;
	cap = vm->cap_pct;
	/* the share travels in the migration's HELLO, sent already: a change
	 * now would be lost on the destination */
	if ((vals[0] || vals[1]) && shell_vm_migrating("sched", vm))
		return -EBUSY;
	if (vals[0] && parse_u64(vals[0], SCHED_WEIGHT_MIN, SCHED_WEIGHT_MAX, &w)) {
		shell_error("sched", "weight=%s: a number from 1 to 65535 (256 is the default)",
			    vals[0]);
		return -EINVAL;
	}
	if (vals[1] && parse_u64(vals[1], 0, 100ull * vm->nr_vcpus, &cap)) {
		shell_error("sched", "cap=%s: a percentage of one CPU from 0 (none) to %u "
			    "(all its vCPUs)", vals[1], 100 * vm->nr_vcpus);
		return -EINVAL;
	}
	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		rc = sched_set_share(vm->vcpus[i], (uint32_t)w,
				     sched_cap_split((uint32_t)cap, vm->nr_vcpus));
		if (rc) {
			shell_error("sched", "the scheduler refused it (error %d)", rc);
			return rc;
		}
	}
	vm->weight = (uint32_t)w;
	vm->cap_pct = (uint32_t)cap;
	show_share(vm);
	return 0;
}

/* "any", or CPU numbers and ranges: "1", "1,3", "2-5,7". */
static int parse_cpulist(const char *s, uint64_t *mask)
{
	char buf[64];
	char *tok, *save;

	if (!strcmp(s, "any")) {
		*mask = SCHED_AFFINITY_ANY;
		return 0;
	}
	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	*mask = 0;
	if (!list_valid(buf))
		return -EINVAL;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *dash = strchr(tok, '-');
		uint64_t lo, hi;

		if (dash)
			*dash = 0;
		if (parse_u64(tok, 0, SCHED_MAX_CPUS - 1, &lo) ||
		    parse_u64(dash ? dash + 1 : tok, lo, SCHED_MAX_CPUS - 1, &hi))
			return -EINVAL;
		for (uint64_t c = lo; c <= hi; c++)
			*mask |= 1ull << c;
	}
	return *mask ? 0 : -EINVAL;
}

int cmd_pin(int argc, char **argv)
{
	struct vm *vm;
	uint64_t id, mask;
	int rc;

	if (argc != 4) {
		shell_error("pin", "usage: pin NAME VCPU CPULIST|any (e.g. 1,3 or 2-5)");
		return -EINVAL;
	}
	if (!(vm = find("pin", argv[1])))
		return -ENOENT;
	if (parse_u64(argv[2], 0, vm->nr_vcpus - 1, &id)) {
		shell_error("pin", "VCPU %s: %s has vCPUs 0 to %u", argv[2], vm->name,
			    vm->nr_vcpus - 1);
		return -EINVAL;
	}
	if (parse_cpulist(argv[3], &mask)) {
		shell_error("pin", "'%s': CPU numbers 0-%u, ranges and commas, or any",
			    argv[3], SCHED_MAX_CPUS - 1);
		return -EINVAL;
	}
	if ((rc = sched_pin(vm->vcpus[id], mask))) {
		if (rc == -EINVAL)
			shell_error("pin", "none of CPUs %s can run guests (CPU 0 runs the shell; see 'cpus')", argv[3]);
		else
			shell_error("pin", "could not move it (error %d)", rc);
		return rc;
	}
	shell_printf("%s vCPU %lu: on CPU %d, may run on %s\n", vm->name, id,
		     vm->vcpus[id]->cpu, argv[3]);
	return 0;
}
