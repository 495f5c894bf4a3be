#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Fault campaigns over RDMA (rsockets wire, Soft-RoCE), run inside the
# guest by tests/rxe/check-rxe.sh: one evrdma rstream server takes
# connect/abort cycles from rsfaultpeer (tests/faultpeer.c over
# librdmacm's rsockets) and clients SIGKILLed mid-connect and
# mid-transfer, and must end with the fds and memory it started with;
# misbehaving rsocket clients (garbage, a bad plan, bad data mid-stream,
# a message stopped half way, upstream's rstream with other options) share
# a server with well-behaved -T v clients, which must pass while the bad
# ones still hang; and a server out of file descriptors must reject
# without spinning, say so once, and accept again.  Prints PASS/FAIL
# lines and a summary.
#
# Under TCG an rsocket connect/abort cycle costs 0.2 to 0.35 s (measured:
# 250 cycles in 84 s, a new process every 10 cycles included), so 10,000
# would take about an hour: the campaign here is FAULT_RXE_CYCLES (default
# 200) cycles; the TCP suite (tests/e2e/faults.sh) runs the 10,000, and
# FAULT_RXE_CYCLES=10000 tests/rxe/check-rxe.sh runs them here (measured:
# 11 min on a quiet host, 35 on a busy one).
set -u
B=${EVR_BIN:-/opt/evr}
R=$B/rstream
F=$B/rsfaultpeer
U=/usr/bin/rstream
A1=$RXE_ADDR1
A2=$RXE_ADDR2
CYCLES=${FAULT_RXE_CYCLES:-200}
MEM_TOL_KB=1024
HZ=$(getconf CLK_TCK 2>/dev/null || echo 100)
T=$(mktemp -d)
T00=$EPOCHREALTIME

has() { grep -q -- "$2" "$1"; }
say() { echo "# $*"; }
. "$(dirname "$0")/lib-guest.sh"
# With sanitizer binaries freed memory waits in ASan's quarantine (64 MiB
# a process here), which would grow a server's RSS by tens of MB however
# little it holds: off for this script, so that the memory checks measure
# the program (LeakSanitizer still checks for leaks at every exit).
# Even so the RSS of an ASan process grows by megabytes as allocations
# land on fresh addresses and touch fresh pages of ASan's shadow (seen:
# +2 to +7.5 MB over 200 cycles, while VmData, the heap, moved 192 kB):
# there the RSS check is skipped, said so, and VmData is checked.
if [ "$SAN" = 1 ]; then
	export ASAN_OPTIONS="${ASAN_OPTIONS:-}:quarantine_size_mb=0:thread_local_quarantine_size_kb=0"
fi

fd_count() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
# hung_batches FILE: rsfaultpeer's count of batches killed while hung
hung_batches() {
	local h
	h=$(sed -n 's/^batches of 10 killed after hanging 30 s: //p' "$1")
	echo "${h:-0}"
}
mem_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
wait_fds() { # PID N SECS
	local i
	for i in $(seq $(($3 * 10))); do
		[ "$(fd_count "$1")" -le "$2" ] && return 0
		sleep 0.1
	done
	return 1
}
drops() { grep -c '^rstream: connection dropped' "$1" 2>/dev/null || true; }

# good NAME: a verified, negotiated custom run against $A2 must pass
good() {
	timeout 60 $R -s $A2 -b $A1 -T a -S 65536 -C 10 -I 10 -T v --negotiate \
		>"$T/$1.out" 2>&1
	local rc=$?
	if [ "$rc" = 0 ] && has "$T/$1.out" '^custom    64k     10      10      12m'; then
		ok "$1: a well-behaved -T v client passes"
	else
		ko "$1: a well-behaved -T v client passes" "rc $rc"
	fi
}

# ------------------------------------------------------------ 1. cycles
t0=$(now)
if server $R -b $A2 -T a; then
	s1=$sp
	good cyc_warm
	timeout 120 $F cycles $A2 7471 20 >"$T/warm.out" 2>&1
	sleep 3
	wait_fds "$s1" 8 10
	fd0=$(fd_count "$s1"); rss0=$(mem_kb "$s1" VmRSS); data0=$(mem_kb "$s1" VmData)
	tc=$(now)
	# at most 0.35 s a cycle, and 30 s for each batch of 10 that hangs
	timeout $((600 + CYCLES)) $F cycles $A2 7471 "$CYCLES" >"$T/cyc.out" 2>&1
	crc=$?
	say "$(tail -1 "$T/cyc.out") (wall $(since "$tc") s)"
	sed 's/^/#   /' "$T/cyc.out"
	# Cycles done: the per-point counts.  A batch of 10 whose client hung
	# in rsockets' rclose() is killed after 30 s (rsfaultpeer prints
	# where it waited first) and counted apart.  Two causes were found:
	# the server moving its QP to error under the peer's last credit
	# update (1 batch in 150 cycles), and the server's first ring
	# advertisement written into a client that closes right after
	# connecting: on Soft-RoCE (Linux 6.1) the client's QP can keep a
	# reference to its MR, and rclose(), which deregisters its MRs before
	# it destroys the QP, waits for it in the kernel (__rxe_cleanup) for
	# ever (5 in 600 such clients; 0 in 600 against upstream's server,
	# and 0 in 600 against ours since the advertisement waits for a
	# quarter of the ring; 0 in 10,000 mixed cycles since).
	# A hang is still tolerated once per 700 cycles, said loudly, as a
	# guard against that kernel bug reached some other way; more fails.
	done=$(awk 'NF >= 2 && $NF ~ /^[0-9]+$/ && !/^cycles|^batches|^faultpeer|^[ \t]/ { s += $NF } END { print s + 0 }' "$T/cyc.out")
	hung=$(hung_batches "$T/cyc.out")
	hung_max=$(( (CYCLES + 699) / 700 ))
	[ "$hung" = 0 ] || say "KNOWN ISSUE (Soft-RoCE kernel): $hung batch(es) of 10 cycles hung in the client's rclose() (at most $hung_max allowed; see the comment above and the report printed above)"
	# the cycles of a hung batch after the hang are not done
	if [ "$crc" = 0 ] && [ "$hung" -le "$hung_max" ] &&
		[ "$done" -le "$CYCLES" ] && [ "$done" -ge $((CYCLES - hung * 10)) ]; then
		ok "$CYCLES rsocket connect/abort cycles, every abort point reached ($done done, $hung batch(es) hung in the client's rclose)"
	else
		ko "$CYCLES rsocket connect/abort cycles" "rsfaultpeer rc $crc, $done done, $hung batches hung"
	fi
	# clients killed at staggered points: in address/route resolution,
	# in the CM exchange, in negotiation, in the data
	tk=$(now)
	for i in $(seq 0 19); do
		$R -s $A2 -S 100000 -C 100 -I 100 -T a >/dev/null 2>&1 &
		kp=$!
		sleep "$(awk -v i="$i" 'BEGIN { printf "%.3f", i * 0.03 }')"
		kill -9 "$kp" 2>/dev/null
		wait "$kp" 2>/dev/null
	done
	say "20 clients SIGKILLed 0 to 0.57 s after start ($(since "$tk") s)"
	# closed rsockets linger until the CM says TIMEWAIT_EXIT
	wait_fds "$s1" "$fd0" 30
	sleep 1
	fd1=$(fd_count "$s1"); rss1=$(mem_kb "$s1" VmRSS); data1=$(mem_kb "$s1" VmData)
	say "server after warm-up: $fd0 fds, VmRSS $rss0 kB, VmData $data0 kB"
	say "server after $CYCLES cycles and 20 kills: $fd1 fds, VmRSS $rss1 kB, VmData $data1 kB"
	[ "$fd1" = "$fd0" ] && ok "cycles: fd count back to $fd0" ||
		ko "cycles: fd count back" "$fd0 -> $fd1"
	if [ "$SAN" = 1 ]; then
		echo "SKIP: cycles: VmRSS ($rss0 -> $rss1 kB): an ASan process's RSS counts its shadow pages (VmData is checked)"
	else
		[ "$rss1" -le $((rss0 + MEM_TOL_KB)) ] && ok "cycles: VmRSS within $MEM_TOL_KB kB ($rss0 -> $rss1)" ||
			ko "cycles: VmRSS within $MEM_TOL_KB kB" "$rss0 -> $rss1"
	fi
	[ "$data1" -le $((data0 + MEM_TOL_KB)) ] && ok "cycles: VmData within $MEM_TOL_KB kB ($data0 -> $data1)" ||
		ko "cycles: VmData within $MEM_TOL_KB kB" "$data0 -> $data1"
	# one line per aborted connection (the 20 warm-up cycles, those done,
	# up to 10 in a hung batch, up to 20 killed clients that connected)
	n=$(drops "$T/s.out")
	if [ "$n" -ge $((done + 20)) ] && [ "$n" -le $((done + 20 + hung * 10 + 20)) ]; then
		ok "cycles: one 'connection dropped' line per aborted connection ($n)"
	else
		ko "cycles: one line per aborted connection" "$n lines for $done + 20 cycles and up to 20 killed clients"
	fi
	q=$(rdma resource show qp 2>/dev/null | grep -v 'type GSI' | grep -c "pid $s1 " || true)
	[ "$q" = 0 ] && ok "cycles: the server holds no QP" || ko "cycles: the server holds no QP" "$q QPs"
	good cyc_after
	kill -TERM "$s1"; reap "$s1" 20; src=$?
	[ "$src" = 0 ] && ok "cycles: server stops on SIGTERM (exit 0)" || ko "cycles: server exit" "rc $src"
else
	ko "cycles: server listens" "no"
fi
say "cycles section: $(since "$t0") s"

# ------------------------------------------- 1b. closing right after connecting
# The abort points that made rsocket clients hang in rclose() (see the
# cycles comment): close before any byte, and 7 bytes then close, 150
# each.  Before the fix about 1 in 120 of these hung (so 2-3 expected
# here); after it 0 in 600.  One is tolerated (the kernel bug behind it
# could be reached another way); two or more fail.
t0=$(now)
if server $R -b $A2 -T a; then
	s1=$sp
	hung2=0
	for pt in 0 2; do
		FAULTPEER_POINT=$pt timeout 900 $F cycles $A2 7471 150 >"$T/close$pt.out" 2>&1
		hung2=$((hung2 + $(hung_batches "$T/close$pt.out")))
		grep -a -A12 'hang at cycle' "$T/close$pt.out" | sed 's/^/#   /'
	done
	if [ "$hung2" -le 1 ]; then
		ok "300 rsocket clients closing right after connecting (0 or 7 bytes): $hung2 hung in rclose()"
	else
		ko "rsocket clients closing right after connecting" "$hung2 batches hung in rclose() (before the fix: 1 client in 120)"
	fi
	kill -TERM "$s1"; reap "$s1" 20 >/dev/null
else
	ko "closing clients: server listens" "no"
fi
say "closing-clients section: $(since "$t0") s"

# ------------------------------------------- 2. misbehaving beside good
t0=$(now)
STALL=12
if server $R -b $A2 -T a --stall-timeout $STALL; then
	s2=$sp
	good mix_warm
	sleep 1
	fd0=$(fd_count "$s2")
	for m in garbage badplan badverify half; do
		timeout 60 $F "$m" $A2 7471 30 >"$T/bad_$m.out" 2>&1 &
		eval "bp_$m=\$!"
	done
	# a reader at 256 KB/s of 8 x 1 MB replies, for 20 s
	timeout 90 $F slowread $A2 7471 20 >"$T/bad_slow.out" 2>&1 &
	bp_slow=$!
	# upstream's client with other options than the server's (it does
	# not negotiate: the server runs upstream's default tests)
	timeout 40 $U -s $A2 -S 1000 -C 7 -I 3 >"$T/bad_up.out" 2>&1 &
	bp_up=$!
	for i in $(seq 100); do has "$T/bad_half.out" 'sent half' && break; sleep 0.1; done
	# (small runs, side by side: under TCG a 13 MB one takes 5 to 7 s)
	for g in 1 2; do
		timeout 60 $R -s $A2 -b $A1 -T a -S 16384 -C 10 -I 5 -T v --negotiate \
			>"$T/mix_good$g.out" 2>&1 &
		eval "gp$g=\$!"
	done
	for g in 1 2; do
		eval "wait \$gp$g"
		rc=$?
		if [ "$rc" = 0 ] && has "$T/mix_good$g.out" '^custom    16k     10      5       1.5m'; then
			ok "mix_good$g: a well-behaved -T v client beside the bad ones passes"
		else
			ko "mix_good$g: a well-behaved -T v client beside the bad ones passes" "rc $rc"
		fi
	done
	if ! has "$T/bad_half.out" 'server closed'; then
		ok "the good clients were done while the half-message client still hung"
	else
		ko "the good clients were done while the half-message client still hung" "it was dropped first"
	fi
	for m in garbage badplan badverify half up slow; do eval "wait \$bp_$m"; done
	# served all along (a megabyte and more read, never dropped for it)
	sb=$(sed -n 's/^read \([0-9]*\) bytes.*/\1/p' "$T/bad_slow.out")
	if [ "${sb:-0}" -ge 1048576 ]; then
		ok "a reader at 256 KB/s: served beside the others (${sb} bytes read in 20 s)"
	else
		ko "a reader at 256 KB/s: served" "read '${sb:-}' bytes: $(tail -2 "$T/bad_slow.out" | tr '\n' ' ')"
	fi
	has "$T/bad_badplan.out" '^server closed after [0-9]\{1,4\} ms' &&
		has "$T/s.out" 'negotiation: malformed plan header message$' &&
		ok "random bytes as the plan: closed at once, one line" ||
		ko "random bytes as the plan" "not closed at once"
	has "$T/bad_badverify.out" '^server closed after [0-9]\{1,4\} ms' &&
		has "$T/s.out" 'test 64_lat (1 of 4), receive, iteration 51 of 100000, transfer 1 of 1: data verification failed byte 3216$' &&
		ok "upstream -T v wire, garbage after 50 round trips: closed at once, verification failed" ||
		ko "garbage after 50 good round trips" "not dropped as expected"
	# random bytes from an rsocket client: the server takes them for an
	# upstream client's default run and echoes 1562 64-byte messages
	# (seconds under TCG), then the stall timeout drops it
	if has "$T/bad_garbage.out" '^server closed after' &&
		has "$T/s.out" 'test 64_lat (1 of 4), receive, iteration 1563 of 100000, transfer 1 of 1: no progress for 12.0 s (stall timeout)'; then
		ok "garbage instead of the HELLO: echoed as upstream data, then dropped by the stall timeout"
	else
		ko "garbage instead of the HELLO: dropped by the stall timeout" "no"
	fi
	for m in half; do
		ms=$(sed -n 's/^server closed after \([0-9]*\) ms$/\1/p' "$T/bad_$m.out")
		if [ -n "$ms" ] && [ "$ms" -ge $((STALL * 1000 - 500)) ] &&
			[ "$ms" -le $((STALL * 1250 + 5000)) ]; then
			ok "$m: dropped by the stall timeout (${ms} ms, timeout ${STALL} s)"
		else
			ko "$m: dropped by the stall timeout" "after ${ms:-never} ms"
		fi
	done
	if has "$T/s.out" "no progress for $STALL.0 s (stall timeout) (do both sides run the same test options?)"; then
		ok "upstream client with other options: dropped on the stall timeout, with the hint"
	else
		ko "upstream client with other options: dropped on the stall timeout" "no such line"
	fi
	wait_fds "$s2" "$fd0" 30
	[ "$(fd_count "$s2")" = "$fd0" ] && ok "server: back to $fd0 fds" ||
		ko "server: back to its fds" "$fd0 -> $(fd_count "$s2")"
	good mix_after
	kill -TERM "$s2"; reap "$s2" 20; src=$?
	[ "$src" = 0 ] && ok "server stops on SIGTERM (exit 0)" || ko "server exit" "rc $src"
else
	ko "misbehaving: server listens" "no"
fi
say "misbehaving section: $(since "$t0") s"

# ------------------------------------------- 3. out of file descriptors
# The RDMA server needs one fd per device (its completion channel, shared
# by every connection), none per connection: with one fd above what it
# holds idle, all 8 connections fit; with none, the first is rejected
# (CM REJ), with one line, and no spinning.
t0=$(now)
if server $R -b $A2 -T a --stall-timeout 60; then
	idle=$(fd_count "$sp")
	kill -TERM "$sp"; reap "$sp" 20 >/dev/null 2>&1
	for spare in 1 0; do
		lim=$((idle + spare))
		rm -f "$T/s.out" "$T/hold.out"
		if ! server bash -c "ulimit -n $lim; exec \"\$0\" \"\$@\"" $R -b $A2 -T a --stall-timeout 60; then
			ko "EMFILE: server listens with ulimit -n $lim" "no"
			continue
		fi
		s3=$sp
		timeout 120 $F hold $A2 7471 8 40 >"$T/hold.out" 2>&1 &
		hp=$!
		for i in $(seq 300); do has "$T/hold.out" connected && break; sleep 0.1; done
		say "ulimit -n $lim (idle server: $idle fds): $(cat "$T/hold.out"); server at $(fd_count "$s3") fds"
		if [ "$spare" = 1 ]; then
			has "$T/hold.out" '^connected 8 of 8$' && ok "one spare fd: all 8 connections fit (one channel for all)" ||
				ko "one spare fd: all 8 fit" "$(cat "$T/hold.out")"
			[ "$(fd_count "$s3")" = "$lim" ] && ok "8 connections: the server holds one fd more than idle" ||
				ko "8 connections: one fd more than idle" "$(fd_count "$s3") fds, idle $idle"
		else
			a=$(ticks "$s3"); sleep 3; b=$(ticks "$s3")
			say "EMFILE over RDMA: server CPU $((b - a)) ticks in 3 s"
			[ $((b - a)) -le $((HZ * 3 / 10)) ] && ok "EMFILE: no busy loop ($((b - a)) ticks in 3 s)" ||
				ko "EMFILE: no busy loop" "$((b - a)) ticks in 3 s"
			has "$T/hold.out" '^connected 0 of 8$' && ok "EMFILE: no fd for the channel, every connection refused" ||
				ko "EMFILE: every connection refused" "$(cat "$T/hold.out")"
			n=$(grep -c 'accept (no file descriptor left' "$T/s.out" || true)
			[ "$n" = 1 ] && ok "EMFILE: one line for the episode" || ko "EMFILE: one line" "$n lines"
		fi
		kill "$hp"; wait "$hp" 2>/dev/null
		wait_fds "$s3" "$idle" 30
		[ "$(fd_count "$s3")" = "$idle" ] && ok "ulimit -n $lim: the server is back to its idle fds" ||
			ko "ulimit -n $lim: back to idle fds" "$(fd_count "$s3") fds, idle $idle"
		# (with no spare fd, nothing can be served: that was the point)
		[ "$spare" = 1 ] && good emf_after
		kill -TERM "$s3"; reap "$s3" 20; src=$?
		[ "$src" = 0 ] && ok "ulimit -n $lim: server stops on SIGTERM (exit 0)" || ko "ulimit -n $lim: server exit" "rc $src"
	done
else
	ko "EMFILE: server listens" "no"
fi
say "EMFILE section: $(since "$t0") s"

rm -rf "$T"
echo "faults-rxe: took $(since "$T00") s"
echo "faults-rxe: $pass passed, $fail failed"
[ "$fail" = 0 ]
