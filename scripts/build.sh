#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Configure and build in ./build (out of tree).  Extra arguments go to
# configure, e.g. scripts/build.sh --enable-sanitizers.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
[ -x configure ] && [ configure -nt configure.ac ] && [ configure -nt Makefile.am ] ||
	autoreconf -fi >/dev/null
mkdir -p build
cd build
if [ ! -f Makefile ] || [ "$#" -gt 0 ]; then
	../configure -q "$@"
fi
make -j"$(nproc)" >/dev/null
echo "build: ok ($top/build)"
