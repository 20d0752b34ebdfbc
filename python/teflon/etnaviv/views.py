"""Nodes that move no byte on the etnaviv NPU: their outputs are byte ranges of a buffer another job writes.

The NPU stores an activation tensor planar, one H*W plane per channel (etnaviv.md §0): byte (c, h, w) at
c*H*W + h*W + w. Two consequences make glue free, as in Mesa's etnaviv (docs/hardware/etnaviv-views.md):
- CONCATENATION / SPLIT / SPLIT_V on the channel axis: the parts are consecutive plane ranges of the whole, so a
  producer writes its part straight into the whole's buffer at the part's first plane and a reader of a split part
  reads that range. Where the planar bytes of a cut are no range but the NHWC bytes are (H cuts, W cuts of one-row
  tensors: YOLO heads, the face detector's box rows), the parts are ranges of the NHWC bytes instead (a TP
  detranspose writes a planar part straight into its range). A uint8 concatenation part of another quantization is requantized into its range by a TP
  TABLE job (TFLite's float arithmetic as a 256-entry table) when the table is exact. On the H axis the same holds for one-channel tensors, on W for one-row one-channel tensors
  (every axis outside the cut one, in planar order, has size 1).
- SLICE / STRIDED_SLICE (unit strides) that cut one such axis: one part of a split.
- RESHAPE / SQUEEZE / EXPAND_DIMS: TFLite's reshape keeps the row-major (NHWC) byte order. Planar bytes are
  unchanged when the channel count stays (only the pixels are regrouped: plane c keeps its H*W bytes in row-major
  order) or when both tensors are "flat" (one channel or one pixel: planar and NHWC bytes coincide). Any reshape
  of NHWC bytes is free.
- TRANSPOSE (0, 3, 1, 2) reads an NHWC tensor as NCHW: the NCHW tensor's row-major bytes are the input's planar
  bytes; (0, 2, 3, 1) is the converse. Mesa bypasses both the same way (etnaviv.md §1.2).

This module reads and checks the nodes (what is cut where); lower.py places the bytes (aliases, copies).
Reasons are returned as strings, like lower_unary's table plans.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import Graph, Operation, Tensor

PART_KINDS = ("CONCATENATION", "SPLIT", "SPLIT_V")
SLICE_KINDS = ("SLICE", "STRIDED_SLICE")
RESHAPE_KINDS = ("RESHAPE", "SQUEEZE", "EXPAND_DIMS")
VIEW_KINDS = (*PART_KINDS, *SLICE_KINDS, *RESHAPE_KINDS, "TRANSPOSE")
AXIS_NAMES = {1: "H", 2: "W", 3: "C"}
TO_NCHW, TO_NHWC = (0, 3, 1, 2), (0, 2, 3, 1)


def nhwc4(shape: tuple[int, ...]) -> tuple[int, int, int, int] | None:
    """A shape padded to 4 dims (1s in front, as Teflon does), None beyond 4 dims."""
    if len(shape) > 4:
        return None
    s = (1,) * (4 - len(shape)) + tuple(int(d) for d in shape)
    return s[0], s[1], s[2], s[3]


def concat_requant_table(graph: Graph, part: int, whole: int) -> np.ndarray | None:
    """TFLite's uint8 CONCATENATION output for each byte of a part of another quantization (None: the same, the
    bytes are copied): ConcatenationWithScaling rounds q * s + b in float32, s = s_in * (1 / s_out), b = -zp_in * s,
    half away from zero, adds the output zero point and saturates."""
    pt, wt = graph.tensors[part], graph.tensors[whole]
    if _same_quant(pt, wt):
        return None
    assert pt.quant is not None and wt.quant is not None
    f32 = np.float32
    scale = f32(pt.quant.scale) * (f32(1.0) / f32(wt.quant.scale))
    bias = f32(-pt.quant.zero_point) * scale
    v = np.arange(256, dtype=np.float32) * scale + bias  # float32 throughout, as the kernel
    rounded = np.sign(v) * np.floor(np.abs(v).astype(np.float64) + 0.5)  # std::round: half away from zero
    return np.clip(rounded.astype(np.int64) + wt.quant.zero_point, 0, 255)


@dataclass(frozen=True)
class PartsPlan:
    """The parts of a CONCATENATION (inputs) or SPLIT (outputs): `parts[k]` is the byte range
    [offsets[k], offsets[k] + size of part k) of the planar `whole`."""

    whole: int
    parts: list[int]
    offsets: list[int]
    axis: str  # "C", "H" or "W"
    nhwc: bool = False  # the ranges are of the NHWC bytes (the planar ones are not ranges)


def _byte_range(s4: tuple[int, int, int, int], axis4: int) -> tuple[bool, int] | None:
    """(in NHWC bytes, bytes per step along the axis) when a cut along `axis4` is a byte range of the planar bytes
    (preferred: the NPU's own layout) or else of the NHWC bytes: every axis outside the cut one, in that byte order,
    has size 1. None: neither."""
    _, h, w, c = s4
    planar = {3: (1, h * w), 1: (c, w), 2: (c * h, 1)}
    nhwc = {1: (1, w * c), 2: (h, c), 3: (h * w, 1)}
    if axis4 in planar and planar[axis4][0] == 1:
        return False, planar[axis4][1]
    if axis4 in nhwc and nhwc[axis4][0] == 1:
        return True, nhwc[axis4][1]
    return None


def _same_type(tensors: list[Tensor], kind: str) -> str | None:
    for t in tensors:
        if t.dtype not in ("uint8", "int8"):
            return f"{kind} of {t.dtype} (uint8 or int8 only)"
        if t.quant is None or len(t.quant.scales) == 0 or not t.quant.per_tensor:
            return f"{kind} tensor {t.index} without one per-tensor quantization"
    if len({t.dtype for t in tensors}) > 1:
        return f"{kind} between {' and '.join(sorted({t.dtype for t in tensors}))} tensors"
    return None


def _same_quant(a: Tensor, b: Tensor) -> bool:
    assert a.quant is not None and b.quant is not None
    return np.float32(a.quant.scale) == np.float32(b.quant.scale) and a.quant.zero_point == b.quant.zero_point


def _axis(graph: Graph, op: Operation) -> int | str:
    """The cut axis as TFLite gives it (may be negative), or the reason it is unknown."""
    if op.kind == "CONCATENATION":
        if "axis" not in op.options:
            return "CONCATENATION options (axis) not decoded"
        return int(op.options["axis"])  # type: ignore[call-overload]
    t = graph.tensors[op.inputs[0] if op.kind == "SPLIT" else op.inputs[2]]
    if t.data is None or np.asarray(t.data).size != 1:
        return f"{op.kind} axis is not a constant"
    return int(np.asarray(t.data).reshape(-1)[0])


def parts_plan(graph: Graph, op: Operation) -> PartsPlan | str:
    """How the parts of a CONCATENATION / SPLIT / SPLIT_V sit in the whole, or the reason they are not byte
    ranges of it."""
    if op.kind == "CONCATENATION":
        if len(op.outputs) != 1 or not op.inputs:
            return "unexpected number of inputs/outputs"
        if op.options.get("activation", "NONE") not in ("NONE", None):
            return f"CONCATENATION with fused {op.options.get('activation')}"
        whole, parts = graph.tensors[op.outputs[0]], [graph.tensors[t] for t in op.inputs]
    else:
        if len(op.inputs) != (2 if op.kind == "SPLIT" else 3) or not op.outputs:
            return "unexpected number of inputs/outputs"
        whole = graph.tensors[op.inputs[1] if op.kind == "SPLIT" else op.inputs[0]]
        parts = [graph.tensors[t] for t in op.outputs]
    bad = _same_type([whole, *parts], op.kind)
    if bad:
        return bad
    if whole.is_constant or any(p.is_constant for p in parts):
        return f"{op.kind} of a constant tensor (no job writes it)"
    axis = _axis(graph, op)
    if isinstance(axis, str):
        return axis
    rank = len(whole.shape)
    if not -rank <= axis < rank:
        return f"{op.kind} axis {axis} outside a rank-{rank} tensor"
    axis4 = (axis % rank) + 4 - rank  # the axis in the 4-D NHWC form
    shapes = [nhwc4(t.shape) for t in (whole, *parts)]
    if any(s is None for s in shapes) or any(len(p.shape) != rank for p in parts):
        return f"{op.kind} of tensors of more than 4 dims or of different ranks"
    w4 = shapes[0]
    assert w4 is not None
    if w4[0] != 1:
        return f"{op.kind} with batch {w4[0]} (batch 1 only)"
    if op.kind == "CONCATENATION" and whole.dtype != "uint8" and any(not _same_quant(whole, p) for p in parts):
        # TFLite refuses an int8 concatenation that would requantize (concatenation.cc Prepare)
        return "int8 CONCATENATION of inputs with another scale or zero point than the output"
    if axis4 == 0:
        return f"{op.kind} on the batch axis"
    where = _byte_range(w4, axis4)
    if where is None:
        return (f"{op.kind} on the {AXIS_NAMES[axis4]} axis of a {w4[1]}x{w4[2]}x{w4[3]} tensor: the parts are byte "
                "ranges neither of the planar bytes (one plane per channel) nor of the NHWC bytes (no TP copy job "
                "for it yet)")
    offsets, at = [], 0
    for p, s in zip(parts, shapes[1:]):
        assert s is not None
        if any(s[k] != w4[k] for k in range(4) if k != axis4):
            return f"{op.kind} part {tuple(p.shape)} does not match {tuple(whole.shape)}"
        offsets.append(at)
        at += s[1] * s[2] * s[3]
    if at != w4[1] * w4[2] * w4[3]:
        return f"{op.kind} parts hold {at} of {w4[1] * w4[2] * w4[3]} elements"
    return PartsPlan(whole.index, [p.index for p in parts], offsets, AXIS_NAMES[axis4], where[0])


def _ints(graph: Graph, t: int, what: str, n: int) -> np.ndarray | str:
    d = graph.tensors[t].data
    if d is None or np.asarray(d).size != n:
        return f"{what} is not a constant of {n} values"
    return np.asarray(d).reshape(-1).astype(np.int64)


def _slice_bounds(graph: Graph, op: Operation, shape: list[int]) -> tuple[np.ndarray, np.ndarray] | str:
    """(begin, end) per axis of a SLICE / STRIDED_SLICE with unit strides, or the reason there are none."""
    rank = len(shape)
    dims = np.array(shape)
    if op.kind == "SLICE":
        begin = _ints(graph, op.inputs[1], "SLICE begin", rank)
        size = _ints(graph, op.inputs[2], "SLICE size", rank)
        if isinstance(begin, str) or isinstance(size, str):
            return begin if isinstance(begin, str) else str(size)
        return begin, np.where(size < 0, dims, begin + size)
    o = op.options
    if "begin_mask" not in o:
        return "STRIDED_SLICE options (masks) not decoded"
    if o.get("ellipsis_mask") or o.get("new_axis_mask") or o.get("shrink_axis_mask"):
        return "STRIDED_SLICE with an ellipsis, a new or a shrunk axis"
    got = [_ints(graph, op.inputs[k], f"STRIDED_SLICE {w}", rank) for k, w in ((1, "begin"), (2, "end"), (3, "strides"))]
    bad = next((g for g in got if isinstance(g, str)), None)
    if bad is not None:
        return str(bad)
    begin, end, strides = (np.asarray(g) for g in got)
    if np.any(strides != 1):
        return f"STRIDED_SLICE strides {strides.tolist()} (1 only: a strided pick is no byte range)"
    bits = np.array([1 << i for i in range(rank)])
    begin = np.where(int(o.get("begin_mask", 0)) & bits, 0, np.where(begin < 0, begin + dims, begin))
    end = np.where(int(o.get("end_mask", 0)) & bits, dims, np.where(end < 0, end + dims, end))
    return np.clip(begin, 0, dims), np.clip(end, 0, dims)


def _map_io(graph: Graph, op: Operation) -> tuple[Tensor, Tensor] | str:
    """(input, output) of a one-input view node, or why it is no view: types that differ, a constant input."""
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    bad = _same_type([x, y], op.kind)
    if bad:
        return bad
    if x.is_constant:
        return f"{op.kind} of a constant tensor"
    return x, y


def slice_plan(graph: Graph, op: Operation) -> PartsPlan | str:
    """A SLICE / STRIDED_SLICE that keeps every axis but one whole, and cuts a byte range of the planar input:
    one part of a split."""
    if len(op.outputs) != 1 or len(op.inputs) != (3 if op.kind == "SLICE" else 4):
        return "unexpected number of inputs/outputs"
    io = _map_io(graph, op)
    if isinstance(io, str):
        return io
    x, y = io
    shape = [int(d) for d in x.shape]
    s4 = nhwc4(x.shape)
    if s4 is None or s4[0] != 1 or len(shape) < 2:
        return f"{op.kind} of a {tuple(shape)} tensor (rank 2 to 4, batch 1)"
    bounds = _slice_bounds(graph, op, shape)
    if isinstance(bounds, str):
        return bounds
    begin, end = bounds
    cut = [i for i in range(len(shape)) if begin[i] != 0 or end[i] != shape[i]]
    if len(cut) > 1:
        return f"{op.kind} of {tuple(shape)} cuts {len(cut)} axes (one byte range needs one)"
    axis = cut[0] if cut else len(shape) - 1
    axis4 = axis + 4 - len(shape)
    where = _byte_range(s4, axis4)
    if where is None:
        return (f"{op.kind} on the {AXIS_NAMES.get(axis4, 'N')} axis of a {s4[1]}x{s4[2]}x{s4[3]} tensor: the slice "
                "is a byte range neither of the planar bytes nor of the NHWC bytes")
    if int(end[axis] - begin[axis]) != int(y.shape[axis]):
        return f"{op.kind} output {tuple(y.shape)} does not match its bounds"
    nhwc, step = where
    return PartsPlan(x.index, [y.index], [int(begin[axis]) * step], AXIS_NAMES[axis4], nhwc)


@dataclass(frozen=True)
class ReshapePlan:
    """A RESHAPE-like node or a layout TRANSPOSE: `x` read, `y` written. `planar_same`: y's planar bytes are x's
    planar bytes (a reshape keeping the channel count, or of flat tensors). `perm`: a TRANSPOSE's permutation."""

    x: int
    y: int
    planar_same: bool
    perm: tuple[int, ...] | None = None


def _flat(s: tuple[int, int, int, int]) -> bool:
    """One channel or one pixel: planar and NHWC bytes coincide."""
    return s[3] == 1 or s[1] * s[2] == 1


def reshape_plan(graph: Graph, op: Operation) -> ReshapePlan | str:
    """How a RESHAPE / SQUEEZE / EXPAND_DIMS / TRANSPOSE keeps its input's bytes, or the reason it moves them."""
    if not op.inputs or len(op.outputs) != 1:
        return "unexpected number of inputs/outputs"
    io = _map_io(graph, op)
    if isinstance(io, str):
        return io
    x, y = io
    sx, sy = nhwc4(x.shape), nhwc4(y.shape)
    if sx is None or sy is None:
        return f"{op.kind} of a {max(len(x.shape), len(y.shape))}-D tensor (4 dims at most)"
    if sx[0] != 1 or sy[0] != 1:
        return f"{op.kind} with a batch (batch 1 only)"
    if int(np.prod(sx)) != int(np.prod(sy)):
        return f"{op.kind} changes the element count"
    if op.kind == "TRANSPOSE":
        perm_t = graph.tensors[op.inputs[1]] if len(op.inputs) > 1 else None
        if perm_t is None or perm_t.data is None:
            return "TRANSPOSE with a permutation that is not a constant"
        perm = tuple(int(v) for v in np.asarray(perm_t.data).reshape(-1))
        if perm not in (TO_NCHW, TO_NHWC) or len(x.shape) != 4:
            return (f"TRANSPOSE {perm}: only (0, 3, 1, 2) and (0, 2, 3, 1) of 4-D tensors keep bytes in place "
                    "(NHWC <-> planar); other permutations need a copy job teflon does not emit")
        if not _same_quant(x, y):
            return "TRANSPOSE that changes the quantization"
        return ReshapePlan(x.index, y.index, False, perm)
    # TFLite's reshapes copy the bytes whatever the quantization says: the view is exact either way
    return ReshapePlan(x.index, y.index, sx[3] == sy[3] or (_flat(sx) and _flat(sy)))


__all__ = ["PART_KINDS", "RESHAPE_KINDS", "SLICE_KINDS", "VIEW_KINDS", "PartsPlan", "ReshapePlan",
           "concat_requant_table", "parts_plan", "reshape_plan", "slice_plan"]
