#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Runs inside the Soft-RoCE guest (bench/rstream-rxe.sh --instr boots
# it): the user-space instructions a 64-byte round trip costs the client,
# upstream's rstream and ours, in the default mode and in -T a, counted
# by callgrind.  Each client runs twice, SHORT and LONG round trips
# against a server that is not under callgrind; the difference of the two
# totals over LONG - SHORT is the cost of one round trip, start-up and
# teardown cancelling.  Under callgrind the client is the slow side: the
# reply is mostly there when it asks, so the count is the work a round
# trip takes, not time spent spinning (a spin would only add to it).
# Prints "instr: WHO MODE ITERS TOTAL" lines and "instr: WHO MODE per-rt N".
# usage: rxe-instr-guest.sh [SHORT LONG]
set -u
A2=$RXE_ADDR2
T=$(mktemp -d)
. "${EVR_BIN:-/opt/evr}/tests/lib-guest.sh"
export VALGRIND_LIB=/opt/vg
short=${1:-2000}
long=${2:-6000}
for who in up ev; do
	if [ "$who" = up ]; then bin=/usr/bin/rstream; srvx=(); else bin=/opt/evr/rstream; srvx=(--once); fi
	for mode in def a; do
		m=(); [ "$mode" = a ] && m=(-T a)
		tot=()
		for n in "$short" "$long"; do
			if ! server "$bin" -b "$A2" "${srvx[@]}" -S 64 -C 1 -I "$n" "${m[@]}"; then
				echo "instr: $who $mode: server did not start"; continue 2
			fi
			timeout 600 /opt/vg/valgrind --tool=callgrind --callgrind-out-file="$T/cg.out" \
				"$bin" -s "$A2" -S 64 -C 1 -I "$n" "${m[@]}" >"$T/c.out" 2>&1 ||
				echo "instr: $who $mode $n: client failed: $(tail -1 "$T/c.out")"
			reap "$sp" 30 >/dev/null 2>&1
			t=$(awk '/^totals:/ { print $2 }' "$T/cg.out")
			echo "instr: $who $mode $n ${t:-none}"
			tot+=("${t:-0}")
		done
		echo "instr: $who $mode per-rt $(( (tot[1] - tot[0]) / (long - short) ))"
	done
done
echo "instr: done"
