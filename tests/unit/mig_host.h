/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Two ferry hosts in one test process, for running the real migration
 * sender (hv/migrate/send.c) against the real receiver (recv.c) over the
 * simulated link (tests/unit/netsim.c) in simulated time.
 *
 * The seams, each replacing a product file at link time:
 *   hv/netif.c    host_if.stack is the destination's stack (mig_listen
 *                 uses it); the source's is W.src, given to the sender in
 *                 mig_out_args.net.  netif_poll() lets simulated time run
 *                 to the next event, at most 10 us (a loop around it takes
 *                 time too); netif_wait() at most 1 ms.  Both then run the destination's
 *                 background work (mig_in_poll) and the test's tick hook,
 *                 as the destination host and the guest would run
 *                 meanwhile.  netif_now_us() is the simulated clock.
 *   hv/vm.c       guests are struct mh_vm: a struct vm whose memory is a
 *                 host buffer, with a real EPT table (arch/x86/paging.c
 *                 on tests/unit/pt_pool.h) so that the real dirty log
 *                 (hv/mm/dirty.c) runs under the sender.  Each guest
 *                 belongs to one host; vm_find() and vm_at() see the running host's
 *                 guests only.  Destroyed guests are kept (marked) so the
 *                 test can look at them.
 *   hv/vmstate.c  the CPU state, XSAVE area, device bytes and times are
 *                 plain copies kept in struct mh_vm.
 *   identity.c    mig_keyring() is the running host's W.kr[]: by default
 *                 each has its own key and trusts the other's at its
 *                 address; the DRBG draws from a seeded fake hardware
 *                 source (random.c runs as in the product).
 *   the rest      mem_get_stats (1 GiB free), tsc_hz (2 GHz), time_now_us
 *                 (simulated, for the log), ferry_version.
 */
#ifndef FERRY_TESTS_UNIT_MIG_HOST_H
#define FERRY_TESTS_UNIT_MIG_HOST_H

#include <stdbool.h>
#include <stdint.h>
#include "hv/migrate/trust.h"
#include "hv/net/net.h"
#include "hv/vm.h"
#include "tests/unit/netsim.h"
#include "tests/unit/pt_pool.h"

#define MH_SRC_IP	0x0a000001u
#define MH_DST_IP	0x0a000002u
#define MH_MAX_VMS	8
#define MH_DEV_MAX	512

enum mh_host { MH_SRC, MH_DST };

struct mh_vm {
	struct vm vm;
	enum mh_host host;
	uint8_t *mem;
	struct pt_pool pool;
	bool has_pt;
	struct cpu_state cpu;
	uint8_t xsave[FPU_AREA_SIZE];
	uint32_t xsave_len;
	bool halted;
	uint8_t dev[MH_DEV_MAX];
	uint32_t dev_len;
	unsigned int dev_loads, cpu_loads;
	uint32_t late_got;		/* frames of a FRAMES record given to it */
	unsigned int late_after;	/* dev_loads when they were given */
	uint64_t guest_tsc, clock_ns;
	bool time_loaded;
	uint64_t time_saved_us, dev_saved_us;	/* when the sender took each */
	bool destroyed;
	unsigned int flushes;		/* vm_flush_gpt calls */
	uint8_t *tlb_w;			/* per page: a vCPU holds it writable */
	uint64_t page_lookups;		/* vm_page_hva calls: pages read or written */
};

struct mh_world {
	struct netsim sim;
	struct netstack src;		/* the destination's is host_if.stack */
	enum mh_host running;		/* whose code runs now */
	struct mh_vm *vms[MH_MAX_VMS];
	unsigned int nr_vms;
	/* faults on what the source host sends: every frame carrying COMMIT
	 * dropped (ACKs still pass); the whole link cut (both ways) at COMMIT,
	 * or after cut_after payload bytes from the source (0: never) */
	bool drop_commit, cut_at_commit, commit_seen;
	bool cut_at_activate;		/* the whole link cut as the destination
					 * takes COMMIT and runs the guest */
	uint64_t cut_after, src_payload;
	void (*tick)(void);		/* runs at every poll and wait */
	bool in_tick;
	/* an attacker on the wire: flips a bit of the source's byte at
	 * stream offset flip_at (1-based; 0: never) on its way to MIG_PORT,
	 * fixing the TCP checksum so that TCP passes it up */
	uint64_t flip_at;
	uint32_t src_isn;
	bool flipped;
	/* a recorder on the wire: the first cap_len bytes the source sends to
	 * MIG_PORT on its first connection (cap_got of them seen so far) */
	uint8_t *cap;
	size_t cap_len, cap_got;
	uint32_t cap_isn;
	bool cap_started;
	/* a guest pattern to look for in the source's frames */
	const uint8_t *watch;
	size_t watch_len;
	bool watch_seen;
	/* frames each host handed to its NIC since its last kick
	 * (netif_uplink_kick, or netif_poll, which kicks); the destination's
	 * turns (mig_in_poll) that ended with some still waiting */
	uint32_t unkicked[2];
	uint32_t dst_left_unkicked;
	struct mig_keyring kr[2];	/* each host's keys and trusted peers */
	bool dev_at_odds[2];		/* vmstate_check_devices fails there */
	bool meltdown[2];		/* that host's CPU is affected by Meltdown */
	uint32_t late_frames;		/* the source's guest got these after its
					 * device state was saved (64 bytes each) */
	bool late_bad;			/* and their list is malformed */
	uint32_t tx_waiting;		/* its frames waiting for the wire at COMMIT */
	uint32_t tx_dropped_at;		/* ... dropped then: the source's time (us) */
};

extern struct mh_world W;

/* Set up both hosts and the link, each with a key and trusting the
 * other; the destination listens on MIG_PORT (insecure: in plaintext). */
void mh_up(const struct netsim_cfg *link);
void mh_up_listen(const struct netsim_cfg *link, bool insecure);
/* A deterministic host key from n. */
void mh_key(struct host_key *k, uint8_t n);
/* Free everything (guests too). */
void mh_down(void);
/* A running source guest of mb MiB: memory in a pattern of zero, sparse
 * and dense pages, a 64-bit CPU state, device bytes, its dirty log ready. */
struct mh_vm *mh_source_vm(const char *name, unsigned int mb);
/* The guest named name on host h, destroyed ones too (the newest). */
struct mh_vm *mh_vm_on(enum mh_host h, const char *name);
/* Let simulated time run us microseconds (destination work included). */
void mh_run_for(uint64_t us);
/* The guest writes page gfn (a fault into the dirty log first, as a vCPU
 * would take while logging is on). */
void mh_guest_write(struct mh_vm *v, uint64_t gfn, uint8_t val);

#endif
