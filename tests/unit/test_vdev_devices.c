/* SPDX-License-Identifier: BSD-2-Clause */
/* A guest's device set (hv/vdev/devices.c): port dispatch, ports that are
 * no device, the reset and power-off requests, interrupt routing as the
 * test guest uses it, console in and out, the APIC bus as Linux uses it
 * (I/O APIC routing, level lines and EOI, IPIs, lowest priority, x2APIC,
 * kvmclock MSRs), and random port traffic. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>
#include "hv/vdev/devices.h"

#define MS 1000000ull
#define SEC 1000000000ull

/* What the core's callbacks saw. */
struct core {
	char out[1024];
	size_t nout;
	int resets, poweroffs;
};

static void core_tx(void *ctx, uint8_t byte)
{
	struct core *c = ctx;

	if (c->nout < sizeof(c->out))
		c->out[c->nout] = (char)byte;
	c->nout++;
}

static void core_reset(void *ctx)
{
	((struct core *)ctx)->resets++;
}

static void core_poweroff(void *ctx)
{
	((struct core *)ctx)->poweroffs++;
}

static struct core core;

static struct vm_devices *make(void)
{
	struct vdev_config cfg = {
		.ram_below_4g = 128ull << 20, .ram_above_4g = 0,
		.epoch_s = 1709214356, .now_ns = 0, .ctx = &core,
		.tx = core_tx, .reset = core_reset, .poweroff = core_poweroff,
		.nr_cpus = 2, .tsc_hz = 3000000000ull,
	};
	struct vm_devices *d = NULL;

	memset(&core, 0, sizeof(core));
	assert_int_equal(vdev_create(&cfg, &d), 0);
	assert_non_null(d);
	return d;
}

static void out(struct vm_devices *d, uint16_t port, uint8_t size, uint32_t v, uint64_t now)
{
	assert_int_equal(vdev_io(d, port, size, false, &v, now), 0);
}

static uint32_t in(struct vm_devices *d, uint16_t port, uint8_t size, uint64_t now)
{
	uint32_t v = 0x12345678;

	assert_int_equal(vdev_io(d, port, size, true, &v, now), 0);
	return v;
}

static bool all_valid(const struct vm_devices *d)
{
	return pic_valid(&d->pic) && pit_valid(&d->pit) && uart_valid(&d->com1) &&
	       rtc_valid(&d->rtc) &&
	       !!(d->pic.lines & (1u << VDEV_COM1_IRQ)) == d->com1.irq_level;
}

/* guest/testguest: tg_uart_init, tg_pic_init, tg_timer_start (100 Hz). */
static void testguest_boot(struct vm_devices *d, uint64_t now)
{
	static const uint16_t uart[][2] = {
		{ 0x3F9, 0 }, { 0x3FB, 0x80 }, { 0x3F8, 1 }, { 0x3F9, 0 },
		{ 0x3FB, 0x03 }, { 0x3FA, 0x07 }, { 0x3FC, 0x0B },
	};
	static const uint16_t pic[][2] = {
		{ 0x20, 0x11 }, { 0xA0, 0x11 }, { 0x21, 0x20 }, { 0xA1, 0x28 },
		{ 0x21, 0x04 }, { 0xA1, 0x02 }, { 0x21, 0x01 }, { 0xA1, 0x01 },
		{ 0x21, 0xff }, { 0xA1, 0xff },
	};

	for (size_t i = 0; i < sizeof(uart) / sizeof(uart[0]); i++)
		out(d, uart[i][0], 1, uart[i][1], now);
	for (size_t i = 0; i < sizeof(pic) / sizeof(pic[0]); i++)
		out(d, pic[i][0], 1, pic[i][1], now);
	out(d, 0x43, 1, 0x34, now);
	out(d, 0x40, 1, 11932 & 0xff, now);
	out(d, 0x40, 1, 11932 >> 8, now);
	out(d, 0x21, 1, 0xfe, now);		/* tg_pic_unmask(0) */
}

static void test_dispatch(void **state)
{
	struct vm_devices *d = make();
	uint32_t v;

	(void)state;
	assert_int_equal(in(d, 0x21, 1, 0), 0xff);	/* PIC IMR */
	assert_int_equal(in(d, 0xA1, 1, 0), 0xff);
	assert_int_equal(in(d, 0x4D0, 1, 0), 0x00);	/* ELCR */
	assert_int_equal(in(d, 0x43, 1, 0), 0xff);	/* PIT control */
	assert_int_equal(in(d, 0x61, 1, 0) & 0x0f, 0);
	assert_int_equal(in(d, 0x3FD, 1, 0), 0x60);	/* COM1 LSR */
	assert_int_equal(in(d, 0x3FE, 1, 0), 0xb0);	/* COM1 MSR */
	out(d, 0x70, 1, 0x0D, 0);
	assert_int_equal(in(d, 0x71, 1, 0), 0x80);	/* RTC register D */
	out(d, 0x70, 1, 0x15, 0);
	assert_int_equal(in(d, 0x71, 1, 0), 0x80);	/* 640 KiB, low byte */
	assert_int_equal(in(d, 0x64, 1, 0), 0x00);	/* i8042 status */
	assert_int_equal(in(d, 0x60, 1, 0), 0x00);
	assert_int_equal(in(d, 0x80, 1, 0), 0xff);	/* POST */
	out(d, 0x80, 1, 0x42, 0);
	/* Wide accesses are split into bytes, across devices too. */
	assert_int_equal(in(d, 0x80, 2, 0), 0xffff);	/* 0x81: nothing */
	assert_int_equal(in(d, 0x60, 2, 0) & 0xefff, 0);	/* 0x60, then 0x61 */
	assert_int_equal(in(d, 0x3FD, 4, 0), 0xff00b060);	/* LSR MSR SCR -- */
	assert_int_equal(vdev_io(d, 0x21, 3, true, &v, 0), -EINVAL);
	assert_int_equal(d->stats.resets + d->stats.poweroffs, 0);
	vdev_destroy(d);
	vdev_destroy(NULL);
}

static void test_ports_that_are_no_device(void **state)
{
	static const uint16_t none[] = {
		0x2F8, 0x2F9, 0x2FD, 0x2FF,	/* COM2 */
		0x3E8, 0x3ED, 0x2E8, 0x2ED,	/* COM3, COM4 */
		0x3F7, 0x400, 0x22, 0x44, 0x62, 0x65, 0x72, 0x81,
		0x503, 0x505, 0xCF8, 0xCFC, 0xF4, 0x1234, 0xFFFF,
	};
	struct vm_devices *d = make();
	uint32_t v;

	(void)state;
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		for (uint8_t size = 1; size <= 4; size *= 2) {
			v = 0;
			assert_int_equal(vdev_io(d, none[i], size, true, &v, 0), -ENOENT);
			v = 0x2000;
			assert_int_equal(vdev_io(d, none[i], size, false, &v, 0), -ENOENT);
		}
	}
	assert_int_equal(core.resets + core.poweroffs, 0);
	assert_int_equal(core.nout, 0);
	vdev_destroy(d);
}

static void test_reset_and_poweroff(void **state)
{
	struct vm_devices *d = make();

	(void)state;
	out(d, 0x64, 1, 0xAA, 0);		/* self test: ignored */
	out(d, 0x60, 1, 0xFE, 0);		/* data port: not a command */
	assert_int_equal(core.resets, 0);
	assert_int_equal(d->stats.kbd_ignored, 2);
	out(d, 0x64, 1, 0xFE, 0);		/* pulse reset */
	assert_int_equal(core.resets, 1);
	assert_int_equal(d->stats.resets, 1);

	/* The test guest's hostile ctl_junk: other values and widths. */
	out(d, 0x504, 1, 0x00, 0);
	out(d, 0x504, 1, 0x20, 0);
	out(d, 0x504, 2, 0x2001, 0);
	out(d, 0x504, 2, 0xffff, 0);
	out(d, 0x504, 4, 0x2000, 0);
	assert_int_equal(in(d, 0x504, 2, 0), 0xffff);
	assert_int_equal(in(d, 0x504, 1, 0), 0xff);
	assert_int_equal(in(d, 0x504, 4, 0), 0xffffffff);
	assert_int_equal(core.poweroffs, 0);
	assert_int_equal(d->stats.ctl_ignored, 8);
	out(d, 0x504, 2, 0x2000, 0);		/* tg_poweroff() */
	assert_int_equal(core.poweroffs, 1);
	assert_int_equal(d->stats.poweroffs, 1);
	/* No callbacks set: the requests are still counted, nothing breaks. */
	struct vdev_config bare = { .ram_below_4g = 1 << 20, .nr_cpus = 1, .tsc_hz = 1000000 };
	struct vm_devices *b;
	assert_int_equal(vdev_create(&bare, &b), 0);
	out(b, 0x64, 1, 0xFE, 0);
	out(b, 0x504, 2, 0x2000, 0);
	out(b, 0x3F8, 1, 'x', 0);
	assert_int_equal(b->stats.resets + b->stats.poweroffs, 2);
	vdev_destroy(b);
	vdev_destroy(d);
}

/* The guest's view of one timer interrupt: pending, INTA, handler, EOI. */
static int take_interrupt(struct vm_devices *d, uint64_t now)
{
	int v = vdev_pending_vector(d, 0, now);

	if (v < 0)
		return v;
	assert_int_equal(vdev_ack(d, 0, now), v);
	if (v == 0x24) {
		while (in(d, 0x3FD, 1, now) & 1)	/* tg_uart_irq */
			(void)in(d, 0x3F8, 1, now);
	}
	out(d, 0x20, 1, 0x20, now);		/* tg_pic_eoi */
	return v;
}

static void test_testguest_timer(void **state)
{
	struct vm_devices *d = make();
	uint64_t t0 = 2 * SEC, now = t0, next;
	int ticks = 0;

	(void)state;
	assert_true(vdev_next_event_ns(d, 0, 0) == UINT64_MAX);
	testguest_boot(d, t0);
	assert_int_equal(vdev_pending_vector(d, 0, t0 + 9 * MS), -1);
	/* A halted guest woken at each next event: 100 ticks a second. */
	while (now < t0 + SEC) {
		next = vdev_next_event_ns(d, 0, now);
		assert_true(next > now);
		assert_true(next - now <= 10 * MS + 1000);
		now = next;
		assert_int_equal(take_interrupt(d, now), 0x20);
		ticks++;
		assert_int_equal(take_interrupt(d, now), -1);
	}
	assert_int_equal(ticks, 100);
	/* The guest masked IRQ 0 for a while: one tick waits, the rest is
	 * coalesced. */
	out(d, 0x21, 1, 0xff, now);
	assert_int_equal(vdev_pending_vector(d, 0, now + SEC), -1);
	out(d, 0x21, 1, 0xfe, now + SEC);
	assert_int_equal(take_interrupt(d, now + SEC), 0x20);
	assert_int_equal(take_interrupt(d, now + SEC), -1);
	assert_int_equal(d->pit.stats.irq_edges, 101);
	assert_int_equal(d->pit.stats.irq_edges + d->pit.stats.coalesced,
			 (100 * 11932 + 1193182) / 11932);
	/* Halted with IRQ 0 masked: the wake-ups move on, never "due now". */
	out(d, 0x21, 1, 0xff, now + SEC);
	now += SEC;
	for (int i = 0; i < 50; i++) {
		next = vdev_next_event_ns(d, 0, now);
		assert_true(next > now && next - now <= 10 * MS + 1000);
		now = next;
		assert_int_equal(vdev_pending_vector(d, 0, now), -1);
	}
	vdev_destroy(d);
}

static void test_console(void **state)
{
	struct vm_devices *d = make();
	const char *msg = "TG echo ready\r\n";

	(void)state;
	testguest_boot(d, 0);
	for (const char *c = msg; *c; c++) {
		assert_true(in(d, 0x3FD, 1, 0) & 0x20);
		out(d, 0x3F8, 1, (uint8_t)*c, 0);
	}
	assert_int_equal(core.nout, strlen(msg));
	assert_memory_equal(core.out, msg, strlen(msg));
	/* tg_uart_enable_rx_irq(): IER RDA, unmask IRQ 4. */
	out(d, 0x3F9, 1, 0x01, 0);
	out(d, 0x21, 1, 0xee, 0);
	assert_int_equal(vdev_pending_vector(d, 0, 0), -1);
	assert_true(vdev_console_input(d, 'h'));
	assert_true(vdev_console_input(d, 'i'));
	assert_int_equal(take_interrupt(d, MS), 0x24);
	assert_int_equal(d->com1.rx_count, 0);
	assert_int_equal(take_interrupt(d, MS), -1);
	/* The FIFO full: the console is told to wait. */
	for (int i = 0; i < 16; i++)
		assert_true(vdev_console_input(d, 'a'));
	assert_false(vdev_console_input(d, 'b'));
	assert_int_equal(take_interrupt(d, 2 * MS), 0x24);
	assert_true(vdev_console_input(d, 'b'));
	vdev_destroy(d);
}

/* ---- the APIC bus ---------------------------------------------------- */

static void apic_w(struct vm_devices *d, unsigned int cpu, uint32_t reg, uint32_t v)
{
	assert_int_equal(vdev_mmio(d, cpu, 0xFEE00000u + reg, 4, true, &v, 0), 0);
}

static void rte(struct vm_devices *d, unsigned int pin, uint64_t e)
{
	uint32_t v;

	v = 0x10 + 2 * pin;
	assert_int_equal(vdev_mmio(d, 0, 0xFEC00000u, 4, true, &v, 0), 0);
	v = (uint32_t)e;
	assert_int_equal(vdev_mmio(d, 0, 0xFEC00010u, 4, true, &v, 0), 0);
	v = 0x11 + 2 * pin;
	assert_int_equal(vdev_mmio(d, 0, 0xFEC00000u, 4, true, &v, 0), 0);
	v = (uint32_t)(e >> 32);
	assert_int_equal(vdev_mmio(d, 0, 0xFEC00010u, 4, true, &v, 0), 0);
}

/* Take vCPU cpu's interrupt as a CPU does, then EOI it. */
static int take_apic(struct vm_devices *d, unsigned int cpu)
{
	int v = vdev_pending_vector(d, cpu, 0);

	if (v >= 0) {
		assert_int_equal(vdev_ack(d, cpu, 0), v);
		apic_w(d, cpu, 0xB0, 0);
	}
	return v;
}

/* Linux's way: 8259 masked, COM1 on I/O APIC pin 4 (MP table), level and
 * edge, EOI and remote IRR; an unclaimed address is not the bus's. */
static void test_apic_bus_ioapic_routing(void **state)
{
	struct vm_devices *d = make();
	uint32_t v = 0;

	(void)state;
	testguest_boot(d, 0);
	out(d, 0x21, 1, 0xff, 0);			/* 8259 off */
	assert_int_equal(vdev_mmio(d, 0, 0xFEB00000u, 4, false, &v, 0), -ENOENT);
	rte(d, 4, 0x41ull | 1ull << 56);		/* edge, physical dest vCPU 1 */
	out(d, 0x3F9, 1, 0x01, 0);			/* COM1: interrupt on data */
	vdev_take_kicks(d);
	assert_true(vdev_console_input(d, 'a'));
	assert_int_equal(vdev_take_kicks(d), 1u << 1);
	assert_int_equal(vdev_pending_vector(d, 0, 0), -1);
	assert_int_equal(take_apic(d, 1), 0x41);
	assert_int_equal(take_apic(d, 1), -1);		/* an edge: once */
	(void)in(d, 0x3F8, 1, 0);
	/* Level, to vCPU 0: delivered again after EOI while the line is up. */
	rte(d, 4, 0x42ull | 1ull << 15);
	assert_true(vdev_console_input(d, 'b'));
	assert_int_equal(take_apic(d, 0), 0x42);
	assert_int_equal(take_apic(d, 0), 0x42);	/* still unread */
	assert_true(d->ioapic.rte[4] & IOAPIC_RTE_REMOTE_IRR);
	(void)in(d, 0x3F8, 1, 0);			/* the line drops ... */
	assert_int_equal(take_apic(d, 0), 0x42);	/* ... after the third delivery */
	assert_int_equal(vdev_ack(d, 0, 0), -1);
	assert_false(d->ioapic.rte[4] & IOAPIC_RTE_REMOTE_IRR);
	/* The PIT's IRQ 0 is pin 2. */
	rte(d, 2, 0x30);
	assert_int_equal(vdev_pending_vector(d, 0, 20 * MS), 0x30);
	vdev_destroy(d);
}

/* A PCI function's MSI: to the local APIC its address names, edge; an
 * address outside 0xFEExxxxx, a mode a device may not send, or a vector
 * below 16 is dropped and counted; none to an absent APIC is lost. */
static void test_apic_bus_msi(void **state)
{
	struct vm_devices *d = make();

	(void)state;
	testguest_boot(d, 0);
	apicbus_msi(d, 0xFEE01000u, 0x51);		/* physical, APIC 1, fixed */
	assert_int_equal(vdev_pending_vector(d, 0, 0), -1);
	assert_int_equal(take_apic(d, 1), 0x51);
	assert_int_equal(take_apic(d, 1), -1);		/* an edge: once */
	apicbus_msi(d, 0xFEE00000u, 0x8052);		/* trigger bit set: still an edge */
	assert_int_equal(take_apic(d, 0), 0x52);
	assert_int_equal(take_apic(d, 0), -1);
	assert_int_equal(d->stats.msis, 2);
	apicbus_msi(d, 0xFED00000u, 0x51);		/* not the APICs' page */
	apicbus_msi(d, 0xFEE00000u, 0x0551);		/* INIT */
	apicbus_msi(d, 0xFEE00000u, 0x07);		/* vector 7 */
	assert_int_equal(d->stats.msis_bad, 3);
	apicbus_msi(d, 0xFEE05000u, 0x51);		/* APIC 5: none */
	assert_int_equal(d->stats.msis_lost, 1);
	assert_int_equal(take_apic(d, 0), -1);
	assert_int_equal(take_apic(d, 1), -1);
	vdev_destroy(d);
}

/* The wall clock kvmclock publishes: the RTC's time plus the guest clock
 * since; past what 64-bit nanoseconds hold (the RTC goes to 9999) it stays
 * at the end instead of wrapping. */
static void test_time_of_day(void **state)
{
	struct vm_devices *d = make();

	(void)state;
	d->rtc.base_s = 1700000000ull;
	d->rtc.base_ns = 5000;
	assert_true(vdev_time_of_day_ns(d, 7000) == 1700000000ull * 1000000000ull + 2000);
	d->rtc.base_s = 253402300799ull;		/* 9999-12-31 23:59:59 */
	assert_true(vdev_time_of_day_ns(d, 7000) == UINT64_MAX);
	d->rtc.base_s = UINT64_MAX / 1000000000ull;
	assert_true(vdev_time_of_day_ns(d, UINT64_MAX) == UINT64_MAX);
	vdev_destroy(d);
}

/* IPIs by the ICR (xAPIC page and x2APIC MSR), NMI as an event,
 * lowest priority by TPR, and the kvmclock MSRs' checks. */
static void test_apic_bus_ipis(void **state)
{
	struct vm_devices *d = make();
	enum lapic_event ev;
	uint8_t vec = 0;
	uint64_t base = 0;

	(void)state;
	d->wait_sipi[1] = false;			/* as if started */
	vdev_take_kicks(d);
	apic_w(d, 0, 0x310, 1u << 24);
	apic_w(d, 0, 0x300, 0x4050);			/* fixed 0x50 to APIC 1 */
	assert_int_equal(vdev_take_kicks(d), 1u << 1);
	assert_int_equal(take_apic(d, 1), 0x50);
	apic_w(d, 0, 0x300, 0x4400 | 3u << 18);	/* NMI to all but self */
	assert_true(vdev_event_pending(d, 1));
	assert_false(vdev_event_pending(d, 0));
	assert_int_equal(vdev_take_event(d, 1, &vec, false), LAPIC_EV_NMI);
	/* Lowest priority among both (flat logical ids 1 and 2). */
	apic_w(d, 0, 0xD0, 1u << 24);
	apic_w(d, 1, 0xD0, 2u << 24);
	apic_w(d, 0, 0x80, 0x20);			/* vCPU 0 busier */
	rte(d, 9, 0x60ull | 1ull << 8 | 1ull << 11 | 3ull << 56);
	d->kick = 0;
	assert_int_equal(ioapic_set_irq(&d->ioapic, 9, 1), 0);
	assert_int_equal(vdev_take_kicks(d), 1u << 1);
	assert_int_equal(take_apic(d, 1), 0x60);
	ioapic_set_irq(&d->ioapic, 9, 0);
	apic_w(d, 1, 0x80, 0x40);			/* now vCPU 1 is busier */
	ioapic_set_irq(&d->ioapic, 9, 1);
	assert_int_equal(take_apic(d, 0), 0x60);
	/* vCPU 0 busier again, but vCPU 1 cannot take a fixed interrupt:
	 * software-disabled, then waiting for a SIPI (PPR 0 both times) */
	apic_w(d, 1, 0x80, 0);
	apic_w(d, 0, 0x80, 0x20);
	apic_w(d, 1, 0xF0, 0xFF);			/* SVR: disabled */
	ioapic_set_irq(&d->ioapic, 9, 0);
	ioapic_set_irq(&d->ioapic, 9, 1);
	assert_int_equal(take_apic(d, 0), 0x60);
	apic_w(d, 1, 0xF0, 0x1FF);
	d->wait_sipi[1] = true;
	ioapic_set_irq(&d->ioapic, 9, 0);
	ioapic_set_irq(&d->ioapic, 9, 1);
	assert_int_equal(take_apic(d, 0), 0x60);
	assert_int_equal(take_apic(d, 1), -1);
	d->wait_sipi[1] = false;
	apic_w(d, 0, 0x80, 0);
	/* x2APIC: enable by APIC_BASE, an ICR write is one MSR. */
	assert_int_equal(vdev_rdmsr(d, 1, MSR_IA32_APIC_BASE, &base, 0), 0);
	assert_int_equal(vdev_wrmsr(d, 1, MSR_IA32_APIC_BASE, base | APIC_BASE_EXTD, 0, 0), 0);
	assert_int_equal(vdev_wrmsr(d, 1, 0x830, 0x71, 0, 0), 0);	/* to APIC 0 */
	assert_int_equal(take_apic(d, 0), 0x71);
	assert_int_equal(vdev_wrmsr(d, 1, 0x8FF, 0, 0, 0), LAPIC_GP);
	/* ExtINT by I/O APIC pin 0: the 8259's vector, only when it can go in. */
	testguest_boot(d, 0);
	out(d, 0x21, 1, 0xfe, 0);
	rte(d, 0, 7ull << 8);
	assert_int_equal(ioapic_set_irq(&d->ioapic, 0, 1), 0);
	ev = vdev_take_event(d, 0, &vec, false);
	assert_int_equal(ev, LAPIC_EV_NONE);
	assert_true(vdev_event_pending(d, 0));
	assert_int_equal(vdev_take_event(d, 0, &vec, true), LAPIC_EV_EXTINT);
	/* kvmclock: misaligned or out-of-range addresses are refused; one
	 * whose structure crosses a page is not (KVM asks 4-byte alignment
	 * only, and Linux's WRMSR of it is unchecked) */
	assert_int_equal(vdev_wrmsr(d, 0, MSR_KVM_SYSTEM_TIME_NEW, 0x1002 | 1, 0, 0), LAPIC_GP);
	assert_int_equal(vdev_wrmsr(d, 0, MSR_KVM_SYSTEM_TIME_NEW, 0x1FF0 | 1, 0, 0),
			 VDEV_MSR_PVCLOCK);
	assert_int_equal(vdev_wrmsr(d, 0, MSR_KVM_WALL_CLOCK_NEW, 0x1FF8, 0, 0), VDEV_MSR_PVCLOCK);
	assert_int_equal(vdev_wrmsr(d, 0, MSR_KVM_WALL_CLOCK_NEW, 0x1FFA, 0, 0), LAPIC_GP);
	assert_int_equal(vdev_wrmsr(d, 0, MSR_KVM_WALL_CLOCK_NEW, 1ull << 40, 0, 0), LAPIC_GP);
	assert_int_equal(vdev_wrmsr(d, 0, MSR_KVM_SYSTEM_TIME_NEW, 1ull << 40 | 1, 0, 0),
			 LAPIC_GP);
	assert_int_equal(vdev_wrmsr(d, 0, MSR_KVM_SYSTEM_TIME_NEW, 0x1FE0 | 1, 0, 0),
			 VDEV_MSR_PVCLOCK);
	assert_int_equal(vdev_wrmsr(d, 7, MSR_KVM_SYSTEM_TIME_NEW, 0, 0, 0), -EINVAL);
	vdev_destroy(d);
}

/* KVM's PV EOI: the MSR's checks; the flag's address only while the
 * highest vector in service is an edge and nothing waits in IRR; the guest
 * clearing the flag ends it as an EOI would; the MSR travels in the
 * snapshot and a reset turns it off. */
static void test_pv_eoi(void **state)
{
	struct vm_devices *d = make();
	uint64_t v = 0;
	uint8_t buf[8192];
	struct snap s;
	bool busy = true;

	(void)state;
	testguest_boot(d, 0);
	out(d, 0x21, 1, 0xff, 0);			/* 8259 off */
	assert_int_equal(vdev_wrmsr(d, 0, MSR_KVM_PV_EOI_EN, 0x2002 | 1, 0, 0), LAPIC_GP);
	assert_int_equal(vdev_wrmsr(d, 0, MSR_KVM_PV_EOI_EN, 1ull << 40 | 1, 0, 0), LAPIC_GP);
	apicbus_msi(d, 0xFEE00000u, 0x51);
	assert_int_equal(vdev_ack(d, 0, 0), 0x51);
	assert_int_equal(vdev_pv_eoi_gpa(d, 0, &busy), 0);	/* off */
	assert_true(busy);
	assert_int_equal(vdev_wrmsr(d, 0, MSR_KVM_PV_EOI_EN, 0x2004 | 1, 0, 0), 0);
	assert_int_equal(vdev_rdmsr(d, 0, MSR_KVM_PV_EOI_EN, &v, 0), 0);
	assert_int_equal(v, 0x2005);
	/* an edge in service, nothing waiting: the flag may end it, as long
	 * as it is in service, and ending it lets the next one in */
	assert_int_equal(vdev_pv_eoi_gpa(d, 0, &busy), 0x2004);
	assert_int_equal(vdev_pv_eoi_gpa(d, 0, &busy), 0x2004);
	apicbus_msi(d, 0xFEE00000u, 0x41);		/* lower class: waits in IRR */
	assert_int_equal(vdev_pending_vector(d, 0, 0), -1);
	assert_int_equal(vdev_pv_eoi_gpa(d, 0, &busy), 0);	/* its EOI needs an exit */
	assert_true(busy);
	vdev_pv_eoi_done(d, 0);
	assert_int_equal(vdev_pending_vector(d, 0, 0), 0x41);
	assert_int_equal(vdev_ack(d, 0, 0), 0x41);
	/* nested: the highest in service is the one its EOI ends */
	apicbus_msi(d, 0xFEE00000u, 0x61);
	assert_int_equal(vdev_ack(d, 0, 0), 0x61);
	assert_int_equal(vdev_pv_eoi_gpa(d, 0, &busy), 0x2004);
	vdev_pv_eoi_done(d, 0);
	assert_int_equal(d->lapic[0].isr[0x41 / 32], 1u << (0x41 % 32));	/* 0x41 still */
	vdev_pv_eoi_done(d, 0);
	assert_int_equal(vdev_pv_eoi_gpa(d, 0, &busy), 0);
	assert_false(busy);				/* nothing in service */
	/* level-triggered (I/O APIC pin 4): its EOI must reach the I/O APIC */
	rte(d, 4, 0x42ull | 1ull << 15);
	out(d, 0x3F9, 1, 0x01, 0);
	assert_true(vdev_console_input(d, 'b'));
	assert_int_equal(vdev_ack(d, 0, 0), 0x42);
	assert_int_equal(vdev_pv_eoi_gpa(d, 0, &busy), 0);
	assert_true(busy);
	(void)in(d, 0x3F8, 1, 0);
	apic_w(d, 0, 0xB0, 0);
	assert_false(d->ioapic.rte[4] & IOAPIC_RTE_REMOTE_IRR);
	/* saved and restored with the rest; a reset turns it off */
	snap_save_init(&s, buf, sizeof(buf));
	assert_int_equal(vdev_snapshot(d, &s, 0), 0);
	d->kvm_pv_eoi[0] = 0;
	snap_restore_init(&s, buf, s.pos);
	assert_int_equal(vdev_snapshot(d, &s, 0), 0);
	assert_int_equal(d->kvm_pv_eoi[0], 0x2005);
	vdev_reset(d);
	assert_int_equal(d->kvm_pv_eoi[0], 0);
	vdev_destroy(d);
}

/* A peer's device state is held to what the guest itself could have set:
 * the kvmclock and PV EOI addresses within its MAXPHYADDR, one TSC rate
 * for every APIC; a refused restore changes nothing.  An accepted one
 * delivers what a level pin calls for (asserted, unmasked, no remote IRR),
 * which nothing else would. */
static void test_snapshot_checks_and_resample(void **state)
{
	static uint8_t buf[16384];
	struct vm_devices *d = make(), *e = make();
	struct snap s;

	(void)state;
	for (int k = 0; k < 3; k++) {
		struct vm_devices *t = make();

		if (k == 0)
			t->kvm_system_time[0] = 1ull << 40 | 1;	/* past 36 bits */
		if (k == 1)
			t->kvm_wall_clock = 0x1ffe;		/* misaligned */
		if (k == 2)
			t->lapic[1].cfg.tsc_hz = t->lapic[0].cfg.tsc_hz + 1000;
		snap_save_init(&s, buf, sizeof(buf));
		assert_int_equal(vdev_snapshot(t, &s, 0), 0);
		snap_restore_init(&s, buf, s.pos);
		assert_int_equal(vdev_snapshot(e, &s, 0), -EINVAL);
		assert_int_equal(e->kvm_wall_clock, 0);
		vdev_destroy(t);
	}
	testguest_boot(d, 0);
	out(d, 0x21, 1, 0xff, 0);			/* 8259 off */
	rte(d, 4, 0x42ull | 1ull << 15 | IOAPIC_RTE_MASKED);	/* level, to APIC 0 */
	out(d, 0x3F9, 1, 0x01, 0);			/* COM1 asserts pin 4 ... */
	assert_true(vdev_console_input(d, 'b'));
	assert_true(d->ioapic.lines & 1u << 4);
	d->ioapic.rte[4] &= ~IOAPIC_RTE_MASKED;		/* ... unmasked, not served */
	snap_save_init(&s, buf, sizeof(buf));
	assert_int_equal(vdev_snapshot(d, &s, 0), 0);
	snap_restore_init(&s, buf, s.pos);
	assert_int_equal(vdev_snapshot(e, &s, 0), 0);
	assert_true(e->ioapic.rte[4] & IOAPIC_RTE_REMOTE_IRR);
	assert_int_equal(vdev_pending_vector(e, 0, 0), 0x42);
	vdev_destroy(d);
	vdev_destroy(e);
}

/* The RTC's IRQ 8 as Linux's rtc-cmos uses it: an update interrupt each
 * second through I/O APIC pin 8 (edge), time to it told by
 * vdev_next_event_ns, high until register C is read; a snapshot carries a
 * raised line and refuses one that disagrees with the RTC; a reset clears
 * the enables. */
static void test_rtc_irq8(void **state)
{
	static uint8_t buf[16384];
	struct vm_devices *d = make(), *e = make(), *t = make();
	struct snap s;
	uint64_t next;

	(void)state;
	rte(d, 8, 0x38);				/* edge, to APIC 0; no PIT */
	out(d, 0x70, 1, 0x0C, SEC / 4);
	(void)in(d, 0x71, 1, SEC / 4);
	out(d, 0x70, 1, 0x0B, SEC / 4);
	out(d, 0x71, 1, 0x12, SEC / 4);			/* UIE, 24 h BCD */
	next = vdev_next_event_ns(d, 0, SEC / 4);
	assert_true(next == SEC);
	assert_int_equal(vdev_pending_vector(d, 0, SEC - 1), -1);
	assert_int_equal(vdev_pending_vector(d, 0, SEC), 0x38);
	assert_int_equal(vdev_ack(d, 0, SEC), 0x38);
	assert_true(d->ioapic.lines & 1u << 8);
	assert_true(d->pic.lines & 1u << 8);
	assert_true(vdev_next_event_ns(d, 1, SEC) > 1000 * SEC);	/* no PIT, line high */
	/* saved with the line up: it arrives up, and C still to be read */
	snap_save_init(&s, buf, sizeof(buf));
	assert_int_equal(vdev_snapshot(d, &s, SEC), 0);
	snap_restore_init(&s, buf, s.pos);
	assert_int_equal(vdev_snapshot(e, &s, 5 * SEC), 0);
	assert_true(e->ioapic.lines & 1u << 8);
	out(e, 0x70, 1, 0x0C, 5 * SEC);
	assert_int_equal(in(e, 0x71, 1, 5 * SEC) & 0xB0, 0x90);	/* PF runs too */
	assert_false(e->ioapic.lines & 1u << 8);
	assert_false(e->pic.lines & 1u << 8);
	assert_true(vdev_next_event_ns(e, 0, 5 * SEC) == 6 * SEC);
	/* a stream whose RTC says IRQF while its controllers saw no line */
	t->rtc.ram[0x0B] |= 0x10;
	t->rtc.ram[0x0C] = 0x10;
	t->rtc.irq_level = true;
	snap_save_init(&s, buf, sizeof(buf));
	assert_int_equal(vdev_snapshot(t, &s, 0), 0);
	snap_restore_init(&s, buf, s.pos);
	assert_int_equal(vdev_snapshot(e, &s, 5 * SEC), -EINVAL);
	/* a reboot: the enables go, the line with the controllers */
	vdev_reset(d);
	assert_int_equal(d->rtc.ram[0x0B] & 0x70, 0);
	assert_false(d->rtc.irq_level);
	assert_int_equal(d->pic.lines, 0);
	vdev_destroy(d);
	vdev_destroy(e);
	vdev_destroy(t);
}

/* A guest made at 3 GHz arrives on a host whose own rate is 200 MHz: its
 * APICs keep 3 GHz, and so does its next reset (a reboot there). */
static void test_restored_tsc_rate_survives_a_reset(void **state)
{
	static uint8_t buf[16384];
	struct vm_devices *d = make(), *e = make();
	struct snap s;

	(void)state;
	e->cfg.tsc_hz = 200000000;			/* as vdev_create made it there */
	for (unsigned int c = 0; c < e->cfg.nr_cpus; c++)
		e->lapic[c].cfg.tsc_hz = 200000000;
	snap_save_init(&s, buf, sizeof(buf));
	assert_int_equal(vdev_snapshot(d, &s, 0), 0);
	snap_restore_init(&s, buf, s.pos);
	assert_int_equal(vdev_snapshot(e, &s, 0), 0);
	assert_true(e->lapic[1].cfg.tsc_hz == 3000000000ull);
	vdev_reset(e);
	assert_true(e->lapic[0].cfg.tsc_hz == 3000000000ull);
	assert_true(e->lapic[1].cfg.tsc_hz == 3000000000ull);
	vdev_destroy(d);
	vdev_destroy(e);
}

/* A flood of the same fixed IPI: accepted once into IRR, the rest merge
 * with it and kick nobody until the target has taken the vector. */
static void test_ipi_flood_merges(void **state)
{
	struct vm_devices *d = make();

	(void)state;
	d->wait_sipi[1] = false;			/* as if started */
	vdev_take_kicks(d);
	apic_w(d, 0, 0x310, 1u << 24);
	for (int i = 0; i < 10000; i++) {
		apic_w(d, 0, 0x300, 0x4050);
		assert_int_equal(vdev_take_kicks(d), i == 0 ? 1u << 1 : 0);
	}
	assert_int_equal(d->stats.ipis_merged, 9999);
	assert_int_equal(take_apic(d, 1), 0x50);
	assert_int_equal(take_apic(d, 1), -1);
	apic_w(d, 0, 0x300, 0x4050);			/* taken: a new request */
	assert_int_equal(vdev_take_kicks(d), 1u << 1);
	apic_w(d, 0, 0x300, 0xC050);			/* level now: TMR changes */
	assert_int_equal(vdev_take_kicks(d), 1u << 1);
	/* NMI and INIT storms: one event each, one kick each. */
	for (int i = 0; i < 1000; i++)
		apic_w(d, 0, 0x300, 0x4400);
	assert_int_equal(vdev_take_kicks(d), 1u << 1);
	for (int i = 0; i < 1000; i++)
		apic_w(d, 0, 0x300, 0x4500);
	assert_int_equal(vdev_take_kicks(d), 1u << 1);
	assert_int_equal(d->stats.ipis_merged, 9999 + 999 + 999);
	vdev_destroy(d);
}

/* IPIs to nobody: absent physical ids, logical masks that match no APIC,
 * reserved modes and shorthands, x2APIC ids beyond the guest: no kick,
 * no state anywhere, and the lost ones counted. */
static void test_ipis_to_absent_apics(void **state)
{
	struct vm_devices *d = make();
	uint64_t base = 0;
	uint64_t lost;

	(void)state;
	vdev_take_kicks(d);
	for (uint32_t id = 2; id < 0xFF; id++) {
		apic_w(d, 0, 0x310, id << 24);
		apic_w(d, 0, 0x300, 0x4050);		/* fixed */
		apic_w(d, 0, 0x300, 0x4400);		/* NMI */
		apic_w(d, 0, 0x300, 0x4500);		/* INIT */
		apic_w(d, 0, 0x300, 0x4612);		/* SIPI */
	}
	assert_int_equal(d->stats.ipis_lost, 4 * (0xFF - 2));
	apic_w(d, 0, 0x310, 0xF0u << 24);		/* logical: LDRs are 0 */
	apic_w(d, 0, 0x300, 0x4850);
	apic_w(d, 0, 0x300, 0x4350);			/* reserved mode 3 */
	apic_w(d, 0, 0x300, 0x4750);			/* reserved mode 7 */
	apic_w(d, 0, 0x300, 0x4400 | 1u << 18);		/* NMI by shorthand self */
	assert_int_equal(vdev_take_kicks(d), 0);
	for (unsigned int c = 0; c < 2; c++) {
		assert_int_equal(d->lapic[c].events, 0);
		assert_int_equal(vdev_pending_vector(d, c, 0), -1);
	}
	assert_int_equal(vdev_rdmsr(d, 0, MSR_IA32_APIC_BASE, &base, 0), 0);
	assert_int_equal(vdev_wrmsr(d, 0, MSR_IA32_APIC_BASE, base | APIC_BASE_EXTD, 0, 0), 0);
	lost = d->stats.ipis_lost;
	assert_int_equal(vdev_wrmsr(d, 0, 0x830, 0xFEull << 32 | 0x4050, 0, 0), 0);
	assert_int_equal(vdev_wrmsr(d, 0, 0x830, 0x12345678ull << 32 | 0x4400, 0, 0), 0);
	assert_int_equal(vdev_wrmsr(d, 0, 0x830, 0xFFFFFFFEull << 32 | 0x4500, 0, 0), 0);
	assert_int_equal(vdev_take_kicks(d), 0);
	assert_int_equal(d->stats.ipis_lost, lost + 3);
	/* 0xFF is no broadcast in x2APIC form, 0xFFFFFFFF is (vCPU 1 is xAPIC) */
	assert_int_equal(vdev_wrmsr(d, 0, 0x830, 0xFFull << 32 | 0x4050, 0, 0), 0);
	assert_int_equal(vdev_take_kicks(d), 0);
	assert_int_equal(vdev_wrmsr(d, 0, 0x830, 0xFFFFFFFFull << 32 | 0x4050, 0, 0), 0);
	assert_int_equal(vdev_take_kicks(d), 3);
	vdev_destroy(d);
}

/* INIT and SIPI storms to a vCPU: each INIT puts it back in wait-for-SIPI,
 * only the latest SIPI counts, SIPIs while it runs are ignored, and the
 * sender (all-excluding-self) is never touched. */
static void test_init_sipi_storm(void **state)
{
	struct vm_devices *d = make();
	uint8_t vec = 0;

	(void)state;
	for (int i = 0; i < 100; i++) {
		apic_w(d, 0, 0x300, 0x4500 | 3u << 18);		/* INIT, all but self */
		apic_w(d, 0, 0x300, 0x4600 | 3u << 18 | (i & 0xFF));	/* SIPI */
	}
	assert_false(vdev_event_pending(d, 0));
	assert_int_equal(vdev_take_event(d, 1, &vec, false), LAPIC_EV_INIT);
	assert_true(vdev_wait_sipi(d, 1));
	assert_int_equal(vdev_take_event(d, 1, &vec, false), LAPIC_EV_SIPI);
	assert_int_equal(vec, 99);
	assert_false(vdev_wait_sipi(d, 1));
	vdev_take_kicks(d);
	for (int i = 0; i < 100; i++)
		apic_w(d, 0, 0x300, 0x4600 | 3u << 18 | 0x20);	/* SIPIs while it runs */
	assert_false(vdev_event_pending(d, 1));		/* ignored: no wake-up */
	assert_int_equal(vdev_take_kicks(d), 0);
	assert_int_equal(d->stats.sipis_ignored, 100);
	assert_int_equal(vdev_take_event(d, 1, &vec, false), LAPIC_EV_NONE);
	/* Parked again: NMIs neither wake it nor stay pending; an NMI that
	 * was pending with the INIT goes too; the SIPI still starts it. */
	apic_w(d, 0, 0x300, 0x4400 | 3u << 18);
	apic_w(d, 0, 0x300, 0x4500 | 3u << 18);
	assert_int_equal(vdev_take_event(d, 1, &vec, false), LAPIC_EV_INIT);
	vdev_take_kicks(d);
	for (int i = 0; i < 100; i++)
		apic_w(d, 0, 0x300, 0x4400 | 3u << 18);
	assert_int_equal(vdev_take_kicks(d), 0);
	assert_int_equal(d->stats.blocked_in_wait_sipi, 100);
	assert_int_equal(vdev_take_event(d, 1, &vec, false), LAPIC_EV_NONE);
	assert_int_equal(d->stats.blocked_in_wait_sipi, 101);
	assert_false(vdev_event_pending(d, 1));
	apic_w(d, 0, 0x300, 0x4600 | 3u << 18 | 0x42);
	assert_int_equal(vdev_take_kicks(d), 1u << 1);
	assert_int_equal(vdev_take_event(d, 1, &vec, false), LAPIC_EV_SIPI);
	assert_int_equal(vec, 0x42);
	vdev_destroy(d);
}

/* INIT turns off the target's kvmclock and PV EOI MSRs, as KVM's reset on
 * INIT does; the wall clock, the VM's, and the sender's MSRs stay. */
static void test_init_clears_pv_msrs(void **state)
{
	struct vm_devices *d = make();
	uint64_t v = 1;
	uint8_t vec;

	(void)state;
	for (unsigned int cpu = 0; cpu < 2; cpu++) {
		assert_int_equal(vdev_wrmsr(d, cpu, MSR_KVM_SYSTEM_TIME_NEW, 0x3000 + 64 * cpu + 1,
					    0, 0), VDEV_MSR_PVCLOCK);
		assert_int_equal(vdev_wrmsr(d, cpu, MSR_KVM_PV_EOI_EN, 0x4001 + 4 * cpu, 0, 0), 0);
	}
	assert_int_equal(vdev_wrmsr(d, 0, MSR_KVM_WALL_CLOCK_NEW, 0x5000, 0, 0),
			 VDEV_MSR_PVCLOCK);
	apic_w(d, 0, 0x310, 1u << 24);
	apic_w(d, 0, 0x300, 0x4500);			/* INIT to APIC 1 */
	assert_int_equal(vdev_take_event(d, 1, &vec, false), LAPIC_EV_INIT);
	assert_int_equal(vdev_rdmsr(d, 1, MSR_KVM_SYSTEM_TIME_NEW, &v, 0), 0);
	assert_int_equal(v, 0);
	assert_int_equal(vdev_rdmsr(d, 1, MSR_KVM_PV_EOI_EN, &v, 0), 0);
	assert_int_equal(v, 0);
	assert_int_equal(d->kvm_system_time[0], 0x3001);
	assert_int_equal(d->kvm_pv_eoi[0], 0x4001);
	assert_int_equal(d->kvm_wall_clock, 0x5000);
	vdev_destroy(d);
}

static void eoi(struct vm_devices *d, unsigned int cpu)
{
	if (lapic_x2apic(&d->lapic[cpu]))
		assert_int_equal(vdev_wrmsr(d, cpu, 0x80B, 0, 0, 0), 0);
	else
		apic_w(d, cpu, 0xB0, 0);
}

/* Random ICR and SELF IPI writes from either vCPU, in both forms: the
 * kicks name only vCPUs that exist and every APIC stays valid. */
static void test_icr_fuzz(void **state)
{
	struct vm_devices *d = make();
	uint64_t base = 0, val;
	uint32_t v;
	uint8_t vec;
	int rc;

	(void)state;
	srand(20261204);
	assert_int_equal(vdev_rdmsr(d, 1, MSR_IA32_APIC_BASE, &base, 0), 0);
	assert_int_equal(vdev_wrmsr(d, 1, MSR_IA32_APIC_BASE, base | APIC_BASE_EXTD, 0, 0), 0);
	apic_w(d, 0, 0xF0, 0x1FF);
	assert_int_equal(vdev_wrmsr(d, 1, 0x80F, 0x1FF, 0, 0), 0);
	for (int i = 0; i < 200000; i++) {
		val = (uint64_t)rand() << 33 ^ (uint64_t)rand() << 11 ^ (uint64_t)rand();
		if (i & 1) {
			rc = vdev_wrmsr(d, 1, i & 2 ? 0x830 : 0x83F, val & (i & 4 ? ~0ull : 0xCCFFF),
					0, 0);
			assert_true(rc == 0 || rc == LAPIC_GP);
		} else {
			v = (uint32_t)(val >> 32);
			assert_int_equal(vdev_mmio(d, 0, 0xFEE00310u, 4, true, &v, 0), 0);
			v = (uint32_t)val;
			assert_int_equal(vdev_mmio(d, 0, 0xFEE00300u, 4, true, &v, 0), 0);
		}
		assert_int_equal(vdev_take_kicks(d) & ~3ull, 0);
		for (unsigned int c = 0; c < 2; c++) {
			assert_true(lapic_valid(&d->lapic[c]));
			if (rand() % 4 == 0 && vdev_ack(d, c, 0) >= 0)
				eoi(d, c);
			if (rand() % 4 == 0)
				(void)vdev_take_event(d, c, &vec, true);
		}
	}
	vdev_destroy(d);
}

/* Random traffic on every port that matters and a few that do not, with
 * console input, interrupts and time: everything stays valid. */
static void test_fuzz(void **state)
{
	static const uint16_t ports[] = {
		0x20, 0x21, 0xA0, 0xA1, 0x4D0, 0x4D1, 0x40, 0x41, 0x42, 0x43, 0x61,
		0x3F8, 0x3F9, 0x3FA, 0x3FB, 0x3FC, 0x3FD, 0x3FE, 0x3FF, 0x70, 0x71,
		0x60, 0x64, 0x80, 0x504, 0x2F8, 0x3E8, 0x1234,
	};
	struct vm_devices *d = make();
	uint64_t now = 0, ev;
	uint32_t v;
	int rc, vec;

	(void)state;
	srand(20240229);
	for (int i = 0; i < 300000; i++) {
		uint16_t port = ports[rand() % (int)(sizeof(ports) / sizeof(ports[0]))];
		int op = rand() % 16;

		now += (uint64_t)(rand() % 50) * 1000;
		v = (uint32_t)rand();
		if (op < 12) {
			rc = vdev_io(d, port, (uint8_t)(1u << (rand() % 3)), op & 1, &v, now);
			assert_true(rc == 0 || rc == -ENOENT);
		} else if (op == 12) {
			(void)vdev_console_input(d, (uint8_t)v);
		} else if ((vec = vdev_pending_vector(d, 0, now)) >= 0) {
			assert_int_equal(vdev_ack(d, 0, now), vec);
		}
		assert_true(all_valid(d));
		ev = vdev_next_event_ns(d, 0, now);
		assert_true(ev == UINT64_MAX || ev > now);
	}
	assert_int_equal(core.resets, (int)d->stats.resets);
	assert_int_equal(core.poweroffs, (int)d->stats.poweroffs);
	vdev_destroy(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dispatch),
		cmocka_unit_test(test_ports_that_are_no_device),
		cmocka_unit_test(test_reset_and_poweroff),
		cmocka_unit_test(test_testguest_timer),
		cmocka_unit_test(test_console),
		cmocka_unit_test(test_apic_bus_ioapic_routing),
		cmocka_unit_test(test_apic_bus_msi),
		cmocka_unit_test(test_apic_bus_ipis),
		cmocka_unit_test(test_time_of_day),
		cmocka_unit_test(test_snapshot_checks_and_resample),
		cmocka_unit_test(test_rtc_irq8),
		cmocka_unit_test(test_restored_tsc_rate_survives_a_reset),
		cmocka_unit_test(test_pv_eoi),
		cmocka_unit_test(test_ipi_flood_merges),
		cmocka_unit_test(test_ipis_to_absent_apics),
		cmocka_unit_test(test_init_sipi_storm),
		cmocka_unit_test(test_init_clears_pv_msrs),
		cmocka_unit_test(test_icr_fuzz),
		cmocka_unit_test(test_fuzz),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
