#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Benchmark, not a test: when the NIC fails, upstream's tools beside ours
# in the same Soft-RoCE guest (bench/nicfail-guest.sh: a device deleted
# under upstream's and evrdma's rstream client and mckey receiver, how
# long each took to end and the deletion to return), then the 20-cycle
# campaign of tests/rxe/guest-nicfail.sh (NICFAIL_CYCLES=20: deletions and
# returns of the responder's and the prober's device under one
# evrdma-probed), then, in a soft-iWARP guest (tests/rxe/vm.sh --siw),
# tests/rxe/guest-siwlink.sh's 20 link down/up cycles of each side under
# one evrdma-probed (Soft-RoCE cannot take those: guest-nicfail.sh,
# section 6).  About 6 minutes.
#
#   bench/nicfail.sh [BUILD_DIR]      (HOLD_S=20: how long upstream's
#                                      tools are given before SIGKILL)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
for p in rstream mckey evrdma-probed; do
	[ -x "$build/$p" ] || { echo "nicfail.sh: build first (no $build/$p)" >&2; exit 1; }
done
"$top/tests/rxe/vm.sh" --prepare >&2
runner=$(mktemp)
log=$(mktemp)
trap 'rm -f "$runner" "$log"' EXIT
cat >"$runner" <<GUEST
#!/bin/bash
export EVR_BIN=/opt/evr HOLD_S=${HOLD_S:-20} NICFAIL_CYCLES=${NICFAIL_CYCLES:-20}
bash /opt/evr/tests/nicfail-guest.sh
GUEST
rc=0
"$top/tests/rxe/vm.sh" --timeout "${EVR_RXE_TIMEOUT:-1200}" --log "$log" \
	--add "$build/rstream=/opt/evr/rstream" \
	--add "$build/mckey=/opt/evr/mckey" \
	--add "$build/evrdma-probed=/opt/evr/evrdma-probed" \
	--add "$top/tests/rxe=/opt/evr/tests" \
	--add "$top/bench/nicfail-guest.sh=/opt/evr/tests/nicfail-guest.sh" \
	"$runner" >/dev/null 2>&1 || rc=$?
grep -a -E '^\||^campaign|^(PASS|FAIL)|^# |passed, [0-9]+ failed' "$log" || true
echo "nicfail.sh: guest exit status $rc"
cat >"$runner" <<GUEST
#!/bin/bash
export EVR_BIN=/opt/evr NICFAIL_CYCLES=${NICFAIL_CYCLES:-20}
bash /opt/evr/tests/guest-siwlink.sh
GUEST
rc2=0
EVR_RXE_SIW=1 "$top/tests/rxe/vm.sh" --timeout "${EVR_RXE_TIMEOUT:-1200}" --log "$log" \
	--add "$build/rstream=/opt/evr/rstream" \
	--add "$build/evrdma-probed=/opt/evr/evrdma-probed" \
	--add "$top/tests/rxe=/opt/evr/tests" \
	"$runner" >/dev/null 2>&1 || rc2=$?
grep -a -E '^(PASS|FAIL)|^# |passed, [0-9]+ failed' "$log" || true
echo "nicfail.sh: soft-iWARP guest exit status $rc2"
[ "$rc" = 0 ] && rc=$rc2
exit "$rc"
