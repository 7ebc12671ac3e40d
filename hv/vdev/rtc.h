/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CMOS real-time clock and its 128 bytes of RAM at ports 0x70 (index,
 * write-only; bit 7 masks NMI) and 0x71 (data), as an MC146818A.
 *
 * Reference: Motorola MC146818A data sheet (registers A-D, time and
 * calendar registers, SET and UIP); the memory-size bytes follow the IBM
 * PC/AT BIOS layout as SeaBIOS and QEMU use it.
 *
 * Time is not stored in the registers: it is a wall-clock base (seconds
 * since 1970-01-01 00:00 UTC) plus the guest's elapsed device clock, so
 * it runs with the guest and stops when the guest is paused.  Reads of
 * registers 0-9 and 0x32 (century) convert it to BCD or binary and 12 or
 * 24 hour form per register B at the moment of the read.  Writes set the
 * clock: while B.SET is 1 the registers hold still and take the written
 * values, which become the time when SET returns to 0 (how Linux sets the
 * clock); a write with SET 0 moves the clock at once.  The day of week is
 * derived from the date (writes to register 6 do not stick).
 *
 * Register A reads UIP = 0 (the update is instantaneous); B is stored
 * (SET clears UIE); D reads 0x80 (valid RAM and time).
 *
 * Interrupts, as the data sheet has them: at each second the clock ticks
 * (not while SET is 1) the update-ended flag UF is set, and the alarm flag
 * AF too when the new time matches the alarm registers 1, 3 and 5 (a value
 * of 0xC0-0xFF matches anything); the periodic flag PF is set at the rate
 * register A selects (RS, 2 Hz to 8192 Hz, with the divider at 32.768 kHz).
 * Flags are set whether or not their enables (PIE, AIE, UIE in B) are.
 * IRQF = PF.PIE + AF.AIE + UF.UIE drives IRQ 8 through the callback given
 * to rtc_connect, high until the guest reads C, which returns the flags and
 * clears them.  Seconds or periods that passed unseen (a guest not
 * scheduled) merge into one flag, as the PIT merges its edges.
 * Everything is computed from now_ns: rtc_update catches the flags up,
 * rtc_next_event_ns says when IRQF will next rise.  A reset of the machine
 * (rtc_reset_irqs) clears the enables and flags, as the chip's RESET pin.
 *
 * Memory-size bytes set at init (all writable later, as on real hardware):
 *   0x15/0x16  base memory in KiB (at most 640)
 *   0x17/0x18 and 0x30/0x31  KiB above 1 MiB (at most 0xffff)
 *   0x34/0x35  64 KiB units above 16 MiB, below 4 GiB (at most 0xffff)
 *   0x5b-0x5d  64 KiB units above 4 GiB (24 bits)
 *
 * Not thread-safe: the owner serializes calls.
 */
#ifndef FERRY_HV_VDEV_RTC_H
#define FERRY_HV_VDEV_RTC_H

#include <stdbool.h>
#include <stdint.h>
#include "hv/vdev/snap.h"

#define RTC_INDEX_PORT	0x70
#define RTC_DATA_PORT	0x71
#define RTC_CMOS_SIZE	128

/* Register indexes. */
#define RTC_SECONDS	0x00
#define RTC_MINUTES	0x02
#define RTC_HOURS	0x04
#define RTC_WEEKDAY	0x06
#define RTC_MDAY	0x07
#define RTC_MONTH	0x08
#define RTC_YEAR	0x09
#define RTC_REG_A	0x0A
#define RTC_REG_B	0x0B
#define RTC_REG_C	0x0C
#define RTC_REG_D	0x0D
#define RTC_CENTURY	0x32

#define RTC_B_SET	0x80
#define RTC_B_PIE	0x40
#define RTC_B_AIE	0x20
#define RTC_B_UIE	0x10
#define RTC_B_BINARY	0x04	/* DM: 1 = binary, 0 = BCD */
#define RTC_B_24H	0x02
#define RTC_D_VRT	0x80
#define RTC_C_IRQF	0x80
#define RTC_C_PF	0x40
#define RTC_C_AF	0x20
#define RTC_C_UF	0x10
#define RTC_IRQ_BITS	0x70	/* the flags in C, their enables in B */
#define RTC_NO_EVENT	UINT64_MAX

/* Latest time the RTC can hold: 9999-12-31 23:59:59. */
#define RTC_MAX_EPOCH	253402300799ull

/* Broken-down time in the registers' terms, binary. */
struct rtc_tm {
	uint8_t sec, min, hour;		/* hour 0-23 */
	uint8_t mday, mon;		/* 1-31, 1-12 */
	uint8_t year, century;		/* year % 100, year / 100 */
};

struct rtc_stats {
	uint64_t clock_sets;	/* times the guest set the clock */
	uint64_t irqs;		/* rising edges of IRQF */
};

struct rtc {
	uint8_t index;		/* selected register, 0-127 */
	bool nmi_masked;	/* bit 7 of the last index write */
	uint8_t ram[RTC_CMOS_SIZE];	/* RAM, alarms, A, B, C; not time/D */
	uint64_t base_s;	/* the time at base_ns, seconds since 1970 */
	uint64_t base_ns;	/* guest clock when base_s held */
	struct rtc_tm held;	/* the registers while B.SET is 1 */
	uint64_t seen_s;	/* the last second ticked (UF, AF) */
	uint64_t pf_next_ns;	/* guest time of the next periodic flag ... */
	uint8_t pf_sub;		/* ... plus this many 1/16 ns (exact edges) */
	uint8_t pf_rate;	/* the RS that pf_next_ns counts for, 0 = off */
	bool irq_level;		/* IRQF as last driven onto IRQ 8 */
	void (*irq)(void *ctx, int level);	/* not saved */
	void *irq_ctx;
	struct rtc_stats stats;	/* host-side counters, not saved */
};

/* Reset state: 24-hour BCD, time epoch_s at guest time now_ns (clamped
 * to RTC_MAX_EPOCH), memory-size bytes for the guest's RAM below and
 * above 4 GiB. */
void rtc_init(struct rtc *r, uint64_t epoch_s, uint64_t now_ns,
	      uint64_t ram_below_4g, uint64_t ram_above_4g);

/* Where IRQF goes (called on every change of level; NULL: nowhere). */
void rtc_connect(struct rtc *r, void (*irq)(void *ctx, int level), void *ctx);

/* Catch the flags up with now_ns and drive IRQ 8 accordingly. */
void rtc_update(struct rtc *r, uint64_t now_ns);

/* Guest time at which IRQF will rise (now_ns if due), RTC_NO_EVENT if no
 * enabled source will raise it (or it is high already). */
uint64_t rtc_next_event_ns(const struct rtc *r, uint64_t now_ns);

/* The machine's reset: PIE, AIE, UIE and the flags cleared, IRQF low
 * (without calling back: the interrupt controllers are reset too). */
void rtc_reset_irqs(struct rtc *r);

/* Guest port access: 0x70, 0x71, size 1, 2 or 4 (split into bytes).
 * Returns 0, or -ENOENT if port is not the RTC's. */
int rtc_io(struct rtc *r, uint16_t port, uint8_t size, bool in, uint32_t *val,
	   uint64_t now_ns);

/* Calendar conversions (UTC, proleptic Gregorian, years 1970-9999). */
void rtc_epoch_to_tm(uint64_t epoch_s, struct rtc_tm *tm);
uint64_t rtc_tm_to_epoch(const struct rtc_tm *tm);	/* clamped */

/* Save or restore; the time is saved as seconds plus the fraction since
 * the last second relative to now_ns, so it continues after a restore at
 * another time base, and so is the next periodic flag.  IRQF is derived
 * from the registers; the caller checks that IRQ 8 matches it.  A refused
 * restore leaves r unchanged. */
int rtc_snapshot(struct rtc *r, struct snap *s, uint64_t now_ns);

/* Internal consistency (used by restore, and by tests). */
bool rtc_valid(const struct rtc *r);

#endif
