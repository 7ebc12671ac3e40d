/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * SMP bring-up: every enabled CPU of the MADT is started with INIT-SIPI-SIPI
 * through the real-mode trampoline, one at a time, each with its own stack,
 * GDT/TSS and per-CPU data.
 */
#include <errno.h>
#include <malloc.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "arch/x86/apic.h"
#include "arch/x86/cpu.h"
#include "arch/x86/mm.h"
#include "arch/x86/percpu.h"
#include "arch/x86/smp.h"
#include "boot/layout.h"
#include "arch/x86/acpi.h"
#include "hv/lib/log.h"
#include "hv/lib/cpu.h"
#include "hv/lib/time.h"

#define TRAMPOLINE_PA 0x8000

/*
 * What the trampoline hands the AP it names (apic).  claim: 0 posted, 1
 * taken by that AP, 2 read (the AP runs on its own stack; the data may be
 * reused), 3 withdrawn or nothing posted.  The data is written only while
 * claim is not 0, and an AP takes it only with its own APIC id in it, so
 * one that answers after start_one gave up never runs on another CPU's
 * stack and per-CPU block.
 */
struct tramp_data {
	uint32_t cr3, efer;
	uint64_t stack, index, entry;
	uint32_t apic, claim;
};
_Static_assert(offsetof(struct tramp_data, stack) == 8 && offsetof(struct tramp_data, apic) == 32 &&
	       offsetof(struct tramp_data, claim) == 36, "the layout of trampoline.S");

#define CLAIM_POSTED	0
#define CLAIM_TAKEN	1
#define CLAIM_READ	2
#define CLAIM_NONE	3
#define AP_WAIT_MS	500	/* until it is online */
#define AP_READ_MS	10000	/* a taken claim until it is read */

extern char tramp_start[], tramp_data[], tramp_end[];
extern char early_pml4[], ap_long_entry[];

struct percpu cpus[MAX_CPUS];
unsigned int cpu_count = 1;
static void (*ap_entry_fn)(void);

/* The library's (hv/lib/cpu.h) view of this CPU's number. */
static unsigned int cpu_index(void)
{
	return this_cpu()->index;
}

/* Point %gs at this CPU's per-CPU block. */
void percpu_setup(unsigned int index)
{
	struct percpu *c = &cpus[index];

	c->self = c;
	c->index = index;
	c->stack_canary = 0x5e11ab1e0ddba11ull ^ rdtsc();
	wrmsr(MSR_GS_BASE, (uint64_t)c);
	wrmsr(MSR_FS_BASE, (uint64_t)c);
	cpu_index_hook = cpu_index;
}

static int start_one(unsigned int index, uint32_t apic)
{
	struct tramp_data *d = phys_to_virt(TRAMPOLINE_PA + (tramp_data - tramp_start));
	char *stack = memalign(16, BOOT_STACK_SIZE);

	if (!stack)
		return -1;
	cpus[index].stack_top = (uint64_t)stack + BOOT_STACK_SIZE;
	cpus[index].apic_id = apic;
	d->cr3 = (uint32_t)(uint64_t)early_pml4;	/* .boot is identity-placed */
	d->efer = rdmsr(MSR_EFER) & (EFER_LME | EFER_NXE);
	d->stack = cpus[index].stack_top;
	d->index = index;
	d->entry = (uint64_t)ap_long_entry;
	d->apic = apic;
	__atomic_store_n(&d->claim, CLAIM_POSTED, __ATOMIC_SEQ_CST);
	apic_send_init_sipi(apic, TRAMPOLINE_PA);
	for (int ms = 0; ms < AP_WAIT_MS && !__atomic_load_n(&cpus[index].online, __ATOMIC_ACQUIRE);
	     ms++)
		udelay(1000);
	if (__atomic_load_n(&cpus[index].online, __ATOMIC_ACQUIRE))
		return 0;
	uint32_t posted = CLAIM_POSTED;
	if (__atomic_compare_exchange_n(&d->claim, &posted, CLAIM_NONE, false, __ATOMIC_SEQ_CST,
					__ATOMIC_SEQ_CST)) {
		__atomic_store_n(&d->apic, 0xffffffffu, __ATOMIC_SEQ_CST);	/* nobody's */
		return -1;	/* it never came: should it come later, it parks */
	}
	/* it took its data and runs, slowly: the data may not be reused
	 * before it has read it */
	for (int ms = 0; ms < AP_READ_MS && __atomic_load_n(&d->claim, __ATOMIC_ACQUIRE) ==
	     CLAIM_TAKEN; ms++)
		udelay(1000);
	return __atomic_load_n(&d->claim, __ATOMIC_ACQUIRE) == CLAIM_TAKEN ? -EBUSY : -1;
}

/* Start every other CPU; each runs `entry` once it is set up. */
void smp_start(void (*entry)(void))
{
	const struct acpi_info *a = acpi_get();
	uint32_t self = apic_id();

	ap_entry_fn = entry;
	memcpy(phys_to_virt(TRAMPOLINE_PA), tramp_start, tramp_end - tramp_start);
	for (unsigned int i = 0; i < a->n_cpus && cpu_count < MAX_CPUS; i++) {
		if (a->cpu_apic_id[i] == self)
			continue;
		if (a->cpu_apic_id[i] > 0xff && !apic_x2apic()) {
			/* xAPIC's ICR names 8 bits: that id would reach another */
			pr_err("smp: CPU with APIC id %u needs x2APIC mode: not started",
			       a->cpu_apic_id[i]);
			continue;
		}
		unsigned int idx = cpu_count++;
		int rc = start_one(idx, a->cpu_apic_id[i]);

		if (rc == -EBUSY) {	/* it holds the trampoline: no other can start */
			pr_err("smp: CPU with APIC id %u took its start-up data but never used "
			       "it: no more CPUs started", a->cpu_apic_id[i]);
			break;
		}
		if (rc)
			pr_err("smp: CPU with APIC id %u did not start", a->cpu_apic_id[i]);
	}
	if (a->cpus_ignored)
		pr_warn("smp: %u CPUs beyond the limit of %d ignored", a->cpus_ignored, MAX_CPUS);
}

unsigned int cpus_online(void)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < cpu_count; i++)
		n += cpus[i].online;
	return n;
}

void ap_main(unsigned int index);
void ap_main(unsigned int index)
{
	percpu_setup(index);
	cpu_init_this();
	ap_entry_fn();
}
