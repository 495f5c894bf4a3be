# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# shellcheck shell=bash
#
# E2E_VALGRIND=1 (make check-valgrind): every rstream, mckey,
# evrdma-probed and embedding example an end-to-end script starts runs
# under valgrind memcheck.  Sourced by tests/e2e/lib.sh and by
# tests/e2e/mckey-udp.sh (which has a harness of its own).
#
# vg_mode_setup DIR points $RSTREAM, $MCKEY, $PROBED and $EMBED at small
# wrappers in DIR/vgbin, named as the programs are, that exec valgrind on
# the real program (same pid, so signals and /proc checks reach it; its
# argv[0] is still the program's own path).  Each process writes its own
# log, DIR/valgrind/PROGRAM.PID.log (a fork server's children too); with
# --quiet a log stays empty unless memcheck has something to say, so
# vg_mode_reports lists every non-empty log: each is a failure.  An error
# also makes the program exit 86 (--error-exitcode), which no test expects.
# The programs' own stdout and stderr are untouched.
#
# vg_mode_wrap WRAPPER REAL LOGDIR writes one such wrapper; a log
# directory other than DIR/valgrind (lib.sh's e2e_user_bins: one that
# another user may write) is added to VG_MODE_DIRS, which vg_mode_logs
# and vg_mode_reports read.

# --vgdb=no: no gdbserver, so no /tmp/vgdb-pipe-* files: one left by a
# killed run of another user with the same pid made a later run as
# nobody fail ("cannot create shared_mem file ... Permission denied").
# shellcheck disable=SC2054 # the commas are valgrind's
VG_MODE_OPTS=(--quiet --leak-check=full
	--show-leak-kinds=definite,indirect,possible
	--errors-for-leak-kinds=definite,indirect,possible
	--error-exitcode=86 --track-fds=no --child-silent-after-fork=no
	--vgdb=no)

vg_mode_setup() { # DIR
	local dir=$1 var real w
	VG_MODE_DIR=$dir/valgrind
	VG_MODE_DIRS=("$VG_MODE_DIR")
	mkdir -p "$VG_MODE_DIR" "$dir/vgbin" || return 1
	for var in RSTREAM MCKEY PROBED EMBED; do
		real=${!var:-}
		[ -n "$real" ] && [ -x "$real" ] || continue
		w=$dir/vgbin/${real##*/}
		vg_mode_wrap "$w" "$real" "$VG_MODE_DIR" || return 1
		printf -v "$var" '%s' "$w"
		printf -v "VG_REAL_$var" '%s' "$real"
		export "${var?}" "VG_REAL_$var"
	done
}

vg_mode_wrap() { # WRAPPER REAL LOGDIR
	local d
	{
		echo '#!/bin/sh'
		printf 'exec valgrind'
		printf ' %q' "${VG_MODE_OPTS[@]}" \
			"--log-file=$3/${2##*/}.%p.log" "$2"
		echo ' "$@"'
	} >"$1" && chmod 755 "$1" || return 1
	for d in "${VG_MODE_DIRS[@]}"; do
		[ "$d" = "$3" ] && return 0
	done
	VG_MODE_DIRS+=("$3")
}

# Every log, one a line.
vg_mode_logs() {
	local d f
	for d in "${VG_MODE_DIRS[@]}"; do
		for f in "$d"/*.log; do
			[ -f "$f" ] && echo "$f"
		done
	done
	return 0
}

# The non-empty logs, one a line.
vg_mode_reports() {
	local f
	while IFS= read -r f; do
		[ -s "$f" ] && echo "$f"
	done < <(vg_mode_logs)
	return 0
}
