#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# evrdma-probed over Soft-RoCE, run inside the guest by tests/rxe/check-rxe.sh:
# an RDMA rstream probe against an evrdma server and an RDMA CM multicast
# sender probe, scraped over HTTP (bash's /dev/tcp: the guest has no curl);
# the server killed (failures counted, the daemon still answers); SIGTERM.
set -u
R=${EVR_BIN:-/opt/evr}/rstream
P=${EVR_BIN:-/opt/evr}/evrdma-probed
A1=$RXE_ADDR1
A2=$RXE_ADDR2
G=${RXE_MCAST:-239.1.1.1}
T=$(mktemp -d)
. "$(dirname "$0")/lib-guest.sh"

scrape() {
	exec 3<>"/dev/tcp/$A1/9471" || return 1
	printf 'GET /metrics HTTP/1.0\r\nHost: probed\r\n\r\n' >&3
	cat <&3 >"$T/m.txt"
	exec 3<&-
}
metric() { # NAME LABELS: the value, or empty
	awk -v k="$1{$2}" '$1 == k { print $2 }' "$T/m.txt"
}
summary() { echo "probed-rxe: $pass passed, $fail failed"; exit $((fail > 0)); }

if [ ! -x "$P" ]; then
	ko "evrdma-probed in the guest" "not built"
	summary
fi
server $R -b "$A2" -T a || { ko "rstream server" "did not listen"; summary; }
cat >"$T/p.json" <<JSON
{ "listen_address": "$A1", "listen_port": 9471,
  "probes": [
    { "name": "rdma-lat", "type": "rstream", "host": "$A2",
      "transport": "rdma", "size": 64, "count": 1, "iters": 50,
      "interval_s": 1, "timeout_s": 30 },
    { "name": "mc-send", "type": "mckey", "group": "$G", "bind": "$A1",
      "transport": "rdma", "role": "sender", "count": 5, "size": 100,
      "settle_s": 0.5, "interval_s": 2, "timeout_s": 30 } ] }
JSON
"$P" -c "$T/p.json" >"$T/p.out" 2>&1 &
pp=$!
runs=0
for _ in $(seq 120); do
	sleep 0.5
	scrape 2>/dev/null || continue
	runs=$(metric evrdma_probe_runs_total 'probe="rdma-lat"')
	[ "${runs:-0}" -ge 3 ] && break
done
fails=$(awk '$1 ~ /^evrdma_probe_failures_total\{probe="rdma-lat",/ { s += $2 } END { print s + 0 }' "$T/m.txt")
cnt=$(metric evrdma_rstream_latency_seconds_count 'probe="rdma-lat"')
sent=$(metric evrdma_mckey_sent_total 'probe="mc-send"')
if [ "${runs:-0}" -ge 3 ] && [ "$fails" = 0 ] && [ "${cnt:-0}" -ge 3 ]; then
	ok "RDMA rstream probe: $runs runs, no failure, latency histogram count $cnt"
else
	ko "RDMA rstream probe" "runs '${runs:-}', failures $fails, histogram count '${cnt:-}'"
fi
if [ "${sent:-0}" -ge 5 ]; then
	ok "RDMA CM multicast sender probe: $sent datagrams sent"
else
	ko "RDMA CM multicast sender probe" "sent '${sent:-}'"
fi
# the host checks of both RDMA probes: every one that applies passes here
# (root, the devices up), and the bound mckey probe's address, device and
# port are among them
hcn=$(grep -c '^evrdma_host_check_ok{' "$T/m.txt")
hcbad=$(grep -E '^evrdma_host_check_ok\{' "$T/m.txt" | awk '$2 != 1' | head -3)
if [ "$hcn" -ge 6 ] && [ -z "$hcbad" ] &&
   grep -q '^evrdma_host_check_ok{probe="mc-send",check="port_state"} 1' "$T/m.txt"; then
	ok "host checks as metrics: $hcn series, all 1 (port_state of the bound probe among them)"
else
	ko "host checks as metrics" "$hcn series; not 1: ${hcbad:-none}; $(grep '^evrdma_host_check_ok' "$T/m.txt" | tr '\n' ' ')"
fi

# the target goes away: failures, by reason, and the daemon answers
kill -9 "$sp"; wait "$sp" 2>/dev/null
t0=$(now)
fails=0
for _ in $(seq 60); do
	sleep 0.5
	scrape 2>/dev/null || continue
	fails=$(awk '$1 ~ /^evrdma_probe_failures_total\{probe="rdma-lat",/ { s += $2 } END { print s + 0 }' "$T/m.txt")
	[ "$fails" -ge 2 ] && break
done
why=$(awk '$1 ~ /^evrdma_probe_failures_total\{probe="rdma-lat",/ && $2 > 0 { print $1 }' "$T/m.txt" | head -1)
if [ "$fails" -ge 2 ] && kill -0 "$pp" 2>/dev/null; then
	ok "server killed: $fails failures counted in $(since "$t0")s (${why#*,}), the daemon still answers"
else
	ko "server killed" "failures $fails"
fi
kill -TERM "$pp"
reap "$pp" 10; prc=$?
[ "$prc" = 0 ] && ok "SIGTERM: evrdma-probed exits 0" || ko "SIGTERM" "exit $prc"
left=$(rdma resource show qp 2>/dev/null | grep -c 'type RC\|type UD')
[ "$left" = 0 ] && ok "no QP left after the daemon" || ko "QPs left" "$left"
summary
