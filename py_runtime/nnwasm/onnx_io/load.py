"""ONNX model bytes -> ir.Graph, with the checks that make a hostile or broken file fail early
with InvalidModel instead of somewhere deep in the runtime.

load_model returns the main ir.Graph and attaches the model-level metadata to it as the
attribute `model_info` (a ModelInfo); subgraphs do not carry one.
"""
import gc
import os
from dataclasses import dataclass, field

from .. import dtypes, ir
from ..errors import InvalidArgument, InvalidModel, Unsupported
from .messages import AttributeProto as A
from .messages import parse_model_proto
from .tensors import ExternalFiles, sparse_tensor_data, tensor_data
from . import validity

MAX_SUBGRAPH_DEPTH = 64
MAX_IR_VERSION = 64  # the newest is 14 (2025); larger numbers mean the bytes are not a model
_MAGIC = [(b"\x89PNG", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"), (b"\x1f\x8b", "a gzip file"),
          (b"PK\x03\x04", "a zip archive (a PyTorch .pt file?)")]


@dataclass
class ModelInfo:
    """ModelProto's fields outside the graph (what onnxruntime's get_modelmeta() reports)."""
    ir_version: int
    opsets: dict                  # domain ("" is ai.onnx) -> version
    producer_name: str = ""
    producer_version: str = ""
    domain: str = ""
    model_version: int = 0
    doc_string: str = ""
    graph_name: str = ""
    metadata_props: dict = field(default_factory=dict)
    num_functions: int = 0        # model-local FunctionProtos (kept undecoded)
    # Initializers the graph also declares as inputs (IR >= 4: a feed may override them), and each
    # input's dim denotations ("DATA_BATCH"; "" where none): for SessionOptions' overrides.
    initializer_inputs: list = field(default_factory=list)
    dim_denotations: dict = field(default_factory=dict)


def load_model(path_or_bytes):
    """ir.Graph of an ONNX model given as a path (str / os.PathLike) or as bytes, bytearray or
    memoryview. Raises InvalidModel for anything that is not a well-formed model nnwasm can read."""
    data, model_dir = _read(path_or_bytes)
    if not data:
        raise InvalidModel("not an ONNX model: the file is empty")
    # Decoding creates ~5 objects per node, none in a reference cycle; the cyclic collector
    # rescanning them all made loading a 20,000-node graph 1.5-2x slower (measured here).
    gc_was_on = gc.isenabled()
    gc.disable()
    if isinstance(model_dir, str):
        model_dir = ExternalFiles(model_dir)   # each external file opened once for the load
    try:
        return _load(data, model_dir)
    finally:
        if isinstance(model_dir, ExternalFiles):
            model_dir.close()
        if gc_was_on:
            gc.enable()


class ModelFile(bytes):
    """A model file's bytes, read once (read_model_file), with the path they came from: loading
    them finds external data beside it, as loading the path does."""
    path = None


def read_model_file(path):
    """ModelFile of the file at path: the one read of a model (or plan) file a session makes."""
    with open(path, "rb") as f:
        data = ModelFile(f.read())
    data.path = os.fspath(path)
    return data


def _load(data, model_dir):
    try:
        m = parse_model_proto(data)
    except InvalidModel as e:
        other = _looks_like(data)
        if other:
            raise InvalidModel(f"not an ONNX model: the bytes look like {other}") from None
        raise InvalidModel(f"not a valid ONNX model (truncated or corrupt?): {e}") from None
    if m.graph is None or m.ir_version is None:
        other = _looks_like(data) or "a protobuf message without graph or ir_version (a TensorProto?)"
        raise InvalidModel(f"not an ONNX model: the bytes look like {other}")
    if not 1 <= m.ir_version <= MAX_IR_VERSION:
        raise InvalidModel(f"not an ONNX model: ir_version {m.ir_version} is out of range")
    validity.check_ir_version(m.ir_version)
    opsets = {}
    for o in m.opset_import:
        d = _domain(o.domain)
        if o.version is None or o.version < 1 or opsets.get(d, o.version) != o.version:
            raise InvalidModel(f"invalid opset_import for domain '{o.domain or 'ai.onnx'}': version {o.version}")
        opsets[d] = o.version
    if not opsets:
        raise InvalidModel("the model has no opset_import (ONNX files before IR version 3 are not supported)")
    validity.check_opsets(opsets)
    graph = _Converter(opsets, model_dir, m.ir_version).graph(m.graph, (), 0)
    graph.model_info = ModelInfo(
        ir_version=m.ir_version, opsets=dict(opsets), producer_name=m.producer_name or "",
        producer_version=m.producer_version or "", domain=m.domain or "",
        model_version=m.model_version or 0, doc_string=m.doc_string or "", graph_name=graph.name,
        metadata_props={p.key or "": p.value or "" for p in m.metadata_props},
        num_functions=len(m.functions),
        initializer_inputs=[vi.name for vi in m.graph.input if vi.name in graph.initializers],
        dim_denotations={vi.name: _denotations(vi) for vi in m.graph.input})
    return graph


def _denotations(vi):
    tt = vi.type.tensor_type if vi.type is not None and vi.type.value == "tensor_type" else None
    if tt is None or tt.shape is None:
        return []
    return [d.denotation or "" for d in tt.shape.dim]


def _read(path_or_bytes):
    if isinstance(path_or_bytes, ModelFile):
        return path_or_bytes, os.path.dirname(os.path.abspath(path_or_bytes.path))
    if isinstance(path_or_bytes, bytes):   # external.ModelBytes carries its external data's sources
        return path_or_bytes, getattr(path_or_bytes, "external", None)
    if isinstance(path_or_bytes, (bytearray, memoryview)):
        # A private copy: TensorData views into it must not change if the caller reuses the buffer.
        return bytes(path_or_bytes), None
    if isinstance(path_or_bytes, (str, os.PathLike)):
        path = os.fspath(path_or_bytes)
        with open(path, "rb") as f:
            return f.read(), os.path.dirname(os.path.abspath(path))
    raise InvalidArgument(f"expected a model path or bytes, got {type(path_or_bytes).__name__}")


def _looks_like(data):
    """What a file that failed to parse probably is, to word the error; "" if no idea."""
    for magic, what in _MAGIC:
        if data.startswith(magic):
            return what
    head = data[:256]
    if all(32 <= b < 127 or b in b"\t\r\n" for b in head):   # a model starts with tag 0x08
        return "a text file"
    return ""


def _domain(d):
    return "" if d in (None, "", "ai.onnx") else d


def _text(b):
    try:
        return bytes(b).decode("utf-8")
    except UnicodeDecodeError:
        return bytes(b)


class _Converter:
    """Turns a GraphProto and its subgraphs into ir.Graph, checking names as it goes."""

    def __init__(self, opsets, model_dir, ir_version=8):
        self.opsets = opsets
        self.ir_version = ir_version
        self.model_dir = model_dir
        # type strings ("tensor(float)") of the values whose type is known at load, and the types
        # value_info and graph outputs declare: for validity.check_node (a subgraph sees its enclosing
        # graphs' entries; its own are dropped when it ends, as sibling branches may reuse names)
        self.types, self.declared = {}, {}

    def graph(self, g, outer, depth):
        """outer: the sets of names visible from enclosing graphs (empty for the main graph)."""
        if depth > MAX_SUBGRAPH_DEPTH:
            raise InvalidModel(f"subgraphs nested deeper than {MAX_SUBGRAPH_DEPTH} levels")
        top = depth == 0
        if not top:   # sibling subgraphs (an If's branches) may reuse names: their types must not leak
            saved = dict(self.types), dict(self.declared)
            try:
                return self._graph(g, outer, depth, top)
            finally:
                self.types, self.declared = saved
        return self._graph(g, outer, depth, top)

    def _graph(self, g, outer, depth, top):
        where = "the main graph" if top else f"subgraph '{g.name or ''}'"
        inits = {}
        for t in g.initializer:
            self._new_name(t.name, inits, where, "initializer")
            inits[t.name] = tensor_data(t, self.model_dir)
            self.types[t.name] = f"tensor({validity.elem_name(t.data_type or 0, f'{where}: initializer {t.name!r}')})"
        for sp in g.sparse_initializer:
            name = sp.values.name if sp.values is not None else None
            self._new_name(name, inits, where, "sparse initializer")
            inits[name] = sparse_tensor_data(sp, self.model_dir)

        values = {}
        for vi in g.value_info:
            v = _value_info(vi, where, "value_info", strict=False)
            values[v.name] = v
            self._declare(vi, where, "value_info", self.declared)
        outputs = [_value_info(vi, where, "output", strict=top) for vi in g.output]
        for vi in g.output:
            self._declare(vi, where, "output", self.declared)
        inputs, declared = [], {}
        for vi in g.input:
            self._declare(vi, where, "input", self.types)
            v = _value_info(vi, where, "input", strict=top and vi.name not in inits)
            self._new_name(v.name, declared, where, "input")
            declared[v.name] = v
            if v.name not in inits:
                inputs.append(v)
        values.update({v.name: v for v in outputs})
        values.update(declared)
        for name, t in inits.items():
            values.setdefault(name, ir.ValueInfo(name, t.dtype, t.shape))

        if self.ir_version < 4 and not top:   # IR 3: a subgraph's initializers are also its inputs (onnxruntime
            # refuses others; it loads a main graph's)
            for name in inits:
                if name not in declared:
                    raise InvalidModel(f"{where}: initializer '{name}' is not a graph input, which IR version "
                                       f"{self.ir_version} requires (from IR 4 it need not be)")
        local = set(declared) | set(inits)
        scope = (local,) + outer
        nodes = [self.node(n, scope, depth, where) for n in g.node]
        named = set()
        for node in nodes if top else ():   # onnxruntime loads subgraphs with repeated node names
            # (Optimum's merged Whisper decoder has two Constant_363 in its with_past branch)
            if node.name in named:
                raise InvalidModel(f"{where}: two nodes are named '{node.name}' (onnxruntime refuses the model)")
            if node.name:
                named.add(node.name)
        for v in outputs:
            if not any(v.name in s for s in scope):
                raise InvalidModel(f"{where}: output '{v.name}' is not produced by any node, input or initializer")
        return ir.Graph(nodes=nodes, inputs=inputs, outputs=outputs, initializers=inits, values=values,
                        opsets=dict(self.opsets), name=g.name or "")

    @staticmethod
    def _declare(vi, where, what, into):
        t = validity.type_string(vi.type, f"{where}: {what} '{vi.name or ''}'")
        if t is not None and vi.name:
            into[vi.name] = t

    @staticmethod
    def _new_name(name, seen, where, what):
        if not name:
            raise InvalidModel(f"{where}: an {what} has no name")
        if name in seen:
            raise InvalidModel(f"{where}: two {what}s are named '{name}'")

    def node(self, n, scope, depth, where):
        domain = _domain(n.domain)
        node = ir.Node(op_type=n.op_type or "", inputs=list(n.input), outputs=list(n.output),
                       name=n.name or "", domain=domain, opset=self.opsets.get(domain, 0))
        if not node.op_type:
            raise InvalidModel(f"{where}: a node ({node.name or 'unnamed'}) has no op_type")
        if domain not in self.opsets:
            # Models of ai.onnx.ml ops only may omit ai.onnx; one that uses it must import it.
            raise InvalidModel(f"{where}: {node} uses domain '{domain or 'ai.onnx'}', for which the model "
                               f"imports no opset")
        arity = validity.ai_onnx_arity().get(node.op_type) if domain == "" else None
        if arity is not None:
            lo_i, hi_i, lo_o, hi_o = arity
            for what, count, lo, hi in (("inputs", len(node.inputs), lo_i, hi_i),
                                        ("outputs", len(node.outputs), lo_o, hi_o)):
                if count < lo or (hi is not None and count > hi):
                    bounds = str(lo) if lo == hi else f"{lo} or more" if hi is None else f"{lo} to {hi}"
                    raise InvalidModel(f"{where}: {node} has {count} {what}; ai.onnx's {node.op_type} takes {bounds}")
        for name in node.inputs:
            if name and not any(name in s for s in scope):
                raise InvalidModel(f"{where}: {node} reads '{name}', which is not a graph input, an initializer "
                                   f"or an output of an earlier node (are the nodes topologically sorted?)")
        for a in n.attribute:
            if not a.name or a.name in node.attrs:
                raise InvalidModel(f"{where}: {node} has an unnamed or repeated attribute '{a.name or ''}'")
            try:
                if not a.type and self.ir_version >= 2:
                    raise _BadAttribute("has no type (required from IR version 2)")
                kinds = validity.ai_onnx_attribute_types().get(a.name) if domain == "" and not a.ref_attr_name else None
                if kinds is not None:
                    kind = a.type or _infer_type(a)
                    if kind not in kinds:
                        raise _BadAttribute(f"is of type {_TYPE_NAMES.get(kind, kind)}; ai.onnx defines it as "
                                            f"{' or '.join(sorted(_TYPE_NAMES[t] for t in kinds))}")
                node.attrs[a.name] = self.attribute(a, scope, depth)
            except _BadAttribute as e:
                raise InvalidModel(f"{where}: {node}, attribute '{a.name}' {e}") from None
        validity.check_node(n, node, where, self.types, self.declared)
        validity.normalize(node)
        local = scope[0]
        for name in node.outputs:
            if name in local:
                raise InvalidModel(f"{where}: {node} produces '{name}', which is already a graph input, "
                                   f"an initializer or the output of another node")
            if name and any(name in s for s in scope[1:]):
                raise InvalidModel(f"{where}: {node} produces '{name}', which is already a value of an "
                                   f"enclosing graph (ONNX values are assigned once, subgraphs included)")
            if name:
                local.add(name)
        return node

    def attribute(self, a, scope, depth):
        """Python value of an AttributeProto; _BadAttribute (message tail) if it is malformed."""
        if a.ref_attr_name:
            raise _BadAttribute(f"refers to '{a.ref_attr_name}': attribute references are only valid "
                                f"inside functions")
        kind = a.type or _infer_type(a)
        if kind == A.FLOAT:
            return a.f if a.f is not None else 0.0
        if kind == A.INT:
            return a.i or 0
        if kind == A.STRING:
            return _text(a.s if a.s is not None else b"")
        if kind == A.FLOATS:
            return list(a.floats)
        if kind == A.INTS:
            return list(a.ints)
        if kind == A.STRINGS:
            return [_text(s) for s in a.strings]
        if kind == A.GRAPH:
            if a.g is None:
                raise _BadAttribute("is of type GRAPH but holds no graph")
            return self.graph(a.g, scope, depth + 1)
        if kind == A.GRAPHS:
            return [self.graph(g, scope, depth + 1) for g in a.graphs]
        if kind == A.TYPE_PROTO:
            return a.tp  # messages.TypeProto: only the Optional/Sequence ops' "type" attributes use it
        if kind == A.TYPE_PROTOS:
            return list(a.type_protos)
        try:
            return self._tensor_attribute(a, kind)
        except InvalidModel as e:   # name the node: attribute tensors are usually unnamed
            raise _BadAttribute(f"holds a bad tensor: {e}") from None

    def _tensor_attribute(self, a, kind):
        d = self.model_dir
        if kind == A.TENSOR:
            if a.t is None:
                raise _BadAttribute("is of type TENSOR but holds no tensor")
            return tensor_data(a.t, d)
        if kind == A.SPARSE_TENSOR:
            if a.sparse_tensor is None:
                raise _BadAttribute("is of type SPARSE_TENSOR but holds no sparse tensor")
            return sparse_tensor_data(a.sparse_tensor, d)
        if kind == A.TENSORS:
            return [tensor_data(t, d) for t in a.tensors]
        if kind == A.SPARSE_TENSORS:
            return [sparse_tensor_data(s, d) for s in a.sparse_tensors]
        raise _BadAttribute(f"has an unknown type {kind}")


_TYPE_NAMES = {getattr(A, n): n for n in ("FLOAT", "INT", "STRING", "TENSOR", "GRAPH", "FLOATS", "INTS", "STRINGS",
                                           "TENSORS", "GRAPHS", "SPARSE_TENSOR", "SPARSE_TENSORS", "TYPE_PROTO",
                                           "TYPE_PROTOS")}


class _BadAttribute(Exception):
    """Raised with the end of a message; Converter.node adds which node and attribute."""


def _infer_type(a):
    """Type of an attribute written without one (IR version 1 files)."""
    for kind, name in ((A.FLOAT, "f"), (A.INT, "i"), (A.STRING, "s"), (A.TENSOR, "t"), (A.GRAPH, "g")):
        if getattr(a, name) is not None:
            return kind
    for kind, name in ((A.FLOATS, "floats"), (A.INTS, "ints"), (A.STRINGS, "strings"),
                       (A.TENSORS, "tensors"), (A.GRAPHS, "graphs")):
        if getattr(a, name):
            return kind
    raise _BadAttribute("has neither a type nor a value")


def _value_info(vi, where, what, strict):
    """ir.ValueInfo of a ValueInfoProto. strict (the main graph's inputs and outputs): the value
    must be a tensor of an element type nnwasm knows, a sequence of such tensors or an optional
    of either."""
    name = vi.name or ""
    if not name:
        raise InvalidModel(f"{where}: an {what} has no name")
    kind, tt = type_kind(vi.type)
    if tt is None:
        if strict:
            raise Unsupported(f"{where}: {what} '{name}' is {kind}; nnwasm supports tensors, sequences of "
                              f"tensors and optionals of either as inputs and outputs")
        return ir.ValueInfo(name)
    code = tt.elem_type or 0
    dt = dtypes.from_onnx(code)
    if dt is None and code and strict:
        raise Unsupported(f"{where}: {what} '{name}' has element type {code}, which nnwasm does not support")
    shape = None if tt.shape is None else tuple(_dim(d) for d in tt.shape.dim)
    return ir.ValueInfo(name, dt, shape, kind)


def type_kind(tp):
    """(kind, TypeTensor of the innermost tensor) of a messages.TypeProto; kind is an ir.ValueInfo
    kind. For what nnwasm can't hold (maps, sequences of sequences...), (description, None)."""
    kind = tp.value if tp is not None else None
    if kind == "tensor_type":
        return "tensor", tp.tensor_type
    inner = tp.sequence_type if kind == "sequence_type" else tp.optional_type if kind == "optional_type" else None
    if inner is not None and inner.elem_type is not None:
        sub, tt = type_kind(inner.elem_type)
        if kind == "sequence_type" and sub == "tensor":
            return "sequence", tt
        if kind == "optional_type" and sub in ("tensor", "sequence"):
            return ("optional" if sub == "tensor" else "optional sequence"), tt
        return f"of kind {kind.replace('_type', '')} of {sub}", None
    return (f"of kind {kind.replace('_type', '')}" if kind else "untyped"), None


def _dim(d):
    if d.value == "dim_value":
        # Some exporters write -1 for "unknown": read it as unknown rather than reject the model.
        return d.dim_value if d.dim_value >= 0 else None
    if d.value == "dim_param":
        return d.dim_param or None
    return None
