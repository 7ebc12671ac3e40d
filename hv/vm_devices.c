/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The core's side of a VM's devices (hv/vdev): serialisation under
 * vm->dev_lock, the guest's device clock, the console ring, and what a
 * guest's reset or power-off request means (the guest stops with that
 * reason; the operator decides what next).
 */
#include <errno.h>
#include "hv/mm/gpmap.h"
#include "hv/vdev/devices.h"
#include "hv/vm.h"
#include "hv/vm_devices.h"

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
		.epoch_s = 1796256000,	/* no host RTC driver yet: 2026-12-03 00:00 UTC */
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

void vm_io(struct vm *vm, uint16_t port, uint8_t size, bool in, uint32_t *val)
{
	int rc;

	spin_lock(&vm->dev_lock);
	rc = vdev_io(vm->dev, port, size, in, val, vm_clock_ns(vm));
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

int vm_pending_vector(struct vm *vm)
{
	int vec;

	spin_lock(&vm->dev_lock);
	vec = vdev_pending_vector(vm->dev, vm_clock_ns(vm));
	spin_unlock(&vm->dev_lock);
	return vec;
}

int vm_ack_vector(struct vm *vm)
{
	int vec;

	spin_lock(&vm->dev_lock);
	vec = vdev_ack(vm->dev);
	spin_unlock(&vm->dev_lock);
	return vec;
}

bool vm_console_input(struct vm *vm, uint8_t byte)
{
	bool ok;

	spin_lock(&vm->dev_lock);
	ok = vdev_console_input(vm->dev, byte);
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
