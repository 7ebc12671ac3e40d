/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ferry's software Ethernet switch: one port per guest NIC, the uplink
 * (the host's e1000, on the wire) and the local port (ferry's own stack,
 * with the e1000's MAC).  Pure logic: frames come in with sw_input() and
 * leave through each port's out() callback, which copies the frame.
 *
 * Forwarding, by destination MAC:
 *   - a guest port's MAC and the local port's MAC are fixed when the port
 *     is added (no MAC learned from traffic can take them over);
 *   - broadcast and multicast go to every port but the source;
 *   - unicast for a guest or the local port goes to that port only (a
 *     guest never sees another guest's unicast); unicast for no port goes
 *     to the uplink when it came from a guest or the local port, and is
 *     dropped when it came from the uplink (with the e1000 promiscuous,
 *     the LAN's traffic for other hosts);
 *   - a guest reaches the local port (ferry's IP: migration listener,
 *     nettest) only when its port has SW_F_MGMT: otherwise its unicast for
 *     ferry's MAC is dropped (not sent to the wire either) and its
 *     broadcasts reach everyone but ferry.
 * Filtering, dropped and counted on the source port by reason:
 *   - shorter than an Ethernet header, or longer than 1514 bytes (1518
 *     with an 802.1Q tag) (no FCS on any port);
 *   - a multicast or all-zero source MAC;
 *   - from any port: a frame for the link itself, which no bridge
 *     forwards (destination 01:80:C2:00:00:00-0F or Cisco's
 *     01:00:0C:CC:CC:CC/CD; EtherType PAUSE 0x8808, slow protocols 0x8809,
 *     EAPOL 0x888E, LLDP 0x88CC): a guest's would reach the LAN's switch
 *     as ferry's own (a BPDU, PAUSE or EAPOL-Logoff can shut its port),
 *     and the wire's are for ferry's NIC, not for guests;
 *   - from a guest or the local port: a source MAC that is not the port's
 *     (anti-spoofing);
 *   - from a guest: a VLAN tag (802.1Q or 802.1ad: a guest is on the
 *     untagged LAN, and a tag could hop into another VLAN on a trunk), and
 *     an ARP packet whose sender MAC is not the port's (or too short to
 *     tell), and the same for IPv6 neighbour discovery (ICMPv6 133-137,
 *     after any hop-by-hop, routing or destination options): a source
 *     link-layer address option, or an advertisement's or a redirect's
 *     target link-layer address, that is not the port's MAC (or a message
 *     cut short), or any such message in a fragment (RFC 6980), and
 *     an ARP packet or IPv4 packet that says it comes from ferry's own
 *     IPv4 address (sw_set_local_ip), which would draw the LAN's traffic
 *     for ferry (migrations, nettest) to the guest.  Other IP addresses
 *     are not bound to ports: a guest may still claim another's IP with
 *     its own MAC, as on a plain LAN;
 *   - from the uplink: a source MAC that belongs to a port here (a loop, or
 *     someone on the LAN posing as a guest), and a VLAN tag (802.1Q or
 *     802.1ad: another VLAN's frame, where the NIC's port is a trunk).
 *
 * Announce after migration: sw_announce_rarp/garp build the frames that
 * make the LAN's switches learn a MAC's new place (RARP as in RFC 903
 * with the MAC as sender and target; gratuitous ARP as in RFC 5227 3),
 * and sw_announce_delay_ms() says when to send each of SW_ANNOUNCE_ROUNDS.
 *
 * Migration: a guest port is its MAC and flags, both part of the guest's
 * configuration (`create ... nic=on mac=...`), so the destination adds the
 * same port; the virtio-net snapshot carries the MAC and refuses another.
 * There is nothing learned to carry: the table holds only fixed entries.
 * The destination adds it dormant (sw_set_dormant) while the guest still
 * runs at the source: it holds the MAC against another port, but nothing
 * is forwarded to or by it, so this host's guests and stack reach the guest
 * over the wire and the guest's own frames from the wire are no loop; it
 * wakes when the guest is taken over (COMMIT).
 *
 * Not thread-safe: the owner serializes calls (one lock for the switch).
 * The out() callbacks run inside sw_input and must not call back into it.
 */
#ifndef FERRY_HV_NET_SWITCH_H
#define FERRY_HV_NET_SWITCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SW_MAX_PORTS		16
#define SW_F_MGMT		0x01	/* guest port: may reach the local port */
#define SW_ANNOUNCE_ROUNDS	5
#define SW_ANNOUNCE_LEN		60	/* ETH_ZLEN: both announce frames */

enum sw_kind { SW_GUEST, SW_UPLINK, SW_LOCAL };

enum sw_drop {
	SW_DROP_RUNT,		/* shorter than 14 bytes */
	SW_DROP_OVERSIZE,	/* over 1514 (1518 tagged) */
	SW_DROP_BAD_SRC,	/* multicast or zero source MAC */
	SW_DROP_SPOOF,		/* source MAC not the port's */
	SW_DROP_MGMT,		/* guest to ferry's own MAC without SW_F_MGMT */
	SW_DROP_NO_PORT,	/* unicast from the uplink for no port here */
	SW_DROP_LOOP,		/* from the uplink with a port's own source MAC */
	SW_DROP_SELF,		/* unicast for the port it came from */
	SW_DROP_NO_UPLINK,	/* unicast for the wire, with no NIC */
	SW_DROP_TAGGED,		/* VLAN-tagged frame (from a guest or the wire) */
	SW_DROP_ARP_SPOOF,	/* guest's ARP with another sender MAC */
	SW_DROP_ND_SPOOF,	/* guest's IPv6 neighbour discovery for another MAC */
	SW_DROP_LINK_CONTROL,	/* for the link itself: STP, PAUSE, LACP, 802.1X, LLDP */
	SW_DROP_IP_SPOOF,	/* guest's ARP or IPv4 from ferry's own IP */
	SW_NR_DROP
};

struct sw_port_stats {
	uint64_t in_frames, in_bytes;		/* into the switch from the port */
	uint64_t out_frames, out_bytes;		/* out of the switch to the port */
	uint64_t drops[SW_NR_DROP];		/* frames from the port, by reason */
};

struct sw_port {
	bool used;
	uint8_t kind;				/* enum sw_kind */
	uint8_t flags;				/* SW_F_* */
	bool dormant;				/* holds its MAC, forwards nothing */
	uint8_t mac[6];				/* fixed; unused for the uplink */
	void (*out)(void *ctx, const uint8_t *frame, size_t len);
	void *ctx;
	struct sw_port_stats stats;
};

struct sw {
	struct sw_port port[SW_MAX_PORTS];
	uint32_t local_ip;			/* ferry's IPv4 address (host order); 0: none */
};

void sw_init(struct sw *sw);

/*
 * Add a port; returns its number, or -EINVAL (a multicast or zero MAC for
 * a guest or local port, out NULL, a second uplink or local port),
 * -EEXIST (a MAC another port has) or -ENOSPC.
 */
int sw_add_port(struct sw *sw, enum sw_kind kind, const uint8_t mac[6], uint8_t flags,
		void (*out)(void *ctx, const uint8_t *frame, size_t len), void *ctx);
/* Remove a port (its guest moved away or was destroyed). */
void sw_del_port(struct sw *sw, int port);
/* A guest port dormant or awake (an incoming guest's, until COMMIT).
 * 0 or -EINVAL. */
int sw_set_dormant(struct sw *sw, int port, bool dormant);
/* Change a guest port's flags (the operator's SW_F_MGMT).  0 or -EINVAL. */
int sw_set_flags(struct sw *sw, int port, uint8_t flags);
/* Ferry's own IPv4 address (host order; 0: none), which no guest may
 * send from. */
void sw_set_local_ip(struct sw *sw, uint32_t ip);

/* A frame (no FCS) from port: forward it.  Returns how many ports it was
 * handed to, or -EINVAL for a bad port, or the drop (counted) as -EPERM. */
int sw_input(struct sw *sw, int port, const uint8_t *frame, size_t len);

/* The one port sw_input would hand this unicast frame from port to, or
 * negative when it would drop it or flood it.
 * Counts nothing: for a caller that sends the frame another way (a
 * guest's TCP super-frame as TSO, hv/netif.c), then counts it with
 * sw_forwarded. */
int sw_unicast_port(const struct sw *sw, int port, const uint8_t *frame, size_t len);
void sw_forwarded(struct sw *sw, int from, int to, uint64_t frames, uint64_t bytes);

/* The port with that MAC, or -ENOENT. */
int sw_lookup(const struct sw *sw, const uint8_t mac[6]);

const char *sw_drop_name(enum sw_drop d);

/* Announce frames for mac, SW_ANNOUNCE_LEN bytes into buf; the gratuitous
 * ARP also says ip (host order), the guest's address if ferry knows it. */
size_t sw_announce_rarp(const uint8_t mac[6], uint8_t *buf);
size_t sw_announce_garp(const uint8_t mac[6], uint32_t ip, uint8_t *buf);
/* Milliseconds after arrival to send announce round n (0-based, growing
 * gaps: 0, 50, 150, 350, 750), or -1 past the last round. */
int sw_announce_delay_ms(unsigned int round);

#endif
