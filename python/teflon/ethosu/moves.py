"""Data movement on the Ethos-U65: CONCATENATION on any axis, SPLIT / SPLIT_V / SLICE / STRIDED_SLICE,
RESIZE_NEAREST_NEIGHBOR x2 and TRANSPOSE, as boxes copied between feature maps.

Every move is one 1x1 AVERAGE pool kick that reads a box of an input map (its base moved to the box's first
element, the map's own row and pixel strides) and writes it into a box of an output map, the way Vela 5.2.0 makes
them (docs/hardware/ethosu-compiler.md, "Copies"):
- CONCATENATION: one kick per input into its slice of the output, the last input first;
- SPLIT / SPLIT_V / SLICE / STRIDED_SLICE: one kick per output from its slice of the input, the last output first;
- RESIZE_NEAREST_NEIGHBOR x2: one kick whose IFM is read through NPU_SET_IFM_UPSCALE NEAREST (each element 2x2);
- TRANSPOSE: the output box's row and pixel strides swapped (H and W exchanged); the innermost axis must stay
  innermost (the NPU's channel axis is contiguous in NHWC), so a transpose that moves it runs with depth 1.
Kicks after the first get BLOCKDEP 3 (they are independent). By default a slice that is one contiguous byte range of
its input is a view instead (no kick): the output shares the input's arena bytes.

Tensors of rank up to 4 (batch 1) are their NHWC maps; a move along one axis of a higher-rank tensor folds the axes
before it into H and those after it into C.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from teflon.ethosu.lower import FeatureMap, Kick, LoweringError, copy_spec, lower_pool
from teflon.ir import Graph, Operation, Tensor

Box = tuple[int, int, int]  # (h, w, c)
# The OFM scale and round mode of Vela's copies (its concatenation, split and SLICE copies keep lower.copy_spec's
# (1, 0) with NATURAL rounding): RESIZE and TRANSPOSE write (2^31 + 1) / 2^31 with TFL rounding, STRIDED_SLICE
# (1, 0) with TFL rounding. Every one leaves each 8-bit value unchanged.
IDENTITY_TFL = ((1 << 31) + 1, 31, 0)
UNIT_TFL = (1, 0, 0)
MAX_KICKS = 64  # a transpose needing more kicks than this stays on the CPU
MAX_MAP_DIM = 65536  # the *_M1 size registers are 16 bits


@dataclass(frozen=True)
class Move:
    """One copy of a data movement: a box of a source map to a place in a destination map."""

    src: int  # index into MoveSpec.ifms
    dst: int  # index into MoveSpec.ofms
    src_at: Box  # (y, x, c) of the box's first element in the source
    dst_at: Box
    shape: Box  # the box as read
    transpose: bool = False  # written with H and W exchanged
    upscale: bool = False  # written 2x2 per element read (IFM_UPSCALE NEAREST)


@dataclass(frozen=True)
class MoveSpec:
    """A data-movement operation as copies between its input and output maps."""

    ifms: tuple[FeatureMap, ...]
    ofms: tuple[FeatureMap, ...]
    moves: tuple[Move, ...]
    sources: tuple[int, ...]  # the TFLite tensors of ifms
    targets: tuple[int, ...]  # ... and of ofms
    identity: tuple[int, int, int] | None = None  # (scale, shift, round mode) instead of the copy's (1, 0, NATURAL)
    views: tuple[int, ...] | None = None  # per output: its byte offset in the one input, when each is a byte range


def _box(fm: FeatureMap, at: Box, shape: Box) -> FeatureMap:
    sy, sx, sc = fm.strides
    return replace(fm, shape=shape, offset=fm.offset + at[0] * sy + at[1] * sx + at[2] * sc, row_stride=sy,
                   pixel_stride=sx)


def lower_moves(spec: MoveSpec) -> list[Kick]:
    kicks: list[Kick] = []
    for n, m in enumerate(spec.moves):
        src = _box(spec.ifms[m.src], m.src_at, m.shape)
        h, w, c = m.shape
        out: Box = (2 * h, 2 * w, c) if m.upscale else (h, w, c)
        dst = _box(spec.ofms[m.dst], m.dst_at, (w, h, c) if m.transpose else out)
        if m.transpose:  # the kick walks the source's H x W; each step lands on the destination's other axis
            sy, sx, _ = dst.strides
            dst = replace(dst, shape=out, row_stride=sx, pixel_stride=sy)
        k = lower_pool(replace(copy_spec(src, dst, 0 if n == 0 else 3), upscale=m.upscale))[0]
        if m.upscale:  # Vela writes both zero points 0 here: in and out share their quantization
            k.regs["NPU_SET_IFM_ZERO_POINT"] = k.regs["NPU_SET_OFM_ZERO_POINT"] = {"value": 0}
        if spec.identity is not None:
            scale, shift, rounding = spec.identity
            k.regs["NPU_SET_OFM_SCALE"] = {"scale": scale, "shift": shift}
            k.regs["NPU_SET_OFM_PRECISION"] = {**k.regs["NPU_SET_OFM_PRECISION"], "round_mode": rounding}
        kicks.append(k)
    return kicks


# ---- TFLite operations -> MoveSpec -------------------------------------------------------------------------------

FmOf = Callable[[Tensor, tuple[int, int, int]], FeatureMap]


def packed_hwc(shape: Sequence[int]) -> tuple[int, int, int]:
    """A tensor of any rank as the (h, w, c) of its packed bytes: the last two axes, every axis before them folded
    into h. The arena holds each tensor in TFLite's own element order (NHWC for 4-D maps), so the binding's
    NHWC walk is that order whatever the rank."""
    s = (1, 1, 1, *(int(d) for d in shape))
    return int(np.prod(s[:-2])), s[-2], s[-1]


def _axis(axis: int, rank: int) -> int:
    a = axis + rank if axis < 0 else axis
    if not 0 <= a < rank:
        raise LoweringError(f"axis {axis} of a rank-{rank} tensor")
    return a


def _as4(shape: Sequence[int]) -> tuple[int, ...]:
    s = tuple(int(d) for d in shape)
    return (1,) * (4 - len(s)) + s if len(s) <= 4 else s


def _map_shapes(shapes: Sequence[Sequence[int]], axis: int) -> tuple[list[Box], int]:
    """The (h, w, c) maps of tensors moved along `axis`, and the map axis (0 = h, 1 = w, 2 = c) it becomes."""
    rank = len(shapes[0])
    a = _axis(axis, rank)
    if rank <= 4:
        s4 = [_as4(s) for s in shapes]
        if any(s[0] != 1 for s in s4):
            raise LoweringError(f"batch {s4[0][0]}: batch 1 only")
        a4 = a + 4 - rank
        if a4 == 0:
            raise LoweringError("a move along the batch axis")
        return [(s[1], s[2], s[3]) for s in s4], a4 - 1
    boxes = [(int(np.prod(s[:a])), int(s[a]), int(np.prod(s[a + 1:]))) for s in shapes]
    return boxes, 1


def _const(graph: Graph, t: int, what: str) -> np.ndarray:
    x = graph.tensors[t]
    if x.data is None:
        raise LoweringError(f"{what} is not a constant")
    return x.data.reshape(-1).astype(np.int64)


def _same_quant(a: Tensor, b: Tensor) -> bool:
    qa, qb = a.quant, b.quant
    return (a.dtype == b.dtype and qa is not None and qb is not None and qa.zero_point == qb.zero_point
            and np.float32(qa.scale) == np.float32(qb.scale))


def _maps(graph: Graph, fm: FmOf, tensors: Sequence[int], boxes: Sequence[Box]) -> tuple[FeatureMap, ...]:
    return tuple(fm(graph.tensors[t], b) for t, b in zip(tensors, boxes))


def _check_quant(graph: Graph, op: Operation, ins: Sequence[int], outs: Sequence[int]) -> None:
    ref = graph.tensors[ins[0]]
    for t in (*ins, *outs):
        if graph.tensors[t].is_constant:
            raise LoweringError(f"{op.kind} of a constant")
        if not _same_quant(ref, graph.tensors[t]):
            raise LoweringError(f"{op.kind} whose tensors differ in type or quantization (a requantizing copy)")


def concat(graph: Graph, op: Operation, fm: FmOf) -> MoveSpec:
    if str(op.options.get("activation", "NONE")) != "NONE":
        raise LoweringError("CONCATENATION with a fused activation")
    _check_quant(graph, op, op.inputs, op.outputs)
    shapes = [graph.tensors[t].shape for t in (*op.inputs, op.outputs[0])]
    boxes, a = _map_shapes(shapes, int(op.options.get("axis", -1)))
    ifms = _maps(graph, fm, op.inputs, boxes[:-1])
    ofm = _maps(graph, fm, op.outputs, boxes[-1:])
    starts = np.cumsum([0] + [b[a] for b in boxes[:-1]])
    moves = []
    for i in reversed(range(len(ifms))):  # Vela copies the last input first
        at = [0, 0, 0]
        at[a] = int(starts[i])
        moves.append(Move(i, 0, (0, 0, 0), (at[0], at[1], at[2]), boxes[i]))
    return MoveSpec(ifms, ofm, tuple(moves), tuple(op.inputs), tuple(op.outputs))


def _slices(graph: Graph, op: Operation, fm: FmOf, x: int, begins: Sequence[Sequence[int]]) -> MoveSpec:
    """Outputs op.outputs[i] = the box of x starting at begins[i] (one begin per axis of x), step 1."""
    _check_quant(graph, op, [x], op.outputs)
    xs = graph.tensors[x].shape
    if len(xs) > 4:
        raise LoweringError(f"{op.kind} of a rank-{len(xs)} tensor")
    sizes = []
    for t in op.outputs:
        if len(graph.tensors[t].shape) != len(xs):
            raise LoweringError(f"{op.kind} changes the rank")
        sizes.append(_as4(graph.tensors[t].shape))
    x4 = _as4(xs)
    if x4[0] != 1:
        raise LoweringError(f"batch {x4[0]}: batch 1 only")
    ifm = _maps(graph, fm, [x], [x4[1:]])
    ofms = _maps(graph, fm, op.outputs, [s[1:] for s in sizes])
    at = [_as4(b)[1:] for b in begins]
    moves = tuple(Move(0, i, at[i], (0, 0, 0), sizes[i][1:]) for i in reversed(range(len(op.outputs))))  # type: ignore[arg-type]
    sy, sx, _ = ifm[0].strides
    full = ifm[0].shape
    views: list[int] | None = []
    for m in reversed(moves):
        (h, w, c), (y0, x0, c0) = m.shape, m.src_at
        if not ((c == full[2] or h * w == 1) and (w == full[1] or h == 1)):  # not one byte range of x
            views = None
            break
        views.append(y0 * sy + x0 * sx + c0)  # type: ignore[union-attr]
    return MoveSpec(ifm, ofms, moves, (x,), tuple(op.outputs), views=tuple(views) if views is not None else None)


def split(graph: Graph, op: Operation, fm: FmOf) -> MoveSpec:
    if op.kind == "SPLIT":
        axis_t, x = op.inputs[0], op.inputs[1]
    else:
        x, axis_t = op.inputs[0], op.inputs[2]
    xs = graph.tensors[x].shape
    a = _axis(int(_const(graph, axis_t, f"{op.kind}'s axis")[0]), len(xs))
    begins, at = [], 0
    for t in op.outputs:
        b = [0] * len(xs)
        b[a] = at
        begins.append(b)
        at += graph.tensors[t].shape[a]
    if len(xs) > 4:  # fold: (before, axis, after)
        boxes, _ = _map_shapes([xs, *[graph.tensors[t].shape for t in op.outputs]], a)
        _check_quant(graph, op, [x], op.outputs)
        ifm = _maps(graph, fm, [x], boxes[:1])
        ofms = _maps(graph, fm, op.outputs, boxes[1:])
        moves = tuple(Move(0, i, (0, begins[i][a], 0), (0, 0, 0), boxes[i + 1]) for i in reversed(range(len(ofms))))
        return MoveSpec(ifm, ofms, moves, (x,), tuple(op.outputs))
    return _slices(graph, op, fm, x, begins)


def slice_(graph: Graph, op: Operation, fm: FmOf) -> MoveSpec:
    x = op.inputs[0]
    xs = graph.tensors[x].shape
    begin = _const(graph, op.inputs[1], "SLICE's begin")
    if op.kind == "STRIDED_SLICE":
        if any(int(op.options.get(m, 0)) for m in ("ellipsis_mask", "new_axis_mask", "shrink_axis_mask")):
            raise LoweringError("STRIDED_SLICE with an ellipsis, new-axis or shrink-axis mask")
        if len(op.inputs) > 3 and np.any(_const(graph, op.inputs[3], "STRIDED_SLICE's strides") != 1):
            raise LoweringError("STRIDED_SLICE with a step other than 1")
        mask = int(op.options.get("begin_mask", 0))
        begin = np.array([0 if mask >> i & 1 else int(b) for i, b in enumerate(begin)])
    begin = np.where(begin < 0, begin + np.array(xs), begin)
    out = graph.tensors[op.outputs[0]].shape
    if len(begin) != len(xs) or np.any(begin < 0) or np.any(begin + np.array(out) > np.array(xs)):
        raise LoweringError(f"{op.kind} box {list(begin)} + {list(out)} outside {xs}")
    spec = _slices(graph, op, fm, x, [[int(b) for b in begin]])
    return replace(spec, identity=UNIT_TFL) if op.kind == "STRIDED_SLICE" else spec


def resize_nearest(graph: Graph, op: Operation, fm: FmOf) -> MoveSpec:
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if int(op.options.get("align_corners", 1)):  # unknown options count as align_corners: refused
        raise LoweringError("RESIZE_NEAREST_NEIGHBOR with align_corners (or options not exported)")
    if len(x.shape) != 4 or x.shape[0] != 1:
        raise LoweringError(f"RESIZE_NEAREST_NEIGHBOR of a {x.shape} tensor: NHWC, batch 1")
    _, h, w, c = x.shape
    if tuple(y.shape) != (1, 2 * h, 2 * w, c):
        raise LoweringError(f"RESIZE_NEAREST_NEIGHBOR {x.shape} -> {y.shape}: x2 in both H and W only")
    _check_quant(graph, op, op.inputs[:1], op.outputs)
    io = ((op.inputs[0],), (op.outputs[0],))
    ifm = _maps(graph, fm, op.inputs[:1], [(h, w, c)])
    ofm = _maps(graph, fm, op.outputs, [(2 * h, 2 * w, c)])
    return MoveSpec(ifm, ofm, (Move(0, 0, (0, 0, 0), (0, 0, 0), (h, w, c), upscale=True),), io[0], io[1],
                    identity=IDENTITY_TFL)


def transpose_groups(shape: Sequence[int], perm: Sequence[int]) -> tuple[list[int], list[int]]:
    """(merged input shape, its permutation): size-1 axes dropped, axes that stay neighbours in order merged."""
    keep = [a for a in range(len(shape)) if shape[a] != 1]
    order = [keep.index(a) for a in perm if a in keep]  # the kept axes, numbered without the dropped ones
    groups: list[list[int]] = []
    for a in order:
        if groups and groups[-1][-1] + 1 == a:
            groups[-1].append(a)
        else:
            groups.append([a])
    by_input = sorted(groups, key=lambda g: g[0])
    sizes = [int(np.prod([shape[keep[a]] for a in g])) for g in by_input]
    return sizes, [by_input.index(g) for g in groups]


def transpose(graph: Graph, op: Operation, fm: FmOf) -> MoveSpec:
    x = graph.tensors[op.inputs[0]]
    perm = [int(p) for p in _const(graph, op.inputs[1], "TRANSPOSE's permutation")]
    if sorted(perm) != list(range(len(x.shape))):
        raise LoweringError(f"TRANSPOSE permutation {perm}")
    _check_quant(graph, op, op.inputs[:1], op.outputs)
    sizes, p = transpose_groups(x.shape, perm)
    io = ((op.inputs[0],), (op.outputs[0],))
    if len(sizes) <= 1:  # only size-1 axes move: the same bytes
        s4 = _as4(x.shape)
        shape = (s4[1], s4[2], s4[3]) if len(s4) == 4 and s4[0] == 1 else packed_hwc(x.shape)  # as Vela copies
        return MoveSpec(_maps(graph, fm, op.inputs[:1], [shape]), _maps(graph, fm, op.outputs, [shape]),
                        (Move(0, 0, (0, 0, 0), (0, 0, 0), shape),), *io)  # a reshape: Vela's plain copy
    if len(sizes) == 2:  # (A, B) -> (B, A): depth 1, H and W exchanged; B beyond the size registers in parts
        a, b = sizes
        parts = -(-b // MAX_MAP_DIM)
        if parts > MAX_KICKS:
            raise LoweringError(f"TRANSPOSE of {x.shape}: more than {MAX_KICKS} kicks")
        step = -(-b // parts)
        ifm = replace(fm(x, (a, step, 1)), row_stride=b)  # the source's rows are B long
        ofm = fm(graph.tensors[op.outputs[0]], (step, a, 1))
        moves = tuple(Move(0, 0, (0, j, 0), (j, 0, 0), (a, min(step, b - j), 1), transpose=True)
                      for j in range(0, b, step))
        return MoveSpec((ifm,), (ofm,), moves, *io, identity=IDENTITY_TFL)
    if len(sizes) == 3 and p == [1, 0, 2]:  # (A, B, C) -> (B, A, C): H and W exchanged, C kept
        a, b, c = sizes
        return MoveSpec(_maps(graph, fm, op.inputs[:1], [(a, b, c)]), _maps(graph, fm, op.outputs, [(b, a, c)]),
                        (Move(0, 0, (0, 0, 0), (0, 0, 0), (a, b, c), transpose=True),), *io, identity=IDENTITY_TFL)
    if len(sizes) == 3 and p == [0, 2, 1] and sizes[0] <= MAX_KICKS:  # (A, B, C) -> (A, C, B): A depth-1 kicks
        a, b, c = sizes
        ifm = _maps(graph, fm, op.inputs[:1], [(a * b, c, 1)])
        ofm = _maps(graph, fm, op.outputs, [(a * c, b, 1)])
        moves = tuple(Move(0, 0, (i * b, 0, 0), (i * c, 0, 0), (b, c, 1), transpose=True) for i in range(a))
        return MoveSpec(ifm, ofm, moves, *io, identity=IDENTITY_TFL)
    raise LoweringError(f"TRANSPOSE {perm} of {x.shape}: not one exchange of two axis groups")
