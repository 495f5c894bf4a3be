#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# rstream -c N: 1, 2, 100 and 1000 connections from one client against one
# server; aggregate rows and their bytes, --per-conn rows, the server's
# rows, a default run's two series, a connection failing mid-run (one
# line naming it, the others cancelled), SIGTERM, and RLIMIT_NOFILE:
# raised when the hard limit allows, a clear error when it does not.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

R=$RSTREAM
H=127.0.0.1
T=$E2E_TMP
C="-T s -s $H"

# rows of FILE that name a connection (test#K)
per_conn_rows() { grep -Ec '^[^ #]+#[0-9]+ ' "$1"; }

# the server starts with a soft limit far too low for 1000 connections:
# it raises it to the hard limit itself.  Under valgrind (E2E_VALGRIND=1)
# a program cannot raise RLIMIT_NOFILE past what it started with
# (valgrind keeps its own fds just under that limit and refuses the
# raise): there the server starts with the shell's limit, and the limit
# checks are skipped, loudly.
LOWFD=(bash -c 'ulimit -Sn 64 && exec "$0" "$@"')
VG_FDS="under valgrind a program cannot raise RLIMIT_NOFILE past the limit it started with (valgrind's own fds sit just under it); the normal and ASan builds run it"
if [ "$E2E_VG" = 1 ]; then
	skip "the server started with a soft fd limit of 64: $VG_FDS"
	LOWFD=()
fi
P=$(e2e_port)
if ! start_server srv "$P" ${LOWFD[@]+"${LOWFD[@]}"} "$R" -T s -T a -p "$P"; then
	e2e_done
fi
srvpid=$(bg_child_pid srv)
srvrows=0

# ---- -c 1: exactly the table without -c
run_cmd plain 60 "$R" $C -p "$P" -S 64 -C 10
run_cmd c1 60 "$R" $C -p "$P" -S 64 -C 10 -c 1 --per-conn
assert_exit "-c 1" 0 "$RC" "$T/c1.err"
assert_empty "-c 1: stderr empty" "$T/c1.err"
check_header "$T/c1.out" 1 "-c 1"
check_row "$T/c1.out" custom 64 10 1 1.2k 1 "-c 1"
assert_lines "-c 1: header and one row, nothing else" 2 "$T/c1.out"
assert_eq "-c 1: the same lines as without -c (times aside)" \
	"$(cut -c1-42 "$T/plain.out")" "$(cut -c1-42 "$T/c1.out")"
srvrows=$((srvrows + 2))

# ---- -c 2: one aggregate row, bytes summed
run_cmd c2 60 "$R" $C -p "$P" -S 64 -C 10 -c 2
assert_exit "-c 2" 0 "$RC" "$T/c2.err"
assert_empty "-c 2: stderr empty" "$T/c2.err"
check_header "$T/c2.out" 1 "-c 2"
check_row "$T/c2.out" custom 64 10 1 2.5k 1 "-c 2: aggregate of 2 x 1280 bytes"
assert_lines "-c 2: header and one row" 2 "$T/c2.out"
srvrows=$((srvrows + 2))

# ---- -c 100 --per-conn: 100 rows named custom#1..custom#100, then the
# aggregate, whose bytes are their sum (100 x 1280 = 125k)
run_cmd c100 60 "$R" $C -p "$P" -S 64 -C 10 -c 100 --per-conn
assert_exit "-c 100 --per-conn" 0 "$RC" "$T/c100.err"
assert_empty "-c 100: stderr empty" "$T/c100.err"
check_row "$T/c100.out" custom 64 10 1 125k 1 "-c 100: aggregate"
assert_eq "-c 100: 100 rows of one connection each" 100 "$(per_conn_rows "$T/c100.out")"
assert_eq "-c 100: connections 1 to 100, each once" "$(seq 1 100 | tr '\n' ' ')" \
	"$(grep -Eo '^custom#[0-9]+' "$T/c100.out" | cut -d'#' -f2 | sort -n | tr '\n' ' ')"
assert_eq "-c 100: every connection moved 1.2k" 100 \
	"$(grep -E '^custom#[0-9]+ ' "$T/c100.out" | awk '$5 == "1.2k"' | wc -l)"
assert_eq "-c 100: the aggregate row comes last" custom \
	"$(tail -1 "$T/c100.out" | awk '{print $1}')"
assert_lines "-c 100: header, 100 rows and the aggregate" 102 "$T/c100.out"
srvrows=$((srvrows + 100))

# ---- -c 1000: all connect (paced) and finish; 1000 x 1280 bytes = 1.2m
run_cmd c1000 120 "$R" $C -p "$P" -S 64 -C 10 -c 1000
assert_exit "-c 1000" 0 "$RC" "$T/c1000.err"
assert_empty "-c 1000: stderr empty" "$T/c1000.err"
check_row "$T/c1000.out" custom 64 10 1 1.2m 1 "-c 1000: aggregate"
assert_lines "-c 1000: header and one row" 2 "$T/c1000.out"
say "-c 1000 took $ELAPSED_MS ms"
srvrows=$((srvrows + 1000))
run_cmd c1000p 120 "$R" $C -p "$P" -S 64 -C 10 -I 2 -c 1000 --per-conn -T a
assert_exit "-c 1000 --per-conn -T a" 0 "$RC" "$T/c1000p.err"
assert_eq "-c 1000 --per-conn: 1000 rows of one connection each" 1000 \
	"$(per_conn_rows "$T/c1000p.out")"
check_row "$T/c1000p.out" custom 64 10 2 2.4m 1 "-c 1000 --per-conn: aggregate"
srvrows=$((srvrows + 1000))

# ---- the server printed a row per connection and test, and goes on
wait_count "$T/srv.out" "$E2E_ANY_ROW" "$srvrows" 10
assert_lines "server: one row per connection ($srvrows)" "$srvrows" \
	"$T/srv.out" "$E2E_ANY_ROW"
assert_empty "server: no connection dropped" "$T/srv.err"
if [ "$E2E_VG" = 1 ]; then
	skip "server: its soft fd limit was raised to the hard one: $VG_FDS"
else
	assert_eq "server: its soft fd limit was raised to the hard one" \
		"$(awk '/Max open files/ {print $5}' "/proc/$srvpid/limits")" \
		"$(awk '/Max open files/ {print $4}' "/proc/$srvpid/limits")"
fi
run_cmd late 30 "$R" $C -p "$P" -S 1000 -C 100 -I 10
assert_exit "server: a later client is served" 0 "$RC" "$T/late.err"
check_row "$T/late.out" custom 1000 100 10 1.9m 1 "later client"

# ---- a default run with -c 2: both series, eight aggregate rows in
# upstream's order, each with twice one connection's bytes
run_cmd def2 "$E2E_RUN_SECS" "$R" $C -p "$P" -T a -c 2 --per-conn
assert_exit "default run -c 2" 0 "$RC" "$T/def2.err"
grep -v '#' "$T/def2.out" >"$T/def2.agg"
check_header "$T/def2.agg" 1 "default run -c 2"
check_row "$T/def2.agg" 64_lat 64 1 100k 24m 1 "default -c 2"
check_row "$T/def2.agg" 4k_lat 4k 1 10k 156m 1 "default -c 2"
check_row "$T/def2.agg" 64k_lat 64k 1 1k 250m 1 "default -c 2"
check_row "$T/def2.agg" 1m_lat 1m 1 100 400m 1 "default -c 2"
check_row "$T/def2.agg" 64_bw 64 100k 1 24m 1 "default -c 2"
check_row "$T/def2.agg" 4k_bw 4k 10k 1 156m 1 "default -c 2"
check_row "$T/def2.agg" 64k_bw 64k 1k 1 250m 1 "default -c 2"
check_row "$T/def2.agg" 1m_bw 1m 100 1 400m 1 "default -c 2"
assert_eq "default run -c 2: aggregate rows in upstream's order" \
	"$E2E_DEFAULT_NAMES" "$(row_names "$T/def2.agg")"
assert_eq "default run -c 2: 16 rows of one connection" 16 "$(per_conn_rows "$T/def2.out")"
# the latency series has ended on both connections before the bandwidth
# series starts: every _lat row comes before every _bw row
assert_eq "default run -c 2: series one after the other" \
	"lat lat lat lat lat lat lat lat lat lat lat lat bw bw bw bw bw bw bw bw bw bw bw bw" \
	"$(grep -Eo '^[0-9a-z.]+_(lat|bw)' "$T/def2.out" | sed 's/.*_//' | tr '\n' ' ' | sed 's/ $//')"

# ---- -T v with -c: the connections negotiate, the server verifies
run_cmd cv 60 "$R" $C -p "$P" -T a -T v -S 4096 -C 20 -I 2 -c 8
assert_exit "-c 8 -T v" 0 "$RC" "$T/cv.err"
# 8 x 4096 x 20 x 2 iterations x 2 ways = 2.5m
check_row "$T/cv.out" custom 4k 20 2 2.5m 1 "-c 8 -T v"

# ---- the aggregate row against its connections' rows (rstream(1), MANY
# CONNECTIONS): usec/xfer is the mean of theirs (each printed rounded to
# 0.01: within 0.01 of the mean of the printed ones), time at least the
# longest of theirs.  -D gives them different counts and times; -I a
# fixed count.  json.sh recomputes every column from the records.
# agg_vs_rows FILE N: the aggregate "custom" row against N custom#K rows
agg_vs_rows() {
	awk -v n="$2" '
		/^custom#[0-9]+ / { s += $8; k++; t = $6 + 0; if (t > tmax) tmax = t }
		/^custom / { a = $8; at = $6 + 0 }
		END {
			d = a - s / k; if (d < 0) d = -d
			printf "rows %d, aggregate usec/xfer %s, mean of rows %.4f, time %.2f (longest row %.2f)\n", k, a, s / k, at, tmax
			exit !(k == n && d <= 0.0101 && at >= tmax - 0.0051)
		}' "$1"
}
run_cmd cdur 60 "$R" $C -p "$P" -T a -S 64 -C 1 -D 1 -c 4 --per-conn
assert_exit "-c 4 -D 1 --per-conn" 0 "$RC" "$T/cdur.err"
assert_empty "-c 4 -D 1: stderr empty" "$T/cdur.err"
assert_lines "-c 4 -D 1: header, 4 rows and the aggregate" 6 "$T/cdur.out"
if got=$(agg_vs_rows "$T/cdur.out" 4); then
	ok "-c 4 -D 1: aggregate usec/xfer is the mean of the rows', time the longest or more ($got)"
else
	not_ok "-c 4 -D 1: aggregate usec/xfer is the mean of the rows', time the longest or more" \
		"$got" "$(cat "$T/cdur.out")"
fi
run_cmd cfix 60 "$R" $C -p "$P" -T a -S 1000 -C 10 -I 200 -c 3 --per-conn
assert_exit "-c 3 -I 200 --per-conn" 0 "$RC" "$T/cfix.err"
# 3 x 2 x 1000 x 10 x 200 = 12000000 bytes = 11m (11.4 MiB)
check_row "$T/cfix.out" custom 1000 10 200 11m 1 "-c 3 -I 200: aggregate"
if got=$(agg_vs_rows "$T/cfix.out" 3); then
	ok "-c 3 -I 200: aggregate usec/xfer is the mean of the rows', time the longest or more ($got)"
else
	not_ok "-c 3 -I 200: aggregate usec/xfer is the mean of the rows', time the longest or more" \
		"$got" "$(cat "$T/cfix.out")"
fi

# ---- one connection fails mid-run: one line naming it and its test,
# exit 4, the others cancelled (the client does not wait for them)
P2=$(e2e_port)
if start_server srv2 "$P2" "$R" -T s -T a -p "$P2"; then
	bg_start many 60 "$R" $C -p "$P2" -T a -S 64 -C 1 -I 100000000 -c 10
	wait_established "$P2" 10 10
	sleep 0.3
	bg_kill srv2 # SIGKILL to its whole process group
	t0=$(now_ms)
	bg_wait many 10
	assert_exit "-c 10, server killed: exit 4" 4 "$RC" "$T/many.err"
	assert_le "-c 10, server killed: the client exits within 3 s (ms)" \
		$(( $(now_ms) - t0 )) "$(tscale 3000)"
	assert_lines "-c 10, server killed: one line on stderr" 1 "$T/many.err"
	assert_match "-c 10, server killed: the line names the connection and test" \
		'^rstream: connection ([1-9]|10) of 10: .*test custom \(1 of 1\), ' \
		"$T/many.err"
	assert_lines "-c 10, server killed: no aggregate row" 1 "$T/many.out"
fi

# ---- SIGTERM while 20 connections run: exit 130, nothing on stderr
bg_start term 60 "$R" $C -p "$P" -T a -S 64 -C 1 -I 100000000 -c 20
wait_established "$P" 20 10
wait_traffic "$P" 16384
sleep 0.3
bg_stop term 5
assert_exit "-c 20, SIGTERM: exit 130" 130 "$RC" "$T/term.err"
assert_le "-c 20, SIGTERM: exits within 2 s (ms)" "$ELAPSED_MS" "$(tscale 2000)"
assert_lines "-c 20, SIGTERM: one line on stderr, where it stood" 1 "$T/term.err" \
	'^rstream: connection [0-9]+ of 20: 127\.0\.0\.1:[0-9]+: test custom .*: interrupted by SIGTERM$'

# ---- RLIMIT_NOFILE
# the soft limit is raised up to the hard one when needed
if [ "$E2E_VG" = 1 ]; then
	skip "soft limit 64, -c 100: raised to the hard limit: $VG_FDS"
elif [ "$(ulimit -Hn)" = unlimited ] || [ "$(ulimit -Hn)" -ge 200 ]; then
	run_cmd rsoft 60 bash -c 'ulimit -Sn 64 && exec "$0" "$@"' "$R" $C \
		-p "$P" -S 64 -C 10 -c 100
	assert_exit "soft limit 64, -c 100: raised to the hard limit" 0 "$RC" "$T/rsoft.err"
	check_row "$T/rsoft.out" custom 64 10 1 125k 1 "soft limit 64, -c 100"
else
	skip "the hard fd limit is below 200"
fi
# beyond the hard limit, without the privilege to raise it: one line,
# exit 5, nothing connected
lim=(bash -c 'ulimit -n 64 && exec "$0" "$@"')
if [ "$(id -u)" = 0 ]; then
	if command -v setpriv >/dev/null; then
		lim=(setpriv --bounding-set=-sys_resource "${lim[@]}")
	else
		lim=()
	fi
fi
if [ "$E2E_VG" = 1 ]; then
	skip "hard limit 64, -c 1000: exit 5: valgrind reports its own view of RLIMIT_NOFILE to the program; the normal and ASan builds run it"
elif [ ${#lim[@]} -gt 0 ]; then
	n0=$(ss -Htn state established "( dport = :$P )" | wc -l)
	run_cmd rhard 30 "${lim[@]}" "$R" $C -p "$P" -S 64 -C 10 -c 1000
	assert_exit "hard limit 64, -c 1000: exit 5" 5 "$RC" "$T/rhard.err"
	assert_lines "hard limit 64, -c 1000: one line" 1 "$T/rhard.err"
	assert_match "hard limit 64, -c 1000: says what it needs and has" \
		'^rstream: -c 1000 needs ~1016 file descriptors, the limit is 64 and cannot be raised$' \
		"$T/rhard.err"
	grep -E "$E2E_ANY_ROW" "$T/rhard.out" >"$T/rhard.rows"
	assert_empty "hard limit 64, -c 1000: no row" "$T/rhard.rows"
	assert_eq "hard limit 64, -c 1000: connected nothing" "$n0" \
		"$(ss -Htn state established "( dport = :$P )" | wc -l)"
else
	skip "root without setpriv: cannot drop CAP_SYS_RESOURCE"
fi

# ---- --all-at-once: each connection starts its tests once all N are at
# their gate: accepted by the server, with their plans.  Against
# --max-conns 8, nine held at once: the ninth is turned away and the run
# fails (each of the first eight waits, accepted, for it); eight pass,
# and the rows are the same as without the option.  The gate is after
# the server's answer, not the TCP connect: a connect completes in the
# kernel's backlog, and a server that took its accepts late served the
# first one or two to the end before it saw the ninth (1 run in 67 to
# 200 beside two busy loops, failing CI).
P2=$(e2e_port)
if start_server aao "$P2" "$R" -T s -b $H -p "$P2" --max-conns 8 \
	--stall-timeout "$(tscale 60)"; then
	run_cmd aao9 60 "$R" -T s -s $H -p "$P2" -c 9 --all-at-once -S 64 -C 1 -I 1
	assert_exit "--all-at-once -c 9, server --max-conns 8: turned away (exit 3)" \
		3 "$RC" "$T/aao9.out" "$T/aao9.err"
	assert_match "--all-at-once -c 9: the reason" \
		"the server serves as many connections as it allows" "$T/aao9.err"
	run_cmd aao8 60 "$R" -T s -s $H -p "$P2" -c 8 --all-at-once -S 64 -C 10 -I 20
	assert_exit "--all-at-once -c 8, server --max-conns 8: passes" 0 "$RC" \
		"$T/aao8.out" "$T/aao8.err"
	check_row "$T/aao8.out" custom 64 10 20 200k 1 "--all-at-once -c 8"
	run_cmd aaot 60 "$R" -T s -s $H -p "$P2" -c 4 --all-at-once -S 64 -C 1 -I 1 --trace
	assert_exit "--all-at-once -c 4 --trace: passes" 0 "$RC" "$T/aaot.err"
	assert_lines "--all-at-once -c 4: each waits at its gate after the server's reply" \
		4 "$T/aaot.err" '^rstream: trace: conn [1-4]: REPLY_RECV -> GATED$'
	assert_eq "--all-at-once -c 4: no test starts before all are at the gate" 4 \
		"$(awk '/-> GATED$/ { g++ } /GATED -> SYNC_SEND$/ { if (g == 4) o++ }
			END { print o + 0 }' "$T/aaot.err")"
	run_cmd aaon 60 "$R" -T s -s $H -p "$P2" -c 3 --all-at-once -S 64 -C 1 -I 1 \
		--no-negotiate --trace
	assert_lines "--all-at-once --no-negotiate: the gate is at the connect" \
		3 "$T/aaon.err" '^rstream: trace: conn [1-3]: CONNECTING -> GATED$'
	run_cmd aaoj 60 "$R" -T s -s $H -p "$P2" -c 2 --all-at-once -S 64 -C 1 -I 1 --json
	assert_match "--json: options.all_at_once" '"all_at_once":true' "$T/aaoj.out"
	bg_stop aao 5
else
	not_ok "--all-at-once: server starts"
fi

# ---- bad values
for v in 0 100001 x; do
	run_cmd "bad$v" 10 "$R" $C -p "$P" -c "$v"
	assert_exit "-c $v: usage error" 1 "$RC" "$T/bad$v.err"
	assert_match "-c $v: one clear line" \
		"^rstream: invalid value '$v' for -c: connections must be 1 to 100000$" "$T/bad$v.err"
done

# every connection refused: the line counts them, never one named by
# the order of the events (before: always "connection 3 of 3")
CLOSED=$(e2e_port)
run_cmd refused3 30 "$R" -T s -s 127.0.0.1 -p "$CLOSED" -S 64 -C 10 -c 3
assert_exit "-c 3, nothing listening" 3 "$RC" "$T/refused3.err"
assert_match "-c 3, nothing listening: one line counting the 3" \
	"^rstream: 3 of 3 connections: 127\.0\.0\.1:$CLOSED: connect: Connection refused$" "$T/refused3.err"

# the server is still listening and stops cleanly
if listening "$P"; then
	ok "server: still listening"
else
	not_ok "server: still listening"
fi
bg_stop srv 5
assert_exit "server: SIGTERM exits 0" 0 "$RC" "$T/srv.err"

e2e_done
