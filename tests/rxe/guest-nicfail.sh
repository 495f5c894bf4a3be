#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# When the NIC fails (issue 37), inside the Soft-RoCE guest: a device
# deleted (`rdma link delete`) or its link taken down (`ip link set ...
# down`) under a running rstream client, an rstream server and mckey's
# receiver and sender.  Each must end (or, a server, go on serving)
# within the stall bound with one line naming the device and the port,
# its documented exit status, and let go of the device at once: Soft-RoCE
# cannot unregister a device while anyone holds it, so the deletion
# itself returns within 5 s only if every user let go (it takes 0.1-1.0 s
# when they do; it waits for the holder's exit when one does not).  A TCP pair on
# loopback runs through the server's case, unaffected.  Each device is
# added back (or its link brought up) after its case, and a run over it
# must pass again.  Prints PASS/FAIL lines and a summary.
set -u
B=${EVR_BIN:-/opt/evr}
R=$B/rstream
M=$B/mckey
A1=$RXE_ADDR1
A2=$RXE_ADDR2
G=${RXE_MCAST:-239.1.1.1}
T=$(mktemp -d)
. "$(dirname "$0")/lib-guest.sh"

has() { grep -q -- "$2" "$1"; }
say() { echo "# $*"; }

# The bounds: ending within the stall bound (10 s), the deletion within
# 5 s (scaled for sanitizer builds, which run three times slower): 5 x
# the worst measured, and still under the stall bound, by which a
# holder would have ended and let the deletion return.
END_S=$(tsc 10)
DEL_S=$(tsc 5)

netdev_of() { case $1 in rxe0) echo veth0 ;; rxe1) echo veth1 ;; esac; }

# up DEV: wait (10 s at most) until DEV's port is active with its IPv4
# GID (RoCE adds GIDs after the link, on a workqueue of its own)
up() {
	local i
	for i in $(seq 100); do
		rdma link show "$1/1" 2>/dev/null | grep -q 'state ACTIVE' &&
			grep -q '0000:0000:0000:0000:0000:ffff' \
				/sys/class/infiniband/"$1"/ports/1/gids/* 2>/dev/null &&
			return 0
		sleep 0.1
	done
	return 1
}

# delete DEV: rdma link delete, timed into $del_s (30 s at most)
delete() {
	local t0=$EPOCHREALTIME
	timeout 30 rdma link delete "$1"
	del_rc=$?
	del_s=$(since "$t0")
}

readd() {
	rdma link add "$1" type rxe netdev "$(netdev_of "$1")" 2>/dev/null
	up "$1"
}

# wait_qp PID SECONDS: until process PID has a QP (mckey: set up, its
# receives posted, joining)
wait_qp() {
	local i
	for i in $(seq $(($2 * 10))); do
		rdma resource show qp 2>/dev/null | grep -q "pid $1 " && return 0
		kill -0 "$1" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }

# a run that must pass over the pair (after a device came back)
passes() { # NAME
	local i rc=1
	for i in 1 2 3; do
		timeout 30 $R -s "$A2" -b "$A1" -S 4096 -C 50 -T a \
			>"$T/again.out" 2>&1 && { rc=0; break; }
		sleep 1
	done
	if [ $rc = 0 ]; then
		ok "$1"
	else
		ko "$1" "three runs failed"
	fi
}

# cut_client WHAT ACTION LINE: a client on A1 (rxe0) mid-run against the
# server ($sp); ACTION is run under it (timed from its start); the client
# must end within END_S with exit 7 and one line on stderr matching LINE.
# Sets $cut_s (how long it took to end), 1 if it never connected.
cut_client() {
	local what=$1 action=$2 line=$3 cp crc t0
	$R -s "$A2" -b "$A1" -S 64 -C 100000000 -T a >"$T/c.out" 2>"$T/c.err" &
	cp=$!
	if ! wait_conn "$cp" "$(tsc 20)"; then
		ko "rstream client ($what): connected" "never"
		kill "$cp" 2>/dev/null
		return 1
	fi
	sleep 0.5
	t0=$EPOCHREALTIME
	$action
	reap "$cp" 30
	crc=$?
	cut_s=$(since "$t0")
	say "rstream client, $what: it ended in $cut_s s, rc $crc"
	if [ "$crc" = 7 ] && has "$T/c.err" "$line" && lt "$cut_s" "$END_S" &&
		[ "$(wc -l <"$T/c.err")" = 1 ]; then
		ok "rstream client: $what ends the run: exit 7, one line on stderr ($cut_s s)"
	else
		ko "rstream client: $what ends the run" "rc $crc after $cut_s s: $(head -c 300 "$T/c.err")"
	fi
}

# ---------------------------------------------------------------- rstream

# 1. The client's device is deleted mid-run (client on A1: rxe0).
server $R -b "$A2" -T a --stall-timeout 30 || ko "server starts" "no listener"
if cut_client "its device's removal" "delete rxe0" '^rstream: .*: rxe0 \(was removed\|failed (a fatal device error)\)$'; then
	say "rdma link delete rxe0 under the client: $del_s s (rc $del_rc)"
	if [ "$del_rc" = 0 ] && lt "$del_s" "$DEL_S"; then
		ok "rstream client: its device's deletion returns within ${DEL_S} s ($del_s s)"
	else
		ko "rstream client: its device's deletion returns within ${DEL_S} s" "rc $del_rc after $del_s s"
	fi
fi
readd rxe0 || ko "rxe0 comes back" "not active in 10 s"
passes "rstream over rxe0 again after it came back"
kill -0 "$sp" 2>/dev/null && ok "the server (on rxe1) serves on" ||
	ko "the server (on rxe1) serves on" "it exited"
kill "$sp" 2>/dev/null
reap "$sp" 10 >/dev/null

# 2. The server's device is deleted mid-run (server bound to A2: rxe1),
# while a TCP pair on loopback runs beside it in the same server process
# kind: the server stays up, lets go of rxe1, and serves on it again
# once it is back, with no restart.
server $R -b "$A2" -T a --stall-timeout 30 || ko "server starts" "no listener"
$R -T s -b 127.0.0.1 -p 7472 >"$T/ts.out" 2>&1 &
tsp=$!
sleep 0.5
timeout 60 $R -T s -s 127.0.0.1 -p 7472 -S 64 -D 8 >"$T/tc.out" 2>&1 &
tcp=$!
$R -s "$A2" -b "$A1" -S 64 -C 100000000 -T a --stall-timeout 10 \
	>"$T/c.out" 2>"$T/c.err" &
cp=$!
if wait_conn "$cp" "$(tsc 20)"; then
	sleep 0.5
	t0=$EPOCHREALTIME
	delete rxe1
	say "server's device deleted: rdma link delete $del_s s (rc $del_rc)"
	if [ "$del_rc" = 0 ] && lt "$del_s" "$DEL_S"; then
		ok "rstream server: its device's deletion returns within ${DEL_S} s ($del_s s)"
	else
		ko "rstream server: its device's deletion returns within ${DEL_S} s" "rc $del_rc after $del_s s"
	fi
	sleep 0.5
	if kill -0 "$sp" 2>/dev/null && has "$T/s.out" 'rxe1 \(was removed\|failed (a fatal device error)\)'; then
		ok "rstream server: says its connection's device was removed, and stays up"
	else
		ko "rstream server: says its connection's device was removed, and stays up" "$(tail -3 "$T/s.out")"
	fi
	reap "$cp" 30
	crc=$?
	say "the server's client ended in $(since "$t0") s, rc $crc"
else
	ko "rstream server: client connected" "never"
	kill "$cp" 2>/dev/null
fi
wait "$tcp"
trc=$?
[ "$trc" = 0 ] && ok "a TCP run on loopback beside it is unaffected" ||
	ko "a TCP run on loopback beside it is unaffected" "rc $trc"
kill "$tsp" 2>/dev/null
readd rxe1 || ko "rxe1 comes back" "not active in 10 s"
passes "the same server serves over rxe1 again once it is back, no restart"
kill -0 "$sp" 2>/dev/null && ok "the server is still the same process" ||
	ko "the server is still the same process" "it exited"
kill "$sp" 2>/dev/null
reap "$sp" 10 >/dev/null

# ------------------------------------------------------------------ mckey

# mckey_cut ROLE ACTION: mckey on A1 (ROLE receiver, or sender at 2000
# datagrams a second), its output in $T/ROLE.out; once its QP is made,
# ACTION; then $mrc is how it ended and $end_s how long after ACTION began
mckey_cut() {
	local mp t0 args=
	[ "$1" = sender ] && args="-s -C 100000000 --rate 2000"
	# shellcheck disable=SC2086
	$M -m "$G" -b "$A1" ${args:--C 1000000} --settle 0 --deadline 60 \
		>"$T/$1.out" 2>"$T/$1.err" &
	mp=$!
	wait_qp "$mp" "$(tsc 20)" || ko "mckey $1: its QP" "never made"
	sleep 1
	t0=$EPOCHREALTIME
	$2
	reap "$mp" 30
	mrc=$?
	end_s=$(since "$t0")
}
del_rxe0() { delete rxe0; }

# 3. The receiver's device is deleted while it waits (receiver on A1).
mckey_cut receiver del_rxe0
rrc=$mrc
say "mckey receiver's device deleted: rdma link delete $del_s s (rc $del_rc), receiver ended in $end_s s, rc $rrc"
if [ "$del_rc" = 0 ] && lt "$del_s" "$DEL_S"; then
	ok "mckey receiver: its device's deletion returns within ${DEL_S} s ($del_s s)"
else
	ko "mckey receiver: its device's deletion returns within ${DEL_S} s" "rc $del_rc after $del_s s"
fi
# -ENODEV as the exit byte, as mckey's statuses are; its lines go to
# stdout, as upstream's.  The line says what the kernel said first: 6.1
# gives rxe's removal as RDMA CM's DEVICE_REMOVAL only, 7.x sends
# IBV_EVENT_DEVICE_FATAL too, often before it.
GONE_RE='^mckey: rxe0 \(was removed\|failed (a fatal device error)\)$'
if [ "$rrc" = 237 ] && has "$T/receiver.out" "$GONE_RE" && lt "$end_s" "$END_S"; then
	ok "mckey receiver: its device's removal ends it: exit 237, one line ($end_s s)"
else
	ko "mckey receiver: its device's removal ends it" "rc $rrc after $end_s s: $(tail -c 300 "$T/receiver.out")"
fi
readd rxe0 || ko "rxe0 comes back" "not active in 10 s"

# 4. The sender's device is deleted while it sends (sender on A1).
mckey_cut sender del_rxe0
say "mckey sender's device deleted: rdma link delete $del_s s (rc $del_rc), sender ended in $end_s s, rc $mrc"
if [ "$del_rc" = 0 ] && lt "$del_s" "$DEL_S" && [ "$mrc" = 237 ] &&
	has "$T/sender.out" "$GONE_RE" && lt "$end_s" "$END_S"; then
	ok "mckey sender: its device's removal ends it, exit 237, one line; the deletion returns at once"
else
	ko "mckey sender: its device's removal ends it" "delete rc $del_rc $del_s s; rc $mrc after $end_s s: $(tail -c 300 "$T/sender.out")"
fi
readd rxe0 || ko "rxe0 comes back" "not active in 10 s"

# ----------------------------------------------------------------- daemon

# 5. evrdma-probed runs throughout: an RDMA responder bound to A2 (rxe1)
# and a probe from A1 (rxe0) to it, every 0.5 s.  NICFAIL_CYCLES (3 here;
# bench/nicfail.sh runs 20) deletions and returns of the responder's
# device, then of the prober's: each deletion returns within DEL_S, the
# daemon stays up, the probe succeeds again within 10 s of the device's
# return (2.3 s at worst measured; without recovery it never does), the prober's own device's failures have its own reasons, and
# the daemon ends with the file descriptors and memory it started with.
P=$B/evrdma-probed
CYCLES=${NICFAIL_CYCLES:-3}
HP=9479
scrape() { scrape_http 127.0.0.1 "$HP" "$T/m.txt"; }
metric() { awk -v k="$1{$2}" '$1 == k { print $2 }' "$T/m.txt"; }
successes() { probe_successes rdma-lat; }
resumed() { probe_resumed rdma-lat "$1"; }
cat >"$T/p.json" <<JSON
{ "listen_address": "127.0.0.1", "listen_port": $HP,
  "responders": [ { "transport": "rdma", "port": 7479, "bind": "$A2" } ],
  "probes": [
    { "name": "rdma-lat", "type": "rstream", "host": "$A2", "port": 7479,
      "bind": "$A1", "transport": "rdma", "size": 64, "count": 1,
      "iters": 10, "interval_s": 0.5, "timeout_s": 5 } ] }
JSON
$P -c "$T/p.json" >"$T/p.out" 2>&1 &
pp=$!
if probe_up rdma-lat 3; then
	ok "daemon: the RDMA probe runs ($okruns successes)"
	fd0=$(least_of fds "$pp")
	rss0=$(least_of rss_kb "$pp")
	worst_del=0
	worst_res=0
	bad=""
	for dev in rxe1 rxe0; do
		for c in $(seq "$CYCLES"); do
			delete "$dev"
			lt "$del_s" "$DEL_S" && [ "$del_rc" = 0 ] ||
				bad="$bad; $dev cycle $c: deletion rc $del_rc after $del_s s"
			lt "$worst_del" "$del_s" && worst_del=$del_s
			sleep 1
			kill -0 "$pp" 2>/dev/null || { bad="$bad; died in $dev cycle $c"; break 2; }
			readd "$dev" || bad="$bad; $dev cycle $c: not back"
			resumed "$(tsc 10)" || bad="$bad; $dev cycle $c: no success in $res_s s"
			lt "$worst_res" "$res_s" && worst_res=$res_s
		done
	done
	say "daemon: $CYCLES cycles of each device: worst deletion $worst_del s, worst resumption $worst_res s"
	if [ -z "$bad" ]; then
		ok "daemon: $CYCLES deletions and returns of each device: every deletion within ${DEL_S} s (worst $worst_del s), the probe back within $(tsc 10) s each time (worst $worst_res s)"
	else
		ko "daemon: deletions and returns of each device" "${bad#; }"
	fi
	kill -0 "$pp" 2>/dev/null && ok "daemon: alive throughout" ||
		ko "daemon: alive throughout" "it exited: $(tail -3 "$T/p.out")"
	# the responder's connections and the probe's runs let go: the same
	# fds as before, the memory within 1 MB (sanitizers: their shadow
	# grows, as guest-faults.sh says)
	sleep 1
	fd1=$(least_of fds "$pp")
	rss1=$(least_of rss_kb "$pp")
	say "daemon: fds $fd0 -> $fd1, RSS $rss0 -> $rss1 kB"
	if [ "$fd1" -le "$fd0" ] && { [ "$SAN" = 1 ] || [ "$rss1" -le $((rss0 + 1024)) ]; }; then
		ok "daemon: file descriptors and memory back where they started ($fd0 -> $fd1 fds, $rss0 -> $rss1 kB)"
	else
		ko "daemon: file descriptors and memory back where they started" "$fd0 -> $fd1 fds, $rss0 -> $rss1 kB"
	fi
	scrape
	rem=$(metric evrdma_rdma_device_events_total 'device="rxe0",kind="removal"')
	ret=$(metric evrdma_rdma_device_events_total 'device="rxe0",kind="return"')
	st=$(metric evrdma_rdma_device_state 'device="rxe0",netdev="veth0",state="ACTIVE"')
	up=$(metric evrdma_rdma_port_up 'device="rxe0",port="1"')
	if [ "${rem:-0}" -ge "$CYCLES" ] && [ "${ret:-0}" -ge 1 ] && [ "$st" = 1 ] && [ "$up" = 1 ]; then
		ok "daemon: rxe0's removals ($rem) and returns ($ret) counted, ACTIVE again, port up"
	else
		ko "daemon: rxe0's device metrics" "removal '$rem' return '$ret' ACTIVE '$st' port_up '$up': $(grep '^evrdma_rdma' "$T/m.txt" | tr '\n' ' ')"
	fi
	own=$(awk '$1 ~ /^evrdma_probe_failures_total\{probe="rdma-lat",reason="(devgone|portdown|nodev)"\}/ { s += $2 } END { print s + 0 }' "$T/m.txt")
	if [ "$own" -ge 1 ]; then
		ok "daemon: the prober's own device's failures have its own reasons ($own: devgone, portdown, nodev)"
	else
		ko "daemon: the prober's own device's failures have its own reasons" "$(grep '^evrdma_probe_failures_total' "$T/m.txt" | tr '\n' ' ')"
	fi
else
	ko "daemon: the RDMA probe runs" "$okruns successes: $(tail -5 "$T/p.out")"
fi
kill "$pp" 2>/dev/null
reap "$pp" 10 >/dev/null

# 5b. A client started while its link is down (nothing live on the
# device: a harmless flap) is told before it connects, by the host check
# (exit 5, the line names the device, the port and the remedy), not by
# the network's "unreachable".  (A port that goes down between the check
# and the connect fails the connect as "rxe0 port 1 is down", exit 7:
# check_cli's failure texts.)
ip link set veth0 down
t0=$EPOCHREALTIME
timeout 30 $R -s "$A2" -b "$A1" -S 64 -C 10 -T a >"$T/pd.out" 2>"$T/pd.err"
prc=$?
end_s=$(since "$t0")
ip link set veth0 up
say "rstream client started with its link down: rc $prc in $end_s s: $(head -c 200 "$T/pd.err")"
if [ "$prc" = 5 ] &&
	has "$T/pd.err" '^rstream: port_state: rxe0 port 1 is [0-9]*: DOWN .*ip link set veth0 up' &&
	[ "$(wc -l <"$T/pd.err")" = 1 ] && lt "$end_s" "$END_S"; then
	ok "rstream client: started with its port down, it says so: exit 5, one line ($end_s s)"
else
	ko "rstream client: started with its port down, it says so" "rc $prc after $end_s s: $(head -c 300 "$T/pd.err")"
fi
up rxe0 || ko "rxe0's port comes back" "not active in 10 s"

# 6. Last, as it leaves the guest's RDMA CM unusable: the client's link
# goes down mid-run (veth0 under rxe0; veth drops the peer's carrier, so
# rxe1's port goes down too).  On Debian 12's kernel (6.1) a Soft-RoCE
# link taken down under a live RC connection wedges the kernel's RDMA
# CM: measured, every later connect stalls (upstream's and ours, new
# processes on new ports included) and a later `rdma link delete` blocks
# in the kernel.  So nothing runs over RDMA after it, and check-rxe.sh
# runs this script after all the others.
server $R -b "$A2" -T a --stall-timeout 30 || ko "server starts" "no listener"
link_down() { ip link set veth0 down; }
cut_client "its port going down" link_down '^rstream: .*: rxe0 port 1 went down$'
sleep 0.5
if kill -0 "$sp" 2>/dev/null && has "$T/s.out" 'rxe1 port 1 went down'; then
	ok "rstream server: says its connection's port went down (the peer's carrier), and stays up"
else
	ko "rstream server: says its connection's port went down, and stays up" "$(tail -3 "$T/s.out")"
fi
ip link set veth0 up
up rxe0 || ko "rxe0's port comes back" "not active in 10 s"
kill "$sp" 2>/dev/null
reap "$sp" 10 >/dev/null

# 7. Linux 7.x only: after section 6 a run passes again, and mckey's
# receiver ends when its port goes down.  Section 6 leaves Soft-RoCE's
# own GSI QP of rxe0 (QP1, which carries the RDMA CM's messages) in the
# error state, on 6.1 and 7.3 alike (`rdma resource show qp`: "type GSI
# state ERR"), and nothing in the kernel resets it: that is the wedge,
# and only adding the device again clears it (measured; hardware does
# not move its UD QPs to error when a link drops).  So the device is
# added again first when it is wedged.
if [ "$(uname -r | cut -d. -f1)" -ge 7 ]; then
	if rdma resource show qp 2>/dev/null | grep -q 'rxe0/1 .*type GSI state ERR'; then
		say "rxe0's GSI QP is in the error state (the kernel's wedge): rxe0 added again"
		delete rxe0
		readd rxe0 || ko "rxe0 comes back" "not active in 10 s"
	fi
	server $R -b "$A2" -T a || ko "server starts (7.x)" "no listener"
	passes "rstream over rxe0 again after its link came back (7.x)"
	kill "$sp" 2>/dev/null
	reap "$sp" 10 >/dev/null

	mckey_cut receiver link_down
	say "mckey receiver's link down: it ended in $end_s s, rc $mrc"
	# -ENETDOWN as the exit byte
	if [ "$mrc" = 156 ] && has "$T/receiver.out" '^mckey: rxe0 port 1 went down$' &&
		lt "$end_s" "$END_S"; then
		ok "mckey receiver: its port going down ends it: exit 156, one line ($end_s s)"
	else
		ko "mckey receiver: its port going down ends it" "rc $mrc after $end_s s: $(tail -c 300 "$T/receiver.out")"
	fi
	ip link set veth0 up
	up rxe0 || ko "rxe0's port comes back" "not active in 10 s"
fi

echo "guest-nicfail: $pass passed, $fail failed"
rm -rf "$T"
[ "$fail" = 0 ]
