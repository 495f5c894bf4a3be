#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# rstream --fail-if (issue 42 item 2), over TCP on loopback: thresholds
# that hold leave the run's status alone; one that fails ends it with
# exit status 8 and one line on stderr naming the threshold, the test and
# the measured value; --json gives a threshold record for each; a run
# that fails for another reason keeps its own status; a stall of the
# server shows in the max a threshold catches; bad expressions are
# refused in one line (exit 1), and a server refuses the option.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

R=$RSTREAM
H=127.0.0.1
T=$E2E_TMP

P=$(e2e_port)
if start_server srv "$P" "$R" -T s -b $H -p "$P"; then
	# thresholds that hold: the table as ever, no line, exit 0
	run_cmd pass 30 "$R" -T s -s $H -p "$P" -S 64 -C 1 -I 2000 \
		--fail-if 'p99>10s' --fail-if 'gbps<0.000001' --fail-if 'usec>1000000'
	assert_exit "thresholds that hold" 0 "$RC" "$T/pass.err"
	check_header "$T/pass.out" 1 "thresholds that hold"
	if [ ! -s "$T/pass.err" ] && ! grep -q 'p50\|p99' "$T/pass.out"; then
		ok "thresholds that hold: nothing on stderr, no latency table (not asked for)"
	else
		not_ok "thresholds that hold: nothing on stderr, no latency table" "$(head -3 "$T/pass.err" "$T/pass.out")"
	fi

	# a threshold no round trip can meet: exit 8, one line, the test
	# and the value; the others that hold say nothing
	run_cmd fail 30 "$R" -T s -s $H -p "$P" -S 64 -C 1 -I 2000 \
		--fail-if 'p99>10s' --fail-if 'min<1s'
	assert_exit "a threshold that fails" 8 "$RC" "$T/fail.err"
	if [ "$(wc -l <"$T/fail.err")" = 1 ] &&
		grep -Eq "^rstream: --fail-if 'min<1s': failed: custom min [0-9.]+ (ns|us|ms), (under 0.01|[0-9.]+) x the limit$" "$T/fail.err"; then
		ok "a threshold that fails: one line naming it, the test and the value ($(cat "$T/fail.err"))"
	else
		not_ok "a threshold that fails: one line" "$(cat "$T/fail.err")"
	fi

	# the default run (8 tests): the worst test is named
	run_cmd def 120 "$R" -T s -s $H -p "$P" --fail-if 'gbps>0.000001'
	assert_exit "the default run, a bandwidth ceiling every test passes" 8 "$RC" "$T/def.err"
	if grep -Eq "^rstream: --fail-if 'gbps>0.000001': failed: [0-9a-z]+_(lat|bw) gbps [0-9.]+ Gb/s" "$T/def.err"; then
		ok "the default run: the line names the worst of its 8 tests ($(cut -c1-100 "$T/def.err"))"
	else
		not_ok "the default run: the line names the worst test" "$(cat "$T/def.err")"
	fi

	# --json: a threshold record each, the error record, status 8
	run_cmd js 30 "$R" -T s -s $H -p "$P" -S 64 -C 1 -I 500 --json \
		--fail-if 'p99.9>10s' --fail-if 'max<1s'
	assert_exit "--json, one threshold failing" 8 "$RC" "$T/js.err"
	if /usr/bin/python3 - "$T/js.out" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
th = [r for r in recs if r["type"] == "threshold"]
assert [t["expr"] for t in th] == ["p99.9>10s", "max<1s"], th
assert th[0]["passed"] is True and th[1]["passed"] is False, th
assert th[1]["measure"] == "max" and th[1]["op"] == "<" and th[1]["unit"] == "ns"
assert th[1]["limit"] == 1e9 and 0 < th[1]["worst"] < 1e9 and th[1]["test"] == "custom"
res = [r for r in recs if r["type"] == "result"][0]
assert th[1]["worst"] == res["latency"]["max_ns"], (th[1], res)
err = [r for r in recs if r["type"] == "error"]
assert err and err[0]["exit_status"] == 8, err
assert recs[-1]["type"] == "summary" and recs[-1]["exit_status"] == 8
PY
	then
		ok "--json: a threshold record each (passed or not, the worst value is the result's), the error record, exit status 8 in the summary"
	else
		not_ok "--json threshold records" "$(grep threshold "$T/js.out" | head -3)"
	fi

	# -c 2: the aggregate row is judged
	run_cmd c2 30 "$R" -T s -s $H -p "$P" -S 64 -C 1 -I 500 -c 2 --fail-if 'min<1s'
	assert_exit "-c 2: the aggregate is judged" 8 "$RC" "$T/c2.err"
	grep -q "custom min" "$T/c2.err" && ok "-c 2: the aggregate's line" ||
		not_ok "-c 2: the aggregate's line" "$(cat "$T/c2.err")"
	bg_stop srv
fi

# A server that stalls 300 ms: its max shows it, and a 100 ms ceiling
# catches it
P=$(e2e_port)
if start_server st "$P" "$R" -T s -b $H -p "$P" --once; then
	bg_start stc 30 "$R" -T s -s $H -p "$P" -S 64 -C 1 -D 1.5 --fail-if 'max>100ms'
	wait_established "$P" 1 5
	wait_traffic "$P" 16384
	sleep 0.4
	spid=$(bg_child_pid st)
	kill -STOP "$spid"
	sleep 0.3
	kill -CONT "$spid"
	bg_wait stc 30
	assert_exit "a server stopped 300 ms, 'max>100ms'" 8 "$RC" "$T/stc.err"
	if grep -Eq "failed: custom max (2[5-9][0-9]|[3-9][0-9][0-9])\.[0-9]+ ms" "$T/stc.err"; then
		ok "the stall in the max: $(cat "$T/stc.err")"
	else
		not_ok "the stall in the max (250 ms or more)" "$(cat "$T/stc.err")"
	fi
	bg_wait st 10
fi

# A run that fails otherwise keeps its own status, and no threshold line
CLOSED=$(e2e_port)
run_cmd refused 20 "$R" -T s -s $H -p "$CLOSED" --fail-if 'p99>1us'
assert_exit "a refused connection keeps exit 3" 3 "$RC" "$T/refused.err"
grep -q -- '--fail-if' "$T/refused.err" && not_ok "no threshold line after another failure" "$(cat "$T/refused.err")" ||
	ok "no threshold line after another failure"

# bad expressions: one line, exit 1
bad() { # EXPR WANT
	run_cmd bad 10 "$R" -T s -s $H -p "$CLOSED" --fail-if "$1"
	if [ "$RC" = 1 ] && [ "$(wc -l <"$T/bad.err")" = 1 ] && grep -qF -- "$2" "$T/bad.err"; then
		ok "--fail-if '$1': refused ($(cat "$T/bad.err"))"
	else
		not_ok "--fail-if '$1': refused with '$2'" "exit $RC: $(cat "$T/bad.err")"
	fi
}
bad 'p99>50' "give p99's limit with its unit"
bad 'p98>50us' "the measure must be one of"
bad 'loss>1' "the measure must be one of"
bad 'p99=50us' "p99 must be followed by > or <"
bad 'p99>-5us' "the limit must be a number of 0 or more"
bad 'gbps<10x' "gbps takes Gb/s"
bad 'max>1ms junk' "'junk' after the limit"
run_cmd srvopt 10 "$R" -T s -b $H -p "$CLOSED" --fail-if 'p99>5us'
assert_exit "a server refuses --fail-if" 1 "$RC" "$T/srvopt.err"

e2e_done
