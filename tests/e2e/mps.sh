#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# rstream --mps (issue 42 item 1), over TCP on loopback: iterations on a
# fixed schedule, each round trip counted from its time on the schedule
# (no coordinated omission).  A server stopped 300 ms in a 2 s run at
# 10,000 a second holds up about 3,000 requests: paced, p99 is 100 ms or
# more and the late ones are counted; the same stall unpaced is one slow
# sample (max 250 ms or more, p99 under 100 ms).  The asked and achieved
# rates in text and JSON, per connection with -c, --interval's progress,
# -D (by the clock, also behind the schedule), an interrupt while paced,
# an upstream server, and the refusals.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

R=$RSTREAM
H=127.0.0.1
T=$E2E_TMP
UP=/usr/bin/rstream

# The rate of the stall's run: 10,000 a second for 2 s; under ASan, whose
# round trips (about 50 us beside the suite) leave 10,000 a second only a
# 2 x margin, 5,000 (1,500 due in the stall); under valgrind, slower
# still, 1,000 (about 300 due in the stall, still 15 % of the samples).
RATE=10000
DRATE=2000
[ "$E2E_SAN" = yes ] && RATE=5000
[ "$E2E_VG" = 1 ] && RATE=1000 && DRATE=1000
N=$((RATE * 2))

# stalled NAME ARGS...: a client run against a fresh --once server that
# is stopped for 300 ms, 0.5 s into the data
stalled() {
	local name=$1 p
	shift
	p=$(e2e_port)
	start_server "$name.srv" "$p" "$R" -T s -b $H -p "$p" --once || return 1
	bg_start "$name" 60 "$R" -T s -s $H -p "$p" "$@"
	wait_established "$p" 1 5
	wait_traffic "$p" 16384
	sleep 0.5
	spid=$(bg_child_pid "$name.srv")
	kill -STOP "$spid"
	sleep 0.3
	kill -CONT "$spid"
	bg_wait "$name" 60
	bg_wait "$name.srv" 10
}

# paced, the stall in full
if stalled paced -S 64 -C 1 -I $N --mps $RATE --json; then
	assert_exit "--mps $RATE, a server stopped 300 ms" 0 "$RC" "$T/paced.err"
	if out=$(/usr/bin/python3 - "$T/paced.out" "$RATE" <<'PY'
import json, sys
rate = int(sys.argv[2])
recs = [json.loads(l) for l in open(sys.argv[1])]
start = recs[0]
assert start["options"]["mps"] == rate and start["options"]["percentiles"] is True, start
res = [r for r in recs if r["type"] == "result"]
assert len(res) == 1, res
r = res[0]
lat, pace = r["latency"], r["pace"]
assert lat["samples"] == 2 * rate, lat
assert lat["p99_ns"] >= 100e6, lat
assert lat["max_ns"] >= 250e6, lat
assert pace["asked_per_s"] == rate, pace
# never faster than asked; slower only on a host too loaded to keep up
assert 0.5 * rate <= pace["achieved_per_s"] <= 1.05 * rate, pace
# about 0.3 s x rate were due in the stall
assert pace["late"] >= 0.15 * rate, pace
assert pace["late_max_ns"] >= 250e6, pace
print("p50 %.0f us, p99 %.1f ms, max %.1f ms, %d late, achieved %.0f/s" % (
    lat["p50_ns"] / 1e3, lat["p99_ns"] / 1e6, lat["max_ns"] / 1e6,
    pace["late"], pace["achieved_per_s"]))
PY
	); then
		ok "paced: the stall in every round trip it held up ($out)"
	else
		not_ok "paced: p99 >= 100 ms, about 3,000 late, 10,000 a second achieved" "$out" "$(tail -3 "$T/paced.out")"
	fi
fi

# unpaced, the same stall is one sample (-D: 20,000 unpaced are over
# before the stall)
if stalled unpaced -S 64 -C 1 -D 2 --percentiles --json; then
	assert_exit "unpaced, a server stopped 300 ms" 0 "$RC" "$T/unpaced.err"
	if out=$(/usr/bin/python3 - "$T/unpaced.out" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
r = [r for r in recs if r["type"] == "result"][0]
lat = r["latency"]
assert "pace" not in r and "mps" not in recs[0]["options"], r
assert lat["max_ns"] >= 250e6, lat
assert lat["p99_ns"] < 100e6, lat
print("p99 %.1f us, max %.1f ms" % (lat["p99_ns"] / 1e3, lat["max_ns"] / 1e6))
PY
	); then
		ok "unpaced: the stall is one sample, p99 far below it ($out)"
	else
		not_ok "unpaced: max >= 250 ms, p99 < 100 ms" "$out"
	fi
fi

P=$(e2e_port)
if start_server srv "$P" "$R" -T s -b $H -p "$P"; then
	# the text: the latency table and the pace table after the rows
	run_cmd text 30 "$R" -T s -s $H -p "$P" -S 64 -C 1 -I 500 --mps 1000
	assert_exit "--mps 1000, text" 0 "$RC" "$T/text.err"
	check_row "$T/text.out" custom 64 1 500 62k 1 "--mps 1000"
	assert_match "--mps: the latency table" '^name +samples +min_us +p50_us' "$T/text.out"
	assert_match "--mps: the pace table" '^name +asked/s +achieved/s +late +max_late_us$' "$T/text.out"
	# 500 at 1,000 a second: half a second (the last is due at 0.499 s),
	# never less; more only on a host too loaded to keep up
	if awk '$1 == "custom" && NF == 5 && $2 == 1000 && $3 >= 500 && $3 <= 1050 { f = 1 } END { exit !f }' "$T/text.out" &&
		awk '$1 == "custom" && NF == 8 { t = $6 + 0 } END { exit !(t >= 0.49 && t <= 1.0) }' "$T/text.out"; then
		ok "--mps 1000: 500 iterations in about half a second, 1000 asked, $(awk '$1 == "custom" && NF == 5 { print $3 }' "$T/text.out") achieved"
	else
		not_ok "--mps 1000: the rate kept" "$(cat "$T/text.out")"
	fi

	# -c 2: the rate is each connection's; the aggregate's samples both
	run_cmd c2 30 "$R" -T s -s $H -p "$P" -S 64 -C 1 -I 300 -c 2 --mps 1000 --json --per-conn
	assert_exit "-c 2 --mps 1000" 0 "$RC" "$T/c2.err"
	if out=$(/usr/bin/python3 - "$T/c2.out" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
res = [r for r in recs if r["type"] == "result"]
one = [r for r in res if "conn_index" in r]
r = [r for r in res if "connections" in r][0]
assert len(one) == 2 and all(o["pace"]["asked_per_s"] == 1000 for o in one), one
# the aggregate as rstream(1) says: late summed, the latest of all, the
# mean iterations over the mean time
assert r["pace"]["late"] == sum(o["pace"]["late"] for o in one), (r, one)
assert r["pace"]["late_max_ns"] == max(o["pace"]["late_max_ns"] for o in one), (r, one)
assert abs(r["pace"]["achieved_per_s"] - r["iters"] / r["conn_mean_elapsed_s"]) < 0.01, r
assert r["connections"] == 2 and r["latency"]["samples"] == 600, r
assert r["pace"]["asked_per_s"] == 1000 and 500 <= r["pace"]["achieved_per_s"] <= 1050, r
assert 0.299 <= r["elapsed_s"] <= 1.0, r
print("%.0f a second per connection, %d samples in %.2f s" % (
    r["pace"]["achieved_per_s"], r["latency"]["samples"], r["elapsed_s"]))
PY
	); then
		ok "-c 2: the rate per connection ($out)"
	else
		not_ok "-c 2: the rate per connection" "$out"
	fi

	# -D: the schedule runs for the duration
	run_cmd dur 30 "$R" -T s -s $H -p "$P" -S 64 -C 1 -D 0.5 --mps $DRATE -T a
	assert_exit "-D 0.5 --mps $DRATE -T a" 0 "$RC" "$T/dur.err"
	# (-D is the clock's: a host too loaded to keep up runs fewer)
	if awk -v w=$((DRATE / 2)) '$1 == "custom" && NF == 8 { i = $4; sub(/k$/, "000", i); n = i + 0 } END { exit !(n >= 0.5 * w && n <= 1.1 * w) }' "$T/dur.out"; then
		ok "-D 0.5 at $DRATE a second: about $((DRATE / 2)) iterations ($(awk '$1 == "custom" && NF == 8 { print $4 }' "$T/dur.out"))"
	else
		not_ok "-D 0.5 at $DRATE a second: about $((DRATE / 2)) iterations" "$(cat "$T/dur.out")"
	fi

	# -D ends a run behind its schedule by the clock, not by the
	# schedule: iterations of 5,000 transfers cannot keep 1,000 a
	# second, and the schedule's -D 1 (its 1,000th iteration) took 9.5 s
	# for 10 a second of a second each
	run_cmd late 60 "$R" -T s -s $H -p "$P" -S 64 -C 5000 -D 1 --mps 1000
	assert_exit "-D 1 --mps 1000, iterations of 5,000 transfers" 0 "$RC" "$T/late.err"
	assert_le "... over by the clock: within 5 s ($ELAPSED_MS ms)" \
		"$ELAPSED_MS" "$(tscale 5000)"

	# interrupted while a request waits its time: the failure is the
	# test's, at its send (it named the negotiation)
	bg_start intr 30 "$R" -T s -s $H -p "$P" -S 64 -C 1 -D 5 --mps 2
	sleep 1.2
	kill -INT "$(bg_child_pid intr)"
	bg_wait intr 10
	assert_exit "--mps 2, SIGINT while paced" 130 "$RC" "$T/intr.err"
	assert_match "... the line names the test's send, not the negotiation" \
		'test custom \(1 of 1\), send, iteration [0-9]+.*interrupted by SIGINT' \
		"$T/intr.err"

	# --interval: progress as for other runs
	run_cmd iv 30 "$R" -T s -s $H -p "$P" -S 64 -C 1 -I 1200 --mps 1000 --interval 0.3
	assert_exit "--mps with --interval" 0 "$RC" "$T/iv.err"
	if [ "$(grep -c 'custom' "$T/iv.err")" -ge 2 ]; then
		ok "--interval: $(grep -c custom "$T/iv.err") progress lines in 1.2 s"
	else
		not_ok "--interval: progress lines" "$(cat "$T/iv.err")"
	fi
	bg_stop srv
fi

# an upstream server: only the client paces
if [ -x "$UP" ]; then
	P=$(e2e_port)
	if start_server up "$P" "$UP" -T s -b $H -p "$P" -S 64 -C 1 -I 400; then
		run_cmd upc 30 "$R" -T s -s $H -p "$P" -S 64 -C 1 -I 400 --mps 2000 --no-negotiate
		assert_exit "--mps against upstream's server" 0 "$RC" "$T/upc.err"
		check_row "$T/upc.out" custom 64 1 400 50k 1 "--mps against upstream"
		assert_match "--mps against upstream: the pace table" '^custom +2000 ' "$T/upc.out"
		bg_wait up 10
	fi
else
	skip "--mps against upstream's server" "$UP not installed"
fi

# the refusals: one line, exit 1
CLOSED=$(e2e_port)
refused() { # WANT ARGS...
	local want=$1
	shift
	run_cmd bad 10 "$R" -T s "$@"
	if [ "$RC" = 1 ] && [ "$(wc -l <"$T/bad.err")" = 1 ] && grep -qF -- "$want" "$T/bad.err"; then
		ok "$*: refused ($(cat "$T/bad.err"))"
	else
		not_ok "$*: refused with '$want'" "exit $RC: $(cat "$T/bad.err")"
	fi
}
refused "for --mps: must be 1 to 10000000" -s $H -p "$CLOSED" --mps 20000000
refused "for --mps: must be 1 to 10000000" -s $H -p "$CLOSED" --mps 1k5
refused "--mps cannot be combined with --split" -s $H -p "$CLOSED" --mps 100 --split
refused "--mps is a client option" -b $H -p "$CLOSED" --mps 100

e2e_done
