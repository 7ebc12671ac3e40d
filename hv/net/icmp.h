/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ICMP echo (RFC 792): the stack answers echo requests itself; the `ping`
 * command sends requests with icmp_ping_send() and collects matched replies
 * with their round-trip time from icmp_ping_reply().
 */
#ifndef FERRY_HV_NET_ICMP_H
#define FERRY_HV_NET_ICMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct netstack;

#define ICMP_PING_SLOTS		8	/* outstanding requests remembered */
#define ICMP_REPLY_SLOTS	8	/* replies waiting for the caller */
#define ICMP_PING_MAXDATA	1472	/* payload that fits one frame */

/* One matched echo reply. */
struct icmp_echo_reply {
	uint32_t from;		/* host order */
	uint16_t id, seq;
	uint16_t len;		/* payload bytes */
	uint8_t ttl;
	uint64_t rtt_us;
};

struct icmp_ping_out {
	uint32_t dst;
	uint16_t id, seq;
	uint64_t sent_us;
	bool used;
};

/* Ping bookkeeping; owned by the stack. */
struct icmp_state {
	struct icmp_ping_out out[ICMP_PING_SLOTS];
	struct icmp_echo_reply rep[ICMP_REPLY_SLOTS];
	unsigned rep_head, rep_count;
	unsigned out_next;
};

/* Send an echo request with len payload bytes; 0, or -ENETUNREACH,
 * -EINVAL (len), -EAGAIN (driver busy).  A request that waits for ARP
 * counts as sent. */
int icmp_ping_send(struct netstack *s, uint32_t dst, uint16_t id,
		   uint16_t seq, size_t len);
/* Take the oldest matched reply: 1 and *out, or 0 when none. */
int icmp_ping_reply(struct netstack *s, struct icmp_echo_reply *out);

#endif
