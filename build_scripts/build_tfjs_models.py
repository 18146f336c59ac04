"""Builds tiny random-weight models in transformers.js's layout, offline, for
tests/test_transformers_js.py.

Run with the export venv (torch, transformers, optimum-onnx, onnxruntime, onnxconverter-common):

    /work/main/.venv-genzoo/bin/python build_scripts/build_tfjs_models.py [--out DIR] [--only NAME ...]

DIR defaults to $NNWASM_TFJS_DIR or ~/.cache/nnwasm/tfjs-models. Each model is a folder
transformers.js opens with `env.localModelPath = DIR` and `env.allowRemoteModels = false`:

    DIR/<name>/config.json, generation_config.json (decoders), tokenizer.json,
        tokenizer_config.json (text), preprocessor_config.json (image, audio),
        onnx/<file>.onnx, onnx/<file>_quantized.onnx, onnx/<file>_fp16.onnx

| name | task | files |
| --- | --- | --- |
| bert | feature-extraction | model |
| vit | image-classification | model |
| gpt2 | text-generation | model (with past key values) |
| whisper | automatic-speech-recognition | encoder_model, decoder_model_merged |

Weights are random (seeded); tokenizers are built from made-up vocabularies with the
`tokenizers` package. Nothing is downloaded. A model already built (its DONE file names this
script's digest) is kept.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

SEED = 1234
OPSET = 17
WORDS = ("the a an of to in on and is was it for with as by at from this that be are "
         "cat dog bird fish tree house car road sun moon star sky sea river hill stone "
         "red blue green small big old new fast slow warm cold good bad happy quiet loud "
         "runs jumps sings reads walks sleeps eats looks finds makes sees hears").split()


def default_dir() -> Path:
    return Path(os.environ.get("NNWASM_TFJS_DIR") or Path.home() / ".cache" / "nnwasm" / "tfjs-models")


def _corpus():
    import random
    rng = random.Random(SEED)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12))) + "." for _ in range(400)]


def _wordpiece_tokenizer():
    """A BERT WordPiece tokenizer over the made-up vocabulary (with ## pieces of each word)."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, decoders
    from transformers import BertTokenizerFast
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    pieces = sorted({w for w in WORDS} | {"##" + w[i:] for w in WORDS for i in range(1, len(w))}
                    | set("abcdefghijklmnopqrstuvwxyz.,!?") | {"##" + c for c in "abcdefghijklmnopqrstuvwxyz"})
    vocab = {tok: i for i, tok in enumerate(specials + pieces)}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    tok.decoder = decoders.WordPiece()
    return BertTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                             sep_token="[SEP]", mask_token="[MASK]", model_max_length=64), len(vocab)


def _bpe_tokenizer(specials, vocab_size):
    """A byte-level BPE trained on the made-up corpus (GPT-2 style), specials first."""
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(_corpus(), trainer)
    return tok


def _export(model, tmp: Path, task: str, onnx_dir: Path, renames: dict[str, str]):
    """save_pretrained + Optimum's exporter, then the exported files moved to onnx/<new name>."""
    from optimum.exporters.onnx import main_export
    src, out = tmp / "pt", tmp / "onnx"
    model.save_pretrained(src)
    main_export(str(src), output=str(out), task=task, opset=OPSET, do_validation=False, library_name="transformers")
    onnx_dir.mkdir(parents=True, exist_ok=True)
    for old, new in renames.items():
        shutil.move(out / f"{old}.onnx", onnx_dir / f"{new}.onnx")
    return src


def _all_nodes(graph):
    for node in graph.node:
        yield node
        for attr in node.attribute:
            for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                yield from _all_nodes(sub)


def _variants(onnx_dir: Path, names):
    """model_quantized.onnx (dynamic int8, as transformers.js's q8) and model_fp16.onnx."""
    import onnx
    from onnxconverter_common import float16
    from onnxruntime.quantization import QuantType, quantize_dynamic
    for name in names:
        src = onnx_dir / f"{name}.onnx"
        quantize_dynamic(str(src), str(onnx_dir / f"{name}_quantized.onnx"), weight_type=QuantType.QUInt8)
        m16 = float16.convert_float_to_float16(onnx.load(str(src)), keep_io_types=False, disable_shape_infer=False)
        # The converter leaves Cast(to=float) nodes (attention masks) as they are, whose outputs
        # then meet float16 tensors: every float in the model is float16 now, so are they.
        for node in _all_nodes(m16.graph):
            for attr in node.attribute:
                if node.op_type == "Cast" and attr.name == "to" and attr.i == onnx.TensorProto.FLOAT:
                    attr.i = onnx.TensorProto.FLOAT16
        onnx.save(m16, str(onnx_dir / f"{name}_fp16.onnx"))


def build_bert(folder: Path, tmp: Path):
    import torch
    from transformers import BertConfig, BertModel
    tokenizer, vocab = _wordpiece_tokenizer()
    torch.manual_seed(SEED)
    config = BertConfig(vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=64)
    _export(BertModel(config).eval(), tmp, "feature-extraction", folder / "onnx", {"model": "model"})
    _variants(folder / "onnx", ["model"])
    config.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def build_vit(folder: Path, tmp: Path):
    import torch
    from transformers import ViTConfig, ViTForImageClassification
    torch.manual_seed(SEED)
    labels = ["cat", "dog", "bird", "fish", "tree", "house", "car", "boat"]
    config = ViTConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                       intermediate_size=64, num_labels=len(labels), initializer_range=0.3,
                       id2label=dict(enumerate(labels)), label2id={l: i for i, l in enumerate(labels)})
    _export(ViTForImageClassification(config).eval(), tmp, "image-classification", folder / "onnx", {"model": "model"})
    _variants(folder / "onnx", ["model"])
    config.save_pretrained(folder)
    # ViTImageProcessor's own save_pretrained needs PIL, which the export venv lacks: its JSON by hand.
    (folder / "preprocessor_config.json").write_text(json.dumps({
        "image_processor_type": "ViTImageProcessor", "do_resize": True, "size": {"height": 32, "width": 32},
        "resample": 2, "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True,
        "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]}, indent=2))


def build_gpt2(folder: Path, tmp: Path):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast, GenerationConfig
    tok = _bpe_tokenizer(["<|endoftext|>"], 300)
    tokenizer = GPT2TokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                                  unk_token="<|endoftext|>", model_max_length=128)
    torch.manual_seed(SEED)
    eos = tok.token_to_id("<|endoftext|>")
    config = GPT2Config(vocab_size=tok.get_vocab_size(), n_positions=128, n_embd=32, n_layer=2, n_head=4, initializer_range=0.3,
                        bos_token_id=eos, eos_token_id=eos)
    _export(GPT2LMHeadModel(config).eval(), tmp, "text-generation-with-past", folder / "onnx", {"model": "model"})
    _variants(folder / "onnx", ["model"])
    config.save_pretrained(folder)
    GenerationConfig(bos_token_id=eos, eos_token_id=eos).save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def build_whisper(folder: Path, tmp: Path):
    import torch
    from transformers import (GenerationConfig, WhisperConfig, WhisperFeatureExtractor,
                              WhisperForConditionalGeneration, WhisperTokenizerFast)
    specials = ["<|endoftext|>", "<|startoftranscript|>", "<|en|>", "<|transcribe|>", "<|translate|>",
                "<|nocaptions|>", "<|notimestamps|>"]
    # Whisper's decoding reads every id above <|notimestamps|> as a timestamp: the text tokens
    # come first, then the specials, <|notimestamps|> last (as in Whisper's own vocabulary).
    tok = _bpe_tokenizer(specials[:1], 300)
    tok.add_special_tokens(specials[1:])
    ids = {s: tok.token_to_id(s) for s in specials}
    assert ids["<|notimestamps|>"] == tok.get_vocab_size() - 1, ids
    tokenizer = WhisperTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                                     unk_token="<|endoftext|>", pad_token="<|endoftext|>", model_max_length=64)
    torch.manual_seed(SEED)
    config = WhisperConfig(vocab_size=tok.get_vocab_size(), num_mel_bins=80, d_model=32, encoder_layers=2,
                           decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
                           encoder_ffn_dim=64, decoder_ffn_dim=64, init_std=0.3, max_source_positions=1500,
                           max_target_positions=64, pad_token_id=ids["<|endoftext|>"],
                           bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|endoftext|>"],
                           decoder_start_token_id=ids["<|startoftranscript|>"], suppress_tokens=[],
                           begin_suppress_tokens=None)
    _export(WhisperForConditionalGeneration(config).eval(), tmp, "automatic-speech-recognition-with-past",
            folder / "onnx", {"encoder_model": "encoder_model", "decoder_model_merged": "decoder_model_merged"})
    _variants(folder / "onnx", ["encoder_model", "decoder_model_merged"])
    config.save_pretrained(folder)
    GenerationConfig(decoder_start_token_id=ids["<|startoftranscript|>"], bos_token_id=ids["<|endoftext|>"],
                     eos_token_id=ids["<|endoftext|>"], pad_token_id=ids["<|endoftext|>"],
                     no_timestamps_token_id=ids["<|notimestamps|>"], is_multilingual=False,
                     max_length=64, begin_suppress_tokens=[],
                     suppress_tokens=[ids[s] for s in specials if s != "<|notimestamps|>"]).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    WhisperFeatureExtractor(feature_size=80).save_pretrained(folder)


BUILDERS = {"bert": build_bert, "vit": build_vit, "gpt2": build_gpt2, "whisper": build_whisper}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=default_dir())
    parser.add_argument("--only", nargs="*", choices=sorted(BUILDERS), default=sorted(BUILDERS))
    parser.add_argument("--force", action="store_true", help="rebuild models already built")
    args = parser.parse_args(argv)
    digest = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
    for name in args.only:
        folder = args.out / name
        if not args.force and (folder / "DONE").is_file() and (folder / "DONE").read_text().strip() == digest:
            print(f"{name}: up to date in {folder}")
            continue
        shutil.rmtree(folder, ignore_errors=True)
        with tempfile.TemporaryDirectory() as tmp:
            BUILDERS[name](folder, Path(tmp))
        (folder / "DONE").write_text(digest + "\n")
        files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
        print(f"{name}: wrote {folder}: {', '.join(files)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
