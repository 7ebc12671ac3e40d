/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Which dirty log migrations use, write-protection or the CPU's own
 * (hv/mm/dirty.h "Hardware dirty tracking"), and what it did: `debug
 * dirtylog` switches it for comparison; a migration keeps the method it
 * started with.
 */
#include <errno.h>
#include <string.h>
#include "hv/mm/dirty.h"
#include "hv/shell/cmd_dirtylog.h"
#include "hv/shell/parse.h"
#include "hv/shell/shell.h"
#include "hv/vm.h"

void dirtylog_show_method(void)
{
	const char *hw = dirty_hw_available();
	unsigned n = dirty_hw_entries();

	shell_printf("dirty log: %s (hardware: %s)", dirty_hw_method(), hw ? hw : "none");
	if (hw && n)
		shell_printf(", %u log entries per vCPU (debug)", n);
	shell_printf("\n");
}

void dirtylog_show_vm(struct vm *vm)
{
	struct dirty_log *log = &vm->dirty;
	struct dirty_stats s;
	bool on = __atomic_load_n(&log->enabled, __ATOMIC_RELAXED);
	const struct dirty_hw *hw = __atomic_load_n(&log->hw, __ATOMIC_RELAXED);

	dirty_log_get_stats(log, &s);
	shell_printf("dirty log: %s, %s; write faults %lu (spurious %lu), marks %lu "
		     "(bad %lu), pml drains %lu (full %lu, bad %lu), collected %lu in %lu rounds; "
		     "2 MiB pages split %lu, merged back %lu\n",
		     hw ? hw->name : "write-protect", on ? "logging" : "off (last session)",
		     s.faults, s.spurious, s.marks, s.bad_marks, s.hw_drains, s.hw_full,
		     s.hw_bad, s.collected, s.rounds, s.large_split, s.large_merged);
}

void dirtylog_show_map(struct vm *vm)
{
	struct dirty_map_census c;

	if (!vm->gpt_ready || dirty_log_map_census(&vm->dirty, &vm->hw.gpt, &c))
		return;
	shell_printf("map:        %lu x 2M, %lu x 4K", c.pages_2m, c.pages_4k);
	if (c.pages_1g)
		shell_printf(", %lu x 1G", c.pages_1g);
	shell_printf(", %lu tables\n", c.tables);
}

/* wp, or the hardware's name with an optional entry count (0: all). */
static int select_method(const char *name, const char *entries)
{
	const char *hw = dirty_hw_available();
	uint64_t n = 0;

	if (!strcmp(name, "wp") && !entries)
		return dirty_hw_select(false);
	if (hw && !strcmp(name, hw)) {
		if (entries && parse_u64(entries, 0, 512, &n)) {
			shell_error("debug", "log entries: 0 (all) to 512, not '%s'", entries);
			return -EINVAL;
		}
		dirty_hw_set_entries((unsigned)n);
		return dirty_hw_select(true);
	}
	shell_error("debug", "this CPU has no '%s' dirty logging (hardware: %s)", name,
		    hw ? hw : "none");
	return -ENODEV;
}

int cmd_debug_dirtylog(int argc, char **argv)
{
	struct vm *vm;

	if (argc == 1) {
		dirtylog_show_method();
		return 0;
	}
	if (argc > 3 || (argc == 3 && strcmp(argv[1], "pml"))) {
		shell_error("debug", "usage: debug dirtylog [wp | pml [ENTRIES] | NAME]");
		return -EINVAL;
	}
	if (!strcmp(argv[1], "wp") || !strcmp(argv[1], "pml")) {
		int rc = select_method(argv[1], argc == 3 ? argv[2] : NULL);

		if (!rc)
			dirtylog_show_method();
		return rc;
	}
	vm = vm_find(argv[1]);
	if (!vm) {
		shell_error("debug", "no guest named '%s' (see 'list')", argv[1]);
		return -ENOENT;
	}
	dirtylog_show_vm(vm);
	return 0;
}
