"""Build the decoder speed benchmark's models (bench/decoders/bench_decoders.py, issue 15 item 8): decoders of
realistic size with RANDOM weights (no model hub), exported as people ship them.

    /work/main/.venv-genzoo/bin/python build_scripts/build_bench_decoders.py [--only NAME ...] [--force] [--list]

(the export venv: torch, transformers 4.57, optimum-onnx, onnxruntime-genai 0.18, gguf, sentencepiece;
the converter to GGUF is llama.cpp's convert_hf_to_gguf.py, taken from llama-cpp-python's sdist on
PyPI, `pip download --no-deps --no-binary :all: llama-cpp-python`, unpacked into the cache; it needs
`sentencepiece` in that venv.)

They live outside git: $NNWASM_BENCH_DECODERS_DIR, else ~/.cache/nnwasm/bench-decoders. A model whose
sidecar records this BUILDER_VERSION is not rebuilt. Source models (save_pretrained of a seeded random
config; kept in src/NAME):
    llama   Llama-style ~125M: hidden 768, 12 layers, 12 heads / 4 KV heads, MLP 2048, vocab 32000
            (+ a SentencePiece tokenizer.model of 32000 pieces written by hand: ids only matter here)
    gpt2    GPT-2 small size: n_embd 768, 12 layers, 12 heads, vocab 50257
    whisper Whisper base size: d_model 512, 6 + 6 layers, 8 heads, FFN 2048, 80 mel bins, vocab 51865
Per benchmark model NAME, a folder NAME/ with the files and NAME.json, its sidecar: "format" (onnx /
gguf), "family", "precision", "exporter", "roles" (decoder / encoder: file, inputs with dtype and
shape with symbolic dims and "past": true for cache inputs, outputs), "past_map" (present.* ->
past_key_values.* fed back), "external_data" (files next to the .onnx), "prompt" (PROMPT_LEN token
ids, the same for every runtime of a family), "new_tokens", and for Whisper "features" (a seeded
[1, 80, 3000] float32 file) and "decoder_prompt".
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILDER_VERSION = 1
PROMPT_LEN = 128
NEW_TOKENS = 64
LLAMA_CPP_PYTHON = "0.3.36"   # its sdist vendors llama.cpp with convert_hf_to_gguf.py


def out_dir():
    d = os.environ.get("NNWASM_BENCH_DECODERS_DIR")
    return Path(d) if d else Path.home() / ".cache" / "nnwasm" / "bench-decoders"


def prompt_ids(vocab, n=PROMPT_LEN):
    """Deterministic ids away from the special and byte tokens (both JS and Python read them from
    the sidecar, so this rule only has to be stable here)."""
    return [300 + (i * 7919 + 13) % (vocab - 400) for i in range(n)]


# --- source models ---------------------------------------------------------------------------------

def sentencepiece_model(path, vocab=32000):
    """A valid SentencePiece BPE model with `vocab` pieces (<unk>, <s>, </s>, 256 byte pieces, then
    made-up words): what Llama's converters read, with no training corpus."""
    from sentencepiece import sentencepiece_model_pb2 as pb
    m = pb.ModelProto()
    m.trainer_spec.model_type = pb.TrainerSpec.BPE
    m.trainer_spec.vocab_size = vocab
    m.trainer_spec.byte_fallback = True
    m.trainer_spec.unk_id, m.trainer_spec.bos_id, m.trainer_spec.eos_id, m.trainer_spec.pad_id = 0, 1, 2, -1
    m.normalizer_spec.name = "identity"
    m.normalizer_spec.add_dummy_prefix = True
    m.normalizer_spec.escape_whitespaces = True

    def add(piece, score, kind):
        p = m.pieces.add()
        p.piece, p.score, p.type = piece, score, kind
    add("<unk>", 0.0, pb.ModelProto.SentencePiece.UNKNOWN)
    add("<s>", 0.0, pb.ModelProto.SentencePiece.CONTROL)
    add("</s>", 0.0, pb.ModelProto.SentencePiece.CONTROL)
    for b in range(256):
        add(f"<0x{b:02X}>", 0.0, pb.ModelProto.SentencePiece.BYTE)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words, n = [], 0
    for c in letters:
        words.append(c)
        words.append("\u2581" + c)
    while len(words) < vocab - 259:   # two, then three letters, with and without the word mark
        s, k = "", n
        while True:
            s = letters[k % 26] + s
            k //= 26
            if k == 0:
                break
        n += 1
        if len(s) >= 2:
            words.append("\u2581" + s)
            words.append(s)
    for i, w in enumerate(words[:vocab - 259]):
        add(w, -float(i), pb.ModelProto.SentencePiece.NORMAL)
    assert len(m.pieces) == vocab, len(m.pieces)
    Path(path).write_bytes(m.SerializeToString())


def src_llama(folder):
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, LlamaTokenizer
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=32000, hidden_size=768, intermediate_size=2048, num_hidden_layers=12,
                      num_attention_heads=12, num_key_value_heads=4, max_position_embeddings=2048,
                      rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False,
                      # explicit default RoPE: onnxruntime-genai 0.18's builder iterates rope_scaling
                      rope_scaling={"rope_type": "default"},
                      bos_token_id=1, eos_token_id=2, torch_dtype="float32")
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager")
    model.eval().save_pretrained(folder, safe_serialization=True)
    sentencepiece_model(folder / "tokenizer.model")
    LlamaTokenizer(vocab_file=str(folder / "tokenizer.model"), legacy=False).save_pretrained(folder)
    return folder


def src_gpt2(folder):
    import torch
    from transformers import AutoModelForCausalLM, GPT2Config
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=50257, n_embd=768, n_layer=12, n_head=12, n_positions=1024)
    AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").eval().save_pretrained(folder)
    return folder


WHISPER_PROMPT = [50258, 50259, 50359, 50363]   # <|startoftranscript|><|en|><|transcribe|><|notimestamps|>


def src_whisper(folder):
    import torch
    from transformers import WhisperConfig, WhisperForConditionalGeneration
    torch.manual_seed(0)
    cfg = WhisperConfig(vocab_size=51865, num_mel_bins=80, d_model=512, encoder_layers=6, decoder_layers=6,
                        encoder_attention_heads=8, decoder_attention_heads=8, encoder_ffn_dim=2048,
                        decoder_ffn_dim=2048, max_source_positions=1500, max_target_positions=448,
                        decoder_start_token_id=50258, bos_token_id=50257, eos_token_id=50257, pad_token_id=50257,
                        begin_suppress_tokens=None, suppress_tokens=None)
    WhisperForConditionalGeneration(cfg).eval().save_pretrained(folder)
    return folder


SOURCES = {"llama": src_llama, "gpt2": src_gpt2, "whisper": src_whisper}


def source(name, out):
    folder = out / "src" / name
    if not (folder / "config.json").exists() or not (folder / ".done").exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        SOURCES[name](folder)
        (folder / ".done").write_text(str(BUILDER_VERSION))
    return folder


# --- exporters -------------------------------------------------------------------------------------

DECODER_NAMES = ("decoder_model_merged.onnx", "model.onnx", "decoder_model.onnx")


def optimum(family, task):
    """Optimum's exporter (optimum-onnx), as `optimum-cli export onnx --task TASK`. optimum-onnx 0.1.0
    writes one decoder with past inputs, model.onnx (decoder_model.onnx beside encoder_model.onnx for
    Whisper), that takes an empty past at the first step: no If and no use_cache_branch; older Optimum
    wrote decoder_model_merged.onnx (with the If), which is taken first if present."""
    def build(out, folder):
        from optimum.exporters.onnx import main_export
        main_export(str(source(family, out)), folder, task=task, opset=18, do_validation=False,
                    library_name="transformers")
        names = {p.name for p in folder.iterdir()}
        files = {"decoder": next(n for n in DECODER_NAMES if n in names)}
        if "encoder_model.onnx" in names:
            files["encoder"] = "encoder_model.onnx"
        keep = set(files.values())
        for f in list(folder.iterdir()):   # the other exported graphs (decoder_with_past_model.onnx ...)
            if f.suffix in (".onnx", ".onnx_data") and not any(f.name.startswith(k) for k in keep):
                f.unlink()
        return files
    return build


# onnxruntime-genai 0.18's builder imports model classes (Qwen3.5, ...) that transformers 4.57 does
# not have yet, though a Llama never touches them: stand-ins for the missing names, then the builder
# exactly as `python -m onnxruntime_genai.models.builder ARGS` runs it.
GENAI_SHIM = """
import runpy, sys, transformers
MISSING = {"Gemma3ForConditionalGeneration", "Lfm2VlForConditionalGeneration", "Mistral3ForConditionalGeneration",
           "Qwen2_5_VLForConditionalGeneration", "Qwen3_5ForConditionalGeneration",
           "Qwen3_5MoeForConditionalGeneration", "Qwen3VLForConditionalGeneration"}
lazy = type(transformers)
real = lazy.__getattr__
def getattr_(self, name):
    try:
        return real(self, name)
    except (AttributeError, ImportError):
        if name in MISSING:
            return type(name, (), {})
        raise
lazy.__getattr__ = getattr_
sys.argv[0] = "builder"
runpy.run_module("onnxruntime_genai.models.builder", run_name="__main__", alter_sys=True)
"""


def genai(precision, ep):
    """onnxruntime-genai's model builder, as `python -m onnxruntime_genai.models.builder`."""
    def build(out, folder):
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [sys.executable, "-c", GENAI_SHIM, "-i", str(source("llama", out)),
                   "-o", str(folder), "-p", precision, "-e", ep, "-c", tmp]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode:
                raise RuntimeError(f"the genai builder failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        return {"decoder": "model.onnx"}
    return build


def _load(path):
    import onnx
    return onnx.load(str(path))


def _save(model, path):
    import onnx
    big = model.ByteSize() > 1_900_000_000
    onnx.save(model, str(path), save_as_external_data=big, location=path.name + "_data" if big else None)


def nbits_of(base, bits=4, block=32):
    """Optimum's export put through onnxruntime.quantization's MatMulNBitsQuantizer (RTN, symmetric)."""
    def build(out, folder):
        from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
        meta = ensure_one(base, out)
        files = {r: Path(v["file"]).name for r, v in meta["roles"].items()}
        for role, f in files.items():
            q = MatMulNBitsQuantizer(_load(out / base / f), block_size=block, is_symmetric=True, bits=bits)
            q.process()
            _save(q.model.model, folder / f)
        return files
    return build


def dynamic_of(base):
    def build(out, folder):
        from onnxruntime.quantization import QuantType, quantize_dynamic
        meta = ensure_one(base, out)
        files = {r: Path(v["file"]).name for r, v in meta["roles"].items()}
        for role, f in files.items():
            quantize_dynamic(str(out / base / f), str(folder / f), weight_type=QuantType.QInt8)
        return files
    return build


# --- GGUF --------------------------------------------------------------------------------------------

def llama_cpp_tree(out):
    """llama.cpp's convert_hf_to_gguf.py and its gguf-py, from llama-cpp-python's sdist on PyPI."""
    tree = out / "tools" / f"llama_cpp_python-{LLAMA_CPP_PYTHON}"
    script = tree / "vendor" / "llama.cpp" / "convert_hf_to_gguf.py"
    if script.exists():
        return script
    dl = out / "tools" / "sdist"
    dl.mkdir(parents=True, exist_ok=True)
    sdist = next(dl.glob("llama_cpp_python-*.tar.gz"), None)
    if sdist is None:
        # pip download builds the sdist's metadata (scikit-build-core): slow but the ordinary client
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                        f"llama-cpp-python=={LLAMA_CPP_PYTHON}", "-d", str(dl)], check=True)
        sdist = next(dl.glob("llama_cpp_python-*.tar.gz"))
    with tarfile.open(sdist) as t:
        members = [m for m in t.getmembers() if "/vendor/llama.cpp/" in m.name and
                   any(k in m.name for k in ("/gguf-py/", "/conversion/", "/convert_hf_to_gguf.py"))]
        t.extractall(out / "tools", members=members, filter="data")
    return script


def gguf_convert(outtype):
    """llama.cpp's converter: f32 and q8_0 directly; q4_0 is not one of its out types (llama.cpp
    makes it with the C++ llama-quantize), so q4_0 re-quantizes the f32 file's 2-D weights with
    gguf-py's Q4_0 (the reference quantize_row_q4_0's rounding), every one of them, token_embd and
    output included, the norms staying f32 (llama-quantize would keep output.weight at q6_K)."""
    def build(out, folder):
        script = llama_cpp_tree(out)
        dst = folder / f"model-{outtype}.gguf"
        if outtype == "q4_0":
            f32 = ensure_one("llama_gguf_f32", out)
            requantize(out / f32["roles"]["decoder"]["file"], dst, "Q4_0")
        else:
            env = dict(os.environ, PYTHONPATH=str(script.parent / "gguf-py"), NO_LOCAL_GGUF="")
            proc = subprocess.run([sys.executable, str(script), str(source("llama", out)), "--outtype", outtype,
                                   "--outfile", str(dst)], capture_output=True, text=True, env=env)
            if proc.returncode:
                raise RuntimeError(f"convert_hf_to_gguf failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        return {"decoder": dst.name}
    return build


def requantize(src, dst, qtype):
    import numpy as np
    import gguf
    r = gguf.GGUFReader(str(src))
    arch = r.fields["general.architecture"]
    arch = bytes(arch.parts[arch.data[0]]).decode()
    w = gguf.GGUFWriter(str(dst), arch)
    for name, field in r.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        vt = field.types[0]
        if name == "general.file_type":
            w.add_uint32(name, int(gguf.LlamaFileType.MOSTLY_Q4_0))
            continue
        if vt == gguf.GGUFValueType.ARRAY:
            sub = field.types[-1]
            vals = [bytes(field.parts[i]).decode("utf-8", "replace") if sub == gguf.GGUFValueType.STRING
                    else field.parts[i].tolist()[0] for i in field.data]
            w.add_key_value(name, vals, vt, sub_type=sub)
        elif vt == gguf.GGUFValueType.STRING:
            w.add_key_value(name, bytes(field.parts[field.data[0]]).decode("utf-8", "replace"), vt)
        else:
            w.add_key_value(name, field.parts[field.data[0]].tolist()[0], vt)
    q = getattr(gguf.GGMLQuantizationType, qtype)
    for t in r.tensors:
        data = np.asarray(t.data)
        shape = [int(d) for d in reversed(t.shape.tolist())]   # numpy order
        data = data.reshape(shape)
        if len(shape) == 2 and t.tensor_type == gguf.GGMLQuantizationType.F32 and shape[-1] % 32 == 0:
            qd = gguf.quants.quantize(data, q)
            w.add_tensor(t.name, qd, raw_shape=qd.shape, raw_dtype=q)
        else:
            w.add_tensor(t.name, data)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# --- the models ------------------------------------------------------------------------------------

# name -> (build, family, format, precision, exporter)
MODELS = {
    "llama_genai_fp32": (genai("fp32", "cpu"), "llama", "onnx", "fp32", "onnxruntime-genai builder -p fp32 -e cpu"),
    "llama_genai_int4": (genai("int4", "cpu"), "llama", "onnx", "int4", "onnxruntime-genai builder -p int4 -e cpu"),
    "llama_genai_int4_webgpu": (genai("int4", "webgpu"), "llama", "onnx", "int4",
                                "onnxruntime-genai builder -p int4 -e webgpu"),
    "llama_optimum_fp32": (optimum("llama", "text-generation-with-past"), "llama", "onnx", "fp32",
                           "Optimum text-generation-with-past (one decoder with past)"),
    "llama_optimum_int4": (nbits_of("llama_optimum_fp32"), "llama", "onnx", "int4",
                           "Optimum's decoder + MatMulNBitsQuantizer (4 bits, block 32, symmetric)"),
    "llama_optimum_int8": (dynamic_of("llama_optimum_fp32"), "llama", "onnx", "int8",
                           "Optimum's decoder + quantize_dynamic (QInt8)"),
    "llama_gguf_f32": (gguf_convert("f32"), "llama", "gguf", "f32", "convert_hf_to_gguf.py --outtype f32"),
    "llama_gguf_q8_0": (gguf_convert("q8_0"), "llama", "gguf", "q8_0", "convert_hf_to_gguf.py --outtype q8_0"),
    "llama_gguf_q4_0": (gguf_convert("q4_0"), "llama", "gguf", "q4_0",
                        "the f32 GGUF re-quantized with gguf-py's Q4_0 (all 2-D weights)"),
    "gpt2_fp32": (optimum("gpt2", "text-generation-with-past"),
                  "gpt2", "onnx", "fp32", "Optimum text-generation-with-past (one decoder with past)"),
    "gpt2_int8": (dynamic_of("gpt2_fp32"), "gpt2", "onnx", "int8", "Optimum's decoder + quantize_dynamic (QInt8)"),
    "whisper_fp32": (optimum("whisper", "automatic-speech-recognition-with-past"),
                     "whisper", "onnx", "fp32", "Optimum automatic-speech-recognition-with-past"),
}
VOCAB = {"llama": 32000, "gpt2": 50257, "whisper": 51865}
HEAD_DIM = 64   # of all three (768 / 12, 512 / 8): genai names it "kv_cache_dim" in the past's shape


def describe(path):
    import onnx
    m = onnx.load(str(path), load_external_data=False)
    init = {i.name for i in m.graph.initializer}

    def vi(v):
        t = v.type.tensor_type
        dims = [d.dim_param if d.HasField("dim_param") else d.dim_value for d in t.shape.dim]
        return {"name": v.name, "dtype": onnx.helper.tensor_dtype_to_np_dtype(t.elem_type).name, "shape": dims}
    ins = [dict(vi(v), past=v.name.startswith("past_key_values")) for v in m.graph.input if v.name not in init]
    ops = sorted({f"{n.domain + '.' if n.domain not in ('', 'ai.onnx') else ''}{n.op_type}" for n in m.graph.node})
    return ins, [vi(v) for v in m.graph.output], ops


def add_past(meta, head_dim=HEAD_DIM):
    """The decoder's "past_map" (present.* output -> past_key_values.* input) and each past input's
    "empty" shape for the first step: batch 1, lengths 0, the head size (a symbolic dim in genai's
    models, "kv_cache_dim") as head_dim."""
    dec = meta["roles"]["decoder"]
    for i in dec["inputs"]:
        if i["past"]:
            i["empty"] = [(1 if "batch" in d else 0 if ("sequence" in d or "length" in d) else head_dim)
                          if isinstance(d, str) else d for d in i["shape"]]
    names = {i["name"] for i in dec["inputs"]}
    meta["past_map"] = {o["name"]: o["name"].replace("present", "past_key_values", 1) for o in dec["outputs"]
                        if o["name"].startswith("present") and o["name"].replace("present", "past_key_values", 1) in names}
    return meta


def ensure_one(name, out, force=False):
    side = out / f"{name}.json"
    if side.exists() and not force:
        meta = json.loads(side.read_text())
        if meta.get("builder_version") == BUILDER_VERSION:
            return meta
    build, family, fmt, precision, exporter = MODELS[name]
    folder = out / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    t0 = time.perf_counter()
    print(f"building {name} ...", flush=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        files = build(out, folder)
    meta = {"builder_version": BUILDER_VERSION, "name": name, "family": family, "format": fmt,
            "precision": precision, "exporter": exporter, "roles": {}, "prompt_len": PROMPT_LEN,
            "new_tokens": NEW_TOKENS, "vocab": VOCAB[family]}
    for role, f in files.items():
        entry = {"file": f"{name}/{f}"}
        if fmt == "onnx":
            ins, outs, ops = describe(folder / f)
            ext = sorted(p.name for p in folder.iterdir()
                         if p.name.startswith(f) and p.name != f and not p.name.endswith(".onnx"))
            entry.update(inputs=ins, outputs=outs, ops=ops, external_data=ext)
        entry["bytes"] = sum(p.stat().st_size for p in folder.iterdir() if p.name.startswith(f))
        meta["roles"][role] = entry
    if fmt == "onnx":
        add_past(meta)
    if family == "whisper":
        import numpy as np
        feats = np.random.default_rng(0).standard_normal((1, 80, 3000)).astype(np.float32)
        (folder / "input_features.bin").write_bytes(feats.tobytes())
        meta["features"] = {"file": f"{name}/input_features.bin", "dtype": "float32", "dims": [1, 80, 3000]}
        meta["prompt"] = WHISPER_PROMPT
        meta["prompt_len"] = len(WHISPER_PROMPT)
    else:
        meta["prompt"] = prompt_ids(VOCAB[family])
    meta["build_s"] = round(time.perf_counter() - t0, 1)
    side.write_text(json.dumps(meta, indent=1))
    print(f"  {name}: {meta['build_s']} s, {sum(r['bytes'] for r in meta['roles'].values()) / 1e6:.0f} MB", flush=True)
    return meta


def ensure(names=None, force=False):
    out = out_dir()
    out.mkdir(parents=True, exist_ok=True)
    built, failed = {}, {}
    for name in names or MODELS:
        try:
            built[name] = ensure_one(name, out, force)
        except Exception as e:   # one exporter's failure must not stop the others
            failed[name] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            print(f"  {name} FAILED: {failed[name]}", flush=True)
    return built, failed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    if a.list:
        for n, (_, fam, fmt, prec, exp) in MODELS.items():
            print(f"{n:26} {fam:8} {fmt:5} {prec:5} {exp}")
        return
    _, failed = ensure(a.only, a.force)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
