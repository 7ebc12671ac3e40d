/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ferry's TCP/IP stack: Ethernet, ARP, IPv4, ICMP echo and TCP, as pure C.
 *
 * Layering (each file one layer; output calls go down, input goes up):
 *   net.c      net_init/net_input/net_poll, Ethernet II framing
 *   arp.c      cache with expiry and refresh, replies, gratuitous ARP  (arp.h)
 *   ip.c       IPv4 checksums, TTL, one gateway; fragments dropped+counted
 *   icmp.c     echo replies; icmp_ping_send/icmp_ping_reply for `ping` (icmp.h)
 *   tcp*.c     TCP: tcp.c API and table, tcp_in.c arrival, tcp_out.c
 *              segments, tcp_timer.c RTO/persist/TLP/NewReno, tcp_sack.c
 *              SACK scoreboard and recovery                          (tcp.h)
 *   nettest.c  reproducible stream + CRC-32 sender/receiver machines  (nettest.h)
 *   (tests/unit/netsim.c: a simulated lossy link between two stacks, for tests)
 *
 * Driving it: net_init() with a MAC and a transmit callback, which copies
 * the frame and returns (-EAGAIN when the ring is full; it must not call
 * back into the stack).  The driver hands received frames to net_input();
 * the caller runs net_poll(now) regularly (it returns the next deadline)
 * and sets the time with net_set_time() before other calls.  The stack
 * never reads a clock and never blocks; it is single-threaded: the caller
 * serializes every call on one struct netstack with its lock (several
 * stacks may coexist).  Errors are negative errno values; counters are
 * plain structs in netstack.stats; arp_foreach/tcp_foreach list the ARP
 * cache and the connections for the shell.
 */
#ifndef FERRY_HV_NET_NET_H
#define FERRY_HV_NET_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hv/net/arp.h"
#include "hv/net/icmp.h"
#include "hv/net/proto.h"
#include "hv/net/tcp.h"

typedef int (*net_xmit_fn)(void *ctx, const void *frame, size_t len);
/* Optional: a buffer of ETH_FRAME_MAX bytes in which to build the next
 * outgoing frame, so that xmit can take it without a copy; NULL when
 * there is none (the stack then uses its own).  The stack hands a frame
 * built there to xmit (or copies it away) before calling xmit with any
 * other frame. */
typedef void *(*net_tx_frame_fn)(void *ctx);

/*
 * TCP segmentation offload (8254x SDM 3.5): one IPv4 TCP frame given as
 * its headers (hdr, hlen bytes: Ethernet, 20-byte IPv4 header at ETH_HLEN,
 * TCP header with options at NET_TCP_OFF) and its payload, data[0] then
 * data[1].  The NIC cuts the payload into segments of mss bytes and sends
 * each with the headers copied and fixed: IPv4 total length, ID (+1 per
 * segment) and header checksum; TCP sequence number, PSH and FIN on the
 * last segment only, and the checksum, whose field holds the pseudo-header
 * sum without the length.
 */
struct net_tso {
	const uint8_t *hdr;
	size_t hlen;
	const uint8_t *data[2];
	size_t len[2];
	uint32_t mss;
};
/* 0, -EAGAIN (ring full), or -EXDEV: not as one frame to this destination
 * (it is on this host, behind no NIC): the connection then sends segments. */
typedef int (*net_xmit_tso_fn)(void *ctx, const struct net_tso *tso);

/* What the driver or test gives net_init.  Zero fields take defaults. */
struct net_config {
	uint8_t mac[ETH_ALEN];
	net_xmit_fn xmit;
	void *xmit_ctx;
	net_tx_frame_fn tx_frame;	/* optional; called with xmit_ctx */
	net_xmit_tso_fn xmit_tso;	/* optional; called with xmit_ctx */
	uint32_t tso_max;		/* payload bytes per xmit_tso; 0: no TSO */
	uint64_t seed;		/* secret for ISNs and ports: use a real RNG */
	uint32_t max_conns;	/* TCP connection slots (listeners too): 16 */
	uint32_t sndbuf;	/* per-connection send ring, bytes: 1 MiB */
	uint32_t rcvbuf;	/* per-connection receive ring, bytes: 1 MiB */
	uint32_t syn_backlog;	/* default listen backlog limit: 16 */
	uint32_t user_timeout_ms;	/* no progress -> ETIMEDOUT: 60000 */
	uint32_t time_wait_ms;	/* 2*MSL: 60000 */
	uint32_t min_rto_ms;	/* RTO floor: 200 */
	uint32_t delack_ms;	/* delayed-ACK timer: 40 */
	uint32_t arp_timeout_ms;	/* ARP entry lifetime: 60000 */
	/* TCP checksum offload: the driver has the NIC complete the checksum
	 * of every IPv4 TCP frame; the stack stores only the pseudo-header
	 * sum there (folded, not complemented; RFC 9293 3.1, 8254x SDM
	 * 3.3.6).  The TCP header starts at NET_TCP_OFF. */
	bool tx_tcp_csum;
};

/* Where outgoing IPv4 TCP frames put their TCP header (no IP options). */
#define NET_TCP_OFF	34

/* net_input_flags: what the NIC verified (8254x SDM 3.2.9: IPCS/TCPCS set,
 * IPE/TCPE clear, IXSM clear).  Unverified checksums are checked here. */
#define NET_RX_IP_CSUM_OK	(1u << 0)	/* IPv4 header checksum good */
#define NET_RX_TCP_CSUM_OK	(1u << 1)	/* TCP checksum good */

/* Per-layer counters (never reset by the stack). */
struct net_eth_stats {
	uint64_t rx_frames, rx_bytes, tx_frames, tx_bytes;
	uint64_t rx_errors;	/* runts, oversize */
	uint64_t rx_dropped;	/* not for us, unknown EtherType */
	uint64_t tx_errors;	/* xmit failed */
	uint64_t tx_busy;	/* xmit said -EAGAIN (ring full) */
};

struct net_arp_stats {
	uint64_t rx_requests, rx_replies, tx_requests, tx_replies;
	uint64_t rx_errors;	/* malformed */
	uint64_t conflicts;	/* someone else claims our address */
	uint64_t unresolved;	/* frames dropped waiting for a reply */
};

struct net_ip_stats {
	uint64_t rx_packets, tx_packets;
	uint64_t rx_errors;	/* bad version, header length, total length */
	uint64_t rx_bad_csum;
	uint64_t rx_frags;	/* fragments: dropped, not reassembled */
	uint64_t rx_not_for_us;
	uint64_t rx_unknown_proto;
	uint64_t tx_no_route;
};

struct net_icmp_stats {
	uint64_t rx_msgs, rx_errors, rx_bad_csum;
	uint64_t rx_echo_requests, tx_echo_replies;
	uint64_t tx_echo_requests, rx_echo_replies;
	uint64_t rx_unmatched;	/* echo replies to no outstanding request */
	uint64_t rx_other;	/* types we ignore */
	uint64_t rx_frag_needed;	/* "fragmentation needed" quoting our TCP */
};

struct net_tcp_stats {
	uint64_t rx_segs, tx_segs;
	uint64_t rx_errors;	/* truncated, bad offset, bad addresses */
	uint64_t rx_bad_csum;
	uint64_t rx_no_conn;	/* no socket: answered with RST */
	uint64_t rx_out_of_window;
	uint64_t rx_ooo;	/* held for reassembly */
	uint64_t rx_dup_acks;
	uint64_t retransmits;	/* segments sent again, all causes */
	uint64_t fast_retransmits;
	uint64_t lost_retransmits;	/* found lost again by SACK */
	uint64_t spurious_undos;	/* reductions undone by D-SACK */
	uint64_t tail_probes;		/* RFC 8985 tail loss probes */
	uint64_t rto_timeouts;
	uint64_t zwin_probes;
	uint64_t active_opens, passive_opens;
	uint64_t syn_dropped;	/* backlog, accept queue or table full */
	uint64_t syn_evicted;	/* half-open connections pushed out */
	uint64_t orphans_reset;	/* closed ones reset for a slot */
	uint64_t rx_resets, tx_resets;
	uint64_t challenge_acks;	/* RFC 5961 */
	uint64_t conn_timeouts;
	uint64_t tx_blocked;	/* xmit busy: output retried at next poll */
	uint64_t pmtu_lowered;	/* MSS lowered for a path's MTU (RFC 1191) */
};

struct net_stats {
	struct net_eth_stats eth;
	struct net_arp_stats arp;
	struct net_ip_stats ip;
	struct net_icmp_stats icmp;
	struct net_tcp_stats tcp;
};

/*
 * One network interface and its stack.  Owned by the caller (static or
 * heap); every field is protected by the caller's lock.  Fields other than
 * stats are private to hv/net.
 */
struct netstack {
	uint8_t mac[ETH_ALEN];
	uint32_t ip, netmask, gw;	/* host order; ip == 0: unconfigured */
	net_xmit_fn xmit;
	void *xmit_ctx;
	net_tx_frame_fn tx_frame;
	net_xmit_tso_fn xmit_tso;
	uint32_t tso_max;		/* 0: no TSO */
	const struct net_tso *tso;	/* the frame on its way down is this */
	uint64_t now_us;		/* set by net_set_time / net_poll */
	uint64_t rng;			/* xorshift state, from cfg.seed */
	uint16_t ip_id;
	bool tx_tcp_csum;		/* cfg.tx_tcp_csum */
	unsigned rx_flags;		/* NET_RX_* of the frame being input */
	bool rx_batch;			/* net_rx_batch: ACKs wait for net_poll */
	struct net_stats stats;
	struct arp_cache arp;
	struct icmp_state icmp;
	struct tcp_table tcp;
	uint8_t txbuf[ETH_FRAME_MAX];	/* scratch for one outgoing frame */
};

/* Set up s (zeroing it); allocates the TCP connection table. */
int net_init(struct netstack *s, const struct net_config *cfg);

/* Configure IPv4 (host order; gw 0: none) and announce with gratuitous ARP.
 * -EINVAL for a bad address, prefix or off-link gateway. */
int net_set_ipv4(struct netstack *s, uint32_t addr, unsigned prefix_len,
		 uint32_t gw);

/* Set the current time in microseconds (monotonic, caller's clock). */
void net_set_time(struct netstack *s, uint64_t now_us);

/* One received Ethernet frame (without FCS); bad frames are counted. */
void net_input(struct netstack *s, const void *frame, size_t len);
/* The same with NET_RX_* flags from a NIC that verified checksums. */
void net_input_flags(struct netstack *s, const void *frame, size_t len,
		     unsigned flags);

/* Frames input between net_rx_batch(s, true) and (s, false) are one
 * batch, as one interrupt or poll brought them: the ACKs they call for are
 * sent by the next net_poll, one per connection, not one per two segments.
 * Call net_poll right after the batch. */
void net_rx_batch(struct netstack *s, bool on);

/* Set the time and run due timers; returns the earliest next deadline
 * (absolute microseconds; UINT64_MAX when idle). */
uint64_t net_poll(struct netstack *s, uint64_t now_us);

/* Text helpers for the shell: "a.b.c.d" <-> host-order address. */
void net_format_ipv4(uint32_t addr, char buf[16]);
void net_format_mac(const uint8_t *mac, char buf[18]);

/* Prefix length of the configured netmask. */
unsigned net_prefix_len(const struct netstack *s);

#endif
