#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# (Re)writes the seeds of the fuzz corpora, tests/fuzz/corpus/TARGET/seed-*:
# command lines from the documentation (README.md, doc/usage.md) and the man pages (arguments separated by
# NUL bytes, argv[0] left out) and binary messages made by the project's
# own encoders (gen_corpus.c).  Other files there (regress-*: inputs that
# found bugs) are left alone.
#
#   tests/fuzz/gen-corpus.sh            (CC defaults to cc)
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
corpus=$here/corpus
CC=${CC:-cc}

for t in rstream_opts mckey_opts plan rsproto mc_payload nlmon; do
	mkdir -p "$corpus/$t"
	rm -f "$corpus/$t"/seed-*
done

# A command line: seed NAME TARGET ARG...
seed() {
	name=$1 target=$2
	shift 2
	: >"$corpus/$target/seed-$name"
	first=1
	for a in "$@"; do
		[ $first = 1 ] || printf '\0' >>"$corpus/$target/seed-$name"
		printf '%s' "$a" >>"$corpus/$target/seed-$name"
		first=0
	done
}

# rstream: doc/usage.md and rstream.1, then the edges of every value
seed server            rstream_opts -T s
seed server-json       rstream_opts -T s --json --settings
seed server-async      rstream_opts -T s -T a
seed client-default    rstream_opts -T s -s 127.0.0.1
seed client-all        rstream_opts -T s -s 127.0.0.1 -S all
seed client-verify     rstream_opts -T s -s 127.0.0.1 -S 4096 -C 100 -I 10 -T v
seed client-pct        rstream_opts -T s -s 127.0.0.1 -S 64 -C 1 -I 100000 --percentiles
seed client-duration   rstream_opts -T s -s 127.0.0.1 -D 10
seed client-interval   rstream_opts -T s -s 127.0.0.1 --interval 1 --json
seed client-conns      rstream_opts -T s -T a -s 127.0.0.1 -c 100 -S 64 -C 10 --per-conn
seed client-conns-long rstream_opts -T s -T a -s 127.0.0.1 --connections=1000 -S 4096 -C 10 -I 10
seed rdma-client       rstream_opts -s 192.168.1.10 -b 192.168.1.11 -f ip -B 1m -i 0 -k 30 -T r
seed rdma-gid          rstream_opts -s fe80::1 -f gid -p 7472 -T nonblock
seed fork-server       rstream_opts -T fork --once --stall-timeout 2.5 -B 64k -T b
seed words             rstream_opts -T socket -T async -T verify -s h -T resolve
seed suffixes          rstream_opts -S 1g -B 1G -i 64k -s h -C 1000000000 -I 1
seed grouped           rstream_opts -TsTa -sh -S64 -C1
seed nonneg            rstream_opts -s h --no-negotiate -T v
seed neg-both          rstream_opts -s h --negotiate --no-negotiate
seed bad-size          rstream_opts -s h -S 1025m
seed bad-port          rstream_opts -p 65536
seed service-port      rstream_opts -p echo -s h
seed bad-test          rstream_opts -T x
seed server-duration   rstream_opts -D 1
seed blocking-conns    rstream_opts -s h -T b -c 2
seed unexpected        rstream_opts -s h extra
seed missing-arg       rstream_opts -s
seed unknown-long      rstream_opts --nope
seed help              rstream_opts --help
seed version           rstream_opts --version
seed dashdash          rstream_opts -s h -- -S 64
seed check             rstream_opts --check -b 198.18.0.1 -c 4
seed no-host-check     rstream_opts -s h --no-host-check
seed poll-usec         rstream_opts -s h -T a --poll-usec 1000
seed all-at-once       rstream_opts -s h -c 100 --all-at-once

# mckey: doc/usage.md and mckey.1
seed recv              mckey_opts -m 239.1.1.1 -b 198.18.0.2
seed send              mckey_opts -m 239.1.1.1 -b 198.18.0.1 -s
seed stats             mckey_opts -m 239.1.1.1 -b 198.18.0.2 -c 8 --stats
seed udp               mckey_opts -m 239.1.1.1 -b 10.0.0.1 --udp
seed udp-json          mckey_opts -m 239.1.1.1 -b 10.0.0.1 --udp --json --udp-port 7000
seed ipoib             mckey_opts -m ff12::1 -p 0x2 -o -l -C 0 -S 65507
seed udp-ps            mckey_opts -m 239.1.1.1 -p 0x111 -C 100000000 -S 0
seed unmapped          mckey_opts -M ff12:401b::1 -b 0:0:0:0:0:0:0:1
seed unmapped-nobind   mckey_opts -M ff12:401b::1
seed check            mckey_opts --check -b 198.18.0.1 -S 1000
seed check-no-group   mckey_opts --check
seed no-host-check    mckey_opts -m 239.1.1.1 -b 198.18.0.2 --no-host-check
seed timing            mckey_opts -m 239.1.1.1 -s --settle 0 --deadline 0.01 --rate 1e7
seed limits            mckey_opts -m 239.1.1.1 --udp --stats --window 64 --max-senders 1
seed stats-limits      mckey_opts -m 239.1.1.1 -b 10.0.0.1 --udp --stats --max-senders 16 --window 65536
seed limits-max        mckey_opts -m 239.1.1.1 --window=1048576 --max-senders=4096
seed trace             mckey_opts -m 239.1.1.1 --trace --rate=2.5 --settle=3600 --deadline=86400
seed grouped           mckey_opts -sol -m239.1.1.1 -c1024
seed bad-conns         mckey_opts -m 239.1.1.1 -c 1025
seed bad-ps            mckey_opts -m 239.1.1.1 -p 0x3
seed bad-rate          mckey_opts -m 239.1.1.1 --rate nan
seed no-group          mckey_opts -s
seed unexpected        mckey_opts -m 239.1.1.1 extra
seed help              mckey_opts --help
seed version           mckey_opts --version

# the binary seeds, from the encoders
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/evrdma"
printf '#define _GNU_SOURCE 1\n' >"$tmp/config.h"
sed -e 's/@EVR_VERSION_MAJOR@/0/; s/@EVR_VERSION_MINOR@/0/' \
    -e 's/@EVR_VERSION_MICRO@/0/; s/@PACKAGE_VERSION@/0.0.0/' \
    "$top/include/evrdma/version.h.in" >"$tmp/evrdma/version.h"
$CC -std=gnu11 -O1 -I"$tmp" -I"$top/include" -I"$top/src" \
	-o "$tmp/gen_corpus" "$here/gen_corpus.c" \
	"$top/src/stream/wire.c" "$top/src/stream/plan.c" \
	"$top/src/stream/rdma/rsproto.c" "$top/src/mcast/payload.c"
"$tmp/gen_corpus" "$corpus"

for t in rstream_opts mckey_opts plan rsproto mc_payload nlmon; do
	printf '%s: %s files\n' "$t" "$(ls "$corpus/$t" | wc -l)"
done
