/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hv/gnet.c's entry points for the core's unit tests that link
 * hv/vm_devices.c without ferry's network: a guest NIC gets no switch
 * port and its frames are counted here (tests/unit/test_gnet.c tests
 * hv/gnet.c itself).
 */
#include <stddef.h>
#include <stdint.h>
#include "hv/gnet.h"
#include "hv/vdev/snap.h"

unsigned int gnet_fake_tx_frames;

int gnet_attach(struct vm *vm)
{
	(void)vm;
	return 0;
}

void gnet_detach(struct vm *vm)
{
	(void)vm;
}

int gnet_guest_tx(struct vm *vm, const uint8_t *frame, size_t len, const struct gso_req *r)
{
	(void)vm;
	(void)frame;
	(void)len;
	(void)r;
	gnet_fake_tx_frames++;
	return 0;
}

bool gnet_flush(struct vm *vm)
{
	(void)vm;
	return true;
}

unsigned int gnet_tx_discard(struct vm *vm)
{
	(void)vm;
	return 0;
}

int gnet_rx_snapshot(struct vm *vm, struct snap *s, struct gnet_carry **in)
{
	uint32_t n = 0;

	(void)vm;
	(void)in;
	snap_u32(s, &n);		/* no port: no frames */
	return n ? snap_invalid(s) : s->err;
}

void gnet_rx_carry(struct vm *vm, struct gnet_carry *c)
{
	(void)vm;
	(void)c;
}

int gnet_rx_late_snapshot(struct vm *vm, struct snap *s, uint32_t room, struct gnet_carry **in)
{
	(void)room;
	return gnet_rx_snapshot(vm, s, in);
}

void gnet_rx_carry_more(struct vm *vm, struct gnet_carry *c)
{
	(void)vm;
	(void)c;
}

void gnet_wake(struct vm *vm)
{
	(void)vm;
}

void gnet_rx_posted(struct vm *vm)
{
	(void)vm;
}
