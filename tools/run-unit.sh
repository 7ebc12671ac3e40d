#!/bin/sh
# Run every host unit-test binary (cmocka); show each one's result line, the
# whole output of any that fails, and a closing count of test cases.
pass=0; fail=0; cases=0; failed=""
log=$(mktemp)
for t in "$@"; do
	if "$t" >"$log" 2>&1; then
		pass=$((pass + 1))
		n=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test(s)\./\1/p' "$log" | awk '{ s += $1 } END { print s + 0 }')
		cases=$((cases + ${n:-0}))
		printf '  %-28s %s test cases passed\n' "$(basename "$t")" "${n:-?}"
	else
		fail=$((fail + 1)); failed="$failed $(basename "$t")"
		cat "$log"
	fi
done
rm -f "$log"
echo "unit test binaries: $pass passed${failed:+, failed:$failed}"
echo "unit: $cases passed, $fail failed"
[ "$fail" = 0 ]
