"""RK3576: rocket convolutions -> teflon.program.Program (docs/hardware/rocket-rk3576.md).

Buffers: `t<index>` per feature-map tensor, `op<k>.weights` (packed cube), `op<k>.bias` (coefficient
table + shift word), `op<k>.regcmd` (the op's chained task streams). One job per operation: its row
windows share CBUF rows, so they run back to back on one core.

Plane pitch of a tensor (16-byte atoms): W*H when the host writes it (as the vendor programs it),
round4(W*H) when an NPU operation writes it (as the DPU writes planes).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from ..hw.regmap import RegMap, RegMapError
from ..program import LAYOUT_NC1HWC2, Buffer, IOBinding, Job, OpRecord, Program
from . import coefs, coefs_rk3576, weights_rk3576
from .encoder import _xor, add_tasks, geometry
from .lower import RocketConv
from .regcmd import ROLE_BIAS, ROLE_INPUT, ROLE_OUTPUT, ROLE_REGCMD, ROLE_WEIGHTS, EncodeError, Stream, stream_bytes
from .regcmd_rk3576 import LayerParams, dpu_plane, link, task_stream
from .split import SplitError
from .split_rk3576 import FEATURE_ATOM, Task, split

PLANE_GROUP = 4  # tensor buffers hold whole 64-channel groups of planes (the DPU writes 32/64 at a time)
# The CNA reads 16 x TASK_SURF = 16 x round4(IW x fetched rows) bytes of every plane from the first fetched row:
# up to 3 atoms past the last row of the last plane (rocket-rk3576-sim.md §3, CNA_DMA_CON3).
CNA_READ_SLACK = 3 * FEATURE_ATOM


@dataclass
class EncodedLayer:
    params: LayerParams
    streams: list[Stream]
    offsets: list[int]
    weights: bytes
    coefs: bytes

    def regcmd_bytes(self) -> bytes:
        size = self.offsets[-1] + stream_bytes(len(self.streams[-1].words))
        out = bytearray(size)
        for s, off in zip(self.streams, self.offsets):
            struct.pack_into(f"<{len(s.words)}Q", out, off, *s.words)
        return bytes(out)


@dataclass(frozen=True)
class Coefficients:
    table: bytes  # coefficient table (A, B, C per channel)
    multipliers: coefs_rk3576.Multipliers
    shift: int  # the shift word's shift (both signs)


def _per_oc(c: RocketConv) -> np.ndarray:
    """Stored weights as (output channel, taps x input channels) int64 (depthwise (1, KH, KW, C), direct OHWI)."""
    w = c.weights.astype(np.int64)
    return w.reshape(-1, c.out_c).T if c.depthwise else w.reshape(c.out_c, -1)


def accumulator_bounds(c: RocketConv, a: np.ndarray) -> tuple[np.ndarray, int]:
    """(per channel: the largest |acc + A + B * sum_x|, the largest of every partial sum the DPU adds) over any
    int8 input; the MAC reads stored bytes in -128..127 (padding taps included)."""
    per_oc = _per_oc(c)
    # acc + B * sum_x multiplies each input by w - zw (depthwise: the stored pair sums)
    total = 128 * np.abs(per_oc - c.w_zp).sum(axis=1) + np.abs(a)
    worst = int(total.max(initial=0))
    if not c.depthwise:  # the MAC sum and the B term separately
        worst = max(worst, 128 * int(np.abs(per_oc).sum(axis=1).max(initial=0)), 128 * abs(c.w_zp) * per_oc.shape[1])
    return total, worst


def coefficients(c: RocketConv) -> Coefficients:
    """The coefficient table, multipliers and shift of a convolution; raises EncodeError when per-channel scales
    are too far apart for the 16-bit multiplier or a sum could leave the DPU's int32 data path."""
    per_channel = c.w_scales is not None
    scales = np.broadcast_to(c.w_scales if per_channel else np.array([c.w_scale], np.float32), (c.out_c,))
    a_true = coefs.bias_table(c.bias, c.weights_q, c.w_zp_q, c.in_zp, c.depthwise, 0)
    m = coefs_rk3576.multipliers(scales, per_channel)
    bias = np.asarray(c.bias, np.int64)
    a = coefs_rk3576.adjusted_bias(bias, a_true - bias, scales, m)
    v_max, worst = accumulator_bounds(c, a)
    if worst >= 1 << coefs_rk3576.INT32_BITS:
        raise EncodeError(f"accumulator, bias and zero-point terms can reach {worst}, beyond the DPU's int32")
    shift = coefs_rk3576.SHIFT
    if per_channel:
        shift = coefs_rk3576.bs_shift(int(v_max.max(initial=0)), m)
        # the true data sum: stored inputs in -128..127 minus the stored zero point (padding taps add 0)
        data = max(127 - c.in_zp, 128 + c.in_zp) * np.abs(_per_oc(c) - c.w_zp).sum(axis=1)
        err = coefs_rk3576.multiplier_error(scales, m, float(c.in_scale), float(c.out_scale), data, bias, shift)
        if err > coefs_rk3576.MAX_ERROR_LSB:
            raise EncodeError(f"per-channel weight scales too far apart for the 16-bit multiplier "
                              f"(error up to {err:.2f} LSB)")
    table = coefs_rk3576.coefficient_table(a, -c.w_zp, m.c, c.depthwise)
    return Coefficients(table, m, shift)


def layer_params(c: RocketConv, in_plane: int) -> tuple[LayerParams, Coefficients]:
    """Everything but the weight bytes; raises EncodeError."""
    try:
        sp = split(geometry(c))
        co = coefficients(c)
        scale, shift = coefs_rk3576.out_cvt(float(c.in_scale), co.multipliers, float(c.out_scale), co.shift)
    except (SplitError, ValueError) as e:
        raise EncodeError(str(e)) from e
    return LayerParams(c, sp, in_plane, scale, shift, len(co.table), co.shift), co


def encode_layer(rm: RegMap, c: RocketConv, in_plane: int) -> EncodedLayer:
    p, co = layer_params(c, in_plane)
    try:
        streams = [task_stream(rm, p, t) for t in p.split.tasks]
        offsets = link(rm, streams)
    except RegMapError as e:
        raise EncodeError(f"register limit: {e}") from e
    try:
        packed = _packed_weights(c, p.split.oc_chunk)
    except ValueError as e:
        raise EncodeError(str(e)) from e
    return EncodedLayer(p, streams, offsets, packed, coefs_rk3576.coefficient_buffer(co.table, co.shift))


def _packed_weights(c: RocketConv, chunk: int) -> bytes:
    """The weight cubes of the kernel chunks back to back (one cube when the layer has one chunk)."""
    if c.depthwise:
        return weights_rk3576.pack(c.weights, c.w_zp, True)
    return b"".join(weights_rk3576.pack(c.weights[oc0:oc0 + chunk], c.w_zp, False)
                    for oc0 in range(0, c.out_c, chunk))


def tensor_bytes(c: int, plane: int) -> int:
    """Whole 4-plane groups (the DPU's output groups stay inside them: 2 planes direct, 4 depthwise) plus the
    CNA's read-ahead after the last plane."""
    groups = -(-c // FEATURE_ATOM)
    return -(-groups // PLANE_GROUP) * PLANE_GROUP * plane * FEATURE_ATOM + CNA_READ_SLACK


def compile_ops(rm: RegMap, device: str, convs: list[RocketConv], inputs: list[int], outputs: list[int]) -> Program:
    prog = Program(device=device)
    produced = {c.output_tensor for c in convs}
    shapes: dict[int, tuple[int, int, int, str]] = {}
    in_zp: dict[int, int] = {}
    for c in convs:
        if c.add is not None:
            raise EncodeError("fused ADD is not implemented on rk3576")
        shapes.setdefault(c.input_tensor, (c.in_h, c.in_w, c.in_c, c.dtype))
        shapes.setdefault(c.output_tensor, (c.out_h, c.out_w, c.out_c, c.dtype))
        in_zp.setdefault(c.input_tensor, c.in_zp)
    plane = {t: dpu_plane(h, w) if t in produced else h * w for t, (h, w, _, _) in shapes.items()}
    for t, (_, _, ch, _) in shapes.items():
        prog.add_buffer(Buffer(f"t{t}", tensor_bytes(ch, plane[t]), tensor=True))

    for k, c in enumerate(convs):
        enc = encode_layer(rm, c, plane[c.input_tensor])
        names = {
            ROLE_INPUT: f"t{c.input_tensor}",
            ROLE_OUTPUT: f"t{c.output_tensor}",
            ROLE_WEIGHTS: f"op{k}.weights",
            ROLE_BIAS: f"op{k}.bias",
            ROLE_REGCMD: f"op{k}.regcmd",
        }
        regcmd = enc.regcmd_bytes()
        prog.add_buffer(Buffer(names[ROLE_WEIGHTS], len(enc.weights), enc.weights))
        prog.add_buffer(Buffer(names[ROLE_BIAS], len(enc.coefs), enc.coefs))
        prog.add_buffer(Buffer(names[ROLE_REGCMD], len(regcmd), regcmd))
        tasks = add_tasks(prog, names, enc.streams, enc.offsets)
        prog.jobs.append(Job(tasks, [names[ROLE_INPUT]], [names[ROLE_OUTPUT]]))
        prog.operations.append(OpRecord(c.all_nodes, c.kind, tasks, _op_info(enc)))

    for t in inputs:
        if t not in shapes:
            continue
        h, w, ch, dtype = shapes[t]
        prog.io.append(IOBinding(t, "in", f"t{t}", dtype, h, w, ch, LAYOUT_NC1HWC2, FEATURE_ATOM, 0,
                                 w * FEATURE_ATOM, plane[t] * FEATURE_ATOM, _xor(dtype), in_zp[t] & 0xFF))
    for t in outputs:
        if t not in produced:
            raise EncodeError(f"partition output {t} is not produced by an NPU operation")
        h, w, ch, dtype = shapes[t]
        prog.io.append(IOBinding(t, "out", f"t{t}", dtype, h, w, ch, LAYOUT_NC1HWC2, FEATURE_ATOM, 0,
                                 w * FEATURE_ATOM, plane[t] * FEATURE_ATOM, _xor(dtype), 0))
    return prog


def _op_info(enc: EncodedLayer) -> dict[str, object]:
    p = enc.params
    c = p.conv
    return {
        "depthwise": c.depthwise,
        "per_channel": c.w_scales is not None,
        "out_cvt": [p.cvt_scale, p.cvt_shift],
        "shift_word": coefs_rk3576.shift_word(p.bs_shift),
        "input_tensor": c.input_tensor,
        "output_tensor": c.output_tensor,
        "macs": int(c.out_h * c.out_w * c.kh * c.kw * (c.in_c if not c.depthwise else 1) * c.out_c),
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
