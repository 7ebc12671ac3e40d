/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for choosing ferry's NIC: the nic= option's text (boot's
 * command line keeps it, drivers/nicsel.c parses and matches it) and
 * drivers/nic.c scanning a fake PCI bus with fake drivers and starting the
 * card the option names.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "boot/mb2info.h"
#include "drivers/nic.h"

void log_printf(enum log_level level, const char *fmt, ...)
{
	(void)level;
	(void)fmt;
}

/* ---- parsing ---- */
static struct nic_sel sel;

static void test_parse_pci(void **state)
{
	char buf[24];

	(void)state;
	assert_int_equal(nic_sel_parse("pci:00:03.0", &sel), 0);
	assert_int_equal(sel.kind, NIC_SEL_PCI);
	assert_int_equal(sel.bus, 0);
	assert_int_equal(sel.dev, 3);
	assert_int_equal(sel.fn, 0);
	assert_int_equal(nic_sel_parse("pci:1f:1F.7", &sel), 0);
	assert_int_equal(sel.bus, 0x1f);
	assert_int_equal(sel.dev, 0x1f);
	assert_int_equal(sel.fn, 7);
	nic_sel_format(&sel, buf);
	assert_string_equal(buf, "pci:1f:1f.7");
	assert_int_equal(nic_sel_parse("pci:ff:0.1", &sel), 0);
	assert_int_equal(sel.bus, 0xff);
}

static void test_parse_pci_bad(void **state)
{
	static const char *const bad[] = {
		"pci:00:20.0", "pci:00:03.8", "pci:00:03", "pci:000:03.0", "pci:00:03.0x",
		"pci:", "pci:00.03.0", "pci:-1:03.0", "pci:00:03.0 ", "PCI:00:03.0", "pci:g0:03.0",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(nic_sel_parse(bad[i], &sel), -EINVAL);
}

static void test_parse_mac(void **state)
{
	static const uint8_t want[6] = { 0x52, 0x54, 0x00, 0xab, 0xCD, 0x0f };
	char buf[24];

	(void)state;
	assert_int_equal(nic_sel_parse("52:54:00:ab:CD:0f", &sel), 0);
	assert_int_equal(sel.kind, NIC_SEL_MAC);
	assert_memory_equal(sel.mac, want, 6);
	assert_int_equal(nic_sel_parse("52-54-00-ab-cd-0f", &sel), 0);
	assert_memory_equal(sel.mac, want, 6);
	nic_sel_format(&sel, buf);
	assert_string_equal(buf, "52:54:00:ab:cd:0f");
}

static void test_parse_mac_bad(void **state)
{
	static const char *const bad[] = {
		"52:54:00:12:34", "52:54:00:12:34:5g", "52-54:00:12:34:56", "52:54:00:12:34:56:78",
		"5:54:00:12:34:567", "52:54:00:12:34:56:", "eth0", "0x525400123456",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(nic_sel_parse(bad[i], &sel), -EINVAL);
}

static void test_parse_nothing(void **state)
{
	char buf[24];

	(void)state;
	assert_int_equal(nic_sel_parse(NULL, &sel), 0);
	assert_int_equal(sel.kind, NIC_SEL_ANY);
	assert_int_equal(nic_sel_parse("", &sel), 0);
	assert_int_equal(sel.kind, NIC_SEL_ANY);
	nic_sel_format(&sel, buf);
	assert_string_equal(buf, "the first NIC");
}

static void test_match(void **state)
{
	static const uint8_t a[6] = { 2, 0, 0, 0, 0, 1 }, b[6] = { 2, 0, 0, 0, 0, 2 };

	(void)state;
	nic_sel_parse("pci:00:04.0", &sel);
	assert_true(nic_sel_match(&sel, 0, 4, 0, a));
	assert_false(nic_sel_match(&sel, 0, 4, 1, a));
	assert_false(nic_sel_match(&sel, 1, 4, 0, NULL));
	nic_sel_parse("02:00:00:00:00:02", &sel);
	assert_true(nic_sel_match(&sel, 0, 3, 0, b));
	assert_false(nic_sel_match(&sel, 0, 3, 0, a));
	assert_false(nic_sel_match(&sel, 0, 3, 0, NULL));	/* MAC unknown */
	nic_sel_parse(NULL, &sel);
	assert_true(nic_sel_match(&sel, 9, 9, 0, NULL));
}

/* ---- the command line keeps the text ---- */
static void test_cmdline_option(void **state)
{
	struct mb2_cmdline c;

	(void)state;
	assert_int_equal(mb2_parse_cmdline("ip=10.0.0.2/24 nic=pci:00:04.0", &c), 0);
	assert_string_equal(c.nic, "pci:00:04.0");
	assert_int_equal(mb2_parse_cmdline("nic=52:54:00:12:34:56", &c), 0);
	assert_string_equal(c.nic, "52:54:00:12:34:56");
	assert_int_equal(mb2_parse_cmdline("loglevel=debug", &c), 0);
	assert_string_equal(c.nic, "");
	assert_int_equal(mb2_parse_cmdline("nic=", &c), 1);
	assert_string_equal(c.nic, "");
	assert_int_equal(mb2_parse_cmdline("nic=0123456789abcdef0123456789", &c), 1);
	assert_string_equal(c.nic, "");
}

/* ---- scanning and starting, on a fake bus ---- */
static struct pci_dev bus[5];
static unsigned int bus_n, probes;
static int probe_rc;
static struct nic the_nic;

void pci_foreach(bool (*fn)(const struct pci_dev *d, void *arg), void *arg)
{
	for (unsigned int i = 0; i < bus_n; i++)
		if (fn(&bus[i], arg))
			return;
}

/* arg: the device id the fake driver takes (vendor 0x8086), or 0: virtio */
static bool fake_match(const struct pci_dev *d, const void *arg)
{
	uint16_t dev = *(const uint16_t *)arg;

	return dev ? d->vendor == 0x8086 && d->device == dev : d->vendor == 0x1af4;
}

/* The MAC is 02:00:00:00:00:<slot>; slot 6 has none readable. */
static int fake_mac(const struct pci_dev *d, const void *arg, uint8_t mac[6])
{
	(void)arg;
	if (d->dev == 6)
		return -ENOENT;
	memcpy(mac, (uint8_t[6]){ 2, 0, 0, 0, 0, d->dev }, 6);
	return 0;
}

static int fake_probe(const struct pci_dev *d, const void *arg, struct nic **out)
{
	(void)arg;
	probes++;
	the_nic.pci = *d;
	*out = probe_rc ? NULL : &the_nic;
	return probe_rc;
}

static const uint16_t id_e1000 = 0x100e, id_e1000e = 0x10d3, id_virtio = 0;
const struct nic_driver e1000_driver = { "e1000", &id_e1000, fake_match, fake_mac, fake_probe };
const struct nic_driver e1000e_driver = { "e1000e", &id_e1000e, fake_match, fake_mac, fake_probe };
const struct nic_driver virtio_net_driver = { "virtio-net", &id_virtio, fake_match, fake_mac,
					      fake_probe };

static void fake_bus(void)
{
	bus[0] = (struct pci_dev){ .dev = 1, .vendor = 0x8086, .device = 0x7000 };	/* not a NIC */
	bus[1] = (struct pci_dev){ .dev = 3, .vendor = 0x8086, .device = 0x100e };
	bus[2] = (struct pci_dev){ .dev = 4, .vendor = 0x1af4, .device = 0x1041 };
	bus[3] = (struct pci_dev){ .dev = 5, .vendor = 0x8086, .device = 0x10d3 };
	bus[4] = (struct pci_dev){ .dev = 6, .vendor = 0x8086, .device = 0x10d3 };
	bus_n = 5;
	probes = 0;
	probe_rc = 0;
}

static void test_scan(void **state)
{
	struct nic_found f[NIC_MAX_FOUND];

	(void)state;
	fake_bus();
	assert_int_equal(nic_scan(f, NIC_MAX_FOUND), 4);
	assert_string_equal(f[0].drv->name, "e1000");
	assert_string_equal(f[1].drv->name, "virtio-net");
	assert_string_equal(f[2].drv->name, "e1000e");
	assert_int_equal(f[1].pci.dev, 4);
	assert_true(f[1].mac_ok);
	assert_int_equal(f[1].mac[5], 4);
	assert_false(f[3].mac_ok);
	assert_int_equal(nic_scan(f, 2), 2);		/* stops at the room given */
	assert_int_equal(nic_scan(f, 0), 0);
	assert_int_equal(probes, 0);			/* scanning starts nothing */
}

static void test_start_chosen(void **state)
{
	struct nic_found f[NIC_MAX_FOUND];
	struct nic *n = NULL;
	unsigned int which = 99, count;

	(void)state;
	fake_bus();
	count = nic_scan(f, NIC_MAX_FOUND);
	nic_sel_parse(NULL, &sel);
	assert_int_equal(nic_start(f, count, &sel, &n, &which), 0);
	assert_int_equal(which, 0);
	assert_ptr_equal(n, &the_nic);
	assert_int_equal(n->pci.dev, 3);
	nic_sel_parse("pci:00:05.0", &sel);
	assert_int_equal(nic_start(f, count, &sel, &n, &which), 0);
	assert_int_equal(which, 2);
	assert_int_equal(the_nic.pci.dev, 5);
	nic_sel_parse("02:00:00:00:00:04", &sel);
	assert_int_equal(nic_start(f, count, &sel, &n, &which), 0);
	assert_int_equal(which, 1);
	assert_int_equal(probes, 3);
}

static void test_start_nothing_matches(void **state)
{
	struct nic_found f[NIC_MAX_FOUND];
	struct nic *n = NULL;
	unsigned int which = 99, count;

	(void)state;
	fake_bus();
	count = nic_scan(f, NIC_MAX_FOUND);
	nic_sel_parse("pci:00:01.0", &sel);		/* present, but no NIC */
	assert_int_equal(nic_start(f, count, &sel, &n, &which), -ENODEV);
	nic_sel_parse("02:00:00:00:00:06", &sel);	/* the card whose MAC is unknown */
	assert_int_equal(nic_start(f, count, &sel, &n, &which), -ENODEV);
	nic_sel_parse(NULL, &sel);
	assert_int_equal(nic_start(f, 0, &sel, &n, &which), -ENODEV);
	assert_int_equal(probes, 0);
	probe_rc = -EIO;				/* the driver's error comes back */
	assert_int_equal(nic_start(f, count, &sel, &n, &which), -EIO);
	assert_int_equal(which, 0);
	assert_null(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_pci),
		cmocka_unit_test(test_parse_pci_bad),
		cmocka_unit_test(test_parse_mac),
		cmocka_unit_test(test_parse_mac_bad),
		cmocka_unit_test(test_parse_nothing),
		cmocka_unit_test(test_match),
		cmocka_unit_test(test_cmdline_option),
		cmocka_unit_test(test_scan),
		cmocka_unit_test(test_start_chosen),
		cmocka_unit_test(test_start_nothing_matches),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
