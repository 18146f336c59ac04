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
do not fit."""
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
        self.tensors = weakref.WeakValueDictionary()   # start -> live RegionTensor

    def collect(self):
        while self._freed:
            self.blocks.pop(self._freed.pop(), None)

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


def _release(cell):
    region, start, host, own = cell
    if own:
        host.release([own])
    else:
        region._freed.append(start)   # list.append: safe from a finalizer


class RegionTensor(WasmTensor):
    """A WasmTensor in a runner's device region: `ptr` follows the region when it moves (read it
    again after a run; OrtValue.data_ptr() gives the current one). When the runner closes, live
    tensors are moved to buffers of their own (evict) and stay valid."""
    __slots__ = ("_runner", "_cell")

    def __init__(self, runner, start, dtype, shape):   # pylint: disable=super-init-not-called
        self.host, self.dtype, self.shape = runner.host, dtype, tuple(int(d) for d in shape)
        self._runner, self._cell = runner, [runner._region, start, runner.host, 0]
        runner._region.tensors[start] = self
        weakref.finalize(self, _release, self._cell)

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
        src = self.ptr
        if self.nbytes:
            host.call("nnw_memmove", runner.arena + runner._region.base + start, src, self.nbytes)
        if own:
            host.release([own])
        else:
            region.free(old)
            region.tensors.pop(old, None)
        self._runner, self._cell[:] = runner, [runner._region, start, host, 0]
        runner._region.tensors[start] = self

    def evict(self, malloc):
        """Moves the bytes to a buffer of their own (malloc(n) -> ptr); the block is freed."""
        ptr = malloc(self.nbytes)
        if self.nbytes:
            self.host.call("nnw_memmove", ptr, self.ptr, self.nbytes)
        region, start = self._cell[0], self._cell[1]
        self._cell[3] = ptr
        region.free(start)
        self._runner = None
