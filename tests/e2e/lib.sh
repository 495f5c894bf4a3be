#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Shared helpers for the end-to-end scripts.  A script sources this file
# ("$E2E_LIB", exported by Makefile.am) and then uses:
#
#   e2e_port                 a free TCP port (20000-32767), unique per script
#   bg_start NAME SECS CMD.. run CMD in the background under timeout(1);
#                            stdout/stderr in $E2E_TMP/NAME.out / NAME.err
#   start_server NAME PORT CMD..   bg_start + wait_listen
#   wait_listen PORT [SECS] [NAME] wait until something listens on PORT
#   wait_traffic PORT BYTES [SECS] wait until a connection to PORT has
#                            carried BYTES each way (into the data)
#   bg_wait NAME [SECS]      wait for NAME to exit (kill it after SECS); RC,
#                            BG_RUN_MS (its run time since bg_start)
#   bg_stop NAME [SECS]      SIGTERM, wait, then SIGKILL; RC, ELAPSED_MS
#   run_cmd NAME SECS CMD..  run CMD in the foreground under timeout; RC,
#                            ELAPSED_MS, output in $E2E_TMP/NAME.out/.err
#   assert_* / ok / not_ok   checks, counted; e2e_done prints the summary
#   vg_clean DESC FILE       a valgrind log of the script's own is empty
#   tscale N                 N times E2E_TIME_SCALE (1; 3 in the ASan
#                            build; 20 with E2E_VALGRIND=1), rounded up:
#                            every SECS bound above is scaled so, and
#                            the scripts' own timing checks use it
#
# Every process started here is killed, and every temporary file removed,
# when the script exits, however it exits.  Nothing talks to any address
# but 127.0.0.1 and ::1.

# Variables set here (RC, ELAPSED_MS, UPSTREAM...) are read by the scripts.
# shellcheck disable=SC2034
true

set -u

E2E_NAME=$(basename "$0" .sh)
RSTREAM=${RSTREAM:-}
UPSTREAM=${UPSTREAM_RSTREAM:-/usr/bin/rstream}
if [ -z "$RSTREAM" ] || [ ! -x "$RSTREAM" ]; then
	echo "$E2E_NAME: RSTREAM is not set to an executable rstream" >&2
	exit 99 # hard error for the automake harness
fi
for _t in timeout ss python3; do
	if ! command -v "$_t" >/dev/null 2>&1; then
		echo "$E2E_NAME: SKIP: $_t is not installed" >&2
		exit 77
	fi
done
E2E_TMP=$(mktemp -d "${TMPDIR:-/tmp}/e2e-$E2E_NAME.XXXXXX") || exit 99
E2E_PASS=0
E2E_FAIL=0
E2E_DONE=0
E2E_STATUS=1
E2E_PORT_SEQ=0
E2E_PORTS_USED=" "
E2E_START_NS=$(date +%s%N)
declare -A E2E_PID=() E2E_T0=()
RC=0
ELAPSED_MS=0
BG_RUN_MS=0
# Bounds: a default run (about 5 s on a quiet 2-core host, minutes when
# spinning pairs share a busy one) and a background server's whole life.
E2E_RUN_SECS=${E2E_RUN_SECS:-240}
E2E_SERVER_SECS=${E2E_SERVER_SECS:-400}

export LC_ALL=C

# ------------------------------------------------------- sanitizer build

# EVR_SANITIZERS=yes (exported by Makefile.am from configure's
# --enable-sanitizers): the programs are ASan+UBSan builds.  Their reports
# go to files in $E2E_TMP/sanitizer (log_path, whatever a test does with
# their stderr), and e2e_done fails the script on any of them, or on a
# report line anywhere in the scratch directory (san_check).
E2E_SAN=${EVR_SANITIZERS:-no}
# shellcheck source=reports.sh
. "$(dirname "${BASH_SOURCE[0]}")/reports.sh"
report_setup "$E2E_TMP" "$E2E_SAN"

# E2E_VALGRIND=1 (make check-valgrind): every rstream, mckey,
# evrdma-probed and embed this script starts runs under valgrind memcheck
# (tests/e2e/vgmode.sh; set up at the end of this file).
E2E_VG=${E2E_VALGRIND:-0}

# Timing checks: a deadline that is honest on a quiet machine, times this
# factor where the programs run slower for a reason this harness knows:
# ASan+UBSan (about 2-3x the CPU per operation, and a leak check at exit)
# or valgrind (20-50x).  tscale N prints N scaled (an integer, rounded
# up), for seconds or milliseconds alike.
if [ -z "${E2E_TIME_SCALE:-}" ]; then
	E2E_TIME_SCALE=1
	[ "$E2E_SAN" = yes ] && E2E_TIME_SCALE=3
	[ "$E2E_VG" = 1 ] && E2E_TIME_SCALE=20
fi
tscale() { awk -v s="$1" -v k="$E2E_TIME_SCALE" 'BEGIN { v = s * k; i = int(v); if (i < v) i++; print i }'; }


# Can this part of a script run a program under valgrind itself?  Not in
# the sanitizer build (valgrind cannot run ASan binaries: both replace the
# allocator and ASan reserves terabytes of shadow memory); there the
# sanitizers cover the same ground, and the normal build's make check runs
# the valgrind part.  Prints a SKIP line naming why when it cannot.
e2e_can_valgrind() { # WHAT
	if [ "$E2E_VG" = 1 ]; then
		skip "$1 under valgrind, run by this script itself: with E2E_VALGRIND=1 every program of the script runs under memcheck already"
		return 1
	fi
	if [ "$E2E_SAN" = yes ]; then
		skip "$1 under valgrind: this is the ASan+UBSan build (valgrind cannot run ASan binaries); ASan/UBSan/LSan check these runs here, and the normal build's make check runs them under valgrind"
		return 1
	fi
	if ! command -v valgrind >/dev/null 2>&1; then
		skip "$1 under valgrind: valgrind is not installed"
		return 1
	fi
	return 0
}

# A valgrind run of the script's own (e2e_can_valgrind, --quiet) wrote
# nothing to FILE, its log: not a line of valgrind's ("==PID==").
vg_clean() { # DESC FILE
	if grep -q '^==[0-9]*==' "$2"; then
		not_ok "$1: valgrind reports nothing"
		grep '^==' "$2" | head -30 | sed 's/^/#   /'
	else
		ok "$1: valgrind reports nothing"
	fi
}

# ---------------------------------------------------------------- cleanup

e2e_kill_group() { # PID: the whole process group timeout(1) made
	local pid=$1
	kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null
}

e2e_cleanup() {
	local st=$? name pid
	trap - EXIT INT TERM
	for name in "${!E2E_PID[@]}"; do
		pid=${E2E_PID[$name]}
		kill -TERM -- "-$pid" 2>/dev/null
	done
	for name in "${!E2E_PID[@]}"; do
		pid=${E2E_PID[$name]}
		e2e_kill_group "$pid"
		wait "$pid" 2>/dev/null
	done
	# After e2e_done, its status stands, whatever ran in between (a
	# script's own EXIT trap may call this after other commands).
	[ "$E2E_DONE" = 1 ] && st=$E2E_STATUS
	if [ "$E2E_DONE" = 0 ]; then
		san_check
		echo "FAIL - $E2E_NAME: the script stopped early (status $st)"
		E2E_FAIL=$((E2E_FAIL + 1))
		echo "$E2E_PASS passed, $E2E_FAIL failed"
		st=1
	fi
	e2e_port_release
	if [ -n "${E2E_KEEP:-}" ]; then
		echo "# kept $E2E_TMP${E2E_USER_DIR:+ $E2E_USER_DIR}"
	else
		rm -rf "$E2E_TMP" ${E2E_USER_DIR:+"$E2E_USER_DIR"}
	fi
	exit "$st"
}
trap e2e_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ------------------------------------------------------------------ report

say() { echo "# $*"; }

ok() {
	E2E_PASS=$((E2E_PASS + 1))
	echo "ok - $1"
}

not_ok() { # DESC [DETAIL...]
	E2E_FAIL=$((E2E_FAIL + 1))
	echo "FAIL - $1"
	shift
	local l
	for l in "$@"; do
		echo "#   $l"
	done
}

skip() {
	echo "SKIP - $*"
}

# Show a file's head, indented, after a failure.
dump() {
	local f
	for f in "$@"; do
		[ -e "$f" ] || continue
		echo "#   --- ${f#"$E2E_TMP"/} ($(wc -l <"$f") lines)"
		head -n 25 "$f" | sed 's/^/#   | /'
	done
}

# Skip the whole script (automake's status 77).
e2e_skip_all() { # REASON
	echo "SKIP: $*"
	san_check
	E2E_DONE=1
	E2E_STATUS=77
	[ "$E2E_FAIL" = 0 ] || E2E_STATUS=1
	exit "$E2E_STATUS"
}

# Any sanitizer report, or memcheck report in E2E_VALGRIND mode, of any
# program this script ran is a failure, named (tests/e2e/reports.sh).
san_check() { report_check "$E2E_TMP" "$E2E_SAN" "$E2E_VG" "program this script ran"; }

e2e_done() {
	local secs=$(( ($(date +%s%N) - E2E_START_NS) / 1000000 ))
	san_check
	E2E_DONE=1
	E2E_STATUS=1
	[ "$E2E_FAIL" = 0 ] && E2E_STATUS=0
	say "$E2E_NAME took $((secs / 1000)).$(printf '%03d' $((secs % 1000))) s"
	echo "$E2E_PASS passed, $E2E_FAIL failed"
	exit "$E2E_STATUS"
}

# -------------------------------------------------------------- assertions

assert_eq() { # DESC EXPECTED ACTUAL
	if [ "$2" = "$3" ]; then
		ok "$1"
	else
		not_ok "$1" "expected: '$2'" "actual:   '$3'"
	fi
}

assert_exit() { # DESC EXPECTED ACTUAL [FILES TO SHOW]
	local d=$1 e=$2 a=$3
	shift 3
	if [ "$e" = "$a" ]; then
		ok "$d (exit $a)"
	else
		not_ok "$d" "expected exit status $e, got $a"
		dump "$@"
	fi
}

assert_exit_not() { # DESC UNWANTED ACTUAL [FILES]
	local d=$1 e=$2 a=$3
	shift 3
	if [ "$e" != "$a" ]; then
		ok "$d (exit $a)"
	else
		not_ok "$d" "exit status must not be $e"
		dump "$@"
	fi
}

assert_match() { # DESC ERE FILE
	if grep -Eq -- "$2" "$3" 2>/dev/null; then
		ok "$1"
	else
		not_ok "$1" "no line of ${3#"$E2E_TMP"/} matches: $2"
		dump "$3"
	fi
}

assert_no_match() { # DESC ERE FILE
	if ! grep -Eq -- "$2" "$3" 2>/dev/null; then
		ok "$1"
	else
		not_ok "$1" "${3#"$E2E_TMP"/} has a line matching: $2"
		grep -E -- "$2" "$3" | head -5 | sed 's/^/#   | /'
	fi
}

assert_empty() { # DESC FILE
	if [ ! -s "$2" ]; then
		ok "$1"
	else
		not_ok "$1" "${2#"$E2E_TMP"/} is not empty"
		dump "$2"
	fi
}

assert_lines() { # DESC N FILE [ERE]: N lines (matching ERE)
	local n
	if [ $# -ge 4 ]; then
		n=$(grep -Ec -- "$4" "$3" 2>/dev/null)
	else
		n=$(wc -l <"$3" 2>/dev/null)
	fi
	n=${n:-0}
	if [ "$n" = "$2" ]; then
		ok "$1"
	else
		not_ok "$1" "expected $2 lines${4:+ matching '$4'} in ${3#"$E2E_TMP"/}, found $n"
		dump "$3"
	fi
}

assert_le() { # DESC A B: A <= B (integers)
	if [ "$2" -le "$3" ]; then
		ok "$1 ($2 <= $3)"
	else
		not_ok "$1" "$2 is not <= $3"
	fi
}

# ----------------------------------------------------------- rstream output

# Upstream's header, exactly: "%-10s%-8s%-8s%-8s%-8s%8s %10s%13s\n".
E2E_HEADER=$(printf '%-10s%-8s%-8s%-8s%-8s%8s %10s%13s' name bytes xfers \
	iters total time Gb/sec usec/xfer)

ere_quote() { printf '%s' "$1" | sed 's/[][\.*^$+?(){}|/]/\\&/g'; }

# A regex for one row in upstream's format:
# "%-10s%-8s%-8s%-8s%-8s" name bytes xfers iters total, then
# "%8.2fs%10.2f%11.2f" time, Gb/sec, usec/xfer.
row_regex() { # NAME BYTES XFERS ITERS TOTAL
	local p
	p=$(printf '%-10s%-8s%-8s%-8s%-8s' "$1" "$2" "$3" "$4" "$5")
	printf '^%s *[0-9]+\\.[0-9]{2}s *[0-9]+\\.[0-9]{2} *[0-9]+\\.[0-9]{2}%s$' \
		"$(ere_quote "$p")" "$E2E_ROW_CLIENT"
}

# A server that has had two clients at once ends its rows with the
# client's address ("  client 127.0.0.1:40000"): optional in the row
# regexes, asserted where a test wants it.
E2E_ROW_CLIENT='(  client [^ ]+)?'

# Any row: a name, four columns, then the three numbers.
E2E_ANY_ROW='^[^ ]+ +[0-9.]+[kmg]? +[0-9]+[kmb]? +[0-9]+[kmb]? +[0-9.]+[kmg]? +[0-9]+\.[0-9]{2}s +[0-9]+\.[0-9]{2} +[0-9]+\.[0-9]{2}'"$E2E_ROW_CLIENT"'$'

# Does LINE print exactly as upstream's printf would print its own numbers?
row_reformats() { # LINE
	local l=${1%%  client *} n b x i t tm g u
	read -r n b x i t tm g u <<<"$l"
	[ "$l" = "$(printf '%-10s%-8s%-8s%-8s%-8s%8.2fs%10.2f%11.2f' "$n" "$b" \
		"$x" "$i" "$t" "${tm%s}" "$g" "$u")" ]
}

# COUNT rows (default 1) in FILE for this test, each in upstream's format.
check_row() { # FILE NAME BYTES XFERS ITERS TOTAL [COUNT] [LABEL]
	local f=$1 want=${7:-1} label=${8:-${1#"$E2E_TMP"/}} re n l bad=""
	re=$(row_regex "$2" "$3" "$4" "$5" "$6")
	n=$(grep -Ec -- "$re" "$f" 2>/dev/null)
	while IFS= read -r l; do
		row_reformats "$l" || bad="$l"
	done < <(grep -E -- "$re" "$f" 2>/dev/null)
	if [ "$n" = "$want" ] && [ -z "$bad" ]; then
		ok "$label: row '$2 $3 $4 $5 $6' x$want"
	else
		not_ok "$label: row '$2 $3 $4 $5 $6' x$want" \
			"found $n line(s) matching $re${bad:+; misformatted: '$bad'}"
		dump "$f"
	fi
}

# FILE holds the header exactly COUNT times (default 1).
check_header() { # FILE [COUNT] [LABEL]
	local label=${3:-${1#"$E2E_TMP"/}} n
	n=$(grep -Fxc -- "$E2E_HEADER" "$1" 2>/dev/null)
	if [ "${n:-0}" = "${2:-1}" ]; then
		ok "$label: header x${2:-1}"
	else
		not_ok "$label: header x${2:-1}" "found ${n:-0}" \
			"want: '$E2E_HEADER'"
		dump "$1"
	fi
}

# Wait (at most SECS, default 5) until FILE holds the header: a server
# prints it after listen(), so a check right after wait_listen races it
# (seen under valgrind).
wait_header() { # FILE [SECS]
	local end=$(( $(now_ms) + $(tscale "${2:-5}") * 1000 ))
	while [ "$(now_ms)" -lt "$end" ]; do
		grep -Fxq -- "$E2E_HEADER" "$1" 2>/dev/null && return 0
		sleep 0.03
	done
	return 1
}

# The names of the rows in FILE, in order, on one line.
row_names() { grep -E -- "$E2E_ANY_ROW" "$1" | awk '{printf "%s%s", s, $1; s=" "}'; }

E2E_DEFAULT_NAMES="64_lat 4k_lat 64k_lat 1m_lat 64_bw 4k_bw 64k_bw 1m_bw"

# A default run's table: the header once and the 8 rows, in order, with
# upstream's columns.  COUNT > 1 for a server that served several runs.
check_default_table() { # FILE [COUNT] [LABEL]
	local f=$1 c=${2:-1} label=${3:-${1#"$E2E_TMP"/}}
	check_header "$f" 1 "$label"
	check_row "$f" 64_lat 64 1 100k 12m "$c" "$label"
	check_row "$f" 4k_lat 4k 1 10k 78m "$c" "$label"
	check_row "$f" 64k_lat 64k 1 1k 125m "$c" "$label"
	check_row "$f" 1m_lat 1m 1 100 200m "$c" "$label"
	check_row "$f" 64_bw 64 100k 1 12m "$c" "$label"
	check_row "$f" 4k_bw 4k 10k 1 78m "$c" "$label"
	check_row "$f" 64k_bw 64k 1k 1 125m "$c" "$label"
	check_row "$f" 1m_bw 1m 100 1 200m "$c" "$label"
	if [ "$c" = 1 ]; then
		assert_eq "$label: rows in upstream's order" "$E2E_DEFAULT_NAMES" \
			"$(row_names "$f" | sed -E 's/(^| )custom\b//g; s/^ //')"
	fi
}

# ------------------------------------------------------------------ ports

e2e_port_busy() { # PORT: any TCP socket at all on it?
	[ -n "$(ss -Htan "( sport = :$1 or dport = :$1 )" 2>/dev/null)" ]
}

# Scripts running side by side (make -j check) claim their ports in a
# directory they share: a port is free only when no socket uses it and
# no live script claimed it.  Checking sockets alone let two scripts pick
# the same port before either bound it (seen once: a fake server lost its
# port to another script's rstream, and the client under test talked to
# the wrong server).  A claim is a directory named after the port, with
# the claiming script's PID; a dead script's claims are taken over, and
# e2e_cleanup drops the script's own.
E2E_PORT_DIR=${TMPDIR:-/tmp}/evrdma-e2e-ports
e2e_port_claim() { # PORT
	local d=$E2E_PORT_DIR/$1 owner
	mkdir -p "$E2E_PORT_DIR" 2>/dev/null
	if ! mkdir "$d" 2>/dev/null; then
		owner=$(cat "$d/pid" 2>/dev/null)
		# a live owner's, or a claim being made (no pid yet, unless
		# its maker died a minute ago): taken
		if [ -z "$owner" ]; then
			[ -n "$(find "$d" -maxdepth 0 -mmin +1 2>/dev/null)" ] ||
				return 1
		elif kill -0 "$owner" 2>/dev/null; then
			return 1
		fi
		rm -rf "$d" && mkdir "$d" 2>/dev/null || return 1
	fi
	echo "$$" >"$d/pid"
}
e2e_port_release() { # the ports this script claimed
	local f
	for f in "$E2E_PORT_DIR"/*/pid; do
		[ -f "$f" ] && [ "$(cat "$f" 2>/dev/null)" = "$$" ] &&
			rm -rf "${f%/pid}"
	done
	return 0
}

# A port derived from the script's name and PID, so that scripts running
# side by side (make -j check) pick different ones, checked to be unused
# and claimed (above).
e2e_port() {
	local h p
	h=$(printf '%s' "$E2E_NAME" | cksum | cut -d' ' -f1)
	for _ in $(seq 1 500); do
		E2E_PORT_SEQ=$((E2E_PORT_SEQ + 1))
		p=$(( 20000 + (h + $$ * 131 + E2E_PORT_SEQ * 7919) % 12768 ))
		case "$E2E_PORTS_USED" in *" $p "*) continue ;; esac
		e2e_port_busy "$p" && continue
		e2e_port_claim "$p" || continue
		E2E_PORTS_USED="$E2E_PORTS_USED$p "
		echo "$p"
		return 0
	done
	echo "$E2E_NAME: no free port found" >&2
	return 1
}

# --------------------------------------------------------------- processes

# scrape NAME [PORT [HOST]]: GET http://HOST:PORT/metrics (HOST:
# 127.0.0.1; PORT: $E2E_SCRAPE_PORT) into $E2E_TMP/NAME.txt, and into
# NAME.meta "CODE|CONTENT-TYPE|SECONDS" (code 000: nothing answered).
# Bounded at $E2E_SCRAPE_MAX seconds (2, scaled: under valgrind a
# daemon's first scrape translates the whole HTTP and metrics path; the
# checks that a scrape is quick compare its time themselves).  Inside
# the command in the array E2E_SCRAPE_IN when it is set (ip netns exec).
# The one scrape of the e2e scripts.
scrape() {
	local curl_in=("${E2E_SCRAPE_IN[@]}")
	"${curl_in[@]}" curl -s --max-time "$(tscale "${E2E_SCRAPE_MAX:-2}")" \
		-o "$E2E_TMP/$1.txt" \
		-w '%{http_code}|%{content_type}|%{time_total}\n' \
		"http://${3:-127.0.0.1}:${2:-$E2E_SCRAPE_PORT}/metrics" \
		>"$E2E_TMP/$1.meta" 2>/dev/null
}
# scrape_code NAME / scrape_secs NAME: the last scrape's HTTP code and
# time (from NAME.meta)
scrape_code() { cut -d'|' -f1 "$E2E_TMP/$1.meta" 2>/dev/null; }
scrape_secs() { cut -d'|' -f3 "$E2E_TMP/$1.meta" 2>/dev/null; }
# val FILE SERIES: the value of one sample in a scraped FILE (SERIES
# exactly, labels and all), or "" when absent (or no FILE)
val() {
	[ -f "$1" ] || return 0
	awk -v s="$2" 'index($0, s " ") == 1 { print $NF; exit }' "$1"
}
# until_scraped SCRAPER NAME SECS SERIES MIN [SERIES MIN]...: scrape (with
# "SCRAPER NAME") until every SERIES is at least its MIN, at most SECS
# (scaled) seconds: counts that need probe runs wait for them rather
# than a fixed window, which a slow host (valgrind) overruns.  The checks
# that follow judge the last scrape either way.
until_scraped() {
	local fn=$1 name=$2 end ok v i args
	end=$(( $(date +%s%N) / 1000000 + $(tscale "$3") * 1000 ))
	shift 3
	args=("$@")
	while :; do
		"$fn" "$name"
		ok=1
		i=1
		while [ "$i" -lt "${#args[@]}" ]; do
			v=$(val "$E2E_TMP/$name.txt" "${args[$((i - 1))]}")
			if [ -z "$v" ] || ! awk -v a="$v" -v b="${args[$i]}" 'BEGIN { exit !(a >= b) }'; then
				ok=0
				break
			fi
			i=$((i + 2))
		done
		[ "$ok" = 1 ] && return 0
		[ "$(( $(date +%s%N) / 1000000 ))" -ge "$end" ] && return 1
		sleep 0.2
	done
}

# port VAR: a free port of this script's into VAR (e2e_port in this
# shell, not in $(...): it remembers the ports it gave)
port() {
	e2e_port >"$E2E_TMP/port" || exit 1
	printf -v "$1" '%s' "$(cat "$E2E_TMP/port")"
}
# num_ge DESC A B: A >= B, numbers (A may be "")
num_ge() {
	if [ -n "$2" ] && awk -v a="$2" -v b="$3" 'BEGIN { exit !(a >= b) }'; then
		ok "$1 ($2 >= $3)"
	else
		not_ok "$1" "'$2' is not >= $3"
	fi
}
# mem_kb PID FIELD: a /proc/PID/status figure (VmRSS, VmHWM ...), in kB
mem_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
# mem_le DESC A B: assert_le, but a skip under valgrind, whose footprint
# is memcheck's (its leak check at exit covers what this would)
mem_le() {
	if [ "$E2E_VG" = 1 ]; then
		skip "$1: under valgrind the footprint is memcheck's (its leak check at exit covers this)"
	else
		assert_le "$@"
	fi
}
E2E_SCRAPE_IN=()
E2E_SCRAPE_PORT=9471

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# Start CMD in the background under timeout(1), which puts it in a process
# group of its own: the group is what bg_stop and the exit trap kill.
bg_start() { # NAME SECS CMD...
	local name=$1 secs=$2
	shift 2
	E2E_T0[$name]=$(now_ms)
	timeout -k "$(tscale 5)" "$(tscale "$secs")" "$@" >"$E2E_TMP/$name.out" 2>"$E2E_TMP/$name.err" &
	E2E_PID[$name]=$!
}

bg_alive() { kill -0 "${E2E_PID[$1]}" 2>/dev/null; }

# The program's own PID (timeout's child).
bg_child_pid() { # NAME
	local p
	for p in 1 2 3 4 5 6 7 8 9 10; do
		p=$(ps -o pid= --ppid "${E2E_PID[$1]}" 2>/dev/null | head -1 | tr -d ' ')
		[ -n "$p" ] && { echo "$p"; return 0; }
		sleep 0.05
	done
	return 1
}

# Wait up to SECS (default 20) for NAME to exit; kill it after that.
# RC = its exit status (timeout's 124/137 when it had to be killed);
# BG_TIMED_OUT=1 when it did not exit in time; BG_RUN_MS = how long it
# ran, from its bg_start.
bg_wait() { # NAME [SECS]
	local name=$1 secs pid end
	secs=$(tscale "${2:-20}")
	pid=${E2E_PID[$name]:-}
	BG_TIMED_OUT=0
	if [ -z "$pid" ]; then
		RC=255
		return
	fi
	end=$(( $(now_ms) + secs * 1000 ))
	while kill -0 "$pid" 2>/dev/null && [ "$(now_ms)" -lt "$end" ]; do
		sleep 0.05
	done
	if kill -0 "$pid" 2>/dev/null; then
		BG_TIMED_OUT=1
		e2e_kill_group "$pid"
	fi
	wait "$pid" 2>/dev/null
	RC=$?
	BG_RUN_MS=$(( $(now_ms) - ${E2E_T0[$name]:-0} ))
	unset "E2E_PID[$name]" "E2E_T0[$name]"
}

# Send SIG once to every process in the group timeout(1) PID made (the
# program, and a fork server's children), as a kill to the group does, but
# not to timeout itself: timeout would relay it (a second one) and then
# send SIGCONT to the group, and a SIGCONT that lands while the ASan
# build's exit-time leak check (LeakSanitizer stops the program with
# PTRACE_ATTACH, i.e. a SIGSTOP) is starting cancels that stop: the
# checker then waits forever, the program spins waiting for it, and only
# timeout's SIGKILL ends it (seen as "SIGTERM exits 0" failing with 137
# on a loaded machine).  Only timeout left (the program gone): nothing.
e2e_signal_group() { # SIG PID
	local sig=$1 pid=$2 p sent=0
	for p in $(pgrep -g "$pid" 2>/dev/null); do
		[ "$p" = "$pid" ] && continue
		kill "-$sig" "$p" 2>/dev/null && sent=1
	done
	# no pgrep, or the program not started yet: through timeout
	[ "$sent" = 1 ] || kill "-$sig" "$pid" 2>/dev/null
}

# SIGTERM NAME (its group, as above), wait up to SECS (default 5),
# then SIGKILL its whole group.  RC = exit status; ELAPSED_MS = how long it
# took to exit after the signal; BG_TIMED_OUT=1 when it had to be killed.
bg_stop() { # NAME [SECS] [SIGNAL]
	local name=$1 secs sig=${3:-TERM} pid t0 end
	secs=$(tscale "${2:-5}")
	pid=${E2E_PID[$name]:-}
	BG_TIMED_OUT=0
	if [ -z "$pid" ]; then
		RC=255
		return
	fi
	t0=$(now_ms)
	e2e_signal_group "$sig" "$pid"
	end=$(( t0 + secs * 1000 ))
	while kill -0 "$pid" 2>/dev/null && [ "$(now_ms)" -lt "$end" ]; do
		sleep 0.02
	done
	ELAPSED_MS=$(( $(now_ms) - t0 ))
	if kill -0 "$pid" 2>/dev/null; then
		BG_TIMED_OUT=1
		e2e_kill_group "$pid"
	fi
	wait "$pid" 2>/dev/null
	RC=$?
	unset "E2E_PID[$name]"
}

# Kill NAME's whole group at once (no grace) and reap it.
bg_kill() { # NAME
	local pid=${E2E_PID[$1]:-}
	[ -n "$pid" ] || return 0
	e2e_kill_group "$pid"
	wait "$pid" 2>/dev/null
	unset "E2E_PID[$1]"
}

# Is something listening on PORT (any address)?
listening() { [ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]; }

# Wait (at most SECS, default 5) until something listens on PORT; fail at
# once if the process NAME, when given, has exited.
wait_listen() { # PORT [SECS] [NAME]
	local port=$1 secs name=${3:-} end
	secs=$(tscale "${2:-5}")
	end=$(( $(now_ms) + secs * 1000 ))
	while [ "$(now_ms)" -lt "$end" ]; do
		listening "$port" && return 0
		if [ -n "$name" ] && ! bg_alive "$name"; then
			return 1
		fi
		sleep 0.03
	done
	return 1
}

# bg_start + wait_listen; a server that does not come up is a failure.
start_server() { # NAME PORT CMD...
	local name=$1 port=$2
	shift 2
	bg_start "$name" "$E2E_SERVER_SECS" "$@"
	if wait_listen "$port" "${E2E_LISTEN_SECS:-5}" "$name"; then
		return 0
	fi
	not_ok "server $name listens on port $port" "command: $*"
	dump "$E2E_TMP/$name.out" "$E2E_TMP/$name.err"
	return 1
}

# Wait (at most SECS) until FILE has a line matching ERE.
wait_match() { # FILE ERE [SECS]
	local end=$(( $(now_ms) + $(tscale "${3:-5}") * 1000 ))
	while [ "$(now_ms)" -lt "$end" ]; do
		grep -Eq -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.03
	done
	return 1
}

# Wait (at most SECS) until FILE has at least N lines matching ERE.
wait_count() { # FILE ERE N [SECS]
	local end=$(( $(now_ms) + $(tscale "${4:-5}") * 1000 )) n
	while [ "$(now_ms)" -lt "$end" ]; do
		n=$(grep -Ec -- "$2" "$1" 2>/dev/null)
		[ "${n:-0}" -ge "$3" ] && return 0
		sleep 0.03
	done
	return 1
}

# Wait (at most SECS) until N connections to PORT are established.
wait_established() { # PORT N [SECS]
	local end=$(( $(now_ms) + $(tscale "${3:-5}") * 1000 )) n
	while [ "$(now_ms)" -lt "$end" ]; do
		n=$(ss -Htn state established "( dport = :$1 )" 2>/dev/null | wc -l)
		[ "$n" -ge "$2" ] && return 0
		sleep 0.02
	done
	return 1
}

# Wait (at most SECS, scaled; default 5) until a connection to local PORT
# (any one of them) has carried BYTES or more each way (ss: the client's bytes_acked and
# bytes_received): past the negotiation (under 1 KiB) and into the data,
# where a fixed sleep after wait_established could, under memcheck,
# still land in the negotiation.
wait_traffic() { # PORT BYTES [SECS]
	local end=$(( $(now_ms) + $(tscale "${3:-5}") * 1000 ))
	while [ "$(now_ms)" -lt "$end" ]; do
		ss -Htni state established "( dport = :$1 )" 2>/dev/null |
			awk -v n="$2" '{ a = r = 0; for (i = 1; i <= NF; i++) { split($i, kv, ":"); if (kv[1] == "bytes_acked") a = kv[2]; if (kv[1] == "bytes_received") r = kv[2] }
				if (a >= n && r >= n) f = 1 } END { exit !f }' && return 0
		sleep 0.02
	done
	return 1
}

# Run CMD in the foreground, bounded by SECS.  RC = exit status (124 when
# timeout had to stop it); ELAPSED_MS; output in $E2E_TMP/NAME.out/.err.
run_cmd() { # NAME SECS CMD...
	local name=$1 secs=$2 t0
	shift 2
	t0=$(now_ms)
	# In the background and waited for, so that a signal to this script
	# is handled at once (the exit trap then kills it), not after it.
	timeout -k "$(tscale 3)" "$(tscale "$secs")" "$@" >"$E2E_TMP/$name.out" 2>"$E2E_TMP/$name.err" \
		</dev/null &
	E2E_PID[__fg]=$!
	wait "${E2E_PID[__fg]}"
	RC=$?
	unset "E2E_PID[__fg]"
	ELAPSED_MS=$(( $(now_ms) - t0 ))
}

# ------------------------------------------------------------------- CPU

cpu_ticks() { # PID: utime + stime in clock ticks
	awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null
}

# CPU use of PID over SECS seconds, in percent of one core (integer).
cpu_percent() { # PID [SECS]
	local pid=$1 secs=${2:-1} hz t0 t1 a b
	hz=$(getconf CLK_TCK)
	a=$(cpu_ticks "$pid") || return 1
	t0=$(date +%s%N)
	sleep "$secs"
	b=$(cpu_ticks "$pid") || return 1
	t1=$(date +%s%N)
	[ -n "$a" ] && [ -n "$b" ] || return 1
	echo $(( (b - a) * 100 * 1000000000 / hz / (t1 - t0) ))
}

# ------------------------------------------------------------- fake peers

# A scripted peer in Python, for the cases no real rstream produces.
# Clients connect to 127.0.0.1:PORT; servers listen there.  Every mode
# ends by itself (at the latest after HOLD seconds).
#   client modes: silent, silent-many N, garbage, close, hello-close,
#                 hello-badplan, hello-reject, complete-hold, extra
#   server modes: accept-close, accept-silent, sync-then-silent,
#                 ack-then-silent, reject, verify-bad SIZE COUNT ITERS BADAT
cat >"$E2E_TMP/fake.py" <<'PYEOF'
import os, socket, struct, sys, time

HELLO = b"evrdma:hello:v1\n"
ACK = b"evrdma:ack---v1\n"
mode, port = sys.argv[1], int(sys.argv[2])
args = sys.argv[3:]
HOLD = float(os.environ.get("FAKE_HOLD", "15"))
# how long a server mode waits for its client to connect (scaled)
WAIT = float(os.environ.get("FAKE_WAIT", HOLD))

def recv_exact(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise EOFError("peer closed after %d of %d bytes" % (len(b), n))
        b += c
    return b

def hold(s):
    # Read and discard until the peer closes or HOLD runs out.
    s.settimeout(0.2)
    end = time.time() + HOLD
    while time.time() < end:
        try:
            if not s.recv(65536):
                return
        except socket.timeout:
            pass
        except OSError:
            return

def plan(ntests=1, size=4096, count=1, iters=1, kind=0):
    hdr = b"EVPL" + struct.pack(">HHHHH", 1, 0, ntests, 0, 1)
    ent = struct.pack(">IIIB", size, count, iters, kind)
    return hdr.ljust(16, b"\0") + ent.ljust(16, b"\0") * ntests

def client():
    if mode == "silent-many":
        # N connections that never say a word, held open (the soft fd
        # limit raised for them, within the hard one)
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = int(args[0]) + 64
        if soft != resource.RLIM_INFINITY and soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE,
                               (want if hard == resource.RLIM_INFINITY else min(want, hard), hard))
        socks = [socket.create_connection(("127.0.0.1", port), timeout=HOLD)
                 for _ in range(int(args[0]))]
        print("connected %d" % len(socks), flush=True)
        time.sleep(HOLD)
        return
    s = socket.create_connection(("127.0.0.1", port), timeout=HOLD)
    print("connected", flush=True)
    if mode == "silent":
        time.sleep(HOLD)
    elif mode == "close":
        pass
    elif mode == "garbage":
        s.sendall(b"GARBAGE!" * 2)
        s.sendall(os.urandom(100000))
        hold(s)
    elif mode == "hello-close":
        s.sendall(HELLO)
    elif mode == "hello-badplan":
        s.sendall(HELLO)
        print("got", recv_exact(s, 16), flush=True)
        s.sendall(b"NOT A PLAN HDR!!")
        hold(s)
    elif mode in ("complete-hold", "extra"):
        # A whole negotiated run (one custom test: 4 x 1000 bytes each
        # way), then either silence without closing, or 1000 bytes more.
        s.sendall(HELLO)
        assert recv_exact(s, 16) == ACK
        s.sendall(plan(size=1000, count=4, iters=1))
        r = recv_exact(s, 16)
        assert r[:4] == b"EVPR" and struct.unpack(">I", r[4:8])[0] == 0
        s.sendall(bytes(16))
        recv_exact(s, 16)
        s.sendall(bytes(4000))
        recv_exact(s, 4000)
        print("run complete", flush=True)
        if mode == "extra":
            s.sendall(bytes(1000))
        hold(s)
        print("server closed", flush=True)
    elif mode == "hello-reject":
        s.sendall(HELLO)
        print("got", recv_exact(s, 16), flush=True)
        s.sendall(plan(size=0))
        r = recv_exact(s, 16)
        print("reply", r[:4], struct.unpack(">I", r[4:8])[0], flush=True)
        hold(s)
    else:
        sys.exit("unknown mode " + mode)
    s.close()

def server():
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(4)
    print("listening", flush=True)
    ls.settimeout(WAIT)
    s, _ = ls.accept()
    s.settimeout(HOLD)
    print("accepted", flush=True)
    if mode == "accept-close":
        s.close()
        return
    if mode == "accept-silent":
        hold(s)
    elif mode == "sync-then-silent":
        # Answer the first 16 bytes as an upstream server's sync would,
        # then take data and never answer.
        recv_exact(s, 16)
        s.sendall(bytes(16))
        hold(s)
    elif mode == "ack-then-silent":
        assert recv_exact(s, 16) == HELLO
        s.sendall(ACK)
        hdr = recv_exact(s, 16)
        n = struct.unpack(">H", hdr[8:10])[0]
        recv_exact(s, 16 * n)
        s.sendall(b"EVPR" + struct.pack(">II", 0, 1 << 30) + bytes(4))
        print("accepted the plan", flush=True)
        hold(s)
    elif mode == "reject":
        assert recv_exact(s, 16) == HELLO
        s.sendall(ACK)
        hdr = recv_exact(s, 16)
        n = struct.unpack(">H", hdr[8:10])[0]
        recv_exact(s, 16 * n)
        s.sendall(b"EVPR" + struct.pack(">II", 3, 1 << 20) + bytes(4))
        hold(s)
    elif mode == "verify-bad":
        # An upstream -T v server (its counter starts at 0) that gets
        # byte BADAT of what it sends back wrong.
        size, count, iters, badat = map(int, args)
        ctr = 0
        def pattern(n):
            nonlocal ctr
            b = bytes((ctr + i) & 255 for i in range(n))
            ctr = (ctr + n) & 255
            return b
        recv_exact(s, 16)
        out = bytearray(pattern(16))
        if badat < 16:
            out[badat] ^= 0xff
        s.sendall(bytes(out))
        sent = 16
        for _ in range(iters):
            recv_exact(s, size * count)
            out = bytearray(pattern(size * count))
            if sent <= badat < sent + len(out):
                out[badat - sent] ^= 0xff
            s.sendall(bytes(out))
            sent += len(out)
        hold(s)
    else:
        sys.exit("unknown mode " + mode)
    s.close()

try:
    if mode in ("silent", "silent-many", "garbage", "close", "hello-close",
                "hello-badplan", "hello-reject", "complete-hold", "extra"):
        client()
    else:
        server()
except (EOFError, OSError) as e:
    print("fake:", e, flush=True)
PYEOF

# Start a fake peer in the background (see fake.py's modes above).
fake_start() { # NAME SECS MODE PORT [ARGS...]
	local name=$1 secs=$2
	shift 2
	FAKE_WAIT=${FAKE_WAIT:-$(tscale "${FAKE_HOLD:-15}")} \
		bg_start "$name" "$secs" python3 -u "$E2E_TMP/fake.py" "$@"
}

# ------------------------------------------------------------ valgrind mode

if [ "$E2E_VG" = 1 ]; then
	if [ "$E2E_SAN" = yes ]; then
		e2e_skip_all "E2E_VALGRIND=1 in the ASan+UBSan build: valgrind cannot run ASan binaries (use a build without --enable-sanitizers)"
	fi
	command -v valgrind >/dev/null 2>&1 ||
		e2e_skip_all "E2E_VALGRIND=1 but valgrind is not installed"
	# shellcheck source=vgmode.sh
	. "$(dirname "${BASH_SOURCE[0]}")/vgmode.sh"
	vg_mode_setup "$E2E_TMP" || exit 99
	say "E2E_VALGRIND=1: rstream, mckey, evrdma-probed and embed run under valgrind memcheck; time scale x$E2E_TIME_SCALE"
fi

# ------------------------------------------------------ as another user

# e2e_user_bins VAR...: copies of the programs $VAR names (RSTREAM, MCKEY,
# PROBED: programs that load no library of the build tree) that another
# user (nobody, by setpriv) can run wherever the build tree is: a clone
# under a directory only root may enter (/root, a mktemp -d) is out of
# that user's reach, and so is $E2E_TMP.  They go to E2E_USER_DIR, a
# directory of the script's own under /tmp, mode 755, removed when the
# script exits; USER_VAR (USER_RSTREAM, ...) names each copy.  With
# E2E_VALGRIND=1 the copy is of the real program and USER_VAR a wrapper
# beside it (vgmode.sh's), whose logs go to E2E_USER_DIR/valgrind, which
# anyone may write and report_check reads.  (setpriv itself can start a
# program in the build tree: it execs while it still holds root's
# capabilities.  A wrapper's valgrind cannot, nor a shell run by su.
# The normal build's runs use the copies too, the same way in each pass.)
e2e_user_bins() { # VAR...
	local var real name
	if [ -z "${E2E_USER_DIR:-}" ]; then
		E2E_USER_DIR=$(mktemp -d /tmp/e2e-user-"$E2E_NAME".XXXXXX) &&
			chmod 755 "$E2E_USER_DIR" || return 1
		if [ "$E2E_VG" = 1 ]; then
			mkdir "$E2E_USER_DIR/valgrind" "$E2E_USER_DIR/real" &&
				chmod 1777 "$E2E_USER_DIR/valgrind" &&
				chmod 755 "$E2E_USER_DIR/real" || return 1
		fi
	fi
	for var in "$@"; do
		real=${!var}
		name=VG_REAL_$var
		real=${!name:-$real}
		name=${real##*/}
		if [ "$E2E_VG" = 1 ]; then
			cp "$real" "$E2E_USER_DIR/real/$name" &&
				chmod 755 "$E2E_USER_DIR/real/$name" &&
				vg_mode_wrap "$E2E_USER_DIR/$name" "$E2E_USER_DIR/real/$name" \
					"$E2E_USER_DIR/valgrind" || return 1
		else
			cp "$real" "$E2E_USER_DIR/$name" &&
				chmod 755 "$E2E_USER_DIR/$name" || return 1
		fi
		printf -v "USER_$var" '%s' "$E2E_USER_DIR/$name"
	done
}
