"""The npm package as a JS user gets it: `npm pack` in the checkout, the tarball installed offline
and with an empty npm cache (so it needs nothing else) into a scratch project in a temp folder, and
tests/node/package-consumer.mjs there importing { InferenceSession, Tensor } from "nnwasm".

Plan files run under Node's permission model, which refuses every read outside the scratch project
and the model's folder: kernels.wasm and the plan runner must come from node_modules/nnwasm/. The
.onnx path boots Pyodide, which Node's permission model stops (process.binding), so there the
files the process opens are traced with strace, where it is installed and allowed to trace. Outputs must be
bit-identical to CPython's nnwasm on the same file. Then a page served from a folder holding
node_modules/nnwasm/ and nothing else of nnwasm runs them in Chromium, as web/README.md says to."""
import base64
import functools
import http.server
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
from page_server import running

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


@pytest.fixture
def checkout_copy(tarball, tmp_path):
    """What build_scripts/check_dist.mjs reads, copied from the checkout (dist/web/ as built above)."""
    for name in ["build_scripts/check_dist.mjs", "web/env.mjs", "package.json"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "py_runtime" / "nnwasm", tmp_path / "py_runtime" / "nnwasm",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "dist" / "web", tmp_path / "dist" / "web")
    return tmp_path


def _append(path, data):
    path.write_bytes(path.read_bytes() + data)


def _bump_version(path):
    pkg = json.loads(path.read_text())
    path.write_text(json.dumps({**pkg, "version": "9.9.9"}))


STALE = {  # how dist/web/ goes wrong -> what `npm pack` must say
    "never built": (lambda d: shutil.rmtree(d / "dist"), "dist/web/ was never built"),
    "source edited": (lambda d: _append(d / "py_runtime/nnwasm/__init__.py", b"# edited\n"),
                      "py_runtime/nnwasm/*.py changed since the wheel in dist/web/ was built"),
    "kernels rebuilt": (lambda d: _append(d / "py_runtime/nnwasm/kernels.wasm", b"\0"),
                        "py_runtime/nnwasm/kernels.wasm changed since dist/web/ was built"),
    "file missing": (lambda d: (d / "dist/web/pyodide/python_stdlib.zip").unlink(),
                     "dist/web/pyodide/python_stdlib.zip is missing"),
    "stray file": (lambda d: (d / "dist/web/pyodide/extra.whl").write_bytes(b"x"),
                   "dist/web/pyodide/extra.whl was not written by build_web.py"),
    "version bumped": (lambda d: _bump_version(d / "package.json"), "versions differ: package.json 9.9.9"),
}


@pytest.mark.parametrize("case", STALE)
def test_prepack_refuses_a_stale_dist(checkout_copy, case):
    script = ["node", str(checkout_copy / "build_scripts" / "check_dist.mjs")]
    _run(script, checkout_copy)   # the copy as built passes
    spoil, message = STALE[case]
    spoil(checkout_copy)
    proc = subprocess.run(script, cwd=checkout_copy, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and message in proc.stderr, proc.stderr


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


def _can_strace():
    return shutil.which("strace") is not None and subprocess.run(
        ["strace", "-qq", "-o", os.devnull, "true"], capture_output=True, timeout=60).returncode == 0


def test_onnx_model_from_installed_package(project, models, tmp_path):
    """Pyodide, the wheel and the manifest from node_modules/nnwasm/dist/web/ (~3 s)."""
    trace = tmp_path / "opened.txt" if _can_strace() else None
    result = _consume(project, models, "m.onnx", sandbox=False, trace=trace)
    assert result["probe"] == "read"
    if trace is None:
        return
    opened = {line.split('"')[1] for line in trace.read_text().splitlines() if '"' in line}
    package = project / "node_modules" / "nnwasm"
    assert str(package / "dist" / "web" / "pyodide" / "pyodide.asm.wasm") in opened, "strace saw no Pyodide"
    # The script's own files, the model's folder, what Node opens anyway, and the probe.
    allowed = (str(package) + "/", str(models[0]) + "/", *SYSTEM_DIRS)
    expected = {str(project / "package.json"), str(project / "consumer.mjs"), str(ROOT / "package.json"),
                shutil.which("node"), *(str(p) for p in project.glob("spec-*.json"))}
    outside = sorted(p for p in opened - expected if not p.startswith(allowed))
    assert not outside, f"read outside node_modules/nnwasm/: {outside}"


# A page as web/README.md's "Serving it in a page" has it: an import map names the installed package.
PAGE = """<!doctype html><meta charset="utf-8"><title>nnwasm from npm</title>
<script type="importmap">{"imports": {"nnwasm": "/node_modules/nnwasm/web/nnwasm.mjs"}}</script>
<script type="module">
import { env, InferenceSession, Tensor } from "nnwasm";
const params = new URLSearchParams(location.search);
env.wasm.proxy = params.has("proxy");
env.wasm.relaxedSimd = false;   // the reference flavour (bit-identical to CPython's)
const ARRAYS = { float32: Float32Array, int32: Int32Array, int64: BigInt64Array };
window.__result = (async () => {
  const feeds = {};
  for (const [name, { file, dtype, dims }] of Object.entries(INPUTS)) {
    feeds[name] = new Tensor(dtype, new ARRAYS[dtype](await (await fetch(file)).arrayBuffer()), dims);
  }
  const session = await InferenceSession.create(params.get("model"));
  const { probs } = await session.run(feeds);
  await session.release();
  const bytes = new Uint8Array(probs.data.buffer, probs.data.byteOffset, probs.data.byteLength);
  return { distURL: env.distURL, dims: [...probs.dims], bytes: Array.from(bytes) };
})();
</script>"""


class StaticHandler(http.server.SimpleHTTPRequestHandler):
    """A plain static server; only the types web/README.md asks for are set."""
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".mjs": "text/javascript", ".wasm": "application/wasm", ".json": "application/json"}

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def site(project, models, tmp_path_factory):
    """A served folder: the page, the models, and the scratch project's node_modules/ (nnwasm alone)."""
    root = tmp_path_factory.mktemp("site")
    (root / "node_modules").symlink_to(project / "node_modules")
    d, inputs, _ = models
    (root / "models").symlink_to(d)
    page_inputs = {k: {**v, "file": "models/" + os.path.basename(v["path"])} for k, v in inputs.items()}
    (root / "index.html").write_text(PAGE.replace("INPUTS", json.dumps(page_inputs)))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(StaticHandler, directory=str(root)))
    with running(server):
        yield f"http://127.0.0.1:{server.server_address[1]}/"


@pytest.mark.browser
@pytest.mark.parametrize("query", ["model=models/m.nnwp", "model=models/m.nnwp&proxy", "model=models/m.onnx"],
                         ids=["plan-page", "plan-proxy-worker", "onnx-pyodide"])
def test_page_serving_installed_package(site, models, page, query):
    _, _, expected = models
    model = query.split("&")[0].removeprefix("model=models/")
    requests, errors = [], []
    page.context.on("request", lambda r: requests.append(r.url))
    page.on("response", lambda r: errors.append(f"HTTP {r.status} {r.url}")
            if r.status >= 400 and not r.url.endswith("/favicon.ico") else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(site + "index.html?" + query)
    result = page.evaluate("window.__result")
    assert not errors, errors
    assert result["distURL"] == site + "node_modules/nnwasm/dist/web/"
    assert result["dims"] == list(expected[model].shape)
    assert bytes(result["bytes"]) == expected[model].astype("<f4").tobytes(), "outputs differ from CPython's"
    paths = {u.removeprefix(site).split("?")[0] for u in requests}
    ours = {p for p in paths if not p.startswith("node_modules/nnwasm/")}
    assert ours <= {"index.html", "favicon.ico", "models/ids.bin", "models/x.bin", f"models/{model}"}, sorted(ours)
    assert "node_modules/nnwasm/dist/web/kernels.wasm" in paths or model == "m.onnx", sorted(paths)
    assert any(p.endswith("pyodide.asm.wasm") for p in paths) == (model == "m.onnx"), sorted(paths)
