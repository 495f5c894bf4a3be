#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# One server, 20 clients at once with different options, and a client
# that connects and goes silent: everyone else completes, the server goes
# on listening, and SIGTERM stops it at once.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

R=$RSTREAM
H=127.0.0.1
T=$E2E_TMP

# name : client options : expected row(s) (name bytes xfers iters total)
CLIENTS=()
for i in 1 2 3 4 5 6 7 8; do
	CLIENTS+=("c4k$i|-S 4096 -C 100 -I 20|custom 4k 100 20 15m")
done
for i in 1 2 3 4; do
	CLIENTS+=("ca$i|-T a -S 1000 -C 50 -I 50|custom 1000 50 50 4.7m")
done
for i in 1 2 3; do
	CLIENTS+=("cb$i|-T b -S 64k -C 10 -I 20|custom 64k 10 20 25m")
done
for i in 1 2 3; do
	CLIENTS+=("cl$i|-T a -S 64 -C 1 -I 20000|custom 64 1 20k 2.4m")
done
CLIENTS+=("cv1|-T a -T v -S 4096 -C 100 -I 20 --negotiate|custom 4k 100 20 15m")
CLIENTS+=("cd1|-T a|default")

P=$(e2e_port)
# The silent client must outlast the others: the stall timeout and its
# hold are far above a burst's time, scaled for slower builds (a default
# run alone takes minutes under valgrind).
if ! start_server srv "$P" "$R" -T s -p "$P" --stall-timeout "$(tscale 60)"; then
	e2e_done
fi
srvpid=$(bg_child_pid srv)

# one client at a time: the server's row as upstream's, no client named
run_cmd alone 30 "$R" -T s -s $H -p "$P" -S 100 -C 1 -I 10
assert_exit "a client alone" 0 "$RC" "$T/alone.err"
wait_count "$T/srv.out" "$E2E_ANY_ROW" 1 5
assert_no_match "server, one client at a time: its row names no client" '  client ' "$T/srv.out"

# the misbehaving client: connects and says nothing
FAKE_HOLD=$(tscale 120) fake_start silent 150 silent "$P"
wait_match "$T/silent.out" connected 5
wait_established "$P" 1 5

sleep 0.2
nfd0=$(find "/proc/$srvpid/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)

t0=$(now_ms)
for c in "${CLIENTS[@]}"; do
	IFS='|' read -r name opts _ <<<"$c"
	# shellcheck disable=SC2086
	bg_start "$name" "$E2E_RUN_SECS" "$R" -T s -s $H -p "$P" $opts
done
if wait_established "$P" 10 5; then
	ok "20 clients: at least 10 connected at the same time"
else
	not_ok "20 clients: at least 10 connected at the same time" \
		"$(ss -Htn state established "( dport = :$P )" | wc -l) established"
fi

rows=0
for c in "${CLIENTS[@]}"; do
	IFS='|' read -r name opts row <<<"$c"
	bg_wait "$name" "$E2E_RUN_SECS"
	assert_exit "client $name ($opts)" 0 "$RC" "$T/$name.out" "$T/$name.err"
	assert_empty "client $name: stderr empty" "$T/$name.err"
	check_header "$T/$name.out" 1 "client $name"
	if [ "$row" = default ]; then
		check_default_table "$T/$name.out" 1 "client $name"
		rows=$((rows + 8))
	else
		# shellcheck disable=SC2086
		check_row "$T/$name.out" $row 1 "client $name"
		rows=$((rows + 1))
	fi
done
el=$(( $(now_ms) - t0 ))
say "20 concurrent clients took $el ms"

# the server printed every client's rows (and the lone one's)
rows=$((rows + 1))
wait_count "$T/srv.out" "$E2E_ANY_ROW" "$rows" 5
assert_lines "server: one row per client test ($rows)" "$rows" "$T/srv.out" "$E2E_ANY_ROW"
declare -A want=()
for c in "${CLIENTS[@]}"; do
	row=${c##*|}
	[ "$row" = default ] && continue
	want[$row]=$(( ${want[$row]:-0} + 1 ))
done
for row in "${!want[@]}"; do
	# shellcheck disable=SC2086
	check_row "$T/srv.out" $row "${want[$row]}" "server"
done
check_default_table "$T/srv.out" 1 "server: the default run's rows"
check_header "$T/srv.out" 1 "server"
check_row "$T/srv.out" custom 100 1 10 1.9k 1 "server: the lone client's row"
# clients at once: every row after the lone one's names its client
n=$(grep -Ec -- "$E2E_ANY_ROW" "$T/srv.out")
named=$(grep -Ec -- '  client 127\.0\.0\.1:[0-9]+$' "$T/srv.out")
assert_eq "server, clients at once: each row names its client" "$((n - 1))" "$named"
assert_empty "server: no connection dropped" "$T/srv.err"

# the silent client did not stall anyone, and is still connected
if bg_alive silent && [ -n "$(ss -Htn state established "( dport = :$P )")" ]; then
	ok "the silent client is still connected after the others completed"
else
	not_ok "the silent client is still connected after the others completed"
fi

# the server goes on listening and serving
if listening "$P"; then
	ok "server: still listening after 20 clients"
else
	not_ok "server: still listening after 20 clients"
fi
run_cmd late 30 "$R" -T s -s $H -p "$P" -S 1000 -C 100 -I 10
assert_exit "server: a late client is served" 0 "$RC" "$T/late.err"
check_row "$T/late.out" custom 1000 100 10 1.9m 1 "late client"

# the server's fds were all released: as many open as before the burst
nfd=$(find "/proc/$srvpid/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
assert_eq "server: no fd leaked by 21 finished connections (open fds)" "$nfd0" "$nfd"

# SIGTERM with the silent client and a running one connected: the server
# exits 0 within 2 s; the running client fails (exit 4), at once
bg_start running 60 "$R" -T s -T a -s $H -p "$P" -S 64 -C 1 -I 100000000
wait_established "$P" 2 5
wait_traffic "$P" 16384
sleep 0.3
bg_stop srv 5
assert_exit "server: SIGTERM exits 0 with clients connected" 0 "$RC" "$T/srv.err"
assert_le "server: exits within 2 s of SIGTERM (ms)" "$ELAPSED_MS" "$(tscale 2000)"
assert_eq "server: exited by itself (not killed)" 0 "$BG_TIMED_OUT"
bg_wait running 5
assert_exit "the client running when the server stopped: exit 4" 4 "$RC" \
	"$T/running.err"
assert_lines "the client running when the server stopped: one line" 1 "$T/running.err"
assert_match "the client running when the server stopped: names its test" \
	'^rstream: .*test custom \(1 of 1\), ' "$T/running.err"
bg_kill silent

e2e_done
