# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# shellcheck shell=bash
#
# The fleet dashboard (contrib/grafana/evrdma-fleet.json) against the
# simulated fleet's real Prometheus: sourced by tests/e2e/fleet.sh at one
# line, where a fault's alerts have just fired (so that the alerts panel
# has a series to show).  Every query of the dashboard (its panels, the
# rows' nested ones, its template variables, its annotation) is run by
# that Prometheus through tests/dashboard-check.py's "fleet" mode, with
# real values for the variables ($job the fleet's, $host and $peer hosts
# other than the faulty one, $__rate_interval 30 s, $__range 60 s), and
# each must return the series its panel shows: a finite value, only the
# host's series where the panel is the host's, a matrix's two labels, the
# legend's labels, the firing evrdma alerts; the matrices every host
# (but perhaps the faulty one) as a row and a column.  The RDMA device panels must
# be empty in this TCP fleet (and are evaluated by tests/e2e/dashboard.sh
# on device series instead).  Once a fleet run: the first fault whose
# alerts fired.  FLEET_DASH_PNG=FILE (a bench step: gnuplot, scripts/deps.sh
# --bench) draws the matrix panels' answers there, one heat map each,
# labelled as what they are: the queries' results, not Grafana's
# rendering (doc/img/fleet-dashboard.png).  Uses fleet.sh's SRC, T, N,
# FAB_BW, fab_ns, promq and lib.sh's ok/not_ok.
#
#   fleet_dashboard_once FAULTY_HOST

fleet_dashboard_once() { # FAULTY_HOST
	[ -n "${FLEET_DASH_DONE:-}" ] && return 0
	FLEET_DASH_DONE=1
	local faulty=$1 t0 ms allow=() line st desc detail
	[ "${FAB_BW:-1}" = 0 ] && allow=(--allow-empty 'throughput')
	t0=$(now_ms)
	timeout "$(tscale 120)" ip netns exec "$(fab_ns pm)" python3 \
		"$SRC/tests/dashboard-check.py" fleet "$SRC/contrib/grafana/evrdma-fleet.json" \
		http://127.0.0.1:9090 --avoid "$faulty" --firing --hosts "$N" "${allow[@]}" \
		--dump "$T/matrices.json" \
		>"$T/dashboard.out" 2>"$T/dashboard.err"
	st=$?
	ms=$(( $(now_ms) - t0 ))
	while IFS=$'\t' read -r line desc detail; do
		case $line in
		ok) ok "dashboard: $desc" ;;
		"not ok") not_ok "dashboard: $desc" "$detail" ;;
		"#") say "dashboard: $desc" ;;
		esac
	done <"$T/dashboard.out"
	if [ "$st" = 0 ]; then
		ok "dashboard: every query of contrib/grafana/evrdma-fleet.json answered as its panel needs, while $faulty's alert fires ($ms ms)"
	else
		not_ok "dashboard: tests/dashboard-check.py fleet exited 0 (it exited $st, in $ms ms)"
		dump "$T/dashboard.err"
	fi
	[ -n "${FLEET_DASH_PNG:-}" ] || return 0
	if ! command -v gnuplot >/dev/null 2>&1; then
		say "dashboard: no gnuplot (scripts/deps.sh --bench): no picture"
		return 0
	fi
	local alerts
	alerts=$(promq alerts 2>/dev/null | awk '$1 == "firing" { printf "%s%s %s", s, $2, $3; s = ", " }')
	if python3 "$SRC/tests/dashboard-check.py" plot "$T/matrices.json" "$FLEET_DASH_PNG" \
		"evrdma-fleet.json's source x target panels: their queries as the simulated fleet's Prometheus answered them, drawn by gnuplot (not Grafana)\n$N hosts, $faulty faulty; firing: $alerts" \
		>"$T/plot.out" 2>&1; then
		ok "dashboard: its matrices drawn in $FLEET_DASH_PNG"
	else
		not_ok "dashboard: its matrices drawn in $FLEET_DASH_PNG" "$(head -5 "$T/plot.out")"
	fi
}
