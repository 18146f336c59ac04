"""The optimizers of the ai.onnx.preview.training domain: Adagrad, Adam, Momentum. Inputs are
R (learning rate), T (step count), then n tensors each of X, G and the optimizer's states; outputs
the new X and states, n of each. Every update is elementwise, computed in float64."""
from . import shapes as S
from .registry import op

DOMAIN = "ai.onnx.preview.training"
STATES = {"Adagrad": 1, "Adam": 2, "Momentum": 1}    # state tensors per X (besides G)


def _groups(node, n_inputs):
    k = 2 + STATES[node.op_type]          # X, G and the states
    n = (n_inputs - 2) // k
    if n < 1 or n_inputs != 2 + k * n or len(node.outputs) != (k - 1) * n:
        S.fail(node, f"{n_inputs} inputs and {len(node.outputs)} outputs do not form R, T and n groups "
                     f"of X, G and {k - 2} state(s) with {k - 1} outputs each")
    return n, k


def infer_optimizer(node, inputs, consts):
    n, k = _groups(node, len(inputs))
    for i, what in ((0, "R"), (1, "T")):
        if S.numel(S.shape(S.need(node, inputs, i))) not in (None, 1):
            S.fail(node, f"{what} must be a scalar")
    if node.op_type == "Momentum":
        for a in ("alpha", "beta", "mode", "norm_coefficient"):
            if node.attr(a) is None:
                S.fail(node, f"attribute {a} is required")
        if node.attr("mode") not in ("standard", "nesterov"):
            S.fail(node, f"mode must be standard or nesterov, got {node.attr('mode')!r}")
    out = []
    for j in range(k - 1):      # new X, then each new state, n of each
        for i in range(n):
            x = S.need(node, inputs, 2 + i)
            state = S.need(node, inputs, 2 + (j + 1) * n + i) if j else x
            S.merge_dims(node, S.rank(x), S.rank(state), "ranks of X and its state")
            out.append((state.dtype, S.shape(x)))
    return out


def _adagrad(node, r, t, x, g, h):
    import numpy as np
    r = r / (1 + t * node.attr("decay_factor", 0.0))
    g = node.attr("norm_coefficient", 0.0) * x + g
    h = h + g * g
    return x - r * g / (np.sqrt(h) + node.attr("epsilon", 0.0)), h


def _adam(node, r, t, x, g, v, h):
    import numpy as np
    alpha, beta = node.attr("alpha", 0.9), node.attr("beta", 0.999)
    g = node.attr("norm_coefficient", 0.0) * x + g
    v = alpha * v + (1 - alpha) * g
    h = beta * h + (1 - beta) * g * g
    if t > 0:    # bias correction from the first step on
        r = r * np.sqrt(1 - beta ** t) / (1 - alpha ** t)
    x = x - r * v / (np.sqrt(h) + node.attr("epsilon", 0.0))
    return (1 - node.attr("norm_coefficient_post", 0.0)) * x, v, h


def _momentum(node, r, t, x, g, v):
    alpha, beta = node.attr("alpha"), node.attr("beta")
    g = node.attr("norm_coefficient") * x + g
    v = alpha * v + (beta if t > 0 else 1) * g
    return x - r * (g + alpha * v if node.attr("mode") == "nesterov" else v), v


UPDATES = {"Adagrad": _adagrad, "Adam": _adam, "Momentum": _momentum}


def optimizer(node, r, t, *tensors):
    import numpy as np
    n, k = _groups(node, 2 + len(tensors))
    r, t = float(r.reshape(-1)[0]), int(t.reshape(-1)[0])
    outs = [[None] * n for _ in range(k - 1)]
    for i in range(n):
        group = [tensors[j * n + i] for j in range(k)]
        if any(a.shape != group[0].shape for a in group):
            S.fail(node, f"X, G and the states of group {i} differ in shape: {[list(a.shape) for a in group]}")
        new = UPDATES[node.op_type](node, r, t, *(a.astype(np.float64) for a in group))
        for j, a in enumerate(new):
            outs[j][i] = a.astype(group[0 if j == 0 else j + 1].dtype)
    return tuple(a for row in outs for a in row)


for _name in UPDATES:
    op(_name, 1, infer_optimizer, domain=DOMAIN)(optimizer)
