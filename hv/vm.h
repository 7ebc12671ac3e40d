/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Virtual machines and their vCPUs: the objects, their life cycle, and the
 * guest-physical memory behind them.
 *
 * Ownership legend for fields: (c) set at creation, then read-only;
 * (L) vm->lock; (v) owned by the CPU running the vCPU; (a) atomic.
 */
#ifndef FERRY_HV_VM_H
#define FERRY_HV_VM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "arch/x86/paging.h"
#include "hv/cpu_state.h"
#include "hv/lib/spinlock.h"
#include "hv/vmm.h"
#include "hv/lib/ring.h"
#include "hv/mm/dirty.h"

#define VM_NAME_MAX	32
#define VM_MAX		16
#define VM_MAX_VCPUS	1	/* multi-vCPU guests need a virtual LAPIC: later */
#define VM_MAX_MEM_MB	(64 * 1024)

/* VM_INCOMING: memory and state are arriving from a migration source. */
enum vm_state { VM_CREATED, VM_RUNNING, VM_PAUSED, VM_STOPPED, VM_INCOMING };

/* Where a guest stands in a live migration (hv/migrate), for list/info. */
enum vm_mig_kind { VM_MIG_NONE, VM_MIG_OUT, VM_MIG_IN, VM_MIG_IN_DOUBT };
struct vm_mig_status {
	enum vm_mig_kind kind;
	uint64_t id;			/* the migration's mig_id */
	uint32_t round;			/* pre-copy round in progress */
	char peer[24];			/* "a.b.c.d:port" */
	uint32_t peer_ip;		/* host order */
	uint16_t peer_port;
};
enum vcpu_state { VCPU_IDLE, VCPU_RUNNABLE, VCPU_HALTED };

struct vcpu_stats {
	uint64_t exits[EXIT_COUNT];
	uint64_t guest_ns;		/* time inside the guest */
	uint64_t host_ns;		/* time in ferry handling its exits */
};

/* XSAVE area in the standard format (Intel SDM Vol. 1 13.4). */
#define FPU_AREA_SIZE 4096
struct fpu_area { uint8_t bytes[FPU_AREA_SIZE]; } __attribute__((aligned(64)));

struct vcpu {
	struct vmm_vcpu hw;		/* what the back end sees (hv/vmm.h) */
	struct vm *vm;			/* (c) */
	struct fpu_area *fpu;		/* (v) guest x87/SSE/AVX while switched out */
	int cpu;			/* (L) physical CPU it is placed on, -1 none */
	enum vcpu_state state;		/* (L) */
	volatile bool kick;		/* (a) leave the guest and look at vm->state */
	volatile bool running;		/* (a) a CPU is inside vcpu_run() for it */
	volatile bool removing;		/* (a) its CPU must drop it (hv/sched.c) */
	volatile bool fpu_sync;		/* (a) its CPU must save its FPU state (hv/sched.c) */
	volatile uint64_t guest_seq;	/* (a) odd while in guest mode: vm_flush_gpt */
	uint64_t thr_start_ns;		/* (v) start of the current throttle period */
	uint64_t thr_guest0_ns;		/* (v) stats.guest_ns at that start */
	volatile uint64_t thr_until_ns;	/* (a) throttled: sits out until then */
	bool halted_if;			/* (v) halted with interrupts enabled */
	struct vcpu_stats stats;	/* (v) */
	struct vm_exit exit;		/* (v) the last exit */
};

struct vm {
	struct vmm_vm hw;		/* what the back end sees (hv/vmm.h): EPT/NPT */
	char name[VM_NAME_MAX];		/* (c) */
	unsigned int id;		/* (c) 1.., also the back end's ASID/VPID seed */
	spinlock_t lock;
	enum vm_state state;		/* (L) */
	char stop_reason[128];		/* (L) why it stopped, for `list` */

	uint64_t mem_size;		/* (c) bytes of guest RAM from GPA 0 */
	uint64_t *frames;		/* (c) host frame of each guest page */
	size_t nr_frames;		/* (c) mem_size / 4 KiB */
	struct dirty_log dirty;		/* pages written while logging (migration) */

	struct vcpu *vcpus[VM_MAX_VCPUS];	/* (c) */
	unsigned int nr_vcpus;		/* (c) */
	uint64_t tsc_offset;		/* (L) guest TSC = host TSC + offset */
	volatile uint32_t throttle_pct;	/* (a) share of time vCPUs sit out (migration) */
	volatile bool mig_owned;	/* (a) a migration task owns it: shell hands off */
	struct vm_mig_status mig;	/* (L) */

	struct vm_devices *dev;		/* (c) virtual devices, hv/vdev; calls under dev_lock */
	spinlock_t dev_lock;
	uint64_t io_dropped;		/* (a) writes to ports nobody handles */
	uint64_t io_unhandled_reads;	/* (a) reads of such ports (all ones) */
	uint64_t created_ns;		/* (c) */
	uint64_t clock_offset_ns;	/* (L) guest clock = host ns + offset (devices' time) */

	struct ring *console;		/* (dev_lock) the guest's serial output */
	uint8_t *frame_runs;		/* (c) 1 per 2 MiB of RAM backed by one run */
	bool gpt_ready;			/* (c) vmm->vm_init succeeded */
	char cmdline[256];		/* (c) */
	char kernel[32];		/* (c) module name */
};

/* What `create` asks for. */
struct vm_config {
	const char *name;
	const char *kernel;	/* module name */
	const char *initrd;	/* module name, or NULL (Linux kernels only) */
	uint64_t mem_mb;
	unsigned int vcpus;
	const char *cmdline;
};

/* Lifecycle (hv/vm.c).  Errors: negative errno, reason in words in err. */
int vm_create(const struct vm_config *cfg, struct vm **out, char *err, size_t errlen);
/* An empty guest (memory, tables, devices, vCPUs in reset state) in
 * VM_INCOMING, owned by the caller (mig_owned) until vm_activate(). */
int vm_create_incoming(const struct vm_config *cfg, struct vm **out, char *err, size_t errlen);
/* VM_INCOMING -> VM_RUNNING (placed on a CPU) or VM_PAUSED. */
int vm_activate(struct vm *vm, bool run, char *err, size_t errlen);
int vm_start(struct vm *vm, char *err, size_t errlen);
int vm_pause(struct vm *vm, char *err, size_t errlen);
int vm_resume(struct vm *vm, char *err, size_t errlen);
void vm_destroy(struct vm *vm);
/* From the guest's own CPU: stop it with a reason (printf-style). */
void vm_stop(struct vm *vm, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
struct vm *vm_find(const char *name);
struct vm *vm_at(unsigned int slot);	/* iterate 0..VM_MAX-1, NULL for empty slots */
const char *vm_state_name(enum vm_state s);
uint64_t vm_clock_ns(struct vm *vm);	/* the guest's device clock */

/* Guest-physical memory access for the core and devices (bounds-checked). */
int vm_read_gpa(struct vm *vm, uint64_t gpa, void *buf, size_t len);
int vm_write_gpa(struct vm *vm, uint64_t gpa, const void *buf, size_t len);
void *vm_gpa_to_hva(struct vm *vm, uint64_t gpa);	/* one page; NULL outside RAM */

/*
 * The TLB rule of hv/vmm.h, done: bump vm->hw.gpa_gen, then make every vCPU
 * that was in guest mode leave it once, so that each flushes its cached
 * guest-physical translations before it runs again.  Returns when no vCPU
 * can still use a translation from before the call (dirty log steps S3/S7).
 */
void vm_flush_gpt(struct vm *vm);

#endif
