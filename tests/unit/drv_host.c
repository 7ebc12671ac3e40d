/* SPDX-License-Identifier: BSD-2-Clause */
/* The machine around a NIC driver in host unit tests (drv_host.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "arch/x86/mm.h"
#include "drivers/pci.h"
#include "hv/lib/log.h"
#include "hv/lib/time.h"
#include "hv/mm/frame.h"
#include "tests/unit/drv_host.h"

static void *blocks[16];
static int nblocks;

void log_printf(enum log_level level, const char *fmt, ...)
{
	(void)level;
	(void)fmt;
}

void udelay(uint64_t us) { (void)us; }
void pci_enable_mem(const struct pci_dev *d) { (void)d; }
void pci_enable_bus_master(const struct pci_dev *d) { (void)d; }

uint64_t frame_alloc_contig(size_t n, size_t align_frames)
{
	void *p = aligned_alloc(4096, n * 4096);

	(void)align_frames;
	assert_non_null(p);
	assert_true(nblocks < 16);
	blocks[nblocks++] = p;
	return (uint64_t)(uintptr_t)p - DIRECT_MAP_BASE;
}

void *drv_host_block(int i)
{
	assert_true(i < nblocks);
	return blocks[i];
}

int drv_host_blocks(void)
{
	return nblocks;
}

void drv_host_free(void)
{
	for (int i = 0; i < nblocks; i++)
		free(blocks[i]);
	nblocks = 0;
}

void drv_host_tcp4(uint8_t *f, size_t len)
{
	memset(f, 0, len);
	f[12] = 0x08;
	f[14] = 0x45;
	f[14 + 9] = 6;
}
