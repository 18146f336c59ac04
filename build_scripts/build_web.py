"""Builds what web/nnwasm.mjs loads: the nnwasm wheel (kernels.wasm inside) and dist/web/.

    dist/nnwasm-<version>-py3-none-any.whl
    dist/web/pyodide/         Pyodide's core files, copied from node_modules/pyodide (`npm ci`),
                              and LICENSE (theirs: build_scripts/pyodide-LICENSE.txt)
    dist/web/nnwasm-<version>-py3-none-any.whl
    dist/web/nnwasm-web.json  names the wheel; web/env.mjs finds everything through it. Also
                              lists every file above with its SHA-256, and a digest of the .py
                              sources, for `npm pack`'s check (build_scripts/check_dist.mjs)
    dist/web/kernels.wasm     the same kernels.wasm as in the wheel, for .nnwp plan files (no Pyodide)
    dist/web/kernels-relaxed.wasm   its `relaxed` flavour (web/flavours.mjs), picked where the engine has relaxed SIMD
    dist/web/kernels-threads.wasm   the `simd+threads` build (web/threads.mjs), for env.wasm.numThreads > 1
    dist/web/kernels-relaxed-threads.wasm   `relaxed+threads`, the same where relaxed SIMD validates
    dist/web/kernels-warmup.nnwp  a tiny plan that plan sessions run while a real plan downloads, so
                              V8 has optimized the kernels by its first run (warmup_plan.py)
    dist/web/pyodide-snapshot.bin.gz  Pyodide's memory with this wheel's nnwasm imported (made in
                              Node by pyodide_snapshot.mjs, gzipped); boot() starts from it
    demo/app.bundle.mjs       the demo's modules in one (bundle_demo.py; not shipped)

dist/web/ is what the npm package ships (package.json "files"); every file written there goes
through ship() so that nnwasm-web.json lists it. Serve the repository root (demo/serve.py) and
/web/ finds /dist/web/ next to it.
Idempotent: a file is rewritten only when its content changed, and older wheels are removed.
Needs py_runtime/nnwasm/kernels.wasm (build_scripts/build_kernels.py) and node_modules/.
"""
import hashlib
import io
import json
import os
import shutil
import gzip
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from bundle_demo import BUNDLE, ensure_bundle
from warmup_plan import warmup_plan_bytes

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "py_runtime" / "nnwasm"
DIST = ROOT / "dist"
WEB = DIST / "web"
PYODIDE_SRC = ROOT / "node_modules" / "pyodide"
PYODIDE_LICENSE = ROOT / "build_scripts" / "pyodide-LICENSE.txt"
# What loadPyodide fetches from its indexURL at start-up; nothing else is needed offline.
PYODIDE_FILES = ["pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json"]
SNAPSHOT = "pyodide-snapshot.bin.gz"
WARMUP = "kernels-warmup.nnwp"  # web/plan-session.mjs's WARMUP_FILE
# The source tree a wheel is built from, copied apart so stale build/ output never leaks in.
WHEEL_SOURCES = ["pyproject.toml", "README.md", "LICENSE", "py_runtime"]


def fail(msg):
    sys.exit(f"build_web.py: {msg}")


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def write_if_changed(path, data, written):
    if path.exists() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    written.append(path)


def build_wheel():
    """Builds the wheel from a clean copy of the sources; returns (file name, bytes)."""
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "src", Path(tmp) / "out"
        src.mkdir()
        for name in WHEEL_SOURCES:
            p = ROOT / name
            if p.is_dir():
                shutil.copytree(p, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))
            elif p.exists():
                shutil.copy2(p, src / name)
        if not (src / "README.md").exists():  # pyproject.toml names it as the long description
            (src / "README.md").write_text("nnwasm\n")
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(src)]
        # A fixed timestamp makes the wheel's bytes depend on its content only (idempotent builds).
        proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "SOURCE_DATE_EPOCH": "315532800"})
        if proc.returncode != 0:
            fail(f"`{' '.join(cmd)}` failed:\n{proc.stdout}\n{proc.stderr}")
        wheels = list(out.glob("nnwasm-*.whl"))
        if len(wheels) != 1:
            fail(f"expected one nnwasm wheel, pip wrote {[w.name for w in wheels]}")
        return wheels[0].name, wheels[0].read_bytes()


def sources_sha256():
    """Digest of the wheel's Python sources: SHA-256 of `<sha256>  <path under py_runtime/>` lines,
    sorted by path (build_scripts/check_dist.mjs computes the same to find a stale wheel)."""
    files = sorted(p.relative_to(PACKAGE.parent).as_posix() for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)
    lines = "".join(f"{sha256((PACKAGE.parent / f).read_bytes())}  {f}\n" for f in files)
    return sha256(lines.encode())


def check_wheel(name, data, flavours):
    """The wheel must hold these kernels*.wasm ({file name: bytes}, one per flavour) and every
    module of the source tree."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        names = set(z.namelist())
        for file, kernels in flavours.items():
            if f"nnwasm/{file}" not in names:
                fail(f"{name} has no nnwasm/{file}: check [tool.setuptools.package-data] in pyproject.toml")
            if z.read(f"nnwasm/{file}") != kernels:
                fail(f"{name} holds a {file} that differs from {PACKAGE / file}")
    modules = {p.relative_to(PACKAGE.parent).as_posix() for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    missing = sorted(modules - names)
    if missing:
        fail(f"{name} lacks {missing} (a subpackage without __init__.py?)")


SNAPSHOT_KEY = DIST / "pyodide-snapshot.key"   # not shipped: what the shipped snapshot was made from


def snapshot_key(node, wheel):
    """What a snapshot's bytes depend on (making one is deterministic): the wheel, Pyodide, the
    script that makes it, and Node."""
    proc = subprocess.run([node, "--version"], capture_output=True, text=True)
    script = (ROOT / "build_scripts" / "pyodide_snapshot.mjs").read_bytes()
    return json.dumps({"wheel": sha256(wheel), "pyodide": pyodide_version(), "script": sha256(script),
                       "node": proc.stdout.strip()})


def make_snapshot(wheel):
    """Gzipped memory snapshot of Pyodide with nnwasm imported (pyodide_snapshot.mjs), or None
    with a warning when Node is missing (boot() then starts Python from scratch). The shipped
    one is reused when made from the same inputs (snapshot_key): making it takes ~12 s, and the
    tests run this script once per module that needs dist/web/."""
    node = shutil.which("node")
    if node is None:
        print("warning: no `node` on PATH: dist/web/ gets no Pyodide snapshot (boot is ~1.5 s slower)")
        return None
    key = snapshot_key(node, wheel)
    try:
        made_from, digest = json.loads(SNAPSHOT_KEY.read_text())
        old = (WEB / SNAPSHOT).read_bytes()
        if made_from == key and sha256(old) == digest:
            return old
    except (OSError, ValueError):
        pass
    SNAPSHOT_KEY.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        whl, out = Path(tmp) / "nnwasm.whl", Path(tmp) / "snapshot.bin"
        whl.write_bytes(wheel)
        cmd = [node, str(ROOT / "build_scripts" / "pyodide_snapshot.mjs"), str(PYODIDE_SRC), str(whl), str(out)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            fail(f"`{' '.join(cmd)}` failed:\n{proc.stdout}\n{proc.stderr}")
        snapshot = gzip.compress(out.read_bytes(), compresslevel=6, mtime=0)
    SNAPSHOT_KEY.parent.mkdir(parents=True, exist_ok=True)
    SNAPSHOT_KEY.write_text(json.dumps([key, sha256(snapshot)]))
    return snapshot


def pyodide_version():
    pinned = json.loads((ROOT / "package.json").read_text())["devDependencies"]["pyodide"]
    pkg = PYODIDE_SRC / "package.json"
    if not pkg.exists():
        fail(f"{PYODIDE_SRC} is missing: run `npm ci`")
    installed = json.loads(pkg.read_text())["version"]
    if installed != pinned:
        fail(f"node_modules has pyodide {installed} but package.json pins {pinned}: run `npm ci`")
    return installed


def main():
    kernels_path = PACKAGE / "kernels.wasm"
    if not kernels_path.exists():
        fail(f"{kernels_path} is missing: run `python build_scripts/build_kernels.py` first")
    kernels = kernels_path.read_bytes()
    relaxed_path = PACKAGE / "kernels-relaxed.wasm"   # the `relaxed` flavour (web/flavours.mjs)
    if not relaxed_path.exists():
        fail(f"{relaxed_path} is missing: run `python build_scripts/build_kernels.py` first")
    relaxed = relaxed_path.read_bytes()
    version = pyodide_version()
    wheel_name, wheel = build_wheel()
    check_wheel(wheel_name, wheel, {"kernels.wasm": kernels, relaxed_path.name: relaxed})

    written, removed, shipped = [], [], {}

    def ship(name, data):
        write_if_changed(WEB / name, data, written)
        shipped[name] = sha256(data)

    for folder in (DIST, WEB):
        for old in folder.glob("nnwasm-*.whl"):
            if old.name != wheel_name:
                old.unlink()
                removed.append(old)
    write_if_changed(DIST / wheel_name, wheel, written)
    ship(wheel_name, wheel)
    # Plan files (.nnwp) run on kernels.wasm alone, without Pyodide or the wheel.
    ship("kernels.wasm", kernels)
    ship(relaxed_path.name, relaxed)
    # `simd+threads` and `relaxed+threads` (web/threads.mjs): env.wasm.numThreads > 1
    for threads_path in (PACKAGE / "kernels-threads.wasm", PACKAGE / "kernels-relaxed-threads.wasm"):
        if threads_path.exists():
            ship(threads_path.name, threads_path.read_bytes())
    ship(WARMUP, warmup_plan_bytes())
    for name in PYODIDE_FILES:
        ship(f"pyodide/{name}", (PYODIDE_SRC / name).read_bytes())
    ship("pyodide/LICENSE", PYODIDE_LICENSE.read_bytes())
    # The Pyodide snapshot, named in the manifest next to the wheel it was made from: boot() uses
    # it only with that wheel.
    snapshot = make_snapshot(wheel)
    if snapshot is not None:
        ship(SNAPSHOT, snapshot)
    elif (WEB / SNAPSHOT).exists():
        (WEB / SNAPSHOT).unlink()
        removed.append(WEB / SNAPSHOT)
    manifest = {"wheel": wheel_name, "pyodide": "pyodide/", "pyodideVersion": version,
                "kernelsSha256": sha256(kernels), "sourcesSha256": sources_sha256(), "files": shipped}
    if snapshot is not None:
        manifest["pyodideSnapshot"] = SNAPSHOT
        manifest["pyodideSnapshotWheelSha256"] = sha256(wheel)
    write_if_changed(WEB / "nnwasm-web.json", (json.dumps(manifest, indent=2) + "\n").encode(), written)
    try:
        if ensure_bundle():
            written.append(BUNDLE)
    except RuntimeError as e:
        fail(str(e))

    for p in removed:
        print(f"removed {p.relative_to(ROOT)}")
    for p in sorted(set(written)):
        print(f"wrote   {p.relative_to(ROOT)} ({p.stat().st_size:,} bytes)")
    if not written and not removed:
        print(f"{WEB.relative_to(ROOT)}/ is up to date ({wheel_name}, pyodide {version})")


if __name__ == "__main__":
    main()
