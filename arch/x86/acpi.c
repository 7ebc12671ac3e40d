/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ACPI table parsing: RSDP -> XSDT/RSDT -> MADT, FADT -> DSDT.  Every table
 * is checked (signature, length bounds, checksum) before use; a bad table
 * is skipped with a warning, never trusted.
 */
#include <errno.h>
#include <string.h>
#include "arch/x86/acpi.h"
#include "arch/x86/cpu.h"
#include "arch/x86/mm.h"
#include "arch/x86/paging_host.h"
#include "hv/lib/log.h"

#define MAX_TABLE_LEN (16u << 20)

struct sdt_header {
	char sig[4];
	uint32_t length;
	uint8_t revision, checksum;
	char oem[6], oem_table[8];
	uint32_t oem_rev, creator, creator_rev;
} __attribute__((packed));

static struct acpi_info info;

const struct acpi_info *acpi_get(void)
{
	return &info;
}

static uint8_t sum(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint8_t s = 0;

	while (n--)
		s += *b++;
	return s;
}

static uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* Map and validate one table; NULL when it is unusable. */
static const struct sdt_header *table_at(uint64_t pa, const char *want)
{
	const struct sdt_header *h;

	if (!pa || !(h = memremap(pa, sizeof(*h))))
		return NULL;
	if (want && memcmp(h->sig, want, 4))
		return NULL;
	if (h->length < sizeof(*h) || h->length > MAX_TABLE_LEN || !memremap(pa, h->length)) {
		pr_warn("acpi: table %.4s at %#lx has a bad length %u", h->sig, pa, h->length);
		return NULL;
	}
	if (sum(h, h->length)) {
		pr_warn("acpi: table %.4s at %#lx has a bad checksum", h->sig, pa);
		return NULL;
	}
	return h;
}

/* One enabled CPU; a repeated APIC id, as firmware that lists a CPU both
 * as local APIC and as x2APIC gives, counts once.  Not those only "online
 * capable" (ACPI 6.3: bit 1 without bit 0): they may be hot-added later,
 * which ferry does not do, and are not there now (firmware lists phantom
 * threads so; Linux does not start them either). */
static void madt_cpu(struct acpi_info *a, uint32_t apic_id, uint32_t flags)
{
	if (!(flags & 1))
		return;
	for (unsigned int i = 0; i < a->n_cpus; i++)
		if (a->cpu_apic_id[i] == apic_id)
			return;
	if (a->n_cpus < ACPI_MAX_CPUS)
		a->cpu_apic_id[a->n_cpus++] = apic_id;
	else
		a->cpus_ignored++;
}

/* ACPI 6.5 5.2.12.2 (type 0, 8 bytes), 5.2.12.3 (1, 12), 5.2.12.5 (2, 10),
 * 5.2.12.12 (9, 16): shorter entries of a known type are skipped. */
static void madt_entry(struct acpi_info *a, const uint8_t *e)
{
	switch (e[0]) {
	case 0:	/* processor local APIC: uid, apic id, flags */
		if (e[1] >= 8 && e[3] != 0xff)
			madt_cpu(a, e[3], rd32(e + 4));
		break;
	case 1:	/* I/O APIC: first one only */
		if (e[1] >= 12 && !a->ioapic_pa) {
			a->ioapic_pa = rd32(e + 4);
			a->ioapic_gsi_base = rd32(e + 8);
		}
		break;
	case 2:	/* interrupt source override */
		if (e[1] >= 10 && a->n_overrides < ACPI_MAX_OVERRIDES) {
			struct acpi_override *o = &a->overrides[a->n_overrides++];
			o->irq = e[3];
			o->gsi = rd32(e + 4);
			o->flags = e[8] | e[9] << 8;
		}
		break;
	case 9:	/* processor local x2APIC: reserved, x2apic id, flags, uid */
		if (e[1] >= 16 && rd32(e + 4) != 0xffffffffu)	/* the broadcast id */
			madt_cpu(a, rd32(e + 4), rd32(e + 8));
		break;
	}
}

int acpi_parse_madt(const void *table, size_t len, struct acpi_info *a)
{
	const uint8_t *h = table, *p = h + 44, *end = h + len;

	if (len < 44)
		return -EINVAL;
	a->lapic_pa = rd32(h + 36);
	while (p + 2 <= end) {
		if (p[1] < 2 || p + p[1] > end) {
			pr_warn("acpi: MADT entry at offset %ld has a bad length %u",
				(long)(p - h), p[1]);
			return -EINVAL;
		}
		madt_entry(a, p);
		p += p[1];
	}
	return 0;
}

/* One AML integer of the \_S5 package: ZeroOp, OneOp or BytePrefix n
 * (SLP_TYP is 3 bits: a larger value is no sleep type); anything else
 * (WordPrefix, a method call) is not parsed. */
static const uint8_t *aml_byte(const uint8_t *q, const uint8_t *end, uint8_t *out)
{
	if (q >= end)
		return NULL;
	if (*q == 0x0a) {
		if (q + 1 >= end || q[1] > 7)
			return NULL;
		*out = q[1];
		return q + 2;
	}
	if (*q > 0x01)
		return NULL;
	*out = *q;
	return q + 1;
}

int acpi_parse_s5(const void *aml, size_t len, uint8_t *typa, uint8_t *typb)
{
	const uint8_t *p = aml, *end = p + len;

	for (; p + 5 < end; p++) {
		if (memcmp(p, "_S5_", 4) || p[4] != 0x12)
			continue;
		const uint8_t *q = p + 5;
		q += ((*q & 0xc0) >> 6) + 1;	/* PkgLength */
		q++;				/* NumElements */
		if ((q = aml_byte(q, end, typa)) && aml_byte(q, end, typb))
			return 0;
		return -EINVAL;
	}
	return -ENOENT;
}

/* The \_S5 package of a DSDT or SSDT, if it has one we can read. */
static void parse_s5(const struct sdt_header *t)
{
	uint8_t a, b;

	if (!info.s5_valid &&
	    !acpi_parse_s5((const uint8_t *)t + sizeof(*t), t->length - sizeof(*t), &a, &b)) {
		info.s5_typa = a;
		info.s5_typb = b;
		info.s5_valid = true;
	}
}

static void parse_fadt(const struct sdt_header *h)
{
	const uint8_t *f = (const uint8_t *)h;

	if (h->length < 116)
		return;
	info.pm1a_cnt = rd32(f + 64);
	info.pm1b_cnt = rd32(f + 68);
	if (f[108] < 128)	/* CMOS has 128 bytes (ACPI 6.5 table 5.9: CENTURY) */
		info.century_reg = f[108];
	if (h->length >= 129 && f[116] == 1 /* system I/O */ && (rd32(f + 112) & (1 << 10))) {
		info.reset_valid = true;
		info.reset_port = (uint16_t)rd64(f + 120);
		info.reset_value = f[128];
	}
	uint64_t dsdt = rd32(f + 40);
	if (h->length >= 148 && rd64(f + 140))
		dsdt = rd64(f + 140);
	const struct sdt_header *d = table_at(dsdt, "DSDT");
	if (d)
		parse_s5(d);
}

static void visit(uint64_t pa)
{
	const struct sdt_header *h = table_at(pa, NULL);

	if (!h)
		return;
	if (!memcmp(h->sig, "APIC", 4))
		acpi_parse_madt(h, h->length, &info);
	else if (!memcmp(h->sig, "FACP", 4))
		parse_fadt(h);
	else if (!memcmp(h->sig, "SSDT", 4) && !info.s5_valid)
		parse_s5(h);	/* some firmware (Bochs's BIOS) puts \_S5 here */
}

int acpi_init(const void *rsdp_bytes, size_t len)
{
	const uint8_t *r = rsdp_bytes;
	const struct sdt_header *root;
	size_t width;

	if (!r || len < 20 || memcmp(r, "RSD PTR ", 8) || sum(r, 20))
		return -ENOENT;
	memcpy(info.oem, r + 9, 6);
	if (r[15] >= 2 && len >= 36 && !sum(r, 36) && rd64(r + 24)) {
		root = table_at(rd64(r + 24), "XSDT");
		width = 8;
	} else {
		root = table_at(rd32(r + 16), "RSDT");
		width = 4;
	}
	if (!root)
		return -EINVAL;
	size_t n = (root->length - sizeof(*root)) / width;
	const uint8_t *e = (const uint8_t *)root + sizeof(*root);
	for (size_t i = 0; i < n; i++)
		visit(width == 8 ? rd64(e + i * 8) : rd32(e + i * 4));
	return info.n_cpus ? 0 : -ENODEV;
}

void acpi_poweroff(void)
{
	if (!info.s5_valid || !info.pm1a_cnt)
		return;
	outw(info.pm1a_cnt, (inw(info.pm1a_cnt) & 0x203) | info.s5_typa << 10 | 1 << 13);
	if (info.pm1b_cnt)
		outw(info.pm1b_cnt, (inw(info.pm1b_cnt) & 0x203) | info.s5_typb << 10 | 1 << 13);
}

void acpi_reset(void)
{
	if (info.reset_valid)
		outb(info.reset_port, info.reset_value);
}
