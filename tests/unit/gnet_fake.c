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

void gnet_guest_tx(struct vm *vm, const uint8_t *frame, size_t len)
{
	(void)vm;
	(void)frame;
	(void)len;
	gnet_fake_tx_frames++;
}

void gnet_flush(struct vm *vm)
{
	(void)vm;
}
