#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Benchmark: TCP ping-pong latency on loopback, three tools in turns in one
# run: evrdma's rstream, upstream's rstream (rdmacm-utils) and sockperf
# (ping-pong mode), the same message sizes, one-way latency (half the
# round trip, which is what rstream's usec/xfer and sockperf's "latency"
# both mean).  Medians over rounds; ratios evrdma / other (below 1:
# evrdma faster).  For evrdma also the median of its per-round-trip p50
# (--percentiles), against sockperf's p50.  Not a test: it asserts nothing.
#
#   bench/pingpong-tcp.sh [-r rounds] [-t rstream-T-letters] [-o out.md] [sizes...]
# -t a: both rstreams (upstream takes one letter per -T) in async mode (they sleep in poll, as sockperf does);
# the default is upstream's non-blocking mode, which spins: on a loaded
# 2-CPU machine two spinning peers make the mean meaningless (the p50
# columns then still compare).
# needs: scripts/deps.sh --bench (sockperf)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
ours=${RSTREAM:-$top/build/rstream}
upstream=${UPSTREAM_RSTREAM:-/usr/bin/rstream}
rounds=3
out=
mode=(-T s)
while [ $# -gt 0 ]; do
	case $1 in
	-r) rounds=$2; shift 2 ;;
	-o) out=$2; shift 2 ;;
	-t) mode+=(-T "$2"); shift 2 ;;
	-*) echo "usage: $0 [-r rounds] [-t letters] [-o out.md] [sizes...]" >&2; exit 1 ;;
	*) break ;;
	esac
done
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(64 4096 65000)
for b in "$ours" "$upstream" "$(command -v sockperf || echo sockperf)"; do
	[ -x "$b" ] || { echo "bench: $b missing (build; scripts/deps.sh --bench)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'pkill -P $$ 2>/dev/null || true; rm -rf "$tmp"' EXIT
port=$((30000 + $$ % 20000))

. "$top/bench/lib.sh"
iters() { # round trips per run: about a second each on loopback
	if [ "$1" -le 1024 ]; then echo 40000; elif [ "$1" -le 16384 ]; then echo 20000; else echo 5000; fi
}

# run WHO SIZE: prints "WHO SIZE usec p50" (p50 "-" when unknown)
run() {
	local who=$1 sz=$2 p n o
	port=$((port + 1)); p=$port; n=$(iters "$sz")
	case $who in
	sockperf)
		sockperf server --tcp -i 127.0.0.1 -p "$p" >/dev/null 2>&1 &
		local sp=$!
		wait_listen "$p"
		o=$(timeout 60 sockperf ping-pong --tcp -i 127.0.0.1 -p "$p" -m "$sz" -t 1 2>&1 |
			sed 's/\x1b\[[0-9;]*m//g')
		kill "$sp" 2>/dev/null; wait "$sp" 2>/dev/null || true
		awk -v sz="$sz" '/avg-latency=/ { sub(/.*avg-latency=/, ""); a = $1 + 0 }
			/percentile 50.000/ { m = $NF } END { print "sockperf", sz, a, m }' <<<"$o" ;;
	up|ev)
		local bin=$upstream extra=() srv=()
		[ "$who" = ev ] && { bin=$ours; extra=(--percentiles); srv=(--once); }
		"$bin" "${mode[@]}" -p "$p" -S "$sz" -C 1 -I "$n" "${srv[@]}" >/dev/null 2>&1 &
		local sp=$!
		wait_listen "$p"
		o=$(timeout 120 "$bin" "${mode[@]}" -s 127.0.0.1 -p "$p" -S "$sz" -C 1 -I "$n" "${extra[@]}" 2>&1) ||
			echo "bench: $who failed at $sz bytes" >&2
		wait "$sp" 2>/dev/null || true
		# table row: usec/xfer is field 8; percentile row: p50_us field 4
		awk -v who="$who" -v sz="$sz" '$1 == "custom" && NF == 8 { u = $8 }
			$1 == "custom" && NF == 9 { m = $4 / 2 }
			END { print who, sz, u, (m == "" ? "-" : m) }' <<<"$o" ;;
	esac
}

for r in $(seq "$rounds"); do
	echo "bench: round $r of $rounds" >&2
	for sz in "${sizes[@]}"; do
		case $((r % 3)) in
		1) order=(up ev sockperf) ;;
		2) order=(ev sockperf up) ;;
		0) order=(sockperf up ev) ;;
		esac
		for who in "${order[@]}"; do run "$who" "$sz"; done
	done
done >"$tmp/raw"

awk '
function median(arr, n,   i, j, t) {
	for (i = 2; i <= n; i++) for (j = i; j > 1 && arr[j-1] > arr[j]; j--) {
		t = arr[j]; arr[j] = arr[j-1]; arr[j-1] = t }
	return n % 2 ? arr[(n+1)/2] : (arr[n/2] + arr[n/2+1]) / 2
}
$3 != "" {
	k = $1 SUBSEP $2; n[k]++; u[k, n[k]] = $3; if ($4 != "-") { pn[k]++; p[k, pn[k]] = $4 }
	if (!($2 in seen)) { seen[$2] = 1; order[++ns] = $2 }
}
function med(who, sz, arr, cnt,   k, m, j, a) {
	k = who SUBSEP sz; m = cnt[k]
	for (j = 1; j <= m; j++) a[j] = arr[k, j]
	return m ? median(a, m) : 0
}
END {
	print "| bytes | upstream rstream usec | evrdma usec | sockperf usec | evrdma/upstream | evrdma/sockperf | evrdma p50 usec | sockperf p50 usec |"
	print "|---:|---:|---:|---:|---:|---:|---:|---:|"
	for (i = 1; i <= ns; i++) {
		s = order[i]
		up = med("up", s, u, n); ev = med("ev", s, u, n); sp = med("sockperf", s, u, n)
		evp = med("ev", s, p, pn); spp = med("sockperf", s, p, pn)
		printf "| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", s, up, ev, sp,
			up ? ev / up : 0, sp ? ev / sp : 0, evp, spp
	}
}' "$tmp/raw" | tee "${out:-/dev/null}"
echo "bench: $rounds rounds; rstream ${mode[*]}; one-way latency (half a round trip), medians; TCP on loopback; $(nproc) CPUs, $(uname -r)" >&2
