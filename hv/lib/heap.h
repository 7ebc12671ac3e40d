/* SPDX-License-Identifier: BSD-2-Clause */
/* The heap behind newlib's malloc, and where newlib's stdout goes. */
#ifndef FERRY_HV_LIB_HEAP_H
#define FERRY_HV_LIB_HEAP_H

#include <stddef.h>

void heap_init(void *base, size_t size);
size_t heap_used(void);
size_t heap_size(void);
/* Where write(1 or 2, ...) goes; set once at boot (the console). */
void libc_set_output(void (*write)(const char *s, size_t n));

#endif
