#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# evrdma-probed as its systemd unit runs it: the unit passes
# systemd-analyze verify and its exposure is systemd's "OK"; the daemon
# as nobody (root switches to it) probes an rstream server, with locked
# memory held to one page: the host checks of its RDMA probes say so
# where the host has no RDMA device, a TCP probe has none.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"
# shellcheck source=daemon-lib.sh
. "$(dirname "$0")/daemon-lib.sh"

# ------------------------------------------- unprivileged, as the unit runs

# The systemd unit runs the daemon as a dynamic user with what RDMA needs
# (contrib/evrdma-probed.service.in says what and why): systemd accepts
# it, and its exposure score is systemd's "OK" (the unit that ran as root
# scored 8.9, EXPOSED).
UNIT_IN=${E2E_SRCDIR:-$(dirname "$0")/../..}/contrib/evrdma-probed.service.in
if command -v systemd-analyze >/dev/null; then
	mkdir -p "$T/unit/man/man8"
	cp "${E2E_SRCDIR:-$(dirname "$0")/../..}/man/evrdma-probed.8" "$T/unit/man/man8/"
	cp "${E2E_SRCDIR:-$(dirname "$0")/../..}/contrib/evrdma-probed.conf" "$T/unit/"
	# its commands must exist: the build's program, through a path
	# without the valgrind wrapper's arguments
	pbin=$(command -v "$PROBED" || echo "$PROBED")
	sed -e "s|@sbindir@/evrdma-probed|$pbin|g" -e "s|@sysconfdir@|$T/unit|g" \
		"$UNIT_IN" >"$T/unit/evrdma-probed.service"
	if MANPATH=$T/unit/man systemd-analyze verify "$T/unit/evrdma-probed.service" \
		>"$T/unit/verify.out" 2>&1; then
		assert_empty "the systemd unit: systemd-analyze verify says nothing" "$T/unit/verify.out"
	else
		not_ok "the systemd unit: systemd-analyze verify passes" "$(head -5 "$T/unit/verify.out")"
	fi
	assert_match "the unit runs as a dynamic user" '^DynamicUser=yes$' "$T/unit/evrdma-probed.service"
	assert_match "... with RDMA's locked memory" '^LimitMEMLOCK=infinity$' "$T/unit/evrdma-probed.service"
	systemd-analyze security --offline=true "$T/unit/evrdma-probed.service" \
		>"$T/unit/security.out" 2>&1 || true
	score=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\) .*/\1/p' "$T/unit/security.out")
	say "the unit's exposure (systemd-analyze security): ${score:-?}"
	if [ -n "$score" ] && awk -v s="$score" 'BEGIN { exit !(s <= 5.0) }'; then
		ok "the unit's exposure is at most 5.0 (systemd's OK): $score"
	else
		not_ok "the unit's exposure is at most 5.0 (systemd's OK)" "$(tail -3 "$T/unit/security.out")"
	fi
else
	not_ok "systemd-analyze is installed (scripts/deps.sh: systemd)"
fi

# ... and the daemon works as an unprivileged user (nobody), as that unit
# runs it: a TCP probe of a server is up.  With locked memory held to
# one page, the host checks say so for an RDMA probe (evrdma_host_check_ok,
# where this host has no RDMA device: nothing may leave it), while the
# TCP probe, which locks nothing, has no such series and stays up.
# nobody runs a copy of the daemon, and reads its configuration, in a
# directory it can reach wherever the build tree is (e2e_user_bins).
port UPS
port UPH
NODEV=0
[ -z "$(ls /sys/class/infiniband 2>/dev/null)" ] && NODEV=1
if [ "$(id -u)" != 0 ]; then
	skip "the daemon as nobody: needs root to switch users"
elif ! e2e_user_bins PROBED; then
	not_ok "the daemon as nobody: a copy of evrdma-probed that nobody can run"
elif start_server upsrv "$UPS" "$R" -T s -T a -p "$UPS"; then
	ud=$E2E_USER_DIR/conf
	mkdir -m 755 "$ud"
	hcp=
	[ "$NODEV" = 1 ] && hcp=', { "name": "hcr", "type": "rstream", "host": "127.0.0.1", "port": 1, "interval_s": 0.3, "timeout_s": 1 }, { "name": "hcm", "type": "mckey", "group": "239.1.1.1", "interval_s": 0.3, "timeout_s": 1, "settle_s": 0 }'
	printf '{ "listen_address": "%s", "listen_port": %s, "probes": [ { "name": "unpriv", "type": "rstream", "host": "%s", "port": %s, "transport": "tcp", "interval_s": 0.3, "timeout_s": %s } %s ] }\n' \
		"$H" "$UPH" "$H" "$UPS" "$(tscale 2)" "$hcp" >"$ud/conf.json"
	chmod 644 "$ud/conf.json"
	bg_start unpriv 30 prlimit --memlock=4096:4096 \
		setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$USER_PROBED" -c "$ud/conf.json"
	if wait_listen "$UPH" 5 unpriv; then
		scrape_uph() { scrape "$1" "$UPH"; }
		until_scraped scrape_uph um 5 'evrdma_probe_runs_total{probe="unpriv"}' 2
		assert_eq "the daemon as nobody: its probe is up" 1 \
			"$(val "$T/um.txt" 'evrdma_probe_up{probe="unpriv"}')"
		assert_eq "... it runs as nobody" 65534 \
			"$(awk '/^Uid:/ { print $2 }' "/proc/$(bg_child_pid unpriv)/status" 2>/dev/null)"
		family_ok "family evrdma_host_check_ok: HELP and TYPE" "$T/um.txt" \
			evrdma_host_check_ok gauge
		promtool_ok "host checks' series" "$T/um.txt"
		assert_eq "a TCP probe has no host check series" 0 \
			"$(grep -c '^evrdma_host_check_ok{probe="unpriv",' "$T/um.txt")"
		if [ "$NODEV" = 1 ]; then
			for hp in hcr hcm; do
				assert_eq "host checks, $hp: one page of locked memory is too little (memlock 0)" 0 \
					"$(val "$T/um.txt" "evrdma_host_check_ok{probe=\"$hp\",check=\"memlock\"}")"
				assert_eq "host checks, $hp: no RDMA device for it (address_device 0)" 0 \
					"$(val "$T/um.txt" "evrdma_host_check_ok{probe=\"$hp\",check=\"address_device\"}")"
			done
		else
			skip "host checks of RDMA probes: this host has an RDMA device (the Soft-RoCE suite checks them)"
		fi
	else
		not_ok "the daemon as nobody listens"
		dump "$T/unpriv.err"
	fi
	bg_stop unpriv 5
	assert_exit "the daemon as nobody: SIGTERM exits 0" 0 "$RC" "$T/unpriv.err"
	rm -rf "$ud"
fi
bg_kill upsrv

e2e_done
