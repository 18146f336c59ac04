"""LOWERINGS: the WASM capability table, the one hand-edited list of the ONNX ops kernels.wasm
runs. Each row is op type -> (check, lower); the functions live in lower/<family>.py. Ops of
other domains than ai.onnx are keyed "domain.OpType" (lowering_key).

check(node, graph) returns None when kernels.wasm can run the node, else the reason it can't
(shown by get_provider_assignment() and `python -m nnwasm inspect`). A check also states the
dtypes it takes: f32(...) for float32 compute kernels, any_dtype(...) for byte movers; the
reductions (check_reduce, check_arg) check their own, as some take int32/int64 too. The
provider has already checked what every row needs: an op the registry knows at the node's opset,
static shapes, no empty tensors, and only types of a fixed size.
"""
from .lower.common import any_dtype, f32, ok, single_output
from .lower.attention_kv import (check_attention_ms, check_gqa, check_mha, check_onnx_attention, lower_attention_ms,
                                lower_gqa, lower_mha, lower_onnx_attention)
from .lower.cast import lower_cast
from .lower.contrib_transformer import (check_bias_act, check_embed_layer_norm, check_rms_norm, check_rotary,
                                        check_skip_norm, lower_bias_act, lower_embed_layer_norm, lower_rms_norm,
                                        lower_rotary, lower_skip_norm)
from .lower.conv import (check_conv, check_conv_transpose, check_pool, lower_average_pool, lower_conv,
                         lower_conv_transpose, lower_max_pool)
from .lower.elementwise import (check_arith, check_batch_norm, check_binary, check_clip, check_gelu, check_neg,
                                check_prelu, lower_batch_norm, lower_binary, lower_neg, lower_unary, lower_variadic)
from .lower.logic import (check_compare, check_is, check_not, check_where, lower_compare, lower_unary_bool,
                          lower_where)
from .lower.fused import check_fused_conv, check_fused_gemm, lower_fused_conv, lower_fused_gemm
from .lower.gather import check_gather, check_gather_elements, lower_gather, lower_gather_elements
from .lower.linalg import check_einsum, check_gemm, check_matmul, lower_einsum, lower_gemm, lower_matmul
from .lower.movement import check_dropout, check_transpose, lower_concat, lower_copy, lower_transpose
from .lower.reindex import (check_expand, check_pad, check_slice, check_space_depth, check_split, check_tile,
                            lower_expand, lower_pad, lower_slice, lower_space_depth, lower_split, lower_tile)
from .lower.resize import check_resize, lower_resize
from .lower.positional import check_range, check_trilu, lower_range, lower_trilu
from .lower.scatter import check_scatter_nd, lower_scatter_nd
from .lower.topk import check_topk, lower_topk
from .lower.spectral import check_dft, check_stft, lower_dft, lower_stft
from .lower.norm import check_channel_norm, check_layer_norm, lower_channel_norm, lower_layer_norm
from .lower.reduce import (check_arg, check_global_pool, check_lp_norm, check_reduce, check_softmax, lower_arg,
                           lower_global_average_pool, lower_global_max_pool, lower_lp_norm, lower_reduce,
                           lower_softmax)
from .lower.rnn import check_recurrent, lower_recurrent
from .lower.quant import (check_conv_integer, check_dynamic_quantize, check_matmul_integer,
                          check_matmul_integer_to_float, check_qgemm, check_qlinear_add, check_qlinear_conv,
                          check_qlinear_matmul, check_quantize, lower_conv_integer, lower_dynamic_quantize,
                          lower_matmul_integer, lower_matmul_integer_to_float, lower_qgemm, lower_qlinear_add,
                          lower_qlinear_conv, lower_qlinear_matmul, lower_quantize)
from .lower.quant_blocks import (check_dynamic_quantize_matmul, check_gather_block_quantized, check_matmul_nbits,
                                 lower_dynamic_quantize_matmul, lower_gather_block_quantized, lower_matmul_nbits)

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
    "ConvTranspose": (f32(check_conv_transpose), lower_conv_transpose),
    "MaxPool": (f32(single_output(check_pool)), lower_max_pool),
    "AveragePool": (f32(check_pool), lower_average_pool),
    # linear algebra (lower/linalg.py)
    "Gemm": (f32(check_gemm), lower_gemm),
    "MatMul": (f32(check_matmul), lower_matmul),
    # recurrent layers (lower/rnn.py); check_recurrent states its dtypes (sequence_lens is int32)
    "RNN": (check_recurrent, lower_recurrent),
    "GRU": (check_recurrent, lower_recurrent),
    "LSTM": (check_recurrent, lower_recurrent),
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
    # gathers with run-time indices (lower/gather.py)
    "Gather": (any_dtype(check_gather), lower_gather),
    "GatherElements": (any_dtype(check_gather_elements), lower_gather_elements),
    # per-axis index tables built at plan build (lower/reindex.py, lower/resize.py)
    "Slice": (any_dtype(check_slice), lower_slice),
    "Expand": (any_dtype(check_expand), lower_expand),
    "Tile": (any_dtype(check_tile), lower_tile),
    "Split": (any_dtype(check_split), lower_split),
    "Pad": (any_dtype(check_pad), lower_pad),
    "DepthToSpace": (any_dtype(check_space_depth), lower_space_depth),
    "SpaceToDepth": (any_dtype(check_space_depth), lower_space_depth),
    "Resize": (check_resize, lower_resize),
    "Upsample": (check_resize, lower_resize),
    "Trilu": (check_trilu, lower_trilu),
    "Range": (check_range, lower_range),
    "ScatterND": (check_scatter_nd, lower_scatter_nd),
    # onnxruntime's contrib ops the optimizer emits (lower/fused.py)
    "com.microsoft.FusedConv": (f32(check_fused_conv), lower_fused_conv),
    "com.microsoft.FusedGemm": (f32(check_fused_gemm), lower_fused_gemm),
    "com.microsoft.Gelu": (f32(ok), lower_unary),
    # onnxruntime's transformer norms, activations, embeddings, rotary (lower/contrib_transformer.py)
    "com.microsoft.SkipLayerNormalization": (check_skip_norm, lower_skip_norm),
    "com.microsoft.SkipSimplifiedLayerNormalization": (check_skip_norm, lower_skip_norm),
    "SimplifiedLayerNormalization": (check_rms_norm, lower_rms_norm),
    "RMSNormalization": (check_rms_norm, lower_rms_norm),
    "com.microsoft.EmbedLayerNormalization": (check_embed_layer_norm, lower_embed_layer_norm),
    "com.microsoft.BiasGelu": (check_bias_act, lower_bias_act),
    "com.microsoft.FastGelu": (check_bias_act, lower_bias_act),
    "com.microsoft.QuickGelu": (check_bias_act, lower_bias_act),
    "com.microsoft.RotaryEmbedding": (check_rotary, lower_rotary),
    "RotaryEmbedding": (check_rotary, lower_rotary),
    "com.microsoft.MultiHeadAttention": (check_mha, lower_mha),
    "com.microsoft.GroupQueryAttention": (check_gqa, lower_gqa),
    "com.microsoft.Attention": (check_attention_ms, lower_attention_ms),
    "Attention": (check_onnx_attention, lower_onnx_attention),
    # int8 (lower/quant.py); each check states its dtypes. "domain.Op" rows are other domains' ops.
    "QuantizeLinear": (check_quantize, lower_quantize),
    "DequantizeLinear": (check_quantize, lower_quantize),
    "DynamicQuantizeLinear": (check_dynamic_quantize, lower_dynamic_quantize),
    "MatMulInteger": (check_matmul_integer, lower_matmul_integer),
    "QLinearMatMul": (check_qlinear_matmul, lower_qlinear_matmul),
    "ConvInteger": (check_conv_integer, lower_conv_integer),
    "QLinearConv": (check_qlinear_conv, lower_qlinear_conv),
    "com.microsoft.QLinearAdd": (check_qlinear_add, lower_qlinear_add),
    "com.microsoft.QGemm": (check_qgemm, lower_qgemm),
    "com.microsoft.MatMulIntegerToFloat": (check_matmul_integer_to_float, lower_matmul_integer_to_float),
    # block-quantized weights (lower/quant_blocks.py); each check states its dtypes
    "com.microsoft.MatMulNBits": (check_matmul_nbits, lower_matmul_nbits),
    "com.microsoft.GatherBlockQuantized": (check_gather_block_quantized, lower_gather_block_quantized),
    "com.microsoft.DynamicQuantizeMatMul": (check_dynamic_quantize_matmul, lower_dynamic_quantize_matmul),
    "TopK": (check_topk, lower_topk),   # lower/topk.py (transformers.js's top_k helper graph)
    "DFT": (check_dft, lower_dft),      # lower/spectral.py (transformers.js's rfft and stft)
    "STFT": (check_stft, lower_stft),
}


def lowering_key(node):
    """LOWERINGS' key of a node: its op type, prefixed by its domain outside ai.onnx."""
    return node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
