"""Graph inputs whose values decide shapes: small integer inputs (a TopK's k, a Resize's sizes,
a Slice's starts and ends, an STFT's frame step) that every consumer reads only where the value
sets an output's shape. A session specialises on their values as it does on input shapes: the
variant for a run is keyed by them too, and in it they are constants, so shape inference sees
the output shapes and the WASM provider can lower those nodes (its kernels take shapes as plan
constants). transformers.js's helper graphs (TensorOpRegistry: top_k, slice, the Resize and
DFT/STFT ones) feed exactly such inputs at every call.

An input also read anywhere else (a decoder's input_ids, an attention mask) is never
specialised: its values change every run and must not cost a new plan."""
from .ir import implicit_inputs

# op type -> the input positions whose values set an output's shape (data stays data elsewhere).
SHAPE_OPERANDS = {
    "TopK": (1,), "Slice": (1, 2, 3, 4), "Resize": (1, 2, 3), "Upsample": (1,),
    "Reshape": (1,), "Expand": (1,), "Tile": (1,), "Pad": (1, 3), "ConstantOfShape": (0,),
    "Squeeze": (1,), "Unsqueeze": (1,), "Split": (1,), "Range": (0, 1, 2), "OneHot": (1,),
    "DFT": (1, 2), "STFT": (1, 3), "CenterCropPad": (1, 2),
    "ReduceSum": (1,), "ReduceMean": (1,), "ReduceMax": (1,), "ReduceMin": (1,), "ReduceProd": (1,),
    "ReduceL1": (1,), "ReduceL2": (1,), "ReduceLogSum": (1,), "ReduceLogSumExp": (1,),
    "ReduceSumSquare": (1,),
}

# At most this many elements: a shape, a few axes or a scalar, never data.
MAX_ELEMENTS = 16


def shape_value_inputs(graph):
    """Names of the graph's integer inputs read only at SHAPE_OPERANDS positions (in this graph;
    one read inside a subgraph, or a graph output, disqualifies it)."""
    uses = {}
    for node in graph.nodes:
        for i, name in enumerate(node.inputs):
            uses.setdefault(name, []).append(node.domain in ("", "ai.onnx")
                                             and i in SHAPE_OPERANDS.get(node.op_type, ()))
        for name in implicit_inputs(node):
            uses.setdefault(name, []).append(False)
    outputs = {v.name for v in graph.outputs}
    return [v.name for v in graph.inputs
            if v.kind == "tensor" and v.dtype is not None and v.dtype.name in ("int64", "int32")
            and (v.shape is None or len(v.shape) <= 1) and v.name not in outputs
            and uses.get(v.name) and all(uses[v.name])]


def specialised(names, feeds):
    """{name: TensorData} of those inputs small enough to specialise on in this run."""
    return {n: feeds[n] for n in names if feeds[n].numel <= MAX_ELEMENTS}


def key(values):
    return tuple(sorted((n, t.shape, bytes(t.data)) for n, t in values.items()))
