"""LOWERINGS: the WASM capability table, the one hand-edited list of the ONNX ops kernels.wasm
runs. Each row is op type -> (check, lower); the functions live in lower/<family>.py.

check(node, graph) returns None when kernels.wasm can run the node, else the reason it can't
(shown by get_provider_assignment() and `python -m nnwasm inspect`). A check also states the
dtypes it takes: f32(...) for float32 compute kernels, any_dtype(...) for byte movers. The
provider has already checked what every row needs: ai.onnx domain, static shapes, no empty
tensors, and only types of a fixed size.
"""
from .lower.common import any_dtype, f32, ok, single_output
from .lower.cast import lower_cast
from .lower.conv import check_conv, check_pool, lower_average_pool, lower_conv, lower_max_pool
from .lower.elementwise import (check_arith, check_batch_norm, check_binary, check_clip, check_gelu, check_neg,
                                check_prelu, lower_batch_norm, lower_binary, lower_neg, lower_unary, lower_variadic)
from .lower.logic import (check_compare, check_is, check_not, check_where, lower_compare, lower_unary_bool,
                          lower_where)
from .lower.linalg import check_gemm, check_matmul, lower_gemm, lower_matmul
from .lower.movement import check_dropout, check_transpose, lower_concat, lower_copy, lower_transpose
from .lower.reduce import check_global_pool, check_softmax, lower_global_average_pool, lower_softmax

LOWERINGS = {
    # elementwise (lower/elementwise.py): float32; check_arith and check_neg also take integers
    "Add": (check_arith, lower_binary),
    "Sub": (check_arith, lower_binary),
    "Mul": (check_arith, lower_binary),
    "Div": (check_arith, lower_binary),
    "Max": (check_arith, lower_variadic),
    "Min": (check_arith, lower_variadic),
    "Sum": (check_arith, lower_variadic),
    "Mean": (check_arith, lower_variadic),
    "Pow": (f32(check_binary), lower_binary),
    "PRelu": (f32(check_prelu), lower_binary),
    "Mod": (check_arith, lower_binary),
    "Neg": (check_neg, lower_neg),
    "BatchNormalization": (f32(check_batch_norm), lower_batch_norm),
    **{op: (f32(ok), lower_unary) for op in (
        "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Reciprocal", "Abs", "Erf", "HardSigmoid",
        "HardSwish", "LeakyRelu", "Elu", "Softplus", "Selu", "Softsign", "Sign", "Floor", "Ceil", "Round",
        "Sin", "Cos", "Mish")},
    "Clip": (f32(check_clip), lower_unary),
    "Gelu": (f32(check_gelu), lower_unary),
    # comparisons, logic, Where (lower/logic.py): bool outputs; check_* state the input types
    **{op: (check_compare, lower_compare) for op in (
        "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor")},
    "Not": (check_not, lower_unary_bool),
    "IsNaN": (check_is, lower_unary_bool),
    "IsInf": (check_is, lower_unary_bool),
    "Where": (check_where, lower_where),
    # Cast (lower/cast.py): any fixed-size type to any other
    "Cast": (any_dtype(ok), lower_cast),
    "CastLike": (any_dtype(ok), lower_cast),
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
}
