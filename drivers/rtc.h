/* SPDX-License-Identifier: BSD-2-Clause */
/* The host's CMOS real-time clock, for the wall-clock time (drivers/rtc.c). */
#ifndef FERRY_DRIVERS_RTC_H
#define FERRY_DRIVERS_RTC_H

#include <stdbool.h>
#include <stdint.h>

/* Boot CPU, after time_init: 0, or -1 if unreadable.  century_reg: the
 * CMOS index of the century (the FADT's), 0 when the clock has none. */
int host_rtc_init(uint8_t century_reg);
uint64_t host_rtc_epoch_now(void);	/* seconds since 1970 (UTC, as the RTC keeps it); 0 if unknown */

#endif
