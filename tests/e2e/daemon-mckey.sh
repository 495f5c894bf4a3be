#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# evrdma-probed's mckey UDP probes, as root, inside a network namespace:
# a sender and a receiver probe pair (everything received, nothing
# lost), a receiver expecting more than is sent (reason="timeout", a
# shortfall, not loss) and one bound to an address the namespace lacks
# (never joined, nothing lost, reason="error"); /metrics in the
# exposition format, promtool clean; SIGTERM exits 0 within a second.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"
# shellcheck source=daemon-lib.sh
. "$(dirname "$0")/daemon-lib.sh"

# --------------------------------------- mckey UDP probes in a netns

# A receiver and a sender probe on the namespace's lo, every second, and
# a second receiver that expects more than is sent: it fails with
# reason="timeout" and counts the shortfall, not loss.  A third receiver
# binds an address the namespace does not have: it never joins, and a run
# that never joined has lost nothing (issue 14).
NS=evpd-$$
if [ "$(id -u)" = 0 ] && ip netns add "$NS" 2>/dev/null; then
	trap 'ip netns del "$NS" 2>/dev/null; e2e_cleanup' EXIT
	NX=(ip netns exec "$NS")
	X=$(( $$ % 200 + 20 ))
	ip -n "$NS" link set lo up
	ip -n "$NS" link set lo multicast on
	ip -n "$NS" addr add "10.$X.7.1/24" dev lo
	ip -n "$NS" route add 224.0.0.0/4 dev lo
	mc() { # NAME ROLE COUNT TIMEOUT [BIND]
		printf '{ "name": "%s", "type": "mckey", "group": "239.%s.7.1", "bind": "%s", "transport": "udp", "role": "%s", "count": %s, "size": 64, "settle_s": 0.3, "interval_s": 1, "timeout_s": %s, "udp_port": 17401 }' \
			"$1" "$X" "${5:-10.$X.7.1}" "$2" "$3" "$4"
	}
	printf '{ "listen_port": 9471, "probes": [ %s, %s, %s, %s ] }\n' \
		"$(mc mrx receiver 5 2)" "$(mc mshort receiver 10 0.5)" \
		"$(mc mtx sender 5 2)" "$(mc mnojoin receiver 5 2 "10.$X.8.1")" \
		>"$T/mc.json"
	bg_start mcd 60 "${NX[@]}" "$PROBED" -c "$T/mc.json"
	scrape_mc() { # (scrape and val: lib.sh's)
		local E2E_SCRAPE_IN=("${NX[@]}")
		scrape "$1" 9471
	}
	sleep 3.6
	until_scraped scrape_mc mc1 3 'evrdma_probe_runs_total{probe="mrx"}' 2 \
		'evrdma_probe_runs_total{probe="mshort"}' 2
	meta_ok "mckey netns: /metrics" mc1
	check_format "mckey netns: the exposition format" "$T/mc1.txt"
	promtool_ok "mckey netns (sender, receivers, failing receivers)" "$T/mc1.txt"
	runs=$(val "$T/mc1.txt" 'evrdma_probe_runs_total{probe="mrx"}')
	num_ge "mckey netns: receiver runs (4 on a quiet host)" "$runs" 2
	assert_eq "mckey netns: receiver never failed" 0 \
		"$(grep -E '^evrdma_probe_failures_total\{probe="mrx",' "$T/mc1.txt" | awk '{ s += $NF } END { print s + 0 }')"
	assert_eq "mckey netns: 5 received per receiver run" "$((runs * 5))" \
		"$(val "$T/mc1.txt" 'evrdma_mckey_received_total{probe="mrx"}')"
	assert_eq "mckey netns: nothing lost" 0 \
		"$(val "$T/mc1.txt" 'evrdma_mckey_lost_total{probe="mrx"}')"
	num_ge "mckey netns: sender sent" \
		"$(val "$T/mc1.txt" 'evrdma_mckey_sent_total{probe="mtx"}')" 10
	num_ge "mckey netns: join latency gauge set" \
		"$(val "$T/mc1.txt" 'evrdma_mckey_join_latency_seconds{probe="mrx"}')" 0
	sruns=$(val "$T/mc1.txt" 'evrdma_probe_runs_total{probe="mshort"}')
	num_ge "mckey netns: short receiver runs (3 on a quiet host)" "$sruns" 2
	assert_eq "mckey netns: short receiver fails by timeout every run" "$sruns" \
		"$(val "$T/mc1.txt" 'evrdma_probe_failures_total{probe="mshort",reason="timeout"}')"
	# it expects 10, the sender sends 5 and none is lost on the way
	assert_eq "mckey netns: short receiver's shortfall 5 a run" "$((sruns * 5))" \
		"$(val "$T/mc1.txt" 'evrdma_mckey_shortfall_total{probe="mshort"}')"
	assert_eq "mckey netns: ... of which none lost" 0 \
		"$(val "$T/mc1.txt" 'evrdma_mckey_lost_total{probe="mshort"}')"
	assert_eq "mckey netns: the full receiver's shortfall 0" 0 \
		"$(val "$T/mc1.txt" 'evrdma_mckey_shortfall_total{probe="mrx"}')"
	nruns=$(val "$T/mc1.txt" 'evrdma_probe_runs_total{probe="mnojoin"}')
	num_ge "mckey netns: receiver that cannot bind ran" "$nruns" 2
	assert_eq "mckey netns: ... and failed every run" "$nruns" \
		"$(grep -E '^evrdma_probe_failures_total\{probe="mnojoin",' "$T/mc1.txt" | awk '{ s += $NF } END { print s + 0 }')"
	assert_eq "mckey netns: a run that never joined lost nothing" 0 \
		"$(val "$T/mc1.txt" 'evrdma_mckey_lost_total{probe="mnojoin"}')"
	# a bind address the host lacks is the host's error, not a join
	# failure of the group or the fabric (issue 29)
	assert_eq "mckey netns: the bind failures count as reason=error" "$nruns" \
		"$(val "$T/mc1.txt" 'evrdma_probe_failures_total{probe="mnojoin",reason="error"}')"
	assert_eq "mckey netns: ... and none as reason=join" 0 \
		"$(val "$T/mc1.txt" 'evrdma_probe_failures_total{probe="mnojoin",reason="join"}')"
	for fam in evrdma_mckey_bad_headers_total evrdma_mckey_untracked_total; do
		family_ok "mckey netns: family $fam: HELP and TYPE" "$T/mc1.txt" "$fam" counter
		assert_eq "mckey netns: $fam 0 for an honest sender" 0 \
			"$(val "$T/mc1.txt" "$fam{probe=\"mrx\"}")"
	done
	assert_eq "mckey netns: no failures_total{reason=refused} for mckey" "" \
		"$(val "$T/mc1.txt" 'evrdma_probe_failures_total{probe="mrx",reason="refused"}')"
	bg_stop mcd 5
	assert_exit "mckey netns: SIGTERM exits 0" 0 "$RC" "$T/mcd.err"
	assert_le "mckey netns: gone within a second" "$ELAPSED_MS" "$(tscale 1000)"
	ip netns del "$NS"
else
	e2e_skip_all "mckey UDP probes: needs root to create a network namespace"
fi

e2e_done
