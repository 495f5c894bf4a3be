#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Inside the Soft-RoCE guest (bench/nicfail.sh boots it): what upstream's
# tools and ours do when the device under them is deleted, side by side,
# then the daemon's campaign (tests/rxe/guest-nicfail.sh with
# NICFAIL_CYCLES deletions and returns of each device).  Prints a table:
# how long after the deletion began each tool ended, and how long the
# deletion took (Soft-RoCE waits for every process that holds the
# device; upstream's are killed after HOLD_S).
set -u
B=${EVR_BIN:-/opt/evr}
A1=$RXE_ADDR1
A2=$RXE_ADDR2
G=${RXE_MCAST:-239.1.1.1}
HOLD_S=${HOLD_S:-20}
T=$(mktemp -d)
. "$B/tests/lib-guest.sh"

readd() {
	local i
	rdma link add "$1" type rxe netdev "$2" 2>/dev/null
	for i in $(seq 100); do
		rdma link show "$1/1" 2>/dev/null | grep -q 'state ACTIVE' && break
		sleep 0.1
	done
	sleep 1
}

# case NAME PID: delete rxe0 under PID (a process on A1); $1's row: when
# the process ended (or "held, killed at HOLD_S"), when the deletion
# returned
case_row() {
	local name=$1 pid=$2 t0 dp end=held i
	t0=$EPOCHREALTIME
	rdma link delete rxe0 &
	dp=$!
	for i in $(seq $((HOLD_S * 10))); do
		kill -0 "$pid" 2>/dev/null || { end=$(since "$t0"); break; }
		sleep 0.1
	done
	[ "$end" = held ] && { kill -9 "$pid" 2>/dev/null; end="still running at ${HOLD_S} s: killed"; }
	wait "$dp"
	printf '| %s | %s | %s s |\n' "$name" "$end" "$(since "$t0")"
	wait "$pid" 2>/dev/null
	readd rxe0 veth0
}

echo "| tool, device deleted under it | it ended after | the deletion took |"
echo "|---|---|---|"
for who in upstream evrdma; do
	if [ $who = upstream ]; then R=/usr/bin/rstream M=/usr/bin/mckey; else R=$B/rstream M=$B/mckey; fi
	# the client's device
	server $B/rstream -b "$A2" -T a --stall-timeout 60
	$R -s "$A2" -b "$A1" -S 64 -C 100000000 -T a >"$T/c.out" 2>&1 &
	cp=$!
	wait_conn "$cp" 30 && sleep 0.5
	case_row "$who rstream client" "$cp"
	kill "$sp" 2>/dev/null
	reap "$sp" 10 >/dev/null
	# mckey's receiver, waiting for 1000 messages (upstream sizes its CQ
	# by the count: 1,000,000 fails at once with "unable to create CQ")
	if [ $who = upstream ]; then
		$M -m "$G" -b "$A1" -C 1000 >"$T/r.out" 2>&1 &
	else
		$M -m "$G" -b "$A1" -C 1000 --deadline 600 >"$T/r.out" 2>&1 &
	fi
	rp=$!
	sleep 2
	case_row "$who mckey receiver" "$rp"
done
echo
echo "campaign: ${NICFAIL_CYCLES:-20} deletions and returns of each device under one evrdma-probed"
NICFAIL_CYCLES=${NICFAIL_CYCLES:-20} bash "$B/tests/guest-nicfail.sh"
