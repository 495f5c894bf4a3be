#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# --json and --settings end to end: rstream over TCP on 127.0.0.1 (client
# and server, the default run, a custom test, -T v, failures), and mckey
# --udp in a network namespace of our own.  Every line of stdout must be one
# JSON object, parsed by jq; the checks are jq expressions over the whole
# stream of records (jq -s).

# jq programs are in single quotes on purpose ($a is jq's).
# shellcheck disable=SC2016
# shellcheck source=lib.sh
. "${E2E_LIB:?E2E_LIB is not set}"

if ! command -v jq >/dev/null 2>&1; then
	e2e_skip_all "jq is not installed"
fi

# ------------------------------------------------------------ jq helpers

# Every line of FILE is one JSON object with a string "type".
json_lines() { # DESC FILE
	local lines values
	lines=$(wc -l <"$2")
	if ! values=$(jq -s 'length' "$2" 2>"$E2E_TMP/jq.err"); then
		not_ok "$1: stdout is JSON" "$(head -n 3 "$E2E_TMP/jq.err")"
		dump "$2"
		return 1
	fi
	if [ "$lines" != "$values" ] || [ "$lines" = 0 ] ||
	   ! jq -se 'all(.[]; type == "object" and (.type | type) == "string")' \
		"$2" >/dev/null; then
		not_ok "$1: one JSON object a line" "$lines lines, $values values"
		dump "$2"
		return 1
	fi
	ok "$1: $lines lines, each one JSON object with a type"
}

# jq -e FILTER over the array of FILE's records is true.
jq_true() { # DESC FILE FILTER
	if jq -se "$3" "$2" >/dev/null 2>"$E2E_TMP/jq.err"; then
		ok "$1"
	else
		not_ok "$1" "jq: $3" "$(head -n 2 "$E2E_TMP/jq.err")"
		dump "$2"
	fi
}

# The checks every result record must pass: the counts as upstream
# multiplies them, and the rates from the times.
RESULT_OK='
  def close(a; b): ((a - b) | fabs) <= 1e-6 * ([a, b, 1e-9] | map(fabs) | max);
  [.[] | select(.type == "result")] | length > 0 and all(.[];
    (.test | type) == "string" and (.conn | type) == "number" and
    (.peer | type) == "string" and
    .total_bytes == 2 * .bytes_per_xfer * .xfers_per_iter * .iters and
    .elapsed_ns > 0 and close(.elapsed_s; .elapsed_ns / 1e9) and
    close(.gbps; .total_bytes * 8 / .elapsed_ns) and
    close(.usec_per_xfer; .elapsed_ns / 1000 / .iters / (2 * .xfers_per_iter)))'

# The run ends in one summary, the last record, that agrees with the rest.
SUMMARY_OK='
  (map(select(.type == "summary")) | length == 1) and
  (last | .type == "summary" and .tool == "rstream") and
  (last.results == (map(select(.type == "result")) | length)) and
  (last.total_bytes == (map(select(.type == "result") | .total_bytes) | add // 0))'

# TCP settings records: the kernel's buffer sizes and NODELAY.
SETTINGS_OK='
  [.[] | select(.type == "settings")] | length > 0 and all(.[];
    .transport == "tcp" and .sndbuf_bytes > 0 and .rcvbuf_bytes > 0 and
    .nodelay == true and .mss_bytes > 0 and .keepalive == false and
    (.local | test("^127\\.0\\.0\\.1:[0-9]+$")) and
    (.peer | test("^127\\.0\\.0\\.1:[0-9]+$")))'

PORT=$(e2e_port)

# ------------------------------------------------------- server and client

# The server, and the default run, in async mode: they sleep rather than
# spin, which keeps this script light on a shared host.
start_server srv "$PORT" "$RSTREAM" -T s -T a -p "$PORT" --json --settings ||
	e2e_done

# 1. a default run: eight results in upstream's order
run_cmd def "$E2E_RUN_SECS" "$RSTREAM" -T s -T a -s 127.0.0.1 -p "$PORT" \
	--json
assert_exit "default run" 0 "$RC" "$E2E_TMP/def.out" "$E2E_TMP/def.err"
if json_lines "default run" "$E2E_TMP/def.out"; then
	jq_true "default run: start record first" "$E2E_TMP/def.out" \
		'.[0] | .type == "start" and .tool == "rstream" and
		 .mode == "client" and .transport == "tcp" and
		 .io == "async" and (.version | type) == "string" and
		 .options.server == "127.0.0.1" and
		 .options.port == '"$PORT"' and .options.tests == "default"'
	jq_true "default run: 8 results, upstream's series in order" \
		"$E2E_TMP/def.out" \
		'[.[] | select(.type == "result") | .test] | join(" ") ==
		 "'"$E2E_DEFAULT_NAMES"'"'
	jq_true "default run: counts and rates agree" "$E2E_TMP/def.out" \
		"$RESULT_OK"
	jq_true "default run: 64_lat is 64 bytes x 1 x 100000" \
		"$E2E_TMP/def.out" \
		'.[] | select(.test == "64_lat") | .bytes_per_xfer == 64 and
		 .xfers_per_iter == 1 and .iters == 100000 and
		 .total_bytes == 12800000 and .peer == "127.0.0.1:'"$PORT"'"'
	jq_true "default run: summary" "$E2E_TMP/def.out" \
		"$SUMMARY_OK"' and last.exit_status == 0 and last.results == 8'
	jq_true "default run: no settings without --settings" \
		"$E2E_TMP/def.out" 'all(.[]; .type != "settings")'
fi
assert_empty "default run: stderr" "$E2E_TMP/def.err"

# 2. a custom test, with --settings
run_cmd cus 60 "$RSTREAM" -T s -s 127.0.0.1 -p "$PORT" -S 1000 -C 50 \
	-I 20 --json --settings
assert_exit "custom test" 0 "$RC" "$E2E_TMP/cus.out" "$E2E_TMP/cus.err"
if json_lines "custom test" "$E2E_TMP/cus.out"; then
	jq_true "custom test: one result as asked" "$E2E_TMP/cus.out" \
		'[.[] | select(.type == "result")] | length == 1 and
		 (.[0] | .test == "custom" and .bytes_per_xfer == 1000 and
		  .xfers_per_iter == 50 and .iters == 20 and
		  .total_bytes == 2000000)'
	jq_true "custom test: counts and rates agree" "$E2E_TMP/cus.out" \
		"$RESULT_OK"
	jq_true "custom test: start options" "$E2E_TMP/cus.out" \
		'.[0].options | .tests == "custom" and .bytes_per_xfer == 1000 and
		 .xfers_per_iter == 50 and .iters == 20 and .settings == true'
	jq_true "custom test: one settings record, before the result" \
		"$E2E_TMP/cus.out" \
		'(map(.type) | index("settings")) < (map(.type) | index("result"))
		 and (map(select(.type == "settings")) | length == 1) and
		 (.[] | select(.type == "settings") | .peer ==
		  "127.0.0.1:'"$PORT"'")'
	jq_true "custom test: TCP settings" "$E2E_TMP/cus.out" "$SETTINGS_OK"
	jq_true "custom test: summary" "$E2E_TMP/cus.out" \
		"$SUMMARY_OK"' and last.exit_status == 0 and
		 last.total_bytes == 2000000'
fi
assert_empty "custom test: stderr" "$E2E_TMP/cus.err"

# 3. --settings without --json: one line, and the table as it was
run_cmd hum 60 "$RSTREAM" -T s -s 127.0.0.1 -p "$PORT" -S 100 -C 10 -I 5 \
	--settings
assert_exit "human --settings" 0 "$RC" "$E2E_TMP/hum.out" "$E2E_TMP/hum.err"
assert_lines "human --settings: one settings line" 1 "$E2E_TMP/hum.out" \
	"^settings conn [0-9]+ local 127\.0\.0\.1:[0-9]+ peer 127\.0\.0\.1:$PORT: tcp sndbuf [1-9][0-9]* rcvbuf [1-9][0-9]* nodelay 1 mss [1-9][0-9]* keepalive off$"
check_header "$E2E_TMP/hum.out" 1 "human --settings"
check_row "$E2E_TMP/hum.out" custom 100 10 5 9.7k 1 "human --settings"
assert_lines "human --settings: nothing else" 3 "$E2E_TMP/hum.out"

# 4. the server's view of all that
bg_stop srv 10
assert_exit "server stops on SIGTERM" 0 "$RC" "$E2E_TMP/srv.out" \
	"$E2E_TMP/srv.err"
if json_lines "server" "$E2E_TMP/srv.out"; then
	jq_true "server: start and listening" "$E2E_TMP/srv.out" \
		'.[0].type == "start" and .[0].mode == "server" and
		 .[0].options.settings == true and .[1].type == "listening" and
		 .[1].address == "[::]:'"$PORT"'"'
	# default run: 2 connections (latency, bandwidth); custom: 1; human: 1
	jq_true "server: 4 accepted, each with settings and conn_done" \
		"$E2E_TMP/srv.out" \
		'([.[] | select(.type == "accepted") | .conn] | sort) as $a |
		 ($a | length) == 4 and
		 ([.[] | select(.type == "settings") | .conn] | sort) == $a and
		 ([.[] | select(.type == "conn_done") | .conn] | sort) == $a'
	jq_true "server: TCP settings" "$E2E_TMP/srv.out" "$SETTINGS_OK"
	jq_true "server: 10 results, counts and rates agree" \
		"$E2E_TMP/srv.out" \
		"($RESULT_OK) and (map(select(.type == \"result\")) | length == 10)"
	jq_true "server: results name their accepted connection" \
		"$E2E_TMP/srv.out" \
		'([.[] | select(.type == "accepted") | {(.conn | tostring): .peer}]
		  | add) as $p |
		 all(.[] | select(.type == "result"); .peer == $p[.conn | tostring])'
	jq_true "server: summary" "$E2E_TMP/srv.out" \
		"$SUMMARY_OK"' and last.exit_status == 0 and last.accepted == 4 and
		 last.conn_done == 4 and last.conn_failed == 0'
fi

# 5. -T v, both sides with the same custom plan (upstream's wire)
PORT2=$(e2e_port)
if start_server vsrv "$PORT2" "$RSTREAM" -T s -T v -p "$PORT2" -S 4k -C 10 \
	-I 10 --once --json; then
	run_cmd vcl 60 "$RSTREAM" -T s -T v -s 127.0.0.1 -p "$PORT2" -S 4k \
		-C 10 -I 10 --json
	assert_exit "-T v client" 0 "$RC" "$E2E_TMP/vcl.out" "$E2E_TMP/vcl.err"
	bg_wait vsrv 20
	assert_exit "-T v server (--once)" 0 "$RC" "$E2E_TMP/vsrv.out" \
		"$E2E_TMP/vsrv.err"
	for f in vcl vsrv; do
		json_lines "-T v $f" "$E2E_TMP/$f.out" || continue
		jq_true "-T v $f: verify on, one 4k result" "$E2E_TMP/$f.out" \
			'.[0].options.verify == true and
			 ([.[] | select(.type == "result")] | length == 1 and
			  .[0].bytes_per_xfer == 4096 and .[0].total_bytes == 819200)'
		jq_true "-T v $f: counts agree, summary" "$E2E_TMP/$f.out" \
			"($RESULT_OK) and $SUMMARY_OK and last.exit_status == 0"
	done
fi

# ---------------------------------------------------------------- failures

# 6. connection refused: an error record, then the summary, exit 3
CLOSED=$(e2e_port)
run_cmd refused 20 "$RSTREAM" -T s -s 127.0.0.1 -p "$CLOSED" --json
assert_exit "refused" 3 "$RC" "$E2E_TMP/refused.out" "$E2E_TMP/refused.err"
if json_lines "refused" "$E2E_TMP/refused.out"; then
	jq_true "refused: start, error, summary" "$E2E_TMP/refused.out" \
		'map(.type) == ["start", "error", "summary"] and
		 (.[1] | .exit_status == 3 and .phase == "connect" and
		  .error == "system" and .errno == 111 and
		  (.message | test("refused"))) and .[2].exit_status == 3 and
		 .[2].results == 0'
	# the peer is known before the connection exists; a numeric port
	# is a number
	jq_true "refused: the error names the peer, the port is a number" \
		"$E2E_TMP/refused.out" \
		"(.[1].peer == \"127.0.0.1:$CLOSED\") and (.[0].options.port == $CLOSED)"
fi
assert_lines "refused: one line on stderr" 1 "$E2E_TMP/refused.err" \
	'^rstream: .*Connection refused$'

# 7. an address that does not resolve: exit 2
run_cmd unres 20 "$RSTREAM" -T s -f ip -s not-an-address -p "$CLOSED" --json
assert_exit "unresolvable" 2 "$RC" "$E2E_TMP/unres.out" "$E2E_TMP/unres.err"
jq_true "unresolvable: error record" "$E2E_TMP/unres.out" \
	'map(.type) == ["start", "error", "summary"] and
	 .[1].error == "resolve" and .[1].exit_status == 2 and
	 .[2].exit_status == 2'

# 8. bad input: one error record on stdout (even before --json is parsed),
# the usage on stderr, exit 1
run_cmd badval 10 "$RSTREAM" -S 0 --json
assert_exit "bad -S value" 1 "$RC" "$E2E_TMP/badval.out" "$E2E_TMP/badval.err"
jq_true "bad -S value: only an error record" "$E2E_TMP/badval.out" \
	'length == 1 and .[0].type == "error" and .[0].exit_status == 1 and
	 (.[0].message | test("-S")) and (.[0].message | startswith("rstream") | not)'
assert_lines "bad -S value: one line on stderr" 1 "$E2E_TMP/badval.err"
run_cmd badopt 10 "$RSTREAM" -T x --json
assert_exit "bad -T" 1 "$RC" "$E2E_TMP/badopt.out" "$E2E_TMP/badopt.err"
jq_true "bad -T: only an error record on stdout, naming the value" "$E2E_TMP/badopt.out" \
	'length == 1 and .[0].type == "error" and .[0].exit_status == 1 and
	 (.[0].message | startswith("invalid value '"'"'x'"'"' for -T"))'
assert_match "bad -T: the usage on stderr" '^usage: ' "$E2E_TMP/badopt.err"

# 9. a server's connection that fails: conn_failed, and the server goes on
PORT3=$(e2e_port)
if start_server fsrv "$PORT3" "$RSTREAM" -T s -p "$PORT3" --json; then
	run_cmd fake 20 python3 "$E2E_TMP/fake.py" close "$PORT3"
	wait_match "$E2E_TMP/fsrv.out" '"conn_failed"' 10
	bg_stop fsrv 10
	assert_exit "failing connection: server exit" 0 "$RC" \
		"$E2E_TMP/fsrv.out" "$E2E_TMP/fsrv.err"
	jq_true "failing connection: conn_failed record" "$E2E_TMP/fsrv.out" \
		'(map(select(.type == "conn_failed")) | length == 1) and
		 (.[] | select(.type == "conn_failed") | .error == "eof" and
		  .conn == 1 and (.peer | test("^127\\.0\\.0\\.1:")) and
		  (.message | type) == "string") and
		 last.type == "summary" and last.conn_failed == 1 and
		 last.exit_status == 0'
fi

# 10. a client stopped by SIGTERM: why, on stdout, and exit 130
PORT4=$(e2e_port)
if start_server isrv "$PORT4" "$RSTREAM" -T s -T a -p "$PORT4" --json; then
	bg_start icl 60 "$RSTREAM" -T s -T a -s 127.0.0.1 -p "$PORT4" -S 1 \
		-C 1 -I 1000000000 --json --settings
	if wait_established "$PORT4" 1 10 &&
	   wait_match "$E2E_TMP/icl.out" '"type":"settings"' 10; then
		# what the kernel holds for the live socket (ss: tb = sk_sndbuf,
		# rb = sk_rcvbuf; fixed, since we set them) is what we reported
		SKMEM=$(ss -Htmn state established "( dport = :$PORT4 )" \
			2>/dev/null | grep -o 'skmem:([^)]*)' | head -n 1)
		TB=$(printf '%s' "$SKMEM" | grep -o 'tb[0-9]*' | tr -d tb)
		RB=$(printf '%s' "$SKMEM" | grep -o 'rb[0-9]*' | tr -d rb)
		if [ -n "$TB" ] && [ -n "$RB" ]; then
			assert_eq "settings match ss -tm (sndbuf rcvbuf)" "$TB $RB" \
				"$(grep '"type":"settings"' "$E2E_TMP/icl.out" |
				   jq -r '"\(.sndbuf_bytes) \(.rcvbuf_bytes)"')"
		else
			skip "ss -tm shows no skmem here"
		fi
		sleep 0.3
		bg_stop icl 10
		assert_exit "interrupted client" 130 "$RC" "$E2E_TMP/icl.out" \
			"$E2E_TMP/icl.err"
		jq_true "interrupted client: error record, then summary" \
			"$E2E_TMP/icl.out" \
			'map(.type) == ["start", "settings", "error", "summary"] and
			 .[2].error == "cancelled" and .[2].exit_status == 130 and
			 .[2].test == "custom" and .[3].exit_status == 130'
	else
		not_ok "interrupted client connects"
		bg_kill icl
	fi
	bg_stop isrv 10
	assert_exit "interrupted client: server exit" 0 "$RC" \
		"$E2E_TMP/isrv.out" "$E2E_TMP/isrv.err"
	jq_true "interrupted client: the server's conn_failed" \
		"$E2E_TMP/isrv.out" \
		'(map(select(.type == "conn_failed")) | length == 1) and
		 last.conn_failed == 1 and last.exit_status == 0'
fi

# 11. a -T f server: each child writes its connection's records; the
# parent's summary is the last line, and no child writes one
PORT5=$(e2e_port)
if start_server fksrv "$PORT5" "$RSTREAM" -T s -T f -p "$PORT5" --once \
	--json --settings; then
	run_cmd fkcl 60 "$RSTREAM" -T s -T a -s 127.0.0.1 -p "$PORT5" -S 2000 \
		-C 10 -I 3 --json
	assert_exit "fork server's client" 0 "$RC" "$E2E_TMP/fkcl.out"
	bg_wait fksrv 30
	assert_exit "fork server (--once)" 0 "$RC" "$E2E_TMP/fksrv.out" \
		"$E2E_TMP/fksrv.err"
	if json_lines "fork server" "$E2E_TMP/fksrv.out"; then
		jq_true "fork server: one result, one settings, one summary last" \
			"$E2E_TMP/fksrv.out" \
			'(map(select(.type == "result")) | length == 1) and
			 (map(select(.type == "settings")) | length == 1) and
			 (map(select(.type == "summary")) | length == 1) and
			 last.type == "summary" and last.exit_status == 0'
		# the parent's summary counts what its children wrote
		jq_true "fork server: the summary agrees with the children's records" \
			"$E2E_TMP/fksrv.out" "$SUMMARY_OK"
	fi
fi

# 11b. -c 3 --per-conn with --interval: a record per connection
# (conn_index 1..3), one aggregate (connections 3, bytes summed), and
# progress records with the test, the iterations and the rate
PORT7=$(e2e_port)
if start_server csrv "$PORT7" "$RSTREAM" -T s -T a -p "$PORT7"; then
	run_cmd ccl 60 "$RSTREAM" -T s -T a -s 127.0.0.1 -p "$PORT7" -S 4096 \
		-C 10 -D 1 -c 3 --per-conn --interval 0.2 --json
	assert_exit "-c 3 --json client" 0 "$RC" "$E2E_TMP/ccl.out" \
		"$E2E_TMP/ccl.err"
	if json_lines "-c 3 --json" "$E2E_TMP/ccl.out"; then
		jq_true "-c 3: start names duration and interval" \
			"$E2E_TMP/ccl.out" \
			'.[0].options.duration_s == 1 and .[0].options.interval_s == 0.2'
		jq_true "-c 3: one result per connection, then the aggregate" \
			"$E2E_TMP/ccl.out" \
			'[.[] | select(.type == "result")] as $r |
			 ($r | length) == 4 and
			 ([$r[0:3][] | .conn_index] | sort) == [1, 2, 3] and
			 $r[3].connections == 3 and ($r[3] | has("conn_index") | not) and
			 $r[3].total_bytes == ([$r[0:3][] | .total_bytes] | add)'
		jq_true "-c 3: progress records while the tests run" \
			"$E2E_TMP/ccl.out" \
			'[.[] | select(.type == "progress")] as $p | ($p | length) >= 3 and
			 all($p[]; .test == "custom" and (.iters_done | type) == "number"
			     and .duration_s == 1 and .gbps >= 0)'
		jq_true "-c 3: summary counts the rows it printed" \
			"$E2E_TMP/ccl.out" 'last.type == "summary" and last.results == 4'
	fi
	assert_empty "-c 3 --json: stderr" "$E2E_TMP/ccl.err"
	# the percentile table names each connection's row as the table does
	run_cmd cpct 60 "$RSTREAM" -T s -T a -s 127.0.0.1 -p "$PORT7" -S 64 \
		-C 1 -I 50 -c 2 --per-conn --percentiles
	assert_exit "-c 2 --per-conn --percentiles" 0 "$RC" \
		"$E2E_TMP/cpct.out" "$E2E_TMP/cpct.err"
	assert_lines "-c 2 --percentiles: a row per connection, named test#K" \
		2 "$E2E_TMP/cpct.out" '^custom#[12] +50 '
	bg_stop csrv 10
	assert_exit "-c server stops on SIGTERM" 0 "$RC" "$E2E_TMP/csrv.err"
fi

# 11c. -c N aggregates, recomputed from their connections' records by
# rstream(1)'s definitions (MANY CONNECTIONS): total the sum, iters the
# mean per connection rounded to nearest, time from the first start to
# the last end (start_ns), Gb/sec over it, usec/xfer the mean of the
# connections' own, and --percentiles' latency the merged distribution
# (samples summed, extremes and mean exact, each percentile between the
# connections' own: the union's nearest rank lies there).  -D gives the
# connections different counts and times; -c 3 a fixed count; -c 2 -D
# the default run's two series.  Numbers in the records carry 12 or more
# significant digits: rates agree to 1e-9.
AGG_EACH='
  def close(a; b): ((a - b) | fabs) <= 1e-9 * ([a, b, 1] | map(fabs) | max);
  def mean(s): (s | add) / (s | length);
  def each_agg(f):
    [.[] | select(.type == "result")] as $r |
    [$r[] | select(has("connections"))] as $aggs |
    ($aggs | length) > 0 and all($aggs[]; . as $a |
      [$r[] | select(has("conn_index") and .test == $a.test)] as $c |
      {a: $a, c: $c, n: ($c | length)} | f);'
agg_checks() { # LABEL FILE NAGGREGATES
	local l=$1 f=$2
	jq_true "$l: aggregate records: $3, each with its connections' records" "$f" \
		"$AGG_EACH"' ([.[] | select(has("connections"))] | length) == '"$3"' and
		 each_agg(.n == .a.connections and .n > 1)'
	jq_true "$l: total_bytes is the sum" "$f" \
		"$AGG_EACH"' each_agg(.a.total_bytes == ([.c[].total_bytes] | add))'
	jq_true "$l: iters is the mean per connection, rounded" "$f" \
		"$AGG_EACH"' each_agg(.a.iters ==
		 ((([.c[].iters] | add) + (.n / 2 | floor)) / .n | floor))'
	jq_true "$l: time runs from the first start to the last end" "$f" \
		"$AGG_EACH"' each_agg(all(.a, .c[]; has("start_ns")) and
		 .a.start_ns == ([.c[].start_ns] | min) and
		 .a.elapsed_ns == ([.c[] | .start_ns + .elapsed_ns] | max) - .a.start_ns)'
	jq_true "$l: gbps is total_bytes over that time" "$f" \
		"$AGG_EACH"' each_agg(close(.a.gbps; .a.total_bytes * 8 / .a.elapsed_ns))'
	jq_true "$l: usec_per_xfer is the mean of the connections' own" "$f" \
		"$AGG_EACH"' each_agg(close(.a.usec_per_xfer; mean([.c[].usec_per_xfer])))'
	jq_true "$l: conn_mean_elapsed_s is the mean of their times" "$f" \
		"$AGG_EACH"' each_agg(close(.a.conn_mean_elapsed_s;
		 mean([.c[].elapsed_ns]) / 1e9))'
}
agg_lat_checks() { # LABEL FILE
	jq_true "$1: latency merged: samples summed, extremes and mean exact" "$2" \
		"$AGG_EACH"' each_agg(.a.latency != null and all(.c[]; .latency != null) and
		 .a.latency.samples == ([.c[].latency.samples] | add) and
		 .a.latency.min_ns == ([.c[].latency.min_ns] | min) and
		 .a.latency.max_ns == ([.c[].latency.max_ns] | max) and
		 close(.a.latency.mean_ns; ([.c[] | .latency.mean_ns *
		       .latency.samples] | add) / .a.latency.samples))'
	jq_true "$1: each merged percentile lies between the connections' own" "$2" \
		"$AGG_EACH"' each_agg(. as $x | all("p50_ns", "p90_ns", "p99_ns", "p99_9_ns";
		 . as $k | $x.a.latency[$k] >= ([$x.c[].latency[$k]] | min) and
		 $x.a.latency[$k] <= ([$x.c[].latency[$k]] | max)))'
}
PORT8=$(e2e_port)
if start_server asrv "$PORT8" "$RSTREAM" -T s -T a -p "$PORT8"; then
	run_cmd adur 60 "$RSTREAM" -T s -T a -s 127.0.0.1 -p "$PORT8" -S 64 \
		-C 1 -D 1 -c 4 --per-conn --percentiles --json
	assert_exit "-c 4 -D 1 --json" 0 "$RC" "$E2E_TMP/adur.out" \
		"$E2E_TMP/adur.err"
	if json_lines "-c 4 -D 1 --json" "$E2E_TMP/adur.out"; then
		agg_checks "-c 4 -D 1" "$E2E_TMP/adur.out" 1
		agg_lat_checks "-c 4 -D 1" "$E2E_TMP/adur.out"
	fi
	run_cmd afix 60 "$RSTREAM" -T s -T a -s 127.0.0.1 -p "$PORT8" -S 1000 \
		-C 10 -I 200 -c 3 --per-conn --percentiles --json
	assert_exit "-c 3 fixed count --json" 0 "$RC" "$E2E_TMP/afix.out" \
		"$E2E_TMP/afix.err"
	if json_lines "-c 3 fixed count --json" "$E2E_TMP/afix.out"; then
		agg_checks "-c 3 -I 200" "$E2E_TMP/afix.out" 1
		agg_lat_checks "-c 3 -I 200" "$E2E_TMP/afix.out"
		jq_true "-c 3 -I 200: 200 iterations, 600 samples" \
			"$E2E_TMP/afix.out" '.[] | select(has("connections")) |
			 .iters == 200 and .latency.samples == 600'
	fi
	run_cmd adef 120 "$RSTREAM" -T s -T a -s 127.0.0.1 -p "$PORT8" \
		-D 0.05 -c 2 --per-conn --percentiles --json
	assert_exit "default run -c 2 -D 0.05 --json" 0 "$RC" \
		"$E2E_TMP/adef.out" "$E2E_TMP/adef.err"
	if json_lines "default run -c 2 -D 0.05 --json" "$E2E_TMP/adef.out"; then
		agg_checks "default run -c 2 -D 0.05" "$E2E_TMP/adef.out" 8
		agg_lat_checks "default run -c 2 -D 0.05" "$E2E_TMP/adef.out"
	fi
	bg_stop asrv 10
	assert_exit "aggregate server stops on SIGTERM" 0 "$RC" \
		"$E2E_TMP/asrv.err"
fi

# 12. under valgrind: the JSON writer leaks nothing and touches nothing
# it should not
if e2e_can_valgrind "rstream --json"; then
	# shellcheck disable=SC2054 # the commas are valgrind's
	VG=(valgrind --quiet --leak-check=full
	    --show-leak-kinds=definite,indirect,possible
	    --errors-for-leak-kinds=definite,indirect,possible
	    --error-exitcode=99)
	PORT6=$(e2e_port)
	if E2E_LISTEN_SECS=30 start_server vgsrv "$PORT6" "${VG[@]}" \
		"$RSTREAM" -T s -T a -p "$PORT6" --once --json --settings; then
		run_cmd vgcl 120 "${VG[@]}" "$RSTREAM" -T s -T a -s 127.0.0.1 \
			-p "$PORT6" -S 1000 -C 20 -I 5 --json --settings
		assert_exit "valgrind: client --json --settings" 0 "$RC" \
			"$E2E_TMP/vgcl.err"
		assert_no_match "valgrind: client clean" '^==[0-9]+==' \
			"$E2E_TMP/vgcl.err"
		bg_wait vgsrv 60
		assert_exit "valgrind: server --json --settings" 0 "$RC" \
			"$E2E_TMP/vgsrv.err"
		assert_no_match "valgrind: server clean" '^==[0-9]+==' \
			"$E2E_TMP/vgsrv.err"
	fi
	run_cmd vgref 60 "${VG[@]}" "$RSTREAM" -T s -s 127.0.0.1 -p "$CLOSED" \
		--json
	assert_exit "valgrind: refused --json" 3 "$RC" "$E2E_TMP/vgref.err"
	assert_no_match "valgrind: refused clean" '^==[0-9]+==' \
		"$E2E_TMP/vgref.err"
	run_cmd vgbad 60 "${VG[@]}" "$RSTREAM" -T s -S 0 --json
	assert_exit "valgrind: bad value --json" 1 "$RC" "$E2E_TMP/vgbad.err"
	assert_no_match "valgrind: bad value clean" '^==[0-9]+==' \
		"$E2E_TMP/vgbad.err"
fi

# ------------------------------------------------------------------ mckey

MCKEY=${MCKEY:-}
NS=evjs-$$
# the namespace goes too, however the script ends
# shellcheck disable=SC2154 # st is assigned inside the trap
trap 'st=$?; ip netns del "$NS" 2>/dev/null; (exit $st); e2e_cleanup' EXIT
if [ -z "$MCKEY" ] || [ ! -x "$MCKEY" ]; then
	not_ok "mckey" "MCKEY is not set to an executable mckey"
elif ! command -v ip >/dev/null 2>&1 || ! ip netns add "$NS" 2>/dev/null; then
	skip "mckey --json: cannot create a network namespace (needs root)"
else
	# multicast on the namespace's own lo: nothing leaves it
	X=$(( $$ % 200 + 20 ))
	ADDR=10.$X.9.1
	G=239.78.$X.1
	if ip -n "$NS" link set lo up &&
	   ip -n "$NS" link set lo multicast on &&
	   ip -n "$NS" addr add "$ADDR/24" dev lo &&
	   ip -n "$NS" route add 224.0.0.0/4 dev lo; then
		MC=(--udp --settle 0.3 --udp-port 17002 -m "$G" -b "$ADDR" -C 25)
		bg_start mrx 30 ip netns exec "$NS" "$MCKEY" "${MC[@]}" \
			--deadline 10 --json
		if wait_match "$E2E_TMP/mrx.out" '"type":"join"' 10; then
			run_cmd mtx 30 ip netns exec "$NS" "$MCKEY" "${MC[@]}" \
				-s --json
			assert_exit "mckey sender" 0 "$RC" "$E2E_TMP/mtx.out" \
				"$E2E_TMP/mtx.err"
		else
			not_ok "mckey receiver joins" "no join record in 10 s"
		fi
		bg_wait mrx 20
		assert_exit "mckey receiver" 0 "$RC" "$E2E_TMP/mrx.out" \
			"$E2E_TMP/mrx.err"
		if json_lines "mckey receiver" "$E2E_TMP/mrx.out"; then
			jq_true "mckey receiver: start and join" "$E2E_TMP/mrx.out" \
				'.[0] | .type == "start" and .tool == "mckey" and
				 .mode == "receiver" and .transport == "udp" and
				 .options.group == "'"$G"'"'
			jq_true "mckey receiver: one join record" "$E2E_TMP/mrx.out" \
				'[.[] | select(.type == "join")] | length == 1 and
				 (.[0] | .qp == 0 and .group == "'"$G"'" and
				  .joined_address == "::ffff:'"$G"'" and
				  .join_ns >= 0 and
				  ((.join_ms - .join_ns / 1e6) | fabs) < 1e-6)'
			jq_true "mckey receiver: all 25 received" "$E2E_TMP/mrx.out" \
				'(.[] | select(.type == "recv_stats") |
				  .received == 25 and .expected == 25 and
				  .foreign == 0 and .senders == 1 and
				  .timed_out == false) and
				 ([.[] | select(.type == "sender_stats")] | length == 1)
				 and (.[] | select(.type == "sender_stats") |
				  (.sender | test("^[0-9a-f]{8}$")) and
				  .received == 25 and .expected == 25 and .lost == 0 and
				  .duplicates == 0 and .reordered == 0)'
			jq_true "mckey receiver: summary last" "$E2E_TMP/mrx.out" \
				'last | .type == "summary" and .tool == "mckey" and
				 .exit_status == 0 and .return_status == 0 and
				 .joined == 1 and .qps == 1'
		fi
		if json_lines "mckey sender" "$E2E_TMP/mtx.out"; then
			jq_true "mckey sender: sent and completed 25" \
				"$E2E_TMP/mtx.out" \
				'.[0].mode == "sender" and
				 (.[] | select(.type == "send_stats") | .sent == 25 and
				  .completed == 25) and last.type == "summary" and
				 last.exit_status == 0'
		fi
		if e2e_can_valgrind "mckey --json"; then
			run_cmd mvg 60 ip netns exec "$NS" "${VG[@]}" "$MCKEY" \
				"${MC[@]}" --deadline 1 --json
			assert_exit "valgrind: mckey --json receiver, deadline" \
				194 "$RC" "$E2E_TMP/mvg.out" "$E2E_TMP/mvg.err"
			assert_no_match "valgrind: mckey clean" '^==[0-9]+==' \
				"$E2E_TMP/mvg.err"
			jq_true "mckey deadline: timed out, 0 of 25" \
				"$E2E_TMP/mvg.out" \
				'(.[] | select(.type == "recv_stats") |
				  .timed_out == true and .received == 0 and
				  .expected == 25) and last.exit_status == 194 and
				 last.return_status == -62'
		fi
		# the deadline: its error record is "system" with its errno
		# (ETIME), and its status 194 is not a timed-out resolve or
		# join's 146
		run_cmd mdl 20 ip netns exec "$NS" "$MCKEY" "${MC[@]}" \
			--settle 0.1 --deadline 0.3 --json
		assert_exit "mckey --json deadline: exit 194" 194 "$RC" \
			"$E2E_TMP/mdl.out" "$E2E_TMP/mdl.err"
		jq_true "mckey --json deadline: error record with errno 62" \
			"$E2E_TMP/mdl.out" \
			'[.[] | select(.type == "error")] | length == 1 and
			 (.[0] | .error == "system" and .err == -62 and
			  .errno == 62 and (.message | startswith("mckey: deadline")))'
		jq_true "mckey --json deadline: summary 194 (-62)" \
			"$E2E_TMP/mdl.out" \
			'last | .type == "summary" and .exit_status == 194 and
			 .return_status == -62'
		# SIGINT: an error record saying so, then the stats and summary
		bg_start mint 30 ip netns exec "$NS" "$MCKEY" "${MC[@]}" \
			--deadline 20 --json
		if wait_match "$E2E_TMP/mint.out" '"phase":"transfer"' 10; then
			bg_stop mint 10 INT
			assert_exit "mckey --json SIGINT: exit 252" 252 "$RC" \
				"$E2E_TMP/mint.out" "$E2E_TMP/mint.err"
			jq_true "mckey --json SIGINT: error record, then summary" \
				"$E2E_TMP/mint.out" \
				'[.[] | select(.type == "error")] == [{"type": "error",
				  "message": "interrupted by SIGINT",
				  "exit_status": 252}] and
				 (map(.type) | index("error")) < (map(.type) |
				  index("recv_stats")) and
				 last.type == "summary" and last.exit_status == 252 and
				 last.return_status == -4'
		else
			not_ok "mckey --json SIGINT: the receiver reaches its transfer phase"
			bg_kill mint
		fi
		# a bind address the namespace does not have: an error record
		run_cmd mbad 20 ip netns exec "$NS" "$MCKEY" --udp --settle 0 \
			-m "$G" -b 10.$X.8.8 --json
		assert_exit_not "mckey bad bind address" 0 "$RC" \
			"$E2E_TMP/mbad.out" "$E2E_TMP/mbad.err"
		jq_true "mckey bad bind address: error, then summary" \
			"$E2E_TMP/mbad.out" \
			'(map(select(.type == "error")) | length >= 1) and
			 (.[] | select(.type == "error") | (.message | length) > 0)
			 and last.type == "summary" and last.exit_status != 0 and
			 last.joined == 0'
	else
		not_ok "mckey namespace setup"
	fi
	ip netns del "$NS" 2>/dev/null
fi
run_cmd mbadval 10 "$MCKEY" --json -m 239.1.1.1 -c 0
assert_exit "mckey bad -c" 1 "$RC" "$E2E_TMP/mbadval.out"
jq_true "mckey bad -c: one error record" "$E2E_TMP/mbadval.out" \
	'length == 1 and .[0].type == "error" and .[0].exit_status == 1 and
	 (.[0].message | test("-c")) and (.[0].message | startswith("mckey") | not)'

e2e_done
