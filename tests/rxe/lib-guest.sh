# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Helpers shared by the scripts that run inside the Soft-RoCE guest
# (tests/rxe/guest-*.sh, bench/rxe-guest.sh).  Source it after setting
# $T, a scratch directory.

now() { echo "$EPOCHREALTIME"; }
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}'; }

# server CMD...: start a server, its output in $T/s.out, and wait until its
# RDMA CM id listens (upstream's header would tell too, but its stdout is
# fully buffered in a pipe).  Sets $sp, the server's own pid.
server() {
	"$@" >"$T/s.out" 2>&1 &
	sp=$!
	local i
	for i in $(seq 200); do
		rdma resource show cm_id 2>/dev/null | grep -q "state LISTEN .*pid $sp " &&
			return 0
		kill -0 "$sp" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# reap PID SECONDS: wait for it, with SIGKILL after SECONDS
reap() {
	local i
	for i in $(seq $(($2 * 10))); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$1" 2>/dev/null && kill -9 "$1"
	wait "$1"
}
