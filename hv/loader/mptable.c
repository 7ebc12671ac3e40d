/* SPDX-License-Identifier: BSD-2-Clause */
/* MP spec 1.4 tables for a guest (see mptable.h). */
#include <errno.h>
#include <string.h>
#include "hv/lib/bytes.h"
#include "hv/loader/mptable.h"

#define FPS_LEN		16	/* floating pointer structure (MP spec 4.1) */
#define HDR_LEN		44	/* configuration table header (4.2) */
#define CPU_LEN		20
#define SMALL_LEN	8	/* bus, I/O APIC and interrupt entries */
#define NR_ISA_IRQS	16
#define NR_LINTS	2
#define APIC_VERSION	0x14	/* integrated local APIC */
#define IOAPIC_VERSION	0x11
#define CPU_SIGNATURE	0x600	/* family 6, as the guest's CPUID says */
#define CPU_FEATURES	0x201	/* FPU, APIC */

size_t mptable_size(unsigned int nr_cpus)
{
	return FPS_LEN + HDR_LEN + nr_cpus * CPU_LEN +
	       SMALL_LEN * (2 + NR_ISA_IRQS - 1 + NR_LINTS + 2);
}

static uint8_t checksum(const uint8_t *p, size_t n)
{
	uint8_t sum = 0;

	while (n--)
		sum += *p++;
	return (uint8_t)-sum;
}

static uint8_t *cpu_entry(uint8_t *e, unsigned int id)
{
	e[0] = MP_ENT_CPU;
	e[1] = (uint8_t)id;
	e[2] = APIC_VERSION;
	e[3] = 1 | (id == 0 ? 2 : 0);		/* enabled; the BSP */
	put_le32(e + 4, CPU_SIGNATURE);
	put_le32(e + 8, CPU_FEATURES);
	return e + CPU_LEN;
}

static uint8_t *small_entry(uint8_t *e, const uint8_t bytes[SMALL_LEN])
{
	memcpy(e, bytes, SMALL_LEN);
	return e + SMALL_LEN;
}

/* I/O interrupt entries: flags 0 = as the ISA bus says (edge, high). */
static uint8_t *isa_irqs(uint8_t *e, uint8_t ioapic)
{
	for (uint8_t irq = 0; irq < NR_ISA_IRQS; irq++) {
		uint8_t pin = irq == 0 ? 2 : irq;	/* pin 2 is IRQ 0, not the cascade */

		if (irq != 2)
			e = small_entry(e, (const uint8_t[]){ MP_ENT_IOINT, MP_INT_INT, 0, 0,
							    MPTABLE_ISA_BUS, irq, ioapic, pin });
	}
	return e;
}

static void header(uint8_t *h, size_t len, uint16_t entries)
{
	memcpy(h, "PCMP", 4);
	put_le16(h + 4, (uint16_t)len);
	h[6] = 4;				/* spec 1.4 */
	memcpy(h + 8, "FERRY   ", 8);
	memcpy(h + 16, "VM          ", 12);
	put_le16(h + 34, entries);
	put_le32(h + 36, MPTABLE_LAPIC_PA);
	h[7] = checksum(h, len);
}

long mptable_build(void *buf, size_t len, uint32_t gpa, unsigned int nr_cpus)
{
	uint8_t *fps = buf, *cfg = fps + FPS_LEN, *e = cfg + HDR_LEN;
	uint8_t ioapic = (uint8_t)nr_cpus;
	size_t size = mptable_size(nr_cpus);

	if (!nr_cpus || nr_cpus > MPTABLE_MAX_CPUS)
		return -EINVAL;
	if (len < size)
		return -E2BIG;
	memset(buf, 0, size);
	for (unsigned int i = 0; i < nr_cpus; i++)
		e = cpu_entry(e, i);
	e = small_entry(e, (const uint8_t[]){ MP_ENT_BUS, MPTABLE_PCI_BUS, 'P', 'C', 'I', ' ', ' ', ' ' });
	e = small_entry(e, (const uint8_t[]){ MP_ENT_BUS, MPTABLE_ISA_BUS, 'I', 'S', 'A', ' ', ' ', ' ' });
	e = small_entry(e, (const uint8_t[SMALL_LEN]){ MP_ENT_IOAPIC, ioapic, IOAPIC_VERSION, 1 });
	put_le32(e - 4, MPTABLE_IOAPIC_PA);
	e = isa_irqs(e, ioapic);
	/* INTA# of 00:01.0: source IRQ = device << 2 | pin (MP spec D.3),
	 * flags 0xf = level-triggered, active low (4.3.4) */
	e = small_entry(e, (const uint8_t[]){ MP_ENT_IOINT, MP_INT_INT, 0x0f, 0, MPTABLE_PCI_BUS,
					    1 << 2, ioapic, MPTABLE_PCI_PIN });
	/* LINT0 ExtINT and LINT1 NMI on every local APIC (id 0xff) */
	e = small_entry(e, (const uint8_t[]){ MP_ENT_LINT, MP_INT_EXTINT, 0, 0, 0, 0, 0xff, 0 });
	e = small_entry(e, (const uint8_t[]){ MP_ENT_LINT, MP_INT_NMI, 0, 0, 0, 0, 0xff, 1 });
	header(cfg, (size_t)(e - cfg), (uint16_t)(nr_cpus + 1 + 1 + NR_ISA_IRQS - 1 + NR_LINTS + 2));
	memcpy(fps, "_MP_", 4);
	put_le32(fps + 4, gpa + FPS_LEN);
	fps[8] = 1;					/* length in 16-byte units */
	fps[9] = 4;
	fps[10] = checksum(fps, FPS_LEN);
	return (long)size;
}
