#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Runs inside the Soft-RoCE guest (bench/rstream-rxe.sh --conns boots it):
# the connection-scaling curve.  For each N, a fresh evrdma server and one
# rstream -c N client (default sizes: the queues and rings shrink with N),
# a short test on every connection once all N are up (--all-at-once).
# Prints one "conns:" line per N:
#   conns: N rc S seconds T connect_s C qps_max Q qps_left L
#          server_kib_per_conn M avail_mib_per_kconn K
# connect_s: until all N QPs of the client were up (sampled every 0.5 s);
# server_kib_per_conn: the server's peak RSS above its idle RSS, over N;
# avail_mib_per_kconn: MemAvailable's drop at the peak (both processes
# and the kernel's queues) per 1,000 connections.  Stops at the first
# failure, with its last words.  Arguments: the counts (default 1 to
# 10,000).
set -u
R=${EVR_BIN:-/opt/evr}/rstream
A2=$RXE_ADDR2
T=$(mktemp -d)
. "${EVR_BIN:-/opt/evr}/tests/lib-guest.sh"
rss() { awk '/^VmRSS/{print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
avail() { awk '/MemAvailable/{print $2}' /proc/meminfo; }
qps() { rdma resource show qp 2>/dev/null | grep -cE "pid $1( |$)"; }
echo "conns: guest $(awk '/MemTotal/{print int($2/1024)}' /proc/meminfo) MiB, $(nproc) CPUs"
for n in ${*:-1 16 64 256 1024 2048 4096 8192 10000}; do
	server $R -b "$A2" -T a --stall-timeout 600 ||
		{ echo "conns: server did not start"; break; }
	base=$(rss "$sp"); a0=$(avail)
	t0=$(now)
	$R -s "$A2" -c "$n" --all-at-once -S 64 -C 10 -I 3 -T a \
		--stall-timeout 600 >"$T/c.out" 2>&1 &
	cp=$!
	rp=$cp
	peak=0; amin=$a0; qmax=0; cs=-
	for i in $(seq 3000); do   # 1,500 s at most
		kill -0 "$cp" 2>/dev/null || break
		r=$(rss "$sp"); [ "${r:-0}" -gt "$peak" ] && peak=$r
		a=$(avail); [ "$a" -lt "$amin" ] && amin=$a
		if [ "$cs" = - ]; then
			q=$(qps "$rp"); [ "$q" -gt "$qmax" ] && qmax=$q
			[ "$q" -ge "$n" ] && cs=$(since "$t0")
		fi
		sleep 0.5
	done
	kill -KILL "$cp" 2>/dev/null
	wait "$cp"; rc=$?
	el=$(since "$t0")
	kill -TERM "$sp"; reap "$sp" 60 >/dev/null 2>&1
	left=$(rdma resource show qp 2>/dev/null | grep -c 'type RC')
	echo "conns: $n rc $rc seconds $el connect_s $cs qps_max $qmax qps_left $left server_kib_per_conn $(( (peak - base) / n )) avail_mib_per_kconn $(( (a0 - amin) * 1000 / n / 1024 ))"
	if [ "$rc" != 0 ]; then
		echo "conns: failed at $n: $(grep -v '^name\|^custom' "$T/c.out" | tail -2 | tr '\n' ' ')"
		echo "conns: server: $(tail -2 "$T/s.out" | tr '\n' ' ')"
		echo "conns: memory $(awk '/MemAvailable/{print int($2/1024) " MiB available"}' /proc/meminfo)"
		echo "conns: kernel: $(dmesg 2>/dev/null | grep -i -m2 'out of memory\|killed process' | tr '\n' ' ')"
		break
	fi
done
echo "conns: done"
exit 0
