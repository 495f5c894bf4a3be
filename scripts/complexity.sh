#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Branching in src/, measured as issue 39 and ../shared/review measure it:
# pmccabe's modified McCabe complexity (a switch counts once) of every
# function of every .c file, and the share of functions over 10, per
# directory and in all.  The functions over 10 are listed, most complex
# first, with -l.
#
#   scripts/complexity.sh [-l] [-m MAX_PERCENT]
#
# -m: exit 1 when the share in all is over MAX_PERCENT (issue 39 aims
# at 7).  pmccabe is installed by scripts/deps.sh.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
list=0 max=""
while getopts lm: o; do
	case $o in
	l) list=1 ;;
	m) max=$OPTARG ;;
	*) sed -n '9,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done
command -v pmccabe >/dev/null ||
	{ echo "complexity: pmccabe is not installed (scripts/deps.sh)" >&2; exit 2; }
cd "$top"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
# modified-mccabe traditional statements first-line lines file(line): name
find src -name '*.c' | sort | xargs pmccabe 2>/dev/null >"$tmp"
printf '%-22s %9s %8s %7s\n' directory functions "over 10" share
awk '{ f = $6; sub(/\([0-9]+\):$/, "", f); d = f; sub(/\/[^\/]*$/, "", d)
	n[d]++; all++; if ($1 > 10) { o[d]++; over++ } }
	END {
		for (d in n) printf "%-22s %9d %8d %6.1f%%\n", d, n[d], o[d], 100 * o[d] / n[d] | "sort"
		close("sort")
		printf "%-22s %9d %8d %6.1f%%\n", "all", all, over, 100 * over / all
	}' "$tmp"
if [ "$list" = 1 ]; then
	echo
	sort -rn "$tmp" | awk '$1 > 10 { printf "%3d  %s %s\n", $1, $6, $7 }'
fi
if [ -n "$max" ]; then
	awk -v m="$max" '{ all++; if ($1 > 10) over++ }
		END { s = 100 * over / all; if (s > m) { printf "complexity: %.1f %% of functions over 10, more than %s %%\n", s, m > "/dev/stderr"; exit 1 } }' "$tmp"
fi
