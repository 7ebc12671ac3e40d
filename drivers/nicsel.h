/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The `nic=` option: which network card ferry uses when it has several.
 *   nic=pci:BB:DD.F       the PCI function bus BB, device DD, function F
 *                         (hexadecimal, as lspci prints them)
 *   nic=52:54:00:12:34:56 the card with this MAC address (':' or '-')
 * Without the option, the first card a driver supports (in PCI bus order).
 * Pure logic, unit-tested (tests/unit/test_nicsel.c).
 */
#ifndef FERRY_DRIVERS_NICSEL_H
#define FERRY_DRIVERS_NICSEL_H

#include <stdbool.h>
#include <stdint.h>

enum nic_sel_kind { NIC_SEL_ANY, NIC_SEL_PCI, NIC_SEL_MAC };

struct nic_sel {
	enum nic_sel_kind kind;
	uint8_t bus, dev, fn;		/* NIC_SEL_PCI */
	uint8_t mac[6];			/* NIC_SEL_MAC */
};

/* Parse s (NULL or "" is NIC_SEL_ANY); -EINVAL if it is neither form. */
int nic_sel_parse(const char *s, struct nic_sel *sel);
/* Does the card at bus:dev.fn with this MAC (mac NULL: unknown) match? */
bool nic_sel_match(const struct nic_sel *sel, uint8_t bus, uint8_t dev, uint8_t fn,
		   const uint8_t *mac);
/* "pci:00:03.0" or the MAC, for messages; buf of 24 bytes. */
void nic_sel_format(const struct nic_sel *sel, char buf[24]);

#endif
