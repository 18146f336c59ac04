"""Build the generative model zoo: tiny decoders with a key/value cache and encoder-decoders, RANDOM
weights (no model hub), exported as people export them (Optimum, onnxruntime-genai's model builder,
torch.onnx), with a greedy generation by onnxruntime saved next to each for the tests to compare with.

    /work/main/.venv-genzoo/bin/python build_scripts/build_genzoo.py [--only NAME ...] [--force] [--list]
    (or: make genzoo; the venv's pins are build_scripts/requirements-genzoo.txt)

The genzoo lives outside git: $NNWASM_GENZOO_DIR, else ~/.cache/nnwasm/genzoo. A model whose
sidecar records this BUILDER_VERSION is not rebuilt. Per model NAME:
    NAME/                    the exporter's files (decoder_model_merged.onnx, encoder_model.onnx, ...)
    NAME.json                its sidecar: "kind" (decoder / encoder-decoder), "files" (role ->
                             ONNX file), per role its "inputs" (name, dtype, shape with symbolic
                             dims, "past": true for cache inputs) and "outputs", "past_map"
                             (present.* output -> past_key_values.* input fed back next step),
                             "dims" (a past input's symbolic dims other than batch and length),
                             "prompt", "encoder_inputs" (the encoder's seeded feeds, saved as
                             NAME/encoder.in.INPUT.bin) and
                             "reference": onnxruntime's greedy tokens and each step's logits row
                             (first 8 values, the argmax) for a glance without onnxruntime
The generation driver (`generate`) is here, without numpy at import, so the tests and the
builder run exactly the same feeds: prompt -> step 0 with an empty past (length 0) ->
STEPS steps of one token, each feeding back the previous step's present.* outputs.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

BUILDER_VERSION = 2
STEPS = 8
PROMPT = [5, 17, 300, 42, 9]   # token ids, < every model's vocab
VOCAB = 1000
# weights ~10x the usual init: greedy tokens then vary from step to step instead of repeating one id
INIT = 0.2
OPSET = 18   # Optimum's recommended minimum for these architectures


def genzoo_dir():
    return Path(os.environ.get("NNWASM_GENZOO_DIR") or Path.home() / ".cache" / "nnwasm" / "genzoo")


# --- configs (tiny, random weights) -------------------------------------------------------------

def _save(model, folder):
    import torch
    torch.manual_seed(0)
    model.eval()
    model.save_pretrained(folder, safe_serialization=True)
    return folder


def _causal(config_name, **kw):
    def make(folder):
        import torch
        import transformers
        torch.manual_seed(0)
        cfg = getattr(transformers, config_name)(vocab_size=VOCAB, bos_token_id=1, eos_token_id=2, pad_token_id=0, initializer_range=INIT, **kw)
        model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="eager")
        model.generation_config.max_length = 64
        return _save(model, folder)
    return make


def gpt2_config():
    return _causal("GPT2Config", n_embd=64, n_layer=2, n_head=4, n_positions=128)


def llama_config(**extra):
    return _causal("LlamaConfig", hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2, max_position_embeddings=128, tie_word_embeddings=False, **extra)


def qwen2_config():
    return _causal("Qwen2Config", hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2, max_position_embeddings=128, tie_word_embeddings=True,
                   use_sliding_window=False)


def whisper_config():
    def make(folder):
        import torch
        from transformers import WhisperConfig, WhisperForConditionalGeneration
        torch.manual_seed(0)
        cfg = WhisperConfig(vocab_size=VOCAB, num_mel_bins=16, d_model=64, encoder_layers=2, decoder_layers=2,
                            encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                            decoder_ffn_dim=128, max_source_positions=32, max_target_positions=64,
                            decoder_start_token_id=1, bos_token_id=1, eos_token_id=2, pad_token_id=0, init_std=INIT,
                            begin_suppress_tokens=None, suppress_tokens=None)
        return _save(WhisperForConditionalGeneration(cfg), folder)
    return make


def marian_config():
    def make(folder):
        import torch
        from transformers import MarianConfig, MarianMTModel
        torch.manual_seed(0)
        cfg = MarianConfig(vocab_size=VOCAB, decoder_vocab_size=VOCAB, d_model=64, encoder_layers=2,
                           decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
                           encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=128,
                           decoder_start_token_id=0, pad_token_id=0, eos_token_id=2, bos_token_id=1, init_std=INIT)
        return _save(MarianMTModel(cfg), folder)
    return make


# --- exporters ----------------------------------------------------------------------------------

def _keep(out, files):
    for f in list(out.iterdir()):   # keep the ONNX files the sidecar names (+ their external data)
        if not any(f.name.startswith(v) for v in files.values()):
            f.unlink() if f.is_file() else shutil.rmtree(f)
    return files


def optimum(make_config, task, files, **shapes):
    """Optimum's exporter (optimum-onnx), as `optimum-cli export onnx --task TASK`: a decoder is
    one model.onnx with past inputs (no If); an encoder-decoder is encoder_model.onnx +
    decoder_model_merged.onnx (If on use_cache_branch). `files` maps roles to files."""
    def build(out):
        from optimum.exporters.onnx import main_export
        with tempfile.TemporaryDirectory() as tmp:
            src = make_config(Path(tmp) / "src")
            main_export(str(src), out, task=task, opset=OPSET, do_validation=False, library_name="transformers",
                        **shapes)
        return _keep(out, files)
    return build


def optimum_merged(make_config):
    """A merged decoder as Optimum wrote them before optimum-onnx (and as the models transformers.js
    runs are): decoder_model.onnx (no past in) and decoder_with_past_model.onnx exported with
    Optimum's ONNX config for the architecture, fused by optimum.onnx.merge_decoders into one
    decoder_model_merged.onnx whose If on use_cache_branch picks the branch."""
    def build(out):
        from optimum.exporters.onnx.convert import export
        from optimum.exporters.tasks import TasksManager
        from optimum.onnx import merge_decoders
        from transformers import AutoModelForCausalLM
        with tempfile.TemporaryDirectory() as tmp:
            src = make_config(Path(tmp) / "src")
            model = AutoModelForCausalLM.from_pretrained(src, attn_implementation="eager").eval()
        ctor = TasksManager.get_exporter_config_constructor(
            model_type=model.config.model_type, exporter="onnx", task="text-generation-with-past",
            library_name="transformers")
        for f, past_in in [("decoder_model.onnx", False), ("decoder_with_past_model.onnx", True)]:
            export(model, ctor(model.config, task="text-generation", use_past=True, use_past_in_inputs=past_in),
                   out / f, opset=OPSET)
        merge_decoders(out / "decoder_model.onnx", out / "decoder_with_past_model.onnx",
                       save_path=out / "decoder_model_merged.onnx")
        return _keep(out, {"decoder": "decoder_model_merged.onnx"})
    return build


def _tokenizer(folder):
    """A word-level tokenizer of VOCAB made-up words (the genai builder saves the tokenizer it loads)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, **{f"w{i}": i for i in range(4, VOCAB)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                            unk_token="<unk>").save_pretrained(folder)


# onnxruntime-genai 0.18's builder imports two Qwen3.5 classes that transformers 4.57 lacks (it
# needs them only for Qwen3.5 models): stand-ins let it import, then it runs as `python -m`.
GENAI_SHIM = """
import runpy, transformers
for n in ("Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration"):
    if not hasattr(transformers, n):
        setattr(transformers, n, type(n, (), {}))
runpy.run_module("onnxruntime_genai.models.builder", run_name="__main__", alter_sys=True)
"""


def genai(precision):
    """onnxruntime-genai's model builder from a local folder (config + random weights)."""
    def build(out):
        import subprocess
        with tempfile.TemporaryDirectory() as tmp:
            # the builder iterates config.rope_scaling, which transformers 4.57 leaves None by default
            src = llama_config(rope_scaling={"rope_type": "default"})(Path(tmp) / "src")
            _tokenizer(src)
            cmd = [sys.executable, "-c", GENAI_SHIM, "-i", str(src), "-o", str(out),
                   "-p", precision, "-e", "cpu", "-c", str(Path(tmp) / "cache")]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode:
                raise RuntimeError(f"the genai builder failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        return _keep(out, {"decoder": "model.onnx"})
    return build


def fp16(build):
    """An fp32 export converted to float16 as transformers.js's fp16 models are made (Optimum
    refuses --dtype fp16 on CPU): onnxconverter-common's convert_float_to_float16 with
    keep_io_types False, so logits, past and present are float16 too; If branches included."""
    def convert(out):
        import onnx
        from onnxconverter_common import float16
        files = build(out)
        for f in files.values():
            m = float16.convert_float_to_float16(onnx.load(str(out / f)), keep_io_types=False)
            _fix_casts(m.graph)
            onnx.save(m, str(out / f))
        return files
    return convert


def _fix_casts(g):
    """onnxconverter-common retypes a Cast-to-float's output as float16 but leaves the Cast's `to`
    (onnxruntime then refuses the If): such Casts cast to float16, as transformers.js's converter
    writes them."""
    import onnx
    f16 = {v.name for v in list(g.value_info) + list(g.output)
           if v.type.tensor_type.elem_type == onnx.TensorProto.FLOAT16}
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                _fix_casts(a.g)
            if n.op_type == "Cast" and a.name == "to" and a.i == onnx.TensorProto.FLOAT and n.output[0] in f16:
                a.i = onnx.TensorProto.FLOAT16


# name -> (exporter, kind, ops it uses that other helpers are adding, a note)
GENZOO = {
    "gpt2_merged": (optimum_merged(gpt2_config()), "decoder", "Optimum merged decoder: If on use_cache_branch"),
    "llama_merged": (optimum_merged(llama_config()), "decoder",
                     "Optimum merged Llama: GQA (2 KV heads / 4 heads), RoPE, If on use_cache_branch"),
    "gpt2": (optimum(gpt2_config(), "text-generation-with-past", {"decoder": "model.onnx"}), "decoder",
             "single-file decoder without If (optimum-onnx's default): past + position_ids"),
    "qwen2": (optimum(qwen2_config(), "text-generation-with-past", {"decoder": "model.onnx"}), "decoder",
              "Optimum Qwen2, single file: GQA, RoPE, q/k/v biases"),
    "whisper_merged": (optimum(whisper_config(), "automatic-speech-recognition-with-past",
                               {"encoder": "encoder_model.onnx", "decoder": "decoder_model_merged.onnx"},
                               nb_max_frames=64),   # 2 x max_source_positions
                       "encoder-decoder", "Optimum Whisper: encoder + merged decoder with cross-attention past"),
    "marian_merged": (optimum(marian_config(), "text2text-generation-with-past",
                              {"encoder": "encoder_model.onnx", "decoder": "decoder_model_merged.onnx"}),
                      "encoder-decoder", "Optimum Marian: encoder + merged decoder"),
    "gpt2_merged_fp16": (fp16(optimum_merged(gpt2_config())), "decoder", "gpt2_merged in float16 (transformers.js's fp16)"),
    "llama_merged_fp16": (fp16(optimum_merged(llama_config())), "decoder", "llama_merged in float16, fp16 KV cache"),
    "whisper_merged_fp16": (fp16(optimum(whisper_config(), "automatic-speech-recognition-with-past",
                                         {"encoder": "encoder_model.onnx", "decoder": "decoder_model_merged.onnx"},
                                         nb_max_frames=64)), "encoder-decoder", "whisper_merged in float16"),
    "genai_llama_fp32": (genai("fp32"), "decoder", "onnxruntime-genai builder, fp32 cpu: GroupQueryAttention, "
                         "SimplifiedLayerNormalization, SkipSimplifiedLayerNormalization"),
    "genai_llama_int4": (genai("int4"), "decoder", "onnxruntime-genai builder, int4 cpu: + MatMulNBits"),
}

# symbolic dims of a past input other than batch (1) and the past length (0 at step 0)
DIMS = {"genai_llama_fp32": {"kv_cache_dim": 16}, "genai_llama_int4": {"kv_cache_dim": 16}}


# --- the generation driver (shared with tests/test_generative.py) -------------------------------

def describe(path):
    """Inputs and outputs of an ONNX file, read with onnx (builder side only)."""
    import onnx
    m = onnx.load(str(path), load_external_data=False)
    init = {i.name for i in m.graph.initializer}

    def vi(v):
        t = v.type.tensor_type
        dims = [d.dim_param if d.HasField("dim_param") else d.dim_value for d in t.shape.dim]
        return {"name": v.name, "dtype": onnx.helper.tensor_dtype_to_np_dtype(t.elem_type).name, "shape": dims}
    ins = [dict(vi(v), past=v.name.startswith("past_key_values")) for v in m.graph.input if v.name not in init]
    return ins, [vi(v) for v in m.graph.output]


def past_map(outputs, inputs):
    names = {i["name"] for i in inputs}
    return {o["name"]: o["name"].replace("present", "past_key_values", 1) for o in outputs
            if o["name"].startswith("present") and o["name"].replace("present", "past_key_values", 1) in names}


def encoder_feeds(meta):
    """The encoder's seeded input (Whisper: input_features; Marian: the prompt as input_ids)."""
    import numpy as np
    feeds = {}
    for i in meta["roles"]["encoder"]["inputs"]:
        if i["name"] == "input_features":
            shape = [1 if isinstance(d, str) else d for d in i["shape"]]
            feeds[i["name"]] = np.random.default_rng(0).standard_normal(shape).astype(i["dtype"])
        elif i["name"] == "input_ids":
            feeds[i["name"]] = np.array([PROMPT], np.int64)
        elif i["name"] == "attention_mask":
            feeds[i["name"]] = np.ones((1, len(PROMPT)), np.int64)
        else:
            raise ValueError(f"no feed for the encoder's input {i['name']!r}")
    return feeds


def generate(meta, run, steps=STEPS, on_step=None):
    """Greedy generation; `run(role, feeds) -> {output name: array}`. Returns the new token ids.
    on_step(step, feeds, outputs) sees every decoder step (the test compares there)."""
    import numpy as np
    dec = meta["roles"]["decoder"]
    ins = {i["name"]: i for i in dec["inputs"]}
    enc_out = None
    if "encoder" in meta["roles"]:
        efeeds = encoder_feeds(meta)
        enc_out = run("encoder", efeeds)
        enc_hidden = enc_out["last_hidden_state"]
        tokens = [meta["decoder_start_token_id"]]
    else:
        tokens = list(PROMPT)
    past, new, seen = None, [], 0
    for step in range(steps):
        ids = tokens if step == 0 else tokens[-1:]
        feeds = {}
        for name, i in ins.items():
            if name == "input_ids":
                feeds[name] = np.array([ids], np.int64)
            elif name == "attention_mask":
                feeds[name] = np.ones((1, seen + len(ids)), np.int64)
            elif name == "position_ids":
                feeds[name] = np.arange(seen, seen + len(ids), dtype=np.int64)[None]
            elif name == "use_cache_branch":
                feeds[name] = np.array([step > 0])
            elif name == "encoder_hidden_states":
                feeds[name] = enc_hidden
            elif name == "encoder_attention_mask":
                feeds[name] = efeeds["attention_mask"]
            elif i["past"]:
                if past is None:   # step 0: an empty past (length 0), as transformers.js feeds
                    dims = {"batch_size": 1, "batch": 1, **meta.get("dims", {})}
                    shape = [dims.get(d, 0) if isinstance(d, str) else d for d in i["shape"]]
                    feeds[name] = np.zeros(shape, i["dtype"])
                else:
                    feeds[name] = past[name]
            else:
                raise ValueError(f"no feed for the decoder's input {name!r}")
        outs = run("decoder", feeds)
        if on_step:
            on_step(step, feeds, outs)
        # the cross-attention past (".encoder.") is computed at step 0 only: a merged decoder's
        # cache branch outputs a dummy there, which the callers (Optimum, transformers.js) ignore
        past = {p: (past[p] if past is not None and ".encoder." in p else outs[o])
                for o, p in meta["past_map"].items()}
        seen += len(ids)
        nxt = int(outs["logits"][0, -1].argmax())
        tokens.append(nxt)
        new.append(nxt)
    return new


# --- building ------------------------------------------------------------------------------------

def ort_runner(folder, files):
    import onnxruntime
    so = onnxruntime.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    sessions = {r: onnxruntime.InferenceSession(str(folder / f), so, providers=["CPUExecutionProvider"])
                for r, f in files.items()}

    def run(role, feeds):
        s = sessions[role]
        return dict(zip([o.name for o in s.get_outputs()], s.run(None, feeds)))
    return run


def build_one(name, out):
    make, kind, note = GENZOO[name]
    folder = out / name
    t0 = time.perf_counter()
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        files = make(folder)
    roles = {}
    for role, f in files.items():
        ins, outs = describe(folder / f)
        roles[role] = {"file": f"{name}/{f}", "inputs": ins, "outputs": outs}
    meta = {"builder_version": BUILDER_VERSION, "name": name, "kind": kind, "note": note, "roles": roles,
            "past_map": past_map(roles["decoder"]["outputs"], roles["decoder"]["inputs"]),
            "prompt": PROMPT, "steps": STEPS, "dims": DIMS.get(name, {})}
    if kind == "encoder-decoder":
        cfg = json.loads((folder / "config.json").read_text()) if (folder / "config.json").exists() else {}
        meta["decoder_start_token_id"] = cfg.get("decoder_start_token_id", 1 if "whisper" in name else 0)
    if kind == "encoder-decoder":   # the encoder's feeds as raw little-endian bytes (Node reads them)
        meta["encoder_inputs"] = {}
        for n, a in encoder_feeds(meta).items():
            f = f"{name}/encoder.in.{n}.bin"
            a.astype(a.dtype.newbyteorder("<")).tofile(out / f)
            meta["encoder_inputs"][n] = {"dtype": a.dtype.name, "dims": list(a.shape), "file": f}
    steps = []

    def on_step(step, feeds, outs):
        row = outs["logits"][0, -1]
        steps.append({"step": step, "feeds": {n: list(a.shape) for n, a in feeds.items()},
                      "logits_head": [round(float(v), 6) for v in row[:8]], "argmax": int(row.argmax())})
    tokens = generate(meta, ort_runner(folder, files), on_step=on_step)
    meta["reference"] = {"tokens": tokens, "steps": steps}
    (out / f"{name}.json").write_text(json.dumps(meta, indent=1))
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    print(f"built {name} ({size >> 10} KiB, tokens {tokens}) in {time.perf_counter() - t0:.1f} s", flush=True)


def load_sidecar(name, out=None):
    """The sidecar of a built, up-to-date model, or None."""
    out = out or genzoo_dir()
    try:
        meta = json.loads((out / f"{name}.json").read_text())
    except (OSError, ValueError):
        return None
    if meta.get("builder_version") != BUILDER_VERSION or \
            not all((out / r["file"]).exists() for r in meta["roles"].values()):
        return None
    return meta


def ensure(names=None, force=False):
    out = genzoo_dir()
    out.mkdir(parents=True, exist_ok=True)
    for name in [n for n in GENZOO if n in (names or GENZOO)]:
        if force or load_sidecar(name, out) is None:
            build_one(name, out)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", choices=list(GENZOO), help="build only these")
    ap.add_argument("--force", action="store_true", help="rebuild even if up to date")
    ap.add_argument("--list", action="store_true", help="list the genzoo's models and exit")
    a = ap.parse_args()
    if a.list:
        for n, (_, kind, note) in GENZOO.items():
            print(f"{n:20s} {kind:16s} {note}")
        return
    t0 = time.perf_counter()
    out = ensure(a.only, a.force)
    print(f"genzoo in {out} ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
