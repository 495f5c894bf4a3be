#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The -T test options with -T s: n, a, b, a+b, b+n, each with and without
# v, across server and client; f (fork server); r (resolve); and the CPU
# use of an idle server.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

R=$RSTREAM
H=127.0.0.1
T=$E2E_TMP

# mode name -> -T flags
declare -A MODE=(
	[n]="-T n"
	[a]="-T a"
	[b]="-T b"
	[ab]="-T a -T b"
	[bn]="-T b -T n"
)
CUS=(-S 4096 -C 100 -I 10)
CUS_ROW=(custom 4k 100 10 7.8m)

# ---- every server mode against every client mode, with and without -T v
# (a -T v client speaks upstream's wire, so the server is given the same
# custom test; a client without -T v negotiates it anyway)
for sm in n a b ab bn; do
	P=$(e2e_port)
	# shellcheck disable=SC2086
	start_server "srv_$sm" "$P" "$R" -T s ${MODE[$sm]} -T v -p "$P" "${CUS[@]}" || continue
	runs=0
	for cm in n a b ab bn; do
		for v in "" v; do
			name="c_${sm}_${cm}${v:+_v}"
			# shellcheck disable=SC2086
			run_cmd "$name" 30 "$R" -T s ${MODE[$cm]} ${v:+-T v} -s $H \
				-p "$P" "${CUS[@]}"
			assert_exit "server -T ${sm}+v, client -T ${cm}${v:++v}" 0 "$RC" \
				"$T/$name.out" "$T/$name.err" "$T/srv_$sm.err"
			check_row "$T/$name.out" "${CUS_ROW[@]}" 1 \
				"server -T ${sm}+v, client -T ${cm}${v:++v}"
			runs=$((runs + 1))
		done
	done
	wait_count "$T/srv_$sm.out" "$(row_regex "${CUS_ROW[@]}")" "$runs" 3
	check_row "$T/srv_$sm.out" "${CUS_ROW[@]}" "$runs" "server -T ${sm}+v"
	assert_empty "server -T ${sm}+v: no dropped connection" "$T/srv_$sm.err"
	bg_stop "srv_$sm" 5
	assert_exit "server -T ${sm}+v: SIGTERM exits 0" 0 "$RC" "$T/srv_$sm.err"
done

# ---- default runs in the other modes: -T a -T v and -T b, both sides
# (not under valgrind: 55 s there of the same calls as the matrix above
# and basic.sh's default run, which memcheck sees already)
if [ "$E2E_VG" = 1 ]; then
	skip "-T a -T v and -T b default runs: not under valgrind (the matrix above and basic.sh's default run cover their calls)"
else
	P=$(e2e_port)
	if start_server av "$P" "$R" -T s -T a -T v -p "$P" --once; then
		run_cmd avc "$E2E_RUN_SECS" "$R" -T s -T a -T v -s $H -p "$P"
		assert_exit "-T a -T v default run: client" 0 "$RC" "$T/avc.err"
		say "-T a -T v default run took ${ELAPSED_MS} ms"
		check_default_table "$T/avc.out" 1 "-T a -T v default run: client"
		bg_wait av 10
		assert_exit "-T a -T v default run: --once server" 0 "$RC" "$T/av.err"
		check_default_table "$T/av.out" 1 "-T a -T v default run: server"
	fi
	P=$(e2e_port)
	if start_server bb "$P" "$R" -T s -T b -p "$P" --once; then
		run_cmd bbc "$E2E_RUN_SECS" "$R" -T s -T b -s $H -p "$P"
		assert_exit "-T b default run: client" 0 "$RC" "$T/bbc.err"
		say "-T b default run took ${ELAPSED_MS} ms"
		check_default_table "$T/bbc.out" 1 "-T b default run: client"
		bg_wait bb 10
		assert_exit "-T b default run: --once server" 0 "$RC" "$T/bb.err"
		check_default_table "$T/bb.out" 1 "-T b default run: server"
	fi
fi

# pinned_iters FILE: each result record's iterations, those of the
# connections (--per-conn) before the aggregate's, one a line
pinned_iters() {
	/usr/bin/python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["type"] == "result":
        print(r["iters"])' "$1"
}

# ---- -T n (the default) with everything on one CPU: a spin holds the CPU
# its peer's reply needs until its time slice ends, one round trip a
# slice (upstream's rstream: 4 ms each here, 500 in 2 s).  The CPU watch
# (src/stream/session/sched.h) finds the spin contended and its waits
# sleep: about 100,000 in 2 s here.  A fork server's children beside a
# -c 3 client likewise (before the watch: 125 each in 2 s).
pinned_spin() { # CPU
	local cpu=$1 P n min max
	P=$(e2e_port)
	if start_server npin "$P" taskset -c "$cpu" "$R" -T s -p "$P" --once; then
		run_cmd npinc 30 taskset -c "$cpu" "$R" -T s --trace -s $H \
			-p "$P" -S 64 -C 1 -D 2 --json
		assert_exit "-T n, both sides on CPU $cpu: the client" 0 "$RC" \
			"$T/npinc.err" "$T/npin.err"
		n=$(pinned_iters "$T/npinc.out")
		say "-T n, both on CPU $cpu: ${n:-no} round trips in 2 s"
		assert_le "-T n, both sides on one CPU: 5,000 round trips or more in 2 s" \
			5000 "${n:-0}"
		assert_match "... the client's spin found the CPU wanted (--trace)" \
			'conn 1: spin: the CPU is wanted \([0-9]+ contended windows\): -T n waits sleep for the next [0-9]+ ms' \
			"$T/npinc.err"
		# and the result says how often, without --trace
		assert_le "... the result counts its sleeps (JSON spin_sleeps)" 1 \
			"$(grep '"type":"result"' "$T/npinc.out" | jq -r '.spin_sleeps // 0' | head -1)"
		if /usr/bin/python3 "$E2E_SRCDIR/tests/jsonschema-check.py" \
			"$EVR_BUILDDIR/doc/rstream.schema.json" "$T/npinc.out" >"$T/npinc.check" 2>&1; then
			ok "... its records, spin_sleeps included, match the schema"
		else
			not_ok "... its records match the schema" "$(grep -v '^types:' "$T/npinc.check" | head -3)"
		fi
		bg_wait npin 10
		assert_exit "-T n, both sides on CPU $cpu: the --once server" 0 "$RC" "$T/npin.err"
	fi
	P=$(e2e_port)
	if start_server fpin "$P" taskset -c "$cpu" "$R" -T s -T f -p "$P"; then
		run_cmd fpinc 30 taskset -c "$cpu" "$R" -T s -s $H -p "$P" -c 3 \
			--per-conn -S 64 -C 1 -D 2 --json
		assert_exit "-T f, a -c 3 client, all on CPU $cpu: the client" 0 "$RC" \
			"$T/fpinc.err" "$T/fpin.err"
		pinned_iters "$T/fpinc.out" | head -3 | sort -n >"$T/fpin.n"
		min=$(head -1 "$T/fpin.n")
		max=$(tail -1 "$T/fpin.n")
		say "-T f, -c 3, all on CPU $cpu: $(tr '\n' ' ' <"$T/fpin.n")round trips in 2 s"
		assert_eq "... three connections" 3 "$(wc -l <"$T/fpin.n")"
		assert_le "... each child 1,000 round trips or more" 1000 "${min:-0}"
		assert_le "... the least served at least a quarter of the most" \
			"$(( ${max:-0} / 4 ))" "${min:-0}"
		bg_stop fpin 5
		assert_exit "-T f server, all on one CPU: SIGTERM exits 0" 0 "$RC" "$T/fpin.err"
	fi
}

# ---- -T a with both sides on one CPU (taskset): a poll holds the CPU its
# reply needs until the kernel preempts it, a few ms each round trip (a
# default run's 100,000 then took over 4 minutes).  A poll that loses its
# CPU sleeps and backs off, so the ping-pong goes at the pace of sleeps
# and wake-ups (about 1 s for 20,000 here; unpinned, 0.15 s).
if command -v taskset >/dev/null 2>&1; then
	cpu=$(taskset -pc $$ | sed 's/.*: *//; s/[,-].*//')
	P=$(e2e_port)
	if start_server pin "$P" taskset -c "$cpu" "$R" -T s -T a -p "$P" --once; then
		run_cmd pinc 60 taskset -c "$cpu" "$R" -T s -T a --trace -s $H \
			-p "$P" -S 64 -C 1 -I 20000
		assert_exit "-T a, both sides on CPU $cpu: the client" 0 "$RC" \
			"$T/pinc.err" "$T/pin.err"
		say "-T a, both on CPU $cpu: 20,000 round trips in ${ELAPSED_MS} ms;" \
			"$(grep -o 'poll: .*' "$T/pinc.err" | head -1)"
		assert_le "-T a, both sides on one CPU: 20,000 round trips in under 15 s" \
			"$ELAPSED_MS" "$(tscale 15000)"
		lost=$(sed -n 's/.*conn 1: poll: .* ran out, \([0-9]*\) lost the CPU.*/\1/p' "$T/pinc.err")
		assert_le "... its polls saw the CPU taken (--trace: 'lost the CPU')" 1 "${lost:-0}"
		bg_wait pin 10
		assert_exit "-T a, both sides on CPU $cpu: the --once server" 0 "$RC" "$T/pin.err"
	fi
	pinned_spin "$cpu"
else
	not_ok "taskset is installed (util-linux)"
fi

# ---- -T f: a server that forks per connection
P=$(e2e_port)
if start_server fork "$P" "$R" -T s -T f -p "$P"; then
	srv=$(bg_child_pid fork)
	# one after the other
	run_cmd f1 30 "$R" -T s -s $H -p "$P" -S 1000 -C 100 -I 10
	assert_exit "-T f: first client" 0 "$RC" "$T/f1.err" "$T/fork.err"
	run_cmd f2 30 "$R" -T s -s $H -p "$P" -S 64k -C 10 -I 2
	assert_exit "-T f: second client, one after the other" 0 "$RC" "$T/f2.err"
	check_row "$T/f1.out" custom 1000 100 10 1.9m 1 "-T f: first client"
	check_row "$T/f2.out" custom 64k 10 2 2.5m 1 "-T f: second client"
	wait_match "$T/fork.out" "$(row_regex custom 64k 10 2 2.5m)" 3
	check_row "$T/fork.out" custom 1000 100 10 1.9m 1 "-T f: server (child) rows"
	check_row "$T/fork.out" custom 64k 10 2 2.5m 1 "-T f: server (child) rows"
	# two at the same time: the parent goes on accepting while its
	# children serve (upstream's parent waits for each child)
	bg_start fa 60 "$R" -T s -T a -s $H -p "$P" -S 64 -C 1 -I 40000
	bg_start fb 60 "$R" -T s -T a -s $H -p "$P" -S 64 -C 1 -I 40000
	nmax=0
	end=$(( $(now_ms) + 10000 ))
	while [ "$(now_ms)" -lt "$end" ] && { bg_alive fa || bg_alive fb; }; do
		n=$(ps -o pid= --ppid "$srv" 2>/dev/null | wc -l)
		[ "$n" -gt "$nmax" ] && nmax=$n
		[ "$nmax" -ge 2 ] && break
		sleep 0.02
	done
	assert_eq "-T f: two clients served by two children at once" 2 "$nmax"
	bg_wait fa 60
	assert_exit "-T f: concurrent client A" 0 "$RC" "$T/fa.err"
	bg_wait fb 60
	assert_exit "-T f: concurrent client B" 0 "$RC" "$T/fb.err"
	check_row "$T/fa.out" custom 64 1 40k 4.8m 1 "-T f: concurrent client A"
	check_row "$T/fb.out" custom 64 1 40k 4.8m 1 "-T f: concurrent client B"
	wait_match "$T/fork.out" "$(row_regex custom 64 1 40k 4.8m)" 3
	sleep 0.2
	check_row "$T/fork.out" custom 64 1 40k 4.8m 2 "-T f: server (children) rows"
	check_header "$T/fork.out" 1 "-T f: server header printed once, not per child"
	n=$(ps -o pid= --ppid "$srv" 2>/dev/null | wc -l)
	assert_eq "-T f: children reaped" 0 "$n"
	assert_empty "-T f: server stderr empty" "$T/fork.err"
	# SIGTERM while a child serves: the child goes too, the client fails
	bg_start flong 60 "$R" -T s -T a -s $H -p "$P" -S 64 -C 1 -I 100000000
	kids=""
	end=$(( $(now_ms) + 5000 ))
	while [ -z "$kids" ] && [ "$(now_ms)" -lt "$end" ]; do
		kids=$(ps -o pid= --ppid "$srv" 2>/dev/null | tr -d ' ')
		sleep 0.02
	done
	sleep 0.3
	bg_stop fork 5
	assert_exit "-T f: server SIGTERM exits 0 while a child serves" 0 "$RC" \
		"$T/fork.err"
	assert_le "-T f: within 2 s (ms)" "$ELAPSED_MS" "$(tscale 2000)"
	left=""
	for k in $kids; do
		kill -0 "$k" 2>/dev/null && left="$left $k"
	done
	assert_eq "-T f: no child left behind (children were:${kids:+ }$kids)" "" "$left"
	bg_wait flong 5
	assert_exit "-T f: the client of the stopped server fails" 4 "$RC" "$T/flong.err"
fi

# -T f with -T v and the default run (upstream's bandwidth child restarts
# its verify counter and fails at byte 0, then hangs)
P=$(e2e_port)
if start_server forkv "$P" "$R" -T s -T f -T v -T a -p "$P" --once; then
	run_cmd fvc "$E2E_RUN_SECS" "$R" -T s -T v -T a -s $H -p "$P"
	assert_exit "-T f -T v default run: client" 0 "$RC" "$T/fvc.out" "$T/fvc.err" \
		"$T/forkv.err"
	say "-T f -T v default run took ${ELAPSED_MS} ms"
	check_default_table "$T/fvc.out" 1 "-T f -T v default run: client"
	bg_wait forkv 10
	assert_exit "-T f -T v default run: --once fork server exits 0" 0 "$RC" \
		"$T/forkv.err"
	check_default_table "$T/forkv.out" 1 "-T f -T v default run: server"
	assert_no_match "-T f -T v: no verification failure" 'verification' "$T/forkv.err"
fi

# ---- -T r: resolve with rdma_getaddrinfo (RDMA CM).  On this host, with
# no RDMA device, upstream fails with a misleading "getaddrinfo: Bad value
# for ai_flags" (exit 255); ours must fail at once, with one line naming
# rdma_getaddrinfo and the real reason, a documented status, and no hang.
if [ -x "$UPSTREAM" ]; then
	P=$(e2e_port)
	run_cmd upr 5 "$UPSTREAM" -T s -T r -p "$P"
	say "upstream 'rstream -T s -T r' server: exit $RC:" \
		"$(cat "$T/upr.out" "$T/upr.err" | tr '\n' '|')"
	run_cmd uprc 5 "$UPSTREAM" -T s -T r -s $H -p "$P"
	say "upstream 'rstream -T s -T r -s $H' client: exit $RC:" \
		"$(cat "$T/uprc.err" "$T/uprc.out" | grep -v '^name' | tr '\n' '|')"
fi
if [ -n "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
	skip "-T r: this host has RDMA devices; the no-device case does not apply"
else
	P=$(e2e_port)
	run_cmd rrs 10 "$R" -T s -T r -p "$P"
	say "our 'rstream -T s -T r' server: exit $RC: $(cat "$T/rrs.err")"
	assert_exit "-T s -T r server, no RDMA device: upstream's no-device status" 255 "$RC" \
		"$T/rrs.out" "$T/rrs.err"
	assert_le "-T s -T r server: fails at once (ms)" "$ELAPSED_MS" "$(tscale 3000)"
	assert_lines "-T s -T r server: one line on stderr" 1 "$T/rrs.err"
	assert_match "-T s -T r server: names -T r and the missing device" \
		"^rstream: -T r resolves addresses through the RDMA CM, which needs an RDMA device: No RDMA devices were detected\$" "$T/rrs.err"
	assert_empty "-T s -T r server: no header (it never listened)" "$T/rrs.out"
	run_cmd rrc 10 "$R" -T s -T r -s $H -p "$P"
	say "our 'rstream -T s -T r -s $H' client: exit $RC: $(cat "$T/rrc.err")"
	assert_exit "-T s -T r client, no RDMA device: upstream's no-device status" 255 "$RC" \
		"$T/rrc.err"
	assert_lines "-T s -T r client: one line on stderr" 1 "$T/rrc.err"
	assert_match "-T s -T r client: names -T r and the missing device" \
		"^rstream: -T r resolves addresses through the RDMA CM, which needs an RDMA device" "$T/rrc.err"
	run_cmd rnodev 10 "$R" -T r -s $H -p "$P"
	assert_exit "-T r without -T s: no RDMA devices" 255 "$RC" "$T/rnodev.err"
	assert_match "-T r without -T s: says so" '^No RDMA devices were detected$' \
		"$T/rnodev.err"
fi

# ---- CPU use of an idle server (ours waits in the loop; upstream's
# non-blocking accept spins)
idle_cpu() { # NAME FLAGS...: PCT = the CPU % of an idle server
	local name=$1 p pid
	shift
	PCT=""
	p=$(e2e_port)
	start_server "$name" "$p" "$@" -p "$p" || return 1
	sleep 0.2
	pid=$(bg_child_pid "$name") || return 1
	PCT=$(cpu_percent "$pid" 1)
}
for m in "-T a" "" "-T b" "-T f"; do
	name="idle${m// /}"
	# shellcheck disable=SC2086
	idle_cpu "$name" "$R" -T s $m
	say "our idle server 'rstream -T s $m': ${PCT:-?}% CPU"
	if [ -n "$PCT" ]; then
		assert_le "our idle server -T s $m uses < 5% CPU" "$PCT" 4
	else
		not_ok "our idle server -T s $m: CPU measured"
	fi
	bg_stop "$name" 5
done
# -T a: a connected client that says nothing costs nothing either (in
# the default mode a waiting connection spins, as upstream's does)
for m in a n; do
	case $m in a) f="-T a" ;; n) f="" ;; esac
	P=$(e2e_port)
	# shellcheck disable=SC2086
	start_server "quiet_$m" "$P" "$R" -T s $f -p "$P" || continue
	FAKE_HOLD=10 fake_start "qfake_$m" 20 silent "$P"
	wait_match "$T/qfake_$m.out" connected 5
	sleep 0.2
	pct=$(cpu_percent "$(bg_child_pid "quiet_$m")" 1)
	say "our server 'rstream -T s $f' with a silent client connected: ${pct:-?}% CPU"
	if [ "$m" = a ]; then
		assert_le "our -T a server with a silent client uses < 5% CPU" "${pct:-100}" 4
	fi
	bg_kill "qfake_$m"
	bg_stop "quiet_$m" 5
done

# -T a polls only while a connection is in a fast exchange: 1000 clients
# that say nothing cost nothing, a busy one among them gets its run, and
# the silent ones cost nothing again after it
P=$(e2e_port)
if start_server many_quiet "$P" "$R" -T s -T a -p "$P"; then
	FAKE_HOLD=$(tscale 30) fake_start quiet1000 60 silent-many "$P" 1000
	if wait_match "$T/quiet1000.out" 'connected 1000' "$(tscale 10)"; then
		# connected is not accepted: the server may still be taking
		# them (each new connection's first wait polls, 200 usec:
		# 0.2 s of CPU for 1000, which valgrind spreads over seconds)
		spid=$(bg_child_pid many_quiet)
		for _ in $(seq 1 $((10 * $(tscale 10)))); do
			[ "$(ls "/proc/$spid/fd" 2>/dev/null | wc -l)" -ge 1000 ] && break
			sleep 0.1
		done
		say "the server holds $(ls "/proc/$spid/fd" 2>/dev/null | wc -l) fds"
		sleep 0.3
		pct=$(cpu_percent "$spid" 1)
		say "our -T a server with 1000 silent clients: ${pct:-?}% CPU"
		assert_le "our -T a server with 1000 silent clients uses < 5% CPU" "${pct:-100}" 4
		run_cmd hot1000 60 "$R" -T s -T a -s $H -p "$P" -S 64 -C 1 -I 5000
		assert_exit "-T a: a busy client among 1000 silent ones runs to its end" 0 "$RC" "$T/hot1000.err"
		say "its row: $(grep -E '^custom' "$T/hot1000.out" || true)"
		sleep 0.3
		pct=$(cpu_percent "$(bg_child_pid many_quiet)" 1)
		say "... after it: ${pct:-?}% CPU"
		assert_le "... and after it, the 1000 silent ones cost < 5% CPU again" "${pct:-100}" 4
	else
		not_ok "1000 silent clients connected to a -T a server"
	fi
	bg_kill quiet1000
	bg_stop many_quiet 5
fi

# --poll-usec sets -T a's poll, seen in how often the client slept: its
# voluntary context switches (getrusage, through /usr/bin/time), each a
# wait in epoll_wait.  0 never polls: a 64-byte ping-pong sleeps in every
# wait whose reply was not there already (45-65% of them here, at least a
# fifth asserted); 100000
# (100 ms, both sides) finds every reply by polling: a handful, however
# loaded the host.
pp_sleeps() { # NAME POLL: SLEPT = the client's sleeps over 2000 iterations
	local p
	SLEPT=""
	p=$(e2e_port)
	start_server "$1s" "$p" "$R" -T s -T a --poll-usec "$2" --once -p "$p" || return 1
	run_cmd "$1" 60 /usr/bin/time -f %w -o "$T/$1.time" \
		"$R" -T s -T a --trace --poll-usec "$2" -s $H -p "$p" -S 64 -C 1 -I 2000
	assert_exit "--poll-usec $2: the ping-pong" 0 "$RC" "$T/$1.err"
	bg_wait "$1s" 10
	SLEPT=$(tail -n 1 "$T/$1.time")
	# conn 1's --trace line: F found, R ran out, L lost the CPU, S slept at once
	read -r FOUND RANOUT LOST ATONCE <<<"$(sed -n 's/.*conn 1: poll: \([0-9]*\) found, \([0-9]*\) ran out, \([0-9]*\) lost the CPU, \([0-9]*\) slept at once.*/\1 \2 \3 \4/p' "$T/$1.err")"
}
if [ "$E2E_VG" = 1 ]; then
	skip "--poll-usec's sleeps counted: not under valgrind (its own scheduling, 20-50x slower, makes the counts valgrind's)"
elif [ ! -x /usr/bin/time ]; then
	not_ok "--poll-usec: /usr/bin/time is installed (scripts/deps.sh)"
else
	if pp_sleeps poll0 0; then
		say "--poll-usec 0: the client went to sleep in ${ATONCE:-?} waits, the kernel switched it out $SLEPT times"
		# (how many waits there are is the host's: a reply already
		# there when the client asks is no wait, and a wait whose reply
		# comes before the loop's epoll_wait is no switch; on this host
		# 1,627 waits of 2,000 round trips, under ASan on a busy one
		# 191 switches.  That it waits at all, and sleeps when it
		# does, is the behaviour; a poll would show in the trace.)
		assert_le "--poll-usec 0: it went to sleep in its waits" 1 "${ATONCE:-0}"
		assert_le "--poll-usec 0: ... and the kernel switched it out" 1 "${SLEPT:-0}"
		assert_eq "--poll-usec 0: --trace counts no poll" "0 0 0" \
			"${FOUND:-?} ${RANOUT:-?} ${LOST:-?}"
	fi
	if pp_sleeps pollmax 100000; then
		say "--poll-usec 100000: the client slept $SLEPT times in 2000" \
			"ping-pongs; its polls: ${FOUND:-?} found, ${RANOUT:-?} ran out," \
			"${LOST:-?} lost the CPU, ${ATONCE:-?} slept at once"
		# (a busy host takes the CPU from some polls: each then sleeps,
		# and the next few waits too, which the trace counts)
		assert_eq "--poll-usec 100000: no poll ran out" 0 "${RANOUT:-?}"
		assert_le "--poll-usec 100000: every other reply found polling" \
			"$SLEPT" $((100 + ${LOST:-0} + ${ATONCE:-0}))
		assert_match "--poll-usec 100000: the poll's length, traced" \
			"conn 1: poll: .* 100000 usec at the end" "$T/pollmax.err"
	fi
fi
run_cmd pollbad 10 "$R" -T s -s $H --poll-usec 50
assert_exit "--poll-usec without -T a: a usage error" 1 "$RC" "$T/pollbad.err"
assert_match "... saying so" "^rstream: --poll-usec is -T a's poll" "$T/pollbad.err"

# ... and stays idle after serving a client
P=$(e2e_port)
if start_server idle_after "$P" "$R" -T s -p "$P"; then
	run_cmd ia 30 "$R" -T s -s $H -p "$P" -S 4096 -C 100 -I 10
	assert_exit "idle after a client: the client" 0 "$RC" "$T/ia.err"
	sleep 0.2
	pct=$(cpu_percent "$(bg_child_pid idle_after)" 1)
	say "our default-mode server after serving a client: ${pct:-?}% CPU"
	assert_le "our server is idle again after its client left (< 5% CPU)" \
		"${pct:-100}" 4
	bg_stop idle_after 5
fi
if [ -x "$UPSTREAM" ]; then
	P=$(e2e_port)
	bg_start upidle 20 "$UPSTREAM" -T s -p "$P"
	if wait_listen "$P" 5 upidle; then
		sleep 0.2
		pct=$(cpu_percent "$(bg_child_pid upidle)" 1)
		say "upstream idle server 'rstream -T s': ${pct:-?}% CPU (not asserted)"
	fi
	bg_kill upidle
fi

e2e_done
