#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Benchmark: does evrdma-probed measure the network or its own wake-up?
# One evrdma server on loopback TCP; in turns, a spinning client
# (rstream -T n, the default) runs 64-byte ping-pong, and evrdma-probed
# (whose probes run -T a) probes the same server with the same test.  The
# probe's round trip (evrdma_rstream_rtt_seconds, its p50) against the
# client's (twice its usec/xfer, and its own p50 from --percentiles).
# Not a test: it asserts nothing.
#
#   bench/probe-vs-client.sh [-r rounds] [-i iters]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
rs=${RSTREAM:-$top/build/rstream}
pd=${PROBED:-$top/build/evrdma-probed}
rounds=5
iters=1000
while [ $# -gt 0 ]; do
	case $1 in
	-r) rounds=$2; shift 2 ;;
	-i) iters=$2; shift 2 ;;
	*) echo "usage: $0 [-r rounds] [-i iters]" >&2; exit 1 ;;
	esac
done
for b in "$rs" "$pd" /usr/bin/curl; do
	[ -x "$b" ] || { echo "bench: $b missing" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'pkill -P $$ 2>/dev/null || true; rm -rf "$tmp"' EXIT
port=$((30000 + $$ % 20000))
mport=$((port + 1))
. "$top/bench/lib.sh"

"$rs" -T s -T a -p "$port" >/dev/null 2>&1 &
wait_listen "$port"
cat >"$tmp/conf" <<CONF
{ "listen_address": "127.0.0.1", "listen_port": $mport,
  "probes": [ { "name": "lo", "type": "rstream", "host": "127.0.0.1",
                "port": $port, "transport": "tcp", "kind": "latency",
                "size": 64, "iters": $iters, "interval_s": 1,
                "timeout_s": 10 } ] }
CONF
for r in $(seq "$rounds"); do
	# the client: mean and p50 of its round trips, in usec
	"$rs" -T s -s 127.0.0.1 -p "$port" -S 64 -C 1 -I "$iters" \
		--percentiles >"$tmp/cli.$r" 2>&1
	# the table's row (8 columns), then --percentiles' (9: p50 4th)
	awk '/^custom/ && NF == 8 { mean = 2 * $NF }
		/^custom/ && NF == 9 { p50 = $4 }
		END { print mean, p50 }' "$tmp/cli.$r" >>"$tmp/client"
	# the probe: one run, then its p50 and its mean (sum / count)
	"$pd" -c "$tmp/conf" >/dev/null 2>&1 &
	ppid=$!
	sleep 1.5
	curl -s "http://127.0.0.1:$mport/metrics" >"$tmp/m.$r" || true
	kill "$ppid"; wait "$ppid" 2>/dev/null || true
	awk '/^evrdma_rstream_rtt_seconds\{.*quantile="0.5"/ { p50 = $NF * 1e6 }
		/^evrdma_rstream_rtt_seconds_sum/ { s = $NF }
		/^evrdma_rstream_rtt_seconds_count/ { c = $NF }
		END { if (c) printf "%.2f %.2f\n", s / c * 1e6, p50 }' \
		"$tmp/m.$r" >>"$tmp/probe"
done
med() { sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
cm=$(awk '{ print $1 }' "$tmp/client" | med)
cp=$(awk '{ print $2 }' "$tmp/client" | med)
pm=$(awk '{ print $1 }' "$tmp/probe" | med)
pp=$(awk '{ print $2 }' "$tmp/probe" | med)
echo "| round trip, usec | mean | p50 |"
echo "|---|---|---|"
echo "| rstream -T n client | $cm | $cp |"
echo "| evrdma-probed probe (-T a) | $pm | $pp |"
awk -v a="$pm" -v b="$cm" -v c="$pp" -v d="$cp" 'BEGIN {
	printf "| ratio probe / client | %.2f | %.2f |\n", a / b, (d ? c / d : 0) }'
echo "bench: $rounds rounds, 64 B x $iters round trips each; medians; $(nproc) CPUs" >&2
