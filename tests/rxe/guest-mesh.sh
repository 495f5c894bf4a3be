#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# An RDMA mesh over Soft-RoCE, run inside the guest by tests/rxe/check-rxe.sh:
# two evrdma-probed agents, one on each rxe device's address, each with an
# rdma responder and an rdma mesh over one shared peers file (the peers
# named, so that neither is skipped as "this host's own": both addresses
# are this guest's).  Every agent probes every peer; one agent's
# responder taken away makes that peer fail from both agents while the
# other stays up (the pattern that names the bad host); put back, it
# recovers; SIGTERM; no QP left.
set -u
P=${EVR_BIN:-/opt/evr}/evrdma-probed
A1=$RXE_ADDR1
A2=$RXE_ADDR2
T=$(mktemp -d)
. "$(dirname "$0")/lib-guest.sh"

scrape() { # ADDR FILE
	exec 3<>"/dev/tcp/$1/9471" || return 1
	printf 'GET /metrics HTTP/1.0\r\nHost: probed\r\n\r\n' >&3
	cat <&3 >"$2"
	exec 3<&-
}
metric() { # FILE NAME LABELS: the value, or empty
	awk -v k="$2{$3}" '$1 == k { print $2 }' "$1"
}
fails_of() { # FILE PEER: its failures, every reason
	awk -v p="probe=\"mesh:$2\"," 'index($1, "evrdma_probe_failures_total{" p) == 1 { s += $2 } END { print s + 0 }' "$1"
}
summary() { echo "mesh-rxe: $pass passed, $fail failed"; exit $((fail > 0)); }

[ -x "$P" ] || { ko "evrdma-probed in the guest" "not built"; summary; }
# the peers by name: an address of this host would be skipped
cp /etc/hosts "$T/hosts.orig" 2>/dev/null || : >"$T/hosts.orig"
printf '%s rxa\n%s rxb\n' "$A1" "$A2" >>/etc/hosts
printf '# both rails of this guest\na rxa rail=0\nb rxb rail=1\n' >"$T/peers.txt"
conf() { # ADDR WITH-RESPONDER [WITH-MESH, default 1]
	local resp= mesh=
	[ "$2" = 1 ] && resp="{ \"transport\": \"rdma\", \"port\": 7471, \"bind\": \"$1\" }"
	[ "${3:-1}" = 1 ] && mesh=",
  \"mesh\": { \"peers_file\": \"$T/peers.txt\", \"transport\": \"rdma\", \"port\": 7471,
            \"size\": 64, \"count\": 1, \"iters\": 20, \"interval_s\": 1,
            \"timeout_s\": $(tsc 10) }"
	cat >"$T/$1.json" <<JSON
{ "listen_address": "$1", "listen_port": 9471,
  "responders": [ $resp ]$mesh }
JSON
}
# The responders first, the mesh once both listen: an agent started a
# moment before the other would otherwise probe a responder not yet
# there, and count that (rightly) as a failure.
conf "$A1" 1 0
conf "$A2" 1 0
"$P" -c "$T/$A1.json" >"$T/pa.out" 2>&1 &
pa=$!
"$P" -c "$T/$A2.json" >"$T/pb.out" 2>&1 &
pb=$!
listening() { # ADDR: its rdma responder listens
	scrape "$1" "$T/l.$1" 2>/dev/null &&
		[ "$(metric "$T/l.$1" evrdma_responder_listening "responder=\"rdma:$1:7471\"")" = 1 ]
}
for _ in $(seq $((4 * $(tsc 30)))); do
	listening "$A1" && listening "$A2" && break
	sleep 0.25
done
if ! listening "$A1" || ! listening "$A2"; then
	ko "both rdma responders listen" "not within $(tsc 30) s"
	kill -9 "$pa" "$pb" 2>/dev/null
	cp "$T/hosts.orig" /etc/hosts
	summary
fi
conf "$A1" 1
conf "$A2" 1
kill -HUP "$pa" "$pb"

# until every agent has run every peer twice
up_all() {
	local a p r
	for a in "$A1" "$A2"; do
		scrape "$a" "$T/m.$a" 2>/dev/null || return 1
		for p in a b; do
			r=$(metric "$T/m.$a" evrdma_probe_runs_total "probe=\"mesh:$p\",peer=\"$p\",rail=\"$([ $p = a ] && echo 0 || echo 1)\"")
			[ "${r:-0}" -ge 2 ] || return 1
		done
	done
}
t0=$(now)
for _ in $(seq $((2 * $(tsc 60)))); do
	up_all && break
	sleep 0.5
done
if up_all; then
	ok "two agents, two rdma responders, a mesh of two peers: every agent ran every peer ($(since "$t0") s)"
else
	ko "the mesh runs" "not every peer ran twice from every agent in $(tsc 60) s"
	kill -9 "$pa" "$pb" 2>/dev/null
	cp "$T/hosts.orig" /etc/hosts
	summary
fi
bad=
for a in "$A1" "$A2"; do
	for p in a b; do
		f=$(fails_of "$T/m.$a" "$p")
		u=$(awk -v k="evrdma_probe_up{probe=\"mesh:$p\"," 'index($1, k) == 1 { print $2 }' "$T/m.$a")
		[ "$f" = 0 ] && [ "$u" = 1 ] || bad="$bad $a->$p(failures $f, up $u)"
	done
done
[ -z "$bad" ] && ok "all four pairs up, no failure" || ko "pairs up" "$bad"
c=$(awk '$1 ~ /^evrdma_rstream_latency_seconds_count\{probe="mesh:b",peer="b",rail="1"\}/ { print $2 }' "$T/m.$A1")
r=$(metric "$T/m.$A1" evrdma_probe_runs_total 'probe="mesh:b",peer="b",rail="1"')
[ -n "$c" ] && [ "$c" = $((r * 20)) ] &&
	ok "an rdma mesh series: labelled peer and rail, 20 samples a run ($c for $r runs)" ||
	ko "an rdma mesh series" "count '$c', runs '$r'"
s=$(metric "$T/m.$A2" evrdma_responder_connections_total "responder=\"rdma:$A2:7471\"")
[ "${s:-0}" -ge 4 ] && ok "agent b's rdma responder served both agents' probes ($s connections)" ||
	ko "agent b's rdma responder" "connections_total '${s:-}'"

# b's responder away (SIGHUP, the mesh unchanged): b fails from both
# agents, a stays up from both
conf "$A2" 0
fa0=$(fails_of "$T/m.$A1" b)
fb0=$(fails_of "$T/m.$A2" b)
kill -HUP "$pb"
t0=$(now)
seen=0
for _ in $(seq $((2 * $(tsc 30)))); do
	sleep 0.5
	scrape "$A1" "$T/m.$A1" 2>/dev/null && scrape "$A2" "$T/m.$A2" 2>/dev/null || continue
	[ "$(fails_of "$T/m.$A1" b)" -ge $((fa0 + 2)) ] &&
		[ "$(fails_of "$T/m.$A2" b)" -ge $((fb0 + 2)) ] && { seen=1; break; }
done
ua=$(awk 'index($1, "evrdma_probe_up{probe=\"mesh:a\",") == 1 { print $2 }' "$T/m.$A1" "$T/m.$A2" | tr '\n' ' ')
ub=$(awk 'index($1, "evrdma_probe_up{probe=\"mesh:b\",") == 1 { print $2 }' "$T/m.$A1" "$T/m.$A2" | tr '\n' ' ')
if [ "$seen" = 1 ] && [ "$ua" = "1 1 " ] && [ "$ub" = "0 0 " ]; then
	ok "b's responder removed: b down from both agents, a up from both ($(since "$t0") s)"
else
	ko "b's responder removed" "seen $seen, up of a: $ua, up of b: $ub"
fi
why=$(awk '$1 ~ /^evrdma_probe_failures_total\{probe="mesh:b",/ && $2 > 0 { sub(/.*reason="/, "", $1); sub(/".*/, "", $1); print $1 }' "$T/m.$A1" | sort -u | tr '\n' ' ')
case $why in
*refused*|*unreachable*) ok "... the reason: $why" ;;
*) ko "... the reason" "'$why'" ;;
esac

# back: b recovers from both
conf "$A2" 1
kill -HUP "$pb"
t0=$(now)
ub=
for _ in $(seq $((2 * $(tsc 30)))); do
	sleep 0.5
	scrape "$A1" "$T/m.$A1" 2>/dev/null && scrape "$A2" "$T/m.$A2" 2>/dev/null || continue
	ub=$(awk 'index($1, "evrdma_probe_up{probe=\"mesh:b\",") == 1 { print $2 }' "$T/m.$A1" "$T/m.$A2" | tr '\n' ' ')
	[ "$ub" = "1 1 " ] && break
done
[ "$ub" = "1 1 " ] && ok "b's responder back: b up again from both ($(since "$t0") s)" ||
	ko "b's responder back" "up of b: $ub"

kill -TERM "$pa" "$pb"
reap "$pa" 10; ra=$?
reap "$pb" 10; rb=$?
[ "$ra" = 0 ] && [ "$rb" = 0 ] && ok "SIGTERM: both agents exit 0" || ko "SIGTERM" "exits $ra $rb"
grep -h -E 'AddressSanitizer|runtime error|Assertion' "$T/pa.out" "$T/pb.out" | head -3 >"$T/san"
[ -s "$T/san" ] && ko "no sanitizer report" "$(cat "$T/san")"
cp "$T/hosts.orig" /etc/hosts
left=$(rdma resource show qp 2>/dev/null | grep -c 'type RC\|type UD')
[ "$left" = 0 ] && ok "no QP left after the agents" || ko "QPs left" "$left"
summary
