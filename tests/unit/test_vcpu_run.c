/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The heart on the host: the vCPU state machine (hv/vcpu.c), and vcpu_run's
 * loop with the real exit handlers (hv/exit.c), CPUID and MSR policy and
 * devices, against a scripted back end (core_fake.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>
#include "arch/x86/cpu.h"
#include "hv/cpuid.h"
#include "hv/kvmclock.h"
#include "hv/msr.h"
#include "hv/lib/time.h"
#include "hv/tsc.h"
#include "hv/vcpu.h"
#include "hv/vm_devices.h"
#include "hv/vdev/devices.h"
#include "hv/vdev/pvclock.h"
#include "tests/unit/core_fake.h"

#define IO(p, sz, dir) { .code = EXIT_IO, .rip = 0x1000, .inst_len = 1, \
			 .u.io = { .port = (p), .size = (sz), .in = (dir) } }

static struct vm *vm;
static struct vcpu *v;

static int setup(void **state)
{
	(void)state;
	fake_reset();
	vm = fake_vm_new("t", VM_RUNNING);
	v = vm->vcpus[0];
	/* as the scheduler hands it over */
	vcpu_set_state(v, VCPU_IDLE, VCPU_RUNNABLE);
	vcpu_set_state(v, VCPU_RUNNABLE, VCPU_RUNNING);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fake_vm_free(vm);
	return 0;
}

static enum vcpu_state run(const struct fake_step *s, unsigned int n)
{
	fake_script(s, n);
	return vcpu_run(v);
}

/* ---- the state machine ------------------------------------------------- */

static void test_transition_table(void **state)
{
	static const bool want[VCPU_STATE_COUNT][VCPU_STATE_COUNT] = {
		[VCPU_IDLE] = { [VCPU_RUNNABLE] = true, [VCPU_HALTED] = true },
		[VCPU_RUNNABLE] = { [VCPU_RUNNING] = true, [VCPU_IDLE] = true },
		[VCPU_RUNNING] = { [VCPU_RUNNABLE] = true, [VCPU_HALTED] = true },
		[VCPU_HALTED] = { [VCPU_RUNNING] = true, [VCPU_IDLE] = true },
	};

	(void)state;
	for (int f = 0; f < VCPU_STATE_COUNT; f++)
		for (int t = 0; t < VCPU_STATE_COUNT; t++)
			assert_int_equal(vcpu_state_legal(f, t), want[f][t]);
	assert_false(vcpu_state_legal(VCPU_STATE_COUNT, VCPU_IDLE));
	assert_false(vcpu_state_legal(VCPU_IDLE, VCPU_STATE_COUNT));
	assert_false(vcpu_state_legal((enum vcpu_state)-1, VCPU_RUNNABLE));
	assert_string_equal(vcpu_state_name(VCPU_HALTED), "halted");
	assert_string_equal(vcpu_state_name(VCPU_STATE_COUNT), "?");
}

static void test_illegal_transitions_panic(void **state)
{
	(void)state;
	assert_int_equal(vcpu_state(v), VCPU_RUNNING);
	/* not in the table */
	expect_assert_failure(vcpu_set_state(v, VCPU_RUNNING, VCPU_IDLE));
	/* in the table, but v is not in `from` */
	expect_assert_failure(vcpu_set_state(v, VCPU_RUNNABLE, VCPU_RUNNING));
	expect_assert_failure(vcpu_set_state(v, VCPU_HALTED, VCPU_IDLE));
	assert_int_equal(vcpu_state(v), VCPU_RUNNING);		/* refused: unchanged */
	vcpu_set_state(v, VCPU_RUNNING, VCPU_HALTED);
	vcpu_set_state(v, VCPU_HALTED, VCPU_RUNNING);
	assert_int_equal(vcpu_state(v), VCPU_RUNNING);
}

static void test_requests(void **state)
{
	(void)state;
	assert_int_equal(v->req, 0);
	vcpu_request(v, VCPU_REQ_KICK);
	vcpu_request(v, VCPU_REQ_FPU_SYNC);
	assert_true(vcpu_has_request(v, VCPU_REQ_KICK));
	assert_false(vcpu_has_request(v, VCPU_REQ_REMOVE));
	assert_true(vcpu_take_request(v, VCPU_REQ_KICK));
	assert_false(vcpu_take_request(v, VCPU_REQ_KICK));	/* taken once */
	assert_true(vcpu_has_request(v, VCPU_REQ_FPU_SYNC));
	assert_int_equal(v->req, VCPU_REQ_FPU_SYNC);
}

/* ---- the run loop and the exit handlers ------------------------------- */

static void test_not_running_vm_does_not_enter(void **state)
{
	(void)state;
	vm->state = VM_PAUSED;
	assert_int_equal(run(NULL, 0), VCPU_RUNNABLE);
	assert_int_equal(fake.runs, 0);
}

static void test_kick_ends_the_run_before_entry(void **state)
{
	(void)state;
	vcpu_request(v, VCPU_REQ_KICK);
	assert_int_equal(run(NULL, 0), VCPU_RUNNABLE);
	assert_int_equal(fake.runs, 0);
	assert_false(vcpu_has_request(v, VCPU_REQ_KICK));
	assert_true(fake.irq_on);
}

/* A flood of notifies for a vCPU running on another CPU: one kick IPI
 * until the vCPU has looked again (passed the top of vcpu_run's loop). */
static void test_notify_kicks_once_until_it_looks(void **state)
{
	(void)state;
	cpu_count = 2;
	v->cpu = 1;
	for (int i = 0; i < 1000; i++)
		vcpu_notify(v);
	assert_int_equal(fake.ipis, 1);
	assert_int_equal(fake.ipi_apic, cpus[1].apic_id);
	fake_cpu = 1;				/* it runs there: looks, then leaves */
	vcpu_request(v, VCPU_REQ_KICK);
	assert_int_equal(run(NULL, 0), VCPU_RUNNABLE);
	fake_cpu = 0;
	vcpu_notify(v);
	vcpu_notify(v);
	assert_int_equal(fake.ipis, 2);
	v->cpu = -1;
}

/* A PIT edge that one vCPU's look at its interrupts brings about, routed to
 * another vCPU (I/O APIC pin 2 to APIC 1): that one is kicked at once, not
 * at its next exit or host tick. */
static void test_a_timer_edge_found_by_one_vcpu_kicks_its_target(void **state)
{
	struct vcpu *ap;

	(void)state;
	ap = fake_add_ap(vm);
	cpu_count = 2;
	ap->cpu = 1;					/* running on the other CPU */
	fake_pit_to_apic(vm, 0x30, 1);
	fake.ipis = 0;
	fake_now_ns += 2000000;
	assert_int_equal(vm_pending_vector(v), -1);	/* nothing for vCPU 0 ... */
	assert_int_equal(fake.ipis, 1);			/* ... but APIC 1 was kicked */
	assert_int_equal(fake.ipi_apic, cpus[1].apic_id);
	assert_int_equal(vm_pending_vector(ap), 0x30);
	fake_drop_ap(vm);
}

static void test_cpuid(void **state)
{
	static const struct fake_step s[] = {
		{ .exit = { .code = EXIT_CPUID, .inst_len = 2 }, .regs = true,
		  .rax = 0xffffffff00000000ull, .rcx = 0 },
		{ .exit = { .code = EXIT_CPUID, .inst_len = 2 }, .regs = true, .rax = 1 },
	};
	struct cpuid_result r0, r1;
	const struct cpuid_vcpu vcpu0 = { .vcpu_id = 0, .tsc_hz = vm_guest_tsc_hz(vm) };

	(void)state;
	cpuid_guest(0, 0, &vcpu0, &r0);
	cpuid_guest(1, 0, &vcpu0, &r1);
	assert_int_equal(run(s, 2), VCPU_RUNNABLE);
	/* leaf 1 last: its answer is in the registers */
	assert_int_equal(v->hw.gpr[GPR_RAX], r1.eax);
	assert_int_equal(v->hw.gpr[GPR_RBX], r1.ebx);
	assert_int_equal(v->hw.gpr[GPR_RCX], r1.ecx);
	assert_int_equal(v->hw.gpr[GPR_RDX], r1.edx);
	assert_true(r0.ebx != r1.ebx || r0.eax != r1.eax);
	assert_int_equal(fake.nr_skipped, 2);
	assert_int_equal(fake.skipped[0], 2);
	assert_int_equal(v->stats.exits[EXIT_CPUID], 2);
	assert_int_equal(fake.runs, 3);		/* two exits, then the end of the script */
	assert_int_equal(fake.irq_off_runs, 3);	/* entered with interrupts off */
	assert_true(fake.irq_on);
	for (int i = 0; i < 3; i++)
		assert_int_equal(fake.state_in_run[i], VCPU_RUNNING);
}

static void test_msr_allow_list_and_gp(void **state)
{
	static const struct fake_step s[] = {
		/* WRMSR SYSENTER_CS = 0x10 */
		{ .exit = { .code = EXIT_MSR_WRITE, .inst_len = 2, .u.msr.index = 0x174 },
		  .regs = true, .rax = 0x10, .rcx = 0x174, .rdx = 0 },
		/* RDMSR of an MSR nobody allows: #GP(0), RIP stays */
		{ .exit = { .code = EXIT_MSR_READ, .inst_len = 2, .u.msr.index = 0xc0011234 },
		  .regs = true, .rax = 0x55, .rcx = 0xc0011234, .rdx = 0x66 },
		/* RDMSR SYSENTER_CS back */
		{ .exit = { .code = EXIT_MSR_READ, .inst_len = 2, .u.msr.index = 0x174 },
		  .regs = true, .rax = 0xdead, .rcx = 0x174, .rdx = 0xbeef },
	};

	(void)state;
	assert_int_equal(run(s, 3), VCPU_RUNNABLE);
	assert_int_equal(fake.state.sysenter_cs, 0x10);
	assert_int_equal(v->hw.gpr[GPR_RAX], 0x10);
	assert_int_equal(v->hw.gpr[GPR_RDX], 0);
	assert_int_equal(fake.nr_injected, 1);
	assert_int_equal(fake.injected[0].type, EVENT_EXCEPTION);
	assert_int_equal(fake.injected[0].vector, 13);
	assert_true(fake.injected[0].has_error);
	assert_int_equal(fake.injected[0].error, 0);
	assert_int_equal(fake.nr_skipped, 2);		/* not past the faulting RDMSR */
}

static void test_msr_tsc_write_moves_the_offset(void **state)
{
	static const struct fake_step s[] = {
		{ .exit = { .code = EXIT_MSR_WRITE, .inst_len = 2, .u.msr.index = MSR_IA32_TSC },
		  .regs = true, .rax = 0, .rcx = MSR_IA32_TSC, .rdx = 1 },
	};
	uint64_t before = fake.tsc_sets;

	(void)state;
	run(s, 1);
	assert_int_equal(fake.tsc_sets, before + 1);
	assert_true(fake.tsc_offset == vm->tsc.offset);
	assert_true(fake.tsc_mult == TSC_MULT_ONE);
	/* guest TSC = host TSC + offset was 1 << 32 at the write */
	assert_true(rdtsc() + vm->tsc.offset - (1ull << 32) < (1ull << 40));
}

/* kvmclock pointed outside guest RAM (the PCI hole) and written in a loop:
 * each write counted, said at the 1st, 2nd and 4th time only. */
static void test_kvmclock_outside_ram_said_sparingly(void **state)
{
	static const struct fake_step w = {
		.exit = { .code = EXIT_MSR_WRITE, .inst_len = 2, .u.msr.index = MSR_KVM_SYSTEM_TIME_NEW },
		.regs = true, .rax = 0xC0000001u, .rcx = MSR_KVM_SYSTEM_TIME_NEW, .rdx = 0 };
	const struct fake_step s[] = { w, w, w, w, w };
	unsigned int before = fake_warnings;

	(void)state;
	run(s, 5);
	assert_int_equal(vm->kvmclock_outside, 5);
	assert_int_equal(fake_warnings - before, 3);
	assert_int_equal(fake.nr_injected, 0);		/* accepted, as KVM does */
}

/* on writes MSR_KVM_SYSTEM_TIME_NEW = gpa | 1 (a WRMSR exit run
 * through vcpu_run). */
static void kvmclock_on(struct vcpu *on, uint64_t gpa)
{
	const struct fake_step w = {
		.exit = { .code = EXIT_MSR_WRITE, .inst_len = 2, .u.msr.index = MSR_KVM_SYSTEM_TIME_NEW },
		.regs = true, .rax = (uint32_t)gpa | 1, .rcx = MSR_KVM_SYSTEM_TIME_NEW, .rdx = gpa >> 32 };

	fake_script(&w, 1);
	vcpu_run(on);
}

static struct pvclock_time kvmclock_of(uint64_t gpa)
{
	struct pvclock_time t;

	assert_int_equal(vm_read_gpa(vm, gpa, &t, sizeof(t)), 0);
	return t;
}

/* The relation kvmclock states, version and flags aside. */
static void assert_same_clock(const struct pvclock_time *a, const struct pvclock_time *b)
{
	assert_true(a->tsc_timestamp == b->tsc_timestamp);
	assert_true(a->system_time == b->system_time);
	assert_int_equal(a->tsc_to_system_mul, b->tsc_to_system_mul);
	assert_int_equal(a->tsc_shift, b->tsc_shift);
	assert_int_equal(a->flags & PVCLOCK_TSC_STABLE, PVCLOCK_TSC_STABLE);
}

/* Every vCPU's kvmclock holds the VM's one reference: vCPU 1 registering
 * a day after vCPU 0 (Linux's CPU offline/online) gets the same TSC and
 * time pair, not its own later reading, which the truncated mul would put
 * ahead of vCPU 0's at the same TSC while TSC_STABLE says they agree.  A
 * write of the guest's TSC moves the reference for both, each vCPU's at
 * its own next entry, with the TSC it then runs on. */
static void test_kvmclock_one_reference_for_every_vcpu(void **state)
{
	struct vcpu *ap;
	struct pvclock_time a, b;

	(void)state;
	ap = fake_add_ap(vm);
	vcpu_set_state(ap, VCPU_IDLE, VCPU_RUNNABLE);
	vcpu_set_state(ap, VCPU_RUNNABLE, VCPU_RUNNING);
	kvmclock_on(v, 0x3000);
	fake_now_ns += 86400ull * 1000000000ull;
	kvmclock_on(ap, 0x3ff0);			/* across a page, too */
	a = kvmclock_of(0x3000);
	b = kvmclock_of(0x3ff0);
	assert_same_clock(&a, &b);
	assert_true(a.system_time < fake_now_ns);	/* the reference, not now */

	static const struct fake_step wr = {
		.exit = { .code = EXIT_MSR_WRITE, .inst_len = 2, .u.msr.index = MSR_IA32_TSC },
		.regs = true, .rax = 0, .rcx = MSR_IA32_TSC, .rdx = 1 };
	fake_script(&wr, 1);
	vcpu_run(v);
	/* vCPU 1 runs on the old TSC until its next entry, and its kvmclock
	 * says so until then; it is kicked out for it */
	a = kvmclock_of(0x3ff0);
	assert_same_clock(&a, &b);
	assert_true(vcpu_has_request(ap, VCPU_REQ_KICK));
	assert_true(ap->tsc.gen != vm->tsc.gen);
	vcpu_run(ap);					/* its next entry */
	assert_true(ap->tsc.gen == vm->tsc.gen);
	a = kvmclock_of(0x3000);
	b = kvmclock_of(0x3ff0);
	assert_same_clock(&a, &b);
	assert_true(a.tsc_timestamp == 1ull << 32);
	assert_true(a.system_time == fake_now_ns);
	fake_drop_ap(vm);
}

/* A guest that stood still (vm_resume, vm_activate) is told so at each
 * vCPU's next entry: PVCLOCK_GUEST_STOPPED, beside TSC_STABLE, the clock
 * itself unchanged.  ferry keeps the flag in later writes until the guest
 * clears it in its copy, and does not bring it back after that. */
static void test_kvmclock_says_the_guest_stood_still(void **state)
{
	const uint64_t flags_at = 0x3000 + offsetof(struct pvclock_time, flags);
	struct pvclock_time a, b;
	uint8_t f;

	(void)state;
	kvmclock_on(v, 0x3000);
	a = kvmclock_of(0x3000);
	assert_int_equal(a.flags, PVCLOCK_TSC_STABLE);
	fake_now_ns += 60ull * 1000000000ull;		/* paused a minute */
	kvmclock_guest_stopped(vm);
	assert_int_equal(kvmclock_of(0x3000).flags, PVCLOCK_TSC_STABLE);	/* at entry */
	run(NULL, 0);
	b = kvmclock_of(0x3000);
	assert_int_equal(b.flags, PVCLOCK_TSC_STABLE | PVCLOCK_GUEST_STOPPED);
	assert_same_clock(&a, &b);
	assert_true(b.version > a.version && !(b.version & 1));
	assert_false(vcpu_has_request(v, VCPU_REQ_CLOCK_STOPPED));
	kvmclock_on(v, 0x3000);				/* not cleared yet: kept */
	assert_int_equal(kvmclock_of(0x3000).flags, PVCLOCK_TSC_STABLE | PVCLOCK_GUEST_STOPPED);
	f = PVCLOCK_TSC_STABLE;				/* the guest clears it */
	assert_int_equal(vm_write_gpa(vm, flags_at, &f, 1), 0);
	kvmclock_on(v, 0x3000);
	run(NULL, 0);
	assert_int_equal(kvmclock_of(0x3000).flags, PVCLOCK_TSC_STABLE);
}

/* A guest TSC scaled to a third of the host's rate, answered on RDTSC
 * exits: the value the core returns is the scaled one, in EDX:EAX, and
 * goes on from where it was set. */
static void test_rdtsc_exit_answers_the_scaled_tsc(void **state)
{
	static const struct fake_step s[] = {
		{ .exit = { .code = EXIT_RDTSC, .inst_len = 2 } },
	};
	uint64_t mult = TSC_MULT_ONE / 3, before, got;

	(void)state;
	before = rdtsc();
	vm->tsc.mult = mult;			/* as vm_tsc_retune sets it */
	vm_tsc_set(vm, 1ull << 40);
	run(s, 1);
	assert_true(fake.tsc_mult == mult);	/* the back end was told before the entry */
	assert_true(fake.tsc_offset == vm->tsc.offset);
	assert_true(v->hw.gpr[GPR_RDX] >> 32 == 0 && v->hw.gpr[GPR_RAX] >> 32 == 0);
	got = (v->hw.gpr[GPR_RDX] << 32) | v->hw.gpr[GPR_RAX];
	/* a third of the host ticks that went by since, give or take one */
	assert_true(got >= 1ull << 40);
	assert_true(got - (1ull << 40) <= (rdtsc() - before) / 3 + 1);
	assert_int_equal(fake.nr_skipped, 1);
	assert_int_equal(fake.skipped[0], 2);
}

/* RDPMC: the guest has no PMU, so #GP(0), and RIP stays (a fault). */
static void test_rdpmc_is_gp(void **state)
{
	static const struct fake_step s[] = {
		{ .exit = { .code = EXIT_RDPMC, .inst_len = 2 } },
	};

	(void)state;
	run(s, 1);
	assert_int_equal(fake.nr_injected, 1);
	assert_int_equal(fake.injected[0].type, EVENT_EXCEPTION);
	assert_int_equal(fake.injected[0].vector, 13);
	assert_true(fake.injected[0].has_error);
	assert_int_equal(fake.injected[0].error, 0);
	assert_int_equal(fake.nr_skipped, 0);
	assert_int_equal(vm->state, VM_RUNNING);
}

static void test_port_io(void **state)
{
	static const struct fake_step s[] = {
		{ .exit = IO(0x3f8, 1, false), .regs = true, .rax = 0x4141 },	/* 'A' to COM1 */
		{ .exit = IO(0x1234, 2, true), .regs = true, .rax = 0x1111222233334444ull },
		{ .exit = IO(0x1234, 1, false), .regs = true, .rax = 7 },
	};
	char out[8];
	uint64_t pos = 0;

	(void)state;
	assert_int_equal(run(s, 3), VCPU_RUNNABLE);
	assert_int_equal(vm_console_read(vm, &pos, out, sizeof(out)), 1);
	assert_int_equal(out[0], 'A');
	assert_int_equal(v->hw.gpr[GPR_RAX], 7);	/* an OUT leaves RAX alone */
	assert_int_equal(vm->io_unhandled_reads, 1);
	assert_int_equal(vm->io_dropped, 1);
	assert_int_equal(fake.nr_skipped, 3);
	assert_int_equal(vm->state, VM_RUNNING);
}

static void test_port_read_merges_into_rax(void **state)
{
	static const struct fake_step s[] = {
		{ .exit = IO(0x1234, 2, true), .regs = true, .rax = 0x1111222233334444ull },
	};

	(void)state;
	run(s, 1);
	assert_true(v->hw.gpr[GPR_RAX] == 0x111122223333ffffull);
}

/* IN EAX writes a 32-bit register: bits 63:32 are cleared, as for any
 * 32-bit destination. */
static void test_port_read_of_four_bytes_clears_the_top(void **state)
{
	static const struct fake_step s[] = {
		{ .exit = IO(0x1234, 4, true), .regs = true, .rax = 0x1111222233334444ull },
	};

	(void)state;
	run(s, 1);
	assert_true(v->hw.gpr[GPR_RAX] == 0xffffffffull);
}

static void test_string_io_stops_the_guest(void **state)
{
	struct fake_step s[] = { { .exit = IO(0x3f8, 1, false) } };

	(void)state;
	s[0].exit.u.io.string = true;
	assert_int_equal(run(s, 1), VCPU_RUNNABLE);
	assert_int_equal(vm->state, VM_STOPPED);
	assert_non_null(strstr(fake_stop_reason, "string I/O"));
	assert_int_equal(fake.runs, 1);
}

static void test_hlt_sleeps_and_an_interrupt_wakes(void **state)
{
	static const struct fake_step hlt[] = {
		{ .exit = { .code = EXIT_HLT, .inst_len = 1 }, .intr = 1 },
	};

	(void)state;
	assert_int_equal(run(hlt, 1), VCPU_HALTED);
	assert_int_equal(fake.runs, 1);
	assert_true(v->halted_if);
	assert_false(vcpu_wants_wake(v));	/* the PIC is masked */
	vcpu_set_state(v, VCPU_RUNNING, VCPU_HALTED);
	fake_guest_timer(vm);
	fake_now_ns += 20000000;		/* two PIT periods */
	assert_true(vcpu_wants_wake(v));
	vcpu_set_state(v, VCPU_HALTED, VCPU_RUNNING);
	assert_int_equal(run(NULL, 0), VCPU_RUNNABLE);
	assert_int_equal(fake.nr_injected, 1);
	assert_int_equal(fake.injected[0].type, EVENT_EXTINT);
	assert_int_equal(fake.injected[0].vector, 0x20);
}

/* A halted guest waiting for its console (COM1 on IRQ 4 of the 8259):
 * every byte typed wakes it, the interrupt after each EOI included. */
static void test_console_bytes_wake_a_halted_guest(void **state)
{
	static const struct fake_step hlt[] = {
		{ .exit = { .code = EXIT_HLT, .inst_len = 1 }, .intr = 1 },
	};
	uint32_t val;

	(void)state;
	fake_guest_timer(vm);
	fake_out(vm, 0x21, 0xef);		/* only IRQ 4 */
	fake_out(vm, 0x3F9, 0x01);		/* COM1: interrupt on data */
	fake_out(vm, 0x3FC, 0x0B);		/* OUT2: the line reaches the PIC */
	for (int i = 0; i < 3; i++) {
		fake.nr_injected = 0;
		assert_int_equal(run(hlt, 1), VCPU_HALTED);
		vcpu_set_state(v, VCPU_RUNNING, VCPU_HALTED);
		assert_false(vcpu_wants_wake(v));
		assert_true(vm_console_input(vm, (uint8_t)('a' + i)));
		assert_true(vcpu_wants_wake(v));
		vcpu_set_state(v, VCPU_HALTED, VCPU_RUNNING);
		assert_int_equal(run(NULL, 0), VCPU_RUNNABLE);
		assert_int_equal(fake.nr_injected, 1);
		assert_int_equal(fake.injected[0].vector, 0x24);
		vm_io(vm, 0x3F8, 1, true, &val);	/* the handler reads the byte */
		assert_int_equal(val & 0xff, 'a' + i);
		fake_out(vm, 0x20, 0x20);		/* EOI */
	}
}

/* An NMI the guest sent itself (x2APIC ICR), and a timer interrupt due. */
static void nmi_and_timer_due(void)
{
	uint64_t icr = 4u << 8;			/* NMI to APIC id 0: itself */
	uint64_t base = 0xFEE00000 | 1u << 11 | 1u << 10 | 1u << 8;

	fake_guest_timer(vm);
	assert_int_equal(vm_apic_msr(v, 0x1B, true, &base, 0), 0);	/* x2APIC */
	assert_int_equal(vm_apic_msr(v, 0x830, true, &icr, 0), 0);
	assert_true(vm_event_pending(v));
	fake_now_ns += 20000000;
}

/* HLT with interrupts off: only an NMI could wake it.  One pending goes
 * in first; with none left, the guest has powered off. */
static void test_hlt_with_interrupts_off(void **state)
{
	static const struct fake_step hlt[] = {
		{ .exit = { .code = EXIT_HLT, .inst_len = 1 }, .intr = -1 },
	};

	(void)state;
	nmi_and_timer_due();
	assert_int_equal(run(hlt, 1), VCPU_RUNNABLE);
	assert_int_equal(fake.nr_injected, 1);	/* the NMI went in before the HLT */
	assert_int_equal(fake.injected[0].type, EVENT_NMI);
	assert_int_equal(vm->state, VM_STOPPED);
	assert_string_equal(fake_stop_reason, "powered off (halted with interrupts off)");
	assert_true(vm_pending_vector(v) >= 0);	/* the timer could not wake it */
}

/* An ExtINT message that finds interrupts off goes back to wait, and asks
 * for the interrupt window like any interrupt, rather than waiting for the
 * next unrelated exit. */
static void test_extint_waits_for_its_window(void **state)
{
	(void)state;
	/* as an I/O APIC entry in ExtINT mode sends it */
	assert_int_equal(lapic_deliver(&vm->dev->lapic[0], LAPIC_DM_EXTINT, 0, false), 0);
	assert_true(vm_extint_waiting(v));
	fake.intr_allowed = false;
	fake.window = false;
	assert_int_equal(run(NULL, 0), VCPU_RUNNABLE);
	assert_int_equal(fake.nr_injected, 0);
	assert_true(vm_extint_waiting(v));
	assert_true(fake.window_in_run[0]);
}

/* HLT in an NMI handler (NMIs blocked, interrupts on): another NMI stays
 * pending and does not wake it, as on a CPU (waking would find the NMI
 * refused at entry and run the HLT again and again); an interrupt does. */
static void test_hlt_in_an_nmi_handler_sleeps_through_an_nmi(void **state)
{
	static const struct fake_step hlt[] = {
		{ .exit = { .code = EXIT_HLT, .inst_len = 1 }, .intr = 1 },
	};
	uint64_t icr = 4u << 8;			/* NMI to APIC id 0: itself */
	uint64_t base = 0xFEE00000 | 1u << 11 | 1u << 10 | 1u << 8;

	(void)state;
	fake_guest_timer(vm);
	fake.state.interruptibility = INTR_NMI_BLOCKED;
	assert_int_equal(run(hlt, 1), VCPU_HALTED);
	vcpu_set_state(v, VCPU_RUNNING, VCPU_HALTED);
	assert_int_equal(vm_apic_msr(v, 0x1B, true, &base, 0), 0);	/* x2APIC */
	assert_int_equal(vm_apic_msr(v, 0x830, true, &icr, 0), 0);
	assert_true(vm_event_pending(v));
	assert_false(vcpu_wants_wake(v));
	fake_now_ns += 20000000;		/* the timer's interrupt wakes it */
	assert_true(vcpu_wants_wake(v));
}

/* An NMI and an interrupt due together: the NMI goes in, and the
 * interrupt asks for its window at the same entry (it goes in once the
 * NMI handler's IRET sets IF), not at the next unrelated exit. */
static void test_nmi_then_the_interrupt_window(void **state)
{
	(void)state;
	nmi_and_timer_due();
	fake.window = false;
	assert_int_equal(run(NULL, 0), VCPU_RUNNABLE);
	assert_int_equal(fake.nr_injected, 1);
	assert_int_equal(fake.injected[0].type, EVENT_NMI);
	assert_true(vm_pending_vector(v) >= 0);
	assert_true(fake.window_in_run[0]);
}

static void test_hlt_with_an_interrupt_due_runs_on(void **state)
{
	static const struct fake_step s[] = {
		{ .exit = { .code = EXIT_HLT, .inst_len = 1 }, .intr = 1 },
	};

	(void)state;
	fake_guest_timer(vm);
	fake_now_ns += 20000000;
	assert_int_equal(run(s, 1), VCPU_RUNNABLE);	/* woken at once */
	assert_int_equal(fake.runs, 2);
	assert_true(fake.nr_injected >= 1);
	assert_int_equal(fake.injected[0].vector, 0x20);
}

/* The lock-free "nothing pending" answer before each entry lasts only until
 * the PIT's next interrupt, and any device access or console byte ends it. */
static void test_pending_vector_quiet_time(void **state)
{
	uint64_t t0;

	(void)state;
	fake_guest_timer(vm);
	while (vm_pending_vector(v) >= 0)		/* take what the PIT has pending */
		vm_ack_vector(v);
	fake_out(vm, 0x20, 0x20);			/* EOI */
	assert_int_equal(vm_pending_vector(v), -1);
	t0 = v->irq_quiet_until_ns;
	assert_true(t0 > vm_clock_ns(vm) && t0 <= vm_clock_ns(vm) + 10001000);
	fake_now_ns = fake_now_ns + (t0 - vm_clock_ns(vm)) - 1;
	assert_int_equal(vm_pending_vector(v), -1);	/* 1 ns early: still quiet */
	fake_now_ns += 1;
	assert_int_equal(vm_pending_vector(v), 0x20);	/* the tick is due */
	vm_ack_vector(v);
	fake_out(vm, 0x20, 0x20);
	assert_int_equal(vm_pending_vector(v), -1);
	assert_true(v->irq_quiet_until_ns > vm_clock_ns(vm));
	fake_out(vm, 0x21, 0xff);			/* a port write: ask again */
	assert_int_equal(v->irq_quiet_until_ns, 0);
	assert_int_equal(vm_pending_vector(v), -1);
	vm_console_input(vm, 'x');			/* so does a console byte */
	assert_int_equal(v->irq_quiet_until_ns, 0);
}

static void test_interrupt_window(void **state)
{
	static const struct fake_step s[] = {
		{ .exit = { .code = EXIT_EXTERNAL } },
		{ .exit = { .code = EXIT_INTR_WINDOW }, .intr = 1 },
	};

	(void)state;
	fake_guest_timer(vm);
	fake_now_ns += 20000000;
	fake.intr_allowed = false;
	fake_script(s, 2);
	vcpu_run(v);
	/* first entries: pending but blocked, so a window was asked for;
	 * after the window exit it is injected */
	assert_int_equal(fake.nr_injected, 1);
	assert_int_equal(fake.injected[0].vector, 0x20);
	assert_int_equal(v->stats.exits[EXIT_INTR_WINDOW], 1);
	assert_false(fake.window);
}

static void test_window_requested_while_blocked(void **state)
{
	static const struct fake_step s[] = { { .exit = { .code = EXIT_EXTERNAL } } };

	(void)state;
	fake_guest_timer(vm);
	fake_now_ns += 20000000;
	fake.intr_allowed = false;
	run(s, 1);
	assert_int_equal(fake.nr_injected, 0);
	assert_true(fake.window);
}

/* The guest in 32-bit protected mode, paging off, about to run `bytes`
 * at 0x2000 with EBX = gpa. */
static void guest_insn(const uint8_t *bytes, size_t n, uint64_t gpa)
{
	fake.state.cr0 = 0x11;				/* PE, ET */
	fake.state.cs = (struct seg){ .sel = 8, .attr = 0x9b | SEG_ATTR_DB | SEG_ATTR_G,
				      .limit = 0xffffffff };
	fake.state.ss = (struct seg){ .sel = 16, .attr = 0x93 | SEG_ATTR_DB,
				      .limit = 0xffffffff };
	fake.state.rip = 0x2000;
	fake.state.rflags = 2;
	assert_int_equal(vm_write_gpa(vm, 0x2000, bytes, n), 0);
	v->hw.gpr[GPR_RBX] = gpa;
	v->hw.gpr[GPR_RAX] = 0x1234;
}

/* Memory no device claims reads as all ones, as on a PC; the write of
 * `mov [ebx], eax` is dropped and counted.  The guest goes on. */
static void test_unclaimed_mmio_reads_all_ones(void **state)
{
	static const uint8_t load[] = { 0x8b, 0x03 }, store[] = { 0x89, 0x03 };
	static const struct fake_step s[] = {
		{ .exit = { .code = EXIT_GPA_FAULT, .rip = 0x2000, .inst_len = 2,
			    .u.gpa_fault = { .gpa = 0x40000000, .read = true } } },
	};
	static const struct fake_step w[] = {
		{ .exit = { .code = EXIT_GPA_FAULT, .rip = 0x2000, .inst_len = 2,
			    .u.gpa_fault = { .gpa = 0xC0000000, .write = true } } },
	};

	(void)state;
	guest_insn(load, sizeof(load), 0x40000000);
	assert_int_equal(run(s, 1), VCPU_RUNNABLE);
	assert_int_equal(vm->state, VM_RUNNING);
	assert_int_equal(v->hw.gpr[GPR_RAX], 0xffffffffu);
	assert_int_equal(fake.nr_skipped, 1);
	assert_int_equal(fake.skipped[0], 2);
	assert_int_equal(vm->mmio_unhandled_reads, 1);
	guest_insn(store, sizeof(store), 0xC0000000);
	assert_int_equal(run(w, 1), VCPU_RUNNABLE);
	assert_int_equal(vm->state, VM_RUNNING);
	assert_int_equal(vm->mmio_dropped, 1);
	assert_int_equal(v->hw.gpr[GPR_RAX], 0x1234);
}

/* `or eax, [ebx]` on unclaimed memory: the register and the flags both
 * change, and both survive the write-back of the flags. */
static void test_mmio_logic_op_keeps_its_result(void **state)
{
	static const uint8_t or_load[] = { 0x0b, 0x03 };
	static const struct fake_step s[] = {
		{ .exit = { .code = EXIT_GPA_FAULT, .rip = 0x2000, .inst_len = 2,
			    .u.gpa_fault = { .gpa = 0x40000000, .read = true } } },
	};

	(void)state;
	guest_insn(or_load, sizeof(or_load), 0x40000000);
	assert_int_equal(run(s, 1), VCPU_RUNNABLE);
	assert_string_equal(fake_stop_reason, "");
	assert_int_equal(v->hw.gpr[GPR_RAX], 0xffffffffu);
	assert_int_equal(v->hw.gpr[GPR_RBX], 0x40000000);
	assert_int_equal(fake.state.rflags & 0x8c5, 0x84);	/* SF PF; no ZF CF OF */
	assert_int_equal(fake.nr_skipped, 1);
}

/* Run bytes at 0x2000 as guest_insn() sets them up, faulting on unclaimed
 * 0x40000000 as if by a write or a read; the guest must go on. */
static void run_unclaimed_mmio(const uint8_t *bytes, size_t n, bool write)
{
	const struct fake_step s[] = {
		{ .exit = { .code = EXIT_GPA_FAULT, .rip = 0x2000, .inst_len = (uint8_t)n,
			    .u.gpa_fault = { .gpa = 0x40000000, .read = !write,
					     .write = write } } },
	};

	guest_insn(bytes, n, 0x40000000);
	assert_int_equal(run(s, 1), VCPU_RUNNABLE);
	assert_string_equal(fake_stop_reason, "");
	assert_int_equal(vm->state, VM_RUNNING);
}

/* `cmp dword [ebx], -1` on unclaimed memory (all ones): a register poll
 * as clang compiles it.  Only the flags change (ZF), nothing is written,
 * and the guest goes on past it. */
static void test_mmio_cmp_sets_flags_only(void **state)
{
	(void)state;
	run_unclaimed_mmio((const uint8_t[]){ 0x83, 0x3b, 0xff }, 3, false);
	assert_int_equal(fake.state.rflags & 0x8d5, 0x44);	/* ZF PF; no CF OF SF AF */
	assert_int_equal(vm->mmio_dropped, 0);
	assert_int_equal(v->hw.gpr[GPR_RBX], 0x40000000);
	assert_int_equal(fake.nr_skipped, 1);
	assert_int_equal(fake.skipped[0], 3);
}

/* A 4-byte load at the last 2 bytes of an unclaimed page would reach into
 * the next page: not emulated (the guest stops with the reason), never
 * done at the wrong place. */
static void test_mmio_across_a_page_stops(void **state)
{
	static const uint8_t load[] = { 0x8b, 0x03 };
	static const struct fake_step s[] = {
		{ .exit = { .code = EXIT_GPA_FAULT, .rip = 0x2000, .inst_len = 2,
			    .u.gpa_fault = { .gpa = 0x40000ffe, .read = true } } },
	};

	(void)state;
	guest_insn(load, sizeof(load), 0x40000ffe);
	assert_int_equal(run(s, 1), VCPU_RUNNABLE);
	assert_int_equal(vm->state, VM_STOPPED);
	assert_string_equal(fake_stop_reason, "instruction at rip 0x2000 accessing guest-physical "
			    "0x40000ffe is not emulated (it crosses into the next page)");
	assert_int_equal(v->hw.gpr[GPR_RAX], 0x1234);
}

/* `lock mov [ebx], eax` at RIP where an MMIO access faulted: a CPU raises
 * #UD for it before any access (the code changed since), and so does
 * ferry: nothing written, RIP kept, the guest goes on to its handler. */
static void test_mmio_lock_mov_is_ud(void **state)
{
	(void)state;
	run_unclaimed_mmio((const uint8_t[]){ 0xf0, 0x89, 0x03 }, 3, true);
	assert_int_equal(fake.nr_injected, 1);
	assert_int_equal(fake.injected[0].vector, 6);
	assert_false(fake.injected[0].has_error);
	assert_int_equal(fake.nr_skipped, 0);
	assert_int_equal(vm->mmio_dropped, 0);
}

/* 32-bit PAE paging on, its PDPT at 0x10020 (the test guest's own layout),
 * RIP at 0x3000. */
static void pae_guest(const uint64_t pdpt[4])
{
	assert_int_equal(vm_write_gpa(vm, 0x10020, pdpt, 4 * sizeof(uint64_t)), 0);
	fake.state.rip = 0x3000;
	fake.state.cr0 = 0x80000011;
	fake.state.cr4 = 0x20;
	fake.state.cr3 = 0x10020;
}

/* The guest's tables no longer map the code that made the access (another
 * vCPU unmapped it): #PF with CR2 at the code, nothing done, RIP kept. */
static void test_mmio_code_unmapped_is_a_page_fault(void **state)
{
	static const struct fake_step s[] = {
		{ .exit = { .code = EXIT_GPA_FAULT, .rip = 0x3000, .inst_len = 2,
			    .u.gpa_fault = { .gpa = 0x40000000, .read = true } } },
	};
	uint64_t pdpt[4] = { 0x11000 | 1, 0, 0, 0 }, pde = 0;

	(void)state;
	guest_insn((const uint8_t[]){ 0x8b, 0x03 }, 2, 0x40000000);
	assert_int_equal(vm_write_gpa(vm, 0x11000, &pde, 8), 0);	/* 0-2 MiB: not present */
	pae_guest(pdpt);
	assert_int_equal(run(s, 1), VCPU_RUNNABLE);
	assert_string_equal(fake_stop_reason, "");
	assert_int_equal(vm->state, VM_RUNNING);
	assert_int_equal(fake.nr_injected, 1);
	assert_int_equal(fake.injected[0].vector, 14);
	assert_true(fake.injected[0].has_error);
	assert_int_equal(fake.injected[0].error, 0);	/* not present (I/D only with NXE or SMEP) */
	assert_int_equal(fake.state.cr2, 0x3000);
	assert_int_equal(fake.nr_skipped, 0);
	assert_int_equal(v->hw.gpr[GPR_RAX], 0x1234);
}

/* The guest's own page walk met a table outside its RAM: the instruction
 * is not emulated (it made no such access); the guest stops, saying why. */
static void test_page_table_outside_ram_stops(void **state)
{
	static const struct fake_step s[] = {
		{ .exit = { .code = EXIT_GPA_FAULT, .rip = 0x2000, .inst_len = 2,
			    .u.gpa_fault = { .gpa = 0xfee00000, .read = true, .walk = true } } },
	};

	(void)state;
	guest_insn((const uint8_t[]){ 0x89, 0x03 }, 2, 0x40000000);
	assert_int_equal(run(s, 1), VCPU_RUNNABLE);
	assert_int_equal(vm->state, VM_STOPPED);
	assert_string_equal(fake_stop_reason, "its page tables point at guest-physical 0xfee00000 "
			    "outside its memory (at rip 0x2000)");
	assert_int_equal(vm->mmio_dropped, 0);
}

/* The same through 32-bit PAE paging (the test guest's 4 GiB probe): the
 * instruction is found through the guest's own tables. */
static void test_mmio_under_pae_paging(void **state)
{
	static const uint8_t load[] = { 0x8b, 0x03 };
	static const struct fake_step s[] = {
		{ .exit = { .code = EXIT_GPA_FAULT, .rip = 0x3000, .inst_len = 2,
			    .u.gpa_fault = { .gpa = 0x100000000ull, .read = true } } },
	};
	uint64_t pdpt[4] = { 0x11000 | 1, 0, 0, 0x12000 | 1 };
	uint64_t pde_low = 0x83 | 2, pde_win = 0x100000000ull | 0x83;

	(void)state;
	guest_insn(load, sizeof(load), 0xC0000000);
	assert_int_equal(vm_write_gpa(vm, 0x3000, load, sizeof(load)), 0);
	assert_int_equal(vm_write_gpa(vm, 0x11000, &pde_low, 8), 0);
	assert_int_equal(vm_write_gpa(vm, 0x12000, &pde_win, 8), 0);
	pae_guest(pdpt);
	assert_int_equal(run(s, 1), VCPU_RUNNABLE);
	assert_string_equal(fake_stop_reason, "");
	assert_int_equal(v->hw.gpr[GPR_RAX], 0xffffffffu);
}

/* The xAPIC page is the vCPU's local APIC: a read gives its version. */
static void test_lapic_mmio(void **state)
{
	static const uint8_t load[] = { 0x8b, 0x03 };
	static const struct fake_step s[] = {
		{ .exit = { .code = EXIT_GPA_FAULT, .rip = 0x2000, .inst_len = 2,
			    .u.gpa_fault = { .gpa = 0xFEE00030, .read = true } } },
	};

	(void)state;
	guest_insn(load, sizeof(load), 0xFEE00030);
	assert_int_equal(run(s, 1), VCPU_RUNNABLE);
	assert_int_equal(v->hw.gpr[GPR_RAX], 0x00050014);	/* 6 LVTs, version 0x14 */
	assert_int_equal(vm->mmio_unhandled_reads, 0);
}

/* What cannot be emulated stops the guest with a reason, never the host;
 * so does executing outside RAM. */
static void test_gpa_fault_stops_the_guest(void **state)
{
	static const uint8_t ud2[] = { 0x0f, 0x0b };
	static const struct fake_step s[] = {
		{ .exit = { .code = EXIT_GPA_FAULT, .rip = 0x2000,
			    .u.gpa_fault = { .gpa = 0x40000000, .read = true } } },
	};
	static const struct fake_step x[] = {
		{ .exit = { .code = EXIT_GPA_FAULT, .rip = 0x40000000,
			    .u.gpa_fault = { .gpa = 0x40000000, .exec = true } } },
	};

	(void)state;
	guest_insn(ud2, sizeof(ud2), 0x40000000);
	assert_int_equal(run(s, 1), VCPU_RUNNABLE);
	assert_int_equal(vm->state, VM_STOPPED);
	assert_string_equal(fake_stop_reason, "instruction at rip 0x2000 accessing "
			    "guest-physical 0x40000000 is not emulated (error -95)");
	vm->state = VM_RUNNING;
	assert_int_equal(run(x, 1), VCPU_RUNNABLE);
	assert_int_equal(vm->state, VM_STOPPED);
	assert_string_equal(fake_stop_reason,
			    "execution of guest-physical 0x40000000 outside its memory at rip 0x40000000");
}

/* An event's delivery that reads its IDT entry (or pushes on a stack)
 * outside RAM: the instruction at RIP, an ordinary load that the MMIO
 * emulator would happily run, made no such access.  The guest stops;
 * nothing is emulated, RIP does not move. */
static void test_event_delivery_outside_ram_stops(void **state)
{
	static const uint8_t load[] = { 0x8b, 0x03 };
	static const struct fake_step s[] = {
		{ .exit = { .code = EXIT_GPA_FAULT, .rip = 0x2000, .inst_len = 2,
			    .u.gpa_fault = { .gpa = 0x40000000, .read = true,
					     .vectoring = true } } },
	};

	(void)state;
	guest_insn(load, sizeof(load), 0x40000000);
	assert_int_equal(run(s, 1), VCPU_RUNNABLE);
	assert_int_equal(vm->state, VM_STOPPED);
	assert_string_equal(fake_stop_reason, "delivering an interrupt or exception touched "
			    "guest-physical 0x40000000 outside its memory (its IDT, stack or TSS) "
			    "at rip 0x2000");
	assert_int_equal(fake.nr_skipped, 0);
	assert_int_equal(v->hw.gpr[GPR_RAX], 0x1234);
	assert_int_equal(vm->mmio_unhandled_reads, 0);
}

/* CR8 is the local APIC's TPR: a write through one is read through the
 * other, a priority at or above an interrupt's class holds it back, and
 * a value above 15 is #GP with nothing changed. */
static void test_cr8_is_the_tpr(void **state)
{
	static const struct fake_step wr[] = {
		{ .exit = { .code = EXIT_CR8, .inst_len = 4, .u.cr8 = { true, GPR_RBX } } },
	};
	static const struct fake_step rd[] = {
		{ .exit = { .code = EXIT_CR8, .inst_len = 4, .u.cr8 = { false, GPR_R9 } } },
	};
	uint64_t base = 0xFEE00000 | 1u << 11 | 1u << 10 | 1u << 8, tpr = 0;
	uint64_t icr = 0x45;			/* fixed IPI to itself, vector 0x45 */

	(void)state;
	assert_int_equal(vm_apic_msr(v, 0x1B, true, &base, 0), 0);	/* x2APIC */
	v->hw.gpr[GPR_RBX] = 5;
	run(wr, 1);
	assert_int_equal(fake.nr_skipped, 1);
	assert_int_equal(vm_apic_msr(v, 0x808, false, &tpr, 0), 0);	/* TPR */
	assert_int_equal(tpr, 0x50);
	assert_int_equal(vm_apic_msr(v, 0x830, true, &icr, 0), 0);
	assert_int_equal(vm_pending_vector(v), -1);	/* class 4 under TPR 5 */
	tpr = 0x30;
	assert_int_equal(vm_apic_msr(v, 0x808, true, &tpr, 0), 0);
	v->hw.gpr[GPR_R9] = ~0ull;
	run(rd, 1);
	assert_int_equal(v->hw.gpr[GPR_R9], 3);
	assert_int_equal(vm_pending_vector(v), 0x45);
	v->hw.gpr[GPR_RBX] = 16;
	fake.nr_injected = 0;
	run(wr, 1);
	assert_int_equal(fake.nr_injected, 1);
	assert_int_equal(fake.injected[0].vector, 13);
	assert_int_equal(vm_apic_msr(v, 0x808, false, &tpr, 0), 0);
	assert_int_equal(tpr, 0x30);
}

/* HLT single-stepped (TF): the #DB that the step queued goes in, and the
 * vCPU neither sleeps nor counts as powered off, interrupts off or not. */
static void test_hlt_single_stepped(void **state)
{
	static const struct fake_step hlt[] = {
		{ .exit = { .code = EXIT_HLT, .inst_len = 1 }, .intr = -1 },
	};

	(void)state;
	fake.state.pending = (struct event){ .valid = true, .type = EVENT_EXCEPTION,
					     .vector = 1 };
	assert_int_equal(run(hlt, 1), VCPU_RUNNABLE);
	assert_int_equal(fake.runs, 2);			/* entered again at once */
	assert_int_equal(vm->state, VM_RUNNING);
	assert_false(v->halt_cli);
}

/* A reset by the keyboard controller reboots the guest from its own vCPU,
 * out of the device call; HLT with interrupts off on its only vCPU is a
 * power-off. */
static void test_reset_reboots_and_cli_hlt_powers_off(void **state)
{
	static const struct fake_step s[] = {
		{ .exit = IO(0x64, 1, false) },
		{ .exit = { .code = EXIT_HLT, .inst_len = 1 }, .intr = -1 },
	};

	(void)state;
	fake_guest_timer(vm);
	v->hw.gpr[GPR_RAX] = 0xfe;
	fake.intr_allowed = true;
	assert_int_equal(run(s, 2), VCPU_RUNNABLE);
	assert_int_equal(fake_reboots, 1);
	assert_false(vm->reset_pending);
	assert_int_equal(vm_pending_vector(v), -1);	/* the 8259 as at power-on */
	assert_int_equal(vm->state, VM_STOPPED);	/* then the HLT */
	assert_string_equal(fake_stop_reason, "powered off (halted with interrupts off)");
}

/* An AP pulls the reset line: it runs no more guest code (parked, not
 * woken by anything until the reboot) and vCPU 0 is the one to reboot,
 * woken for it even from HLT; the guest is not taken for powered off. */
static void test_reset_by_an_ap_is_done_by_the_bsp(void **state)
{
	static const struct fake_step pull[] = {
		{ .exit = IO(0x64, 1, false), .regs = true, .rax = 0xfe },
		{ .exit = { .code = EXIT_HLT, .inst_len = 1 } },	/* never reached */
	};
	struct cpu_state init;
	struct vcpu *ap;

	(void)state;
	vcpu_init_state(&init);
	assert_int_equal(vcpu_create(vm, 1, &init, &ap), 0);
	vm->vcpus[1] = ap;
	vm->nr_vcpus = 2;
	vcpu_set_state(ap, VCPU_IDLE, VCPU_RUNNABLE);
	vcpu_set_state(ap, VCPU_RUNNABLE, VCPU_RUNNING);
	fake_script(pull, 2);
	assert_int_equal(vcpu_run(ap), VCPU_HALTED);
	assert_int_equal(fake.pos, 1);			/* out at the pull */
	assert_int_equal(fake_reboots, 0);
	assert_true(vm->reset_pending);
	assert_false(vcpu_wants_wake(ap));
	assert_true(vcpu_wants_wake(v));		/* the BSP, even halted */
	vcpu_set_state(ap, VCPU_RUNNING, VCPU_HALTED);
	assert_int_equal(run(NULL, 0), VCPU_RUNNABLE);	/* rebooted, then entered */
	assert_int_equal(fake_reboots, 1);
	assert_false(vm->reset_pending);
	assert_int_equal(fake.ran[fake.runs - 1], v);
	assert_int_equal(vm->state, VM_RUNNING);
	vm->nr_vcpus = 1;
	vm->vcpus[1] = NULL;
	vcpu_free(ap);
}

/* A guest that resets again and again (its first instruction pulls the
 * line) still gives its CPU back when its slice is over: the reboot waits
 * for its next turn, at the top of its next run. */
static void test_a_reset_loop_yields_its_turn(void **state)
{
	static const struct fake_step pull[] = {
		{ .exit = IO(0x64, 1, false), .regs = true, .rax = 0xfe, .ticks = 100 },
		{ .exit = IO(0x64, 1, false), .regs = true, .rax = 0xfe, .ticks = 100 },
	};

	(void)state;
	assert_int_equal(run(pull, 2), VCPU_RUNNABLE);
	assert_int_equal(fake.pos, 1);			/* out after the first pull */
	assert_int_equal(fake_reboots, 0);
	assert_true(vm->reset_pending);
	assert_int_equal(run(NULL, 0), VCPU_RUNNABLE);	/* rebooted at its next run */
	assert_int_equal(fake_reboots, 1);
	assert_false(vm->reset_pending);
}

static void test_triple_fault(void **state)
{
	static const struct fake_step s[] = {
		{ .exit = { .code = EXIT_SHUTDOWN, .rip = 0x3000 } },
	};

	(void)state;
	assert_int_equal(run(s, 1), VCPU_RUNNABLE);
	assert_int_equal(vm->state, VM_STOPPED);
	assert_string_equal(fake_stop_reason, "triple fault (shutdown) at rip 0x3000");
}

static void test_unknown_exit_code(void **state)
{
	static const struct fake_step s[] = {
		{ .exit = { .code = (enum exit_code)(EXIT_COUNT + 3), .rip = 0x10 } },
	};

	(void)state;
	run(s, 1);
	assert_int_equal(vm->state, VM_STOPPED);
	assert_non_null(strstr(fake_stop_reason, "unknown exit code"));
}

static void test_hypercall_and_virt_insn(void **state)
{
	static const struct fake_step s[] = {
		{ .exit = { .code = EXIT_HYPERCALL, .inst_len = 3 }, .regs = true, .rax = 9 },
		{ .exit = { .code = EXIT_VIRT_INSN, .inst_len = 3 } },
	};

	(void)state;
	run(s, 2);
	assert_true(v->hw.gpr[GPR_RAX] == (uint64_t)-1000);
	assert_int_equal(fake.nr_skipped, 1);
	assert_int_equal(fake.skipped[0], 3);
	assert_int_equal(fake.nr_injected, 1);
	assert_int_equal(fake.injected[0].vector, 6);	/* #UD */
	assert_int_equal(vm->state, VM_RUNNING);
}

static void test_xsetbv(void **state)
{
	static const struct fake_step s[] = {
		{ .exit = { .code = EXIT_XSETBV, .inst_len = 3 }, .regs = true, .rax = 3 },
		{ .exit = { .code = EXIT_XSETBV, .inst_len = 3 }, .regs = true, .rax = 5 },
	};

	(void)state;
	fake.state.cr4 = CR4_OSXSAVE;
	run(s, 2);
	assert_int_equal(v->hw.xcr0, 3);
	assert_int_equal(fake.xcr0_set, 3);
	assert_int_equal(fake.nr_injected, 1);		/* AVX without SSE: #GP */
	assert_int_equal(fake.injected[0].vector, 13);
	/* ring 3: #GP; CR4.OSXSAVE clear: #UD; XCR0 unchanged either way */
	fake.nr_injected = 0;
	v->hw.xcr0 = 1;
	fake.state.ss.attr = 0xf3;			/* DPL 3 */
	run(s, 1);
	fake.state.ss.attr = 0x93;
	fake.state.cr4 = 0;
	run(s, 1);
	assert_int_equal(v->hw.xcr0, 1);
	assert_int_equal(fake.nr_injected, 2);
	assert_int_equal(fake.injected[0].vector, 13);
	assert_int_equal(fake.injected[1].vector, 6);
}

/* A PAUSE loop: stepped over; a one-vCPU guest runs on (no sibling to wait
 * for), one with siblings gives its CPU up. */
static void test_pause_loop_yields_only_with_siblings(void **state)
{
	static const struct fake_step s[] = {
		{ .exit = { .code = EXIT_PAUSE, .inst_len = 2 } },
		{ .exit = { .code = EXIT_PAUSE, .inst_len = 2 } },
	};

	(void)state;
	assert_int_equal(run(s, 2), VCPU_RUNNABLE);
	assert_int_equal(fake.runs, 3);			/* both resumed, then the kick */
	assert_int_equal(fake.nr_skipped, 2);
	vm->nr_vcpus = 2;				/* as if it had a sibling */
	fake.runs = fake.nr_skipped = 0;
	assert_int_equal(run(s, 2), VCPU_RUNNABLE);
	vm->nr_vcpus = 1;
	assert_int_equal(fake.runs, 1);			/* gave up after the first */
	assert_int_equal(fake.nr_skipped, 1);
	assert_int_equal(fake.skipped[0], 2);
}

/* A throttle of pct from now, the vCPU's demand base_ns per period. */
static void throttle_at(uint32_t pct, uint64_t base_ns)
{
	vm->throttle_pct = pct;
	v->thr_start_ns = fake_now_ns;
	v->thr_base_ns = base_ns;
	v->stats.guest_ns = v->stats.host_ns = v->thr_busy0_ns = 0;
}

static void test_throttle_sits_out(void **state)
{
	static const struct fake_step s[] = {
		{ .exit = { .code = EXIT_EXTERNAL } }, { .exit = { .code = EXIT_EXTERNAL } },
	};

	(void)state;
	throttle_at(50, 0);			/* demand unknown: half the period */
	v->stats.guest_ns = 10000000;
	v->stats.host_ns = 12000000;		/* in ferry counts: 22 of 40 ms used */
	assert_int_equal(run(s, 2), VCPU_RUNNABLE);
	assert_int_equal(fake.runs, 1);
	assert_true(vcpu_throttled_now(v));
	fake_now_ns += 40000000;
	assert_false(vcpu_throttled_now(v));
}

/* A vCPU that used 4 ms of each 40 ms period before the throttle (a writer
 * paced by its timer) sits out after 2 ms at 50%, not after 20. */
static void test_throttle_takes_from_the_demand(void **state)
{
	static const struct fake_step s[] = {
		{ .exit = { .code = EXIT_EXTERNAL } }, { .exit = { .code = EXIT_EXTERNAL } },
	};

	(void)state;
	throttle_at(50, 4000000);
	v->stats.guest_ns = 2500000;
	assert_int_equal(run(s, 2), VCPU_RUNNABLE);
	assert_int_equal(fake.runs, 1);
	assert_true(vcpu_throttled_now(v));
	assert_int_equal(v->thr_base_ns, 4000000);	/* kept while throttled */
}

/* Unthrottled, the demand is measured period by period. */
static void test_demand_is_measured_without_throttle(void **state)
{
	static const struct fake_step s[] = {
		{ .exit = { .code = EXIT_EXTERNAL } },
	};

	(void)state;
	throttle_at(0, 0);
	v->stats.guest_ns = 6000000;		/* 6 ms of the 40 that went by */
	fake_now_ns += 40000000;
	run(s, 1);
	/* (plus the microseconds the fake run itself took) */
	assert_true(v->thr_base_ns >= 6000000 && v->thr_base_ns < 6100000);
	assert_true(v->thr_start_ns == fake_now_ns);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(test_transition_table),
		T(test_illegal_transitions_panic),
		T(test_requests),
		T(test_not_running_vm_does_not_enter),
		T(test_kick_ends_the_run_before_entry),
		T(test_notify_kicks_once_until_it_looks),
		T(test_cpuid),
		T(test_msr_allow_list_and_gp),
		T(test_kvmclock_outside_ram_said_sparingly),
		T(test_kvmclock_one_reference_for_every_vcpu),
		T(test_kvmclock_says_the_guest_stood_still),
		T(test_msr_tsc_write_moves_the_offset),
		T(test_rdtsc_exit_answers_the_scaled_tsc),
		T(test_port_io),
		T(test_port_read_merges_into_rax), T(test_port_read_of_four_bytes_clears_the_top),
		T(test_a_timer_edge_found_by_one_vcpu_kicks_its_target),
		T(test_string_io_stops_the_guest),
		T(test_hlt_sleeps_and_an_interrupt_wakes),
		T(test_console_bytes_wake_a_halted_guest),
		T(test_hlt_with_interrupts_off), T(test_hlt_single_stepped), T(test_cr8_is_the_tpr),
		T(test_nmi_then_the_interrupt_window),
		T(test_hlt_in_an_nmi_handler_sleeps_through_an_nmi),
		T(test_extint_waits_for_its_window),
		T(test_hlt_with_an_interrupt_due_runs_on),
		T(test_pending_vector_quiet_time),
		T(test_interrupt_window),
		T(test_window_requested_while_blocked),
		T(test_unclaimed_mmio_reads_all_ones),
		T(test_mmio_under_pae_paging),
		T(test_mmio_logic_op_keeps_its_result),
		T(test_rdpmc_is_gp),
		T(test_mmio_cmp_sets_flags_only),
		T(test_mmio_across_a_page_stops),
		T(test_mmio_lock_mov_is_ud),
		T(test_page_table_outside_ram_stops),
		T(test_mmio_code_unmapped_is_a_page_fault),
		T(test_lapic_mmio),
		T(test_gpa_fault_stops_the_guest),
		T(test_event_delivery_outside_ram_stops),
		T(test_reset_reboots_and_cli_hlt_powers_off),
		T(test_reset_by_an_ap_is_done_by_the_bsp),
		T(test_a_reset_loop_yields_its_turn),
		T(test_triple_fault),
		T(test_unknown_exit_code),
		T(test_hypercall_and_virt_insn),
		T(test_xsetbv),
		T(test_pause_loop_yields_only_with_siblings),
		T(test_throttle_sits_out),
		T(test_throttle_takes_from_the_demand),
		T(test_demand_is_measured_without_throttle),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
