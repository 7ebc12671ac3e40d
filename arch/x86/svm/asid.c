/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ASID allocation and TLB flush decisions for SVM (APM Vol. 2 15.16 "TLB
 * Control"), after KVM's per-CPU ASID generations.  Pure logic: the caller
 * puts the chosen ASID and TLB_CONTROL value into the VMCB.
 *
 * Why it is correct: within one generation of a CPU, an ASID is handed out
 * at most once, and every generation begins with a flush of the whole TLB
 * (TLB_CONTROL = 1).  So an ASID fresh from svm_asid_new() has no entries
 * on its CPU, whichever VM or vCPU used the number before.  A vCPU keeps
 * its ASID only while it stays on the same CPU in the same generation; its
 * cached translations then go stale only when its VM's guest-physical
 * tables change (vm->gpa_gen, hv/vmm.h), which svm_asid_prepare() catches.
 */
#include "arch/x86/svm/svm.h"

/* nr_asids: CPUID 8000_000Ah EBX (ASIDs 0 .. nr_asids - 1; 0 is the host). */
void svm_asid_cpu_init(struct svm_asid_cpu *c, uint32_t nr_asids, bool flush_by_asid)
{
	c->generation = 1;
	c->max = nr_asids > 1 ? nr_asids - 1 : 1;
	/* Start "exhausted": the first ASID handed out flushes whatever the
	 * TLB holds from before ferry (firmware, a previous kernel). */
	c->next = c->max + 1;
	c->flush_by_asid = flush_by_asid;
}

void svm_asid_vcpu_init(struct svm_asid_vcpu *v)
{
	v->asid = 0;
	v->cpu = -1;
	v->generation = 0;	/* never current: the first run takes an ASID */
	v->gpa_gen = 0;
	v->flushes = 0;
	v->new_asids = 0;
}

/* Take the next ASID of CPU c; returns the TLB_CONTROL the run needs. */
static uint8_t svm_asid_new(struct svm_asid_cpu *c, int cpu, struct svm_asid_vcpu *v,
			    uint64_t gpa_gen)
{
	uint8_t tlb = VMCB_TLB_NONE;

	if (c->next > c->max) {
		c->generation++;
		c->next = 1;
		tlb = VMCB_TLB_FLUSH_ALL;
		v->flushes++;
	}
	v->asid = c->next++;
	v->cpu = cpu;
	v->generation = c->generation;
	v->gpa_gen = gpa_gen;	/* a fresh ASID has no stale entries */
	v->new_asids++;
	return tlb;
}

uint8_t svm_asid_prepare(struct svm_asid_cpu *c, int cpu, struct svm_asid_vcpu *v,
			 uint64_t gpa_gen)
{
	if (v->cpu != cpu || v->generation != c->generation)
		return svm_asid_new(c, cpu, v, gpa_gen);
	if (v->gpa_gen == gpa_gen)
		return VMCB_TLB_NONE;
	/* The VM's NPT changed since this ASID last ran here. */
	if (!c->flush_by_asid)
		return svm_asid_new(c, cpu, v, gpa_gen);	/* cheaper than flushing all */
	v->gpa_gen = gpa_gen;
	v->flushes++;
	return VMCB_TLB_FLUSH_ASID;
}

/* The guest's own translations changed (an emulated CR4 write): the next
 * run takes a fresh ASID, which has no entries. */
void svm_asid_flush(struct svm_asid_vcpu *v)
{
	v->generation = 0;
}
