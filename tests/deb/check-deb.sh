#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The Debian packages (scripts/deb.sh builds them), installed for real and
# run, on a root nothing persists from: a mount and network namespace
# (unshare -m -n) in which an overlay with a tmpfs upper layer covers /,
# chrooted into.  dpkg -i runs the maintainer scripts (the system user is
# created, the unit left disabled), yet the machine's dpkg database, /etc
# and /usr are untouched, and the only network is the namespace's own
# loopback.  Then: evrdma-rstream over loopback TCP, against itself and
# against rdmacm-utils' /usr/bin/rstream (which must still be there, and
# print the same table header); the daemon as its user on 127.0.0.1,
# scraped with curl; the unit through systemd-analyze verify; a program
# built against libevrdma-dev; and a purge.
#   tests/deb/check-deb.sh DIR    DIR holds the .debs
# Needs root (mounts, chroot).  Prints "ok -"/"not ok -" lines and
# "N passed, N failed"; exit 0 only when all passed, 77 when it cannot
# run here (not root, no overlayfs).  Every wait is bounded.
set -uo pipefail
# ok and not_ok return 0: "COND && ok || not_ok" is an if-then-else here
# shellcheck disable=SC2015

if [ "${1:-}" = --in-root ]; then
	# ------------------------------------------------ inside the chroot
	cd /tmp/deb || exit 2
	pass=0 fail=0
	ok() { pass=$((pass + 1)); echo "ok - $*"; }
	not_ok() {
		fail=$((fail + 1))
		echo "not ok - $1"
		[ -z "${2:-}" ] || printf '%s\n' "$2" | sed 's/^/#   /' | head -n 20
	}
	check() { # DESCRIPTION COMMAND...: ok when it exits 0 (output shown when not)
		local d=$1 out
		shift
		if out=$("$@" 2>&1); then ok "$d"; else not_ok "$d" "$out"; fi
	}
	ip link set lo up

	# ---- install: everything but the debug symbols
	debs=()
	for d in ./*.deb; do
		case $d in *-dbgsym_*) ;; *) debs+=("$d") ;; esac
	done
	check "dpkg -i $(printf '%s\n' "${debs[@]}" | sed 's|^\./||; s|_.*||' | tr '\n' ' ')" \
		env DEBIAN_FRONTEND=noninteractive dpkg -i "${debs[@]}"
	check "rdmacm-utils stays installed and unchanged (dpkg --verify)" \
		dpkg --verify rdmacm-utils
	owner=$(dpkg -S /usr/bin/rstream /usr/bin/mckey 2>&1 | cut -d: -f1 | sort -u)
	[ "$owner" = rdmacm-utils ] && ok "/usr/bin/rstream and mckey are still rdmacm-utils'" ||
		not_ok "/usr/bin/rstream and mckey are still rdmacm-utils'" "$owner"

	# ---- the tools under their packaged names
	v=$(timeout 5 evrdma-rstream --version 2>&1)
	case $v in "rstream (evrdma) "[0-9]*) ok "evrdma-rstream --version: $v" ;;
	*) not_ok "evrdma-rstream --version says rstream (evrdma) VERSION" "$v" ;; esac
	v=$(timeout 5 evrdma-mckey --version 2>&1)
	case $v in "mckey (evrdma) "[0-9]*) ok "evrdma-mckey --version: $v" ;;
	*) not_ok "evrdma-mckey --version says mckey (evrdma) VERSION" "$v" ;; esac
	p=$(man -w evrdma-rstream 2>&1)
	[ "$p" = /usr/share/man/man1/evrdma-rstream.1.gz ] && ok "man evrdma-rstream: $p" ||
		not_ok "man evrdma-rstream is the packaged page" "$p"
	p=$(man -w rstream 2>&1)
	[ "$(dpkg -S "$p" 2>&1 | cut -d: -f1)" = rdmacm-utils ] && ok "man rstream is still rdmacm-utils' ($p)" ||
		not_ok "man rstream is still rdmacm-utils'" "$p"

	# wait_port PORT SECS: until something listens on 127.0.0.1:PORT
	wait_port() {
		for _ in $(seq 1 $(($2 * 10))); do
			[ -n "$(ss -Htln "sport = :$1")" ] && return 0
			sleep 0.1
		done
		return 1
	}
	header=$(printf '%-10s%-8s%-8s%-8s%-8s%8s %10s%13s' name bytes xfers iters total time Gb/sec usec/xfer)
	# ours against ours, loopback TCP
	timeout 30 evrdma-rstream -T s -p 7471 -S 1000 -C 100 -I 10 --once >srv.out 2>srv.err &
	spid=$!
	if wait_port 7471 10; then
		timeout 30 evrdma-rstream -T s -s 127.0.0.1 -p 7471 -S 1000 -C 100 -I 10 >cli.out 2>cli.err
		rc=$?
		wait "$spid"
		src=$?
		[ "$rc/$src" = 0/0 ] && ok "evrdma-rstream client and --once server over loopback TCP exit 0" ||
			not_ok "evrdma-rstream client and --once server exit 0 (client $rc, server $src)" "$(cat cli.err srv.err)"
		[ "$(head -1 cli.out)" = "$header" ] && [ "$(wc -l <cli.out)" = 2 ] &&
			grep -q '^custom *1000 *100 *10 ' cli.out && [ ! -s cli.err ] &&
			ok "evrdma-rstream prints upstream's table (header + one custom row, no stderr)" ||
			not_ok "evrdma-rstream prints upstream's table" "$(cat cli.out cli.err)"
	else
		kill "$spid" 2>/dev/null
		not_ok "evrdma-rstream server listens on 127.0.0.1:7471" "$(cat srv.err)"
	fi
	# upstream's client against our server: the same table, the same header
	timeout 30 evrdma-rstream -T s -p 7472 -S 1000 -C 100 -I 10 --once >srv2.out 2>srv2.err &
	spid=$!
	if wait_port 7472 10; then
		timeout 30 /usr/bin/rstream -T s -s 127.0.0.1 -p 7472 -S 1000 -C 100 -I 10 >up.out 2>up.err
		rc=$?
		wait "$spid"
		src=$?
		[ "$rc/$src" = 0/0 ] && [ "$(head -1 up.out)" = "$(head -1 srv2.out)" ] &&
			[ "$(head -1 up.out)" = "$header" ] &&
			ok "upstream /usr/bin/rstream against evrdma-rstream: both exit 0, same header" ||
			not_ok "upstream /usr/bin/rstream against evrdma-rstream (client $rc, server $src)" \
				"$(cat up.out up.err srv2.out srv2.err)"
	else
		kill "$spid" 2>/dev/null
		not_ok "evrdma-rstream server listens on 127.0.0.1:7472" "$(cat srv2.err)"
	fi

	# ---- the daemon's package
	u=$(getent passwd evrdma-probed)
	case $u in evrdma-probed:*:/nonexistent:/usr/sbin/nologin) ok "system user created: $u" ;;
	*) not_ok "system user evrdma-probed (home /nonexistent, shell nologin)" "$u" ;; esac
	uid=$(echo "$u" | cut -d: -f3)
	[ -n "$uid" ] && [ "$uid" -lt 1000 ] && ok "evrdma-probed is a system uid ($uid)" ||
		not_ok "evrdma-probed is a system uid" "$uid"
	e=$(systemctl is-enabled evrdma-probed.service 2>&1)
	[ "$e" = disabled ] && ok "the unit is installed disabled (systemctl is-enabled: $e)" ||
		not_ok "the unit is installed disabled" "$e"
	[ -z "$(ls /etc/systemd/system/*.wants/evrdma-probed.service 2>/dev/null)" ] &&
		ok "no .wants link for the unit" || not_ok "no .wants link for the unit"
	cf=$(dpkg-query -W -f='${Conffiles}\n' evrdma-probed)
	grep -q '^ /etc/evrdma-probed.conf ' <<<"$cf" &&
		grep -q '^ /etc/default/evrdma-probed ' <<<"$cf" &&
		ok "conffiles: /etc/evrdma-probed.conf, /etc/default/evrdma-probed" ||
		not_ok "conffiles: /etc/evrdma-probed.conf, /etc/default/evrdma-probed" "$cf"
	unit=$(pkg-config --variable=systemdsystemunitdir systemd)/evrdma-probed.service
	out=$(timeout 60 systemd-analyze verify "$unit" 2>&1)
	rc=$?
	[ "$rc" = 0 ] && [ -z "$out" ] && ok "systemd-analyze verify $unit: clean" ||
		not_ok "systemd-analyze verify $unit: clean (rc $rc)" "$out"
	check "the shipped /etc/evrdma-probed.conf passes --check-config" \
		timeout 10 evrdma-probed --check-config -c /etc/evrdma-probed.conf
	[ -f /usr/share/evrdma/prometheus/evrdma-fabric.rules.yml ] &&
		check "peers2sd runs (--help)" timeout 10 /usr/share/evrdma/prometheus/peers2sd --help ||
		not_ok "/usr/share/evrdma/prometheus/evrdma-fabric.rules.yml is installed"
	check "the fleet dashboard is installed, Grafana's JSON model" \
		python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(d.get("uid") != "evrdma-fleet")' \
		/usr/share/evrdma/grafana/evrdma-fleet.json

	# the daemon as the unit runs it: its user, /etc/default's options, a
	# probe of a local evrdma-rstream server, /metrics on 127.0.0.1:9471
	timeout 60 evrdma-rstream -T s -p 7473 >psrv.out 2>psrv.err &
	ppid_=$!
	cat >probed.json <<'JSON'
{
  "listen_address": "127.0.0.1",
  "listen_port": 9471,
  "probes": [
    { "name": "lo", "type": "rstream", "host": "127.0.0.1", "port": 7473,
      "transport": "tcp", "size": 1000, "count": 1, "iters": 20,
      "interval_s": 0.5, "timeout_s": 5 }
  ]
}
JSON
	chmod 644 probed.json
	# shellcheck disable=SC1091
	. /etc/default/evrdma-probed
	# shellcheck disable=SC2086
	timeout 60 setpriv --reuid=evrdma-probed --regid=evrdma-probed --clear-groups \
		/usr/sbin/evrdma-probed -f -c /tmp/deb/probed.json $EVRDMA_PROBED_OPTS \
		>probed.out 2>probed.err &
	dpid=$!
	up=
	for _ in $(seq 1 150); do # 15 s
		curl -s -m 2 http://127.0.0.1:9471/metrics >metrics.txt 2>/dev/null &&
			grep -q '^evrdma_probe_up{probe="lo"} 1$' metrics.txt && { up=1; break; }
		kill -0 "$dpid" 2>/dev/null || break
		sleep 0.1
	done
	[ -n "$up" ] && ok "installed evrdma-probed, as its user: /metrics says evrdma_probe_up{probe=\"lo\"} 1" ||
		not_ok "installed evrdma-probed: /metrics says the loopback probe is up" \
			"$(grep 'probe="lo"' metrics.txt; cat probed.err)"
	grep -q '^evrdma_probe_runs_total{probe="lo"} [1-9]' metrics.txt &&
		ok "/metrics counts the probe's runs" ||
		not_ok "/metrics counts the probe's runs" "$(head -20 metrics.txt)"
	real=$(pgrep -P "$dpid" -x evrdma-probed)
	user=$(ps -o user= -p "${real:-0}" 2>&1)
	kill -TERM "${real:-$dpid}" 2>/dev/null
	wait "$dpid"
	rc=$?
	[ "$rc" = 0 ] && ok "SIGTERM: evrdma-probed exits 0" ||
		not_ok "SIGTERM: evrdma-probed exits 0 (got $rc)" "$(cat probed.err)"
	kill "$ppid_" 2>/dev/null
	wait "$ppid_" 2>/dev/null
	[ "$user" = evrdma-probed ] && ok "the daemon ran as evrdma-probed" ||
		not_ok "the daemon ran as evrdma-probed" "$user"

	# ---- libevrdma-dev: a program built with pkg-config, run on libevrdma1
	cat >ver.c <<'C'
#include <stdio.h>
#include <evrdma/version.h>
int main(void)
{
	const char *s;
	unsigned v = evr_version(&s);
	printf("%u %s %s\n", v, s, EVR_VERSION_STRING);
	return 0;
}
C
	# shellcheck disable=SC2046 # pkg-config's flags are words
	if out=$(cc -o ver ver.c $(pkg-config --cflags --libs evrdma) 2>&1); then
		out=$(./ver 2>&1)
		# shellcheck disable=SC2086 # its three words
		set -- $out
		libs=$(ldd ./ver 2>&1) # whole: grep -q would end ldd's pipe early (pipefail)
		[ "${2:-}" = "${3:-x}" ] && grep -q -E 'libevrdma\.so\.1 => (/usr)?/lib/' <<<"$libs" &&
			ok "a program built with pkg-config evrdma runs on libevrdma1 ($out)" ||
			not_ok "a program built with pkg-config evrdma runs on libevrdma1" "$out $libs"
	else
		not_ok "a program builds with pkg-config --cflags --libs evrdma" "$out"
	fi

	# ---- purge: conffiles and the packages go, rdmacm-utils stays
	check "dpkg --purge of the four packages" env DEBIAN_FRONTEND=noninteractive \
		dpkg --purge evrdma-probed evrdma-utils libevrdma-dev libevrdma1
	[ ! -e /etc/evrdma-probed.conf ] && [ ! -e /etc/default/evrdma-probed ] &&
		[ ! -e /usr/bin/evrdma-rstream ] && ok "purged: conffiles and programs gone" ||
		not_ok "purged: conffiles and programs gone"
	check "rdmacm-utils still intact after the purge" dpkg --verify rdmacm-utils
	echo "$pass passed, $fail failed"
	[ "$fail" = 0 ]
	exit
fi

if [ "${1:-}" = --in-ns ]; then
	# ------------------------- in the namespaces: the overlay, the chroot
	T=$2 D=$3
	R=$T/root
	mount -t tmpfs -o mode=0755 evrdma-deb "$T/rw" || exit 77
	mkdir -p "$T/rw/upper" "$T/rw/work"
	mount -t overlay overlay -o "lowerdir=/,upperdir=$T/rw/upper,workdir=$T/rw/work" "$R" ||
		{ echo "SKIP: no overlayfs here"; exit 77; }
	mount -t proc proc "$R/proc"
	mount --rbind /dev "$R/dev"
	mount --rbind /sys "$R/sys"
	mount -t tmpfs -o mode=0755 run "$R/run"
	mount -t tmpfs -o mode=1777 tmp "$R/tmp"
	mkdir -p "$R/tmp/deb"
	cp "$D"/*.deb "$R/tmp/deb/"
	cp "$0" "$R/tmp/deb/check-deb.sh"
	exec chroot "$R" /bin/bash /tmp/deb/check-deb.sh --in-root
fi

# ----------------------------------------------------------- the host
D=${1:?usage: check-deb.sh DIR-WITH-DEBS}
D=$(cd "$D" && pwd) || exit 2
ls "$D"/*.deb >/dev/null 2>&1 || { echo "check-deb.sh: no .deb in $D" >&2; exit 2; }
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: check-deb.sh needs root (unshare -m -n, mount, chroot)"
	exit 77
fi
T=$(mktemp -d /tmp/evrdma-deb.XXXXXX)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/rw" "$T/root"
# the namespaces die with the process: every mount with them
timeout 300 unshare -m -n --propagation private "$(cd "$(dirname "$0")" && pwd)/$(basename "$0")" \
	--in-ns "$T" "$D"
rc=$?
[ "$rc" = 124 ] && echo "not ok - check-deb.sh finished within 300 s"
exit "$rc"
