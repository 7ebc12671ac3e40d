/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef FERRY_ARCH_X86_TIME_H
#define FERRY_ARCH_X86_TIME_H

void time_init(void);	/* time 0 is now; measures the TSC's rate (boot CPU, once) */

#endif
