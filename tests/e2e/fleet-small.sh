#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The simulated fleet at its smallest: tests/e2e/fleet.sh with 3 hosts
# (FLEET_SMALL_N, 3 or 4), where one slow host moves the fleet's median:
# host 2's link slowed must raise EvrdmaHostLatencyHigh for h2 alone (each
# pair against its own baseline), and host 3's CPU starved
# EvrdmaHostSlow for h3 alone, each within the fast profile's 20 s.
export FLEET_N=${FLEET_SMALL_N:-3}
exec bash "$(dirname "$0")/fleet.sh" "$@"
