#!/bin/bash
set -u
R=/opt/evr/rstream; T=$(mktemp -d)
. "$(dirname "$0")/lib-guest.sh"
ulimit -l unlimited
server "$R" -b "$SIW_ADDR2"
t0=$EPOCHREALTIME
timeout 900 "$R" -s "$SIW_ADDR2" -S all >"$T/c.out" 2>&1; rc=$?
echo "zall: -S all rc $rc, $(grep -c '_lat \|_bw ' "$T/c.out") rows in $(since "$t0") s"; cat "$T/c.out"
kill "$sp"; reap "$sp" 5
echo "zall: 0 passed, 0 failed"
