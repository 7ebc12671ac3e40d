/* SPDX-License-Identifier: BSD-2-Clause */
/* PCI configuration space through mechanism 1 (ports 0xCF8/0xCFC). */
#ifndef FERRY_DRIVERS_PCI_H
#define FERRY_DRIVERS_PCI_H

#include <stdbool.h>
#include <stdint.h>

struct pci_dev {
	uint8_t bus, dev, fn;
	uint16_t vendor, device;
	uint8_t class, subclass, irq_line;
};

uint32_t pci_read32(const struct pci_dev *d, uint8_t off);
void pci_write32(const struct pci_dev *d, uint8_t off, uint32_t v);
uint16_t pci_read16(const struct pci_dev *d, uint8_t off);
uint8_t pci_read8(const struct pci_dev *d, uint8_t off);
void pci_write16(const struct pci_dev *d, uint8_t off, uint16_t v);

/* Call fn for every function present, in bus order, until it returns true. */
void pci_foreach(bool (*fn)(const struct pci_dev *d, void *arg), void *arg);
/* Find the first function with this vendor:device; false if none. */
bool pci_find(uint16_t vendor, uint16_t device, struct pci_dev *out);
/* Memory BAR n: its physical address and size (0 if it is an I/O BAR). */
uint64_t pci_bar_mem(const struct pci_dev *d, int n, uint64_t *size);
void pci_enable_mem(const struct pci_dev *d);	/* decode its memory BARs */
void pci_enable_bus_master(const struct pci_dev *d);	/* ... and let it DMA */
/* Let the function raise its INTx line (on) or keep it quiet. */
void pci_intx(const struct pci_dev *d, bool on);

#endif
