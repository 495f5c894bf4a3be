# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# shellcheck shell=bash
#
# report_check SCRATCH SAN VG WHAT: after an end-to-end script, any
# sanitizer report (SAN=yes: the ASan+UBSan build; reports in
# SCRATCH/sanitizer, or a report line in any file under SCRATCH) or, with
# VG=1, any valgrind memcheck log (tests/e2e/vgmode.sh) of a program the
# script ran is a failure, named; otherwise one ok line each.  Uses the
# sourcing harness's ok and not_ok.  Sourced by tests/e2e/lib.sh and by
# tests/e2e/mckey-udp.sh (which has a harness of its own).

# report_setup SCRATCH SAN: in the sanitizer build (SAN=yes), every
# program's ASan/UBSan report goes to a file in SCRATCH/sanitizer
# (log_path), whatever a test does with its stderr: report_check reads
# them there.
report_setup() { # SCRATCH SAN
	[ "$2" = yes ] || return 0
	mkdir -p "$1/sanitizer"
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$1/sanitizer/asan"
	UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$1/sanitizer/ubsan"
	export ASAN_OPTIONS UBSAN_OPTIONS
}

REPORT_SAN_ERE='ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|SUMMARY: (Address|Undefined|Leak)Sanitizer'

report_check() { # SCRATCH SAN VG WHAT
	local dir=$1 san=$2 vg=$3 what=$4 f found=0
	if [ "$vg" = 1 ]; then
		while IFS= read -r f; do
			found=1
			not_ok "valgrind memcheck report ${f##*/}: $(grep -m1 -vE '^==[0-9]+== *$' "$f")"
			head -n 40 "$f" | sed 's/^/#   | /'
		done < <(vg_mode_reports)
		[ "$found" = 0 ] && ok "no memcheck report from any $what ($(vg_mode_logs | wc -l) processes)"
	fi
	[ "$san" = yes ] || return 0
	found=0
	for f in "$dir"/sanitizer/*; do
		[ -s "$f" ] || continue
		found=1
		not_ok "sanitizer report ${f##*/}: $(grep -m1 -E "$REPORT_SAN_ERE" "$f")"
		head -n 40 "$f" | sed 's/^/#   | /'
	done
	while IFS= read -r f; do
		found=1
		not_ok "sanitizer report in ${f#"$dir"/}: $(grep -m1 -E "$REPORT_SAN_ERE" "$f")"
		grep -E -A 30 "$REPORT_SAN_ERE" "$f" | head -n 40 | sed 's/^/#   | /'
	done < <(grep -rlsIE --exclude-dir=sanitizer -- "$REPORT_SAN_ERE" "$dir")
	[ "$found" = 0 ] && ok "no ASan/UBSan/LSan report from any $what"
	return 0
}
