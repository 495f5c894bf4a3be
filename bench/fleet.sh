#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Benchmark: the simulated fabric of tests/e2e/fleet.sh at a size CI does
# not run (FLEET_N hosts, 32 by default), by hand, as root.  Not a test:
# it asserts nothing.  Every host (a network namespace on one bridge)
# runs one evrdma-probed with a TCP responder and a latency mesh (64
# bytes, 10 round trips a run, poll_us FLEET_POLL_US: 0, never polling,
# as a large fleet would run; the default 200 us poll costs up to 2 ms of
# CPU per run at each end) over the shared peers file, every
# FLEET_INTERVAL seconds (2: at 1 s, 32 hosts' 992 probes a second
# overload this 2-core VM); a Prometheus scrapes them all at the same
# interval with the shipped rules (time scaled as in the test).  Measured over
# FLEET_SECS seconds (60):
#   - mesh probes per second, per host and for the fleet (each agent's
#     evrdma_probe_runs_total, before and after), against the cost model
#     (N-1)/interval per host, N(N-1)/interval for the fleet;
#   - each daemon's CPU (utime + stime of /proc/PID/stat over the same
#     span: its probes and the responder serving its peers' probes) and
#     RSS (VmRSS), per host and per peer (over an agent in the same
#     fabric whose mesh has no peer), and the samples a scrape carries;
#   - the time from a fault to its alert: host 2's link down until
#     EvrdmaHostUnreachable fires for it, and host 3's responder removed
#     until EvrdmaResponderDown fires;
#   - a latency matrix from Prometheus (each pair's mean round trip over
#     the rules' window) with host 5's link slowed to FLEET_RATE (1mbit)
#     each way by tbf,
#     plotted with gnuplot (scripts/deps.sh --bench) as a heat map.
#
#   sudo [FLEET_N=32] [FLEET_SECS=60] [FLEET_INTERVAL=2] [FLEET_POLL_US=0] bench/fleet.sh \
#        [BUILD_DIR] [-o PNG]          (default: build, doc/img/fleet-latency.png)
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build
png=$top/doc/img/fleet-latency.png
while [ $# -gt 0 ]; do
	case $1 in
	-o) png=$2; shift 2 ;;
	-*) echo "usage: bench/fleet.sh [BUILD_DIR] [-o PNG]" >&2; exit 1 ;;
	*) build=$1; shift ;;
	esac
done
PROBED=$build/evrdma-probed
N=${FLEET_N:-32}
SECS=${FLEET_SECS:-60}
PI=${FLEET_INTERVAL:-2}
export FAB_SCRAPE=$PI
export FAB_POLL_US=${FLEET_POLL_US:-0}
RATE=${FLEET_RATE:-1mbit}
[ "$(id -u)" = 0 ] || { echo "bench: run as root (namespaces, a bridge, tc)" >&2; exit 1; }
[ -x "$PROBED" ] || { echo "bench: no $PROBED (scripts/build.sh first)" >&2; exit 1; }
command -v prometheus >/dev/null || { echo "bench: prometheus is not installed" >&2; exit 1; }
[ "$N" -ge 6 ] || { echo "bench: FLEET_N=$N: at least 6 hosts" >&2; exit 1; }
T=$(mktemp -d /tmp/bench-fleet.XXXXXX)
# shellcheck disable=SC2034 # read by fabric.sh
FAB_SRC=$top
# shellcheck source=../tests/e2e/fabric.sh
. "$top/tests/e2e/fabric.sh"
declare -A PID=()
cleanup() {
	local p
	for p in "${PID[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${PID[@]}"; do wait "$p" 2>/dev/null; done
	fab_teardown
	if [ -n "${FLEET_KEEP:-}" ]; then log "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
log() { echo "bench: $*" >&2; }
WIN=$(( 10 * PI )) FOR=$(( 5 * PI ))

fab_setup "$N" "evb$$" "$T" || exit 1
fab_peers "$T/peers"
for i in $(seq 1 "$N"); do
	FAB_BW=0 fab_agent_conf "$i" "$T/h$i.json" "$T/peers" "$PI" "$PI"
	ip netns exec "$(fab_ns "$i")" "$PROBED" -c "$T/h$i.json" 2>"$T/h$i.err" &
	PID[h$i]=$!
done
# the baseline: an agent of host 1 whose mesh has no peer (its own line only)
echo "h1 $(fab_addr 1)" >"$T/self"
printf '{ "listen_address": "%s", "listen_port": 9472, "mesh": { "peers_file": "%s", "transport": "tcp", "port": 7471, "size": 64, "iters": 10, "interval_s": %s, "timeout_s": %s } }\n' \
	"$(fab_addr 1)" "$T/self" "$PI" "$PI" >"$T/base.json"
ip netns exec "$(fab_ns 1)" "$PROBED" -c "$T/base.json" 2>"$T/base.err" &
PID[base]=$!
sed -e "s/\[2m\]/[${WIN}s]/g" -e "s/for: 1m\$/for: ${FOR}s/" \
	"$top/contrib/prometheus/evrdma-fabric.rules.yml" >"$T/rules.yml"
fab_prom_conf "$T" "$T/rules.yml" "$T/peers"
ip netns exec "$(fab_ns pm)" prometheus --config.file="$T/prometheus.yml" \
	--storage.tsdb.path="$T/tsdb" --web.listen-address=127.0.0.1:9090 \
	--log.level=warn 2>"$T/prom.err" &
PID[prom]=$!

qval() { promq query "$1" 2>/dev/null | awk '{ print $NF; exit }'; }
wait_q() { # SECS EXPR VALUE
	local end=$(( $(now_ms) + $1 * 1000 ))
	until [ "$(qval "$2")" = "$3" ]; do
		[ "$(now_ms)" -ge "$end" ] && { log "timed out: $2 != $3 ($(qval "$2"))"; return 1; }
		sleep 0.5
	done
}
wait_alert() { # SECS NAME HOST: ms until NAME fires for HOST
	local t0=$FAULT_MS end=$(( $(now_ms) + $1 * 1000 ))
	until promq alerts 2>/dev/null | grep -qE "^firing $2 .*host=$3( |\$)"; do
		[ "$(now_ms)" -ge "$end" ] && { echo "(none in $1 s)"; return 1; }
		sleep 0.2
	done
	echo "$(( $(now_ms) - t0 ))"
}
log "$N hosts up; waiting for every pair"
if ! wait_q 60 'count(up{job="evrdma"} == 1)' "$N"; then
	promq targets | grep -v ' up ' >&2
	exit 1
fi
wait_q 120 'count(host_peer:evrdma_probe_up:last == 1)' "$(( N * (N - 1) ))" || exit 1
sleep 2

# --------------------------------------------------------------- the cost
runs() { # I: the mesh runs of host I so far
	ip netns exec "$(fab_ns "$1")" curl -s --max-time 5 "http://$(fab_addr "$1"):9471/metrics" |
		awk '/^evrdma_probe_runs_total\{probe="mesh:/ { s += $NF } END { print s + 0 }'
}
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
declare -A R0 C0
t0=$(date +%s%N)
declare -A S0
for i in $(seq 1 "$N"); do
	S0[$i]=$(date +%s%N)
	R0[$i]=$(runs "$i")
	C0[$i]=$(ticks "${PID[h$i]}")
done
cb0=$(ticks "${PID[base]}")
cp0=$(ticks "${PID[prom]}")
log "measuring for $SECS s"
sleep "$SECS"
t1=$(date +%s%N)
hz=$(getconf CLK_TCK)
: >"$T/hosts"
for i in $(seq 1 "$N"); do
	s1=$(date +%s%N)
	echo "$i $(( $(runs "$i") - R0[$i] )) $(( $(ticks "${PID[h$i]}") - C0[$i] )) $(rss "${PID[h$i]}") $(( (s1 - S0[$i]) / 1000000 ))" >>"$T/hosts"
done
cb=$(( $(ticks "${PID[base]}") - cb0 ))
cp=$(( $(ticks "${PID[prom]}") - cp0 ))
rb=$(rss "${PID[base]}")
rp=$(rss "${PID[prom]}")
samples=$(qval 'avg(scrape_samples_scraped{job="evrdma"})')
awk -v n="$N" -v pi="$PI" -v secs="$(( (t1 - t0) / 1000000 ))" -v hz="$hz" \
	-v cb="$cb" -v rb="$rb" -v cp="$cp" -v rp="$rp" -v smp="${samples:-0}" -v poll="$FAB_POLL_US" '
# per host: its runs and ticks over its own span ($5 ms, from its first
# read to its last); the fleet figures are the sums of the rates
{ r = $2 / ($5 / 1000); runs += r; cpu += $3 / ($5 / 1000); rss += $4
  if (min == "" || r < min) min = r; if (r > max) max = r }
END {
	s = 1
	printf "| fleet | %d hosts, %d peers each, probes every %g s, poll_us %d, measured %.0f s |\n", n, n - 1, pi, poll, secs / 1000
	printf "|---|---|\n"
	printf "| mesh probes/s per host: model (N-1)/interval | %.1f |\n", (n - 1) / pi
	printf "| ... measured (mean, min-max) | %.1f (%.1f-%.1f) |\n", runs / n / s, min / s, max / s
	printf "| mesh probes/s for the fleet: model N(N-1)/interval | %d |\n", n * (n - 1) / pi
	printf "| ... measured | %.0f |\n", runs / s
	printf "| daemon CPU per host (%% of a core; probing and answering) | %.2f |\n", cpu / n / hz / s * 100
	printf "| ... per probe run, both ends (us) | %.0f |\n", cpu / hz / runs * 1e6
	printf "| ... per peer (%% of a core at this interval) | %.3f |\n", cpu / n / hz / s * 100 / (n - 1)
	printf "| idle agent with no peer (%% of a core) | %.2f |\n", cb / hz / (secs / 1000) * 100
	printf "| daemon RSS per host (KiB) | %.0f |\n", rss / n
	printf "| ... with no peer (KiB) | %d |\n", rb
	printf "| ... per peer (KiB) | %.1f |\n", (rss / n - rb) / (n - 1)
	printf "| samples per scrape (per agent), per peer | %.0f, %.1f |\n", smp, smp / (n - 1)
	printf "| Prometheus CPU (%% of a core), RSS (MiB) | %.1f, %.0f |\n", cp / hz / (secs / 1000) * 100, rp / 1024
}' "$T/hosts" | tee "$T/table"

# ------------------------------------------------------ from fault to alert
FAULT_MS=$(now_ms)
fab_link 2 down
a1=$(wait_alert $(( 4 * (PI + FOR) + 20 )) EvrdmaHostUnreachable h2)
fab_link 2 up
wait_q 60 'count(ALERTS{alertstate="firing"})' "" >/dev/null
FAIL_CONF=$T/h3.json
FAB_BW=0 fab_agent_conf 3 "$FAIL_CONF" "$T/peers" "$PI" "$PI" 0
FAULT_MS=$(now_ms)
kill -HUP "${PID[h3]}"
a2=$(wait_alert $(( 4 * (PI + FOR) + 20 )) EvrdmaResponderDown h3)
FAB_BW=0 fab_agent_conf 3 "$FAIL_CONF" "$T/peers" "$PI" "$PI"
kill -HUP "${PID[h3]}"
printf '| from fault to alert (ms; probes every %g s, rules for: %d s): link down, EvrdmaHostUnreachable | %s |\n' "$PI" "$FOR" "$a1" | tee -a "$T/table"
printf '| ... responder removed, EvrdmaResponderDown | %s |\n' "$a2" | tee -a "$T/table"

# ------------------------------------------------------ the latency matrix
wait_q 60 'count(ALERTS{alertstate="firing"})' "" >/dev/null
fab_shape 5 "$RATE"
log "h5's link at $RATE; $(( WIN + 3 )) s for the window to fill"
sleep $(( WIN + 3 ))
promq query 'host_peer:evrdma_rstream_latency_seconds:mean2m' |
	sed -E 's/.*host=h([0-9]+).*peer=h([0-9]+).* ([0-9.e+-]+)$/\1 \2 \3/' |
	awk -v n="$N" '{ printf "%d %d %.1f\n", $1, $2, $3 * 1e6 }
		END { for (i = 1; i <= n; i++) printf "%d %d NaN\n", i, i }' |
	sort -n -k1,1 -k2,2 >"$T/matrix"
alerts=$(promq alerts | grep '^firing' | tr '\n' ';')
fab_shape 5 off
echo "bench: alerts firing with h5 slowed: ${alerts:-none}" >&2
if command -v gnuplot >/dev/null && [ -s "$T/matrix" ]; then
	term=png
	gnuplot -e 'set terminal png' 2>/dev/null || term=pngcairo
	gnuplot <<GP
set terminal $term size 820,720
set output '$png'
set title "Mean round trip (us, log colour), $N hosts: prober (row) to peer (column)\nh5's link slowed to $RATE each way (tbf)" noenhanced
set xlabel 'peer'
set ylabel 'prober'
set xrange [0.5:$N.5]
set yrange [$N.5:0.5]
set xtics 1 font ',7'
set ytics 1 font ',7'
set logscale cb
set cblabel 'us'
set palette defined (0 '#ffffcc', 1 '#fd8d3c', 2 '#800026')
set size ratio -1
plot '$T/matrix' using 2:1:3 with image notitle
GP
	log "heat map in $png"
else
	log "no gnuplot (scripts/deps.sh --bench) or no data: no heat map"
fi
