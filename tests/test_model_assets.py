"""The committed demo assets: the EfficientNet-Lite0 ONNX file stays within the ops nnwasm
targets, its recipe and labels agree with it, and onnxruntime (the oracle) classifies the two
photos correctly through tests/imagenet_fixture.py."""
import json

import numpy as np
import onnx
import onnxruntime
import pytest
from PIL import Image, UnidentifiedImageError

import imagenet_fixture

ALLOWED_OPS = {"Conv", "Clip", "Relu", "Add", "Mul", "Sigmoid", "GlobalAveragePool", "ReduceMean",
               "Flatten", "Reshape", "Gemm", "MatMul", "Concat", "Softmax", "MaxPool", "AveragePool"}
ESPRESSO = 967
CATS = {281, 282, 285}  # tabby, tiger cat, Egyptian cat


@pytest.fixture(scope="module")
def config():
    return imagenet_fixture.load_config()


@pytest.fixture(scope="module")
def model(config):
    return onnx.load(str(config["dir"] / config["model"]))


@pytest.fixture(scope="module")
def session(config):
    return onnxruntime.InferenceSession(str(config["dir"] / config["model"]),
                                        providers=["CPUExecutionProvider"])


def probabilities(session, config, photo):
    x = imagenet_fixture.preprocess(config["dir"] / photo, config)
    logits = session.run([config["output"]], {config["input"]: x})[0]
    assert logits.shape == (1, 1000)
    z = logits[0].astype(np.float64)
    p = np.exp(z - z.max())
    return p / p.sum()


def dims(value_info):
    return [d.dim_value if d.HasField("dim_value") else d.dim_param
            for d in value_info.type.tensor_type.shape.dim]


def test_ops_are_the_ones_nnwasm_targets(model):
    ops = {n.op_type for n in model.graph.node}
    assert ops <= ALLOWED_OPS, f"unexpected ops: {sorted(ops - ALLOWED_OPS)}"
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 13)]
    assert all(n.domain == "" for n in model.graph.node)


def test_model_is_static_and_self_contained(model):
    inits = {t.name for t in model.graph.initializer}
    assert all(t.data_location == onnx.TensorProto.DEFAULT for t in model.graph.initializer)
    for node in model.graph.node:
        if node.op_type == "Clip":
            assert len(node.input) == 3 and set(node.input[1:]) <= inits, node.name
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    for vi in [*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output]:
        assert all(isinstance(d, int) and d > 0 for d in dims(vi)), f"{vi.name}: {dims(vi)}"
    onnx.checker.check_model(model)


def test_config_agrees_with_model_and_labels(config, model):
    names = imagenet_fixture.labels(config)
    (inp,), (out,) = model.graph.input, model.graph.output
    assert (inp.name, dims(inp)) == (config["input"], [1, 3, config["size"], config["size"]])
    assert inp.type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    assert (out.name, dims(out)) == (config["output"], [1, len(names)])
    assert len(names) == 1000 and names[ESPRESSO] == "espresso"
    assert "tabby" in names[281]


@pytest.mark.parametrize("photo", ["coffee.png", "chelsea.png"])
def test_preprocess_shape_and_range(config, photo):
    x = imagenet_fixture.preprocess(config["dir"] / photo, config)
    assert x.shape == (1, 3, 224, 224) and x.dtype == np.float32 and x.flags.c_contiguous
    lo = (0 - max(config["mean"])) / min(config["std"])
    hi = (255 - min(config["mean"])) / min(config["std"])
    assert lo <= x.min() < x.max() <= hi


def test_preprocess_crops_the_centre_and_normalizes(config, tmp_path):
    # 512x256: the shorter side is already 256, so the crop spans x 144..367 and the
    # black/white edge at x=256 lands at column 112.
    img = np.zeros((256, 512, 3), np.uint8)
    img[:, 256:] = (255, 128, 0)
    Image.fromarray(img).save(tmp_path / "halves.png")
    x = imagenet_fixture.preprocess(tmp_path / "halves.png", config)
    mean, std = np.array(config["mean"]), np.array(config["std"])
    left, right = (0 - mean) / std, (np.array([255, 128, 0]) - mean) / std
    np.testing.assert_allclose(x[0, :, :, :112], np.broadcast_to(left[:, None, None], (3, 224, 112)), atol=1e-6)
    np.testing.assert_allclose(x[0, :, :, 112:], np.broadcast_to(right[:, None, None], (3, 224, 112)), atol=1e-6)


def test_coffee_is_espresso(session, config):
    p = probabilities(session, config, "coffee.png")
    assert int(np.argmax(p)) == ESPRESSO
    assert p[ESPRESSO] > 0.9  # 0.957 measured with the committed recipe; 0.84 with ImageNet mean/std


def test_chelsea_is_a_cat(session, config):
    p = probabilities(session, config, "chelsea.png")
    assert int(np.argmax(p)) in CATS
    assert p[sorted(CATS)].sum() > 0.85  # 0.914 measured


def test_load_config_rejects_bad_fields(tmp_path):
    good = json.loads(imagenet_fixture.CONFIG_PATH.read_text())
    for key, value in [("scale", "0..65535"), ("layout", "NHWC"), ("mean", [127.0]),
                       ("std", [128.0, 0.0, 128.0]), ("size", "224"), ("resize", 100)]:
        path = tmp_path / f"{key}.json"
        path.write_text(json.dumps({**good, key: value}))
        with pytest.raises(ValueError, match=key if key != "resize" else "size <= resize"):
            imagenet_fixture.load_config(path)
    missing = {k: v for k, v in good.items() if k != "labels"}
    (tmp_path / "missing.json").write_text(json.dumps(missing))
    with pytest.raises(ValueError, match="labels"):
        imagenet_fixture.load_config(tmp_path / "missing.json")


def test_preprocess_rejects_a_non_image(config, tmp_path):
    (tmp_path / "notes.png").write_text("not a picture")
    with pytest.raises(UnidentifiedImageError):
        imagenet_fixture.preprocess(tmp_path / "notes.png", config)
