#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# mckey --udp end to end: receivers and senders in network namespaces that
# this script creates (two joined by a veth pair, and one on its own lo),
# upstream's transcript on both sides, per-sender statistics, several QPs,
# the deadline, a sender killed mid-run, IPv6 groups and bad input.
#
# Multicast goes only over the veth pair and the namespaces' lo; nothing
# is sent on the host's interfaces.  Needs root (CAP_NET_ADMIN); without
# it the script skips (77).  The namespaces are deleted on exit.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

MCKEY=${MCKEY:-}
if [ -z "$MCKEY" ] || [ ! -x "$MCKEY" ]; then
	echo "$E2E_NAME: MCKEY is not set to an executable mckey" >&2
	exit 99
fi
for t in ip pgrep diff; do
	command -v "$t" >/dev/null 2>&1 || e2e_skip_all "$t is not installed"
done

NSA=evmk-a-$$      # receiver side of the veth pair
NSB=evmk-b-$$      # sender side
NSL=evmk-l-$$      # both on lo
NETS_MADE=()
nets_del() { # (keeps $? for e2e_cleanup)
	local st=$? n
	for n in "${NETS_MADE[@]}"; do
		ip netns del "$n" 2>/dev/null
	done
	return "$st"
}
trap 'nets_del; e2e_cleanup' EXIT

# ------------------------------------------------------------- helpers

# mckey_start NAME NS SECS ARGS...: mckey ARGS in namespace NS, in the
# background (bg_start); mckey_run NAME NS SECS ARGS...: in the
# foreground (run_cmd: RC, ELAPSED_MS)
mckey_start() {
	local name=$1 ns=$2 secs=$3
	shift 3
	bg_start "$name" "$secs" ip netns exec "$ns" "$MCKEY" "$@"
}
mckey_run() {
	local name=$1 ns=$2 secs=$3
	shift 3
	run_cmd "$name" "$secs" ip netns exec "$ns" "$MCKEY" "$@"
}

# expect_text DESC FILE TEXT: the whole file, line for line
expect_text() {
	if printf '%s\n' "$3" | diff -u - "$2" >"$E2E_TMP/diff" 2>&1; then
		ok "$1"
	else
		not_ok "$1" "output differs (- want, + got):"
		sed 's/^/#   /' "$E2E_TMP/diff" | head -n 40
	fi
}

# The receiver has joined (its sockets hold the membership) before the
# sender starts, so nothing is sent to a group nobody listens to yet.
await_joined() { # NAME N
	local n=${2:-1} i c lim
	lim=$(tscale 200)
	for ((i = 0; i < lim; i++)); do
		c=$(grep -c '^mckey: joined' "$E2E_TMP/$1.out" 2>/dev/null)
		[ "${c:-0}" -ge "$n" ] && return 0
		bg_alive "$1" || break
		sleep 0.05
	done
	not_ok "$1 joined" "not $n 'mckey: joined' lines (exited, or $(tscale 10) s passed)"
	dump "$E2E_TMP/$1".{out,err}
	return 1
}

transcript() { # ROLE DGID NJOINED [TRANSFER=1] [STATUS=0]
	local role=$1 dgid=$2 n=$3 xfer=${4:-1} st=${5:-0} i
	if [ "$role" = server ]; then
		echo "mckey: starting server"
	else
		echo "mckey: starting client"
	fi
	echo "mckey: joining"
	for ((i = 0; i < n; i++)); do
		echo "mckey: joined dgid: $dgid mlid 0x0 sl 0"
	done
	if [ "$xfer" = 1 ]; then
		if [ "$role" = server ]; then
			echo "receiving data transfers"
		else
			echo "initiating data transfers"
		fi
		[ "$st" = 0 ] && echo "data transfers complete"
	fi
	echo "test complete"
	echo "return status $st"
}

# ------------------------------------------------------------- namespaces

X=$(( $$ % 200 + 20 ))      # 10.X.1.0/24 between A and B, 10.X.9.1 on L's lo
A4=10.$X.1.1
B4=10.$X.1.2
L4=10.$X.9.1
A6=fd00:$X::1
B6=fd00:$X::2

skip_net() {
	e2e_skip_all "$E2E_NAME: $* -- mckey --udp NOT TESTED (needs root / CAP_NET_ADMIN and veth)"
}

for ns in "$NSA" "$NSB" "$NSL"; do
	if ! ip netns add "$ns" 2>"$E2E_TMP/netns.err"; then
		skip_net "cannot create network namespace $ns: $(head -n1 "$E2E_TMP/netns.err")"
	fi
	NETS_MADE+=("$ns")
done
# The veth ends are created directly inside the namespaces.
ip -n "$NSA" link add va type veth peer name vb netns "$NSB" 2>"$E2E_TMP/veth.err" ||
	skip_net "cannot create a veth pair: $(head -n1 "$E2E_TMP/veth.err")"
setup_ok=1
{
	ip -n "$NSA" link set lo up &&
	ip -n "$NSB" link set lo up &&
	ip -n "$NSA" addr add "$A4/24" dev va &&
	ip -n "$NSB" addr add "$B4/24" dev vb &&
	ip -n "$NSA" addr add "$A6/64" dev va nodad &&
	ip -n "$NSB" addr add "$B6/64" dev vb nodad &&
	ip -n "$NSA" link set va up multicast on &&
	ip -n "$NSB" link set vb up multicast on &&
	ip -n "$NSA" route add 224.0.0.0/4 dev va &&
	ip -n "$NSB" route add 224.0.0.0/4 dev vb &&
	ip -n "$NSL" link set lo up &&
	ip -n "$NSL" link set lo multicast on &&
	ip -n "$NSL" addr add "$L4/24" dev lo &&
	ip -n "$NSL" route add 224.0.0.0/4 dev lo
} 2>"$E2E_TMP/setup.err" || setup_ok=0
if [ "$setup_ok" = 0 ]; then
	not_ok "namespace setup" "$(cat "$E2E_TMP/setup.err")"
	e2e_done
fi
# IPv6 multicast leaves through the interface of the ff00::/8 route in
# the local table, which the kernel adds for each interface; check it.
for side in "$NSA va" "$NSB vb"; do
	set -- $side
	if ! ip -n "$1" -6 route show table local | grep -q "ff00::/8 dev $2"; then
		ip -n "$1" -6 route add multicast ff00::/8 dev "$2" table local \
			2>/dev/null
	fi
done
# carrier on both ends
for ((i = 0; i < 50; i++)); do
	ip -n "$NSA" link show va | grep -q LOWER_UP &&
		ip -n "$NSB" link show vb | grep -q LOWER_UP && break
	sleep 0.1
done

COMMON=(--udp --settle 0.3)

# ------------------------------------------------------------- IPv4 pair

# 1. upstream's transcript on both sides
G=239.77.1.1
mckey_start r1 "$NSA" 20 -m $G -b "$A4" "${COMMON[@]}" --deadline "$(tscale 10)"
if await_joined r1; then
	mckey_run s1 "$NSB" 20 -m $G -b "$B4" -s "${COMMON[@]}"
	assert_exit "ipv4: sender" 0 "$RC" "$E2E_TMP/s1".{out,err}
	expect_text "ipv4: sender transcript" "$E2E_TMP/s1.out" \
		"$(transcript client "::ffff:$G" 1)"
	assert_empty "ipv4: sender stderr" "$E2E_TMP/s1.err"
fi
bg_wait r1 20
assert_exit "ipv4: receiver" 0 "$RC" "$E2E_TMP/r1".{out,err}
expect_text "ipv4: receiver transcript" "$E2E_TMP/r1.out" \
	"$(transcript server "::ffff:$G" 1)"
assert_empty "ipv4: receiver stderr" "$E2E_TMP/r1.err"
assert_le "ipv4: receiver done well before its deadline" "$BG_RUN_MS" "$(tscale 8000)"

# 2. --stats: per QP and per sender, on a port of our own
G=239.77.1.2
mckey_start r2 "$NSA" 20 -m $G -b "$A4" "${COMMON[@]}" --udp-port 17001 \
	-C 25 --stats --deadline "$(tscale 10)"
if await_joined r2; then
	mckey_run s2 "$NSB" 20 -m $G -b "$B4" -s "${COMMON[@]}" --udp-port 17001 \
		-C 25 --stats
	assert_exit "stats: sender" 0 "$RC" "$E2E_TMP/s2".{out,err}
	assert_lines "stats: sender reports sent/completed" 1 "$E2E_TMP/s2.out" \
		'^mckey: qp 0: sent 25, completed 25$'
fi
bg_wait r2 20
assert_exit "stats: receiver" 0 "$RC" "$E2E_TMP/r2".{out,err}
assert_lines "stats: receiver per-QP line" 1 "$E2E_TMP/r2.out" \
	'^mckey: qp 0: received 25 of 25 expected, 0 without an evrdma header, 0 bad headers, 0 from untracked senders$'
assert_lines "stats: receiver per-sender line" 1 "$E2E_TMP/r2.out" \
	'^mckey: qp 0: sender [0-9a-f]{8}: 25 of 25, lost 0, duplicates 0, reordered 0, not received before stop 0, outside window 0$'
assert_lines "stats: join latency line" 1 "$E2E_TMP/r2.out" \
	'^mckey: qp 0 joined in [0-9]+\.[0-9]{3} ms$'
assert_lines "stats: receiver still ends with return status 0" 1 "$E2E_TMP/r2.out" \
	'^return status 0$'

# 2b. --fail-if 'loss>...': all 25 came, the threshold holds (exit 0,
# nothing on stderr); a receiver that stops after 10 of a sender's 25
# lost 60 %: exit 8, one line naming the QP and the loss
G=239.77.1.3
mckey_start r2b "$NSA" 20 -m $G -b "$A4" "${COMMON[@]}" --udp-port 17002 \
	-C 25 --fail-if 'loss>0.1%' --deadline "$(tscale 10)"
if await_joined r2b; then
	mckey_run s2b "$NSB" 20 -m $G -b "$B4" -s "${COMMON[@]}" --udp-port 17002 -C 25
fi
bg_wait r2b 20
assert_exit "--fail-if 'loss>0.1%': nothing lost" 0 "$RC" "$E2E_TMP/r2b".{out,err}
assert_empty "--fail-if, nothing lost: stderr" "$E2E_TMP/r2b.err"
mckey_start r2c "$NSA" 20 -m $G -b "$A4" "${COMMON[@]}" --udp-port 17002 \
	-C 10 --fail-if 'loss>0.1%' --deadline "$(tscale 10)"
if await_joined r2c; then
	mckey_run s2c "$NSB" 20 -m $G -b "$B4" -s "${COMMON[@]}" --udp-port 17002 \
		-C 25 --rate 200
fi
bg_wait r2c 20
assert_exit "--fail-if 'loss>0.1%': 15 of 25 never received" 8 "$RC" "$E2E_TMP/r2c".{out,err}
assert_lines "--fail-if: the line names the QP and the loss" 1 "$E2E_TMP/r2c.err" \
	"^mckey: --fail-if 'loss>0.1%': failed: qp 0 loss 60.00 %, 600 x the limit$"
mckey_run s2d "$NSB" 10 -m $G -b "$B4" -s "${COMMON[@]}" --fail-if 'loss>1%'
assert_exit "--fail-if on a sender: refused" 1 "$RC" "$E2E_TMP/s2d".{out,err}
assert_lines "--fail-if on a sender: one line" 1 "$E2E_TMP/s2d.err" \
	"^mckey: --fail-if is a receiver's option"

# 2c. descriptors: -c 100 QPs (a socket each) under a soft limit of 64
# raises it to the hard one and runs; under a hard limit of 64 (and no
# CAP_SYS_RESOURCE to pass it) one line says so up front (exit 5), and
# --check's nofile row fails
if [ "$E2E_VG" = 1 ]; then
	skip "-c 100 under a descriptor limit of 64: under valgrind a program cannot raise RLIMIT_NOFILE past the limit it started with (valgrind's own fds sit just under it); the normal and ASan builds run it"
else
	G=239.77.1.4
	run_cmd fds1 20 ip netns exec "$NSB" bash -c 'ulimit -Sn 64 && exec "$0" "$@"' \
		"$MCKEY" -m $G -b "$B4" -s "${COMMON[@]}" -c 100 -C 1
	assert_exit "-c 100 under a soft limit of 64: raised, sent" 0 "$RC" "$E2E_TMP/fds1".{out,err}
	run_cmd fds2 20 ip netns exec "$NSB" setpriv --bounding-set=-sys_resource \
		bash -c 'ulimit -n 64 && exec "$0" "$@"' \
		"$MCKEY" -m $G -b "$B4" -s "${COMMON[@]}" -c 100 -C 1
	assert_exit "-c 100 under a hard limit of 64: refused up front" 5 "$RC" "$E2E_TMP/fds2".{out,err}
	assert_lines "-c 100 under a hard limit of 64: one line" 1 "$E2E_TMP/fds2.err" \
		'^mckey: -c 100 needs ~116 file descriptors, the limit is 64 and cannot be raised$'
	run_cmd fds3 20 ip netns exec "$NSB" setpriv --bounding-set=-sys_resource \
		bash -c 'ulimit -n 64 && exec "$0" "$@"' \
		"$MCKEY" --check -m $G -b "$B4" --udp -c 100
	assert_lines "--check -c 100 under 64: the nofile row fails" 1 "$E2E_TMP/fds3.out" \
		'^nofile +FAIL +RLIMIT_NOFILE 64 \(hard 64\), this run needs about 116'
fi

# 3. -c 4 on both sides: each receiving QP gets the datagrams of all four
# sending QPs (40), needs 10, and must still finish
G=239.77.1.3
mckey_start r3 "$NSA" 8 -m $G -b "$A4" "${COMMON[@]}" -c 4 --deadline "$(tscale 5)"
if await_joined r3 4; then
	mckey_run s3 "$NSB" 20 -m $G -b "$B4" -s "${COMMON[@]}" -c 4
	assert_exit "-c 4: sender" 0 "$RC" "$E2E_TMP/s3".{out,err}
	expect_text "-c 4: sender transcript (4 joined)" "$E2E_TMP/s3.out" \
		"$(transcript client "::ffff:$G" 4)"
fi
bg_wait r3 8
assert_exit "-c 4: receiver" 0 "$RC" "$E2E_TMP/r3".{out,err}
expect_text "-c 4: receiver transcript (4 joined)" "$E2E_TMP/r3.out" \
	"$(transcript server "::ffff:$G" 4)"
assert_empty "-c 4: receiver stderr" "$E2E_TMP/r3.err"

# 3b. more messages than the receiver expects (sender -C 15, receiver
# -C 10): the receiver is done after 10 and must exit, not spin
G=239.77.1.7
mckey_start r3b "$NSA" 8 -m $G -b "$A4" "${COMMON[@]}" -C 10 --deadline "$(tscale 5)"
if await_joined r3b; then
	mckey_run s3b "$NSB" 20 -m $G -b "$B4" -s "${COMMON[@]}" -C 15
	assert_exit "extra messages: sender" 0 "$RC" "$E2E_TMP/s3b".{out,err}
fi
bg_wait r3b 8
assert_exit "extra messages: receiver" 0 "$RC" "$E2E_TMP/r3b".{out,err}
assert_le "extra messages: receiver exited before its deadline" "$BG_RUN_MS" "$(tscale 5000)"
expect_text "extra messages: receiver transcript" "$E2E_TMP/r3b.out" \
	"$(transcript server "::ffff:$G" 1)"

# 3c. a receiver that stops at its own -C 5, a sender of 10: the five
# it did not wait for are not lost, they were not received before it
# stopped (issue 14)
G=239.77.1.8
mckey_start r3c "$NSA" 8 -m $G -b "$A4" "${COMMON[@]}" -C 5 --stats \
	--udp-port 17003 --deadline "$(tscale 5)"
if await_joined r3c; then
	mckey_run s3c "$NSB" 20 -m $G -b "$B4" -s "${COMMON[@]}" -C 10 --udp-port 17003
	assert_exit "-C 5 of 10: sender" 0 "$RC" "$E2E_TMP/s3c".{out,err}
fi
bg_wait r3c 8
assert_exit "-C 5 of 10: receiver" 0 "$RC" "$E2E_TMP/r3c".{out,err}
assert_lines "-C 5 of 10: 5 received, 0 lost, 5 not received before stop" 1 \
	"$E2E_TMP/r3c.out" \
	'^mckey: qp 0: sender [0-9a-f]{8}: 5 of 10, lost 0, duplicates 0, reordered 0, not received before stop 5, outside window 0$'

# 4. -C 0: join and leave only
mckey_run r4 "$NSA" 20 -m 239.77.1.4 -b "$A4" "${COMMON[@]}" -C 0
assert_exit "-C 0: receiver" 0 "$RC" "$E2E_TMP/r4".{out,err}
expect_text "-C 0: no transfer lines" "$E2E_TMP/r4.out" \
	"$(transcript server "::ffff:239.77.1.4" 1 0)"

# 5. and 6.: deadlines that must fire after the sender's messages came
# (1.5 s, 3 s from the receiver's start): a sender under valgrind takes
# longer than that to start, so with E2E_VALGRIND=1 they are skipped.
if [ "$E2E_VG" = 1 ]; then
	echo "SKIP - short sender (--deadline 1.5) and killed sender (--deadline 3): the receiver's deadline must fire after the sender's messages arrived, and a sender under valgrind takes longer than that to start; the normal and ASan builds run them"
else

# 5. the sender sends fewer than the receiver expects: the deadline
G=239.77.1.5
mckey_start r5 "$NSA" 20 -m $G -b "$A4" "${COMMON[@]}" -C 20 --deadline 1.5
if await_joined r5; then
	mckey_run s5 "$NSB" 20 -m $G -b "$B4" -s "${COMMON[@]}" -C 10
	assert_exit "short sender: sender" 0 "$RC" "$E2E_TMP/s5".{out,err}
fi
bg_wait r5 20
assert_exit "short sender: receiver fails at its deadline" 194 "$RC" "$E2E_TMP/r5".{out,err}
# settle 0.3 + deadline 1.5, and a margin for a loaded machine
assert_le "short sender: receiver took at least the deadline" 1500 "$BG_RUN_MS"
assert_le "short sender: receiver exited within the deadline + 3 s" "$BG_RUN_MS" $((1800 + $(tscale 3000)))
assert_match "short sender: deadline message" \
	'^mckey: deadline: receives not complete on 1 of 1 QPs after 1\.5 s$' \
	"$E2E_TMP/r5.err"
assert_match "short sender: shortfall reported" \
	'^mckey: qp 0: received 10 of 20 expected, 0 without an evrdma header, 0 bad headers, 0 from untracked senders$' \
	"$E2E_TMP/r5.err"
assert_match "short sender: the sender's 10 all arrived" \
	'^mckey: qp 0: sender [0-9a-f]{8}: 10 of 10, lost 0, duplicates 0, reordered 0, not received before stop 0, outside window 0$' \
	"$E2E_TMP/r5.err"
expect_text "short sender: receiver transcript" "$E2E_TMP/r5.out" \
	"$(transcript server "::ffff:$G" 1 1 -62)"

# 6. the sender is killed (SIGKILL on mckey itself) half-way
G=239.77.1.6
mckey_start r6 "$NSA" 30 -m $G -b "$A4" "${COMMON[@]}" -C 100 --deadline 3 --stats
if await_joined r6; then
	mckey_start s6 "$NSB" 30 -m $G -b "$B4" -s "${COMMON[@]}" -C 100 --rate 20
	if wait_match "$E2E_TMP/s6.out" '^initiating data transfers$' 10; then
		sleep 1
		kpid=$(bg_child_pid s6)
		comm=$(cat "/proc/$kpid/comm" 2>/dev/null)
		# under valgrind (E2E_VALGRIND=1) the process is memcheck's
		if [ -n "$kpid" ] && { [ "$comm" = mckey ] ||
		   { [ "$E2E_VG" = 1 ] && [ "${comm#memcheck}" != "$comm" ]; }; }; then
			kill -KILL "$kpid"
			ok "killed sender: SIGKILL to mckey (pid $kpid)"
		else
			not_ok "killed sender: find mckey under timeout" \
				"child '$kpid' is '$comm'"
		fi
	else
		not_ok "killed sender: sender started sending"
		dump "$E2E_TMP/s6".{out,err}
	fi
	bg_wait s6 30
	assert_exit "killed sender: died of SIGKILL (timeout reports 128+9)" 137 "$RC" "$E2E_TMP/s6".{out,err}
	assert_lines "killed sender: never completed" 0 "$E2E_TMP/s6.out" \
		'^data transfers complete$'
fi
bg_wait r6 30
assert_exit "killed sender: receiver fails at its deadline" 194 "$RC" "$E2E_TMP/r6".{out,err}
# What the killed sender never sent is not lost: the receiver did not
# receive it before it stopped (at its deadline).  Nothing is lost on
# the veth pair: got + not received = 100, lost 0.
line=$(grep -E '^mckey: qp 0: sender [0-9a-f]{8}: [0-9]+ of 100, lost [0-9]+, ' \
	"$E2E_TMP/r6.out" | head -n1)
got=$(echo "$line" | sed -nE 's/.*: ([0-9]+) of 100, lost ([0-9]+),.*, not received before stop ([0-9]+),.*/\1 \2 \3/p')
if [ -n "$got" ]; then
	set -- $got
	if [ "$1" -gt 0 ] && [ "$2" = 0 ] && [ "$3" -gt 0 ] &&
	   [ $(($1 + $3)) = 100 ]; then
		ok "killed sender: receiver got $1 of 100, lost 0, $3 not received before it stopped"
	else
		not_ok "killed sender: loss accounted" "$line"
	fi
else
	not_ok "killed sender: per-sender line" "none"
	dump "$E2E_TMP/r6".{out,err}
fi
assert_match "killed sender: deadline message" \
	'^mckey: deadline: receives not complete on 1 of 1 QPs after 3\.0 s$' \
	"$E2E_TMP/r6.err"
fi

# ------------------------------------------------------------- one namespace, lo

G=239.77.2.1
mckey_start r7 "$NSL" 20 -m $G -b "$L4" "${COMMON[@]}" --stats --deadline "$(tscale 10)"
if await_joined r7; then
	mckey_run s7 "$NSL" 20 -m $G -b "$L4" -s "${COMMON[@]}"
	assert_exit "lo: sender" 0 "$RC" "$E2E_TMP/s7".{out,err}
	expect_text "lo: sender transcript" "$E2E_TMP/s7.out" \
		"$(transcript client "::ffff:$G" 1)"
fi
bg_wait r7 20
assert_exit "lo: receiver" 0 "$RC" "$E2E_TMP/r7".{out,err}
assert_lines "lo: receiver got all, once" 1 "$E2E_TMP/r7.out" \
	'^mckey: qp 0: sender [0-9a-f]{8}: 10 of 10, lost 0, duplicates 0, reordered 0, not received before stop 0, outside window 0$'

# ------------------------------------------------------------- forged headers

# 40,000 forged 24-byte headers from 300 sender ids, each announcing
# 100 million messages at random sequence numbers, and 10 headers out of
# range.  A receiver once sized a bitmap by each announced count (148 MiB
# peak RSS); its memory must stay within its own limits (--max-senders
# 256, --window 4096: some 150 KiB), a few MiB over an idle receiver's,
# and what it could not track or could not read must be reported, in
# --stats and in JSON.  The forger sends the 10 bad ones first, 10 ms
# apart, then paces itself (1 ms every 200) so that the receivers' socket
# buffers keep up; a receiver under valgrind still drops many of the
# 40,000.
FORGE=$(cat <<'PY'
import random, socket, struct, sys, time
group, port, src = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(src))
rnd = random.Random(14)
count = 100000000
def send(sender, seq):
    s.sendto(struct.pack(">4sBBHIIII", b"EVMK", 1, 0, 0, sender, seq, count, 0),
             (group, port))
for i in range(10):                 # first, while the receivers keep up
    send(0x5eed0000, count + i)     # sequence number beyond the count
    time.sleep(0.01)
for i in range(40000):
    send(0x5eed0000 + (i % 300) * 0x1000, rnd.randrange(count))
    if i % 200 == 199:
        time.sleep(0.001)
PY
)
hwm_kib() { # NAME: peak RSS of the mckey under NAME's timeout, in KiB
	local p
	p=$(bg_child_pid "$1") && mem_kb "$p" VmHWM 2>/dev/null
}
G=239.77.2.14
FARGS=(-m "$G" -b "$L4" "${COMMON[@]}" --udp-port 17014 -C 100000000 \
	--deadline "$(tscale 4)")
mckey_start fidle "$NSL" 40 -m 239.77.2.15 -b "$L4" "${COMMON[@]}" --udp-port 17015 \
	-C 100000000 --deadline "$(tscale 4)"
mckey_start fstats "$NSL" 40 "${FARGS[@]}" --stats
mckey_start fjson "$NSL" 40 "${FARGS[@]}" --json
if await_joined fidle && await_joined fstats &&
   wait_match "$E2E_TMP/fjson.out" '"type":"join"' 10; then
	if ip netns exec "$NSL" python3 -c "$FORGE" "$G" 17014 "$L4" \
		2>"$E2E_TMP/forge.err"; then
		ok "forged headers: 40,010 sent"
	else
		not_ok "forged headers: the forger" "$(head -n3 "$E2E_TMP/forge.err")"
	fi
	sleep 0.3
	idle=$(hwm_kib fidle)
	peak=$(hwm_kib fstats)
	peakj=$(hwm_kib fjson)
	if [ -n "$idle" ] && [ -n "$peak" ] && [ -n "$peakj" ]; then
		echo "# peak RSS: idle receiver $idle KiB, attacked $peak KiB (--stats), $peakj KiB (--json)"
		assert_le "forged headers: peak RSS within 4 MiB of an idle receiver's ($peak vs $idle KiB)" \
			"$peak" $((idle + 4096))
		assert_le "forged headers: the --json receiver too ($peakj vs $idle KiB)" \
			"$peakj" $((idle + 4096))
	else
		not_ok "forged headers: VmHWM of the receivers" \
			"idle '$idle', attacked '$peak', '$peakj'"
	fi
fi
bg_wait fidle 40
bg_wait fstats 40
assert_exit "forged headers: receiver ends at its deadline" 194 "$RC" "$E2E_TMP/fstats".{out,err}
# what it could not track (44 sender ids beyond 256; sequence numbers far
# behind the highest) and could not read (the 10 out of range) is said
line=$(grep -E '^mckey: qp 0: received [0-9]+ of 100000000 expected, ' "$E2E_TMP/fstats.out")
got=$(echo "$line" | sed -nE 's/.*, ([0-9]+) bad headers, ([0-9]+) from untracked senders$/\1 \2/p')
if [ -n "$got" ]; then
	set -- $got
	if [ "$1" -ge 1 ] && [ "$1" -le 10 ] && [ "$2" -ge 1 ]; then
		ok "forged headers: --stats reports $1 bad headers, $2 from untracked senders"
	else
		not_ok "forged headers: bad and untracked counted" "$line"
	fi
else
	not_ok "forged headers: --stats per-QP line with bad and untracked" "${line:-none}"
	dump "$E2E_TMP/fstats.out"
fi
assert_lines "forged headers: 256 senders tracked, no more" 256 "$E2E_TMP/fstats.out" \
	'^mckey: qp 0: sender 5e[0-9a-f]{6}: '
assert_match "forged headers: arrivals outside the window reported" \
	', outside window [1-9][0-9]*$' "$E2E_TMP/fstats.out"
bg_wait fjson 40
assert_exit "forged headers: --json receiver ends at its deadline" 194 "$RC" "$E2E_TMP/fjson".{out,err}
assert_match "forged headers: JSON recv_stats has bad, untracked and the limits" \
	'"type":"recv_stats".*"bad":([1-9]|10),"untracked":[1-9][0-9]*,"senders":256,"window":4096,"max_senders":256' \
	"$E2E_TMP/fjson.out"
assert_match "forged headers: JSON sender_stats has not_received and outside_window" \
	'"type":"sender_stats".*"not_received":[0-9]+,"outside_window":[1-9]' \
	"$E2E_TMP/fjson.out"

# ------------------------------------------------------------- IPv6

ipv6_pair() { # TAG GROUP
	local tag=$1 g=$2
	mckey_start "r$tag" "$NSA" 20 -m "$g" -b "$A6" "${COMMON[@]}" --deadline "$(tscale 5)"
	if await_joined "r$tag"; then
		mckey_run "s$tag" "$NSB" 20 -m "$g" -b "$B6" -s "${COMMON[@]}"
		assert_exit "ipv6 $g: sender" 0 "$RC" "$E2E_TMP/s$tag".{out,err}
		expect_text "ipv6 $g: sender transcript" "$E2E_TMP/s$tag.out" \
			"$(transcript client "$g" 1)"
	fi
	bg_wait "r$tag" 20
	assert_exit "ipv6 $g: receiver" 0 "$RC" "$E2E_TMP/r$tag".{out,err}
	expect_text "ipv6 $g: receiver transcript" "$E2E_TMP/r$tag.out" \
		"$(transcript server "$g" 1)"
	assert_empty "ipv6 $g: receiver stderr" "$E2E_TMP/r$tag.err"
}
ipv6_pair 8 ff0e::1234     # global scope
ipv6_pair 9 ff12::1234     # link-local scope: -b names the interface

# ------------------------------------------------------------- bad input

mckey_run b1 "$NSA" 10 -m 10.1.2.3 -b "$A4" --udp --settle 0.3
if [ "$RC" != 0 ] && [ "$RC" != 124 ] && [ "$RC" != 137 ]; then
	ok "-m 10.1.2.3: refused (exit $RC)"
else
	not_ok "-m 10.1.2.3: refused" "exit $RC"
fi
cat "$E2E_TMP/b1".{out,err} >"$E2E_TMP/b1.all"
assert_match "-m 10.1.2.3: says it is not a multicast address" \
	'10\.1\.2\.3 is not a multicast address' "$E2E_TMP/b1.all"
assert_lines "-m 10.1.2.3: joins nothing" 0 "$E2E_TMP/b1.out" '^mckey: joined'
assert_le "-m 10.1.2.3: at once" "$ELAPSED_MS" "$(tscale 3000)"

mckey_run b2 "$NSA" 10 --udp -b "$A4" -s
assert_exit "no -m" 1 "$RC" "$E2E_TMP/b2".{out,err}
assert_lines "no -m: one line on stderr" 1 "$E2E_TMP/b2.err" ''
assert_match "no -m: it names the problem" '^mckey: .*-m' "$E2E_TMP/b2.err"
assert_empty "no -m: nothing on stdout" "$E2E_TMP/b2.out"

mckey_run b3 "$NSA" 10 -m 239.77.3.1 -b "$A4" --udp -c 0
assert_exit "-c 0" 1 "$RC" "$E2E_TMP/b3".{out,err}
assert_lines "-c 0: one line on stderr" 1 "$E2E_TMP/b3.err" ''
assert_match "-c 0: names the option" "^mckey: .*'0'.*-c" "$E2E_TMP/b3.err"
assert_empty "-c 0: nothing on stdout" "$E2E_TMP/b3.out"

mckey_run b4 "$NSA" 10 -M ff12:a01b::1 -b "$A4" --udp --settle 0.3
if [ "$RC" != 0 ] && [ "$RC" != 124 ] && [ "$RC" != 137 ]; then
	ok "-M with --udp: refused (exit $RC)"
else
	not_ok "-M with --udp: refused" "exit $RC"
fi
cat "$E2E_TMP/b4".{out,err} >"$E2E_TMP/b4.all"
assert_match "-M with --udp: says why" 'needs the RDMA transport' "$E2E_TMP/b4.all"

# a sender's -b that is no address of the host: the line names it
mckey_run b5 "$NSB" 10 -m 239.77.3.5 -b 10.$X.8.8 --udp -s --settle 0.3
assert_exit "sender -b 10.$X.8.8 (not here): exit 255" 255 "$RC" "$E2E_TMP/b5".{out,err}
expect_text "sender -b 10.$X.8.8 (not here): one line naming the address" \
	"$E2E_TMP/b5.err" \
	"mckey: addr bind failure 10.$X.8.8: Cannot assign requested address"

# ------------------------------------------------------------- done

e2e_done
