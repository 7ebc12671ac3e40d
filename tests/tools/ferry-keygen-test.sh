#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tools/ferry-keygen writes a key whole or not at all and never overwrites
# one: a second run, a dangling symlink named ferry.key and a failed write
# each end with a clear message (no traceback) and leave nothing behind
# that blocks the next run; ferry.pub is replaced, never written through a
# symlink.
set -eu
keygen="$(cd "$(dirname "$0")/../.." && pwd)/tools/ferry-keygen"
py=${PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "ferry-keygen-test: $*"; fail=1; }

# run DIR: ferry-keygen DIR, stdout to $tmp/out, stderr to $tmp/err
run() { "$py" "$keygen" "$1" >"$tmp/out" 2>"$tmp/err"; }
# refused DIR WORDS: it fails, says WORDS, shows no traceback
refused() {
	if run "$1"; then
		bad "$1: succeeded"
	elif ! grep -q "$2" "$tmp/err" || grep -q Traceback "$tmp/err"; then
		bad "$1: no clear message:"; cat "$tmp/err"
	fi
}

run "$tmp/a" || { bad "first run failed:"; cat "$tmp/err"; }
[ "$(stat -c %a "$tmp/a/ferry.key")" = 600 ] || bad "ferry.key not mode 600"
[ "$(stat -c %s "$tmp/a/ferry.key")" = 144 ] || bad "ferry.key not 144 bytes"
[ "$(cat "$tmp/out")" = "$(cat "$tmp/a/ferry.pub")" ] || bad "printed key is not ferry.pub"
[ -z "$(find "$tmp/a" -name '.*')" ] || bad "temporary files left: $(ls -A "$tmp/a")"
sum=$(sha256sum < "$tmp/a/ferry.key")
refused "$tmp/a" "exists; not overwriting"
[ "$(sha256sum < "$tmp/a/ferry.key")" = "$sum" ] || bad "second run changed the key"

mkdir "$tmp/b"
ln -s "$tmp/nowhere" "$tmp/b/ferry.key"
refused "$tmp/b" "exists; not overwriting"
[ -e "$tmp/nowhere" ] && bad "wrote through a dangling symlink"

# a write that fails (file size limit: Python ignores SIGXFSZ, gets EFBIG;
# its messages come through a pipe, which has no such limit)
mkdir "$tmp/c"
if err=$( (ulimit -f 0; "$py" "$keygen" "$tmp/c" 2>&1 >/dev/null) ); then
	bad "a failed write succeeded"
elif ! echo "$err" | grep -q "nothing written" || echo "$err" | grep -q Traceback; then
	bad "failed write: no clear message: $err"
fi
[ -z "$(ls -A "$tmp/c")" ] || bad "a failed write left: $(ls -A "$tmp/c")"
run "$tmp/c" || bad "no retry after a failed write: $(cat "$tmp/err")"

mkdir "$tmp/d"
echo precious > "$tmp/elsewhere"
ln -s "$tmp/elsewhere" "$tmp/d/ferry.pub"
run "$tmp/d" || bad "with a ferry.pub symlink: $(cat "$tmp/err")"
[ "$(cat "$tmp/elsewhere")" = precious ] || bad "wrote ferry.pub through a symlink"
[ "$(cat "$tmp/out")" = "$(cat "$tmp/d/ferry.pub")" ] || bad "ferry.pub not replaced"

[ "$fail" = 0 ] && echo "ferry-keygen-test: passed"
exit "$fail"
