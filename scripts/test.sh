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
make -j2 check >/dev/null 2>&1 || status=$?
# Per-test results and Check's own summary lines
for log in tests/*.log tests/e2e/*.log; do
	[ -f "$log" ] || continue
	grep -h -E '^[0-9]+%: Checks: |^(PASS|FAIL|SKIP|ERROR)[: ]' "$log" || true
done
grep -E '^# (TOTAL|PASS|SKIP|XFAIL|FAIL|XPASS|ERROR):' test-suite.log 2>/dev/null ||
	sed -n '/^====/,/^====/p' test-suite.log
if [ "$status" -ne 0 ]; then
	echo "--- failures ---"
	sed -n '/^FAIL\|^ERROR/,$p' test-suite.log | head -200
fi
pass=$(grep -c '^PASS' test-suite.log 2>/dev/null || true)
fail=$(grep -cE '^(FAIL|ERROR)' test-suite.log 2>/dev/null || true)
exit "$status"
