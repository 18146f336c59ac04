"""Single-node cases the numpy kernels are checked on against onnxruntime, for what ONNX's own node
tests cover thinly (their Conv weights are all ones, their pools use few pads/ceil/dilation mixes).
Each row: (name, op_type, opset, attrs, inputs, number of outputs). Inputs are arrays, None for
an omitted optional input."""
import numpy as np

_rng = np.random.default_rng(20261121)


def f(*shape):
    return _rng.standard_normal(shape).astype(np.float32)


def pos(*shape):
    return (_rng.random(shape) + 0.5).astype(np.float32)


def i64(*values):
    return np.array(values, dtype=np.int64)


def f32(*values):
    return np.array(values, dtype=np.float32)


CASES = [
    # Conv: groups, dilations, asymmetric pads, every auto_pad, 1-D/3-D, depthwise with multiplier
    ("conv_pads_strides", "Conv", 13, {"pads": [1, 1, 1, 1], "strides": [2, 2]}, [f(2, 4, 9, 9), f(6, 4, 3, 3), f(6)], 1),
    ("conv_groups_dilation", "Conv", 13, {"group": 2, "dilations": [2, 2], "pads": [2, 1, 0, 2]},
     [f(1, 4, 8, 8), f(6, 2, 3, 3)], 1),
    ("conv_depthwise_same_upper_k5", "Conv", 13, {"group": 8, "auto_pad": "SAME_UPPER", "strides": [2, 2]},
     [f(1, 8, 15, 15), f(8, 1, 5, 5), f(8)], 1),
    ("conv_depthwise_x2_same_lower", "Conv", 13, {"group": 3, "auto_pad": "SAME_LOWER", "strides": [2, 2]},
     [f(1, 3, 10, 10), f(6, 1, 3, 3)], 1),
    ("conv_valid", "Conv", 13, {"auto_pad": "VALID", "strides": [2, 1]}, [f(1, 3, 11, 7), f(4, 3, 3, 2)], 1),
    ("conv_1x1", "Conv", 13, {}, [f(2, 16, 7, 7), f(8, 16, 1, 1), f(8)], 1),
    ("conv_1d", "Conv", 13, {"strides": [3], "pads": [2, 1], "dilations": [2]}, [f(2, 3, 20), f(5, 3, 4)], 1),
    ("conv_3d", "Conv", 13, {"pads": [1, 0, 1, 0, 1, 1]}, [f(1, 2, 5, 6, 7), f(3, 2, 2, 3, 2)], 1),
    ("conv_same_upper_even_kernel", "Conv", 13, {"auto_pad": "SAME_UPPER", "kernel_shape": [2, 2]},
     [f(1, 2, 6, 6), f(2, 2, 2, 2)], 1),
    # ConvTranspose
    ("convt_pads_output_padding", "ConvTranspose", 13,
     {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]}, [f(1, 3, 5, 5), f(3, 2, 3, 3), f(2)], 1),
    ("convt_group", "ConvTranspose", 13, {"group": 2, "strides": [2, 2]}, [f(2, 4, 4, 4), f(4, 3, 3, 3)], 1),
    ("convt_dilation", "ConvTranspose", 13, {"dilations": [2, 2]}, [f(1, 2, 5, 5), f(2, 3, 3, 3)], 1),
    ("convt_output_shape", "ConvTranspose", 13, {"strides": [3, 2], "output_shape": [10, 8]},
     [f(1, 1, 3, 3), f(1, 2, 3, 3)], 1),
    ("convt_same_upper", "ConvTranspose", 13, {"strides": [2, 2], "auto_pad": "SAME_UPPER"},
     [f(1, 2, 4, 4), f(2, 2, 3, 3)], 1),
    ("convt_1d", "ConvTranspose", 13, {"strides": [2], "pads": [1, 2]}, [f(1, 2, 6), f(2, 3, 4)], 1),
    # MaxPool
    ("maxpool_pads_strides", "MaxPool", 12, {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
     [f(1, 3, 9, 9)], 1),
    ("maxpool_ceil", "MaxPool", 12, {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}, [f(1, 2, 8, 8)], 1),
    ("maxpool_dilation", "MaxPool", 12, {"kernel_shape": [2, 2], "dilations": [2, 2]}, [f(1, 2, 10, 10)], 1),
    ("maxpool_same_upper", "MaxPool", 12, {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"},
     [f(1, 2, 7, 7)], 1),
    ("maxpool_same_lower", "MaxPool", 12, {"kernel_shape": [2, 2], "auto_pad": "SAME_LOWER"}, [f(1, 2, 6, 6)], 1),
    ("maxpool_indices", "MaxPool", 12, {"kernel_shape": [2, 2], "strides": [2, 2]}, [f(2, 2, 6, 6)], 2),
    ("maxpool_indices_col_major", "MaxPool", 12,
     {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "storage_order": 1}, [f(2, 2, 5, 7)], 2),
    ("maxpool_1d_ceil", "MaxPool", 12, {"kernel_shape": [3], "strides": [2], "pads": [1, 1], "ceil_mode": 1},
     [f(1, 3, 11)], 1),
    ("maxpool_int8", "MaxPool", 12, {"kernel_shape": [2, 2], "pads": [1, 1, 0, 0]},
     [_rng.integers(-128, 127, (1, 2, 5, 5)).astype(np.int8)], 1),
    ("maxpool_3d", "MaxPool", 12, {"kernel_shape": [2, 2, 2], "strides": [2, 2, 2]}, [f(1, 1, 5, 6, 7)], 1),
    # AveragePool
    ("avgpool_pads", "AveragePool", 19, {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
     [f(1, 2, 7, 7)], 1),
    ("avgpool_pads_count_pad", "AveragePool", 19,
     {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "count_include_pad": 1}, [f(1, 2, 7, 7)], 1),
    ("avgpool_ceil_count_pad", "AveragePool", 19,
     {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1, "count_include_pad": 1},
     [f(1, 2, 8, 8)], 1),
    ("avgpool_ceil", "AveragePool", 19, {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [0, 1, 0, 1],
                                         "ceil_mode": 1}, [f(1, 2, 8, 8)], 1),
    ("avgpool_same_upper", "AveragePool", 19, {"kernel_shape": [2, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"},
     [f(1, 2, 7, 7)], 1),
    ("avgpool_dilation", "AveragePool", 19, {"kernel_shape": [2, 2], "dilations": [2, 2], "strides": [2, 2]},
     [f(1, 2, 9, 9)], 1),
    ("avgpool_1d", "AveragePool", 11, {"kernel_shape": [4], "strides": [3], "pads": [2, 2]}, [f(2, 3, 13)], 1),
    ("global_avgpool", "GlobalAveragePool", 13, {}, [f(2, 3, 5, 6)], 1),
    ("global_maxpool_1d", "GlobalMaxPool", 13, {}, [f(2, 3, 4)], 1),
    # normalisation
    ("batchnorm", "BatchNormalization", 15, {"epsilon": 1e-3}, [f(2, 3, 4, 5), f(3), f(3), f(3), pos(3)], 1),
    ("batchnorm_opset9_2d", "BatchNormalization", 9, {}, [f(4, 3), f(3), f(3), f(3), pos(3)], 1),
    ("instancenorm", "InstanceNormalization", 6, {"epsilon": 1e-4}, [f(2, 3, 4, 5), f(3), f(3)], 1),
    ("layernorm_axis1", "LayerNormalization", 17, {"axis": 1}, [f(2, 3, 4), f(3, 4), f(3, 4)], 3),
    ("layernorm_last_no_bias", "LayerNormalization", 17, {}, [f(2, 5, 8), f(8)], 1),
    # linear algebra
    ("gemm_trans_alpha_beta", "Gemm", 13, {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0},
     [f(4, 3), f(5, 4), f(5)], 1),
    ("gemm_c_column", "Gemm", 13, {}, [f(3, 4), f(4, 5), f(3, 1)], 1),
    ("gemm_c_scalar", "Gemm", 13, {"beta": 0.5}, [f(3, 4), f(4, 5), f32(1.5).reshape(())], 1),
    ("gemm_no_c", "Gemm", 13, {"transB": 1}, [f(3, 4), f(5, 4)], 1),
    ("matmul_broadcast", "MatMul", 13, {}, [f(2, 1, 3, 4), f(5, 4, 2)], 1),
    ("matmul_1d_lhs", "MatMul", 13, {}, [f(4), f(3, 4, 2)], 1),
    ("matmul_1d_rhs", "MatMul", 13, {}, [f(2, 3, 4), f(4)], 1),
    ("einsum_batch_matmul", "Einsum", 12, {"equation": "bij,bjk->bik"}, [f(2, 3, 4), f(2, 4, 5)], 1),
    # softmax family across the opset 13 change
    ("softmax_11_axis1", "Softmax", 11, {"axis": 1}, [f(2, 3, 4)], 1),
    ("softmax_13_axis1", "Softmax", 13, {"axis": 1}, [f(2, 3, 4)], 1),
    ("logsoftmax_11_axis0", "LogSoftmax", 11, {"axis": 0}, [f(2, 3, 4)], 1),
    # shapes and indexing
    ("reshape_zero_minus_one", "Reshape", 14, {}, [f(2, 3, 4), i64(0, -1)], 1),
    ("reshape_allowzero", "Reshape", 14, {"allowzero": 1}, [f(0, 3), i64(3, 0)], 1),
    ("slice_negative_steps", "Slice", 13, {}, [f(5, 6), i64(-1, 4), i64(-100, 0), i64(0, 1), i64(-2, -1)], 1),
    ("gather_negative_axis1", "Gather", 13, {"axis": 1}, [f(3, 4, 2), i64(-1, 0, 3, -4).reshape(2, 2)], 1),
    ("split_18_uneven", "Split", 18, {"axis": 1, "num_outputs": 3}, [f(2, 7)], 3),
    ("pad_reflect", "Pad", 13, {"mode": "reflect"}, [f(2, 5, 6), i64(0, 2, 1, 0, 1, 3)], 1),
    ("pad_edge", "Pad", 13, {"mode": "edge"}, [f(1, 3, 4), i64(0, 1, 2, 0, 3, 1)], 1),
    ("pad_constant_negative", "Pad", 13, {}, [f(3, 4), i64(1, -1, -1, 2), f32(2.5).reshape(())], 1),
    ("pad_2_attrs", "Pad", 2, {"pads": [0, 1, 1, 0], "value": -1.0}, [f(2, 3)], 1),
    # Resize and Upsample
    ("resize_nearest_half_pixel", "Resize", 13, {"mode": "nearest"},
     [f(1, 2, 4, 5), None, f32(1, 1, 2, 1.5)], 1),
    ("resize_nearest_ceil_asymmetric", "Resize", 13,
     {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "ceil"},
     [f(1, 2, 4, 5), None, f32(1, 1, 1.7, 0.6)], 1),
    ("resize_linear_sizes", "Resize", 13, {"mode": "linear"}, [f(1, 3, 5, 6), None, None, i64(1, 3, 9, 4)], 1),
    ("resize_linear_align_corners", "Resize", 13, {"mode": "linear", "coordinate_transformation_mode":
                                                   "align_corners"}, [f(1, 1, 4, 4), None, None, i64(1, 1, 7, 3)], 1),
    ("resize_linear_pytorch_half_pixel", "Resize", 13, {"mode": "linear", "coordinate_transformation_mode":
                                                        "pytorch_half_pixel"}, [f(2, 2, 6, 6), None, f32(1, 1, 0.5, 2)], 1),
    ("resize_cubic", "Resize", 13, {"mode": "cubic"}, [f(1, 1, 5, 5), None, f32(1, 1, 1.6, 2.2)], 1),
    ("resize_10_nearest_up", "Resize", 10, {"mode": "nearest"}, [f(1, 2, 3, 4), f32(1, 1, 2, 3)], 1),
    ("resize_10_nearest_down", "Resize", 10, {"mode": "nearest"}, [f(1, 2, 6, 8), f32(1, 1, 0.5, 0.6)], 1),
    ("resize_10_linear", "Resize", 10, {"mode": "linear"}, [f(1, 2, 3, 4), f32(1, 1, 2, 2)], 1),
    ("upsample_9_nearest", "Upsample", 9, {"mode": "nearest"}, [f(1, 2, 3, 3), f32(1, 1, 2, 2)], 1),
    # (uint8 linear Resize is left out: onnxruntime's fixed-point weights differ by 1 from rounding)
    # reductions
    ("reducemean_keepdims0", "ReduceMean", 13, {"axes": [1, 2], "keepdims": 0}, [f(2, 3, 4, 5)], 1),
    ("reducel2_last", "ReduceL2", 13, {"axes": [-1]}, [f(2, 3, 4)], 1),
    ("reducesum_13_noop", "ReduceSum", 13, {"noop_with_empty_axes": 1}, [f(2, 3), None], 1),
    ("reducemax_18_axes_input", "ReduceMax", 18, {"keepdims": 0}, [f(2, 3, 4), i64(0, 2)], 1),
    ("argmax_last_index", "ArgMax", 13, {"axis": 1, "select_last_index": 1},
     [np.array([[1, 3, 3], [2, 2, 0]], dtype=np.float32)], 1),
    # older opsets: attributes that later became inputs
    ("slice_9_attrs", "Slice", 9, {"starts": [1, -3], "ends": [100, -1], "axes": [0, 2]}, [f(3, 4, 5)], 1),
    ("squeeze_11_attr", "Squeeze", 11, {"axes": [-1, 1]}, [f(3, 1, 4, 1)], 1),
    ("unsqueeze_11_attr", "Unsqueeze", 11, {"axes": [0, -1]}, [f(3, 4)], 1),
    ("split_11_attr", "Split", 11, {"axis": -1, "split": [1, 4]}, [f(2, 5)], 2),
    ("reducesum_11_attr", "ReduceSum", 11, {"axes": [0, -1], "keepdims": 0}, [f(2, 3, 4)], 1),
    ("reducemax_13_attr", "ReduceMax", 13, {"axes": [1]}, [f(2, 3, 4)], 1),
    ("batchnorm_7", "BatchNormalization", 7, {}, [f(2, 3, 4), f(3), f(3), f(3), pos(3)], 1),
    ("gemm_7", "Gemm", 7, {"beta": 0.5}, [f(3, 4), f(4, 2), f(3, 2)], 1),
    ("upsample_7_attr", "Upsample", 7, {"scales": [1.0, 1.0, 2.0, 3.0]}, [f(1, 2, 2, 3)], 1),
    ("softmax_1_default_axis", "Softmax", 7, {}, [f(2, 3, 4)], 1),
    ("flatten_axis0", "Flatten", 13, {"axis": 0}, [f(2, 3, 4)], 1),
    ("concat_4", "Concat", 7, {"axis": 1}, [f(2, 3), f(2, 1)], 1),
    ("tile", "Tile", 13, {}, [f(2, 3), i64(2, 1)], 1),
    ("expand_bidirectional", "Expand", 13, {}, [f(3, 1), i64(2, 1, 4)], 1),
    ("range_float", "Range", 11, {}, [f32(1).reshape(()), f32(2.6).reshape(()), f32(0.3).reshape(())], 1),
    # elementwise corners
    ("div_int_truncates", "Div", 14, {}, [np.array([7, -7, 7, -7], np.int32), np.array([2, 2, -2, -2], np.int32)], 1),
    ("pow_int", "Pow", 15, {}, [np.array([2, 3, -2], np.int64), np.array([3, 2, 3], np.int64)], 1),
    ("clip_int32", "Clip", 13, {}, [np.arange(-5, 5, dtype=np.int32), np.array(-2, np.int32), np.array(3, np.int32)], 1),
    ("clip_6_attrs", "Clip", 6, {"min": -0.5, "max": 0.25}, [f(3, 4)], 1),
    ("sigmoid_large", "Sigmoid", 13, {}, [f32(-100, -20, -1, 0, 1, 20, 100)], 1),
    ("erf", "Erf", 13, {}, [f(50) * 2], 1),
    ("gelu_tanh", "Gelu", 20, {"approximate": "tanh"}, [f(50) * 3], 1),
    ("hardswish", "HardSwish", 14, {}, [f(50) * 4], 1),
    ("prelu_channel", "PRelu", 16, {}, [f(2, 3, 4, 4), f(3, 1, 1)], 1),
    ("where_broadcast", "Where", 16, {}, [np.array([[True], [False]]), f(2, 3), f(3)], 1),
]
