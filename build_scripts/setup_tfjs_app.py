"""Two scratch npm projects running transformers.js (@huggingface/transformers 4.3.1), for
tests/test_transformers_js.py and for trying it by hand:

    DIR/nnwasm/       its onnxruntime-node replaced by this checkout's npm package, the way
                      web/README.md ("transformers.js") tells users to: nnwasm as a dependency and
                      an npm override "onnxruntime-node": "$nnwasm"
    DIR/onnxruntime/  transformers.js as published, on onnxruntime-node (its CPU binary is inside
                      the package; --ignore-scripts skips only the postinstall that downloads the
                      CUDA / DirectML extras): the reference

    .venv/bin/python build_scripts/setup_tfjs_app.py [--dir DIR]     (after build_scripts/build_web.py)

DIR defaults to ~/.cache/nnwasm/tfjs-app; npm's cache is ~/.cache/nnwasm/npm, so the registry is
asked only the first time. Each project gets tests/node/tfjs-pipelines.mjs and tfjs-cases.mjs. The checkout is
packed (`npm pack`, whose prepack refuses a stale dist/web/) at every call, and the nnwasm
project reinstalled when the tarball changed. Prints DIR. Exits non-zero, saying why, when npm
or the registry is missing.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRANSFORMERS = "4.3.1"
SCRIPTS = [ROOT / "tests" / "node" / n for n in ("tfjs-pipelines.mjs", "tfjs-cases.mjs")]


def default_dir() -> Path:
    return Path(os.environ.get("NNWASM_TFJS_APP") or Path.home() / ".cache" / "nnwasm" / "tfjs-app")


def npm(args, cwd, cache):
    cmd = ["npm", *args, "--no-audit", "--no-fund", "--cache", str(cache)]
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise SystemExit(f"`{' '.join(cmd)}` in {cwd} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc.stdout


def project(folder: Path, manifest: dict, cache: Path, fresh: bool):
    folder.mkdir(parents=True, exist_ok=True)
    text = json.dumps(manifest, indent=2) + "\n"
    pkg = folder / "package.json"
    if fresh or not pkg.is_file() or pkg.read_text() != text or not (folder / "node_modules").is_dir():
        # a repacked tarball has a new integrity: the lock file and the installed copies must go
        for stale in ("package-lock.json", "node_modules/.package-lock.json", "node_modules/nnwasm",
                      "node_modules/onnxruntime-node"):
            shutil.rmtree(folder / stale, ignore_errors=True) if (folder / stale).is_dir() \
                else (folder / stale).unlink(missing_ok=True)
        pkg.write_text(text)
        npm(["install", "--ignore-scripts", "--prefer-offline"], folder, cache)
    for script in SCRIPTS:
        shutil.copyfile(script, folder / script.name)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=default_dir())
    args = parser.parse_args(argv)
    if shutil.which("npm") is None:
        raise SystemExit("npm is not installed")
    out: Path = args.dir
    cache = Path.home() / ".cache" / "nnwasm" / "npm"
    out.mkdir(parents=True, exist_ok=True)
    name = npm(["pack", "--pack-destination", str(out)], ROOT, cache).strip().splitlines()[-1]
    tarball = out / name
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
    stamp = out / "nnwasm.sha256"
    fresh = not stamp.is_file() or stamp.read_text().strip() != digest
    project(out / "nnwasm", {
        "name": "tfjs-on-nnwasm", "private": True, "type": "module",
        "dependencies": {"@huggingface/transformers": TRANSFORMERS, "nnwasm": f"file:{tarball}"},
        "overrides": {"onnxruntime-node": "$nnwasm"},
    }, cache, fresh)
    project(out / "onnxruntime", {
        "name": "tfjs-on-onnxruntime", "private": True, "type": "module",
        "dependencies": {"@huggingface/transformers": TRANSFORMERS},
    }, cache, False)
    stamp.write_text(digest + "\n")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
