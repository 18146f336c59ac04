"""transformers.js (@huggingface/transformers 4.3.1 from npm) running unchanged on nnwasm in Node:
its onnxruntime-node replaced by this checkout's npm package through an npm override (web/README.md,
"transformers.js"), local random-weight models (build_scripts/build_tfjs_models.py) with
env.allowRemoteModels = false, each pipeline's output compared with the same pipeline on
onnxruntime-node, and no request leaving the machine (tests/node/tfjs-pipelines.mjs refuses and
counts every fetch).

Skipped, saying why, without the models (build them with the export venv:
`python build_scripts/build_tfjs_models.py`, into $NNWASM_TFJS_DIR or ~/.cache/nnwasm/tfjs-models)
or when the two npm projects can't be installed (build_scripts/setup_tfjs_app.py: npm, and the
registry the first time; npm's cache is ~/.cache/nnwasm/npm)."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT
from page_server import run_page, serve

pytestmark = pytest.mark.node

MODELS = Path(os.environ.get("NNWASM_TFJS_DIR") or Path.home() / ".cache" / "nnwasm" / "tfjs-models")
# case -> (tolerance on floats, expected-failure reason or None); every pipeline agrees since the
# decoders (KV cache on WASM alone) and float16 compute landed
CASES = {
    "feature-extraction/fp32": (1e-5, None),
    "feature-extraction/q8": (1e-4, None),
    "feature-extraction/fp16": (2e-3, None),
    "image-classification/fp32": (1e-5, None),
    "image-classification/q8": (1e-4, None),
    "text-generation/fp32": (0, None),
    "text-generation/q8": (0, None),
    "automatic-speech-recognition/fp32": (0, None),
    "text-generation/fp16": (0, None),
    "automatic-speech-recognition/q8": (0, None),
}


def _pipelines(project):
    proc = subprocess.run(["node", "tfjs-pipelines.mjs", str(MODELS), *CASES], cwd=project, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, f"tfjs-pipelines.mjs in {project} failed:\n{proc.stderr[-4000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def apps():
    """The folder holding the two npm projects (build_scripts/setup_tfjs_app.py)."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    if not all((MODELS / m / "DONE").is_file() for m in ("bert", "vit", "gpt2", "whisper")):
        pytest.skip(f"no transformers.js models in {MODELS}: build them with the export venv, "
                    "`python build_scripts/build_tfjs_models.py` (or set NNWASM_TFJS_DIR)")
    setup = subprocess.run([sys.executable, str(ROOT / "build_scripts" / "setup_tfjs_app.py")], capture_output=True,
                           text=True, timeout=1800)
    if setup.returncode != 0:
        pytest.skip(f"the transformers.js projects could not be installed: {setup.stderr.strip()[-1500:]}")
    return Path(setup.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def results(apps):
    return _pipelines(apps / "nnwasm"), _pipelines(apps / "onnxruntime")


def _half(bits):
    return np.asarray(bits, np.uint16).view(np.float16).astype(np.float32)


def _compare(got, want, tol, where="output"):
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), f"{where}: keys {list(got)} != {list(want)}"
        if want.get("type") == "float16":   # tolist() of a float16 tensor gives its raw bits
            np.testing.assert_allclose(_half(got["data"]), _half(want["data"]), rtol=tol, atol=tol, err_msg=where)
            return
        for k in want:
            _compare(got[k], want[k], tol, f"{where}.{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{where}: {got!r} != {want!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            _compare(g, w, tol, f"{where}[{i}]")
    elif isinstance(want, float):
        assert abs(got - want) <= tol + tol * abs(want), f"{where}: {got} != {want} (tolerance {tol})"
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


def test_onnxruntime_node_runs_every_reference_pipeline(results):
    _, want = results
    failed = {k: v["error"] for k, v in want.items() if k in CASES and "error" in v and "fp16" not in k}
    assert failed == {}, "the reference (onnxruntime-node) failed, so the comparisons below mean nothing"


def test_nothing_is_fetched(results):
    got, want = results
    assert got["_fetched"] == [], "transformers.js on nnwasm requested URLs (it must stay on the machine)"
    assert want["_fetched"] == []


@pytest.mark.parametrize("case", [
    pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=why)) if why else c
    for c, (_, why) in CASES.items()])
def test_pipeline_agrees_with_onnxruntime_node(results, case):
    got, want = results
    tol, _ = CASES[case]
    assert "error" not in got[case], f"{case} on nnwasm: {got[case]['error'][:2000]}"
    if "error" in want[case]:
        pytest.skip(f"{case} fails on onnxruntime-node too: {want[case]['error'][:300]}")
    _compare(got[case]["output"], want[case]["output"], tol, case)


# --- in a page ------------------------------------------------------------------------------------

PAGE_CASES = [c for c, (_, why) in CASES.items() if why is None]
# with env.backends.onnx.wasm.proxy = true: a subset by default, all with NNWASM_ZOO_ALL=1
PROXY_CASES = PAGE_CASES if os.environ.get("NNWASM_ZOO_ALL") == "1" else \
    ["feature-extraction/q8", "text-generation/fp32", "automatic-speech-recognition/fp32"]
# transformers.js's browser build imports exactly these two bare names (its other dependencies
# are bundled); /ort is the reference page on onnxruntime-web, the one transformers.js installs.
PAGE = """<!doctype html><meta charset="utf-8"><title>transformers.js</title>
<script type="importmap">{"imports": {
  "@huggingface/transformers": "/node_modules/@huggingface/transformers/dist/transformers.web.js",
  "onnxruntime-web/webgpu": "%(runtime)s",
  "onnxruntime-common": "%(common)s/dist/esm/index.js"}}</script>
<script type="module">
import * as transformers from "@huggingface/transformers";
import { runCases } from "/cases/tfjs-cases.mjs";
const { env } = transformers;
env.allowRemoteModels = false;
env.allowLocalModels = true;
env.localModelPath = "/models/";
env.useBrowserCache = false;
%(prelude)s
window.results = await runCases(transformers, new URLSearchParams(location.search).getAll("case"));
</script>"""
PAGES = {
    "/": PAGE % {"runtime": "/node_modules/nnwasm/web/nnwasm.mjs", "common": "/node_modules/onnxruntime-common",
                 "prelude": ""},
    # sessions in a Web Worker, as transformers.js's docs suggest so the UI keeps painting
    # (transformers.js sets proxy to false at import; a user sets it back before the first session)
    "/proxy": PAGE % {"runtime": "/node_modules/nnwasm/web/nnwasm.mjs", "common": "/node_modules/onnxruntime-common",
                      "prelude": "env.backends.onnx.wasm.proxy = true;"},
    # onnxruntime-web's files from our server: transformers.js pointed wasmPaths at a CDN
    "/ort": PAGE % {"runtime": "/ort/onnxruntime-web/dist/ort.webgpu.bundle.min.mjs",
                    "common": "/ort/onnxruntime-common",
                    "prelude": 'env.backends.onnx.wasm.wasmPaths = "/ort/onnxruntime-web/dist/";\n'
                               "env.backends.onnx.wasm.numThreads = 1;"},
}


@pytest.mark.browser
def test_pipelines_in_a_page_agree_with_onnxruntime_web(apps, page):
    """The browser build of transformers.js, its onnxruntime-web/webgpu and onnxruntime-common
    named in an import map (web/README.md), on nnwasm's .onnx path in Chromium, against the same
    page on onnxruntime-web (images are resized by a canvas there, not by sharp as in Node, so the
    reference is a page too); every request that would leave 127.0.0.1 is aborted and counted."""
    server = serve({"/node_modules/": apps / "nnwasm" / "node_modules", "/models/": MODELS,
                    "/cases/": ROOT / "tests" / "node", "/ort/": apps / "onnxruntime" / "node_modules"}, PAGES)
    origin = server.origin
    query = "?" + "&".join(f"case={c}" for c in PAGE_CASES)
    requests = []

    def on_request(r):
        requests.append(r.url)
    try:
        got, errors, outside = run_page(page, origin + "/" + query, origin)
        page.on("request", on_request)
        proxied, proxy_errors, proxy_outside = run_page(page, origin + "/proxy?" + "&".join(
            f"case={c}" for c in PROXY_CASES), origin)
        page.remove_listener("request", on_request)
        want, ort_errors, _ = run_page(page, origin + "/ort" + query, origin)
    finally:
        server.shutdown()
    print("Chromium, ms per pipeline (create + run), nnwasm / onnxruntime-web:",
          {c: (got[c].get("ms"), want[c].get("ms")) for c in PAGE_CASES})
    assert errors == [], errors
    assert outside == [], f"the page requested URLs outside the machine: {outside}"
    for case in PAGE_CASES:
        assert "error" not in got[case], f"{case} in Chromium: {got[case]['error'][:2000]}"
        assert "error" not in want[case], f"{case} on onnxruntime-web in Chromium: {want[case]['error'][:2000]} {ort_errors}"
        _compare(got[case]["output"], want[case]["output"], CASES[case][0], f"{case} (page)")
    assert proxy_errors == [] and proxy_outside == [], (proxy_errors, proxy_outside)
    assert any(u.endswith("/web/proxy-worker.mjs") for u in requests), "the proxy page started no worker"
    print("Chromium, ms per pipeline with the proxy:", {c: proxied[c].get("ms") for c in PROXY_CASES})
    for case in PROXY_CASES:
        assert "error" not in proxied[case], f"{case} in Chromium, proxy: {proxied[case]['error'][:2000]}"
        _compare(proxied[case]["output"], want[case]["output"], CASES[case][0], f"{case} (page, proxy)")
