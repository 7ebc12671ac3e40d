/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The machine around a NIC driver in host unit tests: logging and delays
 * that do nothing, PCI enables that do nothing, and frame_alloc_contig
 * from host memory at "physical" addresses that phys_to_virt maps back
 * (recorded in allocation order).  Each test provides its own registers
 * (ioremap, pci_bar_mem, pci_read32).
 */
#ifndef FERRY_TESTS_UNIT_DRV_HOST_H
#define FERRY_TESTS_UNIT_DRV_HOST_H

#include <stddef.h>
#include <stdint.h>

/* A zeroed frame of len bytes: Ethernet, IPv4 (IHL 5), protocol TCP. */
void drv_host_tcp4(uint8_t *f, size_t len);
/* The i-th block the driver allocated, in order. */
void *drv_host_block(int i);
int drv_host_blocks(void);
/* Free every block (and forget them). */
void drv_host_free(void);

#endif
