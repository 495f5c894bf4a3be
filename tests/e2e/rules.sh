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
run_cmd unit 60 promtool test rules "$P/evrdma-fabric.test.yml"
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
assert_eq "six alerts" 6 "$(grep -c '^ *- alert:' "$RULES")"

# The tests must catch a broken rule: each break, alone, fails them.
# break NAME FROM TO: the rules with FROM replaced by TO (once, and it
# must be there), tested.
mkdir -p "$T/brk"
cp "$P/evrdma-fabric.test.yml" "$T/brk/"
brk() {
	local name=$1
	if ! python3 - "$RULES" "$T/brk/evrdma-fabric.rules.yml" "$2" "$3" <<'PY'
import sys
src, dst, a, b = sys.argv[1:]
s = open(src).read()
if a not in s:
    sys.exit("not in the rules: " + a)
open(dst, "w").write(s.replace(a, b, 1))
PY
	then
		not_ok "break $name: the text to break is in the rules"
		return
	fi
	run_cmd "brk_$name" 60 promtool test rules "$T/brk/evrdma-fabric.test.yml"
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
brk latency_for 'median_mean2m)
        for: 1m' 'median_mean2m)
        for: 0s'

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

# README's "Monitoring a fabric": its agent configuration passes
# --check-config, its peers file makes three targets
awk '/^## Monitoring a fabric/ { f = 1; next } /^## / { f = 0 }
	f && /^ *```json/ { j = 1; next } j && /^ *```/ { j = 0; n++ } j && n == 0' \
	"$SRC/README.md" >"$T/readme.json"
awk '/^## Monitoring a fabric/ { f = 1; next } /^## / { f = 0 }
	f && /^ *```/ { if (p) exit; if (!inb && $0 ~ /^ *```$/) p = 1; inb = !inb; next } p' \
	"$SRC/README.md" >"$T/readme.peers"
if [ -n "${PROBED:-}" ] && [ -x "$PROBED" ]; then
	# --check-config reads the peers file too: README's, where its path
	# names it
	sed -i "s|\"/etc/evrdma/peers\"|\"$T/readme.peers\"|" "$T/readme.json"
	run_cmd readme_conf 10 "$PROBED" --check-config -c "$T/readme.json"
	assert_exit "README, Monitoring a fabric: the agent's configuration" 0 "$RC" "$T/readme.json" "$T/readme_conf.err"
	assert_match "... with its responder and the mesh of its peers file" \
		', 1 responders, a mesh of 3 peers' "$T/readme_conf.out"
else
	not_ok "PROBED names the built evrdma-probed"
fi
run_cmd readme_peers 10 "$P/peers2sd" "$T/readme.peers"
assert_exit "README, Monitoring a fabric: peers2sd on its peers file" 0 "$RC" "$T/readme.peers" "$T/readme_peers.err"
assert_eq "... three targets, no complaint" "3 0" \
	"$(grep -c '"targets"' "$T/readme_peers.out") $(wc -l <"$T/readme_peers.err")"

# the example configuration, with those targets and the rules beside it
cp "$P/prometheus.yml" "$RULES" "$T/"
run_cmd config 30 promtool check config "$T/prometheus.yml"
assert_exit "promtool check config contrib/prometheus/prometheus.yml (file_sd from peers2sd)" \
	0 "$RC" "$T/config.out" "$T/config.err"
assert_no_match "... without a warning" 'WARNING' "$T/config.out"

e2e_done
