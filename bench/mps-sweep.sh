#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Benchmark: latency against offered load, up to saturation (rstream
# --mps).  Over TCP on loopback, evrdma's rstream and sockperf's
# ping-pong at the same rates, in turns; with --rxe, evrdma's over
# Soft-RoCE in the guest (tests/rxe/vm.sh; sockperf speaks no RDMA).
# Not a test: it asserts nothing.  Prints a Markdown table.
#
#   bench/mps-sweep.sh [-t SECS] [-S SIZE] [-m "RATE ..."] [--rxe]
#
# Round trips in microseconds, both tools': rstream --mps times each from
# its time on the schedule; sockperf prints half a round trip, timed from
# its send, doubled here.  "achieved" is each one's rate (a second).
# Both spin over TCP (rstream -T n, sockperf --nonblocked); over RDMA the
# client is -T a.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
ours=${RSTREAM:-$top/build/rstream}
secs=2
size=64
rates="1000 5000 10000 20000 40000 60000 80000 100000"
rxe=0
guest=0
while [ $# -gt 0 ]; do
	case $1 in
	-t) secs=$2; shift 2 ;;
	-S) size=$2; shift 2 ;;
	-m) rates=$2; shift 2 ;;
	--rxe) rxe=1; shift ;;
	--guest) guest=1; secs=$2 size=$3 rates=$4 ours=/opt/evr/rstream; break ;; # inside the guest (below)
	*) echo "usage: $0 [-t SECS] [-S SIZE] [-m \"RATE ...\"] [--rxe]" >&2; exit 1 ;;
	esac
done
[ -x "$ours" ] || { echo "bench: build first ($ours missing)" >&2; exit 1; }

# ev_row FILE: achieved p50 p99 p99.9 max from rstream's text output
ev_row() {
	awk '$1 == "name" && $2 == "samples" { getline; p50 = $4; p99 = $6; p999 = $7; mx = $8 }
	     $1 == "name" && $2 == "asked/s" { getline; a = $3 }
	     END { if (a == "") print "- - - - -"; else printf "%.0f %.1f %.1f %.1f %.1f\n", a, p50, p99, p999, mx }' "$1"
}

# sp_row FILE: the same from sockperf's ping-pong (its latency is half a
# round trip)
sp_row() {
	sed 's/\x1b\[[0-9;]*m//g' "$1" | awk '
	/\[Total Run\]/ { for (i = 1; i <= NF; i++) { if ($i ~ /^RunTime=/) { split($i, a, "="); t = a[2] + 0 }
	                                            if ($i ~ /^SentMessages=/) { split($i, b, "="); n = b[2] + 0 } } }
	/percentile 50.000/ { p50 = $NF * 2 } /percentile 99.000/ { p99 = $NF * 2 }
	/percentile 99.900/ { p999 = $NF * 2 } /<MAX> observation/ { mx = $NF * 2 }
	END { if (!t) print "- - - - -"; else printf "%.0f %.1f %.1f %.1f %.1f\n", n / t, p50, p99, p999, mx }'
}

# ev_at RATE ADDR BIND: one evrdma run at RATE ("max": unpaced)
ev_at() {
	local rate=$1 p=$((30000 + RANDOM % 20000)) opt=(--mps "$1") bind=()
	[ "$rate" = max ] && opt=(--percentiles)
	[ -n "${3:-}" ] && bind=(-b "$3")
	"$ours" "${T_OPT[@]}" -b "$2" -p "$p" --once >/dev/null 2>&1 &
	local sp=$!
	for _ in $(seq 100); do
		if [ "${T_OPT[*]}" = "-T s" ]; then
			ss -Hltn "sport = :$p" | grep -q . && break
		else
			rdma resource show cm_id 2>/dev/null | grep -q "state LISTEN .*pid $sp " && break
		fi
		sleep 0.05
	done
	timeout $((secs * 4 + 30)) "$ours" "${T_OPT[@]}" -s "$2" "${bind[@]}" -p "$p" \
		-S "$size" -C 1 -D "$secs" "${CLI_MODE[@]}" "${opt[@]}" >"$tmp/ev.out" 2>&1 || true
	wait "$sp" 2>/dev/null || true
	if [ "$rate" = max ]; then
		# unpaced: the rate is the row's iterations over its time
		awk '$1 == "custom" && NF == 8 { i = $4; sub(/k$/, "000", i); sub(/m$/, "000000", i); t = $6 + 0 }
		     $1 == "name" && $2 == "samples" { getline; printf "%.0f %.1f %.1f %.1f %.1f\n", (i + 0) / t, $4, $6, $7, $8 }' "$tmp/ev.out"
	else
		ev_row "$tmp/ev.out"
	fi
}

sp_at() {
	local rate=$1 p=$((30000 + RANDOM % 20000))
	sockperf sr --tcp -i 127.0.0.1 -p "$p" --nonblocked >/dev/null 2>&1 &
	local sp=$!
	for _ in $(seq 100); do ss -Hltn "sport = :$p" | grep -q . && break; sleep 0.05; done
	timeout $((secs * 4 + 30)) sockperf pp --tcp -i 127.0.0.1 -p "$p" -m "$size" \
		-t "$secs" --mps="$rate" --nonblocked >"$tmp/sp.out" 2>&1 || true
	kill "$sp" 2>/dev/null; wait "$sp" 2>/dev/null || true
	sp_row "$tmp/sp.out"
}

tmp=$(mktemp -d)
trap 'pkill -P $$ 2>/dev/null || true; rm -rf "$tmp"' EXIT

if [ "$rxe" = 1 ]; then
	# the host's side: boot the guest, run this script there
	log=$tmp/console.log
	"$top/tests/rxe/vm.sh" --prepare >&2
	echo "bench: booting the guest; progress below" >&2
	"$top/tests/rxe/vm.sh" --timeout "${EVR_RXE_TIMEOUT:-3600}" --log "$log" \
		--add "$ours=/opt/evr/rstream" --add "$top/tests/rxe=/opt/evr/tests" \
		"$top/bench/mps-sweep.sh" --guest "$secs" "$size" "$rates" 2>&1 |
		grep --line-buffered -a '^bench:' >&2 || true
	grep -a '^|' "$log" | tr -d '\r'
	exit 0
fi

if [ "$guest" = 1 ]; then
	# in the guest: evrdma over rxe, between its two addresses; the
	# client polls, then sleeps (-T a): two spinners on the guest's two
	# emulated CPUs would measure their contention
	T_OPT=()
	CLI_MODE=(-T a)
	echo "| offered/s | achieved/s | p50 | p99 | p99.9 | max |"
	echo "|---:|---:|---:|---:|---:|---:|"
	for r in $rates max; do
		echo "bench: rxe $r" >&2
		row=$(ev_at "$r" "$RXE_ADDR2" "$RXE_ADDR1")
		read -r a p50 p99 p999 mx <<<"$row"
		echo "| $r | $a | $p50 | $p99 | $p999 | $mx |"
	done
	exit 0
fi

command -v sockperf >/dev/null || { echo "bench: install sockperf (scripts/deps.sh --bench)" >&2; exit 1; }
# both tools spin (evrdma's default -T n; sockperf --nonblocked: its
# default sleeps in epoll_wait between messages, 55 us a round trip here)
T_OPT=(-T s)
CLI_MODE=()
echo "| offered/s | evrdma achieved/s | evrdma p50 | evrdma p99 | evrdma p99.9 | evrdma max | sockperf achieved/s | sockperf p50 | sockperf p99 | sockperf p99.9 | sockperf max |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for r in $rates max; do
	echo "bench: TCP $r" >&2
	row=$(ev_at "$r" 127.0.0.1)
	read -r ea e50 e99 e999 emx <<<"$row"
	row=$(sp_at "$r")
	read -r sa s50 s99 s999 smx <<<"$row"
	echo "| $r | $ea | $e50 | $e99 | $e999 | $emx | $sa | $s50 | $s99 | $s999 | $smx |"
done
