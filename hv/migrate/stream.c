/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The live-migration stream: record codec and conversation state machine
 * (stream.h, docs/migration.md).  Each record type has one walker used to
 * encode and to decode it (struct snap, as the devices do), one check that
 * both directions run, and one apply that advances the conversation.  The
 * rules for the guest state a VCPU_STATE carries are statecheck.c's.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>	/* vsnprintf only */
#include <stdlib.h>
#include <string.h>
#include "hv/lib/bytes.h"
#include "hv/migrate/sparse.h"
#include "hv/migrate/statecheck.h"
#include "hv/migrate/stream.h"
#include "hv/lib/crc32.h"
#include "hv/lib/namelist.h"
#include "hv/loader/mb1elf.h"
#include "hv/vdev/snap.h"

_Static_assert(sizeof(struct cpu_state) == 512,
	       "struct cpu_state changed: update walk_cpu() and MIG_CPU_STATE_VERSION");

#define PH(p)		(1u << (p))
#define HDR_CRC_SPAN	12	/* header bytes covered by the CRC */

/* ---- record header (little-endian, hv/lib/bytes.h) ---- */

static uint32_t rec_crc(const uint8_t *hdr, const uint8_t *payload, size_t len)
{
	return crc32_update(crc32_update(0, hdr, HDR_CRC_SPAN), payload, len);
}

/* ---- errors and names ---- */

int mig_error_set(struct mig_error *e, uint32_t code, const char *fmt, ...)
{
	va_list ap;

	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	for (char *c = e->msg; *c; c++)
		if (*c < 0x20 || *c > 0x7e)
			*c = '?';
	return -EPROTO;
}

static const char *const type_names[] = {
	"HELLO", "HELLO_REPLY", "PAGES", "ROUND_END", "VCPU_STATE", "DEVICE_STATE",
	"TSC", "END", "READY", "COMMIT", "COMMITTED", "ABORT", "QUERY", "QUERY_REPLY",
	"ROUND_ACK", "FRAMES",
};

const char *mig_type_name(uint16_t type)
{
	if (type < MIG_HELLO || type > MIG_TYPE_LAST)
		return "?";
	return type_names[type - MIG_HELLO];
}

const char *mig_code_name(uint32_t code)
{
	static const char *const names[] = {
		"ok", "protocol error", "integrity error", "incompatible version",
		"guest CPU differs", "name taken", "not enough memory", "not allowed",
		"beyond limits", "bad guest state", "cancelled", "timeout",
		"internal error", "busy",
	};

	return code <= MIG_CODE_LAST ? names[code] : "?";
}

const char *mig_phase_name(enum mig_phase ph)
{
	static const char *const names[] = {
		"hello", "admit", "memory", "state", "loading", "ready",
		"committing", "done", "refused", "aborted", "query", "answered",
	};

	return (unsigned)ph <= MIG_PH_ANSWERED ? names[ph] : "?";
}

/* ---- field rules ---- */

/* Printable ASCII; with spaces or without. */
static bool text_ok(const char *s, bool spaces)
{
	for (; *s; s++)
		if (*s < (spaces ? 0x20 : 0x21) || *s > 0x7e)
			return false;
	return true;
}

/* The shell's rule (hv/shell/parse.c name_valid): 1-31 of [A-Za-z0-9_.-],
 * starting with a letter or digit. */
static bool name_char(char c, bool first)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return !first && (c == '_' || c == '.' || c == '-');
}

static bool name_ok(const char *s)
{
	size_t n;

	for (n = 0; s[n]; n++)
		if (n >= MIG_NAME_MAX || !name_char(s[n], n == 0))
			return false;
	return n > 0;
}

/* ---- walkers: one per record, for both directions ---- */

struct walk {
	struct snap s;
	struct mig_stream *st;	/* restoring: where page descriptors go */
	char why[96];		/* first malformed field (either direction) */
};

static void w_bad(struct walk *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void w_bad(struct walk *w, const char *fmt, ...)
{
	va_list ap;

	if (w->s.err)
		return;
	va_start(ap, fmt);
	vsnprintf(w->why, sizeof(w->why), fmt, ap);
	va_end(ap);
	snap_invalid(&w->s);
}

/* A one-byte boolean: 0 or 1. */
static void w_bool(struct walk *w, bool *v, const char *field)
{
	uint8_t b = *v ? 1 : 0;

	snap_u8(&w->s, &b);
	if (!w->s.err && b > 1)
		w_bad(w, "%s: boolean is %u", field, b);
	*v = b == 1;
}

/* u16 length, then the bytes: at most max, none of them NUL. */
static void w_str(struct walk *w, char *str, size_t max, const char *field)
{
	uint16_t len = (uint16_t)strnlen(str, max + 1);

	if (!w->s.restore && len > max) {
		w_bad(w, "%s: longer than %zu bytes", field, max);
		return;
	}
	snap_u16(&w->s, &len);
	if (w->s.err)
		return;
	if (len > max) {
		w_bad(w, "%s: %u bytes, at most %zu", field, len, max);
		return;
	}
	snap_bytes(&w->s, str, len);
	if (!w->s.restore || w->s.err)
		return;
	str[len] = '\0';
	if (strlen(str) != len)
		w_bad(w, "%s: contains a NUL byte", field);
}

/* len bytes: saving, copied from *p; restoring, *p points into the input. */
static void w_ref(struct walk *w, const uint8_t **p, size_t len, const char *field)
{
	struct snap *s = &w->s;

	if (!s->restore && !*p)
		w_bad(w, "%s: no data", field);
	else if (!s->restore)
		snap_bytes(s, (void *)(uintptr_t)*p, len);	/* saving only reads */
	else if (!s->err && len > s->cap - s->pos)
		w_bad(w, "%s: truncated", field);
	if (!s->restore || s->err)
		return;
	*p = s->buf + s->pos;
	s->pos += len;
}

static void walk_seg(struct snap *s, struct seg *g)
{
	snap_u16(s, &g->sel);
	snap_u16(s, &g->attr);
	snap_u32(s, &g->limit);
	snap_u64(s, &g->base);
}

static void walk_dt(struct snap *s, struct dtable *d)
{
	snap_u64(s, &d->base);
	snap_u16(s, &d->limit);
}

/* struct cpu_state, MIG_CPU_STATE_WIRE bytes, in this order (version 1). */
static void walk_cpu(struct walk *w, struct cpu_state *c)
{
	struct snap *s = &w->s;
	uint64_t *regs[] = { &c->rip, &c->rflags, &c->cr0, &c->cr2, &c->cr3, &c->cr4,
			     &c->cr8, &c->efer, &c->xcr0, &c->dr0, &c->dr1, &c->dr2,
			     &c->dr3, &c->dr6, &c->dr7 };
	struct seg *segs[] = { &c->es, &c->cs, &c->ss, &c->ds, &c->fs, &c->gs,
			       &c->ldtr, &c->tr };
	uint64_t *msrs[] = { &c->star, &c->lstar, &c->cstar, &c->sfmask,
			     &c->kernel_gs_base, &c->sysenter_cs, &c->sysenter_esp,
			     &c->sysenter_eip, &c->pat, &c->mtrr_def_type, &c->misc_enable };

	for (size_t i = 0; i < GPR_COUNT; i++)
		snap_u64(s, &c->gpr[i]);
	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
		snap_u64(s, regs[i]);
	for (size_t i = 0; i < sizeof(segs) / sizeof(segs[0]); i++)
		walk_seg(s, segs[i]);
	walk_dt(s, &c->gdtr);
	walk_dt(s, &c->idtr);
	for (size_t i = 0; i < sizeof(msrs) / sizeof(msrs[0]); i++)
		snap_u64(s, msrs[i]);
	snap_u32(s, &c->interruptibility);
	w_bool(w, &c->pending.valid, "pending.valid");
	snap_u8(s, &c->pending.type);
	snap_u8(s, &c->pending.vector);
	w_bool(w, &c->pending.has_error, "pending.has_error");
	snap_u32(s, &c->pending.error);
}

static void walk_hello(struct walk *w, struct mig_rec *r)
{
	struct mig_hello *h = &r->hello;

	snap_u32(&w->s, &h->proto_version);
	if (w->s.restore && !w->s.err && h->proto_version != MIG_PROTO_VERSION) {
		w->s.pos = w->s.cap;	/* another layout: keep only the version */
		return;
	}
	snap_u32(&w->s, &h->cpu_state_version);
	snap_u32(&w->s, &h->dev_version);
	snap_u32(&w->s, &h->vcpus);
	snap_u64(&w->s, &h->mig_id);
	snap_u64(&w->s, &h->mem_size);
	snap_u64(&w->s, &h->cpu_baseline);
	snap_u64(&w->s, &h->arch_caps);
	snap_u64(&w->s, &h->tsc_hz);
	snap_u64(&w->s, &h->guest_tsc);
	w_bool(w, &h->nic, "HELLO nic");
	snap_bytes(&w->s, h->mac, sizeof(h->mac));
	w_bool(w, &h->pvpanic, "HELLO pvpanic");
	snap_u32(&w->s, &h->weight);
	snap_u32(&w->s, &h->cap_pct);
	w_str(w, h->ferry_version, MIG_VERSTR_MAX, "HELLO ferry version");
	w_str(w, h->name, MIG_NAME_MAX, "HELLO name");
	w_str(w, h->kernel, MIG_KERNEL_MAX, "HELLO kernel");
	w_str(w, h->cmdline, MIG_CMDLINE_MAX, "HELLO cmdline");
	w_str(w, h->initrd, MIG_KERNEL_MAX, "HELLO initrd");
	w_str(w, h->modules, MIG_MODULES_MAX, "HELLO modules");
	snap_u32(&w->s, &h->timeout_s);
}

static void walk_reply(struct walk *w, struct mig_rec *r)
{
	struct mig_reply *y = &r->reply;

	snap_u32(&w->s, &y->proto_version);
	snap_u32(&w->s, &y->code);
	if (w->s.restore && !w->s.err && y->proto_version != MIG_PROTO_VERSION) {
		w->s.pos = w->s.cap;	/* another layout: keep version and code */
		return;
	}
	snap_u64(&w->s, &y->xcr0_mask);
	w_str(w, y->ferry_version, MIG_VERSTR_MAX, "HELLO_REPLY ferry version");
	w_str(w, y->msg, MIG_MSG_MAX, "HELLO_REPLY message");
}

static void walk_page(struct walk *w, struct mig_page *pg)
{
	snap_u64(&w->s, &pg->gfn);
	snap_u8(&w->s, &pg->kind);
	if (w->s.err)
		return;
	if (pg->kind > MIG_PAGE_SPARSE)
		w_bad(w, "PAGES: gfn 0x%llx has kind %u", (unsigned long long)pg->gfn, pg->kind);
	else if (pg->kind == MIG_PAGE_DATA)
		w_ref(w, &pg->data, MIG_PAGE_SIZE, "PAGES data");
	else if (pg->kind == MIG_PAGE_ZERO_RUN)
		snap_u32(&w->s, &pg->run);
	else if (pg->kind == MIG_PAGE_SPARSE) {
		snap_u16(&w->s, &pg->len);
		if (!w->s.err && (pg->len < MIG_SPARSE_MIN || pg->len > MIG_SPARSE_MAX))
			w_bad(w, "PAGES: sparse gfn 0x%llx of %u bytes (%u..%u)",
			      (unsigned long long)pg->gfn, pg->len, MIG_SPARSE_MIN, MIG_SPARSE_MAX);
		else
			w_ref(w, &pg->data, pg->len, "PAGES sparse data");
	}
}

static void walk_pages(struct walk *w, struct mig_rec *r)
{
	struct mig_pages *p = &r->pages;

	snap_u32(&w->s, &p->count);
	if (w->s.err)
		return;
	if (p->count == 0 || p->count > MIG_PAGES_MAX) {
		w_bad(w, "PAGES: %u pages, 1..%u allowed", p->count, MIG_PAGES_MAX);
		return;
	}
	if (w->s.restore)
		p->page = w->st->pages;
	else if (!p->page)
		w_bad(w, "PAGES: no page list");
	for (uint32_t i = 0; i < p->count && !w->s.err; i++)
		walk_page(w, (struct mig_page *)(uintptr_t)&p->page[i]);	/* saving: read */
}

static void walk_round(struct walk *w, struct mig_rec *r)
{
	snap_u32(&w->s, &r->round.round);
	snap_u64(&w->s, &r->round.pages);
	snap_u64(&w->s, &r->round.remaining);
}

static void walk_ack(struct walk *w, struct mig_rec *r)
{
	snap_u32(&w->s, &r->ack.round);
	snap_u64(&w->s, &r->ack.pages);
}

static void walk_vcpu(struct walk *w, struct mig_rec *r)
{
	struct mig_vcpu *v = &r->vcpu;

	snap_u32(&w->s, &v->id);
	walk_cpu(w, &v->cpu);
	w_bool(w, &v->halted, "VCPU_STATE halted");
	snap_u32(&w->s, &v->xsave_len);
	if (w->s.err)
		return;
	if (v->xsave_len < MIG_XSAVE_MIN || v->xsave_len > MIG_XSAVE_MAX)
		w_bad(w, "VCPU_STATE: XSAVE area of %u bytes, %u..%u allowed", v->xsave_len,
		      MIG_XSAVE_MIN, MIG_XSAVE_MAX);
	else
		w_ref(w, &v->xsave, v->xsave_len, "VCPU_STATE XSAVE area");
}

static void walk_dev(struct walk *w, struct mig_rec *r)
{
	snap_u32(&w->s, &r->dev.len);
	if (w->s.err)
		return;
	if (r->dev.len == 0 || r->dev.len > MIG_DEV_STATE_MAX)
		w_bad(w, "DEVICE_STATE: %u bytes, 1..%u allowed", r->dev.len, MIG_DEV_STATE_MAX);
	else
		w_ref(w, &r->dev.data, r->dev.len, "DEVICE_STATE data");
}

static void walk_frames(struct walk *w, struct mig_rec *r)
{
	snap_u32(&w->s, &r->frames.len);
	if (w->s.err)
		return;
	if (r->frames.len < 4 || r->frames.len > MIG_FRAMES_MAX)
		w_bad(w, "FRAMES: %u bytes, 4..%u allowed", r->frames.len, MIG_FRAMES_MAX);
	else
		w_ref(w, &r->frames.data, r->frames.len, "FRAMES data");
}

static void walk_tsc(struct walk *w, struct mig_rec *r)
{
	snap_u64(&w->s, &r->tsc.guest_tsc);
	snap_u64(&w->s, &r->tsc.guest_clock_ns);
}

static void walk_end(struct walk *w, struct mig_rec *r)
{
	snap_u32(&w->s, &r->end.rounds);
	snap_u32(&w->s, &r->end.vcpus);
	snap_u64(&w->s, &r->end.pages);
}

static void walk_ready(struct walk *w, struct mig_rec *r)
{
	snap_u64(&w->s, &r->ready.pages);
}

static void walk_commit(struct walk *w, struct mig_rec *r)
{
	snap_u64(&w->s, &r->commit.paused_ns);
	snap_u32(&w->s, &r->commit.flags);
}

static void walk_none(struct walk *w, struct mig_rec *r)
{
	(void)w;
	(void)r;
}

static void walk_abort(struct walk *w, struct mig_rec *r)
{
	snap_u32(&w->s, &r->abort.code);
	w_str(w, r->abort.msg, MIG_MSG_MAX, "ABORT message");
}

/* ---- checks: the same rules for what we send and what we receive ---- */

#define NOPE(code, ...)	mig_error_set(e, code, __VA_ARGS__)

/* A module= list as create takes it: names that fit a module's, at most
 * MB1_MAX_MODS of them; else the guest's first reboot there would stop it. */
static bool modules_ok(const char *list)
{
	char name[MIG_KERNEL_MAX + 1];
	unsigned int n = 0;
	int rc;

	while ((rc = namelist_next(&list, name, sizeof(name))) > 0)
		n++;
	return !rc && n <= MB1_MAX_MODS;
}

static int check_hello(const struct mig_stream *s, const struct mig_rec *r, struct mig_error *e)
{
	const struct mig_hello *h = &r->hello;

	if (h->proto_version != MIG_PROTO_VERSION)	/* admission refuses it */
		return s->role == MIG_DST ? 0 : NOPE(MIG_E_VERSION, "HELLO: version must be %u",
						     MIG_PROTO_VERSION);
	if (!h->mem_size || h->mem_size % MIG_MEM_ALIGN)
		return NOPE(MIG_E_PROTOCOL, "HELLO: memory size not whole MiB");
	if (h->mem_size > MIG_MEM_MAX)
		return NOPE(MIG_E_LIMIT, "HELLO: %llu MiB of memory, at most %llu",
			    (unsigned long long)(h->mem_size >> 20), MIG_MEM_MAX >> 20);
	if (h->vcpus == 0 || h->vcpus > MIG_VCPUS_MAX)
		return NOPE(h->vcpus ? MIG_E_LIMIT : MIG_E_PROTOCOL,
			    "HELLO: %u vCPUs, 1..%u allowed", h->vcpus, MIG_VCPUS_MAX);
	if (h->tsc_hz < MIG_TSC_HZ_MIN || h->tsc_hz > MIG_TSC_HZ_MAX)
		return NOPE(MIG_E_PROTOCOL, "HELLO: TSC rate %llu Hz out of range",
			    (unsigned long long)h->tsc_hz);
	if (h->arch_caps & ~ARCH_CAP_RDCL_NO)
		return NOPE(MIG_E_PROTOCOL, "HELLO: IA32_ARCH_CAPABILITIES %#llx has bits "
			    "ferry does not give", (unsigned long long)h->arch_caps);
	if (!name_ok(h->name))
		return NOPE(MIG_E_PROTOCOL, "HELLO: bad guest name");
	if (h->nic && ((h->mac[0] & 1) || !(h->mac[0] | h->mac[1] | h->mac[2] | h->mac[3] |
					      h->mac[4] | h->mac[5])))
		return NOPE(MIG_E_PROTOCOL, "HELLO: the NIC's MAC is multicast or zero");
	if (h->weight < 1 || h->weight > 65535 || h->cap_pct > 100 * h->vcpus)
		return NOPE(MIG_E_PROTOCOL, "HELLO: weight %u or cap %u%% out of range",
			    h->weight, h->cap_pct);
	if (!text_ok(h->ferry_version, true) || !text_ok(h->kernel, false) ||
	    !text_ok(h->cmdline, true) || !text_ok(h->initrd, false) ||
	    !text_ok(h->modules, false))
		return NOPE(MIG_E_PROTOCOL, "HELLO: non-printable characters in a string");
	if (h->timeout_s > MIG_TIMEOUT_MAX_S)
		return NOPE(MIG_E_PROTOCOL, "HELLO: timeout %u s, at most %u", h->timeout_s,
			    MIG_TIMEOUT_MAX_S);
	if (!h->kernel[0] || !modules_ok(h->modules) || (h->initrd[0] && h->modules[0]))
		return NOPE(MIG_E_PROTOCOL, "HELLO: no kernel, a malformed module list, or both "
			    "an initrd and modules");
	return 0;
}

static int check_reply(const struct mig_stream *s, const struct mig_rec *r, struct mig_error *e)
{
	const struct mig_reply *y = &r->reply;

	if (y->code > MIG_CODE_LAST)
		return NOPE(MIG_E_PROTOCOL, "HELLO_REPLY: unknown code %u", y->code);
	if (y->proto_version != MIG_PROTO_VERSION) {
		if (s->role == MIG_SRC && y->code != MIG_OK)
			return 0;	/* another version refusing: the source shows it */
		return NOPE(MIG_E_VERSION, "HELLO_REPLY: version %u, must be %u",
			    y->proto_version, MIG_PROTO_VERSION);
	}
	if (!text_ok(y->ferry_version, true) || !text_ok(y->msg, true))
		return NOPE(MIG_E_PROTOCOL, "HELLO_REPLY: non-printable characters");
	if (y->code != MIG_OK)
		return 0;
	if ((y->xcr0_mask & 3) != 3 || (y->xcr0_mask & ~MIG_XCR0_PROTO))
		return NOPE(MIG_E_PROTOCOL, "HELLO_REPLY: XCR0 mask 0x%llx invalid",
			    (unsigned long long)y->xcr0_mask);
	if (s->hello.proto_version != MIG_PROTO_VERSION || !s->guest_pages)
		return NOPE(MIG_E_PROTOCOL, "HELLO_REPLY: accepting a HELLO that cannot be");
	return 0;
}

static int check_pages(const struct mig_stream *s, const struct mig_rec *r, struct mig_error *e)
{
	const struct mig_pages *p = &r->pages;
	uint64_t span = 0;

	if (p->count == 0 || p->count > MIG_PAGES_MAX || !p->page)
		return NOPE(MIG_E_PROTOCOL, "PAGES: %u pages, 1..%u allowed", p->count,
			    MIG_PAGES_MAX);
	for (uint32_t i = 0; i < p->count; i++) {
		const struct mig_page *pg = &p->page[i];

		if (pg->gfn >= s->guest_pages)
			return NOPE(MIG_E_PROTOCOL, "PAGES: gfn 0x%llx beyond guest memory (0x%llx pages)",
				    (unsigned long long)pg->gfn,
				    (unsigned long long)s->guest_pages);
		if (pg->kind > MIG_PAGE_SPARSE ||
		    ((pg->kind == MIG_PAGE_DATA || pg->kind == MIG_PAGE_SPARSE) && !pg->data))
			return NOPE(MIG_E_PROTOCOL, "PAGES: bad page kind or data");
		if (pg->kind == MIG_PAGE_SPARSE && !mig_sparse_valid(pg->data, pg->len))
			return NOPE(MIG_E_PROTOCOL, "PAGES: malformed sparse page at gfn 0x%llx",
				    (unsigned long long)pg->gfn);
		if (pg->kind == MIG_PAGE_ZERO_RUN &&
		    (pg->run < 2 || pg->run > MIG_ZERO_RUN_MAX ||
		     pg->run > s->guest_pages - pg->gfn))
			return NOPE(MIG_E_PROTOCOL, "PAGES: zero run of %u pages at gfn 0x%llx "
				    "(2..%u, within guest memory)", pg->run,
				    (unsigned long long)pg->gfn, MIG_ZERO_RUN_MAX);
		span += mig_page_span(pg);
	}
	if (span > MIG_REC_SPAN_MAX)	/* work per record stays bounded */
		return NOPE(MIG_E_PROTOCOL, "PAGES: %llu pages in one record (at most %u)",
			    (unsigned long long)span, MIG_REC_SPAN_MAX);
	/* and per round: a round sends each page once at most, so a peer
	 * cannot have the same memory zeroed or written over and over */
	if (span > s->guest_pages - s->round_pages)
		return NOPE(MIG_E_PROTOCOL, "PAGES: round %u carries more pages than the guest "
			    "has (%llu)", s->rounds, (unsigned long long)s->guest_pages);
	return 0;
}

static int check_round(const struct mig_stream *s, const struct mig_rec *r, struct mig_error *e)
{
	const struct mig_round_end *d = &r->round;

	if (d->round != s->rounds || d->round >= MIG_ROUNDS_MAX)
		return NOPE(MIG_E_PROTOCOL, "ROUND_END: round %u, expected %u (< %u)", d->round,
			    s->rounds, MIG_ROUNDS_MAX);
	if (d->pages != s->round_pages)
		return NOPE(MIG_E_PROTOCOL, "ROUND_END: round %u claims %llu pages, %llu came",
			    d->round, (unsigned long long)d->pages,
			    (unsigned long long)s->round_pages);
	if (d->remaining > s->guest_pages)
		return NOPE(MIG_E_PROTOCOL, "ROUND_END: more pages remaining than the guest has");
	if (d->round == 0 && s->seen_pages != s->guest_pages)
		return NOPE(MIG_E_PROTOCOL, "ROUND_END: round 0 left %llu pages unsent",
			    (unsigned long long)(s->guest_pages - s->seen_pages));
	return 0;
}

/* Round 0 only, once, after its ROUND_END, with its page count: a
 * destination that acknowledges what it cannot have written lies. */
static int check_ack(const struct mig_stream *s, const struct mig_rec *r, struct mig_error *e)
{
	const struct mig_round_ack *a = &r->ack;

	if (a->round >= s->rounds)
		return NOPE(MIG_E_PROTOCOL, "ROUND_ACK of round %u, which has not ended (%u did)",
			    a->round, s->rounds);
	if (a->round != 0)
		return NOPE(MIG_E_PROTOCOL, "ROUND_ACK of round %u: only round 0 is acknowledged",
			    a->round);
	if (s->round0_acked)
		return NOPE(MIG_E_PROTOCOL, "ROUND_ACK of round 0 twice");
	if (a->pages != s->round0_pages)
		return NOPE(MIG_E_PROTOCOL, "ROUND_ACK: round 0 had %llu pages, %llu acknowledged",
			    (unsigned long long)s->round0_pages, (unsigned long long)a->pages);
	return 0;
}

static int check_vcpu(const struct mig_stream *s, const struct mig_rec *r, struct mig_error *e)
{
	const struct mig_vcpu *v = &r->vcpu;

	if (s->phase == MIG_PH_MEMORY && (s->round_open || !s->rounds || s->last_remaining))
		return NOPE(MIG_E_PROTOCOL, "VCPU_STATE before a last ROUND_END with nothing left");
	if (v->id != s->vcpus_done || v->id >= s->hello.vcpus)
		return NOPE(MIG_E_PROTOCOL, "VCPU_STATE for vCPU %u, expected %u of %u", v->id,
			    s->vcpus_done, s->hello.vcpus);
	if (!v->xsave)
		return NOPE(MIG_E_PROTOCOL, "VCPU_STATE without an XSAVE area");
	if (mig_cpu_state_check(&v->cpu, s->xcr0_mask, e))
		return -EPROTO;
	if (mig_xsave_check(v->xsave, v->xsave_len, s->xcr0_mask, e))
		return -EPROTO;
	return 0;
}

static int check_dev(const struct mig_stream *s, const struct mig_rec *r, struct mig_error *e)
{
	if (s->vcpus_done != s->hello.vcpus || s->dev_done)
		return NOPE(MIG_E_PROTOCOL, "DEVICE_STATE out of order");
	if (r->dev.len == 0 || r->dev.len > MIG_DEV_STATE_MAX || !r->dev.data)
		return NOPE(MIG_E_PROTOCOL, "DEVICE_STATE: %u bytes, 1..%u allowed", r->dev.len,
			    MIG_DEV_STATE_MAX);
	return 0;
}

static int check_frames(const struct mig_stream *s, const struct mig_rec *r,
			struct mig_error *e)
{
	if (s->frames_done)
		return NOPE(MIG_E_PROTOCOL, "FRAMES twice");
	if (r->frames.len < 4 || r->frames.len > MIG_FRAMES_MAX || !r->frames.data)
		return NOPE(MIG_E_PROTOCOL, "FRAMES: %u bytes, 4..%u allowed", r->frames.len,
			    MIG_FRAMES_MAX);
	return 0;
}

static int check_tsc(const struct mig_stream *s, const struct mig_rec *r, struct mig_error *e)
{
	if (!s->dev_done || s->tsc_done)
		return NOPE(MIG_E_PROTOCOL, "TSC out of order");
	/* the guest's device clock counts from its creation: 2^62 ns is 146
	 * years; a value near 2^64 would wrap here within seconds and leave
	 * its timers never due */
	if (r->tsc.guest_clock_ns >> 62)
		return NOPE(MIG_E_PROTOCOL, "TSC: device clock %llu ns is no guest's",
			    (unsigned long long)r->tsc.guest_clock_ns);
	return 0;
}

static int check_end(const struct mig_stream *s, const struct mig_rec *r, struct mig_error *e)
{
	const struct mig_end *d = &r->end;

	if (!s->tsc_done)
		return NOPE(MIG_E_PROTOCOL, "END before the TSC record");
	if (d->rounds != s->rounds || d->vcpus != s->vcpus_done || d->pages != s->total_pages)
		return NOPE(MIG_E_PROTOCOL, "END: totals (%u rounds, %u vCPUs, %llu pages) differ from "
			    "what came (%u, %u, %llu)", d->rounds, d->vcpus,
			    (unsigned long long)d->pages, s->rounds, s->vcpus_done,
			    (unsigned long long)s->total_pages);
	return 0;
}

static int check_ready(const struct mig_stream *s, const struct mig_rec *r, struct mig_error *e)
{
	if (!s->round0_acked)
		return NOPE(MIG_E_PROTOCOL, "READY before ROUND_ACK of round 0");
	if (r->ready.pages != s->total_pages)
		return NOPE(MIG_E_PROTOCOL, "READY: %llu pages loaded, %llu sent",
			    (unsigned long long)r->ready.pages,
			    (unsigned long long)s->total_pages);
	return 0;
}

static int check_commit(const struct mig_stream *s, const struct mig_rec *r, struct mig_error *e)
{
	(void)s;
	if (r->commit.paused_ns > MIG_PAUSED_NS_MAX)
		return NOPE(MIG_E_PROTOCOL, "COMMIT: paused for more than a day");
	if (r->commit.flags & ~MIG_COMMIT_FLAGS)
		return NOPE(MIG_E_PROTOCOL, "COMMIT: unknown flags %#x", r->commit.flags);
	return 0;
}

static int check_none(const struct mig_stream *s, const struct mig_rec *r, struct mig_error *e)
{
	(void)s;
	(void)r;
	(void)e;
	return 0;
}

static int check_abort(const struct mig_stream *s, const struct mig_rec *r, struct mig_error *e)
{
	(void)s;
	if (r->abort.code == MIG_OK || r->abort.code > MIG_CODE_LAST)
		return NOPE(MIG_E_PROTOCOL, "ABORT: code %u invalid", r->abort.code);
	if (!text_ok(r->abort.msg, true))
		return NOPE(MIG_E_PROTOCOL, "ABORT: non-printable message");
	return 0;
}

/* ---- apply: advance the conversation (after the checks passed) ---- */

static int apply_hello(struct mig_stream *s, const struct mig_rec *r, enum mig_role from)
{
	(void)from;
	s->hello = r->hello;
	s->guest_pages = r->hello.mem_size / MIG_PAGE_SIZE;
	s->phase = MIG_PH_ADMIT;
	return 0;
}

static int apply_reply(struct mig_stream *s, const struct mig_rec *r, enum mig_role from)
{
	(void)from;
	if (r->reply.code != MIG_OK) {
		s->end_code = r->reply.code;
		s->phase = MIG_PH_REFUSED;
		return 0;
	}
	s->seen = calloc((size_t)((s->guest_pages + 7) / 8), 1);
	if (!s->seen)
		return -ENOMEM;
	s->xcr0_mask = r->reply.xcr0_mask;
	s->phase = MIG_PH_MEMORY;
	return 0;
}

static int apply_pages(struct mig_stream *s, const struct mig_rec *r, enum mig_role from)
{
	(void)from;
	uint64_t pages = 0;

	for (uint32_t i = 0; i < r->pages.count; i++) {
		uint64_t gfn = r->pages.page[i].gfn, n = mig_page_span(&r->pages.page[i]);

		pages += n;
		for (uint64_t end = gfn + n; gfn < end; gfn++) {
			uint8_t bit = (uint8_t)(1u << (gfn & 7));
			if (!(s->seen[gfn >> 3] & bit)) {
				s->seen[gfn >> 3] |= bit;
				s->seen_pages++;
			}
		}
	}
	s->round_pages += pages;
	s->total_pages += pages;
	s->round_open = true;
	return 0;
}

static int apply_round(struct mig_stream *s, const struct mig_rec *r, enum mig_role from)
{
	(void)from;
	if (r->round.round == 0)
		s->round0_pages = s->round_pages;
	s->rounds++;
	s->round_pages = 0;
	s->round_open = false;
	s->last_remaining = r->round.remaining;
	return 0;
}

static int apply_ack(struct mig_stream *s, const struct mig_rec *r, enum mig_role from)
{
	(void)r;
	(void)from;
	s->round0_acked = true;
	return 0;
}

static int apply_vcpu(struct mig_stream *s, const struct mig_rec *r, enum mig_role from)
{
	(void)r;
	(void)from;
	s->vcpus_done++;
	s->phase = MIG_PH_STATE;
	return 0;
}

static int apply_dev(struct mig_stream *s, const struct mig_rec *r, enum mig_role from)
{
	(void)r;
	(void)from;
	s->dev_done = true;
	return 0;
}

static int apply_frames(struct mig_stream *s, const struct mig_rec *r, enum mig_role from)
{
	(void)r;
	(void)from;
	s->frames_done = true;
	return 0;
}

static int apply_tsc(struct mig_stream *s, const struct mig_rec *r, enum mig_role from)
{
	(void)r;
	(void)from;
	s->tsc_done = true;
	return 0;
}

/* END, READY, COMMIT, COMMITTED: one phase further. */
static int apply_next(struct mig_stream *s, const struct mig_rec *r, enum mig_role from)
{
	(void)r;
	(void)from;
	s->phase++;
	return 0;
}

static int apply_abort(struct mig_stream *s, const struct mig_rec *r, enum mig_role from)
{
	s->abort_phase = s->phase;
	s->abort_by = from;
	s->end_code = r->abort.code;
	s->phase = MIG_PH_ABORTED;
	return 0;
}

/* ---- the record types ---- */

#define BOTH	(MIG_SRC | MIG_DST)
#define STR(n)	(2 + (n))
#define PAGE_WIRE	(8 + 1)
/* ---- QUERY, QUERY_REPLY: how did migration mig_id end over there? ---- */

static void walk_query(struct walk *w, struct mig_rec *r)
{
	snap_u32(&w->s, &r->query.proto_version);
	snap_u64(&w->s, &r->query.mig_id);
}

static void walk_qreply(struct walk *w, struct mig_rec *r)
{
	snap_u64(&w->s, &r->qreply.mig_id);
	snap_u32(&w->s, &r->qreply.outcome);
}

static int check_query(const struct mig_stream *s, const struct mig_rec *r, struct mig_error *e)
{
	(void)s;
	if (r->query.proto_version != MIG_PROTO_VERSION)
		return NOPE(MIG_E_VERSION, "QUERY of protocol version %u, %u here",
			    r->query.proto_version, MIG_PROTO_VERSION);
	return 0;
}

static int check_qreply(const struct mig_stream *s, const struct mig_rec *r,
			struct mig_error *e)
{
	if (r->qreply.mig_id != s->query_id)
		return NOPE(MIG_E_PROTOCOL, "QUERY_REPLY about %016llx, asked about %016llx",
			    (unsigned long long)r->qreply.mig_id, (unsigned long long)s->query_id);
	if (r->qreply.outcome > MIG_Q_DISCARDED)
		return NOPE(MIG_E_PROTOCOL, "QUERY_REPLY: outcome %u", r->qreply.outcome);
	return 0;
}

static int apply_query(struct mig_stream *s, const struct mig_rec *r, enum mig_role from)
{
	(void)from;
	s->query_id = r->query.mig_id;
	s->phase = MIG_PH_QUERY;
	return 0;
}

static int apply_qreply(struct mig_stream *s, const struct mig_rec *r, enum mig_role from)
{
	(void)r;
	(void)from;
	s->phase = MIG_PH_ANSWERED;
	return 0;
}

/* Any version's HELLO and HELLO_REPLY fit these, so that a peer of another
 * version is told so (docs/migration.md "Versions"). */
#define HELLO_ANY_MAX	4096
#define REPLY_ANY_MAX	1024

struct type_info {
	uint8_t from;			/* who may send it: MIG_SRC, MIG_DST */
	uint16_t phases;		/* PH() mask where it may come (ABORT: any) */
	uint32_t min, max;		/* payload length bounds */
	void (*walk)(struct walk *w, struct mig_rec *r);
	int (*check)(const struct mig_stream *s, const struct mig_rec *r, struct mig_error *e);
	int (*apply)(struct mig_stream *s, const struct mig_rec *r, enum mig_role from);
};

static const struct type_info types[] = {
	[MIG_HELLO - MIG_HELLO] = { MIG_SRC, PH(MIG_PH_HELLO), 4, HELLO_ANY_MAX,
		walk_hello, check_hello, apply_hello },
	[MIG_HELLO_REPLY - MIG_HELLO] = { MIG_DST, PH(MIG_PH_ADMIT), 8, REPLY_ANY_MAX,
		walk_reply, check_reply, apply_reply },
	[MIG_PAGES - MIG_HELLO] = { MIG_SRC, PH(MIG_PH_MEMORY), 4 + PAGE_WIRE,
		4 + MIG_PAGES_MAX * (PAGE_WIRE + MIG_PAGE_SIZE), walk_pages, check_pages, apply_pages },
	[MIG_ROUND_END - MIG_HELLO] = { MIG_SRC, PH(MIG_PH_MEMORY), 20, 20,
		walk_round, check_round, apply_round },
	[MIG_VCPU_STATE - MIG_HELLO] = { MIG_SRC, PH(MIG_PH_MEMORY) | PH(MIG_PH_STATE),
		9 + MIG_CPU_STATE_WIRE + MIG_XSAVE_MIN, 9 + MIG_CPU_STATE_WIRE + MIG_XSAVE_MAX,
		walk_vcpu, check_vcpu, apply_vcpu },
	[MIG_DEVICE_STATE - MIG_HELLO] = { MIG_SRC, PH(MIG_PH_STATE), 4 + 1, 4 + MIG_DEV_STATE_MAX,
		walk_dev, check_dev, apply_dev },
	[MIG_TSC - MIG_HELLO] = { MIG_SRC, PH(MIG_PH_STATE), 16, 16, walk_tsc, check_tsc, apply_tsc },
	[MIG_END - MIG_HELLO] = { MIG_SRC, PH(MIG_PH_STATE), 16, 16, walk_end, check_end, apply_next },
	[MIG_READY - MIG_HELLO] = { MIG_DST, PH(MIG_PH_LOADING), 8, 8,
		walk_ready, check_ready, apply_next },
	[MIG_COMMIT - MIG_HELLO] = { MIG_SRC, PH(MIG_PH_READY), 12, 12,
		walk_commit, check_commit, apply_next },
	[MIG_COMMITTED - MIG_HELLO] = { MIG_DST, PH(MIG_PH_COMMITTING), 0, 0,
		walk_none, check_none, apply_next },
	[MIG_ABORT - MIG_HELLO] = { BOTH, 0, 4 + STR(0), 4 + STR(MIG_MSG_MAX),
		walk_abort, check_abort, apply_abort },
	[MIG_QUERY - MIG_HELLO] = { MIG_SRC, PH(MIG_PH_HELLO), 12, 12,
		walk_query, check_query, apply_query },
	[MIG_QUERY_REPLY - MIG_HELLO] = { MIG_DST, PH(MIG_PH_QUERY), 12, 12,
		walk_qreply, check_qreply, apply_qreply },
	/* while the source still sends (MEMORY, STATE) or has sent END */
	[MIG_ROUND_ACK - MIG_HELLO] = { MIG_DST,
		PH(MIG_PH_MEMORY) | PH(MIG_PH_STATE) | PH(MIG_PH_LOADING), 12, 12,
		walk_ack, check_ack, apply_ack },
	/* after READY, before COMMIT */
	[MIG_FRAMES - MIG_HELLO] = { MIG_SRC, PH(MIG_PH_READY), 4 + 4, 4 + MIG_FRAMES_MAX,
		walk_frames, check_frames, apply_frames },
};

_Static_assert(sizeof(types) / sizeof(types[0]) == MIG_TYPE_LAST - MIG_HELLO + 1 &&
	       sizeof(type_names) / sizeof(type_names[0]) == MIG_TYPE_LAST - MIG_HELLO + 1,
	       "a record type without its row");

static const struct type_info *type_info(uint16_t type)
{
	if (type < MIG_HELLO || type > MIG_TYPE_LAST)
		return NULL;
	return &types[type - MIG_HELLO];
}

static enum mig_role other(enum mig_role r)
{
	return r == MIG_SRC ? MIG_DST : MIG_SRC;
}

/* Terminal phases: the conversation is over. */
static bool phase_over(enum mig_phase ph)
{
	return ph >= MIG_PH_DONE && ph != MIG_PH_QUERY;
}

bool mig_phase_allows(enum mig_phase ph, uint16_t type, enum mig_role from)
{
	const struct type_info *t = type_info(type);

	if (!t || !(t->from & from) || phase_over(ph))
		return false;
	if (type == MIG_ABORT)	/* after COMMIT only the destination may back out */
		return ph != MIG_PH_COMMITTING || from == MIG_DST;
	return t->phases & PH(ph);
}

size_t mig_payload_max(enum mig_role peer)
{
	size_t max = 0;

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if ((types[i].from & peer) && types[i].max > max)
			max = types[i].max;
	return max;
}

/* ---- life cycle ---- */

int mig_stream_init(struct mig_stream *s, enum mig_role role)
{
	memset(s, 0, sizeof(*s));
	s->role = role;
	return 0;
}

void mig_stream_fini(struct mig_stream *s)
{
	free(s->buf);
	free(s->seen);
	s->buf = NULL;
	s->seen = NULL;
}

/* ---- encoding ---- */

/* Walk r into buf.  Payload bytes, or -ENOSPC/-EINVAL. */
static long walk_out(const struct type_info *t, const struct mig_rec *r, uint8_t *buf,
		     size_t cap, struct mig_error *e)
{
	struct walk w = { .st = NULL };

	snap_save_init(&w.s, buf, cap);
	t->walk(&w, (struct mig_rec *)(uintptr_t)r);	/* saving only reads r */
	if (w.s.err == -EOVERFLOW)
		return -ENOSPC;
	if (!w.s.err && (w.s.pos < t->min || w.s.pos > t->max))
		w_bad(&w, "%s: %zu bytes out of bounds", mig_type_name(r->type), w.s.pos);
	if (w.s.err) {
		mig_error_set(e, MIG_E_INTERNAL, "%s", w.why);
		return -EINVAL;
	}
	return (long)w.s.pos;
}

static long encode(const struct type_info *t, const struct mig_rec *r, uint32_t seq,
		   uint8_t *buf, size_t cap, struct mig_error *e)
{
	long n;

	if (cap < MIG_HDR_SIZE)
		return -ENOSPC;
	n = walk_out(t, r, buf + MIG_HDR_SIZE, cap - MIG_HDR_SIZE, e);
	if (n < 0)
		return n;
	put_le16(buf, r->type);
	put_le16(buf + 2, 0);
	put_le32(buf + 4, (uint32_t)n);
	put_le32(buf + 8, seq);
	put_le32(buf + 12, rec_crc(buf, buf + MIG_HDR_SIZE, (size_t)n));
	return MIG_HDR_SIZE + n;
}

long mig_stream_encode(struct mig_stream *s, const struct mig_rec *r, void *buf, size_t cap)
{
	const struct type_info *t = type_info(r->type);
	struct mig_error *e = &s->tx_err;
	long n;
	int rc;

	if (phase_over(s->phase)) {
		mig_error_set(e, MIG_E_INTERNAL, "the conversation is over (%s)",
			      mig_phase_name(s->phase));
		return -EPIPE;
	}
	if (!t || !mig_phase_allows(s->phase, r->type, s->role)) {
		mig_error_set(e, MIG_E_INTERNAL, "cannot send %s in phase %s",
			      mig_type_name(r->type), mig_phase_name(s->phase));
		return -EINVAL;
	}
	if (t->check(s, r, e))
		return -EINVAL;
	n = encode(t, r, s->tx_seq, buf, cap, e);
	if (n < 0)
		return n;
	rc = t->apply(s, r, s->role);
	if (rc) {
		mig_error_set(e, MIG_E_NO_MEMORY, "no memory for the page bitmap");
		return rc;
	}
	s->tx_seq++;
	return n;
}

/* ---- decoding ---- */

static int refuse(struct mig_stream *s, int rc)
{
	s->rx_rc = rc;
	return rc;
}

/* Make room for a payload of the type's maximum: the buffer grows to the
 * largest type the peer has used, never to what a length field says. */
static int grow(struct mig_stream *s, size_t max)
{
	uint8_t *p;

	if (max <= s->cap)
		return 0;
	p = realloc(s->buf, max);
	if (!p) {
		mig_error_set(&s->rx_err, MIG_E_NO_MEMORY, "no memory for a record");
		return -ENOMEM;
	}
	s->buf = p;
	s->cap = max;
	return 0;
}

/* The header is complete: check everything it says before any payload. */
static int header_in(struct mig_stream *s)
{
	uint16_t type = get_le16(s->hdr), flags = get_le16(s->hdr + 2);
	uint32_t len = get_le32(s->hdr + 4), seq = get_le32(s->hdr + 8);
	const struct type_info *t = type_info(type);
	enum mig_role peer = other(s->role);
	struct mig_error *e = &s->rx_err;

	if ((type & 0xff00) != MIG_MAGIC)
		return NOPE(MIG_E_PROTOCOL, "bad magic 0x%04x: not a ferry migration stream", type);
	if (!t)
		return NOPE(MIG_E_PROTOCOL, "unknown record type 0x%04x", type);
	if (flags)
		return NOPE(MIG_E_PROTOCOL, "%s: unknown flags 0x%04x", mig_type_name(type), flags);
	if (!(t->from & peer))
		return NOPE(MIG_E_PROTOCOL, "%s is sent by the %s, not the %s", mig_type_name(type),
			    peer == MIG_SRC ? "destination" : "source",
			    peer == MIG_SRC ? "source" : "destination");
	if (len < t->min || len > t->max)
		return NOPE(MIG_E_PROTOCOL, "%s: length %u outside %u..%u", mig_type_name(type),
			    len, t->min, t->max);
	if (!mig_phase_allows(s->phase, type, peer))
		return NOPE(MIG_E_PROTOCOL, "%s not expected from the %s in phase %s",
			    mig_type_name(type), peer == MIG_SRC ? "source" : "destination",
			    mig_phase_name(s->phase));
	if (seq != s->rx_seq)
		return NOPE(MIG_E_PROTOCOL, "%s: sequence number %u, expected %u",
			    mig_type_name(type), seq, s->rx_seq);
	if (grow(s, t->max))
		return -ENOMEM;
	s->cur_type = type;
	s->cur_len = len;
	s->cur_crc = get_le32(s->hdr + 12);
	s->have = 0;
	return 0;
}

/* The payload is complete: integrity, fields, order, then apply. */
static int record_in(struct mig_stream *s)
{
	const struct type_info *t = type_info(s->cur_type);
	struct mig_error *e = &s->rx_err;
	struct walk w = { .st = s };
	int rc;

	if (rec_crc(s->hdr, s->buf, s->cur_len) != s->cur_crc)
		return NOPE(MIG_E_INTEGRITY, "%s #%u: CRC-32 mismatch", mig_type_name(s->cur_type),
			    s->rx_seq);
	memset(&s->rec, 0, sizeof(s->rec));
	s->rec.type = s->cur_type;
	snap_restore_init(&w.s, s->buf, s->cur_len);
	t->walk(&w, &s->rec);
	if (w.s.err)
		return NOPE(MIG_E_PROTOCOL, "%s", w.why[0] ? w.why : "record truncated");
	if (w.s.pos != s->cur_len)
		return NOPE(MIG_E_PROTOCOL, "%s: %zu bytes left over", mig_type_name(s->cur_type),
			    s->cur_len - w.s.pos);
	rc = t->check(s, &s->rec, e);
	if (rc)
		return rc;
	rc = t->apply(s, &s->rec, other(s->role));
	if (rc) {
		mig_error_set(e, MIG_E_NO_MEMORY, "no memory for the page bitmap");
		return rc;
	}
	s->rx_seq++;
	return 0;
}

static size_t take(uint8_t *dst, size_t *have, size_t want, const uint8_t *src, size_t avail)
{
	size_t n = want - *have < avail ? want - *have : avail;

	memcpy(dst + *have, src, n);
	*have += n;
	return n;
}

int mig_stream_feed(struct mig_stream *s, const void *data, size_t len, size_t *used,
		    const struct mig_rec **out)
{
	const uint8_t *p = data;
	size_t n = 0;
	int rc;

	*used = 0;
	*out = NULL;
	if (s->rx_rc)
		return s->rx_rc;
	if (len && phase_over(s->phase))
		return refuse(s, mig_error_set(&s->rx_err, MIG_E_PROTOCOL,
					       "data after the end of the conversation"));
	while (n < len) {
		if (s->hdr_have < MIG_HDR_SIZE) {
			n += take(s->hdr, &s->hdr_have, MIG_HDR_SIZE, p + n, len - n);
			if (s->hdr_have < MIG_HDR_SIZE)
				break;
			rc = header_in(s);
			*used = n;
			if (rc)
				return refuse(s, rc);
		}
		n += take(s->buf, &s->have, s->cur_len, p + n, len - n);
		*used = n;
		if (s->have < s->cur_len)
			break;
		s->hdr_have = 0;
		s->have = 0;
		rc = record_in(s);
		if (rc)
			return refuse(s, rc);
		*out = &s->rec;
		return 1;
	}
	*used = n;
	return 0;
}

bool mig_stream_partial(const struct mig_stream *s)
{
	return s->hdr_have > 0;
}

/* ---- helpers for the sender and the HELLO ---- */

static uint64_t fnv_u32(uint64_t h, uint32_t v)
{
	for (int i = 0; i < 4; i++) {
		h ^= (uint8_t)(v >> (8 * i));
		h *= 0x100000001b3ull;
	}
	return h;
}

uint64_t mig_cpu_baseline(mig_cpuid_fn cpuid)
{
	static const uint32_t leaves[][2] = {
		{ 0, 0 }, { 1, 0 }, { 2, 0 }, { 4, 0 }, { 6, 0 }, { 7, 0 }, { 0xd, 0 },
		{ 0xd, 1 }, { 0x40000000, 0 }, { 0x40000001, 0 }, { 0x80000000, 0 },
		{ 0x80000001, 0 }, { 0x80000002, 0 }, { 0x80000003, 0 },
		{ 0x80000004, 0 }, { 0x80000007, 0 }, { 0x80000008, 0 },
	};
	uint64_t h = fnv_u32(0xcbf29ce484222325ull, MIG_CPU_STATE_VERSION);
	const struct cpuid_vcpu vcpu0 = { 0 };	/* leaf 0x15 (the TSC rate) is not hashed */
	struct cpuid_result r;

	for (size_t i = 0; i < sizeof(leaves) / sizeof(leaves[0]); i++) {
		cpuid(leaves[i][0], leaves[i][1], &vcpu0, &r);
		h = fnv_u32(fnv_u32(h, leaves[i][0]), leaves[i][1]);
		h = fnv_u32(fnv_u32(fnv_u32(fnv_u32(h, r.eax), r.ebx), r.ecx), r.edx);
	}
	return h;
}
