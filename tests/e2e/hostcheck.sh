#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The host checks on this host, which has no RDMA at all: rstream --check
# and mckey --check say so in their table and their JSON record (its
# schema: schema.sh) and exit 5; a TCP or UDP check passes; as an
# unprivileged user (setpriv) the real rlimits and capabilities show in
# the memlock and nofile rows; a memlock limit never stops a -T s run; an
# RDMA run still says "No RDMA devices were detected" (255).  Every
# verdict on a fake host is check_hostcheck's; real RDMA is
# tests/rxe/guest-diag.sh's.

. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

R=$RSTREAM
M=$MCKEY
H=127.0.0.1
T=$E2E_TMP

[ -d /sys/class/infiniband ] && [ -n "$(ls /sys/class/infiniband 2>/dev/null)" ] &&
	e2e_skip_all "this host has an RDMA device: the script expects none"

# ---- rstream --check, the table
run_cmd t1 20 "$R" --check -b $H
assert_exit "rstream --check -b $H: no RDMA, a failure" 5 "$RC" "$T/t1.out" "$T/t1.err"
assert_empty "rstream --check: nothing on stderr" "$T/t1.err"
assert_match "the table's header" '^check +result fact / fix$' "$T/t1.out"
assert_match "address_device fails: no RDMA device" \
	'^address_device  FAIL   no RDMA device on this host \(/sys/class/infiniband is empty or absent\)$' "$T/t1.out"
assert_match "its fix" \
	'^ +fix: load the RDMA driver of the NIC, or add a Soft-RoCE device: rdma link add rxe0 type rxe netdev IFACE$' "$T/t1.out"
assert_match "the device nodes are skipped" '^verbs_device    skip   no RDMA device$' "$T/t1.out"
assert_match "memlock is checked all the same" '^memlock         ok     ' "$T/t1.out"
assert_match "the summary" '^rstream: [0-9]+ ok, 1 failed, [0-9]+ skipped: this host cannot run it as it is$' "$T/t1.out"
assert_lines "a row per check, and a fix" 11 "$T/t1.out"

# ---- --json: one record, held to the schema
run_cmd j1 20 "$R" --check -s $H -b $H -c 3 --json
assert_exit "rstream --check --json" 5 "$RC" "$T/j1.out" "$T/j1.err"
assert_lines "one record" 1 "$T/j1.out"
assert_match "a hostcheck record that failed one check" \
	'^\{"type":"hostcheck","tool":"rstream",.*"address":"127\.0\.0\.1","rdma":true,.*"failed":1,"exit_status":5\}$' "$T/j1.out"
assert_match "the need: three connections' memory" '"memlock_need_bytes":[0-9]{7}' "$T/j1.out"
run_cmd j2 20 "$M" --check -m 239.1.1.1 -b $H -S 2000 --json
assert_exit "mckey --check --json" 5 "$RC" "$T/j2.out" "$T/j2.err"
assert_match "mckey's record" '^\{"type":"hostcheck","tool":"mckey",' "$T/j2.out"
run_cmd j3 20 "$R" -T s --check --json
assert_exit "rstream -T s --check --json: all pass" 0 "$RC" "$T/j3.out" "$T/j3.err"
assert_match "-T s: no RDMA check runs" '"rdma":false,.*"failed":0,"exit_status":0\}$' "$T/j3.out"
# (held to doc/hostcheck.schema.json by schema.sh)

# ---- TCP and UDP: only the descriptors
run_cmd s1 20 "$R" -T s --check -s $H -c 10
assert_exit "rstream -T s --check -c 10: all pass" 0 "$RC" "$T/s1.out" "$T/s1.err"
assert_match "nofile is checked" '^nofile          ok     RLIMIT_NOFILE [0-9a-z]+ \(hard [0-9a-z]+\), this run needs about [0-9]+' "$T/s1.out"
assert_match "the RDMA checks are skipped" '^memlock         skip   not an RDMA run: nothing is locked$' "$T/s1.out"
assert_match "the summary" '^rstream: 1 ok, 0 failed, 7 skipped: this host can run it$' "$T/s1.out"
run_cmd u1 20 "$M" --udp --check
assert_exit "mckey --udp --check: all pass" 0 "$RC" "$T/u1.out" "$T/u1.err"

# ---- bad input
run_cmd b1 20 "$R" --check -b nosuch.invalid
assert_exit "--check with an address that does not resolve" 1 "$RC" "$T/b1.out" "$T/b1.err"
assert_match "one line names it" '^rstream: --check: nosuch\.invalid: not an address, nor a name that resolves$' "$T/b1.err"
assert_lines "one line" 1 "$T/b1.err"
run_cmd b2 20 "$M" --check --json -b nosuch.invalid
assert_exit "mckey --check --json, the same" 1 "$RC" "$T/b2.out" "$T/b2.err"
assert_match "an error record" '^\{"type":"error",' "$T/b2.out"

# ---- the real limits, as an unprivileged user
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
	NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --)
	# nobody runs copies of the programs (under valgrind, in wrappers of
	# their own), which it can reach wherever the build tree is
	e2e_user_bins RSTREAM || exit 99
	R=$USER_RSTREAM
	run_cmd n1 20 bash -c 'ulimit -l 64 && exec "$@"' _ "${NOBODY[@]}" "$R" --check
	assert_exit "as nobody, ulimit -l 64: --check fails" 5 "$RC" "$T/n1.out" "$T/n1.err"
	assert_match "memlock FAIL: the limit and the need" \
		'^memlock         FAIL   RLIMIT_MEMLOCK 64 KiB, this run locks about 2\.1 MiB$' "$T/n1.out"
	assert_match "and the fix" \
		'^ +fix: raise it: ulimit -l [0-9]+ \(or unlimited; the hard limit is 64 KiB\), /etc/security/limits\.conf "USER - memlock [0-9]+", systemd LimitMEMLOCK=[0-9]+K; or grant CAP_IPC_LOCK$' "$T/n1.out"
	run_cmd n2 20 bash -c 'ulimit -n 64 && exec "$@"' _ "${NOBODY[@]}" "$R" -T s --check -s $H -c 1000
	assert_exit "as nobody, ulimit -n 64, -c 1000: --check fails" 5 "$RC" "$T/n2.out" "$T/n2.err"
	# (64, or less under valgrind, which keeps descriptors of its own)
	assert_match "nofile FAIL and its fix" \
		'^nofile          FAIL   RLIMIT_NOFILE [0-9]+ \(hard [0-9]+\), this run needs about [0-9]+$' "$T/n2.out"
	assert_match "nofile's fix" '^ +fix: raise it: ulimit -n [0-9]+ .*LimitNOFILE=[0-9]+$' "$T/n2.out"
	# a memlock limit stops no TCP run, on either side
	P=$(e2e_port)
	if start_server srv "$P" bash -c 'ulimit -l 0 && exec "$@"' _ "${NOBODY[@]}" \
		"$R" -T s -b $H -p "$P" --once; then
		run_cmd c1 30 bash -c 'ulimit -l 0 && exec "$@"' _ "${NOBODY[@]}" \
			"$R" -T s -s $H -p "$P" -S 1000 -C 10
		assert_exit "-T s client as nobody, ulimit -l 0" 0 "$RC" "$T/c1.out" "$T/c1.err"
		assert_empty "no diagnosis on stderr" "$T/c1.err"
		bg_wait srv 20
		assert_exit "-T s --once server as nobody, ulimit -l 0" 0 "$RC" "$T/srv.err"
	fi
	R=$RSTREAM
else
	skip "setpriv and root are needed to run as another user"
fi

# ---- an RDMA run here: upstream's message, as before
run_cmd r1 20 bash -c 'ulimit -l 64 && exec "$@"' _ "$R" -s $H
assert_exit "an RDMA run without RDMA, ulimit -l 64" 255 "$RC" "$T/r1.out" "$T/r1.err"
assert_match "upstream's words" '^No RDMA devices were detected$' "$T/r1.err"

e2e_done
