"""The graph optimizer: a named pipeline of passes (tract's declutter/codegen), each run from a
minimum SessionOptions.graph_optimization_level (onnxruntime's levels).

Passes run in two phases around shape inference (passes.infer_shapes):
  "graph"  on the loaded graph, before shapes are known (structural clean-ups);
  "shaped" after shape inference, again for each concrete input shape of a model with symbolic
           dims: constant folding asks the providers, fusions ask them whether they would still
           run the fused node (a fusion never moves work to a less preferred provider).
Each pass takes a Context and returns the number of rewrites it made; after the "shaped" passes
rewrote anything, shapes are inferred again so new nodes have types. Passes never mutate a Node
in place (replace it): prepared variants of one session share their unchanged nodes.
"""
from dataclasses import dataclass
from typing import Callable

from ..options import GraphOptimizationLevel as L
from .. import passes
from ..ir import subgraphs
from . import batchnorm, cleanup, const_fold, fp16, fusions, qdq, transformer
from . import activation_fusions, cse, norm_fusions


@dataclass(frozen=True)
class Pass:
    name: str
    level: int          # the minimum graph_optimization_level that runs it
    phase: str          # "graph" or "shaped"
    run: Callable       # run(ctx) -> number of rewrites
    static: bool = False   # asks providers about the nodes it makes: needs concrete input shapes


PIPELINE = [
    # Required whatever the level: providers read constants as initializers.
    Pass("constants_to_initializers", L.ORT_DISABLE_ALL, "graph", cleanup.constants_to_initializers),
    Pass("drop_identities", L.ORT_ENABLE_BASIC, "graph", cleanup.drop_identities),
    Pass("common_subexpressions", L.ORT_ENABLE_BASIC, "graph", cse.common_subexpressions),
    # int8: DQ -> op -> Q groups become integer ops (QLinearConv, ...), as onnxruntime's QDQ
    # transformer does at its extended level
    Pass("fuse_qdq", L.ORT_ENABLE_EXTENDED, "graph", qdq.fuse_qdq),
    Pass("float16_to_float32", L.ORT_ENABLE_BASIC, "shaped", fp16.float16_to_float32),
    Pass("drop_noop_casts", L.ORT_ENABLE_BASIC, "shaped", cleanup.drop_noop_casts),
    Pass("fold_constants", L.ORT_ENABLE_BASIC, "shaped", const_fold.fold_constants),
    Pass("fuse_batch_norm", L.ORT_ENABLE_BASIC, "shaped", batchnorm.fuse_batch_norm),
    Pass("fuse_conv_mul", L.ORT_ENABLE_BASIC, "shaped", batchnorm.fuse_conv_mul),
    Pass("fuse_conv_bias_add", L.ORT_ENABLE_BASIC, "shaped", fusions.fuse_conv_bias_add),
    Pass("matmul_add_to_gemm", L.ORT_ENABLE_BASIC, "shaped", fusions.matmul_add_to_gemm, static=True),
    Pass("fuse_layer_norm", L.ORT_ENABLE_EXTENDED, "shaped", transformer.fuse_layer_norm, static=True),
    Pass("fuse_gelu", L.ORT_ENABLE_EXTENDED, "shaped", transformer.fuse_gelu, static=True),
    Pass("fuse_rms_norm", L.ORT_ENABLE_EXTENDED, "shaped", norm_fusions.fuse_rms_norm, static=True),
    Pass("fuse_skip_norm", L.ORT_ENABLE_EXTENDED, "shaped", norm_fusions.fuse_skip_norm, static=True),
    Pass("fuse_attention", L.ORT_ENABLE_EXTENDED, "shaped", transformer.fuse_attention, static=True),
    Pass("fuse_hard_swish", L.ORT_ENABLE_EXTENDED, "shaped", activation_fusions.fuse_hard_swish, static=True),
    Pass("fuse_conv_activation", L.ORT_ENABLE_EXTENDED, "shaped", fusions.fuse_conv_activation, static=True),
    Pass("fuse_gemm_activation", L.ORT_ENABLE_EXTENDED, "shaped", fusions.fuse_gemm_activation, static=True),
    Pass("remove_dead_nodes", L.ORT_ENABLE_BASIC, "shaped", cleanup.remove_dead_nodes),
]


class Context:
    """What a pass sees: the graph, the session's providers in priority order, and the level."""

    def __init__(self, graph, providers, level):
        self.graph, self.providers, self.level = graph, list(providers), int(level)
        self._names = 0

    def fresh(self, hint):
        """A value or node name not used in the graph."""
        taken = self.graph.values.keys() | self.graph.initializers.keys()
        while True:
            self._names += 1
            name = f"{hint}/nnwasm_opt_{self._names}"
            if name not in taken:
                return name

    def preferred(self, node):
        """Index of the first provider that accepts the node (len(providers) if none)."""
        for k, p in enumerate(self.providers):
            try:
                if p.capability(node, self.graph) is None:
                    return k
            except Exception:   # a check that can't judge a node's shapes refuses it
                continue
        return len(self.providers)


def optimize(graph, phase, level, providers=(), static=True):
    """Runs the pipeline's passes of this phase up to level; returns the graph (changed in place).
    static=False (symbolic input dims) skips the passes that need concrete shapes: the session
    runs them per concrete input shape."""
    if phase == "graph":   # bodies get the structural clean-ups too (their Constants become weights)
        for node in graph.nodes:
            for _, body in subgraphs(node):
                optimize(body, phase, level, providers, static)
    ctx = Context(graph, providers, level)
    changed = 0
    for p in PIPELINE:
        if p.phase == phase and int(level) >= p.level and (static or not p.static):
            n = p.run(ctx)
            changed += n
            if n and phase == "shaped":
                passes.infer_shapes(graph, _bound_shapes(graph))
    return graph


def _bound_shapes(graph):
    """The input shapes the graph's values were inferred for (bound symbolic dims stay bound)."""
    return {v.name: graph.values[v.name].shape for v in graph.inputs
            if v.name in graph.values and graph.values[v.name].shape is not None}
