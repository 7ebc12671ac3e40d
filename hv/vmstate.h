/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A guest's whole state as plain data, for live migration (hv/migrate):
 * every vCPU (the portable struct cpu_state plus the standard-format XSAVE
 * area), the devices with the console history, and the guest's time.  The
 * same calls work on both back ends: they go through vmm ops only.
 *
 * All of these need the guest stopped: VM_PAUSED on the source (no vCPU in
 * guest mode), VM_INCOMING on the destination.
 */
#ifndef FERRY_HV_VMSTATE_H
#define FERRY_HV_VMSTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "hv/cpu_state.h"
#include "hv/vm.h"

#define VMSTATE_XSAVE_LEGACY	576u	/* legacy region + XSAVE header */

/* The XSAVE components the destination can load (x87|SSE at least). */
uint64_t vmstate_xcr0_mask(void);

/* Copy vCPU id's state out.  xsave receives up to FPU_AREA_SIZE bytes;
 * *xsave_len says how many matter for the vCPU's XCR0. */
void vmstate_save_vcpu(struct vm *vm, unsigned int id, struct cpu_state *cpu, uint8_t *xsave,
		       uint32_t *xsave_len, bool *halted);
/* Load it (the caller checked it: mig_cpu_state_check, mig_xsave_check).
 * The vCPU must not be placed on a CPU yet (-EBUSY): it becomes HALTED or
 * IDLE, and the scheduler keeps a HALTED one halted when it places it. */
int vmstate_load_vcpu(struct vm *vm, unsigned int id, const struct cpu_state *cpu,
		      const uint8_t *xsave, uint32_t xsave_len, bool halted);

/*
 * Devices and console history: [vdev_snapshot][u32 n][n bytes of console].
 * Save returns the bytes written (buf NULL: the size needed) or -errno;
 * load is all or nothing (console included), -EINVAL for bad input,
 * -ENOMEM without memory for the copy it undoes a failed load from.
 * Device times are kept relative to the guest's device clock, so load
 * again after vmstate_load_time() (console false: only once).
 */
long vmstate_save_devices(struct vm *vm, uint8_t *buf, size_t cap);
int vmstate_load_devices(struct vm *vm, const uint8_t *buf, size_t len, bool console);
/* Frames that came for the paused guest after vmstate_save_devices (a
 * list as the device state ends with): save returns the bytes written, 4
 * for none, or -errno.  Load, after vmstate_load_devices: the guest gets
 * them after the ones that came in the device state; vm NULL only checks.
 * 0 or -EINVAL (bad list), -ENOMEM. */
long vmstate_save_late_frames(struct vm *vm, uint8_t *buf, size_t cap);
int vmstate_load_late_frames(struct vm *vm, const uint8_t *buf, size_t len);
/* The source, about to send COMMIT: the guest's frames that still wait
 * for the wire here are dropped (gnet_tx_discard); how many. */
unsigned int vmstate_drop_tx_waiting(struct vm *vm);
/* Whether guest memory agrees with the devices' view of it (the NIC's
 * ring indices), as it must once the last pages and the device state
 * are in: 0, or -EINVAL with what does not in why. */
int vmstate_check_devices(struct vm *vm, char *why, size_t len);

/* The guest's TSC and device clock now (paused: they stand still for it). */
void vmstate_save_time(struct vm *vm, uint64_t *guest_tsc, uint64_t *clock_ns);
/* Make the guest's TSC read guest_tsc and its device clock clock_ns now. */
void vmstate_load_time(struct vm *vm, uint64_t guest_tsc, uint64_t clock_ns);

#endif
