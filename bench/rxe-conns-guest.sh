#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Runs inside the Soft-RoCE guest (bench/rstream-rxe.sh --conns boots it):
# how many RDMA connections one rstream -c N client opens against one
# evrdma server here, doubling N until a run fails or takes too long.
# Prints "conns: N rc S seconds T" lines and the failure's last words.
set -u
R=${EVR_BIN:-/opt/evr}/rstream
A2=$RXE_ADDR2
T=$(mktemp -d)
. "${EVR_BIN:-/opt/evr}/tests/lib-guest.sh"
ulimit -n 65536 2>/dev/null
server $R -b "$A2" -T a -B 4096 --stall-timeout 300 || { echo "conns: server did not start"; exit 0; }
for n in ${CONNS:-16 64 256 512 1024 2048 4096}; do
	t0=$(now)
	timeout 600 $R -s "$A2" -c "$n" -S 64 -C 1 -I 10 -B 4096 -T a \
		--stall-timeout 300 >"$T/c.out" 2>&1
	rc=$?
	el=$(since "$t0")
	echo "conns: $n rc $rc seconds $el qps_left $(rdma resource show qp 2>/dev/null | grep -c 'type RC')"
	if [ "$rc" != 0 ]; then
		echo "conns: failed at $n: $(grep -v '^name\|^custom' "$T/c.out" | tail -2 | tr '\n' ' ')"
		echo "conns: memory $(awk '/MemAvailable/{print int($2/1024) " MiB available"}' /proc/meminfo)"
		echo "conns: kernel: $(dmesg 2>/dev/null | grep -i -m2 'out of memory\|killed process' | tr '\n' ' ')"
		break
	fi
done
kill -TERM "$sp"; reap "$sp" 30 >/dev/null 2>&1
echo "conns: done"
exit 0
