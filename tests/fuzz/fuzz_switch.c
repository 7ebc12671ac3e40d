/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target: ferry's software switch (hv/net/switch.c) against
 * hostile frames from any port, with ports added, removed and re-flagged,
 * checked against the forwarding rules of hv/net/switch.h as an oracle.
 *
 * Input: steps of u8 op, then:
 *   op % 4 == 0/1: u8 port, u8 shape, u16 len, len bytes: a frame from
 *     port (shape bit 0: source MAC := the port's, bits 1-3: destination
 *     := one of the known MACs, broadcast, multicast, or left as is)
 *   op % 4 == 2: u8 port: remove it, or add it back (guest, flags op>>7)
 *   op % 4 == 3: u8 port: SW_F_MGMT toggled
 * Invariants: the frame handed out is the frame given, never to its
 * source port; a guest never sees unicast for another MAC; a guest
 * without SW_F_MGMT never reaches the local port; spoofed, runt,
 * oversize, bad-source, link-control and tagged frames go nowhere; the
 * return value counts the deliveries.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hv/net/switch.h"
#include "tests/fuzz/fuzz.h"


#define NP 6	/* uplink, local, 4 guests */

static const uint8_t MACS[NP][6] = {
	{ 0 },
	{ 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 },
	{ 0x52, 0x54, 0x00, 0, 0, 0xA }, { 0x52, 0x54, 0x00, 0, 0, 0xB },
	{ 0x52, 0x54, 0x00, 0, 0, 0xC }, { 0x52, 0x54, 0x00, 0, 0, 0xD },
};
static const uint8_t PEER[6] = { 0x02, 0, 0, 0, 0, 0x77 };

static struct sw sw;
static int num[NP];		/* switch port number of each of ours, or -1 */
static unsigned int got[NP];	/* deliveries to each during one input */
static const uint8_t *cur;
static size_t cur_len;

static void out_cb(void *ctx, const uint8_t *frame, size_t len)
{
	int who = (int)(intptr_t)ctx;

	CHECK(len == cur_len && memcmp(frame, cur, len) == 0);
	got[who]++;
}

static int add(int who, uint8_t flags)
{
	return sw_add_port(&sw, who == 0 ? SW_UPLINK : who == 1 ? SW_LOCAL : SW_GUEST,
			   who == 0 ? NULL : MACS[who], flags, out_cb, (void *)(intptr_t)who);
}

static bool is_mcast(const uint8_t *m) { return m[0] & 1; }
static bool is_zero(const uint8_t *m) { return !(m[0] | m[1] | m[2] | m[3] | m[4] | m[5]); }

/* 802.1D's reserved block, Cisco's CDP/PVST+ and the link's EtherTypes. */
static bool is_link_control(const uint8_t *f)
{
	static const uint8_t ieee[5] = { 0x01, 0x80, 0xC2, 0, 0 }, cisco[5] = { 1, 0, 0x0C, 0xCC, 0xCC };
	unsigned int type = (unsigned int)f[12] << 8 | f[13];

	return (!memcmp(f, ieee, 5) && f[5] <= 0x0F) || (!memcmp(f, cisco, 5) && (f[5] | 1) == 0xCD) ||
	       type == 0x8808 || type == 0x8809 || type == 0x888e || type == 0x88cc;
}

static void one_frame(int src, const uint8_t *f, size_t len)
{
	int rc, delivered = 0;
	bool mgmt = num[src] >= 0 && (sw.port[num[src]].flags & SW_F_MGMT);

	memset(got, 0, sizeof(got));
	cur = f, cur_len = len;
	rc = sw_input(&sw, num[src], f, len);
	for (int i = 0; i < NP; i++)
		delivered += got[i];
	if (rc >= 0)
		CHECK(rc == delivered);
	else
		CHECK(delivered == 0 && (rc == -EPERM || rc == -EINVAL));
	if (num[src] < 0) {
		CHECK(rc == -EINVAL);
		return;
	}
	CHECK(got[src] == 0);
	for (int i = 0; i < NP; i++)
		CHECK(got[i] <= 1 && (got[i] == 0 || num[i] >= 0));
	if (len < 14 || len > 1518) {
		CHECK(rc == -EPERM);
		return;
	}
	const uint8_t *dst = f, *smac = f + 6;
	if (is_mcast(smac) || is_zero(smac))
		CHECK(rc == -EPERM);
	if (is_link_control(f))
		CHECK(rc == -EPERM);			/* no bridge forwards it */
	if ((f[12] == 0x81 && f[13] == 0x00) || (f[12] == 0x88 && f[13] == 0xa8))
		CHECK(rc == -EPERM);			/* VLAN-tagged, either way */
	if (src != 0 && memcmp(smac, MACS[src], 6))
		CHECK(rc == -EPERM);			/* anti-spoofing */
	if (src == 0)
		for (int i = 1; i < NP; i++)
			if (num[i] >= 0 && !memcmp(smac, MACS[i], 6))
				CHECK(rc == -EPERM);	/* loop / posing */
	if (src >= 2 && !mgmt)
		CHECK(got[1] == 0);			/* management filter */
	if (!is_mcast(dst)) {
		for (int i = 2; i < NP; i++)		/* privacy between guests */
			if (got[i])
				CHECK(!memcmp(dst, MACS[i], 6));
		if (got[1])
			CHECK(!memcmp(dst, MACS[1], 6));
		if (src == 0)
			CHECK(got[0] == 0);
		CHECK(delivered <= 1);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t frame[2048];

	sw_init(&sw);
	for (int i = 0; i < NP; i++) {
		num[i] = add(i, i == 2 ? SW_F_MGMT : 0);
		CHECK(num[i] >= 0);
	}
	while (size >= 2) {
		uint8_t op = data[0], who = data[1] % NP;
		data += 2, size -= 2;
		switch (op % 4) {
		case 0: case 1: {
			if (size < 3)
				return 0;
			uint8_t shape = data[0];
			size_t len = (size_t)(data[1] | data[2] << 8) % sizeof(frame);
			data += 3, size -= 3;
			size_t take = len < size ? len : size;
			memset(frame, 0, len);
			memcpy(frame, data, take);
			data += take, size -= take;
			if (len >= 12 && (shape & 1))
				memcpy(frame + 6, who ? MACS[who] : PEER, 6);
			if (len >= 6) {
				unsigned d = (shape >> 1) & 7;
				if (d < NP)
					memcpy(frame, d ? MACS[d] : PEER, 6);
				else if (d == 6)
					memset(frame, 0xff, 6);
			}
			uint8_t *exact = malloc(len ? len : 1);	/* ASan: over-reads */
			memcpy(exact, frame, len);
			one_frame(who, exact, len);
			free(exact);
			break;
		}
		case 2:
			if (num[who] >= 0) {
				sw_del_port(&sw, num[who]);
				num[who] = -1;
				CHECK(who == 0 || sw_lookup(&sw, MACS[who]) == -ENOENT);
			} else {
				num[who] = add(who, op >> 7 ? SW_F_MGMT : 0);
				CHECK(num[who] >= 0);
				CHECK(who == 0 || sw_lookup(&sw, MACS[who]) == num[who]);
			}
			break;
		case 3:
			if (num[who] >= 2 || (num[who] >= 0 && who >= 2))
				(void)sw_set_flags(&sw, num[who], sw.port[num[who]].flags ^ SW_F_MGMT);
			break;
		}
	}
	return 0;
}
