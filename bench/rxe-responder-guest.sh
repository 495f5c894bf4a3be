#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Runs inside the Soft-RoCE guest (bench/rstream-rxe.sh --responder boots
# it): what an agent's RDMA responder costs in memory.  evrdma-probed with
# one "rdma" responder at its defaults (1,024 connections, 32 MiB of
# session buffers); for each N, one rstream -c N --all-at-once client
# (-S 64 -C 10 -I 3 -T a) against it.  The connections' rings and queues
# are the transport's, outside the 32 MiB of session buffers: this
# measures them.  Prints one "resp:" line per N:
#   resp: N rc R idle_kib I peak_kib P after_kib A kib_per_conn K
#         served S dropped D
# peak_kib: the daemon's RSS at its highest while the client ran (sampled
# every 0.2 s); after_kib: 2 s after the client ended (the responder
# trims its heap 0.5 s after a burst); served/dropped: the responder's
# connections_total and dropped_total (all reasons) from /metrics.
set -u
R=${EVR_BIN:-/opt/evr}/rstream
P=${EVR_BIN:-/opt/evr}/evrdma-probed
A1=$RXE_ADDR1
A2=$RXE_ADDR2
T=$(mktemp -d)
. "${EVR_BIN:-/opt/evr}/tests/lib-guest.sh"
rss() { awk '/^VmRSS/{print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
scrape() {
	exec 3<>"/dev/tcp/$A1/9471" || return 1
	printf 'GET /metrics HTTP/1.0\r\nHost: probed\r\n\r\n' >&3
	cat <&3 >"$T/m.txt"
	exec 3<&-
}
sum() { awk -v k="$1" 'index($1, k) == 1 { s += $2 } END { print s + 0 }' "$T/m.txt"; }

cat >"$T/p.json" <<JSON
{ "listen_address": "$A1", "listen_port": 9471,
  "responders": [ { "transport": "rdma", "port": 7471, "bind": "$A2" } ] }
JSON
"$P" -c "$T/p.json" >"$T/p.out" 2>&1 &
pp=$!
for _ in $(seq 50); do
	sleep 0.2
	scrape 2>/dev/null && grep -q '^evrdma_responder_listening{.*} 1' "$T/m.txt" && break
done
if ! grep -q '^evrdma_responder_listening{.*} 1' "$T/m.txt" 2>/dev/null; then
	echo "resp: the responder did not listen: $(tail -2 "$T/p.out" | tr '\n' ' ')"
	kill "$pp"
	exit 0
fi
echo "resp: guest $(awk '/MemTotal/{print int($2/1024)}' /proc/meminfo) MiB, $(nproc) CPUs"
for n in ${*:-1 64 256 1024}; do
	sleep 1
	idle=$(rss "$pp")
	$R -s "$A2" -p 7471 -c "$n" --all-at-once -S 64 -C 10 -I 3 -T a \
		--stall-timeout 600 >"$T/c.out" 2>&1 &
	cp=$!
	peak=$idle
	for _ in $(seq 6000); do   # 1,200 s at most
		kill -0 "$cp" 2>/dev/null || break
		r=$(rss "$pp"); [ "${r:-0}" -gt "$peak" ] && peak=$r
		sleep 0.2
	done
	kill -KILL "$cp" 2>/dev/null
	wait "$cp"; rc=$?
	sleep 2
	after=$(rss "$pp")
	scrape 2>/dev/null
	echo "resp: $n rc $rc idle_kib $idle peak_kib $peak after_kib $after kib_per_conn $(( (peak - idle) / n )) served $(sum evrdma_responder_connections_total) dropped $(sum evrdma_responder_dropped_total)"
	[ "$rc" = 0 ] || echo "resp: client: $(grep -v '^name\|^custom' "$T/c.out" | tail -2 | tr '\n' ' ')"
done
kill -TERM "$pp"
reap "$pp" 30 >/dev/null 2>&1
left=$(rdma resource show qp 2>/dev/null | grep -c 'type RC')
echo "resp: done, QPs left $left"
exit 0
