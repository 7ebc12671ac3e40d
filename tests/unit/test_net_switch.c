/* SPDX-License-Identifier: BSD-2-Clause */
/* ferry's software switch (hv/net/switch.c): forwarding by destination,
 * flooding, privacy between guests, anti-spoofing, the management
 * filter, malformed frames, and the announce frames after migration. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>
#include "hv/net/proto.h"
#include "hv/lib/bytes.h"
#include "hv/net/switch.h"

static const uint8_t GA[6] = { 0x52, 0x54, 0x00, 0, 0, 0xA };
static const uint8_t GB[6] = { 0x52, 0x54, 0x00, 0, 0, 0xB };
static const uint8_t HOST[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };	/* e1000 */
static const uint8_t PEER[6] = { 0x02, 0, 0, 0, 0, 0x77 };		/* on the LAN */
static const uint8_t BCAST[6] = { 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF };
static const uint8_t MCAST[6] = { 0x01, 0x00, 0x5E, 0, 0, 1 };

/* What each port received. */
struct sink {
	unsigned int frames;
	size_t last_len;
	uint8_t last[1600];
};

struct rig {
	struct sw sw;
	struct sink s[4];
	int ga, gb, up, local;
};

static void out_cb(void *ctx, const uint8_t *frame, size_t len)
{
	struct sink *k = ctx;

	assert_true(len <= sizeof(k->last));
	k->frames++;
	k->last_len = len;
	memcpy(k->last, frame, len);
}

static struct rig *rig_new(void)
{
	struct rig *r = calloc(1, sizeof(*r));

	sw_init(&r->sw);
	r->up = sw_add_port(&r->sw, SW_UPLINK, NULL, 0, out_cb, &r->s[0]);
	r->local = sw_add_port(&r->sw, SW_LOCAL, HOST, 0, out_cb, &r->s[1]);
	r->ga = sw_add_port(&r->sw, SW_GUEST, GA, 0, out_cb, &r->s[2]);
	r->gb = sw_add_port(&r->sw, SW_GUEST, GB, 0, out_cb, &r->s[3]);
	assert_int_equal(r->up, 0);
	assert_int_equal(r->local, 1);
	assert_int_equal(r->ga, 2);
	assert_int_equal(r->gb, 3);
	return r;
}

static size_t frame(uint8_t *f, const uint8_t *dst, const uint8_t *src, size_t len)
{
	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	put_be16(f + 12, 0x0800);
	memset(f + 14, 0x5A, len - 14);
	return len;
}

/* A broadcast ARP request from src whose sender MAC is sha. */
static void arp(uint8_t *f, const uint8_t *src, const uint8_t *sha)
{
	memset(f, 0, 60);
	frame(f, BCAST, src, 60);
	put_be16(f + 12, ETH_P_ARP);
	memset(f + ETH_HLEN, 0, 46);
	put_be16(f + ETH_HLEN + 6, 1);
	memcpy(f + ETH_HLEN + ARP_O_SHA, sha, 6);
}

/* Frames received per port: uplink, local, guest A, guest B. */
static void expect(struct rig *r, unsigned int up, unsigned int local, unsigned int a,
		   unsigned int b)
{
	assert_int_equal(r->s[0].frames, up);
	assert_int_equal(r->s[1].frames, local);
	assert_int_equal(r->s[2].frames, a);
	assert_int_equal(r->s[3].frames, b);
}

static void test_ports(void **state)
{
	struct rig *r = rig_new();
	struct sw sw;

	(void)state;
	assert_int_equal(sw_add_port(&r->sw, SW_GUEST, GA, 0, out_cb, NULL), -EEXIST);
	assert_int_equal(sw_add_port(&r->sw, SW_GUEST, HOST, 0, out_cb, NULL), -EEXIST);
	assert_int_equal(sw_add_port(&r->sw, SW_GUEST, MCAST, 0, out_cb, NULL), -EINVAL);
	assert_int_equal(sw_add_port(&r->sw, SW_GUEST, (uint8_t[6]){ 0 }, 0, out_cb, NULL),
			 -EINVAL);
	assert_int_equal(sw_add_port(&r->sw, SW_UPLINK, NULL, 0, out_cb, NULL), -EINVAL);
	assert_int_equal(sw_add_port(&r->sw, SW_LOCAL, PEER, 0, out_cb, NULL), -EINVAL);
	assert_int_equal(sw_add_port(&r->sw, SW_GUEST, PEER, 0, NULL, NULL), -EINVAL);
	assert_int_equal(sw_lookup(&r->sw, GB), r->gb);
	assert_int_equal(sw_lookup(&r->sw, PEER), -ENOENT);
	sw_init(&sw);
	for (int i = 0; i < SW_MAX_PORTS; i++) {
		uint8_t mac[6] = { 0x02, 0, 0, 0, 1, (uint8_t)i };

		assert_int_equal(sw_add_port(&sw, SW_GUEST, mac, 0, out_cb, NULL), i);
	}
	assert_int_equal(sw_add_port(&sw, SW_GUEST, PEER, 0, out_cb, NULL), -ENOSPC);
	sw_del_port(&sw, 4);
	assert_int_equal(sw_add_port(&sw, SW_GUEST, PEER, 0, out_cb, NULL), 4);
	free(r);
}

/* Unicast goes to exactly one port; the LAN's unicast for others is not
 * ours; unknown unicast from a guest goes to the wire only. */
static void test_unicast(void **state)
{
	struct rig *r = rig_new();
	uint8_t f[1600];

	(void)state;
	assert_int_equal(sw_input(&r->sw, r->ga, f, frame(f, GB, GA, 100)), 1);
	expect(r, 0, 0, 0, 1);
	assert_int_equal(r->s[3].last_len, 100);
	assert_memory_equal(r->s[3].last, f, 100);
	assert_int_equal(sw_input(&r->sw, r->ga, f, frame(f, PEER, GA, 60)), 1);
	expect(r, 1, 0, 0, 1);
	assert_int_equal(sw_input(&r->sw, r->up, f, frame(f, GA, PEER, 60)), 1);
	expect(r, 1, 0, 1, 1);
	assert_int_equal(sw_input(&r->sw, r->up, f, frame(f, HOST, PEER, 60)), 1);
	expect(r, 1, 1, 1, 1);
	/* the LAN's frame for another host (promiscuous NIC) */
	assert_int_equal(sw_input(&r->sw, r->up, f, frame(f, (uint8_t[6]){ 2, 0, 0, 0, 0, 9 },
							  PEER, 60)), -EPERM);
	assert_int_equal(r->sw.port[r->up].stats.drops[SW_DROP_NO_PORT], 1);
	/* ferry's own stack reaches guests and the wire */
	assert_int_equal(sw_input(&r->sw, r->local, f, frame(f, GB, HOST, 60)), 1);
	assert_int_equal(sw_input(&r->sw, r->local, f, frame(f, PEER, HOST, 60)), 1);
	expect(r, 2, 1, 1, 2);
	/* to itself */
	assert_int_equal(sw_input(&r->sw, r->ga, f, frame(f, GA, GA, 60)), -EPERM);
	assert_int_equal(r->sw.port[r->ga].stats.drops[SW_DROP_SELF], 1);
	assert_int_equal(r->sw.port[r->ga].stats.in_frames, 2);
	assert_int_equal(r->sw.port[r->ga].stats.out_frames, 1);
	assert_int_equal(r->sw.port[r->gb].stats.out_bytes, 160);
	free(r);
}

/* Where a unicast frame would go, asked without sending it: as sw_input
 * would send it, nothing counted until sw_forwarded says it went. */
static void test_unicast_port(void **state)
{
	struct rig *r = rig_new();
	uint8_t f[1600];

	(void)state;
	assert_int_equal(sw_unicast_port(&r->sw, r->ga, f, frame(f, PEER, GA, 60)), r->up);
	assert_int_equal(sw_unicast_port(&r->sw, r->ga, f, frame(f, GB, GA, 60)), r->gb);
	assert_int_equal(sw_unicast_port(&r->sw, r->local, f, frame(f, PEER, HOST, 60)), r->up);
	/* what sw_input would drop or flood: nowhere */
	assert_true(sw_unicast_port(&r->sw, r->ga, f, frame(f, PEER, GB, 60)) < 0);	/* spoof */
	assert_true(sw_unicast_port(&r->sw, r->ga, f, frame(f, HOST, GA, 60)) < 0);	/* mgmt */
	assert_true(sw_unicast_port(&r->sw, r->ga, f, frame(f, GA, GA, 60)) < 0);	/* self */
	assert_true(sw_unicast_port(&r->sw, r->ga, f, frame(f, BCAST, GA, 60)) < 0);
	assert_true(sw_unicast_port(&r->sw, r->ga, f, frame(f, PEER, GA, 1515)) < 0);
	assert_true(sw_unicast_port(&r->sw, r->up, f,
				    frame(f, (uint8_t[6]){ 2, 0, 0, 0, 0, 9 }, PEER, 60)) < 0);
	assert_true(sw_unicast_port(&r->sw, 9, f, frame(f, PEER, GA, 60)) < 0);
	assert_true(sw_unicast_port(&r->sw, -1, f, frame(f, PEER, GA, 60)) < 0);
	expect(r, 0, 0, 0, 0);
	for (int i = 0; i < SW_NR_DROP; i++)
		assert_int_equal(r->sw.port[r->ga].stats.drops[i], 0);
	sw_forwarded(&r->sw, r->ga, r->up, 3, 4000);
	assert_int_equal(r->sw.port[r->ga].stats.in_frames, 3);
	assert_int_equal(r->sw.port[r->ga].stats.in_bytes, 4000);
	assert_int_equal(r->sw.port[r->up].stats.out_frames, 3);
	assert_int_equal(r->sw.port[r->up].stats.out_bytes, 4000);
	/* no uplink: nowhere, and sw_input drops it as such, not as sent */
	sw_del_port(&r->sw, r->up);
	assert_true(sw_unicast_port(&r->sw, r->ga, f, frame(f, PEER, GA, 60)) < 0);
	assert_int_equal(sw_input(&r->sw, r->ga, f, frame(f, PEER, GA, 60)), -EPERM);
	assert_int_equal(r->sw.port[r->ga].stats.drops[SW_DROP_NO_UPLINK], 1);
	assert_int_equal(r->sw.port[r->ga].stats.in_frames, 3);
	assert_string_equal(sw_drop_name(SW_DROP_NO_UPLINK), "no uplink (ferry has no NIC)");
	free(r);
}

static void test_flood(void **state)
{
	struct rig *r = rig_new();
	uint8_t f[100];

	(void)state;
	/* from the wire: everyone here */
	assert_int_equal(sw_input(&r->sw, r->up, f, frame(f, BCAST, PEER, 60)), 3);
	expect(r, 0, 1, 1, 1);
	/* from a guest: the other guest and the wire, not ferry */
	assert_int_equal(sw_input(&r->sw, r->ga, f, frame(f, BCAST, GA, 60)), 2);
	expect(r, 1, 1, 1, 2);
	assert_int_equal(sw_input(&r->sw, r->gb, f, frame(f, MCAST, GB, 60)), 2);
	expect(r, 2, 1, 2, 2);
	/* from ferry */
	assert_int_equal(sw_input(&r->sw, r->local, f, frame(f, BCAST, HOST, 60)), 3);
	expect(r, 3, 1, 3, 3);
	free(r);
}

/* Management: a guest reaches ferry only with SW_F_MGMT. */
static void test_mgmt(void **state)
{
	struct rig *r = rig_new();
	uint8_t f[100];

	(void)state;
	assert_int_equal(sw_input(&r->sw, r->ga, f, frame(f, HOST, GA, 60)), -EPERM);
	expect(r, 0, 0, 0, 0);			/* not to the wire either */
	assert_int_equal(r->sw.port[r->ga].stats.drops[SW_DROP_MGMT], 1);
	assert_int_equal(sw_set_flags(&r->sw, r->ga, SW_F_MGMT), 0);
	assert_int_equal(sw_input(&r->sw, r->ga, f, frame(f, HOST, GA, 60)), 1);
	assert_int_equal(sw_input(&r->sw, r->ga, f, frame(f, BCAST, GA, 60)), 3);
	expect(r, 1, 2, 0, 1);
	assert_int_equal(sw_set_flags(&r->sw, r->up, SW_F_MGMT), -EINVAL);
	assert_int_equal(sw_set_flags(&r->sw, 9, SW_F_MGMT), -EINVAL);
	free(r);
}

static void test_spoof(void **state)
{
	struct rig *r = rig_new();
	uint8_t f[100];

	(void)state;
	/* guest A as guest B, as ferry, as a LAN host */
	assert_int_equal(sw_input(&r->sw, r->ga, f, frame(f, PEER, GB, 60)), -EPERM);
	assert_int_equal(sw_input(&r->sw, r->ga, f, frame(f, BCAST, HOST, 60)), -EPERM);
	assert_int_equal(sw_input(&r->sw, r->ga, f, frame(f, GB, PEER, 60)), -EPERM);
	assert_int_equal(r->sw.port[r->ga].stats.drops[SW_DROP_SPOOF], 3);
	/* guest A's own frame whose ARP speaks for guest B's MAC, or is cut
	 * short before the sender's address; its own ARP goes out */
	arp(f, GA, GB);
	assert_int_equal(sw_input(&r->sw, r->ga, f, 60), -EPERM);
	assert_int_equal(sw_input(&r->sw, r->ga, f, ETH_HLEN + ARP_LEN - 1), -EPERM);
	assert_int_equal(r->sw.port[r->ga].stats.drops[SW_DROP_ARP_SPOOF], 2);
	arp(f, GA, GA);
	assert_int_equal(sw_input(&r->sw, r->ga, f, 60), 2);
	r->s[0].frames = r->s[3].frames = 0;
	/* the wire posing as guest B (or our own frame looped back) */
	assert_int_equal(sw_input(&r->sw, r->up, f, frame(f, GA, GB, 60)), -EPERM);
	assert_int_equal(r->sw.port[r->up].stats.drops[SW_DROP_LOOP], 1);
	/* multicast or zero sources */
	assert_int_equal(sw_input(&r->sw, r->up, f, frame(f, GA, MCAST, 60)), -EPERM);
	assert_int_equal(sw_input(&r->sw, r->up, f, frame(f, GA, (uint8_t[6]){ 0 }, 60)), -EPERM);
	assert_int_equal(r->sw.port[r->up].stats.drops[SW_DROP_BAD_SRC], 2);
	expect(r, 0, 0, 0, 0);
	assert_int_equal(r->sw.port[r->ga].stats.in_frames, 1);	/* its own ARP */
	free(r);
}

/* An IPv6 neighbour-discovery message from src (type, with an option of
 * kind opt carrying lla), behind `ext` hop-by-hop headers; its length. */
static size_t nd(uint8_t *f, const uint8_t *src, uint8_t type, uint8_t opt, const uint8_t *lla,
		 unsigned int ext)
{
	size_t fixed = type == 133 ? 8 : type == 134 ? 16 : type == 137 ? 40 : 24;
	size_t at = ETH_HLEN + 40, plen;

	memset(f, 0, 200);
	memcpy(f, MCAST, 6);
	memcpy(f + 6, src, 6);
	put_be16(f + 12, 0x86dd);
	f[ETH_HLEN] = 0x60;
	f[ETH_HLEN + 6] = ext ? 0 : 58;
	f[ETH_HLEN + 7] = 255;
	for (unsigned int i = 0; i < ext; i++, at += 8)
		f[at] = i + 1 < ext ? 0 : 58;		/* next header; length 0: 8 bytes */
	f[at] = type;
	at += fixed;
	f[at] = opt;
	f[at + 1] = 1;					/* 8 bytes */
	memcpy(f + at + 2, lla, 6);
	at += 8;
	plen = at - ETH_HLEN - 40;
	put_be16(f + ETH_HLEN + 4, (uint16_t)plen);
	return at;
}

/* IPv6 neighbour discovery speaks for the guest's own MAC only, as ARP
 * does: a solicitation, an advertisement or a redirect for another's is
 * dropped, even behind extension headers, and ND in a fragment at all. */
static void test_nd_spoof(void **state)
{
	struct rig *r = rig_new();
	uint8_t f[200];
	size_t n;

	(void)state;
	assert_int_equal(sw_input(&r->sw, r->ga, f, nd(f, GA, 135, 1, GA, 0)), 2);	/* NS, own */
	assert_int_equal(sw_input(&r->sw, r->ga, f, nd(f, GA, 136, 2, GA, 0)), 2);	/* NA, own */
	assert_int_equal(sw_input(&r->sw, r->ga, f, nd(f, GA, 134, 1, GA, 2)), 2);	/* RA */
	assert_int_equal(sw_input(&r->sw, r->ga, f, nd(f, GA, 137, 2, GA, 0)), 2);	/* redirect */
	assert_int_equal(sw_input(&r->sw, r->ga, f, nd(f, GA, 136, 2, GB, 0)), -EPERM);
	assert_int_equal(sw_input(&r->sw, r->ga, f, nd(f, GA, 135, 1, HOST, 0)), -EPERM);
	assert_int_equal(sw_input(&r->sw, r->ga, f, nd(f, GA, 133, 1, GB, 3)), -EPERM);
	assert_int_equal(sw_input(&r->sw, r->ga, f, nd(f, GA, 137, 2, GB, 0)), -EPERM);
	/* behind a fragment header (its own MAC, even): an atomic fragment,
	 * a first fragment; a later one has no ICMPv6 header to judge */
	n = nd(f, GA, 135, 1, GA, 1);
	f[ETH_HLEN + 6] = 44;
	assert_int_equal(sw_input(&r->sw, r->ga, f, n), -EPERM);
	f[ETH_HLEN + 40 + 3] = 1;					/* M */
	assert_int_equal(sw_input(&r->sw, r->ga, f, n), -EPERM);
	put_be16(f + ETH_HLEN + 40 + 2, 185 << 3);			/* offset 1480 */
	assert_int_equal(sw_input(&r->sw, r->ga, f, n), 2);
	/* a fragmented ICMPv6 that is not ND (an echo request) goes */
	n = nd(f, GA, 128, 1, GB, 1);
	f[ETH_HLEN + 6] = 44;
	f[ETH_HLEN + 40 + 3] = 1;
	assert_int_equal(sw_input(&r->sw, r->ga, f, n), 2);
	/* an option running past the packet, a zero-length option */
	n = nd(f, GA, 135, 1, GA, 0);
	f[n - 7] = 2;
	assert_int_equal(sw_input(&r->sw, r->ga, f, n), -EPERM);
	f[n - 7] = 0;
	assert_int_equal(sw_input(&r->sw, r->ga, f, n), -EPERM);
	/* padding after the packet is not read as options */
	n = nd(f, GA, 135, 1, GA, 0);
	memset(f + n, 0x01, 20);
	assert_int_equal(sw_input(&r->sw, r->ga, f, n + 20), 2);
	assert_int_equal(r->sw.port[r->ga].stats.drops[SW_DROP_ND_SPOOF], 8);
	assert_string_equal(sw_drop_name(SW_DROP_ND_SPOOF), "neighbour discovery for another MAC");
	/* (a guest's flood reaches the wire and the other guest, not ferry)
	 * from the wire, nothing is checked: the LAN's hosts speak for themselves */
	assert_int_equal(sw_input(&r->sw, r->up, f, nd(f, PEER, 136, 2, GB, 0)), 3);
	free(r);
}

/* A guest that says it is ferry's IPv4 address, by gratuitous ARP or as
 * an IPv4 source, would draw the LAN's traffic for ferry: dropped once
 * the switch knows the address; anything else still goes. */
static void test_local_ip(void **state)
{
	const uint32_t ferry = 0xC0A80A02, a = 0xC0A80A0A;	/* 192.168.10.2, .10 */
	struct rig *r = rig_new();
	uint8_t f[100];

	(void)state;
	arp(f, GA, GA);
	put_be32(f + ETH_HLEN + ARP_O_SPA, ferry);
	assert_int_equal(sw_input(&r->sw, r->ga, f, 60), 2);	/* not known yet */
	sw_set_local_ip(&r->sw, ferry);
	assert_int_equal(sw_input(&r->sw, r->ga, f, 60), -EPERM);
	frame(f, PEER, GA, 60);
	put_be32(f + ETH_HLEN + 12, ferry);			/* IPv4 source */
	assert_int_equal(sw_input(&r->sw, r->ga, f, 60), -EPERM);
	assert_true(sw_unicast_port(&r->sw, r->ga, f, 60) < 0);
	assert_int_equal(r->sw.port[r->ga].stats.drops[SW_DROP_IP_SPOOF], 2);
	assert_string_equal(sw_drop_name(SW_DROP_IP_SPOOF), "from ferry's own IP address");
	expect(r, 1, 0, 0, 1);
	/* its own address; a probe for ferry's (sender 0); ferry's as the
	 * destination; another guest's IPv4; ferry's own frames */
	put_be32(f + ETH_HLEN + 12, a);
	put_be32(f + ETH_HLEN + 16, ferry);
	assert_int_equal(sw_input(&r->sw, r->ga, f, 60), 1);
	arp(f, GA, GA);
	put_be32(f + ETH_HLEN + ARP_O_SPA, a);
	assert_int_equal(sw_input(&r->sw, r->ga, f, 60), 2);
	put_be32(f + ETH_HLEN + ARP_O_SPA, 0);
	put_be32(f + ETH_HLEN + ARP_O_TPA, ferry);
	assert_int_equal(sw_input(&r->sw, r->ga, f, 60), 2);
	frame(f, GA, GB, 60);
	put_be32(f + ETH_HLEN + 12, a + 1);
	assert_int_equal(sw_input(&r->sw, r->gb, f, 60), 1);
	arp(f, HOST, HOST);
	put_be32(f + ETH_HLEN + ARP_O_SPA, ferry);
	assert_int_equal(sw_input(&r->sw, r->local, f, 60), 3);
	assert_int_equal(r->sw.port[r->ga].stats.drops[SW_DROP_IP_SPOOF], 2);
	sw_set_local_ip(&r->sw, 0);
	arp(f, GA, GA);
	put_be32(f + ETH_HLEN + ARP_O_SPA, ferry);
	assert_int_equal(sw_input(&r->sw, r->ga, f, 60), 2);
	free(r);
}

/* Frames for the link itself go nowhere, from a guest (the LAN's switch
 * would take them as ferry's) or from the wire (not the guests'): by
 * destination, and by EtherType whatever the destination. */
static void test_link_control(void **state)
{
	static const uint8_t dst[][6] = {
		{ 0x01, 0x80, 0xC2, 0, 0, 0x00 },	/* STP */
		{ 0x01, 0x80, 0xC2, 0, 0, 0x01 },	/* PAUSE */
		{ 0x01, 0x80, 0xC2, 0, 0, 0x02 },	/* LACP */
		{ 0x01, 0x80, 0xC2, 0, 0, 0x03 },	/* 802.1X */
		{ 0x01, 0x80, 0xC2, 0, 0, 0x0E },	/* LLDP */
		{ 0x01, 0x80, 0xC2, 0, 0, 0x0F },
		{ 0x01, 0x00, 0x0C, 0xCC, 0xCC, 0xCC },	/* CDP, DTP */
		{ 0x01, 0x00, 0x0C, 0xCC, 0xCC, 0xCD },	/* PVST+ */
	};
	static const uint16_t type[] = { 0x8808, 0x8809, 0x888e, 0x88cc };
	struct rig *r = rig_new();
	uint8_t f[100];
	unsigned int n = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(dst) / sizeof(dst[0]); i++, n++) {
		assert_int_equal(sw_input(&r->sw, r->ga, f, frame(f, dst[i], GA, 60)), -EPERM);
		assert_int_equal(sw_input(&r->sw, r->up, f, frame(f, dst[i], PEER, 60)), -EPERM);
	}
	for (size_t i = 0; i < sizeof(type) / sizeof(type[0]); i++, n++) {
		frame(f, PEER, GA, 60);
		put_be16(f + 12, type[i]);
		assert_int_equal(sw_input(&r->sw, r->ga, f, 60), -EPERM);
		assert_true(sw_unicast_port(&r->sw, r->ga, f, 60) < 0);
		frame(f, GA, PEER, 60);
		put_be16(f + 12, type[i]);
		assert_int_equal(sw_input(&r->sw, r->up, f, 60), -EPERM);
	}
	expect(r, 0, 0, 0, 0);
	assert_int_equal(r->sw.port[r->ga].stats.drops[SW_DROP_LINK_CONTROL], n);
	assert_int_equal(r->sw.port[r->up].stats.drops[SW_DROP_LINK_CONTROL], n);
	assert_string_equal(sw_drop_name(SW_DROP_LINK_CONTROL),
			    "link control (STP, PAUSE, LACP, 802.1X, LLDP)");
	/* the neighbours of the block are ordinary multicast */
	assert_int_equal(sw_input(&r->sw, r->ga, f,
				  frame(f, (uint8_t[6]){ 0x01, 0x80, 0xC2, 0, 0, 0x10 }, GA, 60)), 2);
	assert_int_equal(sw_input(&r->sw, r->up, f,
				  frame(f, (uint8_t[6]){ 0x01, 0x80, 0xC2, 0, 0, 0x21 }, PEER, 60)), 3);
	free(r);
}

static void test_malformed(void **state)
{
	struct rig *r = rig_new();
	uint8_t f[1600];

	(void)state;
	frame(f, BCAST, GA, 1600);
	assert_int_equal(sw_input(&r->sw, r->ga, f, 13), -EPERM);
	assert_int_equal(sw_input(&r->sw, r->ga, f, 0), -EPERM);
	assert_int_equal(r->sw.port[r->ga].stats.drops[SW_DROP_RUNT], 2);
	assert_int_equal(sw_input(&r->sw, r->ga, f, 1515), -EPERM);
	assert_int_equal(sw_input(&r->sw, r->ga, f, 1514), 2);
	assert_int_equal(r->sw.port[r->ga].stats.drops[SW_DROP_OVERSIZE], 1);
	/* a guest's tagged frames (802.1Q, 802.1ad) would hop VLANs */
	put_be16(f + 12, 0x8100);
	assert_int_equal(sw_input(&r->sw, r->ga, f, 1518), -EPERM);
	assert_int_equal(sw_input(&r->sw, r->ga, f, 60), -EPERM);
	put_be16(f + 12, 0x88a8);
	assert_int_equal(sw_input(&r->sw, r->ga, f, 60), -EPERM);
	assert_int_equal(r->sw.port[r->ga].stats.drops[SW_DROP_TAGGED], 3);
	/* from the wire, tagged: four more bytes, and another VLAN's, whose
	 * broadcast or unicast for a guest's MAC is not for guests */
	frame(f, BCAST, PEER, 1600);
	put_be16(f + 12, 0x8100);
	assert_int_equal(sw_input(&r->sw, r->up, f, 1519), -EPERM);
	assert_int_equal(r->sw.port[r->up].stats.drops[SW_DROP_OVERSIZE], 1);
	assert_int_equal(sw_input(&r->sw, r->up, f, 1518), -EPERM);
	memcpy(f, GA, 6);
	assert_int_equal(sw_input(&r->sw, r->up, f, 60), -EPERM);
	put_be16(f + 12, 0x88a8);
	assert_int_equal(sw_input(&r->sw, r->up, f, 60), -EPERM);
	assert_int_equal(r->sw.port[r->up].stats.drops[SW_DROP_TAGGED], 3);
	assert_int_equal(sw_input(&r->sw, 7, f, 60), -EINVAL);
	assert_int_equal(sw_input(&r->sw, -1, f, 60), -EINVAL);
	assert_int_equal(sw_input(&r->sw, SW_MAX_PORTS, f, 60), -EINVAL);
	expect(r, 1, 0, 0, 1);
	free(r);
}

/* A guest moves away: its port goes, frames for it go to the wire, and
 * its MAC is free for the port of a guest that arrives. */
static void test_move(void **state)
{
	struct rig *r = rig_new();
	uint8_t f[100];

	(void)state;
	sw_del_port(&r->sw, r->gb);
	assert_int_equal(sw_input(&r->sw, r->ga, f, frame(f, GB, GA, 60)), 1);
	expect(r, 1, 0, 0, 0);
	assert_int_equal(sw_input(&r->sw, r->up, f, frame(f, GA, GB, 60)), 1);
	expect(r, 1, 0, 1, 0);
	assert_int_equal(sw_add_port(&r->sw, SW_GUEST, GB, 0, out_cb, &r->s[3]), r->gb);
	assert_int_equal(sw_input(&r->sw, r->ga, f, frame(f, GB, GA, 60)), 1);
	expect(r, 1, 0, 1, 1);
	free(r);
}

static void test_announce(void **state)
{
	uint8_t buf[SW_ANNOUNCE_LEN + 4];
	struct rig *r = rig_new();

	(void)state;
	memset(buf, 0xEE, sizeof(buf));
	assert_int_equal(sw_announce_rarp(GA, buf), 60);
	assert_memory_equal(buf, BCAST, 6);
	assert_memory_equal(buf + 6, GA, 6);
	assert_int_equal(get_be16(buf + 12), 0x8035);
	assert_int_equal(get_be16(buf + 14), 1);		/* Ethernet */
	assert_int_equal(get_be16(buf + 16), 0x0800);
	assert_int_equal(buf[18], 6);
	assert_int_equal(buf[19], 4);
	assert_int_equal(get_be16(buf + 20), 3);		/* reverse request */
	assert_memory_equal(buf + 22, GA, 6);
	assert_memory_equal(buf + 32, GA, 6);
	assert_int_equal(get_be32(buf + 28), 0);
	assert_int_equal(buf[59], 0);
	assert_int_equal(buf[60], 0xEE);
	/* the guest's port may send it: its own source */
	assert_int_equal(sw_input(&r->sw, r->ga, buf, 60), 3 - 1);
	assert_int_equal(sw_announce_garp(GB, 0x0A000205, buf), 60);
	assert_int_equal(get_be16(buf + 12), 0x0806);
	assert_int_equal(get_be16(buf + 20), 1);
	assert_int_equal(get_be32(buf + 28), 0x0A000205);
	assert_int_equal(get_be32(buf + 38), 0x0A000205);
	assert_memory_equal(buf + 32, (uint8_t[6]){ 0 }, 6);
	assert_int_equal(sw_announce_delay_ms(0), 0);
	assert_int_equal(sw_announce_delay_ms(1), 50);
	assert_int_equal(sw_announce_delay_ms(4), 750);
	assert_int_equal(sw_announce_delay_ms(5), -1);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ports),
		cmocka_unit_test(test_unicast),
		cmocka_unit_test(test_unicast_port),
		cmocka_unit_test(test_flood),
		cmocka_unit_test(test_mgmt),
		cmocka_unit_test(test_spoof),
		cmocka_unit_test(test_nd_spoof),
		cmocka_unit_test(test_local_ip),
		cmocka_unit_test(test_link_control),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_move),
		cmocka_unit_test(test_announce),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
