#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# --percentiles against a peer that delays every reply by a known time,
# -D/--duration against our server (stops in time, rows show the real
# counts) and against upstream's (fails at once, clearly), --interval's
# progress lines on stderr with stdout still the plain table, and the
# option errors.  Loopback TCP only (-T s).
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

R=$RSTREAM
H=127.0.0.1
T=$E2E_TMP
DP=${DELAYPEER:-$(dirname "$RSTREAM")/tests/delaypeer}
DELAY_US=2000
# Generous: 2 CPUs shared with other builds; the lower bound is the point.
MARGIN_US=20000

# upstream's cnt_str()
cnt_label() {
	local n=$1
	if [ "$n" -ge 1000000000 ]; then echo "$((n / 1000000000))b"
	elif [ "$n" -ge 1000000 ]; then echo "$((n / 1000000))m"
	elif [ "$n" -ge 1000 ]; then echo "$((n / 1000))k"
	else echo "$n"; fi
}

LAT_HEADER=$(printf '%-10s%10s%11s%11s%11s%11s%11s%11s%11s' name samples \
	min_us p50_us p90_us p99_us p99.9_us max_us mean_us)

# ---- --percentiles: every round trip waits DELAY_US in the peer
if [ -x "$DP" ]; then
	P=$(e2e_port)
	bg_start delay 60 "$DP" "$P" 64 1 200 "$DELAY_US"
	if wait_listen "$P" 5 delay; then
		run_cmd pct 30 "$R" -T s -T a -s $H -p "$P" -S 64 -C 1 -I 200 \
			--percentiles
		assert_exit "--percentiles: client" 0 "$RC" "$T/pct.out" "$T/pct.err"
		assert_eq "--percentiles: the table comes first, unchanged" \
			"$E2E_HEADER" "$(head -1 "$T/pct.out")"
		check_row "$T/pct.out" custom 64 1 200 25k 1 "--percentiles"
		assert_eq "--percentiles: a blank line, then the latency header" \
			"|$LAT_HEADER" "$(sed -n '3p;4p' "$T/pct.out" | paste -sd'|')"
		assert_lines "--percentiles: header, row, blank, header, row" 5 \
			"$T/pct.out"
		assert_empty "--percentiles: stderr empty" "$T/pct.err"
		read -r name n mn p50 p90 p99 p999 mx mean < <(sed -n 5p "$T/pct.out")
		say "delay ${DELAY_US} us: min $mn p50 $p50 p90 $p90 p99 $p99 p99.9 $p999 max $mx mean $mean"
		assert_eq "--percentiles: row names the test" custom "$name"
		assert_eq "--percentiles: one sample per iteration" 200 "$n"
		if awk -v d="$DELAY_US" -v m="$MARGIN_US" -v a="$mn" -v b="$p50" \
			-v c="$p90" -v e="$p99" -v f="$p999" -v g="$mx" -v h="$mean" \
			'BEGIN { exit !(a >= d && b >= d && b < d + m &&
				a <= b && b <= c && c <= e && e <= f && f <= g &&
				h >= a && h <= g) }'; then
			ok "--percentiles: $DELAY_US <= min <= p50 < $DELAY_US+$MARGIN_US, ordered up to max"
		else
			not_ok "--percentiles: values against the injected delay" \
				"$(cat "$T/pct.out")"
		fi
		bg_wait delay 10
		assert_exit "delay peer served the run" 0 "$RC" "$T/delay.err"
	else
		not_ok "delay peer listens" "$(cat "$T/delay.err")"
	fi
else
	not_ok "the delay peer is built" "DELAYPEER=$DP"
fi

# ---- -D 1 on a custom test, against our server, with percentiles and
# progress on both sides
P=$(e2e_port)
if start_server dsrv "$P" "$R" -T s -T a -p "$P" --once --interval 0.2; then
	run_cmd dur 20 "$R" -T s -T a -s $H -p "$P" -S 64 -C 1 -D 1 \
		--percentiles --interval 0.2
	assert_exit "-D 1: client" 0 "$RC" "$T/dur.out" "$T/dur.err"
	say "-D 1 took ${ELAPSED_MS} ms"
	row=$(sed -n 2p "$T/dur.out")
	read -r _ _ _ iters _ tm _ <<<"$row"
	tm=${tm%s}
	if awk -v t="$tm" 'BEGIN { exit !(t >= 0.7 && t <= 1.3) }'; then
		ok "-D 1: the test took 1 s +- 0.3 s ($tm s)"
	else
		not_ok "-D 1: the test took 1 s +- 0.3 s" "row: $row"
	fi
	n=$(sed -n 5p "$T/dur.out" | awk '{print $2}')
	assert_eq "-D 1: the row's iterations are the real count ($n)" \
		"$(cnt_label "${n:-0}")" "$iters"
	if [ "${n:-0}" -gt 1 ] && row_reformats "$row"; then
		ok "-D 1: a well-formed row of $n iterations"
	else
		not_ok "-D 1: a well-formed row of $n iterations" "row: $row"
	fi
	assert_match "-D 1: progress on stderr (not a terminal: plain lines)" \
		'^\[ +0\.[0-9]s\] custom [0-9]+ iters of 1\.0s [0-9]+\.[0-9]{2} Gb/s$' \
		"$T/dur.err"
	n=$(grep -Ec '^\[ +[0-9]+\.[0-9]s\] custom [0-9]+ iters of 1\.0s [0-9.]+ Gb/s$' "$T/dur.err")
	if [ "${n:-0}" -ge 3 ] && [ "$n" -le 7 ]; then
		ok "--interval 0.2 over 1 s: $n progress lines (3..7)"
	else
		not_ok "--interval 0.2 over 1 s: 3..7 progress lines" "found $n"
		dump "$T/dur.err"
	fi
	assert_lines "--interval: stderr holds progress lines only" "$n" "$T/dur.err"
	bg_wait dsrv 10
	assert_exit "-D 1: --once server exits after the run" 0 "$RC" "$T/dsrv.err"
	# the same test, iterations and bytes; each side times itself
	assert_eq "-D 1: the server's row counts what the client's does" \
		"$(awk '{print $1, $2, $3, $4, $5}' <<<"$row")" \
		"$(sed -n 2p "$T/dsrv.out" | awk '{print $1, $2, $3, $4, $5}')"
	n=$(grep -Ec '^\[ +[0-9]+\.[0-9]s\] conn [0-9]+ 127\.0\.0\.1:[0-9]+ custom [0-9]+ iters [0-9.]+ Gb/s$' "$T/dsrv.err")
	if [ "${n:-0}" -ge 3 ]; then
		ok "server --interval: $n per-connection progress lines"
	else
		not_ok "server --interval: >= 3 per-connection progress lines" \
			"found $n"
		dump "$T/dsrv.err"
	fi
fi

# ---- --interval on a fixed count: stdout is exactly the table
if [ -x "$DP" ]; then
	P=$(e2e_port)
	bg_start delay2 60 "$DP" "$P" 64 1 400 "$DELAY_US"
	if wait_listen "$P" 5 delay2; then
		run_cmd iv 30 "$R" -T s -T a -s $H -p "$P" -S 64 -C 1 -I 400 \
			--interval 0.2
		assert_exit "--interval: client" 0 "$RC" "$T/iv.out" "$T/iv.err"
		assert_eq "--interval: stdout header" "$E2E_HEADER" \
			"$(head -1 "$T/iv.out")"
		check_row "$T/iv.out" custom 64 1 400 50k 1 "--interval"
		assert_lines "--interval: stdout is header + row only" 2 "$T/iv.out"
		n=$(grep -Ec '^\[ +[0-9]+\.[0-9]s\] custom [0-9]+/400 iters [0-9.]+ Gb/s$' "$T/iv.err")
		if [ "${n:-0}" -ge 3 ]; then
			ok "--interval 0.2 over >= 0.8 s: $n progress lines"
		else
			not_ok "--interval 0.2 over >= 0.8 s: >= 3 progress lines" \
				"found $n"
			dump "$T/iv.err"
		fi
		bg_wait delay2 10
	else
		not_ok "delay peer listens" "$(cat "$T/delay2.err")"
	fi
fi

# ---- -D on every test of the default plan (two connections, lat and bw
# series): each test ends, the plan goes on
P=$(e2e_port)
if start_server dsrv2 "$P" "$R" -T s -T a -p "$P" --once; then
	run_cmd dur2 60 "$R" -T s -T a -s $H -p "$P" -D 0.2
	assert_exit "-D 0.2, default plan: client" 0 "$RC" "$T/dur2.err"
	say "-D 0.2 on the default plan took ${ELAPSED_MS} ms"
	assert_eq "-D 0.2: the default plan's rows, in order" \
		"$E2E_DEFAULT_NAMES" "$(row_names "$T/dur2.out")"
	bad=$(grep -E -- "$E2E_ANY_ROW" "$T/dur2.out" |
		awk '{ t = $6; sub(/s$/, "", t); if (t < 0.2) print }')
	assert_eq "-D 0.2: no test ended before 0.2 s" "" "$bad"
	bg_wait dsrv2 10
	assert_exit "-D 0.2: server" 0 "$RC" "$T/dsrv2.err"
	assert_eq "-D 0.2: the server counted what the client did" \
		"$(grep -E -- "$E2E_ANY_ROW" "$T/dur2.out" | awk '{print $1, $4, $5}')" \
		"$(grep -E -- "$E2E_ANY_ROW" "$T/dsrv2.out" | awk '{print $1, $4, $5}')"
fi

# ---- -D shorter than one iteration (200 MB of 1 MiB transfers, against
# 10 ms): one iteration, not two (a LAST mark runs the iteration it
# starts; our server takes the END mark instead)
P=$(e2e_port)
if start_server dsrv3 "$P" "$R" -T s -p "$P" --once; then
	run_cmd dur3 60 "$R" -T s -s $H -p "$P" -S 1m -C 100 -D 0.01
	assert_exit "-D 0.01, 1 MiB x 100: client" 0 "$RC" "$T/dur3.err"
	assert_eq "-D 0.01, 1 MiB x 100: one iteration" "1" \
		"$(grep -E '^custom ' "$T/dur3.out" | awk '{print $4}')"
	bg_wait dsrv3 10
	assert_exit "-D 0.01: server" 0 "$RC" "$T/dsrv3.err"
	assert_eq "-D 0.01: the server counted one iteration" "1" \
		"$(grep -E '^custom ' "$T/dsrv3.out" | awk '{print $4}')"
fi

# ---- -c 3 --percentiles: the aggregate row has its table row, the
# distribution of all three connections' samples merged; --per-conn adds
# each connection's, and the merged row agrees with them: samples summed,
# the extremes theirs, each percentile between theirs
P=$(e2e_port)
if start_server csrv "$P" "$R" -T s -T a -p "$P"; then
	run_cmd cpct 60 "$R" -T s -T a -s $H -p "$P" -S 64 -C 1 -I 300 -c 3 \
		--percentiles
	assert_exit "-c 3 --percentiles" 0 "$RC" "$T/cpct.out" "$T/cpct.err"
	assert_empty "-c 3 --percentiles: stderr empty" "$T/cpct.err"
	# 3 x 2 x 64 x 300 = 115200 bytes
	check_row "$T/cpct.out" custom 64 1 300 112k 1 "-c 3 --percentiles"
	assert_eq "-c 3 --percentiles: a blank line, then the latency header" \
		"|$LAT_HEADER" "$(sed -n '3p;4p' "$T/cpct.out" | paste -sd'|')"
	assert_lines "-c 3 --percentiles: header, row, blank, header, row" 5 \
		"$T/cpct.out"
	read -r name n mn p50 p90 p99 p999 mx mean < <(sed -n 5p "$T/cpct.out")
	assert_eq "-c 3 --percentiles: the aggregate's row, named as the table's" \
		custom "${name:-}"
	assert_eq "-c 3 --percentiles: 3 x 300 samples" 900 "${n:-}"
	if awk -v a="$mn" -v b="$p50" -v c="$p90" -v e="$p99" -v f="$p999" \
		-v g="$mx" -v h="$mean" 'BEGIN { exit !(a > 0 && a <= b &&
			b <= c && c <= e && e <= f && f <= g && h >= a && h <= g) }'
	then
		ok "-c 3 --percentiles: min <= p50 <= ... <= max, mean between"
	else
		not_ok "-c 3 --percentiles: ordered values" "$(cat "$T/cpct.out")"
	fi
	run_cmd cpctk 60 "$R" -T s -T a -s $H -p "$P" -S 64 -C 1 -I 300 -c 3 \
		--percentiles --per-conn
	assert_exit "-c 3 --percentiles --per-conn" 0 "$RC" "$T/cpctk.out" \
		"$T/cpctk.err"
	# the latency table: after the blank line, its header, then the rows
	sed '1,/^$/d' "$T/cpctk.out" | sed 1d >"$T/cpctk.lat"
	assert_lines "-c 3 --per-conn: three connections' rows" 3 \
		"$T/cpctk.lat" '^custom#[123] +300 '
	assert_lines "-c 3 --per-conn: and the aggregate's" 1 "$T/cpctk.lat" \
		'^custom +900 '
	if got=$(awk '
		/^custom#/ { k++; n += $2
			for (i = 3; i <= 8; i++) {
				if (k == 1 || $i < lo[i]) lo[i] = $i
				if (k == 1 || $i > hi[i]) hi[i] = $i
			} }
		/^custom / { for (i = 2; i <= 8; i++) a[i] = $i }
		END {
			ok = k == 3 && a[2] == n && a[3] == lo[3] && a[8] == hi[8]
			for (i = 4; i <= 7; i++)
				if (a[i] < lo[i] || a[i] > hi[i]) ok = 0
			printf "samples %s of %d; min %s, max %s\n", a[2], n, a[3], a[8]
			exit !ok
		}' "$T/cpctk.lat"); then
		ok "-c 3 --per-conn: the merged row agrees with the connections' ($got)"
	else
		not_ok "-c 3 --per-conn: the merged row agrees with the connections'" \
			"$got" "$(cat "$T/cpctk.lat")"
	fi
	bg_stop csrv 10
	assert_exit "-c 3 --percentiles: server stops on SIGTERM" 0 "$RC" \
		"$T/csrv.err"
fi

# ---- -D against upstream's server: refused at its first reply
if [ -x "$UPSTREAM" ]; then
	P=$(e2e_port)
	if start_server up "$P" "$UPSTREAM" -T s -p "$P"; then
		run_cmd dup 10 "$R" -T s -s $H -p "$P" -S 64 -C 1 -D 1
		assert_exit "-D against upstream: exit 6 (not supported)" 6 "$RC" \
			"$T/dup.err"
		assert_le "-D against upstream: gives up at once (ms)" "$ELAPSED_MS" "$(tscale 3000)"
		assert_lines "-D against upstream: one line on stderr" 1 "$T/dup.err" \
			'^rstream: (127\.0\.0\.1:[0-9]+: )?negotiation: -D/--duration with a server that does not negotiate \(an upstream rstream server\) is not supported$'
		bg_kill up
	fi
	# -c 2: upstream's server serves one connection at a time; the
	# second waited in its backlog for the stall timeout (10 s, exit 4)
	# or was reset when it closed
	P=$(e2e_port)
	if start_server up "$P" "$UPSTREAM" -T s -p "$P"; then
		run_cmd cup 30 "$R" -T s -s $H -p "$P" -S 64 -C 1 -I 100 -c 2
		assert_exit "-c 2 against upstream: exit 6 (not supported)" 6 "$RC" \
			"$T/cup.err"
		assert_le "-c 2 against upstream: gives up at once (ms)" "$ELAPSED_MS" "$(tscale 3000)"
		assert_lines "-c 2 against upstream: one line on stderr" 1 "$T/cup.err" \
			'^rstream: connection [12] of 2: 127\.0\.0\.1:[0-9]+: negotiation: -c with a server that does not negotiate \(an upstream rstream server serves one connection at a time\) is not supported: leave out -c against such a server$'
		bg_kill up
	fi
else
	skip "-D and -c against upstream: $UPSTREAM is not installed"
fi

# ---- -c N --interval: one aggregate line per tick (not N anonymous
# lines that overwrite each other on a terminal); conn#K lines too with
# --per-conn
P=$(e2e_port)
if start_server cprog "$P" "$R" -T s -T a -p "$P"; then
	run_cmd cprog1 20 "$R" -T s -T a -s $H -p "$P" -S 4096 -C 10 -c 3 -D 1 \
		--interval 0.2
	assert_exit "-c 3 --interval: exit 0" 0 "$RC" "$T/cprog1.err"
	# (a round is the connections that reported since the last line: on
	# a loaded host one may report twice before another has, and its
	# second report closes a round of 2, as rstream(1) says)
	n=$(grep -c -E '^\[ *[0-9.]+s\] custom [1-3] conns [0-9]+ iters of the duration [0-9.]+ Gb/s$' "$T/cprog1.err")
	num=$(grep -c . "$T/cprog1.err")
	n3=$(grep -c -E '^\[ *[0-9.]+s\] custom 3 conns ' "$T/cprog1.err")
	assert_le "-c 3 --interval: aggregate lines of all 3 (>= 1)" 1 "$n3"
	assert_le "-c 3 --interval: aggregate lines (>= 2)" 2 "$n"
	assert_eq "-c 3 --interval: nothing but aggregate lines" "$num" "$n"
	run_cmd cprog2 20 "$R" -T s -T a -s $H -p "$P" -S 4096 -C 10 -c 3 -D 1 \
		--interval 0.2 --per-conn
	assert_exit "-c 3 --interval --per-conn: exit 0" 0 "$RC" "$T/cprog2.err"
	for k in 1 2 3; do
		assert_match "-c 3 --interval --per-conn: conn#$k lines" \
			"^\\[ *[0-9.]+s\\] conn#$k custom [0-9]+ iters of 1\\.0s " "$T/cprog2.err"
	done
	assert_match "-c 3 --interval --per-conn: and the aggregate" \
		'^\[ *[0-9.]+s\] custom 3 conns ' "$T/cprog2.err"
	# the aggregate is what rstream.1 says: the round's connections'
	# iterations and Gb/s summed (a round's three conn#K lines come just
	# before its line; Gb/s within the rounding of the printed digits)
	sums=$(awk '
		function iters(l) { match(l, / [0-9]+ iters /); return substr(l, RSTART + 1, RLENGTH - 7) + 0 }
		/ conn#[0-9]+ / { it += iters($0); g += $(NF - 1); k++; next }
		/ custom [0-9]+ conns / {
			if (k == 3 && / 3 conns /) {
				rounds++
				if (iters($0) != it || g - $(NF - 1) > 0.03 || $(NF - 1) - g > 0.03)
					bad = bad " " $0 " (sums " it ", " g ")"
			}
			it = 0; g = 0; k = 0
		}
		END { print rounds + 0 "|" bad }' "$T/cprog2.err")
	num_rounds=${sums%%|*}
	assert_le "-c 3 --interval --per-conn: rounds of three conn#K lines and their sum" 1 "$num_rounds"
	assert_eq "-c 3 --interval: each aggregate line is its round's sum" "" "${sums#*|}"
	bg_stop cprog
fi

# ---- option errors: one line, exit 1
for args in "-D 1" "-D 0 -s $H" "-D 1 -s $H -T v" "-D 1 -s $H --no-negotiate" \
	"--percentiles" "-s $H --interval 0" "-s $H -D x"; do
	# shellcheck disable=SC2086
	run_cmd opt 5 "$R" $args
	assert_exit "rstream $args: exit 1" 1 "$RC" "$T/opt.err"
	assert_lines "rstream $args: one line on stderr" 1 "$T/opt.err" '^rstream: '
done

e2e_done
