#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# fabric.sh -- an RDMA fabric of many hosts inside the Soft-RoCE guest.
#
# Needs the guest's newer kernel (tests/rxe/vm.sh --kernel backports):
# from Linux 7.1 Soft-RoCE opens its UDP socket per network namespace, so
# an rxe device in a namespace carries traffic to rxe devices in others.
# Each host is a namespace with one veth and one rxe device on it; the
# hosts of a rack hang off their leaf's bridge; every leaf is a router
# with one uplink to each spine, and reaches the other racks over all
# spines at once (ECMP, hashed on the UDP ports: RoCEv2's source port is
# a flow's entropy, so one host pair's QPs take different spines).
#
#       s1           s2              spines (namespaces s1, s2)
#       | \         / |              links lR-sS, 10.10S.R.0/24
#       l1            l2             leaves (namespaces l1, l2): routers,
#      /  \          /  \              bridge "rack" 10.R.0.254/24
#    h1    h2      h3    h4          hosts (namespaces hN): eth0
#  10.1.0.1 ...  10.2.0.1 ...        10.R.0.I/24, rxe device rxehN
#
# Multicast crosses racks through smcroute: each leaf forwards its rack's
# groups to s1 and what comes from s1 into its rack; s1 forwards from each
# leaf to the others (s2 carries unicast only).  A bridge does not snoop
# IGMP here, so a rack's receivers all hear the group.
#
# Source it (a library) or run it:
#   fabric.sh up RACKS HOSTS_PER_RACK     build (2 spines, FAB_GROUPS)
#   fabric.sh down                        take it all away
#   fabric.sh fault KIND LINK|HOST [ARG]  inject; fabric.sh clear LINK|HOST
# Kinds: down, up (a link); loss PCT, delay MS, reorder PCT (tc netem on
# both ends of a link); rnic-del, rnic-add (a host's rxe device).
# A link is named by its host ("h3": the host's cable to its leaf) or by
# its ends ("l1-s2").  Hosts are also in /etc/hosts by name (h1 ... hN).
# Everything stays inside the guest; nothing here has a way out.

FAB_SPINES=${FAB_SPINES:-2}
FAB_GROUPS=${FAB_GROUPS:-239.1.1.1 239.1.1.2}
FAB_RUN=${FAB_RUN:-/run/fabric}

# fab_x NS CMD...: run in a namespace
fab_x() { local n=$1; shift; ip netns exec "$n" "$@"; }
fab_rack() { echo $(( ($1 - 1) / FAB_PER + 1 )); }
fab_addr() { echo "10.$(fab_rack "$1").0.$(( ($1 - 1) % FAB_PER + 1 ))"; }
fab_names() { local i; for i in $(seq "$2"); do echo "$1$i"; done; } # PREFIX N
fab_hosts() { fab_names h $((FAB_RACKS * FAB_PER)); }
fab_dev() { echo "rxe$1"; }      # the rxe device of host hN: rxehN

fab_die() { echo "fabric: $*" >&2; return 1; }

# fab_require_netns TALLY WHAT: a guest script's start.  rxe opens its
# UDP socket per network namespace from Linux 7.1 on; before, no traffic
# flows between namespaces (tests/rxe/vm.sh --kernel backports).  On an
# older kernel the script says so, prints its tally line (TALLY: 0
# passed, 0 failed) and exits 0.
fab_require_netns() {
	local kv maj min
	kv=$(uname -r)
	maj=${kv%%.*}; min=${kv#*.}; min=${min%%.*}
	[ "$maj" -gt 7 ] || { [ "$maj" = 7 ] && [ "$min" -ge 1 ]; } && return 0
	echo "SKIP: $2 needs Soft-RoCE per network namespace (Linux 7.1+), this guest runs $kv"
	echo "$1: 0 passed, 0 failed (skipped: kernel $kv)"
	exit 0
}

fab_sysctl() { # NS: a router's or host's settings
	fab_x "$1" sysctl -qw net.ipv4.ip_forward="$2" \
		net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 \
		net.ipv4.fib_multipath_hash_policy=1 \
		net.ipv4.conf.all.ignore_routes_with_linkdown=1 >/dev/null
}

# fab_up RACKS PER_RACK
fab_up() {
	FAB_RACKS=$1 FAB_PER=$2
	[ "$FAB_RACKS" -ge 1 ] && [ "$FAB_RACKS" -le 8 ] && [ "$FAB_PER" -ge 1 ] &&
		[ "$FAB_PER" -le 32 ] || fab_die "up: 1-8 racks of 1-32 hosts" || return 1
	mkdir -p "$FAB_RUN"
	printf 'FAB_RACKS=%s\nFAB_PER=%s\n' "$FAB_RACKS" "$FAB_PER" >"$FAB_RUN/shape"
	local r s n h a nh g others
	for s in $(seq "$FAB_SPINES"); do
		ip netns add "s$s"; fab_x "s$s" ip link set lo up; fab_sysctl "s$s" 1
	done
	for r in $(seq "$FAB_RACKS"); do
		ip netns add "l$r"; fab_x "l$r" ip link set lo up; fab_sysctl "l$r" 1
		fab_x "l$r" ip link add rack type bridge mcast_snooping 0
		fab_x "l$r" ip addr add "10.$r.0.254/24" dev rack
		fab_x "l$r" ip link set rack up
		for s in $(seq "$FAB_SPINES"); do
			ip link add "s$s" netns "l$r" type veth peer name "l$r" netns "s$s"
			fab_x "l$r" ip addr add "10.10$s.$r.1/24" dev "s$s"
			fab_x "s$s" ip addr add "10.10$s.$r.2/24" dev "l$r"
			fab_x "l$r" ip link set "s$s" up
			fab_x "s$s" ip link set "l$r" up
		done
	done
	for h in $(fab_hosts); do
		n=${h#h}; r=$(fab_rack "$n"); a=$(fab_addr "$n")
		ip netns add "$h"; fab_x "$h" ip link set lo up; fab_sysctl "$h" 0
		ip link add eth0 netns "$h" type veth peer name "$h" netns "l$r"
		fab_x "l$r" ip link set "$h" master rack up
		fab_x "$h" ip addr add "$a/24" dev eth0
		fab_x "$h" ip link set eth0 up
		fab_x "$h" rdma link add "$(fab_dev "$h")" type rxe netdev eth0 ||
			fab_die "rdma link add on $h failed" || return 1
		grep -q " $h\$" /etc/hosts || echo "$a $h" >>/etc/hosts
	done
	fab_routes
	fab_mroute
	fab_wait_active
	fab_warm
}

# the unicast routes, again after a link came back (a link that goes
# down takes its routes with it): hosts to their leaf, leaves to every
# other rack over every spine, spines to each rack's leaf
fab_routes() {
	fab_shape
	local r a s nh h
	for h in $(fab_hosts); do
		fab_x "$h" ip route replace default via "10.$(fab_rack "${h#h}").0.254" 2>/dev/null
	done
	for r in $(seq "$FAB_RACKS"); do
		for s in $(seq "$FAB_SPINES"); do
			fab_x "s$s" ip route replace "10.$r.0.0/24" via "10.10$s.$r.1" 2>/dev/null
		done
		for a in $(seq "$FAB_RACKS"); do
			[ "$a" = "$r" ] && continue
			nh=
			for s in $(seq "$FAB_SPINES"); do
				nh="$nh nexthop via 10.10$s.$r.2 dev s$s"
			done
			# shellcheck disable=SC2086
			fab_x "l$r" ip route replace "10.$a.0.0/24" $nh 2>/dev/null
		done
	done
}

# every host pings every other: the neighbour tables are filled, as on a
# fabric that carries traffic (a passive side whose reply finds no ARP
# entry for its next hop drops the RDMA CM's reply, and the first
# connect times out)
fab_warm() {
	local h n pids=()
	for h in $(fab_hosts); do
		for n in $(seq $((FAB_RACKS * FAB_PER))); do
			[ "h$n" = "$h" ] && continue
			ip netns exec "$h" ping -c 1 -W 1 "$(fab_addr "$n")" >/dev/null 2>&1 &
			pids+=($!)
		done
	done
	wait "${pids[@]}"   # only these: the caller's own children run on
	fab_pin
}

# The neighbours the warm-up learnt, made permanent: a RoCE passive side
# resolves its reply's next hop when the RDMA CM's request comes, and a
# neighbour entry that is being re-checked just then (a slow guest: its
# first connects across racks timed out, 1 run in 5 in CI) fails the
# accept.  The fabric's faults are links and NICs, not ARP.
fab_pin() {
	local ns a d m
	for ns in $(ip netns list | awk '$1 ~ /^(h|l|s)[0-9]+$/ {print $1}'); do
		fab_x "$ns" ip neigh show | awk '/lladdr/ { print $1, $3, $5 }' |
			while read -r a d m; do
				fab_x "$ns" ip neigh replace "$a" dev "$d" lladdr "$m" nud permanent
			done
	done
}

# multicast across racks: smcroute in each leaf and in s1, a static
# (source, group) route for every host and group.  A (*,G) route would
# be resolved on the first packet, and the kernel keeps only 3 packets
# of a flow while it waits: a burst of datagrams would lose most.
fab_mroute() {
	command -v smcrouted >/dev/null || { echo "fabric: no smcrouted: one rack's multicast only" >&2; return 0; }
	local r a g n src ns others
	for r in $(seq "$FAB_RACKS"); do : >"$FAB_RUN/l$r.conf"; done
	: >"$FAB_RUN/s1.conf"
	for n in $(seq $((FAB_RACKS * FAB_PER))); do
		src=$(fab_addr "$n"); r=$(fab_rack "$n")
		others=
		for a in $(seq "$FAB_RACKS"); do [ "$a" = "$r" ] || others="$others l$a"; done
		[ -n "$others" ] || continue
		for g in $FAB_GROUPS; do
			echo "mroute from rack source $src group $g to s1" >>"$FAB_RUN/l$r.conf"
			echo "mroute from l$r source $src group $g to$others" >>"$FAB_RUN/s1.conf"
			for a in $others; do
				echo "mroute from s1 source $src group $g to rack" >>"$FAB_RUN/$a.conf"
			done
		done
	done
	for ns in $(fab_names l "$FAB_RACKS") s1; do
		# it daemonizes: no child of the caller's shell (whose "wait"
		# would wait for ever)
		fab_x "$ns" smcrouted -l err -f "$FAB_RUN/$ns.conf" -i "fab-$ns" \
			-P "$FAB_RUN/$ns.pid" -u "$FAB_RUN/$ns.sock" \
			>"$FAB_RUN/$ns.log" 2>&1 </dev/null
	done
	for ns in $(fab_names l "$FAB_RACKS") s1; do
		for _ in $(seq 50); do [ -S "$FAB_RUN/$ns.sock" ] && break; sleep 0.1; done
	done
}

fab_wait_active() { # every host's port ACTIVE (its GIDs there), 10 s at most
	local h i
	for h in $(fab_hosts); do
		for i in $(seq 100); do
			rdma link show "$(fab_dev "$h")/1" 2>/dev/null | grep -q 'state ACTIVE' &&
				fab_x "$h" ip -o addr show dev eth0 | grep -q ' inet ' && break
			sleep 0.1
		done
	done
}

fab_shape() { [ -n "${FAB_RACKS:-}" ] || . "$FAB_RUN/shape"; }

# An out-of-band management network, as a fabric's monitoring has: a
# bridge "oob" in the guest's own namespace (10.255.0.254/24) and one
# veth "oob0" in every host (10.255.0.N for hN), carrying no RDMA.  A
# Prometheus in the guest's namespace scrapes the agents over it, so the
# fabric's faults take away probes, never the monitor's view of them.
fab_oob_addr() { echo "10.255.0.$1"; }
fab_oob() {
	fab_shape
	local h
	ip link add oob type bridge 2>/dev/null || fab_die "oob: a bridge oob exists" || return 1
	ip addr add 10.255.0.254/24 dev oob
	ip link set oob up
	for h in $(fab_hosts); do
		ip link add oob0 netns "$h" type veth peer name "o$h"
		ip link set "o$h" master oob up
		fab_x "$h" ip addr add "$(fab_oob_addr "${h#h}")/24" dev oob0
		fab_x "$h" ip link set oob0 up
	done
}

fab_down() {
	local ns p
	for p in "$FAB_RUN"/*.pid; do [ -e "$p" ] && kill "$(cat "$p")" 2>/dev/null; done
	for ns in $(ip netns list | awk '$1 ~ /^(h|l|s)[0-9]+$/ {print $1}'); do
		case $ns in
		h*) rdma link delete "rxe$ns" 2>/dev/null ;;
		esac
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns delete "$ns"
	done
	ip link delete oob 2>/dev/null
	rm -rf "$FAB_RUN"
}

# fab_link LINK: "NS1 IF1 NS2 IF2", its two ends
fab_link() {
	fab_shape
	case $1 in
	h[0-9]*) echo "$1 eth0 l$(fab_rack "${1#h}") $1" ;;
	l[0-9]*-s[0-9]*) local l=${1%-*} s=${1#*-}; echo "$l $s $s $l" ;;
	*) fab_die "no such link: $1 (hN or lR-sS)"; return 1 ;;
	esac
}

# fab_fault KIND TARGET [ARG]
fab_fault() {
	local kind=$1 t=$2 arg=${3:-} e n1 i1 n2 i2
	case $kind in
	rnic-del) rdma link delete "$(fab_dev "$t")"; return ;;
	rnic-add) fab_x "$t" rdma link add "$(fab_dev "$t")" type rxe netdev eth0; return ;;
	esac
	e=$(fab_link "$t") || return 1
	read -r n1 i1 n2 i2 <<<"$e"
	case $kind in
	down|up) fab_x "$n1" ip link set "$i1" "$kind"; fab_x "$n2" ip link set "$i2" "$kind" ;;
	loss) fab_netem "$n1" "$i1" loss "$arg%"; fab_netem "$n2" "$i2" loss "$arg%" ;;
	delay) fab_netem "$n1" "$i1" delay "${arg}ms"; fab_netem "$n2" "$i2" delay "${arg}ms" ;;
	reorder) # reordering needs a delay to reorder against
		fab_netem "$n1" "$i1" delay 1ms reorder "$arg%"
		fab_netem "$n2" "$i2" delay 1ms reorder "$arg%" ;;
	*) fab_die "no such fault: $kind"; return 1 ;;
	esac
}
fab_netem() { local n=$1 i=$2; shift 2; fab_x "$n" tc qdisc replace dev "$i" root netem "$@"; }

fab_clear() { # TARGET: the link up, no netem
	local e n1 i1 n2 i2
	e=$(fab_link "$1") || return 1
	read -r n1 i1 n2 i2 <<<"$e"
	fab_x "$n1" tc qdisc del dev "$i1" root 2>/dev/null
	fab_x "$n2" tc qdisc del dev "$i2" root 2>/dev/null
	fab_x "$n1" ip link set "$i1" up; fab_x "$n2" ip link set "$i2" up
	case $1 in h[0-9]*) fab_unwedge "$1" ;; esac
	fab_routes
	fab_warm
}

# fab_unwedge HOST: Soft-RoCE's own wedge (doc/reliability.md): a link
# taken down under a live connection leaves the host's GSI QP (QP1, the
# RDMA CM's messages) in the error state, and nothing in the kernel
# resets it; the device added again does.  Only then, and said.
fab_unwedge() {
	rdma resource show qp link "$(fab_dev "$1")/1" 2>/dev/null |
		grep -q 'type GSI state ERR' || return 0
	echo "fabric: $1's GSI QP is in the error state after its link came back (Soft-RoCE's wedge): $(fab_dev "$1") added again" >&2
	fab_fault rnic-del "$1"
	fab_fault rnic-add "$1"
	fab_wait_active
}

# fab_spine_bytes S: bytes the spine S has forwarded (its leaf links' tx)
fab_spine_bytes() {
	fab_x "s$1" cat /proc/net/dev | awk -F'[: ]+' '$2 ~ /^l[0-9]+$/ { s += $11 } END { print s + 0 }'
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -u
	cmd=${1:-}; shift || true
	case $cmd in
	up) fab_up "$@" ;;
	down) fab_down ;;
	fault) fab_fault "$@" ;;
	clear) fab_clear "$@" ;;
	*) sed -n '3,38p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
	esac
fi
