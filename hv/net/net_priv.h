/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Interfaces between the layers of hv/net; not for use outside it.
 * Outgoing frames are built in place: Ethernet header at 0, IPv4 header at
 * ETH_HLEN, the transport header at NET_L4_OFF.
 */
#ifndef FERRY_HV_NET_NET_PRIV_H
#define FERRY_HV_NET_NET_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hv/net/net.h"

#define NET_L4_OFF	(ETH_HLEN + IP_HLEN)
#define NET_L4_MAX	(ETH_MTU - IP_HLEN)
_Static_assert(NET_TCP_OFF == NET_L4_OFF, "net.h's NET_TCP_OFF");
/* Largest TSO payload: the IPv4 total length must fit its 16 bits. */
#define NET_TSO_MAX	(65535 - IP_HLEN - 60)

/* net.c: fill the Ethernet header, pad to the minimum and transmit. */
int eth_output(struct netstack *s, uint8_t *frame, size_t len,
	       const uint8_t *dst, uint16_t type);
/* net.c: where to build the next frame (cfg.tx_frame's, else txbuf); to
 * be sent, or dropped, before another frame is built. */
uint8_t *net_tx_frame(struct netstack *s);
/* net.c: xorshift64* from the configured seed (not cryptographic). */
uint64_t net_rand(struct netstack *s);

/* ip_output and arp_output: the frame answers what came in unasked (an
 * echo reply, a reset, a half-open connection's segments) from a source
 * anyone may forge.  It never takes an ARP entry or a queued frame's
 * slot from ferry's own traffic (a migration's peer), nor starts to
 * resolve more than ARP_ANSWER_RATE next hops a second. */
#define NET_TX_ANSWER	(1u << 0)

/* arp.c */
void arp_init(struct netstack *s, uint64_t timeout_us);
void arp_input(struct netstack *s, const uint8_t *pkt, size_t len);
/* Send an IPv4 frame to nexthop, resolving it first; queues the frame when
 * unresolved (and returns 0).  flags: NET_TX_*. */
int arp_output(struct netstack *s, uint32_t nexthop, uint8_t *frame,
	       size_t len, unsigned flags);
void arp_announce(struct netstack *s);
uint64_t arp_poll(struct netstack *s);

/* ip.c: pkt is the IPv4 header; len counts from it to the frame's end. */
void ip_input(struct netstack *s, const uint8_t *pkt, size_t len);
/* Fill the IPv4 header at frame + ETH_HLEN for l4len transport bytes
 * (already at NET_L4_OFF) and send.  -ENETUNREACH, -EAGAIN, -EIO.  With
 * s->tso set, l4len counts the payload the NIC will cut up too.  flags:
 * NET_TX_*. */
int ip_output(struct netstack *s, uint8_t *frame, size_t l4len,
	      uint32_t dst, uint8_t proto, unsigned flags);
/* Can a frame to dst go out now (routed, next hop in the ARP cache)?
 * TSO frames must: they cannot wait in the ARP queue. */
bool ip_resolved(struct netstack *s, uint32_t dst);
/* Is addr one of ours to answer as broadcast (limited or subnet)? */
bool ip_is_broadcast(const struct netstack *s, uint32_t addr);
/* Can addr be a unicast peer (not 0, loopback, multicast, broadcast)? */
bool ip_is_unicast(const struct netstack *s, uint32_t addr);

/* icmp.c: iph is the IPv4 header, msg/len the ICMP message. */
void icmp_input(struct netstack *s, const uint8_t *iph, const uint8_t *msg,
		size_t len);

/* tcp.c and friends */
int tcp_init(struct netstack *s, const struct net_config *cfg);
void tcp_input(struct netstack *s, const uint8_t *iph, const uint8_t *seg,
	       size_t len);
uint64_t tcp_poll(struct netstack *s);
/* An ICMP "fragmentation needed" (RFC 1191) quoting our TCP segment to
 * rip (ports, sequence number), the next hop's MTU in mtu (0: unknown). */
void tcp_frag_needed(struct netstack *s, uint32_t rip, uint16_t lport,
		     uint16_t rport, uint32_t seq, uint32_t mtu);

#endif
