/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The APIC bus of one guest: its local APICs (one per vCPU) and its I/O
 * APIC, and what joins them to the vCPUs and to the 8259.  See devices.h
 * for the interface; the models themselves are lapic.c and ioapic.c.
 *
 * Routing (Intel SDM vol. 3A 10.6, MP spec 5.1 "virtual wire" and 3.6.2):
 *  - an ISA line drives the 8259 pin of its number and the I/O APIC pin
 *    the MP table names (IRQ 0 on pin 2, the others on their own);
 *  - the 8259's INTR reaches a vCPU whose LVT0 is ExtINT and unmasked
 *    (lapic_accepts_pic), and an I/O APIC entry in ExtINT mode makes the
 *    target take its vector from the 8259;
 *  - I/O APIC messages and IPIs go to every local APIC their destination
 *    matches, lowest priority to the matching one with the lowest
 *    processor priority (ties go round, as the 82093AA's arbitration).
 * Every vCPU that receives something gets a bit in d->kick, which the
 * core takes (vdev_take_kicks) to wake or interrupt that vCPU.
 */
#include <errno.h>
#include <string.h>
#include "hv/vdev/devices.h"

static uint64_t bit(unsigned int cpu)
{
	return 1ull << cpu;
}

/* What a message can change in an APIC that the vCPU has yet to take. */
struct requests {
	uint32_t irr[8], tmr[8];
	uint8_t events, sipi_vector;
};

static void requests_of(const struct lapic *a, struct requests *r)
{
	memcpy(r->irr, a->irr, sizeof(r->irr));
	memcpy(r->tmr, a->tmr, sizeof(r->tmr));
	r->events = a->events;
	r->sipi_vector = a->sipi_vector;
}

static bool same_requests(const struct requests *x, const struct requests *y)
{
	return !memcmp(x->irr, y->irr, sizeof(x->irr)) && !memcmp(x->tmr, y->tmr, sizeof(x->tmr)) &&
	       x->events == y->events && x->sipi_vector == y->sipi_vector;
}

/*
 * One message to one local APIC; NMI/INIT/SIPI/ExtINT become events.  A
 * message that finds the same request already pending (the vector in
 * IRR, the NMI or INIT not yet taken) merges with it, as on the APIC
 * bus: the vCPU was kicked for the first one and has not looked since,
 * so it is not kicked again.  An IPI flood costs its target one wake-up
 * per request it takes, not one per message.
 */
static bool send_to(struct vm_devices *d, unsigned int cpu, uint8_t mode, uint8_t vector,
		    bool level)
{
	struct requests before, after;

	if (d->wait_sipi[cpu] && (mode == LAPIC_DM_NMI || mode == LAPIC_DM_EXTINT)) {
		d->stats.blocked_in_wait_sipi++;
		return false;	/* see vdev_take_event */
	}
	/* a SIPI to a processor that is not waiting for one (nor about to,
	 * with an INIT still to take) is ignored, as on real hardware: it
	 * must not wake a vCPU halted in HLT only to be dropped there */
	if (mode == LAPIC_DM_SIPI && !d->wait_sipi[cpu] &&
	    !(__atomic_load_n(&d->lapic[cpu].events, __ATOMIC_RELAXED) & LAPIC_EVB_INIT)) {
		d->stats.sipis_ignored++;
		return false;
	}
	requests_of(&d->lapic[cpu], &before);
	if (lapic_deliver(&d->lapic[cpu], mode, vector, level))
		return false;
	requests_of(&d->lapic[cpu], &after);
	if (same_requests(&before, &after))
		d->stats.ipis_merged++;
	else
		d->kick |= bit(cpu);
	return true;
}

/* Lowest priority: among the matching APICs that can take a fixed
 * interrupt (software-enabled, not waiting for a SIPI), the lowest PPR;
 * the search starts after the last one chosen so that equals take turns.
 * A disabled or parked APIC's PPR of 0 would win and lose the interrupt. */
static int lowest_of(struct vm_devices *d, uint64_t match)
{
	int best = -1;

	for (unsigned int i = 0; i < d->nr_cpus; i++) {
		unsigned int c = (d->lowest_next + i) % d->nr_cpus;
		if (!(match & bit(c)) || !lapic_sw_enabled(&d->lapic[c]) || d->wait_sipi[c])
			continue;
		if (best < 0 || lapic_ppr(&d->lapic[c]) < lapic_ppr(&d->lapic[best]))
			best = (int)c;
	}
	if (best >= 0)
		d->lowest_next = ((unsigned int)best + 1) % d->nr_cpus;
	return best;
}

static bool send_matching(struct vm_devices *d, uint64_t match, uint8_t mode, uint8_t vector,
			  bool level)
{
	bool any = false;

	if (mode == LAPIC_DM_LOWEST) {
		int c = lowest_of(d, match);
		return c >= 0 && send_to(d, (unsigned int)c, LAPIC_DM_FIXED, vector, level);
	}
	for (unsigned int c = 0; c < d->nr_cpus; c++)
		if (match & bit(c))
			any |= send_to(d, c, mode, vector, level);
	return any;
}

/* The I/O APIC's messages (ioapic_deliver_fn). */
static bool ioapic_message(void *ctx, uint32_t dest, bool logical, uint8_t mode,
			   uint8_t vector, bool level_trig)
{
	struct vm_devices *d = ctx;
	uint64_t match = 0;

	for (unsigned int c = 0; c < d->nr_cpus; c++)
		if (lapic_match_dest(&d->lapic[c], dest, logical, true))
			match |= bit(c);
	return send_matching(d, match, mode, vector, level_trig);
}

/* A local APIC's EOI of a level-triggered vector: every I/O APIC entry
 * with that vector may take its next interrupt. */
static void lapic_eoi(void *ctx, uint8_t vector)
{
	struct vm_devices *d = ctx;

	ioapic_eoi(&d->ioapic, vector);
}

/* An IPI that vCPU `from` sent. */
static void send_ipi(struct vm_devices *d, unsigned int from, const struct lapic_ipi *ipi)
{
	uint64_t match = 0;

	for (unsigned int c = 0; c < d->nr_cpus; c++)
		if (lapic_ipi_targets(ipi, &d->lapic[from], &d->lapic[c]))
			match |= bit(c);
	if (!send_matching(d, match, ipi->mode, ipi->vector, ipi->level_trig))
		d->stats.ipis_lost++;
}

void apicbus_power_on(struct vm_devices *d)
{
	ioapic_init(&d->ioapic, ioapic_message, d);
	for (unsigned int c = 0; c < d->nr_cpus; c++) {
		struct lapic_config cfg = {
			.apic_id = c, .bsp = c == 0, .tsc_hz = d->cfg.tsc_hz,
			.phys_bits = d->cfg.phys_bits, .ctx = d, .eoi = lapic_eoi,
		};
		lapic_init(&d->lapic[c], &cfg);
		d->wait_sipi[c] = c != 0;	/* application processors wait for a SIPI */
	}
	d->lowest_next = 0;
}

void apicbus_set_irq(struct vm_devices *d, unsigned int irq, int level)
{
	pic_set_irq(&d->pic, irq, level);
	ioapic_set_irq(&d->ioapic, irq == VDEV_PIT_IRQ ? VDEV_IOAPIC_PIT_PIN : irq, level);
	if (pic_pending_vector(&d->pic) < 0)
		return;
	for (unsigned int c = 0; c < d->nr_cpus; c++)
		if (lapic_accepts_pic(&d->lapic[c]))
			d->kick |= bit(c);
}

void apicbus_msi(struct vm_devices *d, uint64_t addr, uint32_t data)
{
	uint8_t mode = (data >> 8) & 7, vector = data & 0xFF;

	if ((addr >> 20) != 0xFEE || (mode != LAPIC_DM_FIXED && mode != LAPIC_DM_LOWEST &&
				      mode != LAPIC_DM_NMI) ||
	    (mode != LAPIC_DM_NMI && vector < 16)) {
		d->stats.msis_bad++;
		return;
	}
	if (ioapic_message(d, (uint32_t)(addr >> 12) & 0xFF, addr & 4, mode, vector, false))
		d->stats.msis++;
	else
		d->stats.msis_lost++;
}

/* ---- per-vCPU interface (devices.h) ------------------------------------ */

int vdev_mmio(struct vm_devices *d, unsigned int cpu, uint64_t gpa, uint8_t size, bool write,
	      uint32_t *val, uint64_t now_ns)
{
	struct lapic *a;
	struct lapic_ipi ipi;
	int rc;

	if (cpu >= d->nr_cpus)
		return -EINVAL;
	a = &d->lapic[cpu];
	if (gpa - lapic_mmio_base(a) < LAPIC_MMIO_SIZE) {
		rc = lapic_mmio(a, (uint32_t)(gpa - lapic_mmio_base(a)), size, write, val,
				now_ns, &ipi);
		if (rc == LAPIC_IPI)
			send_ipi(d, cpu, &ipi);
		return rc == LAPIC_IPI ? 0 : rc;
	}
	if (gpa - IOAPIC_DEFAULT_BASE < IOAPIC_MMIO_SIZE)
		return ioapic_mmio(&d->ioapic, (uint32_t)(gpa - IOAPIC_DEFAULT_BASE), size, write,
				   val);
	return d->pci ? vnic_mmio(d->pci, gpa, size, write, val) : -ENOENT;
}

int vdev_rdmsr(struct vm_devices *d, unsigned int cpu, uint32_t msr, uint64_t *val,
	       uint64_t now_ns)
{
	if (cpu >= d->nr_cpus)
		return -EINVAL;
	if (msr == MSR_KVM_WALL_CLOCK_NEW) {
		*val = d->kvm_wall_clock;
		return 0;
	}
	if (msr == MSR_KVM_SYSTEM_TIME_NEW) {
		*val = d->kvm_system_time[cpu];
		return 0;
	}
	if (msr == MSR_KVM_PV_EOI_EN) {
		*val = d->kvm_pv_eoi[cpu];
		return 0;
	}
	return lapic_rdmsr(&d->lapic[cpu], msr, val, now_ns);
}

/* The kvmclock MSRs (VDEV_MSR_PVCLOCK) and PV EOI's (0): LAPIC_GP or
 * -ENOENT otherwise. */
static int pvclock_wrmsr(struct vm_devices *d, unsigned int cpu, uint32_t msr, uint64_t val)
{
	uint8_t bits = vdev_phys_bits(d);

	if (msr == MSR_KVM_WALL_CLOCK_NEW) {
		if (!vdev_wall_clock_msr_valid(val, bits))
			return LAPIC_GP;
		d->kvm_wall_clock = val;
		return VDEV_MSR_PVCLOCK;
	}
	if (msr == MSR_KVM_PV_EOI_EN) {
		if (!vdev_pv_eoi_msr_valid(val, bits))
			return LAPIC_GP;
		d->kvm_pv_eoi[cpu] = val;
		return 0;
	}
	if (msr != MSR_KVM_SYSTEM_TIME_NEW)
		return -ENOENT;
	if (!pvclock_msr_valid(val, bits))
		return LAPIC_GP;
	d->kvm_system_time[cpu] = val;
	return VDEV_MSR_PVCLOCK;
}

int vdev_wrmsr(struct vm_devices *d, unsigned int cpu, uint32_t msr, uint64_t val,
	       uint64_t guest_tsc, uint64_t now_ns)
{
	struct lapic_ipi ipi;
	int rc;

	if (cpu >= d->nr_cpus)
		return -EINVAL;
	rc = pvclock_wrmsr(d, cpu, msr, val);
	if (rc != -ENOENT)
		return rc;
	rc = lapic_wrmsr(&d->lapic[cpu], msr, val, guest_tsc, now_ns, &ipi);
	if (rc == LAPIC_IPI) {
		send_ipi(d, cpu, &ipi);
		rc = 0;
	}
	return rc;
}

int vdev_cr8(struct vm_devices *d, unsigned int cpu, bool write, uint64_t *val)
{
	if (cpu >= d->nr_cpus)
		return -EINVAL;
	if (write)
		return lapic_set_cr8(&d->lapic[cpu], *val);
	*val = lapic_get_cr8(&d->lapic[cpu]);
	return 0;
}

/* The vector vCPU cpu would take now and where it comes from. */
static int pending(struct vm_devices *d, unsigned int cpu, uint64_t now, bool *from_pic)
{
	struct lapic *a = &d->lapic[cpu];
	int v = lapic_pending_vector(a, now);

	*from_pic = false;
	if (v >= 0 || !lapic_accepts_pic(a))
		return v;
	*from_pic = true;
	return pic_pending_vector(&d->pic);
}

int vdev_pending_vector(struct vm_devices *d, unsigned int cpu, uint64_t now_ns)
{
	bool pic;

	if (cpu >= d->nr_cpus)
		return -1;
	vdev_tick(d, now_ns);
	return pending(d, cpu, now_ns, &pic);
}

int vdev_ack(struct vm_devices *d, unsigned int cpu, uint64_t now_ns)
{
	bool pic;
	int v;

	if (cpu >= d->nr_cpus)
		return -1;
	v = pending(d, cpu, now_ns, &pic);
	if (v < 0)
		return -1;
	if (pic)
		return pic_ack(&d->pic);
	lapic_ack(&d->lapic[cpu], (uint8_t)v);
	return v;
}

uint8_t vdev_phys_bits(const struct vm_devices *d)
{
	return d->cfg.phys_bits ? d->cfg.phys_bits : LAPIC_PHYS_BITS_DEFAULT;
}

bool vdev_wall_clock_msr_valid(uint64_t v, uint8_t phys_bits)
{
	return !(v & 3) && (phys_bits >= 64 || !(v >> phys_bits));
}

bool vdev_pv_eoi_msr_valid(uint64_t v, uint8_t phys_bits)
{
	return !(v & 2) && (phys_bits >= 64 || !(v >> phys_bits));
}

uint64_t vdev_pv_eoi_gpa(struct vm_devices *d, unsigned int cpu, bool *in_service)
{
	*in_service = cpu < d->nr_cpus && lapic_in_service(&d->lapic[cpu]);
	if (!*in_service || !(d->kvm_pv_eoi[cpu] & 1) || !lapic_pv_eoi_ok(&d->lapic[cpu]))
		return 0;
	return d->kvm_pv_eoi[cpu] & ~1ull;
}

void vdev_pv_eoi_done(struct vm_devices *d, unsigned int cpu)
{
	if (cpu < d->nr_cpus)
		lapic_pv_eoi(&d->lapic[cpu]);
}

/* INIT resets the processor's paravirtual MSRs as KVM's kvm_vcpu_reset
 * does on INIT (kvmclock_reset, and kvm_lapic_reset for PV EOI): what
 * runs after it (a kexec'd kernel, another OS) never named those
 * addresses, and ferry would go on writing its kvmclock and EOI flag into
 * memory that is no longer theirs.  The wall clock is the VM's, not the
 * processor's, and stays. */
static void init_msrs(struct vm_devices *d, unsigned int cpu)
{
	d->wait_sipi[cpu] = true;
	d->kvm_system_time[cpu] = 0;
	d->kvm_pv_eoi[cpu] = 0;
}

enum lapic_event vdev_take_event(struct vm_devices *d, unsigned int cpu, uint8_t *vector,
				 bool extint_ok)
{
	enum lapic_event ev;
	int v;

	if (cpu >= d->nr_cpus)
		return LAPIC_EV_NONE;
	ev = lapic_take_event(&d->lapic[cpu], vector);
	if (ev == LAPIC_EV_INIT)
		init_msrs(d, cpu);
	/* A processor in wait-for-SIPI answers only INIT and SIPI (SDM vol.
	 * 3C, the wait-for-SIPI activity state): NMI and ExtINT are dropped,
	 * not held, so that a flood of them cannot keep a parked vCPU waking
	 * (an event left pending would make it runnable for ever). */
	if (d->wait_sipi[cpu] && (ev == LAPIC_EV_NMI || ev == LAPIC_EV_EXTINT)) {
		d->stats.blocked_in_wait_sipi++;
		return vdev_take_event(d, cpu, vector, extint_ok);
	}
	if (ev == LAPIC_EV_SIPI) {
		if (!d->wait_sipi[cpu])
			return vdev_take_event(d, cpu, vector, extint_ok);	/* ignored */
		d->wait_sipi[cpu] = false;
	}
	if (ev != LAPIC_EV_EXTINT)
		return ev;
	if (!extint_ok) {	/* it is the last kind taken: put it back */
		lapic_deliver(&d->lapic[cpu], LAPIC_DM_EXTINT, 0, false);
		return LAPIC_EV_NONE;
	}
	v = pic_ack(&d->pic);	/* the INTA cycle goes to the 8259 */
	if (v < 0)
		return LAPIC_EV_NONE;	/* the 8259 is being set up: nothing to take */
	*vector = (uint8_t)v;
	return ev;
}

bool vdev_event_pending(const struct vm_devices *d, unsigned int cpu)
{
	return cpu < d->nr_cpus && d->lapic[cpu].events;
}

bool vdev_wait_sipi(const struct vm_devices *d, unsigned int cpu)
{
	return cpu < d->nr_cpus && d->wait_sipi[cpu];
}

uint64_t vdev_take_kicks(struct vm_devices *d)
{
	uint64_t k = d->kick;

	d->kick = 0;
	return k;
}
