#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Both programs under valgrind memcheck: servers, clients, a fork server,
# a peer killed mid-run, negotiation, verification and mckey's UDP
# transport.  Any memcheck error or leaked block fails the test.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

if ! e2e_can_valgrind "rstream and mckey (this whole script)"; then
	if [ "$E2E_SAN" = yes ]; then
		e2e_skip_all "ASan+UBSan build: valgrind cannot run ASan binaries (the sanitizers check these runs; the normal build runs this script)"
	elif [ "$E2E_VG" = 1 ]; then
		e2e_skip_all "E2E_VALGRIND=1: every program of every script runs under memcheck already"
	else
		e2e_skip_all "valgrind is not installed"
	fi
fi
R=$RSTREAM
T=$E2E_TMP
H=127.0.0.1
VG=(valgrind --quiet --leak-check=full --show-leak-kinds=definite,indirect,possible
    --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=99
    --track-fds=no --child-silent-after-fork=no)
E2E_SERVER_SECS=300
E2E_LISTEN_SECS=30

# ---- a server serving a negotiated client, a verifying client and an
# upstream-style client, then stopped by SIGTERM
P=$(e2e_port)
if start_server srv "$P" "${VG[@]}" "$R" -T s -T a -p "$P"; then
	run_cmd c1 120 "${VG[@]}" "$R" -T s -T a -s $H -p "$P" -S 1000 -C 50 -I 4
	assert_exit "client (negotiated custom) under valgrind" 0 "$RC" "$T/c1.err"
	vg_clean "client (negotiated custom)" "$T/c1.err"
	run_cmd c2 120 "${VG[@]}" "$R" -T s -T a -T v -s $H -p "$P" -S 4096 -C 20 -I 2 --negotiate
	assert_exit "client (-T v, negotiated) under valgrind" 0 "$RC" "$T/c2.err"
	vg_clean "client (-T v)" "$T/c2.err"
	run_cmd c3 120 "${VG[@]}" "$R" -T s -T b -s $H -p "$P" -S 100 -C 1 --no-negotiate --stall-timeout 2
	# the server's own plan is the default run (64-byte transfers): 100
	# bytes each way never line up, and the watchdog ends it
	assert_exit "client (--no-negotiate, mismatched) stalls and fails" 4 "$RC" "$T/c3.err"
	vg_clean "client (--no-negotiate, mismatched)" "$T/c3.err"
	# -c: many connections side by side, sharing a buffer or verifying,
	# and interrupted mid-run
	run_cmd cc 120 "${VG[@]}" "$R" -T s -T a -s $H -p "$P" -S 1000 -C 10 -I 3 -c 20 --per-conn
	assert_exit "client -c 20 under valgrind" 0 "$RC" "$T/cc.err"
	vg_clean "client -c 20" "$T/cc.err"
	run_cmd cv 120 "${VG[@]}" "$R" -T s -T a -T v -s $H -p "$P" -S 4096 -C 10 -c 4
	assert_exit "client -c 4 -T v under valgrind" 0 "$RC" "$T/cv.err"
	vg_clean "client -c 4 -T v" "$T/cv.err"
	bg_start cint 120 "${VG[@]}" "$R" -T s -T a -s $H -p "$P" -S 64 -C 1 -I 100000000 -c 5
	wait_established "$P" 5 30
	sleep 1
	bg_stop cint 30
	assert_exit "client -c 5 under valgrind: SIGTERM exits 130" 130 "$RC" "$T/cint.err"
	vg_clean "client -c 5, SIGTERM" "$T/cint.err"
	bg_start killed 120 "${VG[@]}" "$R" -T s -s $H -p "$P" -S 100 -C 1000000
	sleep 3
	bg_kill killed
	sleep 1
	bg_stop srv 60
	assert_exit "server under valgrind: SIGTERM exits 0" 0 "$RC" "$T/srv.err"
	vg_clean "server (4 clients, one killed, SIGTERM)" "$T/srv.err"
fi

# ---- a fork server and its children
P=$(e2e_port)
if start_server fsrv "$P" "${VG[@]}" "$R" -T s -T f -p "$P" --once; then
	run_cmd fc 120 "$R" -T s -T a -s $H -p "$P" -S 2000 -C 10 -I 3
	assert_exit "client of a fork server" 0 "$RC" "$T/fc.err"
	bg_wait fsrv 60
	assert_exit "fork server under valgrind (--once)" 0 "$RC" "$T/fsrv.err"
	vg_clean "fork server and child" "$T/fsrv.err"
fi

# ---- bad input and failed connects under valgrind
run_cmd bad 60 "${VG[@]}" "$R" -T s -S 0
assert_exit "bad value under valgrind" 1 "$RC" "$T/bad.err"
vg_clean "bad value" "$T/bad.err"
P=$(e2e_port)
run_cmd refused 60 "${VG[@]}" "$R" -T s -s $H -p "$P"
assert_exit "connection refused under valgrind" 3 "$RC" "$T/refused.err"
vg_clean "connection refused" "$T/refused.err"

# ---- mckey's UDP transport, in a namespace of our own
if [ -n "${MCKEY:-}" ] && [ "$(id -u)" = 0 ] && ip netns add "evrvg$$" 2>/dev/null; then
	trap 'ip netns del evrvg$$ 2>/dev/null; e2e_cleanup' EXIT
	NS=(ip netns exec "evrvg$$")
	"${NS[@]}" ip link set lo up
	"${NS[@]}" ip link set lo multicast on
	"${NS[@]}" ip addr add 10.79.0.1/24 dev lo
	"${NS[@]}" ip route add 224.0.0.0/4 dev lo
	bg_start mr 120 "${NS[@]}" "${VG[@]}" "$MCKEY" --udp -m 239.9.9.9 -b 10.79.0.1 -c 2 --settle 0.5 --deadline 30 --stats
	sleep 3
	run_cmd ms 120 "${NS[@]}" "${VG[@]}" "$MCKEY" --udp -m 239.9.9.9 -b 10.79.0.1 -s --settle 0.5
	assert_exit "mckey UDP sender under valgrind" 0 "$RC" "$T/ms.out" "$T/ms.err"
	vg_clean "mckey UDP sender" "$T/ms.err"
	bg_wait mr 60
	assert_exit "mckey UDP receiver under valgrind" 0 "$RC" "$T/mr.out" "$T/mr.err"
	vg_clean "mckey UDP receiver" "$T/mr.err"
	run_cmd mdl 120 "${NS[@]}" "${VG[@]}" "$MCKEY" --udp -m 239.9.9.9 -b 10.79.0.1 --settle 0.2 --deadline 1
	assert_exit "mckey UDP receiver, deadline, under valgrind" 194 "$RC" "$T/mdl.err"
	vg_clean "mckey deadline" "$T/mdl.err"
	ip netns del "evrvg$$"
else
	skip "mckey under valgrind: needs root and MCKEY"
fi

e2e_done
