#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# rstream --split: each round trip in its parts (net, the server's hold,
# this end's delay), from the hold stamps an evrdma server writes in its
# echoes (rstream(1), PLAN NEGOTIATION, "Hold stamps").  Loopback TCP:
#   - the parts come for every iteration, add up to the round trip, and
#     the kernel's receive timestamps give the local part;
#   - text: the parts' table after the result table;
#   - with -c 2, the aggregate merges both connections' parts;
#   - against upstream's server, and with -T v, the run is as without it;
#   - with the server's CPU starved (a cgroup's CPU quota of 2 %), the
#     round trip's mean grows by 0.1 ms and more; the hold carries 80 % of
#     that growth and more, the network's mean and median 10 % and less,
#     and the network's median stays within a factor of 2 (one of three
#     rounds: the host is shared).
#     Not under valgrind, whose timing is not the program's.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

R=$RSTREAM
H=127.0.0.1
T=$E2E_TMP

# jq on the result records of FILE (those of one test, not aggregates)
res() { # FILE JQ-EXPR
	jq -r "select(.type == \"result\") | $2" "$1"
}

P=$(e2e_port)
if start_server srv "$P" "$R" -T s -b $H -p "$P"; then
	run_cmd c1 30 "$R" -T s -s $H -p "$P" -S 64 -C 1 -I 500 --split \
		--percentiles --json
	assert_exit "--split: the run" 0 "$RC" "$T/c1.err"
	assert_eq "--split: net samples, one per iteration" 500 \
		"$(res "$T/c1.out" .split.net.samples)"
	assert_eq "--split: peer samples, one per iteration" 500 \
		"$(res "$T/c1.out" .split.peer.samples)"
	# the kernel stamps from the first byte on (rstream(1)): every
	# iteration has its local part
	assert_eq "--split: local samples from the kernel's receive timestamps" \
		500 "$(res "$T/c1.out" .split.local.samples)"
	assert_eq "--split: no iteration rejected" 0 \
		"$(res "$T/c1.out" .split.rejected)"
	# the means of the parts add up to the round trip's (they are of the
	# same iterations; the round trip is on the monotonic clock, the
	# parts on the wall clock, the two clocks read at nearby points of
	# the send and the receive: within 5 %).  Under memcheck the
	# instructions between those points run some 50 times slower: one
	# CI run measured 935/1000 there, so its bound is 20 %.
	lo=950
	[ "$E2E_VG" = 1 ] && lo=800
	sum=$(res "$T/c1.out" \
		'(.split.net.mean_ns + .split.peer.mean_ns + .split.local.mean_ns) / .latency.mean_ns * 1000 | floor')
	if [ "${sum:-0}" -ge "$lo" ] && [ "$sum" -le 1050 ]; then
		ok "--split: net + peer + local = the round trip ($sum/1000 of its mean)"
	else
		not_ok "--split: the parts add up to the round trip" "sum/mean = $sum/1000"
		dump "$T/c1.out"
	fi
	min_ok=$(res "$T/c1.out" '[.split.net.min_ns, .split.peer.min_ns, .split.local.min_ns] | map(select(. > 0)) | length')
	assert_eq "--split: each part is more than 0 at its least" 3 "$min_ok"

	run_cmd c2 30 "$R" -T s -s $H -p "$P" -S 64 -C 1 -I 200 --split
	assert_exit "--split, text: the run" 0 "$RC" "$T/c2.err"
	hdr=$(printf '%-10s%-7s%8s%11s%11s%11s%11s%11s%11s' name part \
		samples min_us p50_us p90_us p99_us max_us mean_us)
	assert_match "--split, text: the parts' header" "^$(ere_quote "$hdr")\$" "$T/c2.out"
	for part in net peer local; do
		name=; [ $part = net ] && name=custom
		assert_match "--split, text: the $part row" \
			"^$(printf '%-10s%-7s%8s' "$name" $part 200) +[0-9]" "$T/c2.out"
	done
	assert_lines "--split, text: the result table is upstream's" 1 "$T/c2.out" \
		'^custom    64      1       200 '

	run_cmd c3 30 "$R" -T s -s $H -p "$P" -S 64 -C 1 -I 100 -c 2 --split --json
	assert_exit "--split -c 2: the run" 0 "$RC" "$T/c3.err"
	assert_eq "--split -c 2: the aggregate's parts hold both connections'" \
		200 "$(jq -r 'select(.type == "result" and .connections == 2) | .split.peer.samples' "$T/c3.out")"

	run_cmd c4 30 "$R" -T s -T v -s $H -p "$P" -S 64 -C 1 -I 50 --split --negotiate --json
	assert_exit "--split -T v: the run" 0 "$RC" "$T/c4.err"
	assert_eq "--split -T v: no parts (every byte is checked)" null \
		"$(res "$T/c4.out" .split)"
	bg_stop srv 10
fi

if [ -x "$UPSTREAM" ]; then
	P=$(e2e_port)
	if start_server up "$P" "$UPSTREAM" -T s -p "$P"; then
		run_cmd u1 30 "$R" -T s -s $H -p "$P" -S 64 -C 1 -I 50 --split --json
		assert_exit "--split against upstream's server: the run" 0 "$RC" "$T/u1.err"
		assert_eq "--split against upstream's server: no parts" null \
			"$(res "$T/u1.out" .split)"
		assert_eq "--split against upstream's server: the result" 50 \
			"$(res "$T/u1.out" .iters)"
		bg_stop up 10
	fi
else
	skip "--split against upstream: $UPSTREAM is not installed"
fi

# ---- a starved server: its hold grows, the network's part does not
# The cgroup v1 cpu controller, or v2's cpu.max.
cg_make() {
	local d
	if [ -d /sys/fs/cgroup/cpu ] && [ -w /sys/fs/cgroup/cpu ]; then
		d=/sys/fs/cgroup/cpu/evr-split.$$
		mkdir "$d" 2>/dev/null || return 1
		echo 100000 >"$d/cpu.cfs_period_us" && echo 2000 >"$d/cpu.cfs_quota_us" ||
			{ rmdir "$d"; return 1; }
		CG_ROOT=/sys/fs/cgroup/cpu
	elif grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
		echo +cpu >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
		d=/sys/fs/cgroup/evr-split.$$
		mkdir "$d" 2>/dev/null || return 1
		echo "2000 100000" >"$d/cpu.max" || { rmdir "$d"; return 1; }
		CG_ROOT=/sys/fs/cgroup
	else
		return 1
	fi
	CG=$d
}

if [ "$E2E_VG" = 1 ]; then
	skip "a starved server: timing under valgrind is not the program's"
elif [ "$(id -u)" != 0 ]; then
	skip "a starved server: needs root (a cgroup's CPU quota)"
elif ! cg_make; then
	not_ok "a starved server: a cgroup with a CPU quota" "no writable cpu controller"
else
	P=$(e2e_port)
	if start_server st "$P" "$R" -T s -b $H -p "$P"; then
		SP=$(bg_child_pid st)
		got= qt=- st=- qp=- sp=- qm=- sm=- qn=- sn=-
		for round in 1 2 3; do
			echo "$SP" >"$CG_ROOT/cgroup.procs"
			run_cmd q 60 "$R" -T s -s $H -p "$P" -S 64 -C 1 -I 2000 --split --percentiles --json
			[ "$RC" = 0 ] || { not_ok "starved: the unstarved run" "exit $RC"; break; }
			echo "$SP" >"$CG/cgroup.procs"
			# By the clock: how slow a starved iteration is depends on
			# the host's load (0.3 ms quiet, 1 ms in CI, 28 ms beside
			# four busy loops), and 2,000 of them could outlast any
			# timeout.
			run_cmd s 60 "$R" -T s -s $H -p "$P" -S 64 -C 1 -D 2 --split --percentiles --json
			echo "$SP" >"$CG_ROOT/cgroup.procs"
			[ "$RC" = 0 ] || { not_ok "starved: the starved run" "exit $RC"; break; }
			qn=$(res "$T/q.out" .split.net.p50_ns) sn=$(res "$T/s.out" .split.net.p50_ns)
			qm=$(res "$T/q.out" '.split.net.mean_ns | floor') sm=$(res "$T/s.out" '.split.net.mean_ns | floor')
			qp=$(res "$T/q.out" '.split.peer.mean_ns | floor') sp=$(res "$T/s.out" '.split.peer.mean_ns | floor')
			qt=$(res "$T/q.out" '.latency.mean_ns | floor') st=$(res "$T/s.out" '.latency.mean_ns | floor')
			say "round $round: round trip mean $qt -> $st ns, peer mean $qp -> $sp ns, net mean $qm -> $sm ns, net p50 $qn -> $sn ns"
			# The starvation took hold: the round trip's mean grew by
			# 0.1 ms and more, over 10 times an unstarved one (the
			# throttled periods are 98 ms in 100; how many of the
			# 2,000 iterations meet one varies by host: 0.27-0.32 ms
			# here in three rounds, more in CI).
			# The hold carries that growth (80 % of it and more), the
			# network's part does not (10 % and less), and the network's
			# median stays within a factor of 2.  Growths, not ratios of
			# means: the unstarved run shares the host with the rest of
			# the suite, and its hold is then large too, and told as
			# such.  The median's bound is wide on purpose: a throttled
			# server wakes slower, and its wake-up is the network's part
			# (before its receive): 3.4 -> 4.5 us, 1.3x, in all three
			# rounds of one CI run, where a split that leaked the hold
			# into the network's part would move it by 100 us and more.
			dt=$((st - qt))
			if [ "$dt" -ge 100000 ] && [ $(((sp - qp) * 10)) -ge $((dt * 8)) ] &&
				[ $(((sm - qm) * 10)) -le "$dt" ] && [ $(((sn - qn) * 10)) -le "$dt" ] &&
				[ "$sn" -le $((qn * 2)) ] && [ $((sn * 2)) -ge "$qn" ]; then
				got=1
				break
			fi
		done
		diag="round trip mean $qt -> $st ns, peer mean $qp -> $sp ns, net mean $qm -> $sm ns, net p50 $qn -> $sn ns"
		if [ -n "$got" ]; then
			ok "starved server (2 % CPU): the hold carries the round trip's growth, the network's part does not ($diag)"
		else
			not_ok "starved server: the hold carries the round trip's growth, the network's part does not" "$diag"
		fi
		bg_stop st 10
	fi
	rmdir "$CG" 2>/dev/null
fi

e2e_done
