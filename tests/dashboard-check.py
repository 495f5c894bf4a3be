#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Check a Grafana dashboard (contrib/grafana/evrdma-fleet.json) and its queries.

usage: dashboard-check.py lint DASHBOARD METRICS_C RULES...
       dashboard-check.py exprs DASHBOARD [VAR=VALUE...]
       dashboard-check.py fleet DASHBOARD URL [--avoid HOST] [--firing]
                          [--allow-empty ERE] [--range SECS] [--hosts N]
                          [--dump JSON]
       dashboard-check.py plot JSON PNG CAPTION

lint: the dashboard as Grafana's JSON model: it parses, its datasource is
the ${DS_PROMETHEUS} input everywhere (panels, rows, nested panels,
targets, template variables, annotations), panel ids, refIds and
variable names are unique, every $variable is defined, panels fit the
24-column grid, and every metric its queries name is a family of
METRICS_C (its HELP lines: a histogram's _bucket, _sum, _count, a
summary's _sum, _count) or a record of one of RULES (or ALERTS, up).

exprs: every query, one JSON object a line ({"where", "kind", "expr"}),
each $variable replaced by VAR=VALUE ($__rate_interval, $__interval and
$__range too; one not given is left as it is); a template variable's label_values(SELECTOR, LABEL) as
its SELECTOR.

fleet: every query run by the Prometheus at URL (/api/v1/query for
instant targets, /api/v1/query_range over the last --range seconds,
60, for the others; label_values() as /api/v1/label/LABEL/values).
The variables get real values: the job from its own query (the first),
the host the first of its values that is not --avoid, the peer the
first of the host's that is not --avoid either.  Each query must return
a series with a finite value; a query whose expression has host="$host"
only series of that host (peer="$host": of that peer); a matrix
(groupingToMatrix) series with both of its labels, two rows and two
columns at least (N-1 each with --hosts N: every host, but perhaps
the faulty one); --hosts N: $host's values N hosts; a legend's {{label}} in every series; the alerts
table only firing evrdma alerts, at least one with --firing.  Queries
of the RDMA device metrics (evrdma_rdma_*) must return nothing where no
agent of the job exports them (a TCP fleet) and a series where one does;
--allow-empty ERE lets queries naming a metric that matches ERE return
nothing (said so).

--dump JSON writes the matrices' answers (title, unit, cells); plot
draws them with gnuplot into PNG, one heat map a matrix panel, under
CAPTION: a picture of what the panels' queries returned, not of Grafana.

Prints one line a check, "ok<TAB>DESC" or "not ok<TAB>DESC<TAB>DETAIL";
exit status 0 when every check passed, 1 otherwise, 2 on bad usage.
"""
import json
import math
import re
import sys
import time
import urllib.parse
import urllib.request

DS = {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
BUILTIN_VARS = {"__rate_interval", "__interval", "__range", "__range_s", "__interval_ms"}
KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left",
            "group_right", "bool", "offset", "inf", "nan", "atan2"}
FAILED = 0


def report(good, desc, detail=""):
    global FAILED
    if good:
        print("ok\t%s" % desc)
    else:
        FAILED += 1
        print("not ok\t%s\t%s" % (desc, str(detail).replace("\n", " ")[:400]))


def panels_of(dash):
    """Every panel, rows' nested ones too: (panel, path)"""
    out = []

    def walk(ps, path):
        for p in ps:
            where = "%s%s" % (path, p.get("title", "?"))
            out.append((p, where))
            walk(p.get("panels", []), where + " / ")
    walk(dash.get("panels", []), "")
    return out


def queries(dash):
    """Every query: dicts where, kind (instant|range|label_values|annotation),
    expr, panel (or None), target (or None)"""
    out = []
    for p, where in panels_of(dash):
        for t in p.get("targets", []):
            if "expr" not in t:
                continue
            kind = "instant" if t.get("instant") and not t.get("range") else "range"
            out.append({"where": "%s [%s]" % (where, t.get("refId", "?")), "kind": kind,
                        "expr": t["expr"], "panel": p, "target": t})
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        q = v.get("query")
        q = q.get("query") if isinstance(q, dict) else q
        out.append({"where": "variable $%s" % v["name"], "kind": "label_values",
                    "expr": q, "panel": None, "target": None, "var": v["name"]})
    for a in dash.get("annotations", {}).get("list", []):
        if a.get("expr"):
            out.append({"where": "annotation %s" % a.get("name", "?"), "kind": "range",
                        "expr": a["expr"], "panel": None, "target": None})
    return out


LABEL_VALUES = re.compile(r"^\s*label_values\(\s*(.*?)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$", re.S)


def substitute(expr, values, keep=False):
    def rep(m):
        name = m.group(1) or m.group(2)
        if name not in values:
            if keep:
                return m.group(0)
            raise KeyError(name)
        return values[name]
    return re.sub(r"\$\{([a-zA-Z_][a-zA-Z0-9_]*)\}|\$([a-zA-Z_][a-zA-Z0-9_]*)", rep, expr)


def metric_names(expr):
    """The metric names a PromQL expression selects (functions,
    keywords, labels, strings, durations and numbers left out)."""
    s = re.sub(r"\$\{?[a-zA-Z_][a-zA-Z0-9_]*\}?", "", expr)
    s = re.sub(r'"(?:[^"\\]|\\.)*"', '""', s)
    s = re.sub(r"'(?:[^'\\]|\\.)*'", "''", s)
    s = re.sub(r"\{[^}]*\}", " ", s)
    s = re.sub(r"\[[^\]]*\]", " ", s)
    s = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", s)
    s = re.sub(r"(?<![a-zA-Z_:0-9])\d+(\.\d+)?([eE][-+]?\d+)?", " ", s)
    names = set()
    for m in re.finditer(r"[a-zA-Z_:][a-zA-Z0-9_:]*", s):
        rest = s[m.end():].lstrip()
        if rest.startswith("("):
            continue
        if m.group(0).lower() in KEYWORDS:
            continue
        names.add(m.group(0))
    return names


def known_metrics(metrics_c, rules):
    src = open(metrics_c).read()
    fams = re.findall(r'"(evrdma_[a-z0-9_]+)",\s*"(gauge|counter|histogram|summary)"', src)
    names = set()
    for n, t in fams:
        names.add(n)
        if t == "histogram":
            names.update((n + "_bucket", n + "_sum", n + "_count"))
        elif t == "summary":
            names.update((n + "_sum", n + "_count"))
    recs = set()
    for r in rules:
        recs.update(re.findall(r"^\s*-\s*record:\s*(\S+)\s*$", open(r).read(), re.M))
    return names, recs, len(fams)


def lint(path, metrics_c, rules):
    try:
        with open(path) as f:
            dash = json.load(f)
    except (OSError, ValueError) as e:
        report(False, "the dashboard parses as JSON", e)
        return
    report(True, "the dashboard parses as JSON")
    ins = dash.get("__inputs", [])
    report(any(i.get("name") == "DS_PROMETHEUS" and i.get("type") == "datasource"
               and i.get("pluginId") == "prometheus" for i in ins),
           "it asks for a Prometheus data source as the input DS_PROMETHEUS", ins)
    report(isinstance(dash.get("schemaVersion"), int) and dash["schemaVersion"] >= 36,
           "schemaVersion %s (Grafana 9.x and later)" % dash.get("schemaVersion"))
    report(bool(re.match(r"^[a-zA-Z0-9_-]{1,40}$", str(dash.get("uid", "")))),
           "its uid %r is a Grafana uid (40 characters at most)" % dash.get("uid"))
    report("SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause" in dash.get("description", ""),
           "its description carries the license (SPDX)")

    ps = panels_of(dash)
    bad = [w for p, w in ps if p.get("datasource") != DS]
    report(not bad, "every panel's data source is the input (%d panels, rows and nested ones)" % len(ps), bad)
    bad = ["%s %s" % (w, t.get("refId")) for p, w in ps for t in p.get("targets", [])
           if t.get("datasource") != DS]
    report(not bad, "every target's data source is the input", bad)
    tv = dash.get("templating", {}).get("list", [])
    bad = [v.get("name") for v in tv if v.get("type") == "query" and v.get("datasource") != DS]
    report(not bad, "every query variable's data source is the input", bad)
    bad = [a.get("name") for a in dash.get("annotations", {}).get("list", [])
           if not a.get("builtIn") and a.get("datasource") != DS]
    report(not bad, "every annotation's data source is the input (but Grafana's built-in one)", bad)

    ids = [p.get("id") for p, _ in ps]
    dup = sorted({i for i in ids if ids.count(i) > 1}, key=str)
    report(all(isinstance(i, int) for i in ids) and not dup,
           "panel ids are integers, each once (%d)" % len(ids), dup)
    bad = [w for p, w in ps if len({t.get("refId") for t in p.get("targets", [])}) != len(p.get("targets", []))]
    report(not bad, "refIds are unique within each panel", bad)
    names = [v.get("name") for v in tv]
    report(len(set(names)) == len(names), "template variable names are unique: %s" % " ".join(names))
    bad = [w for p, w in ps if p.get("type") != "row" and not p.get("targets")]
    report(not bad, "every panel but the rows has a query", bad)
    bad = []
    for p, w in ps:
        g = p.get("gridPos", {})
        if not all(isinstance(g.get(k), int) for k in "xywh") or g["x"] + g["w"] > 24 or g["w"] < 1:
            bad.append(w)
    report(not bad, "every panel has a gridPos within the 24 columns", bad)

    qs = queries(dash)
    fams, recs, nfam = known_metrics(metrics_c, rules)
    report(nfam >= 40, "%s names %d metric families" % (metrics_c.split("/")[-1], nfam))
    unknown, used = [], set()
    undefined = []
    for q in qs:
        e = q["expr"]
        m = LABEL_VALUES.match(e)
        if m:
            e = m.group(1)
        for n in metric_names(e):
            used.add(n)
            if n not in fams and n not in recs and n not in ("ALERTS", "up"):
                unknown.append("%s: %s" % (q["where"], n))
        for v in re.findall(r"\$\{?([a-zA-Z_][a-zA-Z0-9_]*)\}?", q["expr"]):
            if v not in names and v not in BUILTIN_VARS:
                undefined.append("%s: $%s" % (q["where"], v))
    report(not unknown, "every metric the %d queries name is an agent's family or a recording rule "
           "(%d names: %d families, %d records)" % (len(qs), len(used), len(used & fams), len(used & recs)),
           unknown)
    report(not undefined, "every $variable of the queries is defined", undefined)
    # panel titles and descriptions name variables too
    bad = []
    for p, w in ps:
        for v in re.findall(r"\$\{?([a-zA-Z_][a-zA-Z0-9_]*)\}?", p.get("title", "")):
            if v not in names:
                bad.append("%s: $%s" % (w, v))
    report(not bad, "every $variable of the panel titles is defined", bad)


def exprs(path, assigns):
    dash = json.load(open(path))
    values = dict(a.split("=", 1) for a in assigns)
    for q in queries(dash):
        e = q["expr"]
        m = LABEL_VALUES.match(e)
        if m:
            e = m.group(1)
        print(json.dumps({"where": q["where"], "kind": q["kind"], "expr": substitute(e, values, True)},
                         ensure_ascii=False))


# ------------------------------------------------------------------ fleet

class Prom:
    def __init__(self, url):
        self.url = url.rstrip("/")
        self.calls = 0

    def get(self, path, params):
        self.calls += 1
        url = self.url + path + "?" + urllib.parse.urlencode(params, doseq=True)
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.load(r)
        if body.get("status") != "success":
            raise ValueError("%s: %s" % (body.get("errorType"), body.get("error")))
        return body["data"]


def finite(v):
    try:
        return math.isfinite(float(v))
    except ValueError:
        return False


def fleet(path, url, avoid, firing, allow_empty, rng, nhosts, dump=None):
    matrices = []
    dash = json.load(open(path))
    prom = Prom(url)
    qs = queries(dash)
    now = time.time()
    values = {"__rate_interval": "30s", "__interval": "5s", "__range": "%ds" % rng,
              "__range_s": str(rng), "__interval_ms": "5000"}

    # the template variables first, in their order: each one's values
    for q in qs:
        if q["kind"] != "label_values":
            continue
        m = LABEL_VALUES.match(q["expr"])
        if not m:
            report(False, "%s: a label_values(SELECTOR, LABEL) query" % q["where"], q["expr"])
            return
        try:
            sel = substitute(m.group(1), values)
            vals = prom.get("/api/v1/label/%s/values" % m.group(2),
                            {"match[]": sel, "start": now - rng, "end": now})
        except (OSError, ValueError, KeyError) as e:
            report(False, "%s: %s" % (q["where"], q["expr"]), e)
            return
        name = q["var"]
        pick = [v for v in vals if v != avoid]
        if name == "job":
            pick = [v for v in pick if v == "evrdma"] or pick
        ok = bool(pick)
        if name == "peer":
            ok = ok and values["host"] not in vals
        if name == "host" and nhosts:
            ok = ok and len(vals) == nhosts
        report(ok, "%s: %s -> %d values (%s), $%s=%s" % (
            q["where"], sel, len(vals), " ".join(vals[:8]) + (" ..." if len(vals) > 8 else ""),
            name, pick[0] if pick else "?"), vals)
        if not pick:
            return
        values[name] = pick[0]

    # are there RDMA devices in this job at all?
    devs = prom.get("/api/v1/query", {"query": 'count({__name__=~"evrdma_rdma_.+",job="%s"})' % values["job"],
                                      "time": now})["result"]
    have_devs = bool(devs)
    print("#\tthe job's agents export RDMA device series: %s" % ("yes" if have_devs else "no (a TCP fleet)"))

    n = 0
    for q in qs:
        if q["kind"] == "label_values":
            continue
        n += 1
        expr = substitute(q["expr"], values)
        names = metric_names(q["expr"])
        device = any(x.startswith("evrdma_rdma_") for x in names)
        may_empty = allow_empty and any(re.search(allow_empty, x) for x in names)
        desc = "%s (%s)" % (q["where"], q["kind"])
        try:
            if q["kind"] == "instant":
                data = prom.get("/api/v1/query", {"query": expr, "time": now})
                series = [(s["metric"], [s["value"]]) for s in data["result"]]
            else:
                data = prom.get("/api/v1/query_range", {"query": expr, "start": now - rng, "end": now, "step": 5})
                series = [(s["metric"], s["values"]) for s in data["result"]]
        except (OSError, ValueError) as e:
            report(False, desc, "%s: %s" % (expr, e))
            continue
        good = [m for m, vs in series if any(finite(v) for _, v in vs)]
        if device and not have_devs:
            report(not series, "%s: empty, as it should be without an RDMA device" % desc,
                   "%d series" % len(series))
            continue
        if may_empty and not series:
            report(True, "%s: empty, allowed (--allow-empty %s)" % (desc, allow_empty))
            continue
        if "ALERTS" in names and not firing and not series:
            report(True, "%s: empty (no alert firing, and none asked for)" % desc)
            continue
        problems = []
        if not good:
            problems.append("no series with a finite value (%d series)" % len(series))
        for lab, want in (("host", '"$host"'), ("peer", '"$host"')):
            if re.search(r"\b%s\s*=\s*%s" % (lab, re.escape(want)), q["expr"]):
                other = sorted({m.get(lab, "(none)") for m, _ in series} - {values["host"]})
                if other:
                    problems.append("series of %s %s besides %s" % (lab, ",".join(other), values["host"]))
        p, t = q["panel"], q["target"]
        if p is not None:
            for tr in p.get("transformations", []):
                if tr.get("id") == "groupingToMatrix":
                    o = tr["options"]
                    rows = {m.get(o["rowField"]) for m, _ in series}
                    cols = {m.get(o["columnField"]) for m, _ in series}
                    if None in rows or None in cols:
                        problems.append("a series without %s or %s" % (o["rowField"], o["columnField"]))
                    elif min(len(rows), len(cols)) < max(2, nhosts - 1):
                        problems.append("%d rows x %d columns" % (len(rows), len(cols)))
                    else:
                        desc += ": %d x %d" % (len(rows), len(cols))
                    matrices.append({"title": p["title"],
                                     "unit": p.get("fieldConfig", {}).get("defaults", {}).get("unit", ""),
                                     "cells": [[m.get(o["rowField"]), m.get(o["columnField"]), vs[-1][1]]
                                               for m, vs in series]})
        if t is not None and t.get("legendFormat"):
            for lab in re.findall(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}", t["legendFormat"]):
                if any(lab not in m for m, _ in series):
                    problems.append("a series without the legend's label %s" % lab)
        if "ALERTS" in names:
            bad = [m for m, _ in series if m.get("alertstate") != "firing"
                   or not re.match(r"^Evrdma", m.get("alertname", ""))]
            if bad:
                problems.append("not a firing evrdma alert: %s" % bad[0])
            if firing:
                desc += ": %s" % " ".join(sorted({"%s{host=%s}" % (m.get("alertname"), m.get("host", ""))
                                                  for m, _ in series}))
        report(not problems, "%s: %d series" % (desc, len(series)), "; ".join(problems) + " | " + expr)
    print("#\t%d queries and %d variables run, %d calls to Prometheus" % (
        n, sum(1 for q in qs if q["kind"] == "label_values"), prom.calls))
    if dump:
        with open(dump, "w") as f:
            json.dump(matrices, f)


# units of Grafana's fieldConfig, as a heat map's scale and label
UNITS = {"s": (1e6, "us"), "percentunit": (100, "%"), "Bps": (1e-6, "MB/s"), "x": (1, "x"), "none": (1, "")}


def natural(v):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", v)]


def plot(path, png, caption):
    import os
    import subprocess
    ms = json.load(open(path))
    if not ms:
        print("plot: no matrix in %s" % path, file=sys.stderr)
        return 1
    d = os.path.dirname(os.path.abspath(png))
    cols = 3 if len(ms) > 4 else 2
    rows = (len(ms) + cols - 1) // cols
    # pngcairo where there is one: png (libgd) draws every colour box
    # in the first palette
    term = "pngcairo"
    if subprocess.run(["gnuplot", "-e", "set terminal pngcairo"], capture_output=True).returncode:
        term = "png"
    g = ["set terminal %s size %d,%d" % (term, 460 * cols, 440 * rows + 60),
         "set output '%s'" % png,
         "set multiplot layout %d,%d title \"%s\" noenhanced" % (rows, cols, caption.replace('"', "'")),
         "set size ratio -1", "set xlabel 'peer'", "set ylabel 'prober'"]
    for i, m in enumerate(ms):
        scale, label = UNITS.get(m["unit"], (1, m["unit"]))
        hosts = sorted({c[0] for c in m["cells"]} | {c[1] for c in m["cells"]}, key=natural)
        at = {h: k + 1 for k, h in enumerate(hosts)}
        vals = {(c[0], c[1]): c[2] for c in m["cells"]}
        data = os.path.join(d, ".matrix%d.dat" % i)
        with open(data, "w") as f:
            for r in hosts:
                for c in hosts:
                    v = vals.get((r, c))
                    f.write("%d %d %s\n" % (at[r], at[c], "NaN" if v is None or not finite(v)
                                            else repr(float(v) * scale)))
        tics = ", ".join('"%s" %d' % (h, at[h]) for h in hosts)
        nums = [float(v) * scale for v in vals.values() if finite(v)]
        # times and ratios span decades: a log scale; shares from 0;
        # up (1) and throughput are good high: green there, red low
        if m["unit"] in ("s", "x") and nums and min(nums) > 0:
            scb = "set logscale cb; set cbrange [*:*]"
        else:
            scb = "unset logscale cb; set cbrange [0:%r]" % (max(nums + [0]) or 1)
        pal = ("set palette defined (0 '#d7191c', 1 '#fdae61', 2 '#1a9641')" if m["unit"] in ("none", "Bps")
               else "set palette defined (0 '#ffffcc', 1 '#fd8d3c', 2 '#800026')")
        g += ["set title \"%s (%s)\" noenhanced" % (m["title"], label or "value"),
              "set xrange [0.5:%d.5]" % len(hosts), "set yrange [%d.5:0.5]" % len(hosts),
              "set xtics (%s) font ',8'" % tics, "set ytics (%s) font ',8'" % tics,
              scb, pal,
              "plot '%s' using 2:1:3 with image notitle" % data]
    g.append("unset multiplot")
    r = subprocess.run(["gnuplot"], input="\n".join(g) + "\n", text=True, capture_output=True)
    for i in range(len(ms)):
        try:
            os.unlink(os.path.join(d, ".matrix%d.dat" % i))
        except OSError:
            pass
    if r.returncode:
        print(r.stderr, file=sys.stderr)
    return r.returncode


def main(argv):
    if len(argv) >= 5 and argv[1] == "lint":
        lint(argv[2], argv[3], argv[4:])
    elif len(argv) >= 3 and argv[1] == "exprs":
        exprs(argv[2], argv[3:])
        return 0
    elif len(argv) >= 4 and argv[1] == "fleet":
        avoid, firing, allow, rng, nhosts, dump = None, False, None, 60, 0, None
        rest = argv[4:]
        while rest:
            a = rest.pop(0)
            if a == "--avoid" and rest:
                avoid = rest.pop(0)
            elif a == "--firing":
                firing = True
            elif a == "--allow-empty" and rest:
                allow = rest.pop(0)
            elif a == "--range" and rest:
                rng = int(rest.pop(0))
            elif a == "--hosts" and rest:
                nhosts = int(rest.pop(0))
            elif a == "--dump" and rest:
                dump = rest.pop(0)
            else:
                print(__doc__.strip().splitlines()[2], file=sys.stderr)
                return 2
        fleet(argv[2], argv[3], avoid, firing, allow, rng, nhosts, dump)
    elif len(argv) == 5 and argv[1] == "plot":
        return plot(argv[2], argv[3], argv[4])
    else:
        print("\n".join(__doc__.strip().splitlines()[2:8]), file=sys.stderr)
        return 2
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
