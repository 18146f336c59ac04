"""The bytes of a tensor derived from weights at plan build (B packed into panels, int8 B with its
zero point subtracted...) for a plan loaded at once (plan.py's fill_weights): computed when the
runner fills the arena (runner.py) and not kept in Python, so a 125M decoder's 500 MB of packed
weights never sit in Python's heap (in Pyodide, a heap that never shrinks) beside kernels.wasm's
copy. Afterwards the weights block holding them serves them (wasm/weights.py: the provider's
derived cache hands the same tensor to the session's other plans, its control-flow bodies and
other variants, which find it in the block); when none is left they are computed again."""
import weakref

from ..tensor import LazyBytes


class DerivedBytes(LazyBytes):
    """len(), the buffer protocol and fill(host, ptr), as onnx_io/external.py's ExternalData."""
    __slots__ = ("make", "length", "homes", "stream", "__weakref__")

    def __init__(self, make, length, stream=None):
        self.make = make          # () -> bytes-like of `length` bytes
        self.length = length
        self.homes = []           # [(weakref to a WasmRunner, arena offset)]: plans holding the bytes
        # stream(write) or None: the same bytes made a piece at a time, write(offset, bytes-like)
        # called for consecutive pieces, so filling kernels.wasm's memory never holds them all in
        # Python (a 125M int8 decoder's packed lm_head once made 150 MB of temporaries at once)
        self.stream = stream

    def __len__(self):
        return self.length

    def _holder(self):
        for ref, off in self.homes:
            runner = ref()
            if runner is not None and runner._finalizer.alive:
                return runner, off
        return None

    def _streamed(self, write):
        """self.stream's pieces through write(offset, piece), checked: consecutive, `length` in all."""
        at = 0

        def put(off, piece):
            nonlocal at
            piece = memoryview(piece).cast("B")
            if off != at or at + piece.nbytes > self.length:
                raise AssertionError(f"a derived weight streamed {piece.nbytes} bytes at {off}, "
                                     f"expected the piece at {at} of {self.length}")
            write(off, piece)
            at += piece.nbytes

        self.stream(put)
        if at != self.length:
            raise AssertionError(f"a derived weight streamed {at} bytes, {self.length} were laid out")

    def _made(self):
        if self.stream is not None:
            out = bytearray(self.length)
            view = memoryview(out)

            def write(off, piece):
                view[off:off + piece.nbytes] = piece

            self._streamed(write)
            return view
        data = memoryview(self.make()).cast("B")
        if data.nbytes != self.length:   # the builder's promise about the size, checked
            raise AssertionError(f"a derived weight made {data.nbytes} bytes, {self.length} were laid out")
        return data

    def tobytes(self):
        home = self._holder()
        if home is not None:
            runner, off = home
            return runner.host.read(runner.arena + off, self.length)
        return bytes(self._made())

    def fill(self, host, ptr):
        """Writes the bytes to kernels.wasm's memory at ptr (host's lock held by the caller)."""
        home = self._holder()
        if home is not None and home[0].host is host:
            runner, off = home
            host.call("nnw_memmove", ptr, runner.arena + off, self.length)
            return
        if self.stream is not None:
            self._streamed(lambda off, piece: host.write(ptr + off, piece))
            return
        host.write(ptr, self._made())

    def settle(self, runner, off):
        """The bytes now live at runner's arena + off."""
        self.homes = [(r, o) for r, o in self.homes if r() is not None]
        self.homes.append((weakref.ref(runner), off))
