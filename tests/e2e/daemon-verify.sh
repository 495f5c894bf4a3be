#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# evrdma-probed's verifying probes ("verify": true), on 127.0.0.1: against
# a plain evrdma server each runs exactly its own test (latency,
# bandwidth, a custom size and count), every run passes and the server
# drops no connection; with "negotiate": false one passes against
# upstream's -T v server, and one that negotiates fails there.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"
# shellcheck source=daemon-lib.sh
. "$(dirname "$0")/daemon-lib.sh"

# ------------------------------------- verifying probes, negotiation

# A verifying probe sends its plan: a plain evrdma server runs exactly the
# probe's test (latency, bandwidth and a custom size/count alike), every
# run passes and the server drops no connection.  Without it the server
# ran its own 64-byte series: bandwidth and custom probes stalled on
# every run, the latency one "passed" on a test the server had not run.
# With "negotiate": false the probe speaks upstream's wire and passes
# against an upstream -T v server started with its test; a verifying
# probe that negotiates fails there (upstream checks the first sync's
# pattern).
port VSP
port HP5
port UP1
port UP2
# (timeout_s: 2 s, scaled for slower builds: under valgrind, with another
# script's programs on the same two CPUs, one run took longer than 2 s)
vprobe() { # NAME PORT INTERVAL EXTRA
	printf '{ "name": "%s", "type": "rstream", "host": "%s", "port": %s, "transport": "tcp", "verify": true, "interval_s": %s, "timeout_s": %s%s }' \
		"$1" "$H" "$2" "$3" "$(tscale 2)" "$4"
}
# upstream's servers in blocking mode: the same wire, and no spinning
UPQ=
VUP_RUNS=()
if [ -x "$UPSTREAM" ]; then
	if start_server up1 "$UP1" "$UPSTREAM" -T s -T b -T v -S 1000 -C 7 -I 3 -p "$UP1" &&
		start_server up2 "$UP2" "$UPSTREAM" -T s -T b -T v -S 1000 -C 7 -I 3 -p "$UP2"; then
		# first in the list: the first rstream probe runs at once, the
		# second 0.618 of its interval later (evrdma-probed(8),
		# interval_s); vupneg fails every run, its server served one
		UPQ="$(vprobe vup "$UP1" 60 ', "size": 1000, "count": 7, "iters": 3, "negotiate": false'), $(vprobe vupneg "$UP2" 1 ', "size": 1000, "count": 7, "iters": 3'), "
		VUP_RUNS=('evrdma_probe_runs_total{probe="vup"}' 1
			'evrdma_probe_runs_total{probe="vupneg"}' 1)
	fi
else
	skip "a verifying probe with \"negotiate\": false against upstream's server: $UPSTREAM is not installed"
fi
if start_server vsrv "$VSP" "$R" -T s -T a -p "$VSP"; then
	printf '{ "listen_address": "%s", "listen_port": %s, "probes": [ %s%s, %s, %s ] }\n' \
		"$H" "$HP5" "$UPQ" \
		"$(vprobe vlat "$VSP" 0.3 ', "kind": "latency"')" \
		"$(vprobe vbw "$VSP" 0.3 ', "kind": "bandwidth"')" \
		"$(vprobe vcus "$VSP" 0.3 ', "size": 1000, "count": 7, "iters": 3')" \
		>"$T/verify.json"
	bg_start vd 60 "$PROBED" -c "$T/verify.json"
	if wait_listen "$HP5" 5 vd; then
		scrape_hp5() { scrape "$1" "$HP5"; }
		sleep 1
		until_scraped scrape_hp5 vm 6 \
			'evrdma_probe_runs_total{probe="vlat"}' 3 \
			'evrdma_probe_runs_total{probe="vbw"}' 3 \
			'evrdma_probe_runs_total{probe="vcus"}' 3 "${VUP_RUNS[@]}"
		# what the server logged while the probes ran: stopping the
		# daemon cancels the runs in flight, which the server logs
		cp "$T/vsrv.err" "$T/vsrv.err.during"
		bg_stop vd 5
		assert_exit "verifying probes: SIGTERM exits 0" 0 "$RC" "$T/vd.err"
		# (name, the server's row for the probe's test)
		for pr in 'vlat|custom +64 +1 +100 ' 'vbw|custom +64k +100 +1 ' \
			'vcus|custom +1000 +7 +3 '; do
			n=${pr%%|*}
			runs=$(val "$T/vm.txt" "evrdma_probe_runs_total{probe=\"$n\"}")
			num_ge "verify probe $n against a plain server: runs" "$runs" 3
			assert_eq "verify probe $n: no failure counted" 0 \
				"$(grep -E "^evrdma_probe_failures_total\\{probe=\"$n\"," "$T/vm.txt" | awk '{ s += $NF } END { print s + 0 }')"
			assert_eq "verify probe $n: up" 1 "$(val "$T/vm.txt" "evrdma_probe_up{probe=\"$n\"}")"
			num_ge "verify probe $n: the server ran the probe's test every run" \
				"$(grep -Ec "^${pr#*|}" "$T/vsrv.out")" "${runs:-1}"
		done
		assert_no_match "verify probes: no parts (a verifying client checks every byte)" \
			'^evrdma_rstream_network_rtt_seconds_count\{probe="v' "$T/vm.txt"
		assert_no_match "verify probes: the server ran no series of its own" \
			'^[0-9]+[kmg]?_(lat|bw) ' "$T/vsrv.out"
		assert_empty "verify probes: the server dropped no connection" "$T/vsrv.err.during"
		assert_no_match "verify probes: none of them failed" \
			'probe "v(lat|bw|cus)": failing' "$T/vd.err"
		if [ -n "$UPQ" ]; then
			assert_eq "\"negotiate\": false against an upstream -T v server: one run" 1 \
				"$(val "$T/vm.txt" 'evrdma_probe_runs_total{probe="vup"}')"
			assert_eq "\"negotiate\": false against an upstream -T v server: up" 1 \
				"$(val "$T/vm.txt" 'evrdma_probe_up{probe="vup"}')"
			bg_wait up1 5
			assert_exit "the upstream server served the probe's run" 0 "$RC" \
				"$T/up1.out" "$T/up1.err"
			assert_match "... the probe's test, verified" '^custom +1000 +7 +3 ' "$T/up1.out"
			num_ge "a verifying probe that negotiates fails against an upstream -T v server" \
				"$(grep -E '^evrdma_probe_failures_total\{probe="vupneg",' "$T/vm.txt" | awk '{ s += $NF } END { print s + 0 }')" 1
		fi
	else
		not_ok "verify daemon listens"
		dump "$T/vd.err"
	fi
fi
bg_kill vsrv
bg_kill up1
bg_kill up2

e2e_done
