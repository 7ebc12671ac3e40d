/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target: the migration stream's record decoder and state
 * machine (hv/migrate/stream.c, statecheck.c, sparse.c) against a hostile
 * peer.
 *
 * Input: byte 0 = setup (bit 0: we are the source, else the destination;
 * bit 1: the destination refuses HELLO / the source starts with QUERY),
 * then steps, each: u8 ctl, u16 len (LE), len bytes; or, in the long form,
 * u8 ctl, u24 len, u8 head, u24 reps, len bytes, which stand for a payload
 * of their first head bytes and then the rest repeated reps times, the
 * i-th copy with i added to its first (up to 8, LE) bytes: so a PAGES
 * record of 256 DATA pages at gfns g, g+1, ... (about 1 MiB) or a
 * DEVICE_STATE of 65536 bytes takes one page or one byte of input.
 *   ctl & 15: the record type MIG_MAGIC | (ctl & 15), 0 meaning FRAMES
 *     (0x4d10; the unknown types come through raw steps);
 *   ctl & 0x10: the bytes are fed raw (any framing), else they are the
 *     payload of a record of that type framed by the harness with the
 *     right length, sequence number, flags (0) and CRC-32;
 *   ctl & 0x60: 0x40 = the long form; 0x20 = a wrong sequence number;
 *     0x60 = nonzero flags;
 *   ctl & 0x80: fed one byte at a time (framed: the header), else in two
 *     pieces.
 * Our own side answers as a real peer would (HELLO_REPLY, ROUND_ACK,
 * READY, COMMITTED; PAGES, ROUND_END, VCPU_STATE ... END, FRAMES, COMMIT),
 * so the fuzzer reaches every phase.
 *
 * Invariants: feed consumes <= len bytes, 0 means all taken; a refusal is
 * -EPROTO or -ENOMEM, sticky, with a printable message; the decoder's
 * sequence number counts the records handed out; a handed-out record has
 * the framed type, is allowed in the phase it came in, its pointers lie
 * inside the stream's payload buffer, and every field obeys the rules the
 * decoder promises (docs/migration.md): strings printable and
 * NUL-terminated (HELLO kernel, initrd, modules without spaces, the name
 * the shell's), counts and totals as the conversation so far says, the
 * order of DEVICE_STATE, TSC, END, READY, FRAMES, COMMIT; pages are inside
 * guest memory; a sparse page is checked here segment by segment, decodes
 * into exactly one page equal to that reading (zero outside the segments),
 * and re-encodes to the same page.
 *
 * FERRY_FUZZ_MKSEEDS=dir: write seeds (whole conversations) and exit.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hv/cpuid.h"
#include "hv/lib/crc32.h"
#include "hv/migrate/sparse.h"
#include "hv/migrate/stream.h"
#include "tests/fuzz/fuzz.h"


#define G_PAGES 256u			/* a 1 MiB guest */
#define XCR0_DST 0x7ull
#define OUTCAP (1u << 21)
/* a long step's payload: above every type's bound (PAGES: 1050884) */
#define PAYCAP ((1u << 20) + 8192)
#define FRAMES_SMALL (4 + 2 + 60)

static uint8_t out[OUTCAP];		/* what our side encodes */
static uint8_t pay[PAYCAP];		/* a step's payload, expanded */
static uint8_t recbuf[MIG_HDR_SIZE + PAYCAP];
static uint8_t xsave[MIG_XSAVE_MAX];
static uint8_t page[MIG_PAGE_SIZE], devblob[300], bigdev[MIG_DEV_STATE_MAX];
static uint8_t frames[MIG_FRAMES_MAX];	/* gnet_rx_late_snapshot's format */
static bool g_big;			/* seeds: our source sends the largest records */

/* ---- a valid guest, as the unit test builds it ---- */

static struct seg seg_of(uint16_t sel, uint16_t attr, uint32_t limit, uint64_t base)
{
	return (struct seg){ .sel = sel, .attr = attr, .limit = limit, .base = base };
}

static void cpu_init(struct cpu_state *c)
{
	memset(c, 0, sizeof(*c));
	for (int i = 0; i < GPR_COUNT; i++)
		c->gpr[i] = 0x1111111111111111ull * (uint64_t)(i + 1);
	c->rip = 0xffffffff81000000ull;
	c->rflags = 0x246;
	c->cr0 = 0x80050033;
	c->cr3 = 0x1234000;
	c->cr4 = 0x6f0;
	c->efer = 0xd01;
	c->xcr0 = 3;
	c->dr6 = 0xffff0ff0; c->dr7 = 0x401;
	c->es = seg_of(0x23, 0xcf3, 0xfffff, 0x10);
	c->cs = seg_of(0x10, 0x29b, 0xffffffff, 0x20);
	c->ss = seg_of(0x18, 0xc93, 0xfffffffe, 0x30);
	c->ds = seg_of(0x2b, 0xcf1, 0xffffffef, 0x40);
	c->fs = seg_of(0x33, 0x0f3, 0xffff, 0x7f0000001000ull);
	c->gs = seg_of(0x3b, 0x0f2, 0xfffe, 0xffff888000000000ull);
	c->ldtr = seg_of(0x48, 0x082, 0xfff, 0xfffffe0000005000ull);
	c->tr = seg_of(0x40, 0x08b, 0x67, 0xfffffe0000001000ull);
	c->gdtr.base = 0xfffffe0000000000ull;
	c->gdtr.limit = 0x7f;
	c->idtr.base = 0xfffffe0000002000ull;
	c->idtr.limit = 0xfff;
	c->pat = 0x0007040600070406ull;
	c->mtrr_def_type = 0xc06;
	c->misc_enable = 0x801;
}

static void statics_init(void)
{
	memset(xsave, 0, sizeof(xsave));
	xsave[0] = 0x7f; xsave[1] = 0x03;
	xsave[24] = 0x80; xsave[25] = 0x1f;
	xsave[512] = 0x3;
	for (unsigned j = 0; j < sizeof(page); j += 64)
		page[j] = (uint8_t)(j / 64 + 1);
	for (unsigned j = 0; j < sizeof(devblob); j++)
		devblob[j] = (uint8_t)(j ^ 0x5a);
	for (unsigned j = 0; j < sizeof(bigdev); j++)
		bigdev[j] = (uint8_t)j;		/* what one repeated byte expands to */
	/* FRAMES: u32 n, then n times u16 len and the frame; the small one is
	 * one 60-byte frame, the big one 32 of 1022 bytes (MIG_FRAMES_MAX) */
	memset(frames, 0, sizeof(frames));
	frames[0] = 32;
	for (unsigned i = 0; i < 32; i++) {
		uint8_t *f = frames + 4 + i * 1024;
		f[0] = 1022 & 0xff; f[1] = 1022 >> 8;
		memset(f + 2, 0xff, 6);			/* broadcast */
		f[2 + 6] = 0x52; f[2 + 11] = (uint8_t)i;
		f[2 + 12] = 0x08; f[2 + 13] = 0x06;	/* ARP */
	}
}

static const uint8_t *frames_blob(uint32_t *len)
{
	static uint8_t small[FRAMES_SMALL];

	if (g_big) {
		*len = MIG_FRAMES_MAX;
		return frames;
	}
	memcpy(small, frames, sizeof(small));
	small[0] = 1;
	small[4] = 60;
	small[5] = 0;
	*len = sizeof(small);
	return small;
}

static void hello_init(struct mig_hello *h)
{
	*h = (struct mig_hello){ .proto_version = MIG_PROTO_VERSION,
				 .cpu_state_version = MIG_CPU_STATE_VERSION, .dev_version = 1,
				 .vcpus = 1, .mig_id = 0x0123456789abcdefull,
				 .mem_size = G_PAGES * MIG_PAGE_SIZE, .tsc_hz = 2100000000ull,
				 .guest_tsc = 123456789, .nic = true,
				 .mac = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 },
				 .weight = 512, .cap_pct = 50 };
	static uint64_t baseline;
	if (!baseline)
		baseline = mig_cpu_baseline(cpuid_guest);
	h->cpu_baseline = baseline;
	strcpy(h->ferry_version, "0.1.0 (fuzz)");
	strcpy(h->name, "web-1");
	strcpy(h->kernel, "testguest.elf");
	strcpy(h->cmdline, "console=ttyS0");
	strcpy(h->modules, "a.mod,b.mod");	/* a multiboot1 guest's: no initrd */
	h->timeout_s = 60;
}

/* ---- our side: answer as a conforming peer would ---- */

/* Encode r; returns the bytes (0 when the stream refuses to send it). */
static long enc(struct mig_stream *s, const struct mig_rec *r)
{
	long n = mig_stream_encode(s, r, out, sizeof(out));

	CHECK(n != -ENOSPC);
	return n > 0 ? n : 0;
}

typedef void (*sink_fn)(void *ctx, const uint8_t *rec, size_t n);

static void dst_respond(struct mig_stream *s, bool refuse, sink_fn sink, void *ctx)
{
	struct mig_rec r;
	long n = 0;

	memset(&r, 0, sizeof(r));
	switch (s->phase) {
	case MIG_PH_ADMIT:
		r.type = MIG_HELLO_REPLY;
		r.reply = (struct mig_reply){ .proto_version = MIG_PROTO_VERSION,
					      .code = refuse ? MIG_E_LIMIT : MIG_OK,
					      .xcr0_mask = XCR0_DST };
		strcpy(r.reply.ferry_version, "0.1.0 (fuzz)");
		n = enc(s, &r);
		break;
	case MIG_PH_MEMORY:
		if (s->rounds && !s->round0_acked) {
			r.type = MIG_ROUND_ACK;
			r.ack = (struct mig_round_ack){ 0, s->round0_pages };
			n = enc(s, &r);
		}
		break;
	case MIG_PH_LOADING:
		r.type = MIG_READY;
		r.ready.pages = s->total_pages;
		n = enc(s, &r);
		break;
	case MIG_PH_COMMITTING:
		r.type = MIG_COMMITTED;
		n = enc(s, &r);
		break;
	case MIG_PH_QUERY:
		r.type = MIG_QUERY_REPLY;
		r.qreply = (struct mig_query_reply){ s->query_id, MIG_Q_DISCARDED };
		n = enc(s, &r);
		break;
	default:
		break;
	}
	if (n && sink)
		sink(ctx, out, (size_t)n);
}

static void src_respond(struct mig_stream *s, sink_fn sink, void *ctx)
{
	struct mig_rec r;
	long n;

	memset(&r, 0, sizeof(r));
	if (s->phase == MIG_PH_MEMORY && !s->round_open && !s->rounds) {
		static struct mig_page pg[MIG_PAGES_MAX];
		static uint8_t sp[MIG_SPARSE_MAX];
		uint32_t cnt = 4;
		if (g_big) {	/* round 0 in one record of the most pages: 1 MiB */
			CHECK(G_PAGES == MIG_PAGES_MAX);
			cnt = MIG_PAGES_MAX;
			for (unsigned i = 0; i < cnt; i++)
				pg[i] = (struct mig_page){ .gfn = i, .kind = MIG_PAGE_DATA,
							   .data = page };
		} else {	/* one of each kind */
			pg[0] = (struct mig_page){ .gfn = 0, .kind = MIG_PAGE_DATA, .data = page };
			pg[1] = (struct mig_page){ .gfn = 1, .kind = MIG_PAGE_ZERO };
			pg[2] = (struct mig_page){ .gfn = 2, .kind = MIG_PAGE_ZERO_RUN,
						   .run = G_PAGES - 3 };
			int sl = mig_sparse_encode(page, sp, sizeof(sp));
			CHECK(sl >= (int)MIG_SPARSE_MIN);
			pg[3] = (struct mig_page){ .gfn = G_PAGES - 1, .kind = MIG_PAGE_SPARSE,
						   .data = sp, .len = (uint16_t)sl };
		}
		r.type = MIG_PAGES;
		r.pages = (struct mig_pages){ cnt, pg };
		if ((n = enc(s, &r)) && sink)
			sink(ctx, out, (size_t)n);
		r.type = MIG_ROUND_END;
		r.round = (struct mig_round_end){ 0, G_PAGES, 0 };
		if ((n = enc(s, &r)) && sink)
			sink(ctx, out, (size_t)n);
	}
	if (s->round0_acked && (s->phase == MIG_PH_MEMORY || s->phase == MIG_PH_STATE)) {
		while (s->vcpus_done < s->hello.vcpus) {
			memset(&r, 0, sizeof(r));
			r.type = MIG_VCPU_STATE;
			r.vcpu.id = s->vcpus_done;
			cpu_init(&r.vcpu.cpu);
			r.vcpu.xsave_len = 576;
			r.vcpu.xsave = xsave;
			if (!(n = enc(s, &r)))
				break;
			if (sink)
				sink(ctx, out, (size_t)n);
		}
		memset(&r, 0, sizeof(r));
		r.type = MIG_DEVICE_STATE;
		r.dev = g_big ? (struct mig_devstate){ sizeof(bigdev), bigdev } :
				(struct mig_devstate){ sizeof(devblob), devblob };
		if ((n = enc(s, &r)) && sink)
			sink(ctx, out, (size_t)n);
		r.type = MIG_TSC;
		r.tsc = (struct mig_tsc){ 987654321, 5000000000ull };
		if ((n = enc(s, &r)) && sink)
			sink(ctx, out, (size_t)n);
		r.type = MIG_END;
		r.end = (struct mig_end){ s->rounds, s->vcpus_done, s->total_pages };
		if ((n = enc(s, &r)) && sink)
			sink(ctx, out, (size_t)n);
	}
	if (s->phase == MIG_PH_READY && !s->frames_done) {
		memset(&r, 0, sizeof(r));
		r.type = MIG_FRAMES;
		r.frames.data = frames_blob(&r.frames.len);
		if ((n = enc(s, &r)) && sink)
			sink(ctx, out, (size_t)n);
		CHECK(s->frames_done);
	}
	if (s->phase == MIG_PH_READY) {
		memset(&r, 0, sizeof(r));
		r.type = MIG_COMMIT;
		r.commit = (struct mig_commit){ 1000, 0 };
		if ((n = enc(s, &r)) && sink)
			sink(ctx, out, (size_t)n);
	}
}

static void src_start(struct mig_stream *s, bool query, sink_fn sink, void *ctx)
{
	struct mig_rec r;
	long n;

	memset(&r, 0, sizeof(r));
	if (query) {
		r.type = MIG_QUERY;
		r.query = (struct mig_query){ MIG_PROTO_VERSION, 0x0123456789abcdefull };
	} else {
		r.type = MIG_HELLO;
		hello_init(&r.hello);
	}
	n = enc(s, &r);
	CHECK(n > 0);
	if (sink)
		sink(ctx, out, (size_t)n);
}

/* ---- checks on what the decoder hands out ---- */

static void in_payload(const struct mig_stream *s, const uint8_t *p, size_t len)
{
	CHECK(p != NULL);
	CHECK(p >= s->buf && len <= s->cur_len && (size_t)(p - s->buf) <= s->cur_len - len);
	CHECK(s->cur_len <= s->cap);
}

static bool str_ok(const char *str, size_t size)
{
	size_t n = strnlen(str, size);

	if (n == size)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)str[i] < 0x20 || (unsigned char)str[i] > 0x7e)
			return false;
	return true;
}

/* str_ok and no spaces (a file name, a module list). */
static bool word_ok(const char *str, size_t size)
{
	return str_ok(str, size) && !strchr(str, ' ');
}

/* hv/shell/parse.c name_valid: 1-31 of [A-Za-z0-9_.-], not starting with
 * [_.-]. */
static bool name_rule(const char *str, size_t size)
{
	size_t n = strnlen(str, size);

	if (n == 0 || n > MIG_NAME_MAX || n == size || strchr("_.-", str[0]))
		return false;
	return strspn(str, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			   "0123456789_.-") == n;
}

/*
 * A sparse page as this harness reads sparse.h's format: segments (u16
 * first word, u16 words, the words), ascending, not overlapping, inside
 * the page, exactly filling len; the page is zero outside them.  Writes
 * the page into pg and returns whether the encoding is valid.
 */
static bool sparse_ref(const uint8_t *in, size_t len, uint8_t *pg)
{
	size_t pos = 0;
	unsigned next = 0;

	memset(pg, 0, MIG_PAGE_SIZE);
	if (len < MIG_SPARSE_MIN || len > MIG_SPARSE_MAX)
		return false;
	while (pos < len) {
		if (len - pos < 4)
			return false;
		unsigned first = (unsigned)(in[pos] | in[pos + 1] << 8);
		unsigned words = (unsigned)(in[pos + 2] | in[pos + 3] << 8);
		if (first < next || words == 0 || first + words > MIG_PAGE_SIZE / 8 ||
		    len - pos - 4 < (size_t)words * 8)
			return false;
		memcpy(pg + first * 8, in + pos + 4, (size_t)words * 8);
		pos += 4 + (size_t)words * 8;
		next = first + words;
	}
	return true;
}

static void check_sparse(const uint8_t *data, size_t len)
{
	static uint8_t ref[MIG_PAGE_SIZE], again[MIG_PAGE_SIZE], sp[MIG_SPARSE_MAX];

	CHECK(sparse_ref(data, len, ref));
	CHECK(mig_sparse_valid(data, len));
	/* an exact-size heap page: ASan sees a write past it */
	uint8_t *pg = malloc(MIG_PAGE_SIZE);
	memset(pg, 0xa5, MIG_PAGE_SIZE);
	mig_sparse_decode(data, len, pg);
	CHECK(memcmp(pg, ref, MIG_PAGE_SIZE) == 0);
	/* re-encoded (the encoder's own segments), it is the same page; all
	 * zero words in the segments may make it all zero (0) */
	int n = mig_sparse_encode(pg, sp, sizeof(sp));
	CHECK(n >= 0 && (size_t)n <= len);
	if (n == 0) {
		static const uint8_t zero[MIG_PAGE_SIZE];
		CHECK(memcmp(pg, zero, MIG_PAGE_SIZE) == 0);
	} else {
		CHECK(sparse_ref(sp, (size_t)n, again));
		CHECK(memcmp(again, pg, MIG_PAGE_SIZE) == 0);
	}
	free(pg);
}

/* What a record may change, as it was before the record. */
struct before {
	enum mig_phase phase;
	uint32_t rounds, vcpus_done;
	uint64_t round_pages, total_pages;
	bool round0_acked, dev_done, tsc_done, frames_done;
};

static struct before before_of(const struct mig_stream *s)
{
	return (struct before){ s->phase, s->rounds, s->vcpus_done, s->round_pages,
				s->total_pages, s->round0_acked, s->dev_done, s->tsc_done,
				s->frames_done };
}

/* r was handed out by s and applied: b is s before it, s after. */
static void check_rec(const struct mig_stream *s, const struct before *b,
		      const struct mig_rec *r, uint16_t want)
{
	static uint8_t pg[MIG_PAGE_SIZE];
	const struct mig_hello *h = &s->hello;

	if (want)
		CHECK(r->type == want);
	switch (r->type) {
	case MIG_HELLO:
		CHECK(b->phase == MIG_PH_HELLO && s->phase == MIG_PH_ADMIT);
		/* a destination takes another version's HELLO (only the version
		 * is read: admission refuses it) */
		if (h->proto_version != MIG_PROTO_VERSION && s->role == MIG_DST)
			break;
		CHECK(h->vcpus >= 1 && h->vcpus <= MIG_VCPUS_MAX);
		CHECK(h->mem_size && h->mem_size <= MIG_MEM_MAX &&
		      h->mem_size % MIG_MEM_ALIGN == 0);
		CHECK(s->guest_pages == h->mem_size / MIG_PAGE_SIZE);
		CHECK(h->tsc_hz >= MIG_TSC_HZ_MIN && h->tsc_hz <= MIG_TSC_HZ_MAX);
		CHECK(!h->nic || (!(h->mac[0] & 1) && (h->mac[0] | h->mac[1] | h->mac[2] |
						       h->mac[3] | h->mac[4] | h->mac[5])));
		CHECK(h->weight >= 1 && h->weight <= 65535 && h->cap_pct <= 100 * h->vcpus);
		CHECK(name_rule(h->name, sizeof(h->name)));
		CHECK(word_ok(h->kernel, sizeof(h->kernel)));
		CHECK(str_ok(h->cmdline, sizeof(h->cmdline)));
		CHECK(word_ok(h->initrd, sizeof(h->initrd)));
		CHECK(word_ok(h->modules, sizeof(h->modules)));
		CHECK(h->kernel[0] && !(h->initrd[0] && h->modules[0]));
		CHECK(h->timeout_s <= MIG_TIMEOUT_MAX_S);
		CHECK(str_ok(h->ferry_version, sizeof(h->ferry_version)));
		break;
	case MIG_HELLO_REPLY:
		CHECK(r->reply.code <= MIG_CODE_LAST);
		if (r->reply.proto_version != MIG_PROTO_VERSION) {
			CHECK(r->reply.code != MIG_OK && s->phase == MIG_PH_REFUSED);
			break;
		}
		CHECK(str_ok(r->reply.msg, sizeof(r->reply.msg)));
		CHECK(str_ok(r->reply.ferry_version, sizeof(r->reply.ferry_version)));
		if (r->reply.code != MIG_OK) {
			CHECK(s->phase == MIG_PH_REFUSED && s->end_code == r->reply.code);
			break;
		}
		CHECK(s->phase == MIG_PH_MEMORY && s->xcr0_mask == r->reply.xcr0_mask);
		CHECK((s->xcr0_mask & 3) == 3 && !(s->xcr0_mask & ~MIG_XCR0_PROTO));
		break;
	case MIG_PAGES: {
		uint64_t span = 0;
		CHECK(b->phase == MIG_PH_MEMORY && s->phase == MIG_PH_MEMORY && s->round_open);
		CHECK(r->pages.count >= 1 && r->pages.count <= MIG_PAGES_MAX);
		for (uint32_t i = 0; i < r->pages.count; i++) {
			const struct mig_page *p = &r->pages.page[i];
			CHECK(p->gfn < s->guest_pages);
			CHECK(mig_page_span(p) <= s->guest_pages - p->gfn);
			span += mig_page_span(p);
			if (p->kind == MIG_PAGE_DATA) {
				in_payload(s, p->data, MIG_PAGE_SIZE);
				static uint8_t sp[MIG_SPARSE_MAX];
				int n = mig_sparse_encode(p->data, sp, sizeof(sp));
				if (n > 0) {
					CHECK(mig_sparse_valid(sp, (size_t)n));
					memset(pg, 0xa5, sizeof(pg));
					mig_sparse_decode(sp, (size_t)n, pg);
					CHECK(memcmp(pg, p->data, sizeof(pg)) == 0);
				}
			} else if (p->kind == MIG_PAGE_SPARSE) {
				in_payload(s, p->data, p->len);
				check_sparse(p->data, p->len);
			} else if (p->kind == MIG_PAGE_ZERO_RUN) {
				CHECK(p->run >= 2 && p->run <= MIG_ZERO_RUN_MAX);
			} else {
				CHECK(p->kind == MIG_PAGE_ZERO);
			}
		}
		CHECK(span <= s->guest_pages && span <= MIG_REC_SPAN_MAX);
		CHECK(s->total_pages == b->total_pages + span);
		CHECK(s->round_pages == b->round_pages + span);
		CHECK(s->round_pages <= s->guest_pages && s->seen_pages <= s->guest_pages);
		break;
	}
	case MIG_ROUND_END:
		CHECK(s->phase == MIG_PH_MEMORY && !s->round_open && !s->round_pages);
		CHECK(r->round.round == b->rounds && r->round.round + 1 == s->rounds);
		CHECK(r->round.round < MIG_ROUNDS_MAX && r->round.pages == b->round_pages);
		CHECK(r->round.remaining <= s->guest_pages);
		if (r->round.round == 0)
			CHECK(s->seen_pages == s->guest_pages && s->round0_pages == r->round.pages);
		break;
	case MIG_ROUND_ACK:
		CHECK(r->ack.round == 0 && r->ack.pages == s->round0_pages);
		CHECK(!b->round0_acked && s->round0_acked);
		CHECK(s->rounds >= 1);
		break;
	case MIG_VCPU_STATE:
		CHECK(s->phase == MIG_PH_STATE && s->rounds && !s->round_open);
		CHECK(r->vcpu.xsave_len >= MIG_XSAVE_MIN && r->vcpu.xsave_len <= MIG_XSAVE_MAX);
		in_payload(s, r->vcpu.xsave, r->vcpu.xsave_len);
		CHECK(r->vcpu.id == b->vcpus_done && r->vcpu.id + 1 == s->vcpus_done &&
		      r->vcpu.id < h->vcpus);
		break;
	case MIG_DEVICE_STATE:
		CHECK(!b->dev_done && s->dev_done && s->vcpus_done == h->vcpus && !s->tsc_done);
		CHECK(r->dev.len >= 1 && r->dev.len <= MIG_DEV_STATE_MAX);
		in_payload(s, r->dev.data, r->dev.len);
		break;
	case MIG_TSC:
		CHECK(!b->tsc_done && s->dev_done && s->tsc_done && s->phase == MIG_PH_STATE);
		CHECK(!(r->tsc.guest_clock_ns >> 62));
		break;
	case MIG_END:
		CHECK(b->phase == MIG_PH_STATE && s->phase == MIG_PH_LOADING);
		CHECK(s->tsc_done && s->dev_done);
		CHECK(r->end.rounds == s->rounds && r->end.vcpus == s->vcpus_done &&
		      r->end.vcpus == h->vcpus && r->end.pages == s->total_pages);
		break;
	case MIG_READY:
		CHECK(b->phase == MIG_PH_LOADING && s->phase == MIG_PH_READY && s->round0_acked);
		CHECK(r->ready.pages == s->total_pages);
		break;
	case MIG_FRAMES:
		/* after READY (and so after the device state), once */
		CHECK(b->phase == MIG_PH_READY && !b->frames_done);
		CHECK(s->phase == MIG_PH_READY && s->frames_done && s->dev_done);
		CHECK(r->frames.len >= 4 && r->frames.len <= MIG_FRAMES_MAX);
		in_payload(s, r->frames.data, r->frames.len);
		break;
	case MIG_COMMIT:
		CHECK(b->phase == MIG_PH_READY && s->phase == MIG_PH_COMMITTING);
		CHECK(r->commit.paused_ns <= MIG_PAUSED_NS_MAX);
		CHECK(!(r->commit.flags & ~MIG_COMMIT_FLAGS));
		break;
	case MIG_COMMITTED:
		CHECK(b->phase == MIG_PH_COMMITTING && s->phase == MIG_PH_DONE);
		break;
	case MIG_ABORT:
		CHECK(s->phase == MIG_PH_ABORTED && s->end_code == r->abort.code);
		CHECK(r->abort.code != MIG_OK && r->abort.code <= MIG_CODE_LAST);
		CHECK(str_ok(r->abort.msg, sizeof(r->abort.msg)));
		break;
	case MIG_QUERY:
		CHECK(s->phase == MIG_PH_QUERY && r->query.proto_version == MIG_PROTO_VERSION);
		CHECK(s->query_id == r->query.mig_id);
		break;
	case MIG_QUERY_REPLY:
		CHECK(s->phase == MIG_PH_ANSWERED && r->qreply.mig_id == s->query_id);
		CHECK(r->qreply.outcome <= MIG_Q_DISCARDED);
		break;
	default:
		CHECK(!"a record of no known type");
	}
}

/* ---- feeding ---- */

static size_t frame(uint16_t type, uint16_t flags, uint32_t seq, const uint8_t *p, size_t n)
{
	uint8_t *h = recbuf;

	h[0] = (uint8_t)type; h[1] = (uint8_t)(type >> 8);
	h[2] = (uint8_t)flags; h[3] = (uint8_t)(flags >> 8);
	for (int i = 0; i < 4; i++) {
		h[4 + i] = (uint8_t)(n >> 8 * i);
		h[8 + i] = (uint8_t)(seq >> 8 * i);
	}
	memcpy(h + 16, p, n);
	uint32_t crc = crc32_update(crc32_update(0, h, 12), h + 16, n);
	for (int i = 0; i < 4; i++)
		h[12 + i] = (uint8_t)(crc >> 8 * i);
	return 16 + n;
}

/*
 * A step's payload into pay: the first head bytes of p[0..len), then the
 * rest repeated reps times, the i-th copy with i added to its first (up to
 * 8, little-endian) bytes; no more than PAYCAP.  Returns the bytes.
 */
static size_t expand(const uint8_t *p, size_t len, size_t head, size_t reps)
{
	size_t h = head < len ? head : len, ul = len - h, n = h;

	memcpy(pay, p, h);
	for (size_t i = 0; ul && i < reps && ul <= PAYCAP - n; i++, n += ul) {
		uint8_t *q = pay + n;
		size_t k = ul < 8 ? ul : 8;
		uint64_t v = 0;

		memcpy(q, p + h, ul);
		for (size_t j = 0; j < k; j++)
			v |= (uint64_t)q[j] << 8 * j;
		v += i;
		for (size_t j = 0; j < k; j++)
			q[j] = (uint8_t)(v >> 8 * j);
	}
	return n;
}

struct ctx {
	struct mig_stream *s;
	int dead;		/* the sticky refusal once seen */
	uint16_t want;		/* the type framed, 0 if raw */
	int recs;
};

/* Feed b[0..n) in pieces of at most piece bytes; check everything. */
static void feed(struct ctx *c, const uint8_t *b, size_t n, size_t piece)
{
	while (n) {
		const struct mig_rec *r = NULL;
		size_t used = 12345678, give = n < piece ? n : piece;
		enum mig_phase ph = c->s->phase;
		struct before bf = before_of(c->s);
		/* an exact-size heap copy: ASan sees reads past it (not of the
		 * few pieces above 64 KiB: each would be a mapping of its own) */
		uint8_t *copy = give <= 65536 ? malloc(give) : NULL;
		if (copy)
			memcpy(copy, b, give);
		int rc = mig_stream_feed(c->s, copy ? copy : b, give, &used, &r);
		free(copy);

		if (c->dead) {
			CHECK(rc == c->dead);
			return;
		}
		if (rc < 0) {
			CHECK(rc == -EPROTO || rc == -ENOMEM);
			CHECK(c->s->rx_err.code != MIG_OK || rc == -ENOMEM);
			CHECK(str_ok(c->s->rx_err.msg, sizeof(c->s->rx_err.msg)));
			c->dead = rc;
			/* sticky */
			CHECK(mig_stream_feed(c->s, b, n, &used, &r) == rc);
			return;
		}
		CHECK(used <= give);
		if (rc == 0) {
			CHECK(used == give);
		} else {
			CHECK(rc == 1 && r != NULL);
			CHECK(mig_phase_allows(ph, r->type, c->s->role == MIG_SRC ? MIG_DST : MIG_SRC));
			check_rec(c->s, &bf, r, c->want);
			c->recs++;
		}
		CHECK(used > 0 || rc == 1);
		b += used, n -= used;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- seeds: the peer's side of whole conversations ---- */

struct seedw { FILE *f; struct mig_stream *peer; bool peer_src; bool refuse; };

static void put_le(FILE *f, size_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		fputc((int)(v >> 8 * i) & 0xff, f);
}

/* One step of the seed: the short form, or the long one, with the payload
 * as a head and one repeated unit when it is so (PAGES of pages at
 * successive gfns, a DEVICE_STATE of bytes 0, 1, 2, ...). */
static void seed_step(FILE *f, uint8_t ctl, const uint8_t *p, size_t plen)
{
	size_t len = plen, head = 0, reps = 1;

	if (plen <= 0xffff) {
		fputc(ctl, f);
		put_le(f, plen, 2);
		fwrite(p, 1, plen, f);
		return;
	}
	uint32_t cnt = (uint32_t)(p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24);
	size_t units[] = { cnt ? (plen - 4) / cnt : 0, 1 };
	for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
		size_t ul = units[u], r = ul ? (plen - 4) / ul : 0;
		if (!ul || 4 + r * ul != plen || expand(p, 4 + ul, 4, r) != plen ||
		    memcmp(pay, p, plen))
			continue;
		len = 4 + ul, head = 4, reps = r;
		break;
	}
	CHECK(len <= 0xffffff && reps <= 0xffffff);
	fputc(ctl | 0x40, f);
	put_le(f, len, 3);
	fputc((int)head, f);
	put_le(f, reps, 3);
	fwrite(p, 1, len, f);
}

static void to_seed_and_us(struct seedw *w, struct mig_stream *us, const uint8_t *rec, size_t n)
{
	/* a framed step: ctl = type low nibble (FRAMES: 0), the payload */
	uint16_t type = (uint16_t)(rec[0] | rec[1] << 8);
	seed_step(w->f, type & 15, rec + 16, n - 16);
	struct ctx c = { us, 0, type, 0 };
	static uint8_t copyb[MIG_HDR_SIZE + PAYCAP];
	memcpy(copyb, rec, n);
	feed(&c, copyb, n, n);
	CHECK(!c.dead && c.recs == 1);
}

static struct mig_stream *g_us;
static struct seedw *g_w;

static void to_peer(void *ctx, const uint8_t *rec, size_t n)
{
	struct mig_stream *peer = ctx;
	struct ctx c = { peer, 0, 0, 0 };
	static uint8_t copyb[OUTCAP];

	memcpy(copyb, rec, n);
	feed(&c, copyb, n, n);
	CHECK(!c.dead);
}

static void peer_collect(void *ctx, const uint8_t *rec, size_t n)
{
	(void)ctx;
	static uint8_t copyb[OUTCAP];
	memcpy(copyb, rec, n);
	to_seed_and_us(g_w, g_us, copyb, n);
}

static void mkseeds(const char *dir)
{
	char path[4096];

	statics_init();
	/* 0-3: setup bytes 0-3; 4: the destination, sent the largest records */
	for (int variant = 0; variant < 5; variant++) {
		bool we_src = variant & 1, alt = variant & 2;
		struct mig_stream *us = calloc(1, sizeof(*us)), *peer = calloc(1, sizeof(*peer));
		struct seedw w;

		snprintf(path, sizeof(path), "%s/conv-%d", dir, variant);
		w.f = fopen(path, "wb");
		CHECK(w.f);
		fputc(variant & 3, w.f);
		g_big = variant == 4;
		g_us = us;
		g_w = &w;
		CHECK(mig_stream_init(us, we_src ? MIG_SRC : MIG_DST) == 0);
		CHECK(mig_stream_init(peer, we_src ? MIG_DST : MIG_SRC) == 0);
		/* ping-pong until nobody has anything more to say */
		if (we_src)
			src_start(us, alt, to_peer, peer);
		else
			src_start(peer, alt, peer_collect, NULL);
		for (int round = 0; round < 12; round++) {
			if (we_src) {
				dst_respond(peer, false, peer_collect, NULL);
				src_respond(us, to_peer, peer);
			} else {
				dst_respond(us, alt, to_peer, peer);
				src_respond(peer, peer_collect, NULL);
			}
		}
		fprintf(stderr, "seed %s: us %s, peer %s\n", path, mig_phase_name(us->phase),
			mig_phase_name(peer->phase));
		/* the whole conversation, FRAMES in it */
		if (!alt)
			CHECK(us->phase == MIG_PH_DONE && peer->phase == MIG_PH_DONE &&
			      us->frames_done && peer->frames_done);
		fclose(w.f);
		mig_stream_fini(us);
		mig_stream_fini(peer);
		free(us);
		free(peer);
	}
	exit(0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("FERRY_FUZZ_MKSEEDS");

	(void)argc; (void)argv;
	statics_init();
	if (dir)
		mkseeds(dir);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct mig_stream st;
	struct mig_stream *s = &st;
	bool we_src, alt;
	struct ctx c = { s, 0, 0, 0 };

	if (size < 1)
		return 0;
	we_src = data[0] & 1;
	alt = (data[0] >> 1) & 1;
	g_big = (data[0] >> 2) & 1;
	data++, size--;
	CHECK(mig_stream_init(s, we_src ? MIG_SRC : MIG_DST) == 0);
	if (we_src)
		src_start(s, alt, NULL, NULL);

	while (size >= 3 && !c.dead) {
		uint8_t ctl = data[0];
		bool lng = (ctl & 0x60) == 0x40;
		size_t hl = lng ? 8 : 3;
		if (size < hl)
			break;
		size_t len = (size_t)(data[1] | data[2] << 8 | (lng ? data[3] << 16 : 0));
		size_t head = lng ? data[4] : len;
		size_t reps = lng ? (size_t)(data[5] | data[6] << 8 | data[7] << 16) : 0;
		data += hl, size -= hl;
		if (len > size)
			len = size;
		size_t plen = expand(data, len, head, reps);
		data += len, size -= len;

		/* the peer's records so far: the next one's sequence number */
		uint32_t seq = (uint32_t)c.recs;
		if (ctl & 0x10) {
			c.want = 0;
			feed(&c, pay, plen, ctl & 0x80 ? (plen <= 4096 ? 1 : 509) : plen / 2 + 9);
		} else {
			uint16_t type = (uint16_t)(MIG_MAGIC | (ctl & 15 ? ctl & 15 : MIG_FRAMES & 0xff));
			size_t n = frame(type, (ctl & 0x60) == 0x60 ? (uint16_t)(1u << (ctl & 3)) : 0,
					 (ctl & 0x60) == 0x20 ? seq + 1 : seq, pay, plen);
			c.want = type;
			if (ctl & 0x80) {	/* the header byte by byte, then the rest */
				size_t hd = n < 17 ? n : 17;
				feed(&c, recbuf, hd, 1);
				if (!c.dead && n > hd)
					feed(&c, recbuf + hd, n - hd, n);
			} else {
				feed(&c, recbuf, n, n / 2 + 9);
			}
		}
		/* every record handed out, and only those, moved the sequence on */
		CHECK(s->rx_seq == (uint32_t)c.recs);
		if (c.dead)
			break;
		if (we_src)
			src_respond(s, NULL, NULL);
		else
			dst_respond(s, alt, NULL, NULL);
	}
	mig_stream_fini(s);
	return 0;
}
