#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Benchmark, not a test: what evrdma-probed costs per RDMA peer, in the
# RDMA fabric of the 7.3 guest (bench/fabric-cost-guest.sh: fabrics of
# SHAPES, "2x2 2x4 4x4" racks x hosts, an rdma mesh of every host,
# probes every INTERVAL s (2), WINDOW s (60) measured).  The table is
# doc/fabric.md's "What a mesh costs over RDMA".  About 6 minutes.
#
#   bench/fabric-cost.sh [BUILD_DIR]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
[ -x "$build/evrdma-probed" ] || { echo "fabric-cost.sh: build first (no $build/evrdma-probed)" >&2; exit 1; }
export EVR_RXE_KERNEL=backports
"$top/tests/rxe/vm.sh" --prepare >&2
runner=$(mktemp)
log=$(mktemp)
trap 'rm -f "$runner" "$log"' EXIT
cat >"$runner" <<GUEST
#!/bin/bash
export EVR_BIN=/opt/evr SHAPES='${SHAPES:-2x2 2x4 4x4}' INTERVAL=${INTERVAL:-2} WINDOW=${WINDOW:-60}
bash /opt/evr/tests/fabric-cost-guest.sh
GUEST
rc=0
"$top/tests/rxe/vm.sh" --timeout "${EVR_RXE_TIMEOUT:-1500}" --log "$log" \
	--add "$build/evrdma-probed=/opt/evr/evrdma-probed" \
	--add "$top/tests/rxe=/opt/evr/tests" \
	--add "$top/bench/fabric-cost-guest.sh=/opt/evr/tests/fabric-cost-guest.sh" \
	"$runner" >/dev/null 2>&1 || rc=$?
grep -a -E '^\|' "$log" || true
echo "fabric-cost.sh: guest exit status $rc"
exit "$rc"
