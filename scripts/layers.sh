#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Circles of files in src/, read from the built objects' symbols: file A
# depends on file B when A's object uses a symbol B's object defines.  A
# circle is a set of two or more files each of which depends on every
# other one, through the others if not directly (a strongly connected
# component of that graph).  Layers call downward only; a circle means
# two files that cannot be read, tested or replaced one without the
# other (issue 39).
#
#   scripts/layers.sh [-k KNOWN] [-v] [BUILD_DIR]
#
# Prints each circle (its files, and for each file the symbols it takes
# from the others of its circle) and a last line "layers: N circles, F
# files in them".  With -k KNOWN (tests/layers.known: one circle a line,
# its files sorted, space-separated): exits 1 when a circle is not on
# that list, so none can be made and none can grow while the known ones
# are taken apart; a known circle that is gone is said, so that its line
# can go.  Exit 0 otherwise, 2 on a usage error or missing build.
set -euo pipefail
known="" verbose=0
while getopts k:v o; do
	case $o in
	k) known=$OPTARG ;;
	v) verbose=1 ;;
	*) sed -n '12,20p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
# the sources the objects were built from (a VPATH build's srcdir)
src=${EVR_SRCDIR:-$top}
if [ ! -d "$build/src" ]; then
	echo "layers: no $build/src: build first (scripts/build.sh)" >&2
	exit 2
fi
command -v nm >/dev/null || { echo "layers: nm is not installed (binutils)" >&2; exit 2; }
if [ -n "$known" ] && [ ! -r "$known" ]; then
	echo "layers: cannot read $known" >&2
	exit 2
fi
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
# one object a source file: the non-libtool copy, its program prefix
# (evrdma_probed-http.o) taken off
n=0
while IFS= read -r o; do
	f=${o#"$build"/}
	b=${f##*/}
	b=${b#*-}
	f=${f%/*}/${b%.o}.c
	# an object whose source is gone (a file moved since it was
	# built) is stale: its symbols would count twice
	[ -f "$src/$f" ] || continue
	# "D file symbol" for a definition, "U file symbol" for a use
	nm -g --defined-only "$o" | awk -v f="$f" 'NF == 3 { print "D", f, $3 }' >>"$tmp"
	nm -u "$o" | awk -v f="$f" '{ print "U", f, $NF }' >>"$tmp"
	n=$((n + 1))
done < <(find "$build/src" -name '*.o' -not -path '*/.libs/*' | sort)
if [ "$n" -eq 0 ]; then
	echo "layers: no objects under $build/src: build first" >&2
	exit 2
fi

awk -v known="$known" -v verbose="$verbose" -v nobj="$n" '
$1 == "D" { def[$3] = $2; files[$2] = 1; next }
$1 == "U" { use[++nu] = $2 SUBSEP $3; files[$2] = 1 }
END {
	nf = 0
	for (f in files) id[f] = ++nf
	for (f in files) name[id[f]] = f
	for (i = 1; i <= nu; i++) {
		split(use[i], u, SUBSEP)
		if (!(u[2] in def) || def[u[2]] == u[1]) continue
		a = id[u[1]]; b = id[def[u[2]]]
		edge[a, b] = 1
		if ((a, b) in why) why[a, b] = why[a, b] " " u[2]
		else why[a, b] = u[2]
	}
	# reachability (Warshall): a few dozen files
	for (a = 1; a <= nf; a++) for (b = 1; b <= nf; b++) r[a, b] = ((a, b) in edge)
	for (k = 1; k <= nf; k++) for (a = 1; a <= nf; a++) if (r[a, k])
		for (b = 1; b <= nf; b++) if (r[k, b]) r[a, b] = 1
	nc = 0; inc = 0
	for (a = 1; a <= nf; a++) {
		if (a in seen) continue
		m = name[a]; cnt = 1
		for (b = 1; b <= nf; b++)
			if (b != a && r[a, b] && r[b, a]) { m = m " " name[b]; seen[b] = 1; cnt++ }
		if (cnt < 2) continue
		seen[a] = 1
		# sorted, space-separated: the known list'"'"'s form
		k2 = split(m, mm, " ")
		for (i = 2; i <= k2; i++) { v = mm[i]; for (j = i - 1; j >= 1 && mm[j] > v; j--) mm[j + 1] = mm[j]; mm[j + 1] = v }
		line = mm[1]; for (i = 2; i <= k2; i++) line = line " " mm[i]
		circle[++nc] = line; inc += k2
		for (i = 1; i <= k2; i++) member[id[mm[i]]] = nc
	}
	if (known != "") while ((getline l < known) > 0) {
		if (l ~ /^#/ || l ~ /^[ \t]*$/) continue
		isknown[l] = 1
	}
	bad = 0
	for (c = 1; c <= nc; c++) {
		tag = known == "" ? "" : (circle[c] in isknown ? " (known)" : " (NEW: not in " known ")")
		if (known != "" && !(circle[c] in isknown)) bad++
		printf "circle %d%s: %s\n", c, tag, circle[c]
		k2 = split(circle[c], mm, " ")
		for (i = 1; i <= k2; i++) for (j = 1; j <= k2; j++) {
			a = id[mm[i]]; b = id[mm[j]]
			if (a == b || !((a, b) in edge)) continue
			s = why[a, b]; ns = split(s, ss, " ")
			if (!verbose && ns > 6) s = ss[1] " " ss[2] " " ss[3] " " ss[4] " ... (" ns ")"
			printf "  %s -> %s: %s\n", mm[i], mm[j], s
		}
		seenc[circle[c]] = 1
	}
	for (l in isknown) if (!(l in seenc))
		printf "gone: %s (a known circle no longer there: take its line out of %s)\n", l, known
	printf "layers: %d circles, %d files in them (of %d objects)\n", nc, inc, nobj
	exit bad > 0
}' "$tmp"
