/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `top`: what the guests and CPUs did over the last second.  Two samples
 * of the counters the vCPUs keep (time run, exits, steal, times switched
 * onto their CPU) and of each
 * CPU's halted time, one interval apart; the difference is shown.  The
 * counters are read without locks, as `list` does: a sample may be a
 * tick stale, never wrong by more.
 */
#include <errno.h>
#include <string.h>
#include "arch/x86/cpu.h"
#include "arch/x86/percpu.h"
#include "hv/console.h"
#include "hv/lib/time.h"
#include "hv/shell/cmd_vm.h"
#include "hv/shell/repl.h"
#include "hv/shell/shell.h"
#include "hv/vcpu.h"
#include "hv/vm.h"

#define INTERVAL_NS 1000000000ull

struct vcpu_sample {
	uint64_t run_ns, exits, steal_ns, switches;
};

struct top_sample {
	uint64_t t_ns, tsc;
	const struct vm *vm[VM_MAX];		/* which guest each slot held */
	uint64_t serial[VM_MAX];		/* ... told apart by serial: a new
						 * guest may reuse a freed one's memory */
	struct vcpu_sample v[VM_MAX][VM_MAX_VCPUS];
	uint64_t idle_tsc[MAX_CPUS];
};

static struct top_sample samples[2];

static uint64_t exits_of(const struct vcpu *v)
{
	uint64_t n = 0;

	for (int c = 0; c < EXIT_COUNT; c++)
		n += v->stats.exits[c];
	return n;
}

static void take(struct top_sample *s)
{
	memset(s->vm, 0, sizeof(s->vm));
	s->t_ns = time_now_ns();
	s->tsc = rdtsc();
	for (unsigned int c = 0; c < cpu_count && c < MAX_CPUS; c++)
		s->idle_tsc[c] = __atomic_load_n(&cpus[c].idle_tsc, __ATOMIC_RELAXED);
	for (unsigned int i = 0; i < VM_MAX; i++) {
		const struct vm *vm = vm_at(i);
		if (!vm)
			continue;
		s->vm[i] = vm;
		s->serial[i] = vm->serial;
		for (unsigned int j = 0; j < vm->nr_vcpus; j++) {
			const struct vcpu *v = vm->vcpus[j];
			s->v[i][j] = (struct vcpu_sample){
				.run_ns = v->stats.guest_ns + v->stats.host_ns,
				.exits = exits_of(v), .steal_ns = v->stats.steal_ns,
				.switches = v->stats.switches,
			};
		}
	}
}

/* delta as tenths of a percent of span */
static unsigned int permille(uint64_t delta, uint64_t span)
{
	uint64_t p = span ? delta * 1000 / span : 0;

	return p > 9999 ? 9999 : (unsigned int)p;
}

static const char *state_of(const struct vm *vm, const struct vcpu *v)
{
	if (vm->state != VM_RUNNING)
		return vm_state_name(vm->state);
	return vcpu_state_name(vcpu_state(v));
}

static void print_cpus(const struct top_sample *a, const struct top_sample *b)
{
	uint64_t span = b->tsc - a->tsc;

	shell_printf("CPU  BUSY%%\n");
	for (unsigned int c = 0; c < cpu_count && c < MAX_CPUS; c++) {
		if (c == 0 && cpu_count > 1) {
			shell_printf("%-4u shell\n", c);
			continue;
		}
		if (!cpus[c].online) {
			shell_printf("%-4u offline\n", c);
			continue;
		}
		unsigned int idle = permille(b->idle_tsc[c] - a->idle_tsc[c], span);
		unsigned int busy = idle > 1000 ? 0 : 1000 - idle;
		shell_printf("%-4u %3u.%u\n", c, busy / 10, busy % 10);
	}
}

static void print_vcpus(const struct top_sample *a, const struct top_sample *b)
{
	uint64_t span = b->t_ns - a->t_ns;

	shell_printf("%-16s %4s %-9s %3s %6s %9s %6s %6s\n", "GUEST", "VCPU", "STATE", "CPU",
		     "%CPU", "EXITS/S", "STEAL%", "SW/S");
	for (unsigned int i = 0; i < VM_MAX; i++) {
		const struct vm *vm = b->vm[i];
		if (!vm || !a->vm[i] || a->serial[i] != b->serial[i])
			continue;	/* created or destroyed during the interval */
		for (unsigned int j = 0; j < vm->nr_vcpus; j++) {
			const struct vcpu_sample *x = &a->v[i][j], *y = &b->v[i][j];
			unsigned int use = permille(y->run_ns - x->run_ns, span);
			unsigned int steal = permille(y->steal_ns - x->steal_ns, span);
			uint64_t eps = span ? (y->exits - x->exits) * INTERVAL_NS / span : 0;
			uint64_t sps = span ? (y->switches - x->switches) * INTERVAL_NS / span : 0;
			int cpu = __atomic_load_n(&vm->vcpus[j]->cpu, __ATOMIC_RELAXED);

			shell_printf("%-16s %4u %-9s %3d %4u.%u %9lu %4u.%u %6lu\n", vm->name, j,
				     state_of(vm, vm->vcpus[j]), cpu, use / 10, use % 10, eps,
				     steal / 10, steal % 10, sps);
		}
	}
}

static unsigned int vcpu_total(void)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < VM_MAX; i++)
		if (vm_at(i))
			n += vm_at(i)->nr_vcpus;
	return n;
}

/* Wait one interval doing the shell's background work; true if a key
 * was pressed. */
static bool wait_interval(uint64_t from_ns)
{
	while (time_now_ns() - from_ns < INTERVAL_NS) {
		if (console_getc() >= 0)
			return true;
		repl_idle();
	}
	return false;
}

static void print(const struct top_sample *a, const struct top_sample *b)
{
	unsigned int n = vcpu_total(), guests_cpus = cpu_count > 1 ? cpu_count - 1 : 1;

	shell_printf("top: %u vCPUs on %u CPUs for guests (%u.%02u per CPU), interval %lu ms\n",
		     n, guests_cpus, n / guests_cpus, n * 100 / guests_cpus % 100,
		     (b->t_ns - a->t_ns) / 1000000);
	print_cpus(a, b);
	print_vcpus(a, b);
}

int cmd_top(int argc, char **argv)
{
	bool once = argc == 3 && !strcmp(argv[1], "-n") && !strcmp(argv[2], "1");
	unsigned int cur = 0;

	if (argc != 1 && !once) {
		shell_error("top", "usage: top [-n 1]");
		return -EINVAL;
	}
	take(&samples[cur]);
	for (;;) {
		bool key = wait_interval(samples[cur].t_ns);
		take(&samples[cur ^ 1]);
		if (!once)
			shell_printf("\033[H\033[2J");	/* clear the screen */
		print(&samples[cur], &samples[cur ^ 1]);
		cur ^= 1;
		if (once || key)
			return 0;
		shell_printf("(any key ends)\n");
	}
}
