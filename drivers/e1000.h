/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Intel 8254x/8257x gigabit NICs on legacy descriptors: the 82540EM
 * (e1000, which QEMU and Bochs emulate; drivers/e1000.c) and the 82574L
 * (e1000e, QEMU `-device e1000e`; drivers/e1000e.c).  One driver for both:
 * the 82574L keeps the 82540EM's register map for everything used here
 * and still takes legacy receive descriptors and legacy/extended transmit
 * descriptors after context descriptors; a `struct e1000_model` holds what
 * differs (drivers/e1000e.c lists the differences).
 *
 * Polled: the network code calls poll from its loop, one caller at a time
 * (the network lock).  The interrupt only wakes a CPU that waits for the
 * network; it does no work of its own.  Checksum offload (8254x SDM 3.2.9,
 * 3.3.5, 3.3.6), which QEMU's and Bochs's e1000 and QEMU's e1000e
 * implement for transmit: with tx_csum set, xmit has the NIC complete the
 * TCP checksum of IPv4 TCP frames (the stack leaves the pseudo-header sum
 * in the field); received frames come with NIC_RX_* flags for checksums
 * the NIC verified (the emulators verify none: they report "ignore
 * checksum").  TCP segmentation offload (SDM 3.5): xmit_tso sends up to
 * NIC_TSO_MAX payload bytes as one frame.
 */
#ifndef FERRY_DRIVERS_E1000_H
#define FERRY_DRIVERS_E1000_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "drivers/nic.h"
#include "drivers/pci.h"

/* Descriptors per ring (a multiple of 8); a unit test builds other sizes. */
#ifndef E1000_RX_DESC
#define E1000_RX_DESC 256
#endif
#ifndef E1000_TX_DESC
#define E1000_TX_DESC 256
#endif

/* What differs between the models this driver runs. */
struct e1000_model {
	const char *driver, *model;
	uint16_t device;		/* PCI device id (vendor 0x8086) */
	/* EERD (EEPROM read): where the done bit and the word address sit */
	uint8_t eerd_done_bit, eerd_addr_shift;
};

struct e1000 {
	struct nic nic;			/* first: the stack's view */
	const struct e1000_model *m;
	volatile uint8_t *regs;
	struct e1000_rx_desc *rx;	/* rings in frames (physically contiguous) */
	struct e1000_tx_desc *tx;
	uint8_t *rx_buf, *tx_buf;	/* NIC_BUF per descriptor */
	uint64_t rx_ring_pa, tx_ring_pa, rx_buf_pa, tx_buf_pa;
	unsigned int rx_next;		/* next descriptor to look at */
	bool rx_discarding;		/* in a frame spread over buffers: to its EOP */
	unsigned int tx_tail, tx_clean;
	unsigned int tx_unkicked;	/* queued since the last TDT write */
	unsigned int idle_polls;
};

/* The struct nic_driver callbacks, arg a const struct e1000_model *:
 * probe resets and starts the card, allocating it (NULL on failure). */
bool e1000_model_match(const struct pci_dev *d, const void *model);
int e1000_model_read_mac(const struct pci_dev *d, const void *model, uint8_t mac[6]);
int e1000_model_probe(const struct pci_dev *d, const void *model, struct nic **out);

#endif
