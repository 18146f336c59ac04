"""LOWERINGS: the WASM capability table, the one hand-edited list of the ONNX ops kernels.wasm
runs. Each row is op type -> (check, lower); the functions live in lower/<family>.py.

check(node, graph) returns None when kernels.wasm can run the node, else the reason it can't
(shown by get_provider_assignment() and `python -m nnwasm inspect`). A check also states the
dtypes it takes: f32(...) for float32 compute kernels, any_dtype(...) for byte movers; the
reductions (check_reduce, check_arg) check their own, as some take int32/int64 too. The
provider has already checked what every row needs: ai.onnx domain, static shapes, no empty
tensors, and only types of a fixed size.
"""
from .lower.common import any_dtype, f32, ok, single_output
from .lower.conv import check_conv, check_pool, lower_average_pool, lower_conv, lower_max_pool
from .lower.elementwise import (check_batch_norm, check_binary, check_clip, lower_batch_norm, lower_binary,
                                lower_sum, lower_unary)
from .lower.linalg import check_einsum, check_gemm, check_matmul, lower_einsum, lower_gemm, lower_matmul
from .lower.movement import check_dropout, check_transpose, lower_concat, lower_copy, lower_transpose
from .lower.norm import check_channel_norm, check_layer_norm, lower_channel_norm, lower_layer_norm
from .lower.reduce import (check_arg, check_global_pool, check_lp_norm, check_reduce, check_softmax, lower_arg,
                           lower_global_average_pool, lower_global_max_pool, lower_lp_norm, lower_reduce,
                           lower_softmax)

LOWERINGS = {
    # elementwise (lower/elementwise.py)
    "Add": (f32(check_binary), lower_binary),
    "Sub": (f32(check_binary), lower_binary),
    "Mul": (f32(check_binary), lower_binary),
    "Div": (f32(check_binary), lower_binary),
    "Sum": (f32(check_binary), lower_sum),
    "BatchNormalization": (f32(check_batch_norm), lower_batch_norm),
    "Relu": (f32(ok), lower_unary),
    "Clip": (f32(check_clip), lower_unary),
    "Sigmoid": (f32(ok), lower_unary),
    "Tanh": (f32(ok), lower_unary),
    # convolution and pooling (lower/conv.py)
    "Conv": (f32(check_conv), lower_conv),
    "MaxPool": (f32(single_output(check_pool)), lower_max_pool),
    "AveragePool": (f32(check_pool), lower_average_pool),
    # linear algebra (lower/linalg.py)
    "Gemm": (f32(check_gemm), lower_gemm),
    "MatMul": (f32(check_matmul), lower_matmul),
    "Einsum": (f32(check_einsum), lower_einsum),
    # reductions (lower/reduce.py)
    "GlobalAveragePool": (f32(check_global_pool), lower_global_average_pool),
    "Softmax": (f32(check_softmax), lower_softmax),
    "LogSoftmax": (f32(check_softmax), lower_softmax),
    "Hardmax": (check_arg, lower_arg),
    "GlobalMaxPool": (f32(check_global_pool), lower_global_max_pool),
    "ReduceSum": (check_reduce, lower_reduce),
    "ReduceMean": (check_reduce, lower_reduce),
    "ReduceMax": (check_reduce, lower_reduce),
    "ReduceMin": (check_reduce, lower_reduce),
    "ReduceProd": (check_reduce, lower_reduce),
    "ReduceL1": (check_reduce, lower_reduce),
    "ReduceL2": (check_reduce, lower_reduce),
    "ReduceSumSquare": (check_reduce, lower_reduce),
    "ReduceLogSum": (check_reduce, lower_reduce),
    "ReduceLogSumExp": (check_reduce, lower_reduce),
    "ArgMax": (check_arg, lower_arg),
    "ArgMin": (check_arg, lower_arg),
    # normalisation (lower/norm.py)
    "LayerNormalization": (f32(check_layer_norm), lower_layer_norm),
    "InstanceNormalization": (f32(check_channel_norm), lower_channel_norm),
    "GroupNormalization": (f32(check_channel_norm), lower_channel_norm),
    "LpNormalization": (f32(check_lp_norm), lower_lp_norm),
    # data movement (lower/movement.py)
    "Reshape": (any_dtype(ok), lower_copy),
    "Flatten": (any_dtype(ok), lower_copy),
    "Squeeze": (any_dtype(ok), lower_copy),
    "Unsqueeze": (any_dtype(ok), lower_copy),
    "Identity": (any_dtype(ok), lower_copy),
    "Dropout": (any_dtype(check_dropout), lower_copy),
    "Concat": (any_dtype(ok), lower_concat),
    "Transpose": (any_dtype(check_transpose), lower_transpose),
}
