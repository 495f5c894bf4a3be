#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# evrdma-probed's configuration, without a daemon running on it for long:
# --check-config on good files (a daemon's, contrib/evrdma-probed.conf,
# evrdma-probed(8)'s example) and bad ones (each refused with one line
# naming the problem); a mesh's peers file read as the daemon reads it;
# --check-config and the start agreeing on every file of a table (the
# same verdict, the same lines); a missing file, a directory, a device
# and a FIFO named at once; --help, --version and bad options.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"
# shellcheck source=daemon-lib.sh
. "$(dirname "$0")/daemon-lib.sh"

# ------------------------------------------------------------ configs

port SP            # the rstream server (none here: only named)
port HP            # the daemon's HTTP (in the file)
conf_c1 "$T/c1.json"

# ------------------------------------------------------ --check-config

run_cmd cc_good 10 "$PROBED" --check-config -c "$T/c1.json"
assert_exit "--check-config: a good file" 0 "$RC" "$T/cc_good.err"
assert_match "--check-config: says ok and how many probes" \
	'c1\.json: ok, 2 probes, HTTP on 127\.0\.0\.1 port' "$T/cc_good.out"
run_cmd cc_example 10 "$PROBED" --check-config \
	-c "${E2E_SRCDIR:-$(dirname "$0")/../..}/contrib/evrdma-probed.conf"
assert_exit "--check-config: contrib/evrdma-probed.conf" 0 "$RC" \
	"$T/cc_example.err"
# the man page's example configuration (probes and responders)
awk '/^Example:/ { f = 1 } f && /^\.nf/ { g = 1; next } g && /^\.fi/ { exit } g' \
	"${E2E_SRCDIR:-$(dirname "$0")/../..}/man/evrdma-probed.8" >"$T/manex.json"
run_cmd cc_manex 10 "$PROBED" --check-config -c "$T/manex.json"
assert_exit "--check-config: evrdma-probed(8)'s example" 0 "$RC" "$T/cc_manex.err"
assert_match "... with its responders" 'ok, 2 probes, .*, 2 responders$' "$T/cc_manex.out"

# bad_conf NAME ERE TEXT: the file holds TEXT; exit 1, one line naming it
bad_conf() {
	local n=$1 re=$2
	printf '%s\n' "$3" >"$T/$n.json"
	run_cmd "$n" 10 "$PROBED" --check-config -c "$T/$n.json"
	assert_exit "--check-config $n: rejected" 1 "$RC" "$T/$n.err"
	assert_lines "--check-config $n: one line on stderr" 1 "$T/$n.err"
	assert_match "--check-config $n: names the problem" "$re" "$T/$n.err"
	assert_empty "--check-config $n: nothing on stdout" "$T/$n.out"
}
bad_conf syntax '^evrdma-probed: .*/syntax\.json:3:[0-9]+: ' '{
  "listen_port": 9471,
  "probes": [ { "name": "x" ,, } ]
}'
bad_conf unknown_key 'probes\[0\] \("x"\): unknown key "intervall_s"' '{
  "probes": [ { "name": "x", "type": "rstream", "host": "h",
                "intervall_s": 1 } ]
}'
bad_conf bad_transport 'probes\[0\] \("x"\): "transport" is "udp", must be one of tcp, rdma' '{
  "probes": [ { "name": "x", "type": "rstream", "host": "h",
                "transport": "udp" } ]
}'
bad_conf bad_interval 'probes\[0\] \("x"\): "interval_s" is -1, must be' '{
  "probes": [ { "name": "x", "type": "rstream", "host": "h",
                "interval_s": -1 } ]
}'
bad_conf no_host 'probes\[0\] \("x"\): "host" is required' '{
  "probes": [ { "name": "x", "type": "rstream" } ]
}'
bad_conf dup_name 'probes\[1\] \("x"\): "name" is already used by probes\[0\]' '{
  "probes": [ { "name": "x", "type": "rstream", "host": "h" },
              { "name": "x", "type": "mckey", "group": "239.1.1.1" } ]
}'
bad_conf bad_port '"listen_port" must be a port number 1 to 65535' '{
  "listen_port": 70000
}'
bad_conf top_key 'unknown key "listen"' '{ "listen": "127.0.0.1:1" }'
bad_conf dup_key '^evrdma-probed: .*/dup_key\.json:1:[0-9]+: duplicate object key' \
	'{ "listen_port": 1, "listen_port": 2 }'
bad_conf resp_noport 'responders\[0\]: "port" is required$' '{
  "responders": [ { "transport": "tcp" } ]
}'
bad_conf resp_xport 'responders\[0\]: "transport" is "udp", must be one of tcp, rdma$' '{
  "responders": [ { "transport": "udp", "port": 7471 } ]
}'
bad_conf resp_key 'responders\[1\]: unknown key "name"$' '{
  "responders": [ { "transport": "tcp", "port": 7471 },
                  { "transport": "tcp", "port": 7472, "name": "x" } ]
}'
bad_conf resp_dup 'responders\[1\]: the same transport, bind and port as responders\[0\]$' '{
  "responders": [ { "transport": "tcp", "port": 7471, "bind": "127.0.0.1" },
                  { "transport": "tcp", "port": "7471", "bind": "127.0.0.1" } ]
}'
bad_conf resp_conns 'responders\[0\]: "max_conns" is 0, must be 1 to' '{
  "responders": [ { "transport": "tcp", "port": 7471, "max_conns": 0 } ]
}'
bad_conf resp_stall 'responders\[0\]: "stall_timeout_s" is 0, must be 0\.1 to 3600$' '{
  "responders": [ { "transport": "tcp", "port": 7471, "stall_timeout_s": 0 } ]
}'
bad_conf resp_array '"responders" must be an array$' '{ "responders": {} }'
bad_conf mesh_host 'mesh: unknown key "host" \(each peer.s, from the peers file\)$' '{
  "mesh": { "peers_file": "/dev/null", "host": "h" }
}'
bad_conf mesh_nofile 'mesh: "peers_file" is required$' '{ "mesh": { "port": 1 } }'
bad_conf mesh_key 'mesh: unknown key "group"$' '{
  "mesh": { "peers_file": "/dev/null", "group": "239.1.1.1" }
}'
bad_conf mesh_sample0 'mesh: "sample" is 0, must be 1 to 100000$' '{
  "mesh": { "peers_file": "/dev/null", "sample": 0 }
}'
bad_conf mesh_sample_str 'mesh: "sample" must be an integer$' '{
  "mesh": { "peers_file": "/dev/null", "sample": "2" }
}'
bad_conf mesh_sample_frac 'mesh: "sample" must be an integer$' '{
  "mesh": { "peers_file": "/dev/null", "sample": 2.5 }
}'
# --check-config reads the mesh's peers file as the daemon does: its
# peers counted; a missing file named, exit 1; bad lines (which make the
# daemon refuse the file) each named file:line, exit 1
printf 'h1 127.0.0.2 rack=r1\nme 127.0.0.1\n# a comment\n\nh3 127.0.0.3\n' >"$T/ccpeers.txt"
printf '{ "mesh": { "peers_file": "%s", "transport": "tcp", "sample": 1 } }\n' \
	"$T/ccpeers.txt" >"$T/ccmesh.json"
run_cmd cc_mesh 10 "$PROBED" --check-config -c "$T/ccmesh.json"
assert_exit "--check-config: a mesh and its peers file" 0 "$RC" "$T/cc_mesh.err"
assert_match "--check-config: ... counts the peers, and this host's" \
	'ok, 0 probes, .*, a mesh of 2 peers \(1 of this host\)$' "$T/cc_mesh.out"
printf '{ "mesh": { "peers_file": "%s" } }\n' "$T/nopeers.txt" >"$T/ccmesh2.json"
run_cmd cc_nopeers 10 "$PROBED" --check-config -c "$T/ccmesh2.json"
assert_exit "--check-config: a missing peers file" 1 "$RC" "$T/cc_nopeers.err"
assert_lines "--check-config: a missing peers file: one line" 1 "$T/cc_nopeers.err"
assert_match "--check-config: a missing peers file is named" \
	'^evrdma-probed: mesh: .*/nopeers\.txt: No such file or directory$' "$T/cc_nopeers.err"
assert_empty "--check-config: a missing peers file: nothing on stdout" "$T/cc_nopeers.out"
printf 'h1 127.0.0.2\nbad\nh1 127.0.0.3\nh4 127.0.0.4 x=1 x=2\nh5 127.0.0.5\n' >"$T/ccbad.txt"
printf '{ "mesh": { "peers_file": "%s" } }\n' "$T/ccbad.txt" >"$T/ccmesh3.json"
run_cmd cc_badpeers 10 "$PROBED" --check-config -c "$T/ccmesh3.json"
assert_exit "--check-config: bad lines in the peers file" 1 "$RC" "$T/cc_badpeers.err"
assert_lines "--check-config: ... each bad line, and the sum" 4 "$T/cc_badpeers.err"
assert_match "--check-config: ... a bad line named file:line" \
	'^evrdma-probed: .*/ccbad\.txt:2: ' "$T/cc_badpeers.err"
assert_match "--check-config: ... a name listed twice" \
	'^evrdma-probed: .*/ccbad\.txt:3: peer "h1" is listed twice$' "$T/cc_badpeers.err"
assert_match "--check-config: ... a label given twice" \
	'^evrdma-probed: .*/ccbad\.txt:4: ' "$T/cc_badpeers.err"
assert_match "--check-config: ... the sum" \
	'^evrdma-probed: mesh: .*/ccbad\.txt: 3 bad lines$' "$T/cc_badpeers.err"
assert_empty "--check-config: bad peers: nothing on stdout" "$T/cc_badpeers.out"
# --check-config and the start agree (one check, probed_load()): each
# file of the table is given to both; the verdicts (and, when refused,
# the lines on stderr) are the same.  A start that is refused exits 1
# before it listens; one that is accepted listens (then SIGTERM).
port AGP
mkdir -p "$T/ag"
agree() { # NAME VERDICT(0|1) ERE PEERS-FILE-CONTENT(printf) [CONFIG]
	local n=$1 want=$2 re=$3 conf=${5:-}
	[ -n "$4" ] && printf "$4" >"$T/ag/$n.peers"
	[ -z "$conf" ] && conf='{ "listen_port": AGP, "mesh": { "peers_file": "PEERS", "transport": "tcp", "interval_s": 60 } }'
	conf=${conf//AGP/$AGP}
	printf '%s\n' "${conf//PEERS/$T/ag/$n.peers}" >"$T/ag/$n.json"
	run_cmd "agc_$n" 10 "$PROBED" --check-config -c "$T/ag/$n.json"
	local cv=$RC
	bg_start "ags_$n" 20 "$PROBED" -c "$T/ag/$n.json"
	if wait_listen "$AGP" 5 "ags_$n"; then
		bg_stop "ags_$n" 5
		[ "$RC" = 0 ] && RC=accepted
	else
		bg_wait "ags_$n" 5
	fi
	local sv=$RC
	[ "$sv" = accepted ] && sv=0
	if [ "$cv" = "$want" ] && [ "$sv" = "$want" ]; then
		ok "agree $n: --check-config and the start both exit $want"
	else
		not_ok "agree $n: --check-config and the start both exit $want" \
			"--check-config $cv, the start $RC"
		dump "$T/agc_$n.err"
		dump "$T/ags_$n.err"
	fi
	if [ "$want" = 1 ]; then
		assert_eq "agree $n: the start says what --check-config says" \
			"$(cat "$T/agc_$n.err")" "$(cat "$T/ags_$n.err")"
		assert_match "agree $n: names the problem" "$re" "$T/agc_$n.err"
	else
		assert_match "agree $n: --check-config says ok" "$re" "$T/agc_$n.out"
	fi
}
agree good 0 'a mesh of 2 peers \(1 of this host\)$' \
	'# the fleet\nme 127.0.0.1\nh2 127.0.0.2 rack=r1\n\nh3 127.0.0.3 # c\n'
agree only_me 0 'a mesh of 0 peers \(1 of this host\)$' 'me 127.0.0.1\n'
agree no_mesh 0 'ok, 0 probes' '' '{ "listen_port": AGP }'
agree missing 1 '^evrdma-probed: mesh: .*/missing\.peers: No such file or directory$' ''
mkdir "$T/ag/directory.peers"
agree directory 1 '^evrdma-probed: mesh: .*/directory\.peers: not a regular file$' ''
agree empty 1 'empty\.peers: lists no peer \(without a mesh, the configuration has no "mesh"\)$' '\n'
agree comments 1 'comments\.peers: lists no peer' '# nobody yet\n\n   \n'
agree garbage 1 'garbage\.peers: 12 bad lines \(the first 10 named\)$' \
	'\x7fELF\x01\x02\x03\n1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n'
assert_lines "agree garbage: 10 bad lines named, then the sum" 11 "$T/agc_garbage.err"
agree nul 1 '^evrdma-probed: .*/nul\.peers:2: a NUL byte \(not a text file\)$' \
	'h2 127.0.0.2\nh3 127.0.0.3\0h4 127.0.0.4\n'
agree not_utf8 1 '^evrdma-probed: .*/not_utf8\.peers:1: not UTF-8 text$' \
	'h2 127.0.0.2 rack=r\xe9\n'
agree bad_line 1 '^evrdma-probed: .*/bad_line\.peers:2: a peer is NAME ADDRESS' \
	'h2 127.0.0.2\nlonely\nh3 127.0.0.3\n'
agree twice 1 '^evrdma-probed: .*/twice\.peers:3: peer "h2" is listed twice$' \
	'h2 127.0.0.2\nh3 127.0.0.3\nh2 127.0.0.4\n'
agree bad_label 1 'bad_label\.peers:1: "le" is not a usable label name' 'h2 127.0.0.2 le=1\n'
agree long_line 1 'long_line\.peers:1: a line longer than 4096 bytes$' \
	"h2 127.0.0.2 $(head -c 5000 /dev/zero | tr '\0' '#')\n"
head -c $((1024 * 1024 + 1)) /dev/zero | tr '\0' '\n' >"$T/ag/oversized.peers"
agree oversized 1 'oversized\.peers: larger than 1 MiB$' ''
agree conf_key 1 'conf_key\.json: unknown key "listen_prot"$' '' '{ "listen_prot": AGP }'
agree conf_syntax 1 'conf_syntax\.json:1:[0-9]+: ' '' '{ "listen_port": AGP, }'
agree conf_mesh 1 'conf_mesh\.json: mesh: "peers_file" is required$' '' \
	'{ "listen_port": AGP, "mesh": { "port": 1 } }'
agree conf_probe 1 'conf_probe\.json: probes\[0\] \("x"\): "host" is required$' '' \
	'{ "listen_port": AGP, "probes": [ { "name": "x", "type": "rstream" } ] }'
run_cmd cc_missing 10 "$PROBED" --check-config -c "$T/nonexistent.json"
assert_exit "--check-config: a missing file" 1 "$RC" "$T/cc_missing.err"
assert_match "--check-config: a missing file is named" \
	'nonexistent\.json: No such file or directory$' "$T/cc_missing.err"
# a directory, a device that never ends, a FIFO: named, at once, no hang
mkfifo "$T/fifo.json"
for f in "$T:is a directory, not a configuration file" \
	"/dev/zero:not a regular file" "$T/fifo.json:not a regular file"; do
	run_cmd cc_odd 10 "$PROBED" --check-config -c "${f%%:*}"
	assert_exit "--check-config -c ${f%%:*}: rejected" 1 "$RC" "$T/cc_odd.err"
	assert_eq "--check-config -c ${f%%:*}: says what it is" \
		"evrdma-probed: ${f%%:*}: ${f#*:}" "$(cat "$T/cc_odd.err")"
	assert_le "--check-config -c ${f%%:*}: at once (ms)" "$ELAPSED_MS" "$(tscale 3000)"
done
run_cmd help 10 "$PROBED" --help
assert_exit "--help" 0 "$RC" "$T/help.err"
assert_match "--help: the usage" '^usage: evrdma-probed ' "$T/help.out"
run_cmd version 10 "$PROBED" --version
assert_exit "--version" 0 "$RC" "$T/version.err"
assert_match "--version" '^evrdma-probed \(evrdma\) [0-9]' "$T/version.out"
run_cmd noval 10 "$PROBED" -c
assert_exit "-c without a file" 1 "$RC" "$T/noval.err"
assert_lines "-c without a file: one line" 1 "$T/noval.err"
run_cmd badopt 10 "$PROBED" --bogus
assert_exit "an unknown option" 1 "$RC" "$T/badopt.err"
assert_lines "an unknown option: one line" 1 "$T/badopt.err"

e2e_done
