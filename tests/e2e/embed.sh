#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The engine embedded in a host's loop (examples/embed.c): a host with its
# own ev_loop and its own 20 ms timer runs an rstream TCP server and four
# clients at once, cancels one client from its timer (another cancels
# itself from inside its own callback), and checks that its
# timer kept firing throughout, that the cancelled client reported
# -EVR_E_CANCELLED, that the others got their results, and that ev_run()
# returned by itself once every engine was freed (no watcher of evrdma's
# left).  Then the same under valgrind memcheck (no error, no leak).
#
# mckey's UDP engine joins in only inside a network namespace this script
# creates (multicast on lo needs a route we will not add to the host's own
# namespace); without root that part is skipped and says so.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

EMBED=${EMBED:-}
if [ -z "$EMBED" ] || [ ! -x "$EMBED" ]; then
	echo "$E2E_NAME: EMBED is not set to the examples/embed program" >&2
	exit 99
fi
T=$E2E_TMP
VG=(valgrind --quiet --leak-check=full --show-leak-kinds=definite,indirect,possible
    --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=99
    --track-fds=no)

# The host's verdicts: every "ok -" line it printed, and no "FAIL -".
host_checks() { # DESC NAME MIN_OKS
	local n
	n=$(grep -c '^ok - ' "$T/$2.out")
	if grep -q '^FAIL - ' "$T/$2.out" || [ "$n" -lt "$3" ] ||
	   ! grep -q '^embed: all checks passed$' "$T/$2.out"; then
		not_ok "$1: the host's own checks ($n passed)" \
		       "$(grep -E '^(FAIL|host:)' "$T/$2.out" | head -5)"
	else
		ok "$1: the host's own checks ($n passed)"
	fi
}

# ---- stream engines only, on 127.0.0.1
P=$(e2e_port)
# The host's limits (-G wall, -B CPU time of its loop's thread between two
# ticks: 3000 and 200 ms) times the harness's scale for slower builds (the
# ASan build spends 2-3x the CPU per operation; lib.sh's E2E_TIME_SCALE).
LIMITS=(-G "$(tscale 3000)" -B "$(tscale 200)")
run_cmd plain 120 "$EMBED" -p "$P" "${LIMITS[@]}"
assert_exit "embedded engines: exit status" 0 "$RC" "$T/plain.out" "$T/plain.err"
host_checks "embedded engines" plain 11
assert_match "the host cancelled client-c from its timer" \
	'^host: tick [0-9]+: cancelling client-c$' "$T/plain.out"
assert_match "client-c's done() said cancelled" \
	'^client-c: done, status -100008: .*interrupted' "$T/plain.out"
assert_match "the host's timer ticked while the engines ran" \
	'^host: [0-9]+ ticks of 20 ms' "$T/plain.out"

if e2e_can_valgrind "the embedding host (memcheck)"; then
	P=$(e2e_port)
	# valgrind slows everything ~20x: looser limits on the tick gaps
	run_cmd vg 300 "${VG[@]}" "$EMBED" -p "$P" -G 10000 -B 3000
	assert_exit "embedded engines under valgrind: exit status" 0 "$RC" \
		"$T/vg.out" "$T/vg.err"
	host_checks "embedded engines under valgrind" vg 11
	vg_clean "embedded engines" "$T/vg.err"
fi

# ---- one loop per thread: three hosts at once, each in a thread of its
# own with its own loop and engines; then two under helgrind (no race:
# evrdma has no global state and needs no lock)
for _ in 1 2 3 4 5 6 7 8; do # the hosts listen on P, P+1 and P+2
	P=$(e2e_port)
	e2e_port_busy $((P + 1)) || e2e_port_busy $((P + 2)) || break
done
run_cmd threads 120 "$EMBED" -p "$P" -j 3 -q "${LIMITS[@]}"
assert_exit "three hosts in three threads: exit status" 0 "$RC" "$T/threads.out" "$T/threads.err"
assert_lines "three hosts in three threads: every check of every host" 33 \
	"$T/threads.out" '^ok - thread [0-2]: '
if e2e_can_valgrind "two hosts in two threads (helgrind)"; then
	for _ in 1 2 3 4 5 6 7 8; do
		P=$(e2e_port)
		e2e_port_busy $((P + 1)) || break
	done
	run_cmd hg 300 valgrind --tool=helgrind --quiet --error-exitcode=99 \
		"$EMBED" -p "$P" -j 2 -q -G 20000 -B 10000
	assert_exit "two hosts in two threads under helgrind: exit status" 0 "$RC" \
		"$T/hg.out" "$T/hg.err"
	assert_no_match "helgrind reports no data race" 'Possible data race|lock order' "$T/hg.err"
fi

# ---- plus mckey's UDP engine (a receiver with 2 sockets and a sender),
# inside a namespace of our own
NS=evemb-$$
if [ "$(id -u)" = 0 ] && command -v ip >/dev/null && ip netns add "$NS" 2>/dev/null; then
	trap 'ip netns del "$NS" 2>/dev/null; e2e_cleanup' EXIT
	IN=(ip netns exec "$NS")
	"${IN[@]}" ip link set lo up
	"${IN[@]}" ip link set lo multicast on
	"${IN[@]}" ip addr add 10.78.0.1/24 dev lo
	"${IN[@]}" ip route add 224.0.0.0/4 dev lo
	run_cmd mc 120 "${IN[@]}" "$EMBED" -p 27471 -g 239.7.7.7 -b 10.78.0.1 "${LIMITS[@]}"
	assert_exit "embedded stream + mckey engines: exit status" 0 "$RC" \
		"$T/mc.out" "$T/mc.err"
	host_checks "embedded stream + mckey engines" mc 13
	assert_match "mckey receiver got 40 of 40" \
		'^mc-recv: done, status 0, 2 QPs, sent 0, received 40 of 40$' "$T/mc.out"
	if e2e_can_valgrind "the embedding host with mckey's engine (memcheck)"; then
		run_cmd mcvg 300 "${IN[@]}" "${VG[@]}" "$EMBED" -p 27471 \
			-g 239.7.7.7 -b 10.78.0.1 -G 10000 -B 3000
		assert_exit "embedded stream + mckey under valgrind: exit status" \
			0 "$RC" "$T/mcvg.out" "$T/mcvg.err"
		host_checks "embedded stream + mckey under valgrind" mcvg 13
		vg_clean "embedded stream + mckey engines" "$T/mcvg.err"
	fi
	ip netns del "$NS"
else
	skip "mckey engine in the embedding host: needs root to make a network namespace"
fi

e2e_done
