/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A guest's legacy PC devices as one object, `struct vm_devices`, held by
 * the core in vm->dev.  This is the only hv/vdev header the core needs.
 *
 *   port(s)          device
 *   0x20-21, 0xA0-A1 8259A PIC pair (pic.h); ELCR 0x4D0-4D1
 *   0x40-43, 0x61    8254 PIT (pit.h), port B: gate 2, speaker, OUT2
 *   0x3F8-3FF        COM1 16550A (uart.h), IRQ 4, the guest console
 *   0x70-71          CMOS RTC (rtc.h)
 *   0x60, 0x64       keyboard controller stub: reads 0 (nothing to read,
 *                    input buffer empty); writing 0xFE to 0x64 (pulse
 *                    reset line) calls reset(); other writes are ignored
 *   0x80             POST code / I/O delay: writes ignored, reads 0xff
 *   0x504            ferry's control port: a 16-bit write of 0x2000 calls
 *                    poweroff(); any other access is ignored and counted
 *                    (reads give all ones)
 * Every other port, including COM2-COM4 (0x2F8, 0x3E8, 0x2E8), is not a
 * device: vdev_io() returns -ENOENT and the core reads all ones / drops
 * the write, which is what Linux expects of absent serial ports.
 *
 * Interrupts: the PIT's OUT0 pulses IRQ 0 and COM1 drives IRQ 4 on the
 * PIC; the core asks vdev_pending_vector() before entering the guest and,
 * when it injects, takes the vector with vdev_ack() (the INTA cycle).
 *
 * Time: every call that may look at time takes now_ns, the guest's device
 * clock (vm_clock_ns()), which must never go backwards.  There are no host
 * timers: a halted vCPU is looked at again on every scheduler tick.
 * vdev_next_event_ns() says when the next timer interrupt is due; nothing
 * calls it yet, it is kept for a tickless HLT.
 *
 * Use from the core (a sketch):
 *	create:	 cfg = { RAM sizes, wall clock, vm_clock_ns(vm), vm, callbacks };
 *		 vdev_create(&cfg, &vm->dev);
 *	I/O exit: rc = vdev_io(vm->dev, port, size, in, &val, vm_clock_ns(vm));
 *		 rc == -ENOENT: reads give all ones, writes are dropped+counted
 *	entry:	 v = vdev_pending_vector(dev, now); if v >= 0 and the vCPU can
 *		 take it: inject vdev_ack(dev), else request a window
 *	HLT:	 (planned, tickless) sleep until vdev_next_event_ns(dev, now)
 *		 or console input; today the scheduler tick polls instead
 *	migrate: size with snap_save_init(&s, NULL, 0) + vdev_snapshot, then
 *		 save into a buffer; restore with snap_restore_init on the peer
 *
 * Locking: none inside.  The caller serializes all calls for one
 * vm_devices (vm->dev_lock); different VMs are independent (no globals).
 * The callbacks run inside vdev_io()/vdev_console_input() under that lock
 * and must not call back into vdev.
 */
#ifndef FERRY_HV_VDEV_DEVICES_H
#define FERRY_HV_VDEV_DEVICES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "hv/vdev/pic.h"
#include "hv/vdev/pit.h"
#include "hv/vdev/rtc.h"
#include "hv/vdev/snap.h"
#include "hv/vdev/uart.h"

#define VDEV_COM1_IRQ	4
#define VDEV_PIT_IRQ	0
#define VDEV_KBD_DATA	0x60
#define VDEV_KBD_STATUS	0x64
#define VDEV_KBD_RESET	0xFE	/* command: pulse the CPU reset line */
#define VDEV_POST_PORT	0x80
#define VDEV_CTL_PORT	0x504
#define VDEV_CTL_POWEROFF 0x2000
/* Format version of vdev_snapshot() as a whole (for a migration stream's
 * header); bumped whenever any device's own version byte changes. */
#define VDEV_SNAP_VERSION 1

/* What vdev_create needs; copied, so it may live on the caller's stack. */
struct vdev_config {
	uint64_t ram_below_4g;	/* bytes of RAM from GPA 0 (CMOS sizes) */
	uint64_t ram_above_4g;	/* bytes of RAM from GPA 4 GiB */
	uint64_t epoch_s;	/* wall clock, seconds since 1970, at now_ns */
	uint64_t now_ns;	/* the guest clock at creation */
	void *ctx;		/* passed to every callback */
	void (*tx)(void *ctx, uint8_t byte);	/* a byte of COM1 output */
	void (*reset)(void *ctx);		/* the guest asked for a reset */
	void (*poweroff)(void *ctx);		/* the guest powered off */
};

struct vdev_stats {
	uint64_t ctl_ignored;	/* accesses to 0x504 that were not power off */
	uint64_t kbd_ignored;	/* writes to 0x60/0x64 other than reset */
	uint64_t resets;	/* reset requests */
	uint64_t poweroffs;	/* power-off requests */
};

/* Fields (c): set at creation.  The devices' own fields: see their
 * headers.  Callers may read everything and should change nothing; never
 * copy the struct (COM1's callbacks point at it). */
struct vm_devices {
	struct vdev_config cfg;		/* (c) callbacks and sizes */
	struct pic pic;
	struct pit pit;
	struct uart com1;
	struct rtc rtc;
	struct vdev_stats stats;	/* host-side counters, not saved */
};

/* Allocate and power on.  Returns 0 or -ENOMEM; *out is NULL on error. */
int vdev_create(const struct vdev_config *cfg, struct vm_devices **out);
void vdev_destroy(struct vm_devices *d);		/* NULL is fine */

/*
 * A guest port access of size 1, 2 or 4.  For reads *val receives the
 * value (bytes of a wide access that fall outside the device read 0xff);
 * for writes *val holds it.  Returns 0 if a device handled it, -ENOENT if
 * the port belongs to no device (the core reads all ones and counts), or
 * -EINVAL for a bad size.
 */
int vdev_io(struct vm_devices *d, uint16_t port, uint8_t size, bool in, uint32_t *val,
	    uint64_t now_ns);

/* Deliver timer edges due by now_ns, then: the vector the guest would
 * take now, or -1. */
int vdev_pending_vector(struct vm_devices *d, uint64_t now_ns);

/* INTA: take the pending vector (see pic_ack: a request that vanished
 * gives the spurious IRQ 7/15 vector).  -1 while the PIC is being
 * initialised. */
int vdev_ack(struct vm_devices *d);

/* When a halted vCPU must be woken (unused yet: kept for a tickless HLT):
 * the guest time of the next timer edge, always > now_ns, or UINT64_MAX if
 * no timer is programmed.  Edges due by now_ns are delivered to the PIC first, so check
 * vdev_pending_vector() as well before sleeping. */
uint64_t vdev_next_event_ns(struct vm_devices *d, uint64_t now_ns);

/* A byte typed at the guest's console: false when COM1 cannot take it now
 * (FIFO full); keep it and retry later. */
bool vdev_console_input(struct vm_devices *d, uint8_t byte);

/*
 * Save or restore every device in a fixed order: header (magic "VDEV",
 * version), PIC, PIT, COM1, RTC.  A restore is all or nothing: if any part
 * is refused (-EINVAL; -ENOMEM if no scratch copy could be made), d is
 * left exactly as it was.  Save with a NULL buffer to learn the size
 * (s->pos afterwards).
 */
int vdev_snapshot(struct vm_devices *d, struct snap *s, uint64_t now_ns);

#endif
