"""The demo's committed plan file (demo/assets/efficientnet-lite0.nnwp) is exactly what
nnwasm.compile_plan makes now from the committed model: a change to the compiler, the optimizer,
the kernels' ABI or the file format must come with a regenerated plan, or the demo would load a
stale (or refused) file."""
import hashlib
import importlib.util

from conftest import ROOT


def _compile_demo_plan():
    spec = importlib.util.spec_from_file_location("compile_demo_plan", ROOT / "build_scripts" / "compile_demo_plan.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_demo_plan_is_current():
    script = _compile_demo_plan()
    assert script.PLAN.exists(), f"{script.PLAN} is missing: run `{script.COMMAND}`"
    committed = script.PLAN.read_bytes()
    fresh = script.demo_plan_bytes()
    digest = lambda b: hashlib.sha256(b).hexdigest()[:12]  # noqa: E731
    assert committed == fresh, (
        f"demo/assets/efficientnet-lite0.nnwp is stale ({len(committed):,} bytes, sha256 {digest(committed)}; "
        f"compile_plan now gives {len(fresh):,} bytes, sha256 {digest(fresh)}): run `{script.COMMAND}` and commit it")
