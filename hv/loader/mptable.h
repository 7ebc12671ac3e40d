/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The Intel MultiProcessor Specification 1.4 tables that tell a guest its
 * CPUs and interrupt wiring: a floating pointer structure and a
 * configuration table with one processor entry per vCPU, an ISA bus, one
 * I/O APIC (24 pins at 0xfec00000), the ISA IRQs on its pins (IRQ 0 on
 * pin 2, as on a PC, the others on their own number) and LINT0 = ExtINT,
 * LINT1 = NMI on every local APIC, and PCI bus 0 with INTA# of device
 * 00:01.0 (the guest's NIC, hv/vdev/vnic.h) on pin MPTABLE_PCI_PIN,
 * level-triggered, active low.  The PCI bus is MP bus 0 and ISA bus 1:
 * Linux looks a PCI interrupt up by comparing the PCI bus number with the
 * entry's source bus ID, and a PCI pin shared with an ISA IRQ would be
 * set up as the ISA IRQ (edge).
 *
 * Why an MP table and not ACPI: Debian's kernel has X86_MPPARSE, and these
 * tables say all Linux needs of a VM without firmware in a few hundred
 * bytes, where ACPI needs an RSDP, RSDT/XSDT, MADT, FADT and a DSDT in
 * AML.  Written at MPTABLE_GPA, in the BIOS area Linux scans (MP spec 4).
 */
#ifndef FERRY_HV_LOADER_MPTABLE_H
#define FERRY_HV_LOADER_MPTABLE_H

#include <stddef.h>
#include <stdint.h>

#define MPTABLE_GPA		0xf0000u
#define MPTABLE_MAX_CPUS	64u
#define MPTABLE_IOAPIC_PA	0xfec00000u
#define MPTABLE_LAPIC_PA	0xfee00000u
#define MPTABLE_IOAPIC_PINS	24u
#define MPTABLE_PCI_PIN		16u	/* INTA# of 00:01.0 */
#define MPTABLE_PCI_BUS		0u
#define MPTABLE_ISA_BUS		1u

/* Entry types and sizes (MP spec 4.3). */
#define MP_ENT_CPU		0
#define MP_ENT_BUS		1
#define MP_ENT_IOAPIC		2
#define MP_ENT_IOINT		3
#define MP_ENT_LINT		4
#define MP_INT_INT		0
#define MP_INT_NMI		1
#define MP_INT_EXTINT		3

/* Bytes the tables take for nr_cpus CPUs. */
size_t mptable_size(unsigned int nr_cpus);

/*
 * Write the tables for nr_cpus vCPUs (local APIC ids 0..nr_cpus-1, the
 * I/O APIC's id is nr_cpus) into buf, which will sit at guest-physical
 * address gpa.  Returns the bytes written, or -EINVAL for 0 or more than
 * MPTABLE_MAX_CPUS CPUs, -E2BIG if buf is too small.
 */
long mptable_build(void *buf, size_t len, uint32_t gpa, unsigned int nr_cpus);

#endif
