/* SPDX-License-Identifier: BSD-2-Clause */
/* The host stand-ins for the core's unit tests: see core_fake.h. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include "hv/lib/log.h"
#include <cmocka.h>
#include "drivers/rtc.h"
#include "arch/x86/apic.h"
#include "arch/x86/fpu.h"
#include "hv/lib/panic.h"
#include "hv/lib/time.h"
#include "hv/vcpu.h"
#include "hv/vdev/devices.h"
#include "hv/vm_devices.h"
#include "tests/unit/core_fake.h"

struct fake_backend fake;
uint64_t fake_now_ns;
unsigned int fake_cpu;
char fake_stop_reason[160];
unsigned int fake_stops;

struct percpu cpus[MAX_CPUS];
unsigned int cpu_count;

/* ---- the scripted back end -------------------------------------------- */

/* The core's vCPU around the part the back end is handed (v->hw). */
static struct vcpu *core(struct vmm_vcpu *hw)
{
	return (struct vcpu *)((char *)hw - offsetof(struct vcpu, hw));
}

static void fake_run(struct vmm_vcpu *hw, struct vm_exit *e)
{
	struct vcpu *v = core(hw);
	const struct fake_step *s;

	if (fake.runs < FAKE_MAX) {
		fake.ran[fake.runs] = v;
		fake.state_in_run[fake.runs] = vcpu_state(v);
		fake.window_in_run[fake.runs] = fake.window;
	}
	fake.runs++;
	fake.irq_off_runs += !fake.irq_on;
	if (fake.pos == fake.n) {
		/* the script is over: the "guest" is kicked out for good */
		vcpu_request(v, VCPU_REQ_KICK);
		*e = (struct vm_exit){ .code = EXIT_NONE };
		return;
	}
	s = &fake.script[fake.pos++];
	if (s->regs) {
		hw->gpr[GPR_RAX] = s->rax;
		hw->gpr[GPR_RCX] = s->rcx;
		hw->gpr[GPR_RDX] = s->rdx;
	}
	if (s->intr)
		fake.intr_allowed = s->intr > 0;
	fake_this_cpu()->timer_ticks += s->ticks;
	fake_this_cpu()->timer_wakes += s->wakes;
	fake_now_ns += (uint64_t)s->ticks * 4000000 + s->ns;	/* 250 Hz */
	*e = s->exit;
}

static int fake_vcpu_init(struct vmm_vcpu *v) { (void)v; return 0; }
static void fake_vcpu_destroy(struct vmm_vcpu *v) { (void)v; }

/* As both back ends do: the general registers are v->gpr's, both ways. */
static void fake_get_state(struct vmm_vcpu *v, struct cpu_state *s)
{
	fake.get_state++;
	*s = fake.state;
	memcpy(s->gpr, v->gpr, sizeof(v->gpr));
}

static void fake_set_state(struct vmm_vcpu *v, const struct cpu_state *s)
{
	fake.set_state++;
	fake.state = *s;
	memcpy(v->gpr, s->gpr, sizeof(v->gpr));
}

static void fake_inject(struct vmm_vcpu *v, const struct event *e)
{
	(void)v;
	assert_true(fake.nr_injected < FAKE_MAX);
	fake.injected[fake.nr_injected++] = *e;
}

static bool fake_intr_allowed(struct vmm_vcpu *v) { (void)v; return fake.intr_allowed; }
static void fake_window(struct vmm_vcpu *v, bool on) { (void)v; fake.window = on; }

static void fake_skip(struct vmm_vcpu *v, uint8_t len)
{
	(void)v;
	assert_true(fake.nr_skipped < FAKE_MAX);
	fake.skipped[fake.nr_skipped++] = len;
}

static void fake_tsc(struct vmm_vcpu *v, uint64_t off, uint64_t mult)
{
	(void)v;
	fake.tsc_offset = off;
	fake.tsc_mult = mult;
	fake.tsc_sets++;
}

static const struct vmm_ops fake_ops = {
	.name = "FAKE", .vcpu_init = fake_vcpu_init, .vcpu_destroy = fake_vcpu_destroy,
	.run = fake_run, .get_state = fake_get_state, .set_state = fake_set_state,
	.inject = fake_inject, .intr_allowed = fake_intr_allowed,
	.want_intr_window = fake_window, .skip_insn = fake_skip, .set_tsc = fake_tsc,
};

const struct vmm_ops *vmm = &fake_ops;

void fake_script(const struct fake_step *s, unsigned int n)
{
	fake.script = s;
	fake.n = n;
	fake.pos = 0;
}

struct vm *fake_vm_slots[VM_MAX];

struct vm *vm_at(unsigned int slot)
{
	return slot < VM_MAX ? fake_vm_slots[slot] : NULL;
}

void fake_reset(void)
{
	memset(fake_vm_slots, 0, sizeof(fake_vm_slots));
	memset(&fake, 0, sizeof(fake));
	memset(cpus, 0, sizeof(cpus));
	for (unsigned int i = 0; i < MAX_CPUS; i++) {
		cpus[i].index = i;
		cpus[i].apic_id = 0x10 + i;
		cpus[i].online = true;
	}
	cpu_count = 1;
	fake_cpu = 0;
	fake.irq_on = true;
	fake_now_ns = 1000000000ull;
	fake_stops = 0;
	fake_stop_reason[0] = 0;
	fake_reboots = 0;
}

/* ---- host CPUs, clock, FPU, APIC (core_seam.c) ------------------------ */

struct percpu *fake_this_cpu(void) { return &cpus[fake_cpu]; }
void (*fake_irq_off_hook)(void);

void fake_irq(bool on)
{
	void (*hook)(void) = fake_irq_off_hook;

	if (!on && hook) {
		fake_irq_off_hook = NULL;
		hook();
	}
	fake.irq_on = on;
}
void fake_idle(void) { fake.idles++; }

uint64_t time_now_ns(void) { return fake_now_ns; }
uint64_t time_ns_at(uint64_t tsc) { (void)tsc; return fake_now_ns; }
uint64_t time_now_us(void) { return fake_now_ns / 1000; }
uint64_t tsc_hz(void) { return 1000000000ull; }

void fpu_area_init(void *area) { memset(area, 0, FPU_AREA_SIZE); }
void fpu_save(void *area) { (void)area; fake.fpu_saves++; }
void fpu_restore(const void *area) { (void)area; fake.fpu_restores++; }
uint64_t fpu_host_xcr0(void) { return 7; }
void fpu_set_xcr0(uint64_t xcr0) { fake.xcr0_set = xcr0; }

void apic_send_ipi(uint32_t apic, uint8_t vector)
{
	assert_int_equal(vector, VEC_KICK);
	fake.ipis++;
	fake.ipi_apic = apic;
}

bool apic_timer_wake_at_ns(uint64_t ns)
{
	assert_false(fake.irq_on);	/* its caller holds interrupts off */
	if (!fake.wakes++ || ns < fake.wake_ns)
		fake.wake_ns = ns;
	return ns <= fake_now_ns;
}

/* ferry's own bug: a cmocka assertion, so expect_assert_failure sees it */
void panic(const char *fmt, ...)
{
	static char buf[256];	/* cmocka keeps a pointer to it */
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	mock_assert(0, buf, __FILE__, __LINE__);
	abort();
}

/* ---- the neighbours in hv/vm.c ---------------------------------------- */

void vm_stop(struct vm *vm, const char *fmt, ...)
{
	va_list ap;

	if (vm->state == VM_RUNNING || vm->state == VM_PAUSED)
		vm->state = VM_STOPPED;
	va_start(ap, fmt);
	vsnprintf(fake_stop_reason, sizeof(fake_stop_reason), fmt, ap);
	va_end(ap);
	fake_stops++;
}

/* The host's wall clock (drivers/rtc.c): unknown, so guests get the fallback. */
uint64_t host_rtc_epoch_now(void)
{
	return 0;
}

uint64_t vm_clock_ns(struct vm *vm)
{
	return fake_now_ns + vm->clock_offset_ns;
}

/* Guest RAM (hv/vm.c's accessors): one buffer of vm->mem_size bytes. */
static uint8_t fake_ram[2u << 20];

void *vm_gpa_to_hva(struct vm *vm, uint64_t gpa)
{
	return gpa < vm->mem_size && gpa < sizeof(fake_ram) ? fake_ram + gpa : NULL;
}

int vm_read_gpa(struct vm *vm, uint64_t gpa, void *buf, size_t len)
{
	if (gpa > vm->mem_size || len > vm->mem_size - gpa || !vm_gpa_to_hva(vm, gpa))
		return -EFAULT;
	memcpy(buf, fake_ram + gpa, len);
	return 0;
}

int vm_write_gpa(struct vm *vm, uint64_t gpa, const void *buf, size_t len)
{
	if (gpa > vm->mem_size || len > vm->mem_size - gpa || !vm_gpa_to_hva(vm, gpa))
		return -EFAULT;
	memcpy(fake_ram + gpa, buf, len);
	return 0;
}

unsigned int fake_warnings;		/* log lines at LOG_WARN or worse */

void log_printf(enum log_level level, const char *fmt, ...)
{
	(void)fmt;
	fake_warnings += level <= LOG_WARN;
}

/* hv/vm.c's reboot without the loaders: devices and the vCPU as at creation. */
unsigned int fake_reboots;

void vm_reboot(struct vcpu *self)
{
	struct mb1_entry_state zero;
	struct cpu_state entry;

	memset(&zero, 0, sizeof(zero));
	vcpu_mb1_state(&zero, &entry);
	vm_devices_reset(self->vm);
	vcpu_reset(self, &entry);
	fake_reboots++;
}

/* ---- a guest ------------------------------------------------------------ */

struct vm *fake_vm_new(const char *name, enum vm_state state)
{
	struct mb1_entry_state zero;
	struct cpu_state entry;
	struct vm *vm = calloc(1, sizeof(*vm));

	assert_non_null(vm);
	memset(&zero, 0, sizeof(zero));
	vcpu_mb1_state(&zero, &entry);
	snprintf(vm->name, sizeof(vm->name), "%s", name);
	vm->id = 1;
	vm->mem_size = 2u << 20;
	vm->nr_frames = vm->mem_size >> 12;
	vm->console = calloc(1, sizeof(*vm->console));
	assert_non_null(vm->console);
	assert_int_equal(vm_devices_init(vm, 1, tsc_hz()), 0);
	assert_int_equal(vcpu_create(vm, 0, &entry, &vm->vcpus[0]), 0);
	vm->nr_vcpus = 1;
	vm->state = state;
	return vm;
}

void fake_vm_free(struct vm *vm)
{
	vcpu_free(vm->vcpus[0]);
	vm_devices_free(vm);
	free(vm->console);
	free(vm);
}

void fake_out(struct vm *vm, uint16_t port, uint32_t val)
{
	vm_io(vm, port, 1, false, &val);
}

static void mmio_w(struct vcpu *on, uint64_t gpa, uint32_t val)
{
	assert_true(vm_mmio(on, gpa, 4, true, &val));
}

struct vcpu *fake_add_ap(struct vm *vm)
{
	struct cpu_state init;
	struct vcpu *ap;

	vm_devices_free(vm);
	assert_int_equal(vm_devices_init(vm, 2, tsc_hz()), 0);
	vcpu_init_state(&init);
	assert_int_equal(vcpu_create(vm, 1, &init, &ap), 0);
	vm->vcpus[1] = ap;
	vm->nr_vcpus = 2;
	vm->dev->wait_sipi[1] = false;			/* as if started */
	fake_out(vm, 0x21, 0xff);			/* 8259 masked */
	mmio_w(ap, 0xFEE000F0, 0x1FF);			/* APIC 1 software-enabled */
	return ap;
}

void fake_drop_ap(struct vm *vm)
{
	struct vcpu *ap = vm->vcpus[1];

	ap->cpu = -1;
	vm->nr_vcpus = 1;
	vm->vcpus[1] = NULL;
	vcpu_free(ap);
}

void fake_pit_to_apic(struct vm *vm, uint8_t vec, unsigned int apic)
{
	struct vcpu *v = vm->vcpus[0];

	mmio_w(v, 0xFEC00000, 0x10 + 2 * 2);		/* pin 2, low then high */
	mmio_w(v, 0xFEC00010, vec);
	mmio_w(v, 0xFEC00000, 0x11 + 2 * 2);
	mmio_w(v, 0xFEC00010, apic << 24);
	fake_out(vm, 0x43, 0x34);			/* channel 0: rate */
	fake_out(vm, 0x40, 1193 & 0xff);
	fake_out(vm, 0x40, 1193 >> 8);
}

void fake_guest_timer(struct vm *vm)
{
	static const uint16_t seq[][2] = {
		{ 0x20, 0x11 }, { 0x21, 0x20 }, { 0x21, 0x04 }, { 0x21, 0x01 },
		{ 0x21, 0xfe },				/* only IRQ 0 */
		{ 0x43, 0x34 }, { 0x40, 11932 & 0xff }, { 0x40, 11932 >> 8 },	/* 100 Hz */
	};

	for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++)
		fake_out(vm, seq[i][0], seq[i][1]);
}
