#!/bin/sh
# Run every host unit-test binary; fail if any fails, and say how many ran.
pass=0; fail=0; failed=""
for t in "$@"; do
	if "$t"; then pass=$((pass + 1)); else fail=$((fail + 1)); failed="$failed $(basename "$t")"; fi
done
echo "unit test binaries: $pass passed, $fail failed${failed:+ ($failed )}"
[ "$fail" = 0 ]
