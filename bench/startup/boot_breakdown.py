"""Where the Pyodide path's start-up goes: page open -> first result on the demo page through
Pyodide (fresh headless Chromium each time), and a breakdown of the boot and the session.

    .venv/bin/python bench/startup/boot_breakdown.py [--runs 5] [--compare] [--before DIR] [--url-suffix ?noproxy]
                                             [--no-breakdown] [--json FILE]

Page open -> first result: from the navigation's start (performance.timeOrigin) until #top1 on
the demo page shows a class, read by a MutationObserver installed before the page's scripts.
Serves the repository with demo/serve.py on a free port (loopback only); run
build_scripts/build_web.py first. Debian's chromium, launched as in tests/conftest.py.

The breakdown (two more fresh browsers, from the snapshot and from scratch, on the page's own
thread so the numbers are not mixed with a worker's start): the steps web/pyodide-boot.mjs
records (runtime.steps), the file fetches the Resource Timing API saw, then nnwasm's session
creation split into its phases and the first run, timed inside Pyodide by bench/startup/boot_phases.py.

--compare adds runs with the snapshot refused (nnwasm-web.json served without it); --before DIR
adds the demo of another checkout (its dist/web/ built), all interleaved.
"""
import argparse
import importlib.util
import json
import shutil
import statistics
import sys
import threading
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from conftest import CHROMIUM_FLAGS  # noqa: E402

FIRST_RESULT_PROBE = """
new MutationObserver((_, observer) => {
  const top1 = document.getElementById("top1");
  if (top1 && top1.textContent !== "\u2026" && window.__firstResult === undefined) {
    window.__firstResult = performance.now();
    observer.disconnect();
  }
}).observe(document, { subtree: true, childList: true, characterData: true });
"""

# A page of our own on the demo's origin (routed by playwright, so demo/ stays untouched): boots
# on the page thread, then times the phases of one EfficientNet-Lite0 session inside Pyodide.
BREAKDOWN_PAGE = """<!doctype html><meta charset="utf-8"><script type="module">
import { boot } from "/web/pyodide-boot.mjs";
import { env } from "/web/env.mjs";
env.pyodideSnapshot = !location.search.includes("nosnapshot");
const t0 = performance.now();
const runtime = await boot();
const bootEnd = performance.now();
const model = new Uint8Array(await (await fetch("/demo/assets/efficientnet-lite0.onnx")).arrayBuffer());
const phases = await (await fetch("/bench/startup/boot_phases.py")).text();
runtime.pyodide.globals.set("model_bytes", model);
const out = JSON.parse(runtime.pyodide.runPython(phases));
window.__breakdown = { bootStart: t0, bootEnd, steps: runtime.steps ?? null, python: out,
  resources: performance.getEntriesByType("resource").map((e) => ({ name: new URL(e.name).pathname,
    start: e.startTime, end: e.responseEnd, bytes: e.transferSize })) };
</script>"""


def load_server(root=ROOT):
    """demo/serve.py of the tree at root, serving that tree on a free port."""
    spec = importlib.util.spec_from_file_location(f"demo_serve_{abs(hash(str(root)))}", Path(root) / "demo" / "serve.py")
    serve = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(serve)
    return serve.DemoServer(port=0, root=Path(root))


def launch(pw):
    return pw.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_FLAGS)


def without_snapshot(route):
    """nnwasm-web.json as if build_web.py had made no snapshot: the boot starts Python from scratch."""
    manifest = json.loads(route.fetch().text())
    manifest.pop("pyodideSnapshot", None)
    route.fulfill(body=json.dumps(manifest), content_type="application/json")


def page_open_to_result(pw, url, snapshot=True):
    browser = launch(pw)
    try:
        page = browser.new_page()
        if not snapshot:
            page.context.route("**/dist/web/nnwasm-web.json", without_snapshot)
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.add_init_script(FIRST_RESULT_PROBE)
        page.goto(url)
        page.wait_for_function("window.__firstResult !== undefined", timeout=120_000)
        if errors:
            raise RuntimeError(f"the page failed: {errors}")
        cells = {k: page.inner_text(f"#t-{k}") for k in ("boot", "create", "run")}
        return page.evaluate("window.__firstResult"), cells, page.inner_text("#top1")
    finally:
        browser.close()


def breakdown(pw, base, snapshot=True):
    browser = launch(pw)
    try:
        page = browser.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.route(base + "bench/breakdown.html*",
                   lambda route: route.fulfill(body=BREAKDOWN_PAGE, content_type="text/html"))
        page.route(base + "bench/startup/boot_phases.py",
                   lambda route: route.fulfill(body=(ROOT / "bench" / "startup" / "boot_phases.py").read_text(),
                                               content_type="text/plain"))
        page.goto(base + "bench/breakdown.html" + ("" if snapshot else "?nosnapshot"))
        page.wait_for_function("window.__breakdown !== undefined || false", timeout=120_000)
        if errors:
            raise RuntimeError(f"the breakdown page failed: {errors}")
        return page.evaluate("window.__breakdown")
    finally:
        browser.close()


def print_breakdown(b, label):
    print(f"\nBoot on the page thread, {label} (ms since navigation start):")
    print(f"  boot() called at {b['bootStart']:.0f}, resolved at {b['bootEnd']:.0f} ({b['bootEnd'] - b['bootStart']:.0f} ms)")
    for name, at in sorted((b["steps"] or {}).items(), key=lambda kv: kv[1]):
        print(f"  {name:40s} {at:8.0f}")
    print("Fetches (start -> end, ms since navigation start):")
    for r in b["resources"]:
        print(f"  {r['name']:50s} {r['start']:7.0f} -> {r['end']:7.0f}  ({r['bytes']:,} bytes)")
    print("Inside Pyodide (ms):")
    for name, ms in b["python"]["phases"].items():
        print(f"  {name:40s} {ms:8.1f}")
    mods = b["python"]["nnwasm_modules"]
    print(f"nnwasm modules imported after boot + one WASM-only session + one run ({len(mods)}):")
    print("  " + " ".join(m.removeprefix("nnwasm.") for m in mods))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh browsers for page open -> first result")
    parser.add_argument("--url-suffix", default="", help="appended to the demo URL, e.g. ?noproxy")
    parser.add_argument("--no-breakdown", action="store_true")
    parser.add_argument("--compare", action="store_true",
                        help="alternate runs with and without the Pyodide memory snapshot")
    parser.add_argument("--before", metavar="DIR",
                        help="also time the demo of another checkout (its dist/web/ built), interleaved: "
                             "e.g. `git worktree add` or `git archive` of an older commit")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    servers = {"now": load_server()}
    if args.before:
        servers["before"] = load_server(args.before)
    for server in servers.values():
        threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{servers['now'].port}/"
    # (label, demo URL, snapshot allowed), one fresh browser each, interleaved.
    targets = [("now", servers["now"].url + args.url_suffix, True)]
    if args.compare:
        targets.append(("now, no snapshot", servers["now"].url + args.url_suffix, False))
    if args.before:
        targets.append(("before", servers["before"].url + args.url_suffix, True))
    results = {"runs": []}
    try:
        with sync_playwright() as pw:
            for i in range(args.runs):
                for label, url, snapshot in targets:
                    ms, cells, top1 = page_open_to_result(pw, url, snapshot)
                    results["runs"].append({"target": label, "first_result_ms": ms, **cells})
                    print(f"run {i + 1} ({label}): page open -> first result {ms:.0f} ms ({top1}); demo shows {cells}",
                          flush=True)
            for label, _, _ in targets:
                times = [r["first_result_ms"] for r in results["runs"] if r["target"] == label]
                if times:
                    print(f"page open -> first result ({label}): median {statistics.median(times):.0f} ms, "
                          f"min {min(times):.0f}, max {max(times):.0f} ({len(times)} fresh browsers)")
            if not args.no_breakdown:
                for snapshot in (True, False):
                    label = "from the snapshot" if snapshot else "from scratch (env.pyodideSnapshot = false)"
                    results["breakdown" if snapshot else "breakdown_no_snapshot"] = b = breakdown(pw, base, snapshot)
                    print_breakdown(b, label)
    finally:
        for server in servers.values():
            server.shutdown()
            server.server_close()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
