"""Runs tests/node/plan-runner.test.mjs (and plan-download.test.mjs: plans fetched over http) alone: .nnwp plan files executed by web/plan-session.mjs
on kernels.wasm without Pyodide, against the outputs CPython's nnwasm (wasmtime, same plan, same
kernels.wasm) gives: they must be bit-identical. (test_node_shim.py runs it with the others.)"""
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
from plan_fixtures import build_plan_fixtures

pytestmark = pytest.mark.node


@pytest.fixture(scope="module")
def plan_fixtures(tmp_path_factory):
    proc = subprocess.run([sys.executable, str(ROOT / "build_scripts" / "build_web.py")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"build_web.py failed:\n{proc.stdout}\n{proc.stderr}"
    return build_plan_fixtures(tmp_path_factory.mktemp("plans"))


def run_node_test(plan_fixtures, script, at_least):
    node = shutil.which("node")
    assert node, "Node.js is not installed"
    env = {**os.environ, "NNWASM_PLAN_FIXTURES": str(plan_fixtures),
           "NNWASM_DIST_URL": (ROOT / "dist" / "web").as_uri() + "/"}
    proc = subprocess.run([node, "--test", "--test-reporter=tap", f"tests/node/{script}"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    counts = {k: int(v) for k, v in re.findall(r"^# (tests|pass|fail|skipped|cancelled|todo) (\d+)$", out, re.M)}
    assert counts.get("skipped") == 0 and counts.get("pass") == counts.get("tests") >= at_least, f"{counts}\n{out[-6000:]}"


def test_plan_runner_node(plan_fixtures):
    run_node_test(plan_fixtures, "plan-runner.test.mjs", 11)


def test_plan_download_node(plan_fixtures):
    run_node_test(plan_fixtures, "plan-download.test.mjs", 4)
