"""Data movement on kernels.wasm (gather, gather_elements, gather_axes, resize_linear): Gather and
GatherElements with run-time indices, Slice, Expand, Tile, Split, Pad, DepthToSpace/SpaceToDepth,
Resize and Upsample, each against the numpy provider and onnxruntime with the WASM provider alone."""
import numpy as np
import pytest

import nnwasm
from model_builders import graph_model, rand
from onnx import helper
from test_wasm_ops import WASM_ONLY, check, wasm_only_options


def typed(shape, dtype, seed=0):
    x = np.asarray(rand(*shape, seed=seed) * 10)
    return np.asarray(x > 0 if dtype == np.bool_ else x.astype(dtype))


def node_model(op, inputs, inits=None, opset=13, n_out=1, **attrs):
    """One node whose inputs are the graph inputs `inputs` (a dict) then the initializers `inits`."""
    inits = inits or {}
    names = [*inputs, *inits]
    outs = [f"Y{i}" for i in range(n_out)]
    return graph_model([helper.make_node(op, names, outs, **attrs)], inputs, outs, inits, opset=opset)


# --- Gather, GatherElements ------------------------------------------------------------------------

@pytest.mark.parametrize("xs,idx,axis", [
    ((10, 4), [[1, 3], [0, 9]], 0), ((10, 4), [-1, 2, -10], 0), ((2, 5, 3), [4, 0, -2], 1),
    ((2, 5, 3), [[2]], -1), ((7,), 3, 0)])
@pytest.mark.parametrize("idx_dtype", [np.int64, np.int32])
def test_gather_runtime_indices(xs, idx, axis, idx_dtype):
    x, ids = rand(*xs), np.array(idx, idx_dtype)
    feeds = {"X": x, "I": ids}
    check(node_model("Gather", feeds, axis=axis), feeds)


@pytest.mark.parametrize("dtype", [np.int64, np.float16, np.bool_, np.uint8])
def test_gather_dtypes_and_constant_indices(dtype):
    x = typed((6, 3), dtype)
    check(node_model("Gather", {"X": x}, {"I": np.array([5, 0, -1], np.int64)}), {"X": x})


def test_embedding_lookup_bert_style():
    ids = np.array([[101, 7, 2003, 102]], np.int64)
    table = rand(2048, 16)
    nodes = [helper.make_node("Gather", ["E", "ids"], ["emb"]),
             helper.make_node("Gather", ["P", "pos"], ["pe"]),
             helper.make_node("Add", ["emb", "pe"], ["Y"])]
    model = graph_model(nodes, {"ids": ids}, ["Y"], {"E": table, "P": rand(8, 16, seed=3),
                                                     "pos": np.arange(4, dtype=np.int64)[None]})
    check(model, {"ids": ids})


def test_gather_out_of_range_index_raises_and_session_survives():
    x = rand(5, 3)
    feeds = {"X": x, "I": np.array([1, 5], np.int64)}
    model = graph_model([helper.make_node("Gather", ["X", "I"], ["Y"], name="lookup")], feeds, ["Y"])
    sess = nnwasm.InferenceSession(model, wasm_only_options(), providers=WASM_ONLY)
    with pytest.raises(nnwasm.errors.InvalidArgument, match="index out of range in Gather node 'lookup'"):
        sess.run(None, feeds)
    with pytest.raises(nnwasm.errors.InvalidArgument, match="index out of range"):
        sess.run(None, {"X": x, "I": np.array([-6, 0], np.int64)})
    for wild in (2 ** 40, -2 ** 40, 2 ** 32 + 1):   # int64 values that wrap to valid int32s
        with pytest.raises(nnwasm.errors.InvalidArgument, match="index out of range"):
            sess.run(None, {"X": x, "I": np.array([0, wild], np.int64)})
    got = sess.run(None, {"X": x, "I": np.array([4, -5], np.int64)})[0]
    np.testing.assert_array_equal(got, x[[4, 0]])


@pytest.mark.parametrize("xs,ids,axis", [((3, 4), (3, 2), 1), ((3, 4), (2, 4), 0), ((2, 3, 4), (2, 3, 2), -1),
                                         ((4, 5, 2), (2, 3, 2), 1)])
@pytest.mark.parametrize("idx_dtype", [np.int64, np.int32])
def test_gather_elements(xs, ids, axis, idx_dtype):
    x = rand(*xs)
    n = xs[axis]
    idx = np.random.default_rng(1).integers(-n, n, ids).astype(idx_dtype)
    feeds = {"X": x, "I": idx}
    check(node_model("GatherElements", feeds, axis=axis), feeds)


def test_gather_elements_out_of_range_raises():
    feeds = {"X": rand(3, 4), "I": np.array([[0], [4], [1]], np.int64)}
    sess = nnwasm.InferenceSession(node_model("GatherElements", feeds, axis=1), wasm_only_options(),
                                   providers=WASM_ONLY)
    with pytest.raises(nnwasm.errors.InvalidArgument, match="index out of range in GatherElements"):
        sess.run(None, feeds)
    assert sess.run(None, {**feeds, "I": np.array([[0], [3], [-4]], np.int64)})[0].shape == (3, 1)


# --- Slice ---------------------------------------------------------------------------------------

SLICES = {
    "basic": ((5, 6), [1, 0], [4, 6], None, None),
    "negative": ((5, 6), [-3], [-1], [1], None),
    "steps": ((7, 8), [0, 1], [7, 8], [0, 1], [2, 3]),
    "reverse": ((6, 5), [-1], [-100], [0], [-1]),
    "reverse_step2": ((2, 9, 4), [7, 3], [0, 0], [1, 2], [-2, -1]),
    "clamped": ((4, 5), [-100, 2], [100, 2 ** 62], [0, 1], None),
    "last_axis_of_4d": ((1, 3, 8, 8), [2], [6], [-1], None),
    "gpt2_qkv_split": ((1, 4, 24), [8], [16], [2], [1]),
}


@pytest.mark.parametrize("case", sorted(SLICES))
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_slice(case, dtype):
    xs, starts, ends, axes, steps = SLICES[case]
    x = typed(xs, dtype)
    inits = {"s": np.array(starts, np.int64), "e": np.array(ends, np.int64)}
    if axes is not None:
        inits["a"] = np.array(axes, np.int64)
    if steps is not None:
        inits["t"] = np.array(steps, np.int64)
    check(node_model("Slice", {"X": x}, inits), {"X": x})


def test_slice_opset1_attributes():
    x = rand(4, 6, 3)
    check(node_model("Slice", {"X": x}, opset=9, starts=[1, -4], ends=[3, 100], axes=[0, 1]), {"X": x})


def test_slice_runtime_starts_fall_back():
    x = rand(4, 6)
    feeds = {"X": x, "s": np.array([1], np.int64)}
    model = graph_model([helper.make_node("Slice", ["X", "s", "e"], ["Y"], name="sl")], feeds, ["Y"],
                        {"e": np.array([3], np.int64)})
    sess = nnwasm.InferenceSession(model)
    assert sess.get_provider_assignment() == [("sl", "Slice", "NumpyExecutionProvider")]


# --- Expand, Tile ------------------------------------------------------------------------------------

@pytest.mark.parametrize("xs,shape", [((3, 1), (2, 3, 4)), ((1,), (5,)), ((), (2, 3)), ((2, 1, 1, 3), (2, 4, 5, 3)),
                                      ((1, 1, 1, 4), (1, 1, 4, 4)), ((4,), (1, 1))])
@pytest.mark.parametrize("dtype", [np.float32, np.bool_])
def test_expand(xs, shape, dtype):
    x = typed(xs, dtype)
    check(node_model("Expand", {"X": x}, {"shape": np.array(shape, np.int64)}), {"X": x})


@pytest.mark.parametrize("xs,reps", [((2, 3), (2, 1)), ((2, 3), (3, 4)), ((1, 2, 3), (2, 1, 2)), ((5,), (3,))])
def test_tile(xs, reps):
    x = typed(xs, np.int32)
    check(node_model("Tile", {"X": x}, {"r": np.array(reps, np.int64)}), {"X": x})


def test_tile_and_pad_of_rank7_merge_axes_to_fit_six():
    x = typed((2, 1, 3, 1, 2, 1, 2), np.float32)
    check(node_model("Tile", {"X": x}, {"r": np.array([1, 2, 1, 3, 2, 1, 2], np.int64)}), {"X": x})
    pads = np.array([0, 1, 1, 0, 1, 0, 1, 1, 0, 1, 0, 2, 0, 1], np.int64)
    check(node_model("Pad", {"X": x}, {"p": pads}, mode="edge"), {"X": x})


# --- Split ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("opset,axis,split,n_out", [(13, 0, None, 2), (13, 1, [1, 4, 1], 3), (11, -1, [2, 3], 2),
                                                    (2, 1, None, 3), (18, 2, None, 3), (13, 2, [3, 2], 2)])
def test_split(opset, axis, split, n_out):
    x = rand(4, 6, 5)
    inits, attrs = {}, {"axis": axis}
    if split is not None and opset >= 13:
        inits["split"] = np.array(split, np.int64)
    elif split is not None:
        attrs["split"] = split
    if opset >= 18 and split is None:
        attrs["num_outputs"] = n_out
    check(node_model("Split", {"X": x}, inits, opset=opset, n_out=n_out, **attrs), {"X": x})


# --- Pad -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
@pytest.mark.parametrize("pads", [[0, 0, 1, 2, 0, 0, 2, 1], [0, 1, 0, 0, 0, 0, 0, 3], [0, 0, -1, 1, 0, 0, 2, -2]])
def test_pad(mode, pads):
    x = rand(1, 2, 5, 6)
    inits = {"pads": np.array(pads, np.int64)}
    if mode == "constant":
        inits["value"] = np.float32(1.5)
    check(node_model("Pad", {"X": x}, inits, opset=13, mode=mode), {"X": x})


def test_pad_opset2_attributes_and_int_value():
    x = rand(3, 4)
    check(node_model("Pad", {"X": x}, opset=2, pads=[1, 0, 0, 2], value=-2.0), {"X": x})
    xi = typed((3, 4), np.int64)
    check(node_model("Pad", {"X": xi}, {"pads": np.array([0, 1, 2, 0], np.int64)}, opset=11), {"X": xi})


def test_pad_runtime_value_and_opset18_axes():
    x = rand(2, 3, 4)
    feeds = {"X": x, "v": np.array(7.0, np.float32)}
    model = graph_model([helper.make_node("Pad", ["X", "pads", "v", "axes"], ["Y"], mode="constant")], feeds,
                        ["Y"], {"pads": np.array([1, 2, 0, 1], np.int64), "axes": np.array([-1, 0], np.int64)},
                        opset=18)
    check(model, feeds)


# --- DepthToSpace, SpaceToDepth ------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space(mode):
    x = rand(2, 8, 3, 4)
    check(node_model("DepthToSpace", {"X": x}, blocksize=2, mode=mode), {"X": x})


def test_space_to_depth():
    x = rand(1, 3, 6, 4)
    check(node_model("SpaceToDepth", {"X": x}, blocksize=2), {"X": x})


# --- Resize, Upsample ------------------------------------------------------------------------------

def resize_model(x_shape, mode, coord=None, nearest=None, scales=None, sizes=None, opset=13, **extra):
    attrs = {"mode": mode, **extra}
    if coord:
        attrs["coordinate_transformation_mode"] = coord
    if nearest:
        attrs["nearest_mode"] = nearest
    inits = {"roi": np.array([], np.float32)}
    names = ["X", "roi"]
    if scales is not None:
        inits["scales"] = np.array(scales, np.float32)
        names.append("scales")
    else:
        inits["sizes"] = np.array(sizes, np.int64)
        names += ["", "sizes"]
    x = rand(*x_shape)
    return graph_model([helper.make_node("Resize", names, ["Y"], **attrs)], {"X": x}, ["Y"], inits,
                       opset=opset), {"X": x}


COORDS = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"]


@pytest.mark.parametrize("coord", COORDS)
@pytest.mark.parametrize("scales,sizes", [([1, 1, 2, 2], None), ([1, 1, 0.5, 0.75], None), (None, [1, 3, 7, 5]),
                                          (None, [1, 3, 1, 9])])
def test_resize_linear(coord, scales, sizes):
    model, feeds = resize_model((1, 3, 6, 8), "linear", coord, scales=scales, sizes=sizes)
    check(model, feeds)


@pytest.mark.parametrize("nearest", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
@pytest.mark.parametrize("coord", COORDS + ["tf_half_pixel_for_nn"])
def test_resize_nearest(nearest, coord):
    # scales whose source coordinates are no near-ties: onnxruntime computes them in float32, the
    # reference (and these tables) in float64, so x.5 and integers may round apart
    opset = 11 if coord == "tf_half_pixel_for_nn" else 13
    model, feeds = resize_model((1, 2, 5, 7), "nearest", coord, nearest, scales=[1, 1, 1.7, 0.55], opset=opset)
    check(model, feeds)


def test_resize_linear_1d_and_opset19():
    model, feeds = resize_model((2, 3, 10), "linear", "half_pixel", scales=[1, 1, 1.5], opset=19)
    check(model, feeds)
    model, feeds = resize_model((1, 3, 4, 4), "linear", "align_corners", sizes=[8, 8], opset=18, axes=[2, 3])
    check(model, feeds)


@pytest.mark.parametrize("policy", ["not_larger", "not_smaller"])
def test_resize_keep_aspect_ratio_and_exclude_outside(policy):
    model, feeds = resize_model((1, 2, 6, 9), "nearest", "half_pixel", sizes=[10, 10], opset=18, axes=[2, 3],
                                keep_aspect_ratio_policy=policy)
    check(model, feeds)
    model, feeds = resize_model((1, 2, 6, 9), "linear", "half_pixel", scales=[1, 1, 1.5, 1.7], opset=18, antialias=1,
                                exclude_outside=1)   # antialias changes nothing when upsampling
    check(model, feeds)


def test_resize_nhwc_linear_and_opset10():
    model, feeds = resize_model((1, 5, 6, 3), "linear", "half_pixel", scales=[1, 2, 2, 1])
    check(model, feeds)
    x = rand(1, 2, 3, 4)
    model = graph_model([helper.make_node("Resize", ["X", "s"], ["Y"], mode="nearest")], {"X": x}, ["Y"],
                        {"s": np.array([1, 1, 2, 3], np.float32)}, opset=10)
    check(model, {"X": x})


def test_upsample():
    x = rand(1, 2, 3, 4)
    check(graph_model([helper.make_node("Upsample", ["X", "s"], ["Y"], mode="nearest")], {"X": x}, ["Y"],
                      {"s": np.array([1, 1, 2, 2], np.float32)}, opset=9), {"X": x})
    check(graph_model([helper.make_node("Upsample", ["X"], ["Y"], mode="linear", scales=[1.0, 1.0, 2.0, 3.0])],
                      {"X": x}, ["Y"], opset=7), {"X": x})


@pytest.mark.parametrize("coord,kw", [("half_pixel", {}), ("align_corners", {}), ("asymmetric", {}),
                                      ("pytorch_half_pixel", {"cubic_coeff_a": -0.5}),
                                      ("half_pixel", {"exclude_outside": 1})])
@pytest.mark.parametrize("scales,sizes", [([1, 1, 2, 2], None), (None, [1, 2, 3, 9]), (None, [1, 2, 7, 5])])
def test_resize_cubic(coord, kw, scales, sizes):
    """Four taps per axis, summed as resize_linear passes over pairs of them (lower/resize.py)."""
    shape = (1, 1, 4, 4) if scales else (1, 2, 5, 6)
    model, feeds = resize_model(shape, "cubic", coord, scales=scales, sizes=sizes, **kw)
    check(model, feeds, rtol=1e-5, atol=2e-5)


def test_resize_cubic_one_axis_and_antialias_falls_back():
    model, feeds = resize_model((1, 2, 5, 7), "cubic", "half_pixel", sizes=[1, 2, 5, 12])
    check(model, feeds, rtol=1e-5, atol=2e-5)
    model, _ = resize_model((1, 1, 8, 8), "cubic", "half_pixel", sizes=[1, 1, 4, 4], opset=18, antialias=1)
    sess = nnwasm.InferenceSession(model)
    assert [p for _, _, p in sess.get_provider_assignment()] == ["NumpyExecutionProvider"]


# --- the exporters' idioms ----------------------------------------------------------------------

def test_bert_gpt2_embedding_idioms_fold_or_run_on_wasm():
    """Shape, Gather of a shape, Unsqueeze, Slice of a buffer, Range, ConstantOfShape and Size fold at
    session creation when shapes are static; what is left (embedding Gathers with run-time ids, Add,
    Expand) runs on kernels.wasm."""
    ids = np.array([[101, 7, 2003, 55, 9, 102]], np.int64)
    h = helper.make_node
    nodes = [
        h("Shape", ["ids"], ["shape"]),
        h("Gather", ["shape", "one"], ["seq"], axis=0),
        h("Unsqueeze", ["seq", "zero1"], ["seq1"]),
        h("Slice", ["posbuf", "zero1", "seq1", "one1"], ["pos_ids"]),   # BERT: position_ids[:, :seq]
        h("Gather", ["P", "pos_ids"], ["pe"]),
        h("Gather", ["E", "ids"], ["we"]),
        h("Add", ["we", "pe"], ["emb"]),
        h("Range", ["zero", "seq", "one"], ["r"]),                      # GPT-2: positions
        h("ConstantOfShape", ["shape"], ["ones"], value=helper.make_tensor("v", 1, [1], [1.0])),
        h("Size", ["ids"], ["n"]),
        h("Expand", ["emb", "shape3"], ["Y"]),
    ]
    inits = {"one": np.array(1, np.int64), "zero": np.array(0, np.int64), "zero1": np.array([0], np.int64),
             "one1": np.array([1], np.int64), "posbuf": np.arange(32, dtype=np.int64)[None],
             "P": rand(32, 8, seed=1), "E": rand(3000, 8, seed=2), "shape3": np.array([2, 1, 1], np.int64)}
    model = graph_model(nodes, {"ids": ids}, ["Y", "r", "ones", "n"], inits)
    sess = check(model, {"ids": ids})
    assert [op for _, op, _ in sess.get_provider_assignment()] == ["Gather", "Add", "Expand"]


def test_deeplab_style_bilinear_resize_with_sizes_from_shape():
    """torch's F.interpolate(bilinear, align_corners=False): Resize(x, empty roi, empty scales, sizes)
    with sizes = Concat(Shape(x)[:2], [H, W]), folded at session creation."""
    x = rand(1, 4, 7, 9)
    h = helper.make_node
    nodes = [h("Shape", ["X"], ["s"]), h("Slice", ["s", "z", "two"], ["nc"]),
             h("Concat", ["nc", "hw"], ["sizes"], axis=0),
             h("Resize", ["X", "roi", "scales", "sizes"], ["Y"], mode="linear",
               coordinate_transformation_mode="half_pixel")]
    inits = {"z": np.array([0], np.int64), "two": np.array([2], np.int64), "hw": np.array([28, 36], np.int64),
             "roi": np.array([], np.float32), "scales": np.array([], np.float32)}
    sess = check(graph_model(nodes, {"X": x}, ["Y"], inits, opset=11), {"X": x})
    assert [op for _, op, _ in sess.get_provider_assignment()] == ["Resize"]


def test_unet_style_nearest_upsample():
    model, feeds = resize_model((1, 8, 5, 6), "nearest", "asymmetric", "floor", scales=[1, 1, 2, 2])
    check(model, feeds)
