/* SPDX-License-Identifier: BSD-2-Clause */
/* Two fake ferry hosts for the migration end-to-end test (mig_host.h). */
#define _GNU_SOURCE		/* memmem */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "arch/x86/vmx/ept.h"
#include "hv/crypto/noise.h"
#include "hv/crypto/random.h"
#include "hv/net/cksum.h"
#include "hv/lib/time.h"
#include "hv/migrate/migrate.h"
#include "hv/mm/memory.h"
#include "hv/modules.h"
#include "hv/netif.h"
#include "hv/tsc.h"
#include "hv/version.h"
#include "hv/vmstate.h"
#include "tests/unit/mig_host.h"
#include "hv/modules.h"
#include "tests/unit/net_free.h"

#define RAM_PA	0x180000000ull		/* made-up host frames of guest RAM */

struct mh_world W;
struct netif host_if;
const char ferry_version[] = "0.1.0-test";

/* ---- the network (hv/netif.h) ---- */

/* Where a TCP segment's header and payload are in frame f, if it is one. */
static bool tcp_of(const uint8_t *f, size_t len, size_t *tcp, size_t *payload)
{
	size_t ihl, thl, tot;

	*payload = 0;
	if (len < 14 + 20 + 20 || f[12] != 0x08 || f[13] != 0x00 || f[23] != 6)
		return false;
	ihl = (size_t)(f[14] & 0xf) * 4;
	tot = (size_t)f[16] << 8 | f[17];
	thl = (size_t)(f[14 + ihl + 12] >> 4) * 4;
	if (tot < ihl + thl || 14 + tot > len)
		return false;
	*tcp = 14 + ihl;
	*payload = tot - ihl - thl;
	return true;
}

/*
 * A COMMIT record at the start of a TCP payload: type 0x4d0a, LE; or,
 * sealed, the one record of its size the source sends (46 bytes: the
 * length 44, then COMMIT's 28 bytes and the tag).
 */
static bool is_commit(const uint8_t *f, size_t len, size_t *payload)
{
	size_t tcp, at;

	if (!tcp_of(f, len, &tcp, payload))
		return false;
	at = tcp + (size_t)(f[tcp + 12] >> 4) * 4;
	if (*payload == MIG_HDR_SIZE + 12 + NOISE_REC_OVERHEAD)
		return f[at] == MIG_HDR_SIZE + 12 + NOISE_TAG && f[at + 1] == 0;
	return *payload == MIG_HDR_SIZE + 12 && f[at] == (MIG_COMMIT & 0xff) &&
	       f[at + 1] == MIG_COMMIT >> 8;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The attacker: flip a bit of stream byte W.flip_at, TCP checksum fixed. */
static void flip(uint8_t *f, size_t len)
{
	size_t tcp, payload, at;
	uint32_t seq, off;
	uint16_t tcp_len;

	if (!tcp_of(f, len, &tcp, &payload) || (f[tcp + 2] << 8 | f[tcp + 3]) != MIG_PORT)
		return;
	seq = be32(f + tcp + 4);
	if (f[tcp + 13] & 0x02) {		/* SYN */
		W.src_isn = seq;
		return;
	}
	at = tcp + (size_t)(f[tcp + 12] >> 4) * 4;
	off = seq - W.src_isn;			/* the first data byte is offset 1 */
	if (!payload || W.flip_at < off || W.flip_at >= off + payload)
		return;
	f[at + (W.flip_at - off)] ^= 0x10;
	W.flipped = true;
	tcp_len = (uint16_t)(at + payload - tcp);
	f[tcp + 16] = f[tcp + 17] = 0;
	csum_store(f + tcp + 16, csum_finish(csum_add(csum_pseudo(be32(f + 26), be32(f + 30), 6,
								   tcp_len), f + tcp, tcp_len)));
}

/* The recorder: the source's stream to MIG_PORT, its first W.cap_len bytes
 * (of the first connection only). */
static void capture(const uint8_t *f, size_t len)
{
	size_t tcp, payload, at;
	uint32_t off;

	if (!tcp_of(f, len, &tcp, &payload) || (f[tcp + 2] << 8 | f[tcp + 3]) != MIG_PORT)
		return;
	if (f[tcp + 13] & 0x02) {		/* SYN */
		if (!W.cap_started)
			W.cap_isn = be32(f + tcp + 4);
		W.cap_started = true;
		return;
	}
	at = tcp + (size_t)(f[tcp + 12] >> 4) * 4;
	off = be32(f + tcp + 4) - W.cap_isn - 1;
	for (size_t i = 0; i < payload && off + i < W.cap_len; i++) {
		W.cap[off + i] = f[at + i];
		if (off + i + 1 > W.cap_got)
			W.cap_got = off + i + 1;
	}
}

/* The source host's wire, with the test's faults. */
static int src_xmit(void *ctx, const void *frame, size_t len)
{
	W.unkicked[MH_SRC]++;
	size_t payload;
	bool commit = is_commit(frame, len, &payload);
	uint8_t copy[2048];

	if (W.watch && len >= W.watch_len && memmem(frame, len, W.watch, W.watch_len))
		W.watch_seen = true;
	if (W.cap)
		capture(frame, len);
	if (W.flip_at && len <= sizeof(copy)) {
		memcpy(copy, frame, len);
		flip(copy, len);
		frame = copy;
	}

	W.commit_seen |= commit;
	W.src_payload += payload;
	if ((W.cut_after && W.src_payload > W.cut_after) || (W.cut_at_commit && W.commit_seen))
		W.sim.cut = true;
	if (W.drop_commit && commit)
		return 0;
	return netsim_xmit(ctx, frame, len);
}

static int dst_xmit(void *ctx, const void *frame, size_t len)
{
	W.unkicked[MH_DST]++;
	return netsim_xmit(ctx, frame, len);
}

/* The other host and the guest get their turn: a turn of the destination's
 * loop polls (and kicks) first; frames it leaves unkicked at the end wait
 * for its next turn, which may come after it slept. */
static void others(void)
{
	enum mh_host was = W.running;

	W.running = MH_DST;
	W.unkicked[MH_DST] = 0;
	mig_in_poll();
	if (W.unkicked[MH_DST])
		W.dst_left_unkicked++;
	W.running = was;
	if (W.tick && !W.in_tick) {
		W.in_tick = true;
		W.tick();
		W.in_tick = false;
	}
}

/* A poll takes a little time (10 us), as a loop around it does. */
void netif_poll(void)
{
	W.unkicked[W.running] = 0;
	netsim_step(&W.sim, W.sim.now_us + 10);
	others();
}

void netif_wait(void)
{
	netsim_step(&W.sim, W.sim.now_us + 1000);
	others();
}

void netif_lock(void) {}
void netif_unlock(void) {}
void vm_arrival_start(struct vm *vm)
{
	(void)vm;	/* hv/vm.c's log of the guest's first steps: not here */
}

void netif_uplink_kick(void)
{
	W.unkicked[W.running] = 0;
}

uint64_t netif_now_us(void)
{
	return W.sim.now_us;
}

void mh_run_for(uint64_t us)
{
	uint64_t end = W.sim.now_us + us;

	while (W.sim.now_us < end)
		netif_wait();
}

static void stack_up(struct netstack *s, int side, uint32_t ip)
{
	struct net_config c = { .xmit = side ? dst_xmit : src_xmit,
				.xmit_ctx = &W.sim.port[side], .seed = 7 + (uint64_t)side };

	c.mac[0] = 2;
	c.mac[5] = (uint8_t)(side + 1);
	assert_int_equal(net_init(s, &c), 0);
	netsim_attach(&W.sim, side, s);
	assert_int_equal(net_set_ipv4(s, ip, 24, 0), 0);
}

/* ---- keys (identity.c) ---- */

struct mig_keyring *mig_keyring(void)
{
	return &W.kr[W.running];
}

void mh_key(struct host_key *k, uint8_t n)
{
	memset(k, 0, sizeof(*k));
	for (int i = 0; i < NOISE_KEY; i++)
		k->priv[i] = (uint8_t)(n * 41 + i * 3 + 1);
	assert_int_equal(noise_pubkey(k->pub, k->priv), 0);
}

static uint64_t clock_carry;		/* the simulated clock across worlds */
static uint64_t fake_rng_state;
static unsigned int ups;

static bool fake_hw(uint64_t *out)
{
	fake_rng_state = fake_rng_state * 6364136223846793005ull + 1442695040888963407ull;
	*out = fake_rng_state;
	return true;
}

/* Each host its key; each trusts the other at its address. */
static void keys_up(void)
{
	struct host_key ks, kd;
	char err[160];

	mh_key(&ks, 1);
	mh_key(&kd, 2);
	mig_keyring_set_key(&W.kr[MH_SRC], &ks);
	mig_keyring_set_key(&W.kr[MH_DST], &kd);
	assert_int_equal(mig_trust_add(&W.kr[MH_SRC], "dst", kd.pub, MH_DST_IP, err, sizeof(err)), 0);
	assert_int_equal(mig_trust_add(&W.kr[MH_DST], "src", ks.pub, MH_SRC_IP, err, sizeof(err)), 0);
	fake_rng_state = 12345 + 977 * ++ups;	/* each world its own migration ids */
	assert_int_equal(rng_setup(fake_hw, "FAKE", NULL, "seed", 4), 0);
}

void mh_up(const struct netsim_cfg *link)
{
	mh_up_listen(link, false);
}

void mh_up_listen(const struct netsim_cfg *link, bool insecure)
{
	struct mig_listen_cfg lc = { .port = MIG_PORT, .insecure = insecure };
	char err[160];

	memset(&W, 0, sizeof(W));
	keys_up();
	memset(&host_if, 0, sizeof(host_if));
	netsim_init(&W.sim, link);
	W.sim.now_us = clock_carry;	/* time never runs back, as on a host */
	stack_up(&W.src, 0, MH_SRC_IP);
	stack_up(&host_if.stack, 1, MH_DST_IP);
	host_if.present = true;
	W.running = MH_DST;
	assert_int_equal(mig_listen(&lc, err, sizeof(err)), 0);
	W.running = MH_SRC;
}

static void vm_free(struct mh_vm *v)
{
	if (v->has_pt) {
		dirty_log_destroy(&v->vm.dirty);
		pt_destroy(&v->vm.hw.gpt);
		assert_int_equal(v->pool.live, 0);
	}
	free(v->tlb_w);
	free(v->mem);
	free(v);
}

void mh_down(void)
{
	mig_listen_off();
	mh_run_for(100000);		/* connections wind down */
	for (unsigned int i = 0; i < W.nr_vms; i++)
		vm_free(W.vms[i]);
	net_free(&W.src);
	net_free(&host_if.stack);
	netsim_fini(&W.sim);
	clock_carry = W.sim.now_us;
	memset(&W, 0, sizeof(W));
}

/* ---- the host's modules (hv/modules.h): both hosts have the guest's
 * images but "config" ---- */

const struct module *modules_find(const char *name)
{
	static const char *const here[] = { "guest.elf", "rd.img", "ramdisk" };
	static struct module m;

	for (size_t i = 0; i < sizeof(here) / sizeof(here[0]); i++)
		if (!strcmp(name, here[i])) {
			snprintf(m.name, sizeof(m.name), "%s", name);
			m.args = "";
			return &m;
		}
	return NULL;
}

/* ---- guests (hv/vm.h) ---- */

static struct mh_vm *vm_new(enum mh_host h, const struct vm_config *cfg)
{
	struct mh_vm *v = calloc(1, sizeof(*v));

	assert_non_null(v);
	assert_true(W.nr_vms < MH_MAX_VMS);
	W.vms[W.nr_vms++] = v;
	v->host = h;
	snprintf(v->vm.name, sizeof(v->vm.name), "%s", cfg->name);
	snprintf(v->vm.kernel, sizeof(v->vm.kernel), "%s", cfg->kernel ? cfg->kernel : "");
	snprintf(v->vm.cmdline, sizeof(v->vm.cmdline), "%s", cfg->cmdline ? cfg->cmdline : "");
	snprintf(v->vm.initrd, sizeof(v->vm.initrd), "%s", cfg->initrd ? cfg->initrd : "");
	snprintf(v->vm.modules, sizeof(v->vm.modules), "%s", cfg->modules ? cfg->modules : "");
	v->vm.mem_size = cfg->mem_mb << 20;
	v->vm.nr_frames = v->vm.mem_size / MIG_PAGE_SIZE;
	v->vm.nr_vcpus = cfg->vcpus;
	v->vm.weight = cfg->weight ? cfg->weight : 256;	/* as vm_create sets them */
	v->vm.cap_pct = cfg->cap_pct;
	v->vm.rdcl_no = cfg->meltdown == VM_MELTDOWN_HOST ? !W.meltdown[h] :
			cfg->meltdown == VM_MELTDOWN_NOT_AFFECTED;
	v->mem = calloc(1, v->vm.mem_size);
	assert_non_null(v->mem);
	return v;
}

struct mh_vm *mh_vm_on(enum mh_host h, const char *name)
{
	for (unsigned int i = W.nr_vms; i-- > 0;)
		if (W.vms[i]->host == h && !strcmp(W.vms[i]->vm.name, name))
			return W.vms[i];
	return NULL;
}

bool vm_host_rdcl_no(void)
{
	return !W.meltdown[W.running];
}

struct vm *vm_find(const char *name)
{
	struct mh_vm *v = mh_vm_on(W.running, name);

	return v && !v->destroyed ? &v->vm : NULL;
}

struct vm *vm_at(unsigned int slot)
{
	unsigned int k = 0;

	for (unsigned int i = 0; i < W.nr_vms; i++) {
		struct mh_vm *v = W.vms[i];

		if (v->host != W.running || v->destroyed)
			continue;
		if (k++ == slot)
			return &v->vm;
	}
	return NULL;
}

static struct mh_vm *mh(struct vm *vm)
{
	return (struct mh_vm *)((char *)vm - offsetof(struct mh_vm, vm));
}

int vm_create_incoming(const struct vm_config *cfg, struct vm **out, char *err, size_t errlen)
{
	struct mh_vm *v;

	if (vm_find(cfg->name)) {
		snprintf(err, errlen, "a guest named '%s' exists", cfg->name);
		return -EEXIST;
	}
	v = vm_new(W.running, cfg);
	memset(v->mem, 0xa5, v->vm.mem_size);	/* as hv/vm.c: frames not zeroed */
	v->vm.state = VM_INCOMING;
	v->vm.mig_owned = true;
	*out = &v->vm;
	return 0;
}

int vm_activate(struct vm *vm, bool run, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	assert_int_equal(vm->state, VM_INCOMING);
	vm->state = run ? VM_RUNNING : VM_PAUSED;
	if (W.cut_at_activate)
		W.sim.cut = true;	/* COMMIT came: nothing more gets through */
	return 0;
}

int vm_pause(struct vm *vm, char *err, size_t errlen)
{
	if (vm->state != VM_RUNNING) {
		snprintf(err, errlen, "not running");
		return -EINVAL;
	}
	vm->state = VM_PAUSED;
	return 0;
}

int vm_resume(struct vm *vm, char *err, size_t errlen)
{
	if (vm->state != VM_PAUSED) {
		snprintf(err, errlen, "not paused");
		return -EINVAL;
	}
	vm->state = VM_RUNNING;
	return 0;
}

void vm_destroy(struct vm *vm)
{
	assert_false(mh(vm)->destroyed);
	mh(vm)->destroyed = true;
	vm->state = VM_STOPPED;
}

const char *vm_state_name(enum vm_state s)
{
	static const char *const names[] = { "created", "running", "paused", "stopped",
					     "incoming" };

	return (unsigned)s <= VM_INCOMING ? names[s] : "?";
}

void *vm_gpa_to_hva(struct vm *vm, uint64_t gpa)
{
	assert_false(mh(vm)->destroyed);
	return gpa < vm->mem_size ? mh(vm)->mem + gpa : NULL;
}

/* RAM page g: these guests are smaller than 3 GiB, where the page index
 * and the gfn are the same (hv/mm/gpmap.h). */
void *vm_page_hva(struct vm *vm, uint64_t page)
{
	mh(vm)->page_lookups++;
	return page < vm->nr_frames ? vm_gpa_to_hva(vm, page * MIG_PAGE_SIZE) : NULL;
}

void vm_flush_gpt(struct vm *vm)
{
	mh(vm)->flushes++;
	if (mh(vm)->tlb_w)
		memset(mh(vm)->tlb_w, 0, mh(vm)->vm.nr_frames);	/* every held translation */
}

/* ---- guest state (hv/vmstate.h) ---- */

uint64_t vmstate_xcr0_mask(void)
{
	return 0x7;
}

void vmstate_save_vcpu(struct vm *vm, unsigned int id, struct cpu_state *cpu, uint8_t *xsave,
		       uint32_t *xsave_len, bool *halted)
{
	assert_int_equal(id, 0);
	assert_int_equal(vm->state, VM_PAUSED);
	*cpu = mh(vm)->cpu;
	memcpy(xsave, mh(vm)->xsave, FPU_AREA_SIZE);
	*xsave_len = mh(vm)->xsave_len;
	*halted = mh(vm)->halted;
}

int vmstate_load_vcpu(struct vm *vm, unsigned int id, const struct cpu_state *cpu,
		      const uint8_t *xsave, uint32_t xsave_len, bool halted)
{
	assert_int_equal(id, 0);
	assert_int_equal(vm->state, VM_INCOMING);
	mh(vm)->cpu = *cpu;
	memcpy(mh(vm)->xsave, xsave, xsave_len);
	mh(vm)->xsave_len = xsave_len;
	mh(vm)->halted = halted;
	mh(vm)->cpu_loads++;
	return 0;
}

long vmstate_save_devices(struct vm *vm, uint8_t *buf, size_t cap)
{
	assert_true(cap >= mh(vm)->dev_len);
	mh(vm)->dev_saved_us = W.sim.now_us;
	memcpy(buf, mh(vm)->dev, mh(vm)->dev_len);
	return mh(vm)->dev_len;
}

int vmstate_load_devices(struct vm *vm, const uint8_t *buf, size_t len, bool console)
{
	(void)console;
	if (len > MH_DEV_MAX)
		return -EINVAL;
	memcpy(mh(vm)->dev, buf, len);
	mh(vm)->dev_len = (uint32_t)len;
	mh(vm)->dev_loads++;
	return 0;
}

#define MH_LATE_LEN	64

unsigned int vmstate_drop_tx_waiting(struct vm *vm)
{
	unsigned int n = W.tx_waiting;

	(void)vm;
	W.tx_waiting = 0;
	W.tx_dropped_at = (uint32_t)netif_now_us();
	return n;
}

long vmstate_save_late_frames(struct vm *vm, uint8_t *buf, size_t cap)
{
	uint32_t n = W.late_frames;
	uint16_t l = W.late_bad ? 13 : MH_LATE_LEN;	/* 13: no Ethernet header */
	size_t len = 4 + (size_t)n * (2 + MH_LATE_LEN);

	(void)vm;
	assert_true(cap >= len);
	memcpy(buf, &n, 4);
	for (uint32_t i = 0; i < n; i++) {
		memcpy(buf + 4 + i * (2 + MH_LATE_LEN), &l, 2);
		memset(buf + 6 + i * (2 + MH_LATE_LEN), (int)i, MH_LATE_LEN);
	}
	return (long)len;
}

int vmstate_load_late_frames(struct vm *vm, const uint8_t *buf, size_t len)
{
	uint32_t n;
	uint16_t l;

	if (len < 4)
		return -EINVAL;
	memcpy(&n, buf, 4);
	if (len != 4 + (size_t)n * (2 + MH_LATE_LEN))
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++) {
		memcpy(&l, buf + 4 + i * (2 + MH_LATE_LEN), 2);
		if (l != MH_LATE_LEN)
			return -EINVAL;
	}
	if (vm) {
		mh(vm)->late_got += n;
		mh(vm)->late_after = mh(vm)->dev_loads;
	}
	return 0;
}

int vmstate_check_devices(struct vm *vm, char *why, size_t len)
{
	if (!W.dev_at_odds[mh(vm)->host])
		return 0;
	snprintf(why, len, "queue 0: memory has avail index 7, used index 7; "
		 "the device took 9 and used 9");
	return -EINVAL;
}

void vmstate_save_time(struct vm *vm, uint64_t *guest_tsc, uint64_t *clock_ns)
{
	*guest_tsc = mh(vm)->guest_tsc;
	*clock_ns = mh(vm)->clock_ns;
	mh(vm)->time_saved_us = W.sim.now_us;
}

void vmstate_load_time(struct vm *vm, uint64_t guest_tsc, uint64_t clock_ns)
{
	mh(vm)->guest_tsc = guest_tsc;
	mh(vm)->clock_ns = clock_ns;
	mh(vm)->time_loaded = true;
}

/* ---- the rest of the host ---- */

void mem_get_stats(struct mem_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->total = s->free = 1ull << 30;
}

uint64_t time_now_us(void)		/* the log's time stamps */
{
	return W.sim.now_us;
}

uint64_t vm_tsc_now(struct vm *vm)
{
	return mh(vm)->guest_tsc;
}

uint64_t vm_tsc_hz(struct vm *vm)
{
	(void)vm;
	return tsc_hz();
}

uint64_t tsc_hz(void)
{
	return 2000000000ull;
}

/* ---- a source guest ---- */

static struct seg seg(uint16_t sel, uint16_t attr, uint32_t limit)
{
	return (struct seg){ .sel = sel, .attr = attr, .limit = limit };
}

/* A 64-bit guest in its kernel, interrupted with a #PF on the way. */
static void cpu_64bit(struct cpu_state *c)
{
	memset(c, 0, sizeof(*c));
	for (int i = 0; i < GPR_COUNT; i++)
		c->gpr[i] = 0x0101010101010101ull * (uint64_t)(i + 3);
	c->rip = 0xffffffff81000123ull;
	c->rflags = 0x202;
	c->cr0 = 0x80050033;
	c->cr3 = 0x5000;
	c->cr4 = 0x6a0;
	c->efer = 0xd01;
	c->xcr0 = 3;
	c->dr6 = 0xffff0ff0;
	c->dr7 = 0x400;
	c->cs = seg(0x10, 0xa9b, 0xffffffff);	/* L, G */
	c->ss = c->ds = c->es = seg(0x18, 0xc93, 0xffffffff);
	c->tr = seg(0x28, 0x8b, 0x67);
	c->ldtr = seg(0, 0x82, 0);
	c->gdtr.limit = 0x37;
	c->idtr.limit = 0xfff;
	c->pat = 0x0007040600070406ull;
	c->mtrr_def_type = 0xc06;
	c->pending = (struct event){ true, EVENT_EXCEPTION, 14, true, 0x2 };
}

/* Page g: every 5th zero, every 3rd mostly zero (sparse), others dense. */
static void fill_page(uint8_t *p, uint64_t g)
{
	if (g % 5 == 0)
		return;
	for (size_t i = 0; i < MIG_PAGE_SIZE; i++)
		p[i] = g % 3 ? (uint8_t)(g * 31 + i * 7 + 1) : (i % 512 == 8 ? (uint8_t)g | 1 : 0);
}

struct mh_vm *mh_source_vm(const char *name, unsigned int mb)
{
	struct vm_config cfg = { .name = name, .kernel = "guest.elf", .mem_mb = mb, .vcpus = 1,
				 .cmdline = "console=ttyS0", .weight = 384, .cap_pct = 60,
				 .modules = "ramdisk,config" };	/* a multiboot1 guest's */
	struct mh_vm *v = vm_new(MH_SRC, &cfg);
	struct pt_ops ops = pt_pool_ops(&v->pool);

	for (uint64_t g = 0; g < v->vm.nr_frames; g++)
		fill_page(v->mem + g * MIG_PAGE_SIZE, g);
	v->tlb_w = calloc(v->vm.nr_frames, 1);
	assert_non_null(v->tlb_w);
	assert_int_equal(pt_init(&v->vm.hw.gpt, &ept_format, &ops, PT_SIZE_2M), 0);
	assert_int_equal(pt_map(&v->vm.hw.gpt, 0, RAM_PA, v->vm.mem_size, PT_RWX, 0), 0);
	assert_int_equal(dirty_log_init(&v->vm.dirty, v->vm.nr_frames), 0);
	v->has_pt = true;
	cpu_64bit(&v->cpu);
	v->xsave[0] = 0x7f;			/* FCW */
	v->xsave[1] = 0x03;
	v->xsave[24] = 0x80;			/* MXCSR */
	v->xsave[25] = 0x1f;
	for (int i = 160; i < 416; i++)		/* XMM0-15 */
		v->xsave[i] = (uint8_t)(i * 5 + 1);
	v->xsave[512] = 3;			/* XSTATE_BV: x87, SSE */
	v->xsave_len = MIG_XSAVE_MIN;
	v->dev_len = 300;
	for (unsigned int i = 0; i < v->dev_len; i++)
		v->dev[i] = (uint8_t)(i ^ 0x5a);
	v->guest_tsc = 123456789000ull;
	v->clock_ns = 61728394500ull;
	v->vm.state = VM_RUNNING;
	return v;
}

/* As a vCPU: a write through a translation the CPU still holds writable
 * takes no fault, whatever the EPT says now; only vm_flush_gpt drops
 * those (so a sender that forgot to flush loses writes, as on hardware). */
void mh_guest_write(struct mh_vm *v, uint64_t gfn, uint8_t val)
{
	if (!v->tlb_w[gfn]) {
		int rc = dirty_log_fault(&v->vm.dirty, &v->vm.hw.gpt, gfn * MIG_PAGE_SIZE);

		assert_true(rc >= 0);
		v->tlb_w[gfn] = 1;
	}
	memset(v->mem + gfn * MIG_PAGE_SIZE + 64, val, 256);
}
