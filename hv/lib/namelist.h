/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef FERRY_HV_LIB_NAMELIST_H
#define FERRY_HV_LIB_NAMELIST_H

#include <stddef.h>

/*
 * A comma-separated list of names, as `module=a,b` takes it.  Copies the
 * next name into name[size] and moves *list past it and its comma.
 * Returns 1 for a name, 0 at the end of the list, and -EINVAL (with *list
 * unmoved) for an empty entry ("a,,b", ",a", "a,") or a name that does not
 * fit in name.
 */
int namelist_next(const char **list, char *name, size_t size);

#endif
