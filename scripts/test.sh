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
echo
echo "== Check unit tests"
grep -h -E '^[0-9]+%: Checks: ' tests/check_*.log || true
echo "== end-to-end tests"
grep -h -E '^[0-9]+ passed, [0-9]+ failed' tests/e2e/*.log || true
if [ "$status" -ne 0 ]; then
	echo "== failures (from the logs)"
	for log in $(grep -l -E '^(FAIL|ERROR)' tests/*.trs tests/e2e/*.trs 2>/dev/null |
		sed 's/\.trs$/.log/'); do
		echo "--- $log"
		tail -n 40 "$log"
	done
fi
pass=$(grep -l '^:test-result: PASS' tests/*.trs tests/e2e/*.trs 2>/dev/null | wc -l)
fail=$(grep -l -E '^:test-result: (FAIL|ERROR)' tests/*.trs tests/e2e/*.trs 2>/dev/null | wc -l)
echo "$pass passed, $fail failed"
exit "$status"
