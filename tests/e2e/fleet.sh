#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# A simulated fleet watched by a real Prometheus.  FLEET_N hosts (8; 6
# under valgrind) are network namespaces on one Linux bridge
# (tests/e2e/fabric.sh), each running one evrdma-probed with a TCP
# responder, a latency mesh over one shared peers file and a bandwidth
# probe of the next host; Debian's prometheus, in a namespace of its own
# on the bridge, scrapes every agent each second (file_sd made by
# contrib/prometheus/peers2sd from the same peers file) and evaluates
# contrib/prometheus/evrdma-fabric.rules.yml, its windows and for:
# durations divided by 12 for probes every second instead of every ten
# or so.  Then, one fault at a time, each asked of Prometheus's HTTP API
# (/api/v1/alerts, /api/v1/query) until the expected alert fires, within
# a bound: every alert that fires in the meantime must name that host
# (host or peer label), and each fault's alerts must clear once it is
# repaired:
#   1. host 2's link down (its bridge port): EvrdmaHostUnreachable;
#   2. host 3's responder taken away (SIGHUP, a configuration without
#      it): EvrdmaResponderDown;
#   3. host 4's mesh bound to an address it lacks (SIGHUP): its probes
#      fail on its side: EvrdmaHostCannotProbe, EvrdmaProbeLocalFailures;
#   4. host 5's link slowed to 2 Mbit/s each way (tbf; 1 under valgrind):
#      EvrdmaHostLatencyHigh,
#      and the bandwidth series of its two probes (to it, from it) fall
#      below a quarter of every other host's;
#   5. host 6's agent killed (SIGKILL), then started again:
#      EvrdmaHostUnreachable;
#   6. host 7's CPU starved (its agent and a busy loop in a cgroup of 5 %
#      of a CPU): EvrdmaHostSlow, the responder's hold, not its link.
# At probes every second the rules are the shipped fast profile
# (contrib/prometheus/evrdma-fabric-fast.rules.yml) and each alert must
# come within 20 s.  FLEET_ROUNDS=N repeats the faults N times (4: 24
# injections); FLEET_FAULTS picks some; FLEET_TRACE="EXPR ..." prints,
# at each poll of a fault, the first value of each PromQL EXPR (HOST
# standing for the faulty host) and that host's alerts.  With 3 or 4 hosts
# (tests/e2e/fleet-small.sh) only a slow link (host 2) and a starved CPU
# (host 3) are injected: the latency alert where the fleet's median moves
# with the slow host.
# Root only (namespaces, a bridge, tc); skipped without prometheus.  The
# time from each fault to its alert is printed.  Every agent exits 0 on
# SIGTERM at the end, without a sanitizer or memcheck report.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

PROBED=${PROBED:-}
if [ -z "$PROBED" ] || [ ! -x "$PROBED" ]; then
	echo "fleet: PROBED is not set to an executable evrdma-probed" >&2
	exit 99
fi
T=$E2E_TMP
SRC=${E2E_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
[ "$(id -u)" = 0 ] ||
	e2e_skip_all "the fleet needs root (network namespaces, a bridge, tc)"
for t in prometheus promtool ip tc; do
	command -v "$t" >/dev/null 2>&1 ||
		e2e_skip_all "$t is not installed (scripts/deps.sh)"
done
# shellcheck disable=SC2034 # read by fabric.sh
FAB_SRC=$SRC
# shellcheck source=fabric.sh
. "$(dirname "${BASH_SOURCE[0]}")/fabric.sh"

# Under valgrind every agent runs under memcheck (about 30 times the CPU):
# six hosts, probing every 2 s, fit two cores; that is still enough for
# "most peers" and for a fleet median that one slow host does not move.
# The slow link of fault 4: its 64-byte round trips queue behind the
# traffic it carries, half as much under valgrind: half the rate there.
if [ "$E2E_VG" = 1 ]; then
	N=${FLEET_N:-6}
	PI=${FLEET_INTERVAL:-2}
	RATE=1mbit
else
	N=${FLEET_N:-8}
	PI=${FLEET_INTERVAL:-1}
	RATE=2mbit
fi
# A small fleet (3 or 4 hosts, tests/e2e/fleet-small.sh) runs two faults,
# a slow link and a starved CPU: the latency alert must work where the
# fleet's median moves with the slow host (each pair against its own
# baseline); the others need "most of its peers", 5 hosts and more.
[ "$N" -ge 3 ] || e2e_skip_all "FLEET_N=$N: a fleet needs at least 3 hosts"
# The CI time budget: the 8-host fleet runs in the normal build; in the
# ASan build fleet-small.sh runs the same agents, rules and faults code
# under the sanitizers (FLEET_N set), and FLEET_ASAN=1 runs this one too.
if [ "$E2E_SAN" = yes ] && [ -z "${FLEET_N:-}" ] && [ "${FLEET_ASAN:-0}" != 1 ]; then
	e2e_skip_all "the 8-host fleet in the ASan build (CI time: fleet-small.sh runs its agents under ASan; FLEET_ASAN=1 runs it)"
fi
if [ "$N" -ge 7 ]; then
	FAULTS=${FLEET_FAULTS:-"link resp local slow kill starve"}
	SLOW_H=5 STARVED=7
elif [ "$N" -ge 5 ]; then
	FAULTS=${FLEET_FAULTS:-"link resp local slow kill starve"}
	SLOW_H=5 STARVED=1
else
	FAULTS=${FLEET_FAULTS:-"slow starve"}
	SLOW_H=2 STARVED=3
fi
KILLED=6
TO=$PI                        # a probe's timeout_s
WIN=$(( 10 * PI ))            # the rules' [2m] windows, in seconds
FOR=$(( 5 * PI ))             # the rules' for: 1m
say "$N hosts, probes every $PI s, rules: windows ${WIN}s, for: ${FOR}s; time scale x$E2E_TIME_SCALE"

# One fleet at a time on this host (make -j2 check runs fleet.sh and
# fleet-small.sh side by side otherwise): two fleets and their
# Prometheus on two CPUs, each alert's 20 s is the CPUs', not the rules'.
exec 8>"${TMPDIR:-/tmp}/evrdma-fleet.lock"
if ! flock -w "$(tscale 600)" 8; then
	not_ok "the fleet lock (another fleet ran for 10 minutes)"
	e2e_done
fi
trap 'fleet_cleanup; e2e_cleanup' EXIT
fleet_cleanup() {
	local n
	for n in "${!E2E_PID[@]}"; do
		bg_kill "$n"
	done
	fab_teardown
}

# ------------------------------------------------------------ the fabric

if ! fab_setup "$N" "evf$$" "$T" >"$T/setup.err" 2>&1; then
	not_ok "the fabric is made ($N namespaces on a bridge)"
	dump "$T/setup.err"
	e2e_done
fi
ok "the fabric: $N hosts and Prometheus, namespaces on one bridge"
fab_peers "$T/peers"
for i in $(seq 1 "$N"); do
	fab_agent_conf "$i" "$T/h$i.json" "$T/peers" "$PI" "$TO"
	bg_start "h$i" 900 ip netns exec "$(fab_ns "$i")" "$PROBED" -c "$T/h$i.json"
done

# the shipped rules, time scaled (contrib/prometheus/scale-rules): at
# probes every second, the shipped evrdma-fabric-fast.rules.yml itself
if [ "$PI" = 1 ]; then
	cp "$SRC/contrib/prometheus/evrdma-fabric-fast.rules.yml" "$T/rules.yml"
else
	"$SRC/contrib/prometheus/scale-rules" $(( 12 / PI )) \
		"$SRC/contrib/prometheus/evrdma-fabric.rules.yml" "$T/rules.yml"
fi
assert_eq "the rules, time scaled: no [2m], [30m] or for: 1m left" 0 \
	"$(grep -cE '\[2m\]|\[30m\]|^ *for: 1m$' "$T/rules.yml")"
assert_eq "... every for: scaled" \
	"$(grep -c 'for: 1m$' "$SRC/contrib/prometheus/evrdma-fabric.rules.yml")" \
	"$(grep -c "for: ${FOR}s\$" "$T/rules.yml")"
run_cmd rcheck 30 promtool check rules "$T/rules.yml"
assert_exit "promtool check rules on them" 0 "$RC" "$T/rcheck.out"
fab_prom_conf "$T" "$T/rules.yml" "$T/peers"
mkdir -p "$T/tsdb"
bg_start prom 900 ip netns exec "$(fab_ns pm)" prometheus \
	--config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" \
	--web.listen-address=127.0.0.1:9090 --log.level=warn

# poll_until SECS CMD...: run CMD every 0.5 s until it succeeds, at most
# SECS (scaled) seconds
poll_until() {
	local end=$(( $(now_ms) + $(tscale "$1") * 1000 ))
	shift
	while :; do
		"$@" && return 0
		[ "$(now_ms)" -ge "$end" ] && return 1
		sleep 0.5
	done
}
qval() { promq query "$1" 2>/dev/null | awk '{ print $NF; exit }'; }
q_is() { [ "$(qval "$1")" = "$2" ]; }
no_alerts() { promq alerts >"$T/alerts.now" 2>/dev/null && [ ! -s "$T/alerts.now" ]; }

if ! poll_until 30 promq ready; then
	not_ok "Prometheus is ready"
	dump "$T/prom.err"
	e2e_done
fi
ok "Prometheus is ready"
PAIRS=$(( N * (N - 1) ))
poll_until 30 q_is 'count(up{job="evrdma"} == 1)' "$N"
assert_eq "Prometheus scrapes every agent" "$N" "$(qval 'count(up{job="evrdma"} == 1)')"
poll_until 30 q_is 'count(host_peer:evrdma_probe_up:last == 1)' "$PAIRS"
assert_eq "every mesh pair is up (N x (N-1))" "$PAIRS" \
	"$(qval 'count(host_peer:evrdma_probe_up:last == 1)')"
# a bandwidth probe runs every 2 intervals, its first at the second
poll_until $(( 4 * PI + 10 )) q_is 'count(evrdma_probe_up{probe=~"bw:.+"} == 1)' "$N"
assert_eq "every bandwidth probe is up" "$N" \
	"$(qval 'count(evrdma_probe_up{probe=~"bw:.+"} == 1)')"
if poll_until $(( WIN + FOR + 10 )) no_alerts; then
	ok "a healthy fleet: no alert firing or pending"
else
	not_ok "a healthy fleet: no alert firing or pending" "$(head -5 "$T/alerts.now")"
fi
ip netns exec "$(fab_ns 1)" curl -s --max-time 2 -o "$T/h1.metrics" "http://$(fab_addr 1):9471/metrics"
run_cmd pcheck 30 sh -c "promtool check metrics <'$T/h1.metrics'"
assert_exit "an agent's scrape passes promtool check metrics" 0 "$RC" "$T/pcheck.out" "$T/pcheck.err"

# -------------------------------------------------------------- the faults

# expect_alerts HOST SECS ALERT...: poll the alerts until every ALERT
# ("NAME" or "NAME k=v") fires for HOST, at most SECS (scaled) seconds;
# every alert firing in the meantime must name HOST (as host or peer).
# FIRED_MS: from the fault (FAULT_MS) to the last expected alert.
expect_alerts() {
	local host=$1 secs=$2 end want got missing a
	shift 2
	end=$(( $(now_ms) + $(tscale "$secs") * 1000 ))
	: >"$T/fired"
	while :; do
		promq alerts >"$T/alerts.all" 2>/dev/null
		grep '^firing ' "$T/alerts.all" >"$T/alerts.now"
		cat "$T/alerts.now" >>"$T/fired"
		missing=
		for want in "$@"; do
			a=${want%% *}
			got=$(grep -E "^firing $a .*host=$host( |\$)" "$T/alerts.now")
			[ "$want" != "$a" ] && got=$(printf '%s\n' "$got" | grep -F " ${want#* }")
			[ -n "$got" ] || missing="$missing $want"
		done
		# FLEET_TRACE="EXPR ...": each poll, their values (HOST: this
		# host) and this host's alerts, printed at the end
		if [ -n "${FLEET_TRACE:-}" ]; then
			# shellcheck disable=SC2086 # one word an expression
			printf '%6d %s | %s\n' "$(( $(now_ms) - FAULT_MS ))" \
				"$(promq values ${FLEET_TRACE//HOST/$host} 2>&1)" \
				"$(grep -E " host=$host( |\$)" "$T/alerts.all" | cut -d' ' -f1,2 | tr '\n' ' ')" >>"$T/trace"
		fi
		[ -z "$missing" ] && break
		[ "$(now_ms)" -ge "$end" ] && break
		sleep 0.5
	done
	FIRED_MS=$(( $(now_ms) - FAULT_MS ))
	if [ -n "${FLEET_TRACE:-}" ]; then
		say "trace: ms after the fault, then $FLEET_TRACE (HOST: $host) | alerts"
		sed 's/^/#   /' "$T/trace"
		: >"$T/trace"
	fi
	if [ -z "$missing" ]; then
		ok "$host: $* fired, $FIRED_MS ms after the fault"
	else
		not_ok "$host: $* fired within $(tscale "$secs") s" "missing:$missing"
		dump "$T/alerts.now"
	fi
	# the fleet dashboard's queries, once, while this fault's alerts fire
	[ -z "$missing" ] && . "$(dirname "${BASH_SOURCE[0]}")/fleet-dashboard.sh" && fleet_dashboard_once "$host"
	# 2 s more, to see what else fires
	for _ in 1 2 3 4; do
		sleep 0.5
		promq alerts 2>/dev/null | grep '^firing ' >>"$T/fired"
	done
	sort -u "$T/fired" | grep -vE " (host|peer)=$host( |\$)" >"$T/others"
	assert_empty "$host: no alert names another host" "$T/others"
}

cleared() { # SECS DESC: no alert firing or pending within SECS
	if poll_until "$1" no_alerts; then
		ok "$2: every alert cleared"
	else
		not_ok "$2: every alert cleared" "$(head -5 "$T/alerts.now")"
	fi
}

# From a fault to its alert: the probes see it (up to an interval and a
# timeout), a scrape and a rule evaluation carry it (a second each), the
# alert is pending for FOR; latency needs part of the window to fill.
# The shipped fast settings (doc/fabric.md, "Alerts in seconds") promise 20 s.
BOUND=$(( PI == 1 ? 20 : PI + TO + FOR + 10 + WIN ))
HUP() { kill -HUP "$(bg_child_pid "h$1")"; }
TOTAL=()
ROUNDS=${FLEET_ROUNDS:-1}
INJECTED=0

# a cgroup whose CPU quota (5 % of a CPU) a busy loop takes: whatever
# else runs in it waits up to 95 ms of every 100
starve_on() { # I
	local pid hog
	pid=$(bg_child_pid "h$1") || { echo "no pid for h$1"; return 1; }
	if [ -d /sys/fs/cgroup/cpu ] && [ -w /sys/fs/cgroup/cpu ]; then
		CG_ROOT=/sys/fs/cgroup/cpu CG=/sys/fs/cgroup/cpu/evr-fleet.$$
		mkdir -p "$CG" && echo 100000 >"$CG/cpu.cfs_period_us" &&
			echo 5000 >"$CG/cpu.cfs_quota_us" || return 1
	elif grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
		CG_ROOT=/sys/fs/cgroup CG=/sys/fs/cgroup/evr-fleet.$$
		echo +cpu >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
		mkdir -p "$CG" && echo "5000 100000" >"$CG/cpu.max" || return 1
	else
		echo "no cpu cgroup controller"
		return 1
	fi
	bg_start hog 120 sh -c 'while :; do :; done'
	# Moving a task the kernel cannot find (or sees exiting) fails with
	# ESRCH: once seen in CI, for a busy loop or an agent that were both
	# alive before and after.  Tried again, each pid read afresh, and
	# what the kernel saw said if it keeps failing.
	local try
	for try in 1 2 3 4 5; do
		hog=$(bg_child_pid hog) && pid=$(bg_child_pid "h$1") &&
			echo "$hog" 2>/dev/null >"$CG/cgroup.procs" &&
			echo "$pid" 2>/dev/null >"$CG/cgroup.procs" && return 0
		sleep 0.2
	done
	echo "could not move the busy loop (pid ${hog:-none}: $(cut -d' ' -f2,3 "/proc/$hog/stat" 2>&1)) and h$1's agent (pid ${pid:-none}: $(cut -d' ' -f2,3 "/proc/$pid/stat" 2>&1)) into $CG"
	return 1
}
starve_off() { # I
	local i
	echo "$(bg_child_pid "h$1")" >"$CG_ROOT/cgroup.procs" 2>/dev/null
	bg_kill hog
	# the cgroup goes once the busy loop has gone
	for i in $(seq 1 40); do
		rmdir "$CG" 2>/dev/null && return 0
		sleep 0.05
	done
	say "the cgroup $CG stays: $(cat "$CG/cgroup.procs" 2>/dev/null | tr '\n' ' ')"
}

for round in $(seq 1 "$ROUNDS"); do
	[ "$ROUNDS" -gt 1 ] && say "round $round of $ROUNDS"

	has() { case " $FAULTS " in *" $1 "*) return 0 ;; esac; return 1; }
	# 1. a link down
	if has link; then
	FAULT_MS=$(now_ms)
	fab_link 2 down
	expect_alerts h2 "$BOUND" EvrdmaHostUnreachable
	TOTAL+=("link down: $FIRED_MS ms")
	if [ "$round" = 1 ]; then
		assert_eq "h2's link down: every peer's probe of it is down" "$(( N - 1 ))" \
			"$(qval 'count(host_peer:evrdma_probe_up:last{peer="h2"} == 0)')"
		assert_eq "... and Prometheus cannot scrape it" 0 "$(qval 'up{host="h2"}')"
	fi
	fab_link 2 up
	cleared $(( FOR + WIN + 10 )) "h2's link back"
	INJECTED=$(( INJECTED + 1 ))
	fi

	# 2. a responder taken away
	if has resp; then
	fab_agent_conf 3 "$T/h3.json" "$T/peers" "$PI" "$TO" 0
	FAULT_MS=$(now_ms)
	HUP 3
	expect_alerts h3 "$BOUND" EvrdmaResponderDown
	TOTAL+=("responder gone: $FIRED_MS ms")
	if [ "$round" = 1 ]; then
		num=$(qval "sum(increase(evrdma_probe_failures_total{peer=\"h3\",reason=\"refused\"}[${WIN}s]))")
		if [ -n "$num" ] && awk -v n="$num" 'BEGIN { exit !(n > 0) }'; then
			ok "h3 without a responder: its peers' probes are refused ($num)"
		else
			not_ok "h3 without a responder: its peers' probes are refused" "'$num'"
		fi
		assert_eq "... while its own probes are up" "$(( N - 1 ))" \
			"$(qval 'count(host_peer:evrdma_probe_up:last{host="h3"} == 1)')"
	fi
	fab_agent_conf 3 "$T/h3.json" "$T/peers" "$PI" "$TO"
	HUP 3
	cleared $(( FOR + WIN + 10 )) "h3's responder back"
	INJECTED=$(( INJECTED + 1 ))
	fi

	# 3. probes failing on the local side: the mesh bound to an address
	# the host does not have
	if has local; then
	fab_agent_conf 4 "$T/h4.json" "$T/peers" "$PI" "$TO" 1 198.18.2.4
	FAULT_MS=$(now_ms)
	HUP 4
	expect_alerts h4 "$BOUND" EvrdmaHostCannotProbe "EvrdmaProbeLocalFailures reason=error"
	TOTAL+=("local failures: $FIRED_MS ms")
	fab_agent_conf 4 "$T/h4.json" "$T/peers" "$PI" "$TO"
	HUP 4
	cleared $(( FOR + WIN + 10 )) "h4's mesh bound right again"
	INJECTED=$(( INJECTED + 1 ))
	fi

	# 4. a slow link
	if has slow; then
	FAULT_MS=$(now_ms)
	if fab_shape $SLOW_H "$RATE"; then
		if [ "${FAB_BW:-1}" = 1 ]; then
			expect_alerts h$SLOW_H "$BOUND" EvrdmaHostLatencyHigh EvrdmaLinkThroughputLow
		else
			expect_alerts h$SLOW_H "$BOUND" EvrdmaHostLatencyHigh
		fi
		TOTAL+=("slow link: $FIRED_MS ms")
		if [ "$round" = 1 ] && [ "$N" -ge 5 ]; then
			promq query 'host:evrdma_rstream_latency_seconds:median_mean2m' >"$T/lat"
			say "median network round trip measured to each host (s): $(sed -e 's/^host=//' -e 's/,job=[^ ]*//' "$T/lat" | sort -V | tr '\n' ' ')"
			# the bandwidth series: both probes through h5's link
			# (h4 -> h5, h5 -> h6) have run since it was slowed
			sleep "$(( 4 * PI + 2 ))"
			promq query 'evrdma_rstream_throughput_bytes_per_second{probe=~"bw:.+"}' >"$T/bw"
			say "bandwidth probes (bytes/s): $(sed -e 's/,instance=[^,]*,job=evrdma//' "$T/bw" | sort -V | tr '\n' ' ')"
			res=$(awk '
				{ inv = ($1 ~ /(^|,)host=h5(,|$)/ || $1 ~ /probe=bw:h5(,|$)/) }
				inv { n++; if ($NF > imax) imax = $NF }
				!inv { m++; if (omin == "" || $NF < omin) omin = $NF }
				END { printf "%d %d %s %s\n", n, m, imax, omin }' "$T/bw")
			read -r ninv nrest imax omin <<<"$res"
			assert_eq "bandwidth: two series through h5's link, $(( N - 2 )) others" "2 $(( N - 2 ))" "$ninv $nrest"
			if [ -n "$omin" ] && awk -v a="$imax" -v b="$omin" 'BEGIN { exit !(a > 0 && a * 4 < b) }'; then
				ok "bandwidth: h5's two series ($imax B/s at most) under a quarter of every other ($omin B/s at least)"
			else
				not_ok "bandwidth: h5's two series under a quarter of every other" "h5: $imax, others: $omin"
				dump "$T/bw"
			fi
		fi
		if [ -n "${FLEET_DEBUG:-}" ]; then
			for q in host_peer:evrdma_rstream_network_seconds:mean2m host_peer:evrdma_rstream_network_seconds:baseline30m host_peer:evrdma_rstream_network_slow:bool; do
				say "$q: $(promq query "$q" | tr '\n' ' ')"
			done
		fi
		if [ "$N" -lt 5 ]; then
			promq query 'host:evrdma_rstream_network_slow:ratio' >"$T/ratio"
			say "the share of each host's pairs whose network part is over 3 x its baseline: $(sed -e 's/^host=//' -e 's/,job=[^ ]*//' "$T/ratio" | sort -V | tr '\n' ' ')"
		fi
		fab_shape $SLOW_H off
		cleared $(( FOR + WIN + 10 )) "h$SLOW_H's link at full speed again"
	else
		not_ok "tbf on h$SLOW_H's link"
	fi
	INJECTED=$(( INJECTED + 1 ))
	fi

	# 5. an agent killed (its responder goes with it), then started again
	if has kill; then
	FAULT_MS=$(now_ms)
	kill -KILL "$(bg_child_pid "h$KILLED")"
	bg_wait "h$KILLED" 10
	expect_alerts "h$KILLED" "$BOUND" EvrdmaHostUnreachable
	TOTAL+=("agent killed: $FIRED_MS ms")
	bg_start "h$KILLED" 900 ip netns exec "$(fab_ns "$KILLED")" "$PROBED" -c "$T/h$KILLED.json"
	cleared $(( FOR + WIN + 10 )) "h$KILLED's agent started again"
	INJECTED=$(( INJECTED + 1 ))
	fi

	# 6. a host's CPU starved: its agent beside a busy loop in a cgroup
	# of 5 % of a CPU; its responder holds every request (EvrdmaHostSlow),
	# and it is told from its link: the network's part does not grow
	if has starve; then
	FAULT_MS=$(now_ms)
	if starve_on "$STARVED" >"$T/starve.err" 2>&1; then
		expect_alerts "h$STARVED" "$BOUND" EvrdmaHostSlow
		TOTAL+=("CPU starved: $FIRED_MS ms")
		if [ "$round" = 1 ]; then
			promq query 'host:evrdma_rstream_responder_hold_seconds:median_mean2m' >"$T/hold"
			say "responder hold measured to each host (s): $(sed -e 's/^host=//' -e 's/,job=[^ ]*//' "$T/hold" | sort -V | tr '\n' ' ')"
		fi
		starve_off "$STARVED"
		cleared $(( FOR + WIN + 10 )) "h$STARVED's CPU back"
	else
		not_ok "a cgroup with a CPU quota for h$STARVED" "$(cat "$T/starve.err")"
	fi
	INJECTED=$(( INJECTED + 1 ))
	fi
done
say "from fault to alert: ${TOTAL[*]}"
max=$(printf '%s\n' "${TOTAL[@]}" | sed 's/.*: \([0-9]*\) ms/\1/' | sort -n | tail -1)
say "$INJECTED faults injected, the slowest alert ${max} ms after its fault"

# the status page in a browser, the fleet running (fleet-browser.sh)
. "$(dirname "${BASH_SOURCE[0]}")/fleet-browser.sh" && fleet_browser

# ------------------------------------------------------------------ the end

for i in $(seq 1 "$N"); do
	bg_stop "h$i" 10
	assert_exit "h$i: SIGTERM exits 0" 0 "$RC" "$T/h$i.err"
done
bg_stop prom 10
e2e_done
