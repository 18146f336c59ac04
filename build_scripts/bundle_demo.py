"""Bundles the demo's modules into one: demo/app.bundle.mjs, the module demo/index.html loads.

    python build_scripts/bundle_demo.py [--check]

demo/app.mjs and the web/ modules it imports (17 files) become one file, made by esbuild
(a devDependency in package.json, `npm ci`): the page then makes one module request instead of 17
over HTTP/1.1's 6 connections, and its result shows ~20-60 ms sooner (bench/README.md, start-up).
The modules keep their `new URL(..., import.meta.url)` paths, which resolve alike from web/ and
from a bundle in demo/ (both one level under the root): `../dist/web/`, `../web/proxy-worker.mjs`,
the demo's `assets/`.

build_web.py writes it (git ignores it); demo/serve.py calls ensure_bundle() when it starts, so a
changed source is never served from a stale bundle. --check exits 1 if the bundle is stale.
"""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENTRY = ROOT / "demo" / "app.mjs"
BUNDLE = ROOT / "demo" / "app.bundle.mjs"
ESBUILD = ROOT / "node_modules" / ".bin" / "esbuild"
SOURCES = [*sorted((ROOT / "demo").glob("*.mjs")), *sorted((ROOT / "web").glob("*.mjs"))]


def stale():
    """True when the bundle is missing or older than one of its possible sources."""
    if not BUNDLE.exists():
        return True
    built = BUNDLE.stat().st_mtime
    return any(p.stat().st_mtime > built for p in SOURCES if p != BUNDLE)


def bundle():
    """Writes demo/app.bundle.mjs (esbuild takes ~10 ms); raises RuntimeError naming the cause."""
    if not ESBUILD.exists():
        raise RuntimeError(f"{ESBUILD.relative_to(ROOT)} is missing: run `npm ci` (or `make build`)")
    cmd = [str(ESBUILD), str(ENTRY), "--bundle", "--format=esm", "--platform=browser",
           "--external:node:*",  # Node-only branches import them dynamically
           "--charset=utf8", "--log-level=warning", f"--outfile={BUNDLE}"]
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"esbuild failed to bundle {ENTRY.relative_to(ROOT)}:\n{run.stderr}")


def ensure_bundle():
    """Rebuilds the bundle if it is stale; returns True if it did."""
    if stale():
        bundle()
        return True
    return False


if __name__ == "__main__":
    if "--check" in sys.argv[1:]:
        sys.exit(1 if stale() else 0)
    bundle()
