# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# shellcheck shell=bash
#
# The status page in a real browser (issue 41 item 3), sourced by
# tests/e2e/fleet.sh once its faults are over, its fleet still running:
# fleet_browser takes host N's responder away (every peer's probe of it
# refused), and Debian's headless Chromium (tests/e2e/browse.py, over
# the DevTools protocol; scripts disabled) loads host 1's "/" as a
# person would: every probe and mesh peer must be a cell, hN's marked
# bad and one real click from the log of its failed run, and no console
# error; a screenshot is taken (FLEET_SHOT=FILE copies it there:
# doc/img/status-page.png is one).  Then an agent of 64, then 256 peers
# (the fleet's hosts and addresses no route leads to, in host 1's
# namespace: nothing leaves it) is loaded the same way, and the page's
# bytes, load and render times are printed as figures (not under
# valgrind, whose times are memcheck's).  Without chromium the checks
# fail where CI runs (CI=true: scripts/deps.sh installs it) and are
# skipped, loudly, elsewhere.
#
# Uses fleet.sh's N, T, PI, TO, SRC, PROBED, poll_until, HUP and the
# fabric's functions.

BROWSE_PY=$(dirname "${BASH_SOURCE[0]}")/browse.py

# fb_json NAME NS URL: NAME.json, the JSON at URL, fetched in NS
fb_json() {
	ip netns exec "$2" curl -s --max-time "$(tscale 5)" -o "$T/$1.json" "$3" 2>/dev/null
}
# fb_py NAME EXPR: EXPR (python, d the document) of NAME.json
fb_py() {
	python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
		"$T/$1.json" "$2" 2>/dev/null
}
# fb_browse NS URL DIR [ARGS...]: browse.py in namespace NS, its
# output in DIR; RC its status
fb_browse() {
	local ns=$1 url=$2 dir=$3
	shift 3
	rm -rf "$dir"
	mkdir -p "$dir"
	BROWSE_ERR=$dir/chromium.err timeout "$(tscale 90)" ip netns exec "$ns" \
		python3 "$BROWSE_PY" "$url" "$dir" "$@" >"$dir/browse.out" 2>&1
	RC=$?
}

# hN's failure seen by h1: its cell bad, with its reason and a log, and
# no other (the window of a cell's loss, 16 runs, past the fleet's last
# fault)
fb_failing() {
	fb_json st1 "$(fab_ns 1)" "$1/status.json" &&
		[ "$(fb_py st1 "[(p['name'], p['last_failure'], bool(p['log'])) for p in d['probes'] if p['cell'] == 'bad'] == [('mesh:h$N', 'refused', True)]")" = True ]
}

# The fleet's host 1, one peer failing: what a person would see.
fb_fleet_page() {
	local u d="$T/browser" want got bad href
	u="http://$(fab_addr 1):9471"
	# h1 with TCP's bounds (the defaults are RDMA's: a veth's round
	# trips would be yellow), kept by its probes across the SIGHUP; on a
	# loaded host (CI's) a probe's tail and a timed-out run or two are
	# no failure of the page, so a cell is red here only for a run that
	# failed last or half the runs failing (check_status holds the
	# colours to their bounds)
	fab_agent_conf 1 "$T/h1.json" "$T/peers" "$PI" "$TO"
	sed -i '1a\  "status": { "p99_ok_us": 1000, "p99_warn_us": 1000000, "loss_bad": 0.5, "runs": 100 },' "$T/h1.json"
	HUP 1
	fab_agent_conf "$N" "$T/h$N.json" "$T/peers" "$PI" "$TO" 0
	HUP "$N"
	if ! poll_until $(( 20 * PI + 10 )) fb_failing "$u"; then
		not_ok "browser: h1 sees h$N's probe refused, and no other failing" \
			"$(fb_py st1 "[(p['name'], p['cell'], p['last_failure']) for p in d['probes']]")"
		return
	fi
	fb_browse "$(fab_ns 1)" "$u/" "$d" --shot "$T/status-page.png" --width 1100 --height 760 --click "a.cell.bad[data-probe='mesh:h$N']"
	if [ "$RC" != 0 ]; then
		not_ok "browser: Chromium loads h1's status page" "$(cat "$d/browse.out")"
		dump "$d/chromium.err"
		return
	fi
	ok "browser: Chromium loads h1's status page, scripts disabled"
	[ -n "${FLEET_SHOT:-}" ] && cp "$T/status-page.png" "$FLEET_SHOT"
	say "the screenshot: $T/status-page.png ($(stat -c %s "$T/status-page.png") bytes)"
	# every probe (the agent's own list) and every peer, as cells
	want=$(fb_py st1 "' '.join(sorted(p['name'] for p in d['probes']))")
	got=$(python3 -c 'import json, sys; print(" ".join(sorted(c["probe"] for c in json.load(open(sys.argv[1]))["cells"])))' "$d/cells.json")
	assert_eq "browser: a cell for every probe and peer of h1" "$want" "$got"
	want=$(for j in $(seq 2 "$N"); do echo "mesh:h$j"; done; [ "${FAB_BW:-1}" = 0 ] || echo bw:h2)
	assert_eq "browser: ... which are the fleet's: h2..h$N and bw:h2" \
		"$(echo "$want" | sort | tr '\n' ' ' | sed 's/ $//')" "$got"
	for j in $(seq 2 "$N"); do
		grep -q "<b>h$j</b>" "$d/dom.html" || not_ok "browser: peer h$j named in its cell"
	done
	ok "browser: every peer named in its cell"
	bad=$(python3 -c 'import json, sys; print(" ".join(c["probe"] for c in json.load(open(sys.argv[1]))["cells"] if "bad" in c["cls"].split()))' "$d/cells.json")
	# h8's cell red; another's only if its own last run failed as the
	# page was read (a timeout on a loaded host), never all of them
	case " $bad " in
	*" mesh:h$N "*) ok "browser: h$N's cell is marked bad" ;;
	*) not_ok "browser: h$N's cell is marked bad" "bad: $bad" ;;
	esac
	[ "$bad" = "mesh:h$N" ] || say "also red as the page was read: ${bad/mesh:h$N/}"
	assert_le "browser: not every cell is red" "$(echo "$bad" | wc -w)" "$(( $(echo "$got" | wc -w) - 1 ))"
	href=$(python3 -c 'import json, sys; print([c["href"] for c in json.load(open(sys.argv[1]))["cells"] if c["probe"] == sys.argv[2]][0])' "$d/cells.json" "mesh:h$N")
	assert_match "browser: its cell says why" 'refused' <(python3 -c 'import json, sys; print([c["text"] for c in json.load(open(sys.argv[1]))["cells"] if c["probe"] == sys.argv[2]][0])' "$d/cells.json" "mesh:h$N")
	assert_eq "browser: one click on it leads to its run's log" "$u$href" "$(head -1 "$d/click.txt")"
	assert_match "browser: ... the failure's: refused" "^run [0-9]+ of probe mesh:h$N, peer h$N, .*: FAILED, refused$" "$d/click.txt"
	assert_match "browser: ... where it went" "connecting: tcp to $(fab_addr "$N") port 7471" "$d/click.txt"
	assert_match "browser: ... and why it failed" 'FAILED \(refused\) after [0-9.]+ s: .*Connection refused' "$d/click.txt"
	assert_empty "browser: no console error or warning" "$d/console.txt"
	assert_eq "browser: no script, nothing fetched from elsewhere" "0 0" \
		"$(python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); print(c["scripts"], c["external"])' "$d/cells.json")"
	# the fault repaired
	fab_agent_conf "$N" "$T/h$N.json" "$T/peers" "$PI" "$TO"
	HUP "$N"
}

# fb_peers FILE K: the fleet's hosts, then K - N + 1 more that no route
# leads to (198.18.8.0/21, no namespace's): K peers for host 1's agent,
# which skips its own line
fb_peers() {
	local i
	fab_peers "$1"
	for i in $(seq "$N" "$2"); do
		echo "x$i 198.18.$(( 8 + i / 250 )).$(( i % 250 + 1 ))"
	done >>"$1"
}

fb_ran() { # URL K: K peers, each run once
	fb_json big "$(fab_ns 1)" "$1/status.json" &&
		[ "$(fb_py big "len(d['probes']) == $2 and min(p['runs'] for p in d['probes']) >= 1")" = True ]
}

# fb_size K: the big agent with K peers, its page loaded: figures
fb_size() {
	local k=$1 u d="$T/browser-$1" fig cells bytes load render nodes
	u="http://$(fab_addr 1):9472"
	fb_peers "$T/peers.big.tmp" "$k"
	mv "$T/peers.big.tmp" "$T/peers.big"
	if ! poll_until 60 fb_ran "$u" "$k"; then
		not_ok "browser: an agent of $k peers runs them all" "$(fb_py big 'len(d["probes"])') probes"
		return
	fi
	fb_browse "$(fab_ns 1)" "$u/" "$d" --shot "$d.png"
	if [ "$RC" != 0 ]; then
		not_ok "browser: Chromium loads the page of $k peers" "$(cat "$d/browse.out")"
		return
	fi
	fig=$(python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); print(len(c["cells"]), c["bytes"], round(c["load_ms"]), round(c["render_ms"]), c["nodes"])' "$d/cells.json")
	read -r cells bytes load render nodes <<<"$fig"
	assert_eq "browser: $k peers, $k cells" "$k" "$cells"
	assert_empty "browser: $k peers: no console error" "$d/console.txt"
	fb_json bigj "$(fab_ns 1)" "$u/status.json"
	say "status page of $k peers (and 100 runs): $bytes bytes, /status.json $(stat -c %s "$T/bigj.json") bytes; Chromium: loaded in $load ms, style and layout $render ms, $nodes DOM nodes"
	assert_le "browser: $k peers: the page under $(( k * 1024 )) bytes" "$bytes" $(( k * 1024 ))
	assert_le "browser: $k peers: loaded within $(tscale 5) s" "$load" $(( $(tscale 5) * 1000 ))
}

fb_sizes() {
	local a
	a=$(fab_addr 1)
	cat >"$T/big.json" <<JSON
{ "listen_address": "$a", "listen_port": 9472,
  "mesh": { "peers_file": "$T/peers.big", "transport": "tcp", "port": 7471,
            "size": 64, "iters": 10, "interval_s": 4, "timeout_s": 1 } }
JSON
	fb_peers "$T/peers.big" 64
	bg_start big 300 ip netns exec "$(fab_ns 1)" "$PROBED" -c "$T/big.json"
	fb_size 64
	fb_size 256
	bg_stop big 10
	assert_exit "browser: the agent of 256 peers exits 0" 0 "$RC" "$T/big.err"
}

fleet_browser() {
	if ! command -v chromium >/dev/null 2>&1; then
		if [ "${CI:-}" = true ]; then
			not_ok "browser: chromium is installed (scripts/deps.sh installs it)"
		else
			skip "browser: chromium is not installed (scripts/deps.sh installs it): the status page is not checked in a browser"
		fi
		return
	fi
	fb_fleet_page
	if [ "$E2E_VG" = 1 ]; then
		skip "browser: the page's size and time at 64 and 256 peers (under valgrind, its times are memcheck's)"
		return
	fi
	fb_sizes
}
