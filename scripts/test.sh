#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The whole test suite: install what is missing, then five passes, and a
# summary of all of them:
#   1. the normal build (./build): make check (Check unit tests and the
#      end-to-end scripts, valgrind.sh among them), then the Soft-RoCE
#      guest suite (tests/rxe/check-rxe.sh);
#   2. the ASan+UBSan build (./build-asan, configure --enable-sanitizers):
#      make check again, where any sanitizer report fails its test, and
#      the Soft-RoCE suite's rstream, faults, mckey and nicfail scripts
#      with those binaries (time bounds scaled, the default run skipped loudly;
#      EVR_CI_RXE_ASAN=0: not run; the daemon's and --check's scripts run
#      in pass 1, their code under ASan in make check);
#   3. the end-to-end scripts again in ./build with every rstream, mckey,
#      evrdma-probed and embed under valgrind memcheck (make
#      check-valgrind: those the Makefile lists; EVR_CI_VALGRIND_TESTS=...
#      picks some);
#   4. libFuzzer: every target of tests/fuzz/ for EVR_CI_FUZZ_SECS (15)
#      seconds from the repository's corpus (scripts/fuzz.sh); a finding
#      fails CI and prints the reproducer.  make check replays the corpora
#      in passes 1 and 2 already;
#   5. the Debian packages (scripts/deb.sh): dpkg-buildpackage -b of a copy
#      of the tracked files (its own tests skipped: nocheck), lintian (no
#      error, no warning), then tests/deb/check-deb.sh installs them in a
#      throwaway root and runs them (EVR_CI_DEB=0: not run).
# Exit status: 0 only when every pass passed.
# EVR_CI_TESTS=... limits make check to those tests, EVR_CI_RXE=0 skips
# the Soft-RoCE suite (both for trying this script out, not for CI).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/deps.sh"

# check-valgrind runs every e2e script under memcheck (valgrind.sh skips
# itself there: it is the normal pass's curated valgrind run).  The
# timing-bound ones scale (E2E_TIME_SCALE 20); the checks that cannot mean
# anything under valgrind skip loudly (memory footprints, which are
# memcheck's own; an fd limit of 5, below what valgrind keeps for
# itself).  EVR_CI_VALGRIND_TESTS=... runs only the scripts named.
VG_TESTS=${EVR_CI_VALGRIND_TESTS:-all}
[ "$VG_TESTS" = all ] && VG_TESTS=

status=0
total_pass=0
total_fail=0
summary=""
add() { summary+="$*"$'\n'; }
now() { date +%s; }

# tally LABEL TRS...: count the .trs results, print the failures' logs now
# (a later pass in the same directory rewrites them), and add the Check
# and e2e summary lines to the final summary.
tally() {
	local label=$1 p f s log
	shift
	p=$( (grep -l '^:test-result: PASS' "$@" 2>/dev/null || true) | wc -l)
	f=$( (grep -l -E '^:test-result: (FAIL|ERROR)' "$@" 2>/dev/null || true) | wc -l)
	s=$( (grep -l '^:test-result: SKIP' "$@" 2>/dev/null || true) | wc -l)
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
	for log in $( (grep -l -E '^:test-result: (FAIL|ERROR)' "$@" 2>/dev/null || true) |
		sed 's/\.trs$/.log/'); do
		echo "--- $label: $log"
		echo "failed checks:"
		grep -a -E '^(not ok|FAIL)' "$log" | head -n 20 || true
		echo "the first, with what it said:"
		grep -a -m1 -A12 -E '^(not ok|FAIL)' "$log" || true
		echo "its last lines:"
		tail -n 30 "$log"
		# the summary is what a truncated CI log keeps: name the failed
		# checks there too, each with its first line of diagnosis
		add "  ! $label: ${log##*/}:"
		while IFS= read -r line; do
			add "  !   ${line:0:200}"
		done < <(grep -a -A1 -E '^(not ok|FAIL -)|:[FE]:' "$log" | grep -a -v -E '^--$' | head -n 8)
	done
	for log in "$@"; do
		log=${log%.trs}.log
		[ -f "$log" ] || continue
		case $log in
		*/check_*) add "  $(grep -h -E '^[0-9]+%: Checks: ' "$log" || echo "${log##*/}: no Check summary")" ;;
		*) add "  $(printf '%-16s' "${log##*/}"): $(grep -h -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)$(grep -q '^:test-result: SKIP' "${log%.log}.trs" 2>/dev/null && echo " SKIPPED: $(grep -h -m1 -E '^SKIP: ' "$log" | cut -c7-)")" ;;
		esac
	done
	add "  => $p passed, $f failed, $s skipped"
}

# rxe LABEL BUILDDIR: the Soft-RoCE suite (skips loudly where qemu cannot
# run); its summary lines, and one result in the totals.
rxe() {
	local label=$1 dir=$2 only=${3:-} kernel=${4:-stable} rc=0 t0 log
	if [ "${EVR_CI_RXE:-1}" = 0 ]; then
		add "  check-rxe ($label): not run (EVR_CI_RXE=0)"
		return 0
	fi
	t0=$(now)
	log=$dir/tests/rxe-guest.log
	[ "$kernel" = stable ] || log=$dir/tests/rxe-guest-$kernel.log
	[ "${EVR_RXE_SIW:-0}" = 1 ] && log=${log%.log}-siw.log
	EVR_RXE_KERNEL=$kernel EVR_RXE_ONLY=${only:-*} "$top/tests/rxe/check-rxe.sh" "$dir" || rc=$?
	add "  check-rxe ($label${only:+, guest-$only.sh}, $(( $(now) - t0 )) s):" \
		"$(grep -a -h -E 'passed, [0-9]+ failed' "$log" 2>/dev/null | tr '\n' ' ' || true)"
	case $rc in
	0) add "  check-rxe: passed"; total_pass=$((total_pass + 1)) ;;
	77) add "  check-rxe: SKIPPED (see above)" ;;
	*) add "  check-rxe: FAILED"; total_fail=$((total_fail + 1)); status=1
		# the summary is what a truncated CI log keeps: each failed
		# check of the guest, with its first line of diagnosis
		while IFS= read -r line; do
			add "  !   ${line:0:300}"
		done < <(grep -a -E '^FAIL: ' "$log" 2>/dev/null | head -n 8 || true) ;;
	esac
}

# ---- 1. the normal build
t0=$(now)
"$top/scripts/build.sh"
cd "$top/build"
# shellcheck disable=SC2086
make -j2 check ${EVR_CI_TESTS:+TESTS="$EVR_CI_TESTS"} || status=1
add "== normal build (./build): make check, $(( $(now) - t0 )) s"
tally "normal build" tests/*.trs tests/e2e/*.trs
rxe "normal build" "$top/build"
# soft-iWARP, in a guest of its own (tests/rxe/vm.sh --siw: siw built from
# Debian's linux-source, half a minute, cached): guest-siw.sh.  Not with
# the others: with siw0 and siw1 there, guest-nicfail.sh's agent ends its
# device cycles holding their contexts, 4 descriptors more than it
# started with (librdmacm's re-read after a device left opens every
# device present, and keeps each until it leaves: issue 37, guest-siw.sh's
# last check)
EVR_RXE_SIW=1 rxe "normal build, soft-iWARP" "$top/build" "siw*"
# the fabric (hosts in namespaces, racks, spines): Soft-RoCE per network
# namespace needs Linux 7.1+, Debian's trixie-backports kernel; the NIC
# failures again there (7.x sends DEVICE_FATAL on a removal, 6.1 not)
rxe "normal build, Linux 7.3 guest" "$top/build" "{fabric,fleetprom,nicfail}" backports

# ---- 2. the ASan+UBSan build
t0=$(now)
"$top/scripts/build.sh" --dir build-asan --enable-sanitizers
cd "$top/build-asan"
# shellcheck disable=SC2086
make -j2 check ${EVR_CI_TESTS:+TESTS="$EVR_CI_TESTS"} || status=1
add "== ASan+UBSan build (./build-asan): make check, $(( $(now) - t0 )) s"
tally "ASan+UBSan build" tests/*.trs tests/e2e/*.trs
if [ "${EVR_CI_RXE_ASAN:-1}" = 1 ]; then
	rxe "ASan+UBSan build" "$top/build-asan" '{rstream,faults,mckey,nicfail}'
else
	add "  check-rxe with the ASan build: not run (EVR_CI_RXE_ASAN=0)"
fi

# ---- 3. the end-to-end scripts under valgrind memcheck
t0=$(now)
cd "$top/build"
# check-valgrind writes the same tests/e2e/*.log: keep pass 1's aside
rm -rf tests/e2e-normal && mkdir tests/e2e-normal
mv tests/e2e/*.log tests/e2e/*.trs tests/e2e-normal/ 2>/dev/null || true
# shellcheck disable=SC2086
make -j2 check-valgrind ${VG_TESTS:+E2E_VALGRIND_TESTS="$VG_TESTS"} || status=1
add "== valgrind memcheck (./build, make check-valgrind: ${VG_TESTS:-the scripts E2E_VALGRIND_TESTS lists}), $(( $(now) - t0 )) s"
tally "valgrind e2e" tests/e2e/*.trs

# ---- 4. libFuzzer, briefly
t0=$(now)
frc=0
"$top/scripts/fuzz.sh" "${EVR_CI_FUZZ_SECS:-15}" >"$top/build/fuzz.log" 2>&1 || frc=$?
tail -n 20 "$top/build/fuzz.log"
add "== libFuzzer (scripts/fuzz.sh ${EVR_CI_FUZZ_SECS:-15} s a target), $(( $(now) - t0 )) s"
while IFS= read -r l; do add "  $l"; done < <(sed -n '/^target  *cpu_s/,$p' "$top/build/fuzz.log" | grep -a -v -E '^ +(reproducer|log):')
case $frc in
0) add "  fuzz: passed"; total_pass=$((total_pass + 1)) ;;
77) add "  fuzz: SKIPPED: $(grep -a -m1 '^SKIP' "$top/build/fuzz.log")" ;;
*) add "  fuzz: FAILED (log: build/fuzz.log)"; total_fail=$((total_fail + 1)); status=1 ;;
esac

# ---- 5. the Debian packages
if [ "${EVR_CI_DEB:-1}" = 1 ]; then
	t0=$(now)
	drc=0
	"$top/scripts/deb.sh" --out "$top/build-deb" >"$top/build/deb.log" 2>&1 || drc=$?
	add "== Debian packages (scripts/deb.sh: build, lintian, installed and run in a throwaway root), $(( $(now) - t0 )) s"
	grep -a -E '^not ok ' "$top/build/deb.log" && tail -n 40 "$top/build/deb.log"
	while IFS= read -r l; do add "  $l"; done < <(grep -a -E '^not ok ' "$top/build/deb.log" | head -n 20 || true
		grep -a -E '^[0-9]+ passed, [0-9]+ failed' "$top/build/deb.log" | tail -n 1)
	if [ "$drc" = 0 ]; then
		add "  deb: passed"; total_pass=$((total_pass + 1))
	else
		add "  deb: FAILED (log: build/deb.log)"; total_fail=$((total_fail + 1)); status=1
	fi
else
	add "== Debian packages: not run (EVR_CI_DEB=0)"
fi

echo
echo "=================================================================="
printf '%s' "$summary"
[ "$total_fail" = 0 ] || status=1
# the failed checks once more, at the end: a CI log cut in its middle
# keeps its head and its tail
if grep -q '^  ! ' <<<"$summary"; then
	echo "failed checks (the lines marked ! above, again):"
	awk '/^  ! / && n++ < 40' <<<"$summary"
fi
echo "$total_pass passed, $total_fail failed"
exit "$status"
