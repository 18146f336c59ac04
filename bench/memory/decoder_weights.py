"""Peak kernels.wasm memory of a decoder's generation in CPython, weights shared or not
(bench/results/shared-weights.md). The models are bench/decoders' (build_bench_decoders.py).
usage: python bench/memory/decoder_weights.py MODELS_DIR MODEL_NAME share|private [new_tokens] [plain|kept]
kept: the presents bound to the "wasm" device (IOBinding) and fed back, as nnwasm-js's
preferredOutputLocation "wasm" (bench run C)."""
import gc, json, sys, time, importlib.util
from pathlib import Path
wt = str(Path(__file__).resolve().parents[2])
root, name, mode = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
new_tokens = int(sys.argv[4]) if len(sys.argv) > 4 else 64
io = sys.argv[5] if len(sys.argv) > 5 else "plain"
sys.path.insert(0, f"{wt}/py_runtime")
import numpy as np
import nnwasm
from nnwasm.host import get_host
from nnwasm.wasm import plan as plan_module
from nnwasm.wasm.runner import WasmRunner
plan_module.SHARE_WEIGHTS = mode == "share"
spec = importlib.util.spec_from_file_location("bd", f"{wt}/bench/decoders/bench_decoders.py")
bd = importlib.util.module_from_spec(spec); spec.loader.exec_module(bd)
meta = json.loads((root / f"{name}.json").read_text())
host = get_host()
so = nnwasm.SessionOptions()
so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
t0 = time.perf_counter()
s = nnwasm.InferenceSession(str(root / meta["roles"]["decoder"]["file"]), so)
create = time.perf_counter() - t0
presents = set(meta["past_map"])


class Bound:
    """run() through IOBinding: presents stay on the wasm device and are fed back as OrtValues."""
    def get_outputs(self):
        return s.get_outputs()

    def run(self, _, feeds):
        b = s.io_binding()
        for k, v in feeds.items():
            if isinstance(v, nnwasm.OrtValue):
                b.bind_ortvalue_input(k, v)
            else:
                b.bind_cpu_input(k, np.asarray(v))
        names = [o.name for o in s.get_outputs()]
        for o in names:
            b.bind_output(o, "wasm" if o in presents else "cpu")
        s.run_with_iobinding(b)
        return [v if o in presents else v.numpy() for o, v in zip(names, b.get_outputs())]


r = bd.generate_py(meta, {"decoder": Bound() if io == "kept" else s}, root, new_tokens)
gc.collect(); host.drain()
rs = [o for o in gc.get_objects() if isinstance(o, WasmRunner) and o._finalizer.alive]
blocks = {id(b): b.size for x in rs for b in getattr(x, "_blocks", ())}
MB = 2 ** 20
out = {"model": name, "mode": mode, "io": io, "new_tokens": new_tokens,
       "alloc_peak_MB": round((host.call("nnw_allocated_peak") & 0xFFFFFFFF) / MB, 1),
       "alloc_now_MB": round((host.call("nnw_allocated_bytes") & 0xFFFFFFFF) / MB, 1),
       "linear_memory_MB": round(host.memory.data_len(host.store) / MB, 1),
       "plans": len(rs), "plan_weights_MB": round(sum(x.plan_bytes for x in rs) / MB, 1),
       "weights_blocks_MB": round(sum(blocks.values()) / MB, 1),
       "arenas_MB": round(sum(x.held_bytes() for x in rs) / MB, 1),
       "create_s": round(create, 2), "prefill_s": round(r["prefill_ms"] / 1e3, 2),
       "decode_tok_s": round(r["decode_steps"] / (r["decode_ms"] / 1e3), 1), "tokens": r["tokens"][:12]}
print(json.dumps(out))
