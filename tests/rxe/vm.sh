#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# vm.sh -- run a script inside a throw-away qemu guest with Soft-RoCE.
#
# This machine's kernel has no RDMA.  The guest is Debian's own kernel
# (fetched with apt-get download, unpacked with dpkg -x, never installed
# here), booted under qemu TCG from a busybox initramfs.  It has NO network
# device to the outside (-nic none); inside it, a veth pair carries two rxe
# devices:
#     veth0 198.18.0.1/24 -- rxe0        veth1 198.18.0.2/24 -- rxe1
# rdma-core's userspace (upstream rstream/mckey included) comes from this
# host's packages, so binaries built here run there unchanged.
#
# usage: tests/rxe/vm.sh [--add SRC[=DEST]]... [--timeout SEC] [--mtu N]
#                        [--mem MIB] [--kernel K] [--siw] [--log FILE]
#                        SCRIPT [ARGS...]
#        (--mem: the guest's memory, 1024 MiB unless given)
#        (--kernel, or $EVR_RXE_KERNEL: "stable", Debian 12's own kernel
#        (6.1: rxe in the initial network namespace only), or
#        "backports", the newest from trixie-backports (7.3: rxe per
#        network namespace, what tests/rxe/fabric.sh needs); default stable.
#        The guest script sees it as $EVR_KERNEL and `uname -r`.)
#        (--siw, or $EVR_RXE_SIW=1: soft-iWARP too, on veth2/veth3; the
#        stable kernel only; the script sees SIW_ADDR1/2, SIW_DEV1/2)
#        tests/rxe/vm.sh --prepare        (install, download, build; cached)
#        tests/rxe/vm.sh --check          (exit 0 if qemu can run here)
# exit: the guest script's status; 124 timeout; 125 the guest never
#       reported (boot failure); 2 usage.
# cache: $EVR_RXE_CACHE (default /var/tmp/evrdma-rxe)
# EVR_RXE_NICE=N: run qemu at nice N (a benchmark, -10 as root: the
#       guest ahead of other work on the host, less noise in its figures)
set -euo pipefail

PROG=${0##*/}
CACHE=${EVR_RXE_CACHE:-/var/tmp/evrdma-rxe}
LAYOUT=6                    # bump when the base image changes
KERNEL=${EVR_RXE_KERNEL:-stable}
TIMEOUT=900
MTU=1500
MEM=1024
LOG=
ADDS=()
MODE=run
PKGS=(qemu-system-x86 busybox-static cpio kmod rdma-core ibverbs-providers
      rdmacm-utils ibverbs-utils iproute2 smcroute)
# soft-iWARP (--siw or EVR_RXE_SIW=1; the stable kernel only): Debian's
# kernels do not build siw, so it is built here from Debian's
# linux-source against the guest kernel's headers (build_siw), cached,
# and a second veth pair carries two siw devices:
#     veth2 198.18.1.1/24 -- siw0        veth3 198.18.1.2/24 -- siw1
SIW=${EVR_RXE_SIW:-0}
# wanted in the guest; one the kernel has built in (or lacks) is left out.
# bridge, sch_netem: the fabric's leaves and fault injection.
MODULES=(configfs crc32_generic veth rdma_rxe rdma_ucm ib_umad bridge sch_netem)

say() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { say "error: $*"; exit 2; }

while [ $# -gt 0 ]; do
	case $1 in
	--add) ADDS+=("$2"); shift 2 ;;
	--timeout) TIMEOUT=$2; shift 2 ;;
	--mtu) MTU=$2; shift 2 ;;
	--mem) MEM=$2; shift 2 ;;
	--log) LOG=$2; shift 2 ;;
	--kernel) KERNEL=$2; shift 2 ;;
	--siw) SIW=1; shift ;;
	--prepare) MODE=prepare; shift ;;
	--check) MODE=check; shift ;;
	-h|--help) sed -n '3,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) die "unknown option $1" ;;
	*) break ;;
	esac
done
case $KERNEL in
stable|backports) ;;
*) die "--kernel: stable or backports, not '$KERNEL'" ;;
esac
case $SIW in
0) ;;
1) [ "$KERNEL" = stable ] || die "--siw: the stable kernel only (siw is built with this host's compiler, which built 6.1 and not 7.3)" ;;
*) die "EVR_RXE_SIW: 0 or 1, not '$SIW'" ;;
esac
if [ "$MODE" = run ]; then
	[ $# -ge 1 ] || die "no script (see --help)"
	SCRIPT=$1; shift
	[ -f "$SCRIPT" ] || die "no such script: $SCRIPT"
fi

t0=$(date +%s.%N)
elapsed() { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9

install_pkgs() {
	local miss=() p
	for p in "${PKGS[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q 'install ok installed' || miss+=("$p")
	done
	[ ${#miss[@]} -eq 0 ] && return 0
	[ "$(id -u)" = 0 ] || die "missing packages (need root): ${miss[*]}"
	say "installing ${miss[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -qq --no-install-recommends "${miss[@]}" >"$CACHE/apt.log" 2>&1 ||
		{ apt-get update -qq >>"$CACHE/apt.log" 2>&1;
		  apt-get install -y -qq --no-install-recommends "${miss[@]}" >>"$CACHE/apt.log" 2>&1; } ||
		die "apt-get install failed (see $CACHE/apt.log)"
}

fetch_stable() {
	local pkg
	pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
		awk '/Depends: linux-image-[0-9]/{print $2; exit}')
	if [ -z "$pkg" ]; then
		apt-get update -qq >/dev/null 2>&1 || true
		pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
			awk '/Depends: linux-image-[0-9]/{print $2; exit}')
	fi
	[ -n "$pkg" ] || die "cannot find Debian's kernel package"
	KPKG=$pkg
	KROOT=$CACHE/kernel/$pkg
	[ -e "$KROOT/.done" ] && return 0
	say "fetching $pkg"
	rm -rf "$KROOT"; mkdir -p "$KROOT/deb"
	(cd "$KROOT/deb" && apt-get download "$pkg" >/dev/null 2>&1) ||
		die "apt-get download $pkg failed"
	unpack_kernel
}

# trixie-backports through a private source list, state and cache under
# $CACHE: the host's own apt configuration is read, never changed.  The
# index is read again once a day.
fetch_backports() {
	local a=$CACHE/apt-backports pkg ver
	mkdir -p "$a/lists/partial" "$a/cache/archives/partial"
	echo 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie-backports main' \
		>"$a/sources.list"
	APT=(-o "Dir::Etc::SourceList=$a/sources.list" -o Dir::Etc::SourceParts=/dev/null
	     -o "Dir::State::Lists=$a/lists" -o "Dir::Cache=$a/cache")
	if [ -z "$(find "$a/lists" -name '*Packages*' -mtime -1 2>/dev/null)" ]; then
		apt-get "${APT[@]}" update -qq >"$a/update.log" 2>&1 ||
			[ -n "$(find "$a/lists" -name '*Packages*')" ] ||
			die "apt-get update of trixie-backports failed (see $a/update.log)"
	fi
	# the generic flavour (rxe is a module there); the newest version
	pkg=$(apt-cache "${APT[@]}" pkgnames linux-binary- 2>/dev/null |
		grep -E '^linux-binary-[0-9][0-9.]*\+deb[0-9]+-amd64$' | sort -V | tail -1)
	[ -n "$pkg" ] || die "trixie-backports has no linux-binary-*-amd64 package"
	ver=${pkg#linux-binary-}
	KPKG=$pkg
	KROOT=$CACHE/kernel/$pkg
	[ -e "$KROOT/.done" ] && return 0
	say "fetching $pkg and linux-modules-$ver from trixie-backports"
	rm -rf "$KROOT"; mkdir -p "$KROOT/deb"
	(cd "$KROOT/deb" && apt-get "${APT[@]}" download "$pkg" "linux-modules-$ver" \
		>"$a/download.log" 2>&1) ||
		die "apt-get download $pkg failed (see $a/download.log)"
	unpack_kernel
}

# KROOT/deb/*.deb -> KROOT/root; modules.dep for modprobe --show-depends
# (a .deb has none: postinst makes it; newer ones lack modules.builtin)
unpack_kernel() {
	local d
	for d in "$KROOT"/deb/*.deb; do dpkg -x "$d" "$KROOT/root"; done
	rm -rf "$KROOT/deb"
	find_kernel
	depmod -b "$KROOT/root" "$KVER" 2>"$KROOT/depmod.log" ||
		die "depmod failed (see $KROOT/depmod.log)"
	touch "$KROOT/.done"
}

# KVER, MODDIR (KROOT-relative modules tree), VMLINUZ: 6.1 packs
# /lib/modules and /boot/vmlinuz-KVER, 7.x /usr/lib/modules/KVER/vmlinuz
find_kernel() {
	local m
	for m in lib/modules usr/lib/modules; do
		[ -d "$KROOT/root/$m" ] || continue
		MODDIR=$m
		KVER=$(ls "$KROOT/root/$m" | head -1)
	done
	[ -n "${KVER:-}" ] || die "no modules in $KROOT"
	VMLINUZ=$KROOT/root/boot/vmlinuz-$KVER
	[ -e "$VMLINUZ" ] || VMLINUZ=$KROOT/root/$MODDIR/$KVER/vmlinuz
	[ -e "$VMLINUZ" ] || die "no kernel image in $KROOT"
	# depmod -b wants BASE/lib/modules
	[ "$MODDIR" = lib/modules ] || [ -e "$KROOT/root/lib" ] ||
		ln -s usr/lib "$KROOT/root/lib"
}

fetch_kernel() {
	case $KERNEL in
	stable) fetch_stable ;;
	backports) fetch_backports ;;
	esac
	find_kernel
}

# put SRC into the tree STAGE at DEST; ELF files bring their libraries
put() {
	local stage=$1 src=$2 dest=${3:-$2} lib
	mkdir -p "$stage/$(dirname "$dest")"
	cp -L --remove-destination "$src" "$stage/$dest"
	if head -c 4 "$src" | grep -q ELF && ldd "$src" >/dev/null 2>&1; then
		for lib in $(ldd "$src" | awk '/=> \//{print $3} /^[[:space:]]*\/.*ld-linux/{print $1}'); do
			[ -e "$stage/$lib" ] || put "$stage" "$lib"
		done
	fi
}

# Debian's merged /usr: both archives carry the same links, so the second
# never replaces one of them with a directory.
skeleton() {
	mkdir -p "$1"/usr/{bin,sbin,lib,lib64}
	ln -s usr/bin "$1/bin"; ln -s usr/sbin "$1/sbin"
	ln -s usr/lib "$1/lib"; ln -s usr/lib64 "$1/lib64"
}

cpio_gz() {
	(cd "$1" && find . -mindepth 1 -printf '%P\0' | LC_ALL=C sort -z |
		cpio --null -o -H newc -R 0:0 --quiet) | gzip -6 >"$2"
}

write_init() {
	cat >"$1" <<'INIT'
#!/bin/bash
export PATH=/usr/local/bin:/usr/bin:/usr/sbin HOME=/root
mount -t proc proc /proc; mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1
mkdir -p /dev/pts /dev/shm /tmp /run /root; chmod 1777 /tmp
mount -t devpts devpts /dev/pts; mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run
. /evr/config
bye() { echo "[evr-vm] EXIT-STATUS=$1"; sync; poweroff -f; sleep 5; echo o >/proc/sysrq-trigger; }
oops() { echo "[evr-vm] setup failed: $*"; dmesg | tail -30; bye 125; }
dmesg -n 1
for m in $MODULES; do modprobe "$m" || oops "modprobe $m"; done
mount -t configfs configfs /sys/kernel/config 2>/dev/null
ip link set lo up
for n in /sys/class/net/*; do   # safety: no device-backed NIC, ever
	[ -e "$n/device" ] && oops "unexpected network device ${n##*/}"
done
ip link add veth0 type veth peer name veth1 || oops veth
for i in 0 1; do
	ip link set veth$i mtu "$MTU" up
	ip addr add 198.18.0.$((i + 1))/24 dev veth$i
done
# both ends are local addresses: accept them, and no reverse-path filter
for c in all default veth0 veth1; do
	echo 0 >/proc/sys/net/ipv4/conf/$c/rp_filter
	echo 1 >/proc/sys/net/ipv4/conf/$c/accept_local
done
rdma link add rxe0 type rxe netdev veth0 || oops rxe0
rdma link add rxe1 type rxe netdev veth1 || oops rxe1
for _ in $(seq 100); do
	[ "$(rdma link show | grep -c 'state ACTIVE')" -ge 2 ] && break
	sleep 0.1
done
if [ -d /sys/module/siw ]; then
	ip link add veth2 type veth peer name veth3 || oops veth2
	for i in 2 3; do
		ip link set veth$i mtu "$MTU" up
		ip addr add 198.18.1.$((i - 1))/24 dev veth$i
		echo 0 >/proc/sys/net/ipv4/conf/veth$i/rp_filter
		echo 1 >/proc/sys/net/ipv4/conf/veth$i/accept_local
	done
	rdma link add siw0 type siw netdev veth2 || oops siw0
	rdma link add siw1 type siw netdev veth3 || oops siw1
	export SIW_ADDR1=198.18.1.1 SIW_ADDR2=198.18.1.2 SIW_DEV1=siw0 SIW_DEV2=siw1
	export SIW_NETDEV1=veth2 SIW_NETDEV2=veth3
fi
export RXE_ADDR1=198.18.0.1 RXE_ADDR2=198.18.0.2 RXE_DEV1=rxe0 RXE_DEV2=rxe1
export RXE_NETDEV1=veth0 RXE_NETDEV2=veth1 RXE_MCAST=239.1.1.1 EVR_VM=1 EVR_KERNEL
echo "[evr-vm] ready at $(cut -d' ' -f1 /proc/uptime)s"
cd /root
timeout -k 5 "$GUEST_TIMEOUT" /evr/run
rc=$?
[ $rc = 124 ] && { echo "[evr-vm] guest script timed out"; ps; }
bye $rc
INIT
	chmod 755 "$1"
}

# soft-iWARP for KVER: drivers/infiniband/sw/siw of Debian's linux-source
# of the same version, built out of tree against the kernel's headers
# (both fetched with apt-get download and unpacked here, never
# installed); cached as $CACHE/siw/KVER/siw.ko.
build_siw() {
	SIWKO=$CACHE/siw/$KVER/siw.ko
	[ -s "$SIWKO" ] && return 0
	local d=$CACHE/siw/$KVER ver major hdr f
	# the source's version: that of the headers of this very ABI (the
	# image is the signed package, numbered its own way)
	ver=$(apt-cache show --no-all-versions "linux-headers-$KVER" 2>/dev/null |
		awk '/^Version:/ {print $2; exit}')
	[ -n "$ver" ] || die "siw: no linux-headers-$KVER in the package lists"
	major=${KVER%%.*}.$(echo "$KVER" | cut -d. -f2)
	say "building soft-iWARP (siw) for $KVER from linux-source-$major $ver"
	rm -rf "$d"; mkdir -p "$d/deb" "$d/root" "$d/src"
	(cd "$d/deb" && apt-get download "linux-source-$major=$ver" \
		"linux-headers-$KVER=$ver" "linux-headers-${KVER%-amd64}-common=$ver" \
		"linux-kbuild-$major=$ver" >"$d/download.log" 2>&1) ||
		die "siw: apt-get download failed (see $d/download.log)"
	for f in "$d"/deb/linux-headers-*.deb "$d"/deb/linux-kbuild-*.deb; do
		dpkg -x "$f" "$d/root"
	done
	hdr=$d/root/usr/src/linux-headers-$KVER
	# its Makefile includes the common part by its installed path
	sed -i "s|/usr/src/|$d/root/usr/src/|" "$hdr/Makefile"
	dpkg-deb --fsys-tarfile "$d"/deb/linux-source-*.deb |
		tar -xO "./usr/src/linux-source-$major.tar.xz" |
		xz -dc | tar -x -C "$d/src" --strip-components=5 \
			"linux-source-$major/drivers/infiniband/sw/siw" ||
		die "siw: no drivers/infiniband/sw/siw in linux-source-$major"
	make -C "$hdr" M="$d/src" CONFIG_RDMA_SIW=m modules >"$d/build.log" 2>&1 ||
		die "siw: the module did not build (see $d/build.log)"
	strip --strip-debug -o "$SIWKO.tmp" "$d/src/siw.ko" && mv "$SIWKO.tmp" "$SIWKO"
	rm -rf "$d/deb" "$d/root"
}

# put module M (a name KROOT's modules know) and what it needs into STAGE
put_module() {
	local st=$1 m=$2 f b
	modprobe -d "$KROOT/root" -S "$KVER" --show-depends "$m" \
		>"$st/.deps" 2>/dev/null || return 1
	grep -q '^insmod ' "$st/.deps" || { rm -f "$st/.deps"; return 1; }
	for f in $(awk '$1 == "insmod" {print $2}' "$st/.deps"); do
		b=/lib/modules/$KVER/${f#*/modules/$KVER/}
		b=${b%.xz}; b=${b%.zst}; b=${b%.gz}
		[ -e "$st$b" ] && continue
		mkdir -p "$st$(dirname "$b")"
		case $f in
		*.xz) xz -dc "$f" >"$st$b" ;;
		*.zst) zstd -qdc "$f" >"$st$b" ;;
		*.gz) gzip -dc "$f" >"$st$b" ;;
		*) cp "$f" "$st$b" ;;
		esac
	done
	rm -f "$st/.deps"
}

build_base() {
	BASE=$CACHE/base-$KPKG-$LAYOUT.cpio.gz
	[ "$SIW" = 1 ] && BASE=$CACHE/base-$KPKG-$LAYOUT-siw.cpio.gz
	[ -s "$BASE" ] && [ -s "$BASE.modules" ] && return 0
	say "building the base image for $KVER"
	local st m f b
	st=$(mktemp -d "$CACHE/stage.XXXXXX")
	skeleton "$st"
	mkdir -p "$st"/{etc,proc,sys,dev,tmp,run,root,evr}
	# each wanted module and what it needs, uncompressed (busybox's
	# modprobe reads plain .ko only); one the kernel has built in or
	# lacks is left out of the guest's list
	local have=()
	for m in "${MODULES[@]}"; do
		put_module "$st" "$m" && have+=("$m")
	done
	if [ "$SIW" = 1 ]; then
		# siw.ko and what it needs (ib_core, libcrc32c ...)
		for m in $(modinfo -F depends "$SIWKO" | tr ',' ' ') crc32c_generic; do
			put_module "$st" "$m" || [ "$m" = crc32c_generic ] ||
				die "siw needs $m, which $KVER lacks"
		done
		mkdir -p "$st/lib/modules/$KVER/extra"
		cp "$SIWKO" "$st/lib/modules/$KVER/extra/siw.ko"
		have+=(siw)
	fi
	local x
	for x in modules.order modules.builtin modules.builtin.modinfo; do
		[ -e "$KROOT/root/$MODDIR/$KVER/$x" ] &&
			cp "$KROOT/root/$MODDIR/$KVER/$x" "$st/lib/modules/$KVER/"
	done
	depmod -b "$st" "$KVER" 2>/dev/null
	echo "${have[*]}" >"$BASE.modules"
	for b in /usr/bin/bash /usr/sbin/ip /usr/bin/rdma /usr/bin/timeout \
		/usr/sbin/tc /usr/sbin/smcrouted /usr/sbin/smcroutectl \
		/usr/bin/env $(dpkg -L rdmacm-utils ibverbs-utils | grep '^/usr/bin/'); do
		[ -e "$b" ] && put "$st" "$b"
	done
	for f in /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav*.so \
		/usr/lib/x86_64-linux-gnu/libibverbs/libsiw-rdmav*.so; do
		put "$st" "$f"
	done
	mkdir -p "$st/etc/libibverbs.d"
	cp /etc/libibverbs.d/rxe.driver /etc/libibverbs.d/siw.driver "$st/etc/libibverbs.d/"
	put "$st" /bin/busybox /usr/bin/busybox
	ln -s bash "$st/usr/bin/sh"   # busybox ash would prefer its own 'ip'
	for b in $(/bin/busybox --list); do
		[ -e "$st/usr/bin/$b" ] || [ -e "$st/usr/sbin/$b" ] ||
			ln -s busybox "$st/usr/bin/$b"
	done
	ln -sf ../bin/busybox "$st/usr/sbin/modprobe"
	echo 'root:x:0:0:root:/root:/bin/sh' >"$st/etc/passwd"
	echo 'root:x:0:' >"$st/etc/group"
	printf '127.0.0.1 localhost\n198.18.0.1 rxe-a\n198.18.0.2 rxe-b\n198.18.1.1 siw-a\n198.18.1.2 siw-b\n' >"$st/etc/hosts"
	echo 'hosts: files' >"$st/etc/nsswitch.conf"
	write_init "$st/init"
	cpio_gz "$st" "$BASE.tmp" && mv "$BASE.tmp" "$BASE"
	rm -rf "$st"
}

if [ "$MODE" = check ]; then
	command -v qemu-system-x86_64 >/dev/null || { say "qemu-system-x86_64 missing"; exit 1; }
	exit 0
fi
install_pkgs
fetch_kernel
[ "$SIW" = 1 ] && build_siw
build_base
if [ "$MODE" = prepare ]; then
	say "ready: kernel $KVER, base $(du -h "$BASE" | cut -f1) ($(elapsed)s)"
	exit 0
fi
flock -u 9

WORK=$(mktemp -d "${TMPDIR:-/tmp}/evr-vm.XXXXXX")
QPID=
trap '[ -n "$QPID" ] && kill "$QPID" 2>/dev/null; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM
st=$WORK/stage
skeleton "$st"
mkdir -p "$st/evr"
cp "$SCRIPT" "$st/evr/script"
chmod 755 "$st/evr/script"
{
	echo '#!/bin/bash'
	printf 'exec /bin/bash /evr/script'
	for a in "$@"; do printf ' %q' "$a"; done
	echo
} >"$st/evr/run"
chmod 755 "$st/evr/run"
{
	printf 'MODULES=%q\nEVR_KERNEL=%q\nMTU=%q\nGUEST_TIMEOUT=%q\n' \
		"$(cat "$BASE.modules")" "$KERNEL" "$MTU" \
		"$((TIMEOUT > 120 ? TIMEOUT - 30 : TIMEOUT * 3 / 4))"
} >"$st/evr/config"
for a in ${ADDS[@]+"${ADDS[@]}"}; do
	src=${a%%=*}; dest=${a#*=}
	[ "$a" = "$src" ] && dest=$(realpath -s "$src")
	[ -e "$src" ] || die "--add: no such file: $src"
	if [ -d "$src" ]; then
		while IFS= read -r -d '' f; do
			put "$st" "$f" "$dest/${f#"$src"/}"
		done < <(find "$src" -type f -print0)
	else
		put "$st" "$src" "$dest"
	fi
done
cpio_gz "$st" "$WORK/run.cpio.gz"
cat "$BASE" "$WORK/run.cpio.gz" >"$WORK/initrd.gz"

console=$WORK/console.log
# A kernel that dies before the guest is ready (seen once in a few dozen
# boots of 7.3 under TCG with two threads: an int3 Oops in
# sched_clock_cpu while the kernel patches its own text, 1.5 s in) is
# booted once more; a guest that came up and then failed is not.
for attempt in 1 2; do
	say "booting $KVER under qemu TCG (timeout ${TIMEOUT}s)"
	set +e
	timeout -k 10 "$TIMEOUT" nice -n "${EVR_RXE_NICE:-0}" qemu-system-x86_64 -nodefaults -no-user-config \
		-nic none -display none -monitor none -serial stdio -no-reboot \
		-machine q35 -accel tcg,thread=multi -cpu max -smp 2 -m "$MEM" \
		-kernel "$VMLINUZ" -initrd "$WORK/initrd.gz" \
		-append "console=ttyS0,115200 panic=-1 oops=panic rdinit=/init nokaslr mitigations=off tsc=reliable no_timer_check quiet loglevel=1" \
		</dev/null 2>&1 | sed -u 's/\r$//' | tee "$console" ${LOG:+"$LOG"} &
	QPID=$!
	wait "$QPID"
	QPID=
	set -e
	grep -aq 'evr-vm\] ready' "$console" && break
	grep -aq 'Kernel panic' "$console" || break
	[ "$attempt" = 1 ] && say "the kernel panicked before the guest was ready; booting once more"
done
status=$(grep -a -o 'EXIT-STATUS=[0-9]*' "$console" | tail -1 | cut -d= -f2 || true)
if [ -n "$status" ]; then
	say "guest exit status $status ($(elapsed)s)"
	exit "$status"
fi
if ! grep -aq 'evr-vm\] ready' "$console"; then
	say "the guest never came up ($(elapsed)s)"
	exit 125
fi
say "timeout: the guest did not finish within ${TIMEOUT}s"
exit 124
