#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# A name's addresses, all of them (issue 42 item 4).  In a network
# namespace whose /etc/hosts (ip netns exec bind-mounts
# /etc/netns/NS/hosts) gives names both ::1 and 127.0.0.1, as Debian's
# gives localhost:
#  - a client of a name whose first address (::1) has no listener and
#    whose second (127.0.0.1) has connects, with -c 3 too (each
#    connection that failed on ::1 tries 127.0.0.1); a first address
#    that never answers (a veth to a silent namespace) is left after
#    the stall timeout; a numeric -b of the other family passes ::1 over;
#  - a name whose two addresses both fail (refused; refused, then
#    unreachable): one line, the last error and how many were tried,
#    exit 3;
#  - -b NAME with both families binds the server's family: an IPv4
#    server, an IPv6 one (with names whose first address is IPv6, and
#    IPv4); a -b name with no address of the server's
#    family: one line saying so, exit 5 (a bad bind, as ever);
#  - mckey -b NAME with both families binds the group's family (an
#    IPv4 group, UDP).
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

MCKEY=${MCKEY:-}
if [ -z "$MCKEY" ] || [ ! -x "$MCKEY" ]; then
	echo "$E2E_NAME: MCKEY is not set to an executable mckey" >&2
	exit 99
fi
[ "$(id -u)" = 0 ] || e2e_skip_all "needs root for a network namespace"
command -v ip >/dev/null || e2e_skip_all "ip is not installed"
T=$E2E_TMP
R=$RSTREAM
NS=evnames-$$
NS2=evnames2-$$
ip netns add "$NS" 2>/dev/null || e2e_skip_all "cannot create a network namespace"
mkdir -p "/etc/netns/$NS"
trap 'ip netns del "$NS" 2>/dev/null; ip netns del "$NS2" 2>/dev/null; rm -rf "/etc/netns/$NS"; e2e_cleanup' EXIT
NX=(ip netns exec "$NS")
ip -n "$NS" link set lo up
ip -n "$NS" link set lo multicast on
ip -n "$NS" route add 224.0.0.0/4 dev lo
# no name server: every name here is the file's
printf 'nameserver 127.0.0.9\noptions timeout:1 attempts:1\n' >"/etc/netns/$NS/resolv.conf"
cat >"/etc/netns/$NS/hosts" <<'EOF'
::1 two.evr.test
127.0.0.1 two.evr.test
::1 src.evr.test
127.0.0.1 src.evr.test
::1 v6only.evr.test
fd00:77:42::1 ula.evr.test
10.77.42.1 ula.evr.test
::1 unr.evr.test
10.78.42.1 unr.evr.test
2001:db8:79::1 silent.evr.test
127.0.0.1 silent.evr.test
EOF
# ula.evr.test: RFC 6724 (c-ares sorts by it) puts its IPv4 address
# first, where the loopback names have ::1 first
ip -n "$NS" addr add 10.77.42.1/24 dev lo
ip -n "$NS" addr add fd00:77:42::1/64 dev lo nodad
# unr.evr.test: ::1, then an address whose network is unreachable
ip -n "$NS" route add unreachable 10.78.42.0/24
# silent.evr.test: first (RFC 6724: a global IPv6 address before IPv4) an
# address on a veth whose other end, in a second namespace, never
# answers (its neighbour solicitations go unanswered): a connect that
# times out (the stall timeout, 1 s); then 127.0.0.1
SILENT=0
if ip netns add "$NS2" 2>/dev/null &&
	ip link add "evnm0-$$" netns "$NS" type veth peer name "evnm1-$$" netns "$NS2" 2>/dev/null &&
	ip -n "$NS" addr add 2001:db8:79::2/64 dev "evnm0-$$" nodad &&
	ip -n "$NS" link set "evnm0-$$" up && ip -n "$NS2" link set "evnm1-$$" up; then
	SILENT=1
fi
# ::1 must be up in the namespace (the IPv6 server below)
for _ in 1 2 3 4 5 6 7 8 9 10; do
	ip -n "$NS" -6 addr show dev lo | grep -q '::1' && break
	sleep 0.1
done

# Listening in the namespace: ss there.
listening_ns() { [ -n "$("${NX[@]}" ss -Hltn "sport = :$1" 2>/dev/null)" ]; }
server_ns() { # NAME PORT ADDR
	local i
	bg_start "$1" 60 "${NX[@]}" "$R" -T s -b "$3" -p "$2" -C 10
	for ((i = 0; i < $(tscale 100); i++)); do
		listening_ns "$2" && return 0
		bg_alive "$1" || break
		sleep 0.05
	done
	not_ok "server $1 listens on [$3]:$2"
	dump "$T/$1.out" "$T/$1.err"
	return 1
}

P4=$(e2e_port) || exit 99
P6=$(e2e_port) || exit 99
PD=$(e2e_port) || exit 99
server_ns s4 "$P4" 127.0.0.1
server_ns s6 "$P6" ::1
P6U=$(e2e_port) || exit 99
server_ns s6u "$P6U" fd00:77:42::1

# 1. ::1 refuses, 127.0.0.1 listens: the second address is tried.
run_cmd c1 30 "${NX[@]}" "$R" -T s -s two.evr.test -p "$P4" -C 10
assert_exit "a name whose first address (::1) refuses connects to its second (127.0.0.1)" \
	0 "$RC" "$T/c1.out" "$T/c1.err"
assert_match "its row" "^custom +1000 +10 " "$T/c1.out"
run_cmd c1m 30 "${NX[@]}" "$R" -T s -s two.evr.test -p "$P4" -C 10 -c 3
assert_exit "-c 3: every connection refused on ::1 connects to 127.0.0.1" \
	0 "$RC" "$T/c1m.out" "$T/c1m.err"

if [ "$SILENT" = 1 ]; then
	run_cmd c1s 30 "${NX[@]}" "$R" -T s -s silent.evr.test -p "$P4" -C 10 --stall-timeout 1
	assert_exit "a name whose first address never answers connects to its second after the connect's timeout" \
		0 "$RC" "$T/c1s.out" "$T/c1s.err"
	assert_le "... in about the stall timeout (ms)" "$ELAPSED_MS" "$(tscale 5)000"
else
	skip "a silent first address" "no veth pair"
fi

# 2. Both refuse: the last one's error, how many were tried, exit 3.
run_cmd c2 30 "${NX[@]}" "$R" -T s -s two.evr.test -p "$PD" -C 10
assert_exit "a name whose two addresses both refuse fails to connect" \
	3 "$RC" "$T/c2.out" "$T/c2.err"
assert_lines "one line on stderr" 1 "$T/c2.err"
assert_match "it names the last address, its error and the addresses tried" \
	"^rstream: 127\.0\.0\.1:$PD: connect: Connection refused \(the last of 2 addresses tried\)$" \
	"$T/c2.err"

run_cmd c2u 30 "${NX[@]}" "$R" -T s -s unr.evr.test -p "$PD" -C 10
assert_exit "::1 refused, then an unreachable address: fails to connect" \
	3 "$RC" "$T/c2u.out" "$T/c2u.err"
assert_match "the line names the unreachable one, the last of 2" \
	"^rstream: 10\.78\.42\.1:$PD: connect: (No route to host|Network is unreachable) \(the last of 2 addresses tried\)$" \
	"$T/c2u.err"

# 3. -b NAME with both families: the server's family.
run_cmd c3 30 "${NX[@]}" "$R" -T s -s 127.0.0.1 -b src.evr.test -p "$P4" -C 10
assert_exit "-b NAME (::1 and 127.0.0.1) to an IPv4 server binds 127.0.0.1" \
	0 "$RC" "$T/c3.out" "$T/c3.err"
run_cmd c3b 30 "${NX[@]}" "$R" -T s -s ::1 -b src.evr.test -p "$P6" -C 10
assert_exit "-b NAME (::1 and 127.0.0.1) to an IPv6 server binds ::1" \
	0 "$RC" "$T/c3b.out" "$T/c3b.err"
run_cmd c3u 30 "${NX[@]}" "$R" -T s -s fd00:77:42::1 -b ula.evr.test -p "$P6U" -C 10
assert_exit "-b NAME (10.77.42.1 first, fd00:77:42::1) to an IPv6 server binds fd00:77:42::1" \
	0 "$RC" "$T/c3u.out" "$T/c3u.err"
run_cmd c3c 30 "${NX[@]}" "$R" -T s -s two.evr.test -b src.evr.test -p "$P4" -C 10
assert_exit "a name of two addresses and -b NAME of two: each with its own family's" \
	0 "$RC" "$T/c3c.out" "$T/c3c.err"
run_cmd c3n 30 "${NX[@]}" "$R" -T s -s two.evr.test -b 127.0.0.1 -p "$P4" -C 10
assert_exit "a name of two addresses and a numeric IPv4 -b: ::1 is passed over" \
	0 "$RC" "$T/c3n.out" "$T/c3n.err"
run_cmd c3d 30 "${NX[@]}" "$R" -T s -s 127.0.0.1 -b v6only.evr.test -p "$P4" -C 10
assert_exit "-b NAME without an IPv4 address, to an IPv4 server: a bad bind" \
	5 "$RC" "$T/c3d.out" "$T/c3d.err"
assert_lines "one line on stderr" 1 "$T/c3d.err"
assert_match "it says the name has no IPv4 address" \
	"^rstream: bind v6only\.evr\.test \(no IPv4 address\) for 127\.0\.0\.1:$P4: " \
	"$T/c3d.err"

# 4. mckey -b NAME: the group's family (IPv4, UDP, on the namespace's lo).
G=239.77.42.4
bg_start mr 30 "${NX[@]}" "$MCKEY" --udp --settle 0.3 -m $G -b src.evr.test \
	--udp-port 17442 --deadline "$(tscale 10)"
wait_match "$T/mr.out" '^mckey: joined' 10
run_cmd ms 30 "${NX[@]}" "$MCKEY" --udp --settle 0.3 -m $G -b src.evr.test -s \
	--udp-port 17442
assert_exit "mckey -b NAME (::1 and 127.0.0.1), IPv4 group: the sender binds 127.0.0.1" \
	0 "$RC" "$T/ms.out" "$T/ms.err"
bg_wait mr 20
assert_exit "mckey -b NAME, IPv4 group: the receiver joins and receives" \
	0 "$RC" "$T/mr.out" "$T/mr.err"

run_cmd mv6 30 "${NX[@]}" "$MCKEY" --udp --settle 0.3 -m $G -b v6only.evr.test -s \
	--udp-port 17443
assert_exit_not "mckey -b NAME without an IPv4 address, IPv4 group: fails" \
	0 "$RC" "$T/mv6.out" "$T/mv6.err"
assert_match "the line names the name's family and the group's" \
	"addr bind failure.*v6only\.evr\.test \(IPv6\) for group $G \(IPv4\)" \
	"$T/mv6.err"

bg_stop s4
bg_stop s6
bg_stop s6u
e2e_done
