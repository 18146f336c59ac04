"""GFLOP of one run of an ONNX model with static shapes: the multiply-adds of its Conv, ConvInteger,
QLinearConv, Gemm, MatMul, MatMulInteger and QLinearMatMul nodes, times two (everything else,
activations, norms, softmax, is left out, as usual for this figure). Shapes from onnxruntime's symbolic
shape inference (onnx's own leaves BERT's reshaped MatMuls unknown).

    python bench/speed/model_flops.py MODEL.onnx ...
"""
import math
import sys

CONV = {"Conv": (0, 1), "ConvInteger": (0, 1), "QLinearConv": (0, 3)}   # op -> (X index, W index)
MATMUL = {"MatMul": (0, 1), "MatMulInteger": (0, 1), "QLinearMatMul": (0, 3)}


def gflop(path):
    import onnx
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference
    m = SymbolicShapeInference.infer_shapes(onnx.load(str(path)), auto_merge=True)
    g = m.graph
    shapes = {}
    for v in [*g.input, *g.value_info, *g.output]:
        dims = v.type.tensor_type.shape.dim
        shapes[v.name] = [d.dim_value if d.HasField("dim_value") else None for d in dims]
    for t in g.initializer:
        shapes[t.name] = list(t.dims)
    macs = 0
    for n in g.node:
        out = shapes.get(n.output[0])
        if n.op_type in CONV:
            w = shapes[n.input[CONV[n.op_type][1]]]
            # out [N, M, *spatial], w [M, C/group, *kernel]: each output takes C/group * kernel MACs
            macs += math.prod(out) * math.prod(w[1:])
        elif n.op_type in MATMUL:
            a = shapes[n.input[MATMUL[n.op_type][0]]]
            macs += math.prod(out) * a[-1]
        elif n.op_type == "Gemm":
            a = shapes[n.input[0]]
            trans_a = next((x.i for x in n.attribute if x.name == "transA"), 0)
            macs += math.prod(out) * (a[0] if trans_a else a[1])
    return 2 * macs / 1e9


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print(f"{gflop(p):.3f} GFLOP  {p}")
