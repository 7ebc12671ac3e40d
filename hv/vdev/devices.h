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
 *   MMIO             each vCPU's local APIC page (0xFEE00000 unless the
 *                    guest moves it), the I/O APIC (0xFEC00000, 24 pins)
 *
 *   PCI (vnic.h)     when cfg.nic_on or cfg.pvpanic_on: ports 0xCF8-0xCFF
 *                    and BARs in the hole; virtio-net at 00:01.0 when
 *                    nic_on, pvpanic (pvpanic.h) at 00:02.0 when
 *                    pvpanic_on; without either, no bus (0xCF8 reads all
 *                    ones, as on a board without PCI)
 *
 * Interrupts: the PIT's OUT0 pulses IRQ 0 (I/O APIC pin 2) and COM1
 * drives IRQ 4, on the 8259 and the I/O APIC alike (apicbus.c).  The core
 * asks vdev_pending_vector() for a vCPU before entering it and, when it
 * injects, takes the vector with vdev_ack() (the INTA cycle, or the local
 * APIC's IRR to ISR); NMI, INIT and SIPI come from vdev_take_event().
 *
 * Time: every call that may look at time takes now_ns, the guest's device
 * clock (vm_clock_ns()), which must never go backwards.  There are no host
 * timers: vdev_next_event_ns() says when a vCPU's next timer interrupt is
 * due, and the core wakes a halted vCPU then.
 *
 * Use from the core (a sketch):
 *	create:	 cfg = { RAM sizes, wall clock, vm_clock_ns(vm), vm, callbacks };
 *		 vdev_create(&cfg, &vm->dev);
 *	I/O exit: rc = vdev_io(vm->dev, port, size, in, &val, vm_clock_ns(vm));
 *		 rc == -ENOENT: reads give all ones, writes are dropped+counted
 *	entry:	 events first (vdev_take_event), then v =
 *		 vdev_pending_vector(dev, cpu, now); if v >= 0 and the vCPU
 *		 can take it: inject vdev_ack(dev, cpu, now), else request a
 *		 window; wake the vCPUs in vdev_take_kicks() after every call
 *	HLT:	 sleep until vdev_next_event_ns(dev, cpu, now) or a kick
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
#include "hv/vdev/ioapic.h"
#include "hv/vdev/lapic.h"
#include "hv/vdev/pic.h"
#include "hv/vdev/pvclock.h"
#include "hv/vdev/pit.h"
#include "hv/vdev/rtc.h"
#include "hv/vdev/snap.h"
#include "hv/vdev/uart.h"
#include "hv/vdev/vnic.h"

#define VDEV_COM1_IRQ	4
#define VDEV_PIT_IRQ	0
#define VDEV_RTC_IRQ	8
#define VDEV_KBD_DATA	0x60
#define VDEV_KBD_STATUS	0x64
#define VDEV_KBD_RESET	0xFE	/* command: pulse the CPU reset line */
#define VDEV_POST_PORT	0x80
#define VDEV_CTL_PORT	0x504
#define VDEV_CTL_POWEROFF 0x2000
/* Format version of vdev_snapshot() as a whole (for a migration stream's
 * header); bumped whenever any device's own version byte changes. */
#define VDEV_SNAP_VERSION 6	/* 6: RTC interrupts */
#define VDEV_MAX_CPUS	64	/* vCPUs (local APICs) of one guest */
#define VDEV_IOAPIC_PIT_PIN 2	/* IRQ 0's I/O APIC pin (the MP table says so) */

/* What vdev_create needs; copied, so it may live on the caller's stack. */
struct vdev_config {
	uint64_t ram_below_4g;	/* bytes of RAM from GPA 0 (CMOS sizes) */
	uint64_t ram_above_4g;	/* bytes of RAM from GPA 4 GiB */
	uint64_t epoch_s;	/* wall clock, seconds since 1970, at now_ns */
	uint64_t now_ns;	/* the guest clock at creation */
	unsigned int nr_cpus;	/* vCPUs, one local APIC each: 1..VDEV_MAX_CPUS */
	uint64_t tsc_hz;	/* the guest's TSC rate (TSC-deadline timer) */
	uint8_t phys_bits;	/* the guest's MAXPHYADDR; 0: a default */
	void *ctx;		/* passed to every callback */
	void (*tx)(void *ctx, uint8_t byte);	/* a byte of COM1 output */
	void (*reset)(void *ctx);		/* the guest asked for a reset */
	void (*poweroff)(void *ctx);		/* the guest powered off */
	/* A virtio-net NIC on PCI (vnic.h) when nic_on; frames it sends go
	 * to nic_tx(ctx, ...), guest RAM through nic_mem. */
	bool nic_on;
	uint8_t nic_mac[6];
	struct vq_mem nic_mem;
	int (*nic_tx)(void *ctx, const uint8_t *frame, size_t len, const struct vnet_offload *off);
	/* A pvpanic device on PCI when pvpanic_on; its events (PVPANIC_PANICKED
	 * once, PVPANIC_CRASH_LOADED each time) go to panic(ctx, event). */
	bool pvpanic_on;
	void (*panic)(void *ctx, uint8_t event);
};

struct vdev_stats {
	uint64_t ctl_ignored;	/* accesses to 0x504 that were not power off */
	uint64_t kbd_ignored;	/* writes to 0x60/0x64 other than reset */
	uint64_t resets;	/* reset requests */
	uint64_t poweroffs;	/* power-off requests */
	uint64_t ipis_lost;	/* IPIs no local APIC accepted */
	uint64_t msis;		/* MSIs from PCI functions delivered */
	uint64_t msis_bad;	/* MSIs not to 0xFEExxxxx, or of a mode or vector
				 * a device may not send: dropped */
	uint64_t msis_lost;	/* MSIs no local APIC accepted */
	uint64_t ipis_merged;	/* messages that found the same request pending:
				 * accepted, no kick (apicbus.c send_to) */
	uint64_t blocked_in_wait_sipi;	/* NMI/ExtINT to a vCPU waiting for a SIPI */
	uint64_t sipis_ignored;		/* SIPI to a vCPU not waiting for one */
	uint64_t nic_lost;	/* resets after which the NIC could not be made again */
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
	struct ioapic ioapic;
	unsigned int nr_cpus;		/* (c) */
	unsigned int lowest_next;	/* lowest-priority arbitration: who goes first */
	uint64_t kick;			/* vCPUs that received something (vdev_take_kicks) */
	struct vdev_stats stats;	/* host-side counters, not saved */
	uint64_t kvm_wall_clock;	/* MSR_KVM_WALL_CLOCK_NEW as last written */
	uint64_t kvm_system_time[VDEV_MAX_CPUS];	/* MSR_KVM_SYSTEM_TIME_NEW per vCPU */
	uint64_t kvm_pv_eoi[VDEV_MAX_CPUS];	/* MSR_KVM_PV_EOI_EN per vCPU */
	bool wait_sipi[VDEV_MAX_CPUS];	/* vCPU n is in wait-for-SIPI (after INIT; APs
					 * from power-on) */
	struct lapic lapic[VDEV_MAX_CPUS];	/* vCPU n's local APIC, n < nr_cpus */
	struct vnic *pci;	/* the PCI bus and its functions; NULL: none.  Made
				 * anew by a reset */
};

/* Allocate and power on.  Returns 0 or -ENOMEM; *out is NULL on error. */
int vdev_create(const struct vdev_config *cfg, struct vm_devices **out);
void vdev_destroy(struct vm_devices *d);		/* NULL is fine */
/* The guest's reset line: every device as at power-on but the CMOS clock
 * and its RAM, which run on; kvmclock is off until the guest asks again. */
void vdev_reset(struct vm_devices *d);

/*
 * A guest port access of size 1, 2 or 4.  For reads *val receives the
 * value (bytes of a wide access that fall outside the device read 0xff);
 * for writes *val holds it.  Returns 0 if a device handled it, -ENOENT if
 * the port belongs to no device (the core reads all ones and counts), or
 * -EINVAL for a bad size.
 */
int vdev_io(struct vm_devices *d, uint16_t port, uint8_t size, bool in, uint32_t *val,
	    uint64_t now_ns);

/* Deliver the PIT's edges due by now_ns (to the 8259 and I/O APIC). */
void vdev_tick(struct vm_devices *d, uint64_t now_ns);

/*
 * The APIC bus (apicbus.c); cpu is the vCPU's index.  MMIO: the vCPU's
 * xAPIC page and the I/O APIC page (IOAPIC_DEFAULT_BASE); -ENOENT for
 * any other address.  MSRs: as lapic_rdmsr/lapic_wrmsr (0, -ENOENT,
 * LAPIC_GP); an IPI the write sends is delivered at once.  The kvmclock
 * MSRs (pvclock.h) are kept here too: a write of an acceptable value
 * returns VDEV_MSR_PVCLOCK, and the core then writes the structure the
 * MSR points at (vdev_time_of_day_ns gives the wall clock).
 */
#define VDEV_MSR_PVCLOCK 2
int vdev_mmio(struct vm_devices *d, unsigned int cpu, uint64_t gpa, uint8_t size, bool write,
	      uint32_t *val, uint64_t now_ns);
int vdev_rdmsr(struct vm_devices *d, unsigned int cpu, uint32_t msr, uint64_t *val,
	       uint64_t now_ns);
int vdev_wrmsr(struct vm_devices *d, unsigned int cpu, uint32_t msr, uint64_t val,
	       uint64_t guest_tsc, uint64_t now_ns);
/* CR8 of vCPU cpu, which is its local APIC's TPR[7:4] (SDM Vol. 3A
 * 10.8.6.1): 0, or LAPIC_GP for a value above 15. */
int vdev_cr8(struct vm_devices *d, unsigned int cpu, bool write, uint64_t *val);

/* Deliver timer edges due by now_ns, then: the vector vCPU cpu would take
 * now (its local APIC's, else the 8259's if its LVT0 lets it through), or
 * -1. */
int vdev_pending_vector(struct vm_devices *d, unsigned int cpu, uint64_t now_ns);

/* The CPU takes that vector (the local APIC's IRR to ISR, or the 8259's
 * INTA cycle: see pic_ack, a request that vanished gives the spurious
 * IRQ 7/15 vector).  -1 if nothing is pending any more. */
int vdev_ack(struct vm_devices *d, unsigned int cpu, uint64_t now_ns);

/*
 * KVM's PV EOI (KVM_FEATURE_PV_EOI; Linux's Documentation/virt/kvm/x86/
 * msr.rst): the guest gives each vCPU's flag address in MSR_KVM_PV_EOI_EN
 * (bit 0: on; the address 4-byte aligned) and, where the flag's bit 0 is
 * set, ends an interrupt by clearing it instead of writing EOI, which
 * under emulation costs an exit.  Before each entry while an interrupt is
 * in service the core asks vdev_pv_eoi_gpa for the flag's address (0: not
 * now, see lapic_pv_eoi_ok; *in_service false: nothing is, stop asking)
 * and sets the flag.  After that run's exit it looks: the guest cleared
 * it (vdev_pv_eoi_done: the EOI, as if written), or the core clears it
 * again.  So the flag is set only while the guest runs, and nothing of it
 * needs saving but the MSR.
 */
#define MSR_KVM_PV_EOI_EN	0x4b564d04u
bool vdev_pv_eoi_msr_valid(uint64_t v, uint8_t phys_bits);	/* bit 1 clear, in range */
/* MSR_KVM_WALL_CLOCK_NEW: 4-byte aligned and in range (it may cross a page,
 * as KVM allows: Linux's is a plain static struct). */
bool vdev_wall_clock_msr_valid(uint64_t v, uint8_t phys_bits);
/* The guest's MAXPHYADDR, which the MSRs holding addresses are held to. */
uint8_t vdev_phys_bits(const struct vm_devices *d);
uint64_t vdev_pv_eoi_gpa(struct vm_devices *d, unsigned int cpu, bool *in_service);
void vdev_pv_eoi_done(struct vm_devices *d, unsigned int cpu);

/* NMI, INIT and SIPI for vCPU cpu, one at a time (lapic_take_event); an
 * ExtINT message comes back with the 8259's vector in *vector, and stays
 * pending (LAPIC_EV_NONE) unless extint_ok: the vCPU can take an
 * interrupt now.  INIT puts the vCPU in wait-for-SIPI and turns its
 * kvmclock and PV EOI MSRs off (as KVM's INIT does); a SIPI is taken only
 * there (SDM 10.4.7.3: otherwise ignored) and ends it. */
enum lapic_event vdev_take_event(struct vm_devices *d, unsigned int cpu, uint8_t *vector,
				 bool extint_ok);
bool vdev_event_pending(const struct vm_devices *d, unsigned int cpu);
bool vdev_wait_sipi(const struct vm_devices *d, unsigned int cpu);

/* The vCPUs (bit n: vCPU n) that were sent an interrupt or event since
 * the last call; the caller wakes them. */
uint64_t vdev_take_kicks(struct vm_devices *d);

/* When halted vCPU cpu must be woken: the guest time of the next timer
 * event (the PIT's next edge, its local APIC timer), now_ns if its APIC
 * has something pending already, or UINT64_MAX.  Check
 * vdev_pending_vector() too before sleeping (the 8259). */
uint64_t vdev_next_event_ns(struct vm_devices *d, unsigned int cpu, uint64_t now_ns);

/* The guest's time of day (its CMOS clock), ns since 1970. */
uint64_t vdev_time_of_day_ns(const struct vm_devices *d, uint64_t now_ns);

/* Internal to the device set: the power-on state of the APICs, and one
 * ISA interrupt line driven to a level (to the 8259 and the I/O APIC). */
void apicbus_power_on(struct vm_devices *d);
void apicbus_set_irq(struct vm_devices *d, unsigned int irq, int level);
/* A PCI function's message-signalled interrupt (Intel SDM 3, 11.11:
 * address 0xFEE, destination 19:12, logical 2; data vector 7:0, mode
 * 10:8), edge-triggered.  Fixed, lowest-priority and NMI only. */
void apicbus_msi(struct vm_devices *d, uint64_t addr, uint32_t data);

/* A byte typed at the guest's console: false when COM1 cannot take it now
 * (FIFO full); keep it and retry later. */
bool vdev_console_input(struct vm_devices *d, uint8_t byte);

/*
 * Save or restore every device in a fixed order: header (magic "VDEV",
 * version), PIC, PIT, COM1, RTC, the number of vCPUs (a restore refuses
 * another number), I/O APIC, each local APIC, the kvmclock MSRs, whether
 * there is a PCI bus, then the bus and its functions (vnic_snapshot).  A
 * restore is all or nothing: if any part
 * is refused (-EINVAL; -ENOMEM if no scratch copy could be made), d is
 * left exactly as it was.  Save with a NULL buffer to learn the size
 * (s->pos afterwards).
 */
int vdev_snapshot(struct vm_devices *d, struct snap *s, uint64_t now_ns);

#endif
