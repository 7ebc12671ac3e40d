/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>
#include <string.h>
#include "hv/lib/namelist.h"

int namelist_next(const char **list, char *name, size_t size)
{
	const char *p = *list;
	size_t len;

	if (!*p)
		return 0;
	len = strcspn(p, ",");
	if (!len || len >= size || (p[len] == ',' && !p[len + 1]))
		return -EINVAL;
	memcpy(name, p, len);
	name[len] = 0;
	*list = p + len + (p[len] == ',');
	return 1;
}
