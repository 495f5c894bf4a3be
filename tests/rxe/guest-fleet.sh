#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The fleet agent over RDMA, in a fabric (tests/rxe/fabric.sh; the newer
# guest kernel): 4 hosts in 2 racks, one evrdma-probed per host with an
# rdma responder and an rdma mesh over one peers file (racks as labels).
# Then faults, 6 injections of 3 kinds, each judged from the agents' own
# metrics as a fleet view would judge them: a host is named when at
# least half of its probers see it down; a pair is down when its prober
# sees it down.
#   - a host's link dead (100 % loss both ways; its carrier stays: a
#     carrier loss under a live RC connection wedges Soft-RoCE's CM on
#     that host, see doc/fabric.md), twice: that host named, no other;
#   - a host's RNIC removed (rdma link delete), twice: that host named,
#     no other, and its own agent says why (devgone or nodev), then back;
#   - a spine link down (l1-s1, l2-s2): no pair within a rack down, the
#     pairs across racks whose run hashes onto that spine fail (a new QP,
#     a new UDP source port, each run).  A host may then be "named" by
#     the half rule (its cross-rack probers' runs failing together): the
#     fleet's rules must tell a spine from a host (doc/fabric.md).
# Each: the time from injection to the verdict, then all up again.
set -u
P=${EVR_BIN:-/opt/evr}/evrdma-probed
T=$(mktemp -d)
here=$(dirname "$0")
# shellcheck source=tests/rxe/lib-guest.sh
. "$here/lib-guest.sh"
# shellcheck source=tests/rxe/fabric.sh
. "$here/fabric.sh"
N=4
summary() {
	local n
	for n in $(seq $N); do [ -n "${ap[$n]:-}" ] && kill -9 "${ap[$n]}" 2>/dev/null; done
	fab_down >/dev/null 2>&1
	echo "fleet-rxe: $pass passed, $fail failed"
	exit $((fail > 0))
}
fab_require_netns fleet-rxe "the fleet"
fab_up 2 2 >"$T/up.err" 2>&1 || { ko "fabric up" "$(tail -3 "$T/up.err")"; summary; }

: >"$T/peers.txt"
for n in $(seq $N); do
	echo "h$n $(fab_addr "$n") rack=r$(fab_rack "$n")" >>"$T/peers.txt"
done
declare -a ap
for n in $(seq $N); do
	a=$(fab_addr "$n")
	cat >"$T/h$n.json" <<JSON
{ "listen_address": "127.0.0.1", "listen_port": 9471,
  "responders": [ { "transport": "rdma", "port": 7471, "bind": "$a" } ],
  "mesh": { "peers_file": "$T/peers.txt", "transport": "rdma", "port": 7471,
            "size": 64, "iters": 20, "interval_s": 1, "timeout_s": $(tsc 3) } }
JSON
	ip netns exec "h$n" "$P" -c "$T/h$n.json" >"$T/h$n.out" 2>&1 &
	ap[$n]=$!
done

# scrape N: host N's agent, from inside its namespace (no fabric link in
# the way) into $T/mN
scrape_n() {
	ip netns exec "h$1" bash -c 'exec 3<>/dev/tcp/127.0.0.1/9471 || exit 1
		printf "GET /metrics HTTP/1.0\r\nHost: probed\r\n\r\n" >&3; cat <&3' \
		>"$T/m$1" 2>/dev/null
}
up_of() { # N PEER: host N's view of PEER (1, 0 or empty)
	awk -v k="evrdma_probe_up{probe=\"mesh:$2\"," 'index($1, k) == 1 { print $2 }' "$T/m$1"
}
# view: every prober's view of every peer, "N>P=u ..." into $view
view() {
	local n p
	view=
	for n in $(seq $N); do
		scrape_n "$n" || { view="$view h$n:noscrape"; continue; }
		for p in $(seq $N); do
			[ "$p" = "$n" ] && continue
			view="$view $n>$p=$(up_of "$n" "h$p")"
		done
	done
}
# named: the hosts that at least half of their probers see down
named() {
	local p n down all
	for p in $(seq $N); do
		down=0 all=0
		for n in $(seq $N); do
			[ "$p" = "$n" ] && continue
			case " $view " in
			*" $n>$p=0 "*) down=$((down + 1)); all=$((all + 1)) ;;
			*" $n>$p=1 "*) all=$((all + 1)) ;;
			esac
		done
		[ "$all" -gt 0 ] && [ $((2 * down)) -ge "$all" ] && printf 'h%s ' "$p"
	done
}
all_up() {
	view
	[ -n "$view" ] || return 1
	case "$view " in *"=0 "*|*"= "*|*noscrape*) return 1 ;; esac
}
# runs: every prober's completed runs to every peer, "N>P=runs ..."
# (from the scrapes view just took)
runs() {
	local n p
	for n in $(seq $N); do
		for p in $(seq $N); do
			[ "$p" = "$n" ] && continue
			printf '%s>%s=%s ' "$n" "$p" "$(awk -v k="evrdma_probe_runs_total{probe=\"mesh:h$p\"," \
				'index($1, k) == 1 { print $2 }' "$T/m$n")"
		done
	done
}
# settled BASE NOW: every pair has finished 2 runs since BASE was taken:
# the second began after the first ended, so after the repair.  A run
# that was in flight across the fault ends (a timeout, seconds later)
# within the first; without this, its failure lands in the next
# injection's window and is judged there (a pair within a rack "down"
# under a spine fault).
settled() { # BASE NOW
	awk -v a="$1" -v b="$2" 'BEGIN {
		n = split(a, x, " "); if (split(b, y, " ") != n) exit 1
		for (i = 1; i <= n; i++) {
			split(x[i], p, "="); split(y[i], q, "=")
			if (p[1] != q[1] || q[2] == "" || q[2] + 0 < p[2] + 2) exit 1
		}
		exit n == 0 }'
}
wait_all_up() { # SECONDS: every pair up, and every pair settled
	local i base=""
	for i in $(seq $(($1 * 2))); do
		if all_up; then
			[ -n "$base" ] || base=$(runs)
			settled "$base" "$(runs)" && return 0
		fi
		sleep 0.5
	done
	return 1
}

t0=$(now)
if wait_all_up "$(tsc 40)"; then
	ok "4 agents, an rdma mesh across 2 racks: every pair up ($(since "$t0") s)"
else
	ko "the mesh comes up" "$view"
	summary
fi

# inject KIND TARGET: the fault; wait (20 s at most) for the verdict it
# should give; clear; wait for all up.  Prints the time to the verdict.
DET=()
inject() {
	local kind=$1 tgt=$2 t got="" i intra="" p
	t=$(now)
	case $kind in
	dead) fab_fault loss "$tgt" 100 ;;
	rnic) fab_fault rnic-del "$tgt" ;;
	spine) fab_fault down "$tgt" ;;
	esac
	for i in $(seq 40); do
		sleep 0.5
		view
		case $kind in
		dead|rnic)
			[ "$(named)" = "$tgt " ] && { got=$(since "$t"); break; } ;;
		spine)
			# a run's QP hashes onto a spine by its UDP source
			# port, new each run: pairs across racks fail now and
			# then, a pair within a rack never
			for p in "1>2" "2>1" "3>4" "4>3"; do
				case " $view " in *" $p=0 "*) intra="$intra $p" ;; esac
			done
			[ -z "$intra" ] || break
			case " $view " in
			*" 1>3=0 "*|*" 1>4=0 "*|*" 2>3=0 "*|*" 2>4=0 "*|*" 3>1=0 "*|*" 3>2=0 "*|*" 4>1=0 "*|*" 4>2=0 "*)
				got=$(since "$t"); break ;;
			esac ;;
		esac
	done
	echo "$kind $tgt: view$view; named: $(named)" >>"$T/verdicts"
	case $kind in
	dead) fab_clear "$tgt" ;;
	rnic) fab_fault rnic-add "$tgt"; fab_wait_active ;;
	spine) fab_clear "$tgt" ;;
	esac
	if [ -n "$got" ]; then
		DET+=("$got")
		case $kind in
		dead) ok "$tgt's link dead: $tgt named, no other host ($got s)" ;;
		rnic) ok "$tgt's RNIC removed: $tgt named, no other host ($got s)" ;;
		spine) ok "$tgt down: pairs across racks fail, none within a rack ($got s)" ;;
		esac
	elif [ -n "$intra" ]; then
		ko "$kind $tgt" "a pair within a rack down:$intra; view$view"
	else
		ko "$kind $tgt" "no verdict in 20 s: view$view; named: $(named)"
	fi
	t=$(now)
	if wait_all_up "$(tsc 30)"; then
		ok "... $tgt repaired: every pair up again ($(since "$t") s)"
	else
		ko "... $tgt repaired" "$view"
	fi
}
inject dead h3
inject rnic h4
inject spine l1-s1
inject dead h2
inject rnic h1
inject spine l2-s2
reason=$(awk '$1 ~ /^evrdma_probe_failures_total\{probe="mesh:/ && $2 > 0 { sub(/.*reason="/, "", $1); sub(/".*/, "", $1); print $1 }' "$T/m1" | sort -u | tr '\n' ' ')
case $reason in
*devgone*|*nodev*|*portdown*) ok "h1's own failures while its RNIC was away have their own reasons ($reason)" ;;
*) ko "h1's own failures' reasons" "'$reason'" ;;
esac
printf '%s\n' "${DET[@]}" | sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "# injection to verdict: %d of 6, median %s s, max %s s\n", NR, v[int((NR + 1) / 2)], v[NR] }'
cat "$T/verdicts" | sed 's/^/# /'

alive=0
for n in $(seq $N); do kill -0 "${ap[$n]}" 2>/dev/null && alive=$((alive + 1)); done
[ "$alive" = $N ] && ok "every agent alive throughout" || ko "agents alive" "$alive of $N"
for n in $(seq $N); do kill -TERM "${ap[$n]}" 2>/dev/null; done
rcs=
for n in $(seq $N); do reap "${ap[$n]}" 10; rcs="$rcs $?"; ap[$n]=; done
[ "$rcs" = " 0 0 0 0" ] && ok "SIGTERM: every agent exits 0" || ko "SIGTERM" "exits$rcs"
summary
