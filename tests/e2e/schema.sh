#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# --json against its schema: every record rstream and mckey write, of
# every type, is one the documented schema (doc/rstream.schema.json,
# doc/mckey.schema.json) accepts, with no key it does not list; and every
# record type the schema lists is seen (RDMA-only ones said so).  The
# validator is Debian's python3-jsonschema (Draft 2020-12), through
# tests/jsonschema-check.py; /usr/bin/python3 is Debian's Python, whatever
# else is first on PATH.
# shellcheck source=lib.sh
. "${E2E_LIB:-$(dirname "$0")/lib.sh}"

R=$RSTREAM
H=127.0.0.1
T=$E2E_TMP
PY=/usr/bin/python3
CHECK=$E2E_SRCDIR/tests/jsonschema-check.py
DOC=$E2E_SRCDIR/doc
# rstream's is the build's: its options from the option table
RSCHEMA=$EVR_BUILDDIR/doc/rstream.schema.json

if ! "$PY" -c 'import jsonschema' 2>/dev/null; then
	not_ok "python3-jsonschema is installed (scripts/deps.sh)"
	e2e_done
fi

# validate NAME SCHEMA FILES...: every record valid; TYPES = what was seen
validate() {
	local name=$1 schema=$2
	shift 2
	"$PY" "$CHECK" "$schema" "$@" >"$T/$name.check" 2>&1
	local rc=$?
	TYPES=$(sed -n 's/^types: //p' "$T/$name.check")
	if [ "$rc" = 0 ]; then
		ok "$name: every record matches the schema ($(cat "$@" | wc -l) records)"
	else
		not_ok "$name: every record matches the schema" "$(grep -v '^types:' "$T/$name.check" | head -5 | tr '\n' '|')"
	fi
}

# covers NAME "TYPES SEEN" TYPE...: each listed type was seen
covers() {
	local name=$1 seen=" $2 " t missing=""
	shift 2
	for t in "$@"; do
		case $seen in *" $t "*) ;; *) missing="$missing $t" ;; esac
	done
	if [ -z "$missing" ]; then
		ok "$name: every record type seen ($*)"
	else
		not_ok "$name: every record type seen" "missing:$missing"
	fi
}

# ---- the checker itself rejects what the schema does not list
printf '%s\n' '{"type":"listening","extra":1}' >"$T/neg1.json"
printf '%s\n' '{"type":"summary","tool":"rstream","results":-1,"total_bytes":0,"elapsed_s":0,"accepted":0,"conn_done":0,"conn_failed":0,"exit_status":0}' >"$T/neg2.json"
printf '%s\n' '{"type":"nosuch"}' >"$T/neg3.json"
for n in 1 2 3; do
	if "$PY" "$CHECK" "$RSCHEMA" "$T/neg$n.json" >/dev/null 2>&1; then
		not_ok "the checker rejects a record off the schema ($(cat "$T/neg$n.json"))"
	else
		ok "the checker rejects a record off the schema (case $n)"
	fi
done

# ---- rstream: a server and clients that make every record type
P=$(e2e_port)
if start_server srv "$P" "$R" -T s -T a -b $H -p "$P" -k 5 --settings --json \
	--interval 0.1; then
	run_cmd c1 30 "$R" -T s -T a -s $H -p "$P" -S 1000 -C 10 -D 0.4 \
		--interval 0.1 --percentiles --settings -k 5 --json \
		--fail-if 'p99>10s' --fail-if 'gbps<0.000001'
	assert_exit "client: -D --percentiles --settings --interval -k --fail-if" 0 "$RC" "$T/c1.err"
	run_cmd c2 30 "$R" -T s -T a -s $H -p "$P" -S 1000 -C 10 -I 20 -c 3 \
		--per-conn --percentiles --split --interval 0.1 --json
	assert_exit "client: -c 3 --per-conn --percentiles" 0 "$RC" "$T/c2.err"
	# a client that dies mid-test: the server's conn_failed
	bg_start dies 30 "$R" -T s -T a -s $H -p "$P" -S 64 -C 1 -I 100000000 --json
	wait_established "$P" 1 5
	sleep 0.3
	bg_stop dies 5 KILL
	wait_match "$T/srv.out" '"type":"conn_failed"' 5
	bg_stop srv
	assert_exit "server: SIGTERM" 0 "$RC" "$T/srv.err"
fi
CLOSED=$(e2e_port)
run_cmd c3 20 "$R" -T s -s $H -p "$CLOSED" --json
assert_exit "client: refused" 3 "$RC" "$T/c3.err"
run_cmd c4 10 "$R" -S 0 --json
assert_exit "client: a bad option" 1 "$RC" "$T/c4.err"
P=$(e2e_port)
if start_server fk "$P" "$R" -T s -T f -b $H -p "$P" --once --json; then
	run_cmd c5 30 "$R" -T s -s $H -p "$P" -S 100 -C 10 --json
	assert_exit "client of a -T f server" 0 "$RC" "$T/c5.err"
	bg_wait fk 20
fi
for f in srv c1 c2 c3 c4 c5 fk dies; do : >>"$T/$f.out"; done
validate rstream "$RSCHEMA" "$T"/{srv,c1,c2,c3,c4,c5,fk,dies}.out
covers rstream "$TYPES" start listening keepalive accepted settings progress \
	result conn_done conn_failed error threshold summary
"$PY" - "$T/c2.out" <<'PYEOF' >"$T/agg.check" 2>&1
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
res = [r for r in recs if r["type"] == "result"]
agg = [r for r in res if "connections" in r]
per = [r for r in res if "conn" in r]
assert len(agg) == 1 and agg[0]["connections"] == 3, "one aggregate"
assert sorted(r["conn_index"] for r in per) == [1, 2, 3], "conn_index 1..3"
assert all(r["conn"] >= 1 for r in per), "connection ids from 1"
assert "latency" in agg[0], "the aggregate's latency"
PYEOF
if [ -s "$T/agg.check" ]; then
	not_ok "-c 3: an aggregate record, per-connection records numbered as the table's #K" "$(tail -1 "$T/agg.check")"
else
	ok "-c 3: an aggregate record, per-connection records numbered as the table's #K"
fi

# ---- --check --json: the hostcheck record of both tools
run_cmd hc1 20 "$R" --check -s $H -b $H -c 3 --json
run_cmd hc2 20 "$R" -T s --check --json
run_cmd hc3 20 "$MCKEY" --check -m 239.1.7.9 -b $H -S 2000 --json
validate hostcheck "$DOC/hostcheck.schema.json" "$T"/{hc1,hc2,hc3}.out
covers hostcheck "$TYPES" hostcheck
printf '%s\n' '{"type":"hostcheck","tool":"rstream","version":"1","address":null,"rdma":true,"memlock_need_bytes":1,"device":null,"interface":null,"checks":[{"check":"memlock","result":"FAIL","fact":"x","fix":null}],"failed":0,"exit_status":0}' >"$T/neg4.json"
if "$PY" "$CHECK" "$DOC/hostcheck.schema.json" "$T/neg4.json" >/dev/null 2>&1; then
	not_ok "the checker rejects a hostcheck record off the schema (a result FAIL)"
else
	ok "the checker rejects a hostcheck record off the schema (a result FAIL)"
fi

# ---- mckey, on the loopback of a namespace of our own
NS=evsch-$$
if [ "$(id -u)" = 0 ] && ip netns add "$NS" 2>/dev/null; then
	trap 'ip netns del "$NS" 2>/dev/null; e2e_cleanup' EXIT
	ip -n "$NS" link set lo up && ip -n "$NS" link set lo multicast on &&
		ip -n "$NS" route add 224.0.0.0/4 dev lo
	NX=(ip netns exec "$NS")
	bg_start mrx 30 "${NX[@]}" "$MCKEY" -m 239.1.7.9 -b $H --udp -C 5 \
		--settle 0.2 --json --stats --fail-if 'loss>50%'
	wait_match "$T/mrx.out" '"phase":"transfer"' 5
	run_cmd mtx 20 "${NX[@]}" "$MCKEY" -m 239.1.7.9 -b $H --udp -C 5 -s \
		--settle 0.2 --json
	assert_exit "mckey sender" 0 "$RC" "$T/mtx.err"
	bg_wait mrx 20
	assert_exit "mckey receiver" 0 "$RC" "$T/mrx.err"
	run_cmd mbad 10 "${NX[@]}" "$MCKEY" -m 239.1.7.9 -b ::1 --udp --json
	run_cmd mopt 10 "$MCKEY" -m 239.1.7.9 -c 0 --json
	validate mckey "$DOC/mckey.schema.json" "$T"/{mrx,mtx,mbad,mopt}.out
	covers mckey "$TYPES" start phase join error send_stats recv_stats \
		sender_stats threshold summary
	say "cm_event records come from RDMA CM only: the Soft-RoCE suite's --json runs"
	ip netns del "$NS" 2>/dev/null
	trap e2e_cleanup EXIT
else
	skip "mckey records: need root for a network namespace"
fi

e2e_done
