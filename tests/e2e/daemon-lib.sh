# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# shellcheck shell=bash
#
# What the evrdma-probed scripts (tests/e2e/daemon-*.sh) share, sourced
# after lib.sh: PROBED and curl checked (and promtool, which lints every
# scrape), T (the scratch directory), R (our rstream), H (127.0.0.1); the
# checks of a scrape (family_ok, check_format, promtool_ok, meta_ok,
# num_gt), and the configurations more than one of them
# writes (probe_json, conf_c1) and the silent peer (start_silent).

# Variables set here (T, R, H) are read by the scripts.
# shellcheck disable=SC2034
true

PROBED=${PROBED:-}
if [ -z "$PROBED" ] || [ ! -x "$PROBED" ]; then
	echo "$E2E_NAME: PROBED is not set to an executable evrdma-probed" >&2
	exit 99
fi
command -v curl >/dev/null || e2e_skip_all "curl is not installed"
T=$E2E_TMP
R=$RSTREAM
H=127.0.0.1

# ------------------------------------------------------------ helpers

# family_ok DESC FILE FAMILY [TYPE]: FILE has FAMILY's HELP and TYPE lines
family_ok() {
	if grep -q "^# TYPE $3 ${4:-}" "$2" && grep -q "^# HELP $3 " "$2"; then
		ok "$1"
	else
		not_ok "$1"
	fi
}

num_gt() { # DESC A B
	if [ -n "$2" ] && [ -n "$3" ] &&
		awk -v a="$2" -v b="$3" 'BEGIN { exit !(a > b) }'; then
		ok "$1 ($2 > $3)"
	else
		not_ok "$1" "'$2' is not > '$3'"
	fi
}

# The exposition format, line by line: comments are HELP or TYPE with a
# known type; every sample has a valid name, well-formed labels and a
# number; each family has HELP and TYPE once, before its samples.
check_format() { # DESC FILE
	local out
	out=$(awk '
	function fam(n) {
		sub(/(_bucket|_sum|_count)$/, "", n)
		return n
	}
	/^# HELP / { help[$3]++; next }
	/^# TYPE / {
		type[$3]++
		if ($4 !~ /^(counter|gauge|histogram|summary|untyped)$/)
			print "bad type: " $0
		next
	}
	/^#/ { print "stray comment: " $0; next }
	{
		if ($0 !~ /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? [-+0-9.eEInfa]+$/)
			print "bad sample: " $0
		n = $0; sub(/[{ ].*/, "", n)
		if (!(n in type) && !(fam(n) in type))
			print "no TYPE before: " $0
		if (!(n in help) && !(fam(n) in help))
			print "no HELP before: " $0
	}
	END {
		for (t in type) {
			if (type[t] != 1) print "TYPE x" type[t] ": " t
			if (help[t] != 1) print "HELP x" help[t] ": " t
		}
	}' "$2")
	if [ -z "$out" ]; then
		ok "$1"
	else
		not_ok "$1" "$(echo "$out" | head -5)"
	fi
}

# Prometheus's own linter on a scrape: names, unit suffixes (base units:
# seconds, bytes), _total on counters, HELP and TYPE.  Any complaint fails.
promtool_ok() { # DESC FILE
	local out rc=0
	out=$(promtool check metrics <"$2" 2>&1) || rc=$?
	if [ "$rc" = 0 ] && [ -z "$out" ]; then
		ok "$1: promtool check metrics passes"
	else
		not_ok "$1: promtool check metrics passes" "exit $rc: $(echo "$out" | head -5)"
	fi
}
command -v promtool >/dev/null ||
	not_ok "promtool is installed (scripts/deps.sh: prometheus)"

meta_ok() { # DESC NAME: 200 and the 0.0.4 content type
	local m
	m=$(cat "$T/$2.meta" 2>/dev/null)
	case $m in
	"200|text/plain; version=0.0.4"*) ok "$1" ;;
	*) not_ok "$1" "curl: '$m'" ;;
	esac
}

# ------------------------------------------------------------ configs

# (timeout_s 2 s, scaled: under valgrind a loaded host's server can take
# more than the stall watchdog's half of it to accept; CI saw it)
probe_json() { # NAME PORT [INTERVAL]
	printf '{ "name": "%s", "type": "rstream", "host": "%s", "port": %s, "transport": "tcp", "size": 1000, "count": 1, "iters": 20, "interval_s": %s, "timeout_s": %s }' \
		"$1" "$H" "$2" "${3:-0.5}" "$(tscale 2)"
}

# conf_c1 FILE: the configuration the daemon of daemon-probe.sh starts
# with (HTTP on $HP; probes "lo" and "gone" of the server on $SP), which
# daemon-config.sh's --check-config reads too
conf_c1() {
	cat >"$1" <<JSON
{
  "listen_address": "$H",
  "listen_port": $HP,
  "probes": [
    $(probe_json lo "$SP"),
    $(probe_json gone "$SP")
  ]
}
JSON
}

# start_silent NAME PORT: a peer on PORT that accepts and never answers
# (a probe of it stalls)
start_silent() {
	start_server "$1" "$2" python3 -c '
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
held = []
while True:
    held.append(s.accept()[0])
' "$2"
}
