#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# scripts/quickstart.sh (README's quick start), as written, in a copy of
# the tree whose scripts/deps.sh and scripts/build.sh are stand-ins (no
# package is installed, nothing is built: build/rstream is $RSTREAM):
#   - with a foreign listener (not an rstream server: it never accepts)
#     on 7471, the default port, it picks another port and prints the
#     default run's table: exit 0, nothing on stderr (the build's noise
#     kept back), deps.sh asked for --build only;
#   - PORT= naming that busy port: it fails at once (under 5 s) with one
#     line saying its server exited, and why;
#   - a failing build: its output, one line saying so, exit 1.
# Loopback only.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

T=$E2E_TMP
SRC=${E2E_SRCDIR:-$(dirname "$0")/../..}
Q=$T/tree
mkdir -p "$Q/scripts" "$Q/build"
cp "$SRC/scripts/quickstart.sh" "$Q/scripts/"
ln -s "$RSTREAM" "$Q/build/rstream"
cat >"$Q/scripts/deps.sh" <<EOF
#!/bin/sh
echo "\$*" >>"$T/deps.args"
echo "deps: everything is installed"
EOF
cat >"$Q/scripts/build.sh" <<EOF
#!/bin/sh
echo "configure.ac:17: installing 'build-aux/ar-lib'" >&2
echo "Makefile.am: installing 'build-aux/depcomp'" >&2
[ -e "$T/build.fail" ] && { echo "src/x.c:1: error: the stand-in fails" >&2; exit 2; }
echo "build: ok ($Q/build)"
EOF
chmod +x "$Q/scripts/deps.sh" "$Q/scripts/build.sh"

# the foreign listener on 7471: listens, never accepts (unless something
# listens there already, which is as foreign)
BUSY=7471
if ! listening "$BUSY"; then
	bg_start foreign 600 python3 -c '
import socket, time
s = socket.socket()
s.bind(("127.0.0.1", 7471))
s.listen(8)
time.sleep(600)'
	wait_listen "$BUSY" 5 foreign || e2e_skip_all "could not listen on 127.0.0.1:$BUSY: $(cat "$T/foreign.err")"
fi

# ---- the default port is busy: another one, and the table
run_cmd qs 120 env -u PORT "$Q/scripts/quickstart.sh"
assert_exit "quickstart.sh with $BUSY busy: exit 0" 0 "$RC" "$T/qs.out" "$T/qs.err"
say "took $ELAPSED_MS ms"
PORT_RUN=$(sed -n 's/^rstream -T s -s 127\.0\.0\.1 -p \([0-9]*\)$/\1/p' "$T/qs.out")
if [ -n "$PORT_RUN" ] && [ "$PORT_RUN" != "$BUSY" ]; then
	ok "it ran on another port ($PORT_RUN)"
else
	not_ok "it ran on another port than $BUSY" "'$PORT_RUN'"
	dump "$T/qs.out"
fi
check_default_table "$T/qs.out" 1 "quickstart.sh's table"
assert_empty "nothing on stderr (the build's lines kept back)" "$T/qs.err"
assert_match "the build's one line" '^build: ok ' "$T/qs.out"
assert_eq "deps.sh --build, only" "--build" "$(cat "$T/deps.args" 2>/dev/null)"

# ---- PORT= names the busy port: out at once, one line
run_cmd busy 30 env PORT="$BUSY" "$Q/scripts/quickstart.sh"
assert_exit_not "PORT=$BUSY (busy): fails" 0 "$RC" "$T/busy.out" "$T/busy.err"
assert_le "... in under $(tscale 5) s" "$ELAPSED_MS" "$(( $(tscale 5) * 1000 ))"
assert_lines "... with one line on stderr" 1 "$T/busy.err"
assert_match "... saying its server exited, and why" \
	"^quickstart: the rstream server for 127\\.0\\.0\\.1:$BUSY exited \\(status [0-9]+\\): rstream: .+" "$T/busy.err"
assert_no_match "... and no client ran" '^rstream -T s -s ' "$T/busy.out"

# ---- a failing build: its output, and why quickstart stops
touch "$T/build.fail"
run_cmd bfail 30 "$Q/scripts/quickstart.sh"
assert_exit "a failing build: exit 1" 1 "$RC" "$T/bfail.out" "$T/bfail.err"
assert_match "... its output shown" '^src/x\.c:1: error: the stand-in fails$' "$T/bfail.err"
assert_match "... and one line saying so" '^quickstart: the build failed' "$T/bfail.err"

e2e_done
