"""Lowering of RNN, GRU and LSTM to `recurrent`, one op per direction. Both layouts are strides
of the op (time and batch strides of X and Y, the batch stride of the states), and a direction
is an offset into W, R, B, P and the outputs, so no data moves around the kernel."""
import math

from ...host import get_host
from ...ops.rnn import DEFAULT_ACTIVATIONS, GATES, num_directions

KINDS = {"RNN": 0, "GRU": 1, "LSTM": 3}   # ops.def: +1 for linear_before_reset / input_forget
SEQ_LENS = 4                              # input index of sequence_lens


def _dims(node, g):
    """(seq, batch, input, hidden, directions, layout)"""
    x, r = g.values[node.inputs[0]].shape, g.values[node.inputs[2]].shape
    layout = node.attr("layout", 0)
    seq, batch = (x[1], x[0]) if layout else (x[0], x[1])
    return seq, batch, x[2], r[2], num_directions(node), layout


def _kind(node):
    variant = {"GRU": "linear_before_reset", "LSTM": "input_forget"}.get(node.op_type)
    return KINDS[node.op_type] + (1 if variant and node.attr(variant, 0) else 0)


def _scratch(node, g, host):
    seq, batch, inp, hidden, _, _ = _dims(node, g)
    return host.call("nnw_recurrent_scratch_bytes", _kind(node), seq, batch, inp, hidden)


def check_recurrent(node, g):
    for i, name in enumerate(node.inputs):
        if name and i != SEQ_LENS and g.values[name].dtype.name != "float32":
            return f"'{name}' is {g.values[name].dtype.name}; this WASM kernel takes float32"
    names = node.attr("activations")
    if names is not None and names != DEFAULT_ACTIVATIONS[node.op_type] * num_directions(node):
        return f"activations {names} (only the default {DEFAULT_ACTIVATIONS[node.op_type]} run on WASM)"
    seq = _dims(node, g)[0]
    if len(node.inputs) > SEQ_LENS and node.inputs[SEQ_LENS]:
        lens = g.initializers.get(node.inputs[SEQ_LENS])
        if lens is None or any(v != seq for v in lens.tolist()):
            return "sequence_lens other than a constant equal to the sequence length"
    if _scratch(node, g, get_host()) < 0:
        return "kernels.wasm refuses these sizes"
    return None


def _input(node, i):
    return node.inputs[i] if len(node.inputs) > i and node.inputs[i] else None


def _output(node, i):
    return node.outputs[i] if len(node.outputs) > i and node.outputs[i] else None


def lower_recurrent(node, b):
    seq, batch, inp, hid, dirs, layout = _dims(node, b.graph)
    gh = GATES[node.op_type] * hid
    if layout:
        x_ts, x_bs, y_ts, y_bs, h_bs = inp, seq * inp, dirs * hid, seq * dirs * hid, dirs * hid
        y_at = h_at = hid          # floats from one direction's output rows to the next's
    else:
        x_ts, x_bs, y_ts, y_bs, h_bs = batch * inp, inp, dirs * batch * hid, hid, hid
        y_at = h_at = batch * hid
    clip = node.attr("clip")
    reverse = node.attr("direction", "forward") == "reverse"
    lstm = node.op_type == "LSTM"

    bias, peep = _input(node, 3), _input(node, 7) if lstm else None

    def at(name, floats):
        return b.ref(name, 4 * floats) if name else None

    for d in range(dirs):
        b.emit("recurrent", kind=_kind(node), x=b.ref(node.inputs[0]), w=at(node.inputs[1], d * gh * inp),
               r=at(node.inputs[2], d * gh * hid), b=at(bias, d * 2 * gh), p=at(peep, d * 3 * hid),
               h0=at(_input(node, 5), d * h_at), c0=at(_input(node, 6) if lstm else None, d * h_at),
               y=at(_output(node, 0), d * y_at), yh=at(_output(node, 1), d * h_at),
               yc=at(_output(node, 2) if lstm else None, d * h_at), scratch=b.scratch(_scratch(node, b.graph, b.host)),
               seq=seq, batch=batch, input=inp, hidden=hid, reverse=1 if reverse or d == 1 else 0,
               x_ts=x_ts, x_bs=x_bs, y_ts=y_ts, y_bs=y_bs, h_bs=h_bs, clip=math.inf if clip is None else clip)
