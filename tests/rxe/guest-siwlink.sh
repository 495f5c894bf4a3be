#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# When the NIC's link fails (issue 37), on soft-iWARP, run inside the
# guest by tests/rxe/check-rxe.sh with tests/rxe/vm.sh --siw
# (EVR_RXE_SIW=1): siw0 on veth2 (198.18.1.1), siw1 on veth3
# (198.18.1.2).  Soft-RoCE cannot take these cycles: a link taken down
# under a live RC connection leaves its GSI QP in the error state
# (guest-nicfail.sh, section 6); iWARP's connection manager runs over TCP
# and has none, and siw moves its QPs to error when the link goes.
#
#   1. an rstream client whose link goes down mid-run ends within the
#      stall bound, exit 7, one line naming the device and the port;
#   2. evrdma-probed runs throughout, an RDMA responder on siw1 and a
#      probe from siw0 every 0.5 s: NICFAIL_CYCLES (3 here;
#      bench/nicfail.sh runs 20) link down/up cycles of the prober's
#      interface, then of the responder's: the daemon stays up, the probe
#      succeeds again within 10 s of each link's return, its failures
#      meanwhile have the port's reason, siw0's port events are counted,
#      and the daemon ends with the descriptors and memory it started
#      with.
# Without siw in the guest it says so and counts nothing.
set -u
B=${EVR_BIN:-/opt/evr}
R=$B/rstream
P=$B/evrdma-probed
T=$(mktemp -d)
. "$(dirname "$0")/lib-guest.sh"
has() { grep -q -- "$2" "$1"; }
say() { echo "# $*"; }
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }

if [ -z "${SIW_ADDR1:-}" ]; then
	echo "guest-siwlink: no siw in this guest (tests/rxe/vm.sh --siw); nothing to run"
	echo "siwlink: 0 passed, 0 failed"
	exit 0
fi
A1=$SIW_ADDR1 A2=$SIW_ADDR2
END_S=$(tsc 10)
CYCLES=${NICFAIL_CYCLES:-3}
# siw pins against RLIMIT_MEMLOCK, root or not (guest-siwdialect.sh)
ulimit -l unlimited

# up DEV: wait (10 s at most) until DEV's port is active
up() {
	local i
	for i in $(seq 100); do
		rdma link show "$1/1" 2>/dev/null | grep -q 'state ACTIVE' && return 0
		sleep 0.1
	done
	return 1
}

# 0. upstream's rstream client in the same case, for the record (not a
# check: bench/nicfail.sh and doc/reliability.md set it beside ours)
server /usr/bin/rstream -b "$A2" -S 64 -C 100000000 -T a || say "upstream server: no listener"
/usr/bin/rstream -s "$A2" -b "$A1" -S 64 -C 100000000 -T a >"$T/u.out" 2>&1 &
up_cp=$!
if wait_conn "$up_cp" "$(tsc 20)"; then
	sleep 0.5
	t0=$EPOCHREALTIME
	ip link set veth2 down
	for _ in $(seq 200); do kill -0 "$up_cp" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$up_cp" 2>/dev/null; then
		say "upstream rstream client, its link down mid-run: still running after $(since "$t0") s (killed)"
		kill -9 "$up_cp"
	fi
	wait "$up_cp"
	urc=$?
	say "upstream rstream client, its link down mid-run: ended after $(since "$t0") s, rc $urc: $(grep -v '^name' "$T/u.out" | head -1 | cut -c1-120)"
	ip link set veth2 up
else
	say "upstream rstream client: never connected"
	kill -9 "$up_cp" 2>/dev/null
fi
kill -9 "$sp" 2>/dev/null; reap "$sp" 5 >/dev/null
up siw0 || ko "siw0's port comes back" "not active in 10 s"

# 1. rstream: the client's link goes down mid-run
server "$R" -b "$A2" -T a --stall-timeout 30 || ko "server starts" "no listener"
"$R" -s "$A2" -b "$A1" -S 64 -C 100000000 -T a >"$T/c.out" 2>"$T/c.err" &
cp=$!
if wait_conn "$cp" "$(tsc 20)"; then
	sleep 0.5
	t0=$EPOCHREALTIME
	ip link set veth2 down
	reap "$cp" 30
	crc=$?
	cut_s=$(since "$t0")
	ip link set veth2 up
	say "rstream client, its link down: it ended in $cut_s s, rc $crc: $(head -c 200 "$T/c.err")"
	if [ "$crc" = 7 ] && has "$T/c.err" 'siw0 port 1 went down' &&
		[ "$(wc -l <"$T/c.err")" = 1 ] && lt "$cut_s" "$END_S"; then
		ok "rstream client on siw0: its link going down ends the run: exit 7, one line ($cut_s s)"
	else
		ko "rstream client on siw0: its link going down ends the run" "rc $crc after $cut_s s: $(head -c 300 "$T/c.err")"
	fi
else
	ko "rstream client on siw0: connected" "never"
	kill "$cp" 2>/dev/null
fi
up siw0 || ko "siw0's port comes back" "not active in 10 s"
if kill -0 "$sp" 2>/dev/null; then
	timeout 30 "$R" -s "$A2" -b "$A1" -S 4096 -C 50 -T a >"$T/again.out" 2>&1 &&
		ok "rstream over siw0 again after its link came back, the server still up" ||
		ko "rstream over siw0 again after its link came back" "$(tail -2 "$T/again.out")"
else
	ko "the server (on siw1) serves on" "it exited: $(tail -3 "$T/s.out")"
fi
kill "$sp" 2>/dev/null
reap "$sp" 10 >/dev/null

# 2. the daemon through link cycles
HP=9478
scrape() { scrape_http 127.0.0.1 "$HP" "$T/m.txt"; }
metric() { awk -v k="$1{$2}" '$1 == k { print $2 }' "$T/m.txt"; }
cat >"$T/p.json" <<JSON
{ "listen_address": "127.0.0.1", "listen_port": $HP,
  "responders": [ { "transport": "rdma", "port": 7479, "bind": "$A2" } ],
  "probes": [
    { "name": "siw-lat", "type": "rstream", "host": "$A2", "port": 7479,
      "bind": "$A1", "transport": "rdma", "size": 64, "count": 1,
      "iters": 10, "interval_s": 0.5, "timeout_s": 5 } ] }
JSON
"$P" -c "$T/p.json" >"$T/p.out" 2>&1 &
pp=$!
if probe_up siw-lat 3; then
	ok "daemon on siw: the RDMA probe runs ($okruns successes)"
	fd0=$(least_of fds "$pp")
	rss0=$(least_of rss_kb "$pp")
	ls -l "/proc/$pp/fd" 2>/dev/null | awk '{ print $NF }' | sort >"$T/fd0.txt"
	worst_res=0
	bad=""
	for nd in veth2 veth3; do
		for c in $(seq "$CYCLES"); do
			ip link set "$nd" down
			sleep 1
			kill -0 "$pp" 2>/dev/null || { bad="$bad; died in $nd cycle $c"; break 2; }
			ip link set "$nd" up
			up siw0 && up siw1 || bad="$bad; $nd cycle $c: ports not back"
			probe_resumed siw-lat "$(tsc 10)" || bad="$bad; $nd cycle $c: no success in $res_s s"
			lt "$worst_res" "$res_s" && worst_res=$res_s
		done
	done
	say "daemon: $CYCLES link cycles of each side: worst resumption $worst_res s"
	if [ -z "$bad" ]; then
		ok "daemon on siw: $CYCLES link down/up cycles of the prober's and of the responder's interface: the probe back within $(tsc 10) s each time (worst $worst_res s)"
	else
		ko "daemon on siw: link down/up cycles" "${bad#; }"
	fi
	kill -0 "$pp" 2>/dev/null && ok "daemon on siw: alive throughout the link cycles" ||
		ko "daemon on siw: alive throughout the link cycles" "it exited: $(tail -3 "$T/p.out")"
	sleep 1
	fd1=$(least_of fds "$pp")
	rss1=$(least_of rss_kb "$pp")
	say "daemon: fds $fd0 -> $fd1, RSS $rss0 -> $rss1 kB"
	if [ "$fd1" -le "$fd0" ] && { [ "$SAN" = 1 ] || [ "$rss1" -le $((rss0 + 1024)) ]; }; then
		ok "daemon on siw: file descriptors and memory back where they started ($fd0 -> $fd1 fds, $rss0 -> $rss1 kB)"
	else
		ls -l "/proc/$pp/fd" 2>/dev/null | awk '{ print $NF }' | sort >"$T/fd1.txt"
		ko "daemon on siw: file descriptors and memory back where they started" "$fd0 -> $fd1 fds, $rss0 -> $rss1 kB; before: $(uniq -c "$T/fd0.txt" | tr -s ' \n' ' '); after: $(uniq -c "$T/fd1.txt" | tr -s ' \n' ' ')"
	fi
	scrape
	pdown=$(metric evrdma_rdma_device_events_total 'device="siw0",kind="port_err"')
	pup=$(metric evrdma_rdma_port_up 'device="siw0",port="1"')
	own=$(awk '$1 ~ /^evrdma_probe_failures_total\{probe="siw-lat",reason="portdown"\}/ { s += $2 } END { print s + 0 }' "$T/m.txt")
	if [ "${pdown:-0}" -ge "$CYCLES" ] && [ "$pup" = 1 ] && [ "$own" -ge 1 ]; then
		ok "daemon on siw: siw0's port downs counted ($pdown), its port up again, the probe's failures meanwhile the port's ($own portdown)"
	else
		ko "daemon on siw: siw0's port metrics" "port_down '$pdown' port_up '$pup' portdown failures '$own': $(grep '^evrdma_rdma\|^evrdma_probe_failures' "$T/m.txt" | tr '\n' ' ')"
	fi
else
	ko "daemon on siw: the RDMA probe runs" "$okruns successes: $(tail -5 "$T/p.out")"
fi
kill "$pp" 2>/dev/null
reap "$pp" 10 >/dev/null

echo "siwlink: $pass passed, $fail failed"
rm -rf "$T"
[ "$fail" = 0 ]
