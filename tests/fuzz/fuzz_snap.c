/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target: restoring a device set from a migration peer's blob
 * (vdev_snapshot in restore mode: hv/vdev/devices.c, snap.c and every
 * device's X_snapshot), then driving the restored devices as a guest.
 *
 * Input: byte 0 = configuration (bits 0-1: vCPUs - 1, bit 2: virtio-net
 * NIC, bit 3: pvpanic, bits 4-5: the guest clock at the restore: 9000 s,
 * 0, 1 ms or 2^62 ns), then the peer's blob.  The bytes the restore did
 * not consume (s.pos onwards) are then read as guest operations
 * (port I/O, MMIO, MSRs, interrupt acknowledgement, time passing).
 *
 * Invariants (abort on violation):
 *   - a refused restore returns -EINVAL and leaves the device set
 *     byte-for-byte as it was (compared through a save);
 *   - an accepted one leaves every device *_valid() and the interrupt
 *     lines as the devices drive them (wiring_ok); saving it again
 *     succeeds with the measured size; that save restores into a fresh
 *     device set of the same configuration, whose save is identical;
 *   - after the guest operations the state still saves and restores.
 *
 * FERRY_FUZZ_MKSEEDS=dir: write seed inputs (valid blobs) and exit.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hv/vdev/devices.h"
#include "hv/vdev/snap.h"
#include "hv/vdev/vnic.h"
#include "tests/fuzz/fuzz.h"


#define SEC 1000000000ull
#define T_SAVE (50 * SEC + 123457)
#define T_OTHER (9000 * SEC + 77)
#define RAM_SIZE (64 * 1024)
#define SNAPBUF (256 * 1024)

static uint8_t ram[RAM_SIZE];
static uint8_t bufa[SNAPBUF], bufb[SNAPBUF], bufc[SNAPBUF];

static int ram_read(void *ctx, uint64_t gpa, void *buf, size_t len)
{
	(void)ctx;
	if (gpa > RAM_SIZE || len > RAM_SIZE - gpa)
		return -EFAULT;
	memcpy(buf, ram + gpa, len);
	return 0;
}

static int ram_write(void *ctx, uint64_t gpa, const void *buf, size_t len)
{
	(void)ctx;
	if (gpa > RAM_SIZE || len > RAM_SIZE - gpa)
		return -EFAULT;
	memcpy(ram + gpa, buf, len);
	return 0;
}

static void noop_tx(void *ctx, uint8_t b) { (void)ctx; (void)b; }
static void noop_ev(void *ctx) { (void)ctx; }
static void noop_panic(void *ctx, uint8_t e) { (void)ctx; (void)e; }
static int nic_tx(void *ctx, const uint8_t *f, size_t len, const struct vnet_offload *off)
{
	(void)ctx; (void)off;
	if (len)
		CHECK(f != NULL);
	return 0;
}

static struct vm_devices *make(uint8_t conf)
{
	struct vdev_config cfg = {
		.ram_below_4g = 128ull << 20, .epoch_s = 1709214356, .now_ns = 0,
		.nr_cpus = (conf & 3) + 1, .tsc_hz = 2000000000ull,
		.tx = noop_tx, .reset = noop_ev, .poweroff = noop_ev,
		.nic_on = (conf >> 2) & 1, .nic_mac = { 0x52, 0x54, 0, 0x12, 0x34, 0x56 },
		.nic_mem = { NULL, ram_read, ram_write }, .nic_tx = nic_tx,
		.pvpanic_on = (conf >> 3) & 1, .panic = noop_panic,
	};
	struct vm_devices *d;

	CHECK(vdev_create(&cfg, &d) == 0);
	return d;
}

/* Save d at now into buf; returns the size. */
static size_t save(struct vm_devices *d, uint8_t *buf, uint64_t now)
{
	struct snap s;
	size_t need;

	snap_save_init(&s, NULL, 0);
	CHECK(vdev_snapshot(d, &s, now) == 0);
	need = s.pos;
	CHECK(need <= SNAPBUF);
	snap_save_init(&s, buf, SNAPBUF);
	CHECK(vdev_snapshot(d, &s, now) == 0);
	CHECK(s.pos == need);
	return need;
}

static const char *stage = "";

/* What no single device can check (devices.c's wiring_valid and the NIC's
 * pin check, which this found missing): a line is high exactly when a
 * device drives it.  Only
 * COM1 (IRQ 4), the RTC (IRQ 8, its IRQF) and the NIC's INTx (I/O APIC pin
 * VNIC_IRQ) hold a level;
 * the PIT only pulses; nothing else drives a line. */
static bool wiring_ok(const struct vm_devices *d, bool say)
{
	uint32_t rtc = d->rtc.irq_level ? 1u << VDEV_RTC_IRQ : 0;
	uint32_t pic_extra = (d->pic.lines & ~(1u << VDEV_COM1_IRQ)) ^ rtc;
	uint32_t io_extra = (d->ioapic.lines & ~(1u << VDEV_COM1_IRQ | 1u << VNIC_IRQ)) ^ rtc;
	bool drive = false, pin = d->ioapic.lines & (1u << VNIC_IRQ);

	if (d->pci)
		for (unsigned int i = 0; i < VPCI_SLOTS; i++) {
			const struct vpci_fn *fn = d->pci->bus.slot[i];
			if (fn && fn->intx &&
			    !(vpci_cfg_read(fn, PCI_COMMAND, 2) & PCI_CMD_INTX_DISABLE))
				drive = true;
		}
	if (say && (pic_extra || io_extra))
		fprintf(stderr, "undriven lines high: PIC %#x I/O APIC %#x (%s)\n",
			pic_extra, io_extra, stage);
	if (say && pin != drive)
		fprintf(stderr, "NIC INTx %d but I/O APIC pin %d is %d (%s)\n", drive, VNIC_IRQ,
			pin, stage);
	return !pic_extra && !io_extra && pin == drive;
}

static void check_valid(const struct vm_devices *d)
{
	CHECK(pic_valid(&d->pic));
	CHECK(pit_valid(&d->pit));
	CHECK(uart_valid(&d->com1));
	CHECK(rtc_valid(&d->rtc));
	CHECK(ioapic_valid(&d->ioapic));
	for (unsigned int c = 0; c < d->nr_cpus; c++)
		CHECK(lapic_valid(&d->lapic[c]));
	CHECK(wiring_ok(d, true));
}

/* A saved state must restore on a fresh peer and save identically. */
static void check_migrates(struct vm_devices *d, uint8_t conf, uint64_t now)
{
	size_t n = save(d, bufb, now), m;
	struct vm_devices *e = make(conf);
	struct snap s;
	int r;

	snap_restore_init(&s, bufb, n);
	r = vdev_snapshot(e, &s, now);
	if (r != 0)
		fprintf(stderr, "re-restore of a saved state failed: %d at %zu/%zu\n",
			r, s.pos, n);
	CHECK(r == 0);
	CHECK(s.pos == n);
	check_valid(e);
	m = save(e, bufc, now);
	CHECK(m == n);
	if (memcmp(bufb, bufc, n)) {
		for (size_t i = 0; i < n; i++)
			if (bufb[i] != bufc[i]) {
				fprintf(stderr, "save/restore/save differs at byte %zu\n", i);
				break;
			}
		CHECK(!"save after restore differs");
	}
	vdev_destroy(e);
}

struct ops { const uint8_t *p; size_t n; };
static uint8_t op8(struct ops *o) { uint8_t v = 0; if (o->n) { v = *o->p++; o->n--; } return v; }
static uint32_t op32(struct ops *o)
{
	uint32_t v = 0;
	for (int i = 0; i < 4; i++)
		v |= (uint32_t)op8(o) << (8 * i);
	return v;
}

static const uint16_t ports[] = {
	0x20, 0x21, 0xa0, 0xa1, 0x40, 0x41, 0x42, 0x43, 0x61, 0x70, 0x71,
	0x3f8, 0x3f9, 0x3fa, 0x3fb, 0x3fc, 0x3fd, 0x3fe, 0x3ff, 0x4d0, 0x4d1,
	0xcf8, 0xcfc, 0xcfd, 0xcfe, 0xcff, 0x60, 0x64, 0x80, 0x504,
};

static void guest_ops(struct vm_devices *d, struct ops *o, uint64_t *now)
{
	for (int k = 0; k < 64 && o->n; k++) {
		uint8_t op = op8(o), b = op8(o);
		unsigned int cpu = (b >> 4) % d->nr_cpus;
		uint8_t size = (uint8_t[]){ 1, 2, 4, 4 }[b & 3];
		bool wr = (b >> 2) & 1;
		uint32_t v;
		uint64_t v64;
		uint8_t vec;

		switch (op % 12) {
		case 0: case 1: {	/* port I/O */
			uint8_t sel = op8(o);
			uint16_t port = sel < 0xe0 ? ports[sel % (sizeof(ports) / sizeof(ports[0]))]
						   : (uint16_t)(0xc000 + (op8(o) | (sel & 7) << 8));
			v = op32(o);
			(void)vdev_io(d, port, size, !wr, &v, *now);
			break;
		}
		case 2: case 3: {	/* LAPIC / IOAPIC / PCI MMIO */
			uint16_t off = (uint16_t)(op8(o) << 4 | (op8(o) & 0xf));
			uint64_t base = (uint64_t[]){ 0xfee00000ull, 0xfec00000ull,
						      0xfe000000ull, 0xe0000000ull }[(b >> 3) & 3];
			v = op32(o);
			(void)vdev_mmio(d, cpu, base + (off & 0xfff), size, wr, &v, *now);
			break;
		}
		case 4:
			*now += (uint64_t)op32(o) * 1000;
			vdev_tick(d, *now);
			break;
		case 5:
			if (vdev_pending_vector(d, cpu, *now) >= 0)
				(void)vdev_ack(d, cpu, *now);
			break;
		case 6:
			(void)vdev_take_event(d, cpu, &vec, b & 1);
			(void)vdev_take_kicks(d);
			break;
		case 7: {
			static const uint32_t msrs[] = { 0x1b, 0x6e0, 0x802, 0x808, 0x80b,
				0x830, 0x832, 0x838, 0x4b564d00, 0x4b564d01, 0x4b564d04 };
			uint32_t msr = msrs[op8(o) % (sizeof(msrs) / sizeof(msrs[0]))];
			v64 = (uint64_t)op32(o) | (uint64_t)op32(o) << 32;
			if (wr)
				(void)vdev_wrmsr(d, cpu, msr, v64, *now, *now);
			else
				(void)vdev_rdmsr(d, cpu, msr, &v64, *now);
			break;
		}
		case 8:
			(void)vdev_next_event_ns(d, cpu, *now);
			(void)vdev_time_of_day_ns(d, *now);
			(void)vdev_console_input(d, op8(o));
			break;
		case 10: {	/* the NIC's BAR 0 (the core calls vnic_mmio) */
			uint16_t off = (uint16_t)(op8(o) | op8(o) << 8);
			v = op32(o);
			if (!d->pci || !d->pci->cfg.net)
				break;
			off = (uint16_t)((uint16_t[]){ 0, 0x1000, 0x2000, 0x3000, 0x3800, 0x3c00,
						       0, 0 }[(b >> 3) & 7] + (off & 0x3f));
			if ((b >> 3 & 7) >= 6)
				off = (uint16_t)(op8(o) << 8 | op8(o));
			(void)vnic_mmio(d->pci, vpci_bar_base(&d->pci->net.vp.fn, 0) + (off & 0x3fff),
					size, wr, &v);
			break;
		}
		case 11: {	/* a frame for the guest */
			static uint8_t fr[1600];
			size_t len = 60 + op8(o) * 5u;
			for (size_t i = 0; i < len; i++)
				fr[i] = op8(o);
			struct vnet_piece pc = { fr, len };
			struct vnet_rx_frame f = { .piece = &pc, .nr = 1, .valid = b & 1 };
			if (d->pci)
				(void)vnic_rx_frame(d->pci, &f);
			break;
		}
		case 9: {
			bool in_service;
			v64 = b & 15;
			(void)vdev_cr8(d, cpu, wr, &v64);
			(void)vdev_pv_eoi_gpa(d, cpu, &in_service);
			if (b & 0x80)
				vdev_pv_eoi_done(d, cpu);
			break;
		}
		}
	}
}

/* A guest driver brings the NIC up: memory decoding, features, two
 * queues of 16 in RAM, MSI-X vectors, DRIVER_OK. */
static void nic_up(struct vm_devices *d, uint64_t now)
{
	struct vnic *n = d->pci;
	uint64_t bar;
	uint32_t v;

	if (!n || !n->cfg.net)
		return;
	v = 0x80000000u | VNIC_SLOT << 11 | 0x04;
	CHECK(vdev_io(d, 0xcf8, 4, false, &v, now) == 0);
	v = 0x06;				/* memory space, bus master */
	CHECK(vdev_io(d, 0xcfc, 2, false, &v, now) == 0);
	bar = vpci_bar_base(&n->net.vp.fn, 0);
#define W(off, sz, val) do { v = (val); (void)vnic_mmio(n, bar + (off), sz, true, &v); } while (0)
	W(0x14, 1, 0);
	W(0x14, 1, 1);
	W(0x14, 1, 3);
	W(0x08, 4, 0);
	W(0x0c, 4, (uint32_t)(VIRTIO_NET_F_MAC | VIRTIO_NET_F_STATUS | VIRTIO_NET_F_CSUM |
			       VIRTIO_NET_F_MRG_RXBUF));
	W(0x08, 4, 1);
	W(0x0c, 4, 1);				/* VERSION_1 */
	W(0x14, 1, 0x0b);
	for (unsigned int q = 0; q < 2; q++) {
		uint32_t base = 0x1000 + 0x4000 * q;
		W(0x16, 2, q);
		W(0x18, 2, 16);
		W(0x1a, 2, q);			/* MSI-X vector */
		W(0x20, 4, base);
		W(0x24, 4, 0);
		W(0x28, 4, base + 0x1000);
		W(0x2c, 4, 0);
		W(0x30, 4, base + 0x2000);
		W(0x34, 4, 0);
		W(0x1c, 2, 1);
	}
	W(0x10, 2, 2);				/* config vector */
	for (unsigned int i = 0; i < 3; i++) {
		W(0x3800 + 16 * i, 4, 0xfee00000u);
		W(0x3804 + 16 * i, 4, 0);
		W(0x3808 + 16 * i, 4, 0x40 + i);
		W(0x380c + 16 * i, 4, 0);
	}
	W(0x14, 1, 0x0f);
	/* a receive buffer posted, and a doorbell */
	ram[0x1000] = 0x00; ram[0x1001] = 0x80;	/* desc 0: 0x8000.. */
	ram[0x1000 + 8] = 0x00; ram[0x1000 + 9] = 0x08;	/* 2 KiB */
	ram[0x1000 + 12] = 2;			/* WRITE */
	ram[0x2000 + 2] = 1;			/* avail idx 1, ring[0] = 0 */
	W(0x3000, 2, 0);
#undef W
}

static void mkseeds(const char *dir)
{
	char path[4096];

	for (unsigned conf = 0; conf < 16; conf++) {
		struct vm_devices *d = make((uint8_t)conf);
		uint64_t now = T_SAVE;
		/* some guest activity first, so the seeds are not all power-on */
		static const uint8_t act[] = {
			0, 0, 0, 0, 0x11, 0, 0, 0, 0, 0, 1, 0x11, 0, 0, 0,
			0, 4, 5, 0x34, 0, 0, 0, 4, 4, 0, 0x9c, 0, 0, 0,
			2, 0x06, 0x32, 0x00, 0x31, 0, 0, 0, 2, 0x06, 0x38, 0x00, 0x40, 0x4b, 0x4c, 0,
			4, 0, 0x10, 0, 0, 0, 5, 0,
		};
		struct ops o = { act, conf & 1 ? sizeof(act) : 0 };
		guest_ops(d, &o, &now);
		nic_up(d, now);
		size_t n = save(d, bufa, now);
		snprintf(path, sizeof(path), "%s/seed-%02u", dir, conf);
		FILE *f = fopen(path, "wb");
		CHECK(f);
		fputc((int)conf, f);
		fwrite(bufa, 1, n, f);
		fclose(f);
		vdev_destroy(d);
	}
	exit(0);
}

FUZZ_SEEDS_FROM(mkseeds)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vm_devices *d;
	struct snap s;
	uint8_t conf;
	size_t before;
	uint64_t now = T_OTHER;
	int r;

	if (size < 1)
		return 0;
	conf = data[0] & 15;
	now = (uint64_t[]){ T_OTHER, 0, 1000000, 1ull << 62 }[(data[0] >> 4) & 3];
	data++, size--;
	memset(ram, 0, sizeof(ram));
	d = make(conf);
	before = save(d, bufa, now);

	/* an exact-size heap copy, so ASan sees any read past the end */
	uint8_t *blob = malloc(size ? size : 1);
	memcpy(blob, data, size);
	snap_restore_init(&s, blob, size);
	r = vdev_snapshot(d, &s, now);
	CHECK(s.pos <= size);
	if (r != 0) {
		CHECK(r == -EINVAL);
		size_t after = save(d, bufb, now);
		CHECK(after == before);
		CHECK(memcmp(bufa, bufb, before) == 0);
	} else {
		struct ops o = { blob + s.pos, size - s.pos };

		stage = "after the peer's blob was restored";
		check_valid(d);
		check_migrates(d, conf, now);
		stage = "after guest operations";
		guest_ops(d, &o, &now);
		check_valid(d);
		check_migrates(d, conf, now);
	}
	free(blob);
	vdev_destroy(d);
	return 0;
}
