#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Runs inside the 7.3 Soft-RoCE guest (bench/fabric-cost.sh boots it):
# what an evrdma-probed agent costs per RDMA peer.  For each fabric shape
# RACKSxPER in SHAPES (tests/rxe/fabric.sh), one agent per host with an
# rdma responder and an rdma mesh of every other host (the configuration
# of doc/fabric.md: 10 round trips of 64 bytes a run, probes every
# INTERVAL s), a first interval to settle, then WINDOW seconds measured:
# each agent's CPU (/proc/PID/stat), RSS, QPs (rdma resource show qp),
# its mesh runs per second (/metrics), and its host's RoCE traffic (eth0's
# bytes both ways, per second).  One table row per shape.
set -u
P=${EVR_BIN:-/opt/evr}/evrdma-probed
SHAPES=${SHAPES:-2x2 2x4 4x4}
INTERVAL=${INTERVAL:-2}
WINDOW=${WINDOW:-60}
T=$(mktemp -d)
. "${EVR_BIN:-/opt/evr}/tests/lib-guest.sh"
. "${EVR_BIN:-/opt/evr}/tests/fabric.sh"
HZ=$(getconf CLK_TCK 2>/dev/null || echo 100)
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
bytes() { ip netns exec "$1" cat /proc/net/dev | awk -F'[: ]+' '$2 == "eth0" { print $3 + $11 }'; }
runs() { # N: host N's mesh runs so far
	ip netns exec "h$1" bash -c 'exec 3<>/dev/tcp/127.0.0.1/9471 || exit 1
		printf "GET /metrics HTTP/1.0\r\n\r\n" >&3; cat <&3' 2>/dev/null |
		awk '$1 ~ /^evrdma_probe_runs_total\{probe="mesh:/ { s += $2 } END { print s + 0 }'
}
printf '| hosts | peers | runs/s per host (model %s) | CPU %% per agent | ... per peer | RSS KiB per agent | QPs per agent | RoCE KB/s per host |\n' "(N-1)/$INTERVAL"
echo '|---|---|---|---|---|---|---|---|'
for shape in $SHAPES; do
	r=${shape%x*}; per=${shape#*x}
	fab_up "$r" "$per" >"$T/up.err" 2>&1 || { echo "| $shape: fabric up failed: $(tail -1 "$T/up.err") |"; fab_down; continue; }
	n=$((r * per))
	: >"$T/peers"
	for i in $(seq $n); do echo "h$i $(fab_addr "$i") rack=r$(fab_rack "$i")" >>"$T/peers"; done
	declare -a ap=()
	for i in $(seq $n); do
		cat >"$T/h$i.json" <<JSON
{ "listen_address": "127.0.0.1", "listen_port": 9471,
  "responders": [ { "transport": "rdma", "port": 7471, "bind": "$(fab_addr "$i")" } ],
  "mesh": { "peers_file": "$T/peers", "transport": "rdma", "port": 7471,
            "kind": "latency", "iters": 10, "interval_s": $INTERVAL, "timeout_s": 5 } }
JSON
		ip netns exec "h$i" "$P" -c "$T/h$i.json" >"$T/h$i.log" 2>&1 &
		ap[$i]=$!
	done
	sleep $((INTERVAL * 3 + 5))
	declare -a t0=() b0=() r0=()
	for i in $(seq $n); do t0[$i]=$(ticks "${ap[$i]}"); b0[$i]=$(bytes "h$i"); r0[$i]=$(runs "$i"); done
	s0=$EPOCHREALTIME
	sleep "$WINDOW"
	el=$(awk -v a="$s0" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')
	rdma resource show qp >"$T/qp" 2>/dev/null
	cpu=0 mem=0 qps=0 by=0 rs=0
	for i in $(seq $n); do
		cpu=$(awk -v c="$cpu" -v a="${t0[$i]}" -v b="$(ticks "${ap[$i]}")" -v hz="$HZ" -v e="$el" 'BEGIN { print c + (b - a) / hz / e * 100 }')
		mem=$((mem + $(rss "${ap[$i]}")))
		qps=$((qps + $(grep -c "pid ${ap[$i]} " "$T/qp")))
		by=$((by + $(bytes "h$i") - b0[$i]))
		rs=$(awk -v s="$rs" -v a="${r0[$i]}" -v b="$(runs "$i")" 'BEGIN { print s + b - a }')
	done
	awk -v n="$n" -v cpu="$cpu" -v mem="$mem" -v q="$qps" -v by="$by" -v rs="$rs" -v e="$el" 'BEGIN {
		p = n - 1
		printf "| %d | %d | %.2f | %.2f | %.3f | %d | %.1f | %.1f |\n",
			n, p, rs / n / e, cpu / n, cpu / n / p, mem / n, q / n, by / n / e / 1000 }'
	for i in $(seq $n); do kill -TERM "${ap[$i]}" 2>/dev/null; done
	for i in $(seq $n); do reap "${ap[$i]}" 10 >/dev/null 2>&1; done
	fab_down
done
