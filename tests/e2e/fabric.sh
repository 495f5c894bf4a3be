# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# shellcheck shell=bash
#
# A simulated fabric, shared by tests/e2e/fleet.sh and bench/fleet.sh
# (sourced): N hosts, each a network namespace with one interface (eth0,
# 198.18.1.I/24) on one Linux bridge, which lives in a namespace of its
# own with the hosts' ports (pI), and a namespace for Prometheus
# (198.18.1.254) on the same bridge.  Nothing is created in the root
# namespace, no real interface is touched, and the addresses exist only
# inside these namespaces (each with static neighbour entries for all the
# others, see fab_setup).  Needs root, ip(8) and tc(8).
#
#   fab_setup N PREFIX DIR   the namespaces PREFIXsw, PREFIXh1..N,
#                            PREFIXpm; DIR for files (promq.py)
#   fab_ns I                 host I's namespace (pm: Prometheus's)
#   fab_addr I               host I's address
#   fab_peers FILE           the peers file: hI 198.18.1.I, one a line
#   fab_agent_conf I FILE PEERS INTERVAL TIMEOUT [RESPONDER(1|0)] [MESH_BIND]
#   fab_prom_conf DIR RULES PEERS  prometheus.yml (scrapes and evaluations
#                            every FAB_SCRAPE s, 1; file_sd from peers2sd)
#   fab_link I up|down       host I's bridge port
#   fab_shape I RATE|off     tbf on host I's link, both ways
#   promq ARGS...            python3 promq.py ARGS inside Prometheus's
#                            namespace (alerts; query EXPR)
#   fab_teardown             every namespace made (also on a failed setup)

FAB_PREFIX=
FAB_N=0
FAB_DIR=
FAB_MADE=()
FAB_SRC=${FAB_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}

fab_ns() { echo "${FAB_PREFIX}$( [ "$1" = pm ] && echo pm || echo "h$1")"; }
fab_addr() { [ "$1" = pm ] && echo 198.18.1.254 || echo "198.18.1.$1"; }

fab_mkns() { # NAME
	ip netns add "$1" || return 1
	FAB_MADE+=("$1")
	ip -n "$1" link set lo up
}

fab_setup() { # N PREFIX DIR
	local i ns
	FAB_N=$1 FAB_PREFIX=$2 FAB_DIR=$3
	if [ "$FAB_N" -lt 2 ] || [ "$FAB_N" -gt 250 ]; then
		echo "fabric: 2 to 250 hosts, not $FAB_N" >&2
		return 1
	fi
	fab_mkns "${FAB_PREFIX}sw" || return 1
	ip -n "${FAB_PREFIX}sw" link add br0 type bridge || return 1
	ip -n "${FAB_PREFIX}sw" link set br0 up || return 1
	for i in $(seq 1 "$FAB_N") pm; do
		ns=$(fab_ns "$i")
		fab_mkns "$ns" || return 1
		ip -n "${FAB_PREFIX}sw" link add "p$i" type veth peer name eth0 \
			netns "$ns" || return 1
		ip -n "${FAB_PREFIX}sw" link set "p$i" master br0 up || return 1
		ip -n "$ns" link set eth0 address "$(fab_mac "$i")" || return 1
		ip -n "$ns" addr add "$(fab_addr "$i")/24" dev eth0 || return 1
		ip -n "$ns" link set eth0 up || return 1
	done
	# Static neighbours: the kernel's one ARP table holds every
	# namespace's entries, and at its default limit (gc_thresh3, 1024)
	# 32 hosts probing 31 peers each fill it (new entries then fail:
	# half the hosts unreachable).  Permanent entries do not count
	# towards that limit, and the host's sysctls stay as they are.
	for i in $(seq 1 "$FAB_N") pm; do
		for j in $(seq 1 "$FAB_N") pm; do
			[ "$i" = "$j" ] ||
				echo "neigh replace $(fab_addr "$j") lladdr $(fab_mac "$j") dev eth0 nud permanent"
		done | ip -n "$(fab_ns "$i")" -batch - || return 1
	done
	fab_promq_py
}

fab_mac() { # I: 02:00:c6:12:01:II (local, unicast), Prometheus's ...:fe
	[ "$1" = pm ] && echo 02:00:c6:12:01:fe || printf '02:00:c6:12:01:%02x\n' "$1"
}

fab_teardown() {
	local ns
	for ns in "${FAB_MADE[@]}"; do
		ip netns del "$ns" 2>/dev/null
	done
	FAB_MADE=()
}

fab_peers() { # FILE
	local i
	{
		echo "# the fabric: one line a host, shared by every agent"
		for i in $(seq 1 "$FAB_N"); do
			echo "h$i $(fab_addr "$i")"
		done
	} >"$1"
}

# The agent of host I: a TCP responder on its address (unless RESPONDER
# is 0), a TCP latency mesh over PEERS (64 bytes, 10 round trips a run),
# and one bandwidth probe of the next host (16 KiB x 4 each way, every 2
# intervals), named bw:hNEXT (none with FAB_BW=0); /metrics on its
# address, port 9471.  FAB_POLL_US: the mesh's poll_us (default 200).
fab_agent_conf() { # I FILE PEERS INTERVAL TIMEOUT [RESPONDER] [MESH_BIND]
	local i=$1 a nx resp="" bind="" bw
	a=$(fab_addr "$i")
	nx=$(( i % FAB_N + 1 ))
	[ "${6:-1}" = 1 ] &&
		resp="\"responders\": [ { \"transport\": \"tcp\", \"port\": 7471, \"bind\": \"$a\" } ],"
	[ -n "${7:-}" ] && bind="\"bind\": \"$7\","
	# a ring of bandwidth probes, each naming its peer (the rules pair
	# them: EvrdmaLinkThroughputLow)
	bw=$(printf '{ "name": "bw:h%s", "type": "rstream", "host": "%s", "port": 7471, "transport": "tcp", "kind": "bandwidth", "size": 16384, "count": 4, "interval_s": %s, "timeout_s": 5, "peer": "h%s" }' \
		"$nx" "$(fab_addr "$nx")" "$(awk -v x="$4" 'BEGIN { print 2 * x }')" "$nx")
	[ "${FAB_BW:-1}" = 0 ] && bw=
	poll=
	[ -n "${FAB_POLL_US:-}" ] && poll=", \"poll_us\": $FAB_POLL_US"
	cat >"$2" <<JSON
{
  "listen_address": "$a",
  "listen_port": 9471,
  $resp
  "mesh": { "peers_file": "$3", "transport": "tcp", "port": 7471, $bind
            "size": 64, "iters": 10, "interval_s": $4, "timeout_s": $5$poll },
  "probes": [ $bw ]
}
JSON
}

fab_prom_conf() { # DIR RULES PEERS
	"$FAB_SRC/contrib/prometheus/peers2sd" -o "$1/agents.json" "$3" || return 1
	cat >"$1/prometheus.yml" <<YML
global:
  scrape_interval: ${FAB_SCRAPE:-1}s
  scrape_timeout: ${FAB_SCRAPE:-1}s
  evaluation_interval: ${FAB_SCRAPE:-1}s
rule_files:
  - $2
scrape_configs:
  - job_name: evrdma
    file_sd_configs:
      - files: [ "$1/agents.json" ]
YML
}

fab_link() { ip -n "${FAB_PREFIX}sw" link set "p$1" "$2"; }

# A slow link: RATE each way (the bridge's port towards the host, the
# host's eth0 towards the bridge), a queue of at most 100 ms.
fab_shape() { # I RATE|off
	local ns
	ns=$(fab_ns "$1")
	if [ "$2" = off ]; then
		tc -n "${FAB_PREFIX}sw" qdisc del dev "p$1" root 2>/dev/null
		tc -n "$ns" qdisc del dev eth0 root 2>/dev/null
		return 0
	fi
	tc -n "${FAB_PREFIX}sw" qdisc add dev "p$1" root tbf rate "$2" burst 4kb latency 100ms &&
		tc -n "$ns" qdisc add dev eth0 root tbf rate "$2" burst 4kb latency 100ms
}

promq() { ip netns exec "$(fab_ns pm)" python3 "$FAB_DIR/promq.py" "$@"; }

fab_promq_py() {
	cat >"$FAB_DIR/promq.py" <<'PY'
# Prometheus's HTTP API at 127.0.0.1:9090 (its namespace's own lo).
#   alerts: one line an alert, "STATE NAME k=v ..." (the labels but
#           alertname, severity, job, instance), sorted
#   query EXPR: one line a sample, "k=v,... VALUE" (__name__ dropped)
#   values EXPR...: one line, the first sample's value of each, or "-"
#   targets: one line a target, "HOST HEALTH LAST_ERROR"
#   ready: exit 0 when Prometheus says it is ready
import json, sys, urllib.parse, urllib.request

BASE = "http://127.0.0.1:9090"

def get(path, **q):
    url = BASE + path + ("?" + urllib.parse.urlencode(q) if q else "")
    with urllib.request.urlopen(url, timeout=3) as r:
        return json.load(r)

try:
    if sys.argv[1] == "ready":
        urllib.request.urlopen(BASE + "/-/ready", timeout=2).read()
    elif sys.argv[1] == "alerts":
        out = []
        for a in get("/api/v1/alerts")["data"]["alerts"]:
            l = a["labels"]
            rest = " ".join("%s=%s" % (k, l[k]) for k in sorted(l)
                            if k not in ("alertname", "severity", "job", "instance"))
            out.append("%s %s %s" % (a["state"], l["alertname"], rest))
        if out:
            print("\n".join(sorted(out)))
    elif sys.argv[1] == "targets":
        for t in get("/api/v1/targets")["data"]["activeTargets"]:
            print(t["labels"].get("host", "?"), t["health"], t.get("lastError", ""))
    elif sys.argv[1] == "values":
        # one line: the first sample's value of each EXPR, or "-"
        vals = []
        for q in sys.argv[2:]:
            r = get("/api/v1/query", query=q)["data"]["result"]
            vals.append(r[0]["value"][1] if r else "-")
        print(" ".join(vals))
    elif sys.argv[1] == "query":
        for s in get("/api/v1/query", query=sys.argv[2])["data"]["result"]:
            m = s["metric"]
            print(",".join("%s=%s" % (k, m[k]) for k in sorted(m) if k != "__name__"),
                  s["value"][1])
    else:
        sys.exit("promq: alerts | query EXPR | values EXPR... | targets | ready")
except (OSError, ValueError, KeyError) as e:
    print("promq: %s" % e, file=sys.stderr)
    sys.exit(1)
PY
}
