#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Fuzz with libFuzzer (clang): build each target of tests/fuzz/ with
# -fsanitize=fuzzer,address,undefined and run it for a while, seeded with
# the repository's corpus (tests/fuzz/corpus/TARGET, read only) and
# growing a work corpus of its own.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#
# SECONDS_PER_TARGET defaults to 60; TARGETs to all of them:
#   rstream_opts mckey_opts plan rsproto mc_payload nlmon
#
# Everything goes under $FUZZ_OUT (default build-fuzz/ at the top of the
# tree): bin/ the targets, work/TARGET the work corpora, artifacts/TARGET
# what libFuzzer saves when it finds something, logs/TARGET.log its
# output.  CC (or CLANG) picks the compiler; FUZZ_NICE (default 10) the
# niceness; FUZZ_ARGS adds libFuzzer flags.
#
# Exits 0 when no target found anything, 1 when one did (the reproducer's
# path is printed: replay it with build-fuzz/bin/TARGET FILE, or with the
# suite's tests/fuzz/replay_TARGET FILE, and once fixed copy it to
# tests/fuzz/corpus/TARGET/regress-NAME), 77 when clang or libFuzzer is
# missing, 2 on a usage or build error.
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
all="rstream_opts mckey_opts plan rsproto mc_payload nlmon"

secs=60
if [ $# -gt 0 ]; then
	case $1 in
	''|*[!0-9]*) ;;
	*) secs=$1; shift ;;
	esac
fi
targets=${*:-$all}
for t in $targets; do
	case " $all " in
	*" $t "*) ;;
	*) echo "fuzz.sh: unknown target '$t' (known: $all)" >&2; exit 2 ;;
	esac
done

# The sources each target needs: narrow, so that nothing else links in.
srcs() {
	case $1 in
	rstream_opts) echo src/cli/rstream_opts.c src/cli/parse.c src/cli/threshold.c src/stream/plan.c ;;
	mckey_opts) echo src/cli/mckey_opts.c src/cli/parse.c src/cli/threshold.c ;;
	plan) echo src/stream/wire.c src/stream/plan.c ;;
	rsproto) echo src/stream/rdma/rsproto.c ;;
	mc_payload) echo src/mcast/payload.c ;;
	nlmon) echo src/loop/nlmon.c ;;
	esac
}

# Largest input: a command line of a few dozen arguments; a plan header
# and 64 entries; private data and a few dozen steps; a few messages, or
# some 300 short ones (more senders than a receiver tracks).
maxlen() {
	case $1 in
	rstream_opts|mckey_opts) echo 512 ;;
	plan) echo 1040 ;;
	rsproto) echo 1024 ;;
	mc_payload) echo 8192 ;;
	nlmon) echo 2048 ;;
	esac
}

# ---- clang and libFuzzer ----
cc=
for c in ${CLANG:-} ${CC:-} clang clang-19 clang-18 clang-17 clang-16 \
	 clang-15 clang-14; do
	if command -v "$c" >/dev/null 2>&1 &&
	   "$c" --version 2>/dev/null | grep -q clang; then
		cc=$c
		break
	fi
done
if [ -z "$cc" ]; then
	echo "fuzz.sh: SKIP: no clang found (set CC or CLANG); nothing fuzzed"
	exit 77
fi
out=${FUZZ_OUT:-$top/build-fuzz}
mkdir -p "$out/bin" "$out/inc/evrdma" "$out/logs" || exit 2
cat >"$out/probe.c" <<'PROBE'
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	(void)d;
	(void)n;
	return 0;
}
PROBE
if ! "$cc" -fsanitize=fuzzer,address,undefined -o "$out/probe" \
	"$out/probe.c" >"$out/logs/probe.log" 2>&1; then
	echo "fuzz.sh: SKIP: $cc cannot link with -fsanitize=fuzzer (libFuzzer" \
	     "missing? see $out/logs/probe.log); nothing fuzzed"
	exit 77
fi

# What configure would generate, as far as these sources need it.
printf '#define _GNU_SOURCE 1\n#define PACKAGE_VERSION "fuzz"\n' \
	>"$out/inc/config.h"
sed -e 's/@EVR_VERSION_MAJOR@/0/; s/@EVR_VERSION_MINOR@/0/' \
    -e 's/@EVR_VERSION_MICRO@/0/; s/@PACKAGE_VERSION@/fuzz/' \
    "$top/include/evrdma/version.h.in" >"$out/inc/evrdma/version.h"

CFLAGS_FUZZ="-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
-fno-omit-frame-pointer -g -O1 -std=gnu11 -Wall -Wextra -Wno-unused-parameter"

for t in $targets; do
	set --
	for s in $(srcs "$t"); do
		set -- "$@" "$top/$s"
	done
	# shellcheck disable=SC2086
	if ! "$cc" $CFLAGS_FUZZ -I"$out/inc" -I"$top/include" -I"$top/src" \
		-o "$out/bin/$t" "$top/tests/fuzz/fuzz_$t.c" "$@" \
		>"$out/logs/build-$t.log" 2>&1; then
		echo "fuzz.sh: building $t failed:" >&2
		cat "$out/logs/build-$t.log" >&2
		exit 2
	fi
done

# ---- run ----
status=0
nice=${FUZZ_NICE:-10}
printf '%-13s %8s %10s %10s %7s %7s  %s\n' target cpu_s execs exec/s cov ft \
	result
for t in $targets; do
	work=$out/work/$t
	art=$out/artifacts/$t
	log=$out/logs/$t.log
	mkdir -p "$work" "$art"
	dict=
	[ -f "$top/tests/fuzz/$t.dict" ] && dict=-dict=$top/tests/fuzz/$t.dict
	before=$(ls "$art" | wc -l)
	# The work corpus comes first: libFuzzer adds its finds there and
	# only reads the repository's.
	# shellcheck disable=SC2086
	/usr/bin/env time -f '%U %S' -o "$out/logs/$t.time" \
		nice -n "$nice" "$out/bin/$t" -max_total_time="$secs" \
		-max_len="$(maxlen "$t")" -timeout=10 -rss_limit_mb=2048 \
		-error_exitcode=1 -timeout_exitcode=1 -print_final_stats=1 \
		-artifact_prefix="$art/" $dict ${FUZZ_ARGS:-} \
		"$work" "$top/tests/fuzz/corpus/$t" >"$log" 2>&1
	rc=$?
	# (time(1) says "Command exited with non-zero status" first)
	cpu=$(tail -n 1 "$out/logs/$t.time" 2>/dev/null |
		awk '{ printf "%.0f", $1 + $2 }')
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
	last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
	cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
	if [ "$rc" -eq 0 ] && [ "$(ls "$art" | wc -l)" -eq "$before" ]; then
		result=ok
	else
		result="FOUND (exit $rc)"
		status=1
	fi
	printf '%-13s %8s %10s %10s %7s %7s  %s\n' "$t" "${cpu:-?}" \
		"${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$result"
	if [ "$status" -ne 0 ] && [ "$result" != ok ]; then
		grep -E 'ERROR|fuzz check failed|runtime error|SUMMARY' "$log" |
			head -n 5 | sed 's/^/    /'
		for f in $(ls -t "$art"); do
			echo "    reproducer: $art/$f"
		done
		echo "    log: $log"
	fi
done
exit $status
