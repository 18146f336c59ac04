"""GridSample, AffineGrid, RoiAlign, Col2Im, DeformConv, MaxUnpool and CenterCropPad beyond the
backend suite's cases: attribute combinations it does not cover, checked against onnx's reference
evaluator, and bad attributes/inputs refused with nnwasm errors."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import nnwasm  # noqa: E402
from nnwasm.errors import InvalidArgument, InvalidModel  # noqa: E402
from test_ops_attention import check, model, r  # noqa: E402

F = TensorProto.FLOAT


def with_consts(m, **consts):
    """Moves inputs of m into initializers."""
    for name, v in consts.items():
        m.graph.initializer.append(numpy_helper.from_array(v, name))
        keep = [vi for vi in m.graph.input if vi.name != name]
        del m.graph.input[:]
        m.graph.input.extend(keep)
    return m


def numpy_session(m):
    return nnwasm.InferenceSession(m.SerializeToString(), providers=["NumpyExecutionProvider"])


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample_2d(mode, padding, align):
    feeds = {"x": r(2, 3, 5, 6), "g": np.random.default_rng(1).uniform(-1.4, 1.4, (2, 4, 7, 2)).astype(np.float32)}
    check(model("GridSample", feeds, 1, 22, mode=mode, padding_mode=padding, align_corners=align), feeds,
          rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode,padding", [("cubic", "reflection"), ("linear", "border")])
def test_grid_sample_3d(mode, padding):
    feeds = {"x": r(1, 2, 3, 4, 5), "g": np.random.default_rng(2).uniform(-1.2, 1.2, (1, 2, 3, 2, 3)).astype(np.float32)}
    check(model("GridSample", feeds, 1, 22, mode=mode, padding_mode=padding), feeds, rtol=1e-4, atol=1e-5)


def test_grid_sample_opset16_names_and_refusals():
    feeds = {"x": r(1, 1, 3, 3), "g": r(1, 2, 2, 2) / 2}
    old = numpy_session(model("GridSample", feeds, 1, 16, mode="bicubic")).run(None, feeds)[0]
    np.testing.assert_array_equal(old, numpy_session(model("GridSample", feeds, 1, 20, mode="cubic")).run(None, feeds)[0])
    with pytest.raises(InvalidModel, match="mode must be one of"):
        numpy_session(model("GridSample", feeds, 1, 20, mode="bilinear"))
    with pytest.raises(InvalidModel, match="grid's last dim"):
        numpy_session(model("GridSample", {"x": r(1, 1, 3, 3), "g": (F, [1, 2, 2, 3])}, 1, 20))


def test_affine_grid_3d_align_corners():
    theta = r(2, 3, 4)
    m = with_consts(model("AffineGrid", {"t": theta, "size": np.array([2, 1, 3, 4, 5], np.int64)}, 1, 20,
                          align_corners=1), size=np.array([2, 1, 3, 4, 5], np.int64))
    check(m, {"t": theta})
    sess = numpy_session(m)
    assert sess.get_outputs()[0].shape == [2, 3, 4, 5, 3]


@pytest.mark.parametrize("mode,coord,ratio", [("max", "half_pixel", 0), ("avg", "output_half_pixel", 2),
                                              ("max", "output_half_pixel", 3)])
def test_roi_align_modes(mode, coord, ratio):
    feeds = {"x": r(2, 3, 8, 9), "rois": np.array([[0, 0, 7, 8], [1.5, 2.2, 6.1, 7.9], [-2, -1, 3, 2]], np.float32),
             "b": np.array([0, 1, 1], np.int64)}
    check(model("RoiAlign", feeds, 1, 16, mode=mode, coordinate_transformation_mode=coord, sampling_ratio=ratio,
                output_height=3, output_width=2, spatial_scale=0.9), feeds, rtol=1e-4, atol=1e-5)


def test_roi_align_batch_index_out_of_range():
    feeds = {"x": r(1, 1, 4, 4), "rois": np.array([[0, 0, 2, 2]], np.float32), "b": np.array([3], np.int64)}
    with pytest.raises(InvalidArgument, match="batch_indices"):
        numpy_session(model("RoiAlign", feeds, 1, 16)).run(None, feeds)


def test_col2im_3d_strided_dilated_padded():
    image, block = np.array([5, 6, 4], np.int64), np.array([2, 3, 2], np.int64)
    # blocks per axis: (5+1+0-2)//1+1 = 5, (6+1+1-5)//2+1 = 2, (4+0+1-2)//1+1 = 4
    x = r(2, 3 * 12, 5 * 2 * 4)
    m = with_consts(model("Col2Im", {"x": x, "i": image, "k": block}, 1, 18, dilations=[1, 2, 1],
                          pads=[1, 1, 0, 0, 1, 1], strides=[1, 2, 1]), i=image, k=block)
    check(m, {"x": x})
    bad = with_consts(model("Col2Im", {"x": r(2, 36, 31), "i": image, "k": block}, 1, 18, dilations=[1, 2, 1],
                            pads=[1, 1, 0, 0, 1, 1], strides=[1, 2, 1]), i=image, k=block)
    with pytest.raises(InvalidModel, match="blocks"):
        numpy_session(bad)


def test_deform_conv_groups_offset_groups_mask():
    x, w, b = r(2, 4, 6, 7), r(6, 2, 2, 3, seed=1), r(6, seed=2)
    # out: (6 + 1 + 0 - 2 - 1)//2 + 1 = 3, (7 + 1 + 1 - 5)//1 + 1 = 5
    off = r(2, 2 * 6 * 2, 3, 5, seed=3) * 2
    mask = np.abs(r(2, 2 * 6, 3, 5, seed=4))
    feeds = {"x": x, "w": w, "off": off, "b": b, "mask": mask}
    check(model("DeformConv", feeds, 1, 22, group=2, offset_group=2, strides=[2, 1], dilations=[1, 2],
                pads=[1, 1, 0, 1]), feeds, rtol=1e-4, atol=1e-4)


def test_deform_conv_offset_channels_must_fit():
    with pytest.raises(InvalidModel, match="offset's channels"):
        numpy_session(model("DeformConv", {"x": (F, [1, 2, 5, 5]), "w": (F, [3, 2, 3, 3]),
                                           "off": (F, [1, 17, 3, 3])}, 1, 22))


def test_max_unpool_of_max_pool_with_output_shape():
    # as onnx's reference (and its backend case), I indexes the unpooled (4, 6), which output_shape pads
    x = r(1, 2, 4, 6)
    pool = helper.make_node("MaxPool", ["x"], ["p", "i"], kernel_shape=[2, 2], strides=[2, 2])
    unpool = helper.make_node("MaxUnpool", ["p", "i", "shape"], ["y"], kernel_shape=[2, 2], strides=[2, 2])
    g = helper.make_graph([pool, unpool], "t", [helper.make_tensor_value_info("x", F, x.shape)],
                          [helper.make_tensor_value_info("y", F, None)],
                          [numpy_helper.from_array(np.array([1, 2, 5, 7], np.int64), "shape")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 22)])
    check(m, {"x": x})
    assert numpy_session(m).get_outputs()[0].shape == [1, 2, 5, 7]


def test_max_unpool_index_out_of_range():
    feeds = {"x": r(1, 1, 2, 2), "i": np.array([[[[0, 1, 2, 99]]]], np.int64).reshape(1, 1, 2, 2)}
    with pytest.raises(InvalidArgument, match="index"):
        numpy_session(model("MaxUnpool", feeds, 1, 11, kernel_shape=[2, 2], strides=[2, 2])).run(None, feeds)


def test_center_crop_pad_negative_axes_odd_sizes():
    feeds = {"x": r(3, 5, 4), "s": np.array([8, 3], np.int64)}
    m = with_consts(model("CenterCropPad", feeds, 1, 18, axes=[-1, 1]), s=feeds["s"])
    check(m, {"x": feeds["x"]})
    assert numpy_session(m).get_outputs()[0].shape == [3, 3, 8]


@pytest.mark.parametrize("roi,match", [([0, 0, np.nan, 2], "finite"), ([0, 0, 1e12, 1e12], "samples per bin")])
def test_roi_align_hostile_rois(roi, match):
    feeds = {"x": r(1, 1, 4, 4), "rois": np.array([roi], np.float32), "b": np.array([0], np.int64)}
    with pytest.raises(InvalidArgument, match=match):
        numpy_session(model("RoiAlign", feeds, 1, 16)).run(None, feeds)
