#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Many connections in one loop, fairly, over RDMA (the Soft-RoCE guest,
# run by tests/rxe/check-rxe.sh): in -T n and -T a, a -c 4 client
# against one evrdma server, both in one loop each, a 64-byte ping-pong
# for -D seconds: the slowest connection runs at least 0.6 x the
# iterations of the fastest, and the four together do not fall below
# 0.75 x one connection alone (the engine's scheduler, HACKING.md).
# In the guest the four cannot be asked to beat one: its two emulated
# CPUs also run the kernel's Soft-RoCE work, which bounds the total
# (a CI run saw -T a at 8308 against 8513, 0.98, fair at 0.94); what
# this guards is the collapse the scheduler fixed (on TCP the old -T n
# -c 4 ran 0.6 x -c 1; a starved connection runs 0.01 x another).
# The bars are generous because the ratio moves with the host's load,
# not only with the code.  check_stream's fair case, on the host, holds
# the same shape.  Counts come from --json's per-connection results,
# not from times.
set -u
R=${EVR_BIN:-/opt/evr}/rstream
A1=$RXE_ADDR1
A2=$RXE_ADDR2
T=$(mktemp -d)
D=${FAIR_SECS:-1}

. "$(dirname "$0")/lib-guest.sh"

# iters FILE: each connection's iterations (its own result records, not
# the aggregate's, which has "connections")
iters() {
	grep '"type":"result"' "$1" | grep -v '"connections"' |
		sed 's/.*"iters":\([0-9]*\).*/\1/'
}

# run MODE CONNS: a duration run; its per-connection counts in $T/iters
run() {
	timeout "$(tsc 60)" $R -s $A2 -b $A1 -T "$1" -S 64 -C 1 -D "$D" \
		-c "$2" --per-conn --json >"$T/c.out" 2>"$T/c.err" || return 1
	iters "$T/c.out" >"$T/iters"
	[ "$(wc -l <"$T/iters")" = "$2" ]
}

for m in n a; do
	server $R -b $A2 -T $m --stall-timeout 30 ||
		{ ko "-T $m: server" "did not listen"; continue; }
	one= four= lo= hi= all=
	# up to five rounds of a -c 1 and a -c 4 run (the guest shares two
	# emulated CPUs with its kernel's RDMA work): one must be both fair
	# and at least 0.75 x -c 1's throughput.  The ratio moves with the
	# host, not only the code: the same build gave -T n 1.06-1.20 run
	# alone and 0.82 in all three rounds of a full local .ci/run (its
	# -T a 1.34 there), -T a 0.91 only in a third round alone
	for round in 1 2 3 4 5; do
		run $m 1 || { ko "-T $m -c 1 over RDMA" "the run failed"; break; }
		one=$(cat "$T/iters")
		run $m 4 || { ko "-T $m -c 4 over RDMA" "the run failed"; break; }
		all=$(tr '\n' ' ' <"$T/iters")
		# (no process substitution: the guest has no /dev/fd)
		set -- $(sort -n "$T/iters" |
			awk 'NR==1{lo=$1} {hi=$1; s+=$1} END{print lo, hi, s}')
		lo=$1 hi=$2 four=$3
		# both must hold in one round; another round otherwise (a
		# round once came out 0.66 under TCG, the next ones fair)
		[ $((lo * 10)) -ge $((hi * 6)) ] &&
			[ $((four * 100)) -ge $((one * 75)) ] && break
	done
	kill -TERM "$sp"; reap "$sp" 20
	echo "-T $m: $round round(s)"
	[ -n "$lo" ] && [ -n "$four" ] || { ko "-T $m over RDMA" "no counts"; continue; }
	if [ $((lo * 10)) -ge $((hi * 6)) ]; then
		ok "-T $m -c 4 over RDMA: each connection ran $all iterations (slowest/fastest $(awk -v a="$lo" -v b="$hi" 'BEGIN{printf "%.2f", a/b}'))"
	else
		ko "-T $m -c 4 over RDMA: fair share" "iterations $all"
	fi
	if [ $((four * 100)) -ge $((one * 75)) ]; then
		ok "-T $m over RDMA: -c 4 ran $four iterations in all, -c 1 $one (in $D s each)"
	else
		ko "-T $m over RDMA: -c 4 at least 0.75 x -c 1's throughput" "-c 4 $four, -c 1 $one"
	fi
done
rm -rf "$T"
echo "guest-fair.sh: $pass passed, $fail failed"
[ "$fail" = 0 ]
