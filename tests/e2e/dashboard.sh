#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The fleet dashboard (contrib/grafana/evrdma-fleet.json), without a
# network or Grafana: Grafana's JSON model as grafana.com's exports have
# it (tests/dashboard-check.py lint: the ${DS_PROMETHEUS} input as every
# panel's, target's, variable's data source; unique ids; every $variable
# defined; every metric its queries name an agent's family in
# src/daemon/metrics.c or a record of the shipped rules), and the lint
# catches a broken dashboard (each of a few breaks, alone, fails it).
# The fleet's check (dashboard-check.py fleet) fails against a fake
# Prometheus on loopback whose answers are empty, or another host's,
# naming every query that got them.
# Every query, its variables given values, passes promtool check rules
# (PromQL that parses); the RDMA device panels' queries, which the TCP
# fleet cannot feed, are evaluated by promtool test rules on an agent's
# device series of two hosts: each returns series of the chosen host
# only.  It is shipped (debian/evrdma-probed.install, the tarball) and
# doc/fabric.md names every panel.  tests/e2e/fleet.sh runs every query
# against the fleet's Prometheus (tests/e2e/fleet-dashboard.sh).
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

T=$E2E_TMP
SRC=${E2E_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
DASH=$SRC/contrib/grafana/evrdma-fleet.json
CHECK=$SRC/tests/dashboard-check.py
RULES=$SRC/contrib/prometheus/evrdma-fabric.rules.yml
PY=python3
command -v "$PY" >/dev/null 2>&1 || e2e_skip_all "python3 is not installed"

# lint FILE: the checker's lines as ok/not_ok; RC its status
lint() {
	"$PY" "$CHECK" lint "$1" "$SRC/src/daemon/metrics.c" "$RULES" >"$T/lint.out" 2>"$T/lint.err"
	RC=$?
}
tap() { # FILE: the checker's lines as ok / not_ok
	local st desc detail
	while IFS=$'\t' read -r st desc detail; do
		case $st in
		ok) ok "$desc" ;;
		"not ok") not_ok "$desc" "$detail" ;;
		esac
	done <"$1"
}

lint "$DASH"
tap "$T/lint.out"
assert_exit "dashboard-check.py lint exits 0" 0 "$RC" "$T/lint.err"

# The lint must catch a broken dashboard: each break, alone, fails it,
# and its line names what broke.
# brk NAME ERE PYTHON: the dashboard with d changed by PYTHON (Q: the
# panels with a query, top level; R: those nested in a folded row)
brk() {
	local name=$1 ere=$2
	"$PY" - "$DASH" "$T/$name.json" "$3" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
Q = [p for p in d["panels"] if p.get("targets")]
R = [p for r in d["panels"] for p in r.get("panels", [])]
exec(sys.argv[3])
json.dump(d, open(sys.argv[2], "w"))
PY
	lint "$T/$name.json"
	if [ "$RC" = 1 ] && grep -qE "^not ok	$ere" "$T/lint.out"; then
		ok "a break is caught: $name"
	else
		not_ok "a break is caught: $name" "exit $RC; $(grep '^not ok' "$T/lint.out" | head -3 | tr '\t\n' ' |')"
	fi
}
brk "a metric the agent does not export" "every metric" \
	'Q[1]["targets"][0]["expr"] = "sum(evrdma_probe_ups)"'
brk "a recording rule the rules lack" "every metric" \
	'R[0]["targets"][0]["expr"] = "host:evrdma_nosuch:ratio"'
brk "a panel on another data source" "every panel.s data source" \
	'R[1]["datasource"] = {"type": "prometheus", "uid": "P1809F7CD0C75ACF3"}'
brk "a target on another data source" "every target.s data source" \
	'Q[2]["targets"][0]["datasource"] = {"type": "prometheus", "uid": "prometheus"}'
brk "a panel id twice" "panel ids" 'R[0]["id"] = Q[0]["id"]'
# shellcheck disable=SC2016 # a Grafana variable, not the shell's
brk "an undefined variable" "every .variable of the queries" \
	'Q[3]["targets"][0]["expr"] = "up{host=\"$node\"}"'
brk "no DS_PROMETHEUS input" "it asks for" 'd["__inputs"] = []'
brk "no license" "its description" 'd["description"] = "evrdma fleet"'
brk "not JSON" "the dashboard parses" 'open(sys.argv[2], "w").write("{"); sys.exit(0)'

# The fleet check must catch a Prometheus whose answers the panels
# cannot show: a fake one on loopback (the variables' values right, but
# every query empty; then every series of another host, h9) must fail
# it, naming the queries.
cat >"$T/fakeprom.py" <<'PY'
import json, sys, urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer
mode = sys.argv[2]
VALUES = {"job": ["evrdma"], "host": ["h1", "h2", "h3"], "peer": ["h2", "h3"]}
class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        q = urllib.parse.parse_qs(u.query)
        if u.path.startswith("/api/v1/label/"):
            data = VALUES.get(u.path.split("/")[4], [])
        else:
            expr = q.get("query", [""])[0]
            m = {"job": "evrdma", "host": "h9", "peer": "h8", "alertname": "EvrdmaX", "alertstate": "firing"}
            v = [1700000000, "1"]
            data = {"resultType": "vector", "result": []}
            if mode == "elsewhere" and "evrdma_rdma_" not in expr:
                data["result"] = [{"metric": m, "value": v, "values": [v]}]
        body = json.dumps({"status": "success", "data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)
s = HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(s.server_address[1]))
s.serve_forever()
PY
for mode in empty elsewhere; do
	rm -f "$T/port.$mode"
	bg_start "fake$mode" 30 "$PY" "$T/fakeprom.py" "$T/port.$mode" "$mode"
	for _ in $(seq 1 50); do [ -s "$T/port.$mode" ] && break; sleep 0.1; done
	run_cmd "f$mode" 30 "$PY" "$CHECK" fleet "$DASH" "http://127.0.0.1:$(cat "$T/port.$mode")" --firing --hosts 3
	bg_kill "fake$mode"
	assert_exit "the fleet check fails on a Prometheus that answers $mode" 1 "$RC" "$T/f$mode.err"
done
# the queries that must fail so: every one but the device panels' (the
# fake has no device series: empty is right there); those of $host's
# own series (host="$host", peer="$host")
"$PY" "$CHECK" exprs "$DASH" >"$T/raw.jsonl"
assert_lines "... every panel and annotation query named for its empty answer" \
	"$(jq -s '[.[] | select(.kind != "label_values" and (.expr | test("evrdma_rdma_") | not))] | length' "$T/raw.jsonl")" \
	"$T/fempty.out" '^not ok.*no series with a finite value'
assert_lines "... every query of \$host's own series named for h9's" \
	"$(jq -s '[.[] | select(.kind != "label_values" and (.expr | test("(host|peer)=\"\\$host\"")) and (.expr | test("evrdma_rdma_") | not))] | length' "$T/raw.jsonl")" \
	"$T/felsewhere.out" '^not ok.*series of (host h9|peer h8) besides h1'

# --------------------------------------------------- the queries' PromQL

VARS=(job=evrdma host=h1 peer=h2 __rate_interval=5m __interval=1m __range=5m)
if ! "$PY" "$CHECK" exprs "$DASH" "${VARS[@]}" >"$T/exprs.jsonl" 2>"$T/exprs.err"; then
	not_ok "dashboard-check.py exprs" "$(head -3 "$T/exprs.err")"
	e2e_done
fi
NQ=$(wc -l <"$T/exprs.jsonl")
ok "the dashboard's queries: $NQ ($(jq -r .kind "$T/exprs.jsonl" | sort | uniq -c | awk '{ printf "%s%s %s", s, $1, $2; s = ", " }'))"

command -v promtool >/dev/null 2>&1 ||
	e2e_skip_all "promtool is not installed (scripts/deps.sh: prometheus)"
# every query as a recording rule: promtool parses them all
"$PY" - "$T/exprs.jsonl" >"$T/q.rules.yml" <<'PY'
import json, sys
print("groups:\n  - name: dashboard\n    rules:")
for i, l in enumerate(open(sys.argv[1])):
    q = json.loads(l)
    print("      - record: dashboard:q%d" % i)
    print("        expr: %s" % json.dumps(q["expr"]))
PY
run_cmd qcheck 30 promtool check rules "$T/q.rules.yml"
assert_exit "every query parses (promtool check rules, each one a recording rule)" 0 "$RC" \
	"$T/qcheck.out" "$T/qcheck.err"
assert_match "... all $NQ of them" "SUCCESS: $NQ rules found" "$T/qcheck.out"

# The RDMA device panels, on device series: h1's device rxe0 has its
# port down at minutes 2 and 3 (a port_err, then a port_active at 4),
# h2's stays active; each query, with $host h1 at minute 3, returns
# series of h1 only (count by host: h1's, none of h2's), the state
# panel's the state h1 is in (PORT_DOWN).
jq -c 'select(.expr | test("evrdma_rdma_"))' "$T/exprs.jsonl" >"$T/dev.jsonl"
ND=$(wc -l <"$T/dev.jsonl")
assert_eq "three RDMA device queries (state, ports, events)" 3 "$ND"
"$PY" - "$T/dev.jsonl" "$RULES" >"$T/dev.test.yml" <<'PY'
import json, sys
qs = [json.loads(l) for l in open(sys.argv[1])]
print("rule_files:\n  - %s\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:" % sys.argv[2])
def s(name, labels, values):
    print("      - series: %s\n        values: '%s'" % (json.dumps("%s{%s}" % (name, labels)), values))
for host, down in (("h1", True), ("h2", False)):
    base = 'job="evrdma",instance="%s:9471",host="%s",device="rxe0"' % (host, host)
    s("evrdma_rdma_device_state", base + ',netdev="eth0",state="ACTIVE"', "1 1 0 0 1 1" if down else "1x5")
    s("evrdma_rdma_device_state", base + ',netdev="eth0",state="PORT_DOWN"', "0 0 1 1 0 0" if down else "0x5")
    s("evrdma_rdma_device_state", base + ',netdev="eth0",state="GONE"', "0x5")
    s("evrdma_rdma_port_up", base + ',port="1"', "1 1 0 0 1 1" if down else "1x5")
    s("evrdma_rdma_device_events_total", base + ',kind="port_err"', "0 0 1 1 1 1" if down else "0x5")
    s("evrdma_rdma_device_events_total", base + ',kind="port_active"', "0 0 0 0 1 1" if down else "0x5")
print("    promql_expr_test:")
for q in qs:
    e = q["expr"]
    # the state panel: the state h1 is in at 3m; the others: how many series
    by, lab, val = (("host, state", '{host="h1",state="PORT_DOWN"}', 1) if "device_state" in e else
                    ("host", '{host="h1"}', 1) if "port_up" in e else ("host", '{host="h1"}', 2))
    print("      - expr: %s" % json.dumps("count by (%s) (%s)" % (by, e)))
    print("        eval_time: 3m\n        exp_samples:\n          - labels: '%s'\n            value: %d" % (lab, val))
PY
run_cmd devtest 60 promtool test rules "$T/dev.test.yml"
assert_exit "the RDMA device queries on device series: h1's only: the state it is in, its port, its 2 kinds of event (promtool test rules)" \
	0 "$RC" "$T/devtest.out" "$T/devtest.err" "$T/dev.test.yml"

# ------------------------------------------------------- shipped, documented

assert_match "debian/evrdma-probed.install ships it (/usr/share/evrdma/grafana)" \
	'^contrib/grafana/evrdma-fleet\.json usr/share/evrdma/grafana$' "$SRC/debian/evrdma-probed.install"
assert_match "Makefile.am puts it in the tarball" 'contrib/grafana/evrdma-fleet\.json' "$SRC/Makefile.am"
"$PY" - "$DASH" >"$T/titles" <<'PY'
import json, sys
def walk(ps):
    for p in ps:
        yield p
        yield from walk(p.get("panels", []))
for p in walk(json.load(open(sys.argv[1]))["panels"]):
    print(p["title"])
PY
missing=
while IFS= read -r title; do
	grep -qF "$title" "$SRC/doc/fabric.md" || missing="$missing | $title"
done <"$T/titles"
assert_eq "doc/fabric.md names every panel and row ($(wc -l <"$T/titles"))" "" "$missing"
e2e_done
