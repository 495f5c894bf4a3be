#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Branching in src/ (issue 39, HACKING.md "Structure, measured"): at most
# 7 % of the functions over pmccabe's complexity 10, by
# scripts/complexity.sh.  First the bound itself: -m 0 must fail on this
# tree (some function is over 10), and -m 100 pass.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

C=$E2E_SRCDIR/scripts/complexity.sh
T=$E2E_TMP
command -v pmccabe >/dev/null || e2e_skip_all "pmccabe is not installed (scripts/deps.sh installs it)"

"$C" -m 0 >"$T/m0.out" 2>&1
rc=$?
assert_exit "-m 0: a tree with any function over 10 is over the bound" 1 "$rc" "$T/m0.out"
assert_match "... and says by how much" '^complexity: [0-9.]+ % of functions over 10, more than 0 %$' "$T/m0.out"
"$C" -m 100 >"$T/m100.out" 2>&1
assert_exit "-m 100: never over" 0 "$?" "$T/m100.out"

"$C" -l -m 7 >"$T/tree.out" 2>&1
rc=$?
sed 's/^/# /' "$T/tree.out" | head -30
assert_exit "src/: at most 7 % of functions over complexity 10" 0 "$rc" "$T/tree.out"
assert_match "the share in all is reported" '^all +[0-9]+ +[0-9]+ +[0-9.]+%$' "$T/tree.out"
e2e_done
