#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Every rstream and mckey example of README.md, doc/*.md and the man pages
# (man/*.1, man/*.8), run as written.  Examples are the command lines in
# the Markdown files' fenced code blocks and in the man pages' .nf/.fi blocks whose
# first word is rstream or mckey (build/ in front or not); a line that ends
# in | or \ goes on with the next one, and a # comment is dropped.
#
# rstream over TCP (-T s):
#   - a client (-s) runs against a plain server this script starts for it
#     (rstream -T s -T a, --json when the client's output is JSON): exit 0,
#     nothing on stderr, sane rows (the table as upstream prints it, or
#     JSON results), and the server ran exactly the client's plan: its
#     rows are the client's (name, bytes, xfers, iters), N times for -c N,
#     and it dropped no connection.  That is how a -T v example that does
#     not send its plan shows: the server ran its own 64-byte series.
#   - a server (no -s) runs as written and serves one custom test
#     (-S 1000 -C 10 -I 10): the client passes, the server prints that
#     test's row (or result record), and exits 0 on SIGTERM.
# What is changed, and only this:
#   - a port: any -p is replaced, and one added, with a free port;
#   - -s HOST, host, SERVER or server becomes 127.0.0.1 (127.0.0.1 stays;
#     any other address fails: an example must run on one host);
#   - unless DOCEX_FULL=1 (which runs every example exactly as written):
#     -D SEC becomes -D 0.1, and a client that runs a default series or
#     -S all without -D or -T v gets -D 0.01, so the same tests, rows and
#     plan are checked in about 3 s per default run and 30-55 s for
#     -S all (as written: 12 s and 100 s);
#   - an example that is the same command as an earlier one (README, a
#     doc/*.md or a man page) runs once; the second is reported as covered.
#   With E2E_VALGRIND=1 (make check-valgrind) the -S all example is skipped,
#   saying so: its gigabytes take memcheck far too long.
# RDMA examples (rstream without -T s, -f gid; mckey without --udp) are
# listed as skipped, with the reason.  mckey --udp examples run inside a
# network namespace this script creates (root only; otherwise each is
# skipped with the reason), their -b address on its lo: a receiver example
# gets a sender (mckey --udp -s, same group and address) once it has
# joined, a sender example a receiver; both exit 0 and the example's
# output is sane (upstream's transcript, or JSON records).
# README.md's evrdma-probed example runs too: its configuration (on two
# free ports) passes --check-config, and the daemon started on it serves
# the probe up, as the curl line's comment says.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

R=$RSTREAM
M=${MCKEY:-}
T=$E2E_TMP
SRC=${E2E_SRCDIR:-$(dirname "$0")/../..}
FULL=${DOCEX_FULL:-0}
H=127.0.0.1

[ -r "$SRC/README.md" ] || e2e_skip_all "no README.md under $SRC"
command -v jq >/dev/null 2>&1 ||
	e2e_skip_all "jq is not installed (the documentation's examples pipe into it)"

# ------------------------------------------------------------ the helper

cat >"$T/docex.py" <<'PYEOF'
import json, re, sys

PROG = re.compile(r'^(?:\./)?(?:build/)?(rstream|mckey)(?:\s|$)')


def unroff(s):
    for a, b in (('\\-', '-'), ('\\(dq', '"'), ('\\(aq', "'"),
                 ('\\&', ''), ('\\e', '\\')):
        s = s.replace(a, b)
    return s


def strip_comment(s):
    """Drop a # comment: a # that starts a word outside quotes."""
    q = None
    for i, ch in enumerate(s):
        if q:
            if ch == q:
                q = None
        elif ch in '\'"':
            q = ch
        elif ch == '#' and (i == 0 or s[i - 1] in ' \t'):
            return s[:i].rstrip()
    return s.rstrip()


def lines_md(path):
    inb = False
    for n, l in enumerate(open(path, encoding='utf-8'), 1):
        if l.startswith('```'):
            inb = not inb
            continue
        if inb:
            yield n, l.rstrip('\n')


def lines_man(path):
    inb = False
    for n, l in enumerate(open(path, encoding='utf-8'), 1):
        l = l.rstrip('\n')
        if l.startswith('.nf'):
            inb = True
        elif l.startswith('.fi'):
            inb = False
        elif inb and not l.startswith('.'):
            yield n, unroff(l)


def extract(root, files):
    for rel in files:
        src = lines_md if rel.endswith('.md') else lines_man
        cur = None
        for n, l in src(root + '/' + rel):
            s = strip_comment(l.strip())
            if cur is not None:
                cur[1] += ' ' + s
            elif PROG.match(s):
                cur = [n, s]
            else:
                continue
            if cur[1].endswith('\\'):
                cur[1] = cur[1][:-1].rstrip()
                continue
            if cur[1].endswith('|'):
                continue
            print('%s:%d\t%s' % (rel, cur[0], cur[1]))
            cur = None


ROW = re.compile(r'^[^ ]+ +[0-9.]+[kmg]? +[0-9]+[kmb]? +[0-9]+[kmb]? +'
                 r'[0-9.]+[kmg]? +[0-9]+\.[0-9]{2}s +[0-9]+\.[0-9]{2} +'
                 r'[0-9]+\.[0-9]{2}(  client [^ ]+)?$')


def rows(mode, path):
    """The results in a file as (name, bytes, xfers, iters) keys, and
    why a result is not sane, if one is not."""
    keys, bad = [], []
    for l in open(path, encoding='utf-8', errors='replace'):
        l = l.rstrip('\n')
        if mode == 'table':
            if not ROW.match(l):
                continue
            w = l.split()
            if '#' in w[0]:
                continue        # --per-conn rows: the aggregate counts
            if float(w[7]) <= 0:
                bad.append('usec/xfer not > 0: ' + l)
            keys.append(' '.join(w[:4]))
        elif mode == 'names':
            if not l.strip():
                continue
            w = l.split()
            try:
                if len(w) != 2 or float(w[1]) <= 0:
                    raise ValueError
            except ValueError:
                bad.append('not "test gbps": ' + l)
            keys.append(w[0])
        else:
            try:
                r = json.loads(l)
            except ValueError:
                bad.append('not JSON: ' + l)
                continue
            if r.get('type') != 'result':
                continue
            if not (r.get('gbps', 0) > 0 and r.get('usec_per_xfer', 0) > 0):
                bad.append('gbps or usec_per_xfer not > 0: ' + l)
            keys.append('%s %s %s %s' % (r['test'], r['bytes_per_xfer'],
                                         r['xfers_per_iter'], r['iters']))
    return keys, bad


def compare(mode, nconn, client, server):
    """ok N, or why not: the client's results are sane and the server's
    are the same tests, each nconn times, in the same order."""
    c, cbad = rows(mode, client)
    s, sbad = rows('json' if mode in ('json', 'names') else 'table', server)
    if cbad or sbad:
        print('insane result: ' + (cbad + sbad)[0])
        return
    if not c:
        print('the client printed no result')
        return
    if mode == 'names':
        s = [k.split()[0] for k in s]
    want = [k for k in c for _ in range(nconn)]
    if nconn > 1:
        ok = sorted(s) == sorted(want)
    else:
        ok = s == want
    if not ok:
        print('the server ran %s, the client reported %s'
              % (s[:6] or 'nothing', c[:6]))
        return
    print('ok %d' % len(c))


def sane_json(path, want_type):
    """Every line JSON; at least one record of want_type ("" = any)."""
    n = 0
    for l in open(path, encoding='utf-8', errors='replace'):
        try:
            r = json.loads(l)
        except ValueError:
            print('not JSON: ' + l.rstrip('\n'))
            return
        if not want_type or r.get('type') == want_type:
            n += 1
    print('ok %d' % n if n else 'no %s record' % (want_type or 'JSON'))


cmd = sys.argv[1]
if cmd == 'extract':
    extract(sys.argv[2], sys.argv[3:])
elif cmd == 'compare':
    compare(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5])
elif cmd == 'sane_json':
    sane_json(sys.argv[2], sys.argv[3])
PYEOF
docex() { python3 "$T/docex.py" "$@"; }

# ------------------------------------------------------------ rstream

# Parse an rstream example (the words before any |) into the globals
# below, and build the command line to run in RUN_CMD.
declare -a WORDS
rs_prepare() { # PORT CMD
	local port=$1 cmd=$2 w i n host
	local -a out
	PIPE_REST=
	case $cmd in *'|'*) PIPE_REST="|${cmd#*|}" ;; esac
	read -ra WORDS <<<"${cmd%%|*}"
	IS_TCP=0 IS_CLIENT=0 VERIFY=0 JSON=0 DUR=0 CUSTOM=0 SIZE_ALL=0 GID=0
	NCONN=1 BAD_HOST=
	out=("$R")
	n=${#WORDS[@]}
	for ((i = 1; i < n; i++)); do
		w=${WORDS[$i]}
		case $w in
		-T)
			case ${WORDS[$((i + 1))]:-} in
			s*) IS_TCP=1 ;;
			v*) VERIFY=1 ;;
			esac
			out+=("$w" "${WORDS[$((i + 1))]}")
			i=$((i + 1))
			;;
		-s)
			host=${WORDS[$((i + 1))]:-}
			case $host in
			127.0.0.1) ;;
			host | HOST | server | SERVER) host=$H ;;
			*) BAD_HOST=$host ;;
			esac
			IS_CLIENT=1
			out+=(-s "$host")
			i=$((i + 1))
			;;
		-p)
			i=$((i + 1)) # the test's port instead
			;;
		-D | --duration)
			DUR=1
			out+=("$w")
			if [ "$FULL" = 1 ]; then
				out+=("${WORDS[$((i + 1))]}")
			else
				out+=(0.1)
			fi
			i=$((i + 1))
			;;
		-S)
			if [ "${WORDS[$((i + 1))]:-}" = all ]; then
				SIZE_ALL=1
			else
				CUSTOM=1
			fi
			out+=("$w" "${WORDS[$((i + 1))]}")
			i=$((i + 1))
			;;
		-C | -I)
			CUSTOM=1
			out+=("$w" "${WORDS[$((i + 1))]}")
			i=$((i + 1))
			;;
		-c | --connections)
			NCONN=${WORDS[$((i + 1))]}
			out+=("$w" "$NCONN")
			i=$((i + 1))
			;;
		-f)
			[ "${WORDS[$((i + 1))]:-}" = gid ] && GID=1
			out+=("$w" "${WORDS[$((i + 1))]}")
			i=$((i + 1))
			;;
		--json)
			JSON=1
			out+=("$w")
			;;
		*)
			out+=("$w")
			;;
		esac
	done
	out+=(-p "$port")
	SHRUNK=0
	if [ "$FULL" != 1 ] && [ "$IS_CLIENT" = 1 ] && [ "$DUR" = 0 ] &&
		[ "$VERIFY" = 0 ] && [ "$CUSTOM" = 0 ]; then
		out+=(-D 0.01) # a default series or -S all, shortened
		SHRUNK=1
	fi
	RUN_CMD=$(printf '%q ' "${out[@]}")$PIPE_REST
	# the same example, wherever it is written: without the port
	KEY=$(printf '%s ' "${out[@]:1}" | sed -E "s/ -p $port / /")$PIPE_REST
	OUT_MODE=table
	if [ "$JSON" = 1 ]; then
		OUT_MODE=json
		case $PIPE_REST in *'jq -r'*) OUT_MODE=names ;; esac
	fi
}

declare -A SEEN=()

rs_example() { # WHERE CMD
	local where=$1 cmd=$2 port srv_json=() res
	port=$(e2e_port) || return
	rs_prepare "$port" "$cmd"
	if [ "$IS_TCP" = 0 ]; then
		skip "$where: $cmd -- RDMA (no -T s): needs an RDMA device; the Soft-RoCE suite (tests/rxe) runs rstream over RDMA"
		return
	fi
	if [ "$GID" = 1 ]; then
		skip "$where: $cmd -- -f gid is RDMA only"
		return
	fi
	if [ -n "$BAD_HOST" ]; then
		not_ok "$where: $cmd" "names host '$BAD_HOST': an example must run on one host (127.0.0.1 or a HOST placeholder)"
		return
	fi
	if [ -n "${SEEN[$KEY]:-}" ]; then
		ok "$where: $cmd -- the same example as ${SEEN[$KEY]}, run there"
		return
	fi
	SEEN[$KEY]=$where
	if [ "$SIZE_ALL" = 1 ] && [ "$E2E_VG" = 1 ] && [ "$FULL" != 1 ]; then
		skip "$where: $cmd -- with E2E_VALGRIND=1: -S all moves gigabytes, far too slow under memcheck; the normal and ASan runs of this script run it"
		return
	fi
	local tag=ex$((${#SEEN[@]}))
	say "$where: $cmd"
	if [ "$SHRUNK" = 1 ]; then
		say "  runs: $RUN_CMD (shortened: -D 0.01 added)"
	else
		say "  runs: $RUN_CMD"
	fi
	if [ "$IS_CLIENT" = 1 ]; then
		[ "$OUT_MODE" != table ] && srv_json=(--json)
		start_server "${tag}_s" "$port" "$R" -T s -T a -p "$port" "${srv_json[@]}" || return
		run_cmd "${tag}_c" "$E2E_RUN_SECS" bash -o pipefail -c "$RUN_CMD"
		assert_exit "$where: exit 0" 0 "$RC" "$T/${tag}_c.out" "$T/${tag}_c.err" "$T/${tag}_s.err"
		say "  took $ELAPSED_MS ms"
		assert_no_match "$where: no error or warning on stderr" '^rstream: ' "$T/${tag}_c.err"
		if [ "$OUT_MODE" = table ]; then
			# (--per-conn rows, named test#K, are evrdma's own)
			local row bad='' nrows=0
			while IFS= read -r row; do
				nrows=$((nrows + 1))
				row_reformats "$row" || bad=$row
			done < <(grep -E -- "$E2E_ANY_ROW" "$T/${tag}_c.out" | grep -v '^[^ ]*#')
			if [ "$nrows" -gt 0 ] && [ -z "$bad" ]; then
				ok "$where: $nrows rows as upstream prints them"
			else
				not_ok "$where: rows as upstream prints them" "$nrows rows; misformatted: '$bad'"
				dump "$T/${tag}_c.out"
			fi
		fi
		# the server prints each row as that connection's test ends,
		# which may be a moment after the client's: wait (bounded)
		local end=$(( $(now_ms) + $(tscale 5) * 1000 ))
		while :; do
			res=$(docex compare "$OUT_MODE" "$NCONN" "$T/${tag}_c.out" "$T/${tag}_s.out")
			case $res in ok\ *) break ;; esac
			[ "$(now_ms)" -lt "$end" ] || break
			sleep 0.1
		done
		bg_stop "${tag}_s" 5
		assert_exit "$where: the server exits 0 on SIGTERM" 0 "$RC" "$T/${tag}_s.err"
		case $res in
		ok\ *) ok "$where: sane results, and the server ran the client's plan (${res#ok } tests${NCONN:+, $NCONN connection(s)})" ;;
		*)
			not_ok "$where: sane results, and the server ran the client's plan" "$res"
			dump "$T/${tag}_c.out" "$T/${tag}_s.out"
			;;
		esac
		assert_empty "$where: the server dropped no connection" "$T/${tag}_s.err"
	else
		start_server "${tag}_s" "$port" bash -c "exec $RUN_CMD" || return
		run_cmd "${tag}_c" 30 "$R" -T s -s $H -p "$port" -S 1000 -C 10 -I 10
		assert_exit "$where: serves a custom test" 0 "$RC" "$T/${tag}_c.err" "$T/${tag}_s.err"
		sleep 0.2
		bg_stop "${tag}_s" 5
		assert_exit "$where: exits 0 on SIGTERM" 0 "$RC" "$T/${tag}_s.err"
		if [ "$JSON" = 1 ]; then
			assert_eq "$where: JSON records, one result" "ok 1" \
				"$(docex sane_json "$T/${tag}_s.out" result)"
			[[ " ${WORDS[*]} " == *" --settings "* ]] &&
				assert_match "$where: --settings: a settings record" \
					'^\{"type":"settings",' "$T/${tag}_s.out"
			assert_match "$where: its result is the client's test" \
				'"test":"custom".*"bytes_per_xfer":1000,"xfers_per_iter":10,"iters":10,' \
				"$T/${tag}_s.out"
		else
			check_row "$T/${tag}_s.out" custom 1000 10 10 195k 1 "$where: the server's row"
		fi
		assert_empty "$where: nothing on stderr" "$T/${tag}_s.err"
	fi
}

# -------------------------------------------------------------- mckey

NS=
NS_ADDRS=" "
mk_netns() {
	[ -n "$NS" ] && return 0
	[ "$(id -u)" = 0 ] || return 1
	command -v ip >/dev/null 2>&1 || return 1
	NS=evdoc-$$
	if ! ip netns add "$NS" 2>"$T/netns.err"; then
		NS=
		return 1
	fi
	trap 'ip netns del "$NS" 2>/dev/null; e2e_cleanup' EXIT
	if ! { ip -n "$NS" link set lo up &&
		ip -n "$NS" link set lo multicast on &&
		ip -n "$NS" route add 224.0.0.0/4 dev lo; } 2>"$T/netns.err"; then
		not_ok "network namespace setup" "$(cat "$T/netns.err")"
		ip netns del "$NS" 2>/dev/null
		NS=
		return 1
	fi
}

mk_example() { # WHERE CMD
	local where=$1 cmd=$2 rest='' group='' addr='' sender=0 udp=0 w i n tag
	local -a words out
	case $cmd in *'|'*) rest="|${cmd#*|}" ;; esac
	read -ra words <<<"${cmd%%|*}"
	n=${#words[@]}
	out=("$M")
	for ((i = 1; i < n; i++)); do
		w=${words[$i]}
		case $w in
		-m) group=${words[$((i + 1))]} ;;
		-b) addr=${words[$((i + 1))]} ;;
		-s) sender=1 ;;
		--udp) udp=1 ;;
		esac
		out+=("$w")
	done
	if [ "$udp" = 0 ]; then
		skip "$where: $cmd -- RDMA CM multicast (no --udp): needs an RDMA device; the Soft-RoCE suite (tests/rxe) runs mckey over RDMA"
		return
	fi
	if [ -z "$M" ] || [ ! -x "$M" ]; then
		not_ok "$where: $cmd" "MCKEY is not set to an executable mckey"
		return
	fi
	if ! mk_netns; then
		skip "$where: $cmd -- mckey --udp runs only inside a network namespace of this script, which needs root (CAP_NET_ADMIN): NOT TESTED"
		return
	fi
	if [ -n "${SEEN[$cmd]:-}" ]; then
		ok "$where: $cmd -- the same example as ${SEEN[$cmd]}, run there"
		return
	fi
	SEEN[$cmd]=$where
	tag=mk$((${#SEEN[@]}))
	case $NS_ADDRS in
	*" $addr "*) ;;
	*)
		ip -n "$NS" addr add "$addr/32" dev lo 2>"$T/addr.err" ||
			{ not_ok "$where: $addr on the namespace's lo" "$(cat "$T/addr.err")"; return; }
		NS_ADDRS="$NS_ADDRS$addr "
		;;
	esac
	say "$where: $cmd (in network namespace $NS)"
	local peer=("$M" -m "$group" -b "$addr" --udp --settle 0.2)
	[ "$sender" = 0 ] && peer+=(-s)
	local run_x=(ip netns exec "$NS" bash -o pipefail -c "$(printf '%q ' "${out[@]}")$rest")
	# the receiver first, the sender once it has joined (the group is
	# then on the namespace's lo)
	if [ "$sender" = 0 ]; then
		bg_start "${tag}_x" 60 "${run_x[@]}"
	else
		bg_start "${tag}_peer" 60 ip netns exec "$NS" "${peer[@]}"
	fi
	if ! wait_ns_group "$group"; then
		not_ok "$where: the receiver joined" "$group is not on the namespace's lo after $(tscale 5) s"
		dump "$T/${tag}_x.out" "$T/${tag}_x.err" "$T/${tag}_peer.out" "$T/${tag}_peer.err"
		bg_kill "${tag}_x"
		bg_kill "${tag}_peer"
		return
	fi
	if [ "$sender" = 0 ]; then
		run_cmd "${tag}_peer" 30 ip netns exec "$NS" "${peer[@]}"
		assert_exit "$where: a sender for it (${peer[*]:1})" 0 "$RC" "$T/${tag}_peer.out" "$T/${tag}_peer.err"
		bg_wait "${tag}_x" 20
		assert_exit "$where: exit 0" 0 "$RC" "$T/${tag}_x.out" "$T/${tag}_x.err"
	else
		run_cmd "${tag}_x" 30 "${run_x[@]}"
		assert_exit "$where: exit 0" 0 "$RC" "$T/${tag}_x.out" "$T/${tag}_x.err"
		bg_wait "${tag}_peer" 20
		assert_exit "$where: its receiver (${peer[*]:1})" 0 "$RC" "$T/${tag}_peer.out" "$T/${tag}_peer.err"
	fi
	if [[ " ${words[*]} " == *" --json "* ]]; then
		local want=
		[ -z "$rest" ] && want=summary
		[[ $rest == *sender_stats* ]] && want=sender_stats
		local res
		res=$(docex sane_json "$T/${tag}_x.out" "$want")
		case $res in
		ok\ *) ok "$where: JSON records (${want:-any}: ${res#ok })" ;;
		*) not_ok "$where: JSON records" "$res"; dump "$T/${tag}_x.out" ;;
		esac
	else
		assert_match "$where: upstream's transcript, all received" '^return status 0$' "$T/${tag}_x.out"
		if [[ " ${words[*]} " == *" --stats "* ]]; then
			assert_match "$where: per-sender statistics" \
				'^mckey: qp 0: sender [0-9a-f]{8}: 10 of 10, ' "$T/${tag}_x.out"
		fi
	fi
	assert_empty "$where: nothing on stderr" "$T/${tag}_x.err"
}

wait_ns_group() { # GROUP
	local end=$(( $(now_ms) + $(tscale 5) * 1000 ))
	while [ "$(now_ms)" -lt "$end" ]; do
		ip -n "$NS" maddr show dev lo 2>/dev/null |
			awk -v g="$1" '$1 == "inet" && $2 == g { f = 1 } END { exit !f }' &&
			return 0
		sleep 0.05
	done
	return 1
}

# ------------------------------------------------------------- the run

FILES=(README.md)
for f in "$SRC"/doc/*.md; do
	[ -e "$f" ] && FILES+=("doc/${f##*/}")
done
for f in "$SRC"/man/*.1 "$SRC"/man/*.8; do
	[ -e "$f" ] && FILES+=("man/${f##*/}")
done
docex extract "$SRC" "${FILES[@]}" >"$T/examples.tsv"
say "$(wc -l <"$T/examples.tsv") examples in ${FILES[*]}$([ "$FULL" = 1 ] && echo ', DOCEX_FULL=1: all as written')"
while IFS=$'\t' read -r where cmd; do
	case $cmd in
	*rstream*) rs_example "$where" "$cmd" </dev/null ;;
	*) mk_example "$where" "$cmd" </dev/null ;;
	esac
done <"$T/examples.tsv"
# README.md's evrdma-probed example ("First steps"): its configuration
# passes --check-config, and the daemon started on it serves what the
# curl line's comment says.  Only the two ports change (free ones): a
# port the sed misses stays as written, and the daemon's responder or
# its HTTP server could then meet another program there.
awk '/^## First steps/ { f = 1; next } /^## / { f = 0 }
	f && /^```json$/ { j = 1; next } j && /^```$/ { exit } j' \
	"$SRC/README.md" >"$T/probed.json"
if [ ! -s "$T/probed.json" ]; then
	not_ok "README.md, First steps: the evrdma-probed configuration is there"
elif [ -z "${PROBED:-}" ] || [ ! -x "$PROBED" ]; then
	not_ok "PROBED names the built evrdma-probed"
elif ! command -v curl >/dev/null 2>&1; then
	skip "README.md's evrdma-probed example: curl is not installed"
else
	HP=$(e2e_port)
	RP=$(e2e_port)
	sed -i -e "s/\"listen_port\": 9471/\"listen_port\": $HP/" \
		-e "s/\"port\": 7481/\"port\": $RP/g" "$T/probed.json"
	assert_eq "README.md's evrdma-probed example: its ports 9471 and 7481, each replaced" \
		"3 0" "$(grep -c -E "\"(listen_)?port\": ($HP|$RP)," "$T/probed.json") $(grep -c -E '9471|7481' "$T/probed.json")"
	run_cmd probed_check 10 "$PROBED" --check-config -c "$T/probed.json"
	assert_exit "README.md's evrdma-probed example: --check-config" 0 "$RC" \
		"$T/probed.json" "$T/probed_check.err"
	assert_match "... one line, as its comment says: ok" '^evrdma-probed: .*: ok, ' "$T/probed_check.out"
	bg_start probed 60 "$PROBED" -c "$T/probed.json"
	want='evrdma_probe_up{probe="lo-tcp"} 1'
	up=
	end=$(( $(now_ms) + $(tscale 10) * 1000 ))
	while [ "$(now_ms)" -lt "$end" ]; do
		up=$(curl -s --max-time "$(tscale 2)" "http://$H:$HP/metrics" |
			grep '^evrdma_probe_up')
		[ "$up" = "$want" ] && break
		sleep 0.2
	done
	assert_eq "README.md's evrdma-probed example: the curl line's $want" "$want" "$up"
	bg_stop probed
	assert_exit "... and SIGTERM stops it" 0 "$RC" "$T/probed.err"
fi
# the extraction itself: a documentation or man page reshuffle that hid the
# examples from it would otherwise pass with nothing run
num=$(grep -c -- '-T s' "$T/examples.tsv")
num_docs=$(grep -c -E '^(README\.md|doc/[^:]*\.md):.*-T s' "$T/examples.tsv")
num_man=$(grep -c '^man/rstream\.1:.*-T s' "$T/examples.tsv")
if [ "$num_docs" -ge 5 ] && [ "$num_man" -ge 5 ]; then
	ok "found $num rstream TCP examples ($num_docs in README.md and doc/*.md, $num_man in rstream.1)"
else
	not_ok "found the rstream TCP examples" "README.md and doc/*.md: $num_docs, rstream.1: $num_man"
fi
[ -n "$NS" ] && ip netns del "$NS" 2>/dev/null

e2e_done
