/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the library needs to know of the CPU it runs on: its index, which
 * the per-CPU setup (arch/x86/smp.c) provides once %gs is set.
 */
#ifndef FERRY_HV_LIB_CPU_H
#define FERRY_HV_LIB_CPU_H

extern unsigned int (*cpu_index_hook)(void);

static inline unsigned int lib_cpu_index(void)
{
	return cpu_index_hook ? cpu_index_hook() : 0;
}

#endif
