#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The whole test suite: install what is missing, build, run the Check unit
# tests and the end-to-end tests, and print the summary.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/deps.sh"
"$top/scripts/build.sh"
cd "$top/build"
status=0
make -j2 check || status=$?
# The RDMA suite in the Soft-RoCE guest (skips loudly where qemu cannot run)
rxe=0
"$top/tests/rxe/check-rxe.sh" "$top/build" || rxe=$?
echo
echo "== Check unit tests"
grep -h -E '^[0-9]+%: Checks: ' tests/check_*.log || true
echo "== end-to-end tests"
grep -h -E '^[0-9]+ passed, [0-9]+ failed' tests/e2e/*.log || true
if [ "$status" -ne 0 ]; then
	echo "== failures (from the logs)"
	for log in $( (grep -l -E '^:test-result: (FAIL|ERROR)' tests/*.trs tests/e2e/*.trs 2>/dev/null || true) |
		sed 's/\.trs$/.log/'); do
		echo "--- $log"
		tail -n 40 "$log"
	done
fi

echo "== Soft-RoCE suite (check-rxe)"
grep -a -h -E 'passed, [0-9]+ failed' tests/rxe-guest.log 2>/dev/null || true
case $rxe in
0) echo "check-rxe: passed" ;;
77) echo "check-rxe: SKIPPED (see above)" ;;
*) echo "check-rxe: FAILED"; status=1 ;;
esac
pass=$( (grep -l '^:test-result: PASS' tests/*.trs tests/e2e/*.trs 2>/dev/null || true) | wc -l)
fail=$( (grep -l -E '^:test-result: (FAIL|ERROR)' tests/*.trs tests/e2e/*.trs 2>/dev/null || true) | wc -l)
[ "$rxe" = 0 ] && pass=$((pass + 1))
[ "$rxe" = 0 ] || [ "$rxe" = 77 ] || fail=$((fail + 1))
echo "$pass passed, $fail failed"
exit "$status"
