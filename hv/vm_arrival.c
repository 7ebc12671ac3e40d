/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An arriving guest's first steps on the destination (struct vm_arrival in
 * hv/vm.h): from COMMIT to its first frame out, logged once, for where the
 * gap seen from outside goes (docs/migration.md, "After COMMIT").
 */
#include <stdio.h>
#include <string.h>
#include "hv/lib/log.h"
#include "hv/lib/time.h"
#include "hv/vcpu.h"
#include "hv/vm.h"

void vm_arrival_start(struct vm *vm)
{
	if (!vm->nic)
		return;		/* no frame out will end it */
	memset(vm->arr.t, 0, sizeof(vm->arr.t));
	vm->arr.t[VM_ARR_COMMIT] = time_now_us();
	__atomic_store_n(&vm->arr.armed, true, __ATOMIC_RELEASE);
}

/* " npf 12, hlt 3": the exits that grew most since the first entry. */
static void arrival_exits(const struct vm *vm, char *buf, size_t len)
{
	const struct vcpu *v = vm->vcpus[0];
	bool used[EXIT_COUNT] = { 0 };
	size_t n = 0;

	buf[0] = 0;
	for (int k = 0; k < 4 && n < len; k++) {
		int best = -1;
		uint64_t d, bd = 0;

		for (int c = 0; c < EXIT_COUNT; c++) {
			d = v->stats.exits[c] - vm->arr.exits0[c];
			if (!used[c] && d > bd) {
				bd = d;
				best = c;
			}
		}
		if (best < 0)
			break;
		used[best] = true;
		n += snprintf(buf + n, len - n, " %s %lu", exit_name((enum exit_code)best), bd);
	}
}

static void arrival_report(struct vm *vm)
{
	const uint64_t *t = vm->arr.t;
	const struct vcpu *v = vm->vcpus[0];
	char ex[96];

	arrival_exits(vm, ex, sizeof(ex));
	pr_info("vm %s: arrival: COMMIT + %lu us running, + %lu us first entry, + %lu us first "
		"frame in, + %lu us first frame out; vCPU 0 since its entry: %lu us in guest, "
		"%lu us in ferry, exits%s", vm->name,
		t[VM_ARR_ACTIVE] ? t[VM_ARR_ACTIVE] - t[VM_ARR_COMMIT] : 0,
		t[VM_ARR_ENTRY] ? t[VM_ARR_ENTRY] - t[VM_ARR_COMMIT] : 0,
		t[VM_ARR_RX] ? t[VM_ARR_RX] - t[VM_ARR_COMMIT] : 0,
		t[VM_ARR_TX] - t[VM_ARR_COMMIT],
		(v->stats.guest_ns - vm->arr.guest_ns0) / 1000,
		(v->stats.host_ns - vm->arr.host_ns0) / 1000, ex);
}

void vm_arrival_note(struct vm *vm, enum vm_arr_step step)
{
	uint64_t zero = 0;

	if (!__atomic_load_n(&vm->arr.armed, __ATOMIC_ACQUIRE))
		return;
	if (!__atomic_compare_exchange_n(&vm->arr.t[step], &zero, time_now_us(), false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	if (step == VM_ARR_TX && __atomic_exchange_n(&vm->arr.armed, false, __ATOMIC_ACQ_REL))
		arrival_report(vm);
}

/* vCPU 0's first entry: its counters from here on are the arrival's. */
void vm_arrival_entry(struct vcpu *v)
{
	struct vm *vm = v->vm;

	if (v->hw.id || !__atomic_load_n(&vm->arr.armed, __ATOMIC_ACQUIRE) ||
	    vm->arr.t[VM_ARR_ENTRY])
		return;
	memcpy(vm->arr.exits0, v->stats.exits, sizeof(vm->arr.exits0));
	vm->arr.guest_ns0 = v->stats.guest_ns;
	vm->arr.host_ns0 = v->stats.host_ns;
	vm_arrival_note(vm, VM_ARR_ENTRY);
}
