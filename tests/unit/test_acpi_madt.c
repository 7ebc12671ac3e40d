/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of the MADT parser (arch/x86/acpi.c, acpi_parse_madt): local
 * APIC (type 0) and local x2APIC (type 9) entries as ACPI 6.5 5.2.12
 * lays them out, built byte by byte here; enabled, online-capable (not
 * started) and disabled CPUs, ids past 255 (not the broadcast one), one CPU listed twice, more CPUs than ferry
 * takes, short and overrunning entries.  Tables sit in exactly-sized heap
 * buffers so that ASan sees a read past the end.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "arch/x86/acpi.h"
#include "arch/x86/paging_host.h"
#include "hv/lib/log.h"

static int warns;

void log_printf(enum log_level level, const char *fmt, ...)
{
	(void)fmt;
	warns += level == LOG_WARN;
}

/* acpi_init's table mapping, which these tests do not reach. */
void *memremap(uint64_t pa, uint64_t len)
{
	(void)len;
	return (void *)(uintptr_t)pa;
}

struct madt {
	uint8_t b[8192];
	size_t len;
};

static void madt_begin(struct madt *m)
{
	memset(m, 0, sizeof(*m));
	memcpy(m->b, "APIC", 4);
	m->b[36] = 0x00; m->b[37] = 0x00; m->b[38] = 0xe0; m->b[39] = 0xfe;	/* 0xfee00000 */
	m->len = 44;
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void lapic(struct madt *m, uint8_t apic_id, uint32_t flags)
{
	uint8_t *e = m->b + m->len;

	e[0] = 0; e[1] = 8; e[2] = apic_id; e[3] = apic_id;
	put32(e + 4, flags);
	m->len += 8;
}

static void x2apic(struct madt *m, uint32_t apic_id, uint32_t flags)
{
	uint8_t *e = m->b + m->len;

	e[0] = 9; e[1] = 16;
	put32(e + 4, apic_id);
	put32(e + 8, flags);
	put32(e + 12, apic_id);		/* ACPI processor uid */
	m->len += 16;
}

static int parse(const struct madt *m, struct acpi_info *a)
{
	uint8_t *copy = malloc(m->len);
	int rc;

	memcpy(copy, m->b, m->len);
	memset(a, 0, sizeof(*a));
	rc = acpi_parse_madt(copy, m->len, a);
	free(copy);
	return rc;
}

static void test_xapic_entries(void **state)
{
	struct madt m;
	struct acpi_info a;

	(void)state;
	madt_begin(&m);
	lapic(&m, 0, 1);
	lapic(&m, 1, 0);	/* disabled */
	lapic(&m, 2, 2);	/* online capable only: not there now */
	lapic(&m, 3, 3);
	lapic(&m, 0xff, 1);	/* not a usable xAPIC id */
	assert_int_equal(parse(&m, &a), 0);
	assert_int_equal(a.n_cpus, 2);
	assert_int_equal(a.cpu_apic_id[0], 0);
	assert_int_equal(a.cpu_apic_id[1], 3);
	assert_int_equal(a.lapic_pa, 0xfee00000u);
}

static void test_x2apic_entries(void **state)
{
	struct madt m;
	struct acpi_info a;

	(void)state;
	madt_begin(&m);
	lapic(&m, 0, 1);
	x2apic(&m, 0x100, 1);
	x2apic(&m, 0xfff, 1);		/* the largest id the design must take */
	x2apic(&m, 0x12345678, 1);
	x2apic(&m, 0x300, 2);		/* online capable only */
	x2apic(&m, 0xffffffffu, 1);	/* the broadcast id: no CPU */
	x2apic(&m, 0x200, 0);		/* disabled */
	x2apic(&m, 0, 1);		/* the boot CPU again, as x2APIC */
	assert_int_equal(parse(&m, &a), 0);
	assert_int_equal(a.n_cpus, 4);
	assert_int_equal(a.cpu_apic_id[1], 0x100);
	assert_int_equal(a.cpu_apic_id[2], 0xfff);
	assert_int_equal(a.cpu_apic_id[3], 0x12345678);
	assert_int_equal(a.cpus_ignored, 0);
}

/* 300 CPUs with ids 0, 16, 32, ...: the first ACPI_MAX_CPUS (256) count. */
static void test_many_cpus(void **state)
{
	struct madt m;
	struct acpi_info a;

	(void)state;
	assert_int_equal(ACPI_MAX_CPUS, 256);
	madt_begin(&m);
	for (uint32_t i = 0; i < 300; i++)
		x2apic(&m, i * 16, 1);
	assert_int_equal(parse(&m, &a), 0);
	assert_int_equal(a.n_cpus, 256);
	assert_int_equal(a.cpus_ignored, 44);
	assert_int_equal(a.cpu_apic_id[255], 255 * 16);
}

static void test_bad_entries(void **state)
{
	struct madt m;
	struct acpi_info a;

	(void)state;
	madt_begin(&m);
	lapic(&m, 3, 1);
	x2apic(&m, 0x400, 1);
	m.b[m.len - 16 + 1] = 12;	/* x2APIC entry too short for its fields */
	m.len -= 4;
	lapic(&m, 4, 1);
	assert_int_equal(parse(&m, &a), 0);
	assert_int_equal(a.n_cpus, 2);
	assert_int_equal(a.cpu_apic_id[1], 4);

	madt_begin(&m);
	lapic(&m, 5, 1);
	x2apic(&m, 0x401, 1);
	m.len -= 1;			/* the last entry runs past the table */
	warns = 0;
	assert_int_equal(parse(&m, &a), -EINVAL);
	assert_int_equal(warns, 1);
	assert_int_equal(a.n_cpus, 1);
	assert_int_equal(a.cpu_apic_id[0], 5);

	m.len = 40;
	assert_int_equal(parse(&m, &a), -EINVAL);
}

/* \_S5 in AML, as firmware writes it; what cannot be a sleep type (3 bits)
 * or is not a constant is refused, never shifted into PM1_CNT. */
static void test_s5(void **state)
{
	static const uint8_t zero_one[] = "xx\x08_S5_\x12\x06\x04\x00\x01\x00\x00";
	static const uint8_t bytes[] = "\x08_S5_\x12\x08\x04\x0a\x05\x0a\x07\x00";
	static const uint8_t big[] = "\x08_S5_\x12\x08\x04\x0a\x08\x0a\x00\x00";
	static const uint8_t word[] = "\x08_S5_\x12\x08\x04\x0b\x05\x00\x00";
	static const uint8_t ones[] = "\x08_S5_\x12\x06\x04\xff\x00\x00";
	static const uint8_t cut[] = "\x08_S5_\x12\x08\x04\x0a";
	uint8_t a = 9, b = 9;

	(void)state;
	assert_int_equal(acpi_parse_s5(zero_one, sizeof(zero_one) - 1, &a, &b), 0);
	assert_true(a == 0 && b == 1);
	assert_int_equal(acpi_parse_s5(bytes, sizeof(bytes) - 1, &a, &b), 0);
	assert_true(a == 5 && b == 7);
	assert_int_equal(acpi_parse_s5(big, sizeof(big) - 1, &a, &b), -EINVAL);
	assert_int_equal(acpi_parse_s5(word, sizeof(word) - 1, &a, &b), -EINVAL);
	assert_int_equal(acpi_parse_s5(ones, sizeof(ones) - 1, &a, &b), -EINVAL);
	assert_int_equal(acpi_parse_s5(cut, sizeof(cut) - 1, &a, &b), -EINVAL);
	assert_int_equal(acpi_parse_s5("no sleep here", 13, &a, &b), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_xapic_entries),
		cmocka_unit_test(test_x2apic_entries),
		cmocka_unit_test(test_many_cpus),
		cmocka_unit_test(test_bad_entries),
		cmocka_unit_test(test_s5),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
