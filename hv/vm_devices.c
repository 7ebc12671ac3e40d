/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The core's side of a VM's devices (hv/vdev): serialisation under
 * vm->dev_lock, the guest's device clock, the console ring, and what a
 * guest's reset or power-off request means (the guest stops with that
 * reason; the operator decides what next).
 */
#include <errno.h>
#include "drivers/rtc.h"
#include "hv/mm/gpmap.h"
#include "hv/vdev/devices.h"
#include "hv/vm.h"
#include "hv/vm_devices.h"

#define EPOCH_FALLBACK	1796256000	/* 2026-12-03 00:00 UTC, if the host RTC is unreadable */

static void tx(void *ctx, uint8_t byte)
{
	struct vm *vm = ctx;

	ring_put(vm->console, (const char *)&byte, 1);	/* dev_lock held */
}

static void stop_later(struct vm *vm, const char *why)
{
	/* under dev_lock: vm_stop takes vm->lock, which never nests the other way */
	vm_stop(vm, "%s", why);
}

static void reset(void *ctx)
{
	stop_later(ctx, "the guest asked for a reset (keyboard controller)");
}

static void poweroff(void *ctx)
{
	stop_later(ctx, "powered off by the guest");
}

int vm_devices_init(struct vm *vm)
{
	struct vdev_config cfg = {
		.epoch_s = host_rtc_epoch_now() ? host_rtc_epoch_now() : EPOCH_FALLBACK,
		.now_ns = vm_clock_ns(vm),
		.ctx = vm, .tx = tx, .reset = reset, .poweroff = poweroff,
	};

	gpmap_ram_split(vm->mem_size, &cfg.ram_below_4g, &cfg.ram_above_4g);
	return vdev_create(&cfg, &vm->dev);
}

void vm_devices_free(struct vm *vm)
{
	vdev_destroy(vm->dev);
	vm->dev = NULL;
}

/* Under dev_lock, after anything that may change the devices' interrupt
 * lines: the next vm_pending_vector asks them again. */
static void changed(struct vm *vm)
{
	__atomic_store_n(&vm->irq_quiet_until_ns, 0, __ATOMIC_RELEASE);
}

void vm_devices_changed(struct vm *vm)
{
	spin_lock(&vm->dev_lock);
	changed(vm);
	spin_unlock(&vm->dev_lock);
}

void vm_io(struct vm *vm, uint16_t port, uint8_t size, bool in, uint32_t *val)
{
	int rc;

	spin_lock(&vm->dev_lock);
	rc = vdev_io(vm->dev, port, size, in, val, vm_clock_ns(vm));
	changed(vm);
	spin_unlock(&vm->dev_lock);
	if (rc == 0)
		return;
	if (in) {
		*val = 0xffffffffu;
		__atomic_add_fetch(&vm->io_unhandled_reads, 1, __ATOMIC_RELAXED);
	} else {
		__atomic_add_fetch(&vm->io_dropped, 1, __ATOMIC_RELAXED);
	}
}

/*
 * Asked before every guest entry, so the common answer ("nothing") comes
 * without the lock: only the PIT raises interrupts by time passing
 * (vdev_next_event_ns), everything else by a call that clears the quiet
 * time (changed()).
 */
int vm_pending_vector(struct vm *vm)
{
	uint64_t now = vm_clock_ns(vm);
	int vec;

	if (now < __atomic_load_n(&vm->irq_quiet_until_ns, __ATOMIC_ACQUIRE))
		return -1;
	spin_lock(&vm->dev_lock);
	now = vm_clock_ns(vm);
	vec = vdev_pending_vector(vm->dev, now);
	if (vec < 0)
		__atomic_store_n(&vm->irq_quiet_until_ns, vdev_next_event_ns(vm->dev, now),
				 __ATOMIC_RELEASE);
	spin_unlock(&vm->dev_lock);
	return vec;
}

int vm_ack_vector(struct vm *vm)
{
	int vec;

	spin_lock(&vm->dev_lock);
	vec = vdev_ack(vm->dev);
	changed(vm);
	spin_unlock(&vm->dev_lock);
	return vec;
}

bool vm_console_input(struct vm *vm, uint8_t byte)
{
	bool ok;

	spin_lock(&vm->dev_lock);
	ok = vdev_console_input(vm->dev, byte);
	changed(vm);
	spin_unlock(&vm->dev_lock);
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
