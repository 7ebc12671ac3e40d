/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A VM's virtual devices as the core sees them (hv/vdev does the work):
 * port I/O, the interrupt to inject next, and the guest's serial console.
 * Every call takes vm->dev_lock, so devices see one caller at a time.
 */
#ifndef FERRY_HV_VM_DEVICES_H
#define FERRY_HV_VM_DEVICES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hv/vdev/lapic.h"
#include "hv/vdev/virtio_net.h"

struct vm;
struct vcpu;

int vm_devices_init(struct vm *vm, unsigned int nr_vcpus, uint64_t tsc_hz);
void vm_devices_free(struct vm *vm);
void vm_devices_reset(struct vm *vm);	/* the guest's reset line (vdev_reset) */
/* A Linux panic seen on the console and followed by CONWATCH_QUIET_NS of
 * silence (hv/conwatch.h) stops the guest: called now and then. */
void vm_devices_watch(struct vm *vm, uint64_t now_ns);

/* A port access.  Ports no device claims read as all ones; writes to them
 * are dropped and counted. */
void vm_io(struct vm *vm, uint16_t port, uint8_t size, bool in, uint32_t *val);

/* A guest-physical access outside RAM (the APICs' pages).  Addresses no
 * device claims read as all ones, writes are dropped and counted: false. */
bool vm_mmio(struct vcpu *v, uint64_t gpa, uint8_t size, bool write, uint32_t *val);
/* The local APIC's MSRs (APIC_BASE, TSC_DEADLINE, x2APIC): 0, -ENOENT for
 * another MSR, LAPIC_GP when the guest must get #GP. */
int vm_apic_msr(struct vcpu *v, uint32_t msr, bool write, uint64_t *val, uint64_t guest_tsc);
/* MOV to/from CR8: vdev_cr8 (a write may let a pending interrupt in). */
int vm_cr8(struct vcpu *v, bool write, uint64_t *val);

/* Interrupts for one vCPU: the vector it would take now (-1: none), take
 * it (-1 if it vanished), NMI/INIT/SIPI events, and when a halted one
 * must wake for a timer (guest clock ns, UINT64_MAX: never). */
int vm_pending_vector(struct vcpu *v);
int vm_ack_vector(struct vcpu *v);
/* KVM PV EOI (hv/vdev/devices.h), around each run while v->pv_eoi_hint
 * (set when an interrupt goes in): arm sets the guest's flag if it may end
 * the vector in service through it (the flag's address, or 0; the hint
 * drops when nothing is in service); sync, after that run's exit, ends
 * it if the guest cleared the flag, else clears the flag. */
uint64_t vm_pv_eoi_arm(struct vcpu *v);
void vm_pv_eoi_sync(struct vcpu *v, uint64_t gpa);
bool vm_event_pending(struct vcpu *v);	/* cheap, may say true spuriously */
/* Would one of them end v's HLT (lapic_event_wake_mask)?  As cheap. */
bool vm_event_wakes(struct vcpu *v, bool nmi_ok, bool extint_ok);
/* An ExtINT message waits (put back while interrupts were off). */
bool vm_extint_waiting(struct vcpu *v);
enum lapic_event vm_take_event(struct vcpu *v, uint8_t *vector, bool extint_ok);
void vm_return_nmi(struct vcpu *v);	/* an NMI that could not go in yet */
bool vm_waits_for_sipi(struct vcpu *v);	/* after INIT, until a SIPI */
uint64_t vm_next_event_ns(struct vcpu *v);
/* The guest's TSC rate (fixed for its life: CPUID 0x15, TSC deadlines). */
uint64_t vm_guest_tsc_hz(struct vm *vm);
/* The devices or the guest clock changed behind vm_devices' back
 * (a restore, a new clock offset): ask them again. */
void vm_devices_changed(struct vm *vm);

/* The guest's NIC, copied under dev_lock: false when it has none. */
struct vm_nic_info {
	uint8_t mac[6];
	uint8_t status;			/* virtio device status */
	bool link_up;			/* as the guest sees it */
	struct vnet_stats net;
	uint64_t queue_errors[VQ_NR_ERR];
	uint16_t err_queue, err_avail, err_last_avail, err_used;	/* the last one */
	uint8_t err;
};
bool vm_nic_info(struct vm *vm, struct vm_nic_info *out);
/* Plug or pull the guest NIC's cable (vnet_set_link): 0, -ENODEV. */
int vm_nic_set_link(struct vm *vm, bool up);

/* A frame for the guest's NIC (hv/gnet.c), not under dev_lock: 0, or
 * -EAGAIN (dropped, counted by the NIC), -ENOBUFS (no receive buffer
 * posted for it yet: nothing taken), -EBUSY (the guest is not running:
 * paused, arriving, or being migrated, whose final copy of RAM and devices
 * must not change under it) or -ENODEV (no NIC). */
int vm_nic_rx(struct vm *vm, const uint8_t *frame, size_t len, bool valid);
/* The same for a frame in pieces or a super-frame (vnet_rx_frame): also
 * -EMSGSIZE, nothing taken. */
int vm_nic_rx_frame(struct vm *vm, const struct vnet_rx_frame *f);
/* Whether the guest's driver takes super-frames now (vnet_rx_gso). */
bool vm_nic_rx_gso(struct vm *vm);
/* Without dev_lock: the NIC looks at its transmit queue (after a restore,
 * or a pause, chains may wait there that no doorbell will announce). */
void vm_nic_tx_resume(struct vm *vm);
/* Under gnet's delivery (no other lock): a NIC that stopped on a full
 * queue takes up where it stopped, the queue having room again; what it
 * queues goes in gnet_tx_round, not from here. */
void vm_nic_tx_unstall(struct vm *vm);

/* Console: bytes typed by the operator, and the output history. */
bool vm_console_input(struct vm *vm, uint8_t byte);	/* false: RX FIFO full */
size_t vm_console_read(struct vm *vm, uint64_t *pos, char *buf, size_t max);
uint64_t vm_console_tail(struct vm *vm, size_t back);

#endif
