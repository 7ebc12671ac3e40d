/* SPDX-License-Identifier: BSD-2-Clause */
/* Monotonic time since boot, from the TSC (hv/lib/time.c); its rate is
 * measured at boot by arch/x86/time.c. */
#ifndef FERRY_HV_TIME_H
#define FERRY_HV_TIME_H

#include <stdint.h>

uint64_t time_now_us(void);	/* 0 until the TSC is calibrated */
uint64_t time_now_ns(void);
uint64_t time_ns_at(uint64_t tsc);	/* time_now_ns when the TSC read tsc */
void time_set_tsc(uint64_t boot_tsc, uint64_t hz);	/* time 0 and the rate */
uint64_t tsc_hz(void);
void udelay(uint64_t us);

/*
 * Guest TSC scaling, in the format of VMX's TSC multiplier (Intel SDM Vol. 3
 * 25.3, "TSC scaling"): the guest reads bits 111:48 of host TSC * mult,
 * plus the TSC offset.  TSC_MULT_ONE leaves the host's rate.
 */
#define TSC_MULT_FRAC		48
#define TSC_MULT_ONE		(1ull << TSC_MULT_FRAC)
/* Rates this close run the guest on the host's TSC unscaled: the drift is
 * what NTP corrects, and two calibrations of one rate differ by as much
 * (KVM's tsc_tolerance_ppm is the same 250). */
#define TSC_NATIVE_PPM		250

/* The multiplier that makes a host_hz TSC count at guest_hz (rates of
 * 1 MHz .. 10 GHz); TSC_MULT_ONE within TSC_NATIVE_PPM. */
uint64_t tsc_mult_for(uint64_t guest_hz, uint64_t host_hz);
/* What a guest whose TSC is scaled by mult reads at host TSC tsc (before
 * the offset); wraps as the TSC does. */
uint64_t tsc_scaled(uint64_t tsc, uint64_t mult);

#endif
