"""The npm package as a JS user gets it: `npm pack` in the checkout, the tarball installed offline
and with an empty npm cache (so it needs nothing else) into a scratch project in a temp folder, and
tests/node/package-consumer.mjs there importing { InferenceSession, Tensor } from "nnwasm".

Plan files run under Node's permission model, which refuses every read outside the scratch project
and the model's folder: kernels.wasm and the plan runner must come from node_modules/nnwasm/. The
.onnx path boots Pyodide, which Node's permission model stops (process.binding), so there the
files the process opens are traced with strace, where it is installed. Outputs must be
bit-identical to CPython's nnwasm on the same file."""
import base64
import json
import os
import shutil
import subprocess
import sys
import tarfile

import numpy as np
import pytest
from onnx import helper

from conftest import ROOT
from model_builders import graph_model, rand

pytestmark = pytest.mark.node

# Opened by Node itself wherever it runs (shared libraries, cgroup limits, ...): not the package's doing.
SYSTEM_DIRS = ("/dev/", "/etc/", "/lib", "/proc/", "/sys/", "/usr/")


def _run(cmd, cwd, timeout=300, **kw):
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, **kw)
    assert proc.returncode == 0, f"`{' '.join(map(str, cmd))}` failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc


@pytest.fixture(scope="module")
def tarball(tmp_path_factory):
    """`npm pack` of the checkout, after build_web.py (idempotent) so dist/web/ is current."""
    assert shutil.which("npm"), "npm is not installed"
    _run([sys.executable, str(ROOT / "build_scripts" / "build_web.py")], ROOT)
    out = tmp_path_factory.mktemp("pack")
    _run(["npm", "pack", "--pack-destination", str(out), "--no-audit", "--no-fund"], ROOT)
    (path,) = out.glob("nnwasm-*.tgz")
    return path


@pytest.fixture(scope="module")
def project(tarball, tmp_path_factory):
    """A scratch Node project with only the tarball installed, offline, from an empty npm cache."""
    d = tmp_path_factory.mktemp("project")
    (d / "package.json").write_text(json.dumps({"name": "scratch", "version": "1.0.0", "private": True, "type": "module"}))
    _run(["npm", "install", "--offline", "--no-audit", "--no-fund", "--cache", str(d.parent / (d.name + "-npm-cache")),
          str(tarball)], d)
    shutil.copy(ROOT / "tests" / "node" / "package-consumer.mjs", d / "consumer.mjs")
    return d


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A small model that runs entirely on WASM (an int64 and a float32 input), as .onnx and as a
    .nnwp plan (nnwasm.compile_plan), its inputs as raw files, and CPython's outputs for each."""
    import nnwasm
    d = tmp_path_factory.mktemp("models")
    ids, x = np.array([[3, 0, 7, 2]], np.int64), rand(1, 4, 8, seed=1)
    nodes = [helper.make_node("Gather", ["emb", "ids"], ["h"]),
             helper.make_node("Add", ["h", "x"], ["s"]),
             helper.make_node("MatMul", ["s", "w"], ["m"]),
             helper.make_node("Softmax", ["m"], ["probs"], axis=-1)]
    model = graph_model(nodes, {"ids": ids, "x": x}, ["probs"], {"emb": rand(9, 8, seed=2), "w": rand(8, 5, seed=3)})
    feeds = {"ids": ids, "x": x}
    (d / "m.onnx").write_bytes(model)
    (d / "m.nnwp").write_bytes(nnwasm.compile_plan(model, {k: v.shape for k, v in feeds.items()}))
    inputs = {}
    for k, v in feeds.items():
        v.tofile(d / f"{k}.bin")
        inputs[k] = {"path": str(d / f"{k}.bin"), "dtype": v.dtype.name, "dims": list(v.shape)}
    expected = {name: nnwasm.InferenceSession(str(d / name)).run(None, feeds)[0] for name in ("m.onnx", "m.nnwp")}
    return d, inputs, expected


def test_tarball_holds_the_module_and_dist_web(tarball):
    """Every web/*.mjs, dist/web/ exactly as build_web.py listed it, the licenses; nothing else."""
    manifest = json.loads((ROOT / "dist" / "web" / "nnwasm-web.json").read_text())
    expected = {"package.json", "README.md", "LICENSE", "web/README.md", "dist/web/nnwasm-web.json",
                *(f"web/{p.name}" for p in (ROOT / "web").glob("*.mjs")),
                *(f"dist/web/{f}" for f in manifest["files"])}
    with tarfile.open(tarball) as t:
        names = {m.name.removeprefix("package/") for m in t.getmembers() if m.isfile()}
        pkg = json.load(t.extractfile("package/package.json"))
    assert names == expected, f"unexpected: {sorted(names - expected)}, missing: {sorted(expected - names)}"
    assert "dist/web/pyodide/LICENSE" in names and "dist/web/kernels.wasm" in names
    assert pkg["name"] == "nnwasm" and "private" not in pkg
    assert not pkg.get("dependencies"), "the package must install offline with nothing else"


def _consume(project, models, model, *, proxy=False, sandbox=True, trace=None):
    d, inputs, expected = models
    spec = project / f"spec-{model}-{proxy}.json"
    spec.write_text(json.dumps({"model": str(d / model), "proxy": proxy, "inputs": inputs,
                                "probe": str(ROOT / "package.json")}))
    cmd = [shutil.which("node")]
    if sandbox:
        cmd += ["--experimental-permission", f"--allow-fs-read={project}/*", f"--allow-fs-read={d}/*", "--allow-worker"]
    cmd += ["consumer.mjs", str(spec)]
    if trace:
        cmd = ["strace", "-f", "-qq", "-e", "trace=open,openat", "-e", "status=successful", "-o", str(trace), *cmd]
    # The repository is neither the cwd nor on NODE_PATH: only node_modules/ resolves "nnwasm".
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NNWASM_", "NODE_"))}
    result = json.loads(_run(cmd, project, env=env).stdout.strip().splitlines()[-1])
    assert result["distURL"] == (project / "node_modules" / "nnwasm" / "dist" / "web").as_uri() + "/"
    assert result["inputNames"] == ["ids", "x"]
    out = result["outputs"]["probs"]
    want = expected[model]
    assert out["type"] == "float32" and out["dims"] == list(want.shape)
    assert base64.b64decode(out["base64"]) == want.astype("<f4").tobytes(), "outputs differ from CPython's"
    return result


@pytest.mark.parametrize("proxy", [False, True], ids=["main-thread", "proxy-worker"])
def test_plan_file_from_installed_package(project, models, proxy):
    result = _consume(project, models, "m.nnwp", proxy=proxy)
    assert result["probe"] == "ERR_ACCESS_DENIED", "Node's permission model was not in force"


def test_onnx_model_from_installed_package(project, models, tmp_path):
    """Pyodide, the wheel and the manifest from node_modules/nnwasm/dist/web/ (~3 s)."""
    trace = tmp_path / "opened.txt" if shutil.which("strace") else None
    result = _consume(project, models, "m.onnx", sandbox=False, trace=trace)
    assert result["probe"] == "read"
    if trace is None:
        return
    opened = {line.split('"')[1] for line in trace.read_text().splitlines() if '"' in line}
    package = project / "node_modules" / "nnwasm"
    assert str(package / "dist" / "web" / "pyodide" / "pyodide.asm.wasm") in opened, "strace saw no Pyodide"
    allowed = (str(project) + "/", str(models[0]) + "/", *SYSTEM_DIRS)
    outside = sorted(p for p in opened if not p.startswith(allowed) and p not in (str(ROOT / "package.json"), shutil.which("node")))
    assert not outside, f"read outside the scratch project: {outside}"
    mine = {p for p in opened if p.startswith(str(project) + "/")}
    assert all(p.startswith(str(package) + "/") for p in mine - {str(project / "package.json"), str(project / "consumer.mjs"),
                                                                  *(str(s) for s in project.glob("spec-*.json"))}), sorted(mine)
