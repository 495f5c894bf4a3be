#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Runs inside the Soft-RoCE guest for bench/rxe-profile.sh.
# usage: rxe-profile-guest.sh RSTREAM OPTIONS...
set -u
B=/opt/evr
A2=$RXE_ADDR2
T=$(mktemp -d)
. "$B/tests/lib-guest.sh"

# a server under a tracer: its pid is the tracer's, so wait for any
# listening CM id rather than one of that pid
traced_server() {
	"$@" >"$T/s.out" 2>&1 &
	sp=$!
	local i
	for i in $(seq 300); do
		rdma resource show cm_id 2>/dev/null | grep -q "state LISTEN" && return 0
		kill -0 "$sp" 2>/dev/null || break
		sleep 0.05
	done
	echo "profile: the server did not start: $(tail -1 "$T/s.out")"
	return 1
}

# stop the server (upstream's never ends by itself) and its tracer
stop_server() {
	local p
	for p in /proc/[0-9]*; do
		tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -q "^$1 -b " &&
			kill -INT "${p#/proc/}" 2>/dev/null
	done
	reap "$sp" 20 >/dev/null 2>&1
}

# run WHO TRACER...: client and server of WHO, each under TRACER OUTFILE
run() {
	local who=$1 bin srv=() s
	shift
	if [ "$who" = evrdma ]; then bin=$B/rstream; srv=(--once); else bin=/usr/bin/rstream; fi
	traced_server "$@" "$T/s-$who" "$bin" -b "$A2" "${srv[@]}" "${ARGS[@]}" || return
	s=$(now)
	"$@" "$T/c-$who" "$bin" -s "$A2" "${ARGS[@]}" >"$T/c.out" 2>&1
	echo "$who client: $(since "$s") s wall, $(tail -1 "$T/c.out")"
	sleep 0.5
	stop_server "$bin"
}
perf_rec() { local o=$1; shift; "$B/perf" record -q -F 1999 -e cpu-clock -g -o "$o" "$@"; }
strace_c() { local o=$1; shift; "$B/strace" -c -f -o "$o" "$@"; }
report() {
	"$B/perf" report -i "$1" --stdio --no-children --sort "$2" 2>/dev/null |
		grep -E '^ +[0-9.]+%' | head -"$3"
}

ARGS=("$@")
echo "@@ profile: rstream ${ARGS[*]}"
for who in upstream evrdma; do
	run "$who" perf_rec
	for side in c s; do
		echo
		echo "== $who $([ $side = c ] && echo client || echo server): hottest symbols (cpu-clock samples)"
		report "$T/$side-$who" dso,sym 25
		echo "-- by library"
		report "$T/$side-$who" dso 8
	done
done
for who in upstream evrdma; do
	run "$who" strace_c
	for side in c s; do
		echo
		echo "== $who $([ $side = c ] && echo client || echo server): system calls"
		head -14 "$T/$side-$who"
	done
done
echo "@@ done"
exit 0
