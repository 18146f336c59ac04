"""PlanBuilder: turns lowered ops into a plan, the byte buffer kernels.wasm executes (layout in
kernels_c/nnw.h, op table in kernels_c/ops.def).

Lowering emits ops whose tensor arguments are Refs (a value name, or a scratch block). finish()
then lays out the arena: weights first (each initializer once, 16-aligned), then activations,
placed by a greedy first-fit over their live ranges (a value lives from the op that writes it to
the last op that reads it; partition inputs from before the first op, outputs past the last), so
memory is reused as in onnxruntime's and XNNPACK's planners.
"""
import numbers
import struct

from ..errors import Unsupported
from ..symbolic import Binding, Sym, current_dims, smax, value
from ..tensor import SymTensor, TensorData, numel
from .derived import DerivedBytes
from .opcodes import OPS

MAGIC = 0x50574E4E
VERSION = 1
ALIGN = 16
MAX_DERIVED = 4096   # derived() entries a provider keeps (a model's weight matrices, many times over)
# False: each plan loaded at once keeps its weights in its own arena, as before the session's
# weights store (wasm/weights.py); for tests and before/after measurements
SHARE_WEIGHTS = True


class Ref:
    """A tensor argument: value `name` (or a scratch block of `nbytes`), plus a byte offset into it."""
    __slots__ = ("name", "offset", "nbytes")

    def __init__(self, name, offset=0, nbytes=None):
        self.name, self.offset, self.nbytes = name, offset, nbytes


def _align(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


class PlanBuilder:
    def __init__(self, graph, inputs, outputs):
        self.graph = graph
        self.inputs, self.outputs = list(inputs), list(outputs)
        self.ops = []          # (op name, {arg: value})
        self.init_ops = []     # the same, run once by nnw_plan_load (e.g. weight transforms)
        self.persistent = {}   # name -> bytes of arena buffers alive from load on (init ops' outputs)
        self.fused = set()     # ids of nodes folded into an earlier op (fused epilogues)
        self._scratch = 0
        self.constants = {}    # name -> TensorData the lowering derived (e.g. BatchNorm's scale)
        self.derived_cache = None   # the provider's {key: (sources, tensor)} or None: derived()
        # True (a plan loaded at once, runner.py): the weights are not copied into the plan but
        # given their arena places, listed in self.fills [(arena offset, bytes-like)] for the
        # runner to write there from where they are (the model's bytes; for external data,
        # onnx_io/external.py, its file): the plan is then its op words, and no copy of the weights
        # is made on the way. False (plan files): the weights go into the plan.
        self.fill_weights = False
        # With fill_weights, those weights (but those some word addresses at a symbolic offset)
        # are not laid out in the arena at all: `shared` lists their bytes-like data, the runner
        # places them in the session's weights store (wasm/weights.py, one copy for all its
        # plans), and `relocs` says which words to relocate: (arena words [index], shared words
        # [(index, shared k, offset in it)], symbolic arena words {index}). None: no such weights.
        self.shared = self.relocs = None
        # True: inputs and outputs of symbolic size (a decoder's past and present) get no arena
        # place; their offsets are dims of their own, `placed` {name: dim name}, which the runner
        # binds per run to blocks of its device region (wasm/region.py), so a cache kept in
        # kernels.wasm's memory is read and written where it is.
        self.place_io = False
        self.placed = {}
        # {output: input} a lowering's op may write over in place (kv_append of a shared past/present
        # buffer: it reads the input only where it writes the output); kept by finish() for placed
        # pairs whose input no other op reads, the runner aliasing them when asked (wasm/region.py)
        self.in_place = {}
        # {present: (past, past's capacity dim, present's capacity dim)}: placed values whose block
        # holds [B, H, cap, D] rows, cap bound per run (lower/attention_concat.py, wasm/region.py)
        self.capacity = {}
        # {present: (recipe, lens_add)}: capacity presents whose rows go at n_b = a recipe's values
        # + lens_add, computed by the runner before a run (wasm/kv_lengths.py; GroupQueryAttention's)
        self.lengths = {}
        self.lower_as = {}   # {id(node): lower(b)}: a plan-level fusion lowered at this node

    # --- what lowering uses -------------------------------------------------------------
    def shape(self, name):
        t = self.constants.get(name)
        return t.shape if t is not None else self.graph.values[name].shape

    def dtype(self, name):
        t = self.constants.get(name)
        return t.dtype if t is not None else self.graph.values[name].dtype

    def constant(self, t):
        """A Ref to a tensor the lowering computed; it goes to the weights like an initializer."""
        name = f"#const{len(self.constants)}"
        self.constants[name] = t
        return Ref(name)

    def derived(self, key, *sources, make, like=None, stream=None):
        """make(), a tensor computed from the initializers `sources` alone (B packed into panels...),
        remembered by the provider across the plans it builds (a session's variants for other input
        shapes, its control-flow bodies), so it is computed once, not once per plan; key names the
        transform and its parameters. With like=(dtype, shape), what make() returns, and a plan
        loaded at once (fill_weights), its bytes are made only when the runner fills the arena
        (derived.py), never held in Python; with stream(write) too, made a piece at a time as it is
        written there (DerivedBytes.stream)."""
        if like is not None and self.fill_weights:
            dtype, shape = like
            eager = make
            make = lambda: TensorData(dtype, shape, DerivedBytes(lambda: eager().data, numel(shape) * dtype.size,
                                                                 stream))
        cache = self.derived_cache
        if cache is None:
            return make()
        k = (key, *map(id, sources))   # an entry holds its sources, so their ids stay theirs
        hit = cache.get(k)
        if hit is None:
            if len(cache) >= MAX_DERIVED:
                del cache[next(iter(cache))]
            hit = cache[k] = (sources, make())
        return hit[1]

    def nbytes(self, name):
        return numel(self.shape(name)) * self.dtype(name).size

    def ref(self, name, offset=0):
        return Ref(name, offset)

    def scratch(self, nbytes):
        self._scratch += 1
        return Ref(f"#scratch{self._scratch}", 0, nbytes) if nbytes else None

    def emit(self, op, **args):
        self._check(op, args)
        self.ops.append((op, args))

    def emit_unchecked(self, op, check_args, args):
        """emit(op, **args) where some arguments are run-time dims (a block's row capacity) that
        have no value at plan build: check_args, the same op with plain values, is checked."""
        self._check(op, check_args)
        self.ops.append((op, args))

    def will_place(self, name):
        """Whether finish() gives `name` no arena place but a block of the runner's device region."""
        both = name in self.inputs and name in self.outputs
        return (self.place_io and (name in self.inputs or name in self.outputs) and not both
                and name not in self.graph.initializers and name not in self.constants
                and isinstance(self.nbytes(name), Sym))

    @staticmethod
    def capacity_dim(name):
        return f"@cap:{name}"

    def emit_init(self, op, **args):
        """An op run once at plan load, on weights and persistent buffers only."""
        self._check(op, args)
        self.init_ops.append((op, args))

    def persistent_buffer(self, key, nbytes):
        """(Ref, new): an arena buffer kept from load to the end of every run, named by key (one
        per key: a transform of a weight shared by two nodes is made once); new says whether this
        call created it, so the caller emits the init op that fills it."""
        name = f"#persist:{key}"
        new = name not in self.persistent
        self.persistent.setdefault(name, nbytes)
        return Ref(name), new

    @staticmethod
    def _check(op, args):
        missing = set(OPS[op].args) ^ set(args)
        if missing:
            raise AssertionError(f"{op}: arguments {sorted(missing)} do not match ops.def")
        spec = OPS[op]
        for arg, kind in zip(spec.args, spec.kinds):
            v = args[arg]
            if kind == "i" and (not isinstance(v, numbers.Integral) or not -(1 << 31) <= v < (1 << 32)):
                raise PlanArgumentError(f"kernel {op}'s argument {arg} = {v!r} is not a 32-bit integer")
            if kind == "f" and not isinstance(v, numbers.Real):
                raise PlanArgumentError(f"kernel {op}'s argument {arg} = {v!r} is not a number")

    # --- layout and encoding ------------------------------------------------------------
    def finish(self, max_arena):
        """Returns (plan as a bytearray, arena bytes, {value name: arena offset} of inputs and outputs)."""
        inits = {**self.graph.initializers, **self.constants}
        weights, blob = {}, bytearray()
        self.sym_fills = sym_fills = []   # [(arena offset, struct format, values)]
        unread = {}   # name -> weight placed after the blob, written by the runner (fill_weights)
        sym_offset = set()   # of those, the ones some word addresses at a symbolic offset
        live = {}   # name -> [first op, last op, nbytes]
        last = len(self.ops)
        if self.place_io:
            both = set(self.inputs) & set(self.outputs)
            self.placed = {n: f"@io{k}" for k, n in enumerate(dict.fromkeys(self.inputs + self.outputs))
                           if n not in both and n not in inits and isinstance(self.nbytes(n), Sym)}
        placed = self.placed
        for name in self.inputs:
            if name not in placed:
                live[name] = [-1, -1, self.nbytes(name)]
        for k, (_, args) in enumerate(self.init_ops + self.ops):
            k -= len(self.init_ops)
            for v in args.values():
                if not isinstance(v, Ref):
                    continue
                if v.name in inits:
                    # (a SymTensor, whose `values` are symbolic dims evaluated again for each run,
                    # stays in the plan's weights)
                    if self.fill_weights and not hasattr(inits[v.name], "values"):
                        unread.setdefault(v.name, inits[v.name].data)
                        if isinstance(v.offset, Sym):
                            sym_offset.add(v.name)
                        continue
                    if v.name not in weights:
                        weights[v.name] = len(blob)
                        t = inits[v.name]
                        if isinstance(t, SymTensor) and any(isinstance(x, Sym) for x in t.values):
                            # values that are expressions of dims (a past length fed to a kernel
                            # as data): written again per run (runner.py), never specialised
                            sym_fills.append((len(blob), f"<{len(t.values)}{t.dtype.struct}", t.values))
                            blob += struct.pack(sym_fills[-1][1], *map(value, t.values))
                        else:
                            blob += t.data
                        blob += bytes(_align(len(blob)) - len(blob))
                    continue
                if v.name in self.persistent or v.name in placed:
                    continue
                size = v.nbytes if v.nbytes is not None else self.nbytes(v.name)
                span = live.setdefault(v.name, [k, k, size])
                span[1] = k
        # an empty output no op writes (lower/empty.py) still gets its place
        for name in (n for n in self.outputs if n not in placed):
            live.setdefault(name, [last, last, self.nbytes(name)])[1] = last
        for name, size in self.persistent.items():
            live[name] = [-1, last, size]
        if any(isinstance(s[2], Sym) for s in live.values()):
            offsets, end = _symbolic_layout(live, self.persistent)
        else:
            offsets = _first_fit(live)
            end = max((offsets[n] + _align(s[2]) for n, s in live.items()), default=0)
        io_names = set(self.inputs) | set(self.outputs)
        shared = {n: d for n, d in unread.items()
                  if SHARE_WEIGHTS and n not in sym_offset and n not in io_names and _nbytes(d)}
        self.fills, base = [], len(blob)
        for name, data in unread.items():   # after the weights nnw_plan_load copies, before activations
            if name in shared:
                continue
            weights[name] = base
            self.fills.append((base, data))
            base = _align(base + len(data))
        where = dict(weights)
        for name, off in offsets.items():
            where[name] = base + off
        for name, var in placed.items():
            where[name] = Sym.var(var)
        reads = {}
        for _, args in self.ops:
            for v in args.values():
                if isinstance(v, Ref):
                    reads[v.name] = reads.get(v.name, 0) + 1
        self.in_place = {o: i for o, i in self.in_place.items()
                         if o in placed and i in placed and i in self.inputs and o in self.outputs and reads.get(i) == 1}
        arena = base + end
        if arena > max_arena:
            raise Unsupported(f"this WASM partition needs {arena} bytes of memory (weights and activations); "
                              f"kernels.wasm addresses at most {max_arena}")
        # weights and init ops' buffers: what an arena grown for larger dims keeps (runner.py)
        self.kept_bytes = base + max((offsets[n] + _align(s) for n, s in self.persistent.items()), default=0)
        fill_k = {n: k for k, n in enumerate(shared)}
        relocs = ([], [], set()) if self.fill_weights and SHARE_WEIGHTS else None
        init_words = _encode(self.init_ops, where, fill_k, relocs, 8)
        words = _encode(self.ops, where, fill_k, relocs, 8 + len(init_words))
        if relocs is not None:
            self.shared, self.relocs = list(shared.values()), relocs
        header_and_ops = 8 + len(init_words) + len(words)
        weights_at = _align(4 * header_and_ops)
        header = [MAGIC, VERSION, arena, len(blob), weights_at, len(init_words), len(words), 0]
        words = header + init_words + words
        # words that are expressions of symbolic dims (symbolic.py), evaluated again for each run's dims
        self.sym_words = [(i, w) for i, w in enumerate(words) if isinstance(w, Sym)]
        if any(o not in placed or c[0] not in placed for o, c in self.capacity.items()):
            raise AssertionError("a capacity dim of a value that is not placed (will_place disagrees with finish)")
        caps = {d: 0 for c in self.capacity.values() for d in c[1:]}
        if placed:   # packed with the placed offsets at 0; the runner writes their words before loading
            with Binding({**dict(current_dims() or ()), **{v: 0 for v in placed.values()}, **caps}):
                plan = bytearray(struct.pack(f"<{header_and_ops}i", *[_i32(value(w)) for w in words]))
        else:
            plan = bytearray(struct.pack(f"<{header_and_ops}i", *[_i32(value(w)) for w in words]))
        plan += bytes(weights_at - len(plan))
        plan += blob
        io = {n: where[n] for n in self.inputs + self.outputs}
        return plan, arena, io


class PlanArgumentError(Exception):
    """A lowering computed a kernel argument that the plan cannot encode (an attribute or a dim
    beyond 32 bits); the provider turns it into Unsupported naming the node."""


def _encode(ops, where, shared=None, relocs=None, at=0):
    """The op words; with relocs (PlanBuilder.relocs' lists, filled here; `at`: the index of the
    first word), a tensor of `shared` ({name: k}) is encoded as its offset within that weight."""
    words = []
    for op, args in ops:
        spec = OPS[op]
        words += [spec.code, len(spec.args)]
        for arg, kind in zip(spec.args, spec.kinds):
            v = args[arg]
            if kind == "t":
                if v is None:
                    words.append(-1)
                    continue
                if relocs is not None:
                    k = shared.get(v.name)
                    if k is not None:
                        relocs[1].append((at + len(words), k, v.offset))
                        words.append(v.offset)
                        continue
                    w = where[v.name] + v.offset
                    if isinstance(w, Sym):
                        relocs[2].add(at + len(words))
                    else:
                        relocs[0].append(at + len(words))
                    words.append(w)
                    continue
                words.append(where[v.name] + v.offset)
            elif kind == "f":
                words.append(struct.unpack("<i", struct.pack("<f", v))[0])
            else:
                words.append(v if isinstance(v, Sym) else int(v))
    return words


def _nbytes(data):
    return len(data) if hasattr(data, "fill") else memoryview(data).nbytes


def _i32(w):
    return w - (1 << 32) if w >= (1 << 31) else w


def _symbolic_layout(live, first_placed):
    """(name -> offset, arena end) where some sizes are expressions of symbolic dims, deciding
    nothing on them (a decision would be a guard, and a first-fit's comparisons of sizes flip as a
    past grows): values of fixed size are laid out by _first_fit, init ops' buffers first, so no
    dim moves them; after them, each value of symbolic size takes the first slot free over its
    live range (decided on op indices alone), a slot being as large as the largest value it holds
    (symbolic.smax), the slots one after another."""
    fixed = {n: s for n, s in live.items() if not isinstance(s[2], Sym)}
    offsets = _first_fit(fixed, first_placed)
    at = max((offsets[n] + _align(max(s[2], 1)) for n, s in fixed.items()), default=0)
    slots = []   # [last op of its latest value, size, names]
    for name, (first, last, size) in sorted(((n, s) for n, s in live.items() if n not in fixed),
                                            key=lambda kv: (kv[1][0], kv[0])):
        slot = next((sl for sl in slots if sl[0] < first), None)
        if slot is None:
            slots.append([last, _align(size), [name]])
        else:
            slot[0], slot[1] = last, smax(slot[1], _align(size))
            slot[2].append(name)
    for _, size, names in slots:
        for name in names:
            offsets[name] = at
        at = at + size
    return offsets, at


def _first_fit(live, first_placed=()):
    """name -> offset, so that no two values alive at the same op overlap; the names in
    first_placed (init ops' buffers, alive throughout) go first, at offsets that no size of
    another value moves."""
    placed, offsets = [], {}   # placed: (offset, size, first, last)
    order = sorted(live.items(), key=lambda kv: (kv[0] not in first_placed, kv[1][0], -kv[1][2]))
    for name, (first, last, size) in order:
        size = _align(max(size, 1))
        busy = sorted((o, s) for o, s, f, l in placed if not (l < first or f > last))
        off = 0
        for o, s in busy:
            if off + size <= o:
                break
            off = max(off, o + s)
        placed.append((off, size, first, last))
        offsets[name] = off
    return offsets
