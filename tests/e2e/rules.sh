#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# contrib/prometheus/, without a network: the fabric's recording and
# alerting rules pass promtool check rules and their unit tests
# (promtool test rules evrdma-fabric.test.yml), every alert of the file
# is asked for by those tests, and the tests catch a broken rule (each of
# a few deliberate breaks of the rules makes them fail); peers2sd turns a
# peers file into file_sd targets (labels, IPv6, bad lines named as
# FILE:LINE and skipped, an atomic -o, bad usage), and the example
# prometheus.yml with those targets passes promtool check config.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

T=$E2E_TMP
SRC=${E2E_SRCDIR:-$(dirname "$0")/../..}
P=$SRC/contrib/prometheus
RULES=$P/evrdma-fabric.rules.yml
command -v promtool >/dev/null 2>&1 ||
	e2e_skip_all "promtool is not installed (scripts/deps.sh: prometheus)"

# ------------------------------------------------------------- the rules

run_cmd check 30 promtool check rules "$RULES"
assert_exit "promtool check rules evrdma-fabric.rules.yml" 0 "$RC" "$T/check.out" "$T/check.err"
# the fast profile (doc/fabric.md, "Alerts in seconds") is scale-rules' output
run_cmd fast 30 "$P/scale-rules" 12 "$RULES"
assert_exit "scale-rules 12" 0 "$RC" "$T/fast.err"
if cmp -s "$T/fast.out" "$P/evrdma-fabric-fast.rules.yml"; then
	ok "evrdma-fabric-fast.rules.yml is scale-rules 12's output (not edited, not stale)"
else
	not_ok "evrdma-fabric-fast.rules.yml is scale-rules 12's output" \
		"$(diff "$T/fast.out" "$P/evrdma-fabric-fast.rules.yml" | head -5)"
fi
assert_eq "... its windows and for: all divided" "[10s] [150s] [1d] [5s] for: 25s for: 5s" \
	"$(grep -oE '\[[0-9]+[smhd]\]|^ *for: [0-9]+[smh]$' "$P/evrdma-fabric-fast.rules.yml" | sed 's/^ *//' | sort -u | tr '\n' ' ' | sed 's/ $//')"
run_cmd fcheck 30 promtool check rules "$P/evrdma-fabric-fast.rules.yml"
assert_exit "promtool check rules evrdma-fabric-fast.rules.yml" 0 "$RC" "$T/fcheck.out" "$T/fcheck.err"
run_cmd fodd 10 "$P/scale-rules" 7 "$RULES"
assert_exit "scale-rules 7: a window that does not divide is refused" 1 "$RC" "$T/fodd.err"
assert_match "... named" '^scale-rules: window 2m does not divide by 7$' "$T/fodd.err"
run_cmd unit 300 promtool test rules "$P/evrdma-fabric.test.yml"
assert_exit "promtool test rules evrdma-fabric.test.yml" 0 "$RC" "$T/unit.out" "$T/unit.err"
assert_match "... says SUCCESS" 'SUCCESS' "$T/unit.out"

# every alert of the rules file is asked for, and expected to fire, in a test
for a in $(sed -n 's/^ *- alert: *//p' "$RULES"); do
	n=$(grep -c "^ *alertname: $a\$" "$P/evrdma-fabric.test.yml")
	f=$(awk -v a="$a" '/alertname:/ { cur = $2 } /exp_labels:/ && cur == a { n++ } END { print n + 0 }' \
		"$P/evrdma-fabric.test.yml")
	if [ "$n" -gt 0 ] && [ "$f" -gt 0 ]; then
		ok "alert $a: asked for $n times, expected to fire in $f"
	else
		not_ok "alert $a is tested" "asked for $n times, expected to fire $f times"
	fi
done
assert_eq "seventeen alerts" 17 "$(grep -c '^ *- alert:' "$RULES")"

# The tests must catch a broken rule: each break, alone, fails them.
# break NAME FROM TO: the rules with FROM replaced by TO (once, and it
# must be there), tested.
mkdir -p "$T/brk"
# The breaks run promtool only (no code of ours): once, in the
# normal build; in the ASan one (the same files) they would only cost CI
# six minutes.  RULES_BRK=1 runs them there too.
BRK=1
if [ "$E2E_SAN" = yes ] && [ "${RULES_BRK:-0}" != 1 ]; then
	BRK=0
	say "the deliberate breaks of the rules: in the normal build (promtool only, no code of ours to sanitize; RULES_BRK=1 runs them here)"
fi
brk() {
	local name=$1
	[ "$BRK" = 1 ] || return 0
	# the broken rules, and the test groups that can see the break: those
	# naming a rule whose text holds it, or a rule that uses one (its
	# record named in its expression), and so on (a break that no group
	# sees is a rule without a test).  promtool evaluates every group of
	# a file, 40 of them: the whole file for each of the breaks below
	# took twelve minutes, the longest test of make check.
	if ! python3 - "$RULES" "$T/brk/evrdma-fabric.rules.yml" "$2" "$3" \
		"$P/evrdma-fabric.test.yml" "$T/brk/evrdma-fabric.test.yml" <<'PY'
import re, sys
src, dst, a, b, tsrc, tdst = sys.argv[1:]
s = open(src).read()
if a not in s:
    sys.exit("not in the rules: " + a)
open(dst, "w").write(s.replace(a, b, 1))
# the rules, each with its text up to the next one
marks = [(m.start(), m.group(2)) for m in
         re.finditer(r"^ *- (record|alert): *(\S+)", s, re.M)]
chunks = [(n, s[p:(marks[i + 1][0] if i + 1 < len(marks) else len(s))])
          for i, (p, n) in enumerate(marks)]
hit = {n for n, c in chunks if a in c}
grew = True
while grew:
    grew = False
    for n, c in chunks:
        if n not in hit and any(h in c for h in hit):
            hit.add(n)
            grew = True
# the test groups, each with the comment above it
t = open(tsrc).read()
head, body = t.split("\ntests:\n", 1)
lines = body.splitlines(keepends=True)
firsts = []
for i, ln in enumerate(lines):
    if ln.startswith("  - interval:"):
        while i and (lines[i - 1].startswith("  #") or not lines[i - 1].strip()):
            i -= 1
        firsts.append(i)
firsts[0] = 0
groups = ["".join(lines[f:(firsts[k + 1] if k + 1 < len(firsts) else len(lines))])
          for k, f in enumerate(firsts)]
keep = [g for g in groups if any(h in g for h in hit)]
if not keep:
    sys.exit("no test group names a rule this changes: " + " ".join(sorted(hit)))
open(tdst, "w").write(head + "\ntests:\n" + "".join(keep))
print("# break: %d of %d test groups" % (len(keep), len(groups)))
PY
	then
		not_ok "break $name: the text to break is in the rules, and a test sees it"
		return
	fi
	# 300 s: promtool's 34 groups of a break took over 60 s in CI's
	# make -j2 beside other tests (exit 124, a timeout, not a verdict);
	# about 20 s on a quiet host
	run_cmd "brk_$name" 300 promtool test rules "$T/brk/evrdma-fabric.test.yml"
	if [ "$RC" = 1 ] && grep -q FAILED "$T/brk_$name.out" "$T/brk_$name.err"; then
		ok "break $name: promtool test rules fails"
	else
		not_ok "break $name: promtool test rules fails" "exit $RC"
		dump "$T/brk_$name.out"
	fi
}
brk unreached_threshold 'ratio > 0.5 and on (job, host) host:evrdma_mesh_probers:count >= 2)
            unless' 'ratio > 0.7 and on (job, host) host:evrdma_mesh_probers:count >= 2)
            unless'
brk unreached_max 'avg by (job, peer) (1 - ' 'max by (job, peer) (1 - '
brk not_yet_run ' unless on (job, host, probe) (evrdma_probe_runs_total{probe=~"mesh:.+"} == 0)' ''
brk responder_vs_host 'and on (job, host) (host:evrdma_mesh_down:ratio <= 0.5)' \
	'and on (job, host) (host:evrdma_mesh_down:ratio <= 1)'
brk peerdown_explained 'unless on (job, peer) label_replace' 'or on (job, peer) label_replace'
brk cannot_probe 'unless on (job, host) (host:evrdma_mesh_unreached:ratio > 0.5)' ''
brk local_reasons 'reason=~"error|nodev"' 'reason=~".+"'
brk latency_factor '(3 * job:' '(1.5 * job:'
brk agent_down_other_jobs '
            and on (job) max_over_time(evrdma_probed_build_info[1d])' ''
brk not_scraped_host 'unless on (job, host) up' 'unless on (job) up'
brk mesh_smaller 'evrdma_mesh_peers < (evrdma_mesh_peers_selected or evrdma_mesh_peers_listed)' \
	'evrdma_mesh_peers < evrdma_mesh_peers'
# a selection (group_by) is not a mesh smaller than its file, and an
# older agent without evrdma_mesh_peers_selected is still watched
brk mesh_smaller_selected 'evrdma_mesh_peers < (evrdma_mesh_peers_selected or evrdma_mesh_peers_listed)' \
	'evrdma_mesh_peers < evrdma_mesh_peers_listed'
brk mesh_smaller_old_agent 'evrdma_mesh_peers < (evrdma_mesh_peers_selected or evrdma_mesh_peers_listed)' \
	'evrdma_mesh_peers < evrdma_mesh_peers_selected'
brk hostslow_for 'expr: host:evrdma_rstream_responder_hold_seconds:slow
        for: 1m' 'expr: host:evrdma_rstream_responder_hold_seconds:slow
        for: 0s'
# a slow host's link: each pair against its own baseline (fleets of 3-4)
brk median_small_fleet '
              and on (job) count by (job) (host:evrdma_mesh_probers:count) >= 4)' ')'
# a spine's failing paths slowed a whole emulated fleet: the latency
# alert stands down for the racks' hosts, and its in-rack guard holds
# for both of its branches
brk latency_rack_standdown '
          unless on (job, host) host:evrdma_rack_paths_failing:any2m' ''
brk latency_guard_both_branches '
          )
          unless on (job, host) (host:evrdma_rstream_network_slow_in_rack:count == 0)' '
          unless on (job, host) (host:evrdma_rstream_network_slow_in_rack:count == 0)
          )'
brk net_share 'network_slow:ratio > 0.5' 'network_slow:ratio > 0.1'
brk net_baseline '(3 * host_peer:evrdma_rstream_network_seconds:baseline30m' \
	'(30 * host_peer:evrdma_rstream_network_seconds:baseline30m'
brk net_baseline_min 'min_over_time(host_peer:evrdma_rstream_network_seconds:mean2m[30m])' \
	'quantile_over_time(0.5, host_peer:evrdma_rstream_network_seconds:mean2m[30m])'
# the network's part, not the whole round trip (a starved host's hold)
brk net_not_total '(rate(evrdma_rstream_network_rtt_seconds_sum{probe=~"mesh:.+"}[2m])
            / rate(evrdma_rstream_network_rtt_seconds_count{probe=~"mesh:.+"}[2m]))' \
	'(rate(evrdma_rstream_latency_seconds_sum{probe=~"mesh:.+"}[2m])
            / rate(evrdma_rstream_latency_seconds_count{probe=~"mesh:.+"}[2m]))'
brk http_crowded 'reason=~"evicted|per_ip|limit|fds"' 'reason=~".+"'
brk throughput_not_host '
            unless on (job, host) host:evrdma_rstream_responder_hold_seconds:slow' ''
# a loaded fleet (every hold over 0.5 ms) is no slow host: fleet.sh beside
# a CI-like load saw 0.5 ms alone keep a throttled link's alert pending
brk throughput_loaded_fleet 'unless on (job, host) host:evrdma_rstream_responder_hold_seconds:slow' \
	'unless on (job, host) (host:evrdma_rstream_responder_hold_seconds:median_mean2m > 0.0005)'
brk throughput_fleet '
          * (host_peer:evrdma_rstream_throughput_bytes_per_second:last
            < bool on (job) group_left ()
              (0.25 * quantile by (job) (0.75, host_peer:evrdma_rstream_throughput_bytes_per_second:last)))' ''
brk throughput_failed_is_0 '
            * on (job, host, probe) group_left () last_over_time(evrdma_probe_up{probe!~"mesh:.+",peer!=""}[1m]))' ')'
brk hold_fleet '
            > on (job) group_left ()
              (5 * quantile by (job) (0.5, host:evrdma_rstream_responder_hold_seconds:median_mean2m))' ''
# a throttled host's own scrape that fails (through its link) does not
# take its probes away and start the alert's for: again
brk throughput_scrape_gap 'last_over_time(evrdma_rstream_throughput_bytes_per_second{probe!~"mesh:.+",peer!=""}[1m])' \
	'evrdma_rstream_throughput_bytes_per_second{probe!~"mesh:.+",peer!=""}'
brk throughput_share 'throughput_low:ratio > 0.5' 'throughput_low:ratio >= 0.5'
brk throughput_baseline 'max_over_time(host_peer:evrdma_rstream_throughput_bytes_per_second:last[30m])' \
	'min_over_time(host_peer:evrdma_rstream_throughput_bytes_per_second:last[30m])'
brk hold_threshold 'hold_seconds:median_mean2m > 0.0005' 'hold_seconds:median_mean2m > 0.01'
# racks: a host its own rack reaches is not down (a spine is); the
# paths between racks fail over many pairs (one pair's is its own), and
# more than within either rack (a dead host fails its rack's pairs too)
brk rack_host_reached '
            unless on (job, host) (host:evrdma_mesh_unreached_in_rack:ratio == 0)' ''
brk rack_pairs_spread '
            and on (job, host_rack, rack) (rack_pair:evrdma_mesh_pairs_failed:ratio2m >= 0.5))' ')'
brk rack_within '(4 * rack:evrdma_mesh_failed_in_rack:ratio2m)' '(0 * rack:evrdma_mesh_failed_in_rack:ratio2m)'
# a fleet that slows as a whole names no host (its best pair no worse
# than the fleet's best)
brk latency_best_pair '(1.5 * job:evrdma_rstream_network_seconds:best_pair)' '(0 * job:evrdma_rstream_network_seconds:best_pair)'
# of the hosts most of whose pairs are slow, only the worst best pair
brk latency_worst_best 'host:evrdma_rstream_network_slow_most:best_pair
                == on (job) group_left () max by (job) (host:evrdma_rstream_network_slow_most:best_pair)' \
	'host:evrdma_rstream_network_slow_most:best_pair'

# -------------------------------------------------------------- peers2sd

cat >"$T/peers" <<'PEERS'
# the fleet
h1 198.18.0.1 rack=r1 zone=a
h2 2001:db8::2            # a comment
h3 agent3.example rack=r3
lonely
h4 198.18.0.4 le=1
h1 198.18.0.9
h5 198.18.0.5 a=1 a=2
PEERS
run_cmd sd 10 "$P/peers2sd" -p 9500 "$T/peers"
assert_exit "peers2sd: a peers file" 0 "$RC" "$T/sd.err"
assert_eq "peers2sd: the good lines' targets, host labels and __meta_evrdma_ labels" \
	'198.18.0.1:9500 host=h1 __meta_evrdma_rack=r1 __meta_evrdma_zone=a|[2001:db8::2]:9500 host=h2|agent3.example:9500 host=h3 __meta_evrdma_rack=r3|' \
	"$(python3 -c '
import json, sys
for g in json.load(open(sys.argv[1])):
    print(" ".join(g["targets"] + ["%s=%s" % kv for kv in g["labels"].items()]), end="|")
' "$T/sd.out" 2>&1)"
assert_lines "peers2sd: four bad lines named" 4 "$T/sd.err"
assert_match "peers2sd: no address" "peers2sd: warning: .*/peers:5: a peer is NAME ADDRESS" "$T/sd.err"
assert_match "peers2sd: a label name the daemon refuses" 'peers:6: "le" is not a usable label name; line skipped' "$T/sd.err"
assert_match "peers2sd: a peer twice" 'peers:7: peer "h1" is listed twice; line skipped' "$T/sd.err"
assert_match "peers2sd: a label twice" 'peers:8: label "a" given twice; line skipped' "$T/sd.err"
run_cmd sdo 10 "$P/peers2sd" -o "$T/evrdma-agents.json" "$T/peers"
assert_exit "peers2sd -o" 0 "$RC" "$T/sdo.err"
assert_empty "peers2sd -o: nothing on stdout" "$T/sdo.out"
assert_match "peers2sd -o: the default port 9471" '"198\.18\.0\.1:9471"' "$T/evrdma-agents.json"
assert_eq "peers2sd -o: no temporary file left" "" "$(ls "$T"/*.tmp 2>/dev/null)"
run_cmd sdmiss 10 "$P/peers2sd" "$T/nonexistent"
assert_exit "peers2sd: a missing file" 1 "$RC" "$T/sdmiss.err"
assert_eq "peers2sd: ... one line naming it" \
	"peers2sd: $T/nonexistent: No such file or directory" "$(cat "$T/sdmiss.err")"
run_cmd sdport 10 "$P/peers2sd" -p 0 "$T/peers"
assert_exit "peers2sd -p 0" 1 "$RC" "$T/sdport.err"
assert_lines "peers2sd -p 0: one line" 1 "$T/sdport.err"
run_cmd sdnone 10 "$P/peers2sd"
assert_exit "peers2sd without a file" 1 "$RC" "$T/sdnone.err"
assert_match "peers2sd without a file: the usage" '^peers2sd: usage: ' "$T/sdnone.err"

# doc/fabric.md's "The agents, the peers file, Prometheus": its agent
# configuration passes --check-config, its peers file makes three targets
awk '/^## The agents, the peers file, Prometheus/ { f = 1; next } /^## / { f = 0 }
	f && /^ *```json/ { j = 1; next } j && /^ *```/ { j = 0; n++ } j && n == 0' \
	"$SRC/doc/fabric.md" >"$T/fabric.json"
awk '/^## The agents, the peers file, Prometheus/ { f = 1; next } /^## / { f = 0 }
	f && /^ *```/ { if (p) exit; if (!inb && $0 ~ /^ *```$/) p = 1; inb = !inb; next } p' \
	"$SRC/doc/fabric.md" >"$T/fabric.peers"
if [ -n "${PROBED:-}" ] && [ -x "$PROBED" ]; then
	# --check-config reads the peers file too: the document's, where its
	# path names it
	sed -i "s|\"/etc/evrdma/peers\"|\"$T/fabric.peers\"|" "$T/fabric.json"
	run_cmd fabric_conf 10 "$PROBED" --check-config -c "$T/fabric.json"
	assert_exit "doc/fabric.md: the agent's configuration" 0 "$RC" "$T/fabric.json" "$T/fabric_conf.err"
	assert_match "... with its responder and the mesh of its peers file" \
		', 1 responder, a mesh of 3 peers' "$T/fabric_conf.out"
else
	not_ok "PROBED names the built evrdma-probed"
fi
run_cmd fabric_peers 10 "$P/peers2sd" "$T/fabric.peers"
assert_exit "doc/fabric.md: peers2sd on its peers file" 0 "$RC" "$T/fabric.peers" "$T/fabric_peers.err"
assert_eq "... three targets, no complaint" "3 0" \
	"$(grep -c '"targets"' "$T/fabric_peers.out") $(wc -l <"$T/fabric_peers.err")"

# the example configuration, with those targets and the rules beside it
cp "$P/prometheus.yml" "$RULES" "$T/"
run_cmd config 30 promtool check config "$T/prometheus.yml"
assert_exit "promtool check config contrib/prometheus/prometheus.yml (file_sd from peers2sd)" \
	0 "$RC" "$T/config.out" "$T/config.err"
assert_no_match "... without a warning" 'WARNING' "$T/config.out"

e2e_done
