"""Page open -> first result, in headless Chromium: the nnwasm demo on its plan file (/demo/; and
with --pages plan-nowarmup, /demo/?nowarmup: without the kernel warm-up), the same demo through
Pyodide (/demo/?onnx), with --pages plan-2t the demo on 2 threads, and onnxruntime-web 1.30 (wasm backend, one thread, no proxy;
bench/startup/ort-web.html, with the demo's preloads; ort-web-plain.html, without them, as
onnxruntime-web's docs write a page) on the same model, photo and preprocessing; and a floor
(--pages download download-busy download-photo): a page that only downloads the plan file and reads
its body (bench/startup/plan-download.html; with a worker keeping one core busy meanwhile; and
preparing the photo meanwhile: the plan page without kernels.wasm and the run). Each page load is
a new browser process with an empty cache; the pages take turns, round after round, and the table
gives medians, each page's bytes and requests (counted by the server: the workers' too), and
where the plan page's time goes (its marks and its downloads' ends on the page's timeline).

    .venv/bin/python bench/startup/bench_startup.py [--rounds 5] [--pages plan plan-nowarmup onnx ort-web ort-web-plain] [--json out.json]
    (or: make bench-startup)

Needs dist/web/ (`python build_scripts/build_web.py`) and node_modules/onnxruntime-web (`npm ci`).
"""
import argparse
import importlib.util
import json
import os
import shutil
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from conftest import CHROMIUM_FLAGS  # noqa: E402  (the browser tests' flags: same browser setup)

# name -> (path, what it is)
PAGES = {
    "plan": ("/demo/", "nnwasm, plan file (kernels.wasm, no Python)"),
    "plan-nowarmup": ("/demo/?nowarmup", "nnwasm, plan file, no kernel warm-up"),
    "plan-2t": ("/demo/?threads=2", "nnwasm, plan file, 2 threads (kernels-threads.wasm)"),
    "onnx": ("/demo/?onnx", "nnwasm, .onnx through Pyodide"),
    "ort-web": ("/bench/startup/ort-web.html", "onnxruntime-web 1.30, wasm, 1 thread"),
    "ort-web-plain": ("/bench/startup/ort-web-plain.html", "the same, without preloads"),
    "download": ("/bench/startup/plan-download.html", "floor: the plan file's download alone"),
    "download-busy": ("/bench/startup/plan-download.html?busy", "the same, one core kept busy"),
    "download-photo": ("/bench/startup/plan-download.html?photo", "the same, and the photo prepared"),
}
EXTRA_PREFIXES = ("/bench/startup/", "/node_modules/onnxruntime-web/dist/")
# Set by demo/app.mjs and bench/startup/ort-web.mjs when the top-1 is on screen.
DONE = "window.nnwasmDemo && (window.nnwasmDemo.firstResultMs !== null || !document.getElementById('error').hidden)"
REPORT = """() => ({
  firstMs: window.nnwasmDemo.firstResultMs, timings: window.nnwasmDemo.timings,
  top1: document.getElementById("top1").textContent,
  marks: Object.fromEntries(performance.getEntriesByType("mark").map((m) => [m.name, m.startTime])),
  downloads: Object.fromEntries(performance.getEntriesByType("resource").map((r) => [new URL(r.name).pathname, [r.startTime, r.responseEnd]])),
})"""


def _load_serve():
    spec = importlib.util.spec_from_file_location("demo_serve", ROOT / "demo" / "serve.py")
    serve = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(serve)
    return serve


serve = _load_serve()


class CountingHandler(serve.DemoRequestHandler):
    """The demo server's handler, counting the response bodies it sends."""

    def copyfile(self, source, outputfile):
        size = os.fstat(source.fileno()).st_size
        super().copyfile(source, outputfile)
        with self.server.lock:
            self.server.sent += size
            self.server.requests += 1


def start_server():
    server = serve.DemoServer(port=0, extra_prefixes=EXTRA_PREFIXES, handler=CountingHandler)
    server.lock, server.sent, server.requests = threading.Lock(), 0, 0
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def wait_done(page, timeout_ms):
    """Waits until the page has shown its first result (or an error), asking every 100 ms with the
    DevTools protocol's Runtime.evaluate. Not playwright's wait_for_function: it first injects
    playwright's script into the page, which took ~27 ms of the page's thread at ~130 ms in a CPU
    profile, and by default polls on every animation frame (~40 ms more). The page times itself, so
    a late poll changes no figure."""
    cdp = page.context.new_cdp_session(page)
    end = time.monotonic() + timeout_ms / 1000
    while True:
        got = cdp.send("Runtime.evaluate", {"expression": f"Boolean({DONE})", "returnByValue": True})
        if got.get("result", {}).get("value") is True:
            return
        if time.monotonic() > end:
            raise TimeoutError(f"no result after {timeout_ms / 1000:.0f} s")
        time.sleep(0.1)


def open_once(playwright, server, path, timeout_ms):
    """One page load in a new browser: its report, plus the bytes and requests the server sent."""
    browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_FLAGS)
    try:
        page = browser.new_context().new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        with server.lock:
            server.sent = server.requests = 0
        page.goto(f"http://127.0.0.1:{server.port}{path}", wait_until="commit")
        wait_done(page, timeout_ms)
        report = page.evaluate(REPORT)
        if report["firstMs"] is None or errors:
            raise RuntimeError(f"{path} failed: {page.inner_text('#error')} {errors}")
        with server.lock:
            report["bytes"], report["requests"] = server.sent, server.requests
        return report
    finally:
        browser.close()


def median(values):
    return statistics.median(values) if values else float("nan")


def print_table(results):
    ort = median([r["firstMs"] for r in results.get("ort-web", [])])
    plain = median([r["firstMs"] for r in results.get("ort-web-plain", [])])
    print(f"\n{'page':<46} {'first result':>13} {'range':>13} {'create':>8} {'1st run':>8} {'/ ort-web':>9} "
          f"{'/ plain':>8} {'MB':>7} {'requests':>8}")
    for name, runs in results.items():
        first = [r["firstMs"] for r in runs]
        col = lambda key: median([r["timings"].get(key, float("nan")) for r in runs])  # noqa: E731
        print(f"{PAGES[name][1]:<46} {median(first):>10.0f} ms {min(first):>5.0f}-{max(first):<5.0f}ms "
              f"{col('createMs'):>5.0f} ms {col('firstRunMs'):>5.0f} ms {median(first) / ort:>9.2f} {median(first) / plain:>8.2f} "
              f"{median([r['bytes'] for r in runs]) / 1e6:>7.2f} {median([r['requests'] for r in runs]):>8.0f}")


def print_profile(page, runs):
    """A plan page's timeline, medians over the rounds, in ms since the navigation started."""
    events = {}
    for r in runs:
        for name, t in r["marks"].items():
            events.setdefault(f"mark {name.removeprefix('demo-')}", []).append(t)
        for path, (start, end) in r["downloads"].items():
            if path.endswith((".nnwp", ".wasm", ".png", ".mjs", ".css")):
                events.setdefault(f"requested {path.rsplit('/', 1)[1]}", []).append(start)
                events.setdefault(f"downloaded {path.rsplit('/', 1)[1]}", []).append(end)
        for key in ("bootMs", "createMs", "preMs", "firstRunMs"):
            if key in r["timings"]:
                events.setdefault(f"({key} as the page shows it)", []).append(r["timings"][key])
    print(f"\n{page} page timeline (median ms since navigation start):")
    timeline = sorted((median(v), k) for k, v in events.items() if not k.startswith("("))
    for t, k in timeline:
        print(f"  {t:7.0f}  {k}")
    for k, v in sorted(events.items()):
        if k.startswith("("):
            print(f"  {median(v):7.0f}  {k}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="page loads of each page (default 5)")
    ap.add_argument("--pages", nargs="+", choices=list(PAGES), default=["plan", "onnx", "ort-web", "ort-web-plain"])
    ap.add_argument("--timeout", type=float, default=120, help="seconds a page may take (default 120)")
    ap.add_argument("--json", type=Path, help="also write every measurement here")
    args = ap.parse_args(argv)
    for need in (ROOT / "dist" / "web" / "kernels.wasm", ROOT / "node_modules" / "onnxruntime-web" / "dist"):
        if not need.exists():
            sys.exit(f"bench_startup: {need} is missing: run `make build` (and `npm ci`)")
    from playwright.sync_api import sync_playwright

    server = start_server()
    results = {name: [] for name in args.pages}
    try:
        with sync_playwright() as pw:
            for round_ in range(args.rounds):
                for name in args.pages:
                    for attempt in range(3):  # a load now and then fails on a busy machine ("Failed to fetch")
                        try:
                            r = open_once(pw, server, PAGES[name][0], args.timeout * 1000)
                            break
                        except Exception as e:  # noqa: BLE001  (reported, retried, then raised)
                            print(f"round {round_ + 1} {name}: load failed, retrying: {str(e)[:200]}", flush=True)
                            if attempt == 2:
                                raise
                    results[name].append(r)
                    run = r["timings"].get("firstRunMs", float("nan"))
                    print(f"round {round_ + 1} {name:<13} {r['firstMs']:7.0f} ms (1st run {run:4.0f} ms)  "
                          f"top-1 {r['top1']!r}  {r['bytes'] / 1e6:.2f} MB in {r['requests']} requests", flush=True)
    finally:
        server.shutdown()
        server.server_close()
    print_table(results)
    for name, runs in results.items():
        if name.startswith("plan"):
            print_profile(name, runs)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
