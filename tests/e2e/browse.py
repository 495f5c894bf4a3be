#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Load a page in headless Chromium as a person would, and say what they
would see: tests/e2e/fleet-browser.sh's browser.

  browse.py URL OUT_DIR [--click SELECTOR] [--shot FILE] [--width W]
            [--height H]

Chromium is driven over its DevTools protocol on a pipe
(--remote-debugging-pipe: JSON messages ending in a NUL on fds 3 and 4;
nothing listens on a port).  The page is loaded with its scripts
disabled (the status page must read without them), then OUT_DIR gets:
  dom.html      the DOM as rendered
  cells.json    every element with data-probe: its name, class, link,
                text; and the page's figures: its bytes, its load time
                (ms from the navigation's start to the load event's end,
                Navigation Timing) and render time (the renderer's style
                and layout, ms, the DevTools' Performance metrics)
  console.txt   every console message, exception and log entry of level
                error or warning ("" when none)
  click.txt     with --click: the text of the page one real mouse click
                on the first element SELECTOR matches led to, and its URL
and, with --shot, a PNG screenshot of what a window of W x H pixels
(1280 x 800) shows of the page.  Exit 0, or 1 with
a line on stderr when the browser could not do it (within 60 s)."""
import base64
import json
import os
import subprocess
import sys
import time

DEADLINE = time.monotonic() + 60


class Browser:
    def __init__(self, argv):
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()
        os.set_inheritable(to_chrome_r, True)
        os.set_inheritable(from_chrome_w, True)

        def fds():
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        self.proc = subprocess.Popen(argv, preexec_fn=fds, pass_fds=(3, 4),
                                     stdout=subprocess.DEVNULL,
                                     stderr=open(os.environ.get("BROWSE_ERR", os.devnull), "w"))
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf = b""
        self.next_id = 0
        self.events = []

    def _read(self):
        while b"\0" not in self.buf:
            if time.monotonic() > DEADLINE:
                raise TimeoutError("the browser did not answer within 60 s")
            chunk = os.read(self.from_chrome, 1 << 20)
            if not chunk:
                raise EOFError("the browser closed its pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        while True:
            m = self._read()
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, *methods):
        """The first event of one of methods (kept ones first)."""
        for i, m in enumerate(self.events):
            if m.get("method") in methods:
                del self.events[i]
                return m
        while True:
            m = self._read()
            if m.get("method") in methods:
                return m
            self.events.append(m)

    def close(self):
        try:
            self.call("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def console_lines(events):
    out = []
    for m in events:
        meth, p = m.get("method"), m.get("params", {})
        if meth == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
            out.append("console.%s: %s" % (p["type"], " ".join(
                str(a.get("value", a.get("description", ""))) for a in p.get("args", []))))
        elif meth == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            out.append("Uncaught: %s" % d.get("exception", {}).get("description", d.get("text", "")))
        elif meth == "Log.entryAdded" and p["entry"]["level"] in ("error", "warning"):
            e = p["entry"]
            out.append("log.%s: %s %s" % (e["level"], e.get("text", ""), e.get("url", "")))
    return out


FIGURES = """(() => {
  const nav = performance.getEntriesByType('navigation')[0];
  return JSON.stringify({
    bytes: nav.encodedBodySize || nav.transferSize,
    response_ms: nav.responseEnd - nav.requestStart,
    dom_ms: nav.domContentLoadedEventEnd - nav.responseEnd,
    load_ms: nav.loadEventEnd - nav.startTime,
    cells: [...document.querySelectorAll('[data-probe]')].map(e => ({
      probe: e.getAttribute('data-probe'), cls: e.className,
      href: e.getAttribute('href'), text: e.innerText })),
    scripts: document.scripts.length,
    external: [...document.querySelectorAll('[src], link[href]:not([href^="data:"])')].length,
  });
})()"""


def center_of(b, session, selector):
    r = b.call("Runtime.evaluate", {"expression": """(() => {
        const e = document.querySelector(%s); if (!e) return null;
        e.scrollIntoView({block: 'center'});
        const r = e.getBoundingClientRect();
        return JSON.stringify([r.x + r.width / 2, r.y + r.height / 2]);
      })()""" % json.dumps(selector), "returnByValue": True}, session)
    v = r.get("result", {}).get("value")
    return json.loads(v) if v else None


def click(b, session, selector, out):
    xy = center_of(b, session, selector)
    if not xy:
        raise RuntimeError("nothing matches %s to click" % selector)
    for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
        b.call("Input.dispatchMouseEvent", {"type": kind, "x": xy[0], "y": xy[1],
                                            "button": "left", "clickCount": 1}, session)
    # another page loaded, or (a link within the page) none
    b.wait_event("Page.loadEventFired", "Page.navigatedWithinDocument")
    r = b.call("Runtime.evaluate", {"expression":
                                    "location.href + '\\n' + document.body.innerText",
                                    "returnByValue": True}, session)
    with open(os.path.join(out, "click.txt"), "w") as f:
        f.write(r["result"]["value"])


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        sys.exit(__doc__)
    url, out = args[0], args[1]
    opt = dict(zip(args[2::2], args[3::2]))
    width = int(opt.get("--width", "1280"))
    height = int(opt.get("--height", "800"))
    chrome = os.environ.get("CHROMIUM", "chromium")
    b = Browser([chrome, "--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-dev-shm-usage", "--no-first-run",
                 "--remote-debugging-pipe",
                 "--user-data-dir=" + os.path.join(out, "profile"),
                 "about:blank"])
    try:
        t = b.call("Target.createTarget", {"url": "about:blank"})
        s = b.call("Target.attachToTarget", {"targetId": t["targetId"],
                                             "flatten": True})["sessionId"]
        for dom in ("Page", "Runtime", "Log", "Performance"):
            b.call(dom + ".enable", {}, s)
        b.call("Emulation.setScriptExecutionDisabled", {"value": True}, s)
        b.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
               "deviceScaleFactor": 1, "mobile": False}, s)
        b.call("Page.navigate", {"url": url}, s)
        b.wait_event("Page.loadEventFired")
        fig = json.loads(b.call("Runtime.evaluate", {"expression": FIGURES,
                                "returnByValue": True}, s)["result"]["value"])
        # the renderer's own time on it: style, layout and paint
        met = {m["name"]: m["value"] for m in
               b.call("Performance.getMetrics", {}, s)["metrics"]}
        fig["render_ms"] = 1000 * sum(met.get(k, 0) for k in (
            "RecalcStyleDuration", "LayoutDuration"))
        fig["nodes"] = met.get("Nodes")
        dom = b.call("Runtime.evaluate", {"expression": "document.documentElement.outerHTML",
                                          "returnByValue": True}, s)["result"]["value"]
        with open(os.path.join(out, "dom.html"), "w") as f:
            f.write(dom)
        with open(os.path.join(out, "cells.json"), "w") as f:
            json.dump(fig, f, indent=1)
        if "--shot" in opt:
            png = b.call("Page.captureScreenshot", {"format": "png",
                         "captureBeyondViewport": False}, s)["data"]
            with open(opt["--shot"], "wb") as f:
                f.write(base64.b64decode(png))
        if "--click" in opt:
            click(b, s, opt["--click"], out)
        with open(os.path.join(out, "console.txt"), "w") as f:
            f.write("".join(l + "\n" for l in console_lines(b.events)))
    except Exception as e:  # one line: what the browser could not do
        print("browse.py: %s" % e, file=sys.stderr)
        return 1
    finally:
        b.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
