"""Shared pytest setup: the source tree on sys.path, and pytest-playwright pointed at Debian's
chromium (never `playwright install`: it downloads a browser and fails offline)."""
import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "py_runtime"))
sys.path.insert(0, str(ROOT / "tests"))

# The suite checks bits against CPython's across engines: it runs the reference flavour of
# kernels.wasm (py_runtime/nnwasm/host/flavours.py) unless a test asks for another
# (tests/test_flavours.py). Node children inherit it (web/flavours.mjs reads it too).
os.environ.setdefault("NNWASM_KERNELS_FLAVOUR", "simd")

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    exe = shutil.which("chromium")
    if exe is None:
        pytest.fail("Debian's chromium is not installed: run `make setup`")
    return {**browser_type_launch_args, "executable_path": exe, "args": CHROMIUM_FLAGS}
