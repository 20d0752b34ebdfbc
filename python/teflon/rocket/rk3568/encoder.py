"""RK3568: rocket convolutions -> teflon.program.Program (docs/hardware/rk3568.md).

Buffers: `t<index>` per feature-map tensor (NC1HWC2, C2 = 8), `op<k>.weights`, `op<k>.bias` (the BS stream over the
declared channels: per-tensor weights int32 bias - zx_stored * sum(w - zw) per channel; per-channel weights and the
averaging convolution of a global average the 8-byte bias / OW / multiplier stream, stream.channel_stream),
`op<k>.regcmd`.
One job per operation (an operation may read what an earlier one wrote: align4 planes): its tasks (channel groups, row bands, delta tasks: split.py, stream.py) chain in one regcmd
buffer and rely on each other's register state.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...hw.regmap import RegMap, RegMapError
from ...program import LAYOUT_NC1HWC2, Buffer, IOBinding, OpRecord, Program
from .. import assemble, perchannel
from ..operations import RocketConv, RocketPool
from ..requant import bias_table, bounded_cvt, out_cvt
from ..stream import ROLE_EW, ROLE_INPUT, ROLE_OUTPUT, ROLE_REGCMD, EncodeError, Stream, regcmd_bytes
from . import weights
from .add import RocketAdd, add_stream
from .average import AVERAGE_KIND
from .layout import ATOM, dpu_plane
from .pool import pool_stream
from .split import split
from .stream import (
    PACKED_CHANNELS,
    Requant,
    channel_stream,
    conv_stream,
    out_channels,
    packed_row_bytes,
    task_streams,
)


@dataclass
class EncodedLayer:
    streams: list[Stream]
    offsets: list[int]
    weights: bytes
    bias: bytes
    requant: Requant


def requant(rm: RegMap, c: RocketConv) -> tuple[Requant, bytes]:
    """The DPU words (OUT_CVT: Q1.14 scale carried into the shift at 2^15, requant.out_cvt; a fused RELU/RELU6 in the
    BN stage) and the BS stream of a layer [IAV T51/T57]: per-tensor weights the bias-only stream (int32 per declared
    channel) with the OW operand in BS_OW_OP; per-channel weights and the vendor's averaging convolution (rk3568
    average.py) the 8-byte stream of bias, OW and multiplier per channel [IAV T41/T71; GOLD]."""
    if c.ew is not None:
        raise EncodeError("a fused ADD is not encoded on rk3568 yet")
    if c.activation not in ("NONE", "RELU", "RELU6"):
        raise EncodeError(f"fused {c.activation} is not encoded on rk3568")
    ocp = out_channels(c)
    ow = np.full(c.out_c, -c.w_zp, np.int64)  # 0x80 - zw: the stored domain's -zw [IAV T43]
    try:
        if c.kind == AVERAGE_KIND:  # the vendor's averaging convolution: multiplier 2^14, shift 14 [GOLD]
            assert c.cvt is not None
            scale, shift = c.cvt
            a = bias_table(c.bias, c.weights_q, c.w_zp_q, c.in_zp, c.depthwise, 0)
            mul = np.full(c.out_c, 1 << perchannel.SHIFT, np.int64)
            mul_shift: int | None = perchannel.SHIFT
            unit = None
        elif c.bs is not None:
            # a fitted multiplier stage and OUT_CVT (const_elementwise.py two_rounding_plan), with no RELU6 bound
            cs = perchannel.channel_scaling(c)
            a, mul, mul_shift = cs.a, cs.multipliers.c, cs.shift
            assert c.cvt is not None
            scale, shift = c.cvt
            unit = None
        elif c.w_scales is not None:
            # per-channel weights: the shared BS-multiplier arithmetic (perchannel.py: C <= 32767 in the stream's
            # 16-bit field, the least shift that keeps v x C inside int32) [INF: RK3588's BS multiplier stage]
            cs = perchannel.channel_scaling(c)
            a, mul, mul_shift = cs.a, cs.multipliers.c, cs.shift
            scale, shift = perchannel.out_cvt(float(c.in_scale), cs.multipliers, float(c.out_scale), cs.shift)
            unit = float(c.in_scale) * cs.multipliers.s_one * 2.0 ** (cs.shift - cs.multipliers.bits)
        else:
            # a fitted OUT_CVT (an average pool or a constant operation as a depthwise convolution:
            # rocket/average.py, const_elementwise.py) is taken as it is
            scale, shift = c.cvt if c.cvt is not None else out_cvt(c.in_scale, c.w_scale, c.out_scale, 0)
            a = bias_table(c.bias, c.weights_q, c.w_zp_q, c.in_zp, c.depthwise, 0)
            mul = None
            mul_shift = None
            unit = float(c.in_scale) * float(c.w_scale)
        scale, shift = bounded_cvt(scale, shift, rm.limits("DPU_OUT_CVT_SHIFT", "OUT_CVT_SHIFT")[1])
        if mul is None:
            table = np.zeros(ocp, "<i4")
            table[:c.out_c] = a
            bs = table.tobytes()
        else:
            bs = channel_stream(a, ow, mul, ocp)
    except ValueError as e:
        raise EncodeError(str(e)) from e
    # The vendor's fused activation is the BN stage on the accumulator (after the bias and the multiplier): ReLU at
    # 0, ReLU6 also at round(6 / unit) (unit: the value of one step there), whether or not the output range already
    # clips there [IAV T57; GOLD 0x12 / 0x92]. At the bound this may differ from TFLite's clamp after
    # requantization by one LSB (rk3568.md §4).
    relux = round(6.0 / unit) if c.activation == "RELU6" and unit is not None else None
    if relux is not None and not 0 < relux < 1 << 31:
        raise EncodeError(f"fused RELU6 bound {relux} outside the accumulator")
    return Requant(scale, shift, relux, c.activation != "NONE", mul_shift), bs


def packed_input(c: RocketConv, host_written: bool) -> bool:
    """The vendor's first-layer path: a 1-, 3- or 4-channel uint8 graph input read as packed pixels [GOLD; IAV T46;
    TOOLKIT, built here: rknn-toolkit2 2.5.0 target rk3566, first convolutions of 1 to 4 channels]."""
    return host_written and c.in_c in PACKED_CHANNELS and not c.depthwise and c.dtype == "uint8"


def encode_layer(rm: RegMap, c: RocketConv, host_input: bool = False, in_plane_atoms: int | None = None) -> EncodedLayer:
    """The layer's tasks (split.py: channel groups, row bands, delta tasks) with its weights and BS stream; raises
    EncodeError. Weights larger than the weight banks are fetched as the CNA goes, as the vendor programs them
    [GOLD: 72 KiB of weights beside one weight bank; IAV T48]."""
    if c.in_w > 2047 or c.out_w > 2047:  # 11-bit width fields [IAV T76]
        raise EncodeError(f"map width {max(c.in_w, c.out_w)} beyond the 11-bit width fields")
    if c.stride_w is not None and c.stride_w != c.stride:
        raise EncodeError("different row and column strides are not encoded on rk3568 yet")
    packed = weights.pack_depthwise(c.weights, c.w_zp) if c.depthwise else weights.pack_conv(c.weights, c.w_zp)
    pixels = packed_input(c, host_input)
    sp = split(c, len(packed), pixels)
    rq, bs = requant(rm, c)
    try:
        streams, offsets = task_streams(rm, [conv_stream(rm, c, w, w.banks, rq, pixels, in_plane_atoms)
                                             for w in sp.windows])
    except (ValueError, RegMapError) as e:
        raise EncodeError(str(e)) from e
    return EncodedLayer(streams, offsets, packed, bs, rq)


def tensor_bytes(c: int, plane: int) -> int:
    return -(-c // ATOM) * plane * ATOM


def binding(t: int, direction: str, c: RocketConv | RocketPool | RocketAdd, plane: int, pad: int = 0) -> IOBinding:
    h, w, ch = (c.in_h, c.in_w, c.in_c) if direction == "in" else (c.out_h, c.out_w, c.out_c)
    return IOBinding(t, direction, f"t{t}", c.dtype, h, w, ch, LAYOUT_NC1HWC2, ATOM, 0, w * ATOM, plane * ATOM,
                     assemble.xor(c.dtype), pad)


def compile_ops(rm: RegMap, device: str, convs: list[RocketConv | RocketPool | RocketAdd], inputs: list[int],
                outputs: list[int]) -> Program:
    """A program of operations reading partition inputs (each its own job)."""
    prog = Program(device=device)
    produced = {c.output_tensor for c in convs}
    planes: dict[int, int] = {t: dpu_plane(c.out_h, c.out_w) for c in convs for t in [c.output_tensor]}
    for c in convs:
        # host-written: W x H atoms as the vendor's convolutions read graph inputs [GOLD SURF_STRIDE]; the PPU and
        # the DPU-only ADD read align4 planes [GOLD: the vendor copies a 13x13 input into one first]; a tensor an
        # earlier operation wrote keeps the DPU's align4 planes
        reads = [c.input_tensor] + ([c.ew_tensor] if isinstance(c, RocketAdd) else [])
        for t in reads:
            if t in produced:
                continue
            want = c.in_h * c.in_w if isinstance(c, RocketConv) else dpu_plane(c.in_h, c.in_w)
            if planes.setdefault(t, want) != want:
                raise EncodeError(f"tensor {t} is read by a convolution and a pool/ADD with different planes")
    assemble.check_outputs(convs, outputs)  # type: ignore[arg-type]
    channels = {c.input_tensor: c.in_c for c in convs} | {c.output_tensor: c.out_c for c in convs} | {
        c.ew_tensor: c.c for c in convs if isinstance(c, RocketAdd)}
    for t, plane in planes.items():
        prog.add_buffer(Buffer(f"t{t}", tensor_bytes(channels[t], plane), tensor=True))
    for k, c in enumerate(convs):
        if isinstance(c, RocketAdd):
            s = add_stream(rm, c)
            names = {ROLE_INPUT: f"t{c.input_tensor}", ROLE_EW: f"t{c.ew_tensor}", ROLE_OUTPUT: f"t{c.output_tensor}",
                     ROLE_REGCMD: f"op{k}.regcmd"}
            assemble.add_operation(prog, names, None, None, regcmd_bytes([s], [0]), [s], [0], True,
                                   OpRecord(c.nodes, c.kind, [], {"input_tensor": c.input_tensor,
                                                                  "ew_tensor": c.ew_tensor,
                                                                  "output_tensor": c.output_tensor}))
            continue
        if isinstance(c, RocketPool):
            s = pool_stream(rm, c)
            assemble.add_operation(prog, assemble.buffer_names(k, c), None, None, regcmd_bytes([s], [0]), [s], [0],
                                   True, OpRecord(c.nodes, c.kind, [], {"input_tensor": c.input_tensor,
                                                                        "output_tensor": c.output_tensor}))
            continue
        enc = encode_layer(rm, c, c.input_tensor in inputs,
                           planes[c.input_tensor] if c.input_tensor in produced else None)
        names = assemble.buffer_names(k, c)
        regcmd = regcmd_bytes(enc.streams, enc.offsets)
        assemble.add_operation(prog, names, (len(enc.weights), enc.weights), enc.bias, regcmd, enc.streams, enc.offsets,
                               True, OpRecord(c.nodes, assemble.op_kind(c), [], _op_info(c, enc)))
    for c in convs:
        if isinstance(c, RocketAdd):
            for t, zp in ((c.input_tensor, c.a_zp), (c.ew_tensor, c.b_zp)):
                if t in inputs:
                    prog.io.append(binding(t, "in", c, planes[t], zp & 0xFF))
            if c.output_tensor in outputs:
                prog.io.append(binding(c.output_tensor, "out", c, planes[c.output_tensor]))
            continue
        if isinstance(c, RocketPool):
            if c.input_tensor in inputs:
                prog.io.append(binding(c.input_tensor, "in", c, planes[c.input_tensor], c.in_zp & 0xFF))
            if c.output_tensor in outputs:
                prog.io.append(binding(c.output_tensor, "out", c, planes[c.output_tensor]))
            continue
        if c.input_tensor in inputs and packed_input(c, True):  # raw uint8 pixels, the CNA subtracts 128
            row = packed_row_bytes(c.in_w, c.in_c)
            prog.io.append(IOBinding(c.input_tensor, "in", f"t{c.input_tensor}", c.dtype, c.in_h, c.in_w, c.in_c,
                                     LAYOUT_NC1HWC2, c.in_c, 0, row, row * c.in_h, 0, 0))
        elif c.input_tensor in inputs:
            prog.io.append(binding(c.input_tensor, "in", c, planes[c.input_tensor], c.in_zp & 0xFF))
        if c.output_tensor in outputs:
            prog.io.append(binding(c.output_tensor, "out", c, planes[c.output_tensor]))
    return prog


def _op_info(c: RocketConv, enc: EncodedLayer) -> dict[str, object]:
    return {"depthwise": c.depthwise, "per_channel": c.w_scales is not None, "out_cvt": [enc.requant.cvt_scale, enc.requant.cvt_shift],
            "input_tensor": c.input_tensor, "output_tensor": c.output_tensor, "macs": c.macs}
