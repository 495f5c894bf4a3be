#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# evrdma-probed under valgrind memcheck, run by this script itself: a
# probe of a live rstream server and one of a dead port, and where the
# host has no RDMA device an RDMA rstream and an mckey probe (failing at
# once with reason="nodev"); /metrics, the status page, its JSON and run
# logs fetched; a SIGHUP that replaces the probes (and keeps fewer runs)
# and one that is rejected; SIGTERM exits 0; no memcheck error and
# no leak.  (make check-valgrind runs every script's daemons under
# memcheck; there, and in the ASan build, this one skips.)
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"
# shellcheck source=daemon-lib.sh
. "$(dirname "$0")/daemon-lib.sh"

# ------------------------------------------------------------ valgrind

e2e_can_valgrind "evrdma-probed" ||
	e2e_skip_all "evrdma-probed under valgrind, run by this script (the line above says why)"
port SP            # the rstream server
port DEAD          # nothing listens here
port HP3           # the daemon's HTTP
start_server srv "$SP" "$R" -T s -T a -p "$SP"

# and, only where there is no RDMA device (nothing may leave the
# host), the RDMA transports, which then fail at once with nodev
NODEV=0
[ -z "$(ls /sys/class/infiniband 2>/dev/null)" ] && NODEV=1
RDMA_PROBES=
[ "$NODEV" = 1 ] && RDMA_PROBES=',
  { "name": "vgrdma", "type": "rstream", "host": "127.0.0.1", "port": 1, "interval_s": 0.5, "timeout_s": 1 },
  { "name": "vgmc", "type": "mckey", "group": "239.1.1.1", "interval_s": 0.5, "timeout_s": 1, "settle_s": 0 }'
printf '{ "listen_address": "%s", "listen_port": %s, "probes": [ %s, %s %s ] }\n' \
	"$H" "$HP3" "$(probe_json vg "$SP")" "$(probe_json vgdead "$DEAD")" \
	"$RDMA_PROBES" >"$T/vg.json"
bg_start vg 120 valgrind --quiet --leak-check=full \
	--show-leak-kinds=definite,indirect,possible \
	--errors-for-leak-kinds=definite,indirect,possible \
	--error-exitcode=99 "$PROBED" -c "$T/vg.json"
scrape_vg() { scrape "$1" "$HP3"; }
if wait_listen "$HP3" 30 vg; then
	# until the live probe has run twice (a run under memcheck on a
	# loaded host takes what it takes; a fixed wait was 2 s)
	until_scraped scrape_vg v1 30 'evrdma_probe_up{probe="vg"}' 1 \
		'evrdma_probe_runs_total{probe="vg"}' 2
	meta_ok "under valgrind: /metrics" v1
	num_ge "under valgrind: the live probe succeeded" \
		"$(val "$T/v1.txt" 'evrdma_probe_up{probe="vg"}')" 1
	if [ "$NODEV" = 1 ]; then
		num_ge "no RDMA device: rstream probe fails with reason=nodev" \
			"$(val "$T/v1.txt" 'evrdma_probe_failures_total{probe="vgrdma",reason="nodev"}')" 1
		num_ge "no RDMA device: mckey probe fails with reason=nodev" \
			"$(val "$T/v1.txt" 'evrdma_probe_failures_total{probe="vgmc",reason="nodev"}')" 1
	fi
	# the status page, its JSON and a run's log (each run's log is
	# the ring's: freed as it is dropped, and at the end)
	for p in / /status.json /run/1 /run/999999; do
		curl -s --max-time "$(tscale 5)" -o /dev/null "http://$H:$HP3$p"
	done
	code=$(curl -s --max-time "$(tscale 5)" -o "$T/vgrun.txt" -w '%{http_code}' "http://$H:$HP3/run/2")
	assert_eq "under valgrind: /run/2" 200 "$code"
	printf '{ "listen_address": "%s", "listen_port": %s, "probes": [ %s ], "status": { "runs": 2 } }\n' \
		"$H" "$HP3" "$(probe_json vgnew "$SP")" >"$T/vg.json"
	kill -HUP "$(bg_child_pid vg)"
	sleep 1
	printf '{ "probes": 1 }\n' >"$T/vg.json"
	kill -HUP "$(bg_child_pid vg)"
	sleep 0.5
	scrape v2 "$HP3"
	assert_eq "under valgrind: reloaded once" 1 \
		"$(val "$T/v2.txt" evrdma_probed_config_reloads_total)"
	bg_stop vg 30
	assert_exit "under valgrind: SIGTERM exits 0" 0 "$RC" "$T/vg.err"
	if grep -q '^==[0-9]*==' "$T/vg.err"; then
		not_ok "under valgrind: no errors, no leaks"
		grep '^==' "$T/vg.err" | head -30 | sed 's/^/#   /'
	else
		ok "under valgrind: no errors, no leaks"
	fi
else
	not_ok "daemon under valgrind listens"
	dump "$T/vg.err"
fi

e2e_done
