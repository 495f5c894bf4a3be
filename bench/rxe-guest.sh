#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Runs inside the Soft-RoCE guest (bench/rstream-rxe.sh boots it): evrdma's
# rstream against itself and upstream's against itself over rxe, the same
# options, in turns (who goes first alternates by round).  Prints each
# client's table between markers for the host to collect:
#   @@ begin CASE WHO ROUND  ...rows...  @@ end
# usage: rxe-guest.sh ROUNDS DEFAULT_ROUNDS [CASES] [rxe|iwarp]
#   CASES: the names of the cases to run, space-separated (default all)
#   iwarp: over siw1's address (tests/rxe/vm.sh --siw), which soft-iWARP
#   pins against RLIMIT_MEMLOCK even for root: the limit is lifted
set -u
R=${EVR_BIN:-/opt/evr}/rstream
# a second evrdma build, when bench/rstream-rxe.sh -B gave one: it runs
# as a third side ("eb", at both ends), in the same rounds
RB=${EVR_BIN:-/opt/evr}/rstream_b
U=/usr/bin/rstream
A2=$RXE_ADDR2
rounds=${1:-3}
drounds=${2:-1}
only=${3:-}
if [ "${4:-rxe}" = iwarp ]; then
	[ -n "${SIW_ADDR2:-}" ] || { echo "bench: no siw in this guest"; exit 1; }
	A2=$SIW_ADDR2
	ulimit -l unlimited
fi
T=$(mktemp -d)
. "${EVR_BIN:-/opt/evr}/tests/lib-guest.sh"

# CPU seconds (user + system) of the children this shell has waited for,
# from a file `times` wrote (times itself must run in this shell: a
# subshell's children are its own)
cpu_of() {
	awk 'NR == 2 { n = split($0, a, / +/); s = 0
		for (i = 1; i <= n; i++) { split(a[i], m, /[ms]/); s += m[1] * 60 + m[2] }
		printf "%.3f\n", s }' "$1"
}

# one CASE WHO ROUND OPTIONS...
#   WHO: ev (evrdma at both ends), up (upstream at both ends), eb (the
#   second evrdma build at both ends), and the mixed pairings eu (evrdma
#   client, upstream server) and ue (the reverse)
one() {
	local c=$1 who=$2 r=$3 sbin cbin srv=() cli=()
	shift 3
	# EV_OPTS: options of evrdma's alone (both its sides), e.g. a poll
	# budget upstream has no option for
	case $who in
	ev|ue) sbin=$R; srv=(--once ${EV_OPTS:-}) ;;
	eb) sbin=$RB; srv=(--once ${EV_OPTS:-}) ;;
	*) sbin=$U ;;
	esac
	case $who in
	ev|eu) cbin=$R; cli=(${EV_OPTS:-}) ;;
	eb) cbin=$RB; cli=(${EV_OPTS:-}) ;;
	*) cbin=$U ;;
	esac
	if ! server "$sbin" -b "$A2" "${srv[@]}" "$@"; then
		echo "bench: $who server did not start ($c)"; return
	fi
	times >"$T/t0"
	timeout 1200 "$cbin" -s "$A2" "${cli[@]}" "$@" >"$T/c.out" 2>&1 ||
		echo "bench: $who client failed in round $r of $c: $(tail -1 "$T/c.out")"
	times >"$T/t1"
	reap "$sp" 20 >/dev/null 2>&1
	times >"$T/t2"
	t0=$(cpu_of "$T/t0"); t1=$(cpu_of "$T/t1"); t2=$(cpu_of "$T/t2")
	# the CPU each side spent (rusage of the waited-for process)
	echo "@@ cpu $c $who $r $(awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "%.3f %.3f", b - a, c - b }')"
	echo "@@ begin $c $who $r"
	cat "$T/c.out"
	echo "@@ end"
}

# case NAME ROUNDS OPTIONS...
case_() {
	local c=$1 n=$2 r
	shift 2
	[ -z "$only" ] || [[ " $only " == *" $c "* ]] || return 0
	echo "bench: case $c: ${*:-(no options)}${EV_OPTS:+ (evrdma also $EV_OPTS)}"
	for r in $(seq "$n"); do
		echo "bench: $c round $r of $n ($(date +%T))"
		if [ -x "$RB" ]; then
			# three sides: each goes first, second and last in turn
			case $((r % 3)) in
			1) one "$c" up "$r" "$@"; one "$c" ev "$r" "$@"; one "$c" eb "$r" "$@" ;;
			2) one "$c" ev "$r" "$@"; one "$c" eb "$r" "$@"; one "$c" up "$r" "$@" ;;
			0) one "$c" eb "$r" "$@"; one "$c" up "$r" "$@"; one "$c" ev "$r" "$@" ;;
			esac
		elif [ $((r % 2)) = 1 ]; then
			one "$c" up "$r" "$@"; one "$c" ev "$r" "$@"
		else
			one "$c" ev "$r" "$@"; one "$c" up "$r" "$@"
		fi
		# MIXED=1: the mixed pairings too, in the same round
		if [ -n "${MIXED:-}" ]; then
			one "$c" eu "$r" "$@"; one "$c" ue "$r" "$@"
		fi
	done
}

# upstream's default mode (non-blocking, both sides spin) unless a case
# says otherwise
case_ default "$drounds"
# ping-pong long enough (about a second) that start-up does not dominate
case_ 64B-pingpong "$rounds" -S 64 -C 1 -I 20000
case_ 4KiB-pingpong "$rounds" -S 4096 -C 1 -I 3000
case_ 64KiB-stream "$rounds" -S 65536 -C 200 -I 2
case_ 1MB-stream "$rounds" -S 1000000 -C 20 -I 2
case_ 1MB-blocking "$rounds" -S 1000000 -C 20 -I 2 -T b
# small messages streamed: evrdma gathers what cannot go at once into one
# write (the cork); the mixed pairings show each end's share
MIXED=1 case_ 64B-stream "$rounds" -S 64 -C 20000 -I 1
MIXED=1 case_ 4KiB-stream "$rounds" -S 4096 -C 4000 -I 1
# -T a: upstream's rpoll spins with a zero timeout; ours polls while the
# exchange is hot, arms the completion channel and sleeps once it is not
case_ 64B-pingpong-async "$rounds" -S 64 -C 1 -I 20000 -T a
case_ 4KiB-pingpong-async "$rounds" -S 4096 -C 1 -I 3000 -T a
case_ 1MB-stream-async "$rounds" -S 1000000 -C 20 -I 2 -T a
# CPU per million small messages when neither side spins
case_ 64B-stream-async "$rounds" -S 64 -C 20000 -I 1 -T a
# the emulated round trip is longer than the default poll (200 usec)
EV_OPTS="--poll-usec 2000" case_ 64B-pingpong-async-poll2ms "$rounds" -S 64 -C 1 -I 20000 -T a
echo "bench: done"
exit 0
