/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * VM objects: creation from a guest image (memory, nested page tables,
 * devices, the vCPU), the life-cycle transitions, and destruction that
 * returns every frame.  State machine:
 *
 *   CREATED --start--> RUNNING <--pause/resume--> PAUSED
 *      any --destroy--> (gone);  RUNNING/PAUSED --fatal exit, poweroff--> STOPPED
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "arch/x86/cpu.h"
#include "arch/x86/mm.h"
#include "arch/x86/percpu.h"
#include "hv/kvmclock.h"
#include "hv/lib/crc32.h"
#include "hv/lib/log.h"
#include "hv/lib/namelist.h"
#include "hv/mm/gpmap.h"
#include "hv/mm/memory.h"
#include "hv/sched.h"
#include "hv/lib/time.h"
#include "hv/tsc.h"
#include "hv/vcpu.h"
#include "hv/gnet.h"
#include "hv/netif.h"
#include "hv/vm.h"
#include "hv/modules.h"
#include "hv/loader/bzimage.h"
#include "hv/loader/mb1elf.h"
#include "hv/loader/mptable.h"
#include "hv/loader/pvh.h"
#include "hv/msr.h"
#include "hv/vm_devices.h"
#include "hv/cpuid.h"
#include "hv/lib/guest_layout.h"

/* The largest guest's RAM, above the hole, ends within the address width
 * its CPUID reports (a CR3 or kvmclock address there must be legal). */
_Static_assert(((uint64_t)VM_MAX_MEM_MB << 20) + (GUEST_HOLE_END - GUEST_HOLE_START) <=
	       1ull << CPUID_GUEST_PHYS_BITS, "VM_MAX_MEM_MB past MAXPHYADDR");

static struct vm *vms[VM_MAX];
static uint64_t serials;		/* (vms_lock) the last vm->serial given */
static spinlock_t vms_lock = SPINLOCK_INIT;

const char *vm_state_name(enum vm_state s)
{
	static const char *const names[] = { "created", "running", "paused", "stopped",
					     "incoming", "rebooting" };
	return s <= VM_REBOOTING ? names[s] : "?";
}

static struct vm *find_locked(const char *name)
{
	for (int i = 0; i < VM_MAX; i++)
		if (vms[i] && !strcmp(vms[i]->name, name))
			return vms[i];
	return NULL;
}

struct vm *vm_find(const char *name)
{
	struct vm *found;

	spin_lock(&vms_lock);
	found = find_locked(name);
	spin_unlock(&vms_lock);
	return found;
}

struct vm *vm_at(unsigned int slot)
{
	return slot < VM_MAX ? vms[slot] : NULL;
}

void vm_watch_poll(void)
{
	static uint64_t next_ns;
	uint64_t now = time_now_ns();

	if (now < next_ns)
		return;
	next_ns = now + 100000000ull;
	for (unsigned int i = 0; i < VM_MAX; i++) {
		struct vm *vm = vm_at(i);

		if (vm)
			vm_devices_watch(vm, now);
	}
}

struct vm *vm_by_serial(uint64_t serial)
{
	struct vm *found = NULL;

	spin_lock(&vms_lock);
	for (int i = 0; i < VM_MAX && !found; i++)
		if (vms[i] && vms[i]->serial == serial)
			found = vms[i];
	spin_unlock(&vms_lock);
	return found;
}

/* ---- guest memory ------------------------------------------------------ */

static const struct gpmap_mem guest_frames = {
	.alloc_contig = mem_alloc_guest_contig,
	.alloc_frame = mem_alloc_guest_frame,
	.free = mem_free_guest_frames,
	.virt = phys_to_virt,
};

/* An incoming guest's RAM: the stream writes every page before it runs. */
static const struct gpmap_mem incoming_frames = {
	.alloc_contig = mem_alloc_guest_contig_unzeroed,
	.alloc_frame = mem_alloc_guest_frame_unzeroed,
	.free = mem_free_guest_frames,
	.virt = phys_to_virt,
};

/* struct vm keeps the map's fields itself (others read them): a view. */
static struct gpmap ram(const struct vm *vm)
{
	return (struct gpmap){ .frames = vm->frames, .runs = vm->frame_runs,
			       .nr_frames = vm->nr_frames, .mem = &guest_frames };
}

static int alloc_ram(struct vm *vm)
{
	struct gpmap m;
	int rc = gpmap_alloc(&m, vm->nr_frames,
			     vm->state == VM_INCOMING ? &incoming_frames : &guest_frames);

	vm->frames = m.frames;
	vm->frame_runs = m.runs;
	return rc;
}

static void free_ram(struct vm *vm)
{
	struct gpmap m = ram(vm);

	gpmap_free(&m);
	vm->frames = NULL;
	vm->frame_runs = NULL;
}

static int map_ram(struct vm *vm)
{
	struct gpmap m = ram(vm);

	return gpmap_map(&m, &vm->hw.gpt);
}

void *vm_gpa_to_hva(struct vm *vm, uint64_t gpa)
{
	struct gpmap m = ram(vm);

	return gpmap_hva(&m, gpa);
}

void *vm_page_hva(struct vm *vm, uint64_t page)
{
	struct gpmap m = ram(vm);

	return gpmap_page_hva(&m, page);
}

uint64_t vm_host_high_bytes(struct vm *vm)
{
	struct gpmap m = ram(vm);

	return (uint64_t)gpmap_host_high_pages(&m) * PAGE_SIZE;
}

int vm_read_gpa(struct vm *vm, uint64_t gpa, void *buf, size_t len)
{
	struct gpmap m = ram(vm);

	return gpmap_read(&m, gpa, buf, len);
}

/* The back ends' instruction fetch (struct vmm_vm's read_gpa). */
static int hw_read_gpa(struct vmm_vm *hw, uint64_t gpa, void *buf, size_t len)
{
	struct vm *vm = (struct vm *)((char *)hw - offsetof(struct vm, hw));

	return vm_read_gpa(vm, gpa, buf, len);
}

/* ferry's own writes into guest RAM bypass EPT/NPT: they feed the dirty
 * log by hand, so that a migration re-sends the pages (the NIC's used
 * rings and received frames, PV EOI flags, kvmclock). */
int vm_write_gpa(struct vm *vm, uint64_t gpa, const void *buf, size_t len)
{
	struct gpmap m = ram(vm);
	int rc = gpmap_write(&m, gpa, buf, len);

	if (rc || !len || !vm->dirty.nr_pages)
		return rc;
	for (uint64_t gfn = gpa >> 12; gfn <= (gpa + len - 1) >> 12; gfn++)
		dirty_log_mark(&vm->dirty, gfn);
	return 0;
}

/* ---- creation and destruction ------------------------------------------- */

uint64_t vm_clock_ns(struct vm *vm)
{
	return time_now_ns() + vm->clock_offset_ns;
}

static void vm_free(struct vm *vm)
{
	/* Devices first: until gnet_detach returns, a delivery on another
	 * CPU may still reach this guest's NIC and, through it, its vCPUs. */
	if (vm->dev)
		vm_devices_free(vm);
	for (unsigned int i = 0; i < vm->nr_vcpus; i++)
		vcpu_free(vm->vcpus[i]);
	if (vm->gpt_ready)
		vmm->vm_destroy(&vm->hw);
	free_ram(vm);
	dirty_log_destroy(&vm->dirty);
	free(vm->console);
	free(vm);
}

static int gpa_copy(void *ctx, uint64_t gpa, const void *src, size_t len)
{
	return vm_write_gpa(ctx, gpa, src, len);
}

static int gpa_zero(void *ctx, uint64_t gpa, size_t len)
{
	static const char zeros[256];

	while (len) {
		size_t n = len < sizeof(zeros) ? len : sizeof(zeros);
		if (vm_write_gpa(ctx, gpa, zeros, n))
			return -EFAULT;
		gpa += n;
		len -= n;
	}
	return 0;
}

/* Check the image before any memory is taken; then load it. */
static int load_image(struct vm *vm, const struct module *m, const struct vm_config *cfg,
		      struct mb1_plan *plan, struct mb1_entry_state *entry,
		      char *err, size_t errlen)
{
	struct loader_mem_ops ops = { gpa_copy, gpa_zero, vm };
	int rc = mb1_load(plan, &ops);

	if (!rc)
		rc = mb1_write_info(plan, cfg->cmdline ? cfg->cmdline : "", &ops, entry);
	if (rc)
		snprintf(err, errlen, "loading '%s' failed: %s", m->name, plan->errmsg);
	return rc;
}

static int check_memory(const struct vm *vm, char *err, size_t errlen)
{
	struct mem_stats st;
	uint64_t need = vm->mem_size + vm->mem_size / 256 + (1u << 20);	/* + tables */

	mem_get_stats(&st);
	if (st.free < need) {
		snprintf(err, errlen, "not enough memory: the guest needs %lu MiB, %lu MiB free",
			 need >> 20, st.free >> 20);
		return -ENOMEM;
	}
	return 0;
}

/* Memory, nested paging, the dirty log, devices: what every guest has. */
static int vm_build_base(struct vm *vm, char *err, size_t errlen)
{
	int rc;

	if ((rc = check_memory(vm, err, errlen)))
		return rc;
	vm->console = calloc(1, sizeof(*vm->console));
	if (!vm->console || alloc_ram(vm)) {
		snprintf(err, errlen, "not enough memory for %lu MiB of guest RAM",
			 vm->mem_size >> 20);
		return -ENOMEM;
	}
	if ((rc = vmm->vm_init(&vm->hw))) {
		snprintf(err, errlen, "%s could not set up nested paging (error %d)", vmm->name, rc);
		return rc;
	}
	vm->gpt_ready = true;
	if ((rc = dirty_log_init(&vm->dirty, vm->nr_frames))) {
		snprintf(err, errlen, "no memory for the dirty-page log");
		return rc;
	}
	if ((rc = map_ram(vm))) {
		snprintf(err, errlen, "mapping guest memory failed (error %d)", rc);
		return rc;
	}
	return 0;
}

/* The devices and n vCPUs: the first in *entry, the others (application
 * processors) in the INIT state, waiting for a SIPI from the guest. */
static int vm_build_cpu(struct vm *vm, const struct cpu_state *entry,
			const struct vm_config *cfg, char *err, size_t errlen)
{
	unsigned int n = cfg->vcpus;
	struct cpu_state init;
	int rc = vm_devices_init(vm, n, cfg->tsc_khz ? cfg->tsc_khz * 1000 : tsc_hz());

	if (rc) {
		snprintf(err, errlen, "creating the virtual devices failed (error %d)", rc);
		return rc;
	}
	vcpu_init_state(&init);
	for (unsigned int i = 0; i < n; i++) {
		rc = vcpu_create(vm, i, i ? &init : entry, &vm->vcpus[i]);
		if (rc) {
			snprintf(err, errlen, "creating vCPU %u failed (error %d)", i, rc);
			return rc;
		}
		vm->vcpus[i]->weight = vm->weight;
		vm->vcpus[i]->cap_bp = sched_cap_split(vm->cap_pct, n);
		vm->nr_vcpus = i + 1;
	}
	vm_tsc_retune(vm);	/* scaled from the start if tsc_khz asks another rate */
	return 0;
}

/*
 * Linux guests (a bzImage or PVH kernel) get the pvpanic device, and with
 * it the PCI bus even without a NIC: Debian's kernel reports its panics
 * there.
 * Multiboot guests do not: ferry's test guests have no driver for it and
 * check that a guest without a NIC sees no PCI bus.  A migration's
 * receiver loads no image: HELLO says whether the guest has one.
 */
static bool wants_pvpanic(const char *kernel)
{
	const struct module *m = kernel ? modules_find(kernel) : NULL;
	const char *why;
	enum loader_kind kind = m ? loader_probe(m->data, m->size, &why) : LOADER_UNKNOWN;

	return kind == LOADER_BZIMAGE || kind == LOADER_PVH;
}

/*
 * A MAC in QEMU's 52:54:00 range (locally administered) when create has no
 * mac=: its low 24 bits a hash of this host's own MAC, the TSC, the try and
 * the name.  Two ferry hosts on one LAN, each with a guest of the same
 * name, must not give both one MAC (as a hash of the name alone did), nor
 * must a guest created again after destroy reuse a MAC that switches on the
 * LAN still place elsewhere.  One taken here is drawn again.  The guest
 * keeps it for its life: reboots keep vm->mac, and migration carries it.
 */
static int pick_mac(const char *name, uint8_t mac[6])
{
	uint8_t host[6] = { 0 };

	netif_mac(host);
	for (unsigned int try = 0; try < 64; try++) {
		uint64_t tsc = rdtsc();
		uint32_t h = crc32_update(0, host, sizeof(host));

		h = crc32_update(h, &try, sizeof(try));
		h = crc32_update(h, &tsc, sizeof(tsc));
		h = crc32_update(h, name, strlen(name));
		mac[0] = 0x52;
		mac[1] = 0x54;
		mac[2] = 0x00;
		mac[3] = (uint8_t)(h >> 16);
		mac[4] = (uint8_t)(h >> 8);
		mac[5] = (uint8_t)h;
		if (!gnet_mac_taken(mac))
			return 0;
	}
	return -EEXIST;
}

/* The MP tables that tell a guest its CPUs, local APICs and I/O APIC
 * (hv/loader/mptable.h), in the BIOS area it scans. */
static int write_mptable(struct vm *vm, unsigned int nr_vcpus)
{
	size_t len = mptable_size(nr_vcpus);
	uint8_t *buf = malloc(len);
	long n;
	int rc;

	if (!buf)
		return -ENOMEM;
	n = mptable_build(buf, len, MPTABLE_GPA, nr_vcpus);
	rc = n < 0 ? (int)n : vm_write_gpa(vm, MPTABLE_GPA, buf, (size_t)n);
	free(buf);
	return rc;
}

/* Guest RAM and its EPT/NPT, once: a reboot loads into what is there. */
static int base_once(struct vm *vm, char *err, size_t errlen)
{
	return vm->gpt_ready ? 0 : vm_build_base(vm, err, errlen);
}

/* A multiboot1 guest's modules (module=A,B): each found by name, with the
 * string GRUB's `module FILE ARGS` would give it, the host module's own
 * command line (its name, then its arguments), in strings[]. */
struct mb1_mods {
	struct mb1_mod_src src[MB1_MAX_MODS];
	unsigned int n;
	char strings[MB1_MOD_STRINGS_MAX];
};

static int find_mb1_modules(const char *list, struct mb1_mods *mods, char *err, size_t errlen)
{
	char name[MODULE_NAME_MAX];
	size_t used = 0;
	int rc;

	mods->n = 0;
	if (!list)
		return 0;
	while ((rc = namelist_next(&list, name, sizeof(name))) > 0) {
		const struct module *m = modules_find(name);
		int w;

		if (mods->n == MB1_MAX_MODS) {
			snprintf(err, errlen, "module=: at most " MB1_MAX_MODS_TEXT " modules");
			return -EINVAL;
		}
		if (!m) {
			snprintf(err, errlen, "no module named '%s' for module= (see 'modules')", name);
			return -ENOENT;
		}
		w = snprintf(mods->strings + used, sizeof(mods->strings) - used, "%s%s%s", m->name,
			     m->args[0] ? " " : "", m->args);
		if (w < 0 || (size_t)w >= sizeof(mods->strings) - used) {
			snprintf(err, errlen, "module=: the modules' command lines exceed %u bytes",
				 MB1_MOD_STRINGS_MAX);
			return -E2BIG;
		}
		mods->src[mods->n++] = (struct mb1_mod_src){ m->data, m->size, mods->strings + used };
		used += (size_t)w + 1;
	}
	if (rc < 0)
		snprintf(err, errlen, "module=: a list of module names");
	return rc;
}

/* A multiboot1 ELF guest (the test guests) and its modules: its entry
 * state in *st. */
static int load_mb1(struct vm *vm, const struct module *m, const struct vm_config *cfg,
		    struct cpu_state *st, char *err, size_t errlen)
{
	struct mb1_entry_state entry;
	struct mb1_plan plan;
	struct mb1_mods *mods = malloc(sizeof(*mods));
	int rc;

	if (!mods) {
		snprintf(err, errlen, "out of memory for the module list");
		return -ENOMEM;
	}
	rc = find_mb1_modules(cfg->modules, mods, err, errlen);
	if (!rc) {
		rc = mb1_prepare(m->data, m->size, vm->mem_size, &plan);
		if (!rc)
			rc = mb1_add_modules(&plan, mods->src, mods->n);
		if (rc)
			snprintf(err, errlen, "'%s' is not a usable guest image: %s", m->name,
				 plan.errmsg);
	}
	if (!rc)
		rc = base_once(vm, err, errlen);
	if (!rc)
		rc = load_image(vm, m, cfg, &plan, &entry, err, errlen);
	free(mods);
	if (rc)
		return rc;
	/* its CPUs, as a BIOS would list them (a multiboot loader passes none) */
	if ((rc = write_mptable(vm, cfg->vcpus))) {
		snprintf(err, errlen, "writing the MP table failed (error %d)", rc);
		return rc;
	}
	vcpu_mb1_state(&entry, st);
	return 0;
}

/* Linux, its initrd and command line: a bzImage by the 64-bit boot
 * protocol, or a vmlinux (any PVH kernel) by its PVH entry.  The entry
 * state in *st. */
static int load_linux(struct vm *vm, const struct module *m, const struct vm_config *cfg,
		      enum loader_kind kind, struct cpu_state *st, char *err, size_t errlen)
{
	struct loader_mem_ops ops = { gpa_copy, gpa_zero, vm };
	const struct module *rd = NULL;
	const char *cl = cfg->cmdline ? cfg->cmdline : "";
	size_t rd_len;
	struct e820_entry map[E820_MAX_ENTRIES];
	union {
		struct bz_plan bz;
		struct pvh_plan pvh;
	} plan;
	const char *why;
	bool first = !vm->gpt_ready;	/* not a reboot's load */
	int rc, n;

	if (cfg->initrd && !(rd = modules_find(cfg->initrd))) {
		snprintf(err, errlen, "no module named '%s' for the initrd (see 'modules')",
			 cfg->initrd);
		return -ENOENT;
	}
	rd_len = rd ? rd->size : 0;
	if (kind == LOADER_PVH) {
		rc = pvh_prepare(m->data, m->size, vm->mem_size, rd_len, strlen(cl), &plan.pvh);
		why = plan.pvh.errmsg;
	} else {
		rc = bz_prepare(m->data, m->size, vm->mem_size, rd_len, strlen(cl), &plan.bz);
		why = plan.bz.errmsg;
	}
	if (rc) {
		snprintf(err, errlen, "'%s' cannot boot: %s", m->name, why);
		return rc;
	}
	if ((rc = base_once(vm, err, errlen)))
		return rc;
	n = e820_build(vm->mem_size, map);
	if (n >= 0 && kind == LOADER_PVH)
		rc = pvh_load(&plan.pvh, &ops, rd ? rd->data : NULL, cl, map, (unsigned)n, st);
	else if (n >= 0)
		rc = bz_load(&plan.bz, &ops, rd ? rd->data : NULL, cl, map, (unsigned)n, st);
	if (n < 0 || rc) {
		snprintf(err, errlen, "loading '%s' failed: %s", m->name,
			 n < 0 ? "no memory map for its RAM" : why);
		return n < 0 ? n : rc;
	}
	if ((rc = write_mptable(vm, cfg->vcpus))) {
		snprintf(err, errlen, "writing the MP table failed (error %d)", rc);
		return rc;
	}
	if (first)	/* a reboot loop must not flood the log (vm_reboot) */
		pr_info("vm %s: Linux loaded, entered by %s", vm->name, kind == LOADER_PVH ?
			"its PVH entry (no decompressor)" : "the 64-bit boot protocol");
	msr_reset(st);
	st->dr6 = 0xffff0ff0;
	st->dr7 = 0x400;
	return 0;
}

/* Load cfg's images into vm (its RAM made first if need be); the first
 * vCPU's entry state in *st. */
static int vm_load(struct vm *vm, const struct vm_config *cfg, struct cpu_state *st,
		   char *err, size_t errlen)
{
	const struct module *m = modules_find(cfg->kernel);
	enum loader_kind kind;
	const char *why;

	if (!m) {
		snprintf(err, errlen, "no module named '%s' (see 'modules')", cfg->kernel);
		return -ENOENT;
	}
	switch (kind = loader_probe(m->data, m->size, &why)) {
	case LOADER_BZIMAGE:
	case LOADER_PVH:
		if (cfg->modules && cfg->modules[0]) {
			snprintf(err, errlen, "module= is for multiboot1 kernels; '%s' is a Linux "
				 "kernel (give it initrd=)", m->name);
			return -EINVAL;
		}
		return load_linux(vm, m, cfg, kind, st, err, errlen);
	case LOADER_MB1:
		if (cfg->initrd) {
			snprintf(err, errlen, "initrd= is for Linux kernels; '%s' is a multiboot1 "
				 "kernel (give it module=)", m->name);
			return -EINVAL;
		}
		return load_mb1(vm, m, cfg, st, err, errlen);
	default:
		snprintf(err, errlen, "'%s' is not a usable guest image: %s", m->name, why);
		return -ENOEXEC;
	}
}

static int vm_build(struct vm *vm, const struct vm_config *cfg, char *err, size_t errlen)
{
	struct cpu_state st;
	int rc = vm_load(vm, cfg, &st, err, errlen);

	return rc ? rc : vm_build_cpu(vm, &st, cfg, err, errlen);
}

/* The configuration the guest was created with (a reboot loads it again). */
static void vm_config_of(struct vm *vm, struct vm_config *cfg)
{
	*cfg = (struct vm_config){
		.name = vm->name, .kernel = vm->kernel,
		.initrd = vm->initrd[0] ? vm->initrd : NULL, .mem_mb = vm->mem_size >> 20,
		.vcpus = vm->nr_vcpus, .cmdline = vm->cmdline,
		.modules = vm->modules[0] ? vm->modules : NULL,
	};
}

void vm_reboot(struct vcpu *self)
{
	struct vm *vm = self->vm;
	struct vm_config cfg;
	struct cpu_state st;
	char err[128];
	enum vm_state was;

	/* VM_REBOOTING while the images are loaded again: no vCPU enters the
	 * guest, and pause, resume and migrate refuse it (it is neither
	 * running nor paused).  Only the BSP gets here (vcpu_run), whichever
	 * vCPU pulled the reset line. */
	spin_lock(&vm->lock);
	was = vm->state;
	if (was == VM_RUNNING || was == VM_PAUSED)
		vm->state = VM_REBOOTING;
	spin_unlock(&vm->lock);
	if (was != VM_RUNNING && was != VM_PAUSED)
		return;
	/* The other vCPUs out of the guest first; they come back in the INIT
	 * state, waiting for the new system's SIPIs. */
	for (unsigned int i = 0; i < vm->nr_vcpus; i++)
		if (vm->vcpus[i] != self)
			vcpu_kick_and_wait(vm->vcpus[i]);
	/* an AP's pull of the same reset, after the BSP took it but before
	 * the AP left: one reboot, not two */
	__atomic_store_n(&vm->reset_pending, false, __ATOMIC_SEQ_CST);
	/* A frame another CPU began to deliver before VM_REBOOTING (the state
	 * is checked under dev_lock) is written into the old system's buffers
	 * now, not into the new kernel as it is loaded. */
	spin_lock(&vm->dev_lock);
	spin_unlock(&vm->dev_lock);
	vm_config_of(vm, &cfg);
	if (vm_load(vm, &cfg, &st, err, sizeof(err))) {
		vm_stop(vm, "reboot failed: %s", err);
		return;
	}
	vm_devices_reset(vm);
	vcpu_reset(self, &st);
	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		struct vcpu *ap = vm->vcpus[i];

		if (ap == self)
			continue;
		/* an AP halted in the old system sleeps on until the new one's
		 * SIPI: what its HLT said of the old one is void (a stale IF
		 * would keep the new system from powering off on cli;hlt) */
		ap->halted_if = false;
		ap->halted_nmi_blocked = false;
		vcpu_request(ap, VCPU_REQ_INIT);
	}
	spin_lock(&vm->lock);
	if (vm->state == VM_REBOOTING)	/* not stopped or destroyed meanwhile */
		vm->state = was;
	spin_unlock(&vm->lock);
	for (unsigned int i = 0; i < vm->nr_vcpus; i++)
		if (vm->vcpus[i] != self)
			sched_wake(vm->vcpus[i]);
	uint64_t n = __atomic_add_fetch(&vm->reboots, 1, __ATOMIC_RELAXED);
	if (n <= 3 || !(n & (n - 1)))	/* a reboot loop does not flood the log */
		pr_info("vm %s: rebooted (%lu)", vm->name, n);
}

/* Publish vm in a free slot; -ENOSPC / -EEXIST if it cannot be. */
static int vm_register(struct vm *vm, char *err, size_t errlen)
{
	int rc = -ENOSPC;

	spin_lock(&vms_lock);
	if (find_locked(vm->name)) {
		rc = -EEXIST;
	} else {
		for (int i = 0; i < VM_MAX; i++)
			if (!vms[i]) {
				vms[i] = vm;
				vm->id = i + 1;
				vm->serial = ++serials;
				rc = 0;
				break;
			}
	}
	spin_unlock(&vms_lock);
	if (rc == -ENOSPC)
		snprintf(err, errlen, "too many guests (at most %d)", VM_MAX);
	else if (rc)
		snprintf(err, errlen, "a guest named '%s' exists already", vm->name);
	return rc;
}

/* tsc_khz: 0 (this host's rate) or within the local APIC's range. */
static bool tsc_khz_ok(const struct vm_config *cfg)
{
	return !cfg->tsc_khz || (cfg->tsc_khz >= VM_TSC_KHZ_MIN && cfg->tsc_khz <= VM_TSC_KHZ_MAX);
}

static struct vm *refused(int *rc, int code, char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* vm_new's refusal: code in *rc, the reason in err. */
static struct vm *refused(int *rc, int code, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	*rc = code;
	return NULL;
}

/* A guest's bookkeeping from cfg, checked; NULL with *rc and err saying why
 * (-ENODEV, -EEXIST for the name, -EADDRINUSE for the MAC, -EINVAL, -E2BIG
 * beyond this host's limits, -ENOMEM). */
static struct vm *vm_new(const struct vm_config *cfg, int *rc, char *err, size_t errlen)
{
	struct vm *vm;

	if (!vmm)
		return refused(rc, -ENODEV, err, errlen,
			       "this machine has no usable hardware virtualization");
	if (vm_find(cfg->name))
		return refused(rc, -EEXIST, err, errlen, "a guest named '%s' exists already",
			       cfg->name);
	/* kept whole, for a reboot and a migration to load the same again */
	if (strlen(cfg->kernel) >= sizeof(vm->kernel) ||
	    (cfg->initrd && strlen(cfg->initrd) >= sizeof(vm->initrd)))
		return refused(rc, -EINVAL, err, errlen, "module names of at most %zu characters",
			       sizeof(vm->kernel) - 1);
	if (cfg->modules && strlen(cfg->modules) >= sizeof(vm->modules))
		return refused(rc, -EINVAL, err, errlen, "module=: at most %zu characters of names",
			       sizeof(vm->modules) - 1);
	if (cfg->cmdline && strlen(cfg->cmdline) >= sizeof(vm->cmdline))
		return refused(rc, -EINVAL, err, errlen,
			       "cmdline: at most %zu bytes (this one has %zu)",
			       sizeof(vm->cmdline) - 1, strlen(cfg->cmdline));
	if (!tsc_khz_ok(cfg))
		return refused(rc, -EINVAL, err, errlen, "tsc_khz=%llu: a rate from %llu to %llu kHz",
			       (unsigned long long)cfg->tsc_khz, VM_TSC_KHZ_MIN, VM_TSC_KHZ_MAX);
	if (cfg->vcpus < 1 || cfg->vcpus > VM_MAX_VCPUS ||
	    cfg->vcpus > VM_VCPUS_PER_CPU * cpu_count)
		return refused(rc, cfg->vcpus ? -E2BIG : -EINVAL, err, errlen,
			       "vcpus=%u: a guest may have 1 to %u vCPUs here (%u per host CPU, "
			       "at most %u)", cfg->vcpus,
			       cpu_count * VM_VCPUS_PER_CPU < VM_MAX_VCPUS ?
			       cpu_count * VM_VCPUS_PER_CPU : VM_MAX_VCPUS,
			       VM_VCPUS_PER_CPU, VM_MAX_VCPUS);
	/* the NIC's MAC: the operator's, free here, or one drawn free */
	if (cfg->nic && cfg->mac && gnet_mac_taken(cfg->mac))
		return refused(rc, -EADDRINUSE, err, errlen,
			       "MAC %02x:%02x:%02x:%02x:%02x:%02x is in use here", cfg->mac[0],
			       cfg->mac[1], cfg->mac[2], cfg->mac[3], cfg->mac[4], cfg->mac[5]);
	if (cfg->meltdown == VM_MELTDOWN_NOT_AFFECTED && !vm_host_rdcl_no())
		return refused(rc, -EINVAL, err, errlen, "the guest's CPU says it is not affected "
			       "by Meltdown (RDCL_NO) and this host's is");
	vm = calloc(1, sizeof(*vm));
	if (!vm)
		return refused(rc, -ENOMEM, err, errlen, "out of memory for the guest's bookkeeping");
	if (cfg->mac)
		memcpy(vm->mac, cfg->mac, sizeof(vm->mac));
	else if (cfg->nic && pick_mac(cfg->name, vm->mac)) {
		free(vm);
		return refused(rc, -EADDRINUSE, err, errlen,
			       "no free MAC after 64 draws: give one with mac=");
	}
	snprintf(vm->name, sizeof(vm->name), "%s", cfg->name);
	vm->hw.name = vm->name;
	vm->hw.read_gpa = hw_read_gpa;
	vm->hw.dirty = &vm->dirty;
	snprintf(vm->kernel, sizeof(vm->kernel), "%s", cfg->kernel);
	snprintf(vm->initrd, sizeof(vm->initrd), "%s", cfg->initrd ? cfg->initrd : "");
	snprintf(vm->modules, sizeof(vm->modules), "%s", cfg->modules ? cfg->modules : "");
	snprintf(vm->cmdline, sizeof(vm->cmdline), "%s", cfg->cmdline ? cfg->cmdline : "");
	vm->mem_size = cfg->mem_mb << 20;
	vm->nic = cfg->nic;
	vm->pvpanic = cfg->pvpanic == VM_PVPANIC_AUTO ? wants_pvpanic(cfg->kernel) :
		      cfg->pvpanic == VM_PVPANIC_ON;
	vm->rdcl_no = cfg->meltdown == VM_MELTDOWN_HOST ? vm_host_rdcl_no() :
		      cfg->meltdown == VM_MELTDOWN_NOT_AFFECTED;
	vm->nr_frames = vm->mem_size / PAGE_SIZE;
	vm->created_ns = time_now_ns();
	vm->weight = cfg->weight ? cfg->weight : SCHED_WEIGHT_DEFAULT;
	vm->cap_pct = cfg->cap_pct;
	return vm;
}

bool vm_host_rdcl_no(void)
{
	return cpus[0].caps.rdcl_no;
}

int vm_create(const struct vm_config *cfg, struct vm **out, char *err, size_t errlen)
{
	int rc = 0;
	struct vm *vm = vm_new(cfg, &rc, err, errlen);

	if (!vm)
		return rc;
	rc = vm_build(vm, cfg, err, errlen);
	if (!rc)
		rc = vm_register(vm, err, errlen);
	if (rc) {
		vm_free(vm);
		return rc;
	}
	pr_info("vm %s: created (%lu MiB, kernel %s)", vm->name, cfg->mem_mb, vm->kernel);
	*out = vm;
	return 0;
}

int vm_create_incoming(const struct vm_config *cfg, struct vm **out, char *err, size_t errlen)
{
	struct mb1_entry_state zero;
	struct cpu_state entry;
	int rc = 0;
	struct vm *vm = vm_new(cfg, &rc, err, errlen);

	if (!vm)
		return rc;
	memset(&zero, 0, sizeof(zero));		/* the source's state replaces it */
	vcpu_mb1_state(&zero, &entry);
	vm->state = VM_INCOMING;
	vm->mig_owned = true;
	rc = vm_build_base(vm, err, errlen);
	if (!rc)
		rc = vm_build_cpu(vm, &entry, cfg, err, errlen);
	if (!rc)
		rc = vm_register(vm, err, errlen);
	if (rc) {
		vm_free(vm);
		return rc;
	}
	*out = vm;
	return 0;
}

/* ---- life cycle ----------------------------------------------------------- */

static int set_state(struct vm *vm, enum vm_state from, enum vm_state to,
		     const char *verb, char *err, size_t errlen)
{
	int rc = 0;

	spin_lock(&vm->lock);
	if (vm->state != from) {
		snprintf(err, errlen, "cannot %s '%s': it is %s", verb, vm->name,
			 vm_state_name(vm->state));
		rc = -EBUSY;
	} else {
		vm->state = to;
	}
	spin_unlock(&vm->lock);
	return rc;
}

/*
 * Onto a CPU, in two steps: every vCPU placed while the guest is still
 * `from` (not runnable, so none of it runs yet), and if every one found a
 * CPU, the guest becomes `to` and its vCPUs are woken.  A guest for which
 * no CPU has room stays as it was and has run nothing: a start that fails
 * starts nothing, an arrival that fails has not run beside its source.
 */
static int place_vcpus(struct vm *vm, enum vm_state from, const char *verb, char *err,
		       size_t errlen)
{
	int rc = set_state(vm, from, from, verb, err, errlen);	/* only the check */

	if (rc)
		return rc;
	for (unsigned int i = 0; i < vm->nr_vcpus && !rc; i++)
		rc = sched_add(vm->vcpus[i]);
	if (rc) {
		for (unsigned int i = 0; i < vm->nr_vcpus; i++)
			sched_remove(vm->vcpus[i]);
		snprintf(err, errlen, "no CPU can run its vCPUs (run queues full)");
	}
	return rc;
}

static int go(struct vm *vm, enum vm_state from, enum vm_state to, const char *verb,
	      char *err, size_t errlen)
{
	int rc = set_state(vm, from, to, verb, err, errlen);

	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		if (rc)
			sched_remove(vm->vcpus[i]);
		else
			sched_wake(vm->vcpus[i]);
	}
	return rc;
}

int vm_start(struct vm *vm, char *err, size_t errlen)
{
	int rc = place_vcpus(vm, VM_CREATED, "start", err, errlen);

	if (!rc)
		rc = go(vm, VM_CREATED, VM_RUNNING, "start", err, errlen);
	if (!rc)
		pr_info("vm %s: started on CPU %d", vm->name, vm->vcpus[0]->cpu);
	return rc;
}

int vm_activate(struct vm *vm, bool run, char *err, size_t errlen)
{
	int rc = place_vcpus(vm, VM_INCOMING, "activate", err, errlen);

	if (!rc) {
		/* This host's TSC may run at another rate: the guest's TSC keeps
		 * its own, scaled if need be since vmstate_load_time, and its
		 * kvmclock says so before its first instruction here (its memory
		 * is all in). */
		kvmclock_update_all(vm);
		kvmclock_guest_stopped(vm);	/* it stood still from its last round */
		if (vm->nic)
			gnet_arrived(vm);	/* the LAN learns where its MAC went */
		/* before: once running, its vCPU may send its first frame (and
		 * the arrival's report) on another CPU before go returns */
		vm_arrival_note(vm, VM_ARR_ACTIVE);
		rc = go(vm, VM_INCOMING, run ? VM_RUNNING : VM_PAUSED, "activate", err, errlen);
	}
	if (!rc && run)
		gnet_wake(vm);		/* the frames that came with it, then any since */
	return rc;
}

void vm_flush_gpt(struct vm *vm)
{
	uint64_t seq[VM_MAX_VCPUS];

	__atomic_add_fetch(&vm->hw.gpa_gen, 1, __ATOMIC_SEQ_CST);
	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		seq[i] = __atomic_load_n(&vm->vcpus[i]->guest_seq, __ATOMIC_SEQ_CST);
		if (seq[i] & 1)
			vcpu_kick(vm->vcpus[i]);
	}
	/* an even count: outside the guest, sees the new gpa_gen at entry */
	for (unsigned int i = 0; i < vm->nr_vcpus; i++)
		while ((seq[i] & 1) &&
		       __atomic_load_n(&vm->vcpus[i]->guest_seq, __ATOMIC_SEQ_CST) == seq[i])
			cpu_relax();
}

int vm_pause(struct vm *vm, char *err, size_t errlen)
{
	int rc = set_state(vm, VM_RUNNING, VM_PAUSED, "pause", err, errlen);

	if (rc)
		return rc;
	for (unsigned int i = 0; i < vm->nr_vcpus; i++) {
		vcpu_fpu_sync_soon(vm->vcpus[i]);	/* its state to memory on the way out */
		vcpu_kick_and_wait(vm->vcpus[i]);
	}
	/* A frame another CPU began to deliver while the guest still ran
	 * (vm_nic_rx_frame checks the state under dev_lock) is written, and
	 * its pages marked dirty, before this returns: a migration's last
	 * round and device state then agree. */
	spin_lock(&vm->dev_lock);
	spin_unlock(&vm->dev_lock);
	/* A vCPU still in its exit may have stopped the guest (power-off,
	 * panic, triple fault): that is no pause. */
	spin_lock(&vm->lock);
	if (vm->state != VM_PAUSED) {
		snprintf(err, errlen, "'%s' %s while pausing: %s", vm->name,
			 vm_state_name(vm->state), vm->stop_reason);
		rc = -EBUSY;
	}
	spin_unlock(&vm->lock);
	/* An AP pulled the reset line and the BSP has yet to reboot: the
	 * guest runs on to do that, as it does when the reboot itself is
	 * under way (a paused guest that migrated would lose its reset). */
	if (!rc && __atomic_load_n(&vm->reset_pending, __ATOMIC_ACQUIRE)) {
		vm_resume(vm, err, errlen);
		snprintf(err, errlen, "cannot pause '%s': it is rebooting", vm->name);
		rc = -EBUSY;
	}
	return rc;
}

int vm_resume(struct vm *vm, char *err, size_t errlen)
{
	int rc = set_state(vm, VM_PAUSED, VM_PAUSED, "resume", err, errlen);	/* only the check */

	if (rc)
		return rc;
	/* Its clock ran on while it was paused: its kvmclock says so before
	 * any vCPU enters, or Linux takes a pause past 20 s for a soft
	 * lock-up.  Every resume comes here: the operator's, a doubt settled
	 * (hv/migrate/doubt.c), a migration that failed or was cancelled. */
	kvmclock_guest_stopped(vm);
	rc = set_state(vm, VM_PAUSED, VM_RUNNING, "resume", err, errlen);
	if (rc)
		return rc;
	for (unsigned int i = 0; i < vm->nr_vcpus; i++)
		sched_wake(vm->vcpus[i]);
	gnet_wake(vm);			/* the frames that waited */
	return 0;
}

void vm_stop(struct vm *vm, const char *fmt, ...)
{
	va_list ap;

	spin_lock(&vm->lock);
	if (vm->state == VM_RUNNING || vm->state == VM_PAUSED || vm->state == VM_REBOOTING) {
		vm->state = VM_STOPPED;
		va_start(ap, fmt);
		vsnprintf(vm->stop_reason, sizeof(vm->stop_reason), fmt, ap);
		va_end(ap);
	}
	spin_unlock(&vm->lock);
	for (unsigned int i = 0; i < vm->nr_vcpus; i++)
		vcpu_kick(vm->vcpus[i]);	/* the others leave the guest too */
	pr_info("vm %s: stopped: %s", vm->name, vm->stop_reason);
}

/* Force off and free everything; `mem` shows all of it back. */
void vm_destroy(struct vm *vm)
{
	spin_lock(&vm->lock);
	if (vm->state != VM_CREATED)
		vm->state = VM_STOPPED;
	spin_unlock(&vm->lock);
	for (unsigned int i = 0; i < vm->nr_vcpus; i++)
		sched_remove(vm->vcpus[i]);
	spin_lock(&vms_lock);
	vms[vm->id - 1] = NULL;
	spin_unlock(&vms_lock);
	pr_info("vm %s: destroyed", vm->name);
	vm_free(vm);
}
