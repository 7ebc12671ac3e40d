/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What ferry needs from the ACPI tables (ACPI 6.x spec ch. 5): the CPUs and
 * I/O APIC from the MADT, and the power-off and reset registers from the
 * FADT and the DSDT's \_S5 object.
 */
#ifndef FERRY_DRIVERS_ACPI_H
#define FERRY_DRIVERS_ACPI_H

#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>

#define ACPI_MAX_CPUS 256
#define ACPI_MAX_OVERRIDES 16

struct acpi_override {
	uint8_t irq;
	uint32_t gsi;
	uint16_t flags;
};

struct acpi_info {
	unsigned int n_cpus;			/* enabled local APICs */
	uint32_t cpu_apic_id[ACPI_MAX_CPUS];
	unsigned int cpus_ignored;		/* beyond ACPI_MAX_CPUS */
	uint64_t lapic_pa;
	uint64_t ioapic_pa;			/* 0 when there is none */
	uint32_t ioapic_gsi_base;
	unsigned int n_overrides;
	struct acpi_override overrides[ACPI_MAX_OVERRIDES];
	uint32_t pm1a_cnt, pm1b_cnt;		/* I/O ports, 0 when absent */
	bool s5_valid;
	uint8_t s5_typa, s5_typb;
	bool reset_valid;			/* FADT reset register (I/O space) */
	uint16_t reset_port;
	uint8_t reset_value;
	uint8_t century_reg;			/* FADT: CMOS index of the century, 0: none */
	char oem[7];
};

/*
 * Add a MADT's CPUs (local APIC and local x2APIC entries, enabled ones;
 * each APIC id once), first I/O APIC and overrides to *a.
 * table: the whole MADT, len bytes (header included).  0, or -EINVAL
 * for a table too short or an entry running past its end (the entries
 * before it count).
 */
int acpi_parse_madt(const void *table, size_t len, struct acpi_info *a);
/* The sleep types of the \_S5 package in AML ("_S5_" PackageOp PkgLength
 * NumElements then two of ZeroOp, OneOp, BytePrefix n with n <= 7): 0,
 * -ENOENT (none), -EINVAL (one we cannot read: no poweroff by it). */
int acpi_parse_s5(const void *aml, size_t len, uint8_t *typa, uint8_t *typb);
/* Parse from the RSDP (copied out of the multiboot2 information). */
int acpi_init(const void *rsdp, size_t len);
const struct acpi_info *acpi_get(void);
/* S5 through PM1 control; returns only if that did not power off. */
void acpi_poweroff(void);
void acpi_reset(void);

#endif
