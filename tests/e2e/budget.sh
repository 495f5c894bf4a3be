#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# A server's memory is bounded by its own configuration, never by its
# peers (rstream.1, SERVER LIMITS): four hostile clients negotiating
# 512 MiB transfers at once are served through 1 MiB buffers (before:
# 2 GiB peak RSS); a verifying client's large transfers stream through a
# small --chunk with every byte checked; --max-conns turns connection N+1
# away at once, with one line on the server and a clear failure (exit 3)
# on the client; --max-memory refuses a plan it cannot hold, with the
# reason printed by the client (exit 4), and serves it again once memory
# is free.  The hostile clients are tests/faultpeer ($FAULTPEER) bigplan:
# they send and read back through a 1 MiB buffer of their own.  And
# evrdma-probed's responders, with an agent's budget: hostile clients are
# refused, and their memory goes back to the system once they are gone.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

FP=${FAULTPEER:-}
if [ -z "$FP" ] || [ ! -x "$FP" ]; then
	echo "budget: FAULTPEER is not set to an executable tests/faultpeer" >&2
	exit 99
fi
R=$RSTREAM
H=127.0.0.1
T=$E2E_TMP
BIG=536870912
# Under valgrind every byte the server moves is checked by memcheck:
# smaller transfers, and no footprint check (the footprint is memcheck's;
# its leak check at exit is what that run is for).
[ "$E2E_VG" = 1 ] && BIG=33554432
HWM_MAX_KB=65536

# ------------------------------- 1. four hostile 512 MiB plans at once
P=$(e2e_port)
if start_server big "$P" "$R" -T s -b $H -p "$P"; then
	SP=$(bg_child_pid big)
	hwm0=$(mem_kb "$SP" VmHWM)
	for i in 1 2 3 4; do
		bg_start "hostile$i" 300 "$FP" bigplan $H "$P" 60 "$BIG"
	done
	for i in 1 2 3 4; do
		bg_wait "hostile$i" 300
		assert_exit "hostile client $i: its plan ran to the end" 0 "$RC" \
			"$T/hostile$i.out" "$T/hostile$i.err"
		assert_match "hostile client $i: $BIG bytes echoed" \
			"^echoed $BIG bytes\$" "$T/hostile$i.out"
	done
	hwm=$(mem_kb "$SP" VmHWM)
	say "server VmHWM: $hwm0 kB before, $hwm kB after 4 x $BIG-byte plans"
	mem_le "4 x $BIG-byte plans: the server's peak RSS stays under $HWM_MAX_KB kB" \
		"$hwm" "$HWM_MAX_KB"
	# one rstream client too, as a user would ask for it
	run_cmd bigcl 300 "$R" -T s -s $H -p "$P" --negotiate -S "$BIG" -C 1 -I 1
	assert_exit "an rstream client with -S $BIG: passes" 0 "$RC" \
		"$T/bigcl.out" "$T/bigcl.err"
	assert_empty "an rstream client with -S $BIG: stderr empty" "$T/bigcl.err"
	hwm=$(mem_kb "$SP" VmHWM)
	mem_le "and the server's peak RSS still under $HWM_MAX_KB kB" \
		"$hwm" "$HWM_MAX_KB"
	bg_stop big
	assert_exit "server: stops on SIGTERM" 0 "$RC" "$T/big.err"
	assert_empty "server: no connection dropped" "$T/big.err"
fi

# ------------- 2. -T v through a small chunk: every byte checked, both ways
P=$(e2e_port)
if start_server vchunk "$P" "$R" -T s -b $H -p "$P" --chunk 4k; then
	run_cmd vneg 120 "$R" -T s -s $H -p "$P" -T v --negotiate \
		-S 1000000 -C 3 -I 4
	assert_exit "-T v --negotiate, 1000000-byte transfers through a 4k chunk" \
		0 "$RC" "$T/vneg.out" "$T/vneg.err"
	check_row "$T/vneg.out" custom 976k 3 4 22m 1 "-T v negotiated, chunked"
	run_cmd ddur 120 "$R" -T s -s $H -p "$P" -S 100000 -C 2 -D 0.3
	assert_exit "-D 0.3 with 100000-byte transfers through a 4k chunk" \
		0 "$RC" "$T/ddur.out" "$T/ddur.err"
	assert_empty "-D through a chunk: stderr empty" "$T/ddur.err"
	bg_stop vchunk
	assert_exit "chunk server: stops on SIGTERM" 0 "$RC" "$T/vchunk.err"
	assert_empty "chunk server: no connection dropped" "$T/vchunk.err"
fi
P=$(e2e_port)
# upstream's -T v wire (no plan): the server runs the same test itself
if start_server vup "$P" "$R" -T s -b $H -p "$P" --chunk 4k -S 1000000 -C 3 -I 4; then
	run_cmd vup_c 120 "$R" -T s -s $H -p "$P" -T v -S 1000000 -C 3 -I 4
	assert_exit "-T v without negotiation through a 4k chunk" 0 "$RC" \
		"$T/vup_c.out" "$T/vup_c.err"
	check_row "$T/vup_c.out" custom 976k 3 4 22m 1 "-T v upstream wire, chunked"
	bg_stop vup
	assert_empty "chunk server (own plan): no connection dropped" "$T/vup.err"
fi

# ------------------------------------------------ 3. --max-conns
P=$(e2e_port)
if start_server mc "$P" "$R" -T s -b $H -p "$P" --max-conns 2 \
	--stall-timeout "$(tscale 60)"; then
	bg_start hold 120 "$FP" hold $H "$P" 2 "$(tscale 60)"
	wait_match "$T/hold.out" "connected 2 of 2" 10
	sleep 0.3
	run_cmd over1 30 "$R" -T s -s $H -p "$P" -S 64 -C 1 -I 1
	assert_exit "connection 3 of --max-conns 2: connecting failed (exit 3)" \
		3 "$RC" "$T/over1.out" "$T/over1.err"
	assert_lines "connection 3: one line on the client, saying why" 1 \
		"$T/over1.err" "^rstream: (127\.0\.0\.1:[0-9]+: )?negotiation: connection refused: the server serves as many connections as it allows \(its --max-conns\): try again later$"
	run_cmd over2 30 "$R" -T s -s $H -p "$P" -S 64 -C 1 -I 1 --no-negotiate
	assert_exit "connection 4, upstream's wire: refused too (exit 3)" \
		3 "$RC" "$T/over2.out" "$T/over2.err"
	assert_match "connection 4: the same reason" \
		"connection refused: the server serves as many connections as it allows" \
		"$T/over2.err"
	wait_match "$T/mc.err" "max-conns" 5
	sleep 0.2
	assert_lines "server: one line for the episode, naming the limit" 1 \
		"$T/mc.err" "^rstream: connection dropped: 127\.0\.0\.1:[0-9]+: accept \(at the --max-conns limit of 2 connections: new ones are turned away until some close\): Connection refused$"
	assert_lines "server: nothing else on stderr" 1 "$T/mc.err"
	bg_kill hold
	run_cmd after 60 "$R" -T s -s $H -p "$P" -S 64 -C 1 -I 1
	assert_exit "once the held connections close, a client passes" 0 "$RC" \
		"$T/after.out" "$T/after.err"
	bg_stop mc
	assert_exit "max-conns server: stops on SIGTERM" 0 "$RC" "$T/mc.err"
fi

# -T f: a child serves each connection, and counts against the limit
P=$(e2e_port)
if start_server mcf "$P" "$R" -T s -T f -b $H -p "$P" --max-conns 1 \
	--stall-timeout "$(tscale 60)"; then
	bg_start fhalf 120 "$FP" half $H "$P" "$(tscale 60)"
	wait_match "$T/fhalf.out" "sent half a message" 10
	run_cmd fover 30 "$R" -T s -s $H -p "$P" -S 64 -C 1 -I 1
	assert_exit "-T f --max-conns 1, a child serving: the next is refused (exit 3)" \
		3 "$RC" "$T/fover.out" "$T/fover.err"
	assert_match "-T f: the client says why" "connection refused: .*--max-conns" \
		"$T/fover.err"
	SP=$(bg_child_pid mcf)
	bg_kill fhalf
	# the child ends and is reaped (bounded wait)
	end=$(( $(now_ms) + $(tscale 10) * 1000 ))
	while [ -n "$(ps -o pid= --ppid "$SP")" ] && [ "$(now_ms)" -lt "$end" ]; do
		sleep 0.05
	done
	sleep 0.1
	run_cmd fafter 60 "$R" -T s -s $H -p "$P" -S 64 -C 1 -I 1
	assert_exit "-T f: once the child is done, a client passes" 0 "$RC" \
		"$T/fafter.out" "$T/fafter.err"
	bg_stop mcf
	assert_exit "-T f max-conns server: stops on SIGTERM" 0 "$RC" "$T/mcf.err"
fi

# ------------------------------------------------ 4. --max-memory
P=$(e2e_port)
if start_server mm "$P" "$R" -T s -b $H -p "$P" --max-memory 100k \
	--stall-timeout "$(tscale 60)"; then
	run_cmd mm_big 30 "$R" -T s -s $H -p "$P" -S 200k -C 1 -I 1
	assert_exit "a plan beyond --max-memory: refused (exit 4)" 4 "$RC" \
		"$T/mm_big.out" "$T/mm_big.err"
	assert_lines "the client prints the reason" 1 "$T/mm_big.err" \
		"^rstream: (127\.0\.0\.1:[0-9]+: )?negotiation: test plan rejected: the server's memory budget for connection buffers is taken \(its --max-memory\): try again later or with fewer connections$"
	run_cmd mm_ok 30 "$R" -T s -s $H -p "$P" -S 64k -C 1 -I 1
	assert_exit "a plan within --max-memory passes" 0 "$RC" \
		"$T/mm_ok.out" "$T/mm_ok.err"
	# the budget is shared: a peer holding 100000 bytes leaves no room
	bg_start half 120 "$FP" half $H "$P" "$(tscale 60)"
	wait_match "$T/half.out" "sent half a message" 10
	run_cmd mm_full 30 "$R" -T s -s $H -p "$P" -S 64k -C 1 -I 1
	assert_exit "the same plan while another peer holds the budget: refused" \
		4 "$RC" "$T/mm_full.out" "$T/mm_full.err"
	assert_match "... with the reason" "memory budget.*--max-memory" \
		"$T/mm_full.err"
	bg_kill half
	wait_match "$T/mm.err" "connection dropped" 10
	run_cmd mm_again 30 "$R" -T s -s $H -p "$P" -S 64k -C 1 -I 1
	assert_exit "the memory is back once that peer is gone: passes" 0 \
		"$RC" "$T/mm_again.out" "$T/mm_again.err"
	bg_stop mm
	assert_exit "max-memory server: stops on SIGTERM" 0 "$RC" "$T/mm.err"
	# one line per refused plan (the operator sees the budget at work)
	# and one for the peer that vanished
	assert_lines "server: a line for each plan refused, naming the budget" 2 \
		"$T/mm.err" "^rstream: connection dropped: 127\.0\.0\.1:[0-9]+: negotiation: test plan rejected: the server's memory budget for connection buffers is taken \(its --max-memory\)"
	assert_lines "server: and one for the peer that vanished, nothing else" 3 "$T/mm.err"
fi

# ------------------------------------------------ 5. bad values
for a in "--max-conns 0" "--max-conns 100001" "--max-memory 1023" \
	"--max-memory 2t" "--chunk 1000" "--chunk 2g" "--max-conns x"; do
	# shellcheck disable=SC2086
	run_cmd badv 10 "$R" -T s $a
	assert_exit "$a: a bad value (exit 1)" 1 "$RC" "$T/badv.err"
	assert_lines "$a: one line naming the option" 1 "$T/badv.err" \
		"^rstream: invalid value '[^']*' for ${a%% *}: must be "
done
run_cmd cliopt 10 "$R" -T s -s $H -p 9 --max-memory 1m
assert_exit "--max-memory on a client: exit 1" 1 "$RC" "$T/cliopt.err"
assert_lines "... one line saying it is a server option" 1 "$T/cliopt.err" \
	"^rstream: --max-memory is a server option \(use it without -s\)$"

# ------------------------------- 6. evrdma-probed's responders: an agent's
# A responder's memory is its agent's (evrdma-probed.8, responders):
# by default 32 MiB of buffers and 1024 connections, where rstream's
# server has 1 GiB and 16384 (before: one client with -c 200 -S 1m took
# the responder to 212 MB, -c 1000 to 1 GB, of which 745 MB stayed).
# Two rounds, as the first one frees big blocks that raise glibc's mmap
# threshold: 200 connections of 1 MiB messages, all at once, refused the
# rstream protocol's way (the plan rejected for the budget: exit 4, the
# reason printed, counted as dropped{reason="budget"}), the peak within
# the budget plus 16 MiB, and the RSS back within 2 MiB of idle once
# they are gone; then 20, and 48, of them served by a responder whose
# budget (64 MiB) lets them in, its memory returned as well (before: the
# second round's 48 MiB, or some of it, stayed in glibc's heap); then a
# client is served as before.  Under valgrind and ASan the RSS figures
# are theirs (their own allocator; ASan's quarantine holds what is
# freed): the RSS assertions are skipped there (the functional ones run).
if [ -n "${PROBED:-}" ] && [ -x "$PROBED" ] && command -v curl >/dev/null; then
	RP=$(e2e_port)
	RP2=$(e2e_port)
	HP=$(e2e_port)
	MC=10
	[ "$E2E_VG" = 1 ] && MC=1
	printf '{ "listen_address": "%s", "listen_port": %s, "responders": [
  { "transport": "tcp", "port": %s, "bind": "%s", "stall_timeout_s": %s },
  { "transport": "tcp", "port": %s, "bind": "%s", "stall_timeout_s": %s,
    "max_memory": 67108864 } ] }\n' "$H" "$HP" "$RP" "$H" "$(tscale 10)" \
		"$RP2" "$H" "$(tscale 10)" >"$T/resp.json"
	rss_le() { # DESC A B
		if [ "$E2E_VG" = 1 ] || [ "$E2E_SAN" = yes ]; then
			skip "$1: under valgrind or ASan the footprint is theirs"
		else
			assert_le "$@"
		fi
	}
	metric() { # SERIES: its value on /metrics, "" when absent
		curl -s --max-time "$(tscale 2)" "http://$H:$HP/metrics" |
			awk -v s="$1" 'index($0, s " ") == 1 { print $NF; exit }'
	}
	idle_wait() { # PORT: until the responder serves no connection (10 s)
		local end=$(( $(now_ms) + $(tscale 10) * 1000 ))
		while [ "$(metric "evrdma_responder_connections_active{responder=\"tcp:$H:$1\"}")" != 0 ] &&
			[ "$(now_ms)" -lt "$end" ]; do
			sleep 0.1
		done
		sleep 1 # the engine frees them from the loop; the trim comes 0.5 s later
	}
	bg_start probed 300 "$PROBED" -c "$T/resp.json"
	if wait_listen "$RP" 10 probed && wait_listen "$RP2" 10 probed &&
		wait_listen "$HP" 10 probed; then
		DP=$(bg_child_pid probed)
		sleep 0.5
		idle=$(mem_kb "$DP" VmRSS)
		say "responder: idle VmRSS $idle kB"
		for k in 1 2; do
			run_cmd "rhost$k" 120 "$R" -T s -s $H -p "$RP" -c 200 -S 1m \
				-C "$MC" -I 1 --all-at-once
			assert_exit "responder, round $k: 200 x 1 MiB at once, beyond its budget: refused (exit 4)" \
				4 "$RC" "$T/rhost$k.out" "$T/rhost$k.err"
			assert_match "... the client says why" \
				"test plan rejected: the server's memory budget for connection buffers is taken" \
				"$T/rhost$k.err"
			hwm=$(mem_kb "$DP" VmHWM)
			idle_wait "$RP"
			after=$(mem_kb "$DP" VmRSS)
			say "responder, round $k: VmHWM $hwm kB, VmRSS after $after kB (idle $idle kB)"
			rss_le "responder, round $k: peak RSS within its 32 MiB budget + 16 MiB of idle" \
				"$hwm" $((idle + 49152))
			rss_le "responder, round $k: RSS back within 2 MiB of idle once they are gone" \
				"$after" $((idle + 2048))
		done
		v=$(metric "evrdma_responder_dropped_total{responder=\"tcp:$H:$RP\",reason=\"budget\"}")
		assert_le "responder: the refused plans counted, dropped_total{reason=\"budget\"} >= 2" \
			2 "${v:-0}"
		for k in 20 48; do
			run_cmd "rbig$k" 120 "$R" -T s -s $H -p "$RP2" -c $k -S 1m \
				-C "$MC" -I 1 --all-at-once
			assert_exit "responder with max_memory 64 MiB: $k x 1 MiB at once served" \
				0 "$RC" "$T/rbig$k.out" "$T/rbig$k.err"
			hwm=$(mem_kb "$DP" VmHWM)
			idle_wait "$RP2"
			after=$(mem_kb "$DP" VmRSS)
			say "responder (64 MiB), -c $k: VmHWM $hwm kB, VmRSS after $after kB (idle $idle kB)"
			rss_le "responder (64 MiB), -c $k: peak RSS within its budget + 16 MiB of idle" \
				"$hwm" $((idle + 65536 + 16384))
			rss_le "responder (64 MiB), -c $k: RSS back within 2 MiB of idle" \
				"$after" $((idle + 2048))
		done
		run_cmd rafter 60 "$R" -T s -s $H -p "$RP" -S 1000 -C 10 -I 1
		assert_exit "responder: a client is served afterwards" 0 "$RC" \
			"$T/rafter.out" "$T/rafter.err"
		assert_match "... its row" '^custom +1000 +10 +1 ' "$T/rafter.out"
	else
		not_ok "evrdma-probed listens with its responders" "$(head -3 "$T/probed.err")"
	fi
	bg_stop probed
	assert_exit "evrdma-probed: stops on SIGTERM" 0 "$RC" "$T/probed.err"
else
	skip "responders: PROBED (evrdma-probed) or curl missing"
fi

san_check
e2e_done
