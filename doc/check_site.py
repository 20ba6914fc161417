#!/usr/bin/env python3
"""Check the built documentation in a real browser (headless Chromium).

    python doc/check_site.py [doc/_build/html] [--max-pages N]

Serves the built site over HTTP on localhost, drives Chromium through the DevTools
protocol on a pipe (``--remote-debugging-pipe``: no extra Python packages), and checks

* every page reachable from ``index.html`` loads and renders: HTTP 200, a non-empty
  ``<main>`` with a heading, no uncaught JavaScript exception;
* every image of every page loaded (``complete`` with a non-zero natural width);
* every internal link resolves: the target file exists, and a ``#fragment`` names an
  element ``id`` of the target page;
* every formula is typeset: MathJax, loaded from the site itself (not from a CDN), has
  replaced the TeX of every ``.math`` element (no raw ``\\(`` left);
* every page title fits: at a 1280 x 900 window no ``<h1>`` is wider than its box or
  than the window, and the header (title, links, search, theme switch) is one row;
* the search page finds ``VBHiddenMarkov`` and ``lower bound``.

Exits with status 1 and a list of the problems if any check fails, 0 otherwise, and 0
with a message when Chromium is not installed (the check is skipped, e.g. in CI images
without a browser).  ``make doc-check`` builds the site and runs it.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlparse

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "chrome")
SEARCHES = ("VBHiddenMarkov", "lower bound")
WIDTH, HEIGHT = 1280, 900


def find_chromium():
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(root):
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class Browser:
    """A headless Chromium driven over ``--remote-debugging-pipe`` (fds 3 and 4)."""

    def __init__(self, binary, timeout=30.0):
        self.timeout = timeout
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        self._profile = Path(os.environ.get("TMPDIR", "/tmp")) / f"check_site_{os.getpid()}"
        # the background-networking flags keep Chromium from calling home on a machine
        # without a network (each refused connection costs time)
        args = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--disable-dev-shm-usage", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--remote-debugging-pipe",
                f"--window-size={WIDTH},{HEIGHT}", f"--user-data-dir={self._profile}",
                "about:blank"]

        def child_fds():
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self.proc = subprocess.Popen(args, pass_fds=(3, 4), preexec_fn=child_fds,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self.events = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target,
                                 flatten=True)["sessionId"]
        for domain in ("Page", "Runtime"):
            self.call(f"{domain}.enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=WIDTH,
                  height=HEIGHT, deviceScaleFactor=1, mobile=False)

    def _send(self, message):
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")

    def _receive(self, deadline):
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("no answer from Chromium")
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method, session=False, **params):
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        self._send(message)
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for_event(self, method, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        for i, event in enumerate(self.events):
            if event.get("method") == method:
                del self.events[: i + 1]
                return event
        while True:
            event = self._receive(deadline)
            if event.get("method") == method:
                return event
            self.events.append(event)

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", session=True, expression=expression,
                           returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"evaluating {expression[:60]!r}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, url):
        """Navigate and wait for the load event; return the uncaught exceptions."""
        self.events.clear()
        self.call("Page.navigate", session=True, url=url)
        self.wait_for_event("Page.loadEventFired")
        # let scripts that run after load (theme, search) finish
        self.evaluate("new Promise(r => setTimeout(r, 150))")
        return [e["params"]["exceptionDetails"].get("text", "exception")
                for e in self.events if e.get("method") == "Runtime.exceptionThrown"]

    def close(self):
        try:
            self.call("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self._profile, ignore_errors=True)


PAGE_STATE = """(async () => {
  const main = document.querySelector('main') || document.body;
  const imgs = Array.from(document.images);
  const maths = Array.from(document.querySelectorAll('.math'));
  if (maths.length && window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await Promise.race([MathJax.startup.promise, new Promise(r => setTimeout(r, 10000))]);
  }
  const width = document.documentElement.clientWidth;
  // the permalink "#" after a title is hidden until hovered: measure the title without it
  main.querySelectorAll('h1 .headerlink').forEach(a => { a.style.display = 'none'; });
  const mathjax = Array.from(document.scripts).map(s => s.src)
                       .filter(src => /mathjax/i.test(src));
  return {
    raw_math: maths.filter(m => !m.querySelector('mjx-container'))
                   .map(m => m.textContent.trim().slice(0, 60)),
    mathjax_sources: mathjax,
    wide_titles: Array.from(main.querySelectorAll('h1'))
      .filter(h => h.scrollWidth > h.clientWidth + 1
                   || h.getBoundingClientRect().right > width + 1)
      .map(h => h.textContent.trim().slice(0, 60)),
    header_rows: (() => {
      // the header's height over the theme's one-row height (--pst-header-height)
      const header = document.querySelector('header');
      const row = getComputedStyle(document.documentElement)
                    .getPropertyValue('--pst-header-height').trim();
      if (!header || !row.endsWith('rem')) return 1;
      const rem = parseFloat(getComputedStyle(document.documentElement).fontSize);
      return header.getBoundingClientRect().height / (parseFloat(row) * rem);
    })(),
    heading: !!main.querySelector('h1'),
    text: main.innerText.trim().length,
    broken_images: imgs.filter(i => !(i.complete && i.naturalWidth > 0))
                       .map(i => i.getAttribute('src')),
    n_images: imgs.length,
    n_math: maths.length,
    links: Array.from(document.querySelectorAll('a[href]')).map(a => a.href),
  };
})()"""

SEARCH_STATE = """new Promise(resolve => {
  const t0 = Date.now();
  const poll = () => {
    const items = document.querySelectorAll('#search-results li, ul.search li');
    const done = document.querySelector('#search-results p, .search-summary');
    if (items.length || Date.now() - t0 > 8000) {
      resolve(items.length);
    } else { setTimeout(poll, 100); }
  };
  poll();
})"""


def _ids(path, cache={}):
    if path not in cache:
        text = path.read_text(errors="replace")
        cache[path] = set(re.findall(r'\bid="([^"]+)"', text)) | set(
            re.findall(r'\bname="([^"]+)"', text))
    return cache[path]


def check(root, max_pages=None, verbose=True):
    root = Path(root).resolve()
    if not (root / "index.html").is_file():
        return [f"{root}/index.html does not exist: build the site first (make doc)"]
    binary = find_chromium()
    if binary is None:
        print("check_site: no Chromium found; browser check skipped.")
        return None
    server = serve(root)
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    problems = []
    browser = Browser(binary)
    try:
        queue, seen = deque(["index.html"]), {"index.html"}
        n_pages = n_images = n_links = n_formulas = 0
        while queue and (max_pages is None or n_pages < max_pages):
            page = queue.popleft()
            errors = browser.open(base + page)
            state = browser.evaluate(PAGE_STATE)
            n_pages += 1
            n_images += state["n_images"]
            for error in errors:
                problems.append(f"{page}: JavaScript exception: {error}")
            if state["text"] == 0 or not state["heading"]:
                problems.append(f"{page}: renders no heading or no text in <main>")
            for src in state["broken_images"]:
                problems.append(f"{page}: image did not load: {src}")
            for tex in state["raw_math"]:
                problems.append(f"{page}: formula not typeset: {tex}")
            for src in state["mathjax_sources"]:
                if not src.startswith(base):
                    problems.append(f"{page}: MathJax loaded from outside the site: {src}")
            for title in state["wide_titles"]:
                problems.append(f"{page}: title wider than its box at {WIDTH} px: {title}")
            if state["header_rows"] > 1.25:
                problems.append(f"{page}: the header wraps onto a second row at {WIDTH} px "
                                f"({state['header_rows']:.1f} times its one-row height)")
            n_formulas += state["n_math"] - len(state["raw_math"])
            for link in state["links"]:
                url, fragment = urldefrag(link)
                if not url.startswith(base):
                    continue
                n_links += 1
                rel = unquote(urlparse(url).path)[1:] or "index.html"
                target = root / rel
                if target.is_dir():
                    target, rel = target / "index.html", rel.rstrip("/") + "/index.html"
                if not target.is_file():
                    problems.append(f"{page}: broken link to {rel}")
                    continue
                if fragment and target.suffix == ".html" and fragment not in _ids(target):
                    problems.append(f"{page}: link to {rel}#{fragment}: no such anchor")
                if target.suffix == ".html" and rel not in seen and not rel.startswith("_"):
                    seen.add(rel)
                    queue.append(rel)
        for term in SEARCHES:
            browser.open(base + "search.html?q=" + term.replace(" ", "+"))
            hits = browser.evaluate(SEARCH_STATE)
            if not hits:
                problems.append(f"search for {term!r} found nothing")
            elif verbose:
                print(f"check_site: search {term!r}: {hits} results")
        if verbose:
            print(f"check_site: {n_pages} pages, {n_images} images, {n_formulas} typeset formulas, "
                  f"{n_links} internal links checked in Chromium ({Path(binary).name}).")
    finally:
        browser.close()
        server.shutdown()
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default=str(Path(__file__).parent / "_build" / "html"))
    parser.add_argument("--max-pages", type=int, default=None)
    args = parser.parse_args(argv)
    problems = check(args.root, args.max_pages)
    if problems is None:
        return 0
    for problem in problems:
        print("check_site:", problem)
    if problems:
        print(f"check_site: {len(problems)} problem(s).")
        return 1
    print("check_site: every page renders, every image loads, every formula is typeset, "
          "every title fits, every internal link resolves, search works.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
