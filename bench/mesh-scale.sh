#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Benchmark: what a mesh of 1,000 peers costs one agent, full or selected
# (issue 29), by hand; not a test, it asserts nothing and CI does not run
# it.  A peers file of MS_GROUPS groups (25) of MS_SIZE hosts (40),
# label rack=rGG, each at its own address 127.1.GG.MM (every 127.x.y.z is
# loopback on Linux), this host's own line one of group r00 (127.0.0.1);
# one evrdma-probed, its responder on every address of a port of its
# own, answers them all (no root needed; traffic only to loopback).  One
# agent probes, in turn:
#   full      every peer of the file: 999 probes;
#   sample    "sample": 63 of them an interval, in turn: the same runs as
#             selected, but still a probe and its series for each of 999;
#   selected  "group_by": "rack", "across": 1: its rack's 39 and one of
#             each of the 24 other racks: 63 probes.
# Each over MS_SECS seconds (20) after its first interval: the agent's
# CPU (utime + stime of /proc/PID/stat over the span, % of one core), its
# RSS (VmRSS), mesh runs a second, and /metrics: its bytes, its series
# (sample lines) and the time a scrape takes (the best of 3, curl).
# Mesh probes: TCP, 64 bytes, 10 round trips, every MS_INTERVAL s (10),
# poll_us 0 (never polling, as a large fleet runs).
#
#   [MS_GROUPS=25] [MS_SIZE=40] [MS_SECS=20] [MS_INTERVAL=10] \
#       bench/mesh-scale.sh [BUILD_DIR]
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
PROBED=$build/evrdma-probed
G=${MS_GROUPS:-25}
S=${MS_SIZE:-40}
SECS=${MS_SECS:-20}
PI=${MS_INTERVAL:-10}
[ -x "$PROBED" ] || { echo "bench: no $PROBED (scripts/build.sh first)" >&2; exit 1; }
command -v curl >/dev/null || { echo "bench: curl is not installed" >&2; exit 1; }
if [ "$G" -gt 250 ] || [ "$S" -gt 250 ]; then
	echo "bench: MS_GROUPS and MS_SIZE: 250 at most (127.1.G.M)" >&2
	exit 1
fi
T=$(mktemp -d /tmp/bench-mesh-scale.XXXXXX)
declare -A PID=()
cleanup() {
	local p
	for p in "${PID[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${PID[@]}"; do wait "$p" 2>/dev/null; done
	if [ -n "${MS_KEEP:-}" ]; then echo "bench: kept $T" >&2; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
log() { echo "bench: $*" >&2; }
# a free TCP port on 127.0.0.1
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_http() { # PORT PID
	local _
	for _ in $(seq 1 50); do
		curl -s --max-time 1 -o /dev/null "http://127.0.0.1:$1/metrics" && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.2
	done
	return 1
}
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
runs() { # FILE: the mesh's runs, all peers
	awk '/^evrdma_probe_runs_total\{probe="mesh:/ { s += $NF } END { print s + 0 }' "$1"
}
HZ=$(getconf CLK_TCK)

# the peers file: this host is r00's first (127.0.0.1)
for g in $(seq 0 $((G - 1))); do
	for m in $(seq 0 $((S - 1))); do
		a=127.1.$g.$((m + 1))
		[ "$g" = 0 ] && [ "$m" = 0 ] && a=127.0.0.1
		printf 'h%02d-%02d %s rack=r%02d\n' "$g" "$m" "$a" "$g"
	done
done >"$T/peers"
RP=$(free_port) RH=$(free_port) AH=$(free_port)
cat >"$T/resp.json" <<EOF
{ "listen_address": "127.0.0.1", "listen_port": $RH,
  "responders": [ { "transport": "tcp", "port": $RP, "max_conns": 4096 } ] }
EOF
"$PROBED" -c "$T/resp.json" 2>"$T/resp.err" &
PID[resp]=$!
wait_http "$RH" "${PID[resp]}" || { log "the responder did not start"; cat "$T/resp.err" >&2; exit 1; }

measure() { # NAME EXTRA-MESH-KEYS
	local name=$1 extra=$2 pid t0 t1 c0 c1 r0 r1 best=999999 ms peers sel
	cat >"$T/$name.json" <<EOF
{ "listen_address": "127.0.0.1", "listen_port": $AH,
  "mesh": { "peers_file": "$T/peers", "transport": "tcp", "port": $RP,
            "size": 64, "iters": 10, "interval_s": $PI, "timeout_s": 5,
            "poll_us": 0 $extra } }
EOF
	"$PROBED" -c "$T/$name.json" 2>"$T/$name.err" &
	pid=$!
	PID[$name]=$pid
	wait_http "$AH" "$pid" || { log "$name: the agent did not start"; cat "$T/$name.err" >&2; exit 1; }
	sleep "$PI" # its first interval: every probe started
	curl -s --max-time 10 -o "$T/$name.0" "http://127.0.0.1:$AH/metrics"
	c0=$(ticks "$pid") t0=$(date +%s%N) r0=$(runs "$T/$name.0")
	sleep "$SECS"
	c1=$(ticks "$pid") t1=$(date +%s%N)
	curl -s --max-time 10 -o "$T/$name.1" "http://127.0.0.1:$AH/metrics"
	r1=$(runs "$T/$name.1")
	for _ in 1 2 3; do
		ms=$(curl -s --max-time 10 -o "$T/$name.s" -w '%{time_total}' \
			"http://127.0.0.1:$AH/metrics" | awk '{ printf "%d", $1 * 1000 }')
		[ "$ms" -lt "$best" ] && best=$ms
	done
	peers=$(awk '$1 == "evrdma_mesh_peers" { print $2 }' "$T/$name.s")
	sel=$(awk '$1 == "evrdma_mesh_peers_selected" { print $2 }' "$T/$name.s")
	printf '%-9s %6s %8s %7.1f %8d %8.1f %9d %8d %6d\n' "$name" "$peers" \
		"${sel:--}" \
		"$(awk -v c=$((c1 - c0)) -v hz="$HZ" -v ns=$((t1 - t0)) 'BEGIN { print 100 * c / hz / (ns / 1e9) }')" \
		"$(rss_kb "$pid")" \
		"$(awk -v r=$((r1 - r0)) -v ns=$((t1 - t0)) 'BEGIN { print r / (ns / 1e9) }')" \
		"$(wc -c <"$T/$name.s")" "$(grep -vc '^#' "$T/$name.s")" "$best"
	kill "$pid"
	wait "$pid" 2>/dev/null
	unset "PID[$name]"
}

log "$((G * S)) peers in $G groups of $S, interval ${PI} s, ${SECS} s a case (about $(( 3 * (PI + SECS + 3) )) s)"
printf '%-9s %6s %8s %7s %8s %8s %9s %8s %6s\n' case probes selected 'cpu%' rss_kB 'runs/s' \
	scrape_B series ms
measure full ''
measure sample ", \"sample\": $((S - 1 + G - 1))"
measure selected ', "group_by": "rack", "across": 1'
