/* SPDX-License-Identifier: BSD-2-Clause */
/* The heap behind newlib's malloc. */
#ifndef FERRY_HV_LIBC_H
#define FERRY_HV_LIBC_H

#include <stddef.h>

void heap_init(void *base, size_t size);
size_t heap_used(void);
size_t heap_size(void);

#endif
