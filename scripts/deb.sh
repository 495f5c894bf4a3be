#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Build the Debian packages (debian/) from a copy of the tracked files, as
# a clean clone has them, check them with lintian (no error, no warning)
# and install and run them in a throwaway root (tests/deb/check-deb.sh).
#   scripts/deb.sh [--out DIR]   DIR: build-deb under the top by default;
#                                the .debs end up in DIR
# The package build skips its own unit tests (DEB_BUILD_OPTIONS=nocheck):
# CI runs the suite in its other passes.  Prints "N passed, N failed";
# exit status 0 only when everything passed.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/build-deb
if [ "${1:-}" = --out ]; then
	[ $# -ge 2 ] || { echo "deb.sh: --out needs a directory" >&2; exit 2; }
	out=$2
fi
case $out in /*) ;; *) out=$PWD/$out ;; esac
"$top/scripts/deps.sh" --deb

pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok - $*"; }
not_ok() { fail=$((fail + 1)); echo "not ok - $*"; }

# the tracked files as they are in the work tree (a clean clone, plus any
# uncommitted edit), nothing the builds around them left
rm -rf "$out"
mkdir -p "$out/src"
(cd "$top" && git ls-files -z | tar --null -T - -cf -) | tar -C "$out/src" -xf -
# a file deleted from the work tree but not from the index
[ -f "$out/src/debian/control" ] || { echo "deb.sh: no debian/control" >&2; exit 2; }

t0=$(date +%s)
if (cd "$out/src" && DEB_BUILD_OPTIONS="nocheck parallel=2" \
	dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1; then
	ok "dpkg-buildpackage -us -uc -b ($(($(date +%s) - t0)) s)"
else
	not_ok "dpkg-buildpackage -us -uc -b (log: $out/build.log)"
	tail -n 30 "$out/build.log"
	echo "$pass passed, $fail failed"
	exit 1
fi
# the library's ABI as debian/libevrdma1.symbols lists it: an evr_ function
# added to or removed from the exports (src/libevrdma.map) must be there
# too; dpkg-gensymbols only warns on a new one
if grep -q "dpkg-gensymbols: warning: .*doesn't match completely" "$out/build.log"; then
	not_ok "debian/libevrdma1.symbols lists exactly the exported symbols"
	sed -n '/^--- debian\/libevrdma1.symbols/,/^ *dh_/p' "$out/build.log" | head -n 20
else
	ok "debian/libevrdma1.symbols lists exactly the exported symbols"
fi
for d in "$out"/*.deb; do
	echo "  ${d##*/}: $(dpkg-deb -c "$d" | awk '$1 !~ /^d/' | wc -l) files"
done

# lintian: nothing at E: or W: level, and no override in debian/
changes=$(echo "$out"/evrdma_*.changes)
lintian --fail-on error,warning "$changes" >"$out/lintian.log" 2>&1 && lrc=0 || lrc=$?
if [ "$lrc" = 0 ] && ! grep -q -E '^[EW]: ' "$out/lintian.log"; then
	ok "lintian: no error, no warning"
else
	not_ok "lintian: no error, no warning"
	cat "$out/lintian.log"
fi
if [ -n "$(find "$out/src/debian" -name '*lintian-overrides*')" ]; then
	not_ok "no lintian overrides in debian/"
else
	ok "no lintian overrides in debian/"
fi

# installed and run, in a root nothing persists from
if "$top/tests/deb/check-deb.sh" "$out" >"$out/check-deb.log" 2>&1; then crc=0; else crc=$?; fi
cat "$out/check-deb.log"
p=$(grep -c '^ok ' "$out/check-deb.log" || true)
f=$(grep -c '^not ok ' "$out/check-deb.log" || true)
pass=$((pass + p))
fail=$((fail + f))
[ "$crc" = 0 ] || [ "$f" -gt 0 ] || not_ok "tests/deb/check-deb.sh exited $crc"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
