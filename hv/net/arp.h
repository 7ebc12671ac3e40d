/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ARP (RFC 826) cache for IPv4 over Ethernet: entries expire, are refreshed
 * while in use, and one frame per unresolved next hop waits for the reply.
 */
#ifndef FERRY_HV_NET_ARP_H
#define FERRY_HV_NET_ARP_H

#include <stdbool.h>
#include <stdint.h>

#include "hv/net/proto.h"

struct netstack;

#define ARP_CACHE_SIZE	32
#define ARP_PENDING	4	/* frames waiting for resolution, stack-wide */
#define ARP_RETRIES	3	/* requests before giving up on a next hop */
#define ARP_ANSWER_RATE	8	/* next hops answers may start resolving a second */

enum arp_state { ARP_FREE, ARP_INCOMPLETE, ARP_REACHABLE };

/* One cache line; owned by the stack's arp_cache. */
struct arp_entry {
	uint32_t ip;			/* host order */
	uint8_t mac[ETH_ALEN];
	uint8_t state;			/* enum arp_state */
	uint8_t tries;			/* requests sent while incomplete */
	bool own;			/* ferry's own traffic made it or went
					 * through it: no answer takes it */
	uint64_t expires_us;		/* reachable: drop after this */
	uint64_t used_us;		/* made, or last sent through */
	uint64_t next_req_us;		/* earliest next request */
};

/* A frame held until its next hop resolves (Ethernet header unfilled). */
struct arp_pending {
	uint32_t nexthop;
	uint16_t len;			/* 0: slot free */
	bool answer;			/* an answer: ferry's own frame may take the slot */
	uint64_t queued_us;
	uint8_t frame[ETH_FRAME_MAX];
};

struct arp_cache {
	struct arp_entry e[ARP_CACHE_SIZE];
	struct arp_pending pend[ARP_PENDING];
	uint64_t timeout_us;
	uint64_t answer_window_us;	/* the second answer_new counts in */
	uint32_t answer_new;		/* entries answers made in it */
};

/* What the shell's `arp` command prints. */
struct arp_info {
	uint32_t ip;
	uint8_t mac[ETH_ALEN];
	bool complete;
	uint64_t expires_in_ms;		/* 0 for incomplete entries */
};

typedef void (*arp_visit_fn)(const struct arp_info *info, void *arg);

/* Call fn for every used cache entry. */
void arp_foreach(struct netstack *s, arp_visit_fn fn, void *arg);
/* Look up a complete entry: 0 and the MAC, or -ENOENT. */
int arp_lookup(struct netstack *s, uint32_t ip, uint8_t *mac);
/* Forget every entry and queued frame. */
void arp_flush(struct netstack *s);

#endif
