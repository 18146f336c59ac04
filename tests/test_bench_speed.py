"""bench/speed/bench_speed.py end to end on one small model, as short as it goes (a smoke run: no timing
is asserted, only that every runtime ran, answered like onnxruntime, and the report was written)."""
import json
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.node


def test_bench_speed_quick(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "speed" / "bench_speed.py"), "--quick", "--rounds", "2",
                           "--seconds", "0.3", "--models", "squeezenet1_1", "--threads", "1", "2", "--flavour-ab",
                           "--out", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads((tmp_path / "speed.json").read_text())
    (m,) = res["models"]
    assert m["errors"] == {}
    assert abs(m["gflop"] - 0.698) < 0.01
    for rt in ("nnwasm", "ort-web", "tfjs", "peak", "py-nnwasm", "ort", "py-peak", "nnwasm@2", "ort-web@2", "py-nnwasm@2",
               "nnwasm@simd"):
        assert all(r[rt] for r in m["rounds"]), rt
    assert m["max_abs_diff"]["nnwasm"] < 1e-3 and m["max_abs_diff"]["ort-web"] < 1e-3
    assert m["memory"]["nnwasm"]["bytes"] > 4 << 20 and m["memory"]["ort-web"]["bytes"] > 4 << 20
    assert "FusedConv" in " ".join(m["ops"])
    md = (tmp_path / "speed.md").read_text()
    assert "| SqueezeNet 1.1 | 0.70 |" in md and "nnwasm / ort-web, SqueezeNet 1.1" in md
    assert (tmp_path / "speed.png").stat().st_size > 10_000
    # issue 16's tables: threads (what nnwasm ran on once warm), flavours, targets with the Amdahl estimates
    assert m["nnwasm_runs_on@simd"] == {"flavour": "simd", "threads": 1}
    on2 = m["nnwasm_runs_on@2"]   # the helpers may still be starting after --quick's short warm-up
    assert on2["flavour"].endswith("+threads") and on2["threads"] in (1, 2)
    assert not [k for k in m if k.startswith("ops@")]   # one profile, of the one-thread default; the fit is timed
    for heading in ("## 2 threads against 1", "## Flavours: relaxed SIMD against the baseline", "## Issue 16's targets",
                    "| SqueezeNet 1.1 | 0."):
        assert heading in md, heading
    # the 4/8-thread estimates: Amdahl on the profile, and the fit of the timed 2T / 1T (when 2 threads ran)
    lines = md.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("| model | p (Amdahl) |"))
    assert "| fitted f (serial) | fitted 4T | fitted 8T |" in lines[head]
    row = next(ln for ln in lines[head:] if ln.startswith("| SqueezeNet 1.1 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    if on2["threads"] == 2:   # f from the measured 2T speed-up: 2 / speed-up - 1 (clamped), and 4T = 1 / (f + (1 - f) / 4)
        serial = float(cells[6])
        assert abs(serial - min(1, max(0, 2 / float(cells[5].removesuffix("x")) - 1))) < 0.02, row
        assert abs(float(cells[7].removesuffix("x")) - 1 / (serial + (1 - serial) / 4)) < 0.02, row
