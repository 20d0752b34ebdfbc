"""Nodes that run on the rocket NPU without moving a byte: RESHAPE / SQUEEZE, and a QUANTIZE that only moves
the zero point by 128 between uint8 and int8.

Why they are free: a tensor's device layout (NC1HWC2, rocket.md §3.1) depends only on its channels and its
pixel count in row-major order, so a reshape that keeps the channel count and the pixel count leaves every byte
where it was; and the NPU computes on stored bytes (uint8 q - 128, int8 q), so uint8 (scale s, zero point z) and
int8 (scale s, zero point z - 128) store identical bytes. The output of such a node is the same device buffer as
its input (an alias); the host reads any alias as row-major bytes, which is what TFLite's RESHAPE produces,
whatever the new shape.

When the rocket targets claim one (`claims`): it must be next to NPU work (its input produced by a claimed node or
written by the host for a claimed consumer), and every claimed consumer must see the same layout (same channel
count and pixel count). A reshape that changes the channel grouping for an NPU consumer would need a copy task.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..ir import Graph, Operation, Tensor
from .lower import LoweringError

ALIAS_KINDS = ("RESHAPE", "SQUEEZE", "QUANTIZE")


@dataclass(frozen=True)
class RocketAlias:
    """`output_tensor` is `input_tensor`'s device buffer under another shape (and maybe the other 8-bit type)."""

    nodes: list[int]
    kind: str
    input_tensor: int
    output_tensor: int
    input_dtype: str
    output_dtype: str


def geometry(t: Tensor) -> tuple[int, int]:
    """(pixels, channels) of the tensor's device layout: the last dimension is the channel axis, the others are
    pixels (a vector (1, N) is one pixel of N channels)."""
    if not t.shape:
        return 1, 1
    return int(np.prod(t.shape[:-1], dtype=np.int64)), int(t.shape[-1])


def _same_quant(x: Tensor, y: Tensor) -> bool:
    return (x.quant is not None and y.quant is not None and x.quant.per_tensor and y.quant.per_tensor
            and x.quant.scale == y.quant.scale)


def lower_alias(graph: Graph, op: Operation) -> RocketAlias:
    """The alias of a RESHAPE / SQUEEZE / shift-only QUANTIZE node, or LoweringError with the reason."""
    if op.kind not in ALIAS_KINDS:
        raise LoweringError(f"{op.kind} is not a layout-preserving node")
    if not op.inputs or len(op.outputs) != 1:
        raise LoweringError("unexpected number of inputs/outputs")
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if x.dtype not in ("uint8", "int8") or y.dtype not in ("uint8", "int8"):
        raise LoweringError(f"{op.kind} of {x.dtype} to {y.dtype} (uint8 or int8 only)")
    if x.is_constant:
        raise LoweringError(f"{op.kind} of a constant")
    if int(np.prod(x.shape, dtype=np.int64)) != int(np.prod(y.shape, dtype=np.int64)):
        raise LoweringError(f"{op.kind} changes the element count")
    if not _same_quant(x, y):
        raise LoweringError(f"{op.kind} changes the scale (a requantization needs an NPU pass)")
    zx, zy = x.quant.zero_point, y.quant.zero_point  # type: ignore[union-attr]
    shift = {("uint8", "int8"): -128, ("int8", "uint8"): 128}.get((x.dtype, y.dtype), 0)
    if zy != zx + shift:
        raise LoweringError(f"{op.kind} moves the zero point from {zx} ({x.dtype}) to {zy} ({y.dtype}): the stored "
                            "bytes change (a requantization needs an NPU pass)")
    return RocketAlias([op.index], op.kind, x.index, y.index, x.dtype, y.dtype)


def claims(graph: Graph, decisions: dict[int, tuple[bool, str]],
           host_written: frozenset[int] = frozenset()) -> dict[int, tuple[bool, str]]:
    """Decisions for the graph's alias nodes, given every other node's: see the module docstring.
    `host_written`: tensors claimed nodes read in a layout only the host writes (an alias of NPU output cannot
    feed them). Aliases are decided in graph order, so a chain of them resolves to the tensor holding the bytes."""
    out: dict[int, tuple[bool, str]] = {}
    holder: dict[int, int] = {}  # output of a claimed alias -> the tensor whose buffer it is
    for op in graph.operations:
        if op.kind not in ALIAS_KINDS:
            continue
        try:
            a = lower_alias(graph, op)
        except LoweringError as e:
            out[op.index] = (False, str(e))
            continue
        x, y = graph.tensors[a.input_tensor], graph.tensors[a.output_tensor]
        bytes_of = graph.tensors[holder.get(x.index, x.index)]
        producer = graph.producer(x.index)
        on_npu = producer is not None and {**decisions, **out}.get(producer.index, (False, ""))[0]
        consumers = [c for c in graph.consumers(y.index) if decisions.get(c.index, (False, ""))[0]]
        if consumers and geometry(y) != geometry(bytes_of):
            why = (f"{op.kind} {bytes_of.shape} -> {y.shape} changes the layout NPU node {consumers[0].index} "
                   "reads (a copy task is not emitted)")
            out[op.index] = (False, why)
        elif on_npu and y.index in host_written:
            out[op.index] = (False, f"{op.kind} output is read as raw rows by a claimed node (host-written only)")
        elif not on_npu and (producer is not None or not consumers):
            out[op.index] = (False, f"{op.kind} is not next to NPU work (nothing to save: the host runs it)")
        else:
            out[op.index] = (True, f"{op.kind.lower()} in place (the output is the input's device buffer)")
            holder[y.index] = bytes_of.index
    return out


@dataclass(frozen=True)
class Aliases:
    """Alias outputs -> the tensor whose buffer holds them (`root`), and the 8-bit type each alias end has on the
    host side (a shift-only QUANTIZE stores the same bytes for a tensor of the other type)."""

    root: dict[int, int]
    dtype: dict[int, str]

    def buffer_of(self, t: int) -> int:
        return self.root.get(t, t)


def resolve(ops: list[object]) -> tuple[list[object], Aliases]:
    """The operations without the aliases, each reading the tensor that holds the bytes, and the aliases."""
    root: dict[int, int] = {}
    dtype: dict[int, str] = {}
    for a in ops:
        if isinstance(a, RocketAlias):
            root[a.output_tensor] = root.get(a.input_tensor, a.input_tensor)
            dtype.setdefault(a.input_tensor, a.input_dtype)
            dtype[a.output_tensor] = a.output_dtype
    rest = []
    for op in ops:
        if isinstance(op, RocketAlias):
            continue
        t = op.input_tensor
        if t in root:
            op = replace(op, input_tensor=root[t])  # type: ignore[type-var]
        rest.append(op)
    return rest, Aliases(root, dtype)
