#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# evrdma-probed's status page (evrdma-probed.8, STATUS PAGE), on
# 127.0.0.1: a daemon with a responder, a probe of it, a probe of a dead
# port whose name needs escaping and a mesh of one peer serves "/"
# (HTML, self-contained, every probe and peer present, the failing
# probe's cell marked bad and linked to its failure's log), /status.json
# (the same facts), /run/ID (one run's log: what was resolved,
# connected, measured, or where it failed; 404 for a run not kept); the
# HTTP guard applies to "/" as to /metrics; a SIGHUP's "status" keys
# take effect (fewer runs kept, other bounds).
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"
# shellcheck source=daemon-lib.sh
. "$(dirname "$0")/daemon-lib.sh"

command -v python3 >/dev/null || e2e_skip_all "python3 is not installed"
port RP     # the responder
port DEAD   # nothing listens here
port HP     # the daemon's HTTP
U="http://$H:$HP"

# get NAME PATH: NAME.txt the body, NAME.meta "CODE|TYPE"
get() {
	curl -s --max-time "$(tscale 2)" -o "$T/$1.txt" \
		-w '%{http_code}|%{content_type}\n' "$U$2" >"$T/$1.meta" 2>/dev/null
}
code_of() { cut -d'|' -f1 "$T/$1.meta"; }
type_of() { cut -d'|' -f2 "$T/$1.meta"; }
# jq_py NAME EXPR: EXPR (python, d the document) of NAME.txt's JSON
jq_py() {
	python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
		"$T/$1.txt" "$2" 2>/dev/null
}

cat >"$T/peers" <<EOF2
# one peer, at an address of the loopback that is not the host's own
p-one 127.0.0.2 rack=r1
EOF2
sconf() { # STATUS-OBJECT
	cat >"$T/st.json" <<JSON
{ "listen_address": "$H", "listen_port": $HP,
  "responders": [ { "transport": "tcp", "port": $RP } ],
  "probes": [ $(probe_json good "$RP"), $(probe_json 'bad<&>' "$DEAD") ],
  "mesh": { "peers_file": "$T/peers", "port": $RP, "transport": "tcp",
            "size": 1000, "count": 1, "iters": 20, "interval_s": 0.5,
            "timeout_s": $(tscale 2) },
  "status": $1 }
JSON
}
sconf '{ "runs": 50, "p99_ok_us": 100000, "p99_warn_us": 200000 }'
run_cmd cc 10 "$PROBED" --check-config -c "$T/st.json"
assert_exit "--check-config takes \"status\"" 0 "$RC" "$T/cc.err"
bg_start sd 120 "$PROBED" -c "$T/st.json"
if ! wait_listen "$HP" 10 sd; then
	not_ok "the daemon listens"
	dump "$T/sd.err"
	e2e_done
fi

# until every probe has run twice (the failing one failed)
end=$(( $(now_ms) + $(tscale 10) * 1000 ))
while :; do
	get j /status.json
	n=$(jq_py j 'min(p["runs"] for p in d["probes"])')
	[ "${n:-0}" -ge 2 ] 2>/dev/null && break
	[ "$(now_ms)" -ge "$end" ] && break
	sleep 0.2
done
num_ge "every probe and the peer ran" "$n" 2

# ------------------------------------------------------------------ /
get page /
assert_eq "/: 200" 200 "$(code_of page)"
assert_eq "/: HTML" "text/html; charset=utf-8" "$(type_of page)"
assert_match "/: a whole HTML page" '^<!DOCTYPE html>$' "$T/page.txt"
assert_match "/: ends" '</body></html>$' "$T/page.txt"
assert_no_match "/: no script" '<script' "$T/page.txt"
assert_no_match "/: nothing fetched from elsewhere" '(src=|https?://)' "$T/page.txt"
assert_eq "/: no link but the icon, which is none (data:)" '<link rel="icon" href="data:,">' \
	"$(grep -oE '<link[^>]*>' "$T/page.txt")"
assert_no_match "/: a probe's name is never markup" 'bad<&>' "$T/page.txt"
assert_match "/: the good probe's cell is ok, linked to its run" \
	'<a class="cell ok" href="/run/[0-9]+" data-probe="good"' "$T/page.txt"
assert_match "/: a cell: median and p99 round trip, loss" \
	'data-probe="good" title="good"><b>good</b>p50 [0-9.]+&nbsp;us<br>p99 [0-9.]+&nbsp;us<br>loss 0%</a>' "$T/page.txt"
assert_match "/: the mesh peer's cell, by its name" \
	'<a class="cell ok" href="/run/[0-9]+" data-probe="mesh:p-one" title="mesh:p-one"><b>p-one</b>' "$T/page.txt"
assert_match "/: the failing probe's cell is bad, with its reason" \
	'<a class="cell bad" href="/run/[0-9]+" data-probe="bad&lt;&amp;&gt;".*refused</a>' "$T/page.txt"
assert_match "/: the responder, listening" \
	"<td>tcp:\\*:$RP</td><td class=\"ok\">yes</td>|<td>tcp::$RP</td><td class=\"ok\">yes</td>|<td>tcp:[^<]*$RP</td><td class=\"ok\">yes</td>" "$T/page.txt"
assert_match "/: the peers file, ok" "$(ere_quote "$T/peers"): <span class=\"ok\">ok</span>; 1 peers listed, 1 probed" "$T/page.txt"
assert_match "/: the runs kept, as configured" '\(50 kept, newest first\)' "$T/page.txt"
assert_match "/: the bounds, as configured" 'p99 under 100000 us' "$T/page.txt"

# one click from the failing cell: its failure's log
bad_run=$(grep -oE '<a class="cell bad" href="/run/[0-9]+"' "$T/page.txt" | grep -oE '[0-9]+' | head -1)
get badrun "/run/$bad_run"
assert_eq "/run/ID of the failing cell: 200" 200 "$(code_of badrun)"
assert_eq "/run/ID: plain text" "text/plain; charset=utf-8" "$(type_of badrun)"
assert_match "/run/ID: the run, its probe, its outcome" \
	"^run $bad_run of probe bad<&>, started [0-9-]+ [0-9:]+ UTC: FAILED, refused$" "$T/badrun.txt"
assert_match "/run/ID: where it was going" "^\\+[0-9.]+ connecting: tcp to 127\\.0\\.0\\.1 port $DEAD" "$T/badrun.txt"
assert_match "/run/ID: where it failed" '^\+[0-9.]+ failed in phase connect at connect' "$T/badrun.txt"
assert_match "/run/ID: why" '^\+[0-9.]+ FAILED \(refused\) after [0-9.]+ s: .*Connection refused$' "$T/badrun.txt"
ok_run=$(grep -oE '<a class="cell ok" href="/run/[0-9]+" data-probe="mesh:p-one"' "$T/page.txt" | grep -oE '[0-9]+' | head -1)
get okrun "/run/$ok_run"
assert_match "/run/ID of a peer's run: its peer" "^run $ok_run of probe mesh:p-one, peer p-one, .*: ok$" "$T/okrun.txt"
assert_match "/run/ID: connected, with its settings" \
	"^\\+[0-9.]+ connected: tcp local 127\\.0\\.0\\.[0-9]+:[0-9]+ to peer 127\\.0\\.0\\.2:$RP; settings: .*nodelay=1" "$T/okrun.txt"
assert_match "/run/ID: measured" '^\+[0-9.]+ measured: test custom, 20 iterations of 1 x 1000 bytes' "$T/okrun.txt"
assert_match "/run/ID: the round trips" '^\+[0-9.]+ round trips: min [0-9.]+ us, p50 [0-9.]+ us, .*\(20 samples\)$' "$T/okrun.txt"
assert_match "/run/ID: ok" '^\+[0-9.]+ ok in [0-9.]+ s$' "$T/okrun.txt"
get icon /favicon.ico
assert_eq "/favicon.ico: an icon (no 404 in a browser's console on /run/ID)" "200|image/svg+xml" "$(cat "$T/icon.meta")"
for bad in /run/0 /run/99999999 /run/1x /run/ /run/-1 /status; do
	get nope "$bad"
	assert_eq "$bad: 404" 404 "$(code_of nope)"
done

# --------------------------------------------------------- /status.json
get j /status.json
assert_eq "/status.json: 200" 200 "$(code_of j)"
assert_eq "/status.json: JSON" application/json "$(type_of j)"
assert_eq "/status.json: the probes and the peer, in order" \
	"['good', 'bad<&>', 'mesh:p-one']" "$(jq_py j '[p["name"] for p in d["probes"]]')"
assert_eq "/status.json: the cells" "['ok', 'bad', 'ok']" \
	"$(jq_py j '[p["cell"] for p in d["probes"]]')"
assert_eq "/status.json: the failure's reason" refused \
	"$(jq_py j 'd["probes"][1]["last_failure"]')"
assert_eq "/status.json: the peers file" "True 1" \
	"$(jq_py j '"%s %d" % (d["peers_file"]["ok"], d["peers_file"]["peers"])')"
assert_eq "/status.json: a run links its log" True \
	"$(jq_py j 'all(r["log"] == "/run/%d" % r["id"] for r in d["runs"])')"
assert_eq "/status.json: the thresholds" "100000.0 200000.0 0.1" \
	"$(jq_py j '"%s %s %s" % (d["thresholds"]["p99_ok_us"], d["thresholds"]["p99_warn_us"], d["thresholds"]["loss_bad"])')"
sleep 1
get j /status.json
num_ge "/status.json: at most \"runs\" runs kept" 50 "$(jq_py j 'len(d["runs"])')"

# -------------------------------------------------------- the HTTP guard
# sixteen connections of our address (its share, "max_connections_per_ip"),
# each half a request to "/": a page asked for gets in by evicting the
# one idle longest (the guard applies to "/" as to /metrics); the
# configuration's "status" changed meanwhile (below)
sconf '{ "runs": 3, "loss_bad": 0.5 }'
kill -HUP "$(bg_child_pid sd)"
sleep 1
python3 - "$HP" >"$T/guard.out" 2>&1 <<'PY' &
import socket, sys, time
held = []
for i in range(16):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.send(b"GET / HTTP/1.1\r\nHost: x\r\n")
    held.append(s)
time.sleep(600)
PY
gpid=$!
# (the daemon holds the 16 once it has accepted them: until one is
# evicted, each page asked for may still have found room)
guard_evicted() {
	get g /
	[ "$(code_of g)" = 200 ] || return 1
	scrape m "$HP"
	[ "$(val "$T/m.txt" 'evrdma_http_connections_dropped_total{reason="evicted"}')" -ge 1 ] 2>/dev/null
}
end=$(( $(now_ms) + $(tscale 10) * 1000 ))
until guard_evicted || [ "$(now_ms)" -ge "$end" ]; do sleep 0.2; done
assert_eq "the guard: a page while 16 half-sent requests to / are held" 200 "$(code_of g)"
num_ge "the guard: an idle connection to / was evicted for it" \
	"$(val "$T/m.txt" 'evrdma_http_connections_dropped_total{reason="evicted"}')" 1
kill "$gpid" 2>/dev/null
wait "$gpid" 2>/dev/null

# ----------------------------------------------------- SIGHUP's "status"
sleep 1
get j /status.json
assert_eq "SIGHUP: \"runs\": 3 keeps 3" 3 "$(jq_py j 'len(d["runs"])')"
assert_eq "SIGHUP: the new bound" 0.5 "$(jq_py j 'd["thresholds"]["loss_bad"]')"
get page /
assert_match "SIGHUP: the page says 3 kept" '\(3 kept, newest first\)' "$T/page.txt"
get old "/run/$bad_run"
assert_eq "SIGHUP: a run no longer kept: 404" 404 "$(code_of old)"
bg_stop sd 10
assert_exit "SIGTERM: exit 0" 0 "$RC" "$T/sd.err"
e2e_done
