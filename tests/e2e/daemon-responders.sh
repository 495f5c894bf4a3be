#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# evrdma-probed's responders, on 127.0.0.1: an rstream server in the
# daemon's loop answering the daemon's own probe, our rstream client and
# upstream's; its series (listening, served, finished, active, dropped
# by reason); max_conns turning clients away, each counted; a port taken
# at the start, listened on once it is free; stall_timeout_s closing a
# mute connection; SIGHUP keeping, removing and adding back a responder,
# and rejecting a bad one.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"
# shellcheck source=daemon-lib.sh
. "$(dirname "$0")/daemon-lib.sh"

# ---------------------------------------------------------- responders

# An rstream server in the daemon's loop (tcp, on 127.0.0.1, at most two
# connections at once), answered by a probe of the same daemon, by our
# rstream client and by upstream's; its counters (served, active, dropped
# by reason: each connection turned away counted, not once per episode);
# SIGHUP keeping it (and its counters), removing it (its port closes, its
# series go), adding it back (afresh); a responder whose port is taken
# listens once the port is free.
port RP      # the responder
port RP2     # a responder whose port is taken at first
port HP6
port DEAD    # nothing listens here (a probe of it, added on SIGHUP)
# (the stall timeout scaled: under valgrind three clients in a row take
# longer than the default 10 s that would drop the mute connections; RP2
# has a short one, which a mute client of its own shows)
resp_json() { # PORT [MORE]
	printf '{ "transport": "tcp", "port": %s, "bind": "%s", "max_conns": 2, "size": 1000, "count": 10, "iters": 1%s }' \
		"$1" "$H" "${2:-, \"stall_timeout_s\": $(tscale 30)}"
}
rconf() { # RESPONDERS... (JSON objects): with the probe "self" of RP
	local IFS=,
	printf '{ "listen_address": "%s", "listen_port": %s, "probes": [ %s ], "responders": [ %s ] }\n' \
		"$H" "$HP6" "$(probe_json self "$RP")" "$*" >"$T/resp.json"
}
RP2X=', "stall_timeout_s": 0.5'
rconf "$(resp_json "$RP")" "$(resp_json "$RP2" "$RP2X")"
run_cmd cc_resp 10 "$PROBED" --check-config -c "$T/resp.json"
assert_match "--check-config: counts the responders" \
	'resp\.json: ok, 1 probe, HTTP on 127\.0\.0\.1 port [0-9]+, 2 responders$' "$T/cc_resp.out"
# RP2 is taken when the daemon starts
start_server taker "$RP2" python3 -c '
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(4)
time.sleep(60)
' "$RP2"
bg_start rd 120 "$PROBED" -c "$T/resp.json"
scrape_hp6() { scrape "$1" "$HP6"; }
RL="responder=\"tcp:$H:$RP\""
RL2="responder=\"tcp:$H:$RP2\""
if wait_listen "$HP6" 5 rd && wait_listen "$RP" 5 rd; then
	RDPID=$(bg_child_pid rd)
	until_scraped scrape_hp6 rs1 5 'evrdma_probe_runs_total{probe="self"}' 2
	assert_eq "responder: the daemon's own probe of it is up" 1 \
		"$(val "$T/rs1.txt" 'evrdma_probe_up{probe="self"}')"
	run_cmd rs_ours 20 "$R" -T s -s "$H" -p "$RP" -S 1000 -C 10
	assert_exit "responder: our rstream client (-T s) is served" 0 "$RC" "$T/rs_ours.err"
	assert_match "... its row" '^custom +1000 +10 +1 ' "$T/rs_ours.out"
	run_cmd rs_up 20 "$UPSTREAM" -T s -s "$H" -p "$RP" -S 1000 -C 10
	assert_exit "responder: upstream's rstream client is served" 0 "$RC" "$T/rs_up.err"
	assert_match "... its row" '^custom +1000 +10 +1 ' "$T/rs_up.out"
	scrape rs2 "$HP6"
	promtool_ok "responders" "$T/rs2.txt"
	for fam in evrdma_responder_listening:gauge evrdma_responder_connections_total:counter \
		evrdma_responder_connections_finished_total:counter \
		evrdma_responder_connections_active:gauge evrdma_responder_dropped_total:counter \
		evrdma_probed_responders:gauge; do
		family_ok "family ${fam%%:*}: HELP and TYPE" "$T/rs2.txt" "${fam%%:*}" "${fam#*:}"
	done
	assert_eq "responder: listening" 1 "$(val "$T/rs2.txt" "evrdma_responder_listening{$RL}")"
	assert_eq "responder: two in the configuration" 2 "$(val "$T/rs2.txt" evrdma_probed_responders)"
	runs=$(val "$T/rs2.txt" 'evrdma_probe_runs_total{probe="self"}')
	served=$(val "$T/rs2.txt" "evrdma_responder_connections_total{$RL}")
	# the probe's runs, one connection each, and the two clients'; a
	# probe run in flight may be counted by the responder, not yet by
	# the probe
	num_ge "responder: connections served >= probe runs + 2" "$served" $((runs + 2))
	num_ge "... and not more than one in flight beyond" $((runs + 3)) "$served"
	fin=$(val "$T/rs2.txt" "evrdma_responder_connections_finished_total{$RL}")
	act=$(val "$T/rs2.txt" "evrdma_responder_connections_active{$RL}")
	assert_eq "responder: served = finished + active (none dropped)" "$served" $((fin + act))
	assert_eq "responder: nothing dropped" 0 \
		"$(grep -E "^evrdma_responder_dropped_total\{$RL," "$T/rs2.txt" | awk '{ s += $NF } END { print s + 0 }')"
	assert_eq "responder: one dropped_total series per reason" 12 \
		"$(grep -c "^evrdma_responder_dropped_total{$RL," "$T/rs2.txt")"
	assert_eq "a responder whose port is taken: not listening" 0 \
		"$(val "$T/rs2.txt" "evrdma_responder_listening{$RL2}")"
	assert_match "... logged, with the retry" \
		"responder tcp:127\\.0\\.0\\.1:$RP2: cannot listen: .*trying again every 5 s" "$T/rd.err"
	# max_conns 2: two connections held, the next ones turned away.  The
	# holder says hello as our client does and keeps only connections
	# the responder acknowledged: one that came while the daemon's own
	# probe had a slot was turned away (under valgrind that happened, and
	# the clients below found a free slot), so it tries again.  Then it
	# stays mute, for 5 s scaled (the three clients below take longer
	# than 5 s under valgrind).
	bg_start mute2 "$(tscale 20)" python3 -c '
import socket, sys, time
port, hold = int(sys.argv[1]), float(sys.argv[2])
def held():
    while True:
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"evrdma:hello:v1\n")
        r = b""
        while len(r) < 16:
            b = s.recv(16 - len(r))
            if not b:
                break
            r += b
        if r == b"evrdma:ack---v1\n":
            return s
        print("turned away: %r" % r, flush=True)
        s.close()
        time.sleep(0.2)
h = [held(), held()]
print("held 2", flush=True)
time.sleep(hold)
' "$RP" "$(tscale 5)"
	wait_match "$E2E_TMP/mute2.out" '^held 2$' 10 ||
		echo "#   the holder has not got its two connections: $(tail -3 "$E2E_TMP/mute2.out" "$E2E_TMP/mute2.err" | tr '\n' ' ')"
	until_scraped scrape_hp6 rs3 3 "evrdma_responder_connections_active{$RL}" 2
	assert_eq "responder: two connections active" 2 \
		"$(val "$T/rs3.txt" "evrdma_responder_connections_active{$RL}")"
	c0=$(val "$T/rs3.txt" "evrdma_responder_dropped_total{$RL,reason=\"conns\"}")
	for k in 1 2 3; do
		run_cmd "rs_busy$k" 10 "$R" -T s -s "$H" -p "$RP" -S 1000 -C 10
	done
	assert_exit_not "responder at max_conns: a client is turned away" 0 "$RC" "$T/rs_busy3.err"
	scrape rs4 "$HP6"
	c1=$(val "$T/rs4.txt" "evrdma_responder_dropped_total{$RL,reason=\"conns\"}")
	num_ge "responder: dropped{reason=conns} counts each one turned away (3 clients)" \
		"$((${c1:-0} - ${c0:-0}))" 3
	# (for a failure here: what the responder and the holder said)
	if [ "$((${c1:-0} - ${c0:-0}))" -lt 3 ]; then
		grep -E "^evrdma_responder_[a-z_]+\{$RL" "$T/rs3.txt" "$T/rs4.txt" | grep -v ' 0$' | sed 's/^/#   /'
		bg_alive mute2 && echo "#   the holder of the two connections is alive" ||
			echo "#   the holder of the two connections has exited"
		sed 's/^/#   holder: /' "$E2E_TMP/mute2.err" | head -5
	fi
	promtool_ok "responders, connections dropped" "$T/rs4.txt"
	bg_kill mute2
	# SIGHUP, a probe added, the responders as they were: kept, counters on
	bg_kill taker
	sleep 0.2
	s_before=$(val "$T/rs4.txt" "evrdma_responder_connections_total{$RL}")
	printf '{ "listen_address": "%s", "listen_port": %s, "probes": [ %s, %s ], "responders": [ %s, %s ] }\n' \
		"$H" "$HP6" "$(probe_json self "$RP")" "$(probe_json other "$DEAD" 5)" \
		"$(resp_json "$RP")" "$(resp_json "$RP2" "$RP2X")" >"$T/resp.json"
	kill -HUP "$RDPID"
	until_scraped scrape_hp6 rs5 3 'evrdma_probe_runs_total{probe="other"}' 1
	num_ge "SIGHUP: an unchanged responder keeps its counters" \
		"$(val "$T/rs5.txt" "evrdma_responder_connections_total{$RL}")" "$s_before"
	num_ge "... and its dropped ones" \
		"$(val "$T/rs5.txt" "evrdma_responder_dropped_total{$RL,reason=\"conns\"}")" "$c1"
	assert_match "SIGHUP: logged" 'configuration .*resp\.json: 2 responders \(0 added, 0 removed, 2 unchanged\)' "$T/rd.err"
	# the taken port was freed: within the retry interval it listens
	until_scraped scrape_hp6 rs6 8 "evrdma_responder_listening{$RL2}" 1
	assert_eq "a responder whose port was taken listens once it is free" 1 \
		"$(val "$T/rs6.txt" "evrdma_responder_listening{$RL2}")"
	assert_match "... logged" "info: responder tcp:127\\.0\\.0\\.1:$RP2: listening$" "$T/rd.err"
	# stall_timeout_s 0.5: a mute connection to it is dropped (stall)
	st0=$(val "$T/rs6.txt" "evrdma_responder_dropped_total{$RL2,reason=\"stall\"}")
	run_cmd rs_mute 20 python3 -c '
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(float(sys.argv[2]))
t = time.monotonic()
try:
    d = s.recv(1)
except socket.timeout:
    sys.exit("still open after %s s" % sys.argv[2])
except ConnectionResetError:
    pass
print("closed after %.2f s" % (time.monotonic() - t))
' "$RP2" "$(tscale 5)"
	assert_exit "a responder's stall_timeout_s 0.5: a mute connection is closed" 0 "$RC" "$T/rs_mute.err"
	num_ge "... after half a second or more" "$(awk '{ print $3 }' "$T/rs_mute.out")" 0.45
	until_scraped scrape_hp6 rs6b 3 "evrdma_responder_dropped_total{$RL2,reason=\"stall\"}" $((${st0:-0} + 1))
	num_ge "... counted, reason stall" \
		"$(val "$T/rs6b.txt" "evrdma_responder_dropped_total{$RL2,reason=\"stall\"}")" $((${st0:-0} + 1))
	# removed: the port closes, the series go, the probe is refused
	rconf "$(resp_json "$RP2" "$RP2X")"
	kill -HUP "$RDPID"
	sleep 0.5
	run_cmd rs_gone 10 "$R" -T s -s "$H" -p "$RP" -S 1000 -C 10
	assert_exit_not "a removed responder: its port is closed" 0 "$RC"
	assert_match "... refused" 'refused' "$T/rs_gone.err"
	scrape rs7 "$HP6"
	assert_eq "a removed responder: its series are gone" 0 "$(grep -c "$RL" "$T/rs7.txt")"
	assert_eq "... the other stays" 1 "$(val "$T/rs7.txt" "evrdma_responder_listening{$RL2}")"
	assert_eq "... one in the configuration" 1 "$(val "$T/rs7.txt" evrdma_probed_responders)"
	promtool_ok "a responder removed" "$T/rs7.txt"
	# added back: listening, counting afresh
	rconf "$(resp_json "$RP")" "$(resp_json "$RP2" "$RP2X")"
	kill -HUP "$RDPID"
	sleep 0.3
	run_cmd rs_back 20 "$R" -T s -s "$H" -p "$RP" -S 1000 -C 10
	assert_exit "a responder added back serves" 0 "$RC" "$T/rs_back.err"
	scrape rs8 "$HP6"
	assert_eq "... listening" 1 "$(val "$T/rs8.txt" "evrdma_responder_listening{$RL}")"
	num_ge "... its counters start afresh" "$s_before" \
		"$(val "$T/rs8.txt" "evrdma_responder_connections_total{$RL}")"
	# a bad responder on SIGHUP: rejected, the running ones stay
	printf '{ "responders": [ { "transport": "tcp" } ] }\n' >"$T/resp.json"
	kill -HUP "$RDPID"
	sleep 0.3
	scrape rs9 "$HP6"
	assert_eq "a bad responder on SIGHUP: the responders stay" 1 \
		"$(val "$T/rs9.txt" "evrdma_responder_listening{$RL}")"
	assert_match "... one error line naming it" \
		'error: reload rejected, the running configuration stays: .*resp\.json: responders\[0\]: "port" is required$' \
		"$T/rd.err"
	bg_stop rd 5
	assert_exit "responders: SIGTERM exits 0" 0 "$RC" "$T/rd.err"
	assert_le "responders: gone within a second" "$ELAPSED_MS" "$(tscale 1000)"
	assert_no_match "responders: no crash or sanitizer report" 'Assertion|Segmentation|AddressSanitizer|runtime error' "$T/rd.err"
else
	not_ok "the daemon with responders listens"
	dump "$T/rd.err"
fi
bg_kill taker
bg_kill mute2
bg_kill rd

e2e_done
