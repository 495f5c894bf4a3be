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

set -u
export LC_ALL=C

NAME=$(basename "$0" .sh)
MCKEY=${MCKEY:-}
if [ -z "$MCKEY" ] || [ ! -x "$MCKEY" ]; then
	echo "$NAME: MCKEY is not set to an executable mckey" >&2
	exit 99
fi
for t in ip timeout pgrep diff; do
	if ! command -v "$t" >/dev/null 2>&1; then
		echo "$NAME: SKIP: $t is not installed"
		exit 77
	fi
done

NSA=evmk-a-$$      # receiver side of the veth pair
NSB=evmk-b-$$      # sender side
NSL=evmk-l-$$      # both on lo
NETS_MADE=()
TMP=$(mktemp -d "${TMPDIR:-/tmp}/e2e-$NAME.XXXXXX") || exit 99
PASS=0
FAIL=0
FINISHED=0
RC=0
MS=0
declare -A PID=() T0=()

# The sanitizer build (EVR_SANITIZERS=yes, from Makefile.am): reports go to
# $TMP/sanitizer as well, and any report, there or in any output, fails
# the script (as tests/e2e/lib.sh does for the other scripts).
SAN=${EVR_SANITIZERS:-no}
# shellcheck source=reports.sh
. "$(dirname "$0")/reports.sh"
report_setup "$TMP" "$SAN"

# E2E_VALGRIND=1 (make check-valgrind): every mckey runs under valgrind
# memcheck (tests/e2e/vgmode.sh), any report fails the script.
VGM=${E2E_VALGRIND:-0}
if [ "$VGM" = 1 ]; then
	if [ "$SAN" = yes ]; then
		echo "SKIP: E2E_VALGRIND=1 in the ASan+UBSan build: valgrind cannot run ASan binaries"
		FINISHED=1
		exit 77
	fi
	if ! command -v valgrind >/dev/null 2>&1; then
		echo "SKIP: E2E_VALGRIND=1 but valgrind is not installed"
		FINISHED=1
		exit 77
	fi
	# shellcheck source=vgmode.sh
	. "$(dirname "$0")/vgmode.sh"
	vg_mode_setup "$TMP" || exit 99
fi
# Time bounds times E2E_TIME_SCALE, as tests/e2e/lib.sh's tscale: 1, 3 in
# the ASan build, 20 under valgrind.
if [ -z "${E2E_TIME_SCALE:-}" ]; then
	E2E_TIME_SCALE=1
	[ "$SAN" = yes ] && E2E_TIME_SCALE=3
	[ "$VGM" = 1 ] && E2E_TIME_SCALE=20
fi
tscale() { awk -v s="$1" -v k="$E2E_TIME_SCALE" 'BEGIN { v = s * k; i = int(v); if (i < v) i++; print i }'; }

# ------------------------------------------------------------- cleanup

cleanup() {
	local st=$? n p
	trap - EXIT INT TERM
	for n in "${!PID[@]}"; do
		p=${PID[$n]}
		# timeout(1) runs its command in a process group of its own
		kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	for n in "${NETS_MADE[@]}"; do
		ip netns del "$n" 2>/dev/null
	done
	if [ "$FINISHED" = 0 ]; then
		san_check
		echo "FAIL - $NAME: the script stopped early (status $st)"
		FAIL=$((FAIL + 1))
		echo "$PASS passed, $FAIL failed"
		st=1
	fi
	if [ -n "${E2E_KEEP:-}" ]; then
		echo "# kept $TMP"
	else
		rm -rf "$TMP"
	fi
	exit "$st"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ------------------------------------------------------------- reporting

ok() {
	PASS=$((PASS + 1))
	echo "ok - $1"
}

not_ok() { # DESC [DETAIL...]
	local l
	FAIL=$((FAIL + 1))
	echo "FAIL - $1"
	shift
	for l in "$@"; do
		echo "#   $l"
	done
}

show() { # FILE...
	local f
	for f in "$@"; do
		[ -e "$f" ] || continue
		echo "#   --- ${f#"$TMP"/} ($(wc -l <"$f") lines)"
		head -n 30 "$f" | sed 's/^/#   | /'
	done
}

check() { # DESC COMMAND...: ok if COMMAND succeeds
	local d=$1
	shift
	if "$@"; then ok "$d"; else not_ok "$d" "failed: $*"; fi
}

expect_rc() { # DESC WANT NAME
	if [ "$RC" = "$2" ]; then
		ok "$1 (exit $RC)"
	else
		not_ok "$1" "exit $RC, want $2 (after $MS ms)"
		show "$TMP/$3.out" "$TMP/$3.err"
	fi
}

expect_text() { # DESC FILE TEXT: the whole file, line for line
	if printf '%s\n' "$3" | diff -u - "$2" >"$TMP/diff" 2>&1; then
		ok "$1"
	else
		not_ok "$1" "output differs (- want, + got):"
		sed 's/^/#   /' "$TMP/diff" | head -n 40
	fi
}

expect_match() { # DESC FILE ERE: some line matches
	if grep -qE -- "$3" "$2"; then
		ok "$1"
	else
		not_ok "$1" "no line matches /$3/"
		show "$2"
	fi
}

expect_count() { # DESC FILE ERE N: exactly N lines match
	local n
	n=$(grep -cE -- "$3" "$2")
	if [ "$n" = "$4" ]; then
		ok "$1"
	else
		not_ok "$1" "$n lines match /$3/, want $4"
		show "$2"
	fi
}

expect_empty() { # DESC FILE
	if [ ! -s "$2" ]; then ok "$1"; else not_ok "$1" "not empty:"; show "$2"; fi
}

expect_le() { # DESC A B
	if [ "$2" -le "$3" ]; then ok "$1"; else not_ok "$1" "$2 > $3"; fi
}

# Any sanitizer report, or memcheck report with E2E_VALGRIND=1, of any
# mckey this script ran is a failure, named (tests/e2e/reports.sh).
san_check() { report_check "$TMP" "$SAN" "$VGM" "mckey this script ran"; }

# ------------------------------------------------------------- processes

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# start NAME NS SECS ARGS...: mckey ARGS in namespace NS, in the background,
# under timeout; output in $TMP/NAME.out and NAME.err
start() {
	local name=$1 ns=$2 secs=$3
	shift 3
	T0[$name]=$(now_ms)
	timeout -k "$(tscale 2)" "$(tscale "$secs")" ip netns exec "$ns" "$MCKEY" "$@" \
		>"$TMP/$name.out" 2>"$TMP/$name.err" &
	PID[$name]=$!
}

# await NAME: wait for it; RC its exit status, MS its run time
await() {
	local name=$1
	wait "${PID[$name]}" 2>/dev/null
	RC=$?
	MS=$(( $(now_ms) - T0[$name] ))
	unset "PID[$name]"
}

# run NAME NS SECS ARGS...: start + await
run() {
	start "$@"
	await "$1"
}

# wait_for FILE ERE SECS: until a line of FILE matches
wait_for() {
	local i n=$(( $(tscale "$3") * 20 ))
	for ((i = 0; i < n; i++)); do
		grep -qE -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# The receiver has joined (its sockets hold the membership) before the
# sender starts, so nothing is sent to a group nobody listens to yet.
await_joined() { # NAME N
	local n=${2:-1} i c lim
	lim=$(tscale 200)
	for ((i = 0; i < lim; i++)); do
		c=$(grep -c '^mckey: joined' "$TMP/$1.out" 2>/dev/null)
		[ "${c:-0}" -ge "$n" ] && return 0
		kill -0 "${PID[$1]}" 2>/dev/null || break
		sleep 0.05
	done
	not_ok "$1 joined" "not $n 'mckey: joined' lines (exited, or $(tscale 10) s passed)"
	show "$TMP/$1.out" "$TMP/$1.err"
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
	echo "SKIP: $NAME: $* -- mckey --udp NOT TESTED (needs root / CAP_NET_ADMIN and veth)"
	FINISHED=1
	exit 77
}

for ns in "$NSA" "$NSB" "$NSL"; do
	if ! ip netns add "$ns" 2>"$TMP/netns.err"; then
		skip_net "cannot create network namespace $ns: $(head -n1 "$TMP/netns.err")"
	fi
	NETS_MADE+=("$ns")
done
# The veth ends are created directly inside the namespaces.
ip -n "$NSA" link add va type veth peer name vb netns "$NSB" 2>"$TMP/veth.err" ||
	skip_net "cannot create a veth pair: $(head -n1 "$TMP/veth.err")"
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
} 2>"$TMP/setup.err" || setup_ok=0
if [ "$setup_ok" = 0 ]; then
	not_ok "namespace setup" "$(cat "$TMP/setup.err")"
	FINISHED=1
	echo "$PASS passed, $FAIL failed"
	exit 1
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
start r1 "$NSA" 20 -m $G -b "$A4" "${COMMON[@]}" --deadline "$(tscale 10)"
if await_joined r1; then
	run s1 "$NSB" 20 -m $G -b "$B4" -s "${COMMON[@]}"
	expect_rc "ipv4: sender" 0 s1
	expect_text "ipv4: sender transcript" "$TMP/s1.out" \
		"$(transcript client "::ffff:$G" 1)"
	expect_empty "ipv4: sender stderr" "$TMP/s1.err"
fi
await r1
expect_rc "ipv4: receiver" 0 r1
expect_text "ipv4: receiver transcript" "$TMP/r1.out" \
	"$(transcript server "::ffff:$G" 1)"
expect_empty "ipv4: receiver stderr" "$TMP/r1.err"
expect_le "ipv4: receiver done well before its deadline" "$MS" "$(tscale 8000)"

# 2. --stats: per QP and per sender, on a port of our own
G=239.77.1.2
start r2 "$NSA" 20 -m $G -b "$A4" "${COMMON[@]}" --udp-port 17001 \
	-C 25 --stats --deadline "$(tscale 10)"
if await_joined r2; then
	run s2 "$NSB" 20 -m $G -b "$B4" -s "${COMMON[@]}" --udp-port 17001 \
		-C 25 --stats
	expect_rc "stats: sender" 0 s2
	expect_count "stats: sender reports sent/completed" "$TMP/s2.out" \
		'^mckey: qp 0: sent 25, completed 25$' 1
fi
await r2
expect_rc "stats: receiver" 0 r2
expect_count "stats: receiver per-QP line" "$TMP/r2.out" \
	'^mckey: qp 0: received 25 of 25 expected, 0 without an evrdma header, 0 bad headers, 0 from untracked senders$' 1
expect_count "stats: receiver per-sender line" "$TMP/r2.out" \
	'^mckey: qp 0: sender [0-9a-f]{8}: 25 of 25, lost 0, duplicates 0, reordered 0, not received before stop 0, outside window 0$' 1
expect_count "stats: join latency line" "$TMP/r2.out" \
	'^mckey: qp 0 joined in [0-9]+\.[0-9]{3} ms$' 1
expect_count "stats: receiver still ends with return status 0" "$TMP/r2.out" \
	'^return status 0$' 1

# 3. -c 4 on both sides: each receiving QP gets the datagrams of all four
# sending QPs (40), needs 10, and must still finish
G=239.77.1.3
start r3 "$NSA" 8 -m $G -b "$A4" "${COMMON[@]}" -c 4 --deadline "$(tscale 5)"
if await_joined r3 4; then
	run s3 "$NSB" 20 -m $G -b "$B4" -s "${COMMON[@]}" -c 4
	expect_rc "-c 4: sender" 0 s3
	expect_text "-c 4: sender transcript (4 joined)" "$TMP/s3.out" \
		"$(transcript client "::ffff:$G" 4)"
fi
await r3
expect_rc "-c 4: receiver" 0 r3
expect_text "-c 4: receiver transcript (4 joined)" "$TMP/r3.out" \
	"$(transcript server "::ffff:$G" 4)"
expect_empty "-c 4: receiver stderr" "$TMP/r3.err"

# 3b. more messages than the receiver expects (sender -C 15, receiver
# -C 10): the receiver is done after 10 and must exit, not spin
G=239.77.1.7
start r3b "$NSA" 8 -m $G -b "$A4" "${COMMON[@]}" -C 10 --deadline "$(tscale 5)"
if await_joined r3b; then
	run s3b "$NSB" 20 -m $G -b "$B4" -s "${COMMON[@]}" -C 15
	expect_rc "extra messages: sender" 0 s3b
fi
await r3b
expect_rc "extra messages: receiver" 0 r3b
expect_le "extra messages: receiver exited before its deadline" "$MS" "$(tscale 5000)"
expect_text "extra messages: receiver transcript" "$TMP/r3b.out" \
	"$(transcript server "::ffff:$G" 1)"

# 3c. a receiver that stops at its own -C 5, a sender of 10: the five
# it did not wait for are not lost, they were not received before it
# stopped (issue 14)
G=239.77.1.8
start r3c "$NSA" 8 -m $G -b "$A4" "${COMMON[@]}" -C 5 --stats \
	--udp-port 17003 --deadline "$(tscale 5)"
if await_joined r3c; then
	run s3c "$NSB" 20 -m $G -b "$B4" -s "${COMMON[@]}" -C 10 --udp-port 17003
	expect_rc "-C 5 of 10: sender" 0 s3c
fi
await r3c
expect_rc "-C 5 of 10: receiver" 0 r3c
expect_count "-C 5 of 10: 5 received, 0 lost, 5 not received before stop" \
	"$TMP/r3c.out" \
	'^mckey: qp 0: sender [0-9a-f]{8}: 5 of 10, lost 0, duplicates 0, reordered 0, not received before stop 5, outside window 0$' 1

# 4. -C 0: join and leave only
run r4 "$NSA" 20 -m 239.77.1.4 -b "$A4" "${COMMON[@]}" -C 0
expect_rc "-C 0: receiver" 0 r4
expect_text "-C 0: no transfer lines" "$TMP/r4.out" \
	"$(transcript server "::ffff:239.77.1.4" 1 0)"

# 5. and 6.: deadlines that must fire after the sender's messages came
# (1.5 s, 3 s from the receiver's start): a sender under valgrind takes
# longer than that to start, so with E2E_VALGRIND=1 they are skipped.
if [ "$VGM" = 1 ]; then
	echo "SKIP - short sender (--deadline 1.5) and killed sender (--deadline 3): the receiver's deadline must fire after the sender's messages arrived, and a sender under valgrind takes longer than that to start; the normal and ASan builds run them"
else

# 5. the sender sends fewer than the receiver expects: the deadline
G=239.77.1.5
start r5 "$NSA" 20 -m $G -b "$A4" "${COMMON[@]}" -C 20 --deadline 1.5
if await_joined r5; then
	run s5 "$NSB" 20 -m $G -b "$B4" -s "${COMMON[@]}" -C 10
	expect_rc "short sender: sender" 0 s5
fi
await r5
expect_rc "short sender: receiver fails at its deadline" 194 r5
# settle 0.3 + deadline 1.5, and a margin for a loaded machine
expect_le "short sender: receiver took at least the deadline" 1500 "$MS"
expect_le "short sender: receiver exited within the deadline + 3 s" "$MS" $((1800 + $(tscale 3000)))
expect_match "short sender: deadline message" "$TMP/r5.err" \
	'^mckey: deadline: receives not complete on 1 of 1 QPs after 1\.5 s$'
expect_match "short sender: shortfall reported" "$TMP/r5.err" \
	'^mckey: qp 0: received 10 of 20 expected, 0 without an evrdma header, 0 bad headers, 0 from untracked senders$'
expect_match "short sender: the sender's 10 all arrived" "$TMP/r5.err" \
	'^mckey: qp 0: sender [0-9a-f]{8}: 10 of 10, lost 0, duplicates 0, reordered 0, not received before stop 0, outside window 0$'
expect_text "short sender: receiver transcript" "$TMP/r5.out" \
	"$(transcript server "::ffff:$G" 1 1 -62)"

# 6. the sender is killed (SIGKILL on mckey itself) half-way
G=239.77.1.6
start r6 "$NSA" 30 -m $G -b "$A4" "${COMMON[@]}" -C 100 --deadline 3 --stats
if await_joined r6; then
	start s6 "$NSB" 30 -m $G -b "$B4" -s "${COMMON[@]}" -C 100 --rate 20
	if wait_for "$TMP/s6.out" '^initiating data transfers$' 10; then
		sleep 1
		kpid=$(pgrep -P "${PID[s6]}" | head -n1)
		comm=$(cat "/proc/$kpid/comm" 2>/dev/null)
		# under valgrind (E2E_VALGRIND=1) the process is memcheck's
		if [ -n "$kpid" ] && { [ "$comm" = mckey ] ||
		   { [ "$VGM" = 1 ] && [ "${comm#memcheck}" != "$comm" ]; }; }; then
			kill -KILL "$kpid"
			ok "killed sender: SIGKILL to mckey (pid $kpid)"
		else
			not_ok "killed sender: find mckey under timeout" \
				"child '$kpid' is '$comm'"
		fi
	else
		not_ok "killed sender: sender started sending"
		show "$TMP/s6.out" "$TMP/s6.err"
	fi
	await s6
	expect_rc "killed sender: died of SIGKILL (timeout reports 128+9)" 137 s6
	expect_count "killed sender: never completed" "$TMP/s6.out" \
		'^data transfers complete$' 0
fi
await r6
expect_rc "killed sender: receiver fails at its deadline" 194 r6
# What the killed sender never sent is not lost: the receiver did not
# receive it before it stopped (at its deadline).  Nothing is lost on
# the veth pair: got + not received = 100, lost 0.
line=$(grep -E '^mckey: qp 0: sender [0-9a-f]{8}: [0-9]+ of 100, lost [0-9]+, ' \
	"$TMP/r6.out" | head -n1)
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
	show "$TMP/r6.out" "$TMP/r6.err"
fi
expect_match "killed sender: deadline message" "$TMP/r6.err" \
	'^mckey: deadline: receives not complete on 1 of 1 QPs after 3\.0 s$'
fi

# ------------------------------------------------------------- one namespace, lo

G=239.77.2.1
start r7 "$NSL" 20 -m $G -b "$L4" "${COMMON[@]}" --stats --deadline "$(tscale 10)"
if await_joined r7; then
	run s7 "$NSL" 20 -m $G -b "$L4" -s "${COMMON[@]}"
	expect_rc "lo: sender" 0 s7
	expect_text "lo: sender transcript" "$TMP/s7.out" \
		"$(transcript client "::ffff:$G" 1)"
fi
await r7
expect_rc "lo: receiver" 0 r7
expect_count "lo: receiver got all, once" "$TMP/r7.out" \
	'^mckey: qp 0: sender [0-9a-f]{8}: 10 of 10, lost 0, duplicates 0, reordered 0, not received before stop 0, outside window 0$' 1

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
	p=$(pgrep -P "${PID[$1]}" | head -n1)
	[ -n "$p" ] && awk '/^VmHWM:/ { print $2 }' "/proc/$p/status" 2>/dev/null
}
G=239.77.2.14
FARGS=(-m "$G" -b "$L4" "${COMMON[@]}" --udp-port 17014 -C 100000000 \
	--deadline "$(tscale 4)")
start fidle "$NSL" 40 -m 239.77.2.15 -b "$L4" "${COMMON[@]}" --udp-port 17015 \
	-C 100000000 --deadline "$(tscale 4)"
start fstats "$NSL" 40 "${FARGS[@]}" --stats
start fjson "$NSL" 40 "${FARGS[@]}" --json
if await_joined fidle && await_joined fstats &&
   wait_for "$TMP/fjson.out" '"type":"join"' 10; then
	if ip netns exec "$NSL" python3 -c "$FORGE" "$G" 17014 "$L4" \
		2>"$TMP/forge.err"; then
		ok "forged headers: 40,010 sent"
	else
		not_ok "forged headers: the forger" "$(head -n3 "$TMP/forge.err")"
	fi
	sleep 0.3
	idle=$(hwm_kib fidle)
	peak=$(hwm_kib fstats)
	peakj=$(hwm_kib fjson)
	if [ -n "$idle" ] && [ -n "$peak" ] && [ -n "$peakj" ]; then
		echo "# peak RSS: idle receiver $idle KiB, attacked $peak KiB (--stats), $peakj KiB (--json)"
		expect_le "forged headers: peak RSS within 4 MiB of an idle receiver's ($peak vs $idle KiB)" \
			"$peak" $((idle + 4096))
		expect_le "forged headers: the --json receiver too ($peakj vs $idle KiB)" \
			"$peakj" $((idle + 4096))
	else
		not_ok "forged headers: VmHWM of the receivers" \
			"idle '$idle', attacked '$peak', '$peakj'"
	fi
fi
await fidle
await fstats
expect_rc "forged headers: receiver ends at its deadline" 194 fstats
# what it could not track (44 sender ids beyond 256; sequence numbers far
# behind the highest) and could not read (the 10 out of range) is said
line=$(grep -E '^mckey: qp 0: received [0-9]+ of 100000000 expected, ' "$TMP/fstats.out")
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
	show "$TMP/fstats.out"
fi
expect_count "forged headers: 256 senders tracked, no more" "$TMP/fstats.out" \
	'^mckey: qp 0: sender 5e[0-9a-f]{6}: ' 256
expect_match "forged headers: arrivals outside the window reported" \
	"$TMP/fstats.out" ', outside window [1-9][0-9]*$'
await fjson
expect_rc "forged headers: --json receiver ends at its deadline" 194 fjson
expect_match "forged headers: JSON recv_stats has bad, untracked and the limits" \
	"$TMP/fjson.out" \
	'"type":"recv_stats".*"bad":([1-9]|10),"untracked":[1-9][0-9]*,"senders":256,"window":4096,"max_senders":256'
expect_match "forged headers: JSON sender_stats has not_received and outside_window" \
	"$TMP/fjson.out" \
	'"type":"sender_stats".*"not_received":[0-9]+,"outside_window":[1-9]'

# ------------------------------------------------------------- IPv6

ipv6_pair() { # TAG GROUP
	local tag=$1 g=$2
	start "r$tag" "$NSA" 20 -m "$g" -b "$A6" "${COMMON[@]}" --deadline "$(tscale 5)"
	if await_joined "r$tag"; then
		run "s$tag" "$NSB" 20 -m "$g" -b "$B6" -s "${COMMON[@]}"
		expect_rc "ipv6 $g: sender" 0 "s$tag"
		expect_text "ipv6 $g: sender transcript" "$TMP/s$tag.out" \
			"$(transcript client "$g" 1)"
	fi
	await "r$tag"
	expect_rc "ipv6 $g: receiver" 0 "r$tag"
	expect_text "ipv6 $g: receiver transcript" "$TMP/r$tag.out" \
		"$(transcript server "$g" 1)"
	expect_empty "ipv6 $g: receiver stderr" "$TMP/r$tag.err"
}
ipv6_pair 8 ff0e::1234     # global scope
ipv6_pair 9 ff12::1234     # link-local scope: -b names the interface

# ------------------------------------------------------------- bad input

run b1 "$NSA" 10 -m 10.1.2.3 -b "$A4" --udp --settle 0.3
if [ "$RC" != 0 ] && [ "$RC" != 124 ] && [ "$RC" != 137 ]; then
	ok "-m 10.1.2.3: refused (exit $RC)"
else
	not_ok "-m 10.1.2.3: refused" "exit $RC"
fi
cat "$TMP/b1.out" "$TMP/b1.err" >"$TMP/b1.all"
expect_match "-m 10.1.2.3: says it is not a multicast address" "$TMP/b1.all" \
	'10\.1\.2\.3 is not a multicast address'
expect_count "-m 10.1.2.3: joins nothing" "$TMP/b1.out" '^mckey: joined' 0
expect_le "-m 10.1.2.3: at once" "$MS" "$(tscale 3000)"

run b2 "$NSA" 10 --udp -b "$A4" -s
expect_rc "no -m" 1 b2
expect_count "no -m: one line on stderr" "$TMP/b2.err" '' 1
expect_match "no -m: it names the problem" "$TMP/b2.err" '^mckey: .*-m'
expect_empty "no -m: nothing on stdout" "$TMP/b2.out"

run b3 "$NSA" 10 -m 239.77.3.1 -b "$A4" --udp -c 0
expect_rc "-c 0" 1 b3
expect_count "-c 0: one line on stderr" "$TMP/b3.err" '' 1
expect_match "-c 0: names the option" "$TMP/b3.err" "^mckey: .*'0'.*-c"
expect_empty "-c 0: nothing on stdout" "$TMP/b3.out"

run b4 "$NSA" 10 -M ff12:a01b::1 -b "$A4" --udp --settle 0.3
if [ "$RC" != 0 ] && [ "$RC" != 124 ] && [ "$RC" != 137 ]; then
	ok "-M with --udp: refused (exit $RC)"
else
	not_ok "-M with --udp: refused" "exit $RC"
fi
cat "$TMP/b4.out" "$TMP/b4.err" >"$TMP/b4.all"
expect_match "-M with --udp: says why" "$TMP/b4.all" 'needs the RDMA transport'

# a sender's -b that is no address of the host: the line names it
run b5 "$NSB" 10 -m 239.77.3.5 -b 10.$X.8.8 --udp -s --settle 0.3
expect_rc "sender -b 10.$X.8.8 (not here): exit 255" 255 b5
expect_text "sender -b 10.$X.8.8 (not here): one line naming the address" \
	"$TMP/b5.err" \
	"mckey: addr bind failure 10.$X.8.8: Cannot assign requested address"

# ------------------------------------------------------------- done

san_check
FINISHED=1
echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ] || exit 1
exit 0
