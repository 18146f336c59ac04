"""A plan loaded into kernels.wasm: its arena and op words live in linear memory for the session's
lifetime; run() copies the partition's inputs in, makes one call, and copies its outputs out
(one call per op when profiling, each timed on the host's clock: profiling.py)."""
import struct
import weakref
from collections import namedtuple

from ..errors import InvalidArgument, KernelError, MemoryLimitExceeded, WasmOutOfMemory
from .. import symbolic
from . import device
from . import kv_lengths
from . import weights as weights_store
from .region import ALIGN, Region, RegionTensor, copy_rows, read_rows
from ..tensor import TensorData, numel

STATUS = {1: "bad magic", 2: "bad version", 3: "truncated plan", 4: "unknown opcode",
          5: "bad op arguments", 6: "tensor outside the arena", 7: "out of memory",
          8: "index out of range"}
BAD_INDEX = 8   # a run-time status: the input data was at fault, the session stays usable
WASM = "WasmExecutionProvider"
SHIFT = "@arena"   # the dim a shared-weights plan's symbolic tensor words add: its arena's offset from the base

# One run op of a plan: the ONNX node it was lowered from (profiling.node_label) and that node's op
# type, and the kernel (the plan op of kernels_c/ops.def). Plan files store these as their "ops".
PlanOp = namedtuple("PlanOp", ["node", "op_type", "kernel"])


class WasmRunner:
    """sym_words: [(word index, Sym)] of a plan prepared for symbolic dims (symbolic.py): before a
    run with other dims than the last, those words are evaluated and written again, checked by
    nnw_plan_check, and the arena grows (keeping its first kept_bytes: weights and init ops'
    buffers) if the dims need more; sym_fills, weights whose values are expressions of the dims,
    are written again too. Input sizes and output shapes may be Syms too.
    budget: the session's memory_limit.Budget (None: no limit), asked before the arena is allocated
    or grown, so a plan or a run's dims past the limit are refused before anything is copied.
    shared, relocs: weights kept out of the arena (PlanBuilder.shared): placed in the host's
    weights store (weights.py), one copy for every plan of the session; the plan's words are
    then offsets from a base at or below the arena and those blocks (_relocate)."""

    def __init__(self, host, plan, arena_bytes, inputs, outputs, ops, sym_words=(), kept_bytes=0, sym_fills=(),
                 fills=(), placed=None, in_place=None, budget=None, capacity=None, lengths=None, shared=None,
                 relocs=None):
        self.host, self.inputs, self.outputs = host, inputs, outputs
        self.budget = budget
        self.ops = ops   # [PlanOp] for each run op, to name it in errors and profiles
        # the bytes the plan loads: its words and its weights, held or filled
        self.plan_bytes = len(plan) + sum(_nbytes(data) for _, data in fills) + sum(map(_nbytes, shared or ()))
        self.arena_bytes = arena_bytes
        self._share = relocs is not None
        if self._share:   # symbolic tensor words of the arena follow it: + its offset from the base
            shift, moved = symbolic.Sym.var(SHIFT), {}   # (one sum per expression, as words share them)
            sym_words = [(i, moved.setdefault(id(e), e + shift) if i in relocs[2] else e) for i, e in sym_words]
        self._shared, self._blocks, self._base, self._shift, self._span = shared or [], [], 0, 0, 0
        self._unusable, self._ext = None, 0
        self.sym_words, self._kept, self._dims = sym_words, kept_bytes, symbolic.current_dims()
        self.sym_fills = sym_fills   # [(arena offset, format, values)]: weights that are expressions
        self._eval = None   # symbolic.compile_stores: stores the sym words, returns the arena size and fills
        self._io_eval = self._io_cache = None   # the same for input and output places (_io)
        self._cap = symbolic.value(arena_bytes)   # the plan's part of the allocation; the region follows
        # placed: {io name: dim name} of inputs and outputs bound per run to the device region
        self.placed, self._region, self._bound = placed or {}, None, None
        self.in_place = in_place or {}   # {output: input} kv_append may write over (PlanBuilder.in_place)
        # {present: (past, past's capacity dim, present's)}: blocks of [B, H, cap, D] rows (region.py)
        self.capacity = capacity or {}
        # {present: (recipe, lens_add)}: of those, presents whose rows go at n_b (data, kv_lengths.py):
        # into the past's block only when every n_b is the past's length
        self.lengths = lengths or {}
        self._caps = {}   # this run's {capacity dim: rows}
        head = struct.unpack_from("<8i", plan)
        self._words_bytes = 4 * (8 + head[5] + head[6])   # the op words kept in memory (_load)
        self._init_blocks = None
        if self.placed or self._share:
            self._words = bytearray(plan[:4 * (8 + sum(struct.unpack_from("<2i", plan, 20)))])
        if self._share:
            words = memoryview(self._words).cast("i")
            self._arena_words = [(i, words[i]) for i in relocs[0]]   # as laid out: offsets in the arena
            self._shared_words = relocs[1]
        if self.placed:
            self._place_initial(plan)
        if budget is not None:
            budget.charge(self, self.held_bytes(), self._what())
        with host.lock:
            host.drain()
            self._load(plan, fills)
        # freed by the finalizer; the arena may be replaced (_rebind); one block holds both (_load)
        self._mem = ([self.plan] if self._one_block else [self.plan, self.arena]) + ([self._ext] if self._share else [])
        self._finalizer = weakref.finalize(self, host.release, self._mem)
        for off, data in fills:   # later plans and reads take external data from here
            if hasattr(data, "fill"):
                data.settle(self, off)
        if (sym_words or sym_fills) and not self.placed and not self._share:
            self._words = bytearray(plan[:4 * (8 + sum(struct.unpack_from("<2i", plan, 20)))])

    def _load_shared(self, plan, fills):
        """_load for a plan whose weights (self._shared) live in the weights store: they are placed
        there first (only those no live block holds are written), then the arena (weights it
        holds itself, activations, region) is allocated after them (the heap's last block, so it
        can grow in place), the words relocated (_relocate) and the plan loaded with its extents."""
        host = self.host
        self._one_block = False
        self.arena = self._ext = full = status_at = 0
        try:
            self._fill_ptrs, self._blocks = weights_store.store(host).place(self._shared, self._malloc, self.budget,
                                                                            self._what())
            self.arena = self._malloc(self._total())
            self._ext = self._malloc(8 * (1 + len(self._blocks)))
            for off, data in fills:   # weights this plan keeps in its arena (PlanBuilder.fills)
                if hasattr(data, "fill"):
                    data.fill(host, self.arena + off)
                elif _nbytes(data):
                    host.write(self.arena + off, data)
            self._relocate()
            if self.sym_words:   # their values for the base just chosen
                next(self._store(self._init_blocks))
                struct.pack_into("<i", self._words, 8, self._span)
            plan[:len(self._words)] = self._words
            host.write(self._ext, self._ext_bytes)
            self._ext_new = False
            full = self._malloc(len(plan))
            host.write(full, plan)
            status_at = self._malloc(4)
            status = host.call("nnw_plan_load_at", full, len(plan), self._base, self._span, self._ext,
                               1 + len(self._blocks), status_at)
            if status:
                bad = struct.unpack("<i", host.read(status_at, 4))[0]
                n_init = struct.unpack_from("<i", plan, 20)[0]
                which = (f", {self.ops[bad - n_init].node} ({self.ops[bad - n_init].kernel})"
                         if 0 <= bad - n_init < len(self.ops or ()) else "")
                raise KernelError(f"kernels.wasm refused the plan: {STATUS.get(status, status)} (op {bad}{which})")
            self.plan = self._malloc(len(self._words))
            host.write(self.plan, self._words)
        except BaseException:
            host.release([self.arena, self._ext])
            self._blocks = []
            raise
        finally:
            host.release([full, status_at])

    def _relocate(self):
        """The base (the lowest of the arena and the weights blocks), the words that address the
        arena or a shared weight written from it, the span and the extents (what
        nnw_plan_check_at validates against: the arena, then each block). After the arena moved."""
        total = self._total()
        base = min([self.arena] + [b.arena for b in self._blocks])
        shift = self.arena - base
        span = max([shift + total] + [b.arena - base + b.size for b in self._blocks])
        if span >= 1 << 31:   # int32 words; the words in memory address the old arena: no run from now on
            self._unusable = (f"{self._what()}: its arena and its weights lie {span} bytes apart in "
                              "kernels.wasm's memory, more than a plan's 2 GiB of offsets")
            raise WasmOutOfMemory(self._unusable, hopeless=True)
        words = memoryview(self._words).cast("i")
        if shift != self._shift or not self._span:
            for i, v in self._arena_words:
                words[i] = v + shift
        if base != self._base:
            ptrs = self._fill_ptrs
            for i, k, off in self._shared_words:
                words[i] = ptrs[k] - base + off
        words[2] = span
        ext = [shift, shift + total] + [x for b in self._blocks for x in (b.arena - base, b.arena - base + b.size)]
        # written with the words (_rebind, after its memory limit check: a refused run writes nothing)
        self._ext_bytes = struct.pack(f"<{len(ext)}I", *ext)
        self._ext_new = True
        self._base, self._shift, self._span = base, shift, span

    def _load(self, plan, fills):
        """fills: [(arena offset, bytes-like)], weights the plan does not hold (plan.py), written
        into the arena from where they are before nnw_plan_load (whose init ops may read them);
        external data (onnx_io/external.py) fills itself from its file.
        A plan that holds its weights (a plan file's) and has no symbolic words is loaded as the JS
        plan session does (web/plan-session.mjs): one block, the op words first and the arena right
        after them, where the plan's weights are written straight to where nnw_plan_load keeps them
        (its memmove then moves nothing): no second copy of the weights in kernels.wasm's memory,
        which never shrinks (bench/memory/peak_memory.py). A plan whose weights are shared: _load_shared."""
        if self._share:
            return self._load_shared(plan, fills)
        host, arena_bytes = self.host, self._total()
        head = struct.unpack_from("<8i", plan)
        weights_bytes, weights_at = head[3], head[4]
        self.arena = full = status_at = block = 0
        one_block = (weights_bytes >= 1 << 16 and not self.sym_words and not self.sym_fills and not self.placed
                     and weights_at % 16 == 0
                     and 4 * (8 + head[5] + head[6]) <= weights_at and weights_at + weights_bytes <= len(plan)
                     and weights_bytes <= arena_bytes)
        self._one_block = one_block
        try:
            if one_block:
                block = self._malloc(weights_at + arena_bytes)   # 16-aligned (malloc's), so the arena is too
                full, self.arena = block, block + weights_at
                host.write(block, memoryview(plan)[:weights_at])
                host.write(self.arena, memoryview(plan)[weights_at:weights_at + weights_bytes])
                plan_len = weights_at + weights_bytes
            else:
                self.arena = self._malloc(arena_bytes)
            for off, data in fills:
                if hasattr(data, "fill"):
                    data.fill(host, self.arena + off)
                elif _nbytes(data):
                    host.write(self.arena + off, data)
            if not one_block:
                full = self._malloc(len(plan))
                host.write(full, plan)
                plan_len = len(plan)
            status_at = self._malloc(4)
            status = host.call("nnw_plan_load", full, plan_len, self.arena, arena_bytes, status_at)
            if status:
                bad = struct.unpack("<i", host.read(status_at, 4))[0]
                n_init = head[5]
                which = (f", {self.ops[bad - n_init].node} ({self.ops[bad - n_init].kernel})"
                         if 0 <= bad - n_init < len(self.ops or ()) else "")
                raise KernelError(f"kernels.wasm refused the plan: {STATUS.get(status, status)} (op {bad}{which})")
            if one_block:   # the op words stay where they are, before the arena
                self.plan, full = block, 0
                return
            # The weights now live in the arena; keep only the header and op words.
            ops_end = 4 * (8 + head[5] + head[6])
            self.plan = self._malloc(ops_end)
            host.write(self.plan, memoryview(plan)[:ops_end])
        except BaseException:
            if block:
                full = 0   # (the block: freed once, here)
            host.release([block] if block else [self.arena])
            raise
        finally:
            host.release([full, status_at])

    def _malloc(self, n):
        if n >= 1 << 32:   # an i32 argument: more would wrap (wasmtime's raw call truncates silently)
            raise WasmOutOfMemory(f"kernels.wasm can't allocate {n} bytes: wasm32 addresses 4 GiB", hopeless=True)
        p = self.host.call("nnw_malloc", max(n, 1)) & 0xFFFFFFFF   # an i32 result: addresses past 2 GB read negative
        if not p:   # memory.grow failed: the engine's, the page's or the process's limit
            raise WasmOutOfMemory(f"kernels.wasm is out of memory allocating {n} bytes (its linear memory could not "
                                  "grow: the engine's, the page's or the process's limit)")
        return p

    def held_bytes(self):
        """What this plan holds in kernels.wasm's memory: its op words, its arena and its region."""
        return self._words_bytes + self._total()

    def _what(self):
        first = self.ops[0].node if self.ops else "no ops"
        return f"the WASM plan of {len(self.ops or ())} ops from {first}"

    def _io(self):
        """(inputs, outputs) with their offsets, sizes and shapes as ints for the dims bound now:
        as given for a concrete plan; a traced plan's (expressions of the dims) evaluated by one
        compiled function (symbolic.compile_values), once per new binding."""
        dims = symbolic.current_dims()
        if not dims:
            return self.inputs, self.outputs
        cached = self._io_cache   # (dims, places): one attribute, read once, as threads share the runner
        if cached is not None and cached[0] == dims:
            return cached[1]
        if self._io_eval is None:
            exprs = [x for _, off, n in self.inputs for x in (off, n)]
            exprs += [x for _, off, _, shape in self.outputs for x in (off, *shape)]
            self._io_eval = symbolic.compile_values(exprs)
        vals = iter(self._io_eval(dict(dims)))
        ins = [(name, next(vals), next(vals)) for name, _, _ in self.inputs]
        outs = [(name, next(vals), dt, tuple(next(vals) for _ in shape)) for name, _, dt, shape in self.outputs]
        self._io_cache = (dims, (ins, outs))
        return ins, outs

    def run(self, env, prof=None):
        if self._unusable:
            raise WasmOutOfMemory(self._unusable, hopeless=True)
        host = self.host
        inputs, outputs = self._io()
        for name, _, nbytes in inputs:
            got = device.nbytes(env[name])
            if got != nbytes:
                raise KernelError(f"'{name}' has {got} bytes, the plan expects {nbytes}")
        keep, placed, targets = device.kept(), self.placed, device.into()
        with host.lock:   # inputs, run and outputs of this arena must not interleave with another thread's
            host.drain()
            blocks, temps = self._place(env, inputs, outputs) if placed else ({}, set())
            if not placed and (self.sym_words or self.sym_fills) and symbolic.current_dims() != self._dims:
                self._rebind()
            try:
                arena = self.arena
                for name, off, _ in inputs:
                    if name in placed:
                        if name not in temps:
                            continue   # a RegionTensor of this region: read where it is
                        off = self._region.base + blocks[name]
                    t = env[name]
                    if isinstance(t, device.WasmTensor) and t.host is host:   # on the device: no host copy
                        t.copy_to(arena + off)
                    else:
                        host.write(arena + off, t.data)
                status = (host.call("nnw_plan_run", self.plan, self._base if self._share else arena) if prof is None
                          else self._run_timed(prof))
                if status == BAD_INDEX:
                    k = host.call("nnw_plan_failed_op")
                    node = f"{self.ops[k].op_type} node '{self.ops[k].node}'" if 0 <= k < len(self.ops) else "a node"
                    raise InvalidArgument(f"index out of range in {node}: an index or length input (indices, an "
                                          "attention's seqlens_k, positions or masks) holds a value outside its range")
                if status:
                    raise KernelError(f"kernels.wasm failed running a plan: {STATUS.get(status, status)}")
                outs = []
                for name, off, dt, shape in outputs:
                    n = dt.size * numel(shape)
                    target = targets.get(name)
                    cap = self._caps.get(self.capacity[name][2]) if name in self.capacity else None
                    if name in placed:
                        if target is not None and name not in temps and (cap is None or _in_block(
                                target, self._region, blocks[name], cap)):   # written in place, into target
                            if cap is not None:
                                _check_target(name, dt, shape, target)
                            env[name] = target
                            continue
                        if name in keep and target is None and (name in temps or cap is not None):
                            # written in its block: the block becomes the tensor's (a cache's: shared
                            # with the past it grew from)
                            temps.discard(name)
                            env[name] = RegionTensor(self, blocks[name], dt, shape, cap)
                            continue
                        off = self._region.base + blocks[name]
                        if cap is not None and cap != shape[2]:   # rows of a larger block: compacted
                            if target is None:
                                outs.append((name, dt, shape, read_rows(host, arena + off, shape, dt.size, cap)))
                                continue
                            ptr = self._malloc(n)
                            try:
                                copy_rows(host, ptr, arena + off, shape, dt.size, shape[2], cap)
                                _check_target(name, dt, shape, target)
                                target.copy_from(ptr)
                            finally:
                                host.release([ptr])
                            env[name] = target
                            continue
                    if target is not None:   # bound to a wasm OrtValue: copied there
                        _check_target(name, dt, shape, target)
                        target.copy_from(arena + off)
                        env[name] = target
                        continue
                    if name in keep:   # stays in kernels.wasm's memory (IOBinding to the "wasm" device)
                        ptr = self._malloc(n)
                        if n:
                            host.call("nnw_memmove", ptr, arena + off, n)
                        env[name] = device.WasmTensor(host, ptr, dt, shape)
                    else:
                        outs.append((name, dt, shape, host.read(arena + off, n)))
            finally:
                for name in temps:
                    self._region.free(blocks[name])
        for name, dt, shape, data in outs:
            env[name] = TensorData(dt, shape, data)

    def _total(self):
        """Bytes of the allocation: the plan's arena, then the device region."""
        return self._cap + (self._region.size if self._region is not None else 0)

    def _place(self, env, inputs, outputs):
        """({placed name: block start}, names whose block is this run's only) for this run, the
        region grown if they do not fit, the plan's words rewritten if the dims or blocks changed."""
        region = self._region
        region.collect()
        targets = device.into()
        for name, _, dt, shape in outputs:   # a shared buffer from another plan's region comes here once
            t, src = targets.get(name), self.in_place.get(name)
            if (isinstance(t, RegionTensor) and src is not None and env.get(src) is t and t.in_region(region) is None
                    and name in self.placed and t.nbytes == dt.size * numel(shape)):
                start = region.alloc(t.nbytes)
                if start is None:
                    self._realloc(self._cap, 2 * max(region.used() + t.nbytes + ALIGN, region.size))
                    start = region.alloc(t.nbytes)
                t.move_to(self, start)
        blocks, temps, need = {}, set(), []
        caps, cap_of = {}, {c[1]: c[0] for c in self.capacity.values()}   # past -> its capacity dim
        for name, _, nbytes in inputs:
            if name in self.placed:
                t = env[name]
                start = t.in_region(region) if isinstance(t, RegionTensor) else None
                if start is None:
                    need.append((name, nbytes))
                else:
                    blocks[name] = start
                if name in cap_of.values():   # a cache's past: its block's rows a head
                    rows = t.rows if start is not None else t.shape[2]
                    caps[self._cap_dim_of(name)] = rows
        keep, claimed, lengths = device.kept(), set(), {}
        for name, _, dt, shape in outputs:
            if name not in self.placed:
                continue
            t, src = targets.get(name), self.in_place.get(name)
            start = t.in_region(region) if isinstance(t, RegionTensor) else None
            if name in self.capacity:
                past, cap_in, cap_out = self.capacity[name]
                p = env[past]
                at = blocks.get(past) if isinstance(p, RegionTensor) and p.in_region(region) is not None else None
                rows = shape[2]
                if start is not None and src is not None and env.get(src) is t and t.nbytes == dt.size * numel(shape):
                    claimed.add(start)   # a shared past/present buffer: the past's block as it is
                    blocks[name], caps[cap_out] = start, caps[cap_in]
                    continue
                if (at is not None and at not in claimed and caps[cap_in] >= rows
                        and region.tail_free(at, p.shape[2]) and self._at_end(name, env, p.shape, lengths)):
                    claimed.add(at)
                    blocks[name], caps[cap_out] = at, caps[cap_in]   # the new rows go after the past's, in its block
                    continue
                # a new block: room to grow in place for the steps to come where the present is kept
                # (a past that had room but is shared keeps its capacity; one that is full doubles it)
                cap = rows
                if name in keep and t is None:
                    had = caps[cap_in] if at is not None else 0
                    cap = had if had >= rows else grow(rows, had)
                caps[cap_out] = cap
                need.append((name, dt.size * numel(shape) // max(rows, 1) * cap))
                continue
            if start is not None and src is not None and env.get(src) is t and t.nbytes == dt.size * numel(shape):
                blocks[name] = start   # the past's buffer is the present's: it grows in place
            else:
                need.append((name, dt.size * numel(shape)))
        for attempt in range(2):
            for name, n in need:
                start = region.alloc(n)
                if start is None:
                    break
                blocks[name] = start
                temps.add(name)
            else:
                break
            for name in temps:
                region.free(blocks.pop(name))
            temps.clear()
            if attempt:
                raise KernelError("kernels.wasm's device region could not place this run's inputs and outputs")
            # doubled: a move copies the weights too (the kept prefix), so it must be rare as the cache grows
            more = region.used() + sum(max(ALIGN, -(-n // ALIGN) * ALIGN) for _, n in need)
            self._realloc(self._cap, 2 * max(more, region.size))
        self._caps = caps
        key = (symbolic.current_dims(), region.base, region.size, tuple(sorted(blocks.items())),
               tuple(sorted(caps.items())))
        if key != self._bound:
            try:
                self._rebind(blocks)
            except BaseException:
                for name in temps:
                    region.free(blocks[name])
                raise
            self._bound = (symbolic.current_dims(), region.base, region.size, key[3], key[4])
        return blocks, temps

    def _at_end(self, name, env, past_shape, memo):
        """Whether present `name`'s new rows go right after its past's rows in every batch row: a
        Concat's always; a GroupQueryAttention's when each n_b (kv_lengths.py) is the past's length."""
        spec = self.lengths.get(name)
        if spec is None:
            return True
        n = kv_lengths.rows_at(spec, env, memo)
        return n is not None and len(n) == past_shape[0] and all(x == past_shape[2] for x in n)

    def _cap_dim_of(self, past):
        return next(c[1] for c in self.capacity.values() if c[0] == past)

    def _place_initial(self, plan):
        """Before the load: a region with room for twice this binding's placed inputs and outputs,
        their words and the allocation's size written into the plan, so nnw_plan_load checks them."""
        self._region = region = Region()
        sizes = [(n, nb) for n, _, nb in self.inputs if n in self.placed]
        sizes += [(n, dt.size * numel(shape)) for n, _, dt, shape in self.outputs if n in self.placed]
        sizes = [(n, symbolic.value(nb)) for n, nb in sizes]
        region.base, region.size = self._cap, 2 * sum(max(ALIGN, -(-n // ALIGN) * ALIGN) for _, n in sizes)
        blocks = {n: region.alloc(nb) for n, nb in sizes}
        rows, nb = {}, dict(sizes)
        for n, _, _, shape in self.outputs:
            if n in self.capacity:   # the past's rows from its bytes: [B, H, P, D] as the present's [B, H, T, D]
                rows[n] = symbolic.value(shape[2])
                rows[self.capacity[n][0]] = nb[self.capacity[n][0]] * rows[n] // max(nb[n], 1)
        self._caps = {d: max(rows[n], 0) for o, c in self.capacity.items() for n, d in ((c[0], c[1]), (o, c[2]))}
        values = self._store(blocks)
        need = next(values)
        if need > self._cap:
            raise KernelError(f"the plan needs {need} bytes of arena, it was laid out in {self._cap}")
        struct.pack_into("<i", self._words, 8, self._total())
        plan[:len(self._words)] = self._words
        for start in blocks.values():
            region.free(start)
        self._init_blocks = blocks   # (_load_shared stores the words again once the base is known)

    def _store(self, blocks=None):
        """Evaluates the plan's symbolic words into self._words for the dims bound now (and the
        placed io at blocks {name: region start}); an iterator over the arena bytes needed, then
        the fills' values."""
        if self._eval is None:   # the words stored, the arena size and fills returned, by one compiled function
            exprs = [self.arena_bytes] + [v for _, _, vs in self.sym_fills for v in vs]
            self._eval = symbolic.compile_stores(self.sym_words, exprs)
        dims = dict(symbolic.current_dims() or ())
        if blocks is not None:
            dims.update((self.placed[n], self._region.base + s) for n, s in blocks.items())
            dims.update(self._caps)
        if self._share:
            dims[SHIFT] = self._shift
        return iter(self._eval(dims, memoryview(self._words).cast("i")))

    def _realloc(self, cap, region_bytes=0):
        """The allocation made cap + region_bytes, in place where the allocator can (nnw_realloc: a
        copy needs the old and the new block at once, and a wasm memory never shrinks back from
        that peak); the kept prefix (weights, init ops' buffers) stays, the region's blocks move
        to the new cap."""
        host, region = self.host, self._region
        total = cap + region_bytes
        if total >= 1 << 31:
            raise WasmOutOfMemory(f"kernels.wasm's arena would need {total} bytes (over 2 GiB)")
        old_total = self._cap + (region.size if region is not None else 0)
        if total < old_total:
            raise AssertionError("an allocation only grows")
        new = host.call("nnw_realloc", self.arena, total) & 0xFFFFFFFF
        if not new:
            raise WasmOutOfMemory(f"kernels.wasm is out of memory allocating {total} bytes (its "
                                  "linear memory could not grow: the engine's, the page's or the process's limit; growing an arena)")
        if region is not None:
            used = region.used()
            if used and region.base != cap:
                host.call("nnw_memmove", new + cap, new + region.base, used)
            region.base, region.size = cap, region_bytes
        self.arena, self._cap, self._mem[1] = new, cap, new
        if self._share:   # the words that follow the arena, before any run: _rebind stores and checks them
            self._dims = self._bound = None
            self._relocate()

    def _rebind(self, blocks=None):
        """The plan's symbolic words for the dims bound now (and placed io at blocks); a larger
        arena if they need one."""
        host = self.host
        values = self._store(blocks)
        need = next(values)
        if need > self._cap:
            from .provider import MAX_ARENA_BYTES
            what = f"{self._what()}, for the input dims {dict(symbolic.current_dims())}"
            if need > MAX_ARENA_BYTES:   # (a variant's guards refuse such dims first: plan.finish's check)
                raise WasmOutOfMemory(f"{what}, needs an arena of {need} bytes; kernels.wasm addresses at most "
                                      f"{MAX_ARENA_BYTES}", hopeless=True)
            rsize = self._region.size if self._region is not None else 0
            # grown by half of what is not weights at least (a decoder's past grows by one a step;
            # half of a 500 MB arena of weights would be 250 MB of slack)
            cap = min(max(need, need + (need - self._kept) // 2), MAX_ARENA_BYTES)
            if self.budget is not None:   # before anything is allocated or written
                try:
                    self.budget.charge(self, self._words_bytes + cap + rsize, what)
                except MemoryLimitExceeded:
                    cap = need
                    self.budget.charge(self, self._words_bytes + cap + rsize, what)
            try:
                self._realloc(cap, rsize)
            except WasmOutOfMemory:
                self._realloc(need, rsize)
            if blocks is not None or self._share:   # the region or the base moved with the arena: offsets again
                values = self._store(blocks)
                next(values)
        words = self._words
        for off, fmt, vs in self.sym_fills:
            host.write(self.arena + off, struct.pack(fmt, *[next(values) for _ in vs]))
        if self._share:
            struct.pack_into("<i", words, 8, self._span)
        elif self._region is not None:
            struct.pack_into("<i", words, 8, self._total())
        host.write(self.plan, words)
        if self._share and self._ext_new:
            host.write(self._ext, self._ext_bytes)
            self._ext_new = False
        status_at = self._malloc(4)
        try:
            if self._share:
                status = host.call("nnw_plan_check_at", self.plan, len(words), self._span, self._ext,
                                   1 + len(self._blocks), status_at)
            else:
                status = host.call("nnw_plan_check", self.plan, len(words), self._total(), status_at)
            if status:
                bad = struct.unpack("<i", host.read(status_at, 4))[0]
                self._dims = self._bound = None   # nothing runs on these words
                raise KernelError(f"kernels.wasm refused the plan's words for the input dims "
                                  f"{dict(symbolic.current_dims())}: {STATUS.get(status, status)} (op {bad})")
        finally:
            host.release([status_at])
        self._dims = symbolic.current_dims()

    def _run_timed(self, prof):
        """nnw_plan_run, one op at a time, each call timed; the status of the first that fails."""
        call, clock, plan = self.host.call, prof.clock, self.plan
        arena = self._base if self._share else self.arena
        for k, op in enumerate(self.ops):
            t0 = clock()
            status = call("nnw_plan_run_ops", plan, arena, k, 1)
            prof.node(op.node, op.op_type, op.kernel, WASM, t0, clock())
            if status:
                return status
        return 0

    def close(self):
        if self._region is not None:   # tensors kept in the region move to buffers of their own
            with self.host.lock:
                for t in self._region.tensors:
                    t.evict(self._malloc)
        self._finalizer()
        self._blocks = []   # the weights blocks no other plan holds are freed (weights.py)



def grow(rows, cap):
    """A new block's rows a head for a cache of `rows` rows that outgrew `cap` (0: none yet): at least
    double, in steps of 64, so a generation copies its cache a logarithmic number of times."""
    return -(-max(rows, 2 * cap, 64) // 64) * 64


def _in_block(target, region, start, rows):
    """Whether target is the tensor of block `start` of region at `rows` rows a head (a shared
    past/present buffer with a row capacity: the present was written into it)."""
    return isinstance(target, RegionTensor) and target.in_region(region) == start and target.rows == rows


def _check_target(name, dt, shape, target):
    if target.dtype != dt or target.shape != tuple(shape):
        raise InvalidArgument(f"output '{name}' is {dt.ort_type} {list(shape)}, the OrtValue "
                              f"bound for it is {target.dtype.ort_type} {list(target.shape)}")


def _nbytes(data):
    return len(data) if hasattr(data, "fill") else memoryview(data).nbytes
