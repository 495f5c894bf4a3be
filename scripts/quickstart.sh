#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The main job: install what building needs and is missing (deps.sh
# --build), build (its output shown only when it fails), then run an
# rstream server and client on 127.0.0.1 over kernel TCP and print the
# result table.  The server's port is the first free one from 7471 on,
# or PORT=N.  tests/e2e/quickstart.sh runs this script.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/deps.sh" --build
tmp=$(mktemp -d)
srv=
cleanup() {
	if [ -n "$srv" ]; then
		kill "$srv" 2>/dev/null || true
		wait "$srv" 2>/dev/null || true
	fi
	# what the server said while it ran (a dropped connection...)
	[ -s "$tmp/server.err" ] && cat "$tmp/server.err" >&2
	rm -rf "$tmp"
}
trap cleanup EXIT
if ! "$top/scripts/build.sh" >"$tmp/build.log" 2>&1; then
	cat "$tmp/build.log" >&2
	echo "quickstart: the build failed (its output is above)" >&2
	exit 1
fi
tail -n 1 "$tmp/build.log" # build: ok (DIR)
rs=$top/build/rstream
listening() { ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }
if [ -n "${PORT:-}" ]; then
	port=$PORT
else
	port=7471
	while listening "$port"; do
		port=$((port + 1))
		if [ "$port" -gt 7570 ]; then
			echo "quickstart: no free port in 7471-7570 (PORT=N names one)" >&2
			exit 1
		fi
	done
fi
"$rs" -T s -b 127.0.0.1 -p "$port" >/dev/null 2>"$tmp/server.err" &
srv=$!
# wait (5 s at most) until this server listens; at once out if it exited
for i in $(seq 50); do
	if ! kill -0 "$srv" 2>/dev/null; then
		rc=0
		wait "$srv" || rc=$?
		srv=
		echo "quickstart: the rstream server for 127.0.0.1:$port exited (status $rc): $(head -n 1 "$tmp/server.err")" >&2
		: >"$tmp/server.err"
		exit 1
	fi
	ss -Hltnp "sport = :$port" 2>/dev/null | grep -q "pid=$srv," && break
	if [ "$i" = 50 ]; then
		echo "quickstart: the rstream server does not listen on 127.0.0.1:$port after 5 s" >&2
		exit 1
	fi
	sleep 0.1
done
echo "rstream -T s -s 127.0.0.1 -p $port"
"$rs" -T s -s 127.0.0.1 -p "$port"
