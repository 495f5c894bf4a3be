#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Host names never block the loop (issue 17): in a network namespace whose
# resolv.conf (ip netns exec bind-mounts /etc/netns/NS/resolv.conf) names
# a slow name server on its own 127.0.0.1 (a python3 responder: A records
# after 2 s, NXDOMAIN after 1 s), evrdma-probed runs a fast numeric probe
# beside rstream probes of a slow name and of a name that does not exist
# and an mckey sender to a group given by a slow name.  /metrics keeps
# answering at once and the fast probe keeps running while the names are
# looked up; the slow name's probe then runs, the missing name's fails
# with reason="resolve".  And rstream itself, given those names: the run
# after the slow answer, the same one error line as ever for the other.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

PROBED=${PROBED:-}
if [ -z "$PROBED" ] || [ ! -x "$PROBED" ]; then
	echo "resolve: PROBED is not set to an executable evrdma-probed" >&2
	exit 99
fi
command -v curl >/dev/null || e2e_skip_all "curl is not installed"
command -v python3 >/dev/null || e2e_skip_all "python3 is not installed"
[ "$(id -u)" = 0 ] || e2e_skip_all "needs root for a network namespace"
T=$E2E_TMP
R=$RSTREAM
NS=evres-$$
ip netns add "$NS" 2>/dev/null || e2e_skip_all "cannot create a network namespace"
mkdir -p "/etc/netns/$NS"
trap 'ip netns del "$NS" 2>/dev/null; rm -rf "/etc/netns/$NS"; e2e_cleanup' EXIT
# one try, no retransmission within the slow answer's 2 s
printf 'nameserver 127.0.0.1\noptions timeout:5 attempts:1\n' >"/etc/netns/$NS/resolv.conf"
NX=(ip netns exec "$NS")
# lib.sh's scrape, in the namespace; a lookup may hold a scrape up 5 s
E2E_SCRAPE_IN=("${NX[@]}") E2E_SCRAPE_MAX=5
X=$(( $$ % 200 + 20 ))
ip -n "$NS" link set lo up
ip -n "$NS" link set lo multicast on
ip -n "$NS" route add 224.0.0.0/4 dev lo

# The name server: UDP on 127.0.0.1:53, each query answered from a thread
# of its own after its delay, so that a slow answer holds up no other.
cat >"$T/dns.py" <<'EOF'
import socket, struct, sys, threading, time
ZONE = {  # name: (delay s, A address or None for NXDOMAIN)
    "slow.evr.test": (2.0, "127.0.0.1"),
    "gone.evr.test": (1.0, None),
    "group.evr.test": (2.0, sys.argv[2]),
}
log = open(sys.argv[1], "a", buffering=1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 53))
print("ready", flush=True)

def name_of(q):
    i, labels = 12, []
    while q[i]:
        labels.append(q[i + 1:i + 1 + q[i]].decode("ascii", "replace"))
        i += 1 + q[i]
    qtype = struct.unpack("!H", q[i + 1:i + 3])[0]
    return ".".join(labels).lower(), qtype, q[12:i + 5]

def answer(q, peer):
    try:
        name, qtype, question = name_of(q)
    except Exception:
        return
    delay, addr = ZONE.get(name, (0, None))
    log.write("%.3f %s %d\n" % (time.time(), name, qtype))
    time.sleep(delay)
    rcode = 3 if addr is None else 0
    an = b""
    if addr is not None and qtype == 1:
        an = struct.pack("!HHHIH", 0xC00C, 1, 1, 0, 4) + socket.inet_aton(addr)
    hdr = q[:2] + struct.pack("!HHHHH", 0x8180 | rcode, 1, 1 if an else 0, 0, 0)
    s.sendto(hdr + question + an, peer)

while True:
    q, peer = s.recvfrom(512)
    threading.Thread(target=answer, args=(q, peer), daemon=True).start()
EOF
bg_start dns 120 "${NX[@]}" python3 "$T/dns.py" "$T/dns.log" "239.$X.9.1"
wait_match "$T/dns.out" '^ready$' 10 || { dump "$T/dns.err"; not_ok "the slow name server starts"; }

HP=9481
E2E_SCRAPE_PORT=$HP        # lib.sh's scrape
SP=9482
cat >"$T/conf.json" <<EOF
{ "listen_address": "127.0.0.1", "listen_port": $HP,
  "responders": [ { "transport": "tcp", "port": $SP, "bind": "127.0.0.1" },
                  { "transport": "tcp", "port": 9483, "bind": "slow.evr.test" },
                  { "transport": "tcp", "port": 9484, "bind": "gone.evr.test" } ],
  "probes": [
    { "name": "fast", "type": "rstream", "host": "127.0.0.1", "port": $SP,
      "transport": "tcp", "iters": 10, "interval_s": 0.2, "timeout_s": 2 },
    { "name": "slow", "type": "rstream", "host": "slow.evr.test", "port": $SP,
      "transport": "tcp", "iters": 10, "interval_s": 1, "timeout_s": 5 },
    { "name": "gone", "type": "rstream", "host": "gone.evr.test", "port": $SP,
      "transport": "tcp", "iters": 10, "interval_s": 1, "timeout_s": 5 },
    { "name": "mgroup", "type": "mckey", "group": "group.evr.test",
      "bind": "127.0.0.1", "transport": "udp", "role": "sender", "count": 3,
      "size": 64, "settle_s": 0, "interval_s": 1, "timeout_s": 5,
      "udp_port": 17411 } ] }
EOF
bg_start md 120 "${NX[@]}" "$PROBED" -c "$T/conf.json"


# Up: the first scrape that answers (the daemon started)
end=$(( $(now_ms) + $(tscale 10) * 1000 ))
until scrape s0 && [ -s "$T/s0.txt" ]; do
	[ "$(now_ms)" -ge "$end" ] && break
	sleep 0.1
done
fast0=$(val "$T/s0.txt" 'evrdma_probe_runs_total{probe="fast"}')
# 4 s of scrapes, every 0.1 s: each slow lookup (2 s, 1 s) starts in it
worst=0
n=0
end=$(( $(now_ms) + 4000 ))
while [ "$(now_ms)" -lt "$end" ] && [ "$n" -lt 60 ]; do
	n=$((n + 1))
	scrape "w$n"
	t=$(scrape_secs "w$n" | awk '{ printf "%d", $1 * 1000 }')
	[ "${t:-99999}" -gt "$worst" ] && worst=${t:-99999}
	sleep 0.1
done
say "$n scrapes while the names were looked up, the slowest ${worst} ms"
assert_le "/metrics answers at once while names are looked up (slowest scrape, ms)" \
	"$worst" "$(tscale 300)"
fast1=$(val "$T/w$n.txt" 'evrdma_probe_runs_total{probe="fast"}')
num=$(awk -v a="${fast1:-0}" -v b="${fast0:-0}" 'BEGIN { print a - b }')
# (a lower bound: under valgrind a run takes longer, and turns are lost)
least=5
[ "$E2E_VG" = 1 ] && least=2
assert_le "the fast probe kept running meanwhile (runs in 4 s, every 0.2 s)" \
	"$least" "$num"
slow_q=$(grep -c ' slow\.evr\.test 1$' "$T/dns.log" 2>/dev/null)
assert_le "the slow name was asked of the name server (A queries)" 1 "${slow_q:-0}"

# The outcome: the slow name's probe ran and is up; the missing name's
# failed for resolve; the sender sent to the group its name gave.
ok=0
end=$(( $(now_ms) + $(tscale 15) * 1000 ))
while [ "$(now_ms)" -lt "$end" ]; do
	scrape fin
	if [ "$(val "$T/fin.txt" 'evrdma_probe_up{probe="slow"}')" = 1 ] &&
		[ -n "$(val "$T/fin.txt" 'evrdma_probe_failures_total{probe="gone",reason="resolve"}')" ] &&
		[ "$(val "$T/fin.txt" 'evrdma_probe_up{probe="mgroup"}')" = 1 ] &&
		[ "$(val "$T/fin.txt" 'evrdma_responder_listening{responder="tcp:slow.evr.test:9483"}')" = 1 ] &&
		grep -q 'responder tcp:gone' "$T/md.err"; then
		ok=1
		break
	fi
	sleep 0.3
done
assert_eq "the slow name's probe runs and is up" 1 \
	"$(val "$T/fin.txt" 'evrdma_probe_up{probe="slow"}')"
assert_eq "... without a failure" 0 \
	"$(grep -E '^evrdma_probe_failures_total\{probe="slow",' "$T/fin.txt" | awk '{ s += $NF } END { print s + 0 }')"
assert_le "the missing name's probe fails with reason resolve" 1 \
	"$(val "$T/fin.txt" 'evrdma_probe_failures_total{probe="gone",reason="resolve"}')"
assert_eq "... and no other reason" \
	"$(val "$T/fin.txt" 'evrdma_probe_failures_total{probe="gone",reason="resolve"}')" \
	"$(grep -E '^evrdma_probe_failures_total\{probe="gone",' "$T/fin.txt" | awk '{ s += $NF } END { print s + 0 }')"
assert_match "... logged with the resolver's words" \
	'probe "gone": failing \(resolve\): .*cannot resolve gone\.evr\.test port '"$SP"': getaddrinfo: Name or service not known' "$T/md.err"
assert_eq "the mckey sender to a group by a slow name is up" 1 \
	"$(val "$T/fin.txt" 'evrdma_probe_up{probe="mgroup"}')"
assert_le "... and sent" 3 "$(val "$T/fin.txt" 'evrdma_mckey_sent_total{probe="mgroup"}')"
assert_eq "a responder whose bind is a slow name listens" 1 \
	"$(val "$T/fin.txt" 'evrdma_responder_listening{responder="tcp:slow.evr.test:9483"}')"
assert_eq "a responder whose bind does not resolve does not" 0 \
	"$(val "$T/fin.txt" 'evrdma_responder_listening{responder="tcp:gone.evr.test:9484"}')"
assert_lines "... said once, with the resolver's words and the retry" 1 "$T/md.err" \
	'warning: responder tcp:gone\.evr\.test:9484: cannot listen: cannot resolve gone\.evr\.test port 9484: getaddrinfo: Name or service not known; trying again every 5 s$'
[ "$ok" = 1 ] || dump "$T/md.err" "$T/dns.log"

# rstream given the names, against the daemon's responder
run_cmd cli_slow 20 "${NX[@]}" "$R" -T s -s slow.evr.test -p "$SP" -S 64 -C 1 -I 10
assert_exit "rstream: a slow name, then the run: exit 0" 0 "$RC" "$T/cli_slow.out" "$T/cli_slow.err"
assert_le "... after the name server's answer (ms)" 1900 "$ELAPSED_MS"
run_cmd cli_gone 20 "${NX[@]}" "$R" -T s -s gone.evr.test -p "$SP"
assert_exit "rstream: a name that does not exist: exit 2" 2 "$RC" "$T/cli_gone.err"
assert_lines "... one line on stderr" 1 "$T/cli_gone.err"
assert_match "... the resolver's reason, as ever" \
	'^rstream: cannot resolve gone\.evr\.test port '"$SP"': getaddrinfo: Name or service not known$' "$T/cli_gone.err"

bg_stop md 5
assert_exit "the daemon: SIGTERM exits 0" 0 "$RC" "$T/md.err"
assert_no_match "no crash or sanitizer report" 'Assertion|Segmentation|AddressSanitizer|runtime error' "$T/md.err"
bg_kill dns

e2e_done
