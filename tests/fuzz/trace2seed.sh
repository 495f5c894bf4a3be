#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# A seed of the rsproto fuzz target (fuzz_rsproto.c) from a real peer's
# traffic: the --trace of an rstream that talked to it (the private data
# it sent, each message it sent, each ring entry it wrote).  The seed is
# the private data, then one step per message (at most 300): the
# message, and the entry when it came with one, each followed by the
# local side reading all and returning space, as a run does.
#
#   tests/fuzz/trace2seed.sh [--iwarp] TRACE OUT
#       --iwarp: the messages of rsockets' iWARP dialect (4 bytes in the
#       sender's order: the seed's flags byte gets the target's dialect
#       bit); else write-with-immediate (the immediate in network order)
#
# The corpus's capture-* seeds were made so, in the soft-iWARP guest
# (tests/fuzz/README).
set -eu
iwarp=0
[ "${1:-}" = --iwarp ] && { iwarp=1; shift; }
[ $# = 2 ] || { echo "usage: $0 [--iwarp] TRACE OUT" >&2; exit 2; }
awk -v iwarp="$iwarp" '
function le(v, n,   s, i) { s = ""; for (i = 0; i < n; i++) s = s substr(v, length(v) - 2 * i - 1, 2); return s }
# act: 0x71 (the message, read all, return space), 0x73 with an entry
function flush() { if (msg != "") { printf "%02x%s%s", (sge != "" ? 115 : 113), msg, sge; steps++ } msg = ""; sge = "" }
/ private data [0-9a-f]+$/ && pd == "" {
	pd = $NF
	if (length(pd) != 80) { print "trace2seed: private data of " length(pd) / 2 " bytes" > "/dev/stderr"; exit 2 }
	# the flags byte: its top bit set (a hex digit of 8 or more)
	if (iwarp) { h = index("0123456789abcdef", substr(pd, 3, 1)) - 1; if (h < 8) h += 8; pd = substr(pd, 1, 2) substr("0123456789abcdef", h + 1, 1) substr(pd, 4) }
	printf "%s", pd
	next
}
pd == "" || steps >= 300 { next }
/ <- msg [0-9a-f]+$/ && length($NF) == 8 {
	flush()
	msg = iwarp ? le($NF, 4) : $NF
	next
}
/ <- sge [0-9a-f]+ [0-9a-f]+ [0-9a-f]+$/ && msg != "" && length($(NF - 2)) == 16 {
	n = NF
	sge = le($(n - 2), 8) le($(n - 1), 4) le($n, 4)
	flush()
}
END { flush(); if (pd == "") { print "trace2seed: no private data in the trace" > "/dev/stderr"; exit 2 } }
' "$1" | perl -e 'local $/; print pack("H*", <STDIN>)' >"$2"
echo "trace2seed: $2: $(wc -c <"$2") bytes"
