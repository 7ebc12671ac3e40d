/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The core's side of a VM's devices (hv/vdev): serialisation under
 * vm->dev_lock, the guest's device clock, the console ring, and what a
 * guest's reset or power-off request means (the guest stops with that
 * reason; the operator decides what next).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "hv/lib/guest_layout.h"
#include "hv/lib/log.h"
#include "drivers/rtc.h"
#include "hv/cpuid.h"
#include "hv/gnet.h"
#include "hv/net/gso.h"
#include "hv/lib/time.h"
#include "hv/mm/dirty.h"
#include "hv/mm/gpmap.h"
#include "hv/vdev/devices.h"
#include "hv/vcpu.h"
#include "hv/vm.h"
#include "hv/vm_devices.h"

#define EPOCH_FALLBACK	1796256000	/* 2026-12-03 00:00 UTC, if the host RTC is unreadable */

static void stop_later(struct vm *vm, const char *why)
{
	/* under dev_lock: vm_stop takes vm->lock, which never nests the other way */
	vm_stop(vm, "%s", why);
}

/* Whether the guest runs: the devices write its memory only then (not
 * while a migration copies memory and devices last, nor once stopped). */
static bool running(struct vm *vm)
{
	return __atomic_load_n(&vm->state, __ATOMIC_ACQUIRE) == VM_RUNNING;
}

/* dev_lock held.  A Linux panic's last line, then silence, stops the
 * guest (vm_devices_watch), when no pvpanic driver reported it first
 * (hv/conwatch.h). */
static void tx(void *ctx, uint8_t byte)
{
	struct vm *vm = ctx;

	ring_put(vm->console, (const char *)&byte, 1);
	if (conwatch_byte(&vm->conwatch, byte, time_now_ns(), NULL, 0))
		__atomic_store_n(&vm->conwatch_hint, true, __ATOMIC_RELEASE);
}

void vm_devices_watch(struct vm *vm, uint64_t now_ns)
{
	char why[160], reason[CONWATCH_WHY];
	bool due;

	if (!__atomic_load_n(&vm->conwatch_hint, __ATOMIC_ACQUIRE))
		return;
	spin_lock(&vm->dev_lock);
	due = conwatch_due(&vm->conwatch, now_ns, reason, sizeof(reason)) && running(vm);
	if (due || !vm->conwatch.ended)
		__atomic_store_n(&vm->conwatch_hint, false, __ATOMIC_RELEASE);
	if (due) {
		vm->conwatch.ended = false;
		pr_warn("vm %s: the guest's kernel panicked (seen on its console): %s",
			vm->name, reason);
		snprintf(why, sizeof(why), "panic (seen on its console): %s", reason);
		stop_later(vm, why);
	}
	spin_unlock(&vm->dev_lock);
}

/* The reset line: the BSP reboots the guest (vcpu_run), not under
 * dev_lock; an AP that pulled it wakes the BSP when it is back out of the
 * device.  all_halted_for_good waits for that reboot. */
static void reset(void *ctx)
{
	struct vm *vm = ctx;

	__atomic_store_n(&vm->reset_pending, true, __ATOMIC_SEQ_CST);
}

static void poweroff(void *ctx)
{
	stop_later(ctx, "powered off by the guest");
}

/* pvpanic (hv/vdev/pvpanic.h): a panic stops the guest, once; a crash
 * kernel about to run is only counted and logged (the 1st, 2nd, 4th...
 * time: a guest writing it in a loop cannot flood the log), and the guest
 * goes on. */
static void panic_event(void *ctx, uint8_t event)
{
	struct vm *vm = ctx;
	uint64_t n;

	if (event == PVPANIC_CRASH_LOADED) {
		n = __atomic_add_fetch(&vm->crash_loads, 1, __ATOMIC_RELAXED);
		if (!(n & (n - 1)))
			pr_info("vm %s: the guest loaded its crash kernel (pvpanic, %lu times)",
				vm->name, n);
		return;
	}
	pr_warn("vm %s: the guest's kernel panicked (pvpanic)", vm->name);
	stop_later(vm, "panic (reported through pvpanic)");
}

static int nic_read(void *ctx, uint64_t gpa, void *buf, size_t len)
{
	return vm_read_gpa(ctx, gpa, buf, len);
}

static int nic_write(void *ctx, uint64_t gpa, const void *buf, size_t len)
{
	return vm_write_gpa(ctx, gpa, buf, len);
}

/* Frames the guest's NIC sends: queued for the switch (hv/gnet.h), which
 * takes them after the exit, once dev_lock is dropped (nic_flush). */
static int nic_tx(void *ctx, const uint8_t *f, size_t len, const struct vnet_offload *off)
{
	struct gso_req r = { .csum = off->csum, .csum_start = off->csum_start,
			     .csum_offset = off->csum_offset, .mss = off->gso_size,
			     .partial_ok = true };	/* the switch completes them */

	return gnet_guest_tx(ctx, f, len, &r);
}

int vm_devices_init(struct vm *vm, unsigned int nr_vcpus, uint64_t tsc_hz)
{
	struct vdev_config cfg = {
		.epoch_s = host_rtc_epoch_now() ? host_rtc_epoch_now() : EPOCH_FALLBACK,
		.now_ns = vm_clock_ns(vm),
		.ctx = vm, .tx = tx, .reset = reset, .poweroff = poweroff,
		.nr_cpus = nr_vcpus, .tsc_hz = tsc_hz, .phys_bits = CPUID_GUEST_PHYS_BITS,
		.nic_on = vm->nic, .nic_mem = { vm, nic_read, nic_write }, .nic_tx = nic_tx,
		.pvpanic_on = vm->pvpanic, .panic = panic_event,
	};
	int rc;

	memcpy(cfg.nic_mac, vm->mac, sizeof(cfg.nic_mac));

	guest_ram_split(vm->mem_size, &cfg.ram_below_4g, &cfg.ram_above_4g);
	rc = vdev_create(&cfg, &vm->dev);
	if (rc || !vm->nic)
		return rc;
	rc = gnet_attach(vm);		/* its port on the switch */
	if (rc) {
		vdev_destroy(vm->dev);
		vm->dev = NULL;
	}
	return rc;
}

void vm_devices_free(struct vm *vm)
{
	gnet_detach(vm);
	vdev_destroy(vm->dev);
	vm->dev = NULL;
}

/* Under dev_lock, after anything that may change the devices' interrupt
 * lines: the next vm_pending_vector of every vCPU asks them again. */
static void changed(struct vm *vm)
{
	for (unsigned int i = 0; i < vm->nr_vcpus; i++)
		__atomic_store_n(&vm->vcpus[i]->irq_quiet_until_ns, 0, __ATOMIC_RELEASE);
}

/* After dropping dev_lock: make the vCPUs that were sent something look. */
static void wake(struct vm *vm, uint64_t kicks)
{
	for (unsigned int i = 0; kicks && i < vm->nr_vcpus; i++, kicks >>= 1)
		if (kicks & 1)
			vcpu_notify(vm->vcpus[i]);
}

static void unlock_and_wake(struct vm *vm)
{
	uint64_t kicks;

	changed(vm);
	kicks = vdev_take_kicks(vm->dev);
	spin_unlock(&vm->dev_lock);
	wake(vm, kicks);
}

/* Unlock after v asked the devices about time: the timers they caught up
 * with (the PIT's edges) may have sent interrupts to other vCPUs, which
 * must hear of it now, not at their next exit or host tick.  v itself is
 * looking already (the scheduler may be asking for it), and nothing was
 * cleared, so no quiet time changes. */
static void unlock_and_kick(struct vm *vm, const struct vcpu *v)
{
	uint64_t kicks = vm->dev->kick ? vdev_take_kicks(vm->dev) : 0;

	spin_unlock(&vm->dev_lock);
	wake(vm, kicks & ~(1ull << v->hw.id));
}

/* After an exit: the frames it queued go through the switch.  A NIC that
 * stopped on a full queue then takes up where it stopped, when the round
 * emptied the queue; frames that wait for room on the wire stay, and the
 * shell CPU's round (gnet_tx_round) sends them and wakes the NIC
 * (vm_nic_tx_unstall).  A whole ring of 64 KiB
 * super-frames takes about 50 rounds (GNET_QLEN slots, 45 segments each);
 * the bound stops a guest whose other vCPU refills the ring without end
 * from holding this CPU in one exit.  What is left waits, stalled, for
 * the guest's next doorbell (ferry never tells a driver not to ring) or
 * any exit that touches a device.  A driver that posted receive buffers
 * gets the frames that waited for them (gnet_rx_posted). */
#define NIC_RESUME_ROUNDS	128

static void nic_flush(struct vm *vm)
{
	bool empty;

	if (!vm->nic)
		return;
	empty = gnet_flush(vm);
	for (int i = 0; i < NIC_RESUME_ROUNDS; i++) {
		bool stalled, kicked;

		spin_lock(&vm->dev_lock);
		stalled = empty && vm->dev && vm->dev->pci && vnic_tx_stalled(vm->dev->pci) &&
			  running(vm);
		kicked = vm->dev && vm->dev->pci && vnic_rx_take_kick(vm->dev->pci);
		if (stalled)
			vnic_tx_resume(vm->dev->pci);
		unlock_and_wake(vm);
		if (kicked)
			gnet_rx_posted(vm);
		if (!stalled)
			return;
		empty = gnet_flush(vm);
	}
}

void vm_nic_tx_unstall(struct vm *vm)
{
	if (!vm->nic)
		return;
	spin_lock(&vm->dev_lock);
	if (vm->dev && vm->dev->pci && vnic_tx_stalled(vm->dev->pci) && running(vm))
		vnic_tx_resume(vm->dev->pci);
	unlock_and_wake(vm);
}

void vm_nic_tx_resume(struct vm *vm)
{
	if (!vm->nic)
		return;
	spin_lock(&vm->dev_lock);
	if (vm->dev && vm->dev->pci && running(vm))	/* as for a frame in */
		vnic_tx_resume(vm->dev->pci);
	unlock_and_wake(vm);
	nic_flush(vm);
}

void vm_devices_reset(struct vm *vm)
{
	spin_lock(&vm->dev_lock);
	vdev_reset(vm->dev);
	memset(&vm->conwatch, 0, sizeof(vm->conwatch));	/* the old system's */
	changed(vm);
	spin_unlock(&vm->dev_lock);
}

void vm_devices_changed(struct vm *vm)
{
	spin_lock(&vm->dev_lock);
	unlock_and_wake(vm);
}

void vm_io(struct vm *vm, uint16_t port, uint8_t size, bool in, uint32_t *val)
{
	int rc;

	spin_lock(&vm->dev_lock);
	rc = vdev_io(vm->dev, port, size, in, val, vm_clock_ns(vm));
	unlock_and_wake(vm);
	nic_flush(vm);
	if (rc == 0)
		return;
	if (in) {
		*val = 0xffffffffu;
		__atomic_add_fetch(&vm->io_unhandled_reads, 1, __ATOMIC_RELAXED);
	} else {
		__atomic_add_fetch(&vm->io_dropped, 1, __ATOMIC_RELAXED);
	}
}

bool vm_mmio(struct vcpu *v, uint64_t gpa, uint8_t size, bool write, uint32_t *val)
{
	struct vm *vm = v->vm;
	int rc;

	spin_lock(&vm->dev_lock);
	rc = vdev_mmio(vm->dev, v->hw.id, gpa, size, write, val, vm_clock_ns(vm));
	unlock_and_wake(vm);
	nic_flush(vm);
	if (rc == 0)
		return true;
	if (write) {
		__atomic_add_fetch(&vm->mmio_dropped, 1, __ATOMIC_RELAXED);
	} else {
		*val = 0xffffffffu;
		__atomic_add_fetch(&vm->mmio_unhandled_reads, 1, __ATOMIC_RELAXED);
	}
	return false;
}

int vm_apic_msr(struct vcpu *v, uint32_t msr, bool write, uint64_t *val, uint64_t guest_tsc)
{
	struct vm *vm = v->vm;
	int rc;

	spin_lock(&vm->dev_lock);
	if (write)
		rc = vdev_wrmsr(vm->dev, v->hw.id, msr, *val, guest_tsc, vm_clock_ns(vm));
	else
		rc = vdev_rdmsr(vm->dev, v->hw.id, msr, val, vm_clock_ns(vm));
	if (write && rc == 0) {
		unlock_and_wake(vm);
		return 0;
	}
	spin_unlock(&vm->dev_lock);
	return rc;
}

int vm_cr8(struct vcpu *v, bool write, uint64_t *val)
{
	struct vm *vm = v->vm;
	int rc;

	spin_lock(&vm->dev_lock);
	rc = vdev_cr8(vm->dev, v->hw.id, write, val);
	if (write && rc == 0) {
		unlock_and_wake(vm);
		return 0;
	}
	spin_unlock(&vm->dev_lock);
	return rc;
}

/*
 * Asked before every guest entry, so the common answer ("nothing") comes
 * without the lock: only timers (the PIT, the local APIC's) raise
 * interrupts by time passing (vdev_next_event_ns), everything else by a
 * call that clears the quiet time (changed()).
 */
int vm_pending_vector(struct vcpu *v)
{
	struct vm *vm = v->vm;
	uint64_t now = vm_clock_ns(vm);
	int vec;

	if (now < __atomic_load_n(&v->irq_quiet_until_ns, __ATOMIC_ACQUIRE))
		return -1;
	spin_lock(&vm->dev_lock);
	now = vm_clock_ns(vm);
	vec = vdev_pending_vector(vm->dev, v->hw.id, now);
	if (vec < 0 && !vdev_event_pending(vm->dev, v->hw.id))
		__atomic_store_n(&v->irq_quiet_until_ns,
				 vdev_next_event_ns(vm->dev, v->hw.id, now), __ATOMIC_RELEASE);
	unlock_and_kick(vm, v);
	return vec;
}

int vm_ack_vector(struct vcpu *v)
{
	struct vm *vm = v->vm;
	uint64_t now, next;
	int vec;

	spin_lock(&vm->dev_lock);
	now = vm_clock_ns(vm);
	vec = vdev_ack(vm->dev, v->hw.id, now);
	changed(vm);
	/* the run this interrupt goes in with may make no exit of its own
	 * (PV EOI): when its timer comes next, for vcpu_arm_timer.  Not when
	 * something is pending already ("now"): the entry asks for its window,
	 * and a wake at once would only cost an exit */
	next = vdev_next_event_ns(vm->dev, v->hw.id, now);
	__atomic_store_n(&v->timer_hint_ns, next > now ? next : 0, __ATOMIC_RELEASE);
	unlock_and_kick(vm, v);	/* that look may have raised a sibling's line */
	return vec;
}

uint64_t vm_pv_eoi_arm(struct vcpu *v)
{
	static const uint8_t on = 1;
	struct vm *vm = v->vm;
	uint64_t gpa;

	spin_lock(&vm->dev_lock);
	gpa = vdev_pv_eoi_gpa(vm->dev, v->hw.id, &v->pv_eoi_hint);
	spin_unlock(&vm->dev_lock);
	/* a flag outside RAM: the guest has no flag there, and writes EOI */
	return gpa && !vm_write_gpa(vm, gpa, &on, 1) ? gpa : 0;
}

void vm_pv_eoi_sync(struct vcpu *v, uint64_t gpa)
{
	struct vm *vm = v->vm;
	uint8_t flag = 1;

	vm_read_gpa(vm, gpa, &flag, 1);
	if (flag & 1) {		/* not ended yet: armed again at the next entry */
		flag &= (uint8_t)~1;
		vm_write_gpa(vm, gpa, &flag, 1);
		return;
	}
	spin_lock(&vm->dev_lock);
	vdev_pv_eoi_done(vm->dev, v->hw.id);
	changed(vm);
	spin_unlock(&vm->dev_lock);
	v->stats.pv_eois++;
}

/* v's local APIC's event bits (LAPIC_EVB_*), read without the lock. */
static uint8_t events_of(struct vcpu *v)
{
	return __atomic_load_n(&v->vm->dev->lapic[v->hw.id].events, __ATOMIC_ACQUIRE);
}

/* Nothing was sent to v since it was last found quiet. */
static bool quiet(struct vcpu *v)
{
	return __atomic_load_n(&v->irq_quiet_until_ns, __ATOMIC_ACQUIRE) > vm_clock_ns(v->vm);
}

bool vm_event_pending(struct vcpu *v)
{
	return !quiet(v) && events_of(v);
}

bool vm_event_wakes(struct vcpu *v, bool nmi_ok, bool extint_ok)
{
	return !quiet(v) && (events_of(v) & lapic_event_wake_mask(nmi_ok, extint_ok));
}

bool vm_extint_waiting(struct vcpu *v)
{
	return events_of(v) & LAPIC_EVB_EXTINT;
}

bool vm_waits_for_sipi(struct vcpu *v)
{
	return __atomic_load_n(&v->vm->dev->wait_sipi[v->hw.id], __ATOMIC_ACQUIRE);
}

enum lapic_event vm_take_event(struct vcpu *v, uint8_t *vector, bool extint_ok)
{
	struct vm *vm = v->vm;
	enum lapic_event ev;

	spin_lock(&vm->dev_lock);
	ev = vdev_take_event(vm->dev, v->hw.id, vector, extint_ok);
	spin_unlock(&vm->dev_lock);
	return ev;
}

void vm_return_nmi(struct vcpu *v)
{
	struct vm *vm = v->vm;

	spin_lock(&vm->dev_lock);
	lapic_deliver(&vm->dev->lapic[v->hw.id], LAPIC_DM_NMI, 0, false);
	spin_unlock(&vm->dev_lock);
}

uint64_t vm_next_event_ns(struct vcpu *v)
{
	struct vm *vm = v->vm;
	uint64_t t;

	spin_lock(&vm->dev_lock);
	t = vdev_next_event_ns(vm->dev, v->hw.id, vm_clock_ns(vm));
	unlock_and_kick(vm, v);
	return t;
}

uint64_t vm_guest_tsc_hz(struct vm *vm)
{
	return vm->dev->lapic[0].cfg.tsc_hz;	/* set at creation or by a restore */
}

bool vm_nic_info(struct vm *vm, struct vm_nic_info *out)
{
	const struct vnic *n;

	spin_lock(&vm->dev_lock);
	n = vm->dev && vm->dev->pci && vm->dev->pci->cfg.net ? vm->dev->pci : NULL;
	if (n) {
		memcpy(out->mac, n->cfg.mac, sizeof(out->mac));
		out->status = n->net.vp.status;
		out->link_up = vnet_link_up(&n->net);
		out->net = n->net.stats;
		memcpy(out->queue_errors, n->net.vp.stats.queue_errors, sizeof(out->queue_errors));
		out->err = n->net.vp.stats.last_error.err;
		out->err_queue = n->net.vp.stats.last_error.queue;
		out->err_avail = n->net.vp.stats.last_error.avail;
		out->err_last_avail = n->net.vp.stats.last_error.last_avail;
		out->err_used = n->net.vp.stats.last_error.used_idx;
	}
	spin_unlock(&vm->dev_lock);
	return n != NULL;
}

int vm_nic_set_link(struct vm *vm, bool up)
{
	int rc = -ENODEV;

	spin_lock(&vm->dev_lock);
	if (vm->dev && vm->dev->pci)
		rc = vnic_set_link(vm->dev->pci, up);
	unlock_and_wake(vm);		/* the configuration interrupt */
	return rc;
}

int vm_nic_rx_frame(struct vm *vm, const struct vnet_rx_frame *f)
{
	int rc = -ENODEV;

	spin_lock(&vm->dev_lock);
	if (!running(vm))
		rc = -EBUSY;	/* paused: a migration may be saving RAM and devices */
	else if (vm->dev && vm->dev->pci)
		rc = vnic_rx_frame(vm->dev->pci, f);	/* -ENODEV without the NIC */
	unlock_and_wake(vm);
	if (!rc)
		vm_arrival_note(vm, VM_ARR_RX);
	return rc;
}

int vm_nic_rx(struct vm *vm, const uint8_t *frame, size_t len, bool valid)
{
	struct vnet_piece p = { frame, len };

	return vm_nic_rx_frame(vm, &(struct vnet_rx_frame){ .piece = &p, .nr = 1, .valid = valid });
}

bool vm_nic_rx_gso(struct vm *vm)
{
	bool gso;

	spin_lock(&vm->dev_lock);
	gso = vm->dev && vm->dev->pci && vnic_rx_gso(vm->dev->pci);
	spin_unlock(&vm->dev_lock);
	return gso;
}

bool vm_console_input(struct vm *vm, uint8_t byte)
{
	bool ok;

	spin_lock(&vm->dev_lock);
	ok = vdev_console_input(vm->dev, byte);
	unlock_and_wake(vm);
	return ok;
}

size_t vm_console_read(struct vm *vm, uint64_t *pos, char *buf, size_t max)
{
	size_t n;

	spin_lock(&vm->dev_lock);
	n = ring_read(vm->console, pos, buf, max);
	spin_unlock(&vm->dev_lock);
	return n;
}

uint64_t vm_console_tail(struct vm *vm, size_t back)
{
	uint64_t t;

	spin_lock(&vm->dev_lock);
	t = ring_tail(vm->console, back);
	spin_unlock(&vm->dev_lock);
	return t;
}
