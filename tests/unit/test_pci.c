/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * PCI configuration mechanism 1 (drivers/pci.c) over a fake function:
 * drivers/pci.c is compiled here unchanged with its port I/O replaced by
 * macros (the arch header is included first, so its include there is a
 * no-op).  The function's status register has error bits that a 1
 * clears, as real ones do: a command-register write must leave them.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "arch/x86/cpu.h"

static uint32_t cf8;			/* the address port */
static uint8_t cfg[256];		/* bus 0, device 3, function 0 */
static unsigned int dword_writes;

#define STATUS_W1C	0xf900u		/* parity, aborts, SERR: write 1 to clear */

/* A write of n bytes of v at configuration offset off, as the device
 * takes it: the status register's error bits cleared where a 1 is. */
static void cfg_write(unsigned int off, uint32_t v, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++, off++, v >>= 8) {
		uint8_t b = (uint8_t)v;

		if (off == 6 || off == 7) {
			uint8_t w1c = (uint8_t)(STATUS_W1C >> ((off - 6) * 8));

			cfg[off] = (uint8_t)(cfg[off] & ~(b & w1c));
			continue;
		}
		cfg[off] = b;
	}
}

static bool ours(void)
{
	return (cf8 & 0xffffff00u) == (0x80000000u | 3u << 11);
}

static uint32_t fake_inl(uint16_t port)
{
	uint32_t v;

	assert_int_equal(port, 0xcfc);
	if (!ours())
		return 0xffffffffu;
	memcpy(&v, cfg + (cf8 & 0xfc), 4);
	return v;
}

static void fake_outl(uint16_t port, uint32_t v)
{
	if (port == 0xcf8) {
		cf8 = v;
		return;
	}
	assert_int_equal(port, 0xcfc);
	dword_writes++;
	if (ours())
		cfg_write(cf8 & 0xfc, v, 4);
}

static void fake_outw(uint16_t port, uint16_t v)
{
	assert_true(port == 0xcfc || port == 0xcfe);
	if (ours())
		cfg_write((cf8 & 0xfc) + (port & 2), v, 2);
}

#define inl(p) fake_inl(p)
#define outl(p, v) fake_outl(p, v)
#define outw(p, v) fake_outw(p, v)

#include "drivers/pci.c"

static const struct pci_dev dev = { .bus = 0, .dev = 3, .fn = 0 };

static void reset(uint16_t cmd, uint16_t status)
{
	memset(cfg, 0, sizeof(cfg));
	cfg[4] = (uint8_t)cmd;
	cfg[5] = (uint8_t)(cmd >> 8);
	cfg[6] = (uint8_t)status;
	cfg[7] = (uint8_t)(status >> 8);
	dword_writes = 0;
}

/* Turning on memory decoding, bus mastering or INTx leaves the status
 * register's error bits (a master abort, a parity error) as they were. */
static void test_command_keeps_status(void **state)
{
	(void)state;
	reset(0x0000, 0xa010);		/* detected parity, master abort; cap list */
	pci_enable_bus_master(&dev);
	assert_int_equal(pci_read16(&dev, 4), 0x0006);
	assert_int_equal(pci_read16(&dev, 6), 0xa010);
	pci_intx(&dev, false);
	assert_int_equal(pci_read16(&dev, 4), 0x0406);
	assert_int_equal(pci_read16(&dev, 6), 0xa010);
	pci_enable_mem(&dev);
	assert_int_equal(pci_read16(&dev, 6), 0xa010);
	assert_int_equal(dword_writes, 0);
}

/* A word at 6 writes the status register alone: its 1s clear those bits,
 * and the command register beside it is not written. */
static void test_word_writes(void **state)
{
	(void)state;
	reset(0x0007, 0xa010);
	pci_write16(&dev, 6, 0x2000);
	assert_int_equal(pci_read16(&dev, 6), 0x8010);
	assert_int_equal(pci_read16(&dev, 4), 0x0007);
	pci_write16(&dev, 0x3c, 0x010b);	/* low half of a dword */
	assert_int_equal(pci_read8(&dev, 0x3c), 0x0b);
	assert_int_equal(pci_read8(&dev, 0x3d), 0x01);
	assert_int_equal(pci_read16(&dev, 0x3e), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_command_keeps_status),
		cmocka_unit_test(test_word_writes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
