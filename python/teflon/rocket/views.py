"""Nodes that run on the rocket NPU without moving a byte: their tensors are views of one device buffer.

- RESHAPE / SQUEEZE, and a QUANTIZE that only moves the zero point by 128 between uint8 and int8: the output is
  the input's buffer. A tensor's device layout (NC1HWC2, rocket.md §3.1: channel c of pixel p at
  (c / 16) * plane + p * 16 + c % 16) depends only on its channel count and its pixels in row-major order, so a
  reshape that keeps both leaves every byte in place; and the NPU computes on stored bytes (uint8 q - 128, int8 q),
  so uint8 (scale s, zero point z) and int8 (s, z - 128) are the same bytes. The host reads such an output with the
  buffer's own geometry, which yields the row-major bytes TFLite's RESHAPE produces, whatever the new shape.
- SLICE / STRIDED_SLICE that cut only the channel axis, from a multiple of 16 (stride 1): the output is the input's
  buffer from plane first / 16 on, as a SPLIT part is.
- CONCATENATION and SPLIT on the channel axis: the parts are consecutive 16-channel planes of the whole, so each
  part is the whole's buffer from plane (channel offset / 16) on. The operation that writes a part (or the host)
  writes it there; a reader reads it there. Every part but the last must hold a multiple of 16 channels: the DPU
  writes whole 16-channel surfaces, zero-filling the channels past its real ones (docs/hardware/rocket-sim.md,
  ORIG_CHANNEL), and the host pads a part to 16 channels on input.

When the rocket targets claim one (`claims`): it must be next to NPU work, every claimed reader must see the layout
it expects (same channels and pixel count), and a tensor is a view of at most one buffer.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from ..ir import Graph, Operation, Tensor
from .geometry import FEATURE_ATOM
from .identity_add import copy_conv
from .operations import TensorInfo, synthetic_ids
from .quantization import LoweringError

ALIAS_KINDS = ("RESHAPE", "SQUEEZE", "QUANTIZE")
SLICE_KINDS = ("SLICE", "STRIDED_SLICE")
PART_KINDS = ("CONCATENATION", "SPLIT", *SLICE_KINDS)
VIEW_KINDS = ALIAS_KINDS + PART_KINDS


@dataclass(frozen=True)
class RocketView:
    """Tensor `view` is the bytes of tensor `holder`'s device buffer from 16-channel plane `plane` on. `info` is the
    geometry the host reads or writes the view with, `holder_info` the whole buffer's."""

    nodes: list[int]
    kind: str
    holder: int
    view: int
    plane: int
    info: TensorInfo
    holder_info: TensorInfo


def info_of(t: Tensor) -> TensorInfo:
    """(h, w, c) of a tensor as the rocket operations see it: NHWC, a vector (1, N) as one pixel of N channels."""
    shape = [int(d) for d in t.shape] or [1]
    c = shape[-1]
    inner = shape[1:-1] if len(shape) > 1 else []
    h, w = (inner[0], int(np.prod(inner[1:], dtype=np.int64))) if len(inner) >= 2 else (1, inner[0] if inner else 1)
    return TensorInfo(h, w, c, t.dtype)


def geometry(t: Tensor) -> tuple[int, int]:
    """(pixels, channels) of the tensor's device layout."""
    i = info_of(t)
    return i.h * i.w, i.c


def _same_quant(x: Tensor, y: Tensor) -> bool:
    return (x.quant is not None and y.quant is not None and x.quant.per_tensor and y.quant.per_tensor
            and x.quant.scale == y.quant.scale)


def _check_8bit(op: Operation, tensors: list[Tensor]) -> None:
    for t in tensors:
        if t.dtype not in ("uint8", "int8"):
            raise LoweringError(f"{op.kind} of {t.dtype} (uint8 or int8 only)")


def _alias(graph: Graph, op: Operation) -> list[RocketView]:
    if not op.inputs or len(op.outputs) != 1:
        raise LoweringError("unexpected number of inputs/outputs")
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    _check_8bit(op, [x, y])
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
    whole = info_of(x)
    return [RocketView([op.index], op.kind, x.index, y.index, 0, TensorInfo(whole.h, whole.w, whole.c, y.dtype),
                       whole)]


def _channel_axis(t: Tensor, axis: int) -> None:
    rank = len(t.shape)
    if axis < 0:
        axis += rank
    if axis != rank - 1:
        raise LoweringError(f"axis {axis} of a rank-{rank} tensor is not the channel axis (only channels are planes)")


def _parts(op: Operation, whole: Tensor, parts: list[Tensor], axis: int, partial: bool = False) -> list[RocketView]:
    """The views of `parts` (consecutive channel ranges of `whole` from channel 0; `partial`: they need not
    cover it)."""
    _check_8bit(op, [whole, *parts])
    _channel_axis(whole, axis)
    if any(not _same_quant(whole, p) or p.quant.zero_point != whole.quant.zero_point  # type: ignore[union-attr]
           or p.dtype != whole.dtype for p in parts):
        raise LoweringError(f"{op.kind} with differing quantization (a requantization needs an NPU pass)")
    if len({p.index for p in parts}) != len(parts):
        raise LoweringError(f"{op.kind} names a tensor twice")
    if any(p.is_constant for p in parts) or whole.is_constant:
        raise LoweringError(f"{op.kind} of a constant")
    views, c0 = [], 0
    info = info_of(whole)
    for k, p in enumerate(parts):
        pi = info_of(p)
        if (pi.h, pi.w) != (info.h, info.w):
            raise LoweringError(f"{op.kind} part {p.shape} does not match {whole.shape}")
        if k < len(parts) - 1 and pi.c % FEATURE_ATOM:
            raise LoweringError(f"{op.kind} part of {pi.c} channels before the last (the parts start on 16-channel "
                                "planes)")
        views.append(RocketView([op.index], op.kind, whole.index, p.index, c0 // FEATURE_ATOM, pi, info))
        c0 += pi.c
    if c0 != info.c and not (partial and c0 <= info.c):
        raise LoweringError(f"{op.kind} parts hold {c0} channels of {info.c}")
    return views


def _constant_ints(graph: Graph, t: int, what: str, n: int) -> np.ndarray:
    d = graph.tensors[t].data
    if d is None or np.asarray(d).size != n:
        raise LoweringError(f"{what} is not a constant of {n} values")
    return np.asarray(d).reshape(-1).astype(np.int64)


def _slice_range(graph: Graph, op: Operation, shape: list[int]) -> tuple[int, int]:
    """(first, end) channel of a SLICE / STRIDED_SLICE that keeps every other axis whole, or LoweringError."""
    rank = len(shape)
    if op.kind == "SLICE":
        begin = _constant_ints(graph, op.inputs[1], "SLICE begin", rank)
        size = _constant_ints(graph, op.inputs[2], "SLICE size", rank)
        end = np.where(size < 0, shape, begin + size)
    else:
        if "begin_mask" not in op.options:
            raise LoweringError("STRIDED_SLICE options (masks) not decoded")
        o = op.options
        if o.get("ellipsis_mask") or o.get("new_axis_mask") or o.get("shrink_axis_mask"):
            raise LoweringError("STRIDED_SLICE with an ellipsis, new or shrunk axis")
        begin = _constant_ints(graph, op.inputs[1], "STRIDED_SLICE begin", rank)
        end = _constant_ints(graph, op.inputs[2], "STRIDED_SLICE end", rank)
        strides = _constant_ints(graph, op.inputs[3], "STRIDED_SLICE strides", rank)
        if np.any(strides != 1):
            raise LoweringError(f"STRIDED_SLICE strides {strides.tolist()} (1 only)")
        bits = np.array([1 << i for i in range(rank)])
        dims = np.array(shape)
        begin = np.where(int(o.get("begin_mask", 0)) & bits, 0, np.where(begin < 0, begin + dims, begin))
        end = np.where(int(o.get("end_mask", 0)) & bits, dims, np.where(end < 0, end + dims, end))
    begin, end = np.clip(begin, 0, shape), np.clip(end, 0, shape)
    if np.any(begin[:-1] != 0) or np.any(end[:-1] != np.array(shape[:-1])):
        raise LoweringError(f"{op.kind} of {shape} from {begin.tolist()} to {end.tolist()}: only the channel axis "
                            "may be cut (channels are planes)")
    return int(begin[-1]), int(end[-1])


def _slice(graph: Graph, op: Operation) -> list[RocketView]:
    if len(op.outputs) != 1 or len(op.inputs) != (3 if op.kind == "SLICE" else 4):
        raise LoweringError("unexpected number of inputs/outputs")
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    shape = [int(d) for d in x.shape]
    if len(shape) < 2:
        raise LoweringError(f"{op.kind} of a rank-{len(shape)} tensor")
    first, end = _slice_range(graph, op, shape)
    if first % FEATURE_ATOM:
        raise LoweringError(f"{op.kind} from channel {first}: a part starts on a 16-channel plane")
    if end - first != int(y.shape[-1]):
        raise LoweringError(f"{op.kind} output {y.shape} does not hold channels {first}..{end - 1}")
    views = _parts(op, x, [y], -1, partial=True)
    return [replace(views[0], plane=first // FEATURE_ATOM)]


def lower_views(graph: Graph, op: Operation) -> list[RocketView]:
    """The views of a view node, or LoweringError with the reason."""
    if op.kind in ALIAS_KINDS:
        return _alias(graph, op)
    if op.kind == "CONCATENATION":
        if "axis" not in op.options:
            raise LoweringError("CONCATENATION options (axis) not decoded")
        if op.options.get("activation", "NONE") != "NONE":
            raise LoweringError(f"fused activation {op.options.get('activation')} on CONCATENATION")
        y = graph.tensors[op.outputs[0]]
        return _parts(op, y, [graph.tensors[i] for i in op.inputs], int(op.options["axis"]))
    if op.kind == "SPLIT":
        if len(op.inputs) != 2:
            raise LoweringError("unexpected number of inputs")
        axis_t = graph.tensors[op.inputs[0]]
        if axis_t.data is None or axis_t.data.size != 1:
            raise LoweringError("SPLIT axis is not a constant")
        x = graph.tensors[op.inputs[1]]
        return _parts(op, x, [graph.tensors[i] for i in op.outputs], int(axis_t.data.reshape(-1)[0]))
    if op.kind in SLICE_KINDS:
        return _slice(graph, op)
    raise LoweringError(f"{op.kind} is not a view node")


def lower_view_node(graph: Graph, op: Operation, placed: dict[int, RocketView]) -> list[object]:
    """The views of a view node in a partition (`placed`: the partition's views so far, updated), and for a
    CONCATENATION part already placed elsewhere a copy into its plane: [views, copy convolutions...]."""
    views = lower_views(graph, op)
    copies = copied_parts(op, views, placed)
    ids = synthetic_ids(graph, op.index)
    out_views: list[RocketView] = []
    convs: list[object] = []
    for v in views:
        if v.view in copies:
            t = next(ids)  # the part's plane in the whole, written by the copy
            out_views.append(replace(v, view=t))
            convs.append(copy_conv(graph, v.view, t, op.index, v.plane * FEATURE_ATOM))
        else:
            out_views.append(v)
    placed.update({v.view: v for v in out_views})
    return [out_views, *convs]


def claims(graph: Graph, decisions: dict[int, tuple[bool, str]],
           host_written: frozenset[int] = frozenset()) -> dict[int, tuple[bool, str]]:
    """Decisions for the graph's view nodes, given every other node's (see the module docstring), in graph order
    so a chain of views resolves to the buffer holding the bytes. `host_written`: tensors claimed nodes read in a
    layout only the host writes."""
    out: dict[int, tuple[bool, str]] = {}
    placed: dict[int, RocketView] = {}  # tensor -> the claimed view that places it
    for op in graph.operations:
        if op.kind not in VIEW_KINDS or op.index in decisions:  # decided already: a requantizing QUANTIZE's table
            continue
        try:
            views = lower_views(graph, op)
            out[op.index] = _decide(graph, op, views, ChainMap(out, decisions), placed, host_written)
        except LoweringError as e:
            out[op.index] = (False, str(e))
            continue
        if out[op.index][0]:
            copies = copied_parts(op, views, placed)
            placed.update({v.view: v for v in views if v.view not in copies})
    return out


def _claimed(decisions: Mapping[int, tuple[bool, str]], op: Operation | None) -> bool:
    return op is not None and decisions.get(op.index, (False, ""))[0]


def copied_parts(op: Operation, views: list[RocketView], placed: Mapping[int, object]) -> set[int]:
    """The parts of a CONCATENATION that are already views of another buffer (a SPLIT's parts, another
    concatenation's): each is copied into its plane by a 1x1 depthwise copy instead (copy_conv)."""
    return {v.view for v in views if op.kind == "CONCATENATION" and v.view in placed}


def _decide(graph: Graph, op: Operation, views: list[RocketView], decisions: Mapping[int, tuple[bool, str]],
            placed: dict[int, RocketView], host_written: frozenset[int]) -> tuple[bool, str]:
    near_npu = False
    copies = copied_parts(op, views, placed)
    for v in views:
        for t in (v.view, v.holder):
            if t in placed and not (op.kind in ALIAS_KINDS and t == v.holder) and t not in copies:
                raise LoweringError(f"tensor {t} is already a view of another buffer")
        if v.view in copies:
            if v.info.c == 1:
                raise LoweringError(f"part {v.view} is already a view of another buffer and has one channel (a "
                                    "single-channel copy reads raw rows only the host writes)")
            continue
        readers = [c for c in graph.consumers(v.view) if c.index != op.index and _claimed(decisions, c)]
        writer = graph.producer(v.view)
        near_npu |= bool(readers) or (writer is not None and writer.index != op.index and _claimed(decisions, writer))
        if op.kind in ALIAS_KINDS:
            x = graph.tensors[v.holder]
            src = placed.get(x.index)
            if src is not None and src.kind in PART_KINDS:
                raise LoweringError(f"{op.kind} of a {src.kind} part")
            near_npu |= _claimed(decisions, graph.producer(x.index))
            if readers and geometry(graph.tensors[v.view]) != geometry(x):
                raise LoweringError(f"{op.kind} {x.shape} -> {graph.tensors[v.view].shape} changes the layout NPU "
                                    f"node {readers[0].index} reads (a copy task is not emitted)")
            if _claimed(decisions, graph.producer(x.index)) and v.view in host_written:
                raise LoweringError(f"{op.kind} output is read as raw rows by a claimed node (host-written only)")
        elif v.view in host_written:
            raise LoweringError(f"{op.kind} part is read as raw rows by a claimed node (host-written only)")
    if op.kind in PART_KINDS:
        whole = views[0].holder
        near_npu |= any(_claimed(decisions, c) for c in graph.consumers(whole) if c.index != op.index)
        near_npu |= _claimed(decisions, graph.producer(whole)) and graph.producer(whole).index != op.index  # type: ignore[union-attr]
    if not near_npu:
        raise LoweringError(f"{op.kind} is not next to NPU work (nothing to save: the host runs it)")
    if op.kind in ALIAS_KINDS:
        return True, f"{op.kind.lower()} in place (the output is the input's device buffer)"
    copied = f"; {len(copies)} part(s) already placed elsewhere copied in by a 1x1 depthwise copy" if copies else ""
    return True, f"{op.kind.lower()} in place (the parts are 16-channel planes of one buffer){copied}"


@dataclass
class Views:
    """Where every view tensor lives: `place(t)` = (holder tensor, first 16-channel plane)."""

    by_view: dict[int, RocketView] = field(default_factory=dict)

    def place(self, t: int) -> tuple[int, int]:
        plane = 0
        while t in self.by_view:
            v = self.by_view[t]
            t, plane = v.holder, plane + v.plane
        return t, plane

    def pitch(self, t: int, planes: Mapping[int, int]) -> int:
        """The plane pitch (16-byte atoms) an operation reads or writes tensor t with: its holder's (`planes`),
        unless t is a view of other pixels than its holder's (a plane read as one pixel, flat_pool.py), which
        has its own pitch h·w."""
        v = self.by_view.get(t)
        if v is not None and v.info.h * v.info.w != v.holder_info.h * v.holder_info.w:
            return v.info.h * v.info.w
        return planes[self.place(t)[0]]

    def holders(self) -> dict[int, TensorInfo]:
        """Every buffer-holding tensor a view names, with its geometry."""
        out: dict[int, TensorInfo] = {}
        for v in self.by_view.values():
            last = v
            while last.holder in self.by_view:
                last = self.by_view[last.holder]
            out.setdefault(last.holder, last.holder_info)
        return out


def resolve(ops: list[object]) -> tuple[list[object], Views]:
    """The operations that run (views removed), and where each view tensor lives."""
    views = Views()
    rest = []
    for op in ops:
        if isinstance(op, list):  # a view node lowers to its views
            for v in op:
                views.by_view[v.view] = v
        else:
            rest.append(op)
    return rest, views
