#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# soft-iWARP (siw), run inside the guest by tests/rxe/check-rxe.sh with
# tests/rxe/vm.sh --siw (EVR_RXE_SIW=1): siw0 on veth2 (198.18.1.1),
# siw1 on veth3 (198.18.1.2).  Issue 40's ground: what upstream rstream
# (rdma-core 44) does over iWARP, against itself, kept as facts (its
# bandwidth series fails at connect: rdma-core fc82b150b, v51, fixed
# it); evrdma's
# host check knows an iWARP device serves its interface; mckey says
# iWARP has no multicast.  rstream's iWARP dialect: guest-siwdialect.sh.
# Without siw in the guest it says so and counts nothing.
set -u
R=${EVR_BIN:-/opt/evr}/rstream
M=${EVR_BIN:-/opt/evr}/mckey
U=/usr/bin/rstream
UM=/usr/bin/mckey
T=$(mktemp -d)
. "$(dirname "$0")/lib-guest.sh"
has() { grep -q -- "$2" "$1"; }
rows() { grep -c '^[0-9a-z.]*_\(lat\|bw\) \|^custom ' "$1"; }

if [ -z "${SIW_ADDR1:-}" ]; then
	echo "guest-siw: no siw in this guest (tests/rxe/vm.sh --siw); nothing to run"
	echo "siw: 0 passed, 0 failed"
	exit 0
fi
A1=$SIW_ADDR1 A2=$SIW_ADDR2

if [ "$(rdma link show | grep -c 'siw[01]/1 state ACTIVE')" = 2 ]; then
	ok "siw0 and siw1 are up ($(rdma link show | grep -o 'siw[01]/1 state ACTIVE.*netdev veth[23]' | tr '\n' ';'))"
else
	ko "siw devices" "$(rdma link show)"
fi

# upstream against upstream: NAME, client options, whether it completes
up_up() {
	local name=$1 opts=$2 want=$3 crc src
	rm -f "$T"/*.out
	server "$U" -b "$A2" $opts
	timeout 60 "$U" -s "$A2" $opts >"$T/c.out" 2>&1
	crc=$?
	reap "$sp" 5
	src=$?
	if [ "$want" = pass ] && [ "$crc" = 0 ] && [ "$(rows "$T/c.out")" -ge 1 ]; then
		ok "upstream both ways over siw, $name: completes ($(tail -1 "$T/c.out" | awk '{print $NF}') usec/xfer)"
	elif [ "$want" = bwfail ] && [ "$crc" != 0 ] && [ "$crc" != 124 ] &&
		has "$T/c.out" '^r[a-z]*: Operation not supported' &&
		has "$T/c.out" '^64k_lat ' && ! has "$T/c.out" '_bw '; then
		ok "upstream both ways over siw, $name: the latency series runs ($(grep -c '_lat ' "$T/c.out") tests), the bandwidth series fails ($(grep -m1 'Operation not supported' "$T/c.out"), exit $crc): rdma-core 44 needs 4 bytes of inline data on iWARP, which that series sets to 0 (fixed in v51, fc82b150b)"
	else
		ko "upstream both ways over siw, $name (expected: $want)" "client exit $crc, server $src"
	fi
}
up_up "-S 64 -C 1000" "-S 64 -C 1000" pass
up_up "-S 4096 -C 1000" "-S 4096 -C 1000" pass
up_up "-S 1000000 -C 10" "-S 1000000 -C 10" pass
up_up "the default run (-S all)" "" bwfail

# the host check: siw1 serves veth3, an iWARP device (no GID, no MTU
# check for it)
"$R" --check -b "$A2" >"$T/chk.out" 2>&1
rc=$?
if [ "$rc" = 0 ] && has "$T/chk.out" "$A2 is on veth3, RDMA device siw1 port 1 (iWARP)" &&
	has "$T/chk.out" 'siw1 is iWARP'; then
	ok "rstream --check on siw1's address: ok, iWARP, its device named"
else
	ko "rstream --check on siw1's address" "exit $rc"
fi

# mckey: iWARP has no multicast
timeout 20 "$M" -m 239.1.1.1 -b "$A1" -s -C 1 >"$T/m.out" 2>&1
mrc=$?
timeout 20 "$UM" -m 239.1.1.1 -b "$A1" -s -C 1 >"$T/um.out" 2>&1
umrc=$?
if [ "$mrc" = 255 ] && has "$T/m.out" 'siw0 is an iWARP device, which has no multicast'; then
	ok "mckey on siw0: iWARP has no multicast, exit 255 (upstream: $(grep -m1 -i 'unable\|fail' "$T/um.out"), exit $umrc)"
else
	ko "mckey on siw0" "exit $mrc"
fi

echo "siw: $pass passed, $fail failed"
[ "$fail" = 0 ]
