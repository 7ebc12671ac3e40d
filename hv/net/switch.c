/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ferry's software Ethernet switch: see switch.h.  sw_input checks the
 * frame against its source port, then delivers it to one port or floods.
 */
#include <errno.h>
#include <string.h>
#include "hv/net/proto.h"
#include "hv/net/switch.h"

#define ETH_P_RARP	0x8035
#define ETH_P_8021Q	0x8100
#define ETH_P_8021AD	0x88a8		/* 802.1ad (QinQ) outer tag */
#define VLAN_HLEN	4
#define RARP_OP_REQUEST	3		/* RFC 903: request reverse */
#define ETH_P_IPV6	0x86dd
#define IP6_HLEN	40
#define IP6_NH_ICMP6	58
#define ND_FIRST	133		/* router solicitation .. redirect (RFC 4861) */
#define ND_NA		136		/* neighbour advertisement */
#define ND_REDIRECT	137
#define ND_OPT_SLLA	1
#define ND_OPT_TLLA	2
#define IP6_EXT_MAX	8		/* extension headers looked through */
#define IP6_NH_FRAG	44		/* fragment header */
#define ETH_P_PAUSE	0x8808		/* 802.3 MAC Control (PAUSE, PFC) */
#define ETH_P_SLOW	0x8809		/* LACP, marker, OAM */
#define ETH_P_EAPOL	0x888e		/* 802.1X */
#define ETH_P_LLDP	0x88cc

static bool ip6_ext(uint8_t nh)
{
	return nh == 0 || nh == 43 || nh == 60 || nh == IP6_NH_FRAG;
}

/* The ICMPv6 message of an IPv6 packet at p (len bytes) past hop-by-hop,
 * routing and destination options and a first fragment's header (*frag
 * then): its offset, 0 when it carries none (another protocol, or a
 * later fragment, which has no headers of its own), or -1 when it is cut
 * short. */
static long icmp6_at(const uint8_t *p, size_t len, bool *frag)
{
	size_t off = IP6_HLEN;
	uint8_t nh;

	*frag = false;
	if (len < IP6_HLEN)
		return -1;
	nh = p[6];
	for (int i = 0; i < IP6_EXT_MAX && ip6_ext(nh); i++) {
		bool is_frag = nh == IP6_NH_FRAG;	/* 8 bytes, no length field */

		if (off + (is_frag ? 8 : 2) > len)
			return -1;
		if (is_frag && (get_be16(p + off + 2) & 0xfff8))
			return 0;			/* a fragment offset */
		*frag |= is_frag;
		nh = p[off];
		off += is_frag ? 8 : ((size_t)p[off + 1] + 1) * 8;
	}
	if (nh != IP6_NH_ICMP6)
		return ip6_ext(nh) ? -1 : 0;	/* too many: no say */
	return off + 4 <= len ? (long)off : -1;
}

/* Whether a neighbour-discovery message in an IPv6 packet from a guest
 * speaks only for its own MAC: its source link-layer address option and
 * the target link-layer address of a neighbour advertisement or a
 * redirect (which fills the receiver's neighbour cache for the target
 * as well) must be mac.  ND in a fragment is refused whole (RFC 6980:
 * never sent so; a host that takes it, and a filter that looks only at
 * unfragmented packets, are how spoofed ND gets through). */
static bool nd_ok(const uint8_t *p, size_t len, const uint8_t *mac)
{
	long at;
	size_t off;
	uint8_t type;
	bool frag;

	if (len >= IP6_HLEN && IP6_HLEN + (size_t)get_be16(p + 4) < len)
		len = IP6_HLEN + get_be16(p + 4);	/* the packet, not the padding */
	at = icmp6_at(p, len, &frag);
	if (at <= 0)
		return at == 0;
	type = p[at];
	if (type < ND_FIRST || type > ND_REDIRECT)
		return true;
	if (frag)
		return false;
	/* the options follow the fixed part: 8 (RS), 16 (RA), 24 (NS, NA),
	 * 40 (redirect) bytes */
	off = (size_t)at + (type == 133 ? 8 : type == 134 ? 16 : type == ND_REDIRECT ? 40 : 24);
	while (off + 2 <= len) {
		size_t olen = (size_t)p[off + 1] * 8;

		if (!olen || off + olen > len)
			return false;
		if ((p[off] == ND_OPT_SLLA ||
		     (p[off] == ND_OPT_TLLA && (type == ND_NA || type == ND_REDIRECT))) &&
		    (olen < 8 || memcmp(p + off + 2, mac, ETH_ALEN)))
			return false;
		off += olen;
	}
	return true;
}

/*
 * Whether a frame speaks to the link itself rather than through it: a
 * destination in 802.1D's reserved block 01:80:C2:00:00:00-0F (STP BPDUs,
 * PAUSE, LACP, 802.1X, LLDP), Cisco's 01:00:0C:CC:CC:CC/CD (CDP, DTP,
 * VTP; PVST+ BPDUs), or those protocols' EtherTypes.  No bridge forwards
 * them (Linux's bridge: group_fwd_mask 0, PAUSE never): the LAN's switch
 * would take them as ferry's own, and one BPDU (BPDU guard), PAUSE,
 * EAPOL-Logoff or DTP offer can shut ferry's port or turn it into a trunk.
 */
static bool link_control(const uint8_t *f, uint16_t type)
{
	static const uint8_t ieee[5] = { 0x01, 0x80, 0xC2, 0x00, 0x00 };
	static const uint8_t cisco[5] = { 0x01, 0x00, 0x0C, 0xCC, 0xCC };

	if (!memcmp(f + ETH_O_DST, ieee, 5) && f[ETH_O_DST + 5] <= 0x0F)
		return true;
	if (!memcmp(f + ETH_O_DST, cisco, 5) && (f[ETH_O_DST + 5] & 0xFE) == 0xCC)
		return true;
	return type == ETH_P_PAUSE || type == ETH_P_SLOW || type == ETH_P_EAPOL ||
	       type == ETH_P_LLDP;
}

static const char *const drop_names[SW_NR_DROP] = {
	[SW_DROP_RUNT] = "runt",
	[SW_DROP_OVERSIZE] = "oversize",
	[SW_DROP_BAD_SRC] = "bad source",
	[SW_DROP_SPOOF] = "spoofed source",
	[SW_DROP_MGMT] = "management denied",
	[SW_DROP_NO_PORT] = "no such port",
	[SW_DROP_LOOP] = "looped back",
	[SW_DROP_SELF] = "to itself",
	[SW_DROP_NO_UPLINK] = "no uplink (ferry has no NIC)",
	[SW_DROP_TAGGED] = "VLAN-tagged",
	[SW_DROP_ARP_SPOOF] = "ARP with another sender MAC",
	[SW_DROP_ND_SPOOF] = "neighbour discovery for another MAC",
	[SW_DROP_LINK_CONTROL] = "link control (STP, PAUSE, LACP, 802.1X, LLDP)",
	[SW_DROP_IP_SPOOF] = "from ferry's own IP address",
};

const char *sw_drop_name(enum sw_drop d)
{
	return (unsigned int)d < SW_NR_DROP ? drop_names[d] : "?";
}

static bool is_multicast(const uint8_t *mac)
{
	return mac[0] & 1;
}

static bool is_zero(const uint8_t *mac)
{
	return !(mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5]);
}

void sw_init(struct sw *sw)
{
	memset(sw, 0, sizeof(*sw));
}

int sw_lookup(const struct sw *sw, const uint8_t mac[6])
{
	for (int i = 0; i < SW_MAX_PORTS; i++) {
		const struct sw_port *p = &sw->port[i];

		if (p->used && p->kind != SW_UPLINK && !memcmp(p->mac, mac, ETH_ALEN))
			return i;
	}
	return -ENOENT;
}

/* The awake port with this MAC: where frames for it go, or from where
 * frames with it as source may only come. */
static int fwd_lookup(const struct sw *sw, const uint8_t mac[6])
{
	int i = sw_lookup(sw, mac);

	return i >= 0 && sw->port[i].dormant ? -ENOENT : i;
}

static int find_kind(const struct sw *sw, enum sw_kind kind)
{
	for (int i = 0; i < SW_MAX_PORTS; i++)
		if (sw->port[i].used && sw->port[i].kind == kind)
			return i;
	return -ENOENT;
}

static int free_port(const struct sw *sw)
{
	for (int i = 0; i < SW_MAX_PORTS; i++)
		if (!sw->port[i].used)
			return i;
	return -ENOSPC;
}

int sw_add_port(struct sw *sw, enum sw_kind kind, const uint8_t mac[6], uint8_t flags,
		void (*out)(void *ctx, const uint8_t *frame, size_t len), void *ctx)
{
	bool has_mac = kind != SW_UPLINK;
	int i;

	if (!out || kind > SW_LOCAL || (kind != SW_GUEST && find_kind(sw, kind) >= 0))
		return -EINVAL;
	if (has_mac && (is_multicast(mac) || is_zero(mac)))
		return -EINVAL;
	if (has_mac && sw_lookup(sw, mac) >= 0)
		return -EEXIST;
	i = free_port(sw);
	if (i < 0)
		return i;
	memset(&sw->port[i], 0, sizeof(sw->port[i]));
	sw->port[i].used = true;
	sw->port[i].kind = (uint8_t)kind;
	sw->port[i].flags = kind == SW_GUEST ? flags : 0;
	if (has_mac)
		memcpy(sw->port[i].mac, mac, ETH_ALEN);
	sw->port[i].out = out;
	sw->port[i].ctx = ctx;
	return i;
}

void sw_del_port(struct sw *sw, int port)
{
	if (port >= 0 && port < SW_MAX_PORTS)
		memset(&sw->port[port], 0, sizeof(sw->port[port]));
}

static struct sw_port *guest_port(struct sw *sw, int port)
{
	if (port < 0 || port >= SW_MAX_PORTS || !sw->port[port].used ||
	    sw->port[port].kind != SW_GUEST)
		return NULL;
	return &sw->port[port];
}

int sw_set_dormant(struct sw *sw, int port, bool dormant)
{
	struct sw_port *p = guest_port(sw, port);

	if (!p)
		return -EINVAL;
	p->dormant = dormant;
	return 0;
}

int sw_set_flags(struct sw *sw, int port, uint8_t flags)
{
	struct sw_port *p = guest_port(sw, port);

	if (!p)
		return -EINVAL;
	p->flags = flags;
	return 0;
}

void sw_set_local_ip(struct sw *sw, uint32_t ip)
{
	sw->local_ip = ip;
}

/* ---- forwarding --------------------------------------------------------- */

/* Whether a guest's ARP or IPv4 packet (type, at p, len bytes) says it
 * comes from ferry's own address: a gratuitous ARP so would send the LAN's
 * traffic for ferry to the guest.  An ARP probe (sender 0) does not. */
static bool from_local_ip(const struct sw *sw, uint16_t type, const uint8_t *p, size_t len)
{
	if (!sw->local_ip)
		return false;
	if (type == ETH_P_ARP)
		return len >= ARP_LEN && get_be32(p + ARP_O_SPA) == sw->local_ip;
	return type == ETH_P_IP && len >= 20 && get_be32(p + 12) == sw->local_ip;
}

/* What is wrong with a frame from src, or SW_NR_DROP if nothing is. */
static enum sw_drop check(const struct sw *sw, const struct sw_port *src,
			  const uint8_t *f, size_t len)
{
	size_t max = ETH_FRAME_MAX;
	uint16_t type;

	if (len < ETH_HLEN)
		return SW_DROP_RUNT;
	type = get_be16(f + ETH_O_TYPE);
	if (type == ETH_P_8021Q)
		max += VLAN_HLEN;
	if (len > max)
		return SW_DROP_OVERSIZE;
	if (is_multicast(f + ETH_O_SRC) || is_zero(f + ETH_O_SRC))
		return SW_DROP_BAD_SRC;
	if (link_control(f, type))
		return SW_DROP_LINK_CONTROL;	/* from anyone: to no one */
	/* Guests (and ferry) are on one untagged LAN: a guest's tag would hop
	 * into another VLAN where the NIC's port is a trunk, and a tagged
	 * frame from the wire is another VLAN's (its broadcasts are not for
	 * the guests to see). */
	if (type == ETH_P_8021Q || type == ETH_P_8021AD)
		return SW_DROP_TAGGED;
	if (src->kind == SW_UPLINK)
		return fwd_lookup(sw, f + ETH_O_SRC) >= 0 ? SW_DROP_LOOP : SW_NR_DROP;
	if (memcmp(f + ETH_O_SRC, src->mac, ETH_ALEN))
		return SW_DROP_SPOOF;
	/* A guest's ARP speaks for its own MAC only, and not for ferry's IP,
	 * or it could draw another host's traffic to itself. */
	if (src->kind != SW_GUEST)
		return SW_NR_DROP;
	if (type == ETH_P_ARP &&
	    (len < ETH_HLEN + ARP_LEN || memcmp(f + ETH_HLEN + ARP_O_SHA, src->mac, ETH_ALEN)))
		return SW_DROP_ARP_SPOOF;
	if (type == ETH_P_IPV6 && !nd_ok(f + ETH_HLEN, len - ETH_HLEN, src->mac))
		return SW_DROP_ND_SPOOF;
	if (from_local_ip(sw, type, f + ETH_HLEN, len - ETH_HLEN))
		return SW_DROP_IP_SPOOF;
	return SW_NR_DROP;
}

/* Whether a frame from src may be handed to dst at all. */
static bool may_reach(const struct sw_port *src, const struct sw_port *dst)
{
	if (dst->kind != SW_LOCAL || src->kind != SW_GUEST)
		return true;
	return src->flags & SW_F_MGMT;
}

static void deliver(struct sw_port *dst, const uint8_t *f, size_t len)
{
	dst->stats.out_frames++;
	dst->stats.out_bytes += len;
	dst->out(dst->ctx, f, len);
}

static int flood(struct sw *sw, int from, const uint8_t *f, size_t len)
{
	int n = 0;

	for (int i = 0; i < SW_MAX_PORTS; i++) {
		struct sw_port *p = &sw->port[i];

		if (i == from || !p->used || p->dormant || !may_reach(&sw->port[from], p))
			continue;
		deliver(p, f, len);
		n++;
	}
	return n;
}

/* Where unicast from `from` goes: the port with the destination MAC, else
 * the uplink; negative with *why when it may not go (-ENOENT: there is no
 * uplink). */
static int route(const struct sw *sw, int from, const uint8_t *f, enum sw_drop *why)
{
	const struct sw_port *src = &sw->port[from];
	int to = fwd_lookup(sw, f + ETH_O_DST);

	if (to < 0 && src->kind == SW_UPLINK) {
		*why = SW_DROP_NO_PORT;
		return -EPERM;
	}
	if (to < 0)
		to = find_kind(sw, SW_UPLINK);
	if (to == from) {
		*why = SW_DROP_SELF;
		return -EPERM;
	}
	if (to < 0) {
		*why = SW_DROP_NO_UPLINK;	/* for the wire, and ferry has no NIC */
		return -ENOENT;
	}
	if (!may_reach(src, &sw->port[to])) {
		*why = SW_DROP_MGMT;
		return -EPERM;
	}
	return to;
}

static int unicast(struct sw *sw, int from, const uint8_t *f, size_t len, enum sw_drop *why)
{
	int to = route(sw, from, f, why);

	if (to < 0)
		return -EPERM;
	deliver(&sw->port[to], f, len);
	return 1;
}

int sw_unicast_port(const struct sw *sw, int port, const uint8_t *frame, size_t len)
{
	enum sw_drop why;

	if (port < 0 || port >= SW_MAX_PORTS || !sw->port[port].used || sw->port[port].dormant ||
	    check(sw, &sw->port[port], frame, len) != SW_NR_DROP ||
	    is_multicast(frame + ETH_O_DST))
		return -1;
	return route(sw, port, frame, &why);
}

void sw_forwarded(struct sw *sw, int from, int to, uint64_t frames, uint64_t bytes)
{
	sw->port[from].stats.in_frames += frames;
	sw->port[from].stats.in_bytes += bytes;
	sw->port[to].stats.out_frames += frames;
	sw->port[to].stats.out_bytes += bytes;
}

int sw_input(struct sw *sw, int port, const uint8_t *frame, size_t len)
{
	struct sw_port *src;
	enum sw_drop why;
	int n = -EPERM;

	if (port < 0 || port >= SW_MAX_PORTS || !sw->port[port].used)
		return -EINVAL;
	src = &sw->port[port];
	if (src->dormant)
		return -EINVAL;		/* its guest runs elsewhere yet */
	why = check(sw, src, frame, len);
	if (why == SW_NR_DROP && is_multicast(frame + ETH_O_DST))
		n = flood(sw, port, frame, len);
	else if (why == SW_NR_DROP)
		n = unicast(sw, port, frame, len, &why);
	if (n < 0) {
		src->stats.drops[why]++;
		return n;
	}
	src->stats.in_frames++;
	src->stats.in_bytes += len;
	return n;
}

/* ---- announce after migration ------------------------------------------- */

/* The Ethernet/ARP frame both announces share: broadcast, ARP layout. */
static size_t announce(const uint8_t mac[6], uint16_t type, uint16_t op, uint32_t ip,
		       const uint8_t *tha, uint8_t *buf)
{
	uint8_t *a = buf + ETH_HLEN;

	memset(buf, 0, SW_ANNOUNCE_LEN);
	memset(buf + ETH_O_DST, 0xFF, ETH_ALEN);
	memcpy(buf + ETH_O_SRC, mac, ETH_ALEN);
	put_be16(buf + ETH_O_TYPE, type);
	put_be16(a + ARP_O_HTYPE, ARP_HTYPE_ETH);
	put_be16(a + ARP_O_PTYPE, ETH_P_IP);
	a[ARP_O_HLEN] = ETH_ALEN;
	a[ARP_O_PLEN] = 4;
	put_be16(a + ARP_O_OP, op);
	memcpy(a + ARP_O_SHA, mac, ETH_ALEN);
	put_be32(a + ARP_O_SPA, ip);
	memcpy(a + ARP_O_THA, tha, ETH_ALEN);
	put_be32(a + ARP_O_TPA, ip);
	return SW_ANNOUNCE_LEN;
}

size_t sw_announce_rarp(const uint8_t mac[6], uint8_t *buf)
{
	return announce(mac, ETH_P_RARP, RARP_OP_REQUEST, 0, mac, buf);
}

size_t sw_announce_garp(const uint8_t mac[6], uint32_t ip, uint8_t *buf)
{
	static const uint8_t zero[ETH_ALEN];

	return announce(mac, ETH_P_ARP, ARP_OP_REQUEST, ip, zero, buf);
}

int sw_announce_delay_ms(unsigned int round)
{
	if (round >= SW_ANNOUNCE_ROUNDS)
		return -1;
	return round ? 50 * ((1 << round) - 1) : 0;	/* 0, 50, 150, 350, 750 */
}
