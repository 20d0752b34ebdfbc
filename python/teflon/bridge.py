"""The Python side of libteflon.so's cffi embedding (delegate/pybridge.h).

The embedding's init code (python/teflon/_build_embed.py) calls `install(ffi, lib)` once per process;
from then on the delegate's Prepare calls `teflon_py_support` once per graph and `teflon_py_compile`
once per partition, always on the thread running Prepare. Nothing here may let an exception reach C:
failures are printed and reported as a non-zero return, and the delegate leaves those nodes on the CPU.

Tools observe what the delegate decided and compiled with `capture()`:

    with teflon.bridge.capture() as cap:
        interp = Interpreter(model, experimental_delegates=[teflon.load_delegate(device="rk3588")])
    cap.support    # [(ir.Graph, {node: (claimed, reason)})], one per delegate Prepare
    cap.programs   # [(nodes, Program)], one per compiled partition
    cap.failures   # [(nodes, message)], partitions that failed to compile
"""

from __future__ import annotations

import contextlib
import gc
import math
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from teflon import compiler
from teflon.ir import OFFLINE_ALLOCATION, TFLITE_TYPES, Graph, Operation, Quant, Tensor, decode_options, op_name
from teflon.program import Program

Decisions = dict[int, tuple[bool, str]]


@dataclass
class Capture:
    support: list[tuple[Graph, Decisions]] = field(default_factory=list)
    programs: list[tuple[list[int], Program]] = field(default_factory=list)
    failures: list[tuple[list[int], str]] = field(default_factory=list)


_captures: list[Capture] = []
_ffi: Any = None
_lib: Any = None
# The graph converted by the latest support call, keyed by the C graph's address: the delegate calls
# support first in every Prepare, then compile for each partition of that same graph.
_current: tuple[int, Graph] | None = None


@contextlib.contextmanager
def capture() -> Iterator[Capture]:
    """Collect the delegate's decisions and programs made while the block runs (this process)."""
    cap = Capture()
    _captures.append(cap)
    try:
        yield cap
    finally:
        _captures.remove(cap)


# ---- C graph -> ir.Graph ------------------------------------------------------------------------


def _ints(ffi: Any, ptr: Any, n: int) -> list[int]:
    return list(ffi.unpack(ptr, n)) if n > 0 and ptr != ffi.NULL else []


def tensor_from_c(ffi: Any, t: Any) -> Tensor:
    dtype = TFLITE_TYPES.get(t.type, f"tflite_type_{t.type}")
    shape = tuple(_ints(ffi, t.dims, t.ndim)) if t.ndim >= 0 else (-1,)  # -1: rank above 6, unusable
    data = None
    if t.is_constant and t.data != ffi.NULL and t.type in TFLITE_TYPES:
        arr = np.frombuffer(ffi.buffer(t.data, t.bytes), dtype=np.dtype(dtype)).copy()
        data = arr.reshape(shape) if arr.size == math.prod(shape) else arr
    quant = None
    if t.nscales > 0:
        # one scale (most tensors): read the element, a buffer view and its copy cost several times more
        scales = (np.array([t.scales[0]], dtype=np.float32) if t.nscales == 1
                  else np.frombuffer(ffi.buffer(t.scales, 4 * t.nscales), dtype=np.float32).copy())
        if t.nzero_points == 1:
            zero_points = np.array([t.zero_points[0]], dtype=np.int32)
        elif t.nzero_points > 0:
            zero_points = np.frombuffer(ffi.buffer(t.zero_points, 4 * t.nzero_points), dtype=np.int32).copy()
        else:
            zero_points = np.zeros(1, dtype=np.int32)
        quant = Quant(scales=scales, zero_points=zero_points, axis=int(t.quantized_dimension))
    name = ffi.string(t.name).decode(errors="replace") if t.name != ffi.NULL else ""
    return Tensor(
        index=int(t.index), dtype=dtype, shape=shape, quant=quant, data=data, name=name, is_variable=bool(t.is_variable)
    )


def graph_from_c(ffi: Any, g: Any) -> Graph:
    """ir.Graph of the delegate's teflon_graph: every node, and every tensor a node touches."""
    operations = []
    used: set[int] = set()
    for i in range(g.nnodes):
        n = g.nodes[i]
        custom = ffi.string(n.custom_name).decode(errors="replace") if n.custom_name != ffi.NULL else ""
        kind = op_name(int(n.builtin_code), custom)
        inputs = _ints(ffi, n.inputs, n.ninputs)
        outputs = _ints(ffi, n.outputs, n.noutputs)
        options = decode_options(kind, list(n.options)) if n.has_options else {}
        operations.append(
            Operation(
                index=int(n.index),
                kind=kind,
                inputs=inputs,
                outputs=outputs,
                options=options,
                builtin_code=int(n.builtin_code),
                version=int(n.version),
                custom_name=custom,
            )
        )
        used.update(t for t in inputs + outputs if t >= 0)
    tensors = {t: tensor_from_c(ffi, g.tensors[t]) for t in sorted(used) if t < g.ntensors}
    metadata = {}
    if g.offline_alloc != ffi.NULL and g.offline_alloc_bytes:
        metadata[OFFLINE_ALLOCATION] = bytes(ffi.buffer(g.offline_alloc, int(g.offline_alloc_bytes)))
    return Graph(tensors=tensors, operations=operations, metadata=metadata)


# ---- reporting ----------------------------------------------------------------------------------


def format_table(graph: Graph, decisions: Decisions) -> str:
    rows = [f"teflon: {'node':>4}  {'op':<22} {'delegated':<9}  reason"]
    for op in graph.operations:
        ok, reason = decisions.get(op.index, (False, "no decision"))
        rows.append(f"teflon: {op.index:>4}  {op.kind:<22} {'yes' if ok else 'no':<9}  {reason}")
    claimed = sum(1 for ok, _ in decisions.values() if ok)
    rows.append(f"teflon: {claimed} of {len(graph.operations)} nodes claimed for the NPU")
    return "\n".join(rows)


def _print(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _write_err(err: Any, errlen: int, message: str) -> None:
    if errlen <= 0 or err == _ffi.NULL:
        return
    data = message.encode(errors="replace")[: errlen - 1] + b"\0"
    _ffi.memmove(err, data, len(data))


def _on_error(exc_type: type[BaseException], exc: BaseException, tb: Any) -> None:
    """Last resort for anything escaping a callback (cffi then returns the `error` value to C)."""
    _print("teflon: internal error in the Python bridge:\n" + "".join(traceback.format_exception(exc_type, exc, tb)))


# ---- the extern "Python" entry points -----------------------------------------------------------


def _graph_for(g: Any) -> Graph:
    global _current
    address = int(_ffi.cast("uintptr_t", g))
    if _current is None or _current[0] != address:
        _current = (address, graph_from_c(_ffi, g))
    return _current[1]


def _malloc_text(text: str) -> Any:
    """A NUL-terminated copy of `text` in C memory (C frees it)."""
    data = text.encode(errors="replace") + b"\0"
    mem = _lib.malloc(len(data))
    if mem == _ffi.NULL:
        raise MemoryError(f"cannot allocate {len(data)} bytes")
    _ffi.memmove(mem, data, len(data))
    return _ffi.cast("char *", mem)


@contextlib.contextmanager
def _no_gc_pauses() -> Iterator[None]:
    """The compiler allocates many short-lived objects and no reference cycles worth collecting mid-Prepare; a
    cyclic collection there only adds a pause of several ms (seen as the spread of warm compile times)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _support_body(g: Any, device: Any, debug: int, supported: Any, table: Any) -> int:
    global _current
    try:
        dev = _ffi.string(device).decode()
        _current = None  # a new Prepare: never reuse an older graph at a recycled address
        graph = _graph_for(g)
        decisions = compiler.supported(graph, dev)
        for i, op in enumerate(graph.operations):
            supported[i] = 1 if decisions[op.index][0] else 0
        # Always made, printed by C with debug: the program cache keeps it for runs that skip Python.
        table[0] = _malloc_text(format_table(graph, decisions) + "\n")
        for cap in _captures:
            cap.support.append((graph, decisions))
        return 0
    except Exception:  # noqa: BLE001 -- nothing may propagate into C
        _print("teflon: deciding which nodes to delegate failed:\n" + traceback.format_exc())
        return -1


def _compile_body(
    g: Any,
    new_graph: int,
    device: Any,
    debug: int,
    nodes: Any,
    nnodes: int,
    inputs: Any,
    ninputs: int,
    outputs: Any,
    noutputs: int,
    blob: Any,
    blob_len: Any,
    err: Any,
    errlen: int,
) -> int:
    global _current
    node_list: list[int] = []
    try:
        dev = _ffi.string(device).decode()
        node_list = _ints(_ffi, nodes, nnodes)
        if new_graph:  # the support decision came from the program cache: any graph kept here is an older one
            _current = None
        graph = _graph_for(g)
        program = compiler.compile(graph, node_list, _ints(_ffi, inputs, ninputs), _ints(_ffi, outputs, noutputs), dev)
        parts = program.blob_parts()  # copied piece by piece: the weight-sized data once, straight into C memory
        size = sum(len(p) for p in parts)
        mem = _lib.malloc(size)
        if mem == _ffi.NULL:
            raise MemoryError(f"cannot allocate {size} bytes for the program")
        dst = _ffi.cast("uint8_t *", mem)
        off = 0
        for p in parts:
            _ffi.memmove(dst + off, p, len(p))
            off += len(p)
        blob[0] = dst
        blob_len[0] = size
        for cap in _captures:
            cap.programs.append((node_list, program))
        return 0
    except Exception as exc:  # noqa: BLE001 -- nothing may propagate into C
        message = f"{type(exc).__name__}: {exc}"
        if debug:
            _print(f"teflon: compiling nodes {node_list} failed:\n" + traceback.format_exc())
        for cap in _captures:
            cap.failures.append((node_list, message))
        _write_err(err, errlen, message)
        return -1


def _support(*args: Any) -> int:
    with _no_gc_pauses():
        return _support_body(*args)


def _compile(*args: Any) -> int:
    with _no_gc_pauses():
        return _compile_body(*args)


def install(ffi: Any, lib: Any) -> None:
    """Attach the implementations to the embedded module's extern "Python" functions."""
    global _ffi, _lib
    _ffi, _lib = ffi, lib
    ffi.def_extern(name="teflon_py_support", error=-1, onerror=_on_error)(_support)
    ffi.def_extern(name="teflon_py_compile", error=-1, onerror=_on_error)(_compile)
