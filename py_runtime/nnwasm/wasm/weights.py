"""One copy of a session's weights in kernels.wasm's memory, shared by all its plans.

A decoder gets several plans (the prompt's and the decode step's, an If's branches, variants for
other shapes), and each used to hold every weight in its own arena: twice the weights for a
KV-cache decoder. Weights are immutable once written, so a plan built with fill_weights
(PlanBuilder.shared) leaves them out of its arena and the runner places them here: the host's
WeightsStore keeps each weight's bytes once, keyed by the identity of its data (the model's bytes
of an initializer, the DerivedBytes of a packed B the provider's derived cache hands to every
plan of the session, an ExternalData), in blocks of kernels.wasm's memory that runners hold.
A block is freed when no runner holds it (its finalizer, as a runner's arena); it never moves,
as an arena growing (nnw_realloc) is another block.

The plan's tensor words are then offsets from a base pointer at or below all the blocks it
reads (WasmRunner._relocate), and kernels.wasm validates each tensor against the extents the
host allocated (nnw_plan_load_at / nnw_plan_check_at), not against a span that would take in
other allocations between them.
"""
import weakref

ALIGN = 16


class WeightsBlock:
    """One block of weights, written once at creation. It has what derived.py's and
    onnx_io/external.py's homes read of a runner (host, arena, _mem, _finalizer), so the data
    it holds reads its bytes from here."""

    def __init__(self, host, size):
        self.host, self.size, self.arena = host, size, 0
        self._mem = [0, 0]
        self._finalizer = None

    def bind(self, ptr):
        self.arena = self._mem[1] = ptr
        self._finalizer = weakref.finalize(self, self.host.release, [ptr])

    def held_bytes(self):   # memory_limit.Budget's holders
        return self.size


class WeightsStore:
    """The weights of one kernels.wasm instance (its host): {id(data): (data, weakref to its
    block, offset)}. An entry holds its data, so the id stays that data's while the block lives;
    entries of a freed block are dropped (queued by its finalizer, removed under the host's lock)."""

    def __init__(self, host):
        self.host = host
        self._entries = {}
        self._dead = []
        self.written = 0   # bytes of weights written into blocks so far (tests: none written twice)

    def _collect(self):
        while self._dead:
            for key, block_ref in self._dead.pop():
                entry = self._entries.get(key)
                if entry is not None and entry[1] is block_ref:
                    del self._entries[key]

    def lookup(self, data):
        """(block, offset) of data held in a live block, or None."""
        entry = self._entries.get(id(data))
        if entry is None or entry[0] is not data:
            return None
        block = entry[1]()
        if block is None or not block._finalizer.alive:
            return None
        return block, entry[2]

    def place(self, datas, malloc, budget=None, what="weights"):
        """(pointers, blocks): the address of each of datas (bytes-like or LazyBytes) in
        kernels.wasm's memory and the blocks they lie in. What no live block holds is written into
        one new block (the same data twice: once). The host's lock is held by the caller."""
        self._collect()
        ptrs, blocks, new, size = [None] * len(datas), {}, {}, 0
        for k, data in enumerate(datas):
            hit = self.lookup(data)
            if hit is not None:
                blocks[id(hit[0])] = hit[0]
                ptrs[k] = (hit[0], hit[1])
            elif id(data) not in new:
                new[id(data)] = (data, size)
                size += -(-_nbytes(data) // ALIGN) * ALIGN
        if new:
            block = WeightsBlock(self.host, size)
            if budget is not None:
                budget.charge(block, size, f"{what}'s weights")
            block.bind(malloc(size))
            blocks[id(block)] = block
            ref = weakref.ref(block)
            for data, off in new.values():
                self.written += _nbytes(data)
                if hasattr(data, "fill"):
                    data.fill(self.host, block.arena + off)
                elif _nbytes(data):
                    self.host.write(block.arena + off, data)
                self._entries[id(data)] = (data, ref, off)
            for data, off in new.values():   # later plans and reads take them from here
                if hasattr(data, "settle"):
                    data.settle(block, off)
            dead = self._dead
            weakref.finalize(block, dead.append, [(key, ref) for key in new])
            for k, data in enumerate(datas):
                if ptrs[k] is None:
                    ptrs[k] = (block, new[id(data)][1])
        return [b.arena + off for b, off in ptrs], list(blocks.values())

    def held_bytes(self):
        """Bytes of the live blocks (the entries' blocks)."""
        live = {}
        for _, ref, _ in list(self._entries.values()):
            block = ref()
            if block is not None and block._finalizer.alive:
                live[id(block)] = block.size
        return sum(live.values())


def store(host):
    """The host's WeightsStore, made on first use."""
    s = getattr(host, "_weights_store", None)
    if s is None:
        s = host._weights_store = WeightsStore(host)
    return s


def _nbytes(data):
    return len(data) if hasattr(data, "fill") else memoryview(data).nbytes
