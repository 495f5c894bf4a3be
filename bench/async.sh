#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Benchmark: latency and CPU per transfer of evrdma's rstream against
# upstream's (rdmacm-utils), over kernel TCP on loopback, in each I/O mode
# (-T a async, -T n non-blocking, -T b blocking), each side's server given
# the same options as its client, the two tools in alternating turns.
# Cases: 64-byte ping-pong (-S 64 -C 1 -I N) and a 1 MiB stream
# (-S 1048576 -C 100 -I 10).  Medians over rounds.  CPU per transfer is
# the client's and the server's user+system time (wait4's rusage, through
# /usr/bin/time) over the transfers both made (2 x C x I).  Not a test:
# it asserts nothing.
#
#   bench/async.sh [-r rounds] [-m "a n b"] [-i pingpong-iters] [-o out.md]
#
# Ratios are evrdma / upstream: below 1, evrdma is faster or cheaper.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
ours=${RSTREAM:-$top/build/rstream}
upstream=${UPSTREAM_RSTREAM:-/usr/bin/rstream}
rounds=5
modes="a n b"
ppiters=10000
out=
while [ $# -gt 0 ]; do
	case $1 in
	-r) rounds=$2; shift 2 ;;
	-m) modes=$2; shift 2 ;;
	-i) ppiters=$2; shift 2 ;;
	-o) out=$2; shift 2 ;;
	*) echo "usage: $0 [-r rounds] [-m \"a n b\"] [-i iters] [-o out.md]" >&2
	   exit 1 ;;
	esac
done
for b in "$ours" "$upstream" /usr/bin/time; do
	[ -x "$b" ] || { echo "bench: $b missing (build; apt-get install rdmacm-utils time)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'pkill -P $$ 2>/dev/null || true; rm -rf "$tmp"' EXIT
port=$((30000 + $$ % 20000))
. "$top/bench/lib.sh"

# run NAME BIN MODE CASE ROUND -C -I -S: one server and one client;
# writes "usec cpu_s" to $tmp/NAME.MODE.CASE.ROUND
run() {
	local name=$1 bin=$2 mode=$3 case=$4 r=$5 c=$6 i=$7 s=$8 p spid row off=0
	[ "$name" = up ] && off=1
	p=$((port + (r % 50) * 2 + off))
	local t=(-T s)
	[ "$mode" = n ] || t+=(-T "$mode")
	local once=()
	[ "$name" = ev ] && once=(--once)
	/usr/bin/time -f "%U %S" -o "$tmp/srv.time" \
		"$bin" "${t[@]}" -p "$p" "${once[@]}" -S "$s" -C "$c" -I "$i" \
		>/dev/null 2>&1 &
	spid=$!
	wait_listen "$p"
	/usr/bin/time -f "%U %S" -o "$tmp/cli.time" timeout 300 \
		"$bin" "${t[@]}" -s 127.0.0.1 -p "$p" -S "$s" -C "$c" -I "$i" \
		>"$tmp/cli.out" 2>&1 || echo "bench: $name -T $mode $case failed in round $r" >&2
	timeout 10 tail --pid="$spid" -f /dev/null || kill "$spid" 2>/dev/null || true
	wait "$spid" 2>/dev/null || true
	row=$(grep -E '^custom' "$tmp/cli.out" | tail -1 || true)
	[ -n "$row" ] || return 0
	awk -v row="$row" 'FNR == 1 { cpu += $1 + $2 }
		END { n = split(row, f, " "); print f[n], cpu }' \
		"$tmp/srv.time" "$tmp/cli.time" >"$tmp/$name.$mode.$case.$r"
}

cases="pingpong stream"
for r in $(seq "$rounds"); do
	echo "bench: round $r of $rounds" >&2
	for m in $modes; do
		for cs in $cases; do
			case $cs in
			pingpong) args=(1 "$ppiters" 64) ;;
			stream) args=(100 10 1048576) ;;
			esac
			if [ $((r % 2)) -eq 1 ]; then
				run up "$upstream" "$m" "$cs" "$r" "${args[@]}"
				run ev "$ours" "$m" "$cs" "$r" "${args[@]}"
			else
				run ev "$ours" "$m" "$cs" "$r" "${args[@]}"
				run up "$upstream" "$m" "$cs" "$r" "${args[@]}"
			fi
		done
	done
done

# median COLUMN FILES...: the median of one column over the rounds
median() {
	local col=$1
	shift
	cat "$@" 2>/dev/null | awk -v c="$col" '{ print $c }' | sort -g |
		awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2); else print "-" }'
}

{
	echo "| case | -T | evrdma usec/xfer | upstream usec/xfer | ratio | evrdma CPU usec/xfer | upstream CPU usec/xfer | ratio |"
	echo "|---|---|---|---|---|---|---|---|"
	for m in $modes; do
		for cs in $cases; do
			case $cs in
			pingpong) xfers=$((2 * ppiters)) ;;
			stream) xfers=$((2 * 100 * 10)) ;;
			esac
			eu=$(median 1 "$tmp"/ev."$m"."$cs".*)
			uu=$(median 1 "$tmp"/up."$m"."$cs".*)
			ec=$(median 2 "$tmp"/ev."$m"."$cs".*)
			uc=$(median 2 "$tmp"/up."$m"."$cs".*)
			awk -v cs="$cs" -v m="$m" -v eu="$eu" -v uu="$uu" -v ec="$ec" \
			    -v uc="$uc" -v x="$xfers" 'BEGIN {
				ecx = ec == "-" ? "-" : sprintf("%.2f", ec * 1e6 / x)
				ucx = uc == "-" ? "-" : sprintf("%.2f", uc * 1e6 / x)
				r1 = (eu == "-" || uu == "-" || uu == 0) ? "-" : sprintf("%.2f", eu / uu)
				r2 = (ecx == "-" || ucx == "-" || ucx == 0) ? "-" : sprintf("%.2f", ecx / ucx)
				printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", cs, m, eu, uu, r1, ecx, ucx, r2 }'
		done
	done
} | tee "${out:-/dev/null}"
echo "bench: $rounds rounds alternating; ping-pong -S 64 -C 1 -I $ppiters, stream -S 1048576 -C 100 -I 10; medians; CPU = client + server user+system; $(nproc) CPUs, $(uname -r)" >&2
