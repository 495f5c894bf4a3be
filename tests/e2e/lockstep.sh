#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The agent never measures itself (issue 38): a latency probe "lo" of
# the daemon's own TCP responder, alone, then with 50 copies of itself
# and a bandwidth probe of the same responder, all at one interval, then
# alone again.  With the 51 listed probes started together and run in
# lockstep, every run measured the others (about 880 us a round trip
# against 20 us alone); now the first runs are spread over the interval
# and the agent runs one run on a path at a time, so lo's round trip
# with the crowd stays within 2 x (or 10 us) of its round trip alone (the median
# of its runs' medians, against the larger of the two alone phases; a
# breach is measured once more, below), lo
# still runs every interval, and the waits are counted.  Then the crowd
# again with every probe "exclusive": false: no run waits.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

PROBED=${PROBED:-}
if [ -z "$PROBED" ] || [ ! -x "$PROBED" ]; then
	echo "lockstep: PROBED is not set to an executable evrdma-probed" >&2
	exit 99
fi
command -v curl >/dev/null || e2e_skip_all "curl is not installed"
T=$E2E_TMP
H=127.0.0.1
e2e_port >"$T/port" || exit 1
HP=$(cat "$T/port")
e2e_port >"$T/port" || exit 1
MP=$(cat "$T/port")
E2E_SCRAPE_PORT=$HP        # lib.sh's scrape
IV=2                       # every probe's interval, s
PHASE=10                   # seconds a phase is watched
EXTRA=50                   # copies of lo beside it
# Under valgrind the times are memcheck's: one short crowd phase checks
# the queue's memory, not the round trips (and 50 copies would time out)
[ "$E2E_VG" = 1 ] && EXTRA=5


lat() { # NAME [EXCL]: a latency probe of the responder, 100 round trips of 64 B
	printf '{ "name": "%s", "type": "rstream", "transport": "tcp", "host": "%s", "port": %s, "size": 64, "iters": 100, "interval_s": %s, "timeout_s": 5, "exclusive": %s }' \
		"$1" "$H" "$MP" "$IV" "${2:-true}"
}
conf() { # FILE EXTRA [EXCL]: lo, EXTRA copies of it, and with EXTRA a
	 # bandwidth probe; EXCL false: all of them "exclusive": false
	local i p x=${3:-true}
	p=$(lat lo "$x")
	if [ "$2" -gt 0 ]; then
		for i in $(seq "$2"); do p="$p, $(lat "p$i" "$x")"; done
		# 300 MiB a run, a few tenths of a second: runs of the latency
		# probes fall inside it, and wait for it
		p="$p, { \"name\": \"bw\", \"type\": \"rstream\", \"transport\": \"tcp\", \"host\": \"$H\", \"port\": $MP, \"kind\": \"bandwidth\", \"size\": 1048576, \"count\": 300, \"interval_s\": $IV, \"timeout_s\": 5, \"exclusive\": $x }"
	fi
	cat >"$1" <<EOF
{ "listen_address": "$H", "listen_port": $HP,
  "responders": [ { "transport": "tcp", "port": $MP, "bind": "$H" } ],
  "probes": [ $p ] }
EOF
}

# phase NAME EXTRA [EXCL [SECONDS]]: run a daemon for SECONDS (PHASE);
# lo's last run's median round trip at every scrape (one a run) into
# $T/NAME.med, its runs and the agent's counters at the end into
# $T/NAME.end
phase() {
	local n=$1 i last="" r m secs=${4:-$PHASE}
	conf "$T/$n.json" "$2" "${3:-true}"
	: >"$T/$n.med"
	bg_start "$n" $((secs + $(tscale 60))) "$PROBED" -c "$T/$n.json"
	if ! wait_listen "$HP" "$(tscale 5)" "$n"; then
		not_ok "$n: the daemon listens"
		dump "$T/$n.err"
		bg_kill "$n"
		return 1
	fi
	for i in $(seq $((secs * 4))); do
		sleep 0.25
		scrape "$n.s" || continue
		r=$(val "$T/$n.s.txt" 'evrdma_probe_runs_total{probe="lo"}')
		[ -n "$r" ] && [ "$r" != "$last" ] || continue
		last=$r
		m=$(val "$T/$n.s.txt" 'evrdma_rstream_rtt_seconds{probe="lo",quantile="0.5"}')
		[ -n "$m" ] && echo "$m" >>"$T/$n.med"
	done
	cp "$T/$n.s.txt" "$T/$n.end"
	bg_stop "$n" 10
	assert_exit "$n: SIGTERM exits 0" 0 "$RC" "$T/$n.err"
	bg_kill "$n"
}
median() { sort -g "$1" | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }
us() { awk -v s="$1" 'BEGIN { printf "%.1f", s * 1e6 }'; }
# within CROWD ALONE_A ALONE_B: CROWD at most 2 x the larger alone, or
# 10 us over it (x E2E_TIME_SCALE: the ASan build's round trips are
# longer).  On loopback, both ends in one thread, this host's round
# trip has two modes, about 6 and about 9 us, and which one a phase (a
# new agent, a new process) lands in is the host's, not the crowd's: 9.1 and 8.9 us with the crowd against 5.9 and
# 6.0 us alone in one make -j2 check; 9.4 against 6.2 and 6.0 at the
# bench with nothing else of ours running; 8.7 alone and 9.6 shared
# ("exclusive": false) with two busy loops beside it, the crowd then 5.9;
# the same with "poll_us": 0 (not the poll's back-off).  The lockstep
# this guards against is 880 us against 20: 44 x, where these bars are
# wide on purpose (two modes of 6 and 9 us are already 1.5 x).
within() {
	awk -v c="$1" -v a="$2" -v b="$3" -v k="$E2E_TIME_SCALE" 'BEGIN { m = a > b ? a : b; exit !(c <= 2 * m || c <= m + 10e-6 * k) }'
}

if [ "$E2E_VG" = 1 ]; then
	phase crowd "$EXTRA"
	d=$(val "$T/crowd.end" evrdma_probed_runs_deferred_total)
	assert_eq "valgrind: the agent counts its deferred runs" 1 \
		"$([ -n "$d" ] && echo 1 || echo 0)"
	skip "lo's round trip with the crowd (valgrind: times are memcheck's)"
	e2e_done
fi
phase alone1 0
phase crowd "$EXTRA"
phase alone2 0

a1=$(median "$T/alone1.med") c=$(median "$T/crowd.med") a2=$(median "$T/alone2.med")
say "lo's median round trip: alone $(us "${a1:-0}") us, with 50 others and bw $(us "${c:-0}") us, alone again $(us "${a2:-0}") us ($(wc -l <"$T/alone1.med"), $(wc -l <"$T/crowd.med"), $(wc -l <"$T/alone2.med") runs)"
d=$(val "$T/crowd.end" evrdma_probed_runs_deferred_total)
sk=$(val "$T/crowd.end" evrdma_probed_ticks_skipped_total)
runs=$(val "$T/crowd.end" 'evrdma_probe_runs_total{probe="lo"}')
fails=$(grep -E '^evrdma_probe_failures_total\{' "$T/crowd.end" | awk '{ s += $NF } END { print s + 0 }')
bwd=$(val "$T/crowd.end" 'evrdma_probe_duration_seconds{probe="bw"}')
say "crowd: $d runs deferred, $sk ticks skipped, lo ran $runs times, $fails failures; bw's last run took $bwd s"
assert_eq "crowd: no probe failed" 0 "$fails"
assert_le "crowd: runs that fell in the bandwidth run waited for it (runs deferred)" 1 "${d:-0}"
if [ -z "$a1" ] || [ -z "$c" ] || [ -z "$a2" ]; then
	not_ok "crowd: lo's round trip within 2 x of alone" "no runs to compare"
else
	assert_le "crowd: lo ran every interval ($runs runs in about $PHASE s at $IV s)" \
		$((PHASE / IV - 1)) "${runs:-0}"
	# A neighbour in make -j2 check that loads the CPU through a whole
	# 10 s phase moves its median (9.1 us with the crowd against 5.9 us
	# alone, once; quiet, 5.8-6.0 against 5.8-6.1): a breach is measured
	# again, the crowd then alone, and judged on that second pair.  The
	# lockstep this guards against (880 us against 20) breaches both.
	if within "$c" "$a1" "$a2"; then
		ok "crowd: lo's round trip within 2 x (or 10 us) of alone ($(us "$c") us, alone $(us "$a1") and $(us "$a2") us)"
	else
		say "crowd: $(us "$c") us against $(us "$a1") and $(us "$a2") us alone: over 2 x and 10 us; measured again"
		phase crowd2 "$EXTRA"
		phase alone3 0
		c2=$(median "$T/crowd2.med") a3=$(median "$T/alone3.med")
		if [ -n "$c2" ] && [ -n "$a3" ] && within "$c2" "$a2" "$a3"; then
			ok "crowd: lo's round trip within 2 x of alone, measured again ($(us "$c2") us, alone $(us "$a2") and $(us "$a3") us)"
		else
			not_ok "crowd: lo's round trip within 2 x of alone, twice" \
				"$(us "$c") us against $(us "$a1") and $(us "$a2") us; then $(us "${c2:-0}") us against $(us "$a2") and $(us "${a3:-0}") us"
		fi
	fi
fi

# The same crowd, every probe "exclusive": false (the configuration asks
# for runs beside each other): none waits for its path, none is counted
# as deferred, and what lo then measures is said, not judged
phase shared "$EXTRA" false 6
d=$(val "$T/shared.end" evrdma_probed_runs_deferred_total)
runs=$(val "$T/shared.end" 'evrdma_probe_runs_total{probe="lo"}')
fails=$(grep -E '^evrdma_probe_failures_total\{' "$T/shared.end" | awk '{ s += $NF } END { print s + 0 }')
s=$(median "$T/shared.med")
say "shared (\"exclusive\": false): $d runs deferred, lo ran $runs times, $fails failures, its median round trip $(us "${s:-0}") us"
assert_eq "shared: \"exclusive\": false runs wait for no path (none deferred)" 0 "${d:-x}"
assert_eq "shared: no probe failed" 0 "$fails"
assert_le "shared: lo ran" 1 "${runs:-0}"

e2e_done
