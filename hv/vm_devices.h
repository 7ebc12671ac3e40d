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

struct vm;

int vm_devices_init(struct vm *vm);
void vm_devices_free(struct vm *vm);

/* A port access.  Ports no device claims read as all ones; writes to them
 * are dropped and counted. */
void vm_io(struct vm *vm, uint16_t port, uint8_t size, bool in, uint32_t *val);

int vm_pending_vector(struct vm *vm);	/* -1 when nothing is pending */
/* The devices or the guest clock changed behind vm_devices' back
 * (a restore, a new clock offset): ask them again. */
void vm_devices_changed(struct vm *vm);
int vm_ack_vector(struct vm *vm);	/* take it (INTA); -1 if it vanished */

/* Console: bytes typed by the operator, and the output history. */
bool vm_console_input(struct vm *vm, uint8_t byte);	/* false: RX FIFO full */
size_t vm_console_read(struct vm *vm, uint64_t *pos, char *buf, size_t max);
uint64_t vm_console_tail(struct vm *vm, size_t back);

#endif
