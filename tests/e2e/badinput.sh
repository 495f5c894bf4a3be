#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Bad options and values, unresolvable names, refused connections, a port
# in use, and no RDMA device: the documented exit status and message, at
# once, never a hang.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

R=$RSTREAM
# the program names itself by argv[0]: under E2E_VALGRIND=1, valgrind runs
# the real program (not the wrapper $R points at) by its own path
ARGV0=${VG_REAL_RSTREAM:-$R}
H=127.0.0.1
T=$E2E_TMP
n=0

# ---- unknown option / bad -T: upstream's usage on stdout, exit 1
if [ -x "$UPSTREAM" ]; then
	timeout 5 "$UPSTREAM" -x 2>/dev/null | sed 1d >"$T/up_usage"
else
	: >"$T/up_usage"
fi
for args in "-x" "-T zz" "-T bl" "-T" "-T s -T sock" "--bogus"; do
	n=$((n + 1))
	# shellcheck disable=SC2086
	run_cmd "use$n" 10 "$R" $args
	assert_exit "'rstream $args': exit 1" 1 "$RC" "$T/use$n.out" "$T/use$n.err"
	assert_eq "'rstream $args': usage on stdout" "usage: $ARGV0" "$(head -1 "$T/use$n.out")"
	assert_match "'rstream $args': usage lists the -T options" \
		'^	    v\|verify - verify data$' "$T/use$n.out"
	case $args in
	"-T "?*)
		bad=${args##* }
		assert_lines "'rstream $args': one line on stderr naming '$bad'" 1 \
			"$T/use$n.err" "^rstream: invalid value '$bad' for -T: " ;;
	esac
	if [ -s "$T/up_usage" ]; then
		if sed 1d "$T/use$n.out" | cmp -s - "$T/up_usage"; then
			ok "'rstream $args': usage text is upstream's, line for line"
		else
			not_ok "'rstream $args': usage text is upstream's, line for line" \
				"$(sed 1d "$T/use$n.out" | diff - "$T/up_usage" | head -5 | tr '\n' '|')"
		fi
	fi
done

# ---- bad values: one line on stderr naming the option, nothing on stdout
bad_value() { # OPTION-NAME-IN-MESSAGE ARGS...
	local opt=$1 d
	shift
	n=$((n + 1))
	d="'rstream $*'"
	run_cmd "bad$n" 10 "$R" "$@"
	assert_exit "$d: exit 1" 1 "$RC" "$T/bad$n.out" "$T/bad$n.err"
	assert_empty "$d: nothing on stdout" "$T/bad$n.out"
	assert_lines "$d: one line on stderr" 1 "$T/bad$n.err"
	assert_match "$d: the line names $opt" "^rstream: .*$(ere_quote "$opt")" \
		"$T/bad$n.err"
}
bad_value "-S" -T s -S 0
bad_value "-S" -T s -s $H -S -5
bad_value "-S" -T s -s $H -S 99999999999
bad_value "-S" -T s -S 2g
bad_value "-C" -T s -s $H -C 0
bad_value "-C" -T s -C abc
bad_value "-I" -T s -s $H -I 0
bad_value "-I" -T s -I abc
bad_value "-I" -T s -I 10x
bad_value "-p" -T s -p 70000
bad_value "-p" -T s -s $H -p 0
bad_value "-p" -T s -s $H -p -1
bad_value "-p" -T s -p -65536
bad_value "-k" -T s -k -1
bad_value "-f" -T s -f xyz
bad_value "-B" -T s -B -1
bad_value "--stall-timeout" -T s --stall-timeout 0
bad_value "--stall-timeout" -T s -s $H --stall-timeout abc
bad_value "--negotiate" -T s -s $H --negotiate --no-negotiate
bad_value "extra" -T s -s $H extra

# ---- the long -T words are compared on their leading characters, as
# upstream's: these parse (and then find nobody listening: exit 3)
P=$(e2e_port)
run_cmd words 10 "$R" -T SOCKETS -T Async -T verify -T nonblocking -s $H -p "$P"
assert_exit "-T SOCKETS -T Async -T verify -T nonblocking parse" 3 "$RC" \
	"$T/words.out" "$T/words.err"

# ---- --help and --version
run_cmd help 10 "$R" --help
assert_exit "--help: exit 0" 0 "$RC"
assert_eq "--help: usage first" "usage: $ARGV0" "$(head -1 "$T/help.out")"
assert_match "--help: lists --stall-timeout" '--stall-timeout' "$T/help.out"
run_cmd version 10 "$R" --version
assert_exit "--version: exit 0" 0 "$RC"
assert_match "--version: names evrdma" '^rstream \(evrdma\) [0-9]' "$T/version.out"

# ---- unresolvable host: exit 2, one line with the resolver's own reason
run_cmd noname 20 "$R" -T s -s nonexistent.invalid -p 7471
gai=$(python3 -c '
import socket, sys
try:
    socket.getaddrinfo("nonexistent.invalid", 7471, type=socket.SOCK_STREAM)
    print("resolved?")
except socket.gaierror as e:
    print(e.strerror)' 2>/dev/null)
assert_exit "unresolvable host: exit 2" 2 "$RC" "$T/noname.out" "$T/noname.err"
assert_le "unresolvable host: fails quickly (ms)" "$ELAPSED_MS" "$(tscale 10000)"
assert_lines "unresolvable host: one line on stderr" 1 "$T/noname.err"
assert_match "unresolvable host: names the host and the resolver's reason ($gai)" \
	"^rstream: .*nonexistent\\.invalid.*: $(ere_quote "$gai")\$" "$T/noname.err"
assert_no_match "unresolvable host: no stray errno text" \
	'No such file or directory' "$T/noname.err"
run_cmd nobind 20 "$R" -T s -s $H -p 7471 -b nonexistent.invalid
assert_exit "unresolvable client -b: exit 2" 2 "$RC" "$T/nobind.err"
assert_lines "unresolvable client -b: one line" 1 "$T/nobind.err"
P=$(e2e_port)
run_cmd nosrvb 20 "$R" -T s -p "$P" -b nonexistent.invalid
assert_exit "unresolvable server -b: exit 2" 2 "$RC" "$T/nosrvb.err"
assert_empty "unresolvable server -b: no header" "$T/nosrvb.out"

# ---- connection refused: exit 3 at once
P=$(e2e_port)
run_cmd refused 10 "$R" -T s -s $H -p "$P"
assert_exit "connection refused: exit 3" 3 "$RC" "$T/refused.out" "$T/refused.err"
assert_le "connection refused: fails within 2 s (ms)" "$ELAPSED_MS" "$(tscale 2000)"
assert_lines "connection refused: one line on stderr" 1 "$T/refused.err"
assert_match "connection refused: says so" '^rstream: .*Connection refused$' \
	"$T/refused.err"
for m in a b ab; do
	case $m in a) f="-T a" ;; b) f="-T b" ;; ab) f="-T a -T b" ;; esac
	# shellcheck disable=SC2086
	run_cmd "refused_$m" 10 "$R" -T s $f -s $H -p "$P"
	assert_exit "connection refused with $f: exit 3" 3 "$RC" "$T/refused_$m.err"
	assert_le "connection refused with $f: within 2 s (ms)" "$ELAPSED_MS" "$(tscale 2000)"
done
run_cmd refused6 10 "$R" -T s -s ::1 -p "$P"
assert_exit "connection refused on ::1: exit 3" 3 "$RC" "$T/refused6.err"

# ---- a connect that gets no answer (the listener's accept queue is full,
# so the kernel drops our SYN): exit 3 after the stall timeout
P=$(e2e_port)
cat >"$T/full.py" <<'PYEOF'
import socket, sys, time
port = int(sys.argv[1])
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", port))
ls.listen(0)
cs = []
for i in range(3):
    c = socket.socket()
    c.setblocking(False)
    try:
        c.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    cs.append(c)
time.sleep(0.3)
print("full", flush=True)
time.sleep(float(sys.argv[2]))
PYEOF
bg_start full 30 python3 "$T/full.py" "$P" 15
if wait_match "$T/full.out" full 5; then
	run_cmd noanswer 15 "$R" -T s -s $H -p "$P" --stall-timeout 2 -S 100 -C 10
	assert_exit "connect without an answer: exit 3" 3 "$RC" "$T/noanswer.err"
	assert_le "connect without an answer: after about the stall timeout (ms)" \
		"$ELAPSED_MS" "$(tscale 4000)"
	assert_le "connect without an answer: not before the stall timeout (ms)" \
		1900 "$ELAPSED_MS"
	assert_lines "connect without an answer: one line" 1 "$T/noanswer.err"
	assert_match "connect without an answer: says so" \
		'^rstream: 127\.0\.0\.1:[0-9]+: connect: .*stall timeout' "$T/noanswer.err"
else
	not_ok "connect without an answer: the full listener is ready"
fi
bg_kill full

# ---- port in use: the server exits 5 (the first server is unharmed)
P=$(e2e_port)
if start_server holder "$P" "$R" -T s -p "$P"; then
	run_cmd inuse 10 "$R" -T s -p "$P"
	assert_exit "port in use: server exit 5" 5 "$RC" "$T/inuse.out" "$T/inuse.err"
	assert_le "port in use: at once (ms)" "$ELAPSED_MS" "$(tscale 3000)"
	assert_lines "port in use: one line on stderr" 1 "$T/inuse.err"
	assert_match "port in use: names bind, the address and port, the reason" \
		"^rstream: bind \\[::\\]:$P: Address already in use$" "$T/inuse.err"
	assert_empty "port in use: no header (never listened)" "$T/inuse.out"
	run_cmd inuse_c 20 "$R" -T s -s $H -p "$P" -S 100 -C 10
	assert_exit "port in use: the first server still serves" 0 "$RC" "$T/inuse_c.err"
	bg_stop holder 5
	assert_exit "port in use: first server SIGTERM" 0 "$RC"
fi

# ---- an address that is not ours to bind: a local error, exit 5
# (192.0.2.1 is TEST-NET-1; bind fails before anything is sent)
P=$(e2e_port)
run_cmd nobindc 10 "$R" -T s -s $H -p "$P" -b 192.0.2.1
assert_exit "client -b with a foreign address: exit 5" 5 "$RC" "$T/nobindc.err"
assert_match "client -b with a foreign address: names bind and the address" \
	'^rstream: bind 192\.0\.2\.1: Cannot assign requested address$' "$T/nobindc.err"
# -s and -b of different families: said, with both addresses
run_cmd fam46 10 "$R" -T s -s $H -p "$P" -b ::1
assert_exit "-s IPv4 with -b IPv6: exit 5" 5 "$RC" "$T/fam46.err"
assert_lines "-s IPv4 with -b IPv6: one line naming both families" 1 "$T/fam46.err" \
	"^rstream: bind ::1 \\(IPv6\\) for 127\\.0\\.0\\.1:$P \\(IPv4\\): Address family not supported by protocol$"
run_cmd fam64 10 "$R" -T s -s ::1 -p "$P" -b $H
assert_exit "-s IPv6 with -b IPv4: exit 5" 5 "$RC" "$T/fam64.err"
assert_lines "-s IPv6 with -b IPv4: one line naming both families" 1 "$T/fam64.err" \
	"^rstream: bind 127\\.0\\.0\\.1 \\(IPv4\\) for \\[::1\\]:$P \\(IPv6\\): "
run_cmd nobinds 10 "$R" -T s -p "$P" -b 192.0.2.1
assert_exit "server -b with a foreign address: exit 5" 5 "$RC" "$T/nobinds.err"
assert_lines "server -b with a foreign address: one line" 1 "$T/nobinds.err"
assert_empty "server -b with a foreign address: no header" "$T/nobinds.out"

# ---- results that cannot be written: one line, a non-zero status
# (coreutils' rule), never a silent exit 0.  stdout is /dev/full (ENOSPC)
# or a pipe whose reader has gone (EPIPE: SIGPIPE is ignored).
P=$(e2e_port)
start_server wfull "$P" "$R" -T s -b $H -p "$P"
for json in "" "--json"; do
	n=$((n + 1))
	# shellcheck disable=SC2086
	timeout "$(tscale 20)" "$R" -T s -s $H -p "$P" -S 64 -C 1 -I 100 $json \
		>/dev/full 2>"$T/full$n.err"
	RC=$?
	assert_exit "rstream ${json:-(table)} >/dev/full: exit 5" 5 "$RC" "$T/full$n.err"
	assert_lines "rstream ${json:-(table)} >/dev/full: one line on stderr" 1 \
		"$T/full$n.err" '^rstream: write error on standard output'
done
# a reader that is gone before the table ends (the server is up: a
# default run prints for a second or more)
n=$((n + 1))
timeout "$(tscale 30)" "$R" -T s -s $H -p "$P" 2>"$T/pipe$n.err" | true
RC=${PIPESTATUS[0]}
assert_exit "rstream | (closed reader): exit 5" 5 "$RC" "$T/pipe$n.err"
assert_match "rstream | (closed reader): says so" \
	'^rstream: write error on standard output' "$T/pipe$n.err"
timeout 10 "$R" --version >/dev/full 2>"$T/verfull.err"
assert_exit "rstream --version >/dev/full: exit 5" 5 "$?" "$T/verfull.err"
bg_stop wfull
timeout 10 "$MCKEY" --help >/dev/full 2>"$T/mcfull.err"
assert_exit "mckey --help >/dev/full: exit 228 (-ENOSPC)" 228 "$?" "$T/mcfull.err"
assert_lines "mckey --help >/dev/full: one line on stderr" 1 "$T/mcfull.err" \
	'^mckey: write error on standard output'

# mckey, whose statuses are negative errnos: a --udp receiver on the
# loopback of a namespace of our own (multicast stays in there)
NSW=evbad-$$
if [ "$(id -u)" = 0 ] && ip netns add "$NSW" 2>/dev/null; then
	trap 'ip netns del "$NSW" 2>/dev/null; e2e_cleanup' EXIT
	ip -n "$NSW" link set lo up && ip -n "$NSW" link set lo multicast on &&
		ip -n "$NSW" route add 224.0.0.0/4 dev lo
	for json in "" "--json"; do
		# shellcheck disable=SC2086
		timeout "$(tscale 10)" ip netns exec "$NSW" "$MCKEY" -m 239.1.1.9 \
			-b 127.0.0.1 --udp -C 3 $json >/dev/full 2>"$T/mcwf.err"
		RC=$?
		assert_exit "mckey --udp ${json:-(text)} >/dev/full: exit 228, at once" \
			228 "$RC" "$T/mcwf.err"
		assert_lines "mckey --udp ${json:-(text)} >/dev/full: one line" 1 \
			"$T/mcwf.err" '^mckey: write error on standard output: No space left on device$'
	done
	# bind and join failures name the addresses (and the families)
	mcbad() { # DESC STATUS ERE ARGS...
		local d=$1 st=$2 re=$3
		shift 3
		timeout "$(tscale 10)" ip netns exec "$NSW" "$MCKEY" "$@" --udp -C 1 \
			>/dev/null 2>"$T/mcbad.err"
		assert_exit "mckey $d: exit $st" "$st" "$?" "$T/mcbad.err"
		assert_lines "mckey $d: one line naming it" 1 "$T/mcbad.err" "$re"
	}
	mcbad "-b with another family than -m" 234 \
		'^mckey: addr bind failure ::1 \(IPv6\) for group 239\.1\.1\.9 \(IPv4\): Address family not supported by protocol$' \
		-m 239.1.1.9 -b ::1
	mcbad "-b an address of no interface here" 255 \
		'^mckey: failure joining 239\.1\.1\.9 on the interface of 192\.0\.2\.1: No such device$' \
		-m 239.1.1.9 -b 192.0.2.1
	mcbad "a group that is not multicast" 234 \
		'^mckey: invalid group: 127\.0\.0\.9 is not a multicast address$' -m 127.0.0.9 -b 127.0.0.1
	mcbad "-M with --udp" 234 \
		'^mckey: invalid options: -M \(an AF_IB group\) needs the RDMA transport$' \
		-M ff0e::1 -b 127.0.0.1
	bg_start mcint 20 ip netns exec "$NSW" "$MCKEY" -m 239.1.1.9 -b 127.0.0.1 \
		--udp -C 3
	wait_match "$E2E_TMP/mcint.out" 'receiving data transfers' 5
	bg_stop mcint 5 INT
	assert_exit "mckey receiver, SIGINT: exit 252 (-EINTR)" 252 "$RC" "$T/mcint.err"
	assert_lines "mckey receiver, SIGINT: one line on stderr" 1 "$T/mcint.err" \
		'^mckey: interrupted by SIGINT$'
	ip netns del "$NSW" 2>/dev/null
	trap e2e_cleanup EXIT
else
	skip "mckey write-error and SIGINT cases: need root for a network namespace"
fi

# ---- -f gid over TCP: not supported, exit 6
run_cmd gid 10 "$R" -T s -f gid -s fe80::1 -p 7471
assert_exit "-T s -f gid: exit 6 (not supported)" 6 "$RC" "$T/gid.err"
assert_lines "-T s -f gid: one line" 1 "$T/gid.err"
assert_match "-T s -f gid: says not supported" '^rstream: .*not supported' "$T/gid.err"

# ---- no -T s on a host without RDMA: upstream's message and status
if [ -n "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
	skip "no RDMA device cases: this host has RDMA devices"
else
	P=$(e2e_port)
	for case_ in "c:-s $H -p $P" "s:-p $P" "cv:-s $H -p $P -S 100 -T v" "sa:-T a -p $P"; do
		name=nodev_${case_%%:*} args=${case_#*:}
		# shellcheck disable=SC2086
		run_cmd "$name" 10 "$R" $args
		assert_exit "'rstream $args' without RDMA: exit 255" 255 "$RC" \
			"$T/$name.out" "$T/$name.err"
		assert_eq "'rstream $args' without RDMA: the message" \
			"No RDMA devices were detected" "$(cat "$T/$name.err")"
		assert_le "'rstream $args' without RDMA: at once (ms)" "$ELAPSED_MS" "$(tscale 3000)"
	done
	assert_empty "no RDMA: the server printed no header" "$T/nodev_s.out"
	# a client's stdout is upstream's: its header, nothing else
	assert_lines "no RDMA: the client printed the header alone" 1 "$T/nodev_c.out"
	check_header "$T/nodev_c.out" 1 "no RDMA: the client's header"
	if [ -x "$UPSTREAM" ]; then
		run_cmd upnodev 10 "$UPSTREAM" -s $H -p "$P"
		if cmp -s "$T/upnodev.out" "$T/nodev_c.out"; then
			ok "no RDMA: the client's stdout is upstream's, byte for byte"
		else
			not_ok "no RDMA: the client's stdout is upstream's" "$(od -c "$T/upnodev.out" | head -3)"
		fi
	fi
	# -T r over TCP resolves through the RDMA CM all the same
	run_cmd nodevr 10 "$R" -T r -T s -s 127.0.0.1 -p "$P"
	assert_exit "-T r -T s without RDMA: upstream's no-device status" 255 "$RC" "$T/nodevr.err"
	assert_lines "-T r -T s without RDMA: one line naming -T r" 1 "$T/nodevr.err" \
		'^rstream: -T r resolves addresses through the RDMA CM, which needs an RDMA device: No RDMA devices were detected$'
	if listening "$P"; then
		not_ok "no RDMA: nothing listens"
	else
		ok "no RDMA: nothing listens"
	fi
fi

# A link-local IPv6 address without its interface: one line that says
# so (exit 2), not the kernel's bare "Invalid argument"; with one, the
# address keeps its %scope in what is printed
P=$(e2e_port)
run_cmd ll1 10 "$R" -T s -s fe80::1 -p "$P"
assert_exit "-s fe80::1 (no interface)" 2 "$RC" "$T/ll1.err"
assert_match "-s fe80::1: the line says what is missing" \
	'^rstream: fe80::1 is a link-local address: give its interface, as fe80::1%eth0$' "$T/ll1.err"
run_cmd ll2 10 "$R" -T s -b fe80::1 -p "$P"
assert_exit "-b fe80::1 (a server, no interface)" 2 "$RC" "$T/ll2.err"
assert_match "-b fe80::1: the line says what is missing" \
	'^rstream: fe80::1 is a link-local address: give its interface' "$T/ll2.err"
run_cmd ll3 10 "$R" -T s -s fe80::1%lo -p "$P"
assert_match "-s fe80::1%lo: the peer keeps its scope" \
	"\\[fe80::1%lo\\]:$P" "$T/ll3.err"
if [ -n "${MCKEY:-}" ]; then
	run_cmd ll4 10 "$MCKEY" --udp -m ff02::1 -b fe80::1 -C 1
	assert_exit "mckey -b fe80::1 (no interface)" 234 "$RC" "$T/ll4.err"
	assert_match "mckey -b fe80::1: the line says what is missing" \
		'^mckey: fe80::1 is a link-local address: give its interface, as fe80::1%eth0$' "$T/ll4.err"
fi

e2e_done
