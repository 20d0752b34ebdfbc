"""Is this file a .tflite model the runtimes can read without crashing? A bounds-checked walk of the flatbuffer.

tflite_runtime 2.14 does not verify the flatbuffer before reading it, so a truncated model makes it read past the
end of the file (SIGSEGV); ai_edge_litert verifies but its messages name no part. `verify_model` walks the parts
the runtimes read — the Model table, operator codes, subgraphs with their tensors (names, shapes, quantization,
sparsity) and operators (index vectors, options tables), buffers (inline data, or offset/size into the file for
models over 2 GB), metadata and signature defs — and checks that every table, vtable, vector and string lies
inside the file, and that the indices between them (opcode, buffer, tensor) are in range.

Layout facts (flatbuffers' binary format, TFLite's schema.fbs): offset 0 holds the u32 offset of the root table,
bytes 4..8 the file identifier "TFL3". A table starts with an i32 back-offset to its vtable: u16 vtable size,
u16 table size, then one u16 field offset per field (0 = absent). Reference fields hold a u32 offset relative
to the field itself; a vector is a u32 length followed by its elements; a string is a byte vector plus a NUL.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

IDENTIFIER = b"TFL3"
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_U64 = struct.Struct("<Q")

# Field numbers in TFLite's schema.fbs (the order of declaration, deprecated fields included).
MODEL_OPERATOR_CODES, MODEL_SUBGRAPHS, MODEL_DESCRIPTION, MODEL_BUFFERS = 1, 2, 3, 4
MODEL_METADATA_BUFFER, MODEL_METADATA, MODEL_SIGNATURE_DEFS = 5, 6, 7
OPCODE_CUSTOM_CODE = 1
SUBGRAPH_TENSORS, SUBGRAPH_INPUTS, SUBGRAPH_OUTPUTS, SUBGRAPH_OPERATORS, SUBGRAPH_NAME = 0, 1, 2, 3, 4
TENSOR_SHAPE, TENSOR_BUFFER, TENSOR_NAME, TENSOR_QUANTIZATION, TENSOR_SPARSITY, TENSOR_SHAPE_SIGNATURE = 0, 2, 3, 4, 6, 7
QUANT_MIN, QUANT_MAX, QUANT_SCALE, QUANT_ZERO_POINT, QUANT_DETAILS = 0, 1, 2, 3, 5
SPARSITY_TRAVERSAL_ORDER, SPARSITY_BLOCK_MAP, SPARSITY_DIM_METADATA = 0, 1, 2
OP_OPCODE_INDEX, OP_INPUTS, OP_OUTPUTS, OP_BUILTIN_OPTIONS, OP_CUSTOM_OPTIONS = 0, 1, 2, 4, 5
OP_MUTATING_VARIABLE_INPUTS, OP_INTERMEDIATES, OP_LARGE_CUSTOM_OFFSET, OP_LARGE_CUSTOM_SIZE = 7, 8, 9, 10
OP_BUILTIN_OPTIONS_2 = 12
BUFFER_DATA, BUFFER_OFFSET, BUFFER_SIZE = 0, 1, 2
METADATA_NAME, METADATA_BUFFER = 0, 1
SIGNATURE_INPUTS, SIGNATURE_OUTPUTS, SIGNATURE_KEY, SIGNATURE_SUBGRAPH_INDEX = 0, 1, 2, 4
TENSORMAP_NAME, TENSORMAP_TENSOR_INDEX = 0, 1


class ModelError(ValueError):
    """The file is not a .tflite model the runtimes can read safely; the message says what is wrong."""

    def __init__(self, what: str) -> None:
        super().__init__(f"not a valid .tflite model: {what}")


class _Table:
    """A table at `pos`, its vtable checked to lie inside the buffer."""

    def __init__(self, r: _Reader, pos: int, what: str) -> None:
        self.r, self.pos, self.what = r, pos, what
        vt = pos - r.scalar(_I32, pos, what)
        if vt < 0 or vt + 4 > r.size:
            raise ModelError(f"{what}: vtable at {vt:#x} is outside the file ({r.size} bytes)")
        self.vt_size = r.scalar(_U16, vt, what)
        self.size = r.scalar(_U16, vt + 2, what)
        if self.vt_size < 4 or self.vt_size % 2 or vt + self.vt_size > r.size:
            raise ModelError(f"{what}: vtable at {vt:#x} of {self.vt_size} bytes is malformed or past the end")
        if self.size < 4 or pos + self.size > r.size:
            raise ModelError(f"{what}: table at {pos:#x} of {self.size} bytes runs past the end of the file")
        self.vt = vt

    def field(self, index: int, width: int) -> int | None:
        """Position of field `index` (`width` bytes), or None when absent."""
        slot = 4 + 2 * index
        if slot >= self.vt_size:
            return None
        off = _U16.unpack_from(self.r.buf, self.vt + slot)[0]
        if off == 0:
            return None
        if off + width > self.size:
            raise ModelError(f"{self.what}: field {index} at +{off} lies outside its {self.size}-byte table")
        return self.pos + off

    def u32(self, index: int, default: int = 0) -> int:
        p = self.field(index, 4)
        return default if p is None else _U32.unpack_from(self.r.buf, p)[0]

    def u64(self, index: int, default: int = 0) -> int:
        p = self.field(index, 8)
        return default if p is None else _U64.unpack_from(self.r.buf, p)[0]

    def target(self, index: int, what: str) -> int | None:
        """Where the reference field `index` points, or None when absent."""
        p = self.field(index, 4)
        if p is None:
            return None
        t = p + _U32.unpack_from(self.r.buf, p)[0]
        if t + 4 > self.r.size:
            raise ModelError(f"{self.what}: {what} at {t:#x} is outside the file ({self.r.size} bytes)")
        return t

    def table(self, index: int, what: str) -> _Table | None:
        t = self.target(index, what)
        return None if t is None else _Table(self.r, t, f"{self.what} {what}")

    def vector(self, index: int, dtype: str, what: str) -> np.ndarray:
        """The elements of a scalar vector field (empty when absent)."""
        t = self.target(index, what)
        if t is None:
            return np.empty(0, dtype=dtype)
        return self.r.vector_at(t, np.dtype(dtype), f"{self.what} {what}")

    def string(self, index: int, what: str) -> None:
        t = self.target(index, what)
        if t is not None:
            self.r.string_at(t, f"{self.what} {what}")

    def tables(self, index: int, what: str) -> list[_Table]:
        """The tables of a vector-of-tables field (empty when absent)."""
        t = self.target(index, what)
        if t is None:
            return []
        offsets = self.r.vector_at(t, np.dtype("<u4"), f"{self.what} {what}")
        positions = t + 4 + 4 * np.arange(len(offsets), dtype=np.int64) + offsets
        return [_Table(self.r, int(p), f"{self.what} {what}[{i}]") for i, p in enumerate(positions)]


class _Reader:
    def __init__(self, buf: bytes | mmap.mmap) -> None:
        self.buf = buf
        self.size = len(buf)

    def scalar(self, fmt: struct.Struct, pos: int, what: str) -> int:
        if pos < 0 or pos + fmt.size > self.size:
            raise ModelError(f"{what}: offset {pos:#x} is outside the file ({self.size} bytes)")
        return fmt.unpack_from(self.buf, pos)[0]

    def vector_at(self, pos: int, dtype: np.dtype, what: str) -> np.ndarray:
        n = self.scalar(_U32, pos, what)
        if pos + 4 + n * dtype.itemsize > self.size:
            raise ModelError(f"{what}: vector of {n} elements at {pos:#x} runs past the end of the file "
                             f"({self.size} bytes)")
        if dtype.itemsize == 1:
            return np.empty(0, dtype=dtype)  # byte vectors (weights, options) are only bounds-checked, not read
        # a copy: no view may keep the file's memory map open
        return np.frombuffer(self.buf, dtype=dtype, count=n, offset=pos + 4).copy()

    def string_at(self, pos: int, what: str) -> None:
        n = self.scalar(_U32, pos, what)
        if pos + 4 + n >= self.size or self.buf[pos + 4 + n] != 0:
            raise ModelError(f"{what}: string of {n} bytes at {pos:#x} runs past the end of the file "
                             f"({self.size} bytes) or lacks its terminator")


def _check_indices(values: np.ndarray, limit: int, what: str, optional: bool = False) -> None:
    """Every value in 0..limit-1 (or -1, TFLite's "no tensor", when `optional`)."""
    bad = (values >= limit) | (values < (-1 if optional else 0))
    if bad.any():
        raise ModelError(f"{what}: index {int(values[bad][0])} out of range (0..{limit - 1})")


def _check_index(value: int, limit: int, what: str) -> None:
    if value >= limit:
        raise ModelError(f"{what}: index {value} out of range (0..{limit - 1})")


def _check_tensor(t: _Table, nbuffers: int) -> None:
    t.vector(TENSOR_SHAPE, "<i4", "shape")
    t.vector(TENSOR_SHAPE_SIGNATURE, "<i4", "shape_signature")
    t.string(TENSOR_NAME, "name")
    _check_index(t.u32(TENSOR_BUFFER), nbuffers, f"{t.what} buffer")
    q = t.table(TENSOR_QUANTIZATION, "quantization")
    if q is not None:
        for field, dtype, what in ((QUANT_MIN, "<f4", "min"), (QUANT_MAX, "<f4", "max"),
                                   (QUANT_SCALE, "<f4", "scale"), (QUANT_ZERO_POINT, "<i8", "zero_point")):
            q.vector(field, dtype, what)
        q.table(QUANT_DETAILS, "details")
    s = t.table(TENSOR_SPARSITY, "sparsity")
    if s is not None:
        s.vector(SPARSITY_TRAVERSAL_ORDER, "<i4", "traversal_order")
        s.vector(SPARSITY_BLOCK_MAP, "<i4", "block_map")
        s.tables(SPARSITY_DIM_METADATA, "dim_metadata")


def _check_operator(op: _Table, nopcodes: int, ntensors: int, size: int) -> None:
    _check_index(op.u32(OP_OPCODE_INDEX), nopcodes, f"{op.what} opcode_index")
    for field, what in ((OP_INPUTS, "inputs"), (OP_OUTPUTS, "outputs"), (OP_INTERMEDIATES, "intermediates")):
        _check_indices(op.vector(field, "<i4", what), ntensors, f"{op.what} {what}", optional=True)
    op.table(OP_BUILTIN_OPTIONS, "builtin_options")
    op.table(OP_BUILTIN_OPTIONS_2, "builtin_options_2")
    op.vector(OP_CUSTOM_OPTIONS, "u1", "custom_options")
    op.vector(OP_MUTATING_VARIABLE_INPUTS, "u1", "mutating_variable_inputs")
    offset, nbytes = op.u64(OP_LARGE_CUSTOM_OFFSET), op.u64(OP_LARGE_CUSTOM_SIZE)
    if offset > 1 and offset + nbytes > size:
        raise ModelError(f"{op.what}: custom options at {offset:#x} (+{nbytes}) lie outside the file ({size} bytes)")


def check_buffer(buf: bytes | mmap.mmap) -> None:
    """Raise ModelError unless `buf` is a .tflite flatbuffer whose read parts all lie inside it."""
    r = _Reader(buf)
    if r.size == 0:
        raise ModelError("the file is empty")
    if r.size < 8:
        raise ModelError(f"{r.size} bytes, too short for a flatbuffer")
    ident = bytes(buf[4:8])
    if ident != IDENTIFIER:
        raise ModelError(f"file identifier {ident!r}, expected {IDENTIFIER!r}")
    model = _Table(r, r.scalar(_U32, 0, "root"), "model")
    model.string(MODEL_DESCRIPTION, "description")
    buffers = model.tables(MODEL_BUFFERS, "buffers")
    for b in buffers:
        b.vector(BUFFER_DATA, "u1", "data")
        offset, nbytes = b.u64(BUFFER_OFFSET), b.u64(BUFFER_SIZE)
        if offset > 1 and offset + nbytes > r.size:
            raise ModelError(f"{b.what}: data at {offset:#x} (+{nbytes}) lies outside the file ({r.size} bytes)")
    opcodes = model.tables(MODEL_OPERATOR_CODES, "operator_codes")
    for code in opcodes:
        code.string(OPCODE_CUSTOM_CODE, "custom_code")
    subgraphs = model.tables(MODEL_SUBGRAPHS, "subgraphs")
    if not subgraphs:
        raise ModelError("it has no subgraph")
    for sg in subgraphs:
        sg.string(SUBGRAPH_NAME, "name")
        tensors = sg.tables(SUBGRAPH_TENSORS, "tensors")
        for t in tensors:
            _check_tensor(t, len(buffers))
        for field, what in ((SUBGRAPH_INPUTS, "inputs"), (SUBGRAPH_OUTPUTS, "outputs")):
            _check_indices(sg.vector(field, "<i4", what), len(tensors), f"{sg.what} {what}")
        for op in sg.tables(SUBGRAPH_OPERATORS, "operators"):
            _check_operator(op, len(opcodes), len(tensors), r.size)
    _check_indices(model.vector(MODEL_METADATA_BUFFER, "<i4", "metadata_buffer"), len(buffers),
                   "model metadata_buffer")
    for m in model.tables(MODEL_METADATA, "metadata"):
        m.string(METADATA_NAME, "name")
        _check_index(m.u32(METADATA_BUFFER), len(buffers), f"{m.what} buffer")
    for sig in model.tables(MODEL_SIGNATURE_DEFS, "signature_defs"):
        sig.string(SIGNATURE_KEY, "signature_key")
        _check_index(sig.u32(SIGNATURE_SUBGRAPH_INDEX), len(subgraphs),
                       f"{sig.what} subgraph_index")
        for field, what in ((SIGNATURE_INPUTS, "inputs"), (SIGNATURE_OUTPUTS, "outputs")):
            for tm in sig.tables(field, what):
                tm.string(TENSORMAP_NAME, "name")


@contextmanager
def _mapped(path: str | os.PathLike[str]) -> Iterator[bytes | mmap.mmap]:
    """The file's bytes, memory-mapped (a large model is not read into memory to be checked)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            yield b""
            return
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            yield m


def verify_model(model: str | os.PathLike[str] | bytes | bytearray | memoryview) -> None:
    """Raise ValueError("not a valid .tflite model: ...") unless `model` (a path or the flatbuffer's bytes) can be
    handed to tflite_runtime / ai_edge_litert without them reading outside it. OSError for an unreadable path."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        check_buffer(bytes(model) if isinstance(model, memoryview) else model)
        return
    if Path(model).is_dir():
        raise IsADirectoryError(f"{model} is a directory, not a .tflite model")
    with _mapped(model) as buf:
        check_buffer(buf)
