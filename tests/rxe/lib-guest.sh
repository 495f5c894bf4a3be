# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Helpers shared by the scripts that run inside the Soft-RoCE guest
# (tests/rxe/guest-*.sh, bench/rxe-guest.sh).  Source it after setting
# $T, a scratch directory.

now() { echo "$EPOCHREALTIME"; }

# The tally of a guest script: ok DESC; ko DESC WHY, followed by the tail
# of each non-empty $T/*.out and $T/*.err; the script ends with the line
# "NAME: N passed, M failed" that check-rxe.sh and the CI summary read.
pass=0
fail=0
ok() { echo "PASS: $1"; pass=$((pass + 1)); }
ko() {
	local f
	echo "FAIL: $1: $2"; fail=$((fail + 1))
	for f in "$T"/*.out "$T"/*.err; do
		[ -s "$f" ] && { echo "--- $f"; tail -20 "$f"; }
	done
	return 0
}

# EVR_RXE_SAN=1 (set by check-rxe.sh for binaries of an
# --enable-sanitizers build): ASan's processes start and run about three
# times slower under TCG and take more memory of the guest's 1 GiB.
# tsc SECONDS: a time bound scaled for that (lower bounds never scale).
SAN=${EVR_RXE_SAN:-0}
tsc() { echo $(( $1 * (SAN == 1 ? 3 : 1) )); }
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

# wait_conn PID SECONDS: until a cm_id of process PID is connected (its
# transfer under way), so that a kill lands mid-transfer and not before
# the connection, however slowly the process started.  1 if it never was.
wait_conn() {
	local i
	for i in $(seq $(($2 * 10))); do
		rdma resource show cm_id 2>/dev/null |
			grep -q "state CONNECT .*pid $1 " && return 0
		kill -0 "$1" 2>/dev/null || return 1
		sleep 0.1
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

# scrape_http ADDR PORT FILE: GET /metrics into FILE (bash's /dev/tcp:
# the guest has no curl)
scrape_http() {
	exec 3<>"/dev/tcp/$1/$2" || return 1
	printf 'GET /metrics HTTP/1.0\r\nHost: probed\r\n\r\n' >&3
	cat <&3 >"$3"
	exec 3<&-
}

# A daemon's fds and RSS between its runs: least_of FN PID, the least
# of 20 samples over 2 s (a probe run every 0.5 s holds a device
# context, its channels and buffers while it lasts; one sample may land
# in a run).
fds() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
rss_kb() { awk '$1 == "VmRSS:" { print $2 }' "/proc/$1/status"; }
least_of() { # FN PID
	local i v m=
	for i in $(seq 20); do
		v=$("$1" "$2")
		[ -z "$m" ] || [ "${v:-0}" -lt "$m" ] && m=${v:-0}
		sleep 0.1
	done
	echo "$m"
}

# A daemon's probe, scraped from 127.0.0.1:$HP into $T/m.txt:
# probe_successes PROBE, its runs less its failures (-1 when the scrape
# failed); probe_resumed PROBE SECONDS, one success more within SECONDS
# ($res_s says when); probe_up PROBE N, until it has N successes (20 s
# at most), $okruns the count.
probe_successes() {
	scrape_http 127.0.0.1 "$HP" "$T/m.txt" 2>/dev/null || { echo -1; return; }
	awk -v p="$1" '$1 == "evrdma_probe_runs_total{probe=\"" p "\"}" { r = $2 }
	     index($1, "evrdma_probe_failures_total{probe=\"" p "\",") == 1 { f += $2 }
	     END { print r - f }' "$T/m.txt"
}
probe_resumed() {
	local t0=$EPOCHREALTIME base i
	base=$(probe_successes "$1")
	for i in $(seq $(($2 * 10))); do
		sleep 0.1
		[ "$(probe_successes "$1")" -ge $((base + 1)) ] && { res_s=$(since "$t0"); return 0; }
	done
	res_s=$(since "$t0")
	return 1
}
probe_up() {
	local i
	okruns=0
	for i in $(seq 100); do
		sleep 0.2
		okruns=$(probe_successes "$1")
		[ "$okruns" -ge "$2" ] && return 0
	done
	return 1
}
