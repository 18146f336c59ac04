"""LOWERINGS: the WASM capability table, the one hand-edited list of the ONNX ops kernels.wasm
runs. Each row is op type -> (check, lower); the functions live in lower/<family>.py.

check(node, graph) returns None when kernels.wasm can run the node, else the reason it can't
(shown by get_provider_assignment() and `python -m nnwasm inspect`). A check also states the
dtypes it takes: f32(...) for float32 compute kernels, any_dtype(...) for byte movers. The
provider has already checked what every row needs: ai.onnx domain, static shapes, no empty
tensors, and only types of a fixed size.
"""
from .lower.common import any_dtype, f32, ok, single_output
from .lower.conv import check_conv, check_pool, lower_average_pool, lower_conv, lower_max_pool
from .lower.elementwise import (check_batch_norm, check_binary, check_clip, lower_batch_norm, lower_binary,
                                lower_sum, lower_unary)
from .lower.linalg import check_gemm, check_matmul, lower_gemm, lower_matmul
from .lower.movement import check_dropout, check_transpose, lower_concat, lower_copy, lower_transpose
from .lower.quant import (check_conv_integer, check_dynamic_quantize, check_matmul_integer,
                          check_matmul_integer_to_float, check_qgemm, check_qlinear_add, check_qlinear_conv,
                          check_qlinear_matmul, check_quantize, lower_conv_integer, lower_dynamic_quantize,
                          lower_matmul_integer, lower_matmul_integer_to_float, lower_qgemm, lower_qlinear_add,
                          lower_qlinear_conv, lower_qlinear_matmul, lower_quantize)
from .lower.reduce import check_global_pool, check_softmax, lower_global_average_pool, lower_softmax

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
    # reductions (lower/reduce.py)
    "GlobalAveragePool": (f32(check_global_pool), lower_global_average_pool),
    "Softmax": (f32(check_softmax), lower_softmax),
    "LogSoftmax": (f32(check_softmax), lower_softmax),
    # data movement (lower/movement.py)
    "Reshape": (any_dtype(ok), lower_copy),
    "Flatten": (any_dtype(ok), lower_copy),
    "Squeeze": (any_dtype(ok), lower_copy),
    "Unsqueeze": (any_dtype(ok), lower_copy),
    "Identity": (any_dtype(ok), lower_copy),
    "Dropout": (any_dtype(check_dropout), lower_copy),
    "Concat": (any_dtype(ok), lower_concat),
    "Transpose": (any_dtype(check_transpose), lower_transpose),
    # int8 (lower/quant.py); each check states its dtypes. "domain:op" rows are other domains' ops.
    "QuantizeLinear": (check_quantize, lower_quantize),
    "DequantizeLinear": (check_quantize, lower_quantize),
    "DynamicQuantizeLinear": (check_dynamic_quantize, lower_dynamic_quantize),
    "MatMulInteger": (check_matmul_integer, lower_matmul_integer),
    "QLinearMatMul": (check_qlinear_matmul, lower_qlinear_matmul),
    "ConvInteger": (check_conv_integer, lower_conv_integer),
    "QLinearConv": (check_qlinear_conv, lower_qlinear_conv),
    "com.microsoft:QLinearAdd": (check_qlinear_add, lower_qlinear_add),
    "com.microsoft:QGemm": (check_qgemm, lower_qgemm),
    "com.microsoft:MatMulIntegerToFloat": (check_matmul_integer_to_float, lower_matmul_integer_to_float),
}


def lowering_key(node):
    """A node's row in LOWERINGS: its op type, prefixed by "domain:" outside ai.onnx."""
    return node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}:{node.op_type}"
