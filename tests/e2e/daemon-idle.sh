#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# evrdma-probed idle, on 127.0.0.1: one probe every 60 s of an rstream
# server, a mute client holding an HTTP connection open: /metrics
# answers, and the daemon uses no CPU for 3 s (at most 2 clock ticks);
# --syslog keeps the lines on stderr; SIGINT exits 0 within a second.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"
# shellcheck source=daemon-lib.sh
. "$(dirname "$0")/daemon-lib.sh"

port SP            # the rstream server
start_server srv "$SP" "$R" -T s -T a -p "$SP"

# --------------------------------------------------- idle: no CPU at all

port HP2
printf '{ "listen_address": "%s", "listen_port": %s, "probes": [ %s ] }\n' \
	"$H" "$HP2" "$(probe_json slow "$SP" 60)" >"$T/idle.json"
# --syslog as well: stderr keeps its lines (whether a syslog daemon is
# there or not)
bg_start idle 60 "$PROBED" --syslog -c "$T/idle.json"
if wait_listen "$HP2" 5 idle; then
	IPID=$(bg_child_pid idle)
	# a client that connects and says nothing, held open meanwhile
	bg_start mute 20 python3 -c '
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
time.sleep(6)
' "$HP2"
	sleep 0.5
	scrape i1 "$HP2"
	meta_ok "idle: /metrics answers while a mute client holds a connection" i1
	c0=$(cpu_ticks "$IPID")
	sleep 3
	c1=$(cpu_ticks "$IPID")
	assert_le "idle for 3 s (one mute connection open): at most 2 clock ticks of CPU" "$((c1 - c0))" 2
	bg_kill mute
	bg_stop idle 5 INT
	assert_exit "idle daemon: SIGINT exits 0" 0 "$RC" "$T/idle.err"
	assert_le "SIGINT: gone within a second" "$ELAPSED_MS" "$(tscale 1000)"
	assert_match "SIGINT: logged" '^evrdma-probed: info: SIGINT: stopping$' "$T/idle.err"
else
	not_ok "idle daemon listens"
	dump "$T/idle.err"
fi

e2e_done
