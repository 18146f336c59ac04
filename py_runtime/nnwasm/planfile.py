""".nnwp plan files: a compiled WASM plan with its I/O table, runnable without ONNX or Python.
This module alone knows the layout (docs/architecture.md, "Plan files"):

    0  "NNWF" | format_version | abi_version | flags | io_bytes | plan_bytes | crc32 | reserved
    32 I/O table (UTF-8 JSON), zero-padded to 16 | the plan as PlanBuilder.finish returns it

The I/O table also lists each run op's [node, op type, kernel] ("ops"), so that profiles and
errors name ONNX nodes on every host; files written before it have none (ops are then "#k").

read() refuses anything that does not add up, before a byte reaches kernels.wasm (whose
nnw_plan_load then validates every op as the last guard). Standard library only: Pyodide too.
"""
import json
import struct
import zlib
from dataclasses import dataclass

from . import dtypes
from .errors import InvalidModel, Unsupported
from .tensor import numel
from .wasm.opcodes import OPS
from .wasm.plan import MAGIC as PLAN_MAGIC, VERSION as ABI_VERSION
from .wasm.runner import PlanOp

MAGIC = b"NNWF"
FORMAT_VERSION = 1
HEADER = struct.Struct("<4s7I")   # magic, format, abi, flags, io_bytes, plan_bytes, crc32, reserved
PLAN_HEADER = struct.Struct("<8i")
_KERNELS = {op.code: name for name, op in OPS.items()}


@dataclass(frozen=True)
class Value:
    name: str
    dtype: object    # dtypes.DType
    shape: tuple
    offset: int      # in the arena

    @property
    def nbytes(self):
        return numel(self.shape) * self.dtype.size


@dataclass(frozen=True)
class PlanFile:
    inputs: list     # [Value]
    outputs: list    # [Value]
    plan: bytes      # kernels.wasm's plan (kernels_c/nnw.h layout)
    arena_bytes: int
    producer: str
    model: str
    ops: list        # [PlanOp] of the run ops


def is_plan_file(data):
    return bytes(data[:4]) == MAGIC


def _pad16(n):
    return (n + 15) // 16 * 16


def write(plan, inputs, outputs, producer, model, ops):
    """File bytes for a plan; inputs/outputs are [Value] in the model's order, ops its run ops'
    [PlanOp]."""
    def row(v):
        return {"name": v.name, "dtype": v.dtype.name, "shape": list(v.shape), "offset": v.offset}
    table = {"inputs": [row(v) for v in inputs], "outputs": [row(v) for v in outputs],
             "producer": producer, "model": model, "ops": [list(op) for op in ops]}
    io = json.dumps(table, separators=(",", ":")).encode("utf-8")
    body = io + bytes(_pad16(len(io)) - len(io)) + bytes(plan)
    crc = zlib.crc32(body) & 0xFFFFFFFF
    return HEADER.pack(MAGIC, FORMAT_VERSION, ABI_VERSION, 0, len(io), len(plan), crc, 0) + body


def read(data):
    """PlanFile from file bytes; InvalidModel (corrupt, truncated) or Unsupported (another
    version) for anything a writer of this format would not have written."""
    data = bytes(data)
    if len(data) < HEADER.size:
        raise InvalidModel(f"not a plan file: {len(data)} bytes, shorter than the {HEADER.size}-byte header")
    magic, fmt, abi, flags, io_bytes, plan_bytes, crc, reserved = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise InvalidModel(f"not a plan file: it starts with {magic!r}, not {MAGIC!r}")
    if fmt != FORMAT_VERSION:
        raise Unsupported(f"plan file format version {fmt}; this nnwasm reads version {FORMAT_VERSION}")
    if abi != ABI_VERSION:
        raise Unsupported(f"plan file made for kernels.wasm plan version {abi}; this kernels.wasm runs "
                          f"version {ABI_VERSION}: compile the model again")
    if flags:
        raise Unsupported(f"plan file flags {flags:#x}: this nnwasm knows no flags")
    if reserved:   # as the JS reader (web/plan-file.mjs): both refuse what a writer never writes
        raise InvalidModel(f"plan file reserved header word is {reserved:#x}, not 0")
    io_pad = _pad16(io_bytes)
    if HEADER.size + io_pad + plan_bytes != len(data):
        raise InvalidModel(f"plan file sizes do not add up: header says {HEADER.size} + {io_pad} + {plan_bytes} "
                           f"bytes, the file has {len(data)} (truncated or corrupt)")
    if zlib.crc32(memoryview(data)[HEADER.size:]) & 0xFFFFFFFF != crc:
        raise InvalidModel("plan file checksum mismatch: the file is corrupt")
    plan = memoryview(data)[HEADER.size + io_pad:]   # a view: a copy of the weights would double the peak
    if plan_bytes < PLAN_HEADER.size:
        raise InvalidModel(f"plan file holds a {plan_bytes}-byte plan, shorter than its header")
    head = PLAN_HEADER.unpack_from(plan)
    if head[0] != PLAN_MAGIC:
        raise InvalidModel("plan file holds no kernels.wasm plan (bad plan magic)")
    arena = head[2]
    try:
        table = json.loads(data[HEADER.size:HEADER.size + io_bytes].decode("utf-8"))
        inputs = [_value(r, arena, "input") for r in table["inputs"]]
        outputs = [_value(r, arena, "output") for r in table["outputs"]]
        producer, model = table["producer"], table["model"]
        if not isinstance(producer, str) or not isinstance(model, str):
            raise TypeError("producer and model must be strings")
        ops = _ops(table.get("ops"), run_opcodes(plan))
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as e:   # JSONDecodeError: ValueError
        if isinstance(e, (InvalidModel, Unsupported)):
            raise
        raise InvalidModel(f"plan file I/O table is not valid: {type(e).__name__}: {e}") from None
    names = [v.name for v in inputs] + [v.name for v in outputs]
    if len(set(names)) != len(names):
        raise InvalidModel("plan file I/O table names a value twice")
    return PlanFile(inputs, outputs, plan, arena, producer, model, ops)


def run_opcodes(plan):
    """The opcodes of the plan's run ops, in order. The words are not validated yet (that is
    nnw_plan_load's job), so the walk stops at anything out of bounds."""
    head = PLAN_HEADER.unpack_from(plan)
    start, n = 8 + head[5], head[6]   # run ops follow the init ops
    ok = head[5] >= 0 and 0 <= n <= len(plan) // 4 - start
    words = struct.unpack_from(f"<{n}i", plan, 4 * start) if ok else ()
    codes, k = [], 0
    while k + 1 < len(words) and words[k + 1] >= 0:
        codes.append(words[k])
        k += 2 + words[k + 1]
    return codes


def _ops(rows, codes):
    """[PlanOp] from the table's "ops" rows, which must match the run ops one to one."""
    kernels = [_KERNELS.get(c, f"op{c}") for c in codes]
    if rows is None:   # a file from before the ops table
        return [PlanOp(f"#{k}", kernel, kernel) for k, kernel in enumerate(kernels)]
    if not isinstance(rows, list) or len(rows) != len(codes):
        raise InvalidModel(f"plan file ops table lists {len(rows) if isinstance(rows, list) else 'no'} ops; "
                           f"the plan has {len(codes)} run ops")
    for k, row in enumerate(rows):
        if not (isinstance(row, list) and len(row) == 3 and all(isinstance(x, str) for x in row)):
            raise InvalidModel(f"plan file ops table row {k} is not [node, op type, kernel] strings")
        if row[2] != kernels[k]:
            raise InvalidModel(f"plan file ops table row {k} names kernel {row[2]!r}; the plan's op {k} is "
                               f"{kernels[k]!r}")
    return [PlanOp(*row) for row in rows]


def _value(row, arena, kind):
    name, dt, shape, offset = row["name"], row["dtype"], row["shape"], row["offset"]
    if not isinstance(name, str) or not isinstance(shape, list) or not _is_int(offset) \
            or not all(_is_int(d) and d >= 0 for d in shape):
        raise InvalidModel(f"plan file {kind} {name!r}: name, shape or offset of the wrong type")
    dtype = dtypes.BY_NAME.get(dt) if isinstance(dt, str) else None
    if dtype is None or not dtype.size:
        raise InvalidModel(f"plan file {kind} {name!r} has unknown element type {dt!r}")
    v = Value(name, dtype, tuple(shape), offset)
    if offset < 0 or arena < 0 or offset + v.nbytes > arena:
        raise InvalidModel(f"plan file {kind} '{name}' ({v.nbytes} bytes at offset {offset}) lies outside "
                           f"the plan's {arena}-byte arena")
    return v


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)
