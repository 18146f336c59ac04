"""External data handed over by a host instead of read from the model's folder: the JS shim's
`externalData` (web/external-data.mjs), whose files are read in JS and written straight into
kernels.wasm's memory, never into Python's.

- ModelBytes: the model's bytes with the sources of its external files attached (`external`), so
  a session can reload the model (set_providers, overrides) the way it reloads a path.
- ExternalSources: {location: source}; a source has `size` and two methods, `read(offset,
  length) -> bytes` (a copy, for the few Python paths that look at a weight: packing, folding,
  the numpy provider) and `fill(host, ptr, offset, length)` (into kernels.wasm's memory).
- ExternalData: a tensor's bytes, not read: len() is known, the buffer protocol reads them on
  demand, and the WASM plan builder places it in the arena unread (plan.py), the runner filling it
  from its source (runner.py). Once a plan holds it, it lives there (`settle`), and later plans
  and reads copy it from there, so the host may drop its own copy of the file (what no plan holds
  is copied into Python first: `detach`; so is a tensor whose last plan goes while the session
  lives on, as when a session drops a variant to make room for another).
"""
import weakref

from ..errors import InvalidModel
from ..tensor import LazyBytes

WASM32_BYTES = 1 << 32


class ModelBytes(bytes):
    """ONNX bytes plus `external`, the ExternalSources of their external data."""
    external = None


class ExternalSources:
    def __init__(self, sources):
        self.sources = dict(sources)      # location -> source
        # (location, offset, length) -> bytes, or [(weakref to a WasmRunner, arena offset)]: the
        # plans holding the tensor, any of which serves it (see settle)
        self.homes = {}
        self.made = set()                 # the keys of every ExternalData made
        self.claimed = 0                  # the bytes they hold
        self.closed = False               # the session is gone: nothing to keep when its plans go

    def tensor_data(self, label, where, offset, length):
        source = self.sources.get(where)
        if source is None:
            raise InvalidModel(f"{label} stores its data in the external file '{where}', which was not given "
                               f"(externalData has {sorted(self.sources) or 'no files'})")
        size = int(source.size)
        if length is None:
            length = size - offset
        if offset < 0 or length < 0 or offset + length > size:
            raise InvalidModel(f"{label}: external data at offset {offset}, length {length} is past the end "
                               f"of '{where}' ({size} bytes)")
        self.claimed += length
        if self.claimed > WASM32_BYTES:
            raise InvalidModel(f"{label}: the model's external data holds more than the 4 GB ({WASM32_BYTES} bytes) "
                               f"a wasm32 memory can address: nnwasm can't load it")
        return ExternalData(self, (where, offset, length))

    def pending(self):
        """Locations some tensor of which no plan holds yet (their source is still needed)."""
        return sorted({key[0] for key in self.made if key not in self.homes})

    def pending_bytes(self, location):
        return sum(k[2] for k in self.made if k[0] == location and k not in self.homes)

    def detach(self, location):
        """Copies the tensors of location that no plan holds (weights packed into another layout,
        constants folded at load: small, or read once already) out of their source, which the host
        may then drop: a fetched file's buffer is not kept for a few KB of it."""
        source = self.sources[location]
        for key in sorted(k for k in self.made if k[0] == location and k not in self.homes):
            self.homes[key] = bytes(source.read(key[1], key[2]))

    def holder(self, key):
        """(runner, arena offset) of a live plan holding the tensor, bytes, or None."""
        home = self.homes.get(key)
        if isinstance(home, list):
            for ref, off in home:
                runner = ref()
                if runner is not None and runner._finalizer.alive:   # not closed
                    return runner, off
            return None
        return home

    def settle(self, key, runner, off):
        """The tensor now also lives at runner's arena + off. When the last plan holding it goes
        (a session dropping a variant for memory), its bytes are copied out first, into Python,
        before the arena is freed (the runner's finalizer only queues that), since the host may
        have dropped its source; not when the session itself is gone (`closed`)."""
        home = self.homes.get(key)
        if not isinstance(home, list):
            home = self.homes[key] = []
        home.append((weakref.ref(runner), off))
        weakref.finalize(runner, _holder_gone, weakref.ref(self), key, runner.host, runner._mem, off)


def _holder_gone(sources_ref, key, host, mem, off):
    sources = sources_ref()
    if sources is None or sources.closed or sources.holder(key) is not None:
        return
    sources.homes[key] = bytes(host.read(mem[1] + off, key[2]))   # mem: the runner's [plan, arena]


class ExternalData(LazyBytes):
    """A tensor's bytes in an external source; bytes-like (len, buffer protocol, slicing)."""
    __slots__ = ("sources", "key")

    def __init__(self, sources, key):
        self.sources, self.key = sources, key
        sources.made.add(key)

    def __len__(self):
        return self.key[2]

    def tobytes(self):
        home = self.sources.holder(self.key)
        if isinstance(home, bytes):
            return home
        if home is not None:
            runner, off = home
            return runner.host.read(runner.arena + off, self.key[2])
        where, offset, length = self.key
        return bytes(self.sources.sources[where].read(offset, length))

    def fill(self, host, ptr):
        """Writes the bytes to kernels.wasm's memory at ptr (host's lock held by the caller)."""
        home = self.sources.holder(self.key)
        if isinstance(home, bytes):
            host.write(ptr, home)
            return
        if home is not None:
            runner, off = home
            host.call("nnw_memmove", ptr, runner.arena + off, self.key[2])
            return
        where, offset, length = self.key
        self.sources.sources[where].fill(host, ptr, offset, length)

    def settle(self, runner, off):
        """The bytes now live at runner's arena + off: read them from there from now on."""
        self.sources.settle(self.key, runner, off)


def external_needs(model_proto):
    """{location: [extent in bytes, [tensor names]]} of every external tensor a ModelProto names
    (initializers, attribute tensors, subgraphs, sparse values), and the bytes they claim in all;
    InvalidModel for a location or an offset/length that can't be right."""
    needs, total = {}, 0

    def tensor(t):
        nonlocal total
        if (t.data_location or 0) != 1:
            return
        keys = {e.key: e.value for e in t.external_data}
        where = keys.get("location")
        label = f"tensor '{t.name}'" if t.name else "an unnamed tensor"
        if not where:
            raise InvalidModel(f"{label} has external data without a 'location'")
        try:
            offset = int(keys.get("offset") or 0)
            length = int(keys["length"]) if keys.get("length") else None
        except ValueError:
            raise InvalidModel(f"{label} has a non-integer external data offset or length") from None
        if offset < 0 or (length is not None and length < 0):
            raise InvalidModel(f"{label} has a negative external data offset or length")
        entry = needs.setdefault(where, [0, []])
        entry[0] = max(entry[0], offset + (length or 0))
        entry[1].append(t.name or "")
        total += length or 0

    def graph(g):
        for t in g.initializer:
            tensor(t)
        for sp in g.sparse_initializer:
            for t in (sp.values, sp.indices):
                if t is not None:
                    tensor(t)
        for n in g.node:
            for a in n.attribute:
                if a.t is not None:
                    tensor(a.t)
                for t in a.tensors:
                    tensor(t)
                if a.g is not None:
                    graph(a.g)
                for sub in a.graphs:
                    graph(sub)

    if model_proto.graph is not None:
        graph(model_proto.graph)
    return needs, total
