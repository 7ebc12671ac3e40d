/* SPDX-License-Identifier: BSD-2-Clause */
/* Reset and power-off of the whole machine. */
#ifndef FERRY_HV_POWER_H
#define FERRY_HV_POWER_H

/* Each returns only when every method failed. */
void power_reboot(void);
void power_off(void);

#endif
