"""ai.onnx.ml ops: Binarizer, ArrayFeatureExtractor, LabelEncoder, TreeEnsemble (opset 5's single
tree op, post_transform NONE). LabelEncoder maps numbers and strings alike, its keys and values
given as lists or as tensors (string tensors too)."""
from .. import dtypes
from . import shapes as S
from .elementwise import infer_unary
from .registry import op

DOMAIN = "ai.onnx.ml"


@op("Binarizer", 1, infer_unary, domain=DOMAIN)
def binarizer(node, x):
    return (x > node.attr("threshold", 0.0)).astype(x.dtype)


def infer_array_feature_extractor(node, inputs, consts):
    x, idx = S.need(node, inputs, 0), S.need(node, inputs, 1)
    xs, is_ = S.shape(x), S.shape(idx)
    n = S.numel(is_)
    if xs is None:
        return [(x.dtype, None)]
    return [(x.dtype, (1, n) if len(xs) == 1 else (*xs[:-1], n))]


@op("ArrayFeatureExtractor", 1, infer_array_feature_extractor, domain=DOMAIN)
def array_feature_extractor(node, x, idx):
    """The last axis at the given indices (flattened); a 1-D input gives one row, as onnxruntime."""
    import numpy as np
    i = idx.reshape(-1).astype(np.int64)
    n = x.shape[-1] if x.ndim else 0
    if i.size and (i.min() < 0 or i.max() >= n):
        S.fail(node, f"indices out of range [0, {n - 1}]")
    y = x[..., i]
    return y.reshape(1, -1) if x.ndim == 1 else y


# --- LabelEncoder -----------------------------------------------------------------------------------

# values_* attribute -> (element type, default attribute, default when that is absent)
LABEL_VALUES = {"values_strings": ("object", "default_string", "_Unused"),
                "values_int64s": ("int64", "default_int64", -1),
                "values_floats": ("float32", "default_float", -0.0)}


def _label_map(node):
    """(keys, values, default, output DType)."""
    keys = [k for k in ("keys_strings", "keys_int64s", "keys_floats", "keys_tensor") if node.attr(k) is not None]
    vals = [k for k in ("values_strings", "values_int64s", "values_floats", "values_tensor")
            if node.attr(k) is not None]
    if len(keys) != 1 or len(vals) != 1:
        S.fail(node, f"needs exactly one keys_* and one values_* attribute, got {keys + vals}")
    k, v = _values(node.attr(keys[0])), _values(node.attr(vals[0]))
    if len(k) != len(v):
        S.fail(node, f"{len(k)} keys for {len(v)} values")
    if vals[0] == "values_tensor":
        dt = node.attr("values_tensor").dtype
        d = node.attr("default_tensor")
        default = d.tolist()[0] if d is not None and d.numel == 1 else "_Unused" if dt.name == "object" else \
            -1 if dt.name.startswith("int") else -0.0
    else:
        name, default_attr, default = LABEL_VALUES[vals[0]]
        dt, default = dtypes.BY_NAME[name], node.attr(default_attr, default)
    return k, v, default, dt


def infer_label_encoder(node, inputs, consts):
    x = S.need(node, inputs, 0)
    return [(_label_map(node)[3], S.shape(x))]


def label_encoder(node, x):
    """Each element's value under the keys -> values map, the default where it is no key."""
    import numpy as np
    keys, vals, default, dt = _label_map(node)
    table = dict(zip(keys, vals))
    if any(k != k for k in keys):      # a NaN key matches NaN inputs
        nan = vals[next(i for i, k in enumerate(keys) if k != k)]
        get = lambda v: nan if v != v else table.get(v, default)   # noqa: E731
    else:
        get = lambda v: table.get(v, default)   # noqa: E731
    out = [get(v) for v in x.reshape(-1).tolist()]
    return np.array(out, dtype=object if dt.name == "object" else dt.name).reshape(x.shape)


for _since in (1, 2, 4):     # 2 adds int/float maps, 4 tensor keys and values
    op("LabelEncoder", _since, infer_label_encoder, domain=DOMAIN)(label_encoder)


# --- TreeEnsemble -----------------------------------------------------------------------------------

LEQ, LT, GTE, GT, EQ, NEQ, MEMBER = range(7)
AGGREGATES = {0: "AVERAGE", 1: "SUM", 2: "MIN", 3: "MAX"}


def _values(v):
    return None if v is None else v.tolist() if hasattr(v, "tolist") else list(v)


def _forest(node):
    """The attributes checked: (nodes as a list of tuples, leaves, roots, member sets by node)."""
    a = {k: _values(node.attr(k)) for k in (
        "nodes_splits", "nodes_featureids", "nodes_modes", "nodes_truenodeids", "nodes_falsenodeids",
        "nodes_trueleafs", "nodes_falseleafs", "leaf_targetids", "leaf_weights", "tree_roots",
        "nodes_missing_value_tracks_true", "membership_values")}
    need = ("nodes_splits", "nodes_featureids", "nodes_modes", "nodes_truenodeids", "nodes_falsenodeids",
            "nodes_trueleafs", "nodes_falseleafs", "leaf_targetids", "leaf_weights", "tree_roots")
    missing = [k for k in need if a[k] is None]
    if missing or node.attr("n_targets") is None:
        S.fail(node, f"attributes {missing or ['n_targets']} are required")
    n_nodes, n_leaves, n_targets = len(a["nodes_modes"]), len(a["leaf_weights"]), node.attr("n_targets")
    if any(len(a[k]) != n_nodes for k in need[:7]) or len(a["leaf_targetids"]) != n_leaves:
        S.fail(node, "the nodes_* attributes (and leaf_*) must all have one entry per node (per leaf)")
    if node.attr("post_transform", 0) != 0:
        S.unsupported(node, f"post_transform {node.attr('post_transform')} (only 0, NONE)")
    if node.attr("aggregate_function", 1) not in AGGREGATES:
        S.fail(node, f"aggregate_function must be one of {AGGREGATES}")
    if any(m not in range(7) for m in a["nodes_modes"]):
        S.fail(node, f"nodes_modes {a['nodes_modes']} must lie in 0..6")
    for k, leafs in (("nodes_truenodeids", "nodes_trueleafs"), ("nodes_falsenodeids", "nodes_falseleafs")):
        for i, (t, is_leaf) in enumerate(zip(a[k], a[leafs])):
            if not 0 <= t < (n_leaves if is_leaf else n_nodes):
                S.fail(node, f"{k}[{i}] = {t} is out of range")
    if any(not 0 <= t < n_targets for t in a["leaf_targetids"]) or any(not 0 <= r < n_nodes for r in a["tree_roots"]):
        S.fail(node, "leaf_targetids or tree_roots out of range")
    sets, members = {}, list(a["membership_values"] or [])
    for i, m in enumerate(a["nodes_modes"]):    # one NaN-terminated run of members per MEMBER node
        if m == MEMBER:
            if not members:
                S.fail(node, "membership_values lists fewer sets than there are MEMBER nodes")
            cut = next((j for j, v in enumerate(members) if v != v), len(members))
            sets[i], members = set(members[:cut]), members[cut + 1:]
    track = a["nodes_missing_value_tracks_true"] or [0] * n_nodes
    nodes = list(zip(a["nodes_modes"], a["nodes_featureids"], a["nodes_splits"], a["nodes_truenodeids"],
                     a["nodes_trueleafs"], a["nodes_falsenodeids"], a["nodes_falseleafs"], track))
    return nodes, list(zip(a["leaf_weights"], a["leaf_targetids"])), a["tree_roots"], sets


def infer_tree_ensemble(node, inputs, consts):
    x = S.need(node, inputs, 0)
    _forest(node)
    xs = S.shape(x)
    if xs is not None and len(xs) != 2:
        S.fail(node, f"X must be [N, F], got shape {list(xs)}")
    return [(x.dtype, (xs[0] if xs is not None else None, node.attr("n_targets")))]


def _goes_true(mode, v, split, members, track):
    if v != v:
        return bool(track)
    if mode == MEMBER:
        return v in members
    return (v <= split, v < split, v >= split, v > split, v == split, v != split)[mode]


@op("TreeEnsemble", 5, infer_tree_ensemble, domain=DOMAIN)
def tree_ensemble(node, x):
    """Each row walks every tree from its root to a leaf; the leaves' weights add up per target (or
    average, min, max)."""
    import numpy as np
    nodes, leaves, roots, sets = _forest(node)
    if x.ndim != 2:
        S.fail(node, f"X must be [N, F], got shape {list(x.shape)}")
    if any(n[1] >= x.shape[1] for n in nodes):
        S.fail(node, f"a node reads feature {max(n[1] for n in nodes)} of {x.shape[1]}")
    agg = AGGREGATES[node.attr("aggregate_function", 1)]
    n_targets = node.attr("n_targets")
    big = float(np.finfo(x.dtype).max) if x.dtype.kind == "f" else np.inf
    init = {"MIN": big, "MAX": -big}.get(agg, 0.0)    # what a target no leaf reaches keeps, as onnx's reference
    out = np.full((x.shape[0], n_targets), init)
    for r, row in enumerate(x.tolist()):
        for root in roots:
            mode, f, split, t, t_leaf, fl, f_leaf, track = nodes[root]
            if t_leaf and f_leaf and t == fl:      # a tree that is one leaf
                i, leaf = t, True
            else:
                i, leaf = root, False
            for _ in range(len(nodes) + 1):
                if leaf:
                    break
                mode, f, split, t, t_leaf, fl, f_leaf, track = nodes[i]
                i, leaf = (t, t_leaf) if _goes_true(mode, row[f], split, sets.get(i), track) else (fl, f_leaf)
            else:
                S.fail(node, f"tree {root} does not reach a leaf (a cycle)")
            w, target = leaves[i]
            if agg in ("SUM", "AVERAGE"):
                out[r, target] += w / (len(roots) if agg == "AVERAGE" else 1)
            else:
                out[r, target] = (min if agg == "MIN" else max)(out[r, target], w)
    return out.astype(x.dtype)
