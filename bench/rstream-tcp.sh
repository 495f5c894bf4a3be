#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Benchmark: evrdma rstream against upstream rstream (rdmacm-utils) over
# kernel TCP on loopback, with the same options, in turns, several rounds.
# Prints per-row medians and ratios.  Not a test: it asserts nothing.
#
#   bench/rstream-tcp.sh [-r rounds] [-o out.md] [-- rstream options...]
#   e.g. bench/rstream-tcp.sh -r 5 -- -S 4096 -C 1000 -I 10
#
# usec ratio = evrdma / upstream (below 1: evrdma faster);
# Gb/s ratio = evrdma / upstream (above 1: evrdma faster).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
ours=${RSTREAM:-$top/build/rstream}
upstream=${UPSTREAM_RSTREAM:-/usr/bin/rstream}
rounds=5
out=
while [ $# -gt 0 ]; do
	case $1 in
	-r) rounds=$2; shift 2 ;;
	-o) out=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "usage: $0 [-r rounds] [-o out.md] [-- rstream options]" >&2; exit 1 ;;
	esac
done
opts=("$@")
[ -x "$ours" ] || { echo "bench: build first ($ours missing)" >&2; exit 1; }
[ -x "$upstream" ] || { echo "bench: install rdmacm-utils ($upstream missing)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'pkill -P $$ 2>/dev/null || true; rm -rf "$tmp"' EXIT
port=$((30000 + $$ % 20000))

. "$top/bench/lib.sh"

# run_pair NAME BINARY ROUND: server and client of one implementation
run_pair() {
	local name=$1 bin=$2 r=$3 p off=0
	[ "$name" = up ] && off=1
	p=$((port + r * 2 + off))
	local sopts=(-T s -p "$p" "${opts[@]}")
	if [ "$name" = ev ]; then
		"$bin" "${sopts[@]}" --once >/dev/null 2>&1 &
	else
		"$bin" "${sopts[@]}" >/dev/null 2>&1 &
	fi
	local spid=$!
	wait_listen "$p"
	timeout 600 "$bin" -T s -s 127.0.0.1 -p "$p" "${opts[@]}" \
		>"$tmp/$name.$r" 2>&1 || echo "bench: $name client failed in round $r" >&2
	timeout 10 tail --pid="$spid" -f /dev/null || kill "$spid" 2>/dev/null || true
	wait "$spid" 2>/dev/null || true
}

for r in $(seq "$rounds"); do
	echo "bench: round $r of $rounds" >&2
	if [ $((r % 2)) -eq 1 ]; then
		run_pair up "$upstream" "$r"; run_pair ev "$ours" "$r"
	else
		run_pair ev "$ours" "$r"; run_pair up "$upstream" "$r"
	fi
done

awk -f "$top/bench/ratios.awk" "$tmp"/up.* "$tmp"/ev.* | tee "${out:-/dev/null}"
echo "bench: $rounds rounds, options: -T s ${opts[*]:-(default run)}; medians; $(nproc) CPUs, $(uname -r)" >&2
