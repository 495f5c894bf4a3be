#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Benchmark: many connections in one loop, against as many upstream
# processes.  A 64-byte ping-pong (-S 64 -C 1) on N connections over
# kernel TCP on loopback, N in 1 4 16 256, in -T n (non-blocking) and
# -T a (async):
#   evrdma   one server process and one client process, -c N, every
#            connection in each one's loop;
#   upstream N server processes on N ports and N client processes (an
#            upstream server serves one connection at a time: N processes
#            are its only way to N connections).
# Each connection runs I iterations (I = TOTAL / N, at least 50), the N
# started together.  Reported per case: round trips a second in all (N x
# I over the longest connection's own time, from its first sync to its
# end: process and connection start-up left out, as for one); fairness,
# the slowest connection's rate over the fastest's (a connection's rate:
# its iterations over its own time, from upstream's or evrdma's
# per-connection row); and evrdma's throughput over upstream's.  Not a
# test: it asserts nothing.  -b K runs K busy tasks (a shell loop each,
# for the whole run) beside both: a host whose CPUs others want too.
# -f: evrdma's server forks a child per connection (-T f: N + 1
# processes, as upstream's N).  -p CPU: every process of the run on that
# one CPU (taskset), a host with one CPU for them all.
#
#   bench/fair.sh [-n "1 4 16 256"] [-m "n a"] [-t TOTAL] [-b K] [-f] [-p CPU] [-o out.md]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
ours=${RSTREAM:-$top/build/rstream}
upstream=${UPSTREAM_RSTREAM:-/usr/bin/rstream}
ns="1 4 16 256"
modes="n a"
total=40000
busy=0
tmo=120          # seconds a client may take
out=
fork=
pin=()
while [ $# -gt 0 ]; do
	case $1 in
	-f) fork=1; shift ;;
	-p) [[ $2 =~ ^[0-9]{1,4}$ ]] ||
		{ echo "bench: -p $2: a CPU number" >&2; exit 1; }
	    pin=(taskset -c "$2"); shift 2 ;;
	-n) ns=$2; shift 2 ;;
	-m) modes=$2; shift 2 ;;
	-t) total=$2; shift 2 ;;
	-o) out=$2; shift 2 ;;
	-b) busy=$2; shift 2 ;;
	*) echo "usage: $0 [-n \"1 4 16 256\"] [-m \"n a\"] [-t total] [-b busy] [-f] [-p cpu] [-o out.md]" >&2
	   exit 1 ;;
	esac
done
[[ $busy =~ ^[0-9]{1,2}$ ]] && [ "$busy" -le 64 ] ||
	{ echo "bench: -b $busy: a count of busy tasks (0 to 64)" >&2; exit 1; }
for b in "$ours" "$upstream"; do
	[ -x "$b" ] || { echo "bench: $b missing (build; apt-get install rdmacm-utils)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'pkill -P $$ 2>/dev/null || true; rm -rf "$tmp"' EXIT
base=$((20000 + $$ % 10000))
. "$top/bench/lib.sh"
ulimit -n 65536 2>/dev/null || true
# the busy tasks: each ends with this script (the trap) or after an hour
for _ in $(seq "$busy"); do
	"${pin[@]}" timeout 3600 sh -c 'while :; do :; done' &
done

# stats FILE: "rate fairness" from lines "iters seconds" (one a
# connection)
stats() {
	awk '{ n += $1; r = $1 / $2; if ($2 > t) t = $2
		if (NR == 1 || r < lo) lo = r; if (r > hi) hi = r }
		END { if (NR && t > 0 && hi > 0) printf "%.0f %.2f\n", n / t, lo / hi
		      else print "- -" }' "$1"
}

# evrdma N MODE ITERS: one server, one client -c N
evr() {
	local n=$1 m=$2 it=$3 p=$base spid
	local t=(-T s)
	[ "$m" = n ] || t+=(-T "$m")
	"${pin[@]}" "$ours" "${t[@]}" ${fork:+-T f} -b 127.0.0.1 -p "$p" \
		>/dev/null 2>&1 &
	spid=$!
	wait_listen "$p"
	"${pin[@]}" timeout "$tmo" "$ours" "${t[@]}" -s 127.0.0.1 -p "$p" -S 64 -C 1 -I "$it" \
		-c "$n" --per-conn --json >"$tmp/ev.json" 2>"$tmp/ev.err" ||
		echo "bench: evrdma -T $m -c $n failed: $(tail -1 "$tmp/ev.err")" >&2
	kill "$spid" 2>/dev/null || true
	wait "$spid" 2>/dev/null || true
	grep '"type":"result"' "$tmp/ev.json" | grep -v '"connections"' |
		sed 's/.*"iters":\([0-9]*\).*"elapsed_s":\([0-9.e+-]*\).*/\1 \2/' \
		>"$tmp/ev.rows"
	stats "$tmp/ev.rows"
}

# upstream N MODE ITERS: N servers, N clients
up() {
	local n=$1 m=$2 it=$3 i pids=() cpids
	local t=(-T s)
	[ "$m" = n ] || t+=(-T "$m")
	for i in $(seq "$n"); do
		"${pin[@]}" "$upstream" "${t[@]}" -p $((base + i)) -S 64 -C 1 -I "$it" \
			>/dev/null 2>&1 &
		pids+=($!)
	done
	for i in $(seq "$n"); do wait_listen $((base + i)) 200; done
	cpids=()
	for i in $(seq "$n"); do
		"${pin[@]}" timeout "$tmo" "$upstream" "${t[@]}" -s 127.0.0.1 -p $((base + i)) \
			-S 64 -C 1 -I "$it" >"$tmp/upc.$i" 2>&1 &
		cpids+=($!)
	done
	wait "${cpids[@]}" 2>/dev/null || true
	for i in "${pids[@]}"; do kill "$i" 2>/dev/null || true; done
	wait 2>/dev/null || true
	# upstream's row: name bytes xfers iters total time(s) Gb/sec usec/xfer
	cat "$tmp"/upc.* | awk '/^custom/ { t = $6; sub(/s$/, "", t)
		it = $4; if (it ~ /k$/) { sub(/k$/, "", it); it *= 1000 }
		print it, t }' >"$tmp/up.rows"
	rm -f "$tmp"/upc.*
	[ "$(wc -l <"$tmp/up.rows")" = "$n" ] ||
		echo "bench: upstream -T $m x $n: $(wc -l <"$tmp/up.rows") of $n finished" >&2
	stats "$tmp/up.rows"
}

{
	echo "| -T | N | evrdma round trips/s | evrdma slowest/fastest | upstream round trips/s | upstream slowest/fastest | throughput ratio |"
	echo "|---|---:|---:|---:|---:|---:|---:|"
	for m in $modes; do
		for n in $ns; do
			it=$((total / n))
			[ "$it" -ge 50 ] || it=50
			echo "bench: -T $m N=$n, $it iterations each" >&2
			read -r er ef < <(evr "$n" "$m" "$it")
			read -r ur uf < <(up "$n" "$m" "$it")
			awk -v m="$m" -v n="$n" -v er="$er" -v ef="$ef" -v ur="$ur" -v uf="$uf" 'BEGIN {
				r = (er == "-" || ur == "-" || ur == 0) ? "-" : sprintf("%.2f", er / ur)
				printf "| %s | %s | %s | %s | %s | %s | %s |\n", m, n, er, ef, ur, uf, r }'
		done
	done
} | tee "${out:-/dev/null}"
echo "bench: 64-byte ping-pong, $total round trips a case (at least 50 a connection), TCP loopback; throughput ratio = evrdma / upstream (above 1: evrdma more); $(nproc) CPUs${pin:+, all on CPU ${pin[2]}}, $busy busy task(s) beside${fork:+, evrdma server -T f}, $(uname -r)" >&2
