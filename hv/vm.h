/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Virtual machines and their vCPUs: the objects, their life cycle, and the
 * guest-physical memory behind them.
 *
 * Legend for fields, lifetime and lock:
 *   (c)  set at creation, before the VM is published; read-only after
 *   (L)  written under vm->lock; readers named where they do without it
 *   (Q)  written under the run-queue lock of the CPU the vCPU is placed
 *        on (hv/sched.c), read anywhere with an atomic load
 *   (v)  the CPU running the vCPU (state VCPU_RUNNING); others only while
 *        the VM is paused or incoming and the vCPU is not RUNNING
 *   (o)  the CPU the vCPU is placed on (v->cpu), running it or not
 *   (a)  atomic, any CPU
 *   (D)  vm->dev_lock
 */
#ifndef FERRY_HV_VM_H
#define FERRY_HV_VM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "arch/x86/paging.h"
#include "hv/conwatch.h"
#include "hv/cpu_state.h"
#include "hv/lib/spinlock.h"
#include "hv/vmm.h"
#include "hv/lib/ring.h"
#include "hv/mm/dirty.h"
#include "hv/sched/sched_ops.h"

#define VM_NAME_MAX	32
#define VM_MAX		16
#define VM_MAX_VCPUS	64	/* the device set's local APICs (VDEV_MAX_CPUS) */
#define VM_VCPUS_PER_CPU 4	/* overcommit: at most this many vCPUs per host CPU */
#define VM_MODULES_MAX	128	/* bytes of module=LIST, the NUL included */
#define VM_MAX_MEM_MB	(63 * 1024)	/* + the 1 GiB hole below 4 GiB: all of it
					 * under the guest's 36-bit MAXPHYADDR */

/* VM_INCOMING: memory and state are arriving from a migration source. */
/* VM_REBOOTING: the BSP is loading the images again after the guest reset
 * itself (vm_reboot); no vCPU runs, and it returns to what it was. */
enum vm_state { VM_CREATED, VM_RUNNING, VM_PAUSED, VM_STOPPED, VM_INCOMING, VM_REBOOTING };

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

/*
 * A vCPU's scheduling state: one field, changed only through
 * vcpu_set_state() (hv/vcpu.c), which checks every change against this
 * table and panics on any other (it would be ferry's bug).  Q: under the
 * run-queue lock of the vCPU's CPU (hv/sched.c).
 *
 *   from      to        who, when
 *   IDLE      RUNNABLE  sched_add: placed on a CPU (Q)
 *   IDLE      HALTED    vmstate_load_vcpu: not placed (cpu -1), VM incoming
 *   HALTED    IDLE      the same, loading a vCPU that is not halted
 *   RUNNABLE  RUNNING   its CPU picks it to run (Q)
 *   HALTED    RUNNING   its CPU picks it because an interrupt woke it (Q)
 *   RUNNING   RUNNABLE  its CPU, after vcpu_run: slice over, kicked, or the
 *                       VM is no longer running (Q)
 *   RUNNING   HALTED    the same, when the guest executed HLT and no
 *                       interrupt can wake it yet (Q)
 *   RUNNABLE  IDLE      its CPU drops it on VCPU_REQ_REMOVE: cpu -1 (Q)
 *   HALTED    IDLE      the same
 *
 * RUNNING means a CPU is inside vcpu_run() for it: only that CPU uses the
 * back end's vCPU state then; everyone else who must (pause, migration,
 * destroy) kicks it and waits until it is not RUNNING.  Multi-vCPU guests
 * add WAIT_SIPI for an application processor after INIT (RUNNING ->
 * WAIT_SIPI by its own CPU; WAIT_SIPI -> RUNNABLE when a SIPI arrives),
 * and an IPI is a pending interrupt plus VCPU_REQ_KICK, as for devices.
 * An application processor waiting for its SIPI (after INIT, or from
 * power-on) is HALTED with interrupts off; the wait itself is the local
 * APIC's (vm_waits_for_sipi), so it travels with the device state.
 */
enum vcpu_state {
	VCPU_IDLE,		/* not placed on a CPU */
	VCPU_RUNNABLE,		/* placed; can run */
	VCPU_RUNNING,		/* a CPU is inside vcpu_run() for it */
	VCPU_HALTED,		/* executed HLT: waits for an interrupt */
	VCPU_STATE_COUNT
};

/*
 * Requests to the CPU a vCPU is placed on (v->req): anyone sets them,
 * only that CPU takes them (hv/vcpu.c: vcpu_request, vcpu_take_request).
 */
#define VCPU_REQ_KICK		(1u << 0)	/* leave the guest, look at vm->state */
#define VCPU_REQ_FPU_SYNC	(1u << 1)	/* save its extended state to v->fpu */
#define VCPU_REQ_REMOVE		(1u << 2)	/* drop it from the run queue */
#define VCPU_REQ_INIT		(1u << 3)	/* go to the INIT state (guest reboot) */
#define VCPU_REQ_CLOCK_STOPPED	(1u << 4)	/* its kvmclock says the guest stood
						 * still (hv/kvmclock.h) */

struct vcpu_stats {
	uint64_t exits[EXIT_COUNT];
	uint64_t inits, sipis;		/* INIT and SIPI taken */
	uint64_t pv_eois;		/* interrupts the guest ended by PV EOI */
	uint64_t guest_ns;		/* time inside the guest */
	uint64_t host_ns;		/* time in ferry handling its exits */
	uint64_t steal_ns;		/* time runnable but waiting for its CPU (Q) */
	uint64_t switches;		/* times put on its CPU to run (Q) */
};

/* XSAVE area in the standard format (Intel SDM Vol. 1 13.4). */
#define FPU_AREA_SIZE 4096
struct fpu_area { uint8_t bytes[FPU_AREA_SIZE]; } __attribute__((aligned(64)));

/* The guest's TSC: tsc_scaled(host TSC, mult) + offset (hv/tsc.h), and
 * kvmclock's one reference for every vCPU (hv/kvmclock.h): at guest TSC
 * clock_tsc the guest clock (vm_clock_ns) read clock_ns. */
struct vm_tsc {
	uint64_t offset;
	uint64_t mult;			/* TSC_MULT_ONE: the host's rate */
	uint32_t gen;			/* bumped with each change */
	uint64_t clock_tsc, clock_ns;	/* taken at one host TSC reading */
};

struct vcpu {
	struct vmm_vcpu hw;		/* what the back end sees (hv/vmm.h) */
	struct vm *vm;			/* (c) */
	struct fpu_area *fpu;		/* (c) pointer; contents (o): the CPU it is placed
					 * on saves into it (fpu_owner), on request too */
	int cpu;			/* (Q) physical CPU it is placed on, -1 none */
	enum vcpu_state state;		/* (Q) see the table above; vmstate_load_vcpu
					 * writes it while cpu is -1 */
	uint32_t req;			/* (a) VCPU_REQ_* (hw.bad_entry is the back
					 * end's own one-shot request: hv/vmm.h) */
	volatile uint64_t guest_seq;	/* (v) odd while in guest mode; read (a) by
					 * vm_flush_gpt */
	uint64_t thr_start_ns;		/* (v) start of the current throttle period */
	uint64_t thr_busy0_ns;		/* (v) its time in guest + in ferry at that start */
	uint64_t thr_base_ns;		/* (v) that time per period while unthrottled */
	uint64_t thr_until_ns;		/* (o) throttled: not picked until then */
	bool pv_eoi_hint;		/* (v) an interrupt may be in service: try PV EOI */
	bool halted_if;			/* (v) halted with interrupts enabled; read by
					 * its CPU's scheduler and racily by `list` */
	uint64_t stale_gpa;		/* (v) the last fault retried as a stale walk */
	uint64_t stale_gen;		/* (v) ... under this vm->hw.gpa_gen */
	uint32_t stale_repeats;		/* (v) ... and how often in a row */
	bool halted_nmi_blocked;	/* (v) halted in an NMI handler: another NMI
					 * waits (as halted_if, for the scheduler) */
	bool halt_cli;			/* (a) in HLT with interrupts off: set by its
					 * exit before it looks at the others, cleared
					 * at its next entry (exit.c do_hlt) */
	uint64_t runnable_since_ns;	/* (Q) when it last became runnable */
	struct sched_entity se;		/* the scheduling policy's part (hv/sched.c) */
	uint32_t weight, cap_bp;	/* its share: `sched` (0 weight: the default) */
	uint64_t affinity;		/* host CPUs it may run on: `pin` (0: any) */
	bool notified;			/* (a) vcpu_notify sent its CPU a kick IPI that
					 * vcpu_run has not yet passed: no second one */
	uint64_t irq_quiet_until_ns;	/* (D, read atomically) no interrupt or event can
					 * be pending for it before this guest-clock time:
					 * set when none was, cleared by anything that
					 * changes the devices (hv/vm_devices.c) */
	uint64_t timer_hint_ns;		/* (D, read atomically) its next device timer as
					 * found when it last took an interrupt, for the
					 * entry that follows, where irq_quiet_until_ns
					 * has just been cleared (vcpu_arm_timer) */
	struct vcpu_stats stats;	/* (v) read racily by the shell */
	struct {			/* the boot CPU's load balancer (hv/sched.c) */
		uint64_t used_ns, steal_ns;	/* stats at its last look */
		uint64_t moved_ns;		/* when it last moved this vCPU */
		bool seen;
	} bal;
	struct vm_tsc tsc;		/* (v) the VM's TSC as its back end has it */
	struct vm_exit exit;		/* (v) the last exit */
};

/*
 * An arriving guest's first steps on the destination (time_now_us; 0: not
 * yet), from COMMIT to its first frame out: where the gap seen from outside
 * goes (docs/migration.md, "After COMMIT").  vm_arrival_note() sets each
 * once; the first frame out logs the split.
 */
enum vm_arr_step {
	VM_ARR_COMMIT,		/* COMMIT taken from the stream */
	VM_ARR_ACTIVE,		/* vm_activate set it running (just before) */
	VM_ARR_ENTRY,		/* vCPU 0 entered the guest */
	VM_ARR_RX,		/* a frame handed to its NIC */
	VM_ARR_TX,		/* a frame from its NIC into the switch */
	VM_ARR_COUNT
};

struct vm_arrival {
	bool armed;			/* (a) between COMMIT and the first frame out */
	uint64_t t[VM_ARR_COUNT];	/* (a) */
	uint64_t exits0[EXIT_COUNT];	/* vCPU 0's exits at its first entry here */
	uint64_t guest_ns0, host_ns0;	/* and its time in guest and in ferry */
};

struct vm {
	struct vmm_vm hw;		/* what the back end sees (hv/vmm.h): EPT/NPT.
					 * hw.gpt: root and format (c), from vm_init;
					 * its entries change by the dirty log's rules
					 * (hv/mm/dirty.h) and vm_flush_gpt, not under L */
	char name[VM_NAME_MAX];		/* (c) */
	unsigned int id;		/* (c) 1.., also the back end's ASID/VPID seed */
	uint64_t serial;		/* (c) never reused while the host runs */
	spinlock_t lock;
	enum vm_state state;		/* (L) read without it by the vCPU loop and the
					 * scheduler: a change is seen after a kick */
	char stop_reason[128];		/* (L) why it stopped, for `list` */

	uint64_t mem_size;		/* (c) bytes of guest RAM (below 3 GiB, then
					 * from 4 GiB: hv/mm/gpmap.h) */
	uint64_t *frames;		/* (c) host frame of each RAM page, in order */
	size_t nr_frames;		/* (c) mem_size / 4 KiB */
	struct dirty_log dirty;		/* pages written while logging: hv/mm/dirty.h */

	struct vcpu *vcpus[VM_MAX_VCPUS];	/* (c) */
	unsigned int nr_vcpus;		/* (c) */
	struct vm_tsc tsc;		/* (L) the guest's TSC: hv/tsc.h; vCPUs read
					 * gen atomically */
	volatile uint32_t throttle_pct;	/* (a) share of time vCPUs sit out (migration) */
	volatile bool mig_owned;	/* (a) a migration task owns it: shell hands off */
	struct vm_mig_status mig;	/* (L) but .round: the migration task alone,
					 * read racily by `list` */

	struct vm_devices *dev;		/* (c) virtual devices, hv/vdev; calls under D */
	spinlock_t dev_lock;
	uint64_t io_dropped;		/* (a) writes to ports nobody handles */
	uint64_t io_unhandled_reads;	/* (a) reads of such ports (all ones) */
	uint64_t mmio_dropped;		/* (a) writes to addresses nobody claims */
	uint64_t mmio_unhandled_reads;	/* (a) reads of such addresses (all ones) */
	uint64_t kvmclock_outside;	/* (a) kvmclock writes that missed guest RAM */
	uint64_t created_ns;		/* (c) */
	uint64_t clock_offset_ns;	/* guest clock = host ns + offset (devices' time):
					 * (c), then written under L only while no vCPU
					 * can run (incoming); read without a lock */

	struct ring *console;		/* (D) the guest's serial output */
	struct conwatch conwatch;	/* (D) its panic banner (hv/conwatch.h) */
	bool conwatch_hint;		/* its end line came: vm_devices_watch looks */
	uint8_t *frame_runs;		/* (c) 1 per 2 MiB of RAM backed by one run */
	bool gpt_ready;			/* (c) vmm->vm_init succeeded */
	char cmdline[256];		/* (c) */
	char kernel[32];		/* (c) module name */
	char initrd[32];		/* (c) module name, "" for none */
	char modules[VM_MODULES_MAX];	/* (c) multiboot1 modules: names, comma-separated */
	volatile bool reset_pending;	/* (a) the guest pulled its reset line */
	uint64_t reboots;		/* (a) resets that restarted it */
	uint32_t weight, cap_pct;	/* its CPU share (`sched`): set by the shell */
	bool nic;			/* (c) */
	uint8_t mac[6];			/* (c) */
	bool pvpanic;			/* (c) a pvpanic device on PCI: Linux guests */
	bool rdcl_no;			/* (c) its CPU says it is not affected by
					 * Meltdown (hv/cpuid.h cpuid_arch_caps) */
	uint64_t crash_loads;		/* (a) pvpanic CRASH_LOADED reports */
	struct vm_arrival arr;		/* an incoming guest's first steps */
};

enum vm_pvpanic { VM_PVPANIC_AUTO, VM_PVPANIC_ON, VM_PVPANIC_OFF };
/* What the guest's CPU says of Meltdown (IA32_ARCH_CAPABILITIES.RDCL_NO):
 * what this host's says (create's default, as KVM does), that it may be
 * affected (create meltdown=affected: the guest can move to any host), or
 * that it is not (a migration's source said so: refused on a host whose CPU
 * is affected). */
enum vm_meltdown { VM_MELTDOWN_HOST, VM_MELTDOWN_AFFECTED, VM_MELTDOWN_NOT_AFFECTED };

/* What `create` asks for. */
#define VM_TSC_KHZ_MIN	1000ull		/* 1 MHz .. */
#define VM_TSC_KHZ_MAX	10000000ull	/* .. 10 GHz, as the local APIC takes */

struct vm_config {
	const char *name;
	const char *kernel;	/* module name */
	const char *initrd;	/* module name, or NULL (Linux kernels only) */
	const char *modules;	/* module names, comma-separated, or NULL
				 * (multiboot1 kernels only: their mods_*) */
	uint64_t mem_mb;
	unsigned int vcpus;
	const char *cmdline;
	bool nic;		/* a virtio-net NIC on PCI */
	const uint8_t *mac;	/* its MAC (unicast, not zero), or NULL: ferry draws one */
	uint32_t weight;	/* its CPU share (`sched`); 0: SCHED_WEIGHT_DEFAULT */
	uint32_t cap_pct;	/* % of one CPU over its vCPUs; 0: none */
	uint64_t tsc_khz;	/* the guest's TSC rate (VM_TSC_KHZ_MIN..MAX); 0: this
				 * host's.  An incoming guest's comes with it. */
	enum vm_pvpanic pvpanic;	/* a pvpanic device: by the kernel's kind,
					 * or as a migration's source had it */
	enum vm_meltdown meltdown;
};

/* Lifecycle (hv/vm.c).  Errors: negative errno, reason in words in err. */
int vm_create(const struct vm_config *cfg, struct vm **out, char *err, size_t errlen);
/* An empty guest (memory, tables, devices, vCPUs in reset state) in
 * VM_INCOMING, owned by the caller (mig_owned) until vm_activate(). */
int vm_create_incoming(const struct vm_config *cfg, struct vm **out, char *err, size_t errlen);
/* VM_INCOMING -> VM_RUNNING (placed on a CPU) or VM_PAUSED. */
int vm_activate(struct vm *vm, bool run, char *err, size_t errlen);
/* Arrival steps (struct vm_arrival): start at COMMIT, note each step once;
 * VM_ARR_TX logs the split and ends it. */
void vm_arrival_start(struct vm *vm);
void vm_arrival_note(struct vm *vm, enum vm_arr_step step);
void vm_arrival_entry(struct vcpu *v);
int vm_start(struct vm *vm, char *err, size_t errlen);
int vm_pause(struct vm *vm, char *err, size_t errlen);
int vm_resume(struct vm *vm, char *err, size_t errlen);
void vm_destroy(struct vm *vm);
/* From the CPU running self, the BSP, after the guest asked for a reset:
 * load its images again and start the BSP from their entry state, the
 * APs waiting for its SIPI, devices reset (the CMOS clock runs on), as a
 * PC does after its reset line. */
void vm_reboot(struct vcpu *self);
/* From the guest's own CPU: stop it with a reason (printf-style). */
void vm_stop(struct vm *vm, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
struct vm *vm_find(const char *name);
struct vm *vm_at(unsigned int slot);	/* iterate 0..VM_MAX-1, NULL for empty slots */
/* The shell CPU's look at every guest's console watch (vm_devices_watch),
 * at most every 100 ms. */
void vm_watch_poll(void);
/* The guest with this serial, NULL once it is gone.  A pointer held across
 * the shell CPU's background work (where a migration may free its guest)
 * is found again this way, never used as it was. */
struct vm *vm_by_serial(uint64_t serial);
const char *vm_state_name(enum vm_state s);
uint64_t vm_clock_ns(struct vm *vm);	/* the guest's device clock */

/* Guest-physical memory access for the core and devices (bounds-checked;
 * writes feed the dirty log while one runs). */
int vm_read_gpa(struct vm *vm, uint64_t gpa, void *buf, size_t len);
int vm_write_gpa(struct vm *vm, uint64_t gpa, const void *buf, size_t len);
void *vm_gpa_to_hva(struct vm *vm, uint64_t gpa);	/* one page; NULL outside RAM */
/* RAM page `page` in hv/mm/gpmap.h's order (below the hole at 3 GiB, then
 * from 4 GiB): what the dirty log and migration count.  NULL past the end. */
void *vm_page_hva(struct vm *vm, uint64_t page);
uint64_t vm_host_high_bytes(struct vm *vm);	/* guest RAM on host frames >= 4 GiB */
/* This host's CPU is not affected by Meltdown: what create's default,
 * meltdown=host, tells a guest, and what a guest told so needs here. */
bool vm_host_rdcl_no(void);

/*
 * The TLB rule of hv/vmm.h, done: bump vm->hw.gpa_gen, then make every vCPU
 * that was in guest mode leave it once, so that each flushes its cached
 * guest-physical translations before it runs again.  Returns when no vCPU
 * can still use a translation from before the call (dirty log steps S3/S7).
 */
void vm_flush_gpt(struct vm *vm);

#endif
