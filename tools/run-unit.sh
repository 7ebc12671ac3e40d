#!/bin/sh
# Run every host unit-test binary (cmocka); show each one's result line, the
# whole output of any that fails, and a closing count of test cases.
# A binary that runs longer than FERRY_UNIT_TIMEOUT seconds (300) is killed
# and fails, by name: a hung test must not hang `make unit`.
limit=${FERRY_UNIT_TIMEOUT:-300}
pass=0; fail=0; cases=0; failed=""
log=$(mktemp)
for t in "$@"; do
	if timeout -k 10 "$limit" "$t" >"$log" 2>&1; then
		pass=$((pass + 1))
		n=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test(s)\./\1/p' "$log" | awk '{ s += $1 } END { print s + 0 }')
		cases=$((cases + ${n:-0}))
		printf '  %-28s %s test cases passed\n' "$(basename "$t")" "${n:-?}"
	else
		rc=$?
		fail=$((fail + 1)); failed="$failed $(basename "$t")"
		cat "$log"
		[ "$rc" = 124 ] || [ "$rc" = 137 ] &&
			echo "unit: $(basename "$t") killed after $limit s (timeout)"
	fi
done
rm -f "$log"
echo "unit test binaries: $pass passed${failed:+, failed:$failed}"
echo "unit: $cases passed, $fail failed"
[ "$fail" = 0 ]
