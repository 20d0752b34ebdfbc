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

from ...hw.regmap import RegMap, RegMapError
from ...ir import Graph, memo
from ...program import Buffer, OpRecord, Program
from .. import assemble
from ..assemble import RocketOp
from ..geometry import FEATURE_ATOM, SplitError, geometry
from ..lower import RocketConv
from ..pool import RocketPool
from ..ppu import pool_info, pool_stream
from ..requant import bias_table, channel_sums
from ..stream import EncodeError, Stream, regcmd_bytes
from ..views import RocketView, resolve
from . import coefs, weights
from .split import Task, split
from .stream import LayerParams, dpu_plane, link, pool_pad_registers, pool_trailer, task_stream, with_input_pitch

PLANE_GROUP = 4  # tensor buffers hold whole 64-channel groups of planes (the DPU writes 32/64 at a time)
# The CNA reads 16 x TASK_SURF = 16 x round4(IW x fetched rows) bytes of every plane from the first fetched row:
# up to 3 atoms past the last row of the last plane (rocket-rk3576-sim.md §3, CNA_DMA_CON3).
CNA_READ_SLACK = 3 * FEATURE_ATOM


class ScaleSpreadError(EncodeError):
    """The per-channel weight scales of the layer are too far apart for one 16-bit multiplier (groups.py)."""


@dataclass
class EncodedLayer:
    params: LayerParams
    streams: list[Stream]
    offsets: list[int]
    weights: bytes
    coefs: bytes


@dataclass(frozen=True)
class Coefficients:
    table: bytes  # coefficient table (A, B, C per channel)
    multipliers: coefs.Multipliers
    shift: int  # the shift word's shift (both signs)


def _abs_weight_sums(c: RocketConv, zp: int) -> np.ndarray:
    """Per output channel: the sum of |stored weight - zp| over its taps and input channels (int64; depthwise
    weights (1, KH, KW, C), direct OHWI). int16 holds every difference of two int8 values; with zp 0 the int8
    absolute value read as uint8 is exact (|-128| wraps to -128, i.e. 128) and saves two passes."""
    d = np.abs(c.weights).view(np.uint8) if zp == 0 else np.abs(c.weights.astype(np.int16) - np.int16(zp))
    return channel_sums(d.reshape(-1, c.out_c), 0) if c.depthwise else channel_sums(d.reshape(c.out_c, -1), 1)


def _taps(c: RocketConv) -> int:
    """Weights per output channel (taps times input channels; depthwise: taps)."""
    return c.kh * c.kw if c.depthwise else c.weights[0].size


def _bounded_worst(c: RocketConv, a: np.ndarray) -> int:
    """An upper bound of accumulator_bounds' worst from the weight count alone: every |w - zw| of a stored int8
    weight is at most max(127 - zw, 128 + zw), every |w| at most 128. When it already fits int32, a per-tensor
    layer needs neither sum of absolute weights (its shift is fixed)."""
    taps = _taps(c)
    reach = max(127 - c.w_zp, 128 + c.w_zp)
    worst = 128 * reach * taps + int(np.abs(a).max(initial=0))
    if not c.depthwise:
        worst = max(worst, 128 * 128 * taps, 128 * abs(c.w_zp) * taps)
    return worst


def accumulator_bounds(c: RocketConv, a: np.ndarray, centered: np.ndarray) -> tuple[np.ndarray, int]:
    """(per channel: the largest |acc + A + B * sum_x|, the largest of every partial sum the DPU adds) over any
    int8 input; the MAC reads stored bytes in -128..127 (padding taps included). `centered`: the per-channel
    sums of |w - zw| (_abs_weight_sums)."""
    # acc + B * sum_x multiplies each input by w - zw (depthwise: the stored pair sums)
    total = 128 * centered + np.abs(a)
    worst = int(total.max(initial=0))
    if not c.depthwise:  # the MAC sum and the B term separately
        taps = _taps(c)
        worst = max(worst, 128 * int(_abs_weight_sums(c, 0).max(initial=0)), 128 * abs(c.w_zp) * taps)
    return total, worst


def coefficients(c: RocketConv, max_error: float = coefs.MAX_ERROR_LSB) -> Coefficients:
    """The coefficient table, multipliers and shift of a convolution; raises EncodeError when per-channel scales
    are too far apart for the 16-bit multiplier (worst output error above `max_error` LSB: ScaleSpreadError) or a
    sum could leave the DPU's int32 data path."""
    per_channel = c.w_scales is not None
    scales = np.broadcast_to(c.w_scales if per_channel else np.array([c.w_scale], np.float32), (c.out_c,))
    a_true = bias_table(c.bias, c.weights_q, c.w_zp_q, c.in_zp, c.depthwise, 0)
    m = coefs.multipliers(scales, per_channel)
    bias = np.asarray(c.bias, np.int64)
    a = coefs.adjusted_bias(bias, a_true - bias, scales, m)
    shift = coefs.SHIFT
    if per_channel or _bounded_worst(c, a) >= 1 << coefs.INT32_BITS:
        centered = _abs_weight_sums(c, c.w_zp)
        v_max, worst = accumulator_bounds(c, a, centered)
        if worst >= 1 << coefs.INT32_BITS:
            raise EncodeError(f"accumulator, bias and zero-point terms can reach {worst}, beyond the DPU's int32")
    if per_channel:
        shift = coefs.bs_shift(int(v_max.max(initial=0)), m)
        # the true data sum: stored inputs in -128..127 minus the stored zero point (padding taps add 0)
        data = max(127 - c.in_zp, 128 + c.in_zp) * centered
        err = coefs.multiplier_error(scales, m, float(c.in_scale), float(c.out_scale), data, bias, shift)
        if err > max_error:
            raise ScaleSpreadError(f"per-channel weight scales too far apart for the 16-bit multiplier "
                                   f"(error up to {err:.2f} LSB)")
    table = coefs.coefficient_table(a, -c.w_zp, m.c, c.depthwise)
    return Coefficients(table, m, shift)


def layer_params(c: RocketConv, in_plane: int, graph: Graph | None = None) -> tuple[LayerParams, Coefficients]:
    """Everything but the weight bytes; raises EncodeError. `graph`: see encode_layer."""
    try:
        sp = split(geometry(c))
        co = memo(graph, (__name__, "coefficients", c.key), lambda: coefficients(c))
        scale, shift = coefs.out_cvt(float(c.in_scale), co.multipliers, float(c.out_scale), co.shift)
    except EncodeError:
        raise  # ScaleSpreadError stays itself (groups.py)
    except (SplitError, ValueError) as e:
        raise EncodeError(str(e)) from e
    return LayerParams(c, sp, in_plane, scale, shift, len(co.table), co.shift), co


def encode_layer(rm: RegMap, c: RocketConv, in_plane: int, graph: Graph | None = None) -> EncodedLayer:
    """Raises EncodeError. With `graph` (the one `c` was lowered from) once per graph: the support decision
    encodes every layer with the plane pitch of a host-written input, and a partition's compile reuses that
    layer, with the pitch word replaced where its input pitch differs."""
    def compute() -> EncodedLayer:
        host = c.in_h * c.in_w
        done = graph.derived.get(_layer_key(c, host)) if graph is not None and in_plane != host else None
        if done is None:
            return _encode_layer(rm, c, in_plane, graph)
        try:
            streams = with_input_pitch(rm, done.streams, host, in_plane)
        except RegMapError as e:
            raise EncodeError(f"register limit: {e}") from e
        return EncodedLayer(replace(done.params, in_plane=in_plane), streams, done.offsets, done.weights, done.coefs)

    return memo(graph, _layer_key(c, in_plane), compute)


def _layer_key(c: RocketConv, in_plane: int) -> tuple[object, ...]:
    return (__name__, "layer", c.key, in_plane)


def _encode_layer(rm: RegMap, c: RocketConv, in_plane: int, graph: Graph | None) -> EncodedLayer:
    p, co = layer_params(c, in_plane, graph)
    try:
        streams = [task_stream(rm, p, t) for t in p.split.tasks]
        offsets = link(rm, streams)
    except RegMapError as e:
        raise EncodeError(f"register limit: {e}") from e
    try:
        packed = memo(graph, (__name__, "weights", c.key, p.split.oc_chunk),
                      lambda: _packed_weights(c, p.split.oc_chunk))
    except ValueError as e:
        raise EncodeError(str(e)) from e
    return EncodedLayer(p, streams, offsets, packed, coefs.coefficient_buffer(co.table, co.shift))


def _packed_weights(c: RocketConv, chunk: int) -> bytes:
    """The weight cubes of the kernel chunks back to back (one cube when the layer has one chunk)."""
    if c.depthwise:
        return weights.pack(c.weights, c.w_zp, True)
    return b"".join(weights.pack(c.weights[oc0:oc0 + chunk], c.w_zp, False)
                    for oc0 in range(0, c.out_c, chunk))


def pool_streams(rm: RegMap, p: RocketPool, in_plane: int) -> list[Stream]:
    """The pool's single task; its output plane is the DPU's (vendor round4 planes, as every NPU-produced
    tensor); raises EncodeError."""
    return [pool_stream(rm, p, in_plane, dpu_plane(p.out_h, p.out_w),
                        pool_pad_registers(p), pool_trailer(rm))]


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
        names, addends = assemble.placed(assemble.buffer_names(k, c), views, lambda t: plane[t] * FEATURE_ATOM)
        in_plane, out_plane = plane[views.place(c.input_tensor)[0]], plane[views.place(c.output_tensor)[0]]
        if isinstance(c, RocketPool):
            streams = pool_streams(rm, c, in_plane)
            regcmd = assemble.patch_addends(regcmd_bytes(streams, [0]), streams, [0], addends)
            assemble.add_operation(prog, names, None, None, regcmd, streams, [0], True,
                                   OpRecord(c.nodes, c.kind, [], pool_info(c, in_plane, out_plane)))
            continue
        enc = encode_layer(rm, c, in_plane, graph)
        regcmd = assemble.patch_addends(regcmd_bytes(enc.streams, enc.offsets), enc.streams, enc.offsets, addends)
        # one job per operation: its row windows share CBUF rows, so they run back to back on one core
        assemble.add_operation(prog, names, (len(enc.weights), enc.weights), enc.coefs, regcmd, enc.streams,
                               enc.offsets, True, OpRecord(c.nodes, c.kind, [], _op_info(enc)))

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
    return {
        "depthwise": c.depthwise,
        "per_channel": c.w_scales is not None,
        "out_cvt": [p.cvt_scale, p.cvt_shift],
        "shift_word": coefs.shift_word(p.bs_shift),
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
