/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for the 8254x/82574L driver's ring bookkeeping
 * (drivers/e1000.c, e1000e.c) over a plain register array and rings in
 * host memory: the descriptors it writes for plain, checksum-offloaded and
 * TSO frames, a full transmit ring, and receive descriptors a hostile
 * device fills with lengths beyond the buffer, frames without EOP and
 * error bits.  The device's side is the test writing DD bits.
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

#include "arch/x86/mm.h"
#include "drivers/e1000.h"
#include "tests/unit/drv_host.h"

/* ---- the machine around the driver ---- */
static uint32_t regs[0x20000 / 4];


void *ioremap(uint64_t pa, uint64_t len)
{
	(void)pa;
	return len <= sizeof(regs) ? regs : NULL;
}

uint64_t pci_bar_mem(const struct pci_dev *d, int n, uint64_t *size)
{
	(void)d;
	*size = n == 0 ? sizeof(regs) : 0;
	return n == 0 ? 0xfebc0000 : 0;
}

enum { CTRL = 0, STATUS = 8, RDBAL = 0x2800, RDLEN = 0x2808, RDT = 0x2818, TDBAL = 0x3800,
       TDLEN = 0x3808, TDT = 0x3818, RCTL = 0x100, MPC = 0x4010, RAL0 = 0x5400, RAH0 = 0x5404 };
#define R(off) regs[(off) / 4]

struct rxd { uint64_t addr; uint16_t length, csum; uint8_t status, errors; uint16_t special; };
struct txd { uint64_t addr; uint32_t lower, upper; };

static struct nic *nic;
static struct pci_dev pci = { .bus = 0, .dev = 3, .fn = 0, .vendor = 0x8086, .device = 0x100e };

static void *ring_at(unsigned int lo)
{
	return phys_to_virt((uint64_t)R(lo + 4) << 32 | R(lo));	/* xDBAH follows xDBAL */
}

static struct rxd *rx_ring(void) { return ring_at(RDBAL); }
static struct txd *tx_ring(void) { return ring_at(TDBAL); }

static int setup(void **state)
{
	(void)state;
	memset(regs, 0, sizeof(regs));
	R(RAL0) = 0x12005452;			/* 52:54:00:12:34:56, valid */
	R(RAH0) = 0x5634 | 1u << 31;
	R(STATUS) = 2;				/* link up */
	assert_int_equal(e1000_driver.probe(&pci, e1000_driver.arg, &nic), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(nic);
	drv_host_free();
	return 0;
}

/* ---- probe ---- */

/* A card with no MAC (blank EEPROM: all ones; or a multicast one in the
 * receive address) is refused, not run with a MAC the switch drops. */
static void test_probe_without_mac(void **state)
{
	struct nic *other = NULL;

	(void)state;
	R(RAH0) = 0;					/* not valid: the EEPROM */
	assert_int_equal(e1000_driver.probe(&pci, e1000_driver.arg, &other), -ENOENT);
	assert_null(other);
	R(RAL0) = 0x12005453;				/* 53:...: multicast */
	R(RAH0) = 0x5634 | 1u << 31;
	assert_int_equal(e1000_driver.probe(&pci, e1000_driver.arg, &other), -ENOENT);
}
static void test_probe(void **state)
{
	static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

	(void)state;
	assert_memory_equal(nic->mac, mac, 6);
	assert_string_equal(nic->driver, "e1000");
	assert_string_equal(nic->model, "82540EM");
	assert_true(nic->ops->link_up(nic));
	assert_int_equal(R(RDLEN), E1000_RX_DESC * 16);
	assert_int_equal(R(TDLEN), E1000_TX_DESC * 16);
	assert_int_equal(R(RDT), E1000_RX_DESC - 1);
	assert_true(R(RCTL) & 2);			/* receiver on */
	assert_int_equal(rx_ring()[7].addr, rx_ring()[0].addr + 7 * NIC_BUF);
	assert_int_equal(rx_ring()[E1000_RX_DESC - 1].addr,
			 rx_ring()[0].addr + (E1000_RX_DESC - 1) * NIC_BUF);
	assert_int_equal(R(TDT), 1);			/* the offload context went out */
	assert_true(e1000e_driver.match(&(struct pci_dev){ .vendor = 0x8086, .device = 0x10d3 },
					e1000e_driver.arg));
	assert_false(e1000e_driver.match(&pci, e1000e_driver.arg));
	assert_false(e1000_driver.match(&(struct pci_dev){ .vendor = 0x1af4, .device = 0x100e },
					e1000_driver.arg));
}

/* ---- transmit ---- */
static void test_xmit_descriptors(void **state)
{
	uint8_t f[60] = { 0 };
	struct txd *t = tx_ring();

	(void)state;
	assert_int_equal(nic->ops->xmit(nic, f, sizeof(f)), 0);
	assert_int_equal(t[1].lower, 60u | 1u << 24 | 1u << 25 | 1u << 27);	/* EOP IFCS RS */
	assert_memory_equal(phys_to_virt(t[1].addr), f, 60);
	drv_host_tcp4(f, sizeof(f));
	assert_int_equal(nic->ops->xmit(nic, f, sizeof(f)), 0);
	assert_int_equal(t[2].lower & (1u << 29 | 0xf << 20), 1u << 29 | 1u << 20);	/* DEXT, data */
	assert_int_equal(t[2].upper, 1u << 9);				/* TXSM */
	assert_int_equal(nic->stats.tx_csum, 1);
	/* a fragment of a TCP packet (MF, or an offset) is no TCP segment:
	 * a plain descriptor, its bytes as they are */
	f[14 + 6] = 0x20;
	assert_int_equal(nic->ops->xmit(nic, f, sizeof(f)), 0);
	f[14 + 6] = 0;
	f[14 + 7] = 0xb9;
	assert_int_equal(nic->ops->xmit(nic, f, sizeof(f)), 0);
	for (int i = 3; i <= 4; i++) {
		assert_int_equal(t[i].lower, 60u | 1u << 24 | 1u << 25 | 1u << 27);
		assert_int_equal(t[i].upper, 0);
	}
	assert_memory_equal(phys_to_virt(t[4].addr), f, 60);
	assert_int_equal(nic->stats.tx_csum, 1);
	assert_int_equal(R(TDT), 1);			/* not kicked yet */
	nic->ops->tx_kick(nic);
	assert_int_equal(R(TDT), 5);
	assert_int_equal(nic->ops->xmit(nic, f, 13), -EINVAL);
	assert_int_equal(nic->ops->xmit(nic, f, NIC_BUF + 1), -EINVAL);
}

static void test_tx_ring_full(void **state)
{
	uint8_t f[64] = { 0 };
	struct txd *t = tx_ring();
	int sent = 0;

	(void)state;
	while (nic->ops->xmit(nic, f, sizeof(f)) == 0)
		sent++;
	assert_int_equal(sent, E1000_TX_DESC - 2);	/* less the context, less one gap */
	assert_int_equal(nic->stats.tx_busy, 1);
	assert_int_equal(R(TDT), E1000_TX_DESC - 1);	/* a full ring is kicked */
	assert_null(nic->ops->tx_frame(nic));
	for (int i = 0; i < 10; i++)		/* the NIC sends the context and 9 */
		t[i].upper |= 1;
	for (int i = 0; i < 10; i++)
		assert_int_equal(nic->ops->xmit(nic, f, sizeof(f)), 0);
	assert_int_equal(nic->ops->xmit(nic, f, sizeof(f)), -EAGAIN);
}

static void test_tx_in_place(void **state)
{
	uint8_t *buf = nic->ops->tx_frame(nic);
	struct txd *t = tx_ring();

	(void)state;
	assert_ptr_equal(buf, phys_to_virt(t[1].addr));
	memset(buf, 0xab, 100);
	assert_int_equal(nic->ops->xmit(nic, buf, 100), 0);
	assert_int_equal(t[1].lower & 0xffff, 100);
	assert_int_equal(((uint8_t *)phys_to_virt(t[1].addr))[99], 0xab);
}

static void test_tso(void **state)
{
	static uint8_t hdr[54], payload[5000];
	const struct nic_iov one[1] = { { payload, 5000 } };
	const struct nic_iov two[2] = { { payload, 3000 }, { payload + 3000, 2000 } };
	const struct nic_iov big[2] = { { payload, 30000 }, { payload, 3000 } };
	struct txd *t = tx_ring();

	(void)state;
	drv_host_tcp4(hdr, sizeof(hdr));
	memset(payload, 0x5a, sizeof(payload));
	assert_int_equal(nic->ops->xmit_tso(nic, hdr, 54, one, 1, 1448), 0);
	/* context: TSE and PAYLEN 5000; HDRLEN 54, MSS 1448 */
	assert_int_equal(t[1].lower, 1u << 29 | 1u << 27 | 1u << 25 | 1u << 24 | 1u << 26 | 5000);
	assert_int_equal(t[1].upper, 54u << 8 | 1448u << 16);
	assert_int_equal(t[2].lower & 0xffff, 54);		/* the headers */
	assert_false(t[2].lower & 1u << 24);
	assert_int_equal(t[3].lower & 0xffff, 2048);
	assert_int_equal(t[4].lower & 0xffff, 2048);
	assert_int_equal(t[5].lower & 0xffff, 904);
	assert_true(t[5].lower & 1u << 24);			/* EOP on the last */
	assert_false(t[4].lower & 1u << 24);
	assert_memory_equal(phys_to_virt(t[5].addr), payload + 4096, 904);
	assert_int_equal(nic->stats.tx_tso, 1);
	assert_int_equal(nic->stats.tx_frames, 4);
	/* two pieces: the buffers fill across them, whole but the last */
	assert_int_equal(nic->ops->xmit_tso(nic, hdr, 54, two, 2, 1448), 0);
	assert_int_equal(t[6].lower & 0xffff, 5000);		/* the context */
	assert_int_equal(t[8].lower & 0xffff, 2048);
	assert_int_equal(t[9].lower & 0xffff, 2048);
	assert_int_equal(t[10].lower & 0xffff, 904);
	assert_true(t[10].lower & 1u << 24);
	assert_memory_equal(phys_to_virt(t[9].addr), payload + 2048, 2048);
	assert_int_equal(nic->stats.tx_tso, 2);
	assert_int_equal(nic->ops->xmit_tso(nic, hdr, 54, big, 2, 1448), -EINVAL);
	assert_int_equal(nic->ops->xmit_tso(nic, hdr, 54, one, 0, 1448), -EINVAL);
	assert_int_equal(nic->ops->xmit_tso(nic, hdr, 54, one, 1, 0), -EINVAL);
	assert_int_equal(nic->ops->xmit_tso(nic, hdr, 256, one, 1, 1448), -EINVAL);
	hdr[14] = 0x46;						/* IP options */
	assert_int_equal(nic->ops->xmit_tso(nic, hdr, 54, one, 1, 1448), -EINVAL);
}

/* ---- receive ---- */
static size_t got_len[8];
static unsigned int got_flags[8], got;
static const void *got_at[8];

static void rx_cb(void *ctx, const void *frame, size_t len, unsigned flags)
{
	(void)ctx;
	got_at[got] = frame;
	got_len[got] = len;
	got_flags[got++] = flags;
}

static void dev_rx(int i, uint16_t len, uint8_t status, uint8_t errors)
{
	rx_ring()[i].length = len;
	rx_ring()[i].errors = errors;
	rx_ring()[i].status = status;
}

static void test_rx_hostile(void **state)
{
	(void)state;
	got = 0;
	dev_rx(0, 100, 0x03, 0);			/* DD EOP */
	dev_rx(1, 3000, 0x03, 0);			/* longer than the buffer */
	dev_rx(2, 1000, 0x01, 0);			/* no EOP: spread over buffers */
	dev_rx(3, 60, 0x03, 0x80);			/* RXE */
	dev_rx(4, 0xffff, 0x03, 0);
	dev_rx(5, 1514, 0x03 | 0x20 | 0x40, 0x20);	/* IPCS TCPCS, TCPE */
	assert_int_equal(nic->ops->poll(nic, rx_cb, NULL, 64), 6);
	assert_int_equal(got, 2);
	assert_int_equal(got_len[0], 100);
	assert_ptr_equal(got_at[0], phys_to_virt(rx_ring()[0].addr));
	assert_int_equal(got_len[1], 1514);
	assert_int_equal(got_flags[1], NIC_RX_IP_CSUM_OK);	/* TCP checksum bad */
	assert_int_equal(nic->stats.rx_errors, 4);
	assert_int_equal(R(RDT), 5);			/* all six buffers given back */
	assert_int_equal(rx_ring()[1].status, 0);
	assert_int_equal(nic->ops->poll(nic, rx_cb, NULL, 64), 0);
}

/* A frame over two buffers: its last piece (EOP, no error) is no frame of
 * its own, and the one after it is again. */
static void test_rx_spread_frame_dropped_whole(void **state)
{
	(void)state;
	got = 0;
	dev_rx(0, 2048, 0x01, 0);			/* DD, more to come */
	dev_rx(1, 600, 0x03, 0);			/* its tail: DD EOP */
	dev_rx(2, 60, 0x03, 0);
	assert_int_equal(nic->ops->poll(nic, rx_cb, NULL, 64), 3);
	assert_int_equal(got, 1);
	assert_int_equal(got_len[0], 60);
	assert_ptr_equal(got_at[0], phys_to_virt(rx_ring()[2].addr));
	assert_int_equal(nic->stats.rx_errors, 2);
}

static void test_rx_budget_and_flags(void **state)
{
	(void)state;
	got = 0;
	for (int i = 0; i < 6; i++)
		dev_rx(i, 64, 0x03 | 0x20 | 0x40 | (i == 2 ? 0x04 : 0), 0);	/* IXSM at 2 */
	assert_int_equal(nic->ops->poll(nic, rx_cb, NULL, 4), 4);
	assert_int_equal(R(RDT), 3);
	assert_int_equal(got_flags[0], NIC_RX_IP_CSUM_OK | NIC_RX_TCP_CSUM_OK);
	assert_int_equal(got_flags[2], 0);			/* "ignore checksum" */
	assert_int_equal(nic->ops->poll(nic, rx_cb, NULL, 4), 2);
	assert_int_equal(got, 6);
	assert_int_equal(nic->stats.rx_csum, 5);
	R(MPC) = 7;
	for (int i = 0; i < 1024; i++)
		nic->ops->poll(nic, rx_cb, NULL, 4);
	assert_int_equal(nic->stats.rx_missed, 7);
}

/* The ring wraps: more than two rings' worth of frames through it. */
static void test_rx_wrap(void **state)
{
	const int frames = 2 * E1000_RX_DESC + 88;

	(void)state;
	got = 0;
	for (int n = 0; n < frames; n++) {
		int i = n % E1000_RX_DESC;

		dev_rx(i, (uint16_t)(60 + n % 100), 0x03, 0);
		got = 0;
		assert_int_equal(nic->ops->poll(nic, rx_cb, NULL, 64), 1);
		assert_int_equal(got_len[0], 60 + n % 100);
		assert_int_equal(R(RDT), (uint32_t)i);
	}
	assert_int_equal(nic->stats.rx_frames, (uint64_t)frames);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_probe, setup, teardown),
		cmocka_unit_test_setup_teardown(test_xmit_descriptors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tx_ring_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tx_in_place, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tso, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rx_hostile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_probe_without_mac, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rx_spread_frame_dropped_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rx_budget_and_flags, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rx_wrap, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
