#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# evrdma-probed's /metrics under hostile clients, on 127.0.0.1 (issue 29):
# a client holding 300 idle connections and 100 half-sent requests, each
# reopened as soon as it closes, from the scraper's own address, must not
# keep a scrape out (before: about 300 idle connections kept Prometheus's
# up at 0 for 100 s); the per-address limit evicts the longest idle of
# that address; a request not completed within request_timeout_s is
# closed; the counters say so (evrdma_http_connections_dropped_total).
# And, as root, in a network namespace of its own: a listen address (and
# a responder's) not on the host yet is waited for, not fatal.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

PROBED=${PROBED:-}
if [ -z "$PROBED" ] || [ ! -x "$PROBED" ]; then
	echo "httpguard: PROBED is not set to an executable evrdma-probed" >&2
	exit 99
fi
command -v curl >/dev/null || e2e_skip_all "curl is not installed"
T=$E2E_TMP
H=127.0.0.1

# The hostile client: N connections to HOST PORT, each reopened as soon as
# the server closes it, for SECS seconds; "idle" ones send nothing,
# "partial" ones the first line of a request and never its end;
# "partial-once" ones are not reopened (it ends when all are closed).  Prints
# what it opened and how many the server closed.
cat >"$T/hostile.py" <<'EOF'
import selectors, socket, sys, time
host, port, n, secs, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
sel = selectors.DefaultSelector()
st = {'opened': 0, 'closed': 0, 'failed': 0}
def open1():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setblocking(False)
    try:
        s.connect((host, port))
    except BlockingIOError:
        pass
    except OSError:
        s.close(); st['failed'] += 1; return
    sel.register(s, selectors.EVENT_WRITE, 0)
    st['opened'] += 1
for _ in range(n):
    open1()
end = time.monotonic() + secs
while time.monotonic() < end:
    if mode.endswith('once') and st['closed'] + st['failed'] == st['opened']:
        break
    for key, ev in sel.select(0.1):
        s = key.fileobj
        if key.data == 0:
            if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                sel.unregister(s); s.close(); st['failed'] += 1; open1(); continue
            if mode.startswith('partial'):
                try:
                    s.send(b'GET /metrics HTTP/1.1\r\nHost: x\r\n')
                except OSError:
                    pass
            sel.modify(s, selectors.EVENT_READ, 1)
            continue
        try:
            d = s.recv(4096)
        except OSError:
            d = b''
        if not d:
            sel.unregister(s); s.close(); st['closed'] += 1
            if not mode.endswith('once'):
                open1()
print('opened %d closed %d failed %d' % (st['opened'], st['closed'], st['failed']), flush=True)
EOF


# ------------------------------------------- a flood from our own address

# The shipped limits (64 connections, 16 an address, 5 s for a request).
port P
printf '{ "listen_port": %s }\n' "$P" >"$T/a.json"
bg_start pa 60 "$PROBED" -c "$T/a.json"
if ! wait_listen "$P" 10 pa; then
	not_ok "the daemon listens"
	dump "$T/pa.err"
	e2e_done
fi
scrape a0 "$P"
assert_eq "a scrape before the flood" 200 "$(scrape_code a0)"

# Under valgrind (20-50 times slower) a smaller flood, that still
# overruns an address's share of 16: the same paths, checked by memcheck.
# A scrape every 0.4 s for 5 s is 12 (each took 0.3-5 ms here); at least
# 4 leaves room for a loaded host's curl and python, and a daemon the
# flood wedged answers none.
FLOOD=6 NIDLE=300 NPART=100 MINSCRAPES=4
[ "$E2E_VG" = 1 ] && FLOOD=10 NIDLE=30 NPART=20 MINSCRAPES=3
bg_start idle $((FLOOD + 10)) python3 "$T/hostile.py" "$H" "$P" "$NIDLE" "$FLOOD" idle
bg_start part $((FLOOD + 10)) python3 "$T/hostile.py" "$H" "$P" "$NPART" "$FLOOD" partial
sleep 0.5
# a scrape every 0.4 s while it lasts, each within 2 s
: >"$T/flood.meta"
end=$(( $(date +%s%N) / 1000000 + (FLOOD - 1) * 1000 ))
n=0
while [ "$(( $(date +%s%N) / 1000000 ))" -lt "$end" ] && [ "$n" -lt 40 ]; do
	scrape f "$P"
	echo "$(scrape_code f) $(scrape_secs f)" >>"$T/flood.meta"
	n=$((n + 1))
	sleep 0.4
done
bg_wait idle "$((FLOOD + 5))"
bg_wait part "$((FLOOD + 5))"
say "hostile idle: $(cat "$T/idle.out"); partial: $(cat "$T/part.out")"
say "scrapes during the flood (code, seconds): $(tr '\n' ' ' <"$T/flood.meta")"
num_ge "scrapes during the flood" "$n" "$MINSCRAPES"
bad=$(awk -v lim="$(tscale 2)" '$1 != 200 || $2 + 0 >= lim' "$T/flood.meta" | wc -l)
assert_eq "every scrape during the flood answered 200 within 2 s" 0 "$bad"
closed=$(awk '{ print $4 }' "$T/part.out")
num_ge "the daemon closed the half-sent requests, over and over" "${closed:-0}" "$NPART"
scrape a1 "$P"
assert_eq "a scrape after the flood" 200 "$(scrape_code a1)"
ev=$(val "$T/a1.txt" 'evrdma_http_connections_dropped_total{reason="evicted"}')
num_ge "dropped_total{reason=evicted} counts them" "$ev" "$NPART"
num_ge "connections_total counts every one" \
	"$(val "$T/a1.txt" evrdma_http_connections_total)" "$ev"
assert_eq "none turned away, per_ip and limit (there was always one to evict)" "0 0" \
	"$(val "$T/a1.txt" 'evrdma_http_connections_dropped_total{reason="per_ip"}') $(val "$T/a1.txt" 'evrdma_http_connections_dropped_total{reason="limit"}')"
num_ge "requests_total counts the scrapes" \
	"$(val "$T/a1.txt" evrdma_http_requests_total)" $((n + 2))
if command -v promtool >/dev/null; then
	if out=$(promtool check metrics <"$T/a1.txt" 2>&1) && [ -z "$out" ]; then
		ok "promtool check metrics passes"
	else
		not_ok "promtool check metrics passes" "$out"
	fi
else
	not_ok "promtool is installed (scripts/deps.sh: prometheus)"
fi
bg_stop pa 5
assert_exit "SIGTERM after the flood exits 0" 0 "$RC" "$T/pa.err"
assert_no_match "no crash or sanitizer report" 'Assertion|Segmentation|AddressSanitizer|runtime error' "$T/pa.err"

# ------------------------------ small limits: per address, and the timeout

# The four half-sent requests are seen held and the scrape evicts one
# before the first times out: all within request_timeout_s of their
# accept.  That took 534 ms natively beside an ASan make check: 1 s
# left too little for a loaded CI host (the likely cause of an ASan-pass
# failure whose lines the CI log lost).  2 s natively, 4 s under a
# sanitizer or memcheck, and the time it took is said.
RT=2
[ "$E2E_SAN" = yes ] || [ "$E2E_VG" = 1 ] && RT=4
port P
cat >"$T/b.json" <<EOF
{ "listen_port": $P,
  "http": { "max_connections": 8, "max_connections_per_ip": 4,
            "request_timeout_s": $RT } }
EOF
bg_start pb 60 "$PROBED" -c "$T/b.json"
if wait_listen "$P" 10 pb; then
	# four half-sent requests fill 127.0.0.1's share, not reopened;
	# watched from 127.0.0.2, another address with a share of its own
	t_once=$(now_ms)
	bg_start once 20 python3 "$T/hostile.py" "$H" "$P" 4 "$(( RT + $(tscale 4) ))" partial-once
	end=$(( $(date +%s%N) / 1000000 + $(tscale 3) * 1000 ))
	while :; do
		curl -s --max-time 2 --interface 127.0.0.2 -o "$T/b0.txt" \
			"http://$H:$P/metrics" 2>/dev/null
		[ "$(val "$T/b0.txt" evrdma_http_connections_open)" = 5 ] && break
		[ "$(( $(date +%s%N) / 1000000 ))" -ge "$end" ] && break
		sleep 0.05
	done
	assert_eq "four half-sent requests held (and the scrape from 127.0.0.2)" 5 \
		"$(val "$T/b0.txt" evrdma_http_connections_open)"
	scrape b1 "$P"
	say "from the half-sent requests' start to the scrape's answer: $(( $(now_ms) - t_once )) ms (request_timeout_s $RT)"
	assert_eq "a scrape from the address whose share they take" \
		200 "$(scrape_code b1)"
	bg_wait once "$(( RT + $(tscale 4) + 5 ))"
	assert_eq "the server closed all four: one evicted, three at their timeout" \
		"opened 4 closed 4 failed 0" "$(cat "$T/once.out")"
	scrape b2 "$P"
	assert_eq "dropped_total{reason=evicted}: the longest waiting, for the scrape" 1 \
		"$(val "$T/b2.txt" 'evrdma_http_connections_dropped_total{reason="evicted"}')"
	assert_eq "dropped_total{reason=timeout}: no complete request in $RT s" 3 \
		"$(val "$T/b2.txt" 'evrdma_http_connections_dropped_total{reason="timeout"}')"
	assert_eq "connections_open: the scrape's own" 1 \
		"$(val "$T/b2.txt" evrdma_http_connections_open)"
	# a client that keeps its connection after an answer (Prometheus
	# does, between scrapes): served again on it, closed after RT s
	# idle, not counted
	python3 - "$H" "$P" "$RT" >"$T/ka.out" 2>&1 <<'EOF'
import http.client, sys, time
c = http.client.HTTPConnection(sys.argv[1], int(sys.argv[2]), timeout=5 + int(sys.argv[3]))
out = []
for _ in range(2):
    c.request('GET', '/metrics')
    r = c.getresponse()
    r.read()
    out.append(str(r.status))
s = c.sock
time.sleep(int(sys.argv[3]) + 1)
out.append('closed' if s is not None and s.recv(1) == b'' else 'not kept or open')
print(' '.join(out))
EOF
	assert_eq "two scrapes on one kept-alive connection, closed once idle $RT s" \
		"200 200 closed" "$(cat "$T/ka.out")"
	scrape b3 "$P"
	assert_eq "... and not counted as a drop" 3 \
		"$(val "$T/b3.txt" 'evrdma_http_connections_dropped_total{reason="timeout"}')"
	# read at start only, as the listen address: a reload says so
	sed -i 's/"max_connections": 8/"max_connections": 9/' "$T/b.json"
	kill -HUP "$(bg_child_pid pb)"
	sleep 0.5
	assert_lines "a reload that changes \"http\" says it waits for a restart" 1 \
		"$T/pb.err" '^evrdma-probed: warning: reload: new "http" limits take effect at the next start only$'
	bg_stop pb 5
	assert_exit "SIGTERM exits 0" 0 "$RC" "$T/pb.err"
else
	not_ok "the daemon with an \"http\" object listens"
	dump "$T/pb.err"
fi

# ----------------------------------- no file descriptor left for a scrape

# max_connections (64) beyond what the process may open (20): the
# descriptors run out first; an idle connection's is taken for the new
# one, so that a scrape still gets in, and fds counts the shortage.
# (valgrind keeps 12 of the process's descriptors for itself)
NOFILE=20
[ "$E2E_VG" = 1 ] && NOFILE=32
port P
printf '{ "listen_port": %s }\n' "$P" >"$T/d.json"
bg_start pd 60 bash -c 'ulimit -n "$2" && exec "$0" -c "$1"' "$PROBED" "$T/d.json" "$NOFILE"
if wait_listen "$P" 10 pd; then
	bg_start fds 20 python3 "$T/hostile.py" "$H" "$P" 30 3 partial-once
	# the scraper waits until the descriptors have run out
	end=$(( $(date +%s%N) / 1000000 + 2000 ))
	while [ "$(awk '/closed/ { print $4 }' "$T/fds.out" 2>/dev/null)" = "" ] &&
		[ "$(ss -Htn state established "( sport = :$P )" | wc -l)" -lt 30 ] &&
		[ "$(( $(date +%s%N) / 1000000 ))" -lt "$end" ]; do
		sleep 0.05
	done
	# Under valgrind a connection accepted at EMFILE is not left queued
	# as the kernel leaves it: memcheck's accept() wrapper has taken it
	# (its descriptor is past the limit it gives the program), closes it
	# and returns EMFILE, so the scrape that meets the shortage is reset
	# (curl: 000) while its eviction frees a descriptor for the next
	# one.  So there, a second and third try, as Prometheus's next
	# scrape; natively (and under ASan) the first must get in.
	tries=1
	[ "$E2E_VG" = 1 ] && tries=3
	for i in $(seq "$tries"); do
		scrape d1 "$P"
		[ "$(scrape_code d1)" != 000 ] && break
		sleep 0.5
	done
	assert_eq "a scrape with no descriptor left, the half-sent requests holding them (try $i of at most $tries)" \
		200 "$(scrape_code d1)"
	num_ge "dropped_total{reason=fds}: the shortage counted" \
		"$(val "$T/d1.txt" 'evrdma_http_connections_dropped_total{reason="fds"}')" 1
	num_ge "dropped_total{reason=evicted}: idle ones gave their descriptors" \
		"$(val "$T/d1.txt" 'evrdma_http_connections_dropped_total{reason="evicted"}')" 5
	bg_wait fds 10
	bg_stop pd 5
	assert_exit "SIGTERM exits 0" 0 "$RC" "$T/pd.err"
else
	not_ok "the daemon with 20 descriptors listens"
	dump "$T/pd.err"
fi

# --------------------------- a listen address not on the host yet (netns)

NS=evhg-$$
if [ "$(id -u)" = 0 ] && ip netns add "$NS" 2>/dev/null; then
	trap 'ip netns del "$NS" 2>/dev/null; e2e_cleanup' EXIT
	NX=(ip netns exec "$NS")
	X=$(( $$ % 200 + 20 ))
	A=10.$X.9.1
	ip -n "$NS" link set lo up
	cat >"$T/c.json" <<EOF
{ "listen_address": "$A", "listen_port": 9471,
  "responders": [ { "transport": "tcp", "port": 7471, "bind": "$A" } ] }
EOF
	run_cmd cc 10 "${NX[@]}" "$PROBED" --check-config -c "$T/c.json"
	assert_exit "--check-config: an address not on the host is no error" 0 "$RC" "$T/cc.err"
	bg_start pc 60 "${NX[@]}" "$PROBED" -c "$T/c.json"
	sleep 2
	if bg_alive pc; then
		ok "the daemon runs while its listen address is missing"
	else
		not_ok "the daemon runs while its listen address is missing"
		dump "$T/pc.err"
	fi
	assert_lines "... and says so in one warning line" 1 "$T/pc.err" \
		"^evrdma-probed: warning: cannot listen on $(ere_quote "$A"):9471: Cannot assign requested address: not on this host \\(yet\\?\\); trying again"
	ip -n "$NS" addr add "$A/24" dev lo
	scr() {
		local E2E_SCRAPE_IN=("${NX[@]}")
		scrape "$1" 9471 "$A"
	}
	# tried again every 5 s at most
	end=$(( $(date +%s%N) / 1000000 + $(tscale 8) * 1000 ))
	while :; do
		scr c1
		[ "$(scrape_code c1)" = 200 ] && break
		[ "$(( $(date +%s%N) / 1000000 ))" -ge "$end" ] && break
		sleep 0.2
	done
	assert_eq "/metrics answers once the address is added" 200 "$(scrape_code c1)"
	assert_match "... logged" \
		"^evrdma-probed: info: serving /metrics on $(ere_quote "$A") port 9471 \\(its address is up\\)$" "$T/pc.err"
	RL="responder=\"tcp:$A:7471\""
	end=$(( $(date +%s%N) / 1000000 + $(tscale 8) * 1000 ))
	while [ "$(val "$T/c1.txt" "evrdma_responder_listening{$RL}")" != 1 ] &&
		[ "$(( $(date +%s%N) / 1000000 ))" -lt "$end" ]; do
		sleep 0.5
		scr c1
	done
	assert_eq "the responder on that address listens too" 1 \
		"$(val "$T/c1.txt" "evrdma_responder_listening{$RL}")"
	bg_stop pc 5
	assert_exit "SIGTERM exits 0" 0 "$RC" "$T/pc.err"
	ip netns del "$NS" 2>/dev/null
	trap e2e_cleanup EXIT
else
	not_ok "a network namespace for the listen address test (needs root and ip netns)"
fi

e2e_done
