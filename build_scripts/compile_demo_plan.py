"""Compiles the demo's committed EfficientNet-Lite0 into demo/assets/efficientnet-lite0.nnwp, the
plan file the demo page loads by default, with the input shape its recipe (efficientnet-lite0.json,
which names both files) gives. tests/test_demo_plan.py fails while the committed file differs from what this writes.

    .venv/bin/python build_scripts/compile_demo_plan.py        (or: make demo-plan)
"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "demo" / "assets"
RECIPE = json.loads((ASSETS / "efficientnet-lite0.json").read_text())
PLAN = ASSETS / RECIPE["plan"]
COMMAND = "make demo-plan"  # what the staleness test tells you to run


def demo_plan_bytes():
    """The plan file bytes nnwasm.compile_plan makes now from the committed model and recipe."""
    sys.path.insert(0, str(ROOT / "py_runtime"))
    import nnwasm
    recipe = RECIPE
    size = recipe["size"]
    shape = (1, 3, size, size) if recipe["layout"] == "NCHW" else (1, size, size, 3)
    return nnwasm.compile_plan(str(ASSETS / recipe["model"]), {recipe["input"]: shape})


def main():
    data = demo_plan_bytes()
    PLAN.write_bytes(data)
    print(f"wrote {PLAN.relative_to(ROOT)} ({len(data):,} bytes)")


if __name__ == "__main__":
    main()
