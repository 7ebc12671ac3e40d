/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A guest's local APIC, one per vCPU: the xAPIC MMIO page, x2APIC through
 * MSRs 0x800-0x8FF, IA32_APIC_BASE (0x1B) and IA32_TSC_DEADLINE (0x6E0).
 *
 * Reference: Intel SDM vol. 3A chapter 10 ("Advanced Programmable
 * Interrupt Controller"): 10.4.4 IA32_APIC_BASE, 10.4.6 ID, 10.4.7 states
 * (power-up, INIT, software disable), 10.4.8 version, 10.5.1 LVT,
 * 10.5.3 ESR, 10.5.4 timer (10.5.4.1 TSC-deadline), 10.6.1 ICR,
 * 10.6.2 destinations (LDR/DFR), 10.8.3 TPR/PPR, 10.8.4 IRR/ISR/TMR,
 * 10.8.5 EOI, 10.8.6 CR8, 10.9 spurious vector, 10.12 x2APIC (10.12.1.2
 * MSR map, 10.12.1.3 reserved bits, 10.12.5 state transitions).
 *
 * No host timers: every call that looks at time takes now_ns, the guest's
 * device clock, which must never go backwards.  The timer's input clock
 * is LAPIC_BUS_HZ (1 GHz: one count per nanosecond before the divider).
 * TSC-deadline mode needs the guest's TSC rate (tsc_hz, fixed for the
 * guest's life) and the guest's TSC at the time of the MSR write; the
 * deadline is then kept as a device-clock time.
 *
 * State at power-on, as a PC's firmware leaves it (ferry boots without a
 * BIOS; LINUX-GUEST.md item 6 and the MP table ferry builds, which says
 * LINT0 = ExtINT and LINT1 = NMI): APIC_BASE 0xFEE00000 | enable (| BSP),
 * xAPIC mode, SVR 0x1FF (software-enabled, spurious vector 0xFF), LVT1 =
 * NMI, and on the BSP LVT0 = ExtINT unmasked (virtual wire: the 8259's
 * INTR reaches the CPU); on APs LVT0 = ExtINT masked.  Timer, thermal,
 * performance and error LVTs masked, DFR flat, everything else 0.  An
 * INIT (lapic_take_event() returning LAPIC_EV_INIT) instead gives the
 * SDM's INIT state: SVR 0xFF (software-disabled), every LVT masked; ID and
 * APIC_BASE are kept (an x2APIC stays an x2APIC).
 *
 * Return codes of the register accessors:
 *	0		done
 *	LAPIC_IPI	done, and *ipi holds an IPI for the vCPU layer to send
 *	-ENOENT		not this device's (an MSR outside its set, an MMIO
 *			access while the APIC is not in xAPIC mode): the
 *			caller treats it as it treats unclaimed MSRs/memory
 *	LAPIC_GP	the guest must get #GP(0) (x2APIC and APIC_BASE rules)
 *
 * The vCPU layer (a sketch; `a` is the vCPU's lapic, `now` vm_clock_ns):
 *	MMIO exit at gpa in [lapic_mmio_base(a), +0x1000):
 *		rc = lapic_mmio(a, gpa - base, size, write, &val, now, &ipi)
 *	RDMSR/WRMSR: rc = lapic_rdmsr(a, msr, &val, now) or
 *		lapic_wrmsr(a, msr, val, guest_tsc, now, &ipi); -ENOENT: not
 *		an APIC MSR, go on to the others; LAPIC_GP: inject #GP(0)
 *	rc == LAPIC_IPI: for every vCPU b of the guest (b == a too) with
 *		lapic_ipi_targets(&ipi, a, b) call lapic_deliver(b, ...);
 *		lowest priority may pick any one of them
 *	before entry: ev = lapic_take_event(a, &sipi) until LAPIC_EV_NONE;
 *		then v = lapic_pending_vector(a, now), inject when the vCPU
 *		can take it and call lapic_ack(a, v); the 8259's INTR goes in
 *		only while lapic_accepts_pic(a)
 *	HLT: sleep until lapic_next_event_ns(a, now) (or another wake-up)
 *	CR8: lapic_get_cr8(), lapic_set_cr8()
 *	EOI: nothing to do; a level-triggered vector's EOI calls cfg.eoi
 *		(the I/O APIC's ioapic_eoi) from inside the register write
 *
 * Not thread-safe: the owner serializes calls (one vCPU's lapic is touched
 * by its own CPU and by senders of interrupts, under one lock).  The eoi
 * callback runs inside that call, after the APIC state is consistent, so
 * it may deliver to this same lapic again (a still-asserted level line)
 * if the lock allows it; with a plain per-lapic lock the callback should
 * only note the vector, and the vCPU layer calls ioapic_eoi() after it
 * has dropped that lock.  lapic_ipi_targets() and lapic_match_dest() read
 * the target's mode, ids and LDR/DFR: hold its lock, or keep a copy.
 */
#ifndef FERRY_HV_VDEV_LAPIC_H
#define FERRY_HV_VDEV_LAPIC_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include "hv/vdev/snap.h"

#define LAPIC_DEFAULT_BASE	0xFEE00000ull
#define LAPIC_MMIO_SIZE		0x1000u
#define LAPIC_BUS_HZ		1000000000ull
#define LAPIC_NO_EVENT		UINT64_MAX
#define LAPIC_IPI		1
#define LAPIC_GP		(-EINVAL)
#define LAPIC_TSC_HZ_MIN	1000000ull	/* tsc_hz accepted: 1 MHz .. */
#define LAPIC_TSC_HZ_MAX	10000000000ull	/* .. 10 GHz */
#define LAPIC_PHYS_BITS_DEFAULT	36

#define MSR_IA32_APIC_BASE	0x1Bu
#define MSR_IA32_TSC_DEADLINE	0x6E0u
#define MSR_X2APIC_FIRST	0x800u
#define MSR_X2APIC_LAST		0x8FFu

/* IA32_APIC_BASE bits (SDM 10.4.4, 10.12.1). */
#define APIC_BASE_BSP		(1ull << 8)
#define APIC_BASE_EXTD		(1ull << 10)	/* x2APIC mode */
#define APIC_BASE_EN		(1ull << 11)	/* APIC globally enabled */

/* Delivery modes (ICR, LVT, I/O APIC redirection entries). */
enum {
	LAPIC_DM_FIXED = 0, LAPIC_DM_LOWEST = 1, LAPIC_DM_SMI = 2,
	LAPIC_DM_NMI = 4, LAPIC_DM_INIT = 5, LAPIC_DM_SIPI = 6,
	LAPIC_DM_EXTINT = 7,
};

/* ICR destination shorthands (bits 19:18). */
enum {
	LAPIC_SH_NONE = 0, LAPIC_SH_SELF = 1, LAPIC_SH_ALL = 2,
	LAPIC_SH_OTHERS = 3,
};

/* The LVT entries, in register order (0x320 + 0x10 * index). */
enum {
	LAPIC_LVT_TIMER, LAPIC_LVT_THERMAL, LAPIC_LVT_PERF, LAPIC_LVT_LINT0,
	LAPIC_LVT_LINT1, LAPIC_LVT_ERROR, LAPIC_LVT_COUNT
};

/* Timer modes (LVT timer bits 18:17). */
enum { LAPIC_TIMER_ONESHOT = 0, LAPIC_TIMER_PERIODIC = 1, LAPIC_TIMER_DEADLINE = 2 };

/* What lapic_take_event() hands the vCPU layer, one at a time. */
enum lapic_event {
	LAPIC_EV_NONE, LAPIC_EV_INIT, LAPIC_EV_SIPI, LAPIC_EV_NMI, LAPIC_EV_EXTINT,
};

/* An interprocessor interrupt the guest sent by writing the ICR (or the
 * x2APIC SELF IPI register, which gives shorthand self, fixed, edge). */
struct lapic_ipi {
	uint32_t dest;		/* xAPIC: ICR bits 63:56; x2APIC: 63:32 */
	uint8_t vector;
	uint8_t mode;		/* LAPIC_DM_* */
	uint8_t shorthand;	/* LAPIC_SH_* */
	bool logical;		/* destination mode: logical */
	bool level_trig;	/* trigger mode bit (fixed IPIs: a level IPI) */
	bool x2apic;		/* sent in x2APIC mode: dest is 32 bits */
};

struct lapic_config {
	uint32_t apic_id;	/* initial APIC id (x2APIC id); < 0xFF for xAPIC */
	bool bsp;		/* the bootstrap processor */
	uint64_t tsc_hz;	/* the guest's TSC rate (TSC-deadline mode),
				 * LAPIC_TSC_HZ_MIN..MAX */
	uint8_t phys_bits;	/* the guest's MAXPHYADDR (APIC_BASE reserved
				 * bits); 0: LAPIC_PHYS_BITS_DEFAULT */
	void *ctx;		/* passed to eoi */
	/* EOI of a level-triggered vector (the I/O APIC clears remote IRR);
	 * may be NULL. */
	void (*eoi)(void *ctx, uint8_t vector);
};

struct lapic_stats {
	uint64_t timer_fires;	/* timer expiries (delivered or masked) */
	uint64_t coalesced;	/* periodic expiries merged unseen */
	uint64_t dropped;	/* interrupts refused: APIC off, bad vector */
	uint64_t bad_access;	/* MMIO of the wrong size or a reserved offset */
};

/*
 * One local APIC.  (c): from the config, not saved (tsc_hz is saved: the
 * guest's TSC rate travels with it).  Everything else is guest-visible
 * state, saved by lapic_snapshot().
 */
struct lapic {
	struct lapic_config cfg;	/* (c) */
	uint64_t apic_base;		/* IA32_APIC_BASE */
	uint8_t xapic_id;		/* ID register bits 31:24, xAPIC mode */
	uint8_t tpr;
	uint32_t ldr, dfr;		/* xAPIC LDR (bits 31:24) and DFR */
	uint32_t svr;
	uint32_t esr;			/* as the guest reads it */
	uint32_t esr_pending;		/* errors since the last ESR write */
	uint32_t icr_lo, icr_hi;	/* ICR as last written (xAPIC form) */
	uint32_t lvt[LAPIC_LVT_COUNT];
	uint32_t timer_initial;		/* initial count register */
	uint32_t timer_dcr;		/* divide configuration register */
	uint64_t timer_expiry_ns;	/* next time the count reaches 0 (or
					 * the deadline), LAPIC_NO_EVENT: idle */
	uint64_t deadline_tsc;		/* IA32_TSC_DEADLINE, 0: disarmed */
	uint32_t irr[8], isr[8], tmr[8];	/* 256-bit, vector v at [v/32] bit v%32 */
	uint8_t events;			/* pending INIT/SIPI/NMI/ExtINT bits */
	uint8_t sipi_vector;		/* of the pending SIPI */
	struct lapic_stats stats;	/* host-side counters, not saved */
};

/* Power-on (RESET) state as described above; cfg is copied.  A guest
 * reset (reboot) is lapic_init(a, &a->cfg). */
void lapic_init(struct lapic *a, const struct lapic_config *cfg);

/* The guest-physical base of the xAPIC page, or LAPIC_NO_EVENT (all ones)
 * while the APIC is disabled or in x2APIC mode (no page then). */
uint64_t lapic_mmio_base(const struct lapic *a);
bool lapic_x2apic(const struct lapic *a);
bool lapic_hw_enabled(const struct lapic *a);
/* Software-enabled (SVR bit 8): it accepts fixed interrupts. */
bool lapic_sw_enabled(const struct lapic *a);

/*
 * An access to the xAPIC page at offset (0..0xFFF) of size 1, 2 or 4
 * bytes (registers are 32 bits at 16-byte aligned offsets; narrower reads
 * give part of one, narrower or unaligned writes are dropped and
 * counted).  Reads of reserved offsets give 0 and set ESR "illegal
 * register address".  Returns 0, LAPIC_IPI, or -ENOENT (not in xAPIC mode,
 * offset outside the page).
 */
int lapic_mmio(struct lapic *a, uint32_t offset, uint8_t size, bool write, uint32_t *val,
	       uint64_t now_ns, struct lapic_ipi *ipi);
/* (*ipi is written only when LAPIC_IPI is returned: reads may pass NULL.) */

/*
 * RDMSR/WRMSR of IA32_APIC_BASE, IA32_TSC_DEADLINE and 0x800-0x8FF.
 * guest_tsc is the guest's TSC now (only the TSC deadline uses it).
 * Returns 0, LAPIC_IPI (writes of the ICR or SELF IPI), LAPIC_GP, or
 * -ENOENT for any other MSR.
 */
int lapic_rdmsr(struct lapic *a, uint32_t msr, uint64_t *val, uint64_t now_ns);
int lapic_wrmsr(struct lapic *a, uint32_t msr, uint64_t val, uint64_t guest_tsc,
		uint64_t now_ns, struct lapic_ipi *ipi);

/*
 * Whether vCPU b's APIC is a destination of ipi, sent by the APIC `from`
 * (for the shorthands).  dest is matched in b's mode (10.6.2): physical
 * id or broadcast (0xFF xAPIC, 0xFFFFFFFF x2APIC), logical flat, cluster
 * or x2APIC cluster.
 */
bool lapic_ipi_targets(const struct lapic_ipi *ipi, const struct lapic *from,
		       const struct lapic *b);
/* The destination match alone: dest as an 8-bit xAPIC field (narrow: an
 * xAPIC ICR or an I/O APIC entry) or a 32-bit x2APIC one. */
bool lapic_match_dest(const struct lapic *a, uint32_t dest, bool logical, bool narrow);

/*
 * An interrupt message arrives (I/O APIC, IPI, LINT): fixed and lowest
 * priority set IRR (and TMR if level_trig); NMI, INIT, SIPI and ExtINT
 * become events.  SMI is dropped.  Returns 0, or -EINVAL if refused (APIC
 * disabled, fixed/lowest while software-disabled or with a vector < 16,
 * which also sets ESR "receive illegal vector").
 */
int lapic_deliver(struct lapic *a, uint8_t mode, uint8_t vector, bool level_trig);
/* lapic_deliver(a, LAPIC_DM_FIXED, vector, level_trig). */
int lapic_set_irq(struct lapic *a, uint8_t vector, bool level_trig);

/* Runs the timer up to now_ns, then: the highest vector in IRR whose
 * priority class is above the PPR's, or -1. */
int lapic_pending_vector(struct lapic *a, uint64_t now_ns);
/* The CPU takes vector (from lapic_pending_vector): IRR -> ISR.  Returns
 * 0, or -EINVAL if vector is not requested. */
int lapic_ack(struct lapic *a, uint8_t vector);

/* Whether a vector is in service (ISR not empty). */
bool lapic_in_service(const struct lapic *a);
/* KVM's PV EOI (hv/vdev/devices.h): whether the guest may end the highest
 * vector in service by clearing a flag in its memory instead of writing
 * EOI: it is edge-triggered (no I/O APIC waits for its EOI), and nothing
 * waits in IRR (the EOI could let it in, and only an exit delivers it). */
bool lapic_pv_eoi_ok(const struct lapic *a);
/* The guest cleared that flag: an EOI, as if written. */
void lapic_pv_eoi(struct lapic *a);

/* The next pending event, cleared as it is taken: INIT first (the APIC is
 * then already in its INIT state), then SIPI (*sipi_vector set), NMI,
 * ExtINT (take the vector from the 8259 now).  LAPIC_EV_NONE if none. */
enum lapic_event lapic_take_event(struct lapic *a, uint8_t *sipi_vector);

/* Whether the 8259's INTR reaches the CPU: the APIC is globally disabled,
 * or LVT0 is ExtINT and unmasked (virtual wire). */
bool lapic_accepts_pic(const struct lapic *a);
/* The bits of a->events, one per kind of event waiting for the vCPU. */
#define LAPIC_EVB_INIT		0x1u
#define LAPIC_EVB_SIPI		0x2u
#define LAPIC_EVB_NMI		0x4u
#define LAPIC_EVB_EXTINT	0x8u
#define LAPIC_EVB_ALL		0xFu

/* Those that end a HLT: INIT and SIPI always, an NMI only if the vCPU
 * does not block NMIs, an ExtINT only if it has interrupts on.  (A CPU
 * halted in its NMI handler sleeps through another NMI, which stays
 * pending.) */
static inline uint8_t lapic_event_wake_mask(bool nmi_ok, bool extint_ok)
{
	return (uint8_t)(LAPIC_EVB_INIT | LAPIC_EVB_SIPI | (nmi_ok ? LAPIC_EVB_NMI : 0) |
			 (extint_ok ? LAPIC_EVB_EXTINT : 0));
}

/* When a halted vCPU must wake for this APIC: now_ns if a vector or event
 * is pending already, the next unmasked timer expiry, or LAPIC_NO_EVENT. */
uint64_t lapic_next_event_ns(struct lapic *a, uint64_t now_ns);

/* CR8 is TPR bits 7:4 (SDM 10.8.6).  set returns LAPIC_GP if cr8 > 15. */
uint8_t lapic_get_cr8(const struct lapic *a);
int lapic_set_cr8(struct lapic *a, uint64_t cr8);

/* The processor priority (PPR) now. */
uint8_t lapic_ppr(const struct lapic *a);

/*
 * Save or restore (see snap.h).  The armed timer is stored as the time
 * left relative to now_ns, so a restore at any other clock continues it;
 * a save first takes the expiries due by now_ns (on a copy: a is not
 * changed), so one nobody has asked about yet travels as a request in
 * IRR.  A refused restore (-EINVAL) leaves a unchanged.
 */
int lapic_snapshot(struct lapic *a, struct snap *s, uint64_t now_ns);

/* Internal consistency (used by restore, and by tests). */
bool lapic_valid(const struct lapic *a);

#endif
