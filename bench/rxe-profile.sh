#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Profile evrdma's rstream against upstream's over Soft-RoCE, in one boot
# of the project's qemu guest: each tool's client and server under
# `perf record -e cpu-clock` (TCG has no hardware counters; the software
# clock works), then under `strace -c` for system call counts.  Prints the
# hottest symbols, the split by library and the counts, per side.
# A developer's tool, not a test and not a benchmark (the tracing itself
# costs time): the wall times it prints are only for orientation.
#
#   bench/rxe-profile.sh [RSTREAM OPTIONS]    default: -S 65536 -C 100 -I 2
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$top/build}
[ -x "$build/rstream" ] || { echo "profile: build first ($build/rstream missing)" >&2; exit 1; }
for t in perf strace; do
	command -v "$t" >/dev/null ||
		{ echo "profile: $t is not installed (apt-get install linux-perf strace)" >&2; exit 1; }
done
[ $# -gt 0 ] || set -- -S 65536 -C 100 -I 2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$top/tests/rxe/vm.sh" --prepare >&2
"$top/tests/rxe/vm.sh" --timeout "${EVR_RXE_TIMEOUT:-1800}" --log "$log" \
	--add "$build/rstream=/opt/evr/rstream" \
	--add "$(command -v perf)=/opt/evr/perf" \
	--add "$(command -v strace)=/opt/evr/strace" \
	--add "$top/tests/rxe=/opt/evr/tests" \
	"$top/bench/rxe-profile-guest.sh" "$@" >/dev/null 2>&1 || true
sed -n '/^@@ profile/,/^@@ done/p' "$log" | tr -d '\r' | grep -v '^@@ done'
