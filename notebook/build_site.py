"""Builds the offline JupyterLite site of `make notebook` into build/notebook/site (docs/notebooks.md).

    python notebook/build_site.py --jupyter ~/.cache/nnwasm/jupyterlite-venv/bin/jupyter

Run by `make notebook` with the project's venv (.venv); `jupyter lite build` runs from the tools'
own venv (notebook/requirements.txt). Nothing is fetched at run time but PyPI wheels, once:
- Pyodide: the core files of the npm pin (package.json's `pyodide`, node_modules/pyodide) in the
  site's static/pyodide/, where jupyterlite-pyodide-kernel points the kernel (pyodideUrl).
- The kernel's start-up wheels: it loads micropip, then installs ipython and jedi (and their
  dependencies) through Pyodide's lock file, whose wheels are not in the npm core package. The
  closure of those names in the lock file, at the lock's versions, is downloaded from PyPI into
  ~/.cache/nnwasm/notebook-wheels, given Pyodide's bytecode (wheel_pyc.mjs, as Pyodide's own
  builds have it) and served beside static/pyodide/ with each entry's sha256
  rewritten in the site's copy of pyodide-lock.json (PyPI's wheels are not byte-identical to
  Pyodide's). `comm` (pyodide-kernel needs it; not in the lock file) goes into the site's index.
- nnwasm: dist/nnwasm-<version>-py3-none-any.whl (build_scripts/build_web.py), with Pyodide's
  bytecode added (notebook/wheel_pyc.mjs: `import nnwasm` compiles nothing), in the site's own
  package index (pypi/all.json), with the PyPI fallback off, so `%pip install nnwasm` resolves
  it by name offline.
- Files: notebook/nnwasm-demo.ipynb and the demo's model, plan file, photo and labels.
"""
import argparse
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebook"
OUT = ROOT / "build" / "notebook"
PYODIDE_SRC = ROOT / "node_modules" / "pyodide"
PYODIDE_FILES = ["pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip"]
WHEEL_CACHE = Path.home() / ".cache" / "nnwasm" / "notebook-wheels"
# What the kernel installs from Pyodide's lock file at start (jupyterlite-pyodide-kernel 0.8.6's
# worker: loadPackage(["micropip"]), then piplite.install of ipykernel, comm, pyodide-kernel, jedi,
# ipython; the first three and piplite ship in the kernel's own wheel index, `comm` is on PyPI only).
STARTUP = ["micropip", "ipython", "jedi"]
EXTRA_INDEX_WHEELS = ["comm==0.2.3"]
ASSETS = ["efficientnet-lite0.onnx", "efficientnet-lite0.nnwp", "efficientnet-lite0.json",
          "chelsea.png", "imagenet_labels.json"]
PLUGIN = "@jupyterlite/pyodide-kernel-extension:kernel"


def fail(msg):
    sys.exit(f"notebook/build_site.py: {msg}")


def norm(name):
    return name.lower().replace("_", "-").replace(".", "-")


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def lock_closure(lock, names):
    packages = lock["packages"]
    by_norm = {norm(k): k for k in packages}
    todo, seen = list(names), {}
    while todo:
        name = by_norm.get(norm(todo.pop()))
        if name is None or name in seen:
            continue
        seen[name] = packages[name]
        todo += packages[name]["depends"]
    return seen


def download(specs, dest):
    """Pure wheels for Pyodide's Python 3.14 from PyPI into dest (skipped when there already)."""
    missing = [s for s in specs if not list(dest.glob(s.split("==")[0].replace("-", "_") + "-" + s.split("==")[1] + "-*.whl"))
               and not list(dest.glob(s.split("==")[0] + "-" + s.split("==")[1] + "-*.whl"))]
    if not missing:
        return
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
           "--python-version", "3.14", "--implementation", "py", "--platform", "any", "-d", str(dest), *missing]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        fail(f"`{' '.join(cmd)}` failed:\n{proc.stderr}")


def find_wheel(dest, name, version):
    for stem in {name, name.replace("-", "_"), norm(name).replace("-", "_")}:
        hits = list(dest.glob(f"{stem}-{version}-*.whl"))
        if hits:
            return hits[0]
    fail(f"no wheel for {name}=={version} in {dest}")


def wheel_pyc(pairs):
    """notebook/wheel_pyc.mjs: [in, out, in, out, ...] wheels, each out = in + Pyodide's bytecode."""
    cmd = ["node", str(NOTEBOOK_DIR / "wheel_pyc.mjs"), *pairs]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        fail(f"`{' '.join(cmd[:4])} ...` failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")


def copy_if_changed(src, dest):
    if dest.exists() and dest.stat().st_size == src.stat().st_size and dest.read_bytes() == src.read_bytes():
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dest)


def stage(lite):
    """The lite dir jupyter lite build reads: jupyter-lite.json, static/pyodide/, pypi/, files/."""
    if not (PYODIDE_SRC / "package.json").exists():
        fail(f"{PYODIDE_SRC} is missing: run `npm ci`")
    pinned = json.loads((ROOT / "package.json").read_text())["devDependencies"]["pyodide"]
    installed = json.loads((PYODIDE_SRC / "package.json").read_text())["version"]
    if pinned != installed:
        fail(f"node_modules has pyodide {installed}, package.json pins {pinned}: run `npm ci`")
    wheels = sorted((ROOT / "dist").glob("nnwasm-*-py3-none-any.whl"))
    if len(wheels) != 1:
        fail(f"expected one dist/nnwasm-*.whl (build_scripts/build_web.py), found {[w.name for w in wheels]}")
    if lite.exists():
        shutil.rmtree(lite)
    static = lite / "static" / "pyodide"
    for name in PYODIDE_FILES:
        copy_if_changed(PYODIDE_SRC / name, static / name)
    lock = json.loads((PYODIDE_SRC / "pyodide-lock.json").read_text())
    startup = lock_closure(lock, STARTUP)
    download([f"{e['name']}=={e['version']}" for e in startup.values()] + EXTRA_INDEX_WHEELS, WHEEL_CACHE)
    # with Pyodide's bytecode added (wheel_pyc.mjs), as Pyodide's own builds of them ship: the
    # kernel's start then compiles no IPython module (made once, cached beside the PyPI wheels)
    compiled = WHEEL_CACHE / "pyc"
    compiled.mkdir(parents=True, exist_ok=True)
    sources = {key: find_wheel(WHEEL_CACHE, e["name"], e["version"]) for key, e in startup.items()}
    todo = [str(p) for w in sources.values() if not (compiled / w.name).exists() for p in (w, compiled / w.name)]
    if todo:
        wheel_pyc(todo)
    for key, entry in startup.items():
        wheel = compiled / sources[key].name
        copy_if_changed(wheel, static / wheel.name)
        lock["packages"][key] = {**entry, "file_name": wheel.name, "sha256": sha256(wheel)}
    (static / "pyodide-lock.json").write_text(json.dumps(lock, separators=(",", ":")))
    pypi = lite / "pypi"
    pypi.mkdir(parents=True)
    # the same wheel with Pyodide's bytecode added (wheel_pyc.mjs): import nnwasm compiles nothing
    wheel_pyc([str(wheels[0]), str(pypi / wheels[0].name)])
    for spec in EXTRA_INDEX_WHEELS:
        wheel = find_wheel(WHEEL_CACHE, *spec.split("=="))
        copy_if_changed(wheel, pypi / wheel.name)
    files = lite / "files"
    copy_if_changed(NOTEBOOK_DIR / "nnwasm-demo.ipynb", files / "nnwasm-demo.ipynb")
    for name in ASSETS:
        copy_if_changed(ROOT / "demo" / "assets" / name, files / name)
    config = {"jupyter-lite-schema-version": 0, "jupyter-config-data": {
        "appName": "nnwasm notebooks",
        "exposeAppInBrowser": True,   # window.jupyterapp, which tests/test_notebook.py drives
        "litePluginSettings": {PLUGIN: {"disablePyPIFallback": True}},
    }}
    (lite / "jupyter-lite.json").write_text(json.dumps(config, indent=2) + "\n")
    return sorted(startup), wheels[0].name


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jupyter", required=True, help="the tools venv's `jupyter`")
    parser.add_argument("--out", type=Path, default=OUT)
    opts = parser.parse_args(argv)
    lite, site = opts.out / "lite", opts.out / "site"
    startup, wheel = stage(lite)
    cmd = [opts.jupyter, "lite", "build", "--lite-dir", str(lite), "--output-dir", str(site),
           "--no-sourcemaps", "--no-unused-shared-packages"]
    proc = subprocess.run(cmd, cwd=lite, capture_output=True, text=True)
    if proc.returncode != 0:
        fail(f"`{' '.join(cmd)}` failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    settings = json.loads((site / "jupyter-lite.json").read_text())["jupyter-config-data"]["litePluginSettings"][PLUGIN]
    if not settings.get("disablePyPIFallback") or "pyodide.mjs" not in settings.get("pyodideUrl", ""):
        fail(f"the site's kernel settings are not what the build asked for: {settings}")
    index = json.loads((site / "pypi" / "all.json").read_text())
    if "nnwasm" not in index:
        fail(f"nnwasm is not in the site's package index: {sorted(index)}")
    size = sum(p.stat().st_size for p in site.rglob("*") if p.is_file())
    print(f"notebook site: {site.relative_to(ROOT)} ({size / 1e6:.1f} MB; Pyodide {len(startup)} start-up wheels; {wheel})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
