"""The generative model zoo (build_scripts/build_genzoo.py) in a page: Debian's chromium runs
tests/node/genzoo-generate.mjs (the greedy generation tests/node/generative.test.mjs runs in Node)
through web/nnwasm.mjs on WASM alone (the page's Pyodide has no numpy), served from 127.0.0.1 with
every other request aborted. The page hands back every step's feeds and outputs; onnxruntime runs
here, in CPython, on those same feeds, and each output must agree within tests/test_generative.py's
tolerance, with onnxruntime's greedy tokens; nnwasm in CPython (WASM alone, on wasmtime) must
give bit-identical outputs on those feeds.

One page runs the models in turn (Pyodide boots once), on the page's thread; a second page runs
some with env.wasm.proxy (in a Web Worker). By default a representative subset runs
(PAGE_MODELS: Optimum merged decoders with their If, GPT-2 and Llama with GQA and RoPE, a
single-file Qwen2, Whisper's encoder and merged decoder with a cross-attention past);
NNWASM_ZOO_ALL=1 (`make test-all`) runs the rest of the genzoo too (the single-file GPT-2 and
Marian: ~4.5 s more). Skipped without the genzoo (`make genzoo`)."""
import os

import pytest

from conftest import ROOT
from genzoo_check import build_genzoo, check_record, check_same_bits
from page_server import run_page, serve
from test_generative import assert_close, nnwasm_sessions, runner, sidecar

onnxruntime = pytest.importorskip("onnxruntime")

pytestmark = pytest.mark.browser

RUN_ALL = os.environ.get("NNWASM_ZOO_ALL") == "1"
PAGE_MODELS = ["gpt2_merged", "llama_merged", "qwen2", "whisper_merged", "genai_llama_fp32", "genai_llama_int4",
               "llama_merged_fp16"]
# with env.wasm.proxy (sessions in a Web Worker; the empty past, bool and int64 tensors cross
# postMessage): an If decoder and an encoder-decoder by default
PROXY_MODELS = ["gpt2_merged", "whisper_merged"]
# model -> why it fails in a page today (strict: one that starts passing must lose its row)
PAGE_EXPECTED_FAIL = {
}

PAGE = """<!doctype html><meta charset="utf-8"><title>genzoo</title>
<script type="module">
import { boot, env, InferenceSession, Tensor } from "/web/nnwasm.mjs";
import { generate, medianDecodeMs, packTensors as pack } from "/cases/genzoo-generate.mjs";

async function loadBytes(file) {
  const r = await fetch("/genzoo/" + file);
  if (!r.ok) throw new Error(`cannot fetch /genzoo/${file}: HTTP ${r.status}`);
  return r.arrayBuffer();
}

const query = new URLSearchParams(location.search);
env.wasm.proxy = query.has("proxy");
env.wasm.relaxedSimd = false;   // the reference flavour, whose bits are CPython's on every engine
window.results = await (async () => {
  const t0 = performance.now();
  const { pyodide } = await boot();
  const out = { _bootMs: performance.now() - t0 };
  // WASM alone: the page's Python has no numpy to fall back on (in the worker, with the proxy)
  if (pyodide) out._numpy = pyodide.runPython("import importlib.util; importlib.util.find_spec('numpy') is not None");
  for (const name of query.getAll("model")) {
    const r = (out[name] = { steps: [] }), sessions = {}, t1 = performance.now();
    try {
      const meta = await (await fetch(`/genzoo/${name}.json`)).json();
      const external = query.getAll("ext");   // "dir/model.onnx.data": a role's sibling external data
      for (const [role, f] of Object.entries(meta.roles)) {
        const dir = f.file.slice(0, f.file.lastIndexOf("/") + 1);
        const externalData = external.filter((e) => e.startsWith(dir) && !e.slice(dir.length).includes("/"))
          .map((e) => ({ path: e.slice(dir.length), data: "/genzoo/" + e }));
        sessions[role] = await InferenceSession.create("/genzoo/" + f.file, { executionProviders: ["wasm"], externalData });
      }
      r.createMs = performance.now() - t1;
      const times = [];
      r.tokens = await generate(meta, sessions, {
        Tensor, loadBytes,
        onEncoder: (feeds, outs) => { r.encoder = { feeds: pack(feeds), outputs: pack(outs) }; },
        onStep: (step, ms, feeds, outs) => { times.push(ms); r.steps.push({ feeds: pack(feeds), outputs: pack(outs) }); },
      });
      r.firstStepMs = times[0];
      r.decodeMs = medianDecodeMs(times);
    } catch (e) {
      r.error = `${e.name}: ${e.message}`;
    } finally {
      for (const s of Object.values(sessions)) await s.release();
      r.totalMs = performance.now() - t1;
    }
  }
  return out;
})();
</script>"""

def _models(mode):
    listed = PAGE_MODELS if mode == "page" else PROXY_MODELS
    return [n for n in build_genzoo.GENZOO
            if (n in PAGE_EXPECTED_FAIL and mode == "page") or (n not in PAGE_EXPECTED_FAIL and (RUN_ALL or n in listed))]


@pytest.fixture(scope="module")
def page_gen(browser):
    """mode -> the page's results over that mode's models ({model: result, "_bootMs": ms}); each
    mode's page runs once, when a test first asks for it."""
    import subprocess
    import sys
    if not any(build_genzoo.load_sidecar(n) for n in build_genzoo.GENZOO):
        pytest.skip(f"the genzoo is not built in {build_genzoo.genzoo_dir()}: run `make genzoo`")
    proc = subprocess.run([sys.executable, str(ROOT / "build_scripts" / "build_web.py")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"build_web.py failed:\n{proc.stdout}\n{proc.stderr}"
    server = serve({"/web/": ROOT / "web", "/dist/web/": ROOT / "dist" / "web",
                    "/genzoo/": build_genzoo.genzoo_dir(), "/cases/": ROOT / "tests" / "node"},
                   {"/": PAGE})
    done = {}

    def results(mode):
        if mode not in done:
            names = [n for n in _models(mode) if build_genzoo.load_sidecar(n)]
            ext = [f"ext={p.relative_to(build_genzoo.genzoo_dir()).as_posix()}" for n in names
                   for r in build_genzoo.load_sidecar(n)["roles"].values()
                   for p in sorted((build_genzoo.genzoo_dir() / r["file"]).parent.glob("*.data"))]
            query = "&".join([f"model={n}" for n in names] + ext + (["proxy"] if mode == "proxy" else []))
            page = browser.new_page()
            try:
                got, errors, outside = run_page(page, server.origin + "/?" + query, server.origin)
            finally:
                page.close()
            assert errors == [], errors
            assert outside == [], f"the page requested URLs outside the machine: {outside}"
            if mode == "page":
                assert got["_numpy"] is False, "the page's Pyodide has numpy: this would not be WASM alone"
            print(f"Chromium ({mode}): boot {got['_bootMs']:.0f} ms; per model (create, step 0, median decode "
                  "step, total ms):", {n: tuple(round(got[n].get(k, -1)) for k in
                                               ("createMs", "firstStepMs", "decodeMs", "totalMs")) for n in names})
            done[mode] = got
        return done[mode]
    yield results
    server.shutdown()


def _params():
    out = []
    for mode, listed in (("page", PAGE_MODELS), ("proxy", PROXY_MODELS)):
        for n in build_genzoo.GENZOO:
            marks = []
            if n in PAGE_EXPECTED_FAIL:
                if mode != "page":
                    continue
                marks.append(pytest.mark.xfail(strict=True, raises=AssertionError, reason=PAGE_EXPECTED_FAIL[n]))
            elif n not in listed:
                marks.append(pytest.mark.skipif(not RUN_ALL, reason=f"not in the {mode} run's default subset: "
                                                "NNWASM_ZOO_ALL=1 (make test-all)"))
            out.append(pytest.param(mode, n, marks=marks, id=f"{n}-{mode}"))
    return out


@pytest.mark.parametrize("mode,name", _params())
def test_generate_in_a_page(mode, name, page_gen):
    """Every step the page ran, run again by onnxruntime on the page's own feeds: the same
    outputs (logits and present.*), and onnxruntime's greedy tokens; and by nnwasm in CPython on
    WASM alone: the same bits."""
    meta = sidecar(name)
    got = page_gen(mode).get(name)
    assert got is not None, f"the page did not run {name}"
    where = f"{name} (Chromium, {mode})"
    assert "error" not in got, f"{where}: {got['error'][:2000]}"
    check_record(meta, got, where, assert_close)
    check_same_bits(got, runner(nnwasm_sessions(meta, "wasm")), where)
    print(f"{where}: create {got['createMs']:.0f} ms, step 0 {got['firstStepMs']:.1f} ms, "
          f"decode step {got['decodeMs']:.1f} ms (median), {got['totalMs']:.0f} ms in all")


def test_page_lists_are_models():
    assert set(PAGE_MODELS) | set(PROXY_MODELS) | set(PAGE_EXPECTED_FAIL) <= set(build_genzoo.GENZOO)
    assert not (set(PAGE_MODELS) | set(PROXY_MODELS)) & set(PAGE_EXPECTED_FAIL)
