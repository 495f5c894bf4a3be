#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The main job: install what is missing, build, then run an rstream server
# and client on 127.0.0.1 over kernel TCP and print the result table.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/deps.sh"
"$top/scripts/build.sh"
rs=$top/build/rstream
port=${PORT:-7471}
"$rs" -T s -b 127.0.0.1 -p "$port" >/dev/null &
srv=$!
trap 'kill "$srv" 2>/dev/null; wait "$srv" 2>/dev/null || true' EXIT
# wait (bounded) for the listener
for _ in $(seq 50); do
	ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && break
	sleep 0.1
done
echo "rstream -T s -s 127.0.0.1 -p $port"
"$rs" -T s -s 127.0.0.1 -p "$port"
