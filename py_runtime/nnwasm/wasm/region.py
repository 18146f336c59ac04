"""The device region of a runner's arena: where a symbolic plan's inputs and outputs of symbolic
size (a decoder's past and present key/values) live, so that a cache kept in kernels.wasm's memory
is read and written in place, never moved between a buffer and the arena.

A runner whose plan places its io (PlanBuilder.place_io) allocates one block of kernels.wasm's
memory: [0, cap) the plan's arena (weights, activations), [cap, cap + size) this region. Every run
binds each placed input and output to a block of the region (the offsets are dims of their own,
written into the plan's words, which nnw_plan_check validates against the whole allocation, so
every address an op touches is still checked): an input that is a RegionTensor of this region is
read where it is; any other input is copied into a block for the run; an output kept on the
device becomes a RegionTensor of the block it was written to. The region grows (the allocation
is made again, the region moved, the live tensors' addresses following) when the blocks of a run
do not fit.

A cache's block may hold more rows than its tensor: [B, H, cap, D] with the tensor's [B, H, P, D]
in its first P rows of each head (a row capacity, lower/attention_concat.py), so a decoder's present
= Concat(past, new) is the past's block with the new rows written after them. Several tensors may
then share a block (each step's present is a longer view of it): the block is freed with the last,
and a plan writes into a block's rows past P only when no live tensor of it is longer than P
(`tail_free`): a past fed twice, or an older present kept and fed again, gets a copy instead."""
import weakref

from .device import WasmTensor

ALIGN = 16


class Region:
    """First-fit over [0, size): blocks {start: bytes}, offsets relative to the region's base (the
    runner's cap), so a move changes only `base`. Frees from finalizers are queued (`_freed`) and
    applied under the host's lock (collect)."""

    def __init__(self):
        self.base = self.size = 0
        self.blocks = {}
        self._freed = []
        self.views = {}   # start -> weakref.WeakSet of the live RegionTensors in that block

    @property
    def tensors(self):
        """Every live RegionTensor of the region."""
        return [t for vs in self.views.values() for t in list(vs)]

    def add(self, start, tensor):
        self.views.setdefault(start, weakref.WeakSet()).add(tensor)

    def tail_free(self, start, rows):
        """Whether no live tensor of block `start` holds more than `rows` rows (of its axis 2)."""
        return all(t.shape[2] <= rows for t in list(self.views.get(start, ())))

    def collect(self):
        while self._freed:
            start = self._freed.pop()
            if not self.views.get(start):   # the block's last tensor is gone
                self.views.pop(start, None)
                self.blocks.pop(start, None)

    def alloc(self, n):
        """The start of a free block of n bytes (at least ALIGN), or None."""
        n = max(ALIGN, (n + ALIGN - 1) // ALIGN * ALIGN)
        at = 0
        for start in sorted(self.blocks):
            if start - at >= n:
                break
            at = max(at, start + self.blocks[start])
        if self.size - at < n:
            return None
        self.blocks[at] = n
        return at

    def free(self, start):
        self.blocks.pop(start, None)

    def used(self):
        return max((s + n for s, n in self.blocks.items()), default=0)


def copy_rows(host, dst, src, shape, esize, dst_rows, src_rows):
    """Copies a [B, H, P, D] tensor between blocks of dst_rows and src_rows rows a head (>= P)."""
    b, h, p, d = shape
    row = d * esize
    if p * row == 0:
        return
    if dst_rows == src_rows == p:
        host.call("nnw_memmove", dst, src, b * h * p * row)
        return
    for k in range(b * h):
        host.call("nnw_memmove", dst + k * dst_rows * row, src + k * src_rows * row, p * row)


def read_rows(host, src, shape, esize, rows):
    """A [B, H, P, D] tensor's bytes, compact, from a block of `rows` rows a head."""
    b, h, p, d = shape
    row = d * esize
    if rows == p:
        return host.read(src, b * h * p * row)
    return b"".join(bytes(host.read(src + k * rows * row, p * row)) for k in range(b * h)) if p * row else b""


def _release(cell):
    region, start, host, own = cell
    if own:
        host.release([own])
    else:
        region._freed.append(start)   # list.append: safe from a finalizer


class RegionTensor(WasmTensor):
    """A WasmTensor in a runner's device region: `ptr` follows the region when it moves (read it
    again after a run; OrtValue.data_ptr() gives the current one). When the runner closes, live
    tensors are moved to buffers of their own (evict) and stay valid. cap: the rows of its block
    along axis 2 (None: as many as the tensor's; more: a strided view, each head cap rows apart,
    read and copied compact)."""
    __slots__ = ("_runner", "_cell", "cap")

    def __init__(self, runner, start, dtype, shape, cap=None):   # pylint: disable=super-init-not-called
        self.host, self.dtype, self.shape = runner.host, dtype, tuple(int(d) for d in shape)
        self.cap = None if cap is None or cap == self.shape[2] else int(cap)
        self._runner, self._cell = runner, [runner._region, start, runner.host, 0]
        runner._region.add(start, self)
        weakref.finalize(self, _release, self._cell)

    @property
    def rows(self):
        """Rows of the block along axis 2 (the capacity)."""
        return self.cap if self.cap is not None else (self.shape[2] if len(self.shape) == 4 else None)

    @property
    def data(self):
        if self.cap is None:
            return WasmTensor.data.fget(self)
        with self.host.lock:
            return read_rows(self.host, self.ptr, self.shape, self.dtype.size, self.cap)

    def write(self, data):
        if self.cap is None:
            return WasmTensor.write(self, data)
        b, h, p, d = self.shape
        size, stride = p * d * self.dtype.size, self.cap * d * self.dtype.size
        data = memoryview(data).cast("B")
        for k in range(b * h if size else 0):
            self.host.write(self.ptr + k * stride, data[k * size:(k + 1) * size])

    def copy_to(self, dst):
        if self.cap is None:
            return WasmTensor.copy_to(self, dst)
        copy_rows(self.host, dst, self.ptr, self.shape, self.dtype.size, self.shape[2], self.cap)

    def copy_from(self, src):
        if self.cap is None:
            return WasmTensor.copy_from(self, src)
        copy_rows(self.host, self.ptr, src, self.shape, self.dtype.size, self.cap, self.shape[2])

    @property
    def ptr(self):
        region, start, _, own = self._cell
        return own or self._runner.arena + region.base + start

    def in_region(self, region):
        """This tensor's block start if it lives in `region`, else None."""
        return self._cell[1] if self._cell[0] is region and not self._cell[3] else None

    def move_to(self, runner, start):
        """Moves the bytes to block `start` of runner's region (from a buffer of its own or another
        region's block, which is freed): a shared past/present buffer first bound in another plan."""
        region, old, host, own = self._cell
        self.copy_to(runner.arena + runner._region.base + start)
        self.cap = None
        if own:
            host.release([own])
        else:
            views = region.views.get(old)
            if views is not None:
                views.discard(self)
            if not views:
                region.views.pop(old, None)
                region.free(old)
        self._runner, self._cell[:] = runner, [runner._region, start, host, 0]
        runner._region.add(start, self)

    def evict(self, malloc):
        """Moves the bytes to a buffer of their own (malloc(n) -> ptr); the block is freed."""
        ptr = malloc(self.nbytes)
        self.copy_to(ptr)
        region, start = self._cell[0], self._cell[1]
        self._cell[3], self.cap = ptr, None
        views = region.views.get(start)
        if views is not None:
            views.discard(self)
        if not views:
            region.views.pop(start, None)
            region.free(start)
        self._runner = None
