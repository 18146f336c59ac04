"""Block-quantized weights on kernels.wasm (kernels_c/q4/): com.microsoft MatMulNBits as q4_matmul
on B exactly as the model ships it (uint8 blocks: no dequantized copy in the plan or the arena),
GatherBlockQuantized as q4_gather, and DynamicQuantizeMatMul as the int8 path of quantize_dynamic's
graphs: q8_dyn_quantize of A, then q8_gemm_pk8 on B packed once as int8 panels (lower/quant_pk8.py).

Malformed nodes (block size not a power of two, B / scales / zero points of the wrong packed
size) are refused earlier, by shape inference (ops/quant_blocks.py), with the node named; the
checks here refuse, with the reason, what the kernels do not do."""
from ...tensor import numel
from ...ops.quant_blocks import gbq_params, nbits_params
from ...ops.quant_blocks_int8 import int8_a
from .quant import _input, _packable, _per_channel
from .quant_pk8 import emit_gemm_pk8

_FLOAT_ONLY = "this WASM kernel takes float32 (a float16 model is turned float32 by the optimizer first)"


def _dt(g, name):
    return g.values[name].dtype.name


def _trivial_g_idx(g, name, k, bs):
    t = g.initializers.get(name)
    return t is not None and [int(v) for v in t.tolist()] == [i // bs for i in range(k)]


def check_matmul_nbits(node, g):
    a, b_, scales = node.inputs[:3]
    zp, g_idx, bias = _input(node, 3), _input(node, 4), _input(node, 5)
    k, n, bits, bs, kb, blob = nbits_params(node)
    for name in (a, scales, bias, node.outputs[0]):
        if name and _dt(g, name) != "float32":
            return f"'{name}' is {_dt(g, name)}; {_FLOAT_ONLY}"
    if _dt(g, b_) != "uint8":
        return f"B is {_dt(g, b_)}"
    if zp and _dt(g, zp) not in ("uint8", "float32"):
        return f"zero_points of type {_dt(g, zp)}"
    if g_idx and not _trivial_g_idx(g, g_idx, k, bs):
        return "a g_idx that reorders K (act-order GPTQ); the kernel reads blocks in order"
    m = numel(g.values[a].shape[:-1])
    if m == 0:
        return f"'{a}' is empty"
    from ...host import get_host
    if get_host().call("nnw_q4_matmul_scratch_bytes", m, n, k, bits, bs) < 0:
        return "kernels.wasm refuses a MatMulNBits this large"
    return None


def lower_matmul_nbits(node, b):
    a, w, scales = node.inputs[:3]
    zp, bias = _input(node, 3), _input(node, 5)
    k, n, bits, bs, kb, blob = nbits_params(node)
    m = numel(b.shape(a)[:-1])
    zk = 0 if not zp else 1 if b.dtype(zp).name == "uint8" else 2
    # accuracy_level 4: A quantized to int8 per block where onnxruntime's CPU kernel does so
    # (ops/quant_blocks_int8.py), in decode and prefill alike: the numpy reference's bits
    a_int8 = int(int8_a(node.attr("accuracy_level", 0), bits, bs, zk == 2, bool(_input(node, 4))))
    b.emit("q4_matmul", a=b.ref(a), b=b.ref(w), scales=b.ref(scales), zp=b.ref(zp) if zp else None,
           bias=b.ref(bias) if bias else None, y=b.ref(node.outputs[0]),
           scratch=b.scratch(b.host.call("nnw_q4_matmul_scratch_bytes", m, n, k, bits, bs)),
           m=m, n=n, k=k, bits=bits, block_size=bs, zp_kind=zk, a_int8=a_int8)


def check_gather_block_quantized(node, g):
    data, idx, scales = node.inputs[:3]
    if _dt(g, data) != "uint8":
        return f"data of type {_dt(g, data)} (the kernel takes uint8 blocks)"
    if _dt(g, idx) not in ("int32", "int64"):
        return f"indices of type {_dt(g, idx)}"
    for name in (scales, node.outputs[0]):
        if _dt(g, name) != "float32":
            return f"'{name}' is {_dt(g, name)}; {_FLOAT_ONLY}"
    zp = _input(node, 3)
    if zp and _dt(g, zp) != "uint8":
        return f"zero_points of type {_dt(g, zp)}"
    if len(g.values[data].shape) != 2:
        return "data of rank other than 2"
    return None


def lower_gather_block_quantized(node, b):
    data, idx, scales = node.inputs[:3]
    zp = _input(node, 3)
    ga, qa, bs, bits, comp = gbq_params(node, b.graph.values[data])
    rows, packed = b.shape(data)
    b.emit("q4_gather", data=b.ref(data), idx=b.ref(idx), scales=b.ref(scales), zp=b.ref(zp) if zp else None,
           y=b.ref(node.outputs[0]), idx_dtype=b.dtype(idx).onnx, rows=rows, cols=packed * comp,
           n_idx=numel(b.shape(idx)), bits=bits, block_size=bs)


def check_dynamic_quantize_matmul(node, g):
    a, w, w_s = node.inputs[:3]
    w_zp, bias = _input(node, 3), _input(node, 4)
    if _dt(g, a) != "float32" or _dt(g, w_s) != "float32" or (bias and _dt(g, bias) != "float32"):
        return "A, b_scale and bias must be float32"
    if _dt(g, w) not in ("uint8", "int8"):
        return f"B is {_dt(g, w)}"
    if not _packable(g, w, w_zp) or w_s not in g.initializers:
        return "B, its scale and zero point must be constants of a 2-D B (packed at plan build)"
    k, n = g.values[w].shape
    if len(g.values[a].shape) < 2:
        return "a 1-D A"
    if _per_channel(g, w_s, n) is None or (w_zp and _per_channel(g, w_zp, n) is None):
        return "b_scale or b_zero_point neither per-tensor nor per-column"
    if bias and tuple(g.values[bias].shape) != (n,):
        return "a bias that is not [N]"
    from ...host import get_host
    if get_host().call("nnw_q8_gemm_pk8_scratch_bytes", numel(g.values[a].shape[:-1]), k) < 0:
        return "kernels.wasm refuses a GEMM this large"
    return None


def lower_dynamic_quantize_matmul(node, b):
    """A -> uint8 (scale, zero point) by q8_dyn_quantize; scale = a_scale * b_scale; q8_gemm_pk8
    on B packed once, bias as its float bias."""
    a, w, w_s = node.inputs[:3]
    w_zp, bias = _input(node, 3), _input(node, 4)
    k, n = b.shape(w)
    count = numel(b.shape(a))
    m = count // k
    aq, a_scale, a_zp = b.scratch(count), b.scratch(4), b.scratch(1)
    b.emit("q8_dyn_quantize", x=b.ref(a), y=aq, scale=a_scale, zero_point=a_zp, count=count)
    sc = numel(b.shape(w_s))
    scale = b.scratch(4 * sc)
    dims = {f"d{i}": sc if i == 0 else 1 for i in range(6)}
    dims.update({f"as{i}": 0 for i in range(6)})
    dims.update({f"bs{i}": int(i == 0 and sc > 1) for i in range(6)})
    b.emit("binary", kind=2, a=a_scale, b=b.ref(w_s), y=scale, rank=1, **dims)
    emit_gemm_pk8(b, aq, w, a_zp, w_zp, node.outputs[0], scale, int(sc > 1), bias, None, 0, m=m)

