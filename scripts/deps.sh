#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Install what evrdma needs on Debian 12 and is missing.  Idempotent; needs
# root (or sudo) only when something is missing.
#   scripts/deps.sh            build + test dependencies
#   scripts/deps.sh --build    only what building and running the programs
#                              needs (scripts/quickstart.sh)
#   scripts/deps.sh --rxe      also what the Soft-RoCE VM suite needs
#   scripts/deps.sh --bench    also what bench/ needs (sockperf, gnuplot)
#   scripts/deps.sh --deb      also what scripts/deb.sh needs (the Debian
#                              packages' build, lintian, their test)
set -euo pipefail

# the build, and the programs run from build/
build=(
	build-essential autoconf automake libtool pkg-config  # the build
	libev-dev                 # the event loop (no .pc on Debian; see m4/)
	librdmacm-dev libibverbs-dev ibverbs-providers  # RDMA CM and verbs
	libc-ares-dev             # host names looked up on the loop, never blocking it
	libjansson-dev            # JSON Lines output (--json), evrdma-probed's config
	libmicrohttpd-dev         # evrdma-probed's /metrics HTTP server
	check libsubunit-dev      # unit tests (configure requires them)
	iproute2                  # ss: quickstart.sh waits for its server's listener
)
# the tests, on top of the build
pkgs=(
	"${build[@]}"
	curl                      # tests/e2e/daemon-*.sh scrape /metrics with it
	prometheus                # its promtool: daemon-*.sh lint every scrape
	                          # (promtool check metrics: names, base units, _total)
	jq                        # tests parse the JSON output with it
	mandoc                    # tests/e2e/manpages.sh lints the man pages
	pmccabe                   # scripts/complexity.sh: branching per function
	python3-jsonschema        # tests/e2e/schema.sh checks --json against doc/*.schema.json
	chromium fonts-dejavu-core  # tests/e2e/fleet-browser.sh: the status page in a
	                          # real browser (headless), its screenshot's font
	rdmacm-utils              # upstream rstream/mckey, for interop tests
	procps psmisc             # ps, killall used by tests (and iproute2's ip netns)
	systemd util-linux        # systemd-analyze checks the unit; setpriv runs the daemon as nobody
	valgrind                  # leak checks (valgrind.sh, make check-valgrind)
	time                      # /usr/bin/time: modes.sh counts -T a's sleeps, bench/ CPU time
	clang libclang-rt-14-dev  # libFuzzer (scripts/fuzz.sh; CI fuzzes each target briefly)
	libasan8 libubsan1        # the ASan+UBSan build (gcc 12's runtimes; build-essential
	                          # brings them already, named here for scripts/test.sh)
)
case ${1:-} in
--build) pkgs=("${build[@]}") ;;
--rxe) pkgs+=(qemu-system-x86 busybox-static cpio kmod) ;;
--bench) pkgs+=(sockperf gnuplot-nox) ;;  # bench/ only, not the tests
--deb) pkgs+=(dpkg-dev debhelper fakeroot lintian  # dpkg-buildpackage -b, lintian
	      systemd man-db)  # the unit's pkg-config dir; check-deb.sh verifies the unit
	;;
esac

missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
		grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
if [ "${#missing[@]}" -eq 0 ]; then
	echo "deps: everything is installed"
	exit 0
fi
echo "deps: installing ${missing[*]}"
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "deps: done"
