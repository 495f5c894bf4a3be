#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The RDMA suite: boot the Soft-RoCE guest once (tests/rxe/vm.sh), copy in
# the freshly built programs and these scripts, and run every guest-*.sh
# there.  Usage: tests/rxe/check-rxe.sh BUILDDIR.  Exit 0 all passed, 1 a
# failure, 77 (automake's SKIP) when this machine cannot run the guest --
# said loudly, never a silent pass.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
# the guest's kernel: tests/rxe/vm.sh --kernel (EVR_RXE_KERNEL, default
# stable); a log of its own for the other one
kernel=${EVR_RXE_KERNEL:-stable}
log=$build/tests/rxe-guest.log
[ "$kernel" = stable ] || log=$build/tests/rxe-guest-$kernel.log
# soft-iWARP's guest (tests/rxe/vm.sh --siw) keeps a log of its own too
[ "${EVR_RXE_SIW:-0}" = 1 ] && log=${log%.log}-siw.log
mkdir -p "$build/tests"

skip() {
	echo "=================================================================="
	echo "SKIP: the Soft-RoCE suite cannot run here: $*"
	echo "=================================================================="
	exit 77
}

[ -x "$build/rstream" ] && [ -x "$build/mckey" ] && [ -x "$build/evrdma-probed" ] &&
	[ -x "$build/tests/rsfaultpeer" ] ||
	{ echo "check-rxe: build first"; exit 1; }
export EVR_RXE_KERNEL=$kernel
if ! "$here/vm.sh" --prepare; then
	skip "preparing the guest failed (packages or kernel download)"
fi
"$here/vm.sh" --check || skip "qemu-system-x86_64 is not available"

runner=$(mktemp)
trap 'rm -f "$runner"' EXIT
# With binaries from an --enable-sanitizers build, every ASan/UBSan/LSan
# report (in a file under /tmp/evr-san, whatever a test does with stderr)
# fails the suite, as in make check; the options change nothing for a
# normal build.  The guest has 1 GiB of RAM: ASan's quarantine is kept
# small (64 MiB a process, not 256).
cat >"$runner" <<'GUEST'
#!/bin/bash
export EVR_BIN=/opt/evr
mkdir -p /tmp/evr-san
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=0:exitcode=86:print_stacktrace=1:quarantine_size_mb=64:log_path=/tmp/evr-san/asan
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=0:exitcode=86:print_stacktrace=1:log_path=/tmp/evr-san/ubsan
rc=0
export FAULT_RXE_CYCLES=@CYCLES@
export EVR_RXE_SAN=@SAN@
@FLEET@
# guest-nicfail.sh last: its link-down case leaves the kernel's RDMA CM
# unusable (6.1's Soft-RoCE; the script says how)
last=
for t in /opt/evr/tests/guest-@ONLY@.sh; do
	case $t in
	*/guest-nicfail.sh) last=$t; continue ;;
	esac
	echo "=== ${t##*/}"
	bash "$t" || rc=1
done
if [ -n "$last" ]; then
	echo "=== ${last##*/}"
	bash "$last" || rc=1
fi
echo "=== sanitizer reports"
n=0
for f in /tmp/evr-san/*; do
	[ -s "$f" ] || continue
	n=$((n + 1))
	echo "FAIL: sanitizer report ${f##*/}:"
	head -n 60 "$f"
done
echo "sanitizers: $n report(s)"
[ "$n" = 0 ] || rc=1
exit $rc
GUEST
# EVR_RXE_ONLY=faults runs guest-faults.sh alone (a glob; default all);
# FAULT_RXE_CYCLES=N sets its rsocket connect/abort cycles (default 200;
# the 10,000-cycle campaign: FAULT_RXE_CYCLES=10000 EVR_RXE_ONLY=faults
# EVR_RXE_TIMEOUT=7200: 11 min on a quiet host, 35 on a busy one)
cycles=${FAULT_RXE_CYCLES:-200}
case $cycles in ''|*[!0-9]*) echo "check-rxe: FAULT_RXE_CYCLES must be a number" >&2; exit 1 ;; esac
# binaries of an --enable-sanitizers build: the guest scripts scale their
# time bounds (tests/rxe/lib-guest.sh)
san=0
grep -q '^EVR_SANITIZERS = yes' "$build/Makefile" 2>/dev/null && san=1
# guest-fleetprom.sh's campaign: FLEET_ROUNDS, FLEET_KINDS, FLEET_BOUND,
# FLEET_DELAY_MS (bench/fabric-campaign.sh), passed on as they are
fleet=
for v in FLEET_ROUNDS FLEET_KINDS FLEET_BOUND FLEET_DELAY_MS; do
	[ -n "${!v:-}" ] || continue
	case ${!v} in *[!a-z0-9\ ]*) echo "check-rxe: $v: letters, digits and spaces only" >&2; exit 1 ;; esac
	fleet="$fleet export $v='${!v}';"
done
sed -i -e "s|@ONLY@|${EVR_RXE_ONLY:-*}|" -e "s|@CYCLES@|$cycles|" \
	-e "s|@SAN@|$san|" -e "s|@FLEET@|$fleet|" "$runner"
# the fleet's own Prometheus (guest-fleetprom.sh), with the shipped
# rules: 50 MB more in the guest's memory, so only when that script is
# asked for by name (bench/fabric-campaign.sh)
prom=()
if command -v prometheus >/dev/null && case ${EVR_RXE_ONLY:-} in *fleetprom*) true ;; *) false ;; esac; then
	prom=(--add "$(command -v prometheus)=/opt/evr/prometheus"
		--add "$here/../../contrib/prometheus/evrdma-fabric-fast.rules.yml=/opt/evr/evrdma-fabric-fast.rules.yml")
	# the fleet dashboard's RDMA device queries, host h1's, one a line:
	# the TCP fleet's agents export no device, so they are run here,
	# where the RNICs are real (guest-fleetprom.sh; the guest has no
	# python to read the dashboard itself)
	dash=$here/../../contrib/grafana/evrdma-fleet.json
	if [ -f "$dash" ] && command -v python3 >/dev/null; then
		python3 "$here/../dashboard-check.py" exprs "$dash" job=evrdma host=h1 \
			peer=h2 __rate_interval=30s __interval=15s __range=60s |
			python3 -c 'import json, sys
for l in sys.stdin:
    e = json.loads(l)["expr"]
    if "evrdma_rdma_" in e:
        print(e)' >"$(dirname "$log")/dash-device-queries"
		prom+=(--add "$(dirname "$log")/dash-device-queries=/opt/evr/dash-device-queries")
	fi
fi
"$here/vm.sh" --timeout "${EVR_RXE_TIMEOUT:-2400}" --log "$log" "${prom[@]}" \
	--add "$build/rstream=/opt/evr/rstream" \
	--add "$build/mckey=/opt/evr/mckey" \
	--add "$build/evrdma-probed=/opt/evr/evrdma-probed" \
	--add "$build/tests/rsfaultpeer=/opt/evr/rsfaultpeer" \
	--add "$here=/opt/evr/tests" \
	"$runner" >/dev/null 2>&1
rc=$?
grep -a -E '^(PASS|FAIL|SKIP)|passed, [0-9]+ failed|^=== |^sanitizers: ' "$log" || true
case $rc in
0) echo "check-rxe: all passed (log: $log)" ;;
124) echo "check-rxe: TIMEOUT (log: $log)"; rc=1 ;;
125) echo "check-rxe: the guest did not boot (log: $log)"; rc=1 ;;
*) echo "check-rxe: FAILED (log: $log)"; rc=1 ;;
esac
exit $rc
