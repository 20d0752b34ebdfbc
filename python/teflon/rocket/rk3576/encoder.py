"""RK3576: rocket convolutions -> teflon.program.Program (docs/hardware/rocket-rk3576.md).

Buffers: `t<index>` per feature-map tensor, `op<k>.weights` (packed cube), `op<k>.bias` (coefficient
table + shift word), `op<k>.regcmd` (the op's chained task streams). One job per operation: its row
windows share CBUF rows, so they run back to back on one core.

Plane pitch of a tensor (16-byte atoms): W*H when the host writes it (as the vendor programs it),
round4(W*H) when an NPU operation writes it (as the DPU writes planes).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ... import hw_facts
from ...hw.regmap import RegMap, RegMapError
from ...ir import Graph, memo
from ...program import Buffer, OpRecord, Program
from .. import assemble, perchannel
from ..assemble import RocketOp
from ..const_elementwise import WIDE_GAIN
from ..geometry import FEATURE_ATOM, SplitError, geometry
from ..operations import RocketConv, RocketPool
from ..ppu import pool_info, pool_stream
from ..quantization import quantized
from ..requant import activation_clamp, bounded_cvt, ew_cvt
from ..stream import EncodeError, Stream, regcmd_bytes
from ..unary_lower import RocketUnary
from ..views import RocketView, resolve
from . import coefs, weights
from .lut import add_unary_op
from .split import Task, split
from .stream import (
    EwParams,
    LayerParams,
    dpu_plane,
    link,
    pool_pad_registers,
    pool_trailer,
    task_stream,
    with_input_pitch,
)

PLANE_GROUP = 4  # tensor buffers hold whole 64-channel groups of planes (the DPU writes 32/64 at a time)
# The CNA reads 16 x TASK_SURF = 16 x round4(IW x fetched rows) bytes of every plane from the first fetched row:
# up to 3 atoms past the last row of the last plane (rocket-rk3576-sim.md §3, CNA_DMA_CON3).
CNA_READ_SLACK = 3 * FEATURE_ATOM


@dataclass
class EncodedLayer:
    params: LayerParams
    streams: list[Stream]
    offsets: list[int]
    weights: bytes | bytearray  # packed in place (weights.pack)
    coefs: bytes


@dataclass(frozen=True)
class Coefficients:
    table: bytes  # coefficient table (A, B, C per channel)
    multipliers: perchannel.Multipliers
    shift: int  # the shift word's shift (both signs)


# A wide channel's multiplier: its gain times 2^GAIN_SHIFT with the shift word GAIN_SHIFT (the largest gain,
# const_elementwise.WIDE_GAIN, times 2^13 stays inside the int16 C), so u = gain · (acc + A) exactly
GAIN_SHIFT = 13


def split_weights(c: RocketConv) -> tuple[RocketConv, np.ndarray | None]:
    """A depthwise layer whose w - zw exceeds the byte pairs' reach (255: a MUL by a constant,
    const_elementwise.py): (the layer with that channel's weights and bias divided by its gain WIDE_GAIN, the gains
    per channel), which the coefficient stage multiplies back exactly; (c, None) for every other layer. Only a
    per-tensor layer with a fitted OUT_CVT (its coefficient stage is otherwise the identity), no fused operand and no
    upper clamp is split, others raise EncodeError: the clamp's place relative to the multiplier is not known
    (layer_params), and only the lower one, at 0, gives the same result on either side of a positive gain."""
    if not c.depthwise:
        return c, None
    centered = c.weights.astype(np.int16).reshape(-1, c.out_c) - c.w_zp
    wide = (centered > weights.PAIR_RANGE[1]).any(axis=0)
    if not wide.any():
        return c, None
    gains = np.where(wide, WIDE_GAIN, 1)
    bias = np.asarray(c.bias, np.int64)
    if (c.w_scales is not None or c.cvt is None or c.ew is not None or c.act_max is not None
            or (centered % gains).any() or (bias % gains).any()):
        raise EncodeError(f"depthwise weight minus zero point {int(centered.max())} outside the byte pairs' "
                          f"{weights.PAIR_RANGE[0]}..{weights.PAIR_RANGE[1]} in a layer the coefficient stage cannot "
                          f"scale by {WIDE_GAIN} exactly")
    stored = (centered // gains + c.w_zp).astype(np.int8).reshape(c.weights.shape)
    return replace(c, weights=stored, weights_q=quantized(stored, c.dtype),
                   bias=(bias // gains).astype(np.int32)), gains


def coefficients(c: RocketConv, max_error: float = perchannel.MAX_ERROR_LSB) -> Coefficients:
    """The coefficient table, multipliers and shift of a convolution (raises EncodeError, perchannel; scales too
    far apart for the 16-bit multiplier at `max_error` LSB: ScaleSpreadError, which groups.py splits)."""
    c, gains = split_weights(c)
    s = perchannel.channel_scaling(c, max_error)
    if gains is not None and c.bs is None:  # C = gain · 2^GAIN_SHIFT, shift GAIN_SHIFT: the identity times the gain
        m = replace(s.multipliers, c=gains.astype(np.int64) << GAIN_SHIFT, bits=GAIN_SHIFT)
        s = replace(s, multipliers=m, shift=GAIN_SHIFT)
    elif gains is not None:  # a fitted multiplier stage: the wide channel's C times its gain
        mul = s.multipliers.c * gains
        if mul.max() > perchannel.C_MAX:
            raise EncodeError(f"a weight split {WIDE_GAIN} ways needs the multiplier {int(mul.max())} (int16 field)")
        s = replace(s, multipliers=replace(s.multipliers, c=mul))
    return Coefficients(coefs.coefficient_table(s.a, -c.w_zp, s.multipliers.c, c.depthwise), s.multipliers, s.shift)


def _coefficients_key(c: RocketConv) -> tuple[object, ...]:
    """What the coefficient table depends on: the convolution and its channel group (first channel and count: a
    layer's group 0 is not the layer), not a fused ADD (the layer and its fused form share one table);
    per-channel tables also on the output scale (the multiplier error check). An identity copy (no node of its
    own) is told apart by its ADD node."""
    key = c.key
    if c.ew is not None and len(c.nodes) > 1:
        key = (tuple(c.nodes[:-1]), c.channel0)
    return (__name__, "coefficients", key, c.out_c, None if c.w_scales is None else float(c.out_scale))


def layer_params(c: RocketConv, in_plane: int, max_shift: int, graph: Graph | None = None,
                 ew_plane: int = 0) -> tuple[LayerParams, Coefficients]:
    """Everything but the weight bytes; raises EncodeError. `max_shift`: the largest OUT_CVT_SHIFT the DPU takes
    (the register table's, requant.bounded_cvt); `graph`: see encode_layer; `ew_plane`: the plane pitch of a fused
    ADD's operand."""
    try:
        sp = split(geometry(c))
        co = memo(graph, _coefficients_key(c), lambda: coefficients(c))
        ew = None
        if c.ew is not None:
            co = replace(co, shift=perchannel.ew_shift(c, co.multipliers, co.shift))
            # the operand joins the coefficient stage's output u, in units of sx * s_one * 2^(shift - q)
            unit = float(c.in_scale) * co.multipliers.s_one * 2.0 ** (co.shift - co.multipliers.bits)
            ew_scale, ew_shift = ew_cvt(float(c.ew.scale) / unit)
            ew = EwParams(-c.ew.zp, ew_scale, ew_shift, ew_plane)
        scale, shift = perchannel.out_cvt(float(c.in_scale), co.multipliers, float(c.out_scale), co.shift)
        if c.cvt is not None:  # per-tensor weights: the coefficient stage is the identity (C = 2^14, shift 14)
            scale, shift = c.cvt
        if c.ew is None:  # with a fused ADD the operand's term is not small: only the range check applies
            scale, shift = bounded_cvt(scale, shift, max_shift)
        clamp = activation_clamp(c.act_min, c.act_max, c.out_zp, scale, shift)
    except EncodeError:
        raise  # ScaleSpreadError stays itself (groups.py)
    except (SplitError, ValueError) as e:
        raise EncodeError(str(e)) from e
    if clamp is not None and c.w_scales is not None:
        # the vendor's clamps are seen on per-tensor layers only (u = v there): whether CLAMP2/3 act before or
        # after the per-channel multiplier is not known (docs/hardware/rocket-rk3576.md, "Activations")
        raise EncodeError(f"fused {c.activation} inside the output range with per-channel weights (the DPU clamp's "
                          "place relative to the per-channel multiplier is not known on rk3576)")
    return LayerParams(c, sp, in_plane, scale, shift, len(co.table), co.shift, clamp=clamp, ew=ew), co


def encode_layer(rm: RegMap, c: RocketConv, in_plane: int, graph: Graph | None = None,
                 ew_plane: int = 0) -> EncodedLayer:
    """Raises EncodeError. With `graph` (the one `c` was lowered from) once per graph: the support decision
    encodes every layer with the plane pitch of a host-written input, and a partition's compile reuses that
    layer, with the pitch word replaced where its input pitch differs. `ew_plane`: a fused ADD operand's plane
    pitch (16-byte atoms)."""
    def compute() -> EncodedLayer:
        host = c.in_h * c.in_w
        done = graph.derived.get(_layer_key(c, host, ew_plane)) if graph is not None and in_plane != host else None
        if done is None:
            return _encode_layer(rm, c, in_plane, graph, ew_plane)
        try:
            streams = with_input_pitch(rm, done.streams, host, in_plane)
        except RegMapError as e:
            raise EncodeError(f"register limit: {e}") from e
        return EncodedLayer(replace(done.params, in_plane=in_plane), streams, done.offsets, done.weights, done.coefs)

    return memo(graph, _layer_key(c, in_plane, ew_plane), compute)


def _layer_key(c: RocketConv, in_plane: int, ew_plane: int) -> tuple[object, ...]:
    return (__name__, "layer", c.key, in_plane, ew_plane)


def _encode_layer(rm: RegMap, c: RocketConv, in_plane: int, graph: Graph | None, ew_plane: int) -> EncodedLayer:
    p, co = layer_params(c, in_plane, rm.limits("DPU_OUT_CVT_SHIFT", "OUT_CVT_SHIFT")[1], graph, ew_plane)
    try:
        streams = [task_stream(rm, p, t) for t in p.split.tasks]
        offsets = link(rm, streams)
    except RegMapError as e:
        raise EncodeError(f"register limit: {e}") from e
    try:
        packed = memo(graph, (__name__, "weights", c.nodes[0], c.channel0, p.split.oc_chunk),
                      lambda: _packed_weights(c, p.split.oc_chunk))
    except ValueError as e:
        raise EncodeError(str(e)) from e
    return EncodedLayer(p, streams, offsets, packed, coefs.coefficient_buffer(co.table, co.shift))


def _packed_weights(c: RocketConv, chunk: int) -> bytes | bytearray:
    """The weight cubes of the kernel chunks back to back (one cube when the layer has one chunk)."""
    if c.depthwise:
        return weights.pack(split_weights(c)[0].weights, c.w_zp, True)
    return weights.pack_chunks(c.weights, chunk)


def pool_streams(rm: RegMap, p: RocketPool, in_plane: int) -> list[Stream]:
    """The pool's single task; its output plane is the DPU's (vendor round4 planes, as every NPU-produced
    tensor); raises EncodeError."""
    order = hw_facts.proved("rk3576", "ppu_pad")  # x_low: the table's names; y_low: x and y swapped
    if (p.pad_left != p.pad_top or p.pad_right != p.pad_bottom) and order not in ("x_low", "y_low"):
        raise EncodeError(f"pool padding left {p.pad_left} / top {p.pad_top}, right {p.pad_right} / bottom "
                          f"{p.pad_bottom}: which RK3576 POOLING_PADDING_CFG nibble of a pair is x and which y is "
                          f"not known (docs/hardware/board-facts.md fact 4; {hw_facts.status('rk3576', 'ppu_pad')})")
    return [pool_stream(rm, p, in_plane, dpu_plane(p.out_h, p.out_w),
                        pool_pad_registers(p), pool_trailer(rm), swap_pad_xy=order == "y_low")]


def tensor_bytes(c: int, plane: int) -> int:
    """Whole 4-plane groups (the DPU's output groups stay inside them: 2 planes direct, 4 depthwise) plus the
    CNA's read-ahead after the last plane."""
    groups = -(-c // FEATURE_ATOM)
    return -(-groups // PLANE_GROUP) * PLANE_GROUP * plane * FEATURE_ATOM + CNA_READ_SLACK


def compile_ops(rm: RegMap, device: str, ops: list[RocketOp | list[RocketView]], inputs: list[int],
                outputs: list[int], graph: Graph | None = None) -> Program:
    """The program of `ops` (views: views.py); `graph`, the graph they were lowered from, shares the support
    decision's work."""
    convs, views = resolve(ops)
    prog = Program(device=device)
    produced = {views.place(c.output_tensor)[0] for c in convs}
    shapes = assemble.buffers(convs, views)
    zps = assemble.reader_zero_points(convs)
    buffer_zps = {views.place(t)[0]: zp for t, zp in reversed(zps.items())}  # a buffer's first reader's
    assemble.check_outputs(convs, outputs, views)
    plane = {t: dpu_plane(s.h, s.w) if t in produced else s.h * s.w for t, s in shapes.items()}
    for t, s in shapes.items():
        prog.add_buffer(Buffer(f"t{t}", tensor_bytes(s.c, plane[t]), tensor=True))

    for k, c in enumerate(convs):
        if isinstance(c, RocketUnary):  # a table op: the LUT-load task and a copy convolution (lut.py)
            add_unary_op(prog, rm, k, c, views, plane, graph)
            continue
        names, addends = assemble.placed(assemble.buffer_names(k, c), views, lambda t: plane[t] * FEATURE_ATOM)
        in_plane, out_plane = views.pitch(c.input_tensor, plane), views.pitch(c.output_tensor, plane)
        if isinstance(c, RocketPool):
            streams = pool_streams(rm, c, in_plane)
            regcmd = assemble.patch_addends(regcmd_bytes(streams, [0]), streams, [0], addends)
            assemble.add_operation(prog, names, None, None, regcmd, streams, [0], True,
                                   OpRecord(c.nodes, c.kind, [], pool_info(c, in_plane, out_plane)))
            continue
        ew_plane = plane[views.place(c.ew.tensor)[0]] if c.ew is not None else 0  # the operand's (holder's) pitch
        enc = encode_layer(rm, c, in_plane, graph, ew_plane)
        regcmd = assemble.patch_addends(regcmd_bytes(enc.streams, enc.offsets), enc.streams, enc.offsets, addends)
        # one job per operation: its row windows share CBUF rows, so they run back to back on one core
        assemble.add_operation(prog, names, (len(enc.weights), enc.weights), enc.coefs, regcmd, enc.streams,
                               enc.offsets, True, OpRecord(c.nodes, assemble.op_kind(c), [], _op_info(enc)))

    for t in inputs:
        if t in shapes or t in views.by_view:
            pad = zps.get(t, buffer_zps.get(views.place(t)[0], 0)) & 0xFF
            prog.io.append(assemble.bind(t, "in", shapes, views, plane.__getitem__, pad))
    for t in outputs:
        prog.io.append(assemble.bind(t, "out", shapes, views, plane.__getitem__))
    return prog


def _op_info(enc: EncodedLayer) -> dict[str, object]:
    p = enc.params
    c = p.conv
    ew = {} if p.ew is None or c.ew is None else {
        "ew": {"tensor": c.ew.tensor, "offset": p.ew.offset, "scale": p.ew.scale, "shift": p.ew.shift}}
    return {
        **ew,
        "depthwise": c.depthwise,
        "per_channel": c.w_scales is not None,
        "out_cvt": [p.cvt_scale, p.cvt_shift],
        "shift_word": coefs.shift_word(p.bs_shift),
        **({"clamp": list(p.clamp)} if p.clamp is not None else {}),
        "input_tensor": c.input_tensor,
        "output_tensor": c.output_tensor,
        "macs": c.macs,
        "entries_per_row": p.split.entries_per_row,
        "data_limit": p.split.data_limit,
        "split": [_task_info(t) for t in p.split.tasks],
    }


def _task_info(t: Task) -> dict[str, object]:
    w = t.window
    return {
        "window_rows": [w.top, w.top + w.rows - 1],
        "fetched_rows": [w.fetch_row0, w.fetch_row0 + w.fetched - 1],
        "output_rows": [w.out_row0, w.out_rows],
        "output_channels": [t.oc0, t.ocs],
        "pads": {"top": w.pad_top, "bottom": w.pad_bottom},
        "cbuf": {"read": w.read_origin, "write": w.write_origin},
    }
