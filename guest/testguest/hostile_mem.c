/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * testguest: the memory escapes of the "hostile" mode.  With paging off it
 * reads and writes physical addresses past its RAM (just past mem_upper,
 * 3 GiB, the local APIC, the reset vector ROM); with PAE paging it reaches
 * addresses above 4 GiB where host memory would be.  Under ferry these
 * should fault or stop the guest, never reach host memory.
 */
#include "guest/testguest/arch.h"
#include "guest/testguest/hostile.h"
#include "guest/testguest/tg.h"

#define WINDOW_VA 0xC0000000u /* PDPT slot 3 maps the probe window */
#define LARGE_PAGE (2u * TG_MIB)
#define PDE_P 0x1ull
#define PDE_RW 0x2ull
#define PDE_PS 0x80ull
#define PROBE_VALUE 0xA5C3E1F0u
#define LAPIC_VERSION 0xFEE00030u
#define RESET_VECTOR 0xFFFFFFF0u

/* PAE tables, SDM Vol. 3A 4.4: the PDPT (32-byte aligned, entries hold
 * only P and the address), an identity map of the low 1 GiB in 2 MiB
 * pages, and one directory for the 3-4 GiB window. */
static uint64_t pdpt[4] __attribute__((aligned(32)));
static uint64_t pd_low[512] __attribute__((aligned(TG_PAGE)));
static uint64_t pd_window[512] __attribute__((aligned(TG_PAGE)));

static volatile uint32_t *phys(uint32_t addr)
{
	return (volatile uint32_t *)addr;
}

static void probe_read(struct attempt_ctx *c, volatile uint32_t *p)
{
	hostile_report(c, "addr", (uint32_t)p);
	hostile_report(c, "value", *p);
}

static void probe_write(struct attempt_ctx *c, volatile uint32_t *p)
{
	hostile_report(c, "addr", (uint32_t)p);
	*p = PROBE_VALUE;
	hostile_report(c, "readback", *p);
}

static void try_past_end_read(void *c)
{
	probe_read(c, phys(tg_boot.ram_end));
}

static void try_past_end_write(void *c)
{
	probe_write(c, phys(tg_boot.ram_end));
}

static void try_3g_read(void *c)
{
	probe_read(c, phys(0xC0000000u));
}

static void try_3g_write(void *c)
{
	probe_write(c, phys(0xC0000000u));
}

static void try_lapic_read(void *c)
{
	probe_read(c, phys(LAPIC_VERSION));
}

static void try_rom_read(void *c)
{
	probe_read(c, phys(RESET_VECTOR));
}

/* Turns PAE paging on with the window mapping the 2 MiB page holding gpa;
 * returns the virtual address of gpa. */
static volatile uint32_t *map_high(uint64_t gpa)
{
	for (uint32_t i = 0; i < 512; i++)
		pd_low[i] = (uint64_t)i * LARGE_PAGE | PDE_PS | PDE_RW | PDE_P;
	memset(pd_window, 0, sizeof(pd_window));
	pd_window[0] = (gpa & ~(uint64_t)(LARGE_PAGE - 1)) | PDE_PS | PDE_RW |
		       PDE_P;
	memset(pdpt, 0, sizeof(pdpt));
	pdpt[0] = (uint32_t)pd_low | PDE_P;
	pdpt[3] = (uint32_t)pd_window | PDE_P;
	write_cr4(read_cr4() | CR4_PAE);
	write_cr3((uint32_t)pdpt);
	write_cr0(read_cr0() | CR0_PG);
	return (volatile uint32_t *)(WINDOW_VA + (uint32_t)(gpa & (LARGE_PAGE - 1)));
}

static void paging_off(void)
{
	write_cr0(read_cr0() & ~CR0_PG);
	write_cr4(read_cr4() & ~CR4_PAE);
}

static void high_read(struct attempt_ctx *c, uint64_t gpa)
{
	volatile uint32_t *p = map_high(gpa);

	hostile_report(c, "gpa", gpa);
	hostile_report(c, "value", *p);
}

static void try_4g_read(void *c)
{
	high_read(c, 0x100000000ull);
}

static void try_16g_read(void *c)
{
	high_read(c, 0x400000000ull);
}

static void try_4g_write(void *c)
{
	volatile uint32_t *p = map_high(0x100000000ull);

	hostile_report(c, "gpa", 0x100000000ull);
	*p = PROBE_VALUE;
	hostile_report(c, "readback", *p);
}

const struct attempt hostile_mem_attempts[] = {
	{ "mem_past_end_read", "mem", try_past_end_read, NULL },
	{ "mem_past_end_write", "mem", try_past_end_write, NULL },
	{ "mem_3g_read", "mem", try_3g_read, NULL },
	{ "mem_3g_write", "mem", try_3g_write, NULL },
	{ "mem_lapic_read", "mem", try_lapic_read, NULL },
	{ "mem_rom_read", "mem", try_rom_read, NULL },
	{ "mem_4g_read", "mem", try_4g_read, paging_off },
	{ "mem_16g_read", "mem", try_16g_read, paging_off },
	{ "mem_4g_write", "mem", try_4g_write, paging_off },
};

const size_t hostile_mem_count =
	sizeof(hostile_mem_attempts) / sizeof(hostile_mem_attempts[0]);
