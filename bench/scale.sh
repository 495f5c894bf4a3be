#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Benchmark: rstream -c N against one evrdma server over kernel TCP on
# loopback, for N = 1, 10, 100, 1000 and 10000 connections, one fixed
# custom test.  Records the aggregate throughput, the memory each
# connection costs the client and the server beyond its data buffer, and
# the CPU time per transfer; prints a markdown table and plots it.  Not a
# test: it asserts nothing.
#
#   bench/scale.sh [-n "1 10 100 1000"] [-r rounds] [-m io] [-o table.md]
#                  [-p plot.png] [-- rstream test options]
#   defaults: -n "1 10 100 1000 10000" -r 1 -m a -- -S 4096 -C 10 -I 10
#   (each N runs -r times, with a fresh server each time; the round with
#   the median throughput is the one shown)
#   bench/scale.sh -P table.md [-p plot.png]: plot a table printed before
#
# Memory: the peak RSS (VmHWM) over what the same process holds with no
# connection (the server: before the run; the client: the run with one
# connection), divided by the peak number of connections open at once
# (sockets sampled from /proc/PID/fd every 50 ms; all N when a run is
# too short to sample), minus the connection's data buffer: the
# server's is the test size, the client's none (its -c connections share
# one buffer).  CPU: client + server user + system time over all transfers
# (a transfer is one message one way: N x count x iterations x 2); the
# clocks tick every 10 ms, so runs of a few ms read 0.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bin=${RSTREAM:-$top/build/rstream}
conns="1 10 100 1000 10000"
rounds=1
replot=
mode=a
out=
png=$top/bench/scale.png
while [ $# -gt 0 ]; do
	case $1 in
	-n) conns=$2; shift 2 ;;
	-m) mode=$2; shift 2 ;;
	-r) rounds=$2; shift 2 ;;
	-o) out=$2; shift 2 ;;
	-p) png=$2; shift 2 ;;
	-P) replot=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "usage: $0 [-n \"N...\"] [-r rounds] [-m a|n] [-o out.md] [-p out.png] [-P table.md] [-- rstream options]" >&2
	   exit 1 ;;
	esac
done
opts=("$@")
[ ${#opts[@]} -gt 0 ] || opts=(-S 4096 -C 10 -I 10)
[ -n "$replot" ] || [ -x "$bin" ] || { echo "bench: build first ($bin missing)" >&2; exit 1; }
command -v gnuplot >/dev/null || echo "bench: gnuplot missing, no plot" >&2

# the test's numbers, for the data buffer and the transfer count
size=1000 count=1000 iters=1
set -- "${opts[@]}"
while [ $# -gt 0 ]; do
	case $1 in
	-S) size=$2; shift 2 ;;
	-C) count=$2; shift 2 ;;
	-I) iters=$2; shift 2 ;;
	*) shift ;;
	esac
done
case $size in
*k) size=$(( ${size%k} * 1024 )) ;;
*m) size=$(( ${size%m} * 1048576 )) ;;
esac

tmp=$(mktemp -d)
spid=
sampler=
cleanup() {
	[ -n "$sampler" ] && kill "$sampler" 2>/dev/null
	[ -n "$spid" ] && kill "$spid" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
port=$((30000 + $$ % 20000))
hz=$(getconf CLK_TCK)

. "$top/bench/lib.sh"
kib() { awk -v k="$2" '$1 == k":" {print $2}' "/proc/$1/status"; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
socks() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 -lname 'socket:*' 2>/dev/null | wc -l; }
# the most sockets PID held at once, sampled every 50 ms until it exits
peak_fds() { # PID OUTFILE
	local pid=$1 n max=0
	while kill -0 "$pid" 2>/dev/null; do
		n=$(socks "$pid")
		[ "$n" -gt "$max" ] && max=$n && echo "$max" >"$2"
		sleep 0.05
	done
}

# Plot a table this script printed: throughput on the left axis; memory
# and CPU on the right, from 100 connections up only (below that one page
# of RSS or one clock tick is more than the whole figure).
plot() { # TABLE.md
	command -v gnuplot >/dev/null || return 0
	awk -F'|' '$2 ~ /^ *[0-9]+ *$/ && $4 ~ /[0-9]/ {
		n = $2 + 0; m = n >= 100
		printf "%d %s %s %s %s\n", n, $4 + 0, m ? $7 + 0 : "?",
			m ? $8 + 0 : "?", m ? $9 + 0 : "?" }' "$1" >"$tmp/plot.dat"
	[ -s "$tmp/plot.dat" ] || return 0
	local term=png
	gnuplot -e 'set terminal png' 2>/dev/null || term=pngcairo
	gnuplot <<GP
set terminal $term size 900,560
set output '$png'
set title "rstream -c N over TCP loopback (-T $mode ${opts[*]}), one evrdma server"
set datafile missing '?'
set logscale x
set xrange [0.7:14000]
set xlabel 'connections'
set ylabel 'aggregate Gb/s'
set y2label 'KiB per connection | CPU usec per transfer'
set ytics nomirror
set y2tics
set yrange [0:*]
set y2range [0:*]
set key below
set grid
plot '$tmp/plot.dat' using 1:2 with linespoints lw 2 title 'aggregate Gb/s (left)', \\
     '' using 1:3 axes x1y2 with linespoints title 'client KiB/conn', \\
     '' using 1:4 axes x1y2 with linespoints title 'server KiB/conn beyond its buffer', \\
     '' using 1:5 axes x1y2 with linespoints title 'CPU usec/transfer'
GP
	echo "bench: plot in $png" >&2
}

# -P TABLE: only plot a table printed before
if [ -n "$replot" ]; then
	plot "$replot"
	exit 0
fi

echo "bench: $bin -T s -T $mode ${opts[*]}, connections: $conns" >&2
rows=()
base_cli=
for n in $conns; do
  : >"$tmp/rounds.$n"
  for r in $(seq 1 "$rounds"); do
	p=$((port + (n + r * 7) % 1000))
	"$bin" -T s -T "$mode" -p "$p" >/dev/null 2>"$tmp/srv.$n.err" &
	spid=$!
	wait_listen "$p" 200 || exit 1
	sleep 0.2
	if [ -z "$base_cli" ]; then
		# the client's baseline: the same test on one connection
		/usr/bin/time -f "%M" -o "$tmp/time.base" "$bin" -T s -T "$mode" \
			-s 127.0.0.1 -p "$p" -c 1 "${opts[@]}" >/dev/null 2>&1
		base_cli=$(cat "$tmp/time.base")
	fi
	s_base=$(kib "$spid" VmRSS)
	s_fd0=$(socks "$spid") # the listener
	s_t0=$(ticks "$spid")
	echo 0 >"$tmp/sfd.$n"
	peak_fds "$spid" "$tmp/sfd.$n" &
	sampler=$!
	/usr/bin/time -f "%M %U %S %e" -o "$tmp/time.$n" \
		"$bin" -T s -T "$mode" -s 127.0.0.1 -p "$p" -c "$n" "${opts[@]}" \
		>"$tmp/cli.$n.out" 2>"$tmp/cli.$n.err" &
	cpid=$!
	echo 0 >"$tmp/cfd.$n"
	# /usr/bin/time's child is rstream
	sleep 0.05
	rpid=$(pgrep -P "$cpid" | head -1 || true)
	[ -n "$rpid" ] && peak_fds "$rpid" "$tmp/cfd.$n" &
	csampler=$!
	rc=0
	wait "$cpid" || rc=$?
	wait "$csampler" 2>/dev/null || true
	s_hwm=$(kib "$spid" VmHWM)
	s_t1=$(ticks "$spid")
	kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null || true
	sampler=
	kill "$spid"; wait "$spid" 2>/dev/null || true
	spid=
	if [ "$rc" != 0 ]; then
		echo "bench: -c $n failed (exit $rc):" >&2
		cat "$tmp/cli.$n.err" >&2
		echo "-1 | $n | failed (exit $rc) | | | | | | |" >>"$tmp/rounds.$n"
		continue
	fi
	read -r c_hwm c_u c_s wall <"$tmp/time.$n"
	row=$(grep -E '^custom ' "$tmp/cli.$n.out")
	gbps=$(awk '{print $7}' <<<"$row")
	usec=$(awk '{print $8}' <<<"$row")
	# a run shorter than the sampling may be missed: then all N
	c_peak=$(( $(cat "$tmp/cfd.$n") ))
	s_peak=$(( $(cat "$tmp/sfd.$n") - s_fd0 ))
	[ "$c_peak" -gt 0 ] || c_peak=$n
	[ "$s_peak" -gt 0 ] || s_peak=$n
	xfers=$(( n * count * iters * 2 ))
	read -r c_mem s_mem cpu < <(awk -v ch="$c_hwm" -v cb="$base_cli" \
		-v cp="$c_peak" -v n="$n" -v sh="$s_hwm" -v sb="$s_base" \
		-v sp="$s_peak" -v sz="$size" -v cu="$c_u" -v cs="$c_s" \
		-v st="$(( s_t1 - s_t0 ))" -v hz="$hz" -v x="$xfers" 'BEGIN {
		cm = n > 1 ? (ch - cb) / cp : 0
		sm = (sh - sb) / sp - sz / 1024
		cpu = (cu + cs + st / hz) * 1e6 / x
		printf "%.2f %.2f %.2f\n", cm, sm, cpu }')
	echo "$gbps | $n | $wall | $gbps | $usec | $c_peak / $s_peak | $c_mem | $s_mem | $cpu |" \
		>>"$tmp/rounds.$n"
	echo "bench: -c $n round $r: $wall s, $gbps Gb/s" >&2
  done
	# the round with the median throughput stands for N
	med=$(sort -t'|' -k1,1g "$tmp/rounds.$n" | sed -n "$(( ($(wc -l <"$tmp/rounds.$n") + 1) / 2 ))p")
	row="|${med#*|}"
	rows+=("$row")
done

table=$(
	echo "| connections | wall s | aggregate Gb/s | usec/xfer (mean per conn) | peak open conns client / server | client KiB/conn | server KiB/conn beyond its ${size}-byte buffer | CPU usec/xfer |"
	echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
	printf '%s\n' "${rows[@]}"
)
echo "$table"
[ -n "$out" ] && echo "$table" >"$out"
echo "$table" >"$tmp/table.md"
plot "$tmp/table.md"
