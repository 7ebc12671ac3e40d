/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target: the migration stream's record decoder and state
 * machine (hv/migrate/stream.c, statecheck.c, sparse.c) against a hostile
 * peer.
 *
 * Input: byte 0 = setup (bit 0: we are the source, else the destination;
 * bit 1: the destination refuses HELLO / the source starts with QUERY),
 * then steps, each: u8 ctl, u16 len (LE), len bytes.
 *   ctl & 0x10: the bytes are fed raw (any framing);
 *   otherwise they are the payload of a record of type MIG_MAGIC | (ctl & 15)
 *   framed by the harness with the right length, sequence number (ctl &
 *   0x20: a wrong one), flags (ctl & 0x40: nonzero) and CRC-32;
 *   ctl & 0x80: fed one byte at a time, else in two pieces.
 * Our own side answers as a real peer would (HELLO_REPLY, ROUND_ACK,
 * READY, COMMITTED; PAGES, ROUND_END, VCPU_STATE ... COMMIT), so the
 * fuzzer reaches every phase.
 *
 * Invariants: feed consumes <= len bytes, 0 means all taken; a refusal is
 * -EPROTO or -ENOMEM, sticky, with a printable message; a handed-out
 * record has the framed type, is allowed in the phase it came in, and its
 * pointers lie inside the stream's payload buffer; pages are inside
 * guest memory; sparse pages decode into exactly one page.
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

static uint8_t out[OUTCAP];		/* what our side encodes */
static uint8_t recbuf[16 + 65536 + 16];
static uint8_t xsave[MIG_XSAVE_MAX];
static uint8_t page[MIG_PAGE_SIZE], devblob[300];

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
		static struct mig_page pg[4];
		pg[0] = (struct mig_page){ .gfn = 0, .kind = MIG_PAGE_DATA, .data = page };
		pg[1] = (struct mig_page){ .gfn = 1, .kind = MIG_PAGE_ZERO };
		pg[2] = (struct mig_page){ .gfn = 2, .kind = MIG_PAGE_ZERO_RUN, .run = G_PAGES - 3 };
		static uint8_t sp[MIG_SPARSE_MAX];
		int sl = mig_sparse_encode(page, sp, sizeof(sp));
		CHECK(sl >= (int)MIG_SPARSE_MIN);
		pg[3] = (struct mig_page){ .gfn = G_PAGES - 1, .kind = MIG_PAGE_SPARSE,
					   .data = sp, .len = (uint16_t)sl };
		r.type = MIG_PAGES;
		r.pages = (struct mig_pages){ 4, pg };
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
		r.dev = (struct mig_devstate){ sizeof(devblob), devblob };
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

static void check_rec(const struct mig_stream *s, const struct mig_rec *r, uint16_t want)
{
	static uint8_t pg[MIG_PAGE_SIZE];

	if (want)
		CHECK(r->type == want);
	switch (r->type) {
	case MIG_HELLO:
		/* a destination takes another version's HELLO (only the version
		 * is read: admission refuses it) */
		if (r->hello.proto_version != MIG_PROTO_VERSION && s->role == MIG_DST)
			break;
		CHECK(r->hello.vcpus >= 1 && r->hello.vcpus <= MIG_VCPUS_MAX);
		CHECK(r->hello.mem_size && r->hello.mem_size <= MIG_MEM_MAX &&
		      r->hello.mem_size % MIG_MEM_ALIGN == 0);
		CHECK(str_ok(r->hello.name, sizeof(r->hello.name)));
		CHECK(str_ok(r->hello.kernel, sizeof(r->hello.kernel)));
		CHECK(str_ok(r->hello.cmdline, sizeof(r->hello.cmdline)));
		CHECK(str_ok(r->hello.ferry_version, sizeof(r->hello.ferry_version)));
		break;
	case MIG_HELLO_REPLY:
		CHECK(str_ok(r->reply.msg, sizeof(r->reply.msg)));
		CHECK(str_ok(r->reply.ferry_version, sizeof(r->reply.ferry_version)));
		break;
	case MIG_PAGES: {
		uint64_t span = 0;
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
				uint8_t *exact = malloc(MIG_PAGE_SIZE);
				mig_sparse_decode(p->data, p->len, exact);
				free(exact);
			} else {
				CHECK(p->kind == MIG_PAGE_ZERO || p->kind == MIG_PAGE_ZERO_RUN);
			}
		}
		CHECK(span <= s->guest_pages);
		break;
	}
	case MIG_VCPU_STATE:
		CHECK(r->vcpu.xsave_len >= MIG_XSAVE_MIN && r->vcpu.xsave_len <= MIG_XSAVE_MAX);
		in_payload(s, r->vcpu.xsave, r->vcpu.xsave_len);
		CHECK(r->vcpu.id < s->hello.vcpus);
		break;
	case MIG_DEVICE_STATE:
		CHECK(r->dev.len >= 1 && r->dev.len <= MIG_DEV_STATE_MAX);
		in_payload(s, r->dev.data, r->dev.len);
		break;
	case MIG_ABORT:
		CHECK(str_ok(r->abort.msg, sizeof(r->abort.msg)));
		break;
	default:
		break;
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
		/* an exact-size heap copy: ASan sees reads past it */
		uint8_t *copy = malloc(give);
		memcpy(copy, b, give);
		int rc = mig_stream_feed(c->s, copy, give, &used, &r);
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
			check_rec(c->s, r, c->want);
			c->recs++;
		}
		CHECK(used > 0 || rc == 1);
		b += used, n -= used;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- seeds: the peer's side of whole conversations ---- */

struct seedw { FILE *f; struct mig_stream *peer; bool peer_src; bool refuse; };

static void to_seed_and_us(struct seedw *w, struct mig_stream *us, const uint8_t *rec, size_t n)
{
	/* a framed step: ctl = type low nibble, the payload */
	uint16_t type = (uint16_t)(rec[0] | rec[1] << 8);
	size_t plen = n - 16;
	fputc(type & 15, w->f);
	fputc((int)(plen & 0xff), w->f);
	fputc((int)(plen >> 8), w->f);
	fwrite(rec + 16, 1, plen, w->f);
	struct ctx c = { us, 0, type, 0 };
	static uint8_t copyb[sizeof(recbuf)];
	memcpy(copyb, rec, n);
	feed(&c, copyb, n, n);
	CHECK(!c.dead);
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
	for (int variant = 0; variant < 4; variant++) {
		bool we_src = variant & 1, alt = variant & 2;
		struct mig_stream *us = calloc(1, sizeof(*us)), *peer = calloc(1, sizeof(*peer));
		struct seedw w;

		snprintf(path, sizeof(path), "%s/conv-%d", dir, variant);
		w.f = fopen(path, "wb");
		CHECK(w.f);
		fputc(variant & 3, w.f);
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
	uint32_t seq = 0;
	struct ctx c = { s, 0, 0, 0 };

	if (size < 1)
		return 0;
	we_src = data[0] & 1;
	alt = (data[0] >> 1) & 1;
	data++, size--;
	CHECK(mig_stream_init(s, we_src ? MIG_SRC : MIG_DST) == 0);
	if (we_src)
		src_start(s, alt, NULL, NULL);

	while (size >= 3 && !c.dead) {
		uint8_t ctl = data[0];
		size_t len = (size_t)(data[1] | data[2] << 8);
		data += 3, size -= 3;
		if (len > size)
			len = size;
		const uint8_t *p = data;
		data += len, size -= len;

		size_t piece = ctl & 0x80 ? 1 : (len / 2 + 9);
		if (ctl & 0x10) {
			c.want = 0;
			feed(&c, p, len, piece);
		} else if (ctl & 0x80) {	/* the header byte by byte, then the rest */
			uint16_t type = (uint16_t)(MIG_MAGIC | (ctl & 15));
			size_t n = frame(type, ctl & 0x40 ? (uint16_t)(1u << (ctl & 3)) : 0,
					 ctl & 0x20 ? seq + 1 : seq, p, len);
			seq++;
			c.want = type;
			size_t head = n < 17 ? n : 17;
			feed(&c, recbuf, head, 1);
			if (!c.dead && n > head)
				feed(&c, recbuf + head, n - head, n);
		} else {
			uint16_t type = (uint16_t)(MIG_MAGIC | (ctl & 15));
			size_t n = frame(type, ctl & 0x40 ? (uint16_t)(1u << (ctl & 3)) : 0,
					 ctl & 0x20 ? seq + 1 : seq, p, len);
			seq++;
			c.want = type;
			feed(&c, recbuf, n, piece);
		}
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
