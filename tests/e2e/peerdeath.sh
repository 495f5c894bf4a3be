#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# A peer that dies, closes, goes silent, sends garbage or wrong data, at
# each phase: the survivor reports it in one line and never hangs; a
# server drops the connection and goes on serving.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

R=$RSTREAM
H=127.0.0.1
T=$E2E_TMP
EOFRE='(peer closed the connection|Connection reset by peer|Broken pipe)'

# ---- a client killed (SIGKILL) in the middle of the latency test
for sm in n f; do
	case $sm in n) sf="" ;; f) sf="-T f" ;; esac
	P=$(e2e_port)
	# shellcheck disable=SC2086
	start_server "kc_$sm" "$P" "$R" -T s $sf -p "$P" || continue
	bg_start "victim_$sm" 60 "$R" -T s -s $H -p "$P"
	if wait_established "$P" 1 5 && wait_traffic "$P" 16384; then
		sleep 0.4
		bg_kill "victim_$sm"
		ok "server${sf:+ $sf}: client connected, then killed with SIGKILL mid-64_lat"
	else
		not_ok "server${sf:+ $sf}: client connected"
		bg_kill "victim_$sm"
	fi
	wait_match "$T/kc_$sm.err" 'connection dropped' 5
	assert_lines "server${sf:+ $sf}: one line for the killed client" 1 "$T/kc_$sm.err"
	assert_match "server${sf:+ $sf}: 'connection dropped' names the test and progress" \
		"^rstream: connection dropped: 127\\.0\\.0\\.1:[0-9]+: test 64_lat \\(1 of 4\\), (sync|send|receive), iteration [0-9]+ of 100000, transfer 1 of 1: .*$EOFRE" \
		"$T/kc_$sm.err"
	if bg_alive "kc_$sm" && listening "$P"; then
		ok "server${sf:+ $sf}: still running and listening"
	else
		not_ok "server${sf:+ $sf}: still running and listening"
	fi
	run_cmd "next_$sm" 30 "$R" -T s -s $H -p "$P" -S 4096 -C 100 -I 10
	assert_exit "server${sf:+ $sf}: the next client completes" 0 "$RC" \
		"$T/next_$sm.err" "$T/kc_$sm.err"
	check_row "$T/next_$sm.out" custom 4k 100 10 7.8m 1 "server${sf:+ $sf}: next client"
	bg_stop "kc_$sm" 5
	assert_exit "server${sf:+ $sf}: SIGTERM exits 0" 0 "$RC"
done

# ---- a --once server whose client is killed: it stops at once, with the
# connection's failure as its status (4), not a hang
P=$(e2e_port)
if start_server once "$P" "$R" -T s -p "$P" --once; then
	bg_start ovictim 60 "$R" -T s -T a -s $H -p "$P"
	if wait_established "$P" 1 5 && wait_traffic "$P" 16384; then
		sleep 0.4
		bg_kill ovictim
		bg_wait once 5
		assert_exit "--once server, its client killed: exits 4" 4 "$RC" \
			"$T/once.out" "$T/once.err"
		assert_eq "--once server, its client killed: exited by itself" 0 "$BG_TIMED_OUT"
		assert_lines "--once server, its client killed: one line" 1 "$T/once.err"
		assert_match "--once server, its client killed: connection dropped" \
			'^rstream: connection dropped: .*test 64_lat' "$T/once.err"
	else
		not_ok "--once server: client connected"
		bg_kill ovictim
	fi
	bg_kill once
fi

# ---- a -T f server: a silent client (held by the parent until it says
# who it is) does not keep others from being served
P=$(e2e_port)
if start_server fsil "$P" "$R" -T s -T f -p "$P" --stall-timeout 2; then
	FAKE_HOLD=8 fake_start fsilent 20 silent "$P"
	wait_match "$T/fsilent.out" connected 5
	run_cmd fsil_c 30 "$R" -T s -s $H -p "$P" -S 4096 -C 100 -I 10
	assert_exit "-T f: a client is served while a silent one is connected" 0 "$RC" \
		"$T/fsil_c.err"
	if wait_match "$T/fsil.err" 'connection dropped' 5; then
		ok "-T f: the silent client is dropped"
	else
		not_ok "-T f: the silent client is dropped"
	fi
	assert_match "-T f: for the stall" \
		'^rstream: connection dropped: 127\.0\.0\.1:[0-9]+: negotiation: no progress for 2\.0 s \(stall timeout\)$' \
		"$T/fsil.err"
	run_cmd fsil_c2 30 "$R" -T s -s $H -p "$P" -S 4096 -C 100 -I 10
	assert_exit "-T f: and serves on" 0 "$RC" "$T/fsil_c2.err"
	bg_kill fsilent
	bg_stop fsil 5
	assert_exit "-T f: SIGTERM" 0 "$RC"
fi

# ---- the server killed (SIGKILL) while the client runs: exit 4, one line
for cm in n a b; do
	case $cm in n) cf="" ;; a) cf="-T a" ;; b) cf="-T b" ;; esac
	P=$(e2e_port)
	start_server "ks_$cm" "$P" "$R" -T s -p "$P" || continue
	# shellcheck disable=SC2086
	bg_start "cl_$cm" 60 "$R" -T s $cf -s $H -p "$P"
	if wait_established "$P" 1 5 && wait_traffic "$P" 16384; then
		sleep 0.4
		bg_kill "ks_$cm"
		t0=$(now_ms)
		bg_wait "cl_$cm" 15
		el=$(( $(now_ms) - t0 ))
		assert_exit "client${cf:+ $cf}: server killed mid-64_lat: exit 4" 4 "$RC" \
			"$T/cl_$cm.out" "$T/cl_$cm.err"
		assert_le "client${cf:+ $cf}: exits within 3 s of the server's death (ms)" \
			"$el" "$(tscale 3000)"
		assert_lines "client${cf:+ $cf}: one line on stderr" 1 "$T/cl_$cm.err"
		assert_match "client${cf:+ $cf}: the line names the test and how far it got" \
			"^rstream: (127\\.0\\.0\\.1:$P: )?test 64_lat \\(1 of 4\\), (sync|send|receive), iteration [0-9]+ of 100000, transfer 1 of 1: .*$EOFRE" \
			"$T/cl_$cm.err"
		assert_lines "client${cf:+ $cf}: no rows after the header" 1 "$T/cl_$cm.out"
	else
		not_ok "client${cf:+ $cf}: connected"
		bg_kill "cl_$cm"
		bg_kill "ks_$cm"
	fi
done

# The short stall timeout of the cases below: 1 s, 3 s under valgrind,
# where a program's first pass through a code path (translated by
# memcheck then) can take a second on a loaded host and be taken for a
# stall in an earlier phase than the case means.
ST=1
[ "$E2E_VG" = 1 ] && ST=3

# ---- fake clients against one server (--stall-timeout 1): each is
# dropped with one line; real clients are served meanwhile and after
P=$(e2e_port)
if start_server fs "$P" "$R" -T s -p "$P" --stall-timeout "$ST"; then
	drops=0
	expect_drop() { # DESC ERE [SECS]
		drops=$((drops + 1))
		if wait_count "$T/fs.err" 'connection dropped' "$drops" "${3:-5}"; then
			ok "fake client $1: dropped"
		else
			not_ok "fake client $1: dropped"
		fi
		assert_match "fake client $1: reason" "$2" <(sed -n "${drops}p" "$T/fs.err")
		if bg_alive fs && listening "$P"; then
			ok "fake client $1: server still listening"
		else
			not_ok "fake client $1: server still listening"
		fi
	}
	# silent: connects and sends nothing; a real client runs meanwhile
	FAKE_HOLD=8 fake_start silent 20 silent "$P"
	wait_match "$T/silent.out" connected 5
	t0=$(now_ms)
	run_cmd during 30 "$R" -T s -s $H -p "$P" -S 4096 -C 100 -I 10
	assert_exit "a real client is served while a silent one is connected" 0 "$RC" \
		"$T/during.err"
	expect_drop silent \
		'^rstream: connection dropped: 127\.0\.0\.1:[0-9]+: negotiation: no progress for '"$ST"'\.0 s \(stall timeout\)$' 5
	el=$(( $(now_ms) - t0 ))
	assert_le "fake client silent: dropped within 3 s (ms)" "$el" "$(tscale 3000)"
	bg_kill silent

	# garbage: 100000 random bytes, then silence
	FAKE_HOLD=4 fake_start garbage 20 garbage "$P"
	expect_drop garbage "^rstream: connection dropped: 127\\.0\\.0\\.1:[0-9]+: .*(stall timeout|$EOFRE|more data than)" 6
	bg_kill garbage

	# closes right after connecting
	fake_start close 20 close "$P"
	expect_drop close "^rstream: connection dropped: 127\\.0\\.0\\.1:[0-9]+: negotiation: $EOFRE"
	bg_wait close 5

	# HELLO, then closes
	fake_start hclose 20 hello-close "$P"
	expect_drop "HELLO then close" "^rstream: connection dropped: 127\\.0\\.0\\.1:[0-9]+: negotiation: .*$EOFRE"
	bg_wait hclose 5

	# HELLO, then a malformed plan
	FAKE_HOLD=3 fake_start hbad 20 hello-badplan "$P"
	expect_drop "HELLO then a malformed plan" \
		'^rstream: connection dropped: 127\.0\.0\.1:[0-9]+: negotiation: malformed plan header message$'
	bg_wait hbad 5
	assert_match "fake client HELLO then a malformed plan: got the ACK" \
		"got b'evrdma:ack---v1" "$T/hbad.out"

	# HELLO, then a plan with a zero transfer size: rejected
	FAKE_HOLD=3 fake_start hrej 20 hello-reject "$P"
	expect_drop "HELLO then a bad plan" \
		'^rstream: connection dropped: 127\.0\.0\.1:[0-9]+: negotiation: test plan rejected: '
	bg_wait hrej 5
	assert_match "fake client HELLO then a bad plan: told why (status 3, size)" \
		"^reply b'EVPR' 3$" "$T/hrej.out"

	# a whole run, then more bytes than the plan holds
	FAKE_HOLD=3 fake_start extra 20 extra "$P"
	expect_drop "sends more than its plan" \
		'^rstream: connection dropped: 127\.0\.0\.1:[0-9]+: .*peer sent more data than the test plan holds'
	bg_wait extra 5
	assert_match "fake client sends more than its plan: its run completed" \
		'^run complete$' "$T/extra.out"

	# a whole run, then silence without closing: that run passed, so
	# the server lets it go after the stall timeout without a word
	FAKE_HOLD=6 fake_start chold 20 complete-hold "$P"
	if wait_match "$T/chold.out" '^server closed$' 5; then
		ok "fake client that never closes after its run: let go"
	else
		not_ok "fake client that never closes after its run: let go"
		dump "$T/chold.out"
	fi
	wait_count "$T/fs.out" "$(row_regex custom 1000 4 1 7.8k)" 2 3
	check_row "$T/fs.out" custom 1000 4 1 7.8k 2 "server: the two scripted runs"
	bg_wait chold 5

	run_cmd after 30 "$R" -T s -s $H -p "$P" -S 1000 -C 100 -I 10
	assert_exit "the server serves a real client after all the fakes" 0 "$RC" \
		"$T/after.err"
	assert_lines "the server wrote one line per bad peer, nothing else" "$drops" \
		"$T/fs.err"
	bg_stop fs 5
	assert_exit "server with fakes: SIGTERM exits 0" 0 "$RC"
fi

# ---- a blocking server (-T b) and a silent client: bounded by the stall
# timeout too, and the next client is served
P=$(e2e_port)
if start_server fb "$P" "$R" -T s -T b -p "$P" --stall-timeout "$ST"; then
	FAKE_HOLD=6 fake_start bsilent 20 silent "$P"
	wait_match "$T/bsilent.out" connected 5
	if wait_match "$T/fb.err" 'connection dropped' 4; then
		ok "-T b server: silent client dropped"
	else
		not_ok "-T b server: silent client dropped" && dump "$T/fb.err"
	fi
	assert_match "-T b server: the reason is the stall" 'stall timeout' "$T/fb.err"
	run_cmd bnext 30 "$R" -T s -s $H -p "$P" -S 4096 -C 100 -I 10
	assert_exit "-T b server: the next client completes" 0 "$RC" "$T/bnext.err"
	bg_kill bsilent
	bg_stop fb 5
	assert_exit "-T b server: SIGTERM exits 0" 0 "$RC"
fi

# ---- fake servers against our client
fake_server_case() { # NAME MODE DESC EXIT ERE CLIENT-ARGS...
	local name=$1 mode=$2 desc=$3 want=$4 re=$5 p
	shift 5
	p=$(e2e_port)
	# shellcheck disable=SC2086 # FAKE_ARGS: words
	FAKE_HOLD=${FAKE_HOLD:-10} fake_start "srv_$name" 20 "$mode" "$p" ${FAKE_ARGS:-}
	if ! wait_listen "$p" 5 "srv_$name"; then
		not_ok "$desc: fake server listens"
		dump "$T/srv_$name.out" "$T/srv_$name.err"
		return
	fi
	run_cmd "$name" 20 "$R" -T s -s $H -p "$p" "$@"
	assert_exit "$desc: client exit $want" "$want" "$RC" "$T/$name.out" "$T/$name.err" \
		"$T/srv_$name.out"
	assert_le "$desc: client ends within ${E2E_MAXMS:-3000} ms" "$ELAPSED_MS" \
		"$(tscale "${E2E_MAXMS:-3000}")"
	if [ "$want" = 0 ]; then
		assert_empty "$desc: nothing on stderr" "$T/$name.err"
	else
		assert_lines "$desc: one line on stderr" 1 "$T/$name.err"
		assert_match "$desc: message" "$re" "$T/$name.err"
	fi
	bg_kill "srv_$name"
}

fake_server_case acl accept-close "server closes on accept" 4 \
	"^rstream: (127\\.0\\.0\\.1:[0-9]+: )?negotiation: .*$EOFRE" --stall-timeout 5
fake_server_case asil accept-silent "server accepts and never answers" 4 \
	'^rstream: (127\.0\.0\.1:[0-9]+: )?negotiation: no progress for '"$ST"'\.0 s \(stall timeout\)$' \
	--stall-timeout "$ST"
fake_server_case asilb accept-silent "-T b: server accepts and never answers" 4 \
	'stall timeout' -T b --stall-timeout "$ST"
fake_server_case ssil sync-then-silent \
	"server answers the sync as upstream's, then stops (custom)" 4 \
	'^rstream: (127\.0\.0\.1:[0-9]+: )?test custom \(1 of 1\), receive, iteration 1 of 10, transfer 1 of 100: no progress for '"$ST"'\.0 s \(stall timeout\)' \
	-S 4096 -C 100 -I 10 --stall-timeout "$ST"
fake_server_case ssild sync-then-silent \
	"server answers the sync as upstream's, then stops (default run)" 4 \
	'^rstream: (127\.0\.0\.1:[0-9]+: )?test 64_lat \(1 of 4\), receive, iteration 1 of 100000, transfer 1 of 1: no progress for '"$ST"'\.0 s \(stall timeout\)' \
	--stall-timeout "$ST"
fake_server_case ssilb sync-then-silent \
	"-T b: server answers as upstream's, then stops" 4 'stall timeout' \
	-T b -S 4096 -C 100 -I 10 --stall-timeout "$ST"
fake_server_case ssila sync-then-silent \
	"-T a: server answers as upstream's, then stops" 4 'stall timeout' \
	-T a -S 4096 -C 100 -I 10 --stall-timeout "$ST"
fake_server_case asil2 ack-then-silent \
	"server accepts the plan, then stops" 4 \
	'^rstream: (127\.0\.0\.1:[0-9]+: )?test custom \(1 of 1\), (sync|receive), .*no progress for '"$ST"'\.0 s \(stall timeout\)' \
	-S 4096 -C 100 -I 10 --stall-timeout "$ST"
fake_server_case rej reject "server rejects the plan" 4 \
	'^rstream: (127\.0\.0\.1:[0-9]+: )?negotiation: test plan rejected: transfer size zero or beyond the server.s limit$' \
	-S 4096 -C 100 -I 10 --stall-timeout 5
# wrong data for a -T v client: byte 273 of what the server sends (its
# sync is bytes 0-15, each iteration 2 x 100 bytes: iteration 2, byte 57)
# (the fake is an upstream -T v server: the clients say --no-negotiate,
# the same wire as -T v's default, without its one-line warning)
FAKE_ARGS="100 2 3 273" fake_server_case vbad verify-bad \
	"-T v: the server returns a wrong byte" 4 \
	'^rstream: (127\.0\.0\.1:[0-9]+: )?test custom \(1 of 1\), receive, iteration 2 of 3, transfer 1 of 2: data verification failed byte 273$' \
	-T v --no-negotiate -S 100 -C 2 -I 3 --stall-timeout 5
FAKE_ARGS="100 2 3 7" fake_server_case vbad0 verify-bad \
	"-T v: the server's sync is wrong" 4 \
	'^rstream: (127\.0\.0\.1:[0-9]+: )?test custom \(1 of 1\), sync, .*data verification failed byte 7$' \
	-T v --no-negotiate -S 100 -C 2 -I 3 --stall-timeout 5
FAKE_ARGS="100 2 3 999999" fake_server_case vgood verify-bad \
	"-T v: the fake server's pattern is right (control)" 0 '^$' \
	-T v --no-negotiate -S 100 -C 2 -I 3 --stall-timeout 5

e2e_done
