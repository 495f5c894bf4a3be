#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Configure and build out of tree, in ./build unless --dir DIR (relative
# to the top of the source tree, or absolute).  Extra arguments go to
# configure, e.g. scripts/build.sh --dir build-asan --enable-sanitizers.
# A directory is configured when it has no Makefile yet, or when
# configure arguments are given.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=build
if [ "${1:-}" = --dir ]; then
	[ $# -ge 2 ] || { echo "build.sh: --dir needs a directory" >&2; exit 2; }
	dir=$2
	shift 2
fi
case $dir in /*) ;; *) dir=$top/$dir ;; esac
cd "$top"
# a warning fails the build; its "installing 'build-aux/...'" lines are
# shown only then
if ! { [ -x configure ] && [ configure -nt configure.ac ] && [ configure -nt Makefile.am ]; }; then
	out=$(autoreconf -fi -Wall,error 2>&1) || { printf '%s\n' "$out" >&2; exit 1; }
fi
mkdir -p "$dir"
cd "$dir"
if [ ! -f Makefile ] || [ "$#" -gt 0 ]; then
	"$top/configure" -q "$@"
fi
make -j"$(nproc)" >/dev/null
echo "build: ok ($dir)"
