/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The live-migration stream (docs/migration.md): versioned records over one
 * TCP connection, encoded and decoded by the same per-record walkers, and
 * the conversation's state machine that both ends run.
 *
 * One struct mig_stream per connection, on both hosts.  Everything the
 * local side sends goes through mig_stream_encode() and everything the peer
 * sends through mig_stream_feed(); both apply the same checks and advance
 * the same phase, so a sender cannot emit what a receiver would refuse.
 *
 * The receiver trusts nothing: a header is checked (magic, type, flags,
 * direction, phase, sequence number, length against the type's bounds)
 * before any payload is buffered, the payload's CRC-32 before it is parsed,
 * and every field before the record is handed out.  A refusal is sticky and
 * carries a code (enum mig_code, the same codes ABORT sends) and a message.
 *
 * Pure: no I/O, no clock, no logging.  Memory: one payload buffer that
 * grows to the largest per-type maximum among the records the peer has
 * started (at most mig_payload_max(): about 1 MiB on the destination, 1 KiB
 * on the source; a refused header allocates nothing) and a bitmap of guest
 * pages (1 bit per 4 KiB) from the accept on; mig_stream_fini() frees both.
 */
#ifndef FERRY_HV_MIGRATE_STREAM_H
#define FERRY_HV_MIGRATE_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "hv/cpu_state.h"
#include "hv/cpuid.h"

#define MIG_PORT		7447	/* default TCP port of `migrate listen` */
#define MIG_PROTO_VERSION	10	/* 2: SPARSE pages, halted vCPUs; 3: HELLO nic, mac;
					 * 4: HELLO weight, cap; 5: HELLO pvpanic;
					 * 6: ROUND_ACK; 7: FRAMES;
					 * 8: HELLO initrd, modules;
					 * 9: HELLO timeout_s; 10: HELLO arch_caps */
#define MIG_CPU_STATE_VERSION	1	/* layout of struct cpu_state on the wire */

/* Record header: u16 type, u16 flags, u32 len, u32 seq, u32 crc; LE. */
#define MIG_HDR_SIZE		16
#define MIG_MAGIC		0x4d00u	/* 'M': the high byte of every type */

/* Protocol limits (a receiver refuses anything beyond them). */
#define MIG_PAGE_SIZE		4096u
#define MIG_PAGES_MAX		256u	/* pages in one PAGES record */
#define MIG_MEM_ALIGN		(1ull << 20)	/* guest memory: whole MiB */
#define MIG_MEM_MAX		(63ull << 30)	/* = VM_MAX_MEM_MB */
#define MIG_VCPUS_MAX		64u
#define MIG_XSAVE_MIN		576u	/* legacy region + XSAVE header */
#define MIG_XSAVE_MAX		4096u	/* = FPU_AREA_SIZE */
#define MIG_DEV_STATE_MAX	65536u
#define MIG_FRAMES_MAX		(4u + 32768u)	/* = 4 + GNET_CARRY_BYTES */
#define MIG_TSC_HZ_MIN		1000000ull
#define MIG_TSC_HZ_MAX		10000000000ull
#define MIG_ROUNDS_MAX		1000u	/* pre-copy rounds, all of them */
#define MIG_PAUSED_NS_MAX	(86400ull * 1000000000ull)	/* one day */
#define MIG_XCR0_PROTO		0xe7ull	/* x87 SSE AVX opmask ZMM_Hi256 Hi16_ZMM */
#define MIG_CPU_STATE_WIRE	496u	/* bytes of struct cpu_state encoded */

/* String fields: at most this many bytes, no NUL on the wire. */
#define MIG_NAME_MAX		31	/* = VM_NAME_MAX - 1, shell name rule */
#define MIG_KERNEL_MAX		31
#define MIG_CMDLINE_MAX		255
#define MIG_MODULES_MAX		127	/* module=LIST (hv/vm.h VM_MODULES_MAX) */
#define MIG_TIMEOUT_MAX_S	600	/* `migrate ... timeout=S`, and the longest
					 * silence either end waits out by its own rule */
#define MIG_VERSTR_MAX		63
#define MIG_MSG_MAX		127

enum mig_type {
	MIG_HELLO = MIG_MAGIC | 1,	/* src -> dst */
	MIG_HELLO_REPLY,		/* dst -> src */
	MIG_PAGES,			/* src -> dst */
	MIG_ROUND_END,			/* src -> dst */
	MIG_VCPU_STATE,			/* src -> dst */
	MIG_DEVICE_STATE,		/* src -> dst */
	MIG_TSC,			/* src -> dst */
	MIG_END,			/* src -> dst */
	MIG_READY,			/* dst -> src */
	MIG_COMMIT,			/* src -> dst */
	MIG_COMMITTED,			/* dst -> src */
	MIG_ABORT,			/* either way */
	MIG_QUERY,			/* src -> dst, instead of HELLO: how did it end? */
	MIG_QUERY_REPLY,		/* dst -> src */
	MIG_ROUND_ACK,			/* dst -> src: round 0 is written (version 6) */
	MIG_FRAMES,			/* src -> dst: frames since the state (version 7) */
	MIG_TYPE_LAST = MIG_FRAMES
};

/* Why a migration was refused or ended; on the wire in HELLO_REPLY and
 * ABORT.  Never renumber. */
enum mig_code {
	MIG_OK = 0,
	MIG_E_PROTOCOL,		/* malformed or out-of-order stream */
	MIG_E_INTEGRITY,	/* CRC-32 mismatch */
	MIG_E_VERSION,		/* protocol, CPU-state or device-state version */
	MIG_E_BASELINE,		/* guest CPU baseline differs, or RDCL_NO it lacks */
	MIG_E_NAME_TAKEN,	/* destination has a guest of that name */
	MIG_E_NO_MEMORY,	/* destination cannot hold the guest */
	MIG_E_NOT_ALLOWED,	/* peer not allowed, or not listening */
	MIG_E_LIMIT,		/* beyond what the destination supports */
	MIG_E_STATE,		/* CPU or device state refused */
	MIG_E_CANCELLED,	/* the operator cancelled */
	MIG_E_TIMEOUT,		/* the peer went silent */
	MIG_E_INTERNAL,		/* a local failure (creating, loading, starting) */
	MIG_E_BUSY,		/* a migration is already running */
	MIG_CODE_LAST = MIG_E_BUSY
};

/* A code and a printable message (no control characters). */
struct mig_error {
	uint32_t code;			/* enum mig_code */
	char msg[MIG_MSG_MAX + 1];
};

enum mig_role { MIG_SRC = 1, MIG_DST = 2 };

/*
 * Phases of the conversation, the same on both ends.  "Ready" means READY
 * was sent (destination) or received (source); likewise for the others.
 */
enum mig_phase {
	MIG_PH_HELLO,		/* nothing yet: HELLO comes first */
	MIG_PH_ADMIT,		/* HELLO seen: HELLO_REPLY next */
	MIG_PH_MEMORY,		/* accepted: PAGES and ROUND_END; ROUND_ACK back */
	MIG_PH_STATE,		/* guest stopped: VCPU_STATE.., DEVICE_STATE, TSC, END */
	MIG_PH_LOADING,		/* END seen: destination loads, READY next */
	MIG_PH_READY,		/* READY seen: COMMIT next */
	MIG_PH_COMMITTING,	/* COMMIT seen: COMMITTED next */
	MIG_PH_DONE,		/* COMMITTED seen: the destination owns the guest */
	MIG_PH_REFUSED,		/* HELLO_REPLY refused (terminal) */
	MIG_PH_ABORTED,		/* ABORT seen (terminal) */
	MIG_PH_QUERY,		/* QUERY seen: QUERY_REPLY next */
	MIG_PH_ANSWERED,	/* QUERY_REPLY seen (terminal) */
};

/* ---- record payloads ---- */

struct mig_hello {
	uint32_t proto_version;		/* first field of HELLO, never moves */
	uint32_t cpu_state_version;	/* MIG_CPU_STATE_VERSION */
	uint32_t dev_version;		/* version of vdev_snapshot's format */
	uint32_t vcpus;			/* 1..MIG_VCPUS_MAX */
	uint64_t mig_id;		/* random, names this migration in both logs */
	uint64_t mem_size;		/* bytes, whole MiB, <= MIG_MEM_MAX */
	uint64_t cpu_baseline;		/* mig_cpu_baseline() of the source */
	uint64_t arch_caps;		/* its IA32_ARCH_CAPABILITIES: 0 or ARCH_CAP_RDCL_NO */
	uint64_t tsc_hz;		/* the rate the guest's TSC runs at the source */
	uint64_t guest_tsc;		/* guest TSC when HELLO was sent (for logs) */
	bool nic;			/* the guest has a NIC (create nic=on) ... */
	uint8_t mac[6];			/* ... with this MAC: unicast, not zero */
	bool pvpanic;			/* the guest has a pvpanic device */
	uint32_t weight;		/* its CPU share: 1..65535 (`sched`) */
	uint32_t cap_pct;		/* its cap: 0 (none) .. 100 per vCPU */
	char ferry_version[MIG_VERSTR_MAX + 1];	/* printable */
	char name[MIG_NAME_MAX + 1];		/* shell name rule */
	char kernel[MIG_KERNEL_MAX + 1];	/* printable, no spaces */
	char cmdline[MIG_CMDLINE_MAX + 1];	/* printable */
	char initrd[MIG_KERNEL_MAX + 1];	/* printable, no spaces, "" for none */
	char modules[MIG_MODULES_MAX + 1];	/* printable, no spaces, "" for none */
	uint32_t timeout_s;		/* `migrate ... timeout=S` for both ends; 0: each
					 * its own rule (mig_silence_us); <= MIG_TIMEOUT_MAX_S */
};

struct mig_reply {
	uint32_t proto_version;		/* the destination's; never moves */
	uint32_t code;			/* MIG_OK: accepted; else why not */
	uint64_t xcr0_mask;		/* XSAVE components it can load (x87|SSE at least) */
	char ferry_version[MIG_VERSTR_MAX + 1];
	char msg[MIG_MSG_MAX + 1];	/* refusal, or a warning on accept */
};

enum mig_page_kind {
	MIG_PAGE_DATA = 0,		/* 4096 bytes follow */
	MIG_PAGE_ZERO = 1,		/* the page is all zero */
	MIG_PAGE_ZERO_RUN = 2,		/* u32 n follows: gfn .. gfn+n-1 are all zero */
	MIG_PAGE_SPARSE = 3,		/* u16 len, then len bytes (hv/migrate/sparse.h) */
};
#define MIG_ZERO_RUN_MAX	(1u << 24)	/* pages in one ZERO_RUN entry (64 GiB) */
#define MIG_REC_SPAN_MAX	(1u << 15)	/* pages one PAGES record covers, runs
						 * counted whole (128 MiB): the receiver
						 * writes or zeroes them in one go */

struct mig_page {
	uint64_t gfn;			/* < guest pages */
	uint8_t kind;			/* enum mig_page_kind */
	const uint8_t *data;		/* MIG_PAGE_SIZE bytes if DATA */
	uint32_t run;			/* ZERO_RUN: pages, 2..MIG_ZERO_RUN_MAX */
	uint16_t len;			/* SPARSE: bytes at data, 12..MIG_SPARSE_MAX */
};

/* Guest pages an entry covers. */
static inline uint64_t mig_page_span(const struct mig_page *pg)
{
	return pg->kind == MIG_PAGE_ZERO_RUN ? pg->run : 1;
}

struct mig_pages {
	uint32_t count;			/* 1..MIG_PAGES_MAX */
	const struct mig_page *page;
};

struct mig_round_end {
	uint32_t round;			/* 0, 1, 2, ... */
	uint64_t pages;			/* pages sent in this round (runs count whole) */
	uint64_t remaining;		/* dirty pages for the next round (0: last) */
};

/*
 * The destination has written every page of a round into the guest's
 * memory.  Only round 0 is acknowledged, once, after its ROUND_END and
 * before READY: the source pauses the guest only after it (docs/migration.md,
 * "Round 0 written").
 */
struct mig_round_ack {
	uint32_t round;			/* 0 */
	uint64_t pages;			/* pages of that round written (= its ROUND_END's) */
};

struct mig_vcpu {
	uint32_t id;			/* 0, 1, ... in order */
	struct cpu_state cpu;		/* xcr0 is the vCPU's XCR0 */
	bool halted;			/* in HLT: wakes on an interrupt (if IF) or not */
	uint32_t xsave_len;		/* MIG_XSAVE_MIN..MIG_XSAVE_MAX */
	const uint8_t *xsave;		/* standard (non-compacted) XSAVE area */
};

struct mig_devstate {
	uint32_t len;			/* 1..MIG_DEV_STATE_MAX */
	const uint8_t *data;		/* vdev_snapshot() bytes, checked by it */
};

/*
 * Frames that came for the paused guest on the source after its device
 * state was saved, sent once at most, between READY and COMMIT: the
 * destination gives them to the guest after the ones the device state
 * carried (docs/migration.md, "Frames in flight").
 */
struct mig_frames {
	uint32_t len;			/* 4..MIG_FRAMES_MAX */
	const uint8_t *data;		/* gnet_rx_late_snapshot() bytes, checked by it */
};

struct mig_tsc {
	uint64_t guest_tsc;		/* guest TSC when its devices were saved (paused) */
	uint64_t guest_clock_ns;	/* guest device clock (vm_clock_ns) then */
};

struct mig_end {
	uint32_t rounds;		/* ROUND_END records sent */
	uint32_t vcpus;			/* VCPU_STATE records sent */
	uint64_t pages;			/* pages in all PAGES records */
};

struct mig_ready { uint64_t pages; };		/* pages the destination loaded */
struct mig_commit {
	uint64_t paused_ns;		/* time since pause, at sending */
	uint32_t flags;			/* MIG_COMMIT_* */
};
#define MIG_COMMIT_PAUSED	1u	/* the operator had paused it: arrive paused */
#define MIG_COMMIT_FLAGS	MIG_COMMIT_PAUSED
struct mig_abort { uint32_t code; char msg[MIG_MSG_MAX + 1]; };

/* Resolving an "in doubt" migration after the fact (docs/migration.md). */
enum mig_outcome_wire {
	MIG_Q_UNKNOWN = 0,	/* no record of it here (or still in progress) */
	MIG_Q_RAN = 1,		/* COMMIT came: the guest ran here */
	MIG_Q_DISCARDED = 2,	/* it ended here without COMMIT: never ran */
};
struct mig_query { uint32_t proto_version; uint64_t mig_id; };
struct mig_query_reply { uint64_t mig_id; uint32_t outcome; };

/* One record.  Pointers in a decoded record point into the stream's buffer
 * and stay valid until the next mig_stream_feed() call. */
struct mig_rec {
	uint16_t type;			/* enum mig_type */
	union {
		struct mig_hello hello;
		struct mig_reply reply;
		struct mig_pages pages;
		struct mig_round_end round;
		struct mig_round_ack ack;
		struct mig_vcpu vcpu;
		struct mig_devstate dev;
		struct mig_frames frames;
		struct mig_tsc tsc;
		struct mig_end end;
		struct mig_ready ready;
		struct mig_commit commit;
		struct mig_abort abort;
		struct mig_query query;
		struct mig_query_reply qreply;
	};
};

/*
 * One connection's conversation, about 8 KiB: allocate it, keep it off
 * small stacks.  Callers read the fields marked (r) and change none.  Not
 * locked: one owner (the migration task) at a time.
 */
struct mig_stream {
	enum mig_role role;		/* (r) which end we are */
	enum mig_phase phase;		/* (r) */
	struct mig_hello hello;		/* (r) the HELLO, sent or received */
	struct mig_error rx_err;	/* (r) first refusal of the peer's data */
	struct mig_error tx_err;	/* (r) why the last encode was refused */
	uint32_t end_code;		/* (r) code of the ABORT or refusal */
	enum mig_phase abort_phase;	/* (r) phase when ABORT came */
	enum mig_role abort_by;		/* (r) who sent it */
	uint64_t xcr0_mask;		/* (r) the destination's, from HELLO_REPLY */
	uint64_t guest_pages;		/* (r) mem_size / 4 KiB */
	uint64_t query_id;		/* (r) mig_id of a QUERY */
	/* progress of the source's records, tracked on both ends */
	uint32_t rounds;		/* (r) ROUND_END records so far */
	uint64_t round_pages;		/* pages since the last ROUND_END */
	uint64_t total_pages;		/* (r) pages in all PAGES records */
	uint64_t seen_pages;		/* (r) distinct gfns sent at least once */
	uint64_t last_remaining;	/* remaining of the last ROUND_END */
	uint64_t round0_pages;		/* (r) pages of round 0, once it ended */
	bool round0_acked;		/* (r) ROUND_ACK of round 0 sent or received */
	bool round_open;		/* PAGES since the last ROUND_END */
	uint32_t vcpus_done;		/* (r) VCPU_STATE records so far */
	bool dev_done, tsc_done;
	bool frames_done;		/* (r) a FRAMES record came or went */
	uint8_t *seen;			/* bitmap of gfns sent, guest_pages bits */
	uint32_t tx_seq, rx_seq;	/* next sequence number each way */
	int rx_rc;			/* sticky error of mig_stream_feed */
	/* decoder */
	uint8_t hdr[MIG_HDR_SIZE];
	size_t hdr_have;		/* header bytes buffered */
	uint16_t cur_type;		/* header of the record being read */
	uint32_t cur_len, cur_crc;
	uint8_t *buf;			/* payload, cap bytes (grows, bounded) */
	size_t cap, have;
	struct mig_rec rec;		/* the last decoded record */
	struct mig_page pages[MIG_PAGES_MAX];
};

/* Start a conversation as role.  Returns 0 (allocates nothing yet). */
int mig_stream_init(struct mig_stream *s, enum mig_role role);
void mig_stream_fini(struct mig_stream *s);

/*
 * Encode r, ours to send now, into buf[0..cap) with the next sequence
 * number.  Returns the bytes written; -ENOSPC (buffer too small, nothing
 * changed), -EINVAL (not ours to send now, or a field out of range:
 * s->tx_err says which), -EPIPE (the conversation is over), -ENOMEM.
 * ABORT can always be sent until the conversation is over.
 */
long mig_stream_encode(struct mig_stream *s, const struct mig_rec *r, void *buf, size_t cap);

/*
 * Feed bytes received from the peer, split anywhere.  Consumes bytes up to
 * the end of at most one record and sets *used.  Returns 1 with *out set
 * when a record is complete (valid until the next call), 0 when all len
 * bytes were taken and more are needed, or a negative errno when the
 * stream is refused: -EPROTO (s->rx_err says why), -ENOMEM.  A refusal
 * is final: every later call returns it again.
 */
int mig_stream_feed(struct mig_stream *s, const void *data, size_t len, size_t *used,
		    const struct mig_rec **out);

/* True while part of a record is buffered: end of stream now means the
 * peer's last record was cut short. */
bool mig_stream_partial(const struct mig_stream *s);

/* Largest payload the peer of role may send (the bound of the buffer). */
size_t mig_payload_max(enum mig_role peer);

/* The state machine, pure: may a record of type, sent by from, come now? */
bool mig_phase_allows(enum mig_phase ph, uint16_t type, enum mig_role from);

/* Names for messages. */
const char *mig_type_name(uint16_t type);
const char *mig_code_name(uint32_t code);
const char *mig_phase_name(enum mig_phase ph);

/* Set e (printf-style); non-printable characters become '?' and the
 * message is cut at MIG_MSG_MAX.  Returns -EPROTO. */
int mig_error_set(struct mig_error *e, uint32_t code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The guest-visible CPU baseline as a 64-bit FNV-1a hash of the CPUID
 * leaves guests see (vCPU 0) and MIG_CPU_STATE_VERSION.  Pass cpuid_guest. */
typedef void (*mig_cpuid_fn)(uint32_t leaf, uint32_t subleaf, const struct cpuid_vcpu *c,
			     struct cpuid_result *r);
uint64_t mig_cpu_baseline(mig_cpuid_fn cpuid);

#endif
