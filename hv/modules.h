/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The GRUB modules ferry was booted with.  A module's command line starts
 * with its name ("testguest", "ferry.rc"); the rest is its own command line.
 * Modules stay in place (reserved RAM) for as long as ferry runs.
 */
#ifndef FERRY_HV_MODULES_H
#define FERRY_HV_MODULES_H

#include <stddef.h>
#include <stdint.h>

#define MODULE_NAME_MAX 32

struct module {
	char name[MODULE_NAME_MAX];
	const char *args;	/* command line after the name, maybe "" */
	uint64_t pa;		/* physical start */
	size_t size;
	const void *data;	/* through the direct map */
};

void modules_add(uint64_t start, uint64_t end, const char *cmdline);
unsigned int modules_count(void);
const struct module *modules_get(unsigned int i);
const struct module *modules_find(const char *name);

#endif
