"""bench/speed/bench_speed.py's report: speed.json -> speed.md (tables) and speed.png (chart).

    .venv/bin/python bench/speed/speed_report.py bench/results/speed.json     (re-renders next to it)

Ratios are medians over rounds of the two runtimes' medians in each round (interleaved, so drift
cancels). int8 / float32 in nnwasm likewise, from the int8 model's rounds, which also run its
float32 base's plan ("nnwasm-fp32"); onnxruntime-web's int8 / float32 (and nnwasm's in a result
written before nnwasm-fp32 existed) are ratios of medians from different minutes.
"Of p10s": the same ratios from the 10th percentiles of all runs, the runs least disturbed by
the machine's other load (on a busy shared machine the medians carry the others' bursts).
"""
import json
import statistics
import sys
from pathlib import Path

NAMES = {"efficientnet_lite0": "EfficientNet-Lite0", "mobilenet_v2": "MobileNetV2", "squeezenet1_1": "SqueezeNet 1.1",
         "resnet50": "ResNet-50", "bert_4l": "BERT 4L/256, seq 128", "mobilenet_v2_int8_qdq": "MobileNetV2 int8 QDQ",
         "bert_4l_int8_dynamic": "BERT int8 dynamic"}
CONV = ["efficientnet_lite0", "mobilenet_v2", "squeezenet1_1", "resnet50"]
NAMES.update({f"{n}_alt": f"{v}, hand-written" for n, v in list(NAMES.items())})   # bench/speed/alt_models.py


def times(m, rt):
    return [t for r in m["rounds"] for t in r.get(rt, [])]


def med(m, rt):
    xs = times(m, rt)
    return statistics.median(xs) if xs else None


def p10(m, rt):
    xs = sorted(times(m, rt))
    return xs[len(xs) // 10] if xs else None


def ratio(m, a, b):
    """median over rounds of median(a) / median(b) in the round"""
    rs = [statistics.median(r[a]) / statistics.median(r[b]) for r in m["rounds"] if r.get(a) and r.get(b)]
    return statistics.median(rs) if rs else None


def share(m, rt, peak, peak_gflop):
    r = ratio(m, peak, rt)
    return None if r is None else m["gflop"] / peak_gflop * r


def f(v, spec=".2f", unit=""):
    return "–" if v is None else f"{v:{spec}}{unit}"


def mb(m, rt):
    b = m.get("memory", {}).get(rt, {}).get("bytes")
    return None if b is None else b / 2**20


def summary(res):
    """per model: the figures the tables and the chart use"""
    pg = res["peak_gflop_per_run"]
    by = {m["model"]: m for m in res["models"]}
    rows = {}
    for n, m in by.items():
        r = {k: med(m, k) for k in ("nnwasm", "nnwasm-pyodide", "ort-web", "tfjs", "py-nnwasm", "ort", "peak", "py-peak",
                                   "nnwasm-before")}
        r.update(p10={k: p10(m, k) for k in r}, over_ortweb=ratio(m, "nnwasm", "ort-web"), over_tfjs=ratio(m, "nnwasm", "tfjs"),
                 py_over_node=statistics.median([statistics.median(x["py-nnwasm"]) / statistics.median(x["nnwasm"])
                                                 for x in m["rounds"] if x.get("py-nnwasm") and x.get("nnwasm")] or [0]) or None,
                 py_over_ort=ratio(m, "py-nnwasm", "ort"), pyodide_over_plan=ratio(m, "nnwasm-pyodide", "nnwasm"),
                 before_over_ortweb=ratio(m, "nnwasm-before", "ort-web"),
                 share=share(m, "nnwasm", "peak", pg), py_share=share(m, "py-nnwasm", "py-peak", pg),
                 peak_gflops=pg / r["peak"] * 1e3 if r["peak"] else None,
                 py_peak_gflops=pg / r["py-peak"] * 1e3 if r["py-peak"] else None)
        r["gflops"] = m["gflop"] / r["nnwasm"] * 1e3 if r["nnwasm"] else None
        base = by.get(m.get("base"))
        within = ratio(m, "nnwasm", "nnwasm-fp32")
        if within or (base and r["nnwasm"] and med(base, "nnwasm")):
            r["int8_over_fp32"] = within or r["nnwasm"] / med(base, "nnwasm")
            r["ortweb_int8_over_fp32"] = (r["ort-web"] / med(base, "ort-web") if base and r["ort-web"] and med(base, "ort-web")
                                          else None)
        rows[n] = r
    return rows


def targets(rows):
    """(what, measured, target, met) for issue 7's targets on the models measured"""
    out = []
    for n in CONV + ["bert_4l"]:
        if n in rows:
            out.append((f"nnwasm / ort-web, {NAMES[n]}", rows[n]["over_ortweb"], 0.6 if n == "bert_4l" else 0.5))
    for n in ["mobilenet_v2", "squeezenet1_1", "resnet50"]:
        if n in rows:
            out.append((f"nnwasm / TF.js, {NAMES[n]}", rows[n]["over_tfjs"], 0.75))
    if "resnet50" in rows:
        out.append(("ResNet-50 share of the V8 peak (at least)", rows["resnet50"]["share"], 0.70))
    for n in ["mobilenet_v2_int8_qdq", "bert_4l_int8_dynamic"]:
        if n in rows:
            out.append((f"int8 / fp32 in nnwasm, {NAMES[n]}", rows[n].get("int8_over_fp32"), 0.6))
            out.append((f"nnwasm / ort-web, {NAMES[n]}", rows[n]["over_ortweb"], 0.5))
    for n, r in rows.items():
        out.append((f"CPython / Node nnwasm, {NAMES[n]}", r["py_over_node"], 1.2))
    return [(w, v, t, None if v is None else (v >= t if "at least" in w else v <= t)) for w, v, t in out]


def exports_side_by_side(rows):
    """The bench's own export of each model against its hand-written twin (NAME_alt), if both ran."""
    pairs = [(n, n + "_alt") for n in rows if n + "_alt" in rows]
    if not pairs:
        return []
    before = any(rows[n]["before_over_ortweb"] for p in pairs for n in p)
    lines = ["", "## Both exports: the bench's own and the hand-written one (bench/speed/alt_models.py)", "",
             "| model | nnwasm / ort-web, own export | same, hand-written | nnwasm ms own / hand-written | ort-web ms own / hand-written |"
             + (" before (--before plans) / ort-web, own / hand-written |" if before else ""),
             "|---|---|---|---|---|" + ("---|" if before else "")]
    for a, b in pairs:
        ra, rb = rows[a], rows[b]
        lines.append(f"| {NAMES[a]} | {f(ra['over_ortweb'])} | {f(rb['over_ortweb'])} | {f(ra['nnwasm'], '.1f')} / {f(rb['nnwasm'], '.1f')} | "
                     f"{f(ra['ort-web'], '.1f')} / {f(rb['ort-web'], '.1f')} |"
                     + (f" {f(ra['before_over_ortweb'])} / {f(rb['before_over_ortweb'])} |" if before else ""))
    return lines


def markdown(res, rows):
    mc = res["machine"]
    s = res["settings"]
    lines = [f"# Speed: nnwasm against onnxruntime-web, TF.js and onnxruntime", "",
             f"{mc['date']}, {mc['cpu']} (a shared 2-core VM; load average at the start {', '.join(f'{x:.1f}' for x in mc['load_average'])}), "
             f"Node {mc['node']}, onnxruntime-web {mc['onnxruntime-web']}, TF.js wasm {mc['tfjs']}, onnxruntime {mc['onnxruntime']}, "
             f"wasmtime {mc['wasmtime']}. Batch 1, one thread, `bench/speed/bench_speed.py` with {s['rounds']} interleaved rounds, "
             f"~{s['seconds']:g} s measured per model and runtime after >= {s['warm_runs']} runs and >= {s['warm_seconds']:g} s of warm-up"
             + (" (--quick: V8 not warmed up; a smoke run, not a measurement)" if s.get("quick") else "") + ".", "",
             "## Node (V8): median ms (p10), ratios of times (lower is better for nnwasm)", "",
             "| model | GFLOP | nnwasm (plan) | onnxruntime-web | TF.js wasm | nnwasm / ort-web | nnwasm / TF.js | same, of p10s | nnwasm GFLOP/s | share of peak |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for n, r in rows.items():
        cell = lambda k: "–" if r[k] is None else f"{r[k]:.1f} ({r['p10'][k]:.1f})"  # noqa: E731
        lines.append(f"| {NAMES[n]} | {res_gflop(res, n):.2f} | {cell('nnwasm')} | {cell('ort-web')} | {cell('tfjs')} | "
                     f"{f(r['over_ortweb'])} | {f(r['over_tfjs'])} | {p10_ratios(r)} | {f(r['gflops'], '.1f')} | {f(r['share'] and 100 * r['share'], '.0f', ' %')} |")
    pyo = [f"{NAMES[n]} {f(r['pyodide_over_plan'])}" for n, r in rows.items() if r["pyodide_over_plan"]]
    if pyo:
        lines += ["", "nnwasm on the .onnx through Pyodide in the same Node, its time over the plan file's: " + ", ".join(pyo) + "."]
    lines += exports_side_by_side(rows)
    pk = [r["peak_gflops"] for r in rows.values() if r["peak_gflops"]]
    ppk = [r["py_peak_gflops"] for r in rows.values() if r["py_peak_gflops"]]
    lines += ["", f"Peak (bench/speed/peak.c, f32x4 mul+add chains, interleaved with each model's rounds): V8 median "
              f"{f(statistics.median(pk) if pk else None, '.1f')} GFLOP/s (range {f(min(pk) if pk else None, '.1f')}-{f(max(pk) if pk else None, '.1f')} across models), "
              f"wasmtime {f(statistics.median(ppk) if ppk else None, '.1f')} GFLOP/s. Int8 models count their multiply-adds as float ones do (GOP).", ""]
    lines += ["## Session creation and memory", "",
              "Creation: the first in a fresh process, so nnwasm's includes compiling kernels.wasm, onnxruntime-web's "
              "its wasm module's start, TF.js's building the layers model with random weights. Memory: each runtime's wasm "
              "linear memory after the runs (nnwasm: kernels.wasm's `memory.buffer.byteLength`; onnxruntime-web: its "
              "module's `WebAssembly.Memory`, captured at instantiation; TF.js: its module's `HEAP8.length`).", "",
              "| model | create nnwasm | create ort-web | create TF.js | create CPython nnwasm | create onnxruntime | memory nnwasm | memory ort-web | memory TF.js |",
              "|---|---|---|---|---|---|---|---|---|"]
    for m in res["models"]:
        c = m["create_ms"]
        lines.append(f"| {NAMES[m['model']]} | " + " | ".join(f(c.get(k), ".0f", " ms") for k in ("nnwasm", "ort-web", "tfjs", "py-nnwasm", "ort"))
                     + " | " + " | ".join(f(mb(m, k), ".1f", " MB") for k in ("nnwasm", "ort-web", "tfjs")) + " |")
    if any(r["py-nnwasm"] for r in rows.values()):
        lines += ["", "## CPython: nnwasm under wasmtime against onnxruntime (native, 1 thread)", "",
                  "| model | nnwasm (wasmtime) | onnxruntime | nnwasm / onnxruntime | CPython / Node nnwasm | GFLOP/s | share of wasmtime peak |",
                  "|---|---|---|---|---|---|---|"]
        for n, r in rows.items():
            m_gflop = res_gflop(res, n)
            lines.append(f"| {NAMES[n]} | {f(r['py-nnwasm'], '.1f')} | {f(r['ort'], '.1f')} | {f(r['py_over_ort'])} | "
                         f"{f(r['py_over_node'])} | {f(r['py-nnwasm'] and m_gflop / r['py-nnwasm'] * 1e3, '.1f')} | "
                         f"{f(r['py_share'] and 100 * r['py_share'], '.0f', ' %')} |")
    int8 = {n: r for n, r in rows.items() if "int8_over_fp32" in r}
    if int8:
        lines += ["", "## int8 against float32 (nnwasm: interleaved in the int8 model's rounds; ort-web: medians from each model's own rounds)", "",
                  "| model | nnwasm int8 / fp32 | ort-web int8 / fp32 | nnwasm int8 / ort-web int8 |", "|---|---|---|---|"]
        for n, r in int8.items():
            lines.append(f"| {NAMES[n]} | {f(r['int8_over_fp32'])} | {f(r['ortweb_int8_over_fp32'])} | {f(r['over_ortweb'])} |")
    lines += ["", "## Issue 7's targets", "", "| target | measured | goal | met |", "|---|---|---|---|"]
    for w, v, t, ok in targets(rows):
        lines.append(f"| {w} | {f(v)} | {'>=' if 'at least' in w else '<='} {t} | {'–' if ok is None else ('yes' if ok else '**no**')} |")
    lines += threads_section(res)
    lines += flavour_section(res)
    lines += issue16_section(res, rows)
    lines += ["", "## Top ops (nnwasm plan in Node, profiled after the timed rounds: op type, kernel, ms a run, share)", ""]
    for m in res["models"]:
        ops = m.get("ops") or {}
        tot = sum(ops.values())
        top = sorted(ops.items(), key=lambda kv: -kv[1])[:5]
        lines.append(f"- {NAMES[m['model']]}: " + ("; ".join(f"{k} {v:.2f} ms ({100 * v / tot:.0f} %)" for k, v in top) if tot else "–"))
        if m.get("top_nodes"):
            lines.append("  - slowest nodes: " + "; ".join(f"{k.removesuffix('_kernel_time')} {v:.2f} ms"
                                                        for k, v in list(m["top_nodes"].items())[:3]))
    errs = [(m["model"], k, e) for m in res["models"] for k, e in m.get("errors", {}).items()]
    if errs:
        lines += ["", "## Could not run", ""] + [f"- {NAMES[n]}, {k}: {e}" for n, k, e in errs]
    return "\n".join(lines) + "\n"


def threads_section(res):
    """bench_speed.py --threads: per thread count t > 1, ratios within rounds (issue 16's targets)"""
    counts = thread_counts(res)
    lines = []
    for t in counts:
        runs_on = sorted({f"{o['flavour']} at {o['threads']} threads" for m in res["models"]
                          for o in [m.get(f"nnwasm_runs_on@{t}")] if o})
        lines += ["", f"## {t} threads against 1 (ratios of times within rounds; issue 16 targets in brackets)", "",
                  f"nnwasm in Node: `env.wasm.numThreads` = {t} (web/threads.mjs' pool of worker_threads; once warm it ran "
                  f"{', '.join(runs_on) or 'as the result does not say'}), against one thread on the default flavour. "
                  f"onnxruntime-web: the same setting. CPython: SessionOptions.intra_op_num_threads = {t} (kernels-threads.wasm).", "",
                  f"| model | Node nnwasm {t}T ms | ort-web {t}T ms | nnwasm {t}T/1T [<= 0.55-0.6] | ort-web {t}T/1T | "
                  f"nnwasm {t}T / ort-web {t}T [<= 0.5] | CPython {t}T ms | CPython {t}T/1T | CPython {t}T / Node {t}T [<= 1.2] |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for m in res["models"]:
            a = lambda k: f"{k}@{t}"   # noqa: E731
            lines.append(f"| {NAMES[m['model']]} | {f(med(m, a('nnwasm')), '.1f')} | {f(med(m, a('ort-web')), '.1f')} | "
                         f"{f(ratio(m, a('nnwasm'), 'nnwasm'))} | {f(ratio(m, a('ort-web'), 'ort-web'))} | "
                         f"{f(ratio(m, a('nnwasm'), a('ort-web')))} | {f(med(m, a('py-nnwasm')), '.1f')} | "
                         f"{f(ratio(m, a('py-nnwasm'), 'py-nnwasm'))} | {f(ratio(m, a('py-nnwasm'), a('nnwasm')))} |")
    return lines


def thread_counts(res):
    return sorted({int(k.split("@")[1]) for m in res["models"] for r in m["rounds"] for k in r
                   if "@" in k and k.split("@")[1].isdigit()})


def amdahl_rows(res):
    """per model: p, the share of nnwasm's one-thread Node profile in ops whose kernel splits
    (bench_threads.SPLITS), and the predicted speed-ups 1 / ((1 - p) + p / n) at 2, 4, 8 threads"""
    from bench_threads import SPLITS, amdahl
    out = {}
    for m in res["models"]:
        ops = m.get("ops") or {}
        total = sum(ops.values())
        if total:
            p = sum(v for k, v in ops.items() if k.split()[-1] in SPLITS) / total
            out[m["model"]] = (p, {n: amdahl(p, n) for n in (2, 4, 8)})
    return out


def fitted_rows(res):
    """per model, from the timed ratio r = nnwasm's 2-thread / 1-thread time in Node (a median over
    rounds, as every ratio here): the serial fraction f with r = f + (1 - f) / 2, so f = 2r - 1
    (wake-ups, joins, imbalance and what stays on the caller all count as serial), and the speed-up
    at n threads 1 / (f + (1 - f) / n). The 1-thread time is the 2-thread flavour's one-thread twin:
    simd (--flavour-ab's nnwasm@simd) for simd+threads when the default flavour is another, else the
    default's. (speed-ups at 2, 4, 8, f, base flavour, r); none where the 2-thread process ran on one."""
    out = {}
    for m in res["models"]:
        on2 = m.get("nnwasm_runs_on@2") or {}
        if on2.get("threads", 2) < 2:
            continue
        flav = (on2.get("flavour") or "").removesuffix("+threads")
        on1 = (m.get("nnwasm_runs_on") or {}).get("flavour", "?")
        twin = flav == "simd" and on1 != "simd" and any(r.get("nnwasm@simd") for r in m["rounds"])
        r = ratio(m, "nnwasm@2", "nnwasm@simd" if twin else "nnwasm")
        if r is None:
            continue
        serial = min(1.0, max(0.0, 2 * r - 1))
        out[m["model"]] = ({n: 1 / (serial + (1 - serial) / n) for n in (2, 4, 8)}, serial, "simd" if twin else on1, r)
    return out


def flavour_section(res):
    """--flavour-ab: nnwasm on the default flavour (relaxed where the engine has it) against the
    baseline simd flavour, both one thread, interleaved"""
    if not any("nnwasm@simd" in r for m in res["models"] for r in m["rounds"]):
        return []
    lines = ["", "## Flavours: relaxed SIMD against the baseline (Node, one thread, ratios within rounds)", "",
             "| model | nnwasm ms (runs on) | simd ms | default / simd | int8 / fp32 (default) | int8 / fp32 (simd) |",
             "|---|---|---|---|---|---|"]
    for m in res["models"]:
        on = (m.get("nnwasm_runs_on") or {}).get("flavour", "?")
        lines.append(f"| {NAMES[m['model']]} | {f(med(m, 'nnwasm'), '.1f')} ({on}) | {f(med(m, 'nnwasm@simd'), '.1f')} | "
                     f"{f(ratio(m, 'nnwasm', 'nnwasm@simd'))} | {f(ratio(m, 'nnwasm', 'nnwasm-fp32'))} | "
                     f"{f(ratio(m, 'nnwasm@simd', 'nnwasm-fp32@simd'))} |")
    return lines


def issue16_section(res, rows):
    """issue 16's targets, from this run: threads, relaxed SIMD, CPython against Node, Amdahl"""
    t = 2 if 2 in thread_counts(res) else None
    by = {m["model"]: m for m in res["models"]}
    am = amdahl_rows(res)
    out = []
    for n, m in by.items():
        if t:
            out.append((f"nnwasm 2T / 1T, {NAMES[n]}", ratio(m, "nnwasm@2", "nnwasm"),
                        0.55 if n.removesuffix("_alt") in ("resnet50", "bert_4l", "efficientnet_lite0") else 0.6))
            out.append((f"nnwasm 2T / ort-web 2T, {NAMES[n]}", ratio(m, "nnwasm@2", "ort-web@2"), 0.5))
    for n in [m for b in ("mobilenet_v2_int8_qdq", "bert_4l_int8_dynamic") for m in (b, b + "_alt")]:
        if n in by:
            out.append((f"relaxed int8 / fp32, {NAMES[n]}", ratio(by[n], "nnwasm", "nnwasm-fp32"), 0.5))
    for n in ("bert_4l_int8_dynamic", "bert_4l_int8_dynamic_alt"):
        if n in by:
            out.append((f"relaxed int8 / ort-web int8, {NAMES[n]}", rows[n]["over_ortweb"], 0.5))
    for n, m in by.items():
        if m["base"] is None and any("nnwasm@simd" in r for r in m["rounds"]):
            gemm = n.removesuffix("_alt") in ("resnet50", "bert_4l")   # GEMM-bound: >= 1.1x faster than simd
            out.append((f"relaxed / simd, {NAMES[n]}", ratio(m, "nnwasm", "nnwasm@simd"), round(1 / 1.1, 3) if gemm else 1.0))
    if t:
        for n, m in by.items():
            out.append((f"CPython 2T / Node 2T, {NAMES[n]}", ratio(m, "py-nnwasm@2", "nnwasm@2"), 1.2))
    fit = fitted_rows(res)
    for n in ("resnet50", "bert_4l"):
        if n in am:
            out.append((f"predicted 4-thread speed-up (at least), {NAMES[n]}: Amdahl on the split kernels' share", am[n][1][4], 3.2))
        if n in fit:
            out.append((f"predicted 4-thread speed-up (at least), {NAMES[n]}: fitted to the timed 2T / 1T", fit[n][0][4], 3.2))
    if not out:
        return []
    lines = ["", "## Issue 16's targets (this run)", "", "| target | measured | goal | met |", "|---|---|---|---|"]
    for w, v, g in out:
        ok = None if v is None else (v >= g if "at least" in w else v <= g)
        lines.append(f"| {w} | {f(v)} | {'>=' if 'at least' in w else '<='} {g} | {'–' if ok is None else ('yes' if ok else '**no**')} |")
    if am:
        lines += ["", "Amdahl: p = the share of nnwasm's one-thread Node profile (the top-ops profile below) in ops whose kernel "
                  "splits over the pool (bench_threads.SPLITS); predicted speed-up at n threads 1 / ((1 - p) + p / n), an upper "
                  "bound (perfect balance, no wake-ups; the serial parts inside split kernels counted as split).", "",
                  "The fit: the timed ratio r = 2-thread / 1-thread time (the row's measured 2T speed-up is 1 / r; the "
                  "1-thread time on the 2-thread flavour's one-thread twin) read as Amdahl's law with a serial fraction "
                  "f: r = f + (1 - f) / 2, so f = 2r - 1, clamped to [0, 1]; wake-ups, joins, imbalance and the caller's "
                  "own parts count as serial. Speed-up at n threads 1 / (f + (1 - f) / n): what 4 and 8 threads would "
                  "give if what did not halve at 2 stayed serial.", "",
                  "| model | p (Amdahl) | 2T | 4T | 8T | measured 2T speed-up | fitted f (serial) | fitted 4T | fitted 8T | 1T base |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for n, (p, sp) in am.items():
            fs, f4, f8, fb = ((f"{fit[n][1]:.3f}", f"{fit[n][0][4]:.2f}x", f"{fit[n][0][8]:.2f}x", fit[n][2]) if n in fit
                              else ("–",) * 4)
            meas = fit[n][3] if n in fit else ratio(by[n], "nnwasm@2", "nnwasm") if t else None
            lines.append(f"| {NAMES[n]} | {p:.3f} | {sp[2]:.2f}x | {sp[4]:.2f}x | {sp[8]:.2f}x | "
                         f"{'–' if not meas else f'{1 / meas:.2f}x'} | {fs} | {f4} | {f8} | {fb} |")
    return lines


def p10_ratios(r):
    p = r["p10"]
    return " / ".join(f(p["nnwasm"] / p[k]) if p["nnwasm"] and p[k] else "–" for k in ("ort-web", "tfjs"))


def res_gflop(res, n):
    return next(m["gflop"] for m in res["models"] if m["model"] == n)


def chart(res, rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = list(rows)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(13, 4.8), gridspec_kw={"width_ratios": [3, 1.4]})
    series = [("nnwasm / ort-web", "over_ortweb"), ("nnwasm / TF.js", "over_tfjs"), ("CPython / Node nnwasm", "py_over_node")]
    w = 0.8 / len(series)
    for i, (label, key) in enumerate(series):
        ys = [rows[n][key] or 0 for n in names]
        ax.bar([x + (i - 1) * w for x in range(len(names))], ys, w, label=label)
    ax.axhline(1, color="black", lw=0.8)
    ax.axhline(0.5, color="red", lw=0.8, ls="--", label="target nnwasm / ort-web 0.5")
    ax.set_xticks(range(len(names)), [NAMES[n] for n in names], rotation=25, ha="right", fontsize=8)
    ax.set_ylabel("time ratio (lower: nnwasm faster)")
    ax.legend(fontsize=8)
    ax.set_title("nnwasm's time over its peers', batch 1, one thread")
    sh = [100 * (rows[n]["share"] or 0) for n in names]
    bx.barh([NAMES[n] for n in names], sh)
    bx.axvline(70, color="red", lw=0.8, ls="--")
    bx.set_xlabel("nnwasm in V8: % of the f32x4 peak")
    bx.invert_yaxis()
    bx.tick_params(labelsize=8)
    fig.suptitle(f"{res['machine']['cpu']}, {res['machine']['date']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write(res, out):
    rows = summary(res)
    (Path(out) / "speed.md").write_text(markdown(res, rows))
    chart(res, rows, Path(out) / "speed.png")


if __name__ == "__main__":
    p = Path(sys.argv[1])
    write(json.loads(p.read_text()), p.parent)
