#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The host's diagnosis over Soft-RoCE, run inside the guest by
# tests/rxe/check-rxe.sh: as an unprivileged user (added here) with
# RLIMIT_MEMLOCK lowered, with the device nodes' modes changed, with the
# port down, with the address removed or on a device without RDMA, each
# problem must be said in its one line with its fix and exit status 5,
# before anything starts; the locked memory that runs out anyway (a
# server's second connection) as well; --check all ok as root.  Prints
# PASS/FAIL lines and a summary.
set -u
R=${EVR_BIN:-/opt/evr}/rstream
M=${EVR_BIN:-/opt/evr}/mckey
A1=$RXE_ADDR1
A2=$RXE_ADDR2
D1=$RXE_DEV1
N1=$RXE_NETDEV1
N2=$RXE_NETDEV2
G=$RXE_MCAST
T=$(mktemp -d)
chmod 777 "$T"
. "$(dirname "$0")/lib-guest.sh"

has() { grep -q -- "$2" "$1"; }

# the unprivileged user
grep -q '^evr:' /etc/passwd || echo 'evr:x:1000:1000:evr:/tmp:/bin/bash' >>/etc/passwd
grep -q '^evr:' /etc/group || echo 'evr:x:1000:' >>/etc/group

# user MEMLOCK_KIB CMD: run CMD (a string) as evr with ulimit -l set;
# stdout in $T/u.out, stderr in $T/u.err, the status in $rc
user() {
	timeout "$(tsc 60)" su -s /bin/bash evr -c "ulimit -l $1 && exec $2" \
		>"$T/u.out" 2>"$T/u.err"
	rc=$?
}
# root CMD...: the same as root, unlimited
root() {
	timeout "$(tsc 60)" "$@" >"$T/u.out" 2>"$T/u.err"
	rc=$?
}

# expect NAME STATUS REGEX: $rc is STATUS, and stderr is exactly one
# line, matching REGEX (grep -E)
expect() {
	if [ "$rc" = "$2" ] && [ "$(wc -l <"$T/u.err")" = 1 ] &&
		grep -qE -- "$3" "$T/u.err"; then
		ok "$1: $(cat "$T/u.err")"
	else
		ko "$1" "status $rc (want $2), stderr should be one line matching $3"
	fi
}

# check_all NAME CMD...: --check says every check passed, exit 0
check_all() {
	local name=$1
	shift
	root "$@"
	if [ "$rc" = 0 ] && has "$T/u.out" ' 0 failed' && ! has "$T/u.out" FAIL; then
		ok "$name: all checks pass"
	else
		ko "$name" "status $rc"
	fi
}

# wait_active SECONDS: both rxe ports ACTIVE and A1 in rxe0's GID table
wait_active() {
	local i
	for i in $(seq $(($1 * 10))); do
		[ "$(rdma link show | grep -c 'state ACTIVE')" -ge 2 ] &&
			"$R" --check -b "$A1" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

# ---- all well, as root
check_all "rstream --check -b $A1" "$R" --check -b "$A1"
for row in "address_device  ok     $A1 is on $N1, RDMA device $D1 port 1" \
	"port_state      ok     $D1 port 1 4: ACTIVE" \
	"gid_table       ok     $A1 is GID [0-9]* of $D1 port 1"; do
	grep -q -- "^$row" "$T/u.out" && ok "--check: $row" ||
		ko "--check: $row" "no such row"
done
check_all "rstream --check client -c 4" "$R" --check -s "$A2" -b "$A1" -c 4
check_all "mckey --check -b $A1 -S 1000" "$M" --check -m "$G" -b "$A1" -S 1000
root "$R" --check -b "$A1" --json
if [ "$rc" = 0 ] && has "$T/u.out" '"type":"hostcheck"' &&
	has "$T/u.out" '"failed":0' && has "$T/u.out" "\"device\":\"$D1\""; then
	ok "--check --json: one hostcheck record, nothing failed, device $D1"
else
	ko "--check --json" "status $rc"
fi
# the path MTU (veth mtu 1500: 1024)
root "$M" --check -m "$G" -b "$A1" -S 2000
if [ "$rc" = 5 ] && has "$T/u.out" "path_mtu        FAIL   messages of 2000 bytes exceed the path MTU 1024 ($N1 mtu 1500)"; then
	ok "mckey --check -S 2000: over the path MTU"
else
	ko "mckey --check -S 2000" "status $rc"
fi

# ---- locked memory, as the unprivileged user
user 64 "$R -b $A1"
expect "server, ulimit -l 64" 5 \
	'^rstream: memlock: RLIMIT_MEMLOCK 64 KiB, this run locks about 2\.1 MiB; raise it: ulimit -l [0-9]+ .*limits\.conf.*LimitMEMLOCK='
# --no-host-check: no check before (the run starts: its header is out),
# the run itself runs out, and the failure gets the same diagnosis (exit
# 5, never connect)
user 64 "$R -s $A2 -b $A1 --no-host-check"
expect "client --no-host-check, ulimit -l 64" 5 \
	'^rstream: memlock: .*RLIMIT_MEMLOCK 64 KiB, this run locks about 2\.1 MiB'
has "$T/u.out" '^name ' && ok "--no-host-check: the run started before it failed" ||
	ko "--no-host-check: the run started" "no header on stdout"
user 64 "$R -s $A2 -b $A1 -c 4"
expect "client -c 4, ulimit -l 64" 5 \
	'^rstream: memlock: RLIMIT_MEMLOCK 64 KiB, this run locks about 8\.[0-9] MiB; raise it: ulimit -l '
user 64 "$R -s $A2 -b $A1 -B 8m --json"
if [ "$rc" = 5 ] && has "$T/u.out" '"type":"error"' && has "$T/u.out" 'memlock: RLIMIT_MEMLOCK 64 KiB' &&
	has "$T/u.out" '"exit_status":5'; then
	ok "client --json: the error record carries the diagnosis"
else
	ko "client --json, ulimit -l 64" "status $rc"
fi
# (under 32 KiB libibverbs warns on its own: not that low)
user 64 "$M -m $G -b $A1 -C 1000 -S 1000"
expect "mckey, ulimit -l 64" 5 \
	'^mckey: memlock: RLIMIT_MEMLOCK 64 KiB, this run locks about 1\.[0-9] MiB; raise it: ulimit -l '
user 64 "$R --check -b $A1"
if [ "$rc" = 5 ] && has "$T/u.out" '^memlock         FAIL   RLIMIT_MEMLOCK 64 KiB'; then
	ok "--check as the user, ulimit -l 64: memlock FAIL"
else
	ko "--check as the user, ulimit -l 64" "status $rc"
fi
# TCP never locks: the same limit stops nothing
P=7611
timeout "$(tsc 60)" su -s /bin/bash evr -c "ulimit -l 64 && exec $R -T s -b $A1 -p $P --once" \
	>"$T/s.out" 2>&1 &
tsp=$!
sleep 1
user 64 "$R -T s -s $A1 -p $P -S 1000 -C 10"
wait "$tsp"
trc=$?
if [ "$rc" = 0 ] && [ "$trc" = 0 ] && has "$T/u.out" '^custom'; then
	ok "-T s with ulimit -l 64: client and server run"
else
	ko "-T s with ulimit -l 64" "client $rc, server $trc"
fi

# The estimate fits one connection, the kernel refuses the second: the
# server says so as the same diagnosis (never a bare errno).
P=7612
timeout "$(tsc 60)" su -s /bin/bash evr -c "ulimit -l 3000 && exec $R -b $A1 -p $P" \
	>"$T/s.out" 2>"$T/s.err" &
tsp=$!
for i in $(seq 100); do
	rdma resource show cm_id 2>/dev/null | grep -q "state LISTEN.*src-addr $A1:$P" && break
	sleep 0.1
done
root "$R" -s "$A1" -p "$P" -S 1000 -C 10 -c 2
spid=$(rdma resource show cm_id 2>/dev/null | grep "state LISTEN.*src-addr $A1:$P" |
	sed -n 's/.* pid \([0-9]*\) .*/\1/p' | head -1)
[ -n "$spid" ] && kill "$spid"
wait "$tsp"
if grep -qE "^rstream: memlock: accept: Cannot allocate memory with RLIMIT_MEMLOCK 2\.9 MiB, this run locks about 2\.1 MiB; raise it: ulimit -l unlimited" "$T/s.err"; then
	ok "server out of locked memory at its 2nd connection: $(grep memlock "$T/s.err" | head -1)"
else
	ko "server out of locked memory at its 2nd connection" "client status $rc"
fi

# ---- device nodes
UV=$(ls /dev/infiniband/ | grep uverbs | tr '\n' ' ')
for n in $UV; do chmod 600 "/dev/infiniband/$n"; done
user 8192 "$R -s $A2 -b $A1"
expect "uverbs 0600" 5 \
	'^rstream: verbs_device: /dev/infiniband/uverbs[0-9]+: not readable or writable by uid 1000, mode 0600 root:root; give the user the device: a udev rule KERNEL=="uverbs\*", GROUP="rdma", MODE="0660"'
user 8192 "$M -m $G -b $A1"
expect "mckey, uverbs 0600" 5 '^mckey: verbs_device: /dev/infiniband/uverbs[0-9]+: not readable or writable by uid 1000'
for n in $UV; do chmod 666 "/dev/infiniband/$n"; done
chmod 604 /dev/infiniband/rdma_cm
user 8192 "$R -b $A1"
expect "rdma_cm 0604" 5 \
	'^rstream: rdma_cm: /dev/infiniband/rdma_cm: not writable by uid 1000, mode 0604 root:root; give the user the device: a udev rule KERNEL=="rdma_cm"'
chmod 666 /dev/infiniband/rdma_cm
user 8192 "$R --check -b $A1"
if [ "$rc" = 0 ]; then ok "modes restored: --check as the user passes"; else ko "modes restored" "status $rc"; fi

# ---- the address on an interface no RDMA device serves
ip link add vd0 type veth peer name vd1 && ip addr add 198.19.9.1/24 dev vd0 &&
	ip link set vd0 up && ip link set vd1 up
root "$R" -b 198.19.9.1
expect "server on a non-RDMA interface" 5 \
	'^rstream: address_device: 198\.19\.9\.1 is on vd0, which no RDMA device serves \(devices: rxe0 rxe1( siw0 siw1)?\); use an address of an RDMA interface, or add Soft-RoCE on this one: rdma link add rxe_vd0 type rxe netdev vd0'
ip link del vd0

# ---- the port down
ip link set "$N1" down
root "$R" -b "$A1"
if [ "$rc" = 5 ] && grep -qE "^rstream: port_state: $D1 port 1 is 1: DOWN \(physical state [^)]*\); bring the link up: ip link set $N1 up" "$T/u.err"; then
	ok "port down: $(grep port_state "$T/u.err")"
else
	ko "port down" "status $rc"
fi
root "$R" --check -b "$A1"
has "$T/u.out" "^port_state      FAIL   $D1 port 1 is 1: DOWN" && [ "$rc" = 5 ] &&
	ok "--check: port_state FAIL" || ko "--check, port down" "status $rc"
ip link set "$N1" up
ip link set "$N2" up
wait_active "$(tsc 20)" && ok "port up again" || ko "port up again" "not ACTIVE"

# ---- the address removed
ip addr del "$A1/24" dev "$N1"
root "$R" -b "$A1"
expect "address removed" 5 \
	"^rstream: address_device: $A1 is on no interface of this host; use an address of this host's RDMA interface"
# mckey keeps upstream's line and status for an address the host does
# not have; the diagnosis follows
root "$M" -m "$G" -b "$A1"
if [ "$rc" = 255 ] && has "$T/u.err" "mckey: addr bind failure $A1: Cannot assign requested address" &&
	grep -q "^mckey: address_device: $A1 is on no interface of this host; " "$T/u.err"; then
	ok "mckey, address removed: upstream's line, then $(grep address_device "$T/u.err")"
else
	ko "mckey, address removed" "status $rc"
fi
ip addr add "$A1/24" dev "$N1"
wait_active "$(tsc 20)" && ok "address back" || ko "address back" "not in the GID table"

# ---- all well again, and a run works
check_all "rstream --check -b $A1 at the end" "$R" --check -b "$A1"
P=7613
server "$R" -b "$A1" -p "$P" --once -S 1000 -C 10
root "$R" -s "$A1" -p "$P" -S 1000 -C 10
reap "$sp" 20
[ "$rc" = 0 ] && ok "a run after all the changes" || ko "a run after all the changes" "status $rc"

rm -rf "$T"
echo "guest-diag: $pass passed, $fail failed"
[ "$fail" = 0 ]
