#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Circles of files in src/ (issue 39), from the built objects' symbols
# (scripts/layers.sh): no circle beyond tests/layers.known, and no line
# there whose circle is gone (the list only shrinks, and says the truth).
# First the script itself, on two objects made here that call each other
# and a third that only calls down: it must find exactly that circle.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

L=$E2E_SRCDIR/scripts/layers.sh
T=$E2E_TMP
command -v nm >/dev/null || e2e_skip_all "nm is not installed (binutils)"

# the self-test: a.c <-> b.c, c.c -> a.c
mkdir -p "$T/b/src/x"
X=$T/b/src/x
printf 'int b1(void);\nint a1(void) { return b1(); }\nint a2(void) { return 2; }\n' >"$X/a.c"
printf 'int a2(void);\nint b1(void) { return a2(); }\n' >"$X/b.c"
printf 'int a1(void);\nint c1(void) { return a1(); }\n' >"$X/c.c"
printf 'int b1(void);\nint a2(void) { return b1(); }\n' >"$X/d.c"
for f in a b c d; do
	${CC:-cc} -c -o "$X/$f.o" "$X/$f.c" || not_ok "cc $f.c"
done
# d.o's source goes: a stale object (its file moved since); counted,
# its a2 would make a circle of b.c and d.c instead
rm "$X/d.c"
EVR_SRCDIR=$T/b "$L" "$T/b" >"$T/self.out" 2>&1
rc=$?
assert_exit "self-test: no known list, exit 0" 0 "$rc" "$T/self.out"
assert_match "self-test: a.c and b.c call each other: one circle of the two (d.o, stale, not counted)" \
	'^layers: 1 circles, 2 files in them \(of 3 objects\)$' "$T/self.out"
assert_match "self-test: the circle names them, c.c not in it" \
	'^circle 1: src/x/a\.c src/x/b\.c$' "$T/self.out"
assert_match "self-test: and the symbols of each side" '^  src/x/b\.c -> src/x/a\.c: a2$' "$T/self.out"
echo "src/x/a.c src/x/c.c" >"$T/known"
EVR_SRCDIR=$T/b "$L" -k "$T/known" "$T/b" >"$T/selfk.out" 2>&1
rc=$?
assert_exit "self-test: a circle not on the known list fails" 1 "$rc" "$T/selfk.out"
assert_match "self-test: ... named as new" '^circle 1 \(NEW: not in ' "$T/selfk.out"
assert_match "self-test: ... and a known line whose circle is gone is said" '^gone: src/x/a\.c src/x/c\.c ' "$T/selfk.out"

# the tree
EVR_SRCDIR=$E2E_SRCDIR "$L" -k "$E2E_SRCDIR/tests/layers.known" "$EVR_BUILDDIR" >"$T/tree.out" 2>&1
rc=$?
cat "$T/tree.out" | sed 's/^/# /'
assert_exit "src/: no circle of files beyond tests/layers.known" 0 "$rc" "$T/tree.out"
assert_no_match "tests/layers.known: no line for a circle that is gone" '^gone: ' "$T/tree.out"
e2e_done
