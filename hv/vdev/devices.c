/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A guest's device set: creation, port dispatch by table, interrupt
 * routing (PIT -> IRQ 0, COM1 -> IRQ 4), the small stub ports, and the
 * all-or-nothing snapshot of every device.  See devices.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "hv/vdev/devices.h"
#include "hv/vdev/portio.h"

#define VDEV_SNAP_MAGIC 0x56454456u	/* "VDEV" little-endian */

/* ---- wiring ----------------------------------------------------------- */

static void com1_irq(void *ctx, int level)
{
	struct vm_devices *d = ctx;

	apicbus_set_irq(d, VDEV_COM1_IRQ, level);
}

static void com1_tx(void *ctx, uint8_t byte)
{
	struct vm_devices *d = ctx;

	if (d->cfg.tx)
		d->cfg.tx(d->cfg.ctx, byte);
}

static void rtc_irq(void *ctx, int level)
{
	struct vm_devices *d = ctx;

	apicbus_set_irq(d, VDEV_RTC_IRQ, level);
}

/* Pulse IRQ 0 for an OUT0 rising edge that became due; raise IRQ 8 for
 * an RTC flag that became due. */
void vdev_tick(struct vm_devices *d, uint64_t now)
{
	rtc_update(&d->rtc, now);
	if (!pit_update(&d->pit, now))
		return;
	apicbus_set_irq(d, VDEV_PIT_IRQ, 1);
	apicbus_set_irq(d, VDEV_PIT_IRQ, 0);
}

/* The devices a reboot resets (the RTC and its CMOS RAM keep running; its
 * interrupt enables and flags are cleared, as its RESET pin does). */
static void power_on(struct vm_devices *d)
{
	rtc_reset_irqs(&d->rtc);
	pic_init(&d->pic);
	pit_init(&d->pit);
	apicbus_power_on(d);
	uart_init(&d->com1, UART_COM1_BASE, com1_irq, com1_tx, d);
}

static void nic_irq(void *ctx, unsigned int line, int level)
{
	struct vm_devices *d = ctx;

	if (line < 16)
		apicbus_set_irq(d, line, level);
	else
		ioapic_set_irq(&d->ioapic, line, level);
}

static int nic_tx(void *ctx, const uint8_t *frame, size_t len, const struct vnet_offload *off)
{
	struct vm_devices *d = ctx;

	return d->cfg.nic_tx(d->cfg.ctx, frame, len, off);
}

static void nic_msi(void *ctx, uint64_t addr, uint32_t data)
{
	apicbus_msi(ctx, addr, data);
}

static void pvpanic_event(void *ctx, uint8_t event)
{
	struct vm_devices *d = ctx;

	if (d->cfg.panic)
		d->cfg.panic(d->cfg.ctx, event);
}

/* The PCI bus, when the guest has a function on it. */
static int pci_create(struct vm_devices *d)
{
	struct vnic_config c = {
		.net = d->cfg.nic_on, .pvpanic = d->cfg.pvpanic_on,
		.irq = VNIC_IRQ, .mem = d->cfg.nic_mem, .tx = nic_tx, .irq_fn = nic_irq,
		.msi_fn = nic_msi,
		.panic = pvpanic_event, .ctx = d,
	};

	memcpy(c.mac, d->cfg.nic_mac, sizeof(c.mac));
	return c.net || c.pvpanic ? vnic_create(&c, &d->pci) : 0;
}

void vdev_reset(struct vm_devices *d)
{
	/* the cable is the operator's (`net link`), not the guest's: a reboot
	 * keeps it as it was, as a migration does */
	bool cable = !d->pci || !d->pci->cfg.net || vnet_link_up(&d->pci->net);

	power_on(d);
	d->kvm_wall_clock = 0;
	memset(d->kvm_system_time, 0, sizeof(d->kvm_system_time));
	memset(d->kvm_pv_eoi, 0, sizeof(d->kvm_pv_eoi));
	d->kick = 0;
	/* the bus as new: no queue of the old system's may write RAM on, and
	 * pvpanic may report the new system's panic */
	vnic_destroy(d->pci);
	d->pci = NULL;
	if (pci_create(d))
		d->stats.nic_lost++;
	else if (d->pci && !cable)
		vnic_set_link(d->pci, false);
}

int vdev_create(const struct vdev_config *cfg, struct vm_devices **out)
{
	struct vm_devices *d = calloc(1, sizeof(*d));

	*out = NULL;
	if (cfg->nr_cpus < 1 || cfg->nr_cpus > VDEV_MAX_CPUS ||
	    cfg->tsc_hz < LAPIC_TSC_HZ_MIN || cfg->tsc_hz > LAPIC_TSC_HZ_MAX) {
		free(d);
		return -EINVAL;
	}
	if (!d)
		return -ENOMEM;
	d->cfg = *cfg;
	d->nr_cpus = cfg->nr_cpus;
	power_on(d);
	rtc_init(&d->rtc, cfg->epoch_s, cfg->now_ns, cfg->ram_below_4g, cfg->ram_above_4g);
	rtc_connect(&d->rtc, rtc_irq, d);
	if (pci_create(d)) {
		free(d);
		return -ENOMEM;
	}
	*out = d;
	return 0;
}

void vdev_destroy(struct vm_devices *d)
{
	if (d)
		vnic_destroy(d->pci);
	free(d);
}

/* ---- port dispatch ---------------------------------------------------- */

/* One byte access to one device: 0, or -ENOENT if not its port. */
typedef int (*byte_fn)(struct vm_devices *d, uint16_t port, bool in, uint32_t *v,
		       uint64_t now);

static int pic_byte(struct vm_devices *d, uint16_t port, bool in, uint32_t *v, uint64_t now)
{
	(void)now;
	return pic_io(&d->pic, port, 1, in, v);
}

static int pit_byte(struct vm_devices *d, uint16_t port, bool in, uint32_t *v, uint64_t now)
{
	return pit_io(&d->pit, port, 1, in, v, now);
}

static int com1_byte(struct vm_devices *d, uint16_t port, bool in, uint32_t *v, uint64_t now)
{
	(void)now;
	return uart_io(&d->com1, port, 1, in, v);
}

static int rtc_byte(struct vm_devices *d, uint16_t port, bool in, uint32_t *v, uint64_t now)
{
	return rtc_io(&d->rtc, port, 1, in, v, now);
}

/* i8042 stub: status 0 (no data, input buffer empty); command 0xFE on
 * 0x64 pulses the reset line. */
static int kbd_byte(struct vm_devices *d, uint16_t port, bool in, uint32_t *v, uint64_t now)
{
	(void)now;
	if (port != VDEV_KBD_DATA && port != VDEV_KBD_STATUS)
		return -ENOENT;
	if (in) {
		*v = 0;
	} else if (port == VDEV_KBD_STATUS && (uint8_t)*v == VDEV_KBD_RESET) {
		d->stats.resets++;
		if (d->cfg.reset)
			d->cfg.reset(d->cfg.ctx);
	} else {
		d->stats.kbd_ignored++;
	}
	return 0;
}

/* Port 0x80: POST codes and Linux's I/O delay.  Reads 0xff, as an ISA
 * bus with nothing driving it. */
static int post_byte(struct vm_devices *d, uint16_t port, bool in, uint32_t *v, uint64_t now)
{
	(void)d;
	(void)now;
	if (port != VDEV_POST_PORT)
		return -ENOENT;
	if (in)
		*v = 0xff;
	return 0;
}

static const byte_fn byte_handlers[] = {
	pic_byte, pit_byte, com1_byte, rtc_byte, kbd_byte, post_byte,
};

struct vdev_access {
	struct vm_devices *dev;
	uint64_t now;
};

static bool dispatch_byte(void *arg, uint16_t port, bool in, uint8_t *val)
{
	struct vdev_access *a = arg;
	uint32_t v = *val;

	for (size_t i = 0; i < sizeof(byte_handlers) / sizeof(byte_handlers[0]); i++) {
		if (byte_handlers[i](a->dev, port, in, &v, a->now) == -ENOENT)
			continue;
		if (in)
			*val = (uint8_t)v;
		return true;
	}
	return false;
}

/* ferry's control port: only a 16-bit write of VDEV_CTL_POWEROFF acts. */
static int ctl_io(struct vm_devices *d, uint8_t size, bool in, uint32_t *val)
{
	if (!in && size == 2 && (*val & 0xffff) == VDEV_CTL_POWEROFF) {
		d->stats.poweroffs++;
		if (d->cfg.poweroff)
			d->cfg.poweroff(d->cfg.ctx);
		return 0;
	}
	d->stats.ctl_ignored++;
	if (in)
		*val = size == 4 ? 0xffffffffu : (1u << (8 * size)) - 1;
	return 0;
}

int vdev_io(struct vm_devices *d, uint16_t port, uint8_t size, bool in, uint32_t *val,
	    uint64_t now_ns)
{
	struct vdev_access a = { d, now_ns };

	if (size != 1 && size != 2 && size != 4)
		return -EINVAL;
	vdev_tick(d, now_ns);
	if (port == VDEV_CTL_PORT)
		return ctl_io(d, size, in, val);
	if (d->pci && port >= VPCI_ADDR_PORT && port <= VPCI_DATA_PORT + 3)
		return vnic_io(d->pci, port, size, in, val);
	return portio_split(&a, dispatch_byte, port, size, in, val);
}

/* ---- interrupts, time, console ---------------------------------------- */

uint64_t vdev_next_event_ns(struct vm_devices *d, unsigned int cpu, uint64_t now_ns)
{
	uint64_t pit, apic, rtc;

	vdev_tick(d, now_ns);
	pit = pit_next_event_ns(&d->pit, now_ns);
	rtc = rtc_next_event_ns(&d->rtc, now_ns);
	apic = cpu < d->nr_cpus ? lapic_next_event_ns(&d->lapic[cpu], now_ns) : UINT64_MAX;
	if (rtc < pit)
		pit = rtc;
	return pit < apic ? pit : apic;
}

uint64_t vdev_time_of_day_ns(const struct vm_devices *d, uint64_t now_ns)
{
	uint64_t s = d->rtc.base_s, ns = now_ns - d->rtc.base_ns;

	/* the RTC goes to the year 9999, nanoseconds since 1970 only to 2554:
	 * past that the wall clock stays at its end rather than wrap */
	if (s > (UINT64_MAX - ns) / 1000000000ull)
		return UINT64_MAX;
	return s * 1000000000ull + ns;
}

bool vdev_console_input(struct vm_devices *d, uint8_t byte)
{
	return uart_rx_push(&d->com1, byte);
}

/* ---- snapshot --------------------------------------------------------- */

/* What no single device can check: the PIC's view of the lines matches
 * the devices driving them (COM1 and the RTC a level, the PIT only
 * pulses). */
static bool wiring_valid(const struct vm_devices *d)
{
	uint32_t isa = (d->com1.irq_level ? 1u << VDEV_COM1_IRQ : 0) |
		       (d->rtc.irq_level ? 1u << VDEV_RTC_IRQ : 0);
	uint32_t nic = d->pci ? 1u << VNIC_IRQ : 0;

	/* COM1 drives IRQ 4 on both, the RTC IRQ 8, the NIC (checked in
	 * pci_fields) pin VNIC_IRQ; the PIT only pulses its line, and no
	 * other device drives one: a line high with nothing behind it would
	 * stay high for ever */
	return d->pic.lines == isa && (d->ioapic.lines & ~nic) == isa;
}

/* Last, because a restore of the bus is final (vnic_snapshot is all or
 * nothing by itself): whether there is one, then the bus and its
 * functions. */
static int pci_fields(struct vm_devices *t, struct snap *s)
{
	bool pci = t->pci != NULL;

	snap_bool(s, &pci);
	if (s->restore && !s->err && pci != (t->pci != NULL))
		return snap_invalid(s);	/* the peer made the guest with a bus too */
	if (t->pci && !s->err)
		vnic_snapshot_on_pin(t->pci, s, t->ioapic.lines & (1u << VNIC_IRQ));
	return s->err;
}

static int devices_fields(struct vm_devices *t, struct snap *s, uint64_t now)
{
	uint32_t magic = VDEV_SNAP_MAGIC, nr = t->nr_cpus;

	snap_u32(s, &magic);
	if (!s->err && magic != VDEV_SNAP_MAGIC)
		return snap_invalid(s);
	snap_version(s, VDEV_SNAP_VERSION);
	pic_snapshot(&t->pic, s);
	pit_snapshot(&t->pit, s, now);
	uart_snapshot(&t->com1, s);
	rtc_snapshot(&t->rtc, s, now);
	snap_u32(s, &nr);
	if (!s->err && nr != t->nr_cpus)
		return snap_invalid(s);	/* the peer made the guest with as many vCPUs */
	ioapic_snapshot(&t->ioapic, s);
	for (unsigned int c = 0; c < t->nr_cpus && !s->err; c++)
		lapic_snapshot(&t->lapic[c], s, now);
	snap_u64(s, &t->kvm_wall_clock);
	if (s->restore && !s->err && !vdev_wall_clock_msr_valid(t->kvm_wall_clock, vdev_phys_bits(t)))
		return snap_invalid(s);
	for (unsigned int c = 0; c < t->nr_cpus && !s->err; c++) {
		snap_bool(s, &t->wait_sipi[c]);
		snap_u64(s, &t->kvm_system_time[c]);
		snap_u64(s, &t->kvm_pv_eoi[c]);
		/* held to what the guest's own WRMSR would be (its MAXPHYADDR) */
		if (s->restore && !s->err &&
		    (!pvclock_msr_valid(t->kvm_system_time[c], vdev_phys_bits(t)) ||
		     !vdev_pv_eoi_msr_valid(t->kvm_pv_eoi[c], vdev_phys_bits(t))))
			return snap_invalid(s);
		/* one TSC rate for the guest: CPUID leaf 0x15 tells vCPU 0's */
		if (s->restore && !s->err && t->lapic[c].cfg.tsc_hz != t->lapic[0].cfg.tsc_hz)
			return snap_invalid(s);
	}
	if (s->restore && !s->err && !wiring_valid(t))
		return snap_invalid(s);
	return pci_fields(t, s);
}

int vdev_snapshot(struct vm_devices *d, struct snap *s, uint64_t now_ns)
{
	struct vm_devices *t;

	if (!s->restore)
		return devices_fields(d, s, now_ns);
	if (s->err)
		return s->err;
	t = malloc(sizeof(*t));
	if (!t) {
		s->err = -ENOMEM;
		return s->err;
	}
	memcpy(t, d, sizeof(*t));
	if (!devices_fields(t, s, now_ns)) {
		memcpy(d, t, sizeof(*d));
		ioapic_resample(&d->ioapic);	/* once the APICs are in place */
		/* the guest's TSC rate came with it (checked equal on every
		 * APIC): its next reset (a reboot here) keeps it, as its TSC,
		 * kvmclock and CPUID do, not this host's */
		d->cfg.tsc_hz = d->lapic[0].cfg.tsc_hz;
	}
	free(t);
	return s->err;
}
