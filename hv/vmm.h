/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The contract between the vendor-neutral core (hv/) and the two back ends
 * (arch/x86/vmx, arch/x86/svm), in the manner of bhyve's vmm_ops: one table
 * of operations, chosen once at boot, and one normalized exit record.
 * Nothing above this header knows which back end runs.
 */
#ifndef FERRY_HV_VMM_H
#define FERRY_HV_VMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "arch/x86/paging.h"
#include "hv/cpu_state.h"

struct dirty_log;	/* hv/mm/dirty.h: opaque here */

/* CR4 bits a guest may set: those its CPUID view (hv/cpuid.c) admits.  The
 * back ends refuse the others with #GP and keep them in their CR4 masks. */
#define VMM_GUEST_CR4_BITS	0x7ffull
/* The guest-physical address width its CPUID view (leaf 0x80000008) gives:
 * addresses beyond it are reserved in its CR3 and paging entries. */
#define VMM_GUEST_PHYS_BITS	36
/* XCR0 components a guest may enable with XSETBV: x87, SSE, AVX at most. */
#define VMM_GUEST_XCR0_BITS	0x7ull

/*
 * What a back end may see of a VM and of a vCPU: the core embeds these as
 * `hw` in struct vm and struct vcpu (hv/vm.h) and hands the ops pointers to
 * them; everything else in those structs is the core's.  Legend as in
 * hv/vm.h: (c) set at creation, (L) vm->lock, (v) the CPU running the
 * vCPU, (a) atomic.
 */
struct vmm_vm {
	struct page_table gpt;		/* (L) EPT or NPT: set up by vm_init */
	uint64_t gpa_gen;		/* (a) bumped when gpt changes: see below */
	void *arch;			/* (c) back end's per-VM data */
	const char *name;		/* (c) for messages */
	/* (c) The VM's dirty-page log: a back end with hardware dirty
	 * tracking logs into it while dirty_log_hw_on() says so and drains
	 * at every exit (hv/mm/dirty.h); others ignore it. */
	struct dirty_log *dirty;
	/* (c) Read guest memory (bounds-checked), for instruction fetch. */
	int (*read_gpa)(struct vmm_vm *vm, uint64_t gpa, void *buf, size_t len);
};

struct vmm_vcpu {
	struct vmm_vm *vm;		/* (c) */
	unsigned int id;		/* (c) 0.. within its VM */
	void *arch;			/* (c) back end's VMCS/VMCB and friends */
	uint64_t gpr[GPR_COUNT];	/* (v) guest registers between runs */
	uint64_t xcr0;			/* (v) guest XCR0 */
	volatile bool bad_entry;	/* (a) `debug bad-entry`: the back end makes its
					 * next entry with an illegal guest state, once */
};

/* Why the guest stopped running; the core handles each code once. */
enum exit_code {
	EXIT_NONE,		/* nothing for the core: just run again */
	EXIT_EXTERNAL,		/* host interrupt (timer, IPI): host work, then resume */
	EXIT_INTR_WINDOW,	/* the guest can now take an interrupt */
	EXIT_CPUID,
	EXIT_IO,
	EXIT_MSR_READ,
	EXIT_MSR_WRITE,
	EXIT_HLT,
	EXIT_GPA_FAULT,		/* EPT violation / nested page fault */
	EXIT_HYPERCALL,		/* VMCALL or VMMCALL: the same answer on both */
	EXIT_XSETBV,
	EXIT_VIRT_INSN,		/* the guest used VMX/SVM instructions: inject #UD */
	EXIT_SHUTDOWN,		/* triple fault */
	EXIT_INVALID,		/* VM entry failed: the guest state is bad */
	EXIT_UNHANDLED,		/* a vendor exit the back end could not handle */
	EXIT_RDTSC,		/* only while set_tsc scales without the CPU */
	EXIT_PAUSE,		/* a PAUSE loop (VMX PLE, SVM pause filter): a spinning guest */
	EXIT_CR8,		/* MOV to/from CR8: the local APIC's TPR[7:4] */
	EXIT_RDPMC,		/* the guest has no PMU: the host's counters are not its */
	EXIT_COUNT
};

struct vm_exit {
	enum exit_code code;
	uint64_t rip;		/* of the instruction that exited */
	uint8_t inst_len;	/* its length, where the exit has one */
	union {
		struct {
			uint16_t port;
			uint8_t size;		/* 1, 2 or 4 */
			bool in;
			bool string, rep;	/* INS/OUTS: not supported yet */
		} io;
		struct {
			uint32_t index;		/* ECX */
			uint64_t value;		/* EDX:EAX for writes */
		} msr;
		struct {
			uint64_t gpa;
			bool read, write, exec;
			bool present;		/* the mapping exists (permission fault) */
			/* while the CPU delivered an event (its IDT entry,
			 * stack or TSS): re-queued for the next entry, and no
			 * instruction of the guest's made the access */
			bool vectoring;
			/* the CPU's walk of the guest's own page tables made
			 * the access (a table entry there), not the instruction */
			bool walk;
		} gpa_fault;
		struct {
			bool write;		/* MOV to CR8 (else from) */
			uint8_t gpr;		/* enum gpr: its source or destination */
		} cr8;
		struct {
			uint32_t reason;	/* vendor code, for the stop reason */
			uint64_t info1, info2;
			const char *what;	/* in words: "VM-instruction error 7: ..." */
		} vendor;
	} u;
};

/*
 * Back-end operations.  vcpu ops are called for one vCPU by one CPU at a
 * time: normally the CPU running it; the shell CPU may call get_state and
 * the create/destroy ops while the vCPU is not running (VMX then moves the
 * VMCS with an IPI).
 * TLB rule: the core bumps vm->hw.gpa_gen (atomically) after changing or
 * reducing entries of vm->hw.gpt and kicks every running vCPU out of the
 * guest; before every entry the back end compares vm->gpa_gen with what
 * the vCPU last saw on this CPU and flushes guest-physical translations
 * (INVEPT / ASID flush) if they differ.
 */
struct vmm_ops {
	const char *name;			/* "VMX", "SVM" */
	int (*cpu_enable)(void);		/* per physical CPU, at bring-up */
	/* Guest-physical tables: set vm->gpt's format and root. */
	int (*vm_init)(struct vmm_vm *vm);
	void (*vm_destroy)(struct vmm_vm *vm);
	int (*vcpu_init)(struct vmm_vcpu *v);
	void (*vcpu_destroy)(struct vmm_vcpu *v);
	/*
	 * Enter the guest; return when it exits, with *exit filled.  All 16
	 * general registers are in v->gpr between runs: the back end loads
	 * them (RAX and RSP through its VMCB/VMCS) and saves them back, and
	 * the core may change any of them.  Called with interrupts
	 * disabled; host interrupts that arrive in the guest end the run with
	 * EXIT_EXTERNAL and are taken once the caller enables interrupts.
	 * If v->bad_entry is set, clear it and make this entry with a guest
	 * state the CPU refuses (`debug bad-entry`: the failed-entry path).
	 */
	void (*run)(struct vmm_vcpu *v, struct vm_exit *exit);
	void (*get_state)(struct vmm_vcpu *v, struct cpu_state *s);
	void (*set_state)(struct vmm_vcpu *v, const struct cpu_state *s);
	/* Deliver e at the next entry (the guest must be able to take it). */
	void (*inject)(struct vmm_vcpu *v, const struct event *e);
	/* True if an external interrupt can be injected now (IF, no shadow,
	 * nothing else being injected). */
	bool (*intr_allowed)(struct vmm_vcpu *v);
	/* Exit with EXIT_INTR_WINDOW as soon as intr_allowed() would be true. */
	void (*want_intr_window)(struct vmm_vcpu *v, bool on);
	/* Move RIP past the exiting instruction (clears the STI/MOV SS shadow). */
	void (*skip_insn)(struct vmm_vcpu *v, uint8_t len);
	/*
	 * The guest reads tsc_scaled(host TSC, mult) + offset (hv/lib/time.h).
	 * mult != TSC_MULT_ONE: the CPU scales if it can (virt_caps.tsc_scaling),
	 * otherwise RDTSC exits with EXIT_RDTSC and the core answers.
	 */
	void (*set_tsc)(struct vmm_vcpu *v, uint64_t offset, uint64_t mult);
};

/* The back end chosen at boot (hv/vmm.c); NULL when the CPU has none. */
extern const struct vmm_ops *vmm;
extern const struct vmm_ops vmx_ops, svm_ops;

void vmm_detect_this_cpu(void);	/* every CPU, before it is online */
int vmm_init(void);		/* boot CPU: pick the back end */
int vmm_cpu_enable(void);	/* every CPU: turn virtualisation on */

#endif
