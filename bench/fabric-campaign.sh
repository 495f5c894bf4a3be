#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The fault campaign on the RDMA fabric: tests/rxe/guest-fleetprom.sh in the
# newer guest kernel (4 hosts in 2 racks, one evrdma-probed each with an
# rdma mesh, a Prometheus with the shipped rules), ROUNDS rounds of
# KINDS, one injection of each kind a round on the next host or spine
# link in turn.  Prints every injection (its time to the first alert
# naming its target, the alerts that fired) and per kind the recall, the
# precision and the time to the alert (median, max): doc/fabric.md's
# table.  CI runs 2 rounds of "dead rnic spine".
#
# usage: sudo bench/fabric-campaign.sh [-r ROUNDS] [-k "KINDS"] [BUILDDIR]
#   ROUNDS: 7 (42 injections of the 6 default kinds, about 25 minutes)
#   KINDS:  "dead loss delay rnic cpu spine" (also: down, which wedges
#           Soft-RoCE's CM on the host whose link went down under a live
#           connection: see doc/fabric.md)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
rounds=7
kinds="dead loss delay rnic cpu spine"
while getopts r:k: o; do
	case $o in
	r) rounds=$OPTARG ;;
	k) kinds=$OPTARG ;;
	*) sed -n '3,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
build=${1:-$here/../build}
case $rounds in ''|*[!0-9]*|0) echo "fabric-campaign: -r takes a positive number" >&2; exit 2 ;; esac
n=$(set -- $kinds; echo $#)
echo "fabric-campaign: $rounds rounds of $n kinds ($kinds): $((rounds * n)) injections, about $((rounds * n * 35 / 60 + 2)) min"
# a bound for the guest: setup, then 60 s an injection at most
EVR_RXE_KERNEL=backports EVR_RXE_ONLY=fleetprom FLEET_ROUNDS=$rounds FLEET_KINDS=$kinds FLEET_BOUND=20 \
	EVR_RXE_TIMEOUT=$((300 + rounds * n * 90)) "$here/../tests/rxe/check-rxe.sh" "$build" || true
log=$build/tests/rxe-guest-backports.log
echo "injections (kind target seconds right wrong alerts):"
grep -a '^# [a-z]* [hl][0-9]' "$log" | sed 's/^# /  /'
grep -a '^# kind\|^# [a-z]* *[0-9]' "$log" | sed 's/^# /  /'
