/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The migration stream (hv/migrate/stream.c): whole conversations between
 * a source and a destination stream fed in whole, 1-byte and random chunks;
 * the wire layout against an independent hand encoder; every CPU-state
 * field; and a hostile peer: forged, truncated, oversized, out-of-order and
 * random records, all refused with the right code.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hv/cpuid.h"
#include "hv/migrate/stream.h"
#include "hv/migrate/statecheck.h"
#include "hv/lib/crc32.h"
#include "hv/vm.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"	/* cmocka's void **state */

/* The protocol's limits are the VM layer's. */
_Static_assert(MIG_NAME_MAX == VM_NAME_MAX - 1, "name length");
_Static_assert(MIG_KERNEL_MAX == sizeof(((struct vm *)0)->kernel) - 1, "kernel length");
_Static_assert(MIG_CMDLINE_MAX == sizeof(((struct vm *)0)->cmdline) - 1, "cmdline length");
_Static_assert(MIG_XSAVE_MAX == FPU_AREA_SIZE, "XSAVE area");
_Static_assert(MIG_MEM_MAX == (uint64_t)VM_MAX_MEM_MB << 20, "memory");
_Static_assert(MIG_VCPUS_MAX >= VM_MAX_VCPUS, "vCPUs");

#define G_PAGES		256u		/* a 1 MiB guest */
#define PIPE_CAP	(4u << 20)
#define XCR0_DST	0x7ull
#define VCPU_LEN(x)	(4 + MIG_CPU_STATE_WIRE + 1 + 4 + (x))
#define NELEM(a)	(sizeof(a) / sizeof((a)[0]))

enum mode { M_WHOLE, M_BYTE, M_RANDOM };

static uint64_t rng;

static uint32_t rnd(void)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rng >> 33);
}

/* ---- an independent encoder, straight from docs/migration.md ---- */

static uint8_t pb_space[1 << 21];
static struct { uint8_t *b; size_t n; } P = { pb_space, 0 };	/* payload being forged */

static void pb_reset(void) { P.n = 0; }
static void pb_u8(uint8_t v) { P.b[P.n++] = v; }
static void pb_u16(uint16_t v) { pb_u8((uint8_t)v); pb_u8((uint8_t)(v >> 8)); }
static void pb_u32(uint32_t v) { pb_u16((uint16_t)v); pb_u16((uint16_t)(v >> 16)); }
static void pb_u64(uint64_t v) { pb_u32((uint32_t)v); pb_u32((uint32_t)(v >> 32)); }
static void pb_bytes(const void *d, size_t n) { memcpy(P.b + P.n, d, n); P.n += n; }
static void pb_str(const char *s) { pb_u16((uint16_t)strlen(s)); pb_bytes(s, strlen(s)); }
static void pb_page(uint64_t gfn, uint8_t kind) { pb_u64(gfn); pb_u8(kind); }
static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i); }
static uint32_t get32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

static void pb_seg(const struct seg *s)
{
	pb_u16(s->sel);
	pb_u16(s->attr);
	pb_u32(s->limit);
	pb_u64(s->base);
}

static void pb_cpu(const struct cpu_state *c)
{
	const uint64_t regs[] = { c->rip, c->rflags, c->cr0, c->cr2, c->cr3, c->cr4, c->cr8,
				  c->efer, c->xcr0, c->dr0, c->dr1, c->dr2, c->dr3, c->dr6, c->dr7 };
	const struct seg *segs[] = { &c->es, &c->cs, &c->ss, &c->ds, &c->fs, &c->gs, &c->ldtr, &c->tr };
	const uint64_t msrs[] = { c->star, c->lstar, c->cstar, c->sfmask, c->kernel_gs_base,
				  c->sysenter_cs, c->sysenter_esp, c->sysenter_eip, c->pat,
				  c->mtrr_def_type, c->misc_enable };

	for (int i = 0; i < GPR_COUNT; i++)
		pb_u64(c->gpr[i]);
	for (size_t i = 0; i < NELEM(regs); i++)
		pb_u64(regs[i]);
	for (size_t i = 0; i < NELEM(segs); i++)
		pb_seg(segs[i]);
	pb_u64(c->gdtr.base);
	pb_u16(c->gdtr.limit);
	pb_u64(c->idtr.base);
	pb_u16(c->idtr.limit);
	for (size_t i = 0; i < NELEM(msrs); i++)
		pb_u64(msrs[i]);
	pb_u32(c->interruptibility);
	pb_u8(c->pending.valid);
	pb_u8(c->pending.type);
	pb_u8(c->pending.vector);
	pb_u8(c->pending.has_error);
	pb_u32(c->pending.error);
}

static void pb_vcpu(uint32_t id, const struct cpu_state *c, const uint8_t *xs, uint32_t len)
{
	pb_u32(id);
	pb_cpu(c);
	pb_u8(id & 1);			/* halted: odd vCPUs */
	pb_u32(len);
	pb_bytes(xs, len);
}

static const char *name_override;	/* a name struct mig_hello cannot hold */

static void pb_hello(const struct mig_hello *h)
{
	pb_u32(h->proto_version);
	pb_u32(h->cpu_state_version);
	pb_u32(h->dev_version);
	pb_u32(h->vcpus);
	pb_u64(h->mig_id);
	pb_u64(h->mem_size);
	pb_u64(h->cpu_baseline);
	pb_u64(h->arch_caps);
	pb_u64(h->tsc_hz);
	pb_u64(h->guest_tsc);
	pb_u8(h->nic);
	pb_bytes(h->mac, sizeof(h->mac));
	pb_u8(h->pvpanic);
	pb_u32(h->weight);
	pb_u32(h->cap_pct);
	pb_str(h->ferry_version);
	pb_str(name_override ? name_override : h->name);
	pb_str(h->kernel);
	pb_str(h->cmdline);
	pb_str(h->initrd);
	pb_str(h->modules);
	pb_u32(h->timeout_s);
}

/* A whole record around payload P: header, CRC over header[0..12) + P. */
static size_t forge(uint8_t *out, uint16_t type, uint32_t seq)
{
	out[0] = (uint8_t)type;
	out[1] = (uint8_t)(type >> 8);
	out[2] = out[3] = 0;
	put32(out + 4, (uint32_t)P.n);
	put32(out + 8, seq);
	put32(out + 12, crc32_update(crc32_update(0, out, 12), P.b, P.n));
	memcpy(out + 16, P.b, P.n);
	return 16 + P.n;
}

/* Rewrite a record's sequence number (and CRC). */
static void reseq(uint8_t *rec, size_t len, uint32_t seq)
{
	put32(rec + 8, seq);
	put32(rec + 12, crc32_update(crc32_update(0, rec, 12), rec + 16, len - 16));
}

/* Feed a buffer whole; the last return value (1 record, 0 more, <0). */
static int feed(struct mig_stream *s, const uint8_t *b, size_t n, const struct mig_rec **out)
{
	const struct mig_rec *r = NULL;
	size_t used;
	int rc = 0;

	for (; n; b += used, n -= used) {
		rc = mig_stream_feed(s, b, n, &used, &r);
		if (rc < 0)
			return rc;
		assert_true(used <= n);
	}
	if (out)
		*out = r;
	return rc;
}

static int feed_forged(struct mig_stream *s, uint32_t *seq, uint16_t type)
{
	static uint8_t rec[1 << 21];

	return feed(s, rec, forge(rec, type, (*seq)++), NULL);
}

static void expect_refusal(struct mig_stream *s, int rc, uint32_t code, const char *words)
{
	if (rc >= 0 || s->rx_err.code != code || !strstr(s->rx_err.msg, words))
		fail_msg("rc %d code %u '%s', wanted code %u with '%s'", rc, s->rx_err.code,
			 s->rx_err.msg, code, words);
}

/* The destination under test and the next sequence number to forge. */
static struct mig_stream D;
static uint32_t dseq;

static int d_forged(uint16_t type) { return feed_forged(&D, &dseq, type); }
static void d_refuses(uint16_t type, uint32_t code, const char *words)
{
	expect_refusal(&D, d_forged(type), code, words);
	assert_true(D.phase < MIG_PH_COMMITTING);	/* never got to run it */
	mig_stream_fini(&D);
}

/* ---- the guest and its state ---- */

static uint8_t gmem[G_PAGES][MIG_PAGE_SIZE];

/* How a sender tells a zero page (ferry's own test is mig_sparse_encode's). */
static bool page_zero(const uint8_t *p)
{
	for (size_t i = 0; i < MIG_PAGE_SIZE; i++)
		if (p[i])
			return false;
	return true;
}
static uint8_t xsave[2][MIG_XSAVE_MAX];
static uint8_t devblob[300];
static uint8_t frameblob[4 + 2 + 60];	/* a list of one frame, as gnet writes it */

static void guest_init(void)
{
	memset(frameblob, 0x5a, sizeof(frameblob));
	put32(frameblob, 1);
	frameblob[4] = 60;
	frameblob[5] = 0;
	memset(gmem, 0, sizeof(gmem));
	for (unsigned i = 0; i < G_PAGES; i += 29)
		for (unsigned j = 0; j < MIG_PAGE_SIZE; j++)
			gmem[i][j] = (uint8_t)(i * 7 + j * 13 + 1);
	for (unsigned j = 0; j < sizeof(devblob); j++)
		devblob[j] = (uint8_t)(j ^ 0x5a);
}

static void xsave_init(uint8_t *a, uint32_t seed)
{
	memset(a, 0, MIG_XSAVE_MAX);
	a[0] = 0x7f; a[1] = 0x03;		/* FCW */
	a[24] = 0x80; a[25] = 0x1f;		/* MXCSR */
	for (int i = 160; i < 416; i++)		/* XMM0-15 */
		a[i] = (uint8_t)(i * seed + 3);
	a[512] = 0x3;				/* XSTATE_BV */
}

static struct seg seg_of(uint16_t sel, uint16_t attr, uint32_t limit, uint64_t base)
{
	return (struct seg){ .sel = sel, .attr = attr, .limit = limit, .base = base };
}

/* A 64-bit guest with every field distinct and nonzero where it may be. */
static void cpu_init(struct cpu_state *c, uint64_t k)
{
	memset(c, 0, sizeof(*c));
	for (int i = 0; i < GPR_COUNT; i++)
		c->gpr[i] = 0x1111111111111111ull * (uint64_t)(i + 1) + k;
	c->rip = 0xffffffff81000000ull + k;
	c->rflags = 0x246;
	c->cr0 = 0x80050033;
	c->cr2 = 0x7fff12345000ull;
	c->cr3 = 0x1234000;
	c->cr4 = 0x6f0;
	c->cr8 = 3;
	c->efer = 0xd01;
	c->xcr0 = 3;
	c->dr0 = 0x1000; c->dr1 = 0x2000; c->dr2 = 0x3000; c->dr3 = 0x4000;
	c->dr6 = 0xffff0ff0; c->dr7 = 0x401;
	c->es = seg_of(0x23, 0xcf3, 0xfffff, 0x10);
	c->cs = seg_of(0x10, 0x29b, 0xffffffff, 0x20);
	c->ss = seg_of(0x18, 0xc93, 0xfffffffe, 0x30);
	c->ds = seg_of(0x2b, 0xcf1, 0xffffffef, 0x40);
	c->fs = seg_of(0x33, 0x0f3, 0xffff, 0x7f0000001000ull);
	c->gs = seg_of(0x3b, 0x0f2, 0xfffe, 0xffff888000000000ull);
	c->ldtr = seg_of(0x48, 0x082, 0xfff, 0xfffffe0000005000ull);
	c->tr = seg_of(0x40, 0x08b, 0x67, 0xfffffe0000001000ull);
	c->gdtr.base = 0xfffffe0000000000ull;	/* not by struct: padding stays 0 */
	c->gdtr.limit = 0x7f;
	c->idtr.base = 0xfffffe0000002000ull;
	c->idtr.limit = 0xfff;
	c->star = 0x0023001000000000ull;
	c->lstar = 0xffffffff81800000ull;
	c->cstar = 0xffffffff81800100ull;
	c->sfmask = 0x47700;
	c->kernel_gs_base = 0x7f0000002000ull;
	c->sysenter_cs = 0x10;
	c->sysenter_esp = 0xfffffe0000003000ull;
	c->sysenter_eip = 0xffffffff81800200ull;
	c->pat = 0x0007040600070406ull;
	c->mtrr_def_type = 0xc06;
	c->misc_enable = 0x801;
	c->interruptibility = INTR_SHADOW_STI;
	c->pending = (struct event){ true, EVENT_EXCEPTION, 14, true, 0x2 };
}

#define EQ(f) assert_int_equal(a->f, b->f)

/* Both sides are zeroed before their fields are set (padding included):
 * every byte compares, so every field. */
static void cpu_equal(const struct cpu_state *a, const struct cpu_state *b)
{
	assert_memory_equal(a, b, sizeof(*a));
}

static void hello_init(struct mig_hello *h, uint32_t vcpus)
{
	*h = (struct mig_hello){ .proto_version = MIG_PROTO_VERSION,
				 .cpu_state_version = MIG_CPU_STATE_VERSION, .dev_version = 1,
				 .vcpus = vcpus, .mig_id = 0x0123456789abcdefull,
				 .mem_size = G_PAGES * MIG_PAGE_SIZE, .tsc_hz = 2100000000ull,
				 .guest_tsc = 123456789, .nic = true, .arch_caps = ARCH_CAP_RDCL_NO,
				 .mac = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 },
				 .weight = 512, .cap_pct = 50 * vcpus };
	h->cpu_baseline = mig_cpu_baseline(cpuid_guest);
	strcpy(h->ferry_version, "0.1.0 (test)");
	strcpy(h->name, "web-1.a_b");
	strcpy(h->kernel, "testguest.elf");
	strcpy(h->cmdline, "console=ttyS0 mode=pattern");
}

static void rec_equal(const struct mig_rec *a, const struct mig_rec *b)
{
	EQ(type);
	switch (a->type) {
	case MIG_HELLO:		/* no padding; strings zero-filled on both sides */
		assert_memory_equal(&a->hello, &b->hello, sizeof(a->hello));
		break;
	case MIG_HELLO_REPLY:
		assert_memory_equal(&a->reply, &b->reply, sizeof(a->reply));
		break;
	case MIG_PAGES:
		EQ(pages.count);
		for (uint32_t i = 0; i < a->pages.count; i++) {
			EQ(pages.page[i].gfn);
			EQ(pages.page[i].kind);
			if (a->pages.page[i].kind == MIG_PAGE_DATA)
				assert_memory_equal(a->pages.page[i].data, b->pages.page[i].data,
						    MIG_PAGE_SIZE);
		}
		break;
	case MIG_ROUND_END: EQ(round.round); EQ(round.pages); EQ(round.remaining); break;
	case MIG_VCPU_STATE:
		EQ(vcpu.id); EQ(vcpu.xsave_len); EQ(vcpu.halted);
		cpu_equal(&a->vcpu.cpu, &b->vcpu.cpu);
		assert_memory_equal(a->vcpu.xsave, b->vcpu.xsave, a->vcpu.xsave_len);
		break;
	case MIG_DEVICE_STATE:
		EQ(dev.len);
		assert_memory_equal(a->dev.data, b->dev.data, a->dev.len);
		break;
	case MIG_FRAMES:
		EQ(frames.len);
		assert_memory_equal(a->frames.data, b->frames.data, a->frames.len);
		break;
	case MIG_TSC: EQ(tsc.guest_tsc); EQ(tsc.guest_clock_ns); break;
	case MIG_END: EQ(end.rounds); EQ(end.vcpus); EQ(end.pages); break;
	case MIG_ROUND_ACK: EQ(ack.round); EQ(ack.pages); break;
	case MIG_READY: EQ(ready.pages); break;
	case MIG_COMMIT: EQ(commit.paused_ns); EQ(commit.flags); break;
	case MIG_ABORT: EQ(abort.code); assert_string_equal(a->abort.msg, b->abort.msg); break;
	}
}

/* ---- a conversation: two streams, two pipes ---- */

/* Records sent and not yet received.  Page lists are copied; the data they
 * point to (gmem, xsave, devblob) stays put during a conversation. */
struct pipe {
	uint8_t *buf;
	size_t len;
	struct mig_rec q[64];
	struct mig_page pg[64][MIG_PAGES_MAX];
	int head, tail;
};

struct conv {
	struct mig_stream src, dst;
	struct pipe s2d, d2s;
	enum mode mode;
	int records;			/* decoded, both ways */
	int nrec;			/* every source record, for splicing */
	uint16_t type[64];
	size_t off[64], len[64];
	uint8_t *all;
	size_t all_len;
};

static void keep(struct pipe *p, const struct mig_rec *r)
{
	int i = p->tail++ % 64;

	p->q[i] = *r;
	if (r->type == MIG_PAGES) {
		memcpy(p->pg[i], r->pages.page, r->pages.count * sizeof(struct mig_page));
		p->q[i].pages.page = p->pg[i];
	}
}

static void enc(struct conv *c, struct mig_stream *s, struct pipe *p, const struct mig_rec *r)
{
	long n = mig_stream_encode(s, r, p->buf + p->len, PIPE_CAP - p->len);

	if (n < 0)
		fail_msg("encode %s: %ld (%s)", mig_type_name(r->type), n, s->tx_err.msg);
	if (s == &c->src && c->all) {
		c->type[c->nrec] = r->type;
		c->off[c->nrec] = c->all_len;
		c->len[c->nrec++] = (size_t)n;
		memcpy(c->all + c->all_len, p->buf + p->len, (size_t)n);
		c->all_len += (size_t)n;
	}
	p->len += (size_t)n;
	keep(p, r);
}

static void dst_respond(struct conv *c, const struct mig_rec *r)
{
	struct mig_rec y = { .type = 0 };

	if (r->type == MIG_HELLO) {
		y = (struct mig_rec){ .type = MIG_HELLO_REPLY, .reply = {
			.proto_version = MIG_PROTO_VERSION, .xcr0_mask = XCR0_DST,
			.ferry_version = "0.1.0 (dst)", .msg = "warning: nothing" } };
	} else if (r->type == MIG_ROUND_END && r->round.round == 0) {
		y = (struct mig_rec){ .type = MIG_ROUND_ACK, .ack = { 0, c->dst.round0_pages } };
	} else if (r->type == MIG_END) {
		y = (struct mig_rec){ .type = MIG_READY, .ready = { c->dst.total_pages } };
	} else if (r->type == MIG_COMMIT) {
		y.type = MIG_COMMITTED;
	}
	if (y.type)
		enc(c, &c->dst, &c->d2s, &y);
}

static size_t chunk_of(enum mode m, size_t left)
{
	size_t n = m == M_BYTE ? 1 : m == M_RANDOM ? 1 + rnd() % 9000 : left;

	return n < left ? n : left;
}

/* Deliver a pipe to its reader in the conversation's chunking. */
static void deliver(struct conv *c, struct pipe *p, struct mig_stream *to)
{
	for (size_t off = 0, n; off < p->len; off += n) {
		const uint8_t *b = p->buf + off;
		size_t left = n = chunk_of(c->mode, p->len - off), used;

		for (; left; b += used, left -= used) {
			const struct mig_rec *r;
			int rc = mig_stream_feed(to, b, left, &used, &r);

			if (rc < 0)
				fail_msg("feed: %d %s", rc, to->rx_err.msg);
			if (rc == 0) {
				assert_int_equal(used, left);
				assert_true(mig_stream_partial(to));
				continue;
			}
			c->records++;
			assert_true(p->head < p->tail);
			rec_equal(&p->q[p->head++ % 64], r);
			if (to == &c->dst)
				dst_respond(c, r);
		}
	}
	assert_false(mig_stream_partial(to));
	p->len = 0;
}

static void sync_both(struct conv *c)
{
	deliver(c, &c->s2d, &c->dst);
	deliver(c, &c->d2s, &c->src);
}

static void conv_init(struct conv *c, enum mode m, bool keep_all)
{
	memset(c, 0, sizeof(*c));
	c->mode = m;
	assert_int_equal(mig_stream_init(&c->src, MIG_SRC), 0);
	assert_int_equal(mig_stream_init(&c->dst, MIG_DST), 0);
	c->s2d.buf = malloc(PIPE_CAP);
	c->d2s.buf = malloc(PIPE_CAP);
	c->all = keep_all ? malloc(PIPE_CAP) : NULL;
	assert_true(c->s2d.buf && c->d2s.buf);
}

static void conv_fini(struct conv *c)
{
	mig_stream_fini(&c->src);
	mig_stream_fini(&c->dst);
	free(c->s2d.buf);
	free(c->d2s.buf);
	free(c->all);
}

static void send_hello(struct conv *c, uint32_t vcpus)
{
	struct mig_rec r = { .type = MIG_HELLO };

	hello_init(&r.hello, vcpus);
	enc(c, &c->src, &c->s2d, &r);
	sync_both(c);
	assert_int_equal(c->src.phase, MIG_PH_MEMORY);
	assert_int_equal(c->dst.phase, MIG_PH_MEMORY);
}

/* Send gfns[0..n) in PAGES records of at most batch pages, then ROUND_END. */
static void send_round(struct conv *c, const uint64_t *gfns, size_t n, uint32_t batch,
		       uint64_t remaining)
{
	static struct mig_page pg[MIG_PAGES_MAX];
	struct mig_rec r;

	for (size_t i = 0; i < n;) {
		uint32_t k = 0;

		for (; k < batch && i < n; k++, i++) {
			pg[k].gfn = gfns[i];
			pg[k].data = gmem[gfns[i]];
			pg[k].kind = page_zero(pg[k].data) ? MIG_PAGE_ZERO : MIG_PAGE_DATA;
		}
		r = (struct mig_rec){ .type = MIG_PAGES, .pages = { k, pg } };
		enc(c, &c->src, &c->s2d, &r);
	}
	r = (struct mig_rec){ .type = MIG_ROUND_END, .round = { c->src.rounds, n, remaining } };
	enc(c, &c->src, &c->s2d, &r);
}

static void send_state(struct conv *c, uint32_t vcpus)
{
	struct mig_rec r;

	for (uint32_t i = 0; i < vcpus; i++) {
		r = (struct mig_rec){ .type = MIG_VCPU_STATE };
		r.vcpu.id = i;
		cpu_init(&r.vcpu.cpu, i);
		xsave_init(xsave[i], i + 1);
		r.vcpu.xsave_len = i ? MIG_XSAVE_MAX : MIG_XSAVE_MIN;
		r.vcpu.xsave = xsave[i];
		r.vcpu.halted = i & 1;
		enc(c, &c->src, &c->s2d, &r);
	}
	r = (struct mig_rec){ .type = MIG_DEVICE_STATE, .dev = { sizeof(devblob), devblob } };
	enc(c, &c->src, &c->s2d, &r);
	r = (struct mig_rec){ .type = MIG_TSC, .tsc = { 0x123456789abcull, 987654321 } };
	enc(c, &c->src, &c->s2d, &r);
	r = (struct mig_rec){ .type = MIG_END, .end = { c->src.rounds, vcpus, c->src.total_pages } };
	enc(c, &c->src, &c->s2d, &r);
}

/* HELLO .. COMMITTED with three rounds: all memory, 4 pages, 2 pages, and
 * frames that came late. */
static void run_conv(struct conv *c, uint32_t vcpus, uint32_t batch)
{
	static const uint64_t round1[] = { 3, 64, 65, 200 }, round2[] = { 64, 7 };
	uint64_t all[G_PAGES];
	struct mig_rec r = { .type = MIG_COMMIT, .commit = { 42000000, MIG_COMMIT_PAUSED } };
	struct mig_rec f = { .type = MIG_FRAMES, .frames = { sizeof(frameblob), frameblob } };

	for (unsigned i = 0; i < G_PAGES; i++)
		all[i] = (i * 37) % G_PAGES;	/* any order */
	send_hello(c, vcpus);
	send_round(c, all, G_PAGES, batch, 4);
	send_round(c, round1, 4, batch, 2);
	send_round(c, round2, 2, batch, 0);
	send_state(c, vcpus);
	sync_both(c);
	assert_int_equal(c->dst.phase, MIG_PH_READY);
	assert_int_equal(c->src.phase, MIG_PH_READY);
	enc(c, &c->src, &c->s2d, &f);
	assert_int_equal(c->src.phase, MIG_PH_READY);
	enc(c, &c->src, &c->s2d, &r);
	assert_int_equal(c->src.phase, MIG_PH_COMMITTING);	/* in doubt */
	deliver(c, &c->s2d, &c->dst);
	assert_int_equal(c->dst.phase, MIG_PH_DONE);
	deliver(c, &c->d2s, &c->src);
}

static void conversation(enum mode m)
{
	struct conv c;

	rng = 12345 + m;
	guest_init();
	conv_init(&c, m, false);
	run_conv(&c, 2, 100);
	assert_int_equal(c.src.phase, MIG_PH_DONE);
	assert_int_equal(c.dst.phase, MIG_PH_DONE);
	assert_int_equal(c.dst.total_pages, G_PAGES + 6);
	assert_int_equal(c.dst.seen_pages, G_PAGES);
	/* source: HELLO, 3+1+1 PAGES, 3 ROUND_END, 2 VCPU_STATE, DEVICE_STATE,
	 * TSC, END, FRAMES, COMMIT; destination: HELLO_REPLY, ROUND_ACK, READY,
	 * COMMITTED */
	assert_int_equal(c.records, 16 + 4);
	assert_true(c.dst.frames_done);
	assert_true(c.src.round0_acked && c.dst.round0_acked);
	assert_int_equal(c.src.round0_pages, G_PAGES);
	conv_fini(&c);
}

static void test_conversation_whole(void **st) { conversation(M_WHOLE); }
static void test_conversation_bytes(void **st) { conversation(M_BYTE); }
static void test_conversation_random(void **st) { conversation(M_RANDOM); }

/* ---- streams prepared to a phase ---- */

/* A source that sent HELLO. */
static void src_after_hello(struct mig_stream *s, uint32_t vcpus)
{
	static uint8_t buf[1024];
	struct mig_rec r = { .type = MIG_HELLO };

	assert_int_equal(mig_stream_init(s, MIG_SRC), 0);
	hello_init(&r.hello, vcpus);
	assert_true(mig_stream_encode(s, &r, buf, sizeof(buf)) > 0);
}

static void accept_hello(struct mig_stream *d)
{
	static uint8_t buf[1024];
	struct mig_rec r = { .type = MIG_HELLO_REPLY };

	r.reply = (struct mig_reply){ .proto_version = MIG_PROTO_VERSION, .xcr0_mask = XCR0_DST };
	assert_true(mig_stream_encode(d, &r, buf, sizeof(buf)) > 0);
	assert_int_equal(d->phase, MIG_PH_MEMORY);
}

/* D took a forged HELLO and accepted it. */
static void d_accepted(uint32_t vcpus)
{
	struct mig_hello h;

	assert_int_equal(mig_stream_init(&D, MIG_DST), 0);
	dseq = 0;
	hello_init(&h, vcpus);
	pb_reset();
	pb_hello(&h);
	assert_int_equal(d_forged(MIG_HELLO), 1);
	accept_hello(&D);
}

/* ... then round 0 (all pages zero, forged) closed with nothing left. */
static void d_in_state(uint32_t vcpus)
{
	d_accepted(vcpus);
	pb_reset();
	pb_u32(G_PAGES);
	for (unsigned i = 0; i < G_PAGES; i++)
		pb_page(i, MIG_PAGE_ZERO);
	assert_int_equal(d_forged(MIG_PAGES), 1);
	pb_reset();
	pb_u32(0);
	pb_u64(G_PAGES);
	pb_u64(0);
	assert_int_equal(d_forged(MIG_ROUND_END), 1);
}

/* ---- the wire layout ---- */

static void test_golden_abort(void **st)
{
	static const uint8_t payload[] = { 10, 0, 0, 0, 4, 0, 's', 't', 'o', 'p' };
	static const uint8_t hdr[12] = { 0x0c, 0x4d, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0 };
	struct mig_rec r = { .type = MIG_ABORT, .abort = { MIG_E_CANCELLED, "stop" } };
	struct mig_stream s;
	uint8_t buf[64];

	assert_int_equal(mig_stream_init(&s, MIG_SRC), 0);
	assert_int_equal(mig_stream_encode(&s, &r, buf, 25), -ENOSPC);	/* nothing changes */
	assert_int_equal(s.phase, MIG_PH_HELLO);
	assert_int_equal(mig_stream_encode(&s, &r, buf, sizeof(buf)), 26);
	assert_memory_equal(buf, hdr, 12);
	assert_int_equal(get32(buf + 12), crc32_update(crc32_update(0, hdr, 12), payload, 10));
	assert_memory_equal(buf + 16, payload, sizeof(payload));
	assert_int_equal(s.phase, MIG_PH_ABORTED);
	assert_int_equal(mig_stream_encode(&s, &r, buf, sizeof(buf)), -EPIPE);
	mig_stream_fini(&s);
}

/* HELLO is byte for byte the documented layout. */
static void test_golden_layout(void **st)
{
	static uint8_t buf[8192], rec[8192];
	struct mig_rec r = { .type = MIG_HELLO };
	struct mig_stream s;
	long n;

	assert_int_equal(mig_stream_init(&s, MIG_SRC), 0);
	hello_init(&r.hello, 1);
	n = mig_stream_encode(&s, &r, buf, sizeof(buf));
	pb_reset();
	pb_hello(&r.hello);
	assert_int_equal(forge(rec, MIG_HELLO, 0), n);
	assert_memory_equal(buf, rec, (size_t)n);
	mig_stream_fini(&s);
	/* VCPU_STATE's layout: test_cpu_state_every_field decodes pb_cpu() */
	r = (struct mig_rec){ .type = MIG_VCPU_STATE, .vcpu = { .xsave = xsave[0],
							       .xsave_len = MIG_XSAVE_MIN } };
}

/* Every field of struct cpu_state travels, to its own place. */
static void test_cpu_state_every_field(void **st)
{
	for (uint64_t k = 0; k < 4; k++) {
		struct cpu_state c;
		struct mig_error e;

		cpu_init(&c, k * 0x10001);
		c.pending = (struct event){ .valid = k & 1, .type = k & 1 ? EVENT_NMI : 0,
					    .vector = k & 1 ? 2 : 0 };
		c.interruptibility = k & 2 ? INTR_SHADOW_STI | INTR_NMI_BLOCKED : 0;
		assert_int_equal(mig_cpu_state_check(&c, XCR0_DST, &e), 0);
		d_in_state(1);
		xsave_init(xsave[0], 3);
		pb_reset();
		pb_vcpu(0, &c, xsave[0], MIG_XSAVE_MAX);
		assert_int_equal(d_forged(MIG_VCPU_STATE), 1);
		cpu_equal(&c, &D.rec.vcpu.cpu);
		assert_memory_equal(D.rec.vcpu.xsave, xsave[0], MIG_XSAVE_MAX);
		mig_stream_fini(&D);
	}
}

/* ---- refusals of CPU state ---- */

static void cpu_mut(struct cpu_state *c, int i)
{
	switch (i) {
	case 0: c->rflags &= ~2ull; break;
	case 1: c->rflags |= 1ull << 22; break;
	case 2: c->cr0 |= 1ull << 32; break;
	case 3: c->cr0 &= ~1ull; break;			/* PG without PE */
	case 4: c->cr0 = (c->cr0 | (1ull << 29)) & ~(1ull << 30); break;
	case 5: c->cr4 |= 1ull << 13; break;		/* VMXE */
	case 6: c->cr4 |= 1ull << 40; break;
	case 7: c->cr8 = 16; break;
	case 8: c->efer |= 1ull << 12; break;		/* SVME */
	case 9: c->efer &= ~(1ull << 10); break;	/* LME+PG without LMA */
	case 10: c->cr4 &= ~(1ull << 5); break;		/* long mode, no PAE */
	case 11: c->dr7 |= 1ull << 40; break;
	case 12: c->xcr0 = 2; break;
	case 13: c->xcr0 = 5; break;			/* AVX without SSE */
	case 14: c->xcr0 = 0xe7; break;			/* beyond the destination */
	case 15: c->xcr0 = 0x27; break;			/* AVX-512 partly */
	case 16: c->rip = 0x0000800000000000ull; break;
	case 17: c->gs.base = 0x8000000000000000ull; break;
	case 18: c->idtr.base = 0x00ff000000000000ull; break;
	case 19: c->lstar = 1ull << 47; break;
	case 20: c->cs.attr |= 0x1000; break;
	case 21: c->sfmask |= 1ull << 32; break;
	case 22: c->pat = 0x0007040600070402ull; break;
	case 23: c->mtrr_def_type = 0x1c06; break;
	case 24: c->interruptibility = INTR_SHADOW_STI | INTR_SHADOW_MOV_SS; break;
	case 25: c->interruptibility = 1u << 5; break;
	case 26: c->pending.type = 1; break;
	case 27: c->pending = (struct event){ true, EVENT_NMI, 3, false, 0 }; break;
	case 28: c->pending.vector = 32; break;
	case 29: c->pending = (struct event){ true, EVENT_EXTINT, 0x30, true, 0 }; break;
	case 30: c->kernel_gs_base = 0x0000900000000000ull; break;
	/* what a VM entry or VMRUN refuses, and what no guest can set */
	case 31: c->cr3 = 1ull << 62 | 0x1000; break;
	case 32: c->cs.attr |= SEG_ATTR_DB; break;	/* L and D in long mode */
	case 33: c->tr.attr &= ~SEG_ATTR_P; break;
	case 34: c->tr.attr = (c->tr.attr & ~0xfu) | 3; break;	/* 16-bit TSS, long mode */
	case 35: c->pending = (struct event){ true, EVENT_EXTINT, 0x30, false, 0 };
		 c->rflags &= ~(1ull << 9); c->interruptibility = 0; break;	/* IF=0 */
	case 36: c->pending = (struct event){ true, EVENT_EXTINT, 0x30, false, 0 }; break;
	case 37: c->pending = (struct event){ true, EVENT_NMI, 2, false, 0 };
		 c->interruptibility = INTR_SHADOW_MOV_SS; break;
	case 38: c->pending.error = 0x10002; break;
	case 39: c->cr4 |= 1ull << 18; break;		/* OSXSAVE: CPUID hides XSAVE */
	case 40: c->cr4 |= 1ull << 17; break;		/* PCIDE */
	/* what a VMX entry refuses (SDM 26.3.1.2, 26.3.1.4) and the back
	 * ends do not fix up */
	case 41: c->rflags |= 1ull << 17; break;	/* virtual-8086 in long mode */
	case 42: c->cs.attr &= ~SEG_ATTR_L; break;	/* compatibility mode, RIP > 4G */
	case 43: c->cs.attr &= ~SEG_ATTR_P; break;
	case 44: c->cs.attr = (c->cs.attr & ~0xfu) | 3; break;	/* data CS, protected mode */
	case 45: c->cs.attr |= 3u << 5; break;		/* DPL 3 code with SS.DPL 0 */
	case 46: c->ss.attr = (c->ss.attr & ~0xfu) | 0xb; break;	/* code SS */
	case 47: c->ds.attr = (c->ds.attr & ~0xfu) | 0x8; break;	/* execute-only DS */
	case 48: c->tr.attr |= 1u << 4; break;		/* TR with S */
	case 49: c->tr.sel |= 4; break;			/* TR from the LDT */
	case 50: c->ldtr.attr = (c->ldtr.attr & ~0xfu) | 0xb; break;
	case 51: c->ldtr.sel |= 4; break;
	case 52: c->mtrr_def_type = 0xc07; break;	/* UC- is no MTRR type */
	case 53: c->cs.attr = (c->cs.attr & ~0x6fu) | 0x6f; break;	/* conforming, DPL 3 > CPL 0 */
	}
}
#define CPU_MUTS 54

/* States CPUs of either vendor hold pass: the reset state, a 32-bit
 * kernel, 64-bit user mode, virtual-8086 mode, null data segments (unusable),
 * conforming code below the CPL. */
static void test_cpu_state_honest_modes(void **st)
{
	struct cpu_state c;
	struct mig_error e;

	(void)st;
	memset(&c, 0, sizeof(c));
	c.rip = 0xfff0;
	c.rflags = 2;
	c.cr0 = 0x60000010;
	c.cs = seg_of(0xf000, 0x9b, 0xffff, 0xffff0000);
	c.ds = c.es = c.fs = c.gs = c.ss = seg_of(0, 0x93, 0xffff, 0);
	c.tr = seg_of(0, 0x8b, 0xffff, 0);
	c.ldtr = seg_of(0, 0x82, 0xffff, 0);
	c.xcr0 = 1;
	assert_int_equal(mig_cpu_state_check(&c, XCR0_DST, &e), 0);
	/* 32-bit protected mode, ring 0, flat */
	c.cr0 = 0x80000011;
	c.cr4 = 0x10;
	c.cs = seg_of(0x10, 0xc9b, 0xffffffff, 0);
	c.ds = c.es = c.fs = c.gs = c.ss = seg_of(0x18, 0xc93, 0xffffffff, 0);
	c.tr = seg_of(0x20, 0x8b, 0x67, 0x1000);
	c.rip = 0xc1000000;
	assert_int_equal(mig_cpu_state_check(&c, XCR0_DST, &e), 0);
	/* virtual-8086 mode: segments are the selector's paragraphs */
	c.rflags = 0x20202;
	c.cs = seg_of(0x1234, 0xf3, 0xffff, 0x12340);
	c.ss = seg_of(0x2000, 0xf3, 0xffff, 0x20000);
	c.ds = c.es = c.fs = c.gs = seg_of(0, 0xf3, 0xffff, 0);
	c.rip = 0x100;
	assert_int_equal(mig_cpu_state_check(&c, XCR0_DST, &e), 0);
	c.ds.base = 0x10;
	assert_int_equal(mig_cpu_state_check(&c, XCR0_DST, &e), -EINVAL);
	/* 64-bit user mode with null DS/ES (unusable) and a conforming CS */
	cpu_init(&c, 0);
	c.pending.valid = false;
	c.cs = seg_of(0x33, 0x2fb, 0xffffffff, 0);
	c.ss = seg_of(0x2b, 0xcf3, 0xffffffff, 0);
	c.ds = c.es = seg_of(0, 0, 0, 0);
	c.rip = 0x401000;
	assert_int_equal(mig_cpu_state_check(&c, XCR0_DST, &e), 0);
	c.cs.attr = 0x29f;			/* conforming, DPL 0 at CPL 3 */
	assert_int_equal(mig_cpu_state_check(&c, XCR0_DST, &e), 0);
	c.ss = seg_of(0, 0, 0, 0);		/* null SS: CPL in its DPL only */
	c.ss.attr = 3u << 5;
	assert_int_equal(mig_cpu_state_check(&c, XCR0_DST, &e), 0);
}

/* Each broken field: refused by the check, by the encoder, and on the wire. */
static void test_cpu_state_refused(void **st)
{
	static uint8_t buf[8192];

	xsave_init(xsave[0], 1);
	for (int i = 0; i < CPU_MUTS; i++) {
		struct mig_rec r = { .type = MIG_VCPU_STATE, .vcpu = {
			.xsave = xsave[0], .xsave_len = MIG_XSAVE_MIN } };
		struct mig_error e;

		cpu_init(&r.vcpu.cpu, 1);
		cpu_mut(&r.vcpu.cpu, i);
		if (mig_cpu_state_check(&r.vcpu.cpu, XCR0_DST, &e) != -EINVAL)
			fail_msg("mutation %d accepted", i);
		assert_int_equal(e.code, MIG_E_STATE);
		d_in_state(1);
		pb_reset();
		pb_vcpu(0, &r.vcpu.cpu, xsave[0], MIG_XSAVE_MIN);
		assert_int_equal(D.vcpus_done, 0);
		d_refuses(MIG_VCPU_STATE, MIG_E_STATE, "VCPU_STATE");
		d_in_state(1);
		D.role = MIG_SRC;	/* the same phase, on the sending side */
		assert_int_equal(mig_stream_encode(&D, &r, buf, sizeof(buf)), -EINVAL);
		assert_int_equal(D.tx_err.code, MIG_E_STATE);
		mig_stream_fini(&D);
	}
}

static void test_xsave_refused(void **st)
{
	static uint8_t a[MIG_XSAVE_MAX];
	struct mig_error e;

	xsave_init(a, 1);
	assert_int_equal(mig_xsave_check(a, MIG_XSAVE_MIN, 3, &e), 0);
	a[27] = 1;				/* MXCSR bit 24 */
	assert_int_equal(mig_xsave_check(a, MIG_XSAVE_MIN, 3, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "MXCSR"));
	xsave_init(a, 1);
	a[512] = 0x7;				/* AVX state, destination without */
	assert_int_equal(mig_xsave_check(a, MIG_XSAVE_MIN, 3, &e), -EINVAL);
	assert_int_equal(mig_xsave_check(a, MIG_XSAVE_MIN, 7, &e), 0);
	a[527] = 0x80;				/* compacted format */
	assert_int_equal(mig_xsave_check(a, MIG_XSAVE_MIN, 7, &e), -EINVAL);
	xsave_init(a, 1);
	a[575] = 1;				/* reserved header byte */
	assert_int_equal(mig_xsave_check(a, MIG_XSAVE_MIN, 7, &e), -EINVAL);
	xsave_init(a, 1);
	assert_int_equal(mig_xsave_check(a, MIG_XSAVE_MIN - 1, 7, &e), -EINVAL);
	assert_int_equal(mig_xsave_check(a, MIG_XSAVE_MAX + 1, 7, &e), -EINVAL);
}

/* A boolean byte of 2 in the pending event is refused on the wire. */
static void test_bool_byte_refused(void **st)
{
	struct cpu_state c;

	cpu_init(&c, 0);
	xsave_init(xsave[0], 1);
	d_in_state(1);
	pb_reset();
	pb_vcpu(0, &c, xsave[0], MIG_XSAVE_MIN);
	P.b[4 + MIG_CPU_STATE_WIRE - 8] = 2;	/* pending.valid */
	d_refuses(MIG_VCPU_STATE, MIG_E_PROTOCOL, "boolean");
	d_in_state(1);
	pb_reset();
	pb_vcpu(0, &c, xsave[0], MIG_XSAVE_MIN);
	P.b[4 + MIG_CPU_STATE_WIRE] = 7;	/* halted */
	d_refuses(MIG_VCPU_STATE, MIG_E_PROTOCOL, "halted");
}

/* ---- hostile lengths ---- */

/* A header whose length is beyond the type's bound is refused as soon as
 * the header is in: nothing after it is consumed or buffered. */
static void test_oversized_lengths(void **st)
{
	static const struct { uint16_t type; uint32_t len; } cases[] = {
		{ MIG_PAGES, 0xffffffffu }, { MIG_PAGES, 4 + MIG_PAGES_MAX * (9 + 4096) + 1 },
		{ MIG_VCPU_STATE, VCPU_LEN(MIG_XSAVE_MAX) + 1 },
		{ MIG_DEVICE_STATE, 4 + MIG_DEV_STATE_MAX + 1 }, { MIG_ROUND_END, 21 },
		{ MIG_ROUND_END, 19 }, { MIG_ABORT, 4 + 2 + MIG_MSG_MAX + 1 }, { MIG_HELLO, 4097 },
	};
	static uint8_t junk[5000];

	for (size_t i = 0; i < NELEM(cases); i++) {
		const struct mig_rec *r;
		size_t used;
		int rc;

		d_accepted(1);
		junk[0] = (uint8_t)cases[i].type;
		junk[1] = (uint8_t)(cases[i].type >> 8);
		put32(junk + 4, cases[i].len);
		put32(junk + 8, dseq);
		rc = mig_stream_feed(&D, junk, sizeof(junk), &used, &r);
		expect_refusal(&D, rc, MIG_E_PROTOCOL, "length");
		assert_int_equal(used, 16);
		assert_int_equal(D.have, 0);
		assert_true(D.cap <= 4096);		/* at most HELLO's buffer */
		assert_int_equal(mig_stream_feed(&D, junk, 10, &used, &r), rc);	/* sticky */
		assert_int_equal(used, 0);
		mig_stream_fini(&D);
	}
}

/* The payload buffer grows by type, to the type's bound at most. */
static void test_buffer_bounds(void **st)
{
	static uint8_t rec[64];
	const struct mig_rec *r;
	size_t n, used;

	assert_int_equal(mig_payload_max(MIG_SRC), 4 + MIG_PAGES_MAX * (9 + MIG_PAGE_SIZE));
	assert_int_equal(mig_payload_max(MIG_DST), 1024);
	assert_int_equal(mig_stream_init(&D, MIG_SRC), 0);
	assert_int_equal(D.cap, 0);
	mig_stream_fini(&D);
	d_accepted(1);
	assert_int_equal(D.cap, 4096);		/* HELLO's bound */
	pb_reset();
	pb_u32(1);
	pb_page(1, MIG_PAGE_ZERO);
	n = forge(rec, MIG_PAGES, dseq);
	assert_int_equal(mig_stream_feed(&D, rec, 17, &used, &r), 0);
	assert_int_equal(D.cap, mig_payload_max(MIG_SRC));
	assert_int_equal(mig_stream_feed(&D, rec + 17, n - 17, &used, &r), 1);
	assert_int_equal(r->pages.page[0].gfn, 1);
	mig_stream_fini(&D);
}

/* Lengths that disagree with the content: refused, never read past. */
static void test_truncated_records(void **st)
{
	struct cpu_state c;

	d_accepted(1);				/* PAGES says 2 pages, carries 1 */
	pb_reset();
	pb_u32(2);
	pb_page(1, MIG_PAGE_ZERO);
	d_refuses(MIG_PAGES, MIG_E_PROTOCOL, "truncated");
	d_accepted(1);				/* a DATA page cut short */
	pb_reset();
	pb_u32(1);
	pb_page(1, MIG_PAGE_DATA);
	pb_bytes(gmem[0], 100);
	d_refuses(MIG_PAGES, MIG_E_PROTOCOL, "truncated");
	d_accepted(1);				/* one byte too many */
	pb_reset();
	pb_u32(1);
	pb_page(1, MIG_PAGE_ZERO);
	pb_u8(0);
	d_refuses(MIG_PAGES, MIG_E_PROTOCOL, "left over");

	cpu_init(&c, 0);
	xsave_init(xsave[0], 1);
	d_in_state(1);				/* XSAVE length says more than is there */
	pb_reset();
	pb_vcpu(0, &c, xsave[0], MIG_XSAVE_MIN);
	put32(P.b + 4 + MIG_CPU_STATE_WIRE + 1, MIG_XSAVE_MIN + 8);
	d_refuses(MIG_VCPU_STATE, MIG_E_PROTOCOL, "truncated");
	d_in_state(1);				/* ... or less than the minimum */
	pb_reset();
	pb_vcpu(0, &c, xsave[0], MIG_XSAVE_MIN);
	put32(P.b + 4 + MIG_CPU_STATE_WIRE + 1, 0);
	d_refuses(MIG_VCPU_STATE, MIG_E_PROTOCOL, "XSAVE");

	assert_int_equal(mig_stream_init(&D, MIG_DST), 0);	/* HELLO string past the end */
	dseq = 0;
	pb_reset();
	for (int i = 0; i < 16; i++)	/* words 10-11: IA32_ARCH_CAPABILITIES, 0 */
		pb_u32(i == 0 ? MIG_PROTO_VERSION : i == 10 || i == 11 ? 0 : 1);
	pb_u8(0);				/* no NIC, MAC zero */
	pb_bytes("\0\0\0\0\0\0", 6);
	pb_u8(0);				/* no pvpanic */
	pb_u32(256);				/* weight, cap */
	pb_u32(0);
	pb_u16(40);
	pb_bytes("abc", 3);
	d_refuses(MIG_HELLO, MIG_E_PROTOCOL, "truncated");
}

/* ---- HELLO ---- */

static void hello_mut(struct mig_hello *h, int i)
{
	switch (i) {
	case 0: h->name[0] = 0; break;
	case 1: strcpy(h->name, "a b"); break;
	case 2: strcpy(h->name, "-x"); break;
	case 3: name_override = "abcdefghijabcdefghijabcdefghijab"; break;	/* 32 */
	case 4: h->mem_size = 0; break;
	case 5: h->mem_size += 4096; break;
	case 6: h->mem_size = MIG_MEM_MAX + (1 << 20); break;
	case 7: h->vcpus = 0; break;
	case 8: h->vcpus = MIG_VCPUS_MAX + 1; break;
	case 9: h->tsc_hz = 0; break;
	case 10: strcpy(h->cmdline, "a\033[2J"); break;
	case 11: strcpy(h->kernel, "a b"); break;
	case 12: h->mac[0] = 0x01; break;			/* multicast */
	case 13: memset(h->mac, 0, sizeof(h->mac)); break;
	case 14: h->weight = 0; break;
	case 15: h->weight = 65536; break;
	case 16: h->cap_pct = 101; break;			/* one vCPU */
	/* what create refuses, so that a reboot at the destination would stop it */
	case 17: h->kernel[0] = 0; break;
	case 18: strcpy(h->modules, "a,,b"); break;
	case 19: strcpy(h->modules, "a,"); break;
	case 20: memset(h->modules, 'm', 40); h->modules[40] = 0; break;	/* a name of 40 */
	case 21: strcpy(h->modules, "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q"); break;	/* 17 */
	case 22: strcpy(h->initrd, "initrd"); strcpy(h->modules, "a"); break;
	case 23: h->timeout_s = MIG_TIMEOUT_MAX_S + 1; break;
	case 24: h->arch_caps = ARCH_CAP_RDCL_NO | 1ull << 5; break;	/* MDS_NO: not ferry's */
	}
}

/* The stream fuzzer's checked-in seeds (tests/fuzz/corpus/migrate_stream)
 * open with a framed HELLO of this protocol version that a destination
 * takes: a seed of an older version stops the fuzzer at the version
 * check, and nothing else would say so.  (Write them anew from the
 * fuzzer's own, FERRY_FUZZ_MKSEEDS: tests/fuzz/README.md.) */
static void test_fuzz_seeds_speak_this_version(void **st)
{
	static const char *const seeds[] = { "dst-frames", "dst-frames-twice",
					     "dst-big-pages-frames" };
	static uint8_t buf[1 << 16];
	const struct mig_rec *r = NULL;
	uint8_t rec[4096 + 16];
	char path[128];

	(void)st;
	for (size_t i = 0; i < NELEM(seeds); i++) {
		snprintf(path, sizeof(path), "tests/fuzz/corpus/migrate_stream/%s", seeds[i]);
		FILE *f = fopen(path, "rb");
		if (!f)
			fail_msg("%s: missing", path);
		size_t n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		/* setup byte 0 (the destination), then step 1: ctl 1 (a framed
		 * HELLO, short form), u16 length, the payload */
		assert_true(n > 4 && buf[0] == 0 && buf[1] == 1);
		size_t len = (size_t)(buf[2] | buf[3] << 8);
		assert_true(4 + len <= n && len <= 4096);
		pb_reset();
		pb_bytes(buf + 4, len);
		assert_int_equal(mig_stream_init(&D, MIG_DST), 0);
		assert_int_equal(feed(&D, rec, forge(rec, MIG_HELLO, 0), &r), 1);
		if (r->hello.proto_version != MIG_PROTO_VERSION)
			fail_msg("%s: HELLO of protocol v%u, this is v%u", path,
				 r->hello.proto_version, MIG_PROTO_VERSION);
		mig_stream_fini(&D);
	}
}

static void test_hello_fields_refused(void **st)
{
	static const struct { uint32_t code; const char *words; } want[] = {
		{ MIG_E_PROTOCOL, "name" }, { MIG_E_PROTOCOL, "name" }, { MIG_E_PROTOCOL, "name" },
		{ MIG_E_PROTOCOL, "name" }, { MIG_E_PROTOCOL, "MiB" }, { MIG_E_PROTOCOL, "MiB" },
		{ MIG_E_LIMIT, "memory" }, { MIG_E_PROTOCOL, "vCPUs" }, { MIG_E_LIMIT, "vCPUs" },
		{ MIG_E_PROTOCOL, "TSC" }, { MIG_E_PROTOCOL, "non-printable" },
		{ MIG_E_PROTOCOL, "non-printable" }, { MIG_E_PROTOCOL, "MAC" },
		{ MIG_E_PROTOCOL, "MAC" }, { MIG_E_PROTOCOL, "weight" },
		{ MIG_E_PROTOCOL, "weight" }, { MIG_E_PROTOCOL, "cap" },
		{ MIG_E_PROTOCOL, "no kernel" }, { MIG_E_PROTOCOL, "module list" },
		{ MIG_E_PROTOCOL, "module list" }, { MIG_E_PROTOCOL, "module list" },
		{ MIG_E_PROTOCOL, "module list" }, { MIG_E_PROTOCOL, "initrd and modules" },
		{ MIG_E_PROTOCOL, "timeout 601 s, at most 600" },
		{ MIG_E_PROTOCOL, "IA32_ARCH_CAPABILITIES 0x21" },
	};
	char mods[2][MIG_MODULES_MAX + 1] = { "", "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p" };
	struct mig_hello h;

	for (int i = 0; i < (int)NELEM(want); i++) {
		hello_init(&h, 1);
		hello_mut(&h, i);
		pb_reset();
		pb_hello(&h);
		name_override = NULL;
		assert_int_equal(mig_stream_init(&D, MIG_DST), 0);
		dseq = 0;
		d_refuses(MIG_HELLO, want[i].code, want[i].words);
	}
	/* names of 31 characters, and sixteen names, pass: create takes them */
	for (int i = 0; i < 4; i++)	/* 4 x 31 + 3 commas: the list's 127 bytes */
		sprintf(mods[0] + strlen(mods[0]), "%s%031d", i ? "," : "", i);
	assert_int_equal(strlen(mods[0]), MIG_MODULES_MAX);
	for (int i = 0; i < 2; i++) {
		hello_init(&h, 1);
		strcpy(h.modules, mods[i]);
		pb_reset();
		pb_hello(&h);
		assert_int_equal(mig_stream_init(&D, MIG_DST), 0);
		dseq = 0;
		assert_int_equal(d_forged(MIG_HELLO), 1);
		mig_stream_fini(&D);
	}
	/* a NUL inside a name's counted bytes */
	hello_init(&h, 1);
	strcpy(h.name, "abc");
	pb_reset();
	pb_hello(&h);
	P.b[4 * 4 + 8 * 5 + 1 + 6 + 4 + 4 + 2 + strlen(h.ferry_version) + 2 + 1] = 0;	/* "a\0c" */
	assert_int_equal(mig_stream_init(&D, MIG_DST), 0);
	dseq = 0;
	d_refuses(MIG_HELLO, MIG_E_PROTOCOL, "NUL");
}

/* Another protocol version: the HELLO is taken as far as its version, the
 * destination refuses with MIG_E_VERSION, and the source shows it. */
static void test_hello_version(void **st)
{
	static uint8_t buf[2048];
	struct mig_rec y = { .type = MIG_HELLO_REPLY, .reply = {
		.proto_version = MIG_PROTO_VERSION, .xcr0_mask = 3 } };
	const struct mig_rec *r;
	struct mig_stream s;
	uint32_t seq = 0;
	long n;

	assert_int_equal(mig_stream_init(&D, MIG_DST), 0);
	dseq = 0;
	pb_reset();
	pb_u32(MIG_PROTO_VERSION + 1);
	for (int i = 0; i < 300; i++)
		pb_u8((uint8_t)i);		/* whatever v2 carries */
	assert_int_equal(d_forged(MIG_HELLO), 1);
	assert_int_equal(D.rec.hello.proto_version, MIG_PROTO_VERSION + 1);
	assert_int_equal(D.rec.hello.name[0], 0);
	assert_int_equal(D.phase, MIG_PH_ADMIT);
	assert_int_equal(mig_stream_encode(&D, &y, buf, sizeof(buf)), -EINVAL);	/* no accept */
	y.reply.code = MIG_E_VERSION;
	strcpy(y.reply.msg, "source speaks protocol v2, this host v1");
	n = mig_stream_encode(&D, &y, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal(D.phase, MIG_PH_REFUSED);
	mig_stream_fini(&D);
	src_after_hello(&s, 1);			/* a v1 source reads the refusal */
	assert_int_equal(feed(&s, buf, (size_t)n, &r), 1);
	assert_int_equal(s.phase, MIG_PH_REFUSED);
	assert_int_equal(s.end_code, MIG_E_VERSION);
	assert_string_equal(r->reply.msg, y.reply.msg);
	mig_stream_fini(&s);

	src_after_hello(&s, 1);			/* a v2 destination's refusal is shown... */
	pb_reset();
	pb_u32(MIG_PROTO_VERSION + 1);
	pb_u32(MIG_E_VERSION);
	pb_u64(0xdeadbeef);
	assert_int_equal(feed_forged(&s, &seq, MIG_HELLO_REPLY), 1);
	assert_int_equal(s.end_code, MIG_E_VERSION);
	mig_stream_fini(&s);
	src_after_hello(&s, 1);			/* ...but its "accept" is not believed */
	seq = 0;
	pb_reset();
	pb_u32(MIG_PROTO_VERSION + 1);
	pb_u32(MIG_OK);
	expect_refusal(&s, feed_forged(&s, &seq, MIG_HELLO_REPLY), MIG_E_VERSION, "version");
	mig_stream_fini(&s);
}

/* The baseline fingerprint notices any change of the guests' CPUID (a
 * HELLO with another one is refused by admission: test_migrate_policy). */
static void fake_cpuid(uint32_t leaf, uint32_t sub, const struct cpuid_vcpu *vcpu,
			struct cpuid_result *r)
{
	cpuid_guest(leaf, sub, vcpu, r);
	if (leaf == 1)
		r->ecx |= 1u << 28;	/* AVX */
}

static void fake_cpuid2(uint32_t leaf, uint32_t sub, const struct cpuid_vcpu *vcpu,
			struct cpuid_result *r)
{
	cpuid_guest(leaf, sub, vcpu, r);
	if (leaf == 0x80000008)
		r->eax = 40 | 48 << 8;
}

static void test_baseline(void **st)
{
	uint64_t a = mig_cpu_baseline(cpuid_guest);

	assert_int_equal(a, mig_cpu_baseline(cpuid_guest));
	assert_int_not_equal(a, mig_cpu_baseline(fake_cpuid));
	assert_int_not_equal(a, mig_cpu_baseline(fake_cpuid2));
	assert_int_not_equal(mig_cpu_baseline(fake_cpuid), mig_cpu_baseline(fake_cpuid2));
}

/* ---- pages ---- */

static void test_gfn_out_of_range(void **st)
{
	static const uint64_t bad[] = { G_PAGES, G_PAGES + 1, 1ull << 40, UINT64_MAX };
	static uint8_t buf[8192];
	static struct mig_page pg[2];

	for (size_t i = 0; i < NELEM(bad); i++) {
		struct mig_rec r = { .type = MIG_PAGES, .pages = { 2, pg } };

		d_accepted(1);
		pb_reset();
		pb_u32(2);
		pb_page(5, MIG_PAGE_ZERO);
		pb_page(bad[i], MIG_PAGE_DATA);
		pb_bytes(gmem[0], MIG_PAGE_SIZE);
		assert_int_equal(D.total_pages, 0);
		d_refuses(MIG_PAGES, MIG_E_PROTOCOL, "beyond guest memory");
		d_accepted(1);			/* the source's encoder will not send it */
		D.role = MIG_SRC;
		pg[0] = (struct mig_page){ .gfn = 5, .kind = MIG_PAGE_ZERO };
		pg[1] = (struct mig_page){ .gfn = bad[i], .kind = MIG_PAGE_DATA, .data = gmem[0] };
		assert_int_equal(mig_stream_encode(&D, &r, buf, sizeof(buf)), -EINVAL);
		assert_non_null(strstr(D.tx_err.msg, "beyond"));
		mig_stream_fini(&D);
	}
}

static void test_pages_bad_kind_and_count(void **st)
{
	d_accepted(1);
	pb_reset();
	pb_u32(1);
	pb_page(1, MIG_PAGE_SPARSE + 1);
	d_refuses(MIG_PAGES, MIG_E_PROTOCOL, "kind");
	d_accepted(1);
	pb_reset();
	pb_u32(0);
	pb_page(0, 0);
	d_refuses(MIG_PAGES, MIG_E_PROTOCOL, "pages");
	d_accepted(1);
	pb_reset();
	pb_u32(MIG_PAGES_MAX + 1);
	for (unsigned i = 0; i <= MIG_PAGES_MAX; i++)
		pb_page(i % G_PAGES, MIG_PAGE_ZERO);
	d_refuses(MIG_PAGES, MIG_E_PROTOCOL, "pages");
}

/* ---- order, against records of a reference conversation ---- */

static struct conv ref;

static int ref_setup(void **st)
{
	rng = 777;
	guest_init();
	conv_init(&ref, M_WHOLE, true);
	run_conv(&ref, 2, 100);
	return 0;
}

static int ref_teardown(void **st)
{
	conv_fini(&ref);
	return 0;
}

/* Index of the n-th (0-based) reference record of type. */
static int ref_find(uint16_t type, int n)
{
	for (int i = 0; i < ref.nrec; i++)
		if (ref.type[i] == type && n-- == 0)
			return i;
	fail_msg("no record %s", mig_type_name(type));
	return -1;
}

/* Feed reference record i to s as sequence number *seq. */
static int splice(struct mig_stream *s, uint32_t *seq, int i)
{
	static uint8_t rec[1 << 21];

	memcpy(rec, ref.all + ref.off[i], ref.len[i]);
	reseq(rec, ref.len[i], (*seq)++);
	return feed(s, rec, ref.len[i], NULL);
}

/* D says it has written round 0 (ROUND_ACK with the right count). */
static void d_ack(void)
{
	static uint8_t buf[64];
	struct mig_rec a = { .type = MIG_ROUND_ACK, .ack = { 0, D.round0_pages } };

	assert_true(mig_stream_encode(&D, &a, buf, sizeof(buf)) > 0);
	assert_true(D.round0_acked);
}

/* D fed reference records [0, upto), accepting the HELLO and acking
 * round 0 as the destination does (unless no_ack). */
static bool no_ack;
static void d_replay(int upto)
{
	assert_int_equal(mig_stream_init(&D, MIG_DST), 0);
	dseq = 0;
	for (int i = 0; i < upto; i++) {
		if (ref.type[i] == MIG_FRAMES)
			continue;	/* it follows READY, which D sends itself */
		assert_int_equal(splice(&D, &dseq, i), 1);
		if (i == 0)
			accept_hello(&D);
		if (i == ref_find(MIG_ROUND_END, 0) && !no_ack)
			d_ack();
	}
}

static void order_case(int upto, int rec, const char *words)
{
	d_replay(upto);
	expect_refusal(&D, splice(&D, &dseq, rec), MIG_E_PROTOCOL, words);
	assert_true(D.phase < MIG_PH_COMMITTING);	/* never got to run it */
	mig_stream_fini(&D);
}

static void test_out_of_order(void **st)
{
	int pages0 = ref_find(MIG_PAGES, 0), round0 = ref_find(MIG_ROUND_END, 0);
	int last_round = ref_find(MIG_ROUND_END, 2), vcpu0 = ref_find(MIG_VCPU_STATE, 0);
	int vcpu1 = ref_find(MIG_VCPU_STATE, 1), dev = ref_find(MIG_DEVICE_STATE, 0);
	int tsc = ref_find(MIG_TSC, 0), end = ref_find(MIG_END, 0);
	int commit = ref_find(MIG_COMMIT, 0);

	order_case(0, pages0, "not expected");			/* PAGES first */
	order_case(1, 0, "not expected");			/* HELLO twice */
	order_case(1, round0, "claims");			/* empty round 0 */
	order_case(pages0 + 1, round0, "claims");		/* round 0 short */
	order_case(round0 + 1, round0, "round 0, expected 1");	/* round again */
	order_case(pages0, vcpu0, "last ROUND_END");		/* state before a round */
	order_case(last_round, vcpu0, "last ROUND_END");	/* round not closed */
	order_case(round0 + 1, vcpu0, "last ROUND_END");	/* pages remaining */
	order_case(last_round + 1, vcpu1, "expected 0");	/* vCPU 1 before 0 */
	order_case(vcpu0 + 1, vcpu0, "expected 1");		/* vCPU 0 twice */
	order_case(last_round + 1, dev, "not expected");	/* device, no vCPU */
	order_case(vcpu0 + 1, dev, "out of order");		/* device before vCPU 1 */
	order_case(vcpu1 + 1, tsc, "out of order");		/* TSC before device */
	order_case(dev + 1, end, "END before");			/* END before TSC */
	order_case(end + 1, pages0, "not expected");		/* PAGES after END */
	order_case(end + 1, commit, "not expected");		/* COMMIT before READY */
	order_case(dev + 1, pages0, "not expected");		/* PAGES after state */
}

/* A device clock no guest can have (it would wrap on the destination). */
static void test_tsc_clock_bounded(void **st)
{
	(void)st;
	d_replay(ref_find(MIG_TSC, 0));
	pb_reset();
	pb_u64(0x123456789abcull);
	pb_u64(1ull << 63);
	d_refuses(MIG_TSC, MIG_E_PROTOCOL, "device clock");
	d_replay(ref_find(MIG_TSC, 0));
	pb_reset();
	pb_u64(~0ull);				/* any TSC: the guest may set it so */
	pb_u64((1ull << 62) - 1);
	assert_int_equal(d_forged(MIG_TSC), 1);
	mig_stream_fini(&D);
}

/* Cross-checks: round 0 that sent a page twice and missed others; END's
 * totals; READY's page count. */
static void test_totals(void **st)
{
	static uint8_t buf[64];
	struct mig_rec y = { .type = MIG_READY, .ready = { G_PAGES } };
	int pages0 = ref_find(MIG_PAGES, 0);

	d_replay(pages0 + 1);
	assert_int_equal(splice(&D, &dseq, pages0), 1);
	pb_reset();
	pb_u32(0);
	pb_u64(200);
	pb_u64(0);
	d_refuses(MIG_ROUND_END, MIG_E_PROTOCOL, "unsent");

	d_replay(ref_find(MIG_END, 0));
	pb_reset();
	pb_u32(3);
	pb_u32(2);
	pb_u64(G_PAGES + 5);
	d_refuses(MIG_END, MIG_E_PROTOCOL, "totals");

	d_replay(ref_find(MIG_END, 0) + 1);	/* the destination reports what came */
	assert_int_equal(mig_stream_encode(&D, &y, buf, sizeof(buf)), -EINVAL);
	y.ready.pages = G_PAGES + 6;
	assert_true(mig_stream_encode(&D, &y, buf, sizeof(buf)) > 0);
	mig_stream_fini(&D);
}

static void test_sequence_and_header(void **st)
{
	static uint8_t rec[4096];
	uint32_t seq = 1;
	size_t n = ref.len[0];

	assert_int_equal(mig_stream_init(&D, MIG_DST), 0);	/* seq starts at 0 */
	expect_refusal(&D, splice(&D, &seq, 0), MIG_E_PROTOCOL, "sequence");
	mig_stream_fini(&D);
	d_replay(2);						/* a gap */
	dseq++;
	expect_refusal(&D, splice(&D, &dseq, 2), MIG_E_PROTOCOL, "sequence");
	mig_stream_fini(&D);

	assert_int_equal(mig_stream_init(&D, MIG_DST), 0);	/* a destination's record */
	dseq = 0;
	pb_reset();
	pb_u64(0);
	d_refuses(MIG_READY, MIG_E_PROTOCOL, "sent by the destination");
	assert_int_equal(mig_stream_init(&D, MIG_DST), 0);	/* unknown type */
	dseq = 0;
	d_refuses(MIG_MAGIC | 0x77, MIG_E_PROTOCOL, "unknown");
	assert_int_equal(mig_stream_init(&D, MIG_DST), 0);	/* not a ferry stream */
	expect_refusal(&D, feed(&D, (const uint8_t *)"GET / HTTP/1.1\r\n\r\n", 18, NULL),
		       MIG_E_PROTOCOL, "magic");
	mig_stream_fini(&D);

	assert_int_equal(mig_stream_init(&D, MIG_DST), 0);	/* flags */
	memcpy(rec, ref.all, n);
	rec[2] = 1;
	reseq(rec, n, 0);
	expect_refusal(&D, feed(&D, rec, n, NULL), MIG_E_PROTOCOL, "flags");
	mig_stream_fini(&D);
	assert_int_equal(mig_stream_init(&D, MIG_DST), 0);	/* a flipped payload bit */
	memcpy(rec, ref.all, n);
	rec[n - 3] ^= 0x10;
	expect_refusal(&D, feed(&D, rec, n, NULL), MIG_E_INTEGRITY, "CRC");
	mig_stream_fini(&D);
}

/* The sending side keeps to the same order. */
static void test_encoder_order(void **st)
{
	static uint8_t buf[8192];
	static struct mig_page pg = { .gfn = 0, .kind = MIG_PAGE_ZERO };
	struct mig_rec r = { .type = MIG_PAGES, .pages = { 1, &pg } };
	struct mig_stream s;

	src_after_hello(&s, 1);
	assert_int_equal(mig_stream_encode(&s, &r, buf, sizeof(buf)), -EINVAL);	/* no reply */
	assert_non_null(strstr(s.tx_err.msg, "cannot send PAGES"));
	r = (struct mig_rec){ .type = MIG_READY };
	assert_int_equal(mig_stream_encode(&s, &r, buf, sizeof(buf)), -EINVAL);	/* not ours */
	r = (struct mig_rec){ .type = 0x1234 };
	assert_int_equal(mig_stream_encode(&s, &r, buf, sizeof(buf)), -EINVAL);
	mig_stream_fini(&s);
}

/* ---- ABORT and the hand-over rule ---- */

static void test_abort_both_ways(void **st)
{
	static uint8_t buf[1024];
	struct mig_rec a = { .type = MIG_ABORT, .abort = { MIG_E_CANCELLED, "operator said so" } };
	const struct mig_rec *r;
	struct mig_stream s;
	long n;

	assert_int_equal(mig_stream_encode(&ref.src, &a, buf, sizeof(buf)), -EPIPE);	/* DONE */
	d_replay(ref_find(MIG_PAGES, 1));	/* source cancels mid-memory */
	src_after_hello(&s, 1);
	n = mig_stream_encode(&s, &a, buf, sizeof(buf));
	assert_true(n > 0);
	reseq(buf, (size_t)n, dseq);
	assert_int_equal(feed(&D, buf, (size_t)n, &r), 1);
	rec_equal(&a, r);
	assert_int_equal(D.phase, MIG_PH_ABORTED);
	assert_int_equal(D.end_code, MIG_E_CANCELLED);
	assert_int_equal(D.abort_by, MIG_SRC);
	assert_int_equal(D.abort_phase, MIG_PH_MEMORY);
	assert_int_equal(s.phase, MIG_PH_ABORTED);
	expect_refusal(&D, feed(&D, buf, 1, NULL), MIG_E_PROTOCOL, "after the end");
	mig_stream_fini(&s);
	mig_stream_fini(&D);

	d_replay(1);			/* a destination refusing input still says so */
	memset(buf, 0xee, 32);
	assert_true(feed(&D, buf, 32, NULL) < 0);
	a.abort.code = D.rx_err.code;
	strcpy(a.abort.msg, D.rx_err.msg);
	assert_true(mig_stream_encode(&D, &a, buf, sizeof(buf)) > 0);
	assert_int_equal(D.phase, MIG_PH_ABORTED);
	mig_stream_fini(&D);
	d_replay(1);			/* ABORT with an unknown code is not sent */
	a.abort.code = MIG_CODE_LAST + 1;
	assert_int_equal(mig_stream_encode(&D, &a, buf, sizeof(buf)), -EINVAL);
	mig_stream_fini(&D);
}

/* D fed everything up to COMMIT, having sent READY. */
static void d_committed(void)
{
	static uint8_t buf[64];
	struct mig_rec y = { .type = MIG_READY };

	d_replay(ref_find(MIG_COMMIT, 0));
	y.ready.pages = D.total_pages;
	assert_true(mig_stream_encode(&D, &y, buf, sizeof(buf)) > 0);
	assert_int_equal(D.phase, MIG_PH_READY);
	assert_int_equal(splice(&D, &dseq, ref_find(MIG_COMMIT, 0)), 1);
	assert_int_equal(D.phase, MIG_PH_COMMITTING);
}

/* Fate at every step of the hand-over, both sides. */
static void test_fate(void **st)
{
	static uint8_t buf[1024];
	struct mig_rec a = { .type = MIG_ABORT, .abort = { MIG_E_INTERNAL, "start failed" } };
	struct mig_rec cm = { .type = MIG_COMMIT, .commit = { 1 } };
	struct mig_stream s;
	long n;

	src_after_hello(&s, 1);
	assert_int_equal(s.phase, MIG_PH_ADMIT);
	mig_stream_fini(&s);
	/* destination got COMMIT but could not start the guest: ABORT */
	d_committed();
	n = mig_stream_encode(&D, &a, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal(D.phase, MIG_PH_ABORTED);
	assert_int_equal(D.abort_phase, MIG_PH_COMMITTING);
	mig_stream_fini(&D);
	/* the source, in doubt after COMMIT, may not back out itself ... */
	s = ref.src;		/* its conversation is DONE: rewind it to READY */
	s.phase = MIG_PH_READY;
	s.buf = NULL;
	s.cap = 0;
	s.seen = NULL;
	assert_true(mig_stream_encode(&s, &cm, buf + 512, 256) > 0);
	assert_int_equal(s.phase, MIG_PH_COMMITTING);
	assert_int_equal(mig_stream_encode(&s, &a, buf + 768, 256), -EINVAL);
	/* ... but the destination's ABORT lets it resume */
	reseq(buf, (size_t)n, s.rx_seq);
	assert_int_equal(feed(&s, buf, (size_t)n, NULL), 1);
	assert_int_equal(s.phase, MIG_PH_ABORTED);
	assert_int_equal(s.abort_phase, MIG_PH_COMMITTING);
	mig_stream_fini(&s);

	d_committed();		/* a source ABORT after COMMIT is refused */
	pb_reset();
	pb_u32(MIG_E_CANCELLED);
	pb_str("too late");
	expect_refusal(&D, d_forged(MIG_ABORT), MIG_E_PROTOCOL, "not expected");
	assert_int_equal(D.phase, MIG_PH_COMMITTING);
	mig_stream_fini(&D);
}

/* ---- ROUND_ACK: the destination has written round 0 ---- */

static struct conv K;

/* K.src sent HELLO (2 vCPUs, accepted) and rounds [0, rounds): round 0
 * all of memory, the others page 3; the last one left remaining. */
static void k_rounds(uint32_t rounds, uint64_t remaining)
{
	static const uint64_t three = 3;
	uint64_t all[G_PAGES];

	for (unsigned i = 0; i < G_PAGES; i++)
		all[i] = i;
	conv_init(&K, M_WHOLE, false);
	send_hello(&K, 2);
	for (uint32_t i = 0; i < rounds; i++)
		send_round(&K, i ? &three : all, i ? 1 : G_PAGES, 100,
			   i + 1 < rounds ? 1 : remaining);
}

/* Feed K.src a ROUND_ACK made by hand, of len payload bytes (12 is right). */
static int k_ack(uint32_t round, uint64_t pages, size_t len)
{
	static uint8_t rec[64];

	pb_reset();
	pb_u32(round);
	pb_u64(pages);
	pb_u32(0);
	P.n = len;
	return feed(&K.src, rec, forge(rec, MIG_ROUND_ACK, K.src.rx_seq), NULL);
}

static void k_refuses(uint32_t round, uint64_t pages, size_t len, const char *words)
{
	expect_refusal(&K.src, k_ack(round, pages, len), MIG_E_PROTOCOL, words);
	assert_false(K.src.round0_acked);
	conv_fini(&K);
}

/* The wire layout: u32 round, u64 pages, after the header. */
static void test_round_ack_golden(void **st)
{
	static const uint8_t want[] = { 0x0f, 0x4d, 0, 0, 12, 0, 0, 0 };
	uint8_t buf[64];
	struct mig_rec a = { .type = MIG_ROUND_ACK, .ack = { 0, G_PAGES } };
	const struct mig_rec *r;

	(void)st;
	k_rounds(1, 0);
	deliver(&K, &K.s2d, &K.dst);		/* the destination acks it (dst_respond) */
	assert_true(K.dst.round0_acked);
	K.d2s.len = 0;
	assert_int_equal(mig_stream_encode(&K.dst, &a, buf, sizeof(buf)), -EINVAL);	/* twice */
	assert_non_null(strstr(K.dst.tx_err.msg, "twice"));
	K.dst.round0_acked = false;
	K.dst.tx_seq--;
	assert_int_equal(mig_stream_encode(&K.dst, &a, buf, sizeof(buf)), MIG_HDR_SIZE + 12);
	assert_memory_equal(buf, want, sizeof(want));
	assert_int_equal(get32(buf + 16), 0);
	assert_int_equal(get32(buf + 20), G_PAGES);
	assert_int_equal(get32(buf + 24), 0);
	assert_int_equal(feed(&K.src, buf, MIG_HDR_SIZE + 12, &r), 1);
	rec_equal(&a, r);
	assert_true(K.src.round0_acked);
	conv_fini(&K);
}

/* In place: while the source sends memory, or state, or after END. */
static void test_round_ack_in_place(void **st)
{
	struct mig_rec v = { .type = MIG_VCPU_STATE };

	(void)st;
	k_rounds(2, 5);				/* memory, round 1 ended */
	assert_int_equal(k_ack(0, G_PAGES, 12), 1);
	assert_true(K.src.round0_acked);
	conv_fini(&K);

	k_rounds(1, 0);				/* state: one of two vCPUs sent */
	cpu_init(&v.vcpu.cpu, 0);
	xsave_init(xsave[0], 1);
	v.vcpu.xsave_len = MIG_XSAVE_MIN;
	v.vcpu.xsave = xsave[0];
	enc(&K, &K.src, &K.s2d, &v);
	assert_int_equal(K.src.phase, MIG_PH_STATE);
	assert_int_equal(k_ack(0, G_PAGES, 12), 1);
	conv_fini(&K);
	/* after END: run_conv's destination acks once all came (the source
	 * is then LOADING): test_conversation_* */
}

/* Out of place, from the wrong side, or lying. */
static void test_round_ack_refused(void **st)
{
	static uint8_t buf[64];
	struct mig_rec a = { .type = MIG_ROUND_ACK, .ack = { 0, G_PAGES } };
	struct mig_rec y = { .type = MIG_READY };

	(void)st;
	k_rounds(0, 0);				/* nothing sent yet */
	k_refuses(0, 0, 12, "round 0, which has not ended (0 did)");
	k_rounds(1, 3);				/* round 1 acked before it ended */
	k_refuses(1, 1, 12, "round 1, which has not ended");
	k_rounds(2, 3);				/* round 1 ended: still only round 0 */
	k_refuses(1, 1, 12, "only round 0");
	k_rounds(1, 3);				/* pages it cannot have written */
	k_refuses(0, G_PAGES + 1, 12, "round 0 had 256 pages, 257 acknowledged");
	k_rounds(1, 3);				/* twice */
	assert_int_equal(k_ack(0, G_PAGES, 12), 1);
	expect_refusal(&K.src, k_ack(0, G_PAGES, 12), MIG_E_PROTOCOL, "twice");
	conv_fini(&K);
	k_rounds(1, 3);				/* a length outside 12..12 */
	k_refuses(0, G_PAGES, 11, "length 11 outside 12..12");
	k_rounds(1, 3);
	k_refuses(0, G_PAGES, 13, "length 13 outside 12..12");

	/* before the reply (ADMIT), and after READY */
	src_after_hello(&K.src, 1);
	expect_refusal(&K.src, k_ack(0, 0, 12), MIG_E_PROTOCOL, "not expected");
	mig_stream_fini(&K.src);
	d_replay(ref_find(MIG_COMMIT, 0));
	y.ready.pages = D.total_pages;
	assert_true(mig_stream_encode(&D, &y, buf, sizeof(buf)) > 0);
	D.round0_acked = false;			/* even one not yet sent */
	assert_int_equal(mig_stream_encode(&D, &a, buf, sizeof(buf)), -EINVAL);
	assert_non_null(strstr(D.tx_err.msg, "cannot send ROUND_ACK in phase ready"));
	mig_stream_fini(&D);

	/* the source never sends it; the destination refuses one */
	src_after_hello(&K.src, 1);
	assert_int_equal(mig_stream_encode(&K.src, &a, buf, sizeof(buf)), -EINVAL);
	mig_stream_fini(&K.src);
	d_replay(ref_find(MIG_ROUND_END, 0) + 1);
	pb_reset();
	pb_u32(0);
	pb_u64(G_PAGES);
	d_refuses(MIG_ROUND_ACK, MIG_E_PROTOCOL, "sent by the destination, not the source");

	/* the destination cannot claim round 0 early, nor be READY without it */
	no_ack = true;
	d_replay(ref_find(MIG_ROUND_END, 0));
	assert_int_equal(mig_stream_encode(&D, &a, buf, sizeof(buf)), -EINVAL);
	assert_non_null(strstr(D.tx_err.msg, "has not ended"));
	mig_stream_fini(&D);
	d_replay(ref_find(MIG_COMMIT, 0));
	no_ack = false;
	y.ready.pages = D.total_pages;
	assert_int_equal(mig_stream_encode(&D, &y, buf, sizeof(buf)), -EINVAL);
	assert_non_null(strstr(D.tx_err.msg, "READY before ROUND_ACK"));
	mig_stream_fini(&D);
}

/* FRAMES: the source's, once, after READY and before COMMIT, 4 bytes at
 * least and a carry's worth at most. */
static void test_frames_refused(void **st)
{
	static uint8_t buf[MIG_FRAMES_MAX + 64];
	struct mig_rec f = { .type = MIG_FRAMES, .frames = { sizeof(frameblob), frameblob } };
	struct mig_rec y = { .type = MIG_READY };

	(void)st;
	/* not before READY: the source cannot send it, the destination refuses it */
	d_replay(ref_find(MIG_COMMIT, 0));	/* END came: loading */
	assert_int_equal(D.phase, MIG_PH_LOADING);
	pb_reset();
	pb_u32(sizeof(frameblob));
	pb_bytes(frameblob, sizeof(frameblob));
	d_refuses(MIG_FRAMES, MIG_E_PROTOCOL, "not expected");
	src_after_hello(&K.src, 1);
	assert_int_equal(mig_stream_encode(&K.src, &f, buf, sizeof(buf)), -EINVAL);
	mig_stream_fini(&K.src);

	/* after READY: once */
	d_replay(ref_find(MIG_COMMIT, 0));
	y.ready.pages = D.total_pages;
	assert_true(mig_stream_encode(&D, &y, buf, sizeof(buf)) > 0);
	assert_int_equal(D.phase, MIG_PH_READY);
	assert_int_equal(splice(&D, &dseq, ref_find(MIG_FRAMES, 0)), 1);
	assert_true(D.frames_done);
	assert_int_equal(D.phase, MIG_PH_READY);
	expect_refusal(&D, splice(&D, &dseq, ref_find(MIG_FRAMES, 0)), MIG_E_PROTOCOL,
		       "FRAMES twice");
	mig_stream_fini(&D);

	/* lengths: the list's count at least, a carry at most, and all there */
	for (int k = 0; k < 3; k++) {
		static const uint32_t lens[] = { 3, MIG_FRAMES_MAX + 1, 100 };

		d_replay(ref_find(MIG_COMMIT, 0));
		y.ready.pages = D.total_pages;
		assert_true(mig_stream_encode(&D, &y, buf, sizeof(buf)) > 0);
		pb_reset();
		pb_u32(lens[k]);
		pb_bytes(frameblob, k == 2 ? sizeof(frameblob) : lens[k] < 4 ? lens[k] : 4);
		d_refuses(MIG_FRAMES, MIG_E_PROTOCOL, "FRAMES");
	}
	/* and never the destination's */
	d_replay(ref_find(MIG_COMMIT, 0));
	y.ready.pages = D.total_pages;
	assert_true(mig_stream_encode(&D, &y, buf, sizeof(buf)) > 0);
	assert_int_equal(mig_stream_encode(&D, &f, buf, sizeof(buf)), -EINVAL);
	mig_stream_fini(&D);
}

/* A source refuses READY from a destination that never acked round 0. */
static void test_ready_needs_ack(void **st)
{
	static uint8_t rec[64];

	(void)st;
	k_rounds(1, 0);
	send_state(&K, 2);
	assert_int_equal(K.src.phase, MIG_PH_LOADING);
	pb_reset();
	pb_u64(K.src.total_pages);
	expect_refusal(&K.src, feed(&K.src, rec, forge(rec, MIG_READY, K.src.rx_seq), NULL),
		       MIG_E_PROTOCOL, "READY before ROUND_ACK of round 0");
	conv_fini(&K);
}

static void test_phase_table(void **st)
{
	assert_true(mig_phase_allows(MIG_PH_HELLO, MIG_HELLO, MIG_SRC));
	assert_false(mig_phase_allows(MIG_PH_HELLO, MIG_HELLO, MIG_DST));
	assert_true(mig_phase_allows(MIG_PH_MEMORY, MIG_VCPU_STATE, MIG_SRC));
	assert_false(mig_phase_allows(MIG_PH_STATE, MIG_PAGES, MIG_SRC));
	assert_true(mig_phase_allows(MIG_PH_COMMITTING, MIG_ABORT, MIG_DST));
	assert_false(mig_phase_allows(MIG_PH_COMMITTING, MIG_ABORT, MIG_SRC));
	assert_true(mig_phase_allows(MIG_PH_HELLO, MIG_ABORT, MIG_DST));
	assert_true(mig_phase_allows(MIG_PH_MEMORY, MIG_ROUND_ACK, MIG_DST));
	assert_true(mig_phase_allows(MIG_PH_STATE, MIG_ROUND_ACK, MIG_DST));
	assert_true(mig_phase_allows(MIG_PH_LOADING, MIG_ROUND_ACK, MIG_DST));
	assert_false(mig_phase_allows(MIG_PH_MEMORY, MIG_ROUND_ACK, MIG_SRC));
	assert_false(mig_phase_allows(MIG_PH_ADMIT, MIG_ROUND_ACK, MIG_DST));
	assert_false(mig_phase_allows(MIG_PH_READY, MIG_ROUND_ACK, MIG_DST));
	for (uint16_t t = MIG_HELLO; t <= MIG_TYPE_LAST; t++) {
		assert_false(mig_phase_allows(MIG_PH_DONE, t, MIG_SRC));
		assert_false(mig_phase_allows(MIG_PH_ABORTED, t, MIG_DST));
		assert_false(mig_phase_allows(MIG_PH_REFUSED, t, MIG_DST));
		assert_string_not_equal(mig_type_name(t), "?");
	}
	assert_false(mig_phase_allows(MIG_PH_MEMORY, 0x4d00, MIG_SRC));
	assert_string_equal(mig_type_name(MIG_TYPE_LAST + 1), "?");
	assert_string_equal(mig_code_name(MIG_CODE_LAST + 1), "?");
	assert_string_equal(mig_phase_name((enum mig_phase)42), "?");
}

static void test_error_sanitized(void **st)
{
	struct mig_error e;
	char big[400];

	assert_int_equal(mig_error_set(&e, MIG_E_STATE, "a\033[2Jb\n%s", "c"), -EPROTO);
	assert_string_equal(e.msg, "a?[2Jb?c");
	assert_int_equal(e.code, MIG_E_STATE);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	mig_error_set(&e, MIG_E_STATE, "%s", big);
	assert_int_equal(strlen(e.msg), MIG_MSG_MAX);
}

/* ---- fuzz ---- */

static long fuzz_records;

/* A record handed out satisfies what the stream promises. */
static void promised(const struct mig_stream *d, const struct mig_rec *r)
{
	struct mig_error e;

	fuzz_records++;
	if (r->type == MIG_PAGES) {
		assert_true(r->pages.count >= 1 && r->pages.count <= MIG_PAGES_MAX);
		for (uint32_t i = 0; i < r->pages.count; i++) {
			assert_true(r->pages.page[i].gfn < d->guest_pages);
			assert_true(r->pages.page[i].kind <= MIG_PAGE_SPARSE);
			assert_true(mig_page_span(&r->pages.page[i]) <=
				    d->guest_pages - r->pages.page[i].gfn);
		}
	} else if (r->type == MIG_VCPU_STATE) {
		assert_int_equal(mig_cpu_state_check(&r->vcpu.cpu, d->xcr0_mask, &e), 0);
		assert_int_equal(mig_xsave_check(r->vcpu.xsave, r->vcpu.xsave_len, d->xcr0_mask, &e), 0);
	} else if (r->type == MIG_DEVICE_STATE) {
		assert_true(r->dev.len >= 1 && r->dev.len <= MIG_DEV_STATE_MAX);
	}
}

/* Feed in random chunks, checking every record: 1 all taken and complete,
 * 0 a record cut short, <0 refused (with a code and a message). */
static int fuzz_feed(struct mig_stream *d, const uint8_t *b, size_t n)
{
	size_t used;

	for (; n; b += used, n -= used) {
		size_t k = 1 + rnd() % 3000;
		const struct mig_rec *r;
		int rc = mig_stream_feed(d, b, k < n ? k : n, &used, &r);

		if (rc < 0) {
			assert_int_not_equal(d->rx_err.code, MIG_OK);
			assert_true(d->rx_err.msg[0] != 0);
			return rc;
		}
		if (rc == 1)
			promised(d, r);
	}
	return mig_stream_partial(d) ? 0 : 1;
}

static void test_fuzz_random_bytes(void **st)
{
	static uint8_t junk[4096];
	int refused = 0;

	rng = 42;
	for (int it = 0; it < 30000; it++) {
		size_t n = 16 + rnd() % 2000;

		for (size_t i = 0; i < n; i++)
			junk[i] = (uint8_t)rnd();
		if (it % 7 == 0)	/* a plausible header in front */
			junk[0] = 0x03, junk[1] = 0x4d;
		if (it % 3 == 0)
			assert_int_equal(mig_stream_init(&D, MIG_DST), 0);
		else if (it % 3 == 1)
			d_accepted(1);
		else
			src_after_hello(&D, 1);
		if (fuzz_feed(&D, junk, n) < 0)
			refused++;
		else
			assert_true(mig_stream_partial(&D));
		mig_stream_fini(&D);
	}
	assert_true(refused > 29900);
}

/* The reference source records after HELLO, corrupted: 1-4 bytes of one
 * record changed, with its CRC fixed up (fix_crc) or not. */
static void mutate_run(bool fix_crc, int iters)
{
	static uint8_t s[1 << 21];
	size_t start = ref.len[0], n = 0;
	int last = ref_find(MIG_END, 0);

	for (int i = 1; i <= last; i++)
		n += ref.len[i];
	for (int it = 0; it < iters; it++) {
		int rec = 1 + (int)(rnd() % (uint32_t)last), flips = 1 + (int)(rnd() % 4), rc;
		size_t off = ref.off[rec] - start;

		memcpy(s, ref.all + start, n);
		for (int f = 0; f < flips; f++) {
			size_t at = off + rnd() % ref.len[rec];

			if (fix_crc && at >= off + 12 && at < off + 16)
				at = off + 16 + rnd() % (ref.len[rec] - 16);
			s[at] ^= (uint8_t)(1 + rnd() % 255);
		}
		if (fix_crc)	/* keep the (maybe changed) sequence number */
			reseq(s + off, ref.len[rec], get32(s + off + 8));
		d_replay(1);
		rc = fuzz_feed(&D, s, n);
		if (!fix_crc)
			assert_true(rc <= 0);	/* CRC catches every corruption */
		if (rc == 1)
			assert_int_equal(D.phase, MIG_PH_LOADING);
		fuzz_records += last;
		mig_stream_fini(&D);
	}
}

static void test_fuzz_mutations(void **st)
{
	rng = 4242;
	mutate_run(false, 1500);
	mutate_run(true, 6000);
	assert_true(fuzz_records > 100000);
}

/* A small conversation for the fuzzers: many small records. */
static int fuzz_setup(void **st)
{
	rng = 99;
	guest_init();
	conv_init(&ref, M_RANDOM, true);
	run_conv(&ref, 1, 16);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conversation_whole),
		cmocka_unit_test(test_conversation_bytes),
		cmocka_unit_test(test_conversation_random),
		cmocka_unit_test(test_golden_abort),
		cmocka_unit_test(test_golden_layout),
		cmocka_unit_test(test_cpu_state_every_field),
		cmocka_unit_test(test_cpu_state_refused),
		cmocka_unit_test(test_cpu_state_honest_modes),
		cmocka_unit_test(test_xsave_refused),
		cmocka_unit_test(test_bool_byte_refused),
		cmocka_unit_test(test_oversized_lengths),
		cmocka_unit_test(test_buffer_bounds),
		cmocka_unit_test(test_truncated_records),
		cmocka_unit_test(test_hello_fields_refused),
		cmocka_unit_test(test_fuzz_seeds_speak_this_version),
		cmocka_unit_test(test_hello_version),
		cmocka_unit_test(test_baseline),
		cmocka_unit_test(test_gfn_out_of_range),
		cmocka_unit_test(test_pages_bad_kind_and_count),
		cmocka_unit_test(test_phase_table),
		cmocka_unit_test(test_error_sanitized),
		cmocka_unit_test(test_encoder_order),
		cmocka_unit_test(test_round_ack_golden),
		cmocka_unit_test(test_round_ack_in_place),
		cmocka_unit_test(test_ready_needs_ack),
		cmocka_unit_test(test_fuzz_random_bytes),
	};
	const struct CMUnitTest spliced[] = {
		cmocka_unit_test(test_out_of_order),
		cmocka_unit_test(test_tsc_clock_bounded),
		cmocka_unit_test(test_totals),
		cmocka_unit_test(test_sequence_and_header),
		cmocka_unit_test(test_abort_both_ways),
		cmocka_unit_test(test_fate),
		cmocka_unit_test(test_round_ack_refused),
		cmocka_unit_test(test_frames_refused),
	};
	const struct CMUnitTest fuzzed[] = {
		cmocka_unit_test(test_fuzz_mutations),
	};
	int failed = cmocka_run_group_tests(tests, NULL, NULL);

	failed += cmocka_run_group_tests(spliced, ref_setup, ref_teardown);
	failed += cmocka_run_group_tests(fuzzed, fuzz_setup, ref_teardown);
	return failed;
}
