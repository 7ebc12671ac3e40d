/* SPDX-License-Identifier: BSD-2-Clause */
/* The table of GRUB modules, filled once at boot from the multiboot2 info. */
#include <string.h>
#include "hv/modules.h"
#include "hv/lib/log.h"
#include "arch/x86/mm.h"

#define MAX_MODULES 32

static struct module mods[MAX_MODULES];
static unsigned int n_mods;
static char args_store[MAX_MODULES][256];

void modules_add(uint64_t start, uint64_t end, const char *cmdline)
{
	struct module *m;
	size_t name_len;

	if (n_mods == MAX_MODULES) {
		pr_warn("modules: more than %d modules; '%s' ignored", MAX_MODULES, cmdline);
		return;
	}
	m = &mods[n_mods];
	while (*cmdline == ' ')
		cmdline++;
	name_len = strcspn(cmdline, " ");
	if (name_len == 0 || name_len >= MODULE_NAME_MAX) {
		pr_warn("modules: module at %#lx has no usable name ('%s'); ignored", start, cmdline);
		return;
	}
	memcpy(m->name, cmdline, name_len);
	m->name[name_len] = 0;
	cmdline += name_len;
	while (*cmdline == ' ')
		cmdline++;
	strncpy(args_store[n_mods], cmdline, sizeof(args_store[0]) - 1);
	m->args = args_store[n_mods];
	m->pa = start;
	m->size = end - start;
	m->data = phys_to_virt(start);
	if (modules_find(m->name)) {
		pr_warn("modules: duplicate module name '%s'; the first one is used", m->name);
		return;
	}
	n_mods++;
}

unsigned int modules_count(void)
{
	return n_mods;
}

const struct module *modules_get(unsigned int i)
{
	return i < n_mods ? &mods[i] : NULL;
}

const struct module *modules_find(const char *name)
{
	for (unsigned int i = 0; i < n_mods; i++)
		if (!strcmp(mods[i].name, name))
			return &mods[i];
	return NULL;
}
