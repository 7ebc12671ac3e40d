/* SPDX-License-Identifier: BSD-2-Clause */
/* Monotonic time since boot, from the TSC (hv/lib/time.c); its rate is
 * measured at boot by arch/x86/time.c. */
#ifndef FERRY_HV_TIME_H
#define FERRY_HV_TIME_H

#include <stdint.h>

uint64_t time_now_us(void);	/* 0 until the TSC is calibrated */
uint64_t time_now_ns(void);
void time_set_tsc(uint64_t boot_tsc, uint64_t hz);	/* time 0 and the rate */
uint64_t tsc_hz(void);
void udelay(uint64_t us);

#endif
