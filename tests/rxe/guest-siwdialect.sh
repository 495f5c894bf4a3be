#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# rsockets' iWARP dialect (RS_OPT_MSG_SEND) over soft-iWARP, run inside
# the guest by tests/rxe/check-rxe.sh with tests/rxe/vm.sh --siw
# (EVR_RXE_SIW=1): siw0 on veth2 (198.18.1.1), siw1 on veth3
# (198.18.1.2).  evrdma against evrdma in every mode, and against
# upstream rstream (rdma-core 44) both ways for what upstream 44 itself
# does on siw (guest-siw.sh records that).  Without siw in the guest it
# says so and counts nothing.
set -u
R=${EVR_BIN:-/opt/evr}/rstream
U=/usr/bin/rstream
T=$(mktemp -d)
. "$(dirname "$0")/lib-guest.sh"
has() { grep -q -- "$2" "$1"; }
rows() { grep -c '^[0-9a-z.]*_\(lat\|bw\) \|^custom ' "$1"; }
lastcol() { tail -1 "$1" | awk '{print $NF}'; }

if [ -z "${SIW_ADDR1:-}" ]; then
	echo "guest-siwdialect: no siw in this guest (tests/rxe/vm.sh --siw); nothing to run"
	echo "siwdialect: 0 passed, 0 failed"
	exit 0
fi
A2=$SIW_ADDR2

# run NAME SERVER CLIENT WANT_ROWS SOPTS -- COPTS: a server on siw1's
# address, a client to it; passes when both exit 0 (a --once server) or
# the client does and the server stays up, with WANT_ROWS rows
run() {
	local name=$1 srv=$2 cli=$3 want=$4 sopts copts crc src t0
	shift 4
	sopts=() copts=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do sopts+=("$1"); shift; done
	shift
	copts=("$@")
	rm -f "$T"/*.out "$T"/*.err
	if ! server "$srv" -b "$A2" "${sopts[@]}"; then
		ko "$name" "the server did not listen"
		return
	fi
	t0=$(now)
	timeout "$(tsc 120)" "$cli" -s "$A2" "${copts[@]}" >"$T/c.out" 2>"$T/c.err"
	crc=$?
	kill "$sp" 2>/dev/null
	reap "$sp" 5
	src=$?
	if [ "$crc" = 0 ] && [ "$(rows "$T/c.out")" = "$want" ] &&
		! has "$T/s.out" 'rror\|ailed'; then
		ok "$name: $want rows in $(since "$t0") s (last: $(tail -1 "$T/c.out" | awk '{print $1, $NF}'))"
	else
		ko "$name" "client exit $crc ($(rows "$T/c.out") rows, want $want), server exit $src"
	fi
}

# soft-iWARP pins what it registers against RLIMIT_MEMLOCK, root or not
# (siw_umem_get ignores CAP_IPC_LOCK): the guest's 8 MiB does not hold
# -c 8's rings.  The tool says so in one line naming the limit.
ulimit -l 8192
rm -f "$T"/*.out "$T"/*.err
server "$R" -b "$A2"
timeout "$(tsc 60)" "$R" -s "$A2" -c 8 -S 4096 -C 100 >"$T/c.out" 2>"$T/c.err"
crc=$?
kill "$sp" 2>/dev/null; reap "$sp" 5
if [ "$crc" = 5 ] && has "$T/c.err" 'memlock: .*RLIMIT_MEMLOCK 8.0 MiB (soft-iWARP counts it even with CAP_IPC_LOCK)' &&
	has "$T/c.err" 'ulimit -l' && ! has "$T/c.err" 'grant CAP_IPC_LOCK'; then
	ok "-c 8 under soft-iWARP's 8 MiB memlock limit: exit 5, $(grep -m1 memlock "$T/c.err" | cut -c1-150)..."
else
	ko "-c 8 under soft-iWARP's 8 MiB memlock limit (want exit 5 and a memlock line)" "exit $crc"
fi
ulimit -l unlimited

# evrdma at both ends: every mode (an evrdma server takes the client's
# plan: no options of its own)
run "evrdma both ends, the default run" "$R" "$R" 8 -- --
run "evrdma both ends, -T a" "$R" "$R" 1 -- -T a -S 4096 -C 2000
run "evrdma both ends, -T n" "$R" "$R" 1 -- -T n -S 65536 -C 500
run "evrdma both ends, -T b" "$R" "$R" 1 -- -T b -S 64 -C 2000
run "evrdma both ends, -T v (verify), 1 MB, negotiated" "$R" "$R" 1 -- -T v --negotiate -S 1000000 -C 20
run "evrdma both ends, -c 4" "$R" "$R" 1 -- -c 4 -S 4096 -C 1000
run "evrdma both ends, -k 1 over a 3 s run" "$R" "$R" 1 -- -k 1 -D 3 -S 64

# against upstream 44, both ways, what upstream does on siw itself (the
# same options at both ends: upstream's wire has no test plan)
both() { # NAME OPTS...
	local name=$1
	shift
	run "upstream client, evrdma server, $name" "$R" "$U" 1 "$@" -- "$@"
	run "evrdma client, upstream server, $name" "$U" "$R" 1 "$@" -- "$@"
}
both "-S 64" -S 64 -C 1000
both "-S 4096" -S 4096 -C 1000
both "-S 1000000" -S 1000000 -C 10
both "-T v -S 4096" -T v -S 4096 -C 100

# the default run against upstream: upstream 44's bandwidth series fails
# on its own over iWARP (guest-siw.sh); here it is the same at either end
# (recorded, with what each side said)
for dir in "upstream client, evrdma server" "evrdma client, upstream server"; do
	rm -f "$T"/*.out "$T"/*.err
	if [ "$dir" = "upstream client, evrdma server" ]; then
		server "$R" -b "$A2"; cli=$U
	else
		server "$U" -b "$A2"; cli=$R
	fi
	timeout "$(tsc 120)" "$cli" -s "$A2" >"$T/c.out" 2>"$T/c.err"
	crc=$?
	kill "$sp" 2>/dev/null; reap "$sp" 5
	lat=$(grep -c '_lat ' "$T/c.out")
	if [ "$crc" != 0 ] && [ "$crc" != 124 ] && [ "$lat" = 4 ] &&
		! grep -q '_bw ' "$T/c.out"; then
		ok "the default run, $dir: the latency series runs (4 tests), the bandwidth series fails as upstream's own does (client exit $crc: $(cat "$T/c.err" "$T/c.out" | grep -v '^name\|_lat ' | head -1 | cut -c1-120); server: $(grep -v '^name\|_lat ' "$T/s.out" | head -1 | cut -c1-120))"
	else
		ko "the default run, $dir (want the latency series, then the bandwidth series failing)" "client exit $crc, $lat latency rows"
	fi
done

# the daemon: an RDMA responder on siw1 and a probe from siw0 to it
P=${EVR_BIN:-/opt/evr}/evrdma-probed
cat >"$T/p.json" <<JSON
{ "listen_address": "127.0.0.1", "listen_port": 9473,
  "responders": [ { "transport": "rdma", "port": 7479, "bind": "$A2" } ],
  "probes": [
    { "name": "siw-lat", "type": "rstream", "host": "$A2", "port": 7479,
      "bind": "$SIW_ADDR1", "transport": "rdma", "size": 64, "count": 1,
      "iters": 20, "interval_s": 0.5, "timeout_s": 5 } ] }
JSON
"$P" -c "$T/p.json" >"$T/p.out" 2>&1 &
pp=$!
runs=0
for _ in $(seq "$(tsc 60)"); do
	sleep 0.5
	scrape_http 127.0.0.1 9473 "$T/m.txt" 2>/dev/null || continue
	runs=$(awk '$1 == "evrdma_probe_runs_total{probe=\"siw-lat\"}" { print $2 }' "$T/m.txt")
	[ "${runs:-0}" -ge 3 ] && break
done
fails=$(awk '$1 ~ /^evrdma_probe_failures_total\{probe="siw-lat",/ { s += $2 } END { print s + 0 }' "$T/m.txt")
kill "$pp" 2>/dev/null; reap "$pp" 10
if [ "${runs:-0}" -ge 3 ] && [ "$fails" = 0 ]; then
	ok "evrdma-probed on siw: an RDMA responder on siw1, a probe from siw0: $runs runs, no failure"
else
	ko "evrdma-probed on siw" "runs '${runs:-}', failures $fails; $(tail -3 "$T/p.out")"
fi

echo "siwdialect: $pass passed, $fail failed"
[ "$fail" = 0 ]
