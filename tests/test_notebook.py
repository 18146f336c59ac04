"""`make notebook`'s JupyterLite site, offline in headless Chromium: opens notebook/nnwasm-demo.ipynb,
runs every cell in the Pyodide kernel (no numpy there), and checks the outputs: nnwasm installed by
name from the site's index, every node on WASM, the .onnx session's logits against onnxruntime's on
the very input the notebook made (read back from the kernel), the plan file's bit-identical, a
profiling summary, no request leaving the site. Prints page open -> kernel ready -> first model output
and the notebook's own timings (docs/notebooks.md). Needs the site: `make notebook-site`
(build/notebook/site); skipped without it unless NNWASM_REQUIRE_NOTEBOOK=1."""
import base64
import json
import os
import re
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "notebook"))
from page_server import running  # noqa: E402
from serve import SITE, NotebookServer  # noqa: E402

MODEL = ROOT / "demo" / "assets" / "efficientnet-lite0.onnx"
pytestmark = [pytest.mark.browser, pytest.mark.notebook]

KERNEL_IDLE = """() => { const w = window.jupyterapp && jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.status === "idle"; }"""
CELLS = """() => { const nb = jupyterapp.shell.currentWidget; const cells = nb.content.model.cells; const out = [];
  for (let i = 0; i < cells.length; i++) { const c = cells.get(i).toJSON();
    if (c.cell_type === "code") out.push({source: c.source, outputs: c.outputs, execution_count: c.execution_count}); }
  return {status: nb.sessionContext.session.kernel.status, cells: out}; }"""
EXECUTE = """async (code) => { const kernel = jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  // ends at the code's last line of output, not at future.done: JupyterLite now and then loses the
  // execute_reply (the kernel's status then stays "busy" too), though the code ran
  const future = kernel.requestExecute({code: code + "\\nprint('__done__')"}); let text = "", error = null, finish;
  const finished = new Promise((resolve) => { finish = resolve; });
  future.onIOPub = (msg) => { if (msg.header.msg_type === "stream") text += msg.content.text;
    if (msg.header.msg_type === "error") { error = msg.content.ename + ": " + msg.content.evalue; finish(); }
    if (text.endsWith("__done__\\n")) finish(); };
  setTimeout(() => { error = error || "no output in 120 s"; finish(); }, 120000);
  await finished; return {text: text.replace("__done__\\n", ""), error}; }"""


def text_of(cell):
    for o in cell["outputs"]:
        if o["output_type"] == "error":
            raise AssertionError(f"cell failed: {o['ename']}: {o['evalue']}\n{''.join(cell['source'])[:400]}")
    return "".join(o.get("text", "") for o in cell["outputs"] if o["output_type"] == "stream")


@pytest.fixture(scope="module")
def server():
    if not (SITE / "jupyter-lite.json").exists():
        if os.environ.get("NNWASM_REQUIRE_NOTEBOOK") == "1":
            pytest.fail(f"{SITE} is missing: run `make notebook-site`")
        pytest.skip(f"{SITE} is missing: run `make notebook-site`")
    with running(NotebookServer()) as srv:
        yield srv


def test_example_notebook_runs_offline_without_numpy(server, page):
    outside = []
    page.on("request", lambda r: None if r.url.startswith((server.origin, "data:", "blob:")) else outside.append(r.url))
    # Should the kernel report idle but not answer, the page is opened again, once; the timings
    # are those of the attempt that worked.
    for attempt in range(2):
        t0 = time.monotonic()
        page.goto(server.url)
        page.wait_for_function(KERNEL_IDLE, timeout=240_000, polling=250)
        t_kernel = time.monotonic() - t0
        ready = page.evaluate(EXECUTE, "print('ready')")   # the kernel takes code now
        if ready == {"text": "ready\n", "error": None}:
            break
        print(f"\nattempt {attempt + 1}: the kernel reported idle but did not answer ({ready!r})")
    else:
        pytest.fail("the notebook's kernel never answered")
    page.evaluate('() => { jupyterapp.commands.execute("notebook:run-all-cells"); }')
    t_first = None
    deadline = time.monotonic() + 300
    while True:
        state = page.evaluate(CELLS)
        cells = state["cells"]
        for c in cells:   # fail at the first error, whatever runs after it
            text_of(c)
        if t_first is None and "Tensor (1, 1000) float32" in "".join(text_of(c) for c in cells):
            t_first = time.monotonic() - t0
        # the last cell prints the timings; the kernel's status is not waited for: JupyterLite's
        # run-all now and then loses a status message and shows "busy" after the last cell
        # (the whole line: a cell's print may reach the page in two stream messages)
        if re.search(r"nnwasm's own part: [\d.]+ s", text_of(cells[-1])):
            break
        assert time.monotonic() < deadline, (f"cells still running after 300 s (kernel {state['status']}): "
                                             f"{[(c['execution_count'], bool(c['outputs'])) for c in cells]}")
        time.sleep(0.5)
    t_done = time.monotonic() - t0
    out = {i: text_of(c) for i, c in enumerate(cells)}
    everything = "\n".join(out.values())

    assert "numpy loaded: False" in everything
    assert "(1, 3, 224, 224) float32" in everything
    assert "61 nodes; {'WasmExecutionProvider': 61}" in everything
    assert "bit-identical to the .onnx session: True" in everything
    assert "61/61 nodes on WASM; fallback nodes: 0" in everything
    assert re.search(r"model_run ms: [\d.]+, [\d.]+", everything) and "FusedConv" in everything

    # the notebook's input and logits, read back from the kernel, against onnxruntime
    got = page.evaluate(EXECUTE, "import base64\nprint(base64.b64encode(x.tobytes()).decode())\n"
                                 "print(base64.b64encode(logits.tobytes()).decode())\n"
                                 "print(base64.b64encode(plan_logits.tobytes()).decode())\n"
                                 "import sys; print('numpy' in sys.modules)")
    assert got["error"] is None, got["error"]
    x_b64, logits_b64, plan_b64, numpy_loaded = got["text"].split()
    assert numpy_loaded == "False"
    x = np.frombuffer(base64.b64decode(x_b64), np.float32).reshape(1, 3, 224, 224)
    logits = np.frombuffer(base64.b64decode(logits_b64), np.float32).reshape(1, 1000)
    assert base64.b64decode(plan_b64) == logits.tobytes()
    assert -1.0 <= x.min() and x.max() <= 1.0 and x.std() > 0.1   # a photo, normalised as the recipe says
    import onnxruntime
    ref = onnxruntime.InferenceSession(str(MODEL), providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
    np.testing.assert_allclose(logits, ref, rtol=1e-3, atol=2e-3)
    top5 = [int(k) for k in np.argsort(-ref[0])[:5]]
    lines = [ln.split() for ln in everything.splitlines() if re.match(r"\s+-?[\d.]+\s+\d+\s", ln)]
    assert [int(ln[1]) for ln in lines[:5]] == top5
    assert f"top-5 from the plan file: {top5}" in everything

    timings = re.search(r"(\{'install'.*?\}) \| nnwasm's own part: ([\d.]+) s", everything)
    assert timings, everything[-500:]
    print(f"\nnotebook: page open -> kernel idle {t_kernel:.1f} s, -> first model output {t_first:.1f} s, "
          f"-> all cells {t_done:.1f} s; in the notebook {timings.group(1)}, nnwasm's own part "
          f"{timings.group(2)} s; {[ln for ln in everything.splitlines() if ln.startswith('fetching')]}")
    assert not outside, f"requests left the site: {outside[:5]}"
