#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Interoperation with upstream rstream (rdma-core's, /usr/bin/rstream):
# upstream's client against our server and ours against upstream's server,
# for the default run, a custom test, -T v, -T a / -T b; our client with
# --no-negotiate against ours; options that do not match (and the case
# nobody can detect); a verifying client's warning when it does not send
# its custom plan, and --negotiate making a plain server run that plan.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

R=$RSTREAM
U=$UPSTREAM
H=127.0.0.1
T=$E2E_TMP

[ -x "$U" ] || e2e_skip_all "upstream rstream ($U) is not installed"

# The default runs (the default test series) here have one end sleep
# (our -T a, or upstream's -T b) and the other in upstream's default
# non-blocking mode: the wire is the same in every mode, and two spinning
# ends on a busy 2-core host make 64_lat's 100000 round trips crawl (over
# 240 s measured with a VM running beside).  basic.sh runs the default
# run with both ends spinning.
CUS=(-S 1000 -C 100 -I 10)
# What a verifying client with a custom plan says when it does not send it
WARN_RE='^rstream: warning: -T v sends no test plan \(upstream.s wire\): the server must run the same test \(started with the same -S/-C/-I\), or, for an evrdma server, add --negotiate$'
CUS_ROW=(custom 1000 100 10 1.9m)

# A client run against a server that serves exactly this run and exits:
# both exit 0 and print the expected rows.
#   pair NAME KIND SERVER-CMD... -- CLIENT-CMD...   (KIND: default|custom)
pair() {
	local name=$1 kind=$2 scmd=() ccmd=() p
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		scmd+=("$1")
		shift
	done
	shift
	ccmd=("$@")
	p=$(e2e_port)
	if ! start_server "${name}_s" "$p" "${scmd[@]}" -p "$p"; then
		return
	fi
	run_cmd "${name}_c" "$E2E_RUN_SECS" "${ccmd[@]}" -s "${PAIR_HOST:-$H}" -p "$p"
	assert_exit "$name: client exit 0" 0 "$RC" "$T/${name}_c.out" "$T/${name}_c.err" \
		"$T/${name}_s.err"
	[ "$kind" = default ] && say "$name: took $ELAPSED_MS ms"
	bg_wait "${name}_s" 10
	assert_exit "$name: server exits 0 after the run" 0 "$RC" "$T/${name}_s.out" \
		"$T/${name}_s.err"
	if [ "$kind" = default ]; then
		check_default_table "$T/${name}_c.out" 1 "$name: client"
		check_default_table "$T/${name}_s.out" 1 "$name: server"
	else
		check_header "$T/${name}_c.out" 1 "$name: client"
		check_row "$T/${name}_c.out" "${CUS_ROW[@]}" 1 "$name: client"
		check_header "$T/${name}_s.out" 1 "$name: server"
		check_row "$T/${name}_s.out" "${CUS_ROW[@]}" 1 "$name: server"
	fi
	if [ -n "${PAIR_WARN:-}" ]; then
		# a verifying custom client that keeps upstream's wire says
		# so, once, and nothing else
		assert_lines "$name: client stderr: the plan warning only" 1 "$T/${name}_c.err"
		assert_match "$name: client stderr: the plan warning" \
			"$WARN_RE" "$T/${name}_c.err"
	else
		assert_empty "$name: client stderr empty" "$T/${name}_c.err"
	fi
	assert_empty "$name: server stderr empty" "$T/${name}_s.err"
}

# ---- upstream client, our server (ours with --once exits like upstream's)
# (the plain default run: see the sequence below)
pair up2ours_cus custom "$R" -T s "${CUS[@]}" --once -- "$U" -T s "${CUS[@]}"
# -T v default run into a fork server: the verify counter follows the
# client's across the two children (and the parent knows which is which)
pair up2ours_vdef default "$R" -T s -T f -T a --once -- "$U" -T s -T v -T b
pair up2ours_vcus custom "$R" -T s -T v "${CUS[@]}" --once -- "$U" -T s -T v "${CUS[@]}"
pair up2ours_a_b custom "$R" -T s -T b "${CUS[@]}" --once -- "$U" -T s -T a "${CUS[@]}"
pair up2ours_b_a custom "$R" -T s -T a "${CUS[@]}" --once -- "$U" -T s -T b "${CUS[@]}"
pair up2ours_ab_v custom "$R" -T s -T a -T v "${CUS[@]}" --once -- \
	"$U" -T s -T a -T b -T v "${CUS[@]}"

# ---- upstream clients one after another on one plain server: the server
# tells an upstream client's latency connection from its bandwidth one by
# its address; a client that dies starts its address over
P=$(e2e_port)
if start_server seq_s "$P" "$R" -T s -T a -p "$P"; then
	run_cmd seq_1 "$E2E_RUN_SECS" "$U" -T s -s $H -p "$P"
	assert_exit "plain server, upstream default run 1" 0 "$RC" "$T/seq_1.err"
	say "upstream default run against our server took $ELAPSED_MS ms"
	check_default_table "$T/seq_1.out" 1 "upstream default run 1"
	wait_count "$T/seq_s.out" "$E2E_ANY_ROW" 8 3
	check_default_table "$T/seq_s.out" 1 "our server, upstream default run 1"
	assert_empty "our server, upstream default run 1: stderr empty" "$T/seq_s.err"
	bg_start seq_k 60 "$U" -T s -T b -s $H -p "$P"
	if wait_established "$P" 1 5; then
		sleep 0.4
		bg_kill seq_k
	else
		not_ok "upstream client to be killed: connected"
		bg_kill seq_k
	fi
	wait_match "$T/seq_s.err" 'connection dropped' 5
	assert_lines "plain server: the killed upstream client is dropped" 1 \
		"$T/seq_s.err" '^rstream: connection dropped: .*test 64_lat'
	run_cmd seq_2 "$E2E_RUN_SECS" "$U" -T s -T b -s $H -p "$P"
	assert_exit "plain server, upstream default run 2 (after a killed one)" 0 "$RC" \
		"$T/seq_2.err" "$T/seq_s.err"
	check_default_table "$T/seq_2.out" 1 "upstream default run 2"
	wait_count "$T/seq_s.out" "$E2E_ANY_ROW" 16 3
	check_default_table "$T/seq_s.out" 2 "plain server after two upstream runs"
	assert_lines "plain server: nothing else dropped" 1 "$T/seq_s.err"
	bg_stop seq_s 5
	assert_exit "plain server: SIGTERM" 0 "$RC"
fi

# ---- our client, upstream server (it serves one run and exits)
pair ours2up_def default "$U" -T s -- "$R" -T s -T a
pair ours2up_cus custom "$U" -T s "${CUS[@]}" -- "$R" -T s "${CUS[@]}"
pair ours2up_vdef default "$U" -T s -T v -T b -- "$R" -T s -T v -T a
PAIR_WARN=1 pair ours2up_vcus custom "$U" -T s -T v "${CUS[@]}" -- "$R" -T s -T v "${CUS[@]}"
pair ours2up_a_b custom "$U" -T s -T b "${CUS[@]}" -- "$R" -T s -T a "${CUS[@]}"
pair ours2up_b_a custom "$U" -T s -T a "${CUS[@]}" -- "$R" -T s -T b "${CUS[@]}"
PAIR_WARN=1 pair ours2up_ab_v custom "$U" -T s -T b -T v "${CUS[@]}" -- \
	"$R" -T s -T a -T b -T v "${CUS[@]}"

# ---- IPv6 (::1), both ways
P6=$(e2e_port)
if start_server v6_s "$P6" "$R" -T s -f ipv6 -b ::1 -p "$P6" "${CUS[@]}" --once; then
	run_cmd v6_c 30 "$U" -T s -f ipv6 -s ::1 -p "$P6" "${CUS[@]}"
	assert_exit "IPv6: upstream client, our server on ::1" 0 "$RC" "$T/v6_c.err"
	check_row "$T/v6_c.out" "${CUS_ROW[@]}" 1 "IPv6: upstream client"
	bg_wait v6_s 5
	assert_exit "IPv6: our --once server" 0 "$RC" "$T/v6_s.err"
	check_row "$T/v6_s.out" "${CUS_ROW[@]}" 1 "IPv6: our server"
fi
PAIR_HOST=::1 pair v6_ours2up custom "$U" -T s -b ::1 "${CUS[@]}" -- \
	"$R" -T s -f ipv6 "${CUS[@]}"

# ---- our client with --no-negotiate: exactly upstream's wire, to ours
pair nn_def default "$R" -T s -T a --once -- "$R" -T s -T a --no-negotiate
pair nn_cus custom "$R" -T s "${CUS[@]}" --once -- "$R" -T s --no-negotiate "${CUS[@]}"

# ---- options that do not match: our custom client, upstream's default
# server.  Upstream cannot tell; ours must fail in bounded time with one
# clear line, never hang.
P=$(e2e_port)
if start_server mm_s "$P" "$U" -T s -p "$P"; then
	run_cmd mm_c 20 "$R" -T s -s $H -p "$P" "${CUS[@]}" --stall-timeout 2
	say "mismatch: our client: exit $RC after $ELAPSED_MS ms: $(cat "$T/mm_c.err")"
	assert_exit_not "mismatch: our client fails" 0 "$RC" "$T/mm_c.out" "$T/mm_c.err"
	assert_exit "mismatch: our client exits 4 (a test failed)" 4 "$RC" "$T/mm_c.err"
	assert_le "mismatch: within the stall timeout, give or take (ms)" "$ELAPSED_MS" "$(tscale 5000)"
	assert_lines "mismatch: one line on stderr" 1 "$T/mm_c.err"
	assert_match "mismatch: the line names the test, the stall and the likely cause" \
		'^rstream: .*test custom \(1 of 1\), .*stall timeout.*same test options' \
		"$T/mm_c.err"
	assert_lines "mismatch: no row printed" 0 "$T/mm_c.out" "$E2E_ANY_ROW"
	bg_kill mm_s # upstream's server spins on forever after this
fi
# rstream(1)'s own example, both ends ours: -S 1000 -C 100 -I 10
# --no-negotiate against a default server whose stall timeout ends first:
# the client sees the server close (or reset) mid-test, and still asks
# whether both run the same test options (it said only "peer closed")
P=$(e2e_port)
if start_server mm3_s "$P" "$R" -T s -p "$P" --stall-timeout 1; then
	run_cmd mm3_c 20 "$R" -T s -s $H -p "$P" -S 1000 -C 100 -I 10 --no-negotiate
	assert_exit "mismatch, the server's timeout first: our client exits 4" 4 "$RC" "$T/mm3_c.err"
	assert_le "mismatch, the server's timeout first: within it, give or take (ms)" \
		"$ELAPSED_MS" "$(tscale 5000)"
	assert_lines "mismatch, the server's timeout first: one line, with the hint" 1 "$T/mm3_c.err" \
		'^rstream: .*test custom \(1 of 1\), .*(peer closed the connection|reset by peer).* \(do both sides run the same test options\?\)$'
	bg_kill mm3_s
fi
# and the other way round: upstream's custom client, our plain server
# (which has no way to learn upstream's options): the server drops the
# connection in bounded time and serves on
P=$(e2e_port)
if start_server mm2_s "$P" "$R" -T s -p "$P" --stall-timeout 2; then
	bg_start mm2_c 30 "$U" -T s -s $H -p "$P" "${CUS[@]}"
	if wait_match "$T/mm2_s.err" 'connection dropped' 8; then
		ok "mismatch, upstream client: our server drops the connection"
	else
		not_ok "mismatch, upstream client: our server drops the connection"
	fi
	assert_match "mismatch, upstream client: the reason" \
		'^rstream: connection dropped: 127\.0\.0\.1:[0-9]+: test 64_lat .*(stall timeout|peer closed|more data)' \
		"$T/mm2_s.err"
	bg_kill mm2_c # upstream's client may spin on
	run_cmd mm2_next 30 "$R" -T s -s $H -p "$P" -S 100 -C 10
	assert_exit "mismatch, upstream client: our server serves on" 0 "$RC" \
		"$T/mm2_next.err"
	bg_stop mm2_s 5
	assert_exit "mismatch, upstream client: our server SIGTERM" 0 "$RC"
fi

# ---- verifying clients and the plan: a -T v client keeps upstream's wire
# (its pattern covers the first sync, where the plan's greeting would go),
# so with a custom plan it says, in one line, that the server must run the
# same test or be told with --negotiate; with --negotiate a plain evrdma
# server runs the client's plan (a plan it did not run before: 64-byte
# series, a dropped connection, or a 10 s stall with -S 1000).
DEAD=$(e2e_port)
warn_case() { # NAME WANT(0|1) ARGS...: the line before connecting, or not
	local n=$1 want=$2
	shift 2
	run_cmd "w_$n" 20 "$R" -T s -s $H -p "$DEAD" "$@"
	assert_exit "warning, $n: nothing listens (exit 3)" 3 "$RC" "$T/w_$n.err"
	assert_lines "warning, $n: $want warning line(s)" "$want" "$T/w_$n.err" '^rstream: warning:'
	[ "$want" = 1 ] && assert_match "warning, $n: the text" "$WARN_RE" "$T/w_$n.err"
}
warn_case readme 1 -S 4096 -C 100 -I 10 -T v
warn_case size_only 1 -T v -S 1000
warn_case count_only 1 -T v -C 5
warn_case iters_only 1 -I 5 -T v
warn_case size_all 1 -S all -T v
warn_case default_run 0 -T v
warn_case negotiate 0 -S 4096 -C 100 -I 10 -T v --negotiate
warn_case no_verify 0 -S 4096 -C 100 -I 10
warn_case no_verify_all 0 -S all
warn_case no_negotiate 0 -S 4096 -C 100 -I 10 -T v --no-negotiate
warn_case conns 0 -S 4096 -C 100 -I 10 -T v -c 2
warn_case json 1 -S 4096 -C 100 -I 10 -T v --json

P=$(e2e_port)
if start_server vn_s "$P" "$R" -T s -T a -p "$P" --stall-timeout 2; then
	# a custom -T v client without --negotiate (an example the README
	# once showed; doc/usage.md now shows it with --negotiate): the
	# warning, once
	run_cmd vn_readme 30 "$R" -T s -s $H -p "$P" -S 4096 -C 100 -I 10 -T v
	assert_lines "-T v custom test without --negotiate: stderr is the warning" 1 "$T/vn_readme.err"
	assert_match "... the warning" "$WARN_RE" "$T/vn_readme.err"
	wait_match "$T/vn_s.err" 'connection dropped' 3
	# with --negotiate: the server runs the client's plan, verified
	n0=$(grep -c . "$T/vn_s.out")
	run_cmd vn_neg 30 "$R" -T s -s $H -p "$P" -S 4096 -C 100 -I 10 -T v --negotiate
	assert_exit "-T v --negotiate, 4096 x 100 x 10: exit 0" 0 "$RC" "$T/vn_neg.err" "$T/vn_s.err"
	assert_empty "-T v --negotiate: no warning" "$T/vn_neg.err"
	check_row "$T/vn_neg.out" custom 4k 100 10 7.8m 1 "-T v --negotiate: client"
	run_cmd vn_neg1000 30 "$R" -T s -s $H -p "$P" -S 1000 -C 100 -I 10 -T v --negotiate
	assert_exit "-T v --negotiate, 1000 x 100 x 10: exit 0" 0 "$RC" "$T/vn_neg1000.err" "$T/vn_s.err"
	assert_le "... no stall: well within the 2 s stall timeout (ms)" "$ELAPSED_MS" "$(tscale 1500)"
	check_row "$T/vn_neg1000.out" "${CUS_ROW[@]}" 1 "-T v --negotiate 1000: client"
	sleep 0.2
	tail -n +"$((n0 + 1))" "$T/vn_s.out" >"$T/vn_s.after"
	check_row "$T/vn_s.after" custom 4k 100 10 7.8m 1 "-T v --negotiate: the server ran the client's plan"
	check_row "$T/vn_s.after" "${CUS_ROW[@]}" 1 "-T v --negotiate 1000: the server ran the client's plan"
	assert_lines "-T v --negotiate: the server ran nothing else" 2 "$T/vn_s.after" "$E2E_ANY_ROW"
	assert_lines "-T v --negotiate: the server dropped nothing (only the un-negotiated run)" 1 \
		"$T/vn_s.err" 'connection dropped'
	bg_stop vn_s 5
fi

# ---- what cannot be detected: a client that does not send its plan (here
# to an upstream server, which cannot take one) and a server with other
# options.  A 4 KiB custom test against upstream's default server moves
# 409600 bytes an iteration, which that server takes as 6400 of its 64-byte
# round trips: the client's run completes, exit 0, for ours as for
# upstream's own client (rstream.1, PLAN NEGOTIATION).  The -S 1000 case
# above ("mismatch") is the one that shows.
for who in ours upstream; do
	P=$(e2e_port)
	if start_server "ud_$who" "$P" "$U" -T s -T b -p "$P"; then
		if [ "$who" = ours ]; then
			run_cmd "ud_c_$who" 30 "$R" -T s -s $H -p "$P" -S 4096 -C 100 -I 10 --stall-timeout 2
		else
			run_cmd "ud_c_$who" 30 "$U" -T s -s $H -p "$P" -S 4096 -C 100 -I 10
		fi
		assert_exit "undetectable mismatch, $who client: exit 0 (as documented)" 0 "$RC" "$T/ud_c_$who.err"
		check_row "$T/ud_c_$who.out" custom 4k 100 10 7.8m 1 "undetectable mismatch, $who client"
		bg_kill "ud_$who" # upstream's server waits on, mid-series
	fi
done

e2e_done
