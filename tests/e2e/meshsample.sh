#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# A mesh that probes a rotating sample (issue 17): "sample": k probes the
# next k peers in turn each interval, so each of N peers is probed every
# N/k intervals, and never more than k at once.  Six peers on 127.0.0.x:
#  - served by six responders of the daemon itself, k = 2 every 0.5 s:
#    the runs per peer over a measured window are what the rotation gives
#    (one every 1.5 s each, not one every 0.5 s), evenly, and every peer's
#    series stays between its turns;
#  - served by a listener that accepts and never answers (each run holds
#    its connection until the stall watchdog, 1.5 s, longer than the 0.3 s
#    between turns): at most 2 connections at once, and 2 reached.
# And a mesh that probes a selection (issue 29): "group_by": "rack",
# "across": 1, a file of 11 peers in 3 racks and this host's own line
# (127.0.0.1, rack A): its rack's 3 and one of each other rack probed,
# their series there, the 6 others' absent; the file changed (this host
# moved to rack B), the selection follows.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

PROBED=${PROBED:-}
if [ -z "$PROBED" ] || [ ! -x "$PROBED" ]; then
	echo "meshsample: PROBED is not set to an executable evrdma-probed" >&2
	exit 99
fi
command -v curl >/dev/null || e2e_skip_all "curl is not installed"
command -v python3 >/dev/null || e2e_skip_all "python3 is not installed"
T=$E2E_TMP
H=127.0.0.1
port HP
port MP
port HOLDP
E2E_SCRAPE_PORT=$HP        # lib.sh's scrape
ADDRS="127.0.0.11 127.0.0.12 127.0.0.13 127.0.0.14 127.0.0.15 127.0.0.16"

runs_of() { # FILE PEER
	val "$1" "evrdma_probe_runs_total{probe=\"mesh:$2\",peer=\"$2\"}"
}

i=0
: >"$T/peers.txt"
for a in $ADDRS; do
	i=$((i + 1))
	echo "p$i $a" >>"$T/peers.txt"
done
resp=
for a in $ADDRS; do
	resp="$resp${resp:+, }{ \"transport\": \"tcp\", \"port\": $MP, \"bind\": \"$a\" }"
done

# ---------------------------------------------------- runs per peer
cat >"$T/a.json" <<EOF
{ "listen_address": "$H", "listen_port": $HP, "responders": [ $resp ],
  "mesh": { "peers_file": "$T/peers.txt", "sample": 2, "transport": "tcp",
            "port": $MP, "size": 64, "iters": 10, "interval_s": 0.5,
            "timeout_s": 2 } }
EOF
run_cmd cc 10 "$PROBED" --check-config -c "$T/a.json"
assert_exit "--check-config takes \"sample\"" 0 "$RC" "$T/cc.err"
bg_start da 60 "$PROBED" -c "$T/a.json"
if wait_listen "$HP" 5 da; then
	sleep 1
	scrape a1
	t1=$(now_ms)
	sleep 6
	scrape a2
	w=$(( $(now_ms) - t1 ))
	say "window ${w} ms: $(for p in 1 2 3 4 5 6; do printf 'p%s %s->%s  ' "$p" "$(runs_of "$T/a1.txt" "p$p")" "$(runs_of "$T/a2.txt" "p$p")"; done)"
	total=0
	min=999999
	max=0
	series=0
	for p in 1 2 3 4 5 6; do
		r1=$(runs_of "$T/a1.txt" "p$p")
		r2=$(runs_of "$T/a2.txt" "p$p")
		[ -n "$r1" ] && [ -n "$r2" ] && series=$((series + 1))
		d=$(( ${r2:-0} - ${r1:-0} ))
		total=$((total + d))
		[ "$d" -lt "$min" ] && min=$d
		[ "$d" -gt "$max" ] && max=$d
	done
	assert_eq "every peer has its series, sampled or not" 6 "$series"
	# k = 2 turns every 0.5 s: one every 250 ms, each peer every 1500 ms
	assert_le "never more than k runs an interval (runs in the window)" \
		"$total" "$(( w / 250 + 2 ))"
	assert_le "... each peer about once in N/k intervals (most runs of a peer)" \
		"$max" "$(( (w + 1499) / 1500 + 1 ))"
	if [ "$E2E_VG" = 1 ]; then
		assert_le "every peer probed in the window (valgrind: at least once)" 1 "$min"
	else
		assert_le "... the turns all taken (runs in the window)" \
			"$(( w / 250 - 3 ))" "$total"
		assert_le "... each peer about once in N/k intervals (fewest runs of a peer)" \
			"$(( w / 1500 - 1 ))" "$min"
		assert_le "... evenly: fewest and most runs of a peer differ by 1 at most" \
			"$((max - min))" 1
	fi
	assert_eq "no peer failed" 0 \
		"$(grep -E '^evrdma_probe_failures_total\{probe="mesh:' "$T/a2.txt" | awk '{ s += $NF } END { print s + 0 }')"
	bg_stop da 5
	assert_exit "SIGTERM exits 0" 0 "$RC" "$T/da.err"
else
	not_ok "the daemon with a sampled mesh listens"
	dump "$T/da.err"
fi
bg_kill da

# ------------------------------------------- never more than k at once
cat >"$T/hold.py" <<'EOF'
import selectors, socket, sys, time
port, addrs, log = int(sys.argv[1]), sys.argv[2].split(), open(sys.argv[3], "w", buffering=1)
sel = selectors.DefaultSelector()
for a in addrs:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((a, port))
    s.listen(64)
    sel.register(s, selectors.EVENT_READ, "listen")
print("ready", flush=True)
open_ = 0
while True:
    for key, _ in sel.select(timeout=1):
        if key.data == "listen":
            c, _ = key.fileobj.accept()
            open_ += 1
            sel.register(c, selectors.EVENT_READ, "conn")
            log.write("%.3f open %d %s\n" % (time.time(), open_, c.getsockname()[0]))
        else:
            try:
                data = key.fileobj.recv(65536)
            except OSError:
                data = b""
            if not data:  # the probe gave up: closed
                sel.unregister(key.fileobj)
                key.fileobj.close()
                open_ -= 1
                log.write("%.3f close %d\n" % (time.time(), open_))
EOF
bg_start hold 60 python3 "$T/hold.py" "$HOLDP" "$ADDRS" "$T/hold.log"
wait_match "$T/hold.out" '^ready$' 10 || not_ok "the silent listener starts"
cat >"$T/b.json" <<EOF
{ "listen_address": "$H", "listen_port": $HP,
  "mesh": { "peers_file": "$T/peers.txt", "sample": 2, "transport": "tcp",
            "port": $HOLDP, "interval_s": 0.6, "timeout_s": 3 } }
EOF
bg_start db 60 "$PROBED" -c "$T/b.json"
if wait_listen "$HP" 5 db; then
	sleep "$(tscale 7)"
	scrape b1
	bg_stop db 5
	assert_exit "SIGTERM exits 0 (runs in flight)" 0 "$RC" "$T/db.err"
	most=$(awk '$2 == "open" && $3 > m { m = $3 } END { print m + 0 }' "$T/hold.log")
	say "connections at once, at most: $most; accepted: $(grep -c ' open ' "$T/hold.log")"
	assert_le "never more than k = 2 runs at once" "$most" 2
	assert_eq "... and k at once reached (the turns are 0.3 s, a run 1.5 s)" 2 "$most"
	assert_eq "every peer had its turn" 6 \
		"$(awk '$2 == "open" { print $4 }' "$T/hold.log" | sort -u | wc -l)"
	assert_le "the stalled runs counted as failures (stall)" 2 \
		"$(grep -E '^evrdma_probe_failures_total\{probe="mesh:[^,]*",peer="[^"]*",reason="stall"\}' "$T/b1.txt" | awk '{ s += $NF } END { print s + 0 }')"
else
	not_ok "the daemon with a sampled mesh of silent peers listens"
	dump "$T/db.err"
fi
bg_kill db
bg_kill hold

# ------------------------------------------------- a selection by rack
# 127.0.0.1 is this host's (its own line); 127.0.0.2x/3x/4x are not
SEL="a1:127.0.0.21:A a2:127.0.0.22:A a3:127.0.0.23:A b1:127.0.0.31:B b2:127.0.0.32:B b3:127.0.0.33:B b4:127.0.0.34:B c1:127.0.0.41:C c2:127.0.0.42:C c3:127.0.0.43:C c4:127.0.0.44:C"
write_sel() { # THIS-HOST'S-RACK
	{
		echo "me 127.0.0.1 rack=$1"
		for s in $SEL; do
			IFS=: read -r n a r <<<"$s"
			echo "$n $a rack=$r"
		done
	} >"$T/sel.tmp"
	mv "$T/sel.tmp" "$T/sel.txt"
}
probed_of() { # FILE: the peers with a series of any kind, sorted
	grep -oE '[{,]peer="[^"]*"' "$1" | sed 's/.*peer="//; s/"$//' |
		sort -u | tr '\n' ' ' | sed 's/ $//'
}
ran_of() { # FILE: the peers that ran
	awk '/^evrdma_probe_runs_total\{probe="mesh:/ && $NF > 0 { n++ } END { print n + 0 }' "$1"
}
of_rack() { echo "$2" | tr ' ' '\n' | grep "^$1" | tr '\n' ' ' | sed 's/ $//'; }
# wait (bounded) until the mesh probes N peers, each run once
wait_sel() { # NAME N
	local i
	for i in $(seq 1 "$(tscale 40)"); do
		scrape "$1"
		[ "$(val "$T/$1.txt" evrdma_mesh_peers)" = "$2" ] &&
			[ "$(ran_of "$T/$1.txt")" = "$2" ] && return 0
		sleep 0.25
	done
	return 1
}
resp=
for s in $SEL; do
	IFS=: read -r _ a _ <<<"$s"
	resp="$resp${resp:+, }{ \"transport\": \"tcp\", \"port\": $MP, \"bind\": \"$a\" }"
done
write_sel A
cat >"$T/c.json" <<EOF
{ "listen_address": "$H", "listen_port": $HP, "responders": [ $resp ],
  "mesh": { "peers_file": "$T/sel.txt", "group_by": "rack", "across": 1,
            "transport": "tcp", "port": $MP, "size": 64, "iters": 2,
            "interval_s": 0.5, "timeout_s": 2 } }
EOF
run_cmd ccc 10 "$PROBED" --check-config -c "$T/c.json"
assert_exit "--check-config takes \"group_by\" and \"across\"" 0 "$RC" "$T/ccc.err"
assert_match "... and says what it selects" \
	'a mesh of 5 peers \(1 of this host\), selected of 11 by "rack" \(3 groups\)' "$T/ccc.out"
bg_start dc 60 "$PROBED" -c "$T/c.json"
if wait_listen "$HP" 5 dc; then
	wait_sel c1 5 || not_ok "the selected mesh probes 5 peers, each run"
	got=$(probed_of "$T/c1.txt")
	say "this host in rack A probes: $got"
	assert_eq "5 peers with series: its rack's 3, one of B, one of C" 5 \
		"$(echo "$got" | wc -w)"
	assert_eq "... all of rack A" "a1 a2 a3" "$(of_rack a "$got")"
	assert_eq "... one of rack B" 1 "$(of_rack b "$got" | wc -w)"
	assert_eq "... one of rack C" 1 "$(of_rack c "$got" | wc -w)"
	assert_eq "evrdma_mesh_peers_selected 5" 5 "$(val "$T/c1.txt" evrdma_mesh_peers_selected)"
	assert_eq "evrdma_mesh_peers_listed 11" 11 "$(val "$T/c1.txt" evrdma_mesh_peers_listed)"
	assert_eq "no selected peer failed" 0 \
		"$(grep -E '^evrdma_probe_failures_total\{probe="mesh:' "$T/c1.txt" | awk '{ s += $NF } END { print s + 0 }')"
	# the peer of rack B it chose: 3 runs at least before the change
	kb=$(of_rack b "$got")
	kseries="evrdma_probe_runs_total{probe=\"mesh:$kb\",peer=\"$kb\",rack=\"B\"}"
	for _ in $(seq 1 "$(tscale 20)"); do
		scrape c1
		[ "$(val "$T/c1.txt" "$kseries")" -ge 3 ] 2>/dev/null && break
		sleep 0.25
	done
	# this host moves to rack B: its 4, one of A, one of C
	write_sel B
	wait_sel c2 6 || not_ok "the file changed: the mesh probes 6 peers, each run"
	got2=$(probed_of "$T/c2.txt")
	say "this host in rack B probes: $got2"
	assert_eq "re-selected: 6 peers with series" 6 "$(echo "$got2" | wc -w)"
	assert_eq "... all of rack B" "b1 b2 b3 b4" "$(of_rack b "$got2")"
	assert_eq "... one of rack A, one of rack C" "1 1" \
		"$(of_rack a "$got2" | wc -w) $(of_rack c "$got2" | wc -w)"
	assert_eq "evrdma_mesh_peers_selected 6" 6 "$(val "$T/c2.txt" evrdma_mesh_peers_selected)"
	# the peer of rack B chosen from rack A is still probed: its probe
	# kept, its runs counted on (started again, it would have 1 or 2)
	r1=$(val "$T/c1.txt" "$kseries")
	r2=$(val "$T/c2.txt" "$kseries")
	say "$kb: runs $r1 before the change, $r2 after"
	assert_le "$kb ran 3 times before the change" 3 "${r1:-0}"
	assert_le "... selected before and after, it keeps its counters" \
		"${r1:-999}" "${r2:-0}"
	bg_stop dc 5
	assert_exit "SIGTERM exits 0" 0 "$RC" "$T/dc.err"
else
	not_ok "the daemon with a selected mesh listens"
	dump "$T/dc.err"
fi
bg_kill dc

e2e_done
