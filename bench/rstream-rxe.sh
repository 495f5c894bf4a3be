#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Benchmark: evrdma rstream against upstream rstream (rdmacm-utils) over
# RDMA on Soft-RoCE (rdma_rxe), inside one boot of the project's qemu guest
# (tests/rxe/vm.sh): the default run and a few custom tests, each tool
# against itself, in turns.  Prints per-row medians and ratios per case.
# Not a test: it asserts nothing.  Soft-RoCE is an emulation in software
# under qemu TCG here: absolute figures say little about real hardware;
# the ratios compare the two implementations' protocol and CPU costs.
#
#   bench/rstream-rxe.sh [-r rounds] [-d default-run-rounds] [-c "cases"]
#                        [-o out.md]
#       -c: only these cases (names as bench/rxe-guest.sh gives them,
#           e.g. -c "64B-pingpong 64B-pingpong-async")
#       -k DIR: keep each run's output there (CASE/WHO.ROUND)
#       -B DIR: a second evrdma build (its DIR/rstream) as a third side
#           in the same rounds, e.g. a worktree of the commit before a
#           change: ratios against upstream and against this build
#           (one boot's drift cancels, as in every paired ratio here)
#   bench/rstream-rxe.sh --iwarp [-r rounds] [-c "cases"] [-o out.md]
#       the same over soft-iWARP (tests/rxe/vm.sh --siw: siw1's address,
#       rsockets' message dialect at both ends), the cases upstream 44
#       runs there (its default run's bandwidth series fails on iWARP:
#       rdma-core v51's fc82b150b); MIXED pairings as below
#   bench/rstream-rxe.sh --instr [-n "SHORT LONG"] [-o out.md]
#       user-space instructions per 64-byte round trip of the client,
#       upstream's and ours, default mode and -T a (callgrind in the
#       guest, bench/rxe-instr-guest.sh): a count, not a time, so it does
#       not move with the host's load the way the timings do
#   bench/rstream-rxe.sh --conns [-n "COUNTS"] [-o out.txt]
#       the connection-scaling curve (bench/rxe-conns-guest.sh) in a 4 GiB
#       guest: one client of -c N against one server, N from 1 to 10,000
#       (or COUNTS); with -o, also out.txt.png, connect time and memory
#       per connection against N (gnuplot, scripts/deps.sh --bench)
#   bench/rstream-rxe.sh --responder [-n "COUNTS"] [-o out.txt]
#       an agent's RDMA responder in memory (bench/rxe-responder-guest.sh):
#       evrdma-probed's RSS idle, at the peak of one rstream -c N client
#       and after it (N 1 64 256 1024, or COUNTS)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$top/build}
# the guest ahead of whatever else runs on the host (as root): less noise
[ "$(id -u)" = 0 ] && export EVR_RXE_NICE=${EVR_RXE_NICE:--10}
rounds=5
drounds=5
out=
conns=
resp=
instr=
cases=
keep=
counts=
buildb=
net=rxe
while [ $# -gt 0 ]; do
	case $1 in
	--iwarp) net=iwarp; shift ;;
	--conns) conns=1; shift ;;
	--responder) resp=1; shift ;;
	--instr) instr=1; shift ;;
	-r) rounds=$2; shift 2 ;;
	-d) drounds=$2; shift 2 ;;
	-c) cases=$2; shift 2 ;;
	-k) keep=$2; shift 2 ;;
	-B) buildb=$(cd "$2" && pwd); shift 2 ;;
	-n) counts=$2; shift 2 ;;
	-o) out=$2; shift 2 ;;
	*) echo "usage: $0 [-r rounds] [-d default-run-rounds] [-c \"cases\"] [-k dir] [-B build2] [-o out.md]" >&2; exit 1 ;;
	esac
done
[ -x "$build/rstream" ] || { echo "bench: build first ($build/rstream missing)" >&2; exit 1; }
[ -z "$buildb" ] || [ -x "$buildb/rstream" ] ||
	{ echo "bench: -B $buildb: no rstream there (build it first)" >&2; exit 1; }
addb=()
[ -z "$buildb" ] || addb=(--add "$buildb/rstream=/opt/evr/rstream_b")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log=$tmp/console.log

if [ -n "$instr" ]; then
	command -v valgrind >/dev/null && [ -x /usr/libexec/valgrind/callgrind-amd64-linux ] ||
		{ echo "bench: --instr needs valgrind (scripts/deps.sh installs it)" >&2; exit 1; }
	vg=()
	for f in /usr/bin/valgrind /usr/bin/valgrind.bin \
		/usr/libexec/valgrind/callgrind-amd64-linux \
		/usr/libexec/valgrind/vgpreload_core-amd64-linux.so \
		/usr/libexec/valgrind/default.supp; do
		[ -e "$f" ] && vg+=(--add "$f=/opt/vg/${f##*/}")
	done
	"$top/tests/rxe/vm.sh" --prepare >&2
	echo "bench: booting the guest; callgrind runs take a minute or two" >&2
	"$top/tests/rxe/vm.sh" --timeout "${EVR_RXE_TIMEOUT:-3600}" --log "$log" \
		--add "$build/rstream=/opt/evr/rstream" "${vg[@]}" \
		--add "$top/tests/rxe=/opt/evr/tests" \
		"$top/bench/rxe-instr-guest.sh" $counts 2>&1 |
		grep --line-buffered -a '^instr:' >&2 || true
	{
		echo "User-space instructions per 64-byte round trip, the client (callgrind, Soft-RoCE guest; $(date -u +%F)):"
		echo
		echo "| mode | upstream | evrdma | ratio |"
		echo "|---|---:|---:|---:|"
		tr -d '\r' <"$log" | awk '$1 == "instr:" && $4 == "per-rt" { v[$2, $3] = $5 }
		END { split("def a", m, " "); for (i = 1; i <= 2; i++) {
			u = v["up", m[i]]; e = v["ev", m[i]]
			printf "| %s | %s | %s | %s |\n", (m[i] == "a" ? "-T a" : "default"), u, e, (u > 0 ? sprintf("%.2f", e / u) : "-") } }'
	} | tee "${out:-/dev/null}"
	exit 0
fi
if [ -n "$resp" ]; then
	[ -x "$build/evrdma-probed" ] || { echo "bench: build first ($build/evrdma-probed missing)" >&2; exit 1; }
	"$top/tests/rxe/vm.sh" --prepare >&2
	"$top/tests/rxe/vm.sh" --timeout "${EVR_RXE_TIMEOUT:-3600}" --log "$log" \
		--mem 4096 --add "$build/rstream=/opt/evr/rstream" \
		--add "$build/evrdma-probed=/opt/evr/evrdma-probed" \
		--add "$top/tests/rxe=/opt/evr/tests" \
		"$top/bench/rxe-responder-guest.sh" $counts 2>&1 |
		grep --line-buffered -a '^resp:' | tee "${out:-/dev/null}"
	exit 0
fi
if [ -n "$conns" ]; then
	"$top/tests/rxe/vm.sh" --prepare >&2
	"$top/tests/rxe/vm.sh" --timeout "${EVR_RXE_TIMEOUT:-7200}" --log "$log" \
		--mem 4096 --add "$build/rstream=/opt/evr/rstream" \
		--add "$top/tests/rxe=/opt/evr/tests" \
		"$top/bench/rxe-conns-guest.sh" $counts 2>&1 |
		grep --line-buffered -a '^conns:' | tee "${out:-/dev/null}"
	if [ -n "$out" ] && command -v gnuplot >/dev/null; then
		awk '$1 == "conns:" && $4 == "0" { print $2, $8, $14 }' "$out" >"$tmp/curve.dat"
		gnuplot <<-EOF
		set terminal pngcairo size 800,480
		set output "$out.png"
		set title "evrdma: one rstream -c N client, one server, Soft-RoCE (qemu TCG)"
		set logscale x
		set xlabel "connections (N)"
		set ylabel "seconds until all N are up"
		set y2label "server KiB per connection"
		set ytics nomirror
		set y2tics
		set key top left
		plot "$tmp/curve.dat" using 1:2 with linespoints title "connect time", \
		     "$tmp/curve.dat" using 1:3 axes x1y2 with linespoints title "server memory per connection"
		EOF
		echo "bench: plotted $out.png" >&2
	fi
	exit 0
fi
if [ "$net" = iwarp ]; then
	# siw in the guest; the cases upstream 44 runs over iWARP
	export EVR_RXE_SIW=1
	[ -n "$cases" ] || cases="64B-pingpong 4KiB-pingpong 64KiB-stream 1MB-stream 64B-stream 4KiB-stream 64B-pingpong-async"
fi
"$top/tests/rxe/vm.sh" --prepare >&2
echo "bench: booting the guest ($net); progress below" >&2
"$top/tests/rxe/vm.sh" --timeout "${EVR_RXE_TIMEOUT:-5400}" --log "$log" \
	--add "$build/rstream=/opt/evr/rstream" "${addb[@]}" \
	--add "$top/tests/rxe=/opt/evr/tests" \
	"$top/bench/rxe-guest.sh" "$rounds" "$drounds" "$cases" "$net" 2>&1 |
	grep --line-buffered -a '^bench:' >&2 || true

# split the console log into CASE/WHO.ROUND files
awk -v dir="$tmp" '
/^@@ begin / { f = dir "/" $3; system("mkdir -p " f); f = f "/" $4 "." $5; next }
/^@@ end/ { close(f); f = ""; next }
f != "" { sub(/\r$/, ""); print > f }' "$log"
{
	for c in $(sed -n 's/^bench: case \([^:]*\):.*/\1/p' "$log"); do
		[ -d "$tmp/$c" ] || { echo "bench: no results for $c" >&2; continue; }
		echo "### $(grep -a -m1 "^bench: case $c:" "$log" | sed 's/^bench: case //')"
		echo
		awk -f "$top/bench/ratios.awk" "$tmp/$c"/up.* "$tmp/$c"/ev.*
		echo
		# the mixed pairings and the second build, each against
		# upstream at both ends
		for m in eu ue eb; do
			ls "$tmp/$c"/$m.* >/dev/null 2>&1 || continue
			case $m in
			eu) w="evrdma client, upstream server" ;;
			ue) w="upstream client, evrdma server" ;;
			eb) w="the -B build ($buildb)" ;;
			esac
			mkdir -p "$tmp/mix-$c-$m"
			for f in "$tmp/$c"/$m.*; do
				cp "$f" "$tmp/mix-$c-$m/ev.${f##*.}"
			done
			echo "$w (the ev columns), against upstream at both ends:"
			echo
			awk -f "$top/bench/ratios.awk" "$tmp/$c"/up.* "$tmp/mix-$c-$m"/ev.*
			echo
		done
		if ls "$tmp/$c"/eb.* >/dev/null 2>&1; then
			# this build (ev) against the -B build (as "up")
			mkdir -p "$tmp/ab-$c"
			for f in "$tmp/$c"/eb.*; do
				cp "$f" "$tmp/ab-$c/up.${f##*.}"
			done
			echo "this build (the ev columns) against the -B build (the upstream columns):"
			echo
			awk -f "$top/bench/ratios.awk" "$tmp/ab-$c"/up.* "$tmp/$c"/ev.*
			echo
		fi
	done
	# CPU: each side's user + system seconds (its rusage), medians
	# over the rounds, both sides summed; the ratio is evrdma's
	# (or the mixed pairing's) over upstream's at both ends
	if grep -qa '^@@ cpu ' "$log"; then
		echo "CPU seconds per run (client + server, medians of the rounds):"
		echo
		echo "| case | upstream | evrdma | ratio | evrdma client, upstream server | upstream client, evrdma server | upstream s/GB | evrdma s/GB | upstream s/M msgs | evrdma s/M msgs |"
		echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
		tr -d '\r' <"$log" | awk '
		function med(s,   a, n, i, j, t) { n = split(s, a, " ")
			for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
			return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2 }
		# a case of one test: the bytes and messages a run moves, both
		# ways (-S x -C x -I, twice), for the per-GB and per-million columns
		$1 == "bench:" && $2 == "case" { k = $3; sub(/:$/, "", k); sz = cn = it = 0
			for (j = 4; j < NF; j++) { if ($j == "-S") sz = $(j+1); if ($j == "-C") cn = $(j+1); if ($j == "-I") it = $(j+1) }
			if (sz && cn && it) { gb[k] = 2 * sz * cn * it / 1e9; mm[k] = 2 * cn * it / 1e6 } }
		$1 == "@@" && $2 == "cpu" { k = $3; if (!(k in seen)) { seen[k] = 1; order[++no] = k }
			v[k, $4] = v[k, $4] " " ($6 + $7) }
		END { for (i = 1; i <= no; i++) { k = order[i]
			u = ((k SUBSEP "up") in v) ? med(v[k, "up"]) : 0
			e = ((k SUBSEP "ev") in v) ? med(v[k, "ev"]) : 0
			eu = ((k SUBSEP "eu") in v) ? sprintf("%.2f", med(v[k, "eu"])) : "-"
			ue = ((k SUBSEP "ue") in v) ? sprintf("%.2f", med(v[k, "ue"])) : "-"
			pg = (k in gb) ? sprintf("%.1f | %.1f", u / gb[k], e / gb[k]) : "- | -"
			pm = (k in mm) ? sprintf("%.1f | %.1f", u / mm[k], e / mm[k]) : "- | -"
			printf "| %s | %.2f | %.2f | %s | %s | %s | %s | %s |\n", k, u, e, (u > 0 ? sprintf("%.2f", e / u) : "-"), eu, ue, pg, pm }
			for (i = 1; i <= no; i++) { k = order[i]
				if (!((k SUBSEP "eb") in v)) continue
				b = med(v[k, "eb"]); u = ((k SUBSEP "up") in v) ? med(v[k, "up"]) : 0
				printf "\nthe -B build, %s: %.2f s (%s x upstream)\n", k, b, (u > 0 ? sprintf("%.2f", b / u) : "-") } }'
		echo
	fi
	if [ "$net" = iwarp ]; then
		echo "soft-iWARP (siw, rsockets' message dialect at both ends) in a qemu TCG guest, 2 vCPUs on $(nproc) host CPUs;"
	else
		echo "Soft-RoCE (rdma_rxe) in a qemu TCG guest, 2 vCPUs on $(nproc) host CPUs;"
	fi
	echo "$rounds rounds ($drounds for the default run), medians and per-round paired ratios; $(date -u +%F)."
} | tee "${out:-/dev/null}"
if [ -n "$keep" ]; then
	mkdir -p "$keep"
	cp -r "$tmp"/. "$keep"/
fi
