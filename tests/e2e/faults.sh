#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Fault campaigns over TCP on loopback: no loss of service when peers
# misbehave.  One rstream server takes 10,000 connect/abort cycles and
# must end with the fds and memory it started with; misbehaving clients
# (garbage, a bad plan, bad data mid-stream, a message stopped half way,
# silence, a very slow reader) share a server with well-behaved -T v
# clients, which must finish with correct results while the bad ones are
# still connected; a server out of file descriptors must neither spin nor
# flood its log, and must accept again once fds are free; and SIGPIPE
# kills nobody (rstream server and client, evrdma-probed, mckey).
# The misbehaving peer is tests/faultpeer ($FAULTPEER).
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

FP=${FAULTPEER:-}
if [ -z "$FP" ] || [ ! -x "$FP" ]; then
	echo "faults: FAULTPEER is not set to an executable tests/faultpeer" >&2
	exit 99
fi
R=$RSTREAM
H=127.0.0.1
T=$E2E_TMP
CYCLES=${FAULT_CYCLES:-10000}
# Memory may move a little after warm-up (malloc's arenas, the kernel's
# accounting of touched pages): this much, and no more.
MEM_TOL_KB=1024
HZ=$(getconf CLK_TCK)
# In the ASan build freed memory waits in ASan's quarantine (up to 256 MiB)
# before reuse, so a process's footprint grows with the frees it has made
# however little it holds: without the quarantine the allocator reuses at
# once and the memory checks mean what they say (leaks are LeakSanitizer's
# business at exit, also on).
if [ "$E2E_SAN" = yes ]; then
	ASAN_OPTIONS="$ASAN_OPTIONS:quarantine_size_mb=0:thread_local_quarantine_size_kb=0"
	export ASAN_OPTIONS
fi

fd_count() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
estab() { ss -Htn state established "( sport = :$1 )" 2>/dev/null | wc -l; }

# Wait (at most SECS) until PID has at most N fds.
wait_fds() { # PID N SECS
	local end=$(( $(now_ms) + $3 * 1000 ))
	while [ "$(now_ms)" -lt "$end" ]; do
		[ "$(fd_count "$1")" -le "$2" ] && return 0
		sleep 0.05
	done
	return 1
}

# A well-behaved client: a verified custom run, negotiated (so the server
# needs no options), must pass.
good_client() { # NAME PORT [SECS]
	run_cmd "$1" "${3:-60}" "$R" -T s -T a -s $H -p "$2" \
		-S 65536 -C 10 -I 10 -T v --negotiate
	assert_exit "$1: a well-behaved -T v client passes" 0 "$RC" \
		"$T/$1.out" "$T/$1.err"
	check_row "$T/$1.out" custom 64k 10 10 12m 1 "$1"
}

# ------------------------------------------- 1. 10,000 connect/abort cycles

P=$(e2e_port)
if start_server cyc "$P" "$R" -T s -b $H -p "$P"; then
	SP=$(bg_child_pid cyc)
	good_client cyc_warm "$P"
	run_cmd cyc_warmup 120 "$FP" cycles $H "$P" 1000
	assert_exit "1000 warm-up cycles" 0 "$RC" "$T/cyc_warmup.out" "$T/cyc_warmup.err"
	wait_match "$T/cyc.err" . 1 # (the drop lines of the warm-up)
	fd0=$(fd_count "$SP")
	rss0=$(mem_kb "$SP" VmRSS)
	data0=$(mem_kb "$SP" VmData)
	t0=$(now_ms)
	run_cmd cyc_main 400 "$FP" cycles $H "$P" "$CYCLES"
	cyc_ms=$(( $(now_ms) - t0 ))
	assert_exit "$CYCLES connect/abort cycles, each point reached" 0 "$RC" \
		"$T/cyc_main.out" "$T/cyc_main.err"
	say "$(tail -1 "$T/cyc_main.out") (wall $cyc_ms ms)"
	sed 's/^/#   /' "$T/cyc_main.out"
	# every aborted connection ends (the server closes its side)
	wait_fds "$SP" "$fd0" 20
	fd1=$(fd_count "$SP")
	rss1=$(mem_kb "$SP" VmRSS)
	data1=$(mem_kb "$SP" VmData)
	say "server after warm-up: $fd0 fds, VmRSS $rss0 kB, VmData $data0 kB"
	say "server after $CYCLES cycles: $fd1 fds, VmRSS $rss1 kB, VmData $data1 kB"
	assert_eq "cycles: the server's fd count is back where it was" "$fd0" "$fd1"
	mem_le "cycles: VmRSS within $MEM_TOL_KB kB of the start" \
		"$rss1" $((rss0 + MEM_TOL_KB))
	mem_le "cycles: VmData within $MEM_TOL_KB kB of the start" \
		"$data1" $((data0 + MEM_TOL_KB))
	assert_eq "cycles: no connection left established" 0 "$(estab "$P")"
	# one line per aborted connection: none missed, no flood
	wait_count "$T/cyc.err" 'connection dropped' $((CYCLES + 1000)) 10
	assert_lines "cycles: one 'connection dropped' line per aborted connection" \
		$((CYCLES + 1000)) "$T/cyc.err" '^rstream: connection dropped: 127\.0\.0\.1:[0-9]+: '
	assert_lines "cycles: nothing else on stderr" $((CYCLES + 1000)) "$T/cyc.err"
	if bg_alive cyc && listening "$P"; then
		ok "cycles: the server still runs and listens"
	else
		not_ok "cycles: the server still runs and listens"
	fi
	good_client cyc_after "$P"
	bg_stop cyc
	assert_exit "cycles: the server stops on SIGTERM" 0 "$RC" "$T/cyc.err"
fi

# The same against a -T f server (a child per connection): the parent
# must not keep a thing of its children, and none must be left behind.
P=$(e2e_port)
if start_server cycf "$P" "$R" -T s -T f -b $H -p "$P"; then
	SP=$(bg_child_pid cycf)
	run_cmd cycf_warmup 60 "$FP" cycles $H "$P" 100
	sleep 0.5
	fd0=$(fd_count "$SP")
	rss0=$(mem_kb "$SP" VmRSS)
	run_cmd cycf_main 300 "$FP" cycles $H "$P" 2000
	assert_exit "-T f: 2000 connect/abort cycles" 0 "$RC" "$T/cycf_main.out"
	say "-T f: $(tail -1 "$T/cycf_main.out")"
	wait_fds "$SP" "$fd0" 20
	end=$(( $(now_ms) + 10000 ))
	while [ -n "$(ps -o pid= --ppid "$SP")" ] && [ "$(now_ms)" -lt "$end" ]; do
		sleep 0.1
	done
	assert_eq "-T f: no child left (none running, none a zombie)" "" \
		"$(ps -o pid=,stat= --ppid "$SP")"
	fd1=$(fd_count "$SP")
	rss1=$(mem_kb "$SP" VmRSS)
	say "-T f parent: $fd0 -> $fd1 fds, VmRSS $rss0 -> $rss1 kB"
	assert_eq "-T f: the parent's fd count is back where it was" "$fd0" "$fd1"
	mem_le "-T f: the parent's VmRSS within $MEM_TOL_KB kB" "$rss1" \
		$((rss0 + MEM_TOL_KB))
	good_client cycf_after "$P"
	bg_stop cycf
	assert_exit "-T f: the server stops on SIGTERM" 0 "$RC" "$T/cycf.err"
fi

# ------------------------------ 2. misbehaving clients beside good ones

# The default (non-blocking) server, an 8 s stall timeout (room for the
# good clients on a loaded host): the bad ones hold on for 20 s unless the server closes them; the good ones must be
# done while the stalled ones are still connected (not after the stall
# timeout freed the server), with their data verified.
STALL=8
P=$(e2e_port)
if start_server mix "$P" "$R" -T s -b $H -p "$P" --stall-timeout $STALL; then
	SP=$(bg_child_pid mix)
	good_client mix_warm "$P"
	fd0=$(fd_count "$SP")
	for m in garbage badplan badverify half; do
		bg_start "bad_$m" 60 "$FP" "$m" $H "$P" 20
	done
	bg_start bad_slow 60 "$FP" slowread $H "$P" 10
	bg_start bad_silent 60 "$FP" hold $H "$P" 5 14
	wait_match "$T/bad_half.out" 'sent half' 10
	wait_match "$T/bad_slow.out" 'sent 8 MB' 10
	wait_match "$T/bad_silent.out" 'connected 5' 10
	sleep 1
	rss_a=$(mem_kb "$SP" VmRSS)
	for i in 1 2 3; do
		bg_start "good$i" 60 "$R" -T s -T a -s $H -p "$P" \
			-S 65536 -C 10 -I 10 -T v --negotiate
	done
	for i in 1 2 3; do
		bg_wait "good$i" 60
		assert_exit "good client $i beside the misbehaving ones" 0 "$RC" \
			"$T/good$i.out" "$T/good$i.err"
		check_row "$T/good$i.out" custom 64k 10 10 12m 1 "good$i"
	done
	# Had the server waited for the stalled client, the good ones would
	# have finished only once it was dropped.
	assert_no_match "the good clients were done while the half-message client still hung" \
		'server closed' "$T/bad_half.out"
	sleep 4
	rss_b=$(mem_kb "$SP" VmRSS)
	say "server VmRSS while a client reads at 256 KB/s: $rss_a kB, 4+ s later $rss_b kB"
	mem_le "slow reader: the server's memory does not grow" "$rss_b" \
		$((rss_a + MEM_TOL_KB))
	for n in bad_garbage bad_badplan bad_badverify bad_half bad_slow bad_silent; do
		bg_wait "$n" 40
	done
	# "at once": under a second, or under memcheck (20-50 times slower)
	# under eight; a server that waited for more bytes holds it 8 s and
	# more, the stall timeout
	ONCE='[0-9]{1,3}'
	[ "$E2E_VG" = 1 ] && ONCE='[0-9]{1,3}|[1-7][0-9]{3}'
	assert_match "slow reader: served (over 1 MB read, not dropped)" \
		'^read ([1-9][0-9]{6,}) bytes' "$T/bad_slow.out"
	assert_match "a plan of random bytes: closed at once" \
		"^server closed after ($ONCE) ms" "$T/bad_badplan.out"
	assert_match "... one line: malformed plan" \
		'connection dropped: 127\.0\.0\.1:[0-9]+: negotiation: malformed plan header message$' \
		"$T/mix.err"
	assert_match "upstream -T v wire, garbage after 50 good round trips: closed at once" \
		"^server closed after ($ONCE) ms" "$T/bad_badverify.out"
	assert_match "... one line: data verification failed" \
		'connection dropped: 127\.0\.0\.1:[0-9]+: test 64_lat \(1 of 4\), receive, iteration 51 of 100000, transfer 1 of 1: data verification failed byte 3216$' \
		"$T/mix.err"
	# stopped half way, random bytes as an upstream client, silence:
	# dropped by the stall timeout (between 1 and 1.25 x, plus load; the
	# garbage client's 100,000 bytes are first served as 1,563 upstream
	# round trips, seconds under valgrind, and the timeout counts from
	# the last of them: the slack scales)
	for n in half garbage; do
		ms=$(sed -n 's/^server closed after \([0-9]*\) ms$/\1/p' "$T/bad_$n.out")
		if [ -n "$ms" ] && [ "$ms" -ge $((STALL * 1000 - 300)) ] &&
			[ "$ms" -le $((STALL * 1250 + $(tscale 3000))) ]; then
			ok "$n: dropped by the stall timeout (${ms} ms, timeout ${STALL} s)"
		else
			not_ok "$n: dropped by the stall timeout" "got: ${ms:-never}"
			dump "$T/bad_$n.out" "$T/mix.err"
		fi
	done
	assert_lines "half-message client: one stall line" 1 "$T/mix.err" \
		'test custom \(1 of 1\), receive, iteration 1 of 1000, transfer 1 of 1: no progress for 8\.0 s \(stall timeout\)$'
	assert_lines "silent clients: one stall line each" 5 "$T/mix.err" \
		': negotiation: no progress for 8\.0 s \(stall timeout\)$'
	assert_lines "slow reader: one line when it reset" 1 "$T/mix.err" \
		'test custom \(1 of 1\), send, .*Connection reset by peer$'
	assert_lines "server: one line per bad client, no other" 10 "$T/mix.err"
	wait_fds "$SP" "$fd0" 10
	assert_eq "server: back to its fd count" "$fd0" "$(fd_count "$SP")"
	good_client mix_after "$P"
	bg_stop mix
	assert_exit "server stops on SIGTERM" 0 "$RC" "$T/mix.err"
fi

# ----------------------------------------------- 3. out of file descriptors

# -T a: the server sleeps while its (silent) connections wait, so its CPU
# time is what the accept path costs.  ulimit -n 24 (soft and hard, so it
# cannot raise it): about 15 connections fit.  Stdio closed beyond 2 so
# the layout does not depend on what the harness left open.
closefds='for f in /proc/$$/fd/*; do n=${f##*/}; [ "$n" -gt 2 ] && eval "exec $n>&-"; done'
P=$(e2e_port)
if start_server emf "$P" bash -c "$closefds; ulimit -n 24; exec \"\$0\" \"\$@\"" \
	"$R" -T s -T a -b $H -p "$P" --stall-timeout 60; then
	SP=$(bg_child_pid emf)
	fd0=$(fd_count "$SP")
	bg_start hold 60 "$FP" hold $H "$P" 40 30
	wait_match "$T/hold.out" 'connected' 10
	assert_match "40 connections made (the kernel's queue takes them)" \
		'^connected 40 of 40$' "$T/hold.out"
	sleep 1
	a=$(cpu_ticks "$SP")
	sleep 3
	b=$(cpu_ticks "$SP")
	say "EMFILE: server CPU $((b - a)) ticks in 3 s (CLK_TCK $HZ), $(fd_count "$SP") fds open"
	assert_le "EMFILE: no busy loop (CPU ticks over 3 s, at most 5% of a core)" \
		$((b - a)) $((HZ * 3 / 20))
	run_cmd emf_more 30 "$R" -T s -T a -s $H -p "$P" -S 1000 -C 1 -I 1
	assert_exit "EMFILE: a client meanwhile is turned away at once (peer closed)" 4 "$RC" \
		"$T/emf_more.err"
	assert_lines "EMFILE: one clear line for the whole episode" 1 "$T/emf.err" \
		'^rstream: connection dropped: 127\.0\.0\.1:[0-9]+: accept \(no file descriptor left: new connections are turned away until some close\): Too many open files$'
	assert_lines "EMFILE: nothing else on stderr" 1 "$T/emf.err"
	bg_stop hold
	if wait_fds "$SP" "$fd0" 10; then
		ok "EMFILE: the held connections closed, fds back to $fd0"
	else
		not_ok "EMFILE: fds back to $fd0" "now $(fd_count "$SP")"
	fi
	good_client emf_after "$P"
	bg_stop emf
	assert_exit "EMFILE: the server stops on SIGTERM" 0 "$RC" "$T/emf.err"
fi

# Not even the spare fd: the listener is the last fd the limit allows,
# so a queued connection cannot be taken off at all.  The listener must
# rest rather than spin; the client is served once an fd is free (here:
# never, so it fails on its own stall timeout, exit 4).
P=$(e2e_port)
lim=""
# valgrind keeps fds of its own at the top of the limit, and a program
# under it cannot be given a limit this small: the ASan and normal
# builds' runs cover this case
lims="5 6 7 8 9"
if [ "$E2E_VG" = 1 ]; then
	skip "EMFILE with the listener as the last fd: not under valgrind (its own fds sit at the top of the limit)"
	lims=""
fi
for l in $lims; do
	bg_start "emf0_$l" 60 bash -c "$closefds; ulimit -n $l; exec \"\$0\" \"\$@\"" \
		"$R" -T s -T a -b $H -p "$P"
	if wait_listen "$P" 3 "emf0_$l"; then
		SP=$(bg_child_pid "emf0_$l")
		# fds 0 to l-1 all taken, the last one the listener
		if [ "$(fd_count "$SP")" = "$l" ] &&
			readlink "/proc/$SP/fd/$((l - 1))" | grep -q '^socket:'; then
			lim=$l
			break
		fi
	fi
	bg_kill "emf0_$l"
done
if [ -n "$lim" ]; then
	bg_start emf0_c 30 "$R" -T s -T a -s $H -p "$P" -S 1000 -C 1 -I 1 --stall-timeout 4
	wait_match "$T/emf0_$lim.err" 'accept' 5
	a=$(cpu_ticks "$SP")
	sleep 3
	b=$(cpu_ticks "$SP")
	say "EMFILE without a spare fd (ulimit -n $lim): server CPU $((b - a)) ticks in 3 s"
	assert_le "EMFILE, no spare fd: no busy loop (at most 5% of a core)" \
		$((b - a)) $((HZ * 3 / 20))
	assert_lines "EMFILE, no spare fd: one line" 1 "$T/emf0_$lim.err" \
		'^rstream: connection dropped: accept \(no file descriptor left: new connections are turned away until some close\): Too many open files$'
	bg_wait emf0_c 20
	assert_exit "EMFILE, no spare fd: the client (connected by the kernel, never accepted) fails on its stall timeout" 4 "$RC" \
		"$T/emf0_c.err"
	bg_stop "emf0_$lim"
	assert_exit "EMFILE, no spare fd: the server stops on SIGTERM" 0 "$RC"
elif [ "$E2E_VG" != 1 ]; then
	not_ok "a limit found where the listener is the last fd"
fi

# ------------------------------------------------------- 4. SIGPIPE kills none

# Every process here starts with SIGPIPE at its default action (even if
# the harness ignores it), so a stray signal would show as 141.
DS="env --default-signal=PIPE"

# the server writes, the client resets mid-write
P=$(e2e_port)
if start_server sp_srv "$P" $DS "$R" -T s -b $H -p "$P"; then
	run_cmd sp_slow 30 "$FP" slowread $H "$P" 1
	assert_match "slow reader reset while the server was sending" '^read ' "$T/sp_slow.out"
	wait_match "$T/sp_srv.err" 'reset by peer|Broken pipe' 5
	if bg_alive sp_srv; then ok "server alive after its peer reset mid-write"; else not_ok "server alive after its peer reset mid-write"; fi
	good_client sp_after "$P"
	# the client writes, the server dies mid-transfer
	bg_start sp_cli 60 $DS "$R" -T s -T a -s $H -p "$P" -S 1000000 -C 50 -I 1000
	wait_established "$P" 1 5
	sleep 0.5
	kill -KILL "$(bg_child_pid sp_srv)"
	bg_wait sp_srv 5
	bg_wait sp_cli 30
	assert_exit "client whose server died mid-write: exit 4 (not 141)" 4 "$RC" "$T/sp_cli.err"
fi

# stdout a pipe nobody reads any more (the reader is gone first)
P=$(e2e_port)
if start_server sp_srv2 "$P" $DS "$R" -T s -b $H -p "$P"; then
	(sleep 1; exec $DS timeout 30 "$R" -T s -s $H -p "$P" -S 1000 -C 10 -I 10) 2>"$T/sp_out.err" | true
	st=${PIPESTATUS[0]}
	# not killed by SIGPIPE (141), and not a silent exit 0 either: one
	# line, exit 5 (rstream.1, EXIT STATUS)
	assert_exit "client with a closed stdout: exit 5, not SIGPIPE" 5 "$st" "$T/sp_out.err"
	assert_lines "client with a closed stdout: says so in one line" 1 \
		"$T/sp_out.err" '^rstream: write error on standard output: Broken pipe$'
	bg_stop sp_srv2
	assert_exit "server: SIGTERM, exit 0" 0 "$RC" "$T/sp_srv2.err"
fi

# evrdma-probed: HTTP clients that reset before reading the answer, and a
# probed server killed mid-probe
if [ -n "${PROBED:-}" ] && [ -x "$PROBED" ]; then
	# (each port in use before the next is picked: e2e_port runs in a
	# subshell and remembers nothing)
	SP_=$(e2e_port)
	start_server pr_srv "$SP_" "$R" -T s -T a -b $H -p "$SP_"
	HP=$(e2e_port)
	cat >"$T/pr.json" <<JSON
{ "listen_address": "$H", "listen_port": $HP, "probes": [
  { "name": "p", "type": "rstream", "host": "$H", "port": $SP_, "transport": "tcp",
    "size": 1000000, "count": 20, "iters": 50, "interval_s": 0.2, "timeout_s": 2 } ] }
JSON
	bg_start pr 120 $DS "$PROBED" -c "$T/pr.json"
	if wait_listen "$HP" 5 pr; then
		python3 - "$HP" >"$T/pr_rst.out" 2>&1 <<'PY'
import socket, struct, sys
n = 0
for i in range(300):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
    n += 1
print("reset", n)
PY
		assert_match "300 HTTP clients reset before reading the answer" '^reset 300$' "$T/pr_rst.out"
		wait_established "$SP_" 1 5
		kill -KILL "$(bg_child_pid pr_srv)"
		bg_wait pr_srv 5
		sleep 1
		if bg_alive pr; then ok "evrdma-probed alive after all that"; else not_ok "evrdma-probed alive after all that"; dump "$T/pr.err"; fi
		bg_stop pr
		assert_exit "evrdma-probed: SIGTERM, exit 0 (not 141)" 0 "$RC" "$T/pr.err"
	else
		not_ok "evrdma-probed listens" && dump "$T/pr.err"
	fi
else
	skip "evrdma-probed: PROBED not set"
fi

# mckey over UDP in a namespace of our own (root only): a receiver and a
# sender whose stdout nobody reads.
NS=evflt-$$
G=239.77.9.1
L4=10.213.9.1
if [ -n "${MCKEY:-}" ] && [ -x "$MCKEY" ] && [ "$(id -u)" = 0 ] &&
	command -v ip >/dev/null && ip netns add "$NS" 2>/dev/null; then
	trap 'ip netns del "$NS" 2>/dev/null; e2e_cleanup' EXIT
	ip -n "$NS" link set lo up &&
	ip -n "$NS" link set lo multicast on &&
	ip -n "$NS" addr add "$L4/24" dev lo &&
	ip -n "$NS" route add 224.0.0.0/4 dev lo
	# (the receiver's status lands in a file: it runs in the background)
	( (sleep 1; exec $DS timeout 20 ip netns exec "$NS" "$MCKEY" -m $G -b $L4 \
		--udp --settle 0.3 --deadline 10) 2>"$T/mk_r.err" | true
	  echo "${PIPESTATUS[0]}" >"$T/mk_r.rc" ) &
	mkr=$!
	(sleep 2.5; exec $DS timeout 20 ip netns exec "$NS" "$MCKEY" -m $G -b $L4 \
		-s --udp --settle 0.3) 2>"$T/mk_s.err" | true
	st=${PIPESTATUS[0]}
	# not killed by SIGPIPE (141), and not silent either: one line, and
	# the write's -EPIPE as its status (mckey.1, EXIT STATUS)
	assert_exit "mckey sender with a closed stdout: exit 224 (-EPIPE), not SIGPIPE" \
		224 "$st" "$T/mk_s.err"
	assert_lines "mckey sender with a closed stdout: says so in one line" 1 \
		"$T/mk_s.err" '^mckey: write error on standard output: Broken pipe$'
	wait "$mkr"
	assert_exit_not "mckey receiver with a closed stdout: not killed by SIGPIPE" 141 \
		"$(cat "$T/mk_r.rc" 2>/dev/null)" "$T/mk_r.err"
	say "mckey receiver exit status $(cat "$T/mk_r.rc" 2>/dev/null)"
	ip netns del "$NS" 2>/dev/null
else
	skip "mckey SIGPIPE: needs MCKEY, root, ip and network namespaces"
fi

e2e_done
