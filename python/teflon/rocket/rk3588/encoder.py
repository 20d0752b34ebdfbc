"""Rocket operations -> teflon.program.Program (buffers, relocations, jobs, I/O bindings).

Buffers: `t<index>` per feature-map tensor (sized W*H*ceil(C/16)*2*16, Mesa's 2x slack),
`op<k>.weights` (Mesa's allocation size, packed bytes as a prefix), `op<k>.bias` (int32 per real
output channel), `op<k>.regcmd` (the op's task streams, 64-byte aligned). Jobs follow Mesa: one job
with all tasks when the weights stay resident in CBUF, else one job per task.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ...hw.regmap import RegMap, RegMapError
from ...ir import Graph, memo
from ...program import LAYOUT_ROWS, Buffer, IOBinding, OpRecord, Program
from .. import assemble, perchannel
from ..assemble import RocketOp
from ..geometry import FEATURE_ATOM, SplitError, geometry
from ..operations import RocketConv, RocketPool
from ..ppu import pool_info, pool_stream
from ..requant import activation_clamp, bias_table, bounded_cvt, ew_cvt, out_cvt
from ..stream import EncodeError, Stream, regcmd_bytes
from ..unary_lower import RocketUnary
from ..views import RocketView, resolve
from . import coefs, weights
from .dpu import add_unary_op
from .split import Split, split
from .stream import EwParams, OpParams, link, pool_pad_registers, pool_trailer, task_stream

EW_MIN_PLANE = 12  # atoms: Mesa programs EW_SURF_STRIDE as at least 12 (rocket.md §2.2 #120)


@dataclass
class EncodedOp:
    conv: RocketConv
    params: OpParams
    streams: list[Stream]
    offsets: list[int]  # byte offset of each task's stream in the regcmd buffer
    weights: bytes | bytearray  # packed in place (weights.pack)
    weights_alloc: int
    bias: bytes

    @property
    def split(self) -> Split:
        return self.params.split



def op_params(c: RocketConv, max_shift: int, mesa_compat: bool = False) -> OpParams:
    """Everything but the weight bytes: split, truncate bits, requant. Raises EncodeError.

    max_shift: the largest OUT_CVT_SHIFT the DPU takes (the register table's range, requant.bounded_cvt);
    mesa_compat: round the requant scale as Mesa does (byte-equal streams, see coefs.out_cvt)."""
    try:
        sp = split(geometry(c))
        s = None
        if c.cvt is not None:
            trunc = 0  # average.average_conv's proof assumes the accumulator reaches the bias untruncated
            scale, shift = c.cvt
            if c.bs is not None:  # a fitted multiplier stage before it (const_elementwise.py)
                s = perchannel.channel_scaling(c)
        elif c.w_scales is not None:
            # per-channel: no CLIP_TRUNCATE (channel_scaling proves every sum fits the 32-bit path)
            s = perchannel.channel_scaling(c)
            if c.ew is not None:  # the operand step must fit the EW converter (perchannel.ew_shift)
                s = replace(s, shift=perchannel.ew_shift(c, s.multipliers, s.shift))
            trunc = 0
            scale, shift = perchannel.out_cvt(float(c.in_scale), s.multipliers, float(c.out_scale), s.shift)
        else:
            trunc = coefs.truncate_bits(c.w_scale, c.weights, c.depthwise)
            # a multiply's product is in units of the accumulator's LSB times the operand's (fused_add.mul_fusion)
            w_scale = np.float32(c.w_scale * c.ew.scale) if c.ew is not None and c.ew.mul else c.w_scale
            scale, shift = out_cvt(c.in_scale, w_scale, c.out_scale, trunc, mesa_rounding=mesa_compat)
        if c.ew is None:  # with a fused ADD the operand's term is not small: only the range check applies
            scale, shift = bounded_cvt(scale, shift, max_shift)
        clamp = activation_clamp(c.act_min, c.act_max, c.out_zp, scale, shift)
        ew = None
        if c.ew is not None:
            if c.out_w * c.out_h < EW_MIN_PLANE:
                raise EncodeError(f"fused ADD on a {c.out_w}x{c.out_h} plane: Mesa's element-wise reader takes surface "
                                  f"strides of at least {EW_MIN_PLANE} atoms")
            # the operand joins the value after CLIP_TRUNCATE (per-tensor) or after the BS multiplier (per-channel:
            # units of sx * s_one * 2^(shift - q), perchannel.py): its LSB in those units
            unit = (float(c.in_scale) * float(c.w_scale) * (1 << trunc) if s is None
                    else float(c.in_scale) * s.multipliers.s_one * 2.0 ** (s.shift - s.multipliers.bits))
            if c.ew.mul:  # the operand enters the multiply as b - zb: converter scale 1, shift 0, EW_TRUNCATE 0
                if s is not None or trunc:
                    raise EncodeError("an element-wise multiply after CLIP_TRUNCATE or a per-channel scaling")
                ew = EwParams(-c.ew.zp, 1, 0, mul=True)
            else:
                ew_scale, ew_shift = ew_cvt(float(c.ew.scale) / unit)
                ew = EwParams(-c.ew.zp, ew_scale, ew_shift)
    except (SplitError, ValueError) as e:
        raise EncodeError(str(e)) from e
    return OpParams(c, sp, trunc, scale, shift, s, clamp is not None, clamp[1] if clamp else None, ew,
                    mesa_compat)


def build_streams(rm: RegMap, p: OpParams) -> tuple[list[Stream], list[int]]:
    try:
        streams = [task_stream(rm, p, t) for t in p.split.tasks]
        offsets = link(rm, streams)
    except RegMapError as e:
        raise EncodeError(f"register limit: {e}") from e
    return streams, offsets


def checked_streams(rm: RegMap, c: RocketConv, mesa_compat: bool = False,
                    graph: Graph | None = None) -> tuple[OpParams, list[Stream], list[int]]:
    """op_params and build_streams of `c` (raises EncodeError); once per graph when it is given (the support
    decision checks every claimed operation this way, the partition's compile then reuses it)."""

    def compute() -> tuple[OpParams, list[Stream], list[int]]:
        p = op_params(c, rm.limits("DPU_OUT_CVT_SHIFT", "OUT_CVT_SHIFT")[1], mesa_compat)
        return (p, *build_streams(rm, p))

    return memo(graph, (__name__, c.key, mesa_compat), compute)


def encode_op(rm: RegMap, c: RocketConv, mesa_compat: bool = False, graph: Graph | None = None) -> EncodedOp:
    p, streams, offsets = checked_streams(rm, c, mesa_compat, graph)
    packed = weights.pack(c.weights, c.w_zp, c.depthwise)
    if p.scaling is None:
        bias = bias_table(c.bias, c.weights_q, c.w_zp_q, c.in_zp, c.depthwise, p.truncate_bits).tobytes()
    else:
        bias = coefs.bs_records(p.scaling.a, -c.w_zp, p.scaling.multipliers.c)
    alloc = weights.alloc_size(c.kh, c.kw, c.in_c, c.out_c, c.depthwise)
    return EncodedOp(c, p, streams, offsets, packed, alloc, bias)


def pool_streams(rm: RegMap, p: RocketPool) -> list[Stream]:
    """The pool's single task (plane pitches w x h atoms, as every RK3588 tensor); raises EncodeError."""
    return [pool_stream(rm, p, p.in_h * p.in_w, p.out_h * p.out_w, pool_pad_registers(p),
                        pool_trailer(rm))]


def tensor_bytes(h: int, w: int, c: int) -> int:
    return w * h * -(-c // FEATURE_ATOM) * 2 * FEATURE_ATOM


def compile_ops(rm: RegMap, device: str, ops: list[RocketOp | list[RocketView]], inputs: list[int],
                outputs: list[int], mesa_compat: bool = False, graph: Graph | None = None) -> Program:
    """The program of `ops` (views: views.py); `graph`, the graph they were lowered from, shares the support
    decision's work."""
    convs, views = resolve(ops)
    prog = Program(device=device)
    produced = {c.output_tensor for c in convs}
    shapes = assemble.buffers(convs, views)
    zps = assemble.reader_zero_points(convs)
    buffer_zps = {views.place(t)[0]: zp for t, zp in reversed(zps.items())}  # a buffer's first reader's
    rows_inputs = {c.input_tensor for c in convs if c.single_channel_input}
    for t in rows_inputs & produced:
        raise EncodeError(f"tensor {t}: single-channel input produced on the NPU (needs the raw rows layout)")
    for t in rows_inputs & {ew.tensor for c in convs if (ew := assemble.ew_operand(c)) is not None}:
        raise EncodeError(f"tensor {t}: a fused ADD operand read as raw rows by a single-channel convolution")
    assemble.check_outputs(convs, outputs, views)
    for t, s in shapes.items():
        prog.add_buffer(Buffer(f"t{t}", tensor_bytes(s.h, s.w, s.c), tensor=True))

    def plane_atoms(t: int) -> int:
        return shapes[t].w * shapes[t].h

    for k, c in enumerate(convs):
        if isinstance(c, RocketUnary):  # a table op: the DPU alone (dpu.py)
            add_unary_op(prog, rm, k, c, views, plane_atoms)
            continue
        names, addends = assemble.placed(assemble.buffer_names(k, c), views, lambda t: plane_atoms(t) * FEATURE_ATOM)
        if isinstance(c, RocketPool):
            streams = pool_streams(rm, c)
            regcmd = assemble.patch_addends(regcmd_bytes(streams, [0]), streams, [0], addends)
            assemble.add_operation(prog, names, None, None, regcmd, streams, [0], True,
                                   OpRecord(c.nodes, c.kind, [], pool_info(c, c.in_h * c.in_w, c.out_h * c.out_w)))
            continue
        enc = encode_op(rm, c, mesa_compat, graph)
        regcmd = assemble.patch_addends(regcmd_bytes(enc.streams, enc.offsets), enc.streams, enc.offsets, addends)
        assemble.add_operation(prog, names, (enc.weights_alloc, enc.weights), enc.bias, regcmd, enc.streams,
                               enc.offsets, enc.split.reuse_weights,
                               OpRecord(c.nodes, assemble.op_kind(c), [], _op_info(enc)))

    for t in inputs:
        if t not in shapes and t not in views.by_view:
            continue  # a partition input no NPU op reads (nothing to bind)
        pad = zps.get(t, buffer_zps.get(views.place(t)[0], 0)) & 0xFF
        if t in rows_inputs:
            # Raw bytes; the CNA subtracts 128 itself (CVT offset), so store the unsigned form.
            s = shapes[t]
            pitch = max(s.w, FEATURE_ATOM)
            prog.io.append(IOBinding(t, "in", f"t{t}", s.dtype, s.h, s.w, s.c, LAYOUT_ROWS, 1, 0, pitch, pitch * s.h,
                                     assemble.xor(s.dtype) ^ 0x80, (zps[t] + 128) & 0xFF))
        else:
            prog.io.append(assemble.bind(t, "in", shapes, views, plane_atoms, pad))
    for t in outputs:
        prog.io.append(assemble.bind(t, "out", shapes, views, plane_atoms))
    return prog


def _op_info(enc: EncodedOp) -> dict[str, object]:
    c, p = enc.conv, enc.params
    ew = {} if p.ew is None else {"ew": {"tensor": c.ew.tensor if c.ew else -1, "offset": p.ew.offset,
                                          "scale": p.ew.scale, "shift": p.ew.shift}}
    return {
        **ew,
        "depthwise": c.depthwise,
        "reuse_weights": p.split.reuse_weights,
        "truncate_bits": p.truncate_bits,
        "per_channel": p.per_channel,
        **({"bs_mul_shift": p.scaling.shift} if p.scaling is not None else {}),
        **({"clamp": [0, p.relux]} if p.relu else {}),
        "out_cvt": [p.cvt_scale, p.cvt_shift],
        "input_tensor": c.input_tensor,
        "output_tensor": c.output_tensor,
        "macs": c.macs,
        "split": [
            {
                "input_rows": [t.top, t.bottom],
                "input_offset": p.input_offset(t),
                "output_rows": t.out_rows,
                "output_offset": t.output_offset,
                "pads": {"top": t.pad_top, "bottom": t.pad_bottom, "left": t.pad_left, "right": t.pad_right},
                "banks": {"data": t.data_banks, "weights": t.weight_banks},
            }
            for t in p.split.tasks
        ],
    }

