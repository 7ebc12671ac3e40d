#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The layering holds: tools/check-layers.py passes on the tree as it is, and
# fails on a copy of it with one include that points up a layer (the library
# including the shell, a device model including a VM, a driver including the
# migration code), naming the file and both layers.  The archives are also
# linked in order: a call from the library up into the shell must not link.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
check="$top/tools/check-layers.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

python3 "$check" "$top" || { echo "check-layers-test: the tree itself fails"; fail=1; }

# wrong_way FILE HEADER LAYER-FROM LAYER-TO
wrong_way() {
	rm -rf "$tmp/t"; mkdir -p "$tmp/t"
	(cd "$top" && cp -r --parents arch boot drivers hv "$tmp/t")
	printf '#include "%s"\n' "$2" >> "$tmp/t/$1"
	if out=$(python3 "$check" "$tmp/t" 2>&1); then
		echo "check-layers-test: $1 including $2 was accepted"; fail=1
	elif ! echo "$out" | grep -q "$1: includes $2: layer '$3' may not use '$4'"; then
		echo "check-layers-test: unexpected report for $1 -> $2: $out"; fail=1
	fi
}
wrong_way hv/lib/ring.c hv/shell/shell.h lib shell
wrong_way hv/vdev/pit.c hv/vm.h vdev core
wrong_way drivers/e1000.c hv/migrate/migrate.h drivers migrate
wrong_way hv/net/tcp.c arch/x86/apic.h net arch
wrong_way arch/x86/trap.c hv/mm/frame.h arch mm

# The link: a library object that calls up into a layer linked before it.
cat > "$tmp/up.c" <<'C'
void shell_only(void);
void lib_entry(void);
void lib_entry(void) { shell_only(); }
C
cat > "$tmp/shell.c" <<'C'
void shell_only(void);
void shell_only(void) { }
C
cat > "$tmp/top.c" <<'C'
void lib_entry(void);
void _start(void);
void _start(void) { lib_entry(); }
C
for f in up shell top; do gcc -c -fno-pic -o "$tmp/$f.o" "$tmp/$f.c"; done
ar rcs "$tmp/libshell.a" "$tmp/shell.o"
ar rcs "$tmp/liblib.a" "$tmp/up.o"
if ld -o "$tmp/a.out" "$tmp/top.o" "$tmp/libshell.a" "$tmp/liblib.a" 2>/dev/null; then
	echo "check-layers-test: an upward call linked"; fail=1
fi

if [ "$fail" = 0 ]; then
	echo "check-layers-test: passed"
else
	echo "check-layers-test: FAILED"
	exit 1
fi
