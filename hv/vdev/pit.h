/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The 8254 programmable interval timer (ports 0x40-0x43) and the PIT bits
 * of the PC's port 0x61 (system control port B).
 *
 * Reference: Intel 8254 data sheet (order 231164): control word, modes
 * 0-5, counter latch, read-back command and status byte; PIIX4 data
 * sheet 4.1.8 (NMI status and control, port 0x61).
 *
 * No host timers: the PIT is a function of the guest's device clock.
 * Every call takes now_ns, which the caller must never move backwards;
 * a counter's value is computed from the time since it was loaded at
 * PIT_HZ.  Channel 0 drives IRQ 0: the caller asks pit_update() how many
 * rising edges of OUT0 are due and pulses IRQ 0 that often;
 * pit_next_event_ns() says when the next edge falls due (for a tickless
 * HLT: nothing in the product asks yet).  Channel 1 (DRAM
 * refresh) has no effect.  Channel 2's gate is port 0x61 bit 0 and its
 * OUT is readable in bit 5 (Linux and ferry calibrate the TSC with it).
 *
 * Simplifications: a new count written in modes 2 and 3 takes effect at
 * once (the chip waits for the end of the current period); mode 3 with an
 * odd count counts down by two from count, so its halves differ by one
 * clock.  The refresh toggle (port 0x61 bit 4) flips every 15.085 us of
 * guest time.  Channels 0 and 1 have their gate tied high.
 *
 * Before the guest programs it (there is no BIOS) no channel counts.
 * Not thread-safe: the owner serializes calls.
 */
#ifndef FERRY_HV_VDEV_PIT_H
#define FERRY_HV_VDEV_PIT_H

#include <stdbool.h>
#include <stdint.h>
#include "hv/vdev/snap.h"

#define PIT_HZ		1193182u
#define PIT_CH0_PORT	0x40
#define PIT_CMD_PORT	0x43
#define PIT_PORT_B	0x61
#define PIT_NO_EVENT	UINT64_MAX

/* Access modes (control word bits 5-4). */
enum { PIT_ACCESS_LATCH = 0, PIT_ACCESS_LO = 1, PIT_ACCESS_HI = 2, PIT_ACCESS_LOHI = 3 };

/*
 * One counter.  Its count is a function of `ticks` = PIT clocks counted
 * since the count was loaded (or the gate restarted it): done_ticks from
 * earlier runs plus, while running, those since start_ns.
 */
struct pit_channel {
	uint16_t reload;	/* count written: 0 means 65536 (10000 BCD) */
	uint8_t mode;		/* control word bits 3-1 as written (6, 7 = 2, 3) */
	uint8_t access;		/* PIT_ACCESS_LO/HI/LOHI */
	bool bcd;		/* count in BCD */
	bool gate;		/* gate input (channels 0 and 1: always high) */
	bool loaded;		/* a count was written since the control word */
	bool running;		/* counting now (modes 1, 5: triggered) */
	bool null_count;	/* status bit 6 */
	uint64_t start_ns;	/* guest time this run started (running) */
	uint64_t done_ticks;	/* clocks counted before start_ns since load */
	uint64_t next_edge;	/* tick of the next OUT rising edge to report,
				 * UINT64_MAX for none (channel 0 only) */
	bool wr_msb;		/* LOHI: the next write is the MSB */
	uint8_t wr_lsb;		/* LOHI: the LSB written first */
	bool rd_msb;		/* LOHI: the next read is the MSB */
	bool count_latched;
	uint16_t latch;		/* latched count, as the guest reads it */
	bool status_latched;
	uint8_t status;		/* latched status byte */
};

struct pit_stats {
	uint64_t irq_edges;	/* IRQ 0 edges reported by pit_update */
	uint64_t coalesced;	/* periods that elapsed unreported (merged) */
};

struct pit {
	struct pit_channel ch[3];
	uint8_t port_b;		/* port 0x61 bits 3-0 as written */
	struct pit_stats stats;	/* host-side counters, not saved */
};

/* Power-on state: no channel counting, gate 2 low. */
void pit_init(struct pit *p);

/*
 * Guest port access: 0x40-0x43 and 0x61, size 1, 2 or 4 (split into
 * bytes).  Returns 0, or -ENOENT if port is not the PIT's.  The caller
 * runs pit_update() first so no edge due before now_ns is lost.
 */
int pit_io(struct pit *p, uint16_t port, uint8_t size, bool in, uint32_t *val,
	   uint64_t now_ns);

/*
 * How many rising edges of OUT0 (IRQ 0) to deliver now: 0 or 1.  Periods
 * that passed while nobody asked are merged into that one edge and added
 * to stats.coalesced (a guest that was not scheduled sees no burst).
 */
int pit_update(struct pit *p, uint64_t now_ns);

/* Guest time of the next IRQ 0 edge (now_ns if one is due already), or
 * PIT_NO_EVENT. */
uint64_t pit_next_event_ns(const struct pit *p, uint64_t now_ns);

/* Level of a channel's OUT pin now (tests, port 0x61). */
bool pit_out(const struct pit *p, unsigned int ch, uint64_t now_ns);

/*
 * Save or restore.  Times are stored relative to now_ns (clocks counted
 * since the load, and the nanoseconds of the current second of counting),
 * so a restore at any other time base continues every count at the same
 * phase.  (Only a restore at now_ns below that sub-second remainder, i.e.
 * a guest clock under one second, rounds to the last whole clock.)  A
 * refused restore leaves p unchanged.
 */
int pit_snapshot(struct pit *p, struct snap *s, uint64_t now_ns);

/* Internal consistency (used by restore, and by tests). */
bool pit_valid(const struct pit *p);

#endif
