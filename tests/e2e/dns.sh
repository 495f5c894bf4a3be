#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# evrdma-probed's names (issue 29): one lookup per name per cache period,
# shared by every probe of it, and a name server that never answers seen
# as reason="resolve", not as the path's "timeout".  In a network
# namespace whose resolv.conf (ip netns exec bind-mounts
# /etc/netns/NS/resolv.conf) names a python3 name server on its own
# 127.0.0.1 that answers peer.evr.test at once, never answers the dead
# names, and logs every query it reads:
#   1. the defaults (an address kept 60 s): two probes of peer.evr.test,
#      ten runs and more, one A query; a probe of a dead name whose
#      timeout_s comes before the lookup's 5 s fails with "resolve";
#      /metrics answers at once meanwhile;
#   2. SIGHUP to dns_cache_s 1, dns_timeout_s 0.5: peer.evr.test asked
#      again about once a second; the dead names fail at 0.5 s for
#      "resolve" (an rstream probe and an mckey sender to a group by a
#      dead name), counted as the cache's timeouts.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

PROBED=${PROBED:-}
if [ -z "$PROBED" ] || [ ! -x "$PROBED" ]; then
	echo "dns: PROBED is not set to an executable evrdma-probed" >&2
	exit 99
fi
command -v curl >/dev/null || e2e_skip_all "curl is not installed"
command -v python3 >/dev/null || e2e_skip_all "python3 is not installed"
[ "$(id -u)" = 0 ] || e2e_skip_all "needs root for a network namespace"
T=$E2E_TMP
NS=evdns-$$
ip netns add "$NS" 2>/dev/null || e2e_skip_all "cannot create a network namespace"
mkdir -p "/etc/netns/$NS"
trap 'ip netns del "$NS" 2>/dev/null; rm -rf "/etc/netns/$NS"; e2e_cleanup' EXIT
# glibc's defaults spelt out: 5 s a try, two tries (c-ares's own lookup
# of a dead name would take longer than any probe's timeout_s here)
printf 'nameserver 127.0.0.1\nsearch evr.test\noptions timeout:5 attempts:2\n' \
	>"/etc/netns/$NS/resolv.conf"
NX=(ip netns exec "$NS")
# lib.sh's scrape, in the namespace; a lookup may hold a scrape up 5 s
E2E_SCRAPE_IN=("${NX[@]}") E2E_SCRAPE_MAX=5
ip -n "$NS" link set lo up
ip -n "$NS" link set lo multicast on
ip -n "$NS" route add 224.0.0.0/4 dev lo

# The name server: UDP on 127.0.0.1:53; peer.evr.test has an A record
# (127.0.0.1, no AAAA), the dead names are read, logged and never
# answered, anything else is NXDOMAIN.
cat >"$T/dns.py" <<'EOF'
import socket, struct, sys, time
log = open(sys.argv[1], "a", buffering=1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 53))
print("ready", flush=True)
while True:
    q, peer = s.recvfrom(512)
    try:
        i, labels = 12, []
        while q[i]:
            labels.append(q[i + 1:i + 1 + q[i]].decode("ascii", "replace"))
            i += 1 + q[i]
        qtype = struct.unpack("!H", q[i + 1:i + 3])[0]
        name, question = ".".join(labels).lower(), q[12:i + 5]
    except Exception:
        continue
    log.write("%.3f %s %d\n" % (time.time(), name, qtype))
    if name.startswith("dead"):
        continue
    rcode, an = (0, b"") if name == "peer.evr.test" else (3, b"")
    if name == "peer.evr.test" and qtype == 1:
        an = struct.pack("!HHHIH", 0xC00C, 1, 1, 60, 4) + \
             socket.inet_aton("127.0.0.1")
    hdr = q[:2] + struct.pack("!HHHHH", 0x8180 | rcode, 1, 1 if an else 0, 0, 0)
    s.sendto(hdr + question + an, peer)
EOF
bg_start dns 90 "${NX[@]}" python3 "$T/dns.py" "$T/dns.log"
wait_match "$T/dns.out" '^ready$' 10 || { dump "$T/dns.err"; not_ok "the name server starts"; }

HP=9491
E2E_SCRAPE_PORT=$HP        # lib.sh's scrape
SP=9492
conf() { # DNS_KEYS DEAD_TIMEOUT_S: the configuration, into $T/conf.json
	cat >"$T/conf.json" <<EOF
{ "listen_address": "127.0.0.1", "listen_port": $HP, $1
  "responders": [ { "transport": "tcp", "port": $SP, "bind": "127.0.0.1" } ],
  "probes": [
    { "name": "p1", "type": "rstream", "host": "peer.evr.test", "port": $SP,
      "transport": "tcp", "iters": 5, "interval_s": 0.3, "timeout_s": 2 },
    { "name": "p2", "type": "rstream", "host": "peer.evr.test", "port": $SP,
      "transport": "tcp", "iters": 5, "interval_s": 0.3, "timeout_s": 2 },
    { "name": "dead", "type": "rstream", "host": "dead.evr.test", "port": $SP,
      "transport": "tcp", "iters": 5, "interval_s": 2, "timeout_s": $2 },
    { "name": "mdead", "type": "mckey", "group": "deadgroup.evr.test",
      "bind": "127.0.0.1", "transport": "udp", "role": "sender", "count": 2,
      "size": 64, "settle_s": 0, "interval_s": 1, "timeout_s": 1,
      "udp_port": 17421 } ] }
EOF
}
others() { # FILE PROBE: its failures for a reason other than resolve
	grep -E "^evrdma_probe_failures_total\\{probe=\"$2\"," "$1" |
		grep -v 'reason="resolve"' | awk '{ s += $NF } END { print s + 0 }'
}
a_queries() { grep -c " $1 1\$" "$T/dns.log" 2>/dev/null; }

# ---------------------------------------------- 1. the defaults
conf "" 1.5
bg_start md 60 "${NX[@]}" "$PROBED" -c "$T/conf.json" -v
end=$(( $(now_ms) + $(tscale 10) * 1000 ))
until scrape s0 && [ -s "$T/s0.txt" ]; do
	[ "$(now_ms)" -ge "$end" ] && break
	sleep 0.1
done
t0=$(now_ms)
# 3 s of scrapes, every 0.1 s: the dead name's lookup hangs through them
worst=0
n=0
while [ "$(( $(now_ms) - t0 ))" -lt 3000 ] && [ "$n" -lt 40 ]; do
	n=$((n + 1))
	scrape "w$n"
	t=$(scrape_secs "w$n" | awk '{ printf "%d", $1 * 1000 }')
	[ "${t:-99999}" -gt "$worst" ] && worst=${t:-99999}
	sleep 0.1
done
say "$n scrapes while dead.evr.test went unanswered, the slowest ${worst} ms"
assert_le "/metrics answers at once while a lookup hangs (slowest scrape, ms)" \
	"$worst" "$(tscale 300)"
scrape s1
runs=$(( $(val "$T/s1.txt" 'evrdma_probe_runs_total{probe="p1"}') +
	 $(val "$T/s1.txt" 'evrdma_probe_runs_total{probe="p2"}') ))
least=10
[ "$E2E_VG" = 1 ] && least=4
assert_le "two probes of peer.evr.test ran (runs in 3 s, every 0.3 s each)" \
	"$least" "$runs"
assert_eq "... both up" "1 1" "$(val "$T/s1.txt" 'evrdma_probe_up{probe="p1"}') $(val "$T/s1.txt" 'evrdma_probe_up{probe="p2"}')"
assert_eq "... on one A query of the name (dns_cache_s 60)" 1 "$(a_queries peer.evr.test)"
assert_eq "... the cache's queries: peer, dead and deadgroup.evr.test" 3 \
	"$(val "$T/s1.txt" evrdma_probed_dns_queries_total)"
assert_le "... every other lookup a hit" "$((runs - 1))" \
	"$(val "$T/s1.txt" evrdma_probed_dns_cache_hits_total)"
assert_le "the dead name's probe failed with reason resolve" 1 \
	"$(val "$T/s1.txt" 'evrdma_probe_failures_total{probe="dead",reason="resolve"}')"
assert_eq "... and no other reason (not timeout)" 0 "$(others "$T/s1.txt" dead)"
assert_match "... logged as the name server's silence" \
	'probe "dead": failing \(resolve\): cannot resolve dead\.evr\.test port '"$SP"': no answer within timeout_s \(1\.5 s\)$' "$T/md.err"

# ---------------------------------------------- 2. short periods (SIGHUP)
conf '"dns_cache_s": 1, "dns_negative_cache_s": 0.5, "dns_timeout_s": 0.5,' 3
before=$(a_queries peer.evr.test)
kill -HUP "$(bg_child_pid md)"
wait_match "$T/md.err" 'configuration .*: 4 probes \(1 added' 5 >/dev/null
t1=$(now_ms)
sleep 3.5
scrape s2
span=$(( $(now_ms) - t1 ))
after=$(( $(a_queries peer.evr.test) - before ))
say "peer.evr.test: $after A queries in $span ms with dns_cache_s 1"
assert_le "an expired answer is asked again (A queries in 3.5 s)" 2 "$after"
assert_le "... but once per period at most" "$after" $(( span / 1000 + 1 ))
assert_le "a lookup without an answer by dns_timeout_s is a timeout" 1 \
	"$(val "$T/s2.txt" evrdma_probed_dns_timeouts_total)"
assert_le "... and a failure" 1 "$(val "$T/s2.txt" evrdma_probed_dns_failures_total)"
# its second failure is due about 3 s in (its first run's phase, then
# its interval): waited for, up to 10 s more, not assumed within 3.5 s
until_scraped scrape s2 10 'evrdma_probe_failures_total{probe="dead",reason="resolve"}' 2
assert_le "the dead name's probe (timeout_s 3) fails with reason resolve" 2 \
	"$(val "$T/s2.txt" 'evrdma_probe_failures_total{probe="dead",reason="resolve"}')"
assert_eq "... and no other reason" 0 "$(others "$T/s2.txt" dead)"
assert_match "... in the resolver's words" \
	'probe "dead": failing \(resolve\): cannot resolve dead\.evr\.test port '"$SP"': getaddrinfo: Temporary failure in name resolution$' "$T/md.err"
assert_le "an mckey sender to a dead group name fails with reason resolve" 1 \
	"$(val "$T/s2.txt" 'evrdma_probe_failures_total{probe="mdead",reason="resolve"}')"
assert_eq "... and no other reason" 0 "$(others "$T/s2.txt" mdead)"
assert_eq "the probes of peer.evr.test are up" "1 1" "$(val "$T/s2.txt" 'evrdma_probe_up{probe="p1"}') $(val "$T/s2.txt" 'evrdma_probe_up{probe="p2"}')"

bg_stop md 5
assert_exit "the daemon: SIGTERM exits 0 (a lookup may hang still)" 0 "$RC" "$T/md.err"
assert_no_match "no crash or sanitizer report" 'Assertion|Segmentation|AddressSanitizer|runtime error' "$T/md.err"
bg_kill dns

e2e_done
