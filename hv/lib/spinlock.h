/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Ticket-free test-and-test-and-set spinlock.  Plain compiler atomics, so the
 * same code runs in the hypervisor and in host unit tests.  Locks are never
 * taken from interrupt handlers; keep critical sections short.
 */
#ifndef FERRY_HV_SPINLOCK_H
#define FERRY_HV_SPINLOCK_H

#include <stdbool.h>

typedef struct { volatile int locked; } spinlock_t;

#define SPINLOCK_INIT { 0 }

static inline void spin_lock(spinlock_t *l)
{
	while (__atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&l->locked, __ATOMIC_RELAXED))
			__builtin_ia32_pause();
}

static inline bool spin_trylock(spinlock_t *l)
{
	return !__atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE);
}

static inline void spin_unlock(spinlock_t *l)
{
	__atomic_store_n(&l->locked, 0, __ATOMIC_RELEASE);
}

#endif
