/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Intel 82574L (e1000e; QEMU `-device e1000e`), run by the 82540EM driver
 * in e1000.c: this file is only what differs ("Intel 82574 Family GbE
 * Controller Datasheet", 82574 DS).
 *
 * The same, and used as on the 82540EM: the register offsets of CTRL,
 * STATUS, ICR/ITR/IMS/IMC, RCTL, TCTL, TIPG, the receive and transmit
 * ring registers (queue 0), RDTR/RADV, MPC, RXCSUM, MTA and RAL/RAH; the
 * legacy receive descriptor (RCTL.DTYP 00 and RFCTL.EXSTEN 0 after reset;
 * RXCSUM.PCSD 0, so the descriptor carries the checksum, not an RSS hash);
 * the legacy, context and extended data transmit descriptors, TSO
 * included; reset by CTRL.RST and link by CTRL.SLU / STATUS.LU.
 *
 * What differs:
 * - PCI device id 0x10d3 (the 82540EM is 0x100e).
 * - EERD: done in bit 1 and the word address in bits 15:2 (82574 DS
 *   10.2.2.3), where the 82540EM has bit 4 and bits 15:8.
 * - Interrupts: the 82574L adds MSI and MSI-X (five vectors routed by
 *   IVAR, with auto-clear EIAC and auto-mask IAM).  ferry stays on the
 *   legacy INTx line, which the 82574L raises like the 82540EM; ICR then
 *   also shows INT_ASSERTED (bit 31) and still clears on read, and
 *   CTRL_EXT.IAME stays 0 so a read does not also mask causes.
 * - More queues (two receive and two transmit), receive-side scaling,
 *   packet split and extended receive descriptors, timestamps: unused.
 * - TXDCTL, TARC, GCR and the PHY's power management keep their reset
 *   values: right for QEMU's model; a real 82574L may want the settings of
 *   the datasheet's initialization chapter (ferry has not met one yet).
 */
#include "drivers/e1000.h"

static const struct e1000_model m82574l = {
	.driver = "e1000e", .model = "82574L", .device = 0x10d3,
	.eerd_done_bit = 1, .eerd_addr_shift = 2,
};

const struct nic_driver e1000e_driver = {
	.name = "e1000e", .arg = &m82574l, .match = e1000_model_match,
	.read_mac = e1000_model_read_mac, .probe = e1000_model_probe,
};
