"""The demo's derived files stay in step with their sources. The committed plan file
(demo/assets/efficientnet-lite0.nnwp) is exactly what nnwasm.compile_plan makes now from the
committed model: a change to the compiler, the optimizer, the kernels' ABI or the file format must
come with a regenerated plan, or the demo would load a stale (or refused) file. index.html loads
app.mjs's modules as one bundle that holds every one of them (one request, not one per import),
and preloads the files the recipe names."""
import hashlib
import importlib.util
import json
import posixpath
import re

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


IMPORT = re.compile(r'^\s*(?:import|export)\b[^;]*?\bfrom\s+"([^"]+)"|^\s*import\s+"([^"]+)"', re.M)


def _static_imports(path, seen):
    """Every module path (relative to the repository) that `path` imports statically, transitively."""
    for match in IMPORT.finditer((ROOT / path).read_text()):
        target = posixpath.normpath(posixpath.join(posixpath.dirname(path), match[1] or match[2]))
        if target not in seen:
            seen.add(target)
            _static_imports(target, seen)
    return seen


def _bundle_demo():
    spec = importlib.util.spec_from_file_location("bundle_demo", ROOT / "build_scripts" / "bundle_demo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _only_reexports(path):
    lines = [ln for ln in (ROOT / path).read_text().splitlines() if ln.strip() and not ln.lstrip().startswith("//")]
    return all(ln.startswith(("export {", "export *")) and " from " in ln for ln in lines)


def test_index_loads_the_bundled_module_graph_and_preloads_the_recipe_files():
    html = (ROOT / "demo" / "index.html").read_text()
    assert re.findall(r'<script type="module" src="([^"]+)"', html) == ["app.bundle.mjs"]
    assert "modulepreload" not in html, "a modulepreload link would fetch an unbundled module"
    bundler = _bundle_demo()
    bundler.ensure_bundle()
    bundled = set(re.findall(r"^// ((?:demo|web)/[\w.-]+\.mjs)$", bundler.BUNDLE.read_text(), re.M))
    graph = _static_imports("demo/app.mjs", {"demo/app.mjs"})
    assert bundled <= graph, f"the bundle holds modules app.mjs does not import: {sorted(bundled - graph)}"
    missing = sorted(m for m in graph - bundled if not _only_reexports(m))
    assert missing == [], f"demo/app.bundle.mjs lacks modules app.mjs imports: {missing}"
    assert re.findall(r"<script( [^>]*)?>", html) == [' src="preload.js"', ' type="module" src="app.bundle.mjs"'], \
        "index.html may hold no inline script (a strict CSP refuses it: tests/test_browser_csp.py)"
    preloads = (ROOT / "demo" / "preload.js").read_text()
    recipe = json.loads((ROOT / "demo" / "assets" / "efficientnet-lite0.json").read_text())
    for key in ("plan", "model", "labels"):
        assert f'"assets/{recipe[key]}"' in preloads, f"demo/preload.js does not preload the recipe's {key} ({recipe[key]})"
