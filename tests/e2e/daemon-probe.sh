#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# evrdma-probed end to end, on 127.0.0.1: the daemon probing an rstream
# -T s server every 0.5 s; /metrics scraped and parsed (HELP/TYPE,
# counters growing, cumulative histogram buckets, _count == iterations x
# runs, the round trip's parts; promtool check metrics on the scrapes);
# the HTTP port in use; the server killed (failures with reason="refused"
# grow while /metrics keeps answering at once); SIGHUP with a probe
# added, one removed and one stalling on a silent peer; a broken file on
# SIGHUP (the old configuration stays); SIGTERM exits 0 within a second;
# and a run in flight across SIGHUP (kept, or replaced when changed) and
# SIGTERM.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"
# shellcheck source=daemon-lib.sh
. "$(dirname "$0")/daemon-lib.sh"

# ------------------------------------------------------------ helpers

scrape_hp() { scrape "$1" "$HP"; }

# The histogram of PROBE in FILE: buckets non-decreasing in le order,
# +Inf == _count.  Prints the count.
check_hist() { # DESC FILE PROBE
	local out
	out=$(awk -v p="probe=\"$3\"" '
	index($0, "evrdma_rstream_latency_seconds_bucket{" p ",") == 1 {
		v = $NF + 0
		if (n && v < last) bad = bad " " $0
		last = v; n++
		if ($0 ~ /le="\+Inf"/) inf = v
	}
	index($0, "evrdma_rstream_latency_seconds_count{" p "}") == 1 { c = $NF + 0 }
	END {
		if (bad != "") print "not cumulative:" bad
		else if (n != 17) print "buckets: " n
		else if (inf != c) print "+Inf " inf " != _count " c
		else print "ok " c
	}' "$2")
	case $out in
	ok\ *) ok "$1 (16 buckets + +Inf, cumulative, _count ${out#ok })" ;;
	*) not_ok "$1" "$out" ;;
	esac
}

# ------------------------------------------------------------ configs

port SP            # the rstream server
port HP            # the daemon's HTTP
port DEAD          # nothing listens here
port SILENT        # accepts and never answers

conf_c1 "$T/c1.json"   # the daemon starts with it
# ... and SIGHUP loads this one
cat >"$T/c2.json" <<JSON
{
  "listen_address": "$H",
  "listen_port": $HP,
  "probes": [
    $(probe_json lo "$SP"),
    $(probe_json added "$DEAD" 1),
    { "name": "silent", "type": "rstream", "host": "$H", "port": $SILENT,
      "transport": "tcp", "kind": "latency", "interval_s": 1, "timeout_s": 0.4 }
  ]
}
JSON

# ------------------------------------------------------- probing a server

if ! start_server srv "$SP" "$R" -T s -T a -p "$SP"; then
	e2e_done
fi
bg_start probed 120 "$PROBED" -c "$T/c1.json"
if ! wait_listen "$HP" 5 probed; then
	not_ok "the daemon listens on $HP"
	dump "$T/probed.err"
	e2e_done
fi
DPID=$(bg_child_pid probed)
sleep 1.6
until_scraped scrape_hp m1 2 'evrdma_probe_runs_total{probe="lo"}' 2
r1=$(val "$T/m1.txt" 'evrdma_probe_runs_total{probe="lo"}')
sleep 1.1
until_scraped scrape_hp m2 2 'evrdma_probe_runs_total{probe="lo"}' $((${r1:-0} + 1))
m2_at=$(date +%s) # "recent" below is to the scrape, not to the checks' end
meta_ok "GET /metrics: 200 with text/plain; version=0.0.4" m1
check_format "/metrics: the exposition format, HELP and TYPE per family" "$T/m1.txt"
promtool_ok "rstream probes up" "$T/m1.txt"
for fam in evrdma_probe_runs_total evrdma_probe_failures_total \
	evrdma_probe_last_success_timestamp_seconds evrdma_probe_duration_seconds \
	evrdma_rstream_latency_seconds evrdma_rstream_rtt_seconds \
	evrdma_rstream_network_rtt_seconds evrdma_rstream_responder_hold_seconds \
	evrdma_rstream_split_rejected_total evrdma_probed_local_delay_seconds \
	evrdma_rstream_throughput_bytes_per_second evrdma_mckey_received_total \
	evrdma_mckey_lost_total evrdma_mckey_shortfall_total evrdma_mckey_join_latency_seconds \
	evrdma_probed_build_info evrdma_probed_config_reloads_total; do
	family_ok "family $fam: HELP and TYPE" "$T/m1.txt" "$fam"
done
r1=$(val "$T/m1.txt" 'evrdma_probe_runs_total{probe="lo"}')
r2=$(val "$T/m2.txt" 'evrdma_probe_runs_total{probe="lo"}')
num_ge "runs after 1.6 s at 0.5 s intervals (4 on a quiet host)" "$r1" 2
num_gt "runs_total grows between scrapes" "$r2" "$r1"
fails=$(grep -E '^evrdma_probe_failures_total\{probe="lo",' "$T/m2.txt" | awk '{ s += $NF } END { print s + 0 }')
assert_eq "no failures against a live server" 0 "$fails"
assert_eq "one failures_total series per reason" 13 \
	"$(grep -c '^evrdma_probe_failures_total{probe="lo",' "$T/m2.txt")"
assert_eq "probe up" 1 "$(val "$T/m2.txt" 'evrdma_probe_up{probe="lo"}')"
check_hist "histogram" "$T/m2.txt" lo
hc=$(val "$T/m2.txt" 'evrdma_rstream_latency_seconds_count{probe="lo"}')
r2b=$(val "$T/m2.txt" 'evrdma_probe_runs_total{probe="lo"}')
assert_eq "histogram: one observation per iteration, _count == 20 x runs_total (no failures)" \
	"$((r2b * 20))" "$hc"
# every sample exact (20 a run): the histogram's sum is the summary's
hs=$(val "$T/m2.txt" 'evrdma_rstream_latency_seconds_sum{probe="lo"}')
ss=$(val "$T/m2.txt" 'evrdma_rstream_rtt_seconds_sum{probe="lo"}')
if [ -n "$hs" ] && [ -n "$ss" ] && awk -v a="$hs" -v b="$ss" \
	'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && d <= b * 1e-6 + 1e-9) }'; then
	ok "histogram _sum == the iterations' total (summary _sum): $hs"
else
	not_ok "histogram _sum == the iterations' total (summary _sum)" "$hs vs $ss"
fi
# more than one bucket is plausible but not certain on loopback; that the
# samples land where they are is check_probed's: here, the mean
num_ge "histogram: _sum / _count is a round trip (>= 1 us)" \
	"$(awk -v s="$hs" -v c="$hc" 'BEGIN { if (c) print s / c * 1e6 }')" 1
assert_eq "summary: one sample per iteration (20 per run)" "$((r2b * 20))" \
	"$(val "$T/m2.txt" 'evrdma_rstream_rtt_seconds_count{probe="lo"}')"
num_gt "summary: p50 round trip > 0" \
	"$(val "$T/m2.txt" 'evrdma_rstream_rtt_seconds{probe="lo",quantile="0.5"}')" 0
# the round trip in parts (an evrdma server stamps its echoes): the
# network's and the responder's, one observation per iteration, and the
# agent's own delay (its two probes of that server, TCP: all of theirs)
for part in network_rtt responder_hold; do
	assert_eq "split: evrdma_rstream_${part}_seconds, one observation per iteration" \
		"$((r2b * 20))" "$(val "$T/m2.txt" "evrdma_rstream_${part}_seconds_count{probe=\"lo\"}")"
	assert_eq "split: evrdma_rstream_${part}_seconds: +Inf == _count" \
		"$(val "$T/m2.txt" "evrdma_rstream_${part}_seconds_count{probe=\"lo\"}")" \
		"$(val "$T/m2.txt" "evrdma_rstream_${part}_seconds_bucket{probe=\"lo\",le=\"+Inf\"}")"
done
num_ge "split: the agent's own delay, every iteration of its probes" \
	"$(val "$T/m2.txt" 'evrdma_probed_local_delay_seconds_count')" "$((r2b * 20))"
assert_eq "split: no iteration rejected" 0 \
	"$(val "$T/m2.txt" 'evrdma_rstream_split_rejected_total{probe="lo"}')"
# the parts and the round trip: the means of the same iterations
ns=$(val "$T/m2.txt" 'evrdma_rstream_network_rtt_seconds_sum{probe="lo"}')
hs2=$(val "$T/m2.txt" 'evrdma_rstream_responder_hold_seconds_sum{probe="lo"}')
if [ -n "$ns" ] && [ -n "$hs2" ] && awk -v n="$ns" -v h="$hs2" -v t="$hs" \
	'BEGIN { exit !(n > 0 && h > 0 && n + h <= t * 1.05) }'; then
	ok "split: network ($ns s) + hold ($hs2 s) within the round trips ($hs s)"
else
	not_ok "split: network + hold within the round trips" "$ns + $hs2 vs $hs"
fi
tput=$(val "$T/m2.txt" 'evrdma_rstream_throughput_bytes_per_second{probe="lo"}')
num_gt "throughput gauge > 0" "$tput" 0
assert_eq "the old bits family is gone" "" \
	"$(grep '_bits_per_second' "$T/m2.txt")"
num_ge "last success is recent (to the scrape)" \
	"$(val "$T/m2.txt" 'evrdma_probe_last_success_timestamp_seconds{probe="lo"}')" $((m2_at - $(tscale 3)))
assert_eq "config_reloads_total starts at 0" 0 \
	"$(val "$T/m2.txt" evrdma_probed_config_reloads_total)"
assert_match "build_info carries the version" \
	'^evrdma_probed_build_info\{version="[0-9][^"]*"\} 1$' "$T/m2.txt"
code=$(curl -s --max-time 2 -o /dev/null -w '%{http_code}' "http://$H:$HP/nope")
assert_eq "an unknown path: 404" 404 "$code"
# / is the status page (evrdma-probed.8, STATUS PAGE; daemon-status.sh
# has the rest)
code=$(curl -s --max-time 2 -o "$T/index.txt" -w '%{http_code}' "http://$H:$HP/")
assert_eq "/: 200, the status page" 200 "$code"
assert_match "/: HTML, naming the probes" 'data-probe="lo".*data-probe="gone"|data-probe="gone".*data-probe="lo"' \
	<(tr -d '\n' <"$T/index.txt")
code=$(curl -s --max-time 2 -o /dev/null -w '%{http_code}' "http://$H:$HP/metrics/x")
assert_eq "a path under /metrics: 404" 404 "$code"
code=$(curl -s --max-time 2 -o /dev/null -w '%{http_code}' -X POST "http://$H:$HP/metrics")
assert_eq "POST: 405" 405 "$code"

# ----------------------------------------------- the HTTP port is taken

run_cmd inuse 10 "$PROBED" -c "$T/c1.json"
assert_exit "a second daemon on the same port" 2 "$RC" "$T/inuse.err"
assert_lines "port in use: one line" 1 "$T/inuse.err"
assert_match "port in use: says so" \
	"^evrdma-probed: error: cannot listen on 127\\.0\\.0\\.1:$HP: Address already in use$" \
	"$T/inuse.err"

# ------------------------------------------------- the server goes away

bg_stop srv 5
sleep 1.2
scrape m3 "$HP"
sleep 1.1
scrape m4 "$HP"
meta_ok "/metrics answers with the target down" m4
promtool_ok "a probe failing" "$T/m4.txt"
f3=$(val "$T/m3.txt" 'evrdma_probe_failures_total{probe="lo",reason="refused"}')
f4=$(val "$T/m4.txt" 'evrdma_probe_failures_total{probe="lo",reason="refused"}')
num_ge "failures{reason=refused} after the server died" "$f3" 1
num_gt "failures{reason=refused} grows" "$f4" "$f3"
assert_eq "probe down" 0 "$(val "$T/m4.txt" 'evrdma_probe_up{probe="lo"}')"
t=$(cut -d'|' -f3 "$T/m4.meta")
num_ge "scrape answered within 0.5 s" 0.5 "$t"
# the first failure is "refused", or "eof" or "reset" when a run was in
# flight as the server went (seen under ASan and valgrind, whose runs are
# slower: a kill in the middle of a receive resets); either way the
# reason logged is one the counters counted
assert_match "the daemon logged the failure once, with its reason" \
	'^evrdma-probed: warning: probe "lo": failing \((refused|eof|reset)\): ' "$T/probed.err"
why=$(sed -n 's/^evrdma-probed: warning: probe "lo": failing (\([a-z_]*\)): .*/\1/p' "$T/probed.err" | head -1)
num_ge "... a reason counted in failures_total (${why:-none})" \
	"$(val "$T/m4.txt" "evrdma_probe_failures_total{probe=\"lo\",reason=\"${why:-none}\"}")" 1
assert_lines "... and once only" 1 "$T/probed.err" 'probe "lo": failing'

# ------------------------------------------------------------- SIGHUP

# the server back, so that the kept probe recovers
start_server srv2 "$SP" "$R" -T s -T a -p "$SP"
# a peer that accepts and never answers: the "silent" probe stalls
start_silent silent "$SILENT"
cp "$T/c2.json" "$T/c1.json"
lo_before=$(val "$T/m4.txt" 'evrdma_probe_runs_total{probe="lo"}')
kill -HUP "$DPID"
sleep 1.3
until_scraped scrape_hp m5 2 'evrdma_probe_runs_total{probe="added"}' 1 \
	'evrdma_probe_runs_total{probe="lo"}' $((${lo_before:-0} + 1))
assert_eq "SIGHUP: config_reloads_total 1" 1 \
	"$(val "$T/m5.txt" evrdma_probed_config_reloads_total)"
promtool_ok "after a reload (stalled, refused, kept probes)" "$T/m5.txt"
assert_eq "SIGHUP: the removed probe is gone" "" \
	"$(val "$T/m5.txt" 'evrdma_probe_runs_total{probe="gone"}')"
num_ge "SIGHUP: the added probe runs" \
	"$(val "$T/m5.txt" 'evrdma_probe_runs_total{probe="added"}')" 1
num_ge "SIGHUP: the added probe fails, refused" \
	"$(val "$T/m5.txt" 'evrdma_probe_failures_total{probe="added",reason="refused"}')" 1
num_gt "SIGHUP: the unchanged probe kept its counters" \
	"$(val "$T/m5.txt" 'evrdma_probe_runs_total{probe="lo"}')" "$lo_before"
num_ge "SIGHUP: ... and its failures" \
	"$(val "$T/m5.txt" 'evrdma_probe_failures_total{probe="lo",reason="refused"}')" "$f4"
assert_eq "SIGHUP: the kept probe recovered" 1 \
	"$(val "$T/m5.txt" 'evrdma_probe_up{probe="lo"}')"
num_ge "SIGHUP: a silent peer: failures{reason=stall}" \
	"$(val "$T/m5.txt" 'evrdma_probe_failures_total{probe="silent",reason="stall"}')" 1
d=$(val "$T/m5.txt" 'evrdma_probe_duration_seconds{probe="silent"}')
num_ge "a stalled run lasted half its timeout_s (0.4 s) or more" "$d" 0.2
num_ge "... and not much longer" 1.0 "$d"
assert_match "SIGHUP: logged" 'configuration .*: 3 probes \(2 added, 1 removed, 1 unchanged\)' \
	"$T/probed.err"
assert_match "SIGHUP: the kept probe's recovery logged" \
	'^evrdma-probed: info: probe "lo": recovered$' "$T/probed.err"

# a broken file: rejected, the running configuration stays
printf '{ "probes": [ { "name": "x", "type": "rstream" } ] }\n' >"$T/c1.json"
kill -HUP "$DPID"
sleep 0.6
scrape m6 "$HP"
assert_eq "broken SIGHUP: reloads_total stays 1" 1 \
	"$(val "$T/m6.txt" evrdma_probed_config_reloads_total)"
assert_eq "broken SIGHUP: reload_failures_total 1" 1 \
	"$(val "$T/m6.txt" evrdma_probed_config_reload_failures_total)"
promtool_ok "after a rejected reload" "$T/m6.txt"
assert_eq "broken SIGHUP: last_reload_successful 0" 0 \
	"$(val "$T/m6.txt" evrdma_probed_config_last_reload_successful)"
num_ge "broken SIGHUP: the probes go on" \
	"$(val "$T/m6.txt" 'evrdma_probe_runs_total{probe="added"}')" 1
assert_match "broken SIGHUP: one error line naming the file and field" \
	'^evrdma-probed: error: reload rejected, the running configuration stays: .*c1\.json: probes\[0\] \("x"\): "host" is required$' \
	"$T/probed.err"

# ------------------------------------------------------------ SIGTERM

bg_stop probed 5
assert_exit "SIGTERM: exit 0" 0 "$RC" "$T/probed.err"
assert_le "SIGTERM: gone within a second" "$ELAPSED_MS" "$(tscale 1000)"
assert_match "SIGTERM: logged" '^evrdma-probed: info: SIGTERM: stopping$' "$T/probed.err"
assert_no_match "no crash or assertion in the log" 'Assertion|Segmentation|AddressSanitizer' "$T/probed.err"

# ------------------------------- a run in flight across SIGHUP, SIGTERM

# "held" stalls against the silent peer (SIGHUP's above; watchdog at
# about 1.9 s, hard timeout_s 3 s), "other" probes the server on $SP.  A
# SIGHUP half-way that leaves it unchanged must not cancel or restart it;
# one that changes it replaces it; SIGTERM while a run is in flight still
# exits 0 at once.
port HP4
held() { # TIMEOUT
	printf '{ "name": "held", "type": "rstream", "host": "%s", "port": %s, "transport": "tcp", "interval_s": 30, "timeout_s": %s }' \
		"$H" "$SILENT" "$1"
}
printf '{ "listen_address": "%s", "listen_port": %s, "probes": [ %s ] }\n' \
	"$H" "$HP4" "$(held 3)" >"$T/held.json"
bg_start hd 60 "$PROBED" -c "$T/held.json"
if wait_listen "$HP4" 5 hd; then
	HPID=$(bg_child_pid hd)
	sleep 0.5
	printf '{ "listen_address": "%s", "listen_port": %s, "probes": [ %s, %s ] }\n' \
		"$H" "$HP4" "$(held 3)" "$(probe_json other "$SP" 5)" >"$T/held.json"
	kill -HUP "$HPID"
	sleep 0.3
	scrape h0 "$HP4"
	assert_eq "in flight across SIGHUP: not finished at 0.8 s" 0 \
		"$(val "$T/h0.txt" 'evrdma_probe_runs_total{probe="held"}')"
	sleep 2.4
	scrape h1 "$HP4"
	assert_eq "in flight across SIGHUP: the one run finished" 1 \
		"$(val "$T/h1.txt" 'evrdma_probe_runs_total{probe="held"}')"
	# the watchdog (half of timeout_s, checked every eighth) or the hard
	# timeout_s, whichever the loop serves first on a loaded host
	assert_eq "in flight across SIGHUP: ... by its stall or timeout, uncancelled" 1 \
		"$(grep -E '^evrdma_probe_failures_total\{probe="held",reason="(stall|timeout)"\}' "$T/h1.txt" | awk '{ s += $NF } END { print s + 0 }')"
	assert_lines "in flight across SIGHUP: started once" 1 "$T/hd.err" 'probe "held": started'
	assert_match "in flight across SIGHUP: kept" '2 probes \(1 added, 0 removed, 1 unchanged\)' "$T/hd.err"
	# changed: replaced, its counters start afresh, its new run starts
	printf '{ "listen_address": "%s", "listen_port": %s, "probes": [ %s ] }\n' \
		"$H" "$HP4" "$(held 6)" >"$T/held.json"
	kill -HUP "$HPID"
	sleep 0.4
	scrape h2 "$HP4"
	assert_eq "changed probe: counters start afresh" 0 \
		"$(val "$T/h2.txt" 'evrdma_probe_runs_total{probe="held"}')"
	assert_match "changed probe: replaced" '1 probe \(1 added, 2 removed, 0 unchanged\)' "$T/hd.err"
	bg_stop hd 5
	assert_exit "SIGTERM with a run in flight: exit 0" 0 "$RC" "$T/hd.err"
	assert_le "SIGTERM with a run in flight: within a second" "$ELAPSED_MS" "$(tscale 1000)"
else
	not_ok "held daemon listens"
	dump "$T/hd.err"
fi

e2e_done
