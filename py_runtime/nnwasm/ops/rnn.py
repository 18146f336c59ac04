"""The recurrent layers RNN, GRU and LSTM (opset 7 and 14: layout), every direction, optional
bias, sequence_lens, initial states, peepholes, clip and input_forget.

The numpy kernels step through time for the whole batch at once; a batch entry whose sequence
has ended keeps its state and gets zeros in Y, as in onnxruntime. input_forget couples the
forget gate to the input gate as f = 1 - i (onnxruntime's reading of the spec).
"""
from . import shapes as S
from .registry import op

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
DEFAULT_ACTIVATIONS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}
DIRECTIONS = ("forward", "reverse", "bidirectional")
# Activations without parameters; the others (LeakyRelu, HardSigmoid, ...) depend on
# activation_alpha/beta whose pairing onnxruntime and the spec read differently.
ACTIVATIONS = ("Sigmoid", "Tanh", "Relu", "Softsign", "Softplus")


def num_directions(node):
    direction = node.attr("direction", "forward")
    if direction not in DIRECTIONS:
        S.fail(node, f"direction must be one of {DIRECTIONS}, got {direction!r}")
    return 2 if direction == "bidirectional" else 1


def activations(node):
    """The activation names per direction, e.g. [["Sigmoid", "Tanh", "Tanh"]] * directions."""
    per = len(DEFAULT_ACTIVATIONS[node.op_type])
    dirs = num_directions(node)
    names = node.attr("activations")
    if names is None:
        names = DEFAULT_ACTIVATIONS[node.op_type] * dirs
    if len(names) != per * dirs:
        S.fail(node, f"{per * dirs} activations expected, got {names}")
    for name in names:
        if name not in ACTIVATIONS:
            S.unsupported(node, f"activation {name}")
    return [names[d * per:(d + 1) * per] for d in range(dirs)]


def _hidden(node, ws, rs):
    h = node.attr("hidden_size")
    if h is None and rs is not None and S.known(rs[-1]):
        h = rs[-1]
    if h is not None and h < 1:
        S.fail(node, f"hidden_size must be positive, got {h}")
    return h


def _check_shape(node, inputs, i, name, want):
    """An optional input's shape against `want` (None: a dim not known here)."""
    got = S.shape(S.get(inputs, i))
    if got is None:
        return
    if len(got) != len(want):
        S.fail(node, f"{name} must have shape {list(want)}, got {list(got)}")
    for a, b in zip(got, want):
        if b is not None:
            S.merge_dims(node, a, b, f"{name}'s shape {list(got)} against {list(want)}")


def infer_recurrent(node, inputs, consts):
    x, w, r = S.need(node, inputs, 0), S.need(node, inputs, 1), S.need(node, inputs, 2)
    dt = S.same_dtype(node, inputs, [0, 1, 2, 3, 5, 6, 7])
    dirs, g = num_directions(node), GATES[node.op_type]
    activations(node)
    layout = node.attr("layout", 0)
    if layout not in (0, 1):
        S.fail(node, f"layout must be 0 or 1, got {layout}")
    xs, ws, rs = S.shape(x), S.shape(w), S.shape(r)
    for name, s, rank in (("X", xs, 3), ("W", ws, 3), ("R", rs, 3)):
        if s is not None and len(s) != rank:
            S.fail(node, f"{name} must have rank {rank}, got {list(s)}")
    h = _hidden(node, ws, rs)
    if ws is not None:
        S.merge_dims(node, ws[0], dirs, "W's first dim and the directions")
        if h is not None:
            S.merge_dims(node, ws[1], g * h, f"W's second dim and {g} x hidden_size")
        if xs is not None:
            S.merge_dims(node, ws[2], xs[2], "W's input size and X's")
    if rs is not None and h is not None:
        S.merge_dims(node, rs[1], g * h, f"R's second dim and {g} x hidden_size")
        S.merge_dims(node, rs[2], h, "R's last dim and hidden_size")
    if node.op_type == "LSTM" and node.attr("input_forget", 0) not in (0, 1):
        S.fail(node, "input_forget must be 0 or 1")
    seq, batch = (None, None) if xs is None else (xs[1], xs[0]) if layout else (xs[0], xs[1])
    state = (batch, dirs, h) if layout else (dirs, batch, h)
    _check_shape(node, inputs, 3, "B", (dirs, None if h is None else 2 * g * h))
    _check_shape(node, inputs, 4, "sequence_lens", (batch,))
    _check_shape(node, inputs, 5, "initial_h", state)
    if node.op_type == "LSTM":
        _check_shape(node, inputs, 6, "initial_c", state)
        _check_shape(node, inputs, 7, "P", (dirs, None if h is None else 3 * h))
    if layout:
        y, yh = (batch, seq, dirs, h), (batch, dirs, h)
    else:
        y, yh = (seq, dirs, batch, h), (dirs, batch, h)
    return [(dt, y), (dt, yh), (dt, yh)][:len(node.outputs)]


def _act(np, name):
    return {
        "Sigmoid": lambda v: 1 / (1 + np.exp(-v)),
        "Tanh": np.tanh,
        "Relu": lambda v: np.maximum(v, 0),
        "Softsign": lambda v: v / (1 + np.abs(v)),
        "Softplus": lambda v: np.log1p(np.exp(v)),
    }[name]


def _run(node, x, w, r, b, seq_lens, h0, c0, p):
    """(Y, Y_h, Y_c) in layout 0 for layout-0 inputs; Y_c is None but for LSTM."""
    import numpy as np
    kind, g = node.op_type, GATES[node.op_type]
    seq, batch = x.shape[:2]
    dirs, hid = w.shape[0], r.shape[-1]
    dt = x.dtype
    clip = node.attr("clip")
    coupled = node.attr("input_forget", 0)
    lens = np.full(batch, seq, np.int64) if seq_lens is None else seq_lens.astype(np.int64)
    if np.any(lens < 0) or np.any(lens > seq):
        S.fail(node, f"sequence_lens {lens.tolist()} outside [0, {seq}]")
    y = np.zeros((seq, dirs, batch, hid), dt)
    yh, yc = np.zeros((dirs, batch, hid), dt), np.zeros((dirs, batch, hid), dt)
    acts = activations(node)
    reverse = node.attr("direction", "forward") == "reverse"

    def pre(v):
        return np.clip(v, -clip, clip) if clip is not None else v

    for d in range(dirs):
        f, gg, hh_act = [_act(np, a) for a in (acts[d] * 3)[:3]]
        wd, rd = w[d], r[d]
        wb = b[d, :g * hid] if b is not None else np.zeros(g * hid, dt)
        rb = b[d, g * hid:] if b is not None else np.zeros(g * hid, dt)
        h = h0[d].copy() if h0 is not None else np.zeros((batch, hid), dt)
        c = c0[d].copy() if c0 is not None else np.zeros((batch, hid), dt)
        pi, po, pf = (p[d, :hid], p[d, hid:2 * hid], p[d, 2 * hid:]) if p is not None else (0, 0, 0)
        back = reverse or d == 1
        for t in (range(seq - 1, -1, -1) if back else range(seq)):
            xw = x[t] @ wd.T + wb
            if kind == "RNN":
                hn, cn = f(pre(xw + h @ rd.T + rb)), c
            elif kind == "GRU":
                hr = h @ rd[:2 * hid].T + rb[:2 * hid]
                z = f(pre(xw[:, :hid] + hr[:, :hid]))
                rr = f(pre(xw[:, hid:2 * hid] + hr[:, hid:]))
                rh, rbh = rd[2 * hid:], rb[2 * hid:]
                if node.attr("linear_before_reset", 0):
                    ht = gg(pre(xw[:, 2 * hid:] + rr * (h @ rh.T + rbh)))
                else:
                    ht = gg(pre(xw[:, 2 * hid:] + (rr * h) @ rh.T + rbh))
                hn, cn = (1 - z) * ht + z * h, c
            else:
                a = xw + h @ rd.T + rb
                i = f(pre(a[:, :hid] + pi * c))
                fg = 1 - i if coupled else f(pre(a[:, 2 * hid:3 * hid] + pf * c))
                cn = fg * c + i * gg(pre(a[:, 3 * hid:]))
                o = f(pre(a[:, hid:2 * hid] + po * cn))
                hn = o * hh_act(cn)
            live = (t < lens)[:, None]
            h, c = np.where(live, hn, h).astype(dt), np.where(live, cn, c).astype(dt)
            y[t, d] = np.where(live, h, 0)
        yh[d], yc[d] = h, c
    return y, yh, yc


def recurrent(node, x, w, r, b=None, seq_lens=None, h0=None, c0=None, p=None):
    layout = node.attr("layout", 0)
    if layout:
        x = x.transpose(1, 0, 2)
        h0 = None if h0 is None else h0.transpose(1, 0, 2)
        c0 = None if c0 is None else c0.transpose(1, 0, 2)
    y, yh, yc = _run(node, x, w, r, b, seq_lens, h0, c0, p)
    if layout:
        y, yh, yc = y.transpose(2, 0, 1, 3), yh.transpose(1, 0, 2), yc.transpose(1, 0, 2)
    outs = (y, yh, yc)[:len(node.outputs)]
    return tuple(o.copy() for o in outs)


for _op in ("RNN", "GRU", "LSTM"):
    for _since in (7, 14):
        op(_op, _since, infer_recurrent)(recurrent)
